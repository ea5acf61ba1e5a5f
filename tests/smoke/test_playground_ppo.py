"""roboppo.PPO on a robot task: the Dict observations, domain randomization and kicks through SB3's loop."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from roboppo import PPO
from roboppo.zoo.loader import load_ppo_hparams


def test_ppo_trains_on_go1_with_the_kit_on() -> None:
    model = PPO(
        "MultiInputPolicy",
        "roboppo/Go1JoystickFlatTerrain-v1",
        n_envs=4,
        n_steps=64,
        batch_size=128,
        n_epochs=1,
        seed=0,
        env_kwargs={"randomize": True, "pushes": {"kick_wait_times": (0.2, 0.4)}, "max_episode_steps": 40},
    )
    assert model.observation_space.shape == (48 + 123,)  # state and privileged_state, flattened in the space's order
    model.learn(512)
    assert model.num_timesteps == 512
    assert np.isfinite(model.rollout_buffer.rewards).all()
    drawn = model.get_env().get_attr("randomization")
    assert len(drawn) == 4 and drawn[0]["floor_friction"] != drawn[1]["floor_friction"]
    assert model.ep_info_buffer and all(info["l"] <= 40 for info in model.ep_info_buffer)  # episodes ended and reset


def test_ppo_splits_a_dict_env_by_its_keys() -> None:
    model = PPO(
        "MultiInputPolicy",
        "roboppo/Go1JoystickFlatTerrain-v1",
        n_envs=2,
        n_steps=16,
        batch_size=32,
        seed=0,
        policy_kwargs={"actor_keys": ["state"], "critic_keys": ["privileged_state"]},
    )
    layout = model.policy.observation_layout
    assert layout == {"privileged_state": (0, 123), "state": (123, 171)}  # Gymnasium's Dict sorts its keys
    assert model.policy.mlp_extractor.policy_net[0].in_features == 48
    with pytest.raises(ValueError, match="critic_keys \\['privileged'\\] are not keys of the observation"):
        PPO("MultiInputPolicy", "roboppo/Go1JoystickFlatTerrain-v1", policy_kwargs={"critic_keys": ["privileged"]})


def test_ppo_trains_on_the_panda_with_randomization_and_history() -> None:
    model = PPO(
        "MultiInputPolicy",
        "roboppo/PandaPickCube-v1",
        n_envs=4,
        n_steps=64,
        batch_size=128,
        n_epochs=1,
        seed=0,
        env_kwargs={"randomize": True, "history": 2},
    )
    assert model.observation_space.shape == (2 * 66,)  # two frames of the state
    model.learn(768)
    assert model.num_timesteps == 768 and np.isfinite(model.rollout_buffer.rewards).all()
    assert model.ep_info_buffer and all(info["l"] == 150 for info in model.ep_info_buffer)  # 150-step episodes
    action, _ = model.predict(model.get_env().reset(), deterministic=True)
    assert action.shape == (4, 8) and np.abs(action).max() <= 1.0


def test_a_zoo_entry_sets_the_kit_and_a_users_env_kwargs_update_it(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "ppo.yml"
    path.write_text(
        "roboppo/Go1JoystickFlatTerrain-v1:\n  n_envs: 2\n  n_steps: 16\n  batch_size: 32\n"
        "  env_kwargs: {randomize: true, noise_level: 0.0}\n"
    )
    entry = load_ppo_hparams("roboppo/Go1JoystickFlatTerrain-v1", path)
    model = PPO("MultiInputPolicy", "roboppo/Go1JoystickFlatTerrain-v1", hyperparams=entry, seed=0)
    model.get_env().reset()
    assert model.get_env().get_attr("randomization")[0]["floor_friction"] > 0  # the entry's randomization
    assert model.get_env().get_attr("noise_level") == [0.0, 0.0]
    mine = PPO(
        "MultiInputPolicy", "roboppo/Go1JoystickFlatTerrain-v1", hyperparams=entry, env_kwargs={"randomize": False}
    )
    assert mine.get_env().get_attr("randomization")[0] == {} and mine.get_env().get_attr("noise_level")[0] == 0.0


@pytest.mark.parametrize("policy", ["MultiInputPolicy", "MlpPolicy"])
def test_either_alias_on_a_robot_takes_the_entrys_networks(tmp_path: pathlib.Path, policy: str) -> None:
    path = tmp_path / "ppo.yml"
    path.write_text(
        "roboppo/Go1JoystickFlatTerrain-v1:\n  n_envs: 2\n  n_steps: 16\n  batch_size: 32\n"
        "  policy_kwargs: {net_arch: {pi: [32, 16], vf: [24]}, activation_fn: silu, actor_keys: [state],"
        " critic_keys: [privileged_state]}\n"
    )
    entry = load_ppo_hparams("roboppo/Go1JoystickFlatTerrain-v1", path)
    model = PPO(policy, "roboppo/Go1JoystickFlatTerrain-v1", hyperparams=entry, seed=0)
    actor, critic = model.policy.mlp_extractor.policy_net, model.policy.mlp_extractor.value_net
    assert [layer.out_features for layer in actor if hasattr(layer, "out_features")] == [32, 16]
    assert [layer.in_features for layer in critic if hasattr(layer, "in_features")] == [123]  # privileged_state
    assert model.hyperparams["policy_kwargs"]["net_arch"] == {"pi": [32, 16], "vf": [24]}
