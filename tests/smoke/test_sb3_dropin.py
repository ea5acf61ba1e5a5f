"""roboppo.PPO where SB3's PPO works: wrappers, callbacks, spaces, save/load, warnings (tested as SB3 tests its PPO)."""

from __future__ import annotations

import io
import pathlib
import types
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3
import torch as th
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback, StopTrainingOnMaxEpisodes
from stable_baselines3.common.envs import (
    FakeImageEnv,
    IdentityEnv,
    IdentityEnvBox,
    IdentityEnvMultiBinary,
    IdentityEnvMultiDiscrete,
    SimpleMultiObsEnv,
)
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.policies import ActorCriticCnnPolicy, ActorCriticPolicy, MultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper, VecNormalize

from roboppo import PPO, TanhGaussianPolicy
from roboppo.common.env_util import make_env_from_id
from tests.unit.test_distributions import reference


class TimesThousand(VecEnvWrapper):
    """A user's reward wrapper: rewards x 1000; counts its ``step_wait`` calls."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self.calls = 0

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        self.calls += 1
        obs, rewards, dones, infos = self.venv.step_wait()
        return obs, rewards * 1000.0, dones, infos


def batched_pendulums(n_envs: int = 2, seed: int = 0) -> VecEnv:
    return make_env_from_id("RoboInvertedPendulum-v0", n_envs=n_envs, seed=seed)


# -- VecEnv wrappers on roboppo's batched envs ------------------------------------------------


def test_a_user_reward_wrapper_on_a_batched_env_is_what_ppo_learns_from(tiny: dict[str, Any]) -> None:
    wrapped = TimesThousand(batched_pendulums())
    model = PPO("MlpPolicy", wrapped, seed=0, **tiny).learn(128)
    assert wrapped.calls == 64  # every vector step went through the wrapper
    rewards = model.rollout_buffer.rewards
    assert np.median(rewards) == pytest.approx(1000.0)  # pendulum pays 1 per step; no time-limit bootstrap here


def test_vec_normalize_statistics_update_and_ppo_sees_normalized_values(tiny: dict[str, Any]) -> None:
    venv = VecNormalize(batched_pendulums(), gamma=0.99)
    model = PPO("MlpPolicy", venv, seed=0, **tiny).learn(256)
    assert venv.obs_rms.count > 256 and venv.ret_rms.count > 0
    assert model.get_env() is venv and model.get_vec_normalize_env() is venv  # no wrapper of roboppo's on top
    assert np.abs(model.rollout_buffer.observations).max() <= venv.clip_obs
    assert np.abs(model.rollout_buffer.rewards).max() < 1.0  # pendulum's reward of 1, normalized by the return std


def test_imitations_reward_wrapper_replaces_the_reward_ppo_learns_from(tiny: dict[str, Any]) -> None:
    from imitation.rewards.reward_wrapper import RewardVecEnvWrapper

    def reward_fn(obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        return np.full(len(obs), -7.0, np.float32)

    venv = RewardVecEnvWrapper(batched_pendulums(), reward_fn)
    model = PPO("MlpPolicy", venv, seed=0, **tiny).learn(128)
    np.testing.assert_allclose(model.rollout_buffer.rewards, -7.0)


# -- callbacks ---------------------------------------------------------------------------------


class RecordLocals(BaseCallback):
    """Keeps the types and episode infos a callback sees at every step."""

    def __init__(self) -> None:
        super().__init__()
        self.dones_types: set[type] = set()
        self.episodes: list[dict[str, Any]] = []
        self.terminal_obs = 0
        self.steps_with_ends = 0

    def _on_step(self) -> bool:
        dones, infos = self.locals["dones"], self.locals["infos"]
        self.dones_types.add(type(dones))
        assert len(infos) == len(dones) == self.training_env.num_envs
        self.steps_with_ends += int(dones.any())
        for done, info in zip(dones, infos, strict=True):
            if done:
                self.episodes.append(info["episode"])
                self.terminal_obs += int("terminal_observation" in info)
        return True


def test_callbacks_see_numpy_dones_and_episode_infos_on_a_batched_env(tiny: dict[str, Any]) -> None:
    recorder = RecordLocals()
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=4, seed=0, **tiny)
    model.learn(512, callback=recorder)
    assert recorder.dones_types == {np.ndarray}
    assert len(recorder.episodes) > 0 and recorder.terminal_obs == len(recorder.episodes)  # an untrained hopper falls
    assert all({"r", "l", "t"} <= set(episode) for episode in recorder.episodes)
    logged = [(info["r"], info["l"]) for info in model.ep_info_buffer]
    assert logged == [(episode["r"], episode["l"]) for episode in recorder.episodes][-len(logged) :]


def test_stop_training_on_max_episodes_stops_a_batched_run(tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=4, seed=0, **tiny)
    model.learn(100_000, callback=StopTrainingOnMaxEpisodes(max_episodes=3))
    assert 0 < model.num_timesteps < 1_000


# -- state that travels ------------------------------------------------------------------------


class RewardsSeen(BaseCallback):
    def __init__(self) -> None:
        super().__init__()
        self.rewards: list[np.ndarray] = []

    def _on_rollout_start(self) -> None:
        self.rewards.clear()

    def _on_step(self) -> bool:
        self.rewards.append(np.array(self.locals["rewards"]))
        return True


def assert_scaled(model: PPO, seen: RewardsSeen, scale: float) -> None:
    """The buffer holds ``scale`` times the env's rewards (no time-limit bootstraps in these short runs)."""
    np.testing.assert_allclose(model.rollout_buffer.rewards, scale * np.stack(seen.rewards), rtol=1e-6)


def test_batched_hopper_to_a_single_env_and_back_keeps_reward_scale(
    tmp_path: pathlib.Path, tiny: dict[str, Any]
) -> None:
    seen = RewardsSeen()
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=4, reward_scale=0.1, seed=0, **tiny).learn(256, callback=seen)
    assert_scaled(model, seen, 0.1)
    model.save(tmp_path / "batched")
    single = PPO.load(tmp_path / "batched", env=gym.make("RoboHopper-v0"))
    assert single.reward_scale == 0.1 and single.n_envs == 1 and single.rollout_buffer.n_envs == 1
    single.learn(128, callback=seen, reset_num_timesteps=False)
    assert_scaled(single, seen, 0.1)
    single.save(tmp_path / "single")
    again = PPO.load(tmp_path / "single", env=make_env_from_id("RoboHopper-v0", n_envs=4, seed=1))
    again.learn(256, callback=seen, reset_num_timesteps=False)
    assert_scaled(again, seen, 0.1)
    assert again.num_timesteps == 256 + 128 + 256


def test_set_env_accepts_another_number_of_copies(tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", batched_pendulums(n_envs=4), seed=0, **tiny).learn(256)
    model.set_env(DummyVecEnv([lambda: gym.make("RoboInvertedPendulum-v0")]))
    assert model.n_envs == 1 and model.rollout_buffer.n_envs == 1
    model.learn(64, reset_num_timesteps=False)
    model.set_env(batched_pendulums(n_envs=3), force_reset=False)  # the old last observation cannot be reused
    model.learn(192, reset_num_timesteps=False)
    assert model.num_timesteps == 256 + 64 + 192
    with pytest.raises(ValueError, match="Observation spaces do not match"):
        model.set_env(make_env_from_id("RoboHopper-v0", n_envs=2))
    assert model.n_envs == 3 and model.rollout_buffer.n_envs == 3  # a refused env changes nothing


@pytest.mark.parametrize("env_id", ["RoboInvertedPendulum-v0", "CartPole-v1"])
def test_save_and_load_through_file_objects(env_id: str, tiny: dict[str, Any], rng: np.random.Generator) -> None:
    model = PPO("MlpPolicy", env_id, seed=0, **tiny).learn(64)
    buffer = io.BytesIO()
    model.save(buffer)
    buffer.seek(0)
    loaded = PPO.load(buffer)
    obs = np.stack([model.observation_space.sample() for _ in range(8)])
    np.testing.assert_array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
    params = zip(model.policy.state_dict().values(), loaded.policy.state_dict().values(), strict=True)
    assert all(th.equal(a, b) for a, b in params)


# -- the constructor and SB3's policy aliases --------------------------------------------------


def test_hyperparameters_can_be_passed_positionally() -> None:
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", 1e-3, 128, 32, 3, 0.9)
    assert (model.learning_rate, model.n_steps, model.batch_size, model.n_epochs, model.gamma) == (
        1e-3,
        128,
        32,
        3,
        0.9,
    )
    with pytest.raises(TypeError, match="learning_rat"):
        PPO("MlpPolicy", "RoboInvertedPendulum-v0", learning_rat=1e-3)


def test_sb3_policy_aliases_sit_next_to_roboppos_mlp_policy(tiny: dict[str, Any]) -> None:
    assert PPO.policy_aliases["MlpPolicy"] is TanhGaussianPolicy
    images = PPO("CnnPolicy", FakeImageEnv(screen_height=36, screen_width=36), n_steps=32, batch_size=16, n_epochs=1)
    assert isinstance(images.policy, ActorCriticCnnPolicy)
    images.learn(64)
    dicts = PPO("MultiInputPolicy", SimpleMultiObsEnv(), seed=0, **tiny)
    assert isinstance(dicts.policy, MultiInputActorCriticPolicy)
    dicts.learn(256)  # episodes end inside these 256 steps: the finite check reads Dict terminal observations
    assert len(dicts.ep_info_buffer) > 0
    with pytest.raises(ValueError, match="MultiInputPolicy"):
        PPO("MlpPolicy", SimpleMultiObsEnv())


def test_mlp_policy_takes_image_and_multi_dimensional_box_observations(tiny: dict[str, Any]) -> None:
    env = FakeImageEnv(screen_height=12, screen_width=12, n_channels=2, discrete=False)
    model = PPO("MlpPolicy", env, seed=0, **tiny).learn(128)
    stats = model.policy.features_extractor.obs_rms
    assert stats.mean.shape == model.observation_space.shape and stats.count.item() == 64  # the first rollout's
    assert stats.mean.min().item() >= 0.0 and stats.mean.max().item() <= 1.0  # images after SB3's / 255
    action, _ = model.predict(env.observation_space.sample())
    assert env.action_space.contains(action)


class MatrixActionEnv(gym.Env):
    """Box actions of shape (2, 3) with asymmetric bounds; reward = -|action - target|."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(np.full((2, 3), -1.0, np.float32), np.full((2, 3), 3.0, np.float32))

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        assert self.action_space.contains(action), f"action {action!r} outside {self.action_space}"
        return np.zeros(2, np.float32), -float(np.abs(action - 2.0).sum()), False, False, {}


def test_multi_dimensional_box_actions_reach_the_env_in_its_shape(tiny: dict[str, Any]) -> None:
    settings = tiny | {"policy_kwargs": {"net_arch": [16], "log_std_init": 3.0}}  # saturated actions
    model = PPO("MlpPolicy", MatrixActionEnv(), seed=0, **settings).learn(128)
    action, _ = model.predict(np.zeros(2, np.float32))
    assert action.shape == (2, 3) and model.rollout_buffer.actions.shape == (64, 1, 6)


def test_ppo_on_the_gpu_gets_sb3s_advice_to_use_the_cpu() -> None:
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", n_steps=64, batch_size=32)
    model.device = th.device("cuda")  # what device="auto" picks on a GPU machine
    with pytest.warns(UserWarning, match="primarily intended to run on the CPU"):
        model._maybe_recommend_cpu()


# -- identity tasks for every action space (SB3's test_identity) -------------------------------


@pytest.mark.parametrize(
    "env",
    [IdentityEnv(4), IdentityEnvMultiDiscrete(4), IdentityEnvMultiBinary(4)],
    ids=["Discrete", "MultiDiscrete", "MultiBinary"],
)
def test_discrete_identity_tasks_learn(env: gym.Env) -> None:
    venv = DummyVecEnv([lambda: env])
    model = PPO("MlpPolicy", venv, gamma=0.4, seed=1).learn(3000)
    evaluate_policy(model, venv, n_eval_episodes=20, reward_threshold=90)
    obs = env.reset()[0]
    assert np.shape(model.predict(obs)[0]) == np.shape(env.action_space.sample())


def test_continuous_identity_task_learns_and_predicts_with_and_without_a_batch() -> None:
    env = IdentityEnvBox(eps=0.5)
    model = PPO("MlpPolicy", env, policy_kwargs={"net_arch": [64, 64]}, seed=0, gamma=0.95).learn(3000)
    evaluate_policy(model, model.get_env(), n_eval_episodes=20, reward_threshold=90)
    single, _ = model.predict(np.array([0.3], np.float32), deterministic=True)
    batch, _ = model.predict(np.array([[0.3], [-0.6]], np.float32), deterministic=True)
    assert single.shape == (1,) and batch.shape == (2, 1)
    np.testing.assert_allclose(batch[0], single, atol=1e-6)


# -- SB3's policy contract for imitation's BC and AIRL -----------------------------------------


def reference_log_prob(policy: TanhGaussianPolicy, obs: th.Tensor, actions: th.Tensor) -> th.Tensor:
    """torch's own squashed Gaussian (Normal -> tanh -> affine onto the Box) with the policy's mean and std."""
    with th.no_grad():
        mean = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(obs)))
    box = policy.action_space
    squashed = reference(mean, policy.log_std.detach(), box.low, box.high)  # type: ignore[attr-defined]
    return squashed.log_prob(actions.double()).sum(-1)


def test_imitation_bc_and_airl_get_env_space_log_probabilities(rng: np.random.Generator) -> None:
    from imitation.algorithms.adversarial.common import AdversarialTrainer
    from imitation.algorithms.bc import BehaviorCloningLossCalculator

    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", seed=0, policy_kwargs={"log_std_init": -0.5})
    obs = th.as_tensor(rng.normal(size=(6, 4)), dtype=th.float32)
    actions = th.tensor([[2.9], [-2.9], [0.0], [1.5], [-0.3], [2.99]])  # env-space, the Box is [-3, 3]
    expected = reference_log_prob(model.policy, obs, actions)
    trainer = types.SimpleNamespace(policy=model.policy)  # what AIRL's method reads
    with th.no_grad():
        airl = AdversarialTrainer._get_log_policy_act_prob(trainer, obs, actions)  # type: ignore[arg-type]
        bc = BehaviorCloningLossCalculator(ent_weight=0.0, l2_weight=0.0)(model.policy, obs, actions)
    assert airl is not None
    np.testing.assert_allclose(airl.double().numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)
    assert bc.neglogp.item() == pytest.approx(-expected.mean().item(), rel=1e-4)


def test_models_saved_with_the_retired_device_buffer_still_load(tmp_path: pathlib.Path, tiny: dict[str, Any]) -> None:
    """Earlier versions saved ``rollout_buffer_class`` as ``roboppo.ppo.device_rollout.DeviceRolloutBuffer``."""
    import base64
    import json
    import zipfile

    PPO("MlpPolicy", "RoboInvertedPendulum-v0", **tiny).save(tmp_path / "new.zip")
    with zipfile.ZipFile(tmp_path / "new.zip") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    missing_class = base64.b64encode(b"croboppo.ppo.device_rollout\nDeviceRolloutBuffer\n.").decode()
    data["rollout_buffer_class"] = {":serialized:": missing_class, "__module__": "roboppo.ppo.device_rollout"}
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(tmp_path / "old.zip", "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    model = PPO.load(tmp_path / "old.zip", env=gym.make("RoboInvertedPendulum-v0"))
    assert model.rollout_buffer_class is RolloutBuffer
    model.learn(64)
    assert model.num_timesteps == 64


class VectorDictEnv(gym.Env):
    """Observations: a Dict of two vectors (as SB3's DummyDictEnv with vec_only); reward: the action."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict(
            {"vec": gym.spaces.Box(-1, 1, (2,), np.float32), "goal": gym.spaces.Box(-2, 2, (3,), np.float32)}
        )
        self.action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action: np.ndarray) -> tuple[Any, float, bool, bool, dict]:
        return self.observation_space.sample(), float(action[0]), False, False, {}


def test_a_dict_env_and_its_flattened_twin_train_to_the_same_weights(tmp_path: pathlib.Path) -> None:
    """SB3's test_consistency, to the bit: the Dict of vectors is flattened before the policy, so both take the
    NumPy sampler and the compiled update; predict takes the Dict."""
    dict_env = gym.wrappers.TimeLimit(VectorDictEnv(), 100)
    flat_env = gym.wrappers.FlattenObservation(gym.wrappers.TimeLimit(VectorDictEnv(), 100))
    obs, _ = dict_env.reset(seed=10)
    flat_env.reset(seed=10)
    dict_model = PPO("MultiInputPolicy", dict_env, gamma=0.5, seed=1, n_steps=128).learn(256)
    flat_model = PPO("MlpPolicy", flat_env, gamma=0.5, seed=1, n_steps=128).learn(256)
    assert dict_model.paths_run == flat_model.paths_run == {"sampler": ["numpy"], "update": ["jax"]}
    for (name, a), b in zip(
        dict_model.policy.state_dict().items(), flat_model.policy.state_dict().values(), strict=True
    ):
        assert th.equal(a, b), name
    flat_obs = gym.spaces.flatten(dict_env.observation_space, obs)
    expected = flat_model.predict(flat_obs, deterministic=True)[0]
    np.testing.assert_array_equal(dict_model.predict(obs, deterministic=True)[0], expected)
    dict_model.save(tmp_path / "dict.zip")
    loaded = PPO.load(tmp_path / "dict.zip", env=gym.wrappers.TimeLimit(VectorDictEnv(), 100))
    np.testing.assert_array_equal(
        loaded.predict(obs, deterministic=True)[0], dict_model.predict(obs, deterministic=True)[0]
    )


class GoalOnly(BaseFeaturesExtractor):
    """A user's extractor for Dict observations: reads one key."""

    def __init__(self, observation_space: gym.spaces.Dict) -> None:
        super().__init__(observation_space, features_dim=3)

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        return observations["goal"]


def test_sb3_dict_policies_read_the_dict_as_in_sb3(tmp_path: pathlib.Path) -> None:
    """Only roboppo's policy reads a Dict of vectors flattened: a policy class, a features extractor of the
    user's (or CombinedExtractor's keywords) get the Dict, and SB3's Dict models load with a Dict env."""
    env = gym.wrappers.TimeLimit(VectorDictEnv(), 20)
    tiny = {"n_steps": 32, "batch_size": 32, "n_epochs": 1, "seed": 0}
    for model in (
        PPO("MultiInputPolicy", env, policy_kwargs={"features_extractor_class": GoalOnly}, **tiny),
        PPO(MultiInputActorCriticPolicy, env, **tiny),
        PPO("MultiInputPolicy", env, policy_kwargs={"features_extractor_kwargs": {"cnn_output_dim": 64}}, **tiny),
    ):
        assert isinstance(model.policy, MultiInputActorCriticPolicy)
        assert model.observation_space == env.observation_space and model.dict_observation_space is None
        model.learn(64)
        assert model.num_timesteps == 64 and model.policy.predict(env.observation_space.sample())[0].shape == (1,)
    sb3_model = stable_baselines3.PPO("MultiInputPolicy", env, **tiny)
    sb3_model.save(tmp_path / "sb3.zip")
    loaded = PPO.load(tmp_path / "sb3.zip", env=gym.wrappers.TimeLimit(VectorDictEnv(), 20))
    assert isinstance(loaded.get_env().observation_space, gym.spaces.Dict)
    loaded.set_env(gym.wrappers.TimeLimit(VectorDictEnv(), 20))
    loaded.learn(32)
    flat = PPO("MultiInputPolicy", env, **tiny)  # roboppo's policy: the env is flattened, on load too
    flat.save(tmp_path / "flat.zip")
    with open(tmp_path / "flat.zip", "rb") as file:
        reloaded = PPO.load(file, env=gym.wrappers.TimeLimit(VectorDictEnv(), 20))
    assert isinstance(reloaded.get_env().observation_space, gym.spaces.Box)


def test_a_learning_rate_of_zero_trains_sb3_policies_as_sb3_does() -> None:
    """Only roboppo's policy is held still at a rate of 0 (its statistics would drift); SB3's policies run
    their epochs, count their updates and log their losses."""
    model = PPO(ActorCriticPolicy, "CartPole-v1", n_steps=32, batch_size=32, n_epochs=2, learning_rate=0.0, seed=0)
    model.learn(64)
    assert model._n_updates == 4 and "train/policy_gradient_loss" in model.logger.name_to_value
    ours = PPO("MlpPolicy", "Pendulum-v1", n_steps=32, batch_size=32, n_epochs=2, learning_rate=0.0, seed=0)
    before = {key: value.clone() for key, value in ours.policy.state_dict().items()}
    ours.learn(64)
    assert ours._n_updates == 0
    assert all(th.equal(value, ours.policy.state_dict()[key]) for key, value in before.items())
