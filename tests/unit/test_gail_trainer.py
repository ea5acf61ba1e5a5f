"""GAILTrainer: the spectrally normalized discriminator, saving it, and generator schedules over the run."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch as th

from roboppo.common.schedules import LinearSchedule
from roboppo.gail import GAILTrainer, load_demonstrations, save_demonstrations
from roboppo.gail.demos import Demonstrations
from roboppo.gail.horizon import AbsorbingBootstrap, absorbing_state, with_indicator
from roboppo.gail.trainer import collect_demonstrations

ENV = "RoboInvertedPendulum-v0"


class ZeroPolicy:
    """Stands in for an expert: always pushes with force 0."""

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> tuple[np.ndarray, None]:
        return np.zeros(1, np.float32), None


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Demonstrations:
    path = tmp_path_factory.mktemp("demos") / "zero.npz"
    save_demonstrations(path, collect_demonstrations(ZeroPolicy(), ENV, n_episodes=3), ENV)  # type: ignore[arg-type]
    return load_demonstrations(path, ENV)


@pytest.fixture(scope="module")
def trainer(demos: Demonstrations) -> GAILTrainer:
    ppo_kwargs = {"n_steps": 32, "batch_size": 64, "n_epochs": 1}
    trainer = GAILTrainer(
        ENV, demos, n_envs=2, seed=0, ppo_kwargs=ppo_kwargs, demo_batch_size=32,
        disc_spectral_norm=True, reward_net_kwargs={"use_action": False},
    )  # fmt: skip
    return trainer.train(128)


def batch(n: int = 16) -> tuple[np.ndarray, ...]:
    """Discriminator inputs: pendulum states with the absorbing indicator column."""
    rng = np.random.default_rng(0)
    obs = with_indicator(rng.normal(size=(n, 4)).astype(np.float32))
    return obs, rng.uniform(-3, 3, size=(n, 1)).astype(np.float32), obs, np.zeros(n, bool)


def test_spectral_norm_bounds_every_layer(trainer: GAILTrainer) -> None:
    linears = [m for m in trainer.reward_net.modules() if isinstance(m, th.nn.Linear)]
    assert linears and all(th.nn.utils.parametrize.is_parametrized(m, "weight") for m in linears)
    for layer in linears:  # one power iteration per forward: close to 1, not exact
        assert th.linalg.matrix_norm(layer.weight.detach(), ord=2) <= 1.05


def test_save_and_load_keep_the_spectrally_normalized_reward_net(trainer: GAILTrainer, tmp_path: pathlib.Path) -> None:
    trainer.save(tmp_path)
    generator, reward_net = GAILTrainer.load(tmp_path)
    reward_net.eval()
    trainer.reward_net.eval()
    np.testing.assert_allclose(reward_net.predict(*batch()), trainer.reward_net.predict(*batch()), rtol=1e-5)
    obs = batch()[0][:, :4]  # the policy reads the env's observations, without the indicator
    actions = generator.predict(obs, deterministic=True)[0]
    np.testing.assert_allclose(actions, trainer.generator.predict(obs, deterministic=True)[0])


@pytest.mark.parametrize("schedule_timesteps", [None, 1024])
def test_generator_schedules_run_over_the_whole_gail_run(demos: Demonstrations, schedule_timesteps: int | None) -> None:
    """imitation calls ``learn`` once per round; the learning rate must still fall over the whole run."""
    ppo_kwargs = {"n_steps": 32, "batch_size": 64, "n_epochs": 1, "learning_rate": LinearSchedule(1e-3)}
    trainer = GAILTrainer(
        ENV, demos, n_envs=2, seed=0, ppo_kwargs=ppo_kwargs, demo_batch_size=32, schedule_timesteps=schedule_timesteps
    )
    optimizer = trainer.generator.policy.optimizer
    if schedule_timesteps is None:
        trainer.train(1024)  # 16 rounds of 64 steps: the last one starts at 960 of 1,024
        assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * (1 - 960 / 1024))
    else:
        for _ in range(2):
            trainer.train(256)  # chunks of one run: the last round starts at 448 of 1,024
        assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * (1 - 448 / 1024))
        assert trainer.generator.clip_range(1.0) == pytest.approx(0.2)  # constant stays constant


def test_the_generator_trains_through_the_absorbing_state(trainer: GAILTrainer) -> None:
    """Falling pendulums fill the discriminator's generator batches with absorbing samples; its output
    there is the log-ratio of the two sides' absorbing frequencies, and the generator's env adds the
    absorbing state's value at every termination."""
    samples = trainer.gail.generator_buffer.sample(2000)
    assert samples.obs.shape[1] == 5 and 0 < samples.obs[:, -1].sum() < len(samples.obs)
    assert isinstance(trainer.generator.get_env(), AbsorbingBootstrap)
    expected = np.log(trainer.gail.expert_absorbing_fraction) - np.log(trainer.gail.generator_buffer.absorbing_fraction)
    assert trainer.reward_net.absorbing_logit.item() == pytest.approx(expected, rel=1e-5)
    state = absorbing_state(4)[None]
    reward = trainer.gail.reward_train.predict_processed(state, np.zeros((1, 1), np.float32), state, np.array([False]))
    assert reward[0] == pytest.approx(np.log1p(np.exp(expected)), rel=1e-4)  # GAIL's reward -log(1 - D)
    gamma = trainer.generator.gamma
    assert trainer.gail.absorbing_value() == pytest.approx(gamma * float(reward[0]) / (1 - gamma), rel=1e-6)
    assert trainer.gail.bootstrap.value == pytest.approx(trainer.gail.absorbing_value(), rel=1e-6)  # up to date
