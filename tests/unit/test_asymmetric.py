"""The asymmetric actor-critic: the actor reads some keys of the observation, the value function others.

Each fast path is held to the torch policy on it: the NumPy sampler draws what ``rollout_actions`` draws,
the compiled update takes the torch update's steps, export writes the actor alone, and a saved model
loads with the same split.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from roboppo import PPO, TanhGaussianPolicy
from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.ppo.fast_paths import sampler_choice, update_choice
from roboppo.ppo.sampler import RolloutSampler
from tests.unit.test_jax_train import assert_same_steps, train_both, twins
from tests.unit.test_sampler import assert_same_draws

pytestmark = pytest.mark.filterwarnings("ignore:You have specified a mini-batch size of 24")

OBS = spaces.Box(-np.inf, np.inf, (7,), np.float32)
ACTIONS = spaces.Box(-1.0, 1.0, (2,), np.float32)
LAYOUT = {"privileged": (0, 4), "sensed": (4, 7)}
SPLIT = {"actor_keys": ["sensed"], "critic_keys": ["privileged", "sensed"], "observation_layout": LAYOUT}
#: Hopper's 11 observations split as if they were two keys: positions and velocities
HOPPER_SPLIT = {
    "actor_keys": ["qpos"],
    "critic_keys": ["qvel", "qpos"],
    "observation_layout": {"qpos": (0, 5), "qvel": (5, 11)},
}


def make_policy(**kwargs: object) -> TanhGaussianPolicy:
    return TanhGaussianPolicy(OBS, ACTIONS, lambda _: 3e-4, **(SPLIT | kwargs))  # type: ignore[arg-type]


def test_each_network_reads_its_keys_alone(rng: np.random.Generator) -> None:
    policy = make_policy(net_arch={"pi": [8], "vf": [16]})
    assert isinstance(policy.pi_features_extractor, NormalizedFlattenExtractor)
    assert policy.mlp_extractor.policy_net[0].in_features == 3 and policy.mlp_extractor.value_net[0].in_features == 7
    policy.update_obs_normalizer(rng.normal(5.0, 2.0, size=(64, 7)).astype(np.float32))
    assert policy.pi_features_extractor.obs_rms.mean.shape == (3,)  # each normalizer keeps its columns' statistics
    assert policy.vf_features_extractor.obs_rms.mean.shape == (7,)
    obs = th.as_tensor(rng.normal(5.0, 2.0, size=(4, 7)), dtype=th.float32)
    changed = obs.clone()
    changed[:, :4] += 3.0  # the privileged columns only
    with th.no_grad():
        assert th.equal(policy._predict(obs, deterministic=True), policy._predict(changed, deterministic=True))
        assert not th.equal(policy.predict_values(obs), policy.predict_values(changed))


@pytest.mark.parametrize("kwargs", [{}, {"net_arch": [16, 8], "activation_fn": th.nn.ReLU}, {"normalize_obs": False}])
def test_the_sampler_draws_what_the_asymmetric_policy_draws(kwargs: dict, rng: np.random.Generator) -> None:
    policy = make_policy(**kwargs)
    policy.update_obs_normalizer(rng.normal(2.0, 3.0, size=(64, 7)).astype(np.float32))
    choice = sampler_choice(policy)
    assert choice.path == "numpy" and choice.graph is not None
    obs = th.as_tensor(rng.normal(2.0, 3.0, size=(16, 7)), dtype=th.float32)
    assert_same_draws(policy, RolloutSampler(choice.graph), obs)


def test_the_compiled_update_takes_the_torch_updates_steps() -> None:
    pytest.importorskip("jax")
    torch_model, jax_model = twins(policy_kwargs=HOPPER_SPLIT | {"net_arch": [32, 16]})
    assert update_choice(jax_model.policy).path == "jax"
    assert jax_model.policy.mlp_extractor.value_net[0].in_features == 11
    assert_same_steps(torch_model, jax_model, train_both(torch_model, jax_model))


def test_a_saved_model_loads_with_its_split(tmp_path: pathlib.Path) -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_steps=32, batch_size=32, seed=0, policy_kwargs=HOPPER_SPLIT)
    model.learn(64)
    model.save(tmp_path / "model.zip")
    loaded = PPO.load(tmp_path / "model.zip")
    assert loaded.policy.actor_columns == (0, 1, 2, 3, 4)
    obs = np.random.default_rng(0).normal(size=(5, 11)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])


def test_export_writes_the_actor_alone(tmp_path: pathlib.Path) -> None:
    onnxruntime = pytest.importorskip("onnxruntime")
    from roboppo.export import export_policy

    model = PPO("MlpPolicy", "RoboHopper-v0", n_steps=32, batch_size=32, seed=0, policy_kwargs=HOPPER_SPLIT)
    model.learn(64)
    path = export_policy(model.policy, tmp_path / "actor.onnx", "onnx")
    session = onnxruntime.InferenceSession(str(path))
    assert session.get_inputs()[0].shape[-1] == 5  # the actor's keys only: what the robot senses
    obs = np.random.default_rng(1).normal(size=(8, 11)).astype(np.float32)
    (actions,) = session.run(["action"], {"observation": obs[:, :5]})
    np.testing.assert_allclose(actions, model.predict(obs, deterministic=True)[0], atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"actor_keys": ["camera"]}, "actor_keys ['camera'] are not keys of the observation; its keys are"),
        ({"observation_layout": None}, "actor_keys and critic_keys choose keys of a Dict observation space"),
    ],
)
def test_keys_the_observation_lacks_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        make_policy(**kwargs)
    assert message in str(error.value)
