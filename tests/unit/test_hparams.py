"""zoo_hparams/ppo.yml loading: valid entries and every error case."""

from __future__ import annotations

import pathlib

import pytest
from torch import nn

from roboppo.zoo.loader import (
    HparamsError,
    capped_budget,
    default_hparams_file,
    load_gail_hparams,
    load_ppo_hparams,
    zoo_device,
)


def write(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    path = tmp_path / "ppo.yml"
    path.write_text(text)
    return path


def test_shipped_file_has_an_entry_per_robo_env() -> None:
    for env_id in ["RoboInvertedPendulum-v0", "RoboInvertedDoublePendulum-v0", "RoboHopper-v0", "RoboAnt-v0"]:
        entry = load_ppo_hparams(env_id)
        assert entry.n_timesteps > 0 and entry.n_envs >= 1
    hopper = load_ppo_hparams("RoboHopper-v0")
    assert hopper.ppo_kwargs["policy_kwargs"] == {"log_std_init": 0.0}
    assert hopper.ppo_kwargs["clip_range"](0.5) == pytest.approx(0.1)  # decays linearly to 0
    assert hopper.ppo_kwargs["clip_range"](-0.25) == 0.0  # and stays there when the last rollout overshoots
    assert hopper.ppo_kwargs["reward_scale"] == 0.1
    ant = load_ppo_hparams("RoboAnt-v0")
    assert ant.ppo_kwargs["reward_scale"] == 0.1 and ant.ppo_kwargs["policy_kwargs"]["activation_fn"] is nn.SiLU
    assert default_hparams_file().name == "ppo.yml"


def test_activation_names_map_to_torch_modules(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, "MyEnv-v0:\n  policy_kwargs: {activation_fn: relu, net_arch: {pi: [8], vf: [8]}}\n")
    policy_kwargs = load_ppo_hparams("MyEnv-v0", path).ppo_kwargs["policy_kwargs"]
    assert policy_kwargs["activation_fn"] is nn.ReLU and policy_kwargs["net_arch"] == {"pi": [8], "vf": [8]}


def test_default_is_merged_and_plain_scientific_numbers_parse(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, "default:\n  n_timesteps: 1e6\n  gamma: 0.9\nMyEnv-v0:\n  learning_rate: 3.0e-4\n")
    entry = load_ppo_hparams("MyEnv-v0", path)
    assert entry.n_timesteps == 1_000_000
    assert entry.ppo_kwargs == {"gamma": 0.9, "learning_rate": 3.0e-4}


def test_env_kwargs_are_the_entrys_env_and_overrides_update_them(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, "MyEnv-v0:\n  gamma: 0.97\n  env_kwargs: {randomize: true, pushes: true}\n")
    entry = load_ppo_hparams("MyEnv-v0", path)
    assert entry.env_kwargs == {"randomize": True, "pushes": True} and "env_kwargs" not in entry.ppo_kwargs
    changed = load_ppo_hparams("MyEnv-v0", path, overrides={"env_kwargs": {"pushes": False, "history": 3}})
    assert changed.env_kwargs == {"randomize": True, "pushes": False, "history": 3}
    assert load_ppo_hparams("MyEnv-v0", write(tmp_path, "MyEnv-v0:\n  gamma: 0.9\n")).env_kwargs == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MyEnv-v0:\n  env_kwargs: [randomize]\n", r"key 'env_kwargs' must be dict"),
        ("MyEnv-v0:\n  n_step: 64\n", r"\[MyEnv-v0\]: unknown key 'n_step'"),
        ("MyEnv-v0:\n  n_steps: lots\n", r"\[MyEnv-v0\]: key 'n_steps' must be int"),
        ("MyEnv-v0:\n  normalize_advantage: 1\n", r"key 'normalize_advantage' must be bool"),
        ("MyEnv-v0:\n  n_epochs: true\n", r"key 'n_epochs' must be int"),
        ("MyEnv-v0:\n  policy_kwargs: {activation_fn: gelu}\n", r"activation_fn 'gelu' is not one of"),
        ("MyEnv-v0:\n  policy_kwargs: {net: [64]}\n", r"policy_kwargs: unknown key 'net'"),
        ("MyEnv-v0:\n  train_backend: numpy\n", r"train_backend 'numpy' is not one of \['auto', 'jax', 'torch'\]"),
        ("MyEnv-v0:\n  gamma: [0.9\n", r"YAML syntax error"),
        ("- just a list\n", r"mapping of env ids"),
    ],
)
def test_bad_files_name_file_env_and_key(tmp_path: pathlib.Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(HparamsError, match=message) as error:
        load_ppo_hparams("MyEnv-v0", path)
    assert str(path) in str(error.value)


def test_gail_entries_validate_and_split_trainer_and_ppo_keywords(tmp_path: pathlib.Path) -> None:
    entry = load_gail_hparams("RoboHopper-v0")
    assert entry.trainer_kwargs["n_disc_updates_per_round"] >= 1 and "n_steps" in entry.ppo_kwargs
    path = tmp_path / "gail.yml"
    path.write_text(
        "MyEnv-v0:\n  reward_hid_sizes: [16, 16]\n  reward_use_action: false\n  disc_spectral_norm: true\n"
        "  ppo: {n_steps: 32}\n"
    )
    custom = load_gail_hparams("MyEnv-v0", path)
    assert custom.trainer_kwargs == {
        "disc_spectral_norm": True,
        "reward_net_kwargs": {"use_action": False, "hid_sizes": (16, 16)},
    }
    assert custom.ppo_kwargs == {"n_steps": 32}
    path.write_text("MyEnv-v0:\n  reward_use_action: 0\n")
    with pytest.raises(HparamsError, match=r"key 'reward_use_action' must be bool, got 0"):
        load_gail_hparams("MyEnv-v0", path)
    path.write_text("MyEnv-v0:\n  ppo: {n_envs: 4}\n")
    with pytest.raises(HparamsError, match=r"ppo: key 'n_envs' belongs at the entry's top level"):
        load_gail_hparams("MyEnv-v0", path)
    path.write_text("MyEnv-v0:\n  disc_updates: 4\n")
    with pytest.raises(HparamsError, match=r"\[MyEnv-v0\]: unknown key 'disc_updates'"):
        load_gail_hparams("MyEnv-v0", path)


def test_schedules_are_mappings(tmp_path: pathlib.Path) -> None:
    path = write(
        tmp_path,
        "MyEnv-v0:\n  learning_rate: {type: linear, initial: 3.0e-4}\n  clip_range: {type: constant, initial: 0.3}\n",
    )
    kwargs = load_ppo_hparams("MyEnv-v0", path).ppo_kwargs
    assert kwargs["learning_rate"](1.0) == pytest.approx(3e-4) and kwargs["learning_rate"](0.5) == pytest.approx(1.5e-4)
    assert kwargs["clip_range"] == 0.3
    write(tmp_path, "MyEnv-v0:\n  learning_rate: {type: cosine, initial: 1}\n")
    with pytest.raises(HparamsError, match=r"learning_rate: a schedule is \{type: linear\|constant"):
        load_ppo_hparams("MyEnv-v0", path)


LAYERED = """
default:
  n_steps: 2048
  gamma: 0.99
  gpu: {n_steps: 4096}
default_brax:
  n_epochs: 4
  cpu: {n_envs: 32, batch_size: 512}
  gpu: {n_envs: 2048, batch_size: 5120}
RoboAnt-v0:
  gamma: 0.97
  cpu: {n_envs: 256}
"""


@pytest.mark.parametrize(
    ("env_id", "device", "expected"),
    [
        ("RoboAnt-v0", "cpu", {"n_envs": 256, "n_steps": 2048, "gamma": 0.97, "n_epochs": 4, "batch_size": 512}),
        ("RoboAnt-v0", "gpu", {"n_envs": 2048, "n_steps": 4096, "gamma": 0.97, "n_epochs": 4, "batch_size": 5120}),
        ("RoboHumanoid-v0", "cpu", {"n_envs": 32, "n_steps": 2048, "gamma": 0.99, "n_epochs": 4, "batch_size": 512}),
        ("RoboHopper-v0", "gpu", {"n_envs": 1, "n_steps": 4096, "gamma": 0.99}),
    ],
)
def test_layers_and_device_sub_entries_merge_in_order(
    tmp_path: pathlib.Path, env_id: str, device: str, expected: dict
) -> None:
    entry = load_ppo_hparams(env_id, write(tmp_path, LAYERED), device=device)
    assert {"n_envs": entry.n_envs, **entry.ppo_kwargs} == expected
    assert entry.device == device
    assert entry.values == {key: value for key, value in expected.items() if key != "n_envs" or value != 1}
    shown = env_id if env_id == "RoboAnt-v0" else ("default_brax" if "Humanoid" in env_id else "default")
    assert f"[{shown}] for {device}" in entry.source and (shown == env_id or f"no {env_id} entry" in entry.source)


def test_shipped_ant_entry_holds_a_cpu_and_a_gpu_batch() -> None:
    cpu, gpu = load_ppo_hparams("RoboAnt-v0", device="cpu"), load_ppo_hparams("RoboAnt-v0", device="gpu")
    assert (cpu.n_envs, cpu.ppo_kwargs["n_steps"], cpu.ppo_kwargs["batch_size"], cpu.n_timesteps) == (
        256, 40, 1280, 20_000_000
    )  # fmt: skip
    assert (gpu.n_envs, gpu.ppo_kwargs["n_steps"], gpu.ppo_kwargs["batch_size"], gpu.n_timesteps) == (
        2048, 80, 5120, 30_000_000
    )  # fmt: skip
    shared = {"n_epochs", "gamma", "clip_range", "ent_coef", "reward_scale", "max_grad_norm", "learning_rate"}
    assert {key: cpu.ppo_kwargs[key] for key in shared} == {key: gpu.ppo_kwargs[key] for key in shared}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MyEnv-v0:\n  gpu: 4\n", r"\[MyEnv-v0\] gpu: a device sub-entry is a mapping"),
        ("MyEnv-v0:\n  cpu: {gpu: {n_steps: 8}}\n", r"no nested cpu/gpu"),
        ("MyEnv-v0:\n  tpu: {n_steps: 8}\n", r"unknown key 'tpu'.*device sub-entries are cpu: and gpu:"),
        ("MyEnv-v0:\n  cpu: {n_step: 8}\n", r"unknown key 'n_step'"),
        ("MyEnv-v0: [1, 2]\n", r"\[MyEnv-v0\]: expected a mapping of settings"),
    ],
)
def test_bad_device_sub_entries_are_named(tmp_path: pathlib.Path, text: str, message: str) -> None:
    with pytest.raises(HparamsError, match=message):
        load_ppo_hparams("MyEnv-v0", write(tmp_path, text), device="cpu")


@pytest.mark.parametrize(
    ("env_id", "torch_device", "jax_backend", "expected"),
    [
        ("RoboHopper-v0", "cpu", "cpu", "cpu"),
        ("RoboHopper-v0", "cuda", "cpu", "gpu"),
        ("RoboAnt-v0", "cuda", "gpu", "gpu"),
        ("RoboAnt-v0", "cuda", "cpu", "cpu"),  # the envs would step on the CPU: a CPU-sized batch
        ("RoboAnt-v0", "cpu", "gpu", "cpu"),  # the update would run on the CPU
    ],
)
def test_device_kind_follows_torch_and_jax(
    monkeypatch: pytest.MonkeyPatch, env_id: str, torch_device: str, jax_backend: str, expected: str
) -> None:
    import jax
    import torch as th

    from roboppo.zoo import loader as hparams

    monkeypatch.setattr(hparams, "get_device", lambda device: th.device(torch_device))
    monkeypatch.setattr(jax, "default_backend", lambda: jax_backend)
    kind, why = zoo_device(env_id, "auto")
    assert kind == expected and f"torch on {torch_device}" in why
    assert ("JAX on" in why) == (env_id == "RoboAnt-v0")
    assert zoo_device(env_id, "gpu") == ("gpu", "requested")


def test_budget_cap_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROBOPPO_MAX_TIMESTEPS", raising=False)
    assert capped_budget(20_000) == (20_000, "")
    monkeypatch.setenv("ROBOPPO_MAX_TIMESTEPS", "500")
    assert capped_budget(20_000) == (500, " (capped by ROBOPPO_MAX_TIMESTEPS=500)")
    assert capped_budget(300) == (300, "")


def test_the_keys_roboppo_adds_are_those_of_its_signatures() -> None:
    """The validation layer declares roboppo's extra keywords (it imports nothing from the algorithms); they must
    be what roboppo.PPO and TanhGaussianPolicy really add to SB3's signatures."""
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.policies import ActorCriticPolicy

    from roboppo import PPO, TanhGaussianPolicy
    from roboppo.zoo import schema as validation

    def added(ours: object, theirs: object) -> dict:
        mine, sb3 = validation._settings_of(ours), validation._settings_of(theirs)
        return {key: value for key, value in mine.items() if sb3.get(key) != value}

    # None means "auto" (train_backend) or "the entry's, else False" (overlap_update) in PPO
    declared = dict(validation.ROBOPPO_PPO_KEYS, train_backend=(str, type(None)), overlap_update=(bool, type(None)))
    assert added(PPO.__init__, SB3PPO.__init__) == declared
    assert added(TanhGaussianPolicy.__init__, ActorCriticPolicy.__init__) == validation.ROBOPPO_POLICY_KEYS
