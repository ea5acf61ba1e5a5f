"""``PPO("MlpPolicy", id).learn()``: the zoo entry fills what the caller leaves out, SB3's defaults elsewhere.

Budgets are shrunk with ``ROBOPPO_MAX_TIMESTEPS`` (the README's mechanism for smoke-testing scripts).
"""

from __future__ import annotations

import json
import pathlib
import zipfile
from typing import Any

import gymnasium as gym
import pytest
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.policies import ActorCriticPolicy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.common.schedules import KLAdaptiveLR
from roboppo.ppo.settings import SB3_SOURCE
from roboppo.zoo import ZooEntry, load_ppo_hparams

SB3_KEYS = ["n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "ent_coef", "vf_coef", "max_grad_norm"]


def assert_matches_entry(model: PPO, entry: ZooEntry) -> None:
    """Every value of the entry is the model's (schedules compared along the run)."""
    assert model.n_envs == entry.n_envs
    assert model.default_total_timesteps == entry.n_timesteps
    for key, value in entry.ppo_kwargs.items():
        if key == "policy_kwargs":
            assert model.policy_kwargs == value
        elif isinstance(value, KLAdaptiveLR):  # its rate moves with every update: compare the rule
            rule = ("target_kl", "factor", "min_lr", "max_lr")
            assert [getattr(model.learning_rate, name) for name in rule] == [getattr(value, name) for name in rule]
        elif key in ("learning_rate", "clip_range"):
            schedule = model.lr_schedule if key == "learning_rate" else model.clip_range
            for progress in (1.0, 0.5, 0.1):
                expected = value(progress) if callable(value) else value
                assert schedule(progress) == pytest.approx(expected), key  # type: ignore[operator]
        else:
            assert getattr(model, key) == value, key


@pytest.mark.parametrize("env_id", ["RoboInvertedPendulum-v0", "RoboHopper-v0", "RoboAnt-v0"])
def test_the_headline_line_trains_with_the_zoo_entry(
    env_id: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("ROBOPPO_MAX_TIMESTEPS", "1")
    model = PPO("MlpPolicy", env_id).learn()
    entry = load_ppo_hparams(env_id)
    assert_matches_entry(model, entry)
    assert model.num_timesteps == model.n_envs * model.n_steps  # the cap: one rollout
    assert model.hyperparams_source == entry.source and f"[{env_id}] for cpu" in entry.source
    out = capsys.readouterr().out
    assert f"Training PPO on {env_id} for 1 env steps (capped by ROBOPPO_MAX_TIMESTEPS=1)" in out
    assert model.policy.optimizer.param_groups[0]["lr"] >= 0  # a schedule past its end holds its final value


def test_explicit_arguments_win_over_the_entry(capsys: pytest.CaptureFixture) -> None:
    model = PPO(
        "MlpPolicy", "RoboHopper-v0", 1e-4, n_steps=128, n_envs=2, reward_scale=1.0,
        policy_kwargs={"net_arch": [32]}, verbose=1,
    )  # fmt: skip
    assert (model.learning_rate, model.n_steps, model.n_envs, model.reward_scale) == (1e-4, 128, 2, 1.0)
    assert model.policy_kwargs == {"net_arch": [32]}  # replaced as a whole: no log_std_init from the entry
    entry = load_ppo_hparams("RoboHopper-v0")
    assert model.clip_range(0.5) == pytest.approx(0.1)  # type: ignore[operator]  # the entry's linear decay
    assert (model.batch_size, model.gamma) == (entry.ppo_kwargs["batch_size"], entry.ppo_kwargs["gamma"])
    assert set(model.hyperparams) == {"batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef"} | {
        "vf_coef", "max_grad_norm"
    }  # fmt: skip
    out = capsys.readouterr().out
    assert "Hyperparameters from zoo_hparams/ppo.yml [RoboHopper-v0]" in out
    assert "your arguments replace learning_rate, n_envs, n_steps, policy_kwargs, reward_scale" in out


def _sb3_values(model: Any) -> dict[str, Any]:
    values = {key: getattr(model, key) for key in SB3_KEYS}
    values |= {"lr": model.lr_schedule(1.0), "clip": model.clip_range(1.0), "n_envs": model.n_envs}
    return values | {"policy_kwargs": model.policy_kwargs, "target_kl": model.target_kl}


@pytest.mark.parametrize("kind", ["env object", "VecEnv", "other id", "hyperparams='sb3'"])
def test_anything_but_a_roboppo_id_keeps_sb3_defaults(kind: str) -> None:
    envs = {
        "env object": lambda: gym.make("RoboHopper-v0"),
        "VecEnv": lambda: make_env_from_id("RoboHopper-v0", n_envs=1),
        "other id": lambda: "Pendulum-v1",
        "hyperparams='sb3'": lambda: "RoboHopper-v0",
    }
    extra = {"hyperparams": "sb3"} if kind == "hyperparams='sb3'" else {}
    model = PPO("MlpPolicy", envs[kind](), **extra)
    reference = SB3PPO("MlpPolicy", "Pendulum-v1" if kind == "other id" else gym.make("RoboHopper-v0"))
    assert _sb3_values(model) == _sb3_values(reference)
    assert (model.reward_scale, model.train_backend) == (1.0, "auto")
    assert (model.hyperparams_source, model.hyperparams, model.default_total_timesteps) == (SB3_SOURCE, {}, None)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'total_timesteps'"):
        model.learn()


def test_hyperparams_keyword_is_checked() -> None:
    with pytest.raises(ValueError, match="hyperparams='zoo' reads the zoo entry of a registered roboppo env id"):
        PPO("MlpPolicy", gym.make("RoboHopper-v0"), hyperparams="zoo")
    with pytest.raises(ValueError, match="hyperparams must be 'zoo', 'sb3', None or a ZooEntry"):
        PPO("MlpPolicy", "RoboHopper-v0", hyperparams="tuned")


def test_an_entry_can_be_given_with_an_env_object(tiny: dict[str, Any]) -> None:
    entry = load_ppo_hparams("RoboHopper-v0")
    model = PPO("MlpPolicy", make_env_from_id("RoboHopper-v0", n_envs=2), hyperparams=entry)
    assert model.n_envs == 2  # the env decides
    assert model.reward_scale == 0.1 and model.hyperparams_source == entry.source


def test_another_policy_keeps_its_own_keywords() -> None:
    model = PPO(ActorCriticPolicy, "RoboAnt-v0", n_envs=2)
    assert model.policy_kwargs == {} and "policy_kwargs" not in model.hyperparams
    assert model.gamma == 0.97  # the rest of the entry applies


def test_saved_models_remember_where_their_settings_came_from(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROBOPPO_MAX_TIMESTEPS", "256")
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", seed=0).learn(progress_bar=False)
    model.save(tmp_path / "pendulum.zip")
    loaded = PPO.load(tmp_path / "pendulum.zip", env=make_env_from_id("RoboInvertedPendulum-v0", n_envs=4))
    assert loaded.hyperparams_source == model.hyperparams_source
    assert loaded.hyperparams == model.hyperparams and loaded.hyperparams["learning_rate"] == {
        "type": "linear",
        "initial": 2.0e-3,
    }
    assert loaded.default_total_timesteps == 20_000 and loaded.env_id == "RoboInvertedPendulum-v0"
    assert loaded.learn(256, reset_num_timesteps=False).num_timesteps == 512


def test_default_budget_is_announced_with_an_estimate_and_a_progress_bar(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    bars: list[bool] = []
    original = SB3PPO.learn

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        bars.append(args[-1])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SB3PPO, "learn", spy)
    monkeypatch.setenv("ROBOPPO_MAX_TIMESTEPS", str(4 * 256))
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", seed=0).learn()
    model.learn(256)  # an explicit budget: SB3's default, no bar
    model.learn(progress_bar=False)
    assert bars == [True, False, False]
    out = capsys.readouterr().out
    assert out.count("Training PPO on RoboInvertedPendulum-v0 for 1,024 env steps") == 2
    assert out.count("to go on this machine") == 2  # printed at the third rollout of each default-budget run


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_a_bad_budget_cap_is_named(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOPPO_MAX_TIMESTEPS", value)
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0")
    with pytest.raises(ValueError, match=f"ROBOPPO_MAX_TIMESTEPS='{value}': expected a positive whole number"):
        model.learn()


def test_models_saved_without_a_record_load_as_before(tmp_path: pathlib.Path, tiny: dict[str, Any]) -> None:
    PPO("MlpPolicy", "RoboInvertedPendulum-v0", seed=0, **tiny).save(tmp_path / "new.zip")
    with zipfile.ZipFile(tmp_path / "new.zip") as new, zipfile.ZipFile(tmp_path / "old.zip", "w") as old:
        for item in new.infolist():
            content = new.read(item)
            if item.filename == "data":
                data = json.loads(content)
                for key in ("hyperparams_source", "hyperparams", "default_total_timesteps", "env_id"):
                    del data[key]
                content = json.dumps(data).encode()
            old.writestr(item, content)
    loaded = PPO.load(tmp_path / "old.zip", env=make_env_from_id("RoboInvertedPendulum-v0"))
    assert (loaded.hyperparams_source, loaded.hyperparams, loaded.default_total_timesteps) == ("not recorded", {}, None)
    assert loaded.n_steps == 64 and loaded.learn(64).num_timesteps == 64
    with pytest.raises(TypeError, match=r"'total_timesteps'.*settings are from not recorded"):
        loaded.learn()
