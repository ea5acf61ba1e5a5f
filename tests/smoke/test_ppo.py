"""roboppo.PPO with tiny budgets: the SB3 API, exact log-probs, normalization, logging."""

from __future__ import annotations

import pathlib
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback, EvalCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from roboppo import PPO, TanhGaussianPolicy
from roboppo.common.env_util import make_env_from_id
from roboppo.ppo.pairing import pending_parameters
from tests.conftest import ROBO_IDS


@pytest.mark.parametrize("env_id", ROBO_IDS)
def test_learn_from_an_env_id_builds_n_envs(env_id: str, tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", env_id, n_envs=2, seed=0, **tiny)
    assert isinstance(model.policy, TanhGaussianPolicy)
    assert model.n_envs == 2
    model.learn(256)
    assert model.num_timesteps == 256
    assert all(th.isfinite(p).all() for p in model.policy.parameters())


def test_gym_env_and_vec_env_instances_work(tiny: dict[str, Any]) -> None:
    PPO("MlpPolicy", gym.make("RoboInvertedPendulum-v0"), seed=0, **tiny).learn(64)
    venv = DummyVecEnv([lambda: gym.make("RoboInvertedPendulum-v0")] * 2)
    model = PPO("MlpPolicy", venv, seed=0, **tiny).learn(128)
    model.set_env(make_env_from_id("RoboInvertedPendulum-v0", n_envs=2, seed=3))
    model.learn(128, reset_num_timesteps=False)
    assert model.num_timesteps == 256


def test_first_minibatch_ratio_is_one(tiny: dict[str, Any]) -> None:
    """Stored log-probs are exactly what the first minibatch re-evaluates, also once the normalizer has moved."""
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, seed=0, **tiny)
    model.learn(256)  # two updates: normalizer statistics and weights are no longer at their initial values
    assert model.policy.features_extractor.obs_rms.count.item() == 128  # at rest; the next rollout samples with 256
    _, callback = model._setup_learn(128, reset_num_timesteps=False)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
    batch = next(model.rollout_buffer.get(model.batch_size))
    with th.no_grad():
        _, log_prob, _ = model.policy.evaluate_pre_tanh(batch.observations, batch.actions)
    ratio = th.exp(log_prob - batch.old_log_prob)
    assert th.max(th.abs(ratio - 1)).item() < 1e-5
    assert batch.actions.abs().max() > 0  # pre-tanh actions were stored


class StatisticsSeen(BaseCallback):
    """The observation count the policy samples with at each rollout's start, and its weights then."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: list[float] = []
        self.weights: list[th.Tensor] = []

    def _on_rollout_start(self) -> None:
        self.counts.append(self.model.policy.features_extractor.obs_rms.count.item())
        self.weights.append(th.nn.utils.parameters_to_vector(self.model.policy.parameters()).detach().clone())

    def _on_step(self) -> bool:
        return True


def test_normalizer_updates_once_per_rollout_from_the_collected_batch(tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, seed=0, **tiny)
    model.learn(64 * 2)
    observations = np.asarray(model.rollout_buffer.observations).reshape(-1, 11)
    rms = model.policy.features_extractor.obs_rms
    assert rms.count.item() == 0  # at rest: the statistics the weights were trained with (none yet)
    seen = StatisticsSeen()
    model.learn(64 * 2 * 2, callback=seen, reset_num_timesteps=False)
    assert seen.counts == [128, 256]  # each rollout samples with every earlier rollout folded in
    assert rms.count.item() == 256  # and at rest again: the statistics of the last gradient steps
    with model.trained_pair():
        assert rms.count.item() == 256
    first = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, seed=0, **tiny).learn(64 * 2 * 2)
    with first.trained_pair():
        stats = first.policy.features_extractor.obs_rms
        np.testing.assert_allclose(stats.mean.numpy(), observations.mean(axis=0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(stats.var.numpy(), observations.var(axis=0), rtol=1e-4, atol=1e-6)


def test_the_model_at_rest_and_every_checkpoint_pair_weights_with_their_statistics(
    tmp_path: pathlib.Path, tiny: dict[str, Any]
) -> None:
    """After learn(), in memory, in the saved file and in each checkpoint: the statistics the last
    gradient steps used (the last rollout's observations wait for the next rollout)."""
    rollout = 64 * 2
    checkpoints = CheckpointCallback(save_freq=32, save_path=str(tmp_path / "checkpoints"), name_prefix="ppo")
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, seed=0, **tiny).learn(rollout * 4, callback=checkpoints)
    assert model.policy.features_extractor.obs_rms.count.item() == rollout * 3
    for path in sorted((tmp_path / "checkpoints").glob("ppo_*_steps.zip")):
        steps = int(path.stem.split("_")[1])
        saved = PPO.load(path).policy.features_extractor.obs_rms.count.item()
        assert saved == max(0, (steps - 1) // rollout - 1) * rollout, path.name
    model.save(tmp_path / "final")
    resumed = PPO.load(tmp_path / "final", env=model.get_env())
    seen = StatisticsSeen()
    resumed.learn(rollout, callback=seen, reset_num_timesteps=False)
    assert seen.counts == [rollout * 4]  # the saved file kept the newest statistics for the next rollout


def test_an_entrys_schedules_run_over_its_budget_whatever_learn_is_given(tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", "RoboInvertedDoublePendulum-v0", **tiny)  # learning rate 2e-3 decaying over 100k
    assert model.default_total_timesteps == 100_000
    for steps, total, progress in [(25_000, 300_000, 0.75), (100_000, 300_000, 0.0), (250_000, 300_000, 0.0)]:
        model._update_current_progress_remaining(steps, total)
        assert model._current_progress_remaining == pytest.approx(progress)
        assert model.lr_schedule(model._current_progress_remaining) == pytest.approx(2e-3 * progress)
    stock = PPO("MlpPolicy", "RoboInvertedDoublePendulum-v0", hyperparams="sb3", **tiny)
    stock._update_current_progress_remaining(25_000, 300_000)
    assert stock._current_progress_remaining == pytest.approx(1 - 25_000 / 300_000)  # SB3's, over learn()'s total


def test_seeded_runs_are_identical(tiny: dict[str, Any]) -> None:
    params = []
    for _ in range(2):
        model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", n_envs=2, seed=11, **tiny).learn(128)
        params.append(th.nn.utils.parameters_to_vector(model.policy.parameters()))
    th.testing.assert_close(params[0], params[1])


def test_callbacks_progress_bar_and_evaluate_policy(tmp_path: pathlib.Path, tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", n_envs=2, seed=0, **tiny)
    eval_env = make_env_from_id("RoboInvertedPendulum-v0", seed=5)
    evaluation = EvalCallback(eval_env, n_eval_episodes=2, eval_freq=64, best_model_save_path=str(tmp_path))
    checkpoints = CheckpointCallback(save_freq=64, save_path=str(tmp_path / "ckpt"), name_prefix="ppo")
    model.learn(256, callback=[evaluation, checkpoints], progress_bar=True)
    assert (tmp_path / "best_model.zip").is_file()
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [f"ppo_{n}_steps.zip" for n in (128, 256)]
    assert PPO.load(tmp_path / "ckpt" / "ppo_256_steps.zip").num_timesteps == 256
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=3)
    assert 1.0 <= mean <= 1000.0 and std >= 0.0


def test_tensorboard_events_contain_the_scalars(tmp_path: pathlib.Path, tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", n_envs=2, seed=0, tensorboard_log=str(tmp_path), **tiny)
    model.learn(64 * 2 * 4, tb_log_name="run")
    (run_dir,) = tmp_path.iterdir()
    events = EventAccumulator(str(run_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    expected = {
        "rollout/ep_rew_mean", "rollout/ep_len_mean", "time/fps", "train/approx_kl", "train/clip_fraction",
        "train/entropy_loss", "train/explained_variance", "train/loss", "train/policy_gradient_loss",
        "train/value_loss", "train/std", "obs_norm/count", "obs_norm/mean_abs", "obs_norm/std_mean",
    }  # fmt: skip
    assert expected <= tags
    counts = [event.value for event in events.Scalars("obs_norm/count")]
    assert counts == sorted(counts) and counts[-1] >= 128 * 2
    assert all(np.isfinite(event.value) for event in events.Scalars("train/entropy_loss"))


class ConstantEnv(gym.Env):
    """Reward 0, observation = step count; terminates at step 3 on even episodes, is truncated at 5 otherwise."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self) -> None:
        self.t, self.episode = 0, -1

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t, self.episode = 0, self.episode + 1
        return np.zeros(1, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        terminated = self.episode % 2 == 0 and self.t == 3
        truncated = not terminated and self.t == 5
        return np.array([self.t], np.float32), 0.0, terminated, truncated, {}


def test_gae_bootstraps_on_truncation_not_on_termination() -> None:
    model = PPO("MlpPolicy", ConstantEnv(), n_steps=16, batch_size=16, gamma=0.5, seed=0)
    with th.no_grad():
        model.policy.value_net.bias.fill_(4.0)  # V(s) = 4 + w . features
    model._setup_learn(16)
    model.collect_rollouts(model.env, model._init_callback(None), model.rollout_buffer, n_rollout_steps=16)
    rewards = model.rollout_buffer.rewards[:, 0]
    # episodes: terminated at t=3 (steps 0-2), truncated at t=5 (steps 3-7), terminated (8-10), truncated (11-15)
    assert rewards[2] == 0.0 and rewards[10] == 0.0
    for step in (7, 15):
        terminal = obs_as_tensor(np.array([[5.0]], np.float32), model.device)
        with th.no_grad():
            expected = 0.5 * model.policy.predict_values(terminal).item()
        assert rewards[step] == pytest.approx(expected, rel=1e-5) and expected != 0.0
    assert np.all(rewards[[0, 1, 3, 4, 5, 6, 8, 9, 11, 12, 13, 14]] == 0.0)


def test_normalize_reward_learns_from_the_rewards_sb3s_vecnormalize_gives(
    tmp_path: pathlib.Path, tiny: dict[str, Any]
) -> None:
    """``normalize_reward=True`` equals SB3's ``VecNormalize(norm_obs=False)`` around the env, over rollouts
    with falls and time limits; its statistics and running returns are saved with the model."""
    settings = tiny | {"gamma": 0.9, "seed": 0}  # each model built and trained in turn: SB3 seeds global generators
    limit = {"max_episode_steps": 30}
    ours = PPO("MlpPolicy", make_env_from_id("RoboHopper-v0", 2, 3, limit), normalize_reward=True, **settings)
    ours.learn(64 * 2 * 3)
    venv = VecNormalize(make_env_from_id("RoboHopper-v0", 2, 3, limit), norm_obs=False, gamma=0.9)
    theirs = PPO("MlpPolicy", venv, **settings).learn(64 * 2 * 3)
    assert ours.return_rms is not None and theirs.return_rms is None
    assert ours.return_rms.count == venv.ret_rms.count and 0 < ours.return_rms.var == venv.ret_rms.var
    np.testing.assert_array_equal(ours.rollout_buffer.rewards, theirs.rollout_buffer.rewards)
    assert np.abs(ours.rollout_buffer.rewards).max() > 0
    lengths = [info["l"] for info in ours.ep_info_buffer]
    assert 30 in lengths and min(lengths) < 30  # time limits and falls
    assert [info["r"] for info in ours.ep_info_buffer] == [info["r"] for info in theirs.ep_info_buffer]
    ours.save(tmp_path / "model.zip")
    loaded = PPO.load(tmp_path / "model.zip")
    assert loaded.normalize_reward and loaded.return_rms.var == ours.return_rms.var
    np.testing.assert_array_equal(loaded._discounted_returns, venv.returns)


def test_imitation_gail_imports_on_this_stack() -> None:
    from imitation.algorithms.adversarial import gail

    assert hasattr(gail, "GAIL")


def test_a_stock_sb3_policy_class_still_trains(tiny: dict[str, Any]) -> None:
    from stable_baselines3.common.policies import ActorCriticPolicy

    model = PPO(ActorCriticPolicy, "RoboInvertedPendulum-v0", seed=0, **tiny).learn(512)  # the entry's 8 envs x 64
    assert model.num_timesteps == 512 and not isinstance(model.policy, TanhGaussianPolicy)


def test_batched_mujoco_env_trains_saves_and_loads(tmp_path: pathlib.Path, tiny: dict[str, Any]) -> None:
    from roboppo_envs.mujoco import MujocoVectorEnv

    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=4, seed=0, **tiny)
    assert isinstance(model.get_env().unwrapped.vector_env, MujocoVectorEnv)
    model.learn(512)
    assert model.num_timesteps == 512 and len(model.ep_info_buffer) > 0  # an untrained hopper falls
    assert all(info["l"] < 1000 for info in model.ep_info_buffer)
    model.save(tmp_path / "hopper")
    loaded = PPO.load(tmp_path / "hopper")
    obs = np.random.default_rng(0).normal(size=(5, 11)).astype(np.float32)
    np.testing.assert_array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
    mean_return, _ = evaluate_policy(loaded, make_env_from_id("RoboHopper-v0", n_envs=2, seed=1), n_eval_episodes=4)
    assert 0 < mean_return < 1000


@pytest.mark.parametrize("overlap_update", [False, True])
def test_past_an_entrys_budget_a_longer_run_ends_with_the_same_model(
    tiny: dict[str, Any], overlap_update: bool
) -> None:
    """The entry's learning rate reaches 0 at its budget: 4x the budget gives the budget's model, bit for bit."""
    models = []
    for steps in (256, 1024):
        model = PPO(
            "MlpPolicy", "RoboInvertedDoublePendulum-v0", n_envs=2, seed=0, overlap_update=overlap_update, **tiny
        )
        model.default_total_timesteps = 256  # as if the entry's budget were 256 steps
        models.append(model.learn(steps))
    budget, longer = (model.policy.state_dict() for model in models)
    assert models[1].num_timesteps == 1024
    for key, value in budget.items():
        th.testing.assert_close(longer[key], value, rtol=0, atol=0, msg=key)


def overlapped(overlap_update: bool, tiny: dict[str, Any], steps: int = 128 * 5) -> tuple[PPO, StatisticsSeen]:
    seen = StatisticsSeen()
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, seed=0, overlap_update=overlap_update, **tiny)
    return model.learn(steps, callback=seen), seen


def test_with_overlapped_updates_each_rollout_samples_with_the_weights_before_the_last_update(
    tiny: dict[str, Any],
) -> None:
    """Rollout k+1 is collected while rollout k trains: by the weights rollout k was collected with."""
    (_, plain), (model, seen) = overlapped(False, tiny), overlapped(True, tiny)
    assert model.paths_run["update"] == ["jax"]
    th.testing.assert_close(seen.weights[0], plain.weights[0], rtol=0, atol=0)
    th.testing.assert_close(seen.weights[1], seen.weights[0], rtol=0, atol=0)  # update 1 still running
    th.testing.assert_close(seen.weights[2], plain.weights[1], rtol=0, atol=0)  # update 1 is the synchronous one's
    assert not th.equal(seen.weights[3], plain.weights[2])  # from update 2 on, trained on a lagged rollout
    assert seen.counts == plain.counts == [0, 128, 256, 384, 512]  # statistics fold in as before
    again, _ = overlapped(True, tiny)
    for key, value in model.policy.state_dict().items():
        th.testing.assert_close(again.policy.state_dict()[key], value, rtol=0, atol=0, msg=key)


def test_with_overlapped_updates_the_model_at_rest_holds_the_last_update_and_its_statistics(
    tmp_path: pathlib.Path, tiny: dict[str, Any]
) -> None:
    """After learn(), in memory and in the saved file: the last update applied, paired with the statistics it
    used; the next rollout still samples with the weights before it, so a continued run is one longer run."""
    longer, _ = overlapped(True, tiny, steps=128 * 7)  # first: building a model seeds torch's generator
    model, _ = overlapped(True, tiny)
    assert model.policy.features_extractor.obs_rms.count.item() == 128 * 4  # the last update's statistics
    last_update = model.pairing.pending
    assert last_update is not None
    trained_weights = [th.tensor(np.asarray(p)) for p in last_update.parameters()]
    graph_weights = pending_parameters(model.policy)
    for weight, trained in zip(graph_weights, trained_weights, strict=True):
        th.testing.assert_close(weight.detach(), trained, rtol=0, atol=0)
    model.save(tmp_path / "model")
    at_rest = {key: value.clone() for key, value in model.policy.state_dict().items()}
    model.learn(128 * 2, reset_num_timesteps=False)
    for key, value in longer.policy.state_dict().items():
        th.testing.assert_close(model.policy.state_dict()[key], value, rtol=0, atol=0, msg=key)
    loaded = PPO.load(tmp_path / "model")  # (loading seeds torch's generator, as SB3's load does)
    for key, value in at_rest.items():
        th.testing.assert_close(loaded.policy.state_dict()[key], value, rtol=0, atol=0, msg=key)


def test_overlapped_updates_need_the_compiled_update_and_say_so(tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, seed=0, overlap_update=True, train_backend="torch", **tiny)
    with pytest.warns(UserWarning, match="overlap_update=True needs the compiled JAX update.*after each rollout"):
        model.learn(256)
    synchronous = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, seed=0, train_backend="torch", **tiny).learn(256)
    for key, value in synchronous.policy.state_dict().items():
        th.testing.assert_close(model.policy.state_dict()[key], value, rtol=0, atol=0, msg=key)
