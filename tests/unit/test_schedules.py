"""The KL-adaptive learning rate: the rule, its YAML form, and PPO applying it after every update."""

from __future__ import annotations

import pathlib

import pytest

from roboppo.common.schedules import KLAdaptiveLR
from roboppo.zoo.loader import HparamsError, load_ppo_hparams


def test_the_rate_follows_the_measured_kl_within_its_bounds() -> None:
    rate = KLAdaptiveLR(initial=1e-3, target_kl=0.01, factor=2.0, min_lr=2.5e-4, max_lr=4e-3)
    assert rate(1.0) == rate(0.0) == 1e-3  # progress does not matter, only measurements
    assert rate.update(0.03) == 5e-4  # above 2 x target: slower
    assert rate.update(0.012) == 5e-4  # within [target / 2, 2 x target]: kept
    assert rate.update(0.03) == 2.5e-4 and rate.update(0.03) == 2.5e-4  # not below min_lr
    assert [rate.update(0.001) for _ in range(6)][-1] == 4e-3  # below target / 2: faster, up to max_lr


@pytest.mark.parametrize(
    "kwargs", [{"initial": 0.0}, {"initial": 1e-3, "max_lr": 1e-4}, {"target_kl": 0.0}, {"factor": 1.0}]
)
def test_impossible_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="KLAdaptiveLR needs"):
        KLAdaptiveLR(**kwargs)


def test_yaml_form_and_its_errors(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "ppo.yml"
    path.write_text("MyEnv-v0:\n  learning_rate: {type: kl_adaptive, initial: 3.0e-4, target_kl: 0.02}\n")
    rate = load_ppo_hparams("MyEnv-v0", path).ppo_kwargs["learning_rate"]
    assert isinstance(rate, KLAdaptiveLR) and (rate.value, rate.target_kl) == (3e-4, 0.02)
    path.write_text("MyEnv-v0:\n  learning_rate: {type: kl_adaptive, initial: 3.0e-4, target: 0.02}\n")
    with pytest.raises(HparamsError, match=r"learning_rate: an adaptive rate is \{type: kl_adaptive"):
        load_ppo_hparams("MyEnv-v0", path)
    path.write_text("MyEnv-v0:\n  learning_rate: {type: kl_adaptive, initial: 3.0e-4, factor: 0.5}\n")
    with pytest.raises(HparamsError, match="factor > 1"):
        load_ppo_hparams("MyEnv-v0", path)


@pytest.mark.parametrize("policy", ["MlpPolicy", "stable_baselines3.common.policies.ActorCriticPolicy"])
def test_ppo_updates_the_rate_after_every_update_and_saves_it(tmp_path: pathlib.Path, policy: str) -> None:
    from stable_baselines3.common.policies import ActorCriticPolicy

    from roboppo import PPO

    chosen = ActorCriticPolicy if policy != "MlpPolicy" else policy
    rate = KLAdaptiveLR(initial=1e-4, target_kl=1.0)  # any small step is below target / 2: the rate grows
    model = PPO(chosen, "RoboInvertedPendulum-v0", n_envs=2, n_steps=32, batch_size=32, n_epochs=1,
                learning_rate=rate, hyperparams="sb3", seed=0)  # fmt: skip
    model.learn(64 * 3)
    assert model.learning_rate is rate and rate.value == pytest.approx(1e-4 * 1.5**3)
    optimizer_rate = model.policy.optimizer.param_groups[0]["lr"]
    assert optimizer_rate == pytest.approx(1e-4 * 1.5**2)  # an update uses the rate the previous ones left
    model.save(tmp_path / "model.zip")
    loaded = PPO.load(tmp_path / "model.zip")
    assert isinstance(loaded.learning_rate, KLAdaptiveLR) and loaded.learning_rate.value == rate.value
