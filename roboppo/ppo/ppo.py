"""roboppo's PPO: Stable-Baselines3's PPO with a tanh-Gaussian policy, in-policy normalization and a compiled update.

Read beside SB3's ``ppo.py``: the same methods in the same order (construction, ``learn``,
``collect_rollouts``, ``train``, ``save``/``load``), each of them SB3's with what roboppo adds. Who
owns what: :mod:`~roboppo.ppo.settings` decides where each argument comes from,
:class:`~roboppo.ppo.pairing.Pairing` keeps the weights and observation statistics the policy does
not hold now, :mod:`~roboppo.ppo.fast_paths` decides which sampler and update run and
:mod:`~roboppo.ppo.path_report` tells, :mod:`~roboppo.ppo.rollout` holds a rollout step's parts,
:mod:`~roboppo.ppo.jax_train` and :mod:`~roboppo.ppo.torch_train` the update, and
:mod:`~roboppo.ppo.model_files` the checks of a model file.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import check_for_correct_spaces, obs_as_tensor, update_learning_rate
from stable_baselines3.common.vec_env import VecEnv

from roboppo.common.env_util import check_finite
from roboppo.common.files import atomic_target
from roboppo.common.optimizers import without_dynamo_import
from roboppo.common.schedules import KLAdaptiveLR
from roboppo.common.vec_env import FLATTEN_DICTS, FlattenDictVecEnv, flatten_dict_obs, flattenable, flattening_dicts
from roboppo.ppo import jax_train, torch_train
from roboppo.ppo.fast_paths import Choice, sampler_choice, update_choice
from roboppo.ppo.model_files import LEGACY_FIELDS, checked_model_path, retired_objects, saved_observation_space
from roboppo.ppo.pairing import Pairing, pending_parameters, statistics_of
from roboppo.ppo.path_report import note_path, planned_paths, warn_overlap_refused
from roboppo.ppo.policies import TanhGaussianPolicy
from roboppo.ppo.rollout import flat_batch, normalized_rewards, policy_actions, truncation_values
from roboppo.ppo.sampler import RolloutSampler, one_blas_thread
from roboppo.ppo.settings import (
    default_budget,
    policy_keywords,
    resolve,
    sb3_default_settings,
    sb3_settings,
    settings_line,
)
from roboppo.ppo.update import (
    Revaluation,
    UpdateSettings,
    UpdateStats,
    explained_variance_of,
    record_statistics,
    record_update,
)
from roboppo.zoo.loader import ZooEntry

SelfPPO = TypeVar("SelfPPO", bound="PPO")


class PPO(SB3PPO):
    """Proximal Policy Optimization for robot control: a subclass of SB3's ``PPO`` that behaves like it.

    Every argument of ``stable_baselines3.PPO`` is accepted, positionally or by keyword, with the
    same meaning. What roboppo adds (the README's "Differences from SB3"; ``docs/design.md`` says why):

    - ``env`` may be a registered roboppo id: ``n_envs`` copies are built with ``env_kwargs`` (over
      the entry's), and every argument left out comes from the id's ``zoo_hparams/ppo.yml`` entry,
      so ``PPO("MlpPolicy", "RoboAnt-v0").learn()`` trains with tuned settings for the entry's
      budget. ``hyperparams``: ``None`` (so, for such an id; SB3's defaults otherwise), ``"zoo"``,
      ``"sb3"`` or a :class:`~roboppo.zoo.ZooEntry`; ``hyperparams_source`` says which was used.
    - ``"MlpPolicy"`` is :class:`~roboppo.ppo.policies.TanhGaussianPolicy`, normalizing observations
      inside; a ``Dict`` of vectors is read flattened (``MultiInputPolicy`` too, without an extractor).
    - ``reward_scale`` multiplies the rewards PPO learns from; ``normalize_reward`` first divides them
      by the running std of the discounted return (SB3's ``VecNormalize(norm_obs=False)``).
    - ``recompute_advantage`` recomputes GAE before each epoch after the first (roboppo's policy only).
    - ``train_backend``: ``"jax"`` (one compiled call per rollout), ``"torch"`` or ``"auto"`` (JAX where
      :mod:`roboppo.ppo.fast_paths` allows it); :attr:`paths_run` says what ran. ``overlap_update``
      trains on each rollout while the next is collected (a policy lag of one update).
    - A model at rest pairs its weights with the observation statistics they were trained with
      (:meth:`trained_pair`); an entry's schedules run over the entry's budget; NaN or inf from the
      env stops training with an error; ``save`` never leaves a half-written file.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {**SB3PPO.policy_aliases, "MlpPolicy": TanhGaussianPolicy}
    rollout_buffer: RolloutBuffer

    def __init__(
        self,
        policy: str | type[BasePolicy],
        env: GymEnv | str | None,
        *args: Any,
        n_envs: int | None = None,
        env_kwargs: dict[str, Any] | None = None,
        reward_scale: float | None = None,
        normalize_reward: bool | None = None,
        recompute_advantage: bool | None = None,
        train_backend: str | None = None,
        overlap_update: bool | None = None,
        hyperparams: str | ZooEntry | None = None,
        **kwargs: Any,
    ) -> None:
        ours = {
            "n_envs": n_envs, "reward_scale": reward_scale, "normalize_reward": normalize_reward,
            "recompute_advantage": recompute_advantage, "train_backend": train_backend,
            "overlap_update": overlap_update,
        }  # fmt: skip
        resolved = resolve(policy, env, args, kwargs, ours, env_kwargs, hyperparams)
        arguments = resolved.sb3
        loading = arguments.get("_init_setup_model") is False  # PPO.load: the saved values replace these
        self.reward_scale = float(resolved.roboppo["reward_scale"])
        self.normalize_reward = bool(resolved.roboppo["normalize_reward"])
        self.return_rms = RunningMeanStd(shape=()) if self.normalize_reward else None
        self._discounted_returns: np.ndarray | None = None  # each copy's running return, for return_rms
        self.recompute_advantage = bool(resolved.roboppo["recompute_advantage"])
        self.train_backend: str = resolved.roboppo["train_backend"]
        self.overlap_update = bool(resolved.roboppo["overlap_update"])
        self.env_id = env if isinstance(env, str) else None
        self.hyperparams_source = "not recorded" if loading else resolved.source
        self.hyperparams = resolved.zoo
        self.default_total_timesteps = None if resolved.entry is None else resolved.entry.n_timesteps
        self.dict_observation_space = resolved.dict_space
        self._settings = sb3_settings(arguments)  # SB3's settings as given (config.yml)
        self.paths_run: dict[str, list[str]] = {"sampler": [], "update": []}
        self._paths_said: set[tuple[str, str]] = set()
        self.pairing = Pairing()
        with flattening_dicts(resolved.dict_space is not None), without_dynamo_import():
            super().__init__(**arguments)
        if self.recompute_advantage and not loading:
            self._refuse_recompute(update_choice(self.policy, self.train_backend))
        if resolved.entry is not None and self.verbose >= 1:
            print(settings_line(resolved.source, self.hyperparams, resolved.replaced))

    @staticmethod
    def _wrap_env(env: GymEnv, verbose: int = 0, monitor_wrapper: bool = True) -> VecEnv:
        """SB3's wrapping, then a ``Dict`` of vector observations flattened (:class:`FlattenDictVecEnv`)."""
        venv = SB3PPO._wrap_env(env, verbose, monitor_wrapper)
        return FlattenDictVecEnv(venv) if FLATTEN_DICTS.get() and flattenable(venv.observation_space) else venv

    def _maybe_recommend_cpu(self, mlp_class_name: str = "ActorCriticPolicy") -> None:
        """SB3's advice to run MLP policies on the CPU, for roboppo's ``MlpPolicy`` too."""
        if self.policy_class is TanhGaussianPolicy:
            mlp_class_name = TanhGaussianPolicy.__name__
        super()._maybe_recommend_cpu(mlp_class_name)

    def resolved_hyperparams(self) -> dict[str, Any]:
        """Every PPO and policy keyword this model was built with, in ``ppo.yml``'s form (a run's ``config.yml``)."""
        settings = sb3_default_settings() | self._settings | self.hyperparams
        settings.update(
            reward_scale=self.reward_scale, normalize_reward=self.normalize_reward,
            recompute_advantage=self.recompute_advantage, train_backend=self.train_backend,
            overlap_update=self.overlap_update,
        )  # fmt: skip
        settings["policy_kwargs"] = policy_keywords(self.policy)
        return settings

    def planned_paths(self) -> dict[str, str]:
        """Which sampler and update the policy gets now, with the reason a fast path steps aside (``config.yml``)."""
        return planned_paths(self.policy, self.train_backend)

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3's ``predict``; a ``Dict`` observation of a flattened env is flattened first, as the env is."""
        if self.dict_observation_space is not None and isinstance(observation, dict):
            observation = flatten_dict_obs(self.dict_observation_space, observation)
        return super().predict(observation, state, episode_start, deterministic)

    # -- learn ----------------------------------------------------------------------------------

    def learn(  # type: ignore[override]
        self: SelfPPO,
        total_timesteps: int | None = None,
        callback: MaybeCallback = None,
        log_interval: int = 1,
        tb_log_name: str = "PPO",
        reset_num_timesteps: bool = True,
        progress_bar: bool | None = None,
    ) -> SelfPPO:
        """SB3's ``learn``; without ``total_timesteps`` a model built from a zoo entry trains the entry's budget.

        That budget is announced with an estimate of the time, with a progress bar unless
        ``progress_bar=False``; ``ROBOPPO_MAX_TIMESTEPS`` caps it (:func:`~roboppo.ppo.settings.default_budget`).
        """
        if total_timesteps is None:
            total_timesteps, callback = default_budget(
                self.env_id, self.default_total_timesteps, self.hyperparams_source, callback
            )
            progress_bar = True if progress_bar is None else progress_bar
        try:
            return super().learn(
                total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, bool(progress_bar)
            )
        finally:
            self.pairing.rest(self.policy)

    @contextlib.contextmanager
    def trained_pair(self) -> Iterator[None]:
        """Within it, the policy holds the weights and the observation statistics they were trained with
        (:mod:`roboppo.ppo.pairing`); ``save``, the end of ``learn`` and the zoo's evaluations use it."""
        sampling = self.pairing.rest(self.policy)
        try:
            yield
        finally:
            if sampling:
                self.pairing.resume(self.policy)

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        """SB3's ``_setup_learn``; the first observations are checked for NaN and inf. Where it resets the env,
        the running returns of ``normalize_reward`` start again at 0 (as ``VecNormalize.reset`` sets them)."""
        if reset_num_timesteps or self._last_obs is None:
            self._discounted_returns = None
        result = super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)
        assert self.env is not None
        check_finite(self.env, None, self._last_obs)
        return result

    def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
        """SB3's progress, measured over the zoo entry's budget when the model has one (then never below 0)."""
        if self.default_total_timesteps is None:
            super()._update_current_progress_remaining(num_timesteps, total_timesteps)
        else:
            self._current_progress_remaining = max(0.0, 1.0 - num_timesteps / self.default_total_timesteps)

    def set_env(self, env: GymEnv, force_reset: bool = True) -> None:
        """SB3's ``set_env``; an env with another number of copies is accepted (the rollout buffer follows it,
        and the env is reset whatever ``force_reset`` says, since the last observations no longer fit)."""
        with flattening_dicts(self.dict_observation_space is not None):
            venv = self._wrap_env(env, self.verbose)
            check_for_correct_spaces(venv, self.observation_space, self.action_space)
            if venv.num_envs != self.n_envs:
                self.n_envs, force_reset = venv.num_envs, True
                assert self.rollout_buffer_class is not None, "_setup_model chose the buffer class"
                self.rollout_buffer = self.rollout_buffer_class(
                    self.n_steps, self.observation_space, self.action_space, device=self.device, gamma=self.gamma,
                    gae_lambda=self.gae_lambda, n_envs=self.n_envs, **self.rollout_buffer_kwargs,
                )  # fmt: skip
            super().set_env(venv, force_reset)

    # -- rollouts -------------------------------------------------------------------------------

    def collect_rollouts(
        self, env: VecEnv, callback: BaseCallback, rollout_buffer: RolloutBuffer, n_rollout_steps: int
    ) -> bool:
        """SB3's ``collect_rollouts``, with the policy's actions from :func:`~roboppo.ppo.rollout.policy_actions`,
        every step checked for NaN and inf, one batched value call for time-limit bootstraps and the rewards
        PPO learns from (:meth:`_learning_rewards`). Callbacks see SB3's ``locals``; NumPy's BLAS runs on one
        thread meanwhile (:func:`~roboppo.ppo.sampler.one_blas_thread`)."""
        assert self._last_obs is not None, "No previous observation was provided"
        self.pairing.resume(self.policy)
        self.policy.set_training_mode(False)
        n_steps = 0
        rollout_buffer.reset()
        if self.use_sde:
            self.policy.reset_noise(env.num_envs)
        callback.on_rollout_start()
        choice = sampler_choice(self.policy)  # after on_rollout_start: a callback may change the policy
        note_path(self.paths_run, self._paths_said, "sampler", choice, self.verbose)
        sampler = None if choice.graph is None else RolloutSampler(choice.graph)
        with one_blas_thread():
            while n_steps < n_rollout_steps:
                if self.use_sde and self.sde_sample_freq > 0 and n_steps % self.sde_sample_freq == 0:
                    self.policy.reset_noise(env.num_envs)
                with th.no_grad():
                    obs_tensor = obs_as_tensor(self._last_obs, self.device)  # type: ignore[arg-type]
                    actions, clipped_actions, values, log_probs = policy_actions(
                        self.policy, obs_tensor, choice.path != "sb3", sampler
                    )
                new_obs, rewards, dones, infos = env.step(clipped_actions)
                self.num_timesteps += env.num_envs
                check_finite(env, self.num_timesteps // env.num_envs, new_obs, rewards, infos, clipped_actions)
                callback.update_locals(locals())
                if not callback.on_step():
                    return False
                self._update_info_buffer(infos, dones)
                n_steps += 1
                if isinstance(self.action_space, spaces.Discrete):
                    actions = actions.reshape(-1, 1)
                learning_rewards = self._learning_rewards(rewards, dones)
                ended = np.flatnonzero(dones)
                if ended.size:
                    learning_rewards = learning_rewards + self.gamma * truncation_values(self.policy, infos, ended)
                last_obs, starts = self._last_obs, self._last_episode_starts
                rollout_buffer.add(last_obs, actions, learning_rewards, starts, values, log_probs)  # type: ignore[arg-type]
                self._last_obs = new_obs  # type: ignore[assignment]
                self._last_episode_starts = dones
            with th.no_grad():
                values = self.policy.predict_values(obs_as_tensor(new_obs, self.device))  # type: ignore[arg-type]
        rollout_buffer.compute_returns_and_advantage(last_values=values, dones=dones)
        if sampler is not None and sampler.refusal is not None:  # the policy changed during the rollout
            note_path(
                self.paths_run, self._paths_said, "sampler", Choice("torch", reason=sampler.refusal), self.verbose
            )
        if self.return_rms is not None:
            self.logger.record("rollout/return_std", float(np.sqrt(self.return_rms.var)))
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    def _learning_rewards(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """The rewards PPO learns from: normalized (``normalize_reward``), then times ``reward_scale``."""
        if self.return_rms is None:
            return self.reward_scale * rewards
        normalized, self._discounted_returns = normalized_rewards(
            rewards, dones, self.gamma, self.return_rms, self._discounted_returns
        )
        return self.reward_scale * normalized

    # -- training -------------------------------------------------------------------------------

    def train(self) -> None:
        """PPO epochs on the current rollout, then one update of the observation statistics.

        The learning rate and clip range are evaluated once into :class:`UpdateSettings`, which both
        update backends read. With roboppo's policy and a learning rate of 0 (an entry's decaying
        schedule past its budget) nothing changes, the statistics included.
        """
        self._finish_pending()
        settings = self._update_settings()
        adaptive = isinstance(self.learning_rate, KLAdaptiveLR)
        if settings.learning_rate == 0.0 and isinstance(self.policy, TanhGaussianPolicy) and not adaptive:
            return
        choice = update_choice(self.policy, self.train_backend)
        note_path(self.paths_run, self._paths_said, "update", choice, self.verbose)
        if self.overlap_update and choice.path == "jax":
            self._start_pending(choice, settings)
            return
        if self.overlap_update:
            warn_overlap_refused(self._paths_said, choice)
        if choice.path == "sb3":
            self._refuse_recompute(choice)
            super().train()
            if adaptive:  # SB3's train reports its statistics through the logger only
                self.learning_rate.update(float(self.logger.name_to_value["train/approx_kl"]))  # type: ignore[union-attr]
        else:
            self._train_pre_tanh(choice, settings)
        trained = statistics_of(self.policy)
        self._update_obs_normalizer()
        self.pairing.trained = trained or None

    def _update_settings(self) -> UpdateSettings:
        """This rollout's update settings, the schedules evaluated (the optimizer shows the rate too)."""
        progress = self._current_progress_remaining
        learning_rate = float(self.lr_schedule(progress))
        update_learning_rate(self.policy.optimizer, learning_rate)
        self.logger.record("train/learning_rate", learning_rate)
        return UpdateSettings(
            n_epochs=self.n_epochs,
            batch_size=self.batch_size,
            learning_rate=learning_rate,
            clip_range=float(self.clip_range(progress)),  # type: ignore[operator]
            clip_range_vf=None if self.clip_range_vf is None else float(self.clip_range_vf(progress)),  # type: ignore[operator]
            ent_coef=float(self.ent_coef),
            vf_coef=float(self.vf_coef),
            max_grad_norm=float(self.max_grad_norm),
            target_kl=None if self.target_kl is None else float(self.target_kl),
            normalize_advantage=self.normalize_advantage,
        )

    def _train_pre_tanh(self, choice: Choice, settings: UpdateSettings | None = None) -> None:
        """roboppo's update (JAX or PyTorch, as ``choice`` says) on this rollout, then its log lines."""
        settings = self._update_settings() if settings is None else settings
        assert isinstance(self.policy, TanhGaussianPolicy)
        self.policy.set_training_mode(True)
        batch = flat_batch(self.rollout_buffer, self.device)
        if choice.graph is not None:
            stats = jax_train.train(choice.graph, batch, settings, self._revaluation())
        else:
            stats = torch_train.train(self.policy, batch, settings, self._revaluation())
        self._updated(stats, settings, explained_variance_of(self.rollout_buffer))

    def _start_pending(self, choice: Choice, settings: UpdateSettings) -> None:
        """``overlap_update``: hand this rollout's update to JAX and fold its observations in; the next rollout
        samples with the weights as they are while the update runs (:meth:`_finish_pending` writes it)."""
        assert choice.graph is not None
        self.policy.set_training_mode(True)
        batch = flat_batch(self.rollout_buffer, self.device)
        pending = jax_train.start(choice.graph, batch, settings, background=True, revaluation=self._revaluation())
        pending.statistics = statistics_of(self.policy)
        pending.explained_variance = explained_variance_of(self.rollout_buffer)
        self.pairing.pending, self.pairing.trained = pending, None  # the trained pair is the pending update's
        self._update_obs_normalizer()

    def _finish_pending(self) -> None:
        """Write the pending update (if any) into the policy and log it, as :meth:`_train_pre_tanh` does."""
        pending = self.pairing.take_pending()
        if pending is not None:
            stats = pending.apply(pending_parameters(self.policy), self.policy.optimizer)
            self._updated(stats, pending.settings, pending.explained_variance)

    def _updated(self, stats: UpdateStats, settings: UpdateSettings, explained: float) -> None:
        """After an update: count it, steer a KL-adaptive rate by its own KL, and write SB3's ``train/*`` keys."""
        self._n_updates += stats.epochs
        if stats.stop_kl is not None and self.verbose >= 1:
            print(f"Early stopping at step {stats.epochs - 1} due to reaching max kl: {stats.stop_kl:.2f}")
        if isinstance(self.learning_rate, KLAdaptiveLR):
            self.learning_rate.update(stats.approx_kl)
        record_update(self.logger, stats, settings, explained, th.exp(self.policy.log_std).mean().item())
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")

    def _refuse_recompute(self, choice: Choice) -> None:
        """``recompute_advantage`` with a policy SB3's ``train`` updates: a ``ValueError`` naming why."""
        if choice.path == "sb3" and self.recompute_advantage:
            raise ValueError(
                "recompute_advantage=True needs roboppo's JAX or PyTorch update, but SB3's train (advantages "
                f"once per rollout) updates this policy: {choice.reason}. Use recompute_advantage=False."
            )

    def _revaluation(self) -> Revaluation | None:
        """What recomputing this rollout's advantages needs (``recompute_advantage``), or None."""
        if not self.recompute_advantage:
            return None
        assert self._last_obs is not None and self._last_episode_starts is not None
        last_obs = obs_as_tensor(self._last_obs, self.device)  # type: ignore[arg-type]
        return Revaluation(self.rollout_buffer, last_obs, np.array(self._last_episode_starts))  # type: ignore[arg-type]

    def _update_obs_normalizer(self) -> None:
        if isinstance(self.policy, TanhGaussianPolicy) and not isinstance(self.rollout_buffer.observations, dict):
            self.policy.update_obs_normalizer(self.rollout_buffer.observations)
            record_statistics(self.logger, self.policy)

    # -- files ----------------------------------------------------------------------------------

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_paths_said"]  # which reasons this session printed

    def save(
        self,
        path: str | pathlib.Path | io.BufferedIOBase,
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
    ) -> None:
        """SB3's ``save`` of the trained pair (:meth:`trained_pair`) and of what the next rollout samples with; a
        path without a suffix gets ``.zip``, and the file is written beside its target and renamed into place."""
        with self.trained_pair(), without_dynamo_import():
            if not isinstance(path, (str, pathlib.Path)):
                super().save(path, exclude, include)
                return
            target = pathlib.Path(path)
            with atomic_target(target.with_suffix(".zip") if target.suffix == "" else target) as partial:
                super().save(partial, exclude, include)

    @classmethod
    def load(  # type: ignore[override]
        cls: type[SelfPPO],
        path: str | pathlib.Path | io.BufferedIOBase,
        env: GymEnv | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfPPO:
        """SB3's ``load`` of this version's files and earlier versions'; a path that is missing or not a model
        zip raises first (:func:`~roboppo.ppo.model_files.checked_model_path`). Errors about the model and
        ``env`` (for example "Observation spaces do not match") are SB3's.

        :raises FileNotFoundError: neither ``path`` nor ``path + ".zip"`` exists.
        :raises ModelLoadError: the file exists but is not a complete model zip.
        """
        if isinstance(path, (str, pathlib.Path)):
            path = checked_model_path(path)
        custom_objects = {**retired_objects(path), **(custom_objects or {})}
        # a model whose policy read a Dict env flattened saved the flat space; one of SB3's policies, the Dict
        flatten = env is None or not isinstance(saved_observation_space(path), spaces.Dict)
        with flattening_dicts(flatten), without_dynamo_import():
            model = super().load(path, env, device, custom_objects, print_system_info, force_reset, **kwargs)
        for old, owned in LEGACY_FIELDS.items():  # fields earlier versions saved under other names
            if old in model.__dict__:
                setattr(model.pairing, owned, model.__dict__.pop(old))
        return model
