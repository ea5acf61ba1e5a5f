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
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_wrapper

from roboppo.common.env_util import VecFiniteCheck, make_env_from_id
from roboppo.common.errors import ModelLoadError
from roboppo.ppo.policies import TanhGaussianPolicy

SelfPPO = TypeVar("SelfPPO", bound="PPO")


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
    - Extra TensorBoard scalars: ``obs_norm/*`` (normalizer statistics).

    :param policy: ``"MlpPolicy"`` or a policy class.
    :param env: a Gymnasium env, an SB3 ``VecEnv`` or a registered env id.
    :param n_envs: number of env copies when ``env`` is an id (ignored otherwise).
    :param env_kwargs: keyword arguments for ``gym.make`` when ``env`` is an id.
    :param kwargs: every other keyword argument of ``stable_baselines3.PPO``.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": TanhGaussianPolicy}
    policy: TanhGaussianPolicy

    def __init__(
        self,
        policy: str | type[TanhGaussianPolicy],
        env: GymEnv | str | None,
        *,
        n_envs: int = 1,
        env_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(env, str):
            env = make_env_from_id(env, n_envs=n_envs, seed=kwargs.get("seed"), env_kwargs=env_kwargs)
        super().__init__(policy, env, **kwargs)  # type: ignore[arg-type]

    @staticmethod
    def _wrap_env(env: GymEnv, verbose: int = 0, monitor_wrapper: bool = True) -> VecEnv:
        venv = SB3PPO._wrap_env(env, verbose, monitor_wrapper)
        if unwrap_vec_wrapper(venv, VecFiniteCheck) is None:
            venv = VecFiniteCheck(venv)
        return venv

    def train(self) -> None:
        """PPO epochs on the current rollout, then one update of the observation statistics."""
        super().train()
        self._update_obs_normalizer()

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
