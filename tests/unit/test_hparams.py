"""zoo_hparams/ppo.yml loading: valid entries and every error case."""

from __future__ import annotations

import pathlib

import pytest
from torch import nn

from roboppo.zoo.hparams import HparamsError, default_hparams_file, load_gail_hparams, load_ppo_hparams


def write(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    path = tmp_path / "ppo.yml"
    path.write_text(text)
    return path


def test_shipped_file_has_an_entry_per_robo_env() -> None:
    for env_id in ["RoboInvertedPendulum-v0", "RoboInvertedDoublePendulum-v0", "RoboHopper-v0", "RoboAnt-v0"]:
        entry = load_ppo_hparams(env_id)
        assert entry.n_timesteps > 0 and entry.n_envs >= 1
    hopper = load_ppo_hparams("RoboHopper-v0")
    assert hopper.ppo_kwargs["policy_kwargs"] == {"log_std_init": -1.0}
    assert hopper.ppo_kwargs["clip_range"](0.5) == pytest.approx(0.1)  # decays linearly to 0
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


@pytest.mark.parametrize(
    ("text", "message"),
    [
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
