"""GAIL on ``imitation``, with roboppo PPO as the generator.

The algorithm and its training loop are imitation's ``GAIL``; this module only adds what roboppo
users need around it: a roboppo PPO generator (tanh-Gaussian, in-policy normalization) whose
schedules run over the whole GAIL run, a reward network with its own running input normalization,
the absorbing state of DAC for episodes that end early (:mod:`roboppo.gail.horizon`), TensorBoard
logging of discriminator and generator metrics side by side, and saving/loading generator and
discriminator together.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from imitation.algorithms.adversarial.gail import GAIL
from imitation.data import types
from imitation.data.types import Trajectory, TrajectoryWithRew
from imitation.data.wrappers import RolloutInfoWrapper
from imitation.rewards.reward_nets import BasicRewardNet
from imitation.util import logger as imitation_logger
from imitation.util.networks import RunningNorm
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import FloatSchedule
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from roboppo.common.env_util import check_env_id
from roboppo.common.errors import UserInputError
from roboppo.common.files import atomic_target
from roboppo.gail.compat import FloatReward
from roboppo.gail.demos import Demonstrations
from roboppo.gail.horizon import (
    AbsorbingBootstrap,
    AbsorbingReplayBuffer,
    AbsorbingRewardNet,
    absorbing_fraction,
    absorbing_logit,
    absorbing_state,
    expert_transitions,
    with_indicator,
)
from roboppo.ppo import PPO
from roboppo.zoo.loader import capped_budget, load_gail_hparams

GENERATOR_FILE = "generator.zip"
REWARD_NET_FILE = "reward_net.pt"
TORCH_NN = "torch.nn class"  # how reward_net.pt names a torch.nn class (an activation) among plain values


def make_gail_venv(env_id: str, n_envs: int, seed: int) -> VecEnv:
    """``n_envs`` copies of ``env_id`` with float rewards, Monitor statistics and rollout info."""
    check_env_id(env_id)

    def make(index: int) -> Any:
        def thunk() -> gym.Env:
            env = RolloutInfoWrapper(Monitor(FloatReward(gym.make(env_id))))
            env.reset(seed=seed + index)
            return env

        return thunk

    return DummyVecEnv([make(i) for i in range(n_envs)])


class RunSchedule:
    """A generator schedule (learning rate, clip range) read on the progress of the whole GAIL run.

    imitation calls the generator's ``learn`` once per round, and SB3 measures a schedule's progress
    within one ``learn`` call, so a linear schedule would start over every round. The trainer sets
    :attr:`remaining` (1 at the start of the run, 0 at its end) before every round instead.
    """

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.remaining = 1.0

    def __call__(self, _progress_remaining_in_round: float) -> float:
        return float(self.schedule(self.remaining))


def build_reward_net(
    observation_space: gym.Space, action_space: gym.Space, kwargs: dict[str, Any], spectral_norm: bool
) -> AbsorbingRewardNet:
    """imitation's ``BasicRewardNet`` with running input normalization (optionally spectrally normalized)
    for real states, inside an :class:`AbsorbingRewardNet` that reads the absorbing indicator."""
    if kwargs.get("use_next_state") or kwargs.get("use_done"):
        raise ValueError(
            "the absorbing state is implemented for discriminators on the state and the action; "
            "set reward_use_next_state: false (use_next_state=False) and leave use_done off"
        )
    inner = BasicRewardNet(observation_space, action_space, normalize_input_layer=RunningNorm, **kwargs)
    return AbsorbingRewardNet(add_spectral_norm(inner) if spectral_norm else inner)


class AbsorbingGAIL(GAIL):
    """imitation's GAIL with DAC's absorbing state on the expert's and the generator's side.

    The discriminator reads states with the absorbing indicator (expert batches from
    :func:`expert_transitions`, generator batches through :class:`AbsorbingReplayBuffer`); its output
    on the absorbing state is set after every generator round (:func:`absorbing_logit`); the
    generator's reward is computed on its states with the indicator at 0, and every terminating step
    gets the absorbing state's value (:class:`AbsorbingBootstrap`).
    """

    def __init__(
        self, *, demonstrations: Sequence[Trajectory], venv: VecEnv, gen_algo: PPO, reward_net: AbsorbingRewardNet,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        expert = expert_transitions(demonstrations)
        super().__init__(
            demonstrations=expert,
            venv=venv,
            gen_algo=gen_algo,
            reward_net=reward_net,
            allow_variable_horizon=True,  # made harmless by the absorbing state
            **kwargs,
        )
        assert isinstance(venv.observation_space, gym.spaces.Box) and isinstance(venv.action_space, gym.spaces.Box)
        self.absorbing_net = reward_net
        expert_obs = types.assert_not_dictobs(expert.obs)
        self.expert_absorbing_fraction = absorbing_fraction(int(expert_obs[:, -1].sum()), len(expert_obs))
        self.generator_buffer = AbsorbingReplayBuffer(
            self.gen_train_timesteps, venv.observation_space, venv.action_space
        )
        self._gen_replay_buffer = self.generator_buffer
        obs_dim = int(np.prod(venv.observation_space.shape))
        self.gamma = float(gen_algo.gamma)
        self.absorbing = absorbing_state(obs_dim, venv.observation_space.dtype)
        self.absorbing_action = np.zeros(venv.action_space.shape, venv.action_space.dtype)
        self.venv_wrapped.reward_fn = self.generator_reward  # type: ignore[attr-defined]
        self.bootstrap = AbsorbingBootstrap(self.venv_train, self.absorbing_value())
        self.gen_algo.set_env(self.bootstrap)

    def train_gen(self, total_timesteps: int | None = None, learn_kwargs: Mapping[str, Any] | None = None) -> None:
        """imitation's generator round, then the discriminator's output on the absorbing state for the
        new samples, and the generator's bootstrap from it (the only place the absorbing reward changes)."""
        super().train_gen(total_timesteps, learn_kwargs)
        logit = absorbing_logit(self.expert_absorbing_fraction, self.generator_buffer.absorbing_fraction)
        self.absorbing_net.absorbing_logit.fill_(logit)
        self.bootstrap.value = self.absorbing_value()
        self.logger.record("disc/absorbing_logit", logit)

    def generator_reward(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray:
        """The reward the generator trains on: the discriminator's, on its (real) states."""
        return self.reward_train.predict_processed(with_indicator(obs), acts, with_indicator(next_obs), dones)

    def absorbing_reward(self) -> float:
        """What the discriminator pays for a step in the absorbing state."""
        state = self.absorbing[None]
        return float(
            self.reward_train.predict_processed(state, self.absorbing_action[None], state, np.array([False]))[0]
        )

    def absorbing_value(self) -> float:
        """The discounted return of staying in the absorbing state from the next step on."""
        return self.gamma * self.absorbing_reward() / (1.0 - self.gamma)

    def _get_log_policy_act_prob(self, obs_th: th.Tensor, acts_th: th.Tensor) -> th.Tensor | None:
        """None: GAIL's discriminator does not use the policy's probabilities (AIRL's does), and the
        batches' states carry the indicator, which the policy does not read."""
        return None


def add_spectral_norm(module: BasicRewardNet) -> BasicRewardNet:
    """Spectral normalization (Miyato et al. 2018) on every ``nn.Linear`` inside ``module``."""
    for layer in list(module.modules()):
        if isinstance(layer, th.nn.Linear):
            th.nn.utils.parametrizations.spectral_norm(layer)
    return module


class GAILTrainer:
    """Train a roboppo PPO policy to imitate demonstrations with imitation's GAIL.

    :param env_id: registered env id.
    :param demonstrations: validated expert episodes (:func:`roboppo.gail.load_demonstrations`).
    :param n_envs: generator env copies.
    :param seed: seed of the generator, the envs and the discriminator batches.
    :param ppo_kwargs: keyword arguments for the generator :class:`roboppo.PPO`.
    :param demo_batch_size: expert transitions per discriminator batch (as many generator ones join).
    :param n_disc_updates_per_round: discriminator steps after each generator rollout.
    :param disc_lr: discriminator learning rate (Adam).
    :param schedule_timesteps: generator env steps over which the generator's learning-rate and
        clip-range schedules run from start to end; default: each :meth:`train` call's budget.
    :param reward_net_kwargs: keyword arguments for imitation's ``BasicRewardNet`` (``hid_sizes``,
        ``use_action``, ...).
    :param disc_spectral_norm: spectral normalization on every linear layer of the reward network, so
        the discriminator's logit changes at most in proportion to the (normalized) input: it cannot
        separate nearby expert and generator states sharply, and its reward stays smooth.
    :param log_dir: TensorBoard and CSV logs (``disc/*`` next to ``gen/*``); None: no files.
    """

    def __init__(
        self,
        env_id: str,
        demonstrations: Demonstrations,
        *,
        n_envs: int = 8,
        seed: int = 0,
        ppo_kwargs: dict[str, Any] | None = None,
        demo_batch_size: int = 256,
        n_disc_updates_per_round: int = 4,
        disc_lr: float = 3e-4,
        schedule_timesteps: int | None = None,
        reward_net_kwargs: dict[str, Any] | None = None,
        disc_spectral_norm: bool = False,
        log_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.env_id = env_id
        self.venv = make_gail_venv(env_id, n_envs, seed)
        self.generator = PPO("MlpPolicy", self.venv, seed=seed, **(ppo_kwargs or {}))
        self.schedule_timesteps = schedule_timesteps
        self.schedules = (
            RunSchedule(self.generator.lr_schedule),
            RunSchedule(FloatSchedule(self.generator.clip_range)),
        )
        self.generator.lr_schedule, self.generator.clip_range = self.schedules
        self._reward_net_spec: dict[str, Any] = {
            "observation_space": self.venv.observation_space,
            "action_space": self.venv.action_space,
            "kwargs": dict(reward_net_kwargs or {}),
            "spectral_norm": disc_spectral_norm,
        }
        self.reward_net = build_reward_net(**self._reward_net_spec)
        formats = ["tensorboard", "csv"] if log_dir is not None else []
        self.logger = imitation_logger.configure(str(log_dir) if log_dir else None, format_strs=formats)
        self.gail = AbsorbingGAIL(
            demonstrations=demonstrations.trajectories,
            demo_batch_size=min(demo_batch_size, demonstrations.n_transitions),
            venv=self.venv,
            gen_algo=self.generator,
            reward_net=self.reward_net,
            n_disc_updates_per_round=n_disc_updates_per_round,
            disc_opt_kwargs={"lr": disc_lr},
            custom_logger=self.logger,
        )

    default_total_timesteps: int | None = None  # the budget of the gail.yml entry, set by from_zoo

    @classmethod
    def from_zoo(
        cls,
        env_id: str,
        demonstrations: Demonstrations,
        *,
        seed: int = 0,
        log_dir: str | os.PathLike[str] | None = None,
        hparams: str | os.PathLike[str] | None = None,
    ) -> GAILTrainer:
        """A trainer with ``env_id``'s ``zoo_hparams/gail.yml`` entry (or that of ``hparams``), and its budget.

        ``train()`` without a budget then trains the entry's ``n_timesteps``, capped by
        ``ROBOPPO_MAX_TIMESTEPS`` as every default budget is.
        """
        entry = load_gail_hparams(env_id, None if hparams is None else pathlib.Path(hparams))
        trainer = cls(
            env_id, demonstrations, n_envs=entry.n_envs, seed=seed, ppo_kwargs=entry.ppo_kwargs, log_dir=log_dir,
            **entry.trainer_kwargs,
        )  # fmt: skip
        trainer.default_total_timesteps = entry.n_timesteps
        return trainer

    @property
    def steps_per_round(self) -> int:
        return int(self.gail.gen_train_timesteps)

    def train(self, total_timesteps: int | None = None, progress_bar: bool = False) -> GAILTrainer:
        """imitation's ``GAIL.train``: rounds of generator rollouts/updates and discriminator updates, as many
        as fit in ``total_timesteps`` env steps (at least one round); None: the zoo entry's (:meth:`from_zoo`)."""
        if total_timesteps is None:
            if self.default_total_timesteps is None:
                raise ValueError("train() needs total_timesteps unless the trainer was built by GAILTrainer.from_zoo.")
            total_timesteps, _ = capped_budget(self.default_total_timesteps)
        rounds = max(total_timesteps // self.steps_per_round, 1)
        first = 0 if self.schedule_timesteps else self.generator.num_timesteps
        horizon = self.schedule_timesteps or rounds * self.steps_per_round

        def set_schedules(_round: int | None = None) -> None:
            remaining = max(1.0 - (self.generator.num_timesteps - first) / horizon, 0.0)
            for schedule in self.schedules:
                schedule.remaining = remaining

        set_schedules()
        with _progress_bar(progress_bar):
            self.gail.train(rounds * self.steps_per_round, callback=set_schedules)
        return self

    def save(self, folder: str | os.PathLike[str]) -> pathlib.Path:
        """Write ``generator.zip`` (loadable by ``roboppo.PPO.load``) and ``reward_net.pt`` into ``folder``.

        The reward network is stored as its construction arguments and ``state_dict`` (a spectrally
        normalized module cannot be pickled whole).
        """
        target = pathlib.Path(folder)
        target.mkdir(parents=True, exist_ok=True)
        self.generator.save(target / GENERATOR_FILE)
        save_reward_net(target / REWARD_NET_FILE, self.reward_net, self._reward_net_spec)
        return target

    @staticmethod
    def load(folder: str | os.PathLike[str]) -> tuple[PPO, AbsorbingRewardNet]:
        """The generator and the reward network saved by :meth:`save` (no pickle: :func:`load_reward_net`)."""
        source = pathlib.Path(folder)
        return PPO.load(source / GENERATOR_FILE), load_reward_net(source / REWARD_NET_FILE)


def save_reward_net(path: pathlib.Path, reward_net: AbsorbingRewardNet, spec: dict[str, Any]) -> None:
    """``reward_net``'s construction arguments (:func:`plain_spec`) and ``state_dict``, written atomically."""
    with atomic_target(path) as partial:
        th.save({**plain_spec(spec), "state_dict": reward_net.state_dict()}, partial)


def load_reward_net(path: pathlib.Path) -> AbsorbingRewardNet:
    """The network :func:`save_reward_net` wrote, read with ``torch.load(weights_only=True)``: tensors and
    plain values only, nothing in the file can run code."""
    try:
        saved = th.load(path, weights_only=True)
    except pickle.UnpicklingError as error:
        raise UserInputError(
            f"{path} holds Python objects that only a full unpickling reads (which can run code); roboppo "
            "writes tensors and plain values only. Train the discriminator again."
        ) from error
    state_dict = saved.pop("state_dict")
    reward_net = build_reward_net(**spec_from_plain(saved))
    reward_net.load_state_dict(state_dict)
    return reward_net


def plain_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The reward network's construction arguments as tensors and plain values (``torch.load(weights_only=True)``)."""

    def box(space: gym.Space) -> dict[str, Any]:
        if not isinstance(space, gym.spaces.Box):
            raise TypeError(f"the discriminator is built for Box spaces, not {space}")
        return {"low": th.as_tensor(space.low), "high": th.as_tensor(space.high), "dtype": str(space.dtype)}

    def value(key: str, item: Any) -> Any:
        name = getattr(item, "__name__", "")
        if isinstance(item, type) and issubclass(item, th.nn.Module) and getattr(th.nn, name, None) is item:
            return {TORCH_NN: name}  # an activation such as th.nn.ReLU, by name
        if item is None or isinstance(item, bool | int | float | str | tuple | list):
            return item
        raise TypeError(f"reward_net_kwargs[{key!r}] = {item!r}: only plain values and torch.nn classes are saved")

    kwargs = {key: value(key, item) for key, item in spec["kwargs"].items()}
    return {**spec, "observation_space": box(spec["observation_space"]), "action_space": box(spec["action_space"]),
            "kwargs": kwargs}  # fmt: skip


def spec_from_plain(saved: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`plain_spec`."""

    def box(plain: dict[str, Any]) -> gym.spaces.Box:
        dtype = np.dtype(plain["dtype"])
        return gym.spaces.Box(plain["low"].numpy().astype(dtype), plain["high"].numpy().astype(dtype), dtype=dtype)

    def value(item: Any) -> Any:
        return getattr(th.nn, item[TORCH_NN]) if isinstance(item, dict) and set(item) == {TORCH_NN} else item

    kwargs = {key: value(item) for key, item in saved["kwargs"].items()}
    return {**saved, "observation_space": box(saved["observation_space"]), "action_space": box(saved["action_space"]),
            "kwargs": kwargs}  # fmt: skip


@contextlib.contextmanager
def _progress_bar(shown: bool) -> Iterator[None]:
    """imitation's round loop always draws a tqdm bar; tqdm reads ``TQDM_DISABLE`` to hide it."""
    saved = os.environ.get("TQDM_DISABLE")
    if not shown:
        os.environ["TQDM_DISABLE"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = saved


def collect_demonstrations(model: PPO, env_id: str, n_episodes: int, seed: int = 0) -> list[TrajectoryWithRew]:
    """Roll ``model`` out deterministically for ``n_episodes`` full episodes of ``env_id``."""
    env = FloatReward(gym.make(env_id))
    trajectories = []
    for episode in range(n_episodes):
        obs, _ = env.reset(seed=seed + episode)
        observations, actions, rewards = [obs], [], []
        terminated = truncated = False
        while not (terminated or truncated):
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            observations.append(obs)
            actions.append(action)
            rewards.append(reward)
        trajectories.append(
            TrajectoryWithRew(
                np.array(observations, np.float32),
                np.array(actions, np.float32),
                None,
                terminated,
                np.array(rewards, np.float32),
            )
        )
    env.close()
    return trajectories
