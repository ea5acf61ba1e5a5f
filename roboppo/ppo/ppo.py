"""roboppo's PPO: Stable-Baselines3's PPO with a tanh-Gaussian policy and in-policy normalization."""

from __future__ import annotations

import os
import pathlib
import pickle
import zipfile
from collections.abc import Iterable
from typing import Any, ClassVar, TypeVar

import torch as th
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_wrapper

import roboppo_envs
from roboppo.common.env_util import VecFiniteCheck, VecRewardScale, make_env_from_id
from roboppo.common.errors import ModelLoadError
from roboppo.ppo.device_rollout import DeviceRolloutBuffer, collect_on_device
from roboppo.ppo.jax_train import jax_unsupported, train_with_jax
from roboppo.ppo.lean_train import train_on_tensors
from roboppo.ppo.policies import TanhGaussianPolicy

SelfPPO = TypeVar("SelfPPO", bound="PPO")

# Defaults for Brax ids when the caller leaves them out: thousands of robots on a GPU
# (the Brax PyTorch notebook's batch: 2048 envs x 80 steps, 32 minibatches, 4 epochs),
# a few dozen on a CPU.
BRAX_DEFAULTS = {
    "gpu": {"n_envs": 2048, "n_steps": 80, "batch_size": 5120, "n_epochs": 4},
    "cpu": {"n_envs": 32, "n_steps": 64, "batch_size": 512, "n_epochs": 4},
}


TRAIN_BACKENDS = ("auto", "jax", "torch")


class PPO(SB3PPO):
    """Proximal Policy Optimization for robot control (a subclass of SB3's ``PPO``).

    Everything SB3's PPO accepts works the same way (``learn``, ``save``/``load``,
    ``predict``, callbacks, ``progress_bar``, ``tensorboard_log``, ``set_env``, seeds).
    What roboppo adds:

    - ``"MlpPolicy"`` is :class:`~roboppo.ppo.policies.TanhGaussianPolicy`: tanh-squashed
      Gaussian actions with exact log-probabilities, and observation normalization inside
      the policy, so the saved zip is all a user needs.
    - ``env`` may be a registered id (``"RoboHopper-v0"``): the vectorized env is built with
      ``n_envs`` copies, seeded from ``seed``.
    - The observation statistics are updated once per rollout from the collected batch,
      *after* the gradient steps on that batch, so that the log-probabilities stored during
      the rollout are exactly those the first minibatch re-evaluates (ratio = 1).
    - Training stops with an error naming the env and step if it returns NaN or inf.
    - roboppo's batched vector envs (the MuJoCo robots stepped by worker threads, the Brax
      robots by JAX) are rolled out as torch tensors from env to minibatch, one policy call
      per vector step and no per-env Python work (see :mod:`roboppo.ppo.device_rollout`). For
      Brax ids, left-out ``n_envs``, ``n_steps``, ``batch_size`` and ``n_epochs`` default to
      :data:`BRAX_DEFAULTS` for the device torch uses.
    - On the CPU those rollouts are trained in one compiled JAX call each (every epoch and
      minibatch inside ``jax.lax.scan``; same steps as the PyTorch loop), see ``train_backend``.
    - Extra TensorBoard scalars: ``obs_norm/*`` (normalizer statistics).

    :param policy: ``"MlpPolicy"`` or a policy class.
    :param env: a Gymnasium env, an SB3 ``VecEnv`` or a registered env id.
    :param n_envs: number of env copies when ``env`` is an id (ignored otherwise; default 1,
        or :data:`BRAX_DEFAULTS` for Brax ids).
    :param env_kwargs: keyword arguments for ``gym.make`` / ``gym.make_vec`` when ``env`` is an id.
    :param reward_scale: rewards are multiplied by this before GAE (episode statistics are not).
    :param train_backend: how batched-env rollouts are trained: ``"jax"`` runs every epoch and
        minibatch of a rollout in one compiled JAX call (CPU only; about 10x less time than
        PyTorch for small networks), ``"torch"`` the PyTorch loop of
        :mod:`roboppo.ppo.lean_train`, ``"auto"`` (default) ``"jax"`` when the model can take it
        (on the CPU, JAX installed, roboppo's MLP policy with Adam), else ``"torch"``.
    :param kwargs: every other keyword argument of ``stable_baselines3.PPO``.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": TanhGaussianPolicy}
    policy: TanhGaussianPolicy
    _episode_returns: th.Tensor | None = None  # running return of each env copy (device rollouts)
    _episode_lengths: th.Tensor

    def __init__(
        self,
        policy: str | type[TanhGaussianPolicy],
        env: GymEnv | str | None,
        *,
        n_envs: int | None = None,
        env_kwargs: dict[str, Any] | None = None,
        reward_scale: float = 1.0,
        train_backend: str = "auto",
        **kwargs: Any,
    ) -> None:
        if train_backend not in TRAIN_BACKENDS:
            raise ValueError(f"train_backend must be one of {TRAIN_BACKENDS}, got {train_backend!r}.")
        self.reward_scale = reward_scale
        self.train_backend = train_backend
        if isinstance(env, str):
            if roboppo_envs.is_brax_id(env):
                defaults = BRAX_DEFAULTS["gpu" if th.cuda.is_available() else "cpu"]
                n_envs = defaults["n_envs"] if n_envs is None else n_envs
                kwargs = {key: value for key, value in defaults.items() if key != "n_envs"} | kwargs
            env = make_env_from_id(
                env, n_envs=1 if n_envs is None else n_envs, seed=kwargs.get("seed"), env_kwargs=env_kwargs
            )
        super().__init__(policy, env, **kwargs)  # type: ignore[arg-type]
        if self.env is not None and reward_scale != 1.0:
            self.env = VecRewardScale(self.env, reward_scale)

    def set_env(self, env: GymEnv, force_reset: bool = True) -> None:
        super().set_env(env, force_reset)
        assert self.env is not None
        if self.reward_scale != 1.0 and unwrap_vec_wrapper(self.env, VecRewardScale) is None:
            self.env = VecRewardScale(self.env, self.reward_scale)  # type: ignore[arg-type]

    def device_vector_env(self, env: VecEnv | None = None) -> Any | None:
        """The env's batched vector env (one with ``step_torch``), or None.

        None also when the policy is not roboppo's (SB3's own policies go through SB3's rollouts).
        """
        if not issubclass(self.policy_class, TanhGaussianPolicy):
            return None
        env = env if env is not None else self.env
        vector_env = getattr(env.unwrapped, "vector_env", None) if env is not None else None
        return vector_env if hasattr(vector_env, "step_torch") else None

    def _setup_model(self) -> None:
        if self.rollout_buffer_class is None and self.device_vector_env() is not None:
            self.rollout_buffer_class = DeviceRolloutBuffer  # type: ignore[assignment]
        super()._setup_model()

    def collect_rollouts(
        self, env: VecEnv, callback: BaseCallback, rollout_buffer: RolloutBuffer, n_rollout_steps: int
    ) -> bool:
        """SB3's rollout collection, or :func:`collect_on_device` for device-stepped envs."""
        vector_env = self.device_vector_env(env)
        if vector_env is None:
            return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)
        if not isinstance(self.rollout_buffer, DeviceRolloutBuffer):
            self.rollout_buffer = DeviceRolloutBuffer(  # type: ignore[assignment]
                self.n_steps, self.observation_space, self.action_space, self.device,
                self.gae_lambda, self.gamma, env.num_envs,
            )  # fmt: skip
        if self._episode_returns is None or self._episode_returns.shape[0] != env.num_envs:
            self._episode_returns = th.zeros(env.num_envs, device=self.device)
            self._episode_lengths = th.zeros(env.num_envs, device=self.device)
        return collect_on_device(self, vector_env, callback, n_rollout_steps)

    @staticmethod
    def _wrap_env(env: GymEnv, verbose: int = 0, monitor_wrapper: bool = True) -> VecEnv:
        venv = SB3PPO._wrap_env(env, verbose, monitor_wrapper)
        if unwrap_vec_wrapper(venv, VecFiniteCheck) is None:
            venv = VecFiniteCheck(venv)
        return venv

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_episode_returns", "_episode_lengths"]

    def train(self) -> None:
        """PPO epochs on the current rollout, then one update of the observation statistics.

        Rollouts held as torch tensors train through :func:`~roboppo.ppo.jax_train.train_with_jax`
        (one compiled call per rollout; see ``train_backend``) or
        :func:`~roboppo.ppo.lean_train.train_on_tensors` (same losses and logs as SB3's ``train``,
        less work per minibatch).
        """
        if isinstance(self.rollout_buffer, DeviceRolloutBuffer) and self._uses_jax_training():
            train_with_jax(self)
        elif isinstance(self.rollout_buffer, DeviceRolloutBuffer):
            train_on_tensors(self)
        else:
            super().train()
        self._update_obs_normalizer()

    def _uses_jax_training(self) -> bool:
        """Whether :meth:`train` goes through JAX; ``train_backend="jax"`` that cannot raises, naming why."""
        backend = getattr(self, "train_backend", "auto")  # models saved before the option train as "auto"
        if backend == "torch":
            return False
        reason = jax_unsupported(self)
        if reason is not None and backend == "jax":
            raise ValueError(f"train_backend='jax' cannot train this model: {reason}. Use train_backend='torch'.")
        return reason is None

    def _update_obs_normalizer(self) -> None:
        if not isinstance(self.policy, TanhGaussianPolicy):  # a user-supplied SB3 policy has no normalizer
            return
        observations = self.rollout_buffer.observations
        assert not isinstance(observations, dict), "roboppo's MlpPolicy takes flat Box observations"
        self.policy.update_obs_normalizer(observations)
        normalizers = self.policy.observation_normalizers()
        if not normalizers:
            return
        stats = normalizers[0].obs_rms
        self.logger.record("obs_norm/count", stats.count.item())
        self.logger.record("obs_norm/mean_abs", stats.mean.abs().mean().item())
        self.logger.record("obs_norm/std_mean", th.sqrt(stats.var).mean().item())
        self.logger.record("obs_norm/std_min", th.sqrt(stats.var).min().item())

    def save(
        self,
        path: str | pathlib.Path | Any,
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
    ) -> None:
        """Save the model (weights, optimizer and observation statistics) as one zip.

        A path gets ``.zip`` appended when it has no suffix. The file is written next to its
        target and renamed into place, so an interrupted save never leaves a half-written model.
        """
        if not isinstance(path, (str, pathlib.Path)):
            super().save(path, exclude, include)
            return
        target = pathlib.Path(path)
        if target.suffix == "":
            target = target.with_suffix(".zip")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
        try:
            super().save(partial, exclude, include)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)

    @classmethod
    def load(  # type: ignore[override]
        cls: type[SelfPPO],
        path: str | pathlib.Path,
        env: GymEnv | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfPPO:
        """Load a model saved by :meth:`save`; a missing or unreadable file raises a clear error.

        :raises FileNotFoundError: neither ``path`` nor ``path + ".zip"`` exists.
        :raises ModelLoadError: the file exists but is not a readable model zip.
        """
        resolved = _resolve_model_path(path)
        try:
            return super().load(resolved, env, device, custom_objects, print_system_info, force_reset, **kwargs)
        except (
            zipfile.BadZipFile,
            KeyError,
            EOFError,
            pickle.UnpicklingError,
            RuntimeError,
            ValueError,
            AssertionError,
        ) as error:
            raise ModelLoadError(
                f"cannot load a model from {resolved}: {type(error).__name__}: {error}. "
                "The file is not a complete model zip written by model.save(); re-save or re-train it."
            ) from error


def _resolve_model_path(path: str | pathlib.Path) -> pathlib.Path:
    candidate = pathlib.Path(path)
    if candidate.is_file():
        return candidate
    with_suffix = candidate.with_name(candidate.name + ".zip")
    if with_suffix.is_file():
        return with_suffix
    raise FileNotFoundError(f"model file not found: {candidate} (also tried {with_suffix}).")
