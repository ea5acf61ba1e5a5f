"""roboppo's PPO: Stable-Baselines3's PPO with a tanh-Gaussian policy, in-policy normalization and a compiled update."""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import io
import json
import pathlib
import warnings
import zipfile
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
from stable_baselines3.common.save_util import json_to_data
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import check_for_correct_spaces, explained_variance, obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from roboppo.common.env_util import check_finite, make_env_from_id
from roboppo.common.errors import ModelLoadError
from roboppo.common.files import atomic_target
from roboppo.common.hparams import ACTIVATIONS, TRAIN_BACKENDS, ZooEntry, capped_budget
from roboppo.common.optimizers import without_dynamo_import
from roboppo.common.schedules import KLAdaptiveLR
from roboppo.common.validation import NOT_SETTINGS
from roboppo.common.vec_env import FlattenDictVecEnv, flatten_dict_obs, flattenable
from roboppo.ppo import jax_train, torch_train
from roboppo.ppo.defaults import SB3_SOURCE, BudgetNotice, describe, with_notice, zoo_arguments, zoo_entry
from roboppo.ppo.fast_paths import Choice, sampler_choice, update_choice
from roboppo.ppo.fast_paths import describe as describe_graph
from roboppo.ppo.policies import TanhGaussianPolicy
from roboppo.ppo.rollout import flat_batch, policy_actions, truncation_values
from roboppo.ppo.sampler import RolloutSampler, one_blas_thread
from roboppo.ppo.update import Revaluation, RolloutBatch, UpdateSettings, UpdateStats

SelfPPO = TypeVar("SelfPPO", bound="PPO")

_SB3_SIGNATURE = inspect.signature(SB3PPO.__init__)


class PPO(SB3PPO):
    """Proximal Policy Optimization for robot control: a subclass of SB3's ``PPO`` that behaves like it.

    Every argument of ``stable_baselines3.PPO`` is accepted, positionally or by keyword, with
    the same meaning. What roboppo adds (the README's "Differences from SB3"):

    - ``env`` may be a registered roboppo id (``"RoboHopper-v0"``): ``n_envs`` copies are built,
      seeded from ``seed``, and every argument left out comes from the id's ``zoo_hparams/ppo.yml``
      entry (for the device training runs on), so ``PPO("MlpPolicy", "RoboAnt-v0").learn()`` trains
      with tuned settings for the entry's budget. ``hyperparams="sb3"`` keeps SB3's defaults; an env
      object, a ``VecEnv`` or another id always does. ``hyperparams_source`` and ``hyperparams``
      say what was used.

    - ``"MlpPolicy"`` is :class:`~roboppo.ppo.policies.TanhGaussianPolicy`: tanh-squashed Gaussian
      Box actions and observation normalization inside the policy, so the saved zip is all a user
      needs. SB3's other aliases (``"CnnPolicy"``, ``"MultiInputPolicy"``) are SB3's policies.
    - ``reward_scale`` multiplies the rewards PPO learns from (not the episode statistics);
      ``normalize_reward=True`` first divides them by a running standard deviation of the discounted
      return, as SB3's ``VecNormalize(norm_obs=False)`` does, with its statistics saved in the model.
    - ``recompute_advantage=True`` recomputes GAE with the value network as trained so far before
      each epoch after the first (SB3 computes it once per rollout).
    - Rollouts store pre-tanh actions and their exact log-probabilities; the update runs every
      epoch and minibatch of a rollout in one compiled JAX call on the CPU (``train_backend``).
    - Observation statistics are updated once per rollout, *after* the gradient steps on that
      rollout, so the first minibatch's probability ratio is exactly 1. The next rollout samples
      with them; the model at rest (after ``learn``, in every saved file and in the zoo's
      evaluations) pairs the weights with the statistics their last gradient steps used
      (:meth:`trained_pair`).
    - A model built from a zoo entry runs the entry's schedules (a decaying learning rate or clip
      range) over the entry's budget, whatever ``learn`` is given: past the budget they hold their
      final values, so a longer run does not stretch them. A learning rate of 0 leaves the model as
      it is (no update, and no update of the observation statistics).
    - ``overlap_update=True`` trains on each rollout while the next one is collected (an
      asynchronous PPO, as Sample Factory's): faster on the CPU, with a policy lag of one update.
    - Training stops with an error naming the env and step if it returns NaN or inf.
    - ``set_env`` accepts an env with another number of copies; ``save`` never leaves a
      half-written file; extra TensorBoard scalars ``obs_norm/*``.

    :param policy: ``"MlpPolicy"``, another SB3 alias, or a policy class.
    :param env: a Gymnasium env, an SB3 ``VecEnv`` or a registered env id.
    :param args: SB3's PPO arguments after ``env``, positionally (``learning_rate``, ``n_steps``, ...).
    :param n_envs: number of env copies when ``env`` is an id (ignored otherwise; default: the
        zoo entry's, else 1).
    :param env_kwargs: keyword arguments for ``gym.make`` / ``gym.make_vec`` when ``env`` is an id.
    :param reward_scale: rewards are multiplied by this before GAE (episode statistics are not);
        default: the zoo entry's, else 1.
    :param normalize_reward: divide the rewards PPO learns from by the running standard deviation of
        each copy's discounted return (SB3's ``VecNormalize`` reward scaling, clipped to +-10 as there),
        before ``reward_scale``; the statistics are saved with the model and ``rollout/return_std``
        logs the standard deviation. Default: the zoo entry's, else False.
    :param recompute_advantage: before each epoch after the first, recompute the rollout's advantages
        and returns (GAE, as SB3's ``RolloutBuffer`` computes them) with the value network as trained so
        far, instead of once per rollout. The rewards are those collected (time-limit bootstraps
        included, valued when they were collected); the old values of ``clip_range_vf`` and the logged
        explained variance stay the rollout's. Needs roboppo's policy on its pre-tanh path (the JAX and
        the PyTorch update both do it); any other policy raises ``ValueError`` naming why. Default: the
        zoo entry's, else False.
    :param train_backend: how roboppo's policy is updated: ``"jax"`` runs every epoch and
        minibatch of a rollout in one compiled JAX call (CPU only; about 10x less time than
        PyTorch for small networks), ``"torch"`` the PyTorch loop of :mod:`roboppo.ppo.torch_train`,
        ``"auto"`` (default, unless the zoo entry says otherwise) ``"jax"`` when the policy can take
        it (see :mod:`roboppo.ppo.fast_paths`), else ``"torch"``. Other policies train with SB3's
        own ``train``. Which sampler and update ran is in :attr:`paths_run`; a fast path that steps
        aside says why once (``verbose >= 1``).
    :param overlap_update: with the compiled update (``train_backend`` ``"auto"`` or ``"jax"``),
        start each rollout's update and collect the next rollout while it runs, at the lowest
        priority on the cores the rollout leaves free, instead of after it. That rollout is then
        sampled by the weights from before the update (a policy lag of one update; PPO's ratio is
        taken against the weights that sampled it), and ``train/*`` logs describe the update
        before. A seed still gives one run, whatever the timing, and a saved model continues
        exactly. Default: the zoo entry's, else False. See ``docs/design.md``.
    :param hyperparams: where arguments left out come from: ``None`` (default) the zoo entry for a
        registered roboppo id given as a string and SB3's defaults otherwise; ``"zoo"`` the same but
        an error for anything other than such an id; ``"sb3"`` SB3's defaults; or a
        :class:`~roboppo.zoo.ZooEntry` (``roboppo.zoo.load_ppo_hparams(id, path)``), for any env.
        Arguments you pass always win. The entry's ``policy_kwargs`` apply to roboppo's policy only.
    :param kwargs: SB3's PPO arguments by keyword.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        **SB3PPO.policy_aliases,
        "MlpPolicy": TanhGaussianPolicy,
    }
    rollout_buffer: RolloutBuffer

    # where the settings came from, saved with the model (models saved before this was recorded load as "not recorded")
    hyperparams_source: str
    hyperparams: dict[str, Any]
    default_total_timesteps: int | None
    env_id: str | None

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
        given = _SB3_SIGNATURE.bind_partial(self, policy, env, *args, **kwargs).arguments
        given.pop("self")
        ours = {
            "n_envs": n_envs, "reward_scale": reward_scale, "normalize_reward": normalize_reward,
            "recompute_advantage": recompute_advantage, "train_backend": train_backend,
            "overlap_update": overlap_update,
        }  # fmt: skip
        explicit = set(given) | {key for key, value in ours.items() if value is not None}
        entry = zoo_entry(hyperparams, env, given.get("device", "auto"))
        taken, replaced = ({}, []) if entry is None else zoo_arguments(entry, explicit, self._is_roboppo_policy(policy))
        settings = {key: value for key, value in ours.items() if value is not None} | taken
        self.reward_scale = float(settings.pop("reward_scale", 1.0))
        self.normalize_reward = bool(settings.pop("normalize_reward", False))
        self.return_rms = RunningMeanStd(shape=()) if self.normalize_reward else None
        self._discounted_returns: np.ndarray | None = None  # each copy's running return, for return_rms
        self.recompute_advantage = bool(settings.pop("recompute_advantage", False))
        self.train_backend = settings.pop("train_backend", "auto")
        if self.train_backend not in TRAIN_BACKENDS:
            raise ValueError(f"train_backend must be one of {TRAIN_BACKENDS}, got {self.train_backend!r}.")
        self.overlap_update = bool(settings.pop("overlap_update", False))
        n_envs = settings.pop("n_envs", None)
        self.env_id = env if isinstance(env, str) else None
        loading = given.get("_init_setup_model") is False  # PPO.load: the saved values replace these
        self.hyperparams_source = "not recorded" if loading else SB3_SOURCE if entry is None else entry.source
        self.hyperparams = {} if entry is None else {key: entry.values.get(key, taken[key]) for key in taken}
        self.default_total_timesteps = None if entry is None else entry.n_timesteps
        if isinstance(env, str) and entry is not None and entry.env_kwargs:  # the entry's env, the user's keys win
            env_kwargs = {**entry.env_kwargs, **(env_kwargs or {})}
        if isinstance(env, str):
            given["env"] = make_env_from_id(
                env, n_envs=1 if n_envs is None else n_envs, seed=given.get("seed"), env_kwargs=env_kwargs
            )
        space = getattr(given.get("env"), "observation_space", None)
        # a Dict of vectors is flattened (_wrap_env) for roboppo's policy, which then reads it as it reads the
        # flat twin; SB3's policies (a class given, or a features extractor of the user's) read the Dict
        flatten = flattenable(space) and self._reads_flat_dicts(policy, given.get("policy_kwargs"))
        self.dict_observation_space = space if flatten else None
        if flatten and policy == "MultiInputPolicy":
            given["policy"] = "MlpPolicy"
        self._settings = {name: _yaml_value(value) for name, value in (given | settings).items() if name in _SETTINGS}
        self.paths_run: dict[str, list[str]] = {"sampler": [], "update": []}
        self._paths_said: set[tuple[str, str]] = set()
        # observation statistics the weights were trained with (while sampling with newer ones), and the newer
        # ones kept for the next rollout (while at rest): see trained_pair
        self._trained_statistics: list[dict[str, th.Tensor]] | None = None
        self._next_statistics: list[dict[str, th.Tensor]] | None = None
        # with overlap_update: the update running beside the rollout, and (at rest) the weights the rollout samples with
        self._pending: jax_train.PendingUpdate | None = None
        self._sampling_weights: list[th.Tensor] | None = None
        arguments = given | settings
        if flatten and not loading:  # where each key lies, for a policy whose actor and critic read different keys
            arguments["policy_kwargs"] = with_observation_layout(arguments.get("policy_kwargs"), space)
        with _flattening(flatten), without_dynamo_import():
            super().__init__(**arguments)
        if self.recompute_advantage and not loading:
            self._refuse_recompute(update_choice(self.policy, self.train_backend))
        if entry is not None and self.verbose >= 1:
            print(describe(entry.source, self.hyperparams, replaced))

    @staticmethod
    def _wrap_env(env: GymEnv, verbose: int = 0, monitor_wrapper: bool = True) -> VecEnv:
        """SB3's wrapping, then a ``Dict`` of vector observations flattened (:class:`FlattenDictVecEnv`)."""
        venv = SB3PPO._wrap_env(env, verbose, monitor_wrapper)
        return FlattenDictVecEnv(venv) if _FLATTEN_DICTS.get() and flattenable(venv.observation_space) else venv

    def _reads_flat_dicts(self, policy: str | type[BasePolicy], policy_kwargs: dict[str, Any] | None) -> bool:
        """Whether ``policy`` is roboppo's, which reads a Dict of vectors flattened (``MultiInputPolicy`` is,
        unless a features extractor is given: that one reads the Dict, as in SB3)."""
        if policy == "MultiInputPolicy":
            extractor = {"features_extractor_class", "features_extractor_kwargs"} & set(policy_kwargs or {})
            return not extractor
        return self._is_roboppo_policy(policy)

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3's ``predict``; a ``Dict`` observation of a flattened env is flattened first, as the env is."""
        dict_space = getattr(self, "dict_observation_space", None)
        if dict_space is not None and isinstance(observation, dict):
            observation = flatten_dict_obs(dict_space, observation)
        return super().predict(observation, state, episode_start, deterministic)

    def _is_roboppo_policy(self, policy: str | type[BasePolicy]) -> bool:
        policy_class = self.policy_aliases.get(policy) if isinstance(policy, str) else policy
        return isinstance(policy_class, type) and issubclass(policy_class, TanhGaussianPolicy)

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

        That budget can be long, so it is announced (env, steps, device) with an estimate of the time
        after the second rollout, and a progress bar is shown unless ``progress_bar=False``. The
        environment variable ``ROBOPPO_MAX_TIMESTEPS`` caps it (for smoke tests of scripts).

        :raises TypeError: no ``total_timesteps`` and no zoo budget (SB3's error for a missing argument).
        """
        if total_timesteps is None:
            if self.default_total_timesteps is None:
                raise TypeError(
                    "learn() missing 1 required positional argument: 'total_timesteps' (a default budget comes "
                    f"only with a zoo entry; this model's settings are from {self.hyperparams_source})"
                )
            total_timesteps, capped = capped_budget(self.default_total_timesteps)
            plan = (
                f"Training PPO on {self.env_id or 'the env'} for {total_timesteps:,} env steps{capped}, the budget of "
                f"{self.hyperparams_source}. Pass total_timesteps to choose another."
            )
            callback = with_notice(callback, BudgetNotice(plan))
            progress_bar = True if progress_bar is None else progress_bar
        try:
            return super().learn(
                total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, bool(progress_bar)
            )
        finally:
            self._rest()

    def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
        """SB3's progress, measured over the zoo entry's budget when the model has one (then never below 0)."""
        budget = getattr(self, "default_total_timesteps", None)
        if budget is None:
            super()._update_current_progress_remaining(num_timesteps, total_timesteps)
        else:
            self._current_progress_remaining = max(0.0, 1.0 - float(num_timesteps) / float(budget))

    # -- observation statistics: the trained pair and the sampling pair -------------------------

    @contextlib.contextmanager
    def trained_pair(self) -> Iterator[None]:
        """Within it, the policy holds the observation statistics its weights were last trained with.

        Between the gradient steps on one rollout and the next rollout, PPO folds that rollout's
        observations into the statistics, so a model that is sampling holds newer statistics than
        its weights have seen. ``save``, the end of ``learn`` and the zoo's evaluations use this pair.
        """
        sampling = self._rest()
        try:
            yield
        finally:
            if sampling:
                self._resume_sampling()

    def _normalizer_states(self) -> list[dict[str, th.Tensor]]:
        normalizers = self.policy.observation_normalizers() if isinstance(self.policy, TanhGaussianPolicy) else []
        return [{key: value.clone() for key, value in n.state_dict().items()} for n in normalizers]

    def _load_normalizer_states(self, states: list[dict[str, th.Tensor]]) -> None:
        for normalizer, state in zip(self.policy.observation_normalizers(), states, strict=True):  # type: ignore[operator]
            normalizer.load_state_dict(state)  # copies into the same buffers: the sampler's views stay valid

    def _rest(self) -> bool:
        """Hold the trained pair; keep what the next rollout samples with. False: the model was at rest already.

        With an update pending (``overlap_update``), the trained pair is its result and the
        statistics it was trained with; the weights being sampled with are kept beside them.
        """
        pending = getattr(self, "_pending", None)
        if pending is not None and getattr(self, "_sampling_weights", None) is None:
            weights = self._pending_parameters()
            self._sampling_weights = [w.detach().clone() for w in weights]
            self._next_statistics = self._normalizer_states()
            pending.apply(weights, self.policy.optimizer)
            self._load_normalizer_states(pending.statistics)
            return True
        return self._swap_statistics("_trained_statistics", "_next_statistics")

    def _resume_sampling(self) -> None:
        """Sample with what :meth:`_rest` kept (the newest statistics), remembering the trained pair."""
        sampling_weights = getattr(self, "_sampling_weights", None)
        if sampling_weights is not None:
            with th.no_grad():
                for weight, kept in zip(self._pending_parameters(), sampling_weights, strict=True):
                    weight.copy_(kept)  # in place: the sampler's views of the weights stay valid
            self._sampling_weights = None
            if self._next_statistics is not None:
                self._load_normalizer_states(self._next_statistics)
                self._next_statistics = None
            return
        self._swap_statistics("_next_statistics", "_trained_statistics")

    def _swap_statistics(self, load: str, keep: str) -> bool:
        """Load the statistics held in attribute ``load`` (if any) into the policy; the current ones go to ``keep``."""
        held = getattr(self, load, None)
        if held is None:
            return False
        setattr(self, keep, self._normalizer_states())
        self._load_normalizer_states(held)
        setattr(self, load, None)
        return True

    def _pending_parameters(self) -> list[th.Tensor]:
        """The policy's tensors a pending update writes, in its order."""
        graph = describe_graph(self.policy)
        if isinstance(graph, str):
            raise RuntimeError(f"an update is pending for a policy that can no longer take it: {graph}.")
        return graph.parameters()

    # -- environments -------------------------------------------------------------------------

    def set_env(self, env: GymEnv, force_reset: bool = True) -> None:
        """SB3's ``set_env``; an env with another number of copies is accepted (the rollout buffer follows it,
        and the env is reset whatever ``force_reset`` says, since the last observations no longer fit)."""
        with _flattening(getattr(self, "dict_observation_space", None) is not None):
            self._set_env(env, force_reset)

    def _set_env(self, env: GymEnv, force_reset: bool) -> None:
        venv = self._wrap_env(env, self.verbose)
        check_for_correct_spaces(venv, self.observation_space, self.action_space)
        if venv.num_envs != self.n_envs:
            self.n_envs, force_reset = venv.num_envs, True
            buffer_class = self.rollout_buffer_class
            assert buffer_class is not None, "_setup_model chose the buffer class"
            self.rollout_buffer = buffer_class(
                self.n_steps, self.observation_space, self.action_space, device=self.device, gamma=self.gamma,
                gae_lambda=self.gae_lambda, n_envs=self.n_envs, **self.rollout_buffer_kwargs,
            )  # fmt: skip
        super().set_env(venv, force_reset)

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

    def _maybe_recommend_cpu(self, mlp_class_name: str = "ActorCriticPolicy") -> None:
        """SB3's advice to run MLP policies on the CPU, for roboppo's ``MlpPolicy`` too."""
        if self.policy_class is TanhGaussianPolicy:
            mlp_class_name = TanhGaussianPolicy.__name__
        super()._maybe_recommend_cpu(mlp_class_name)

    def resolved_hyperparams(self) -> dict[str, Any]:
        """Every PPO and policy keyword this model was built with, in ``ppo.yml``'s form (a run's ``config.yml``).

        SB3's defaults fill what was not given; values from a zoo entry appear as its file writes
        them (schedules as mappings); activation functions by their ``ppo.yml`` name.
        """
        settings = sb3_default_settings() | getattr(self, "_settings", {}) | self.hyperparams
        settings.update(
            reward_scale=self.reward_scale, normalize_reward=self.normalize_reward,
            recompute_advantage=getattr(self, "recompute_advantage", False), train_backend=self.train_backend,
            overlap_update=getattr(self, "overlap_update", False),
        )  # fmt: skip
        settings["policy_kwargs"] = policy_keywords(self.policy)
        return settings

    # -- rollouts -------------------------------------------------------------------------------

    def collect_rollouts(
        self, env: VecEnv, callback: BaseCallback, rollout_buffer: RolloutBuffer, n_rollout_steps: int
    ) -> bool:
        """SB3's ``collect_rollouts``, with the policy's actions from :func:`~roboppo.ppo.rollout.policy_actions`,
        every step checked for NaN and inf, one batched value call for time-limit bootstraps and rewards
        multiplied by ``reward_scale`` (:meth:`_learning_rewards`).

        Callbacks see SB3's ``locals`` (NumPy ``dones``, ``infos``, ``rewards`` as the env returned them,
        ``actions`` as stored, ``clipped_actions`` as sent to the env). NumPy's BLAS runs on one thread
        meanwhile (:func:`~roboppo.ppo.sampler.one_blas_thread`).
        """
        with one_blas_thread():
            return self._collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)

    def _collect_rollouts(
        self, env: VecEnv, callback: BaseCallback, rollout_buffer: RolloutBuffer, n_rollout_steps: int
    ) -> bool:
        assert self._last_obs is not None, "No previous observation was provided"
        self._resume_sampling()
        self.policy.set_training_mode(False)
        n_steps = 0
        rollout_buffer.reset()
        if self.use_sde:
            self.policy.reset_noise(env.num_envs)
        callback.on_rollout_start()
        choice = sampler_choice(self.policy)  # after on_rollout_start: a callback may change the policy
        self._path_ran("sampler", choice)
        sampler = None if choice.graph is None else RolloutSampler(choice.graph)
        pre_tanh = choice.path != "sb3"
        while n_steps < n_rollout_steps:
            if self.use_sde and self.sde_sample_freq > 0 and n_steps % self.sde_sample_freq == 0:
                self.policy.reset_noise(env.num_envs)
            with th.no_grad():
                obs_tensor = obs_as_tensor(self._last_obs, self.device)  # type: ignore[arg-type]
                actions, clipped_actions, values, log_probs = policy_actions(self.policy, obs_tensor, pre_tanh, sampler)
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
            rollout_buffer.add(
                self._last_obs,  # type: ignore[arg-type]
                actions,
                learning_rewards,
                self._last_episode_starts,  # type: ignore[arg-type]
                values,
                log_probs,
            )
            self._last_obs = new_obs  # type: ignore[assignment]
            self._last_episode_starts = dones
        with th.no_grad():
            values = self.policy.predict_values(obs_as_tensor(new_obs, self.device))  # type: ignore[arg-type]
        rollout_buffer.compute_returns_and_advantage(last_values=values, dones=dones)
        if sampler is not None and sampler.refusal is not None:  # the policy changed during the rollout
            self._path_ran("sampler", Choice("torch", reason=sampler.refusal))
        if self.return_rms is not None:
            self.logger.record("rollout/return_std", float(np.sqrt(self.return_rms.var)))
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    def _learning_rewards(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """The rewards PPO learns from: with ``normalize_reward``, divided by the running standard deviation
        of the discounted return and clipped to +-10 (SB3's ``VecNormalize``); then times ``reward_scale``."""
        if self.return_rms is None:
            return self.reward_scale * rewards
        if self._discounted_returns is None or self._discounted_returns.shape != rewards.shape:
            self._discounted_returns = np.zeros(rewards.shape)
        self._discounted_returns = self._discounted_returns * self.gamma + rewards
        self.return_rms.update(self._discounted_returns)
        self._discounted_returns[dones] = 0.0
        normalized = np.clip(rewards / np.sqrt(self.return_rms.var + 1e-8), -10.0, 10.0)
        return self.reward_scale * normalized.astype(np.float32)  # float32, as VecNormalize returns them

    # -- training -------------------------------------------------------------------------------

    def train(self) -> None:
        """PPO epochs on the current rollout, then one update of the observation statistics.

        roboppo's policy on its pre-tanh path trains through :mod:`~roboppo.ppo.jax_train` or
        :mod:`~roboppo.ppo.torch_train` (see ``train_backend``); any other policy through SB3's ``train``.
        With roboppo's policy and a learning rate of 0 (an entry's decaying schedule past its budget)
        nothing changes: no gradient step could move the weights, so the statistics stay the ones they
        were trained with. Any other policy trains as SB3 trains it, at whatever rate.
        """
        self._finish_pending()
        frozen = self.lr_schedule(self._current_progress_remaining) == 0.0
        if frozen and isinstance(self.policy, TanhGaussianPolicy) and not isinstance(self.learning_rate, KLAdaptiveLR):
            self.logger.record("train/learning_rate", 0.0)
            return
        backend = getattr(self, "train_backend", "auto")  # models saved before the option train as "auto"
        choice = update_choice(self.policy, backend)
        self._path_ran("update", choice)
        if getattr(self, "overlap_update", False):
            if choice.path == "jax":
                self._start_pending(choice)
                return
            self._overlap_refused(choice)
        if choice.path == "sb3":
            self._refuse_recompute(choice)
            super().train()
        else:
            self._train_pre_tanh(choice)
        trained = self._normalizer_states()
        self._update_obs_normalizer()
        self._trained_statistics = trained if trained else None
        self._adapt_learning_rate()

    def _refuse_recompute(self, choice: Choice) -> None:
        """``recompute_advantage`` with a policy SB3's ``train`` updates: a ``ValueError`` naming why."""
        if choice.path == "sb3" and getattr(self, "recompute_advantage", False):
            raise ValueError(
                "recompute_advantage=True needs roboppo's JAX or PyTorch update, but SB3's train (advantages "
                f"once per rollout) updates this policy: {choice.reason}. Use recompute_advantage=False."
            )

    def _revaluation(self) -> Revaluation | None:
        """What recomputing this rollout's advantages needs (``recompute_advantage``), or None."""
        if not getattr(self, "recompute_advantage", False):
            return None
        assert self._last_obs is not None and self._last_episode_starts is not None
        last_obs = obs_as_tensor(self._last_obs, self.device)  # type: ignore[arg-type]
        return Revaluation(self.rollout_buffer, last_obs, np.array(self._last_episode_starts))  # type: ignore[arg-type]

    def _adapt_learning_rate(self) -> None:
        if isinstance(self.learning_rate, KLAdaptiveLR):
            self.learning_rate.update(float(self.logger.name_to_value["train/approx_kl"]))

    def _start_pending(self, choice: Choice) -> None:
        """``overlap_update``: hand this rollout's update to JAX and fold its observations in; the next rollout
        samples with the weights as they are while the update runs (:meth:`_finish_pending` writes it)."""
        assert choice.graph is not None
        _, settings, batch = self._update_inputs()
        pending = jax_train.start(choice.graph, batch, settings, background=True, revaluation=self._revaluation())
        pending.statistics = self._normalizer_states()
        pending.explained_variance = self._explained_variance()
        self._pending = pending
        self._trained_statistics = None  # the trained pair is the pending update's
        self._update_obs_normalizer()

    def _finish_pending(self) -> None:
        """Write the pending update (if any) into the policy and log it, as :meth:`_train_pre_tanh` does."""
        pending = getattr(self, "_pending", None)
        if pending is None:
            return
        self._pending = None
        stats = pending.apply(self._pending_parameters(), self.policy.optimizer)
        self._trained_statistics = pending.statistics or None
        self._count_update(stats)
        self._record_update(stats, pending.settings, pending.explained_variance)
        self._adapt_learning_rate()

    def _update_inputs(self) -> tuple[TanhGaussianPolicy, UpdateSettings, RolloutBatch]:
        """Training mode and this rollout's learning rate set: the policy, the update's settings, the rollout."""
        policy = self.policy
        assert isinstance(policy, TanhGaussianPolicy)
        policy.set_training_mode(True)
        self._update_learning_rate(policy.optimizer)
        return policy, self._update_settings(policy), flat_batch(self.rollout_buffer, self.device)

    def _train_pre_tanh(self, choice: Choice) -> None:
        policy, settings, batch = self._update_inputs()
        revaluation = self._revaluation()
        if choice.graph is not None:
            stats = jax_train.train(choice.graph, batch, settings, revaluation)
        else:
            stats = torch_train.train(policy, batch, settings, revaluation)
        self._count_update(stats)
        self._record_update(stats, settings, self._explained_variance())

    def _count_update(self, stats: UpdateStats) -> None:
        self._n_updates += stats.epochs
        if stats.stop_kl is not None and self.verbose >= 1:
            print(f"Early stopping at step {stats.epochs - 1} due to reaching max kl: {stats.stop_kl:.2f}")

    def _update_settings(self, policy: TanhGaussianPolicy) -> UpdateSettings:
        progress = self._current_progress_remaining
        return UpdateSettings(
            n_epochs=self.n_epochs,
            batch_size=self.batch_size,
            learning_rate=float(policy.optimizer.param_groups[0]["lr"]),
            clip_range=float(self.clip_range(progress)),  # type: ignore[operator]
            clip_range_vf=None if self.clip_range_vf is None else float(self.clip_range_vf(progress)),  # type: ignore[operator]
            ent_coef=float(self.ent_coef),
            vf_coef=float(self.vf_coef),
            max_grad_norm=float(self.max_grad_norm),
            target_kl=None if self.target_kl is None else float(self.target_kl),
            normalize_advantage=self.normalize_advantage,
        )

    def _overlap_refused(self, choice: Choice) -> None:
        """Warn once that ``overlap_update`` was asked for and the update runs after each rollout, and why."""
        if ("overlap", choice.path) not in self._paths_said:
            self._paths_said.add(("overlap", choice.path))
            warnings.warn(
                f"overlap_update=True needs the compiled JAX update; {PATH_NAMES['update', choice.path]} "
                f"({choice.reason}), so this model trains after each rollout.",
                stacklevel=6,  # the caller of learn()
            )

    def _path_ran(self, part: str, choice: Choice) -> None:
        """Record which ``part`` (sampler, update) ran; say once, at ``verbose >= 1``, why a fast path stepped aside."""
        ran = self.paths_run.setdefault(part, [])
        if choice.path not in ran:
            ran.append(choice.path)
        if choice.reason is None or choice.reason == "train_backend='torch'" or self.verbose < 1:
            return
        if (part, choice.reason) not in self._paths_said:
            self._paths_said.add((part, choice.reason))
            print(f"roboppo: {PATH_NAMES[part, choice.path]}: {choice.reason}.")

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_paths_said"]  # which reasons this session printed

    def planned_paths(self) -> dict[str, str]:
        """Which sampler and update the policy gets now, with the reason a fast path steps aside (``config.yml``)."""
        plan: dict[str, str] = {}
        for part, choice in (
            ("sampler", sampler_choice(self.policy)),
            ("update", update_choice(self.policy, getattr(self, "train_backend", "auto"))),
        ):
            plan[part] = choice.path
            if choice.reason is not None:
                plan[f"{part}_reason"] = choice.reason
        return plan

    def _explained_variance(self) -> float:
        buffer = self.rollout_buffer
        return float(explained_variance(buffer.values.flatten(), buffer.returns.flatten()))

    def _record_update(self, stats: UpdateStats, settings: UpdateSettings, explained: float) -> None:
        """SB3's ``train/*`` log keys; ``explained``: the explained variance of the rollout trained on."""
        for key in ("entropy_loss", "policy_gradient_loss", "value_loss", "approx_kl", "clip_fraction", "loss"):
            self.logger.record(f"train/{key}", getattr(stats, key))
        self.logger.record("train/explained_variance", explained)
        self.logger.record("train/std", th.exp(self.policy.log_std).mean().item())
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", settings.clip_range)
        if settings.clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", settings.clip_range_vf)

    def _update_obs_normalizer(self) -> None:
        if not isinstance(self.policy, TanhGaussianPolicy) or isinstance(self.rollout_buffer.observations, dict):
            return
        self.policy.update_obs_normalizer(self.rollout_buffer.observations)
        normalizers = [n for n in self.policy.observation_normalizers() if n.has_statistics]
        if not normalizers:
            return
        stats = normalizers[0].obs_rms
        self.logger.record("obs_norm/count", stats.count.item())
        self.logger.record("obs_norm/mean_abs", stats.mean.abs().mean().item())
        self.logger.record("obs_norm/std_mean", th.sqrt(stats.var).mean().item())
        self.logger.record("obs_norm/std_min", th.sqrt(stats.var).min().item())

    # -- files ----------------------------------------------------------------------------------

    def save(
        self,
        path: str | pathlib.Path | io.BufferedIOBase,
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
    ) -> None:
        """Save the model (weights, optimizer and observation statistics) as one zip.

        The file pairs the weights with the statistics they were trained with (:meth:`trained_pair`),
        and keeps the newer statistics the next rollout samples with, so training resumes as it would have gone on.

        A path gets ``.zip`` appended when it has no suffix. The file is written next to its
        target and renamed into place, so an interrupted save never leaves a half-written model.
        File objects are written as SB3 writes them.
        """
        with self.trained_pair(), without_dynamo_import():
            if not isinstance(path, (str, pathlib.Path)):
                super().save(path, exclude, include)
                return
            target = pathlib.Path(path)
            if target.suffix == "":
                target = target.with_suffix(".zip")
            with atomic_target(target) as partial:
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
        """SB3's ``load``; a path that is missing or not a model zip raises a clear error first.

        Errors about the model and ``env`` (for example "Observation spaces do not match") are SB3's.

        :raises FileNotFoundError: neither ``path`` nor ``path + ".zip"`` exists.
        :raises ModelLoadError: the file exists but is not a complete model zip.
        """
        if isinstance(path, (str, pathlib.Path)):
            path = _resolve_model_path(path)
            _check_model_zip(path)
        custom_objects = {**_retired_objects(path), **(custom_objects or {})}
        # a model whose policy read a Dict env flattened saved the flat space; one of SB3's policies, the Dict
        flatten = env is None or not isinstance(_saved_observation_space(path), spaces.Dict)
        with _flattening(flatten), without_dynamo_import():
            return super().load(path, env, device, custom_objects, print_system_info, force_reset, **kwargs)


#: whether _wrap_env flattens a Dict of vectors: for roboppo's policy (the default), not for SB3's
_FLATTEN_DICTS: contextvars.ContextVar[bool] = contextvars.ContextVar("roboppo_flatten_dicts", default=True)


@contextlib.contextmanager
def _flattening(flatten: bool) -> Iterator[None]:
    token = _FLATTEN_DICTS.set(flatten)
    try:
        yield
    finally:
        _FLATTEN_DICTS.reset(token)


def _saved_observation_space(path: pathlib.Path | io.BufferedIOBase) -> Any:
    """The observation space a model zip was saved with (nothing else of it deserialized)."""
    position = path.tell() if isinstance(path, io.IOBase) else None
    try:
        with zipfile.ZipFile(path) as archive:
            text = archive.read("data").decode()
    finally:
        if position is not None:
            path.seek(position)  # type: ignore[union-attr]
    skipped = {key: None for key in json.loads(text) if key != "observation_space"}
    return json_to_data(text, skipped).get("observation_space")


def _resolve_model_path(path: str | pathlib.Path) -> pathlib.Path:
    candidate = pathlib.Path(path)
    if candidate.is_file():
        return candidate
    with_suffix = candidate.with_name(candidate.name + ".zip")
    if with_suffix.is_file():
        return with_suffix
    raise FileNotFoundError(f"model file not found: {candidate} (also tried {with_suffix}).")


# classes that models saved by earlier roboppo versions name, and what replaces them on load
RETIRED = {"rollout_buffer_class": ("roboppo.ppo.device_rollout", None)}


def _retired_objects(source: pathlib.Path | io.BufferedIOBase) -> dict[str, Any]:
    """``custom_objects`` that replace the saved objects this version no longer has (SB3 then picks its own)."""
    start = source.tell() if not isinstance(source, pathlib.Path) else 0
    try:
        with zipfile.ZipFile(source) as archive:
            data = json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, ValueError):
        return {}  # SB3's load reports what is wrong with the file
    finally:
        if not isinstance(source, pathlib.Path):
            source.seek(start)
    replacements: dict[str, Any] = {}
    for key, (module, replacement) in RETIRED.items():
        saved = data.get(key)
        if isinstance(saved, dict) and saved.get("__module__") == module:
            replacements[key] = replacement
    return replacements


def _check_model_zip(path: pathlib.Path) -> None:
    """Raise :class:`ModelLoadError` unless ``path`` is an intact zip with SB3's ``data`` and ``policy.pth``."""
    problem = None
    try:
        with zipfile.ZipFile(path) as archive:
            missing = {"data", "policy.pth"} - set(archive.namelist())
            corrupt = archive.testzip()
        if missing:
            problem = f"it has no {', '.join(sorted(missing))}"
        elif corrupt is not None:
            problem = f"its member {corrupt} is corrupt"
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        problem = f"{type(error).__name__}: {error}"
    if problem is not None:
        raise ModelLoadError(
            f"cannot load a model from {path}: {problem}. "
            "The file is not a complete model zip written by model.save(); re-save or re-train it."
        )


# what each path is, in the line that says a fast path stepped aside
PATH_NAMES = {
    ("sampler", "torch"): "rollouts run the policy's torch code (rollout_actions), not the NumPy sampler",
    ("sampler", "sb3"): "rollouts run the policy's forward, as SB3's PPO does",
    ("update", "torch"): "the update runs in PyTorch (roboppo.ppo.torch_train), not the compiled JAX update",
    ("update", "sb3"): "the update is SB3's PPO.train",
}

# the keywords of SB3's PPO that are settings (written to config.yml); policy keywords come from the policy itself
_SETTINGS = set(_SB3_SIGNATURE.parameters) - NOT_SETTINGS - {"policy_kwargs", "_init_setup_model"}
_POLICY_INTERNALS = {"observation_space", "action_space", "lr_schedule", "use_sde", "squash_output", "full_std"}


def sb3_default_settings() -> dict[str, Any]:
    """SB3 PPO's default for each of its settings, in ``ppo.yml``'s form."""
    return {name: _yaml_value(p.default) for name, p in _SB3_SIGNATURE.parameters.items() if name in _SETTINGS}


def policy_keywords(policy: BasePolicy) -> dict[str, Any]:
    """The policy's constructor keywords in ``ppo.yml``'s form (spaces and the schedule left out)."""
    keywords = policy._get_constructor_parameters()
    return {name: _yaml_value(value) for name, value in keywords.items() if name not in _POLICY_INTERNALS}


def with_observation_layout(policy_kwargs: dict[str, Any] | None, space: Any) -> dict[str, Any] | None:
    """``policy_kwargs`` with ``observation_layout`` (``{key: (start, stop)}`` in the flattened ``Dict`` ``space``)
    where they choose keys (``actor_keys``, ``critic_keys``); unchanged otherwise."""
    if not policy_kwargs or not {"actor_keys", "critic_keys"} & set(policy_kwargs):
        return policy_kwargs
    layout, start = {}, 0
    for key, sub in space.spaces.items():
        layout[key] = (start, start + int(np.prod(sub.shape)))
        start = layout[key][1]
    return {**policy_kwargs, "observation_layout": layout}


def _yaml_value(value: Any) -> Any:
    """``value`` as YAML holds it: activation classes by their ``ppo.yml`` name, other classes by qualified name."""
    if isinstance(value, type):
        names = {cls: name for name, cls in ACTIVATIONS.items()}
        return names.get(value, f"{value.__module__}.{value.__qualname__}")
    if isinstance(value, dict):
        return {key: _yaml_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_yaml_value(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)
