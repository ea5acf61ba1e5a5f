"""roboppo's ``MlpPolicy``: SB3's actor-critic with tanh-squashed Box actions and in-policy normalization."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.preprocessing import preprocess_obs
from stable_baselines3.common.torch_layers import MlpExtractor
from stable_baselines3.common.type_aliases import Schedule

from roboppo.common.distributions import HALF_LOG_2PI, TanhNormalDistribution, tanh_log_det_jacobian
from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.common.optimizers import without_dynamo_import

# The methods through which SB3 code samples and scores actions. A subclass that overrides one of
# them keeps SB3's contract (env-space actions) everywhere, and PPO trains it through that contract.
SB3_CONTRACT = ("forward", "evaluate_actions", "get_distribution", "_get_action_dist_from_latent", "extract_features")


class TanhGaussianPolicy(ActorCriticPolicy):
    """SB3's ``ActorCriticPolicy`` whose Box actions are ``tanh`` of a diagonal Gaussian, rescaled to the Box.

    What differs from Stable-Baselines3's ``MlpPolicy``:

    - Box actions with finite bounds come from a :class:`~roboppo.common.distributions.TanhNormalDistribution`:
      always inside the Box, never clipped. ``forward``, ``predict``, ``get_distribution`` and
      ``evaluate_actions`` speak env-space actions, as SB3's contract says. PPO itself samples and
      scores pre-tanh actions through :meth:`rollout_actions` and :meth:`evaluate_pre_tanh`, so its
      log-probabilities are exact. Other action spaces (``Discrete``, ``MultiDiscrete``,
      ``MultiBinary``, unbounded Box) use SB3's distributions unchanged.
    - Observations are normalized by running statistics stored as buffers in the policy
      (:class:`~roboppo.common.normalization.NormalizedFlattenExtractor`); PPO updates them once
      per rollout and they are saved inside the model zip.
    - Adam (SB3's ``eps=1e-5``) runs fused where the installed torch has the CPU kernel
      (:func:`fused_adam_available`): one kernel per step instead of a dozen per parameter.

    :param observation_space: any observation space SB3's ``MlpPolicy`` takes (not ``Dict``).
    :param action_space: any action space SB3's PPO takes.
    :param lr_schedule: learning-rate schedule.
    :param normalize_obs: normalize Box observations with running statistics.
    :param obs_clip: clip normalized observations to ``[-obs_clip, obs_clip]``.
    :param actor_keys: an asymmetric actor-critic: the keys of a ``Dict`` observation the actor reads (the
        policy, as deployed: ``("state",)``); the value function reads ``critic_keys``
        (``("privileged_state",)``). Each has its own normalizer and network input. roboppo's PPO fills
        ``observation_layout`` for a Dict env; by default both read every key.
    :param critic_keys: the keys the value function reads (see ``actor_keys``).
    :param observation_layout: ``{key: (start, stop)}``, where each key lies in the flattened observation.
    :param kwargs: every other keyword of SB3's ``ActorCriticPolicy`` (``net_arch``,
        ``activation_fn``, ``log_std_init``, ``ortho_init``, ...). ``use_sde=True`` (bounded Box
        actions): SB3's state-dependent exploration squashed by tanh (``squash_output=True``, as SB3's
        SAC), actions rescaled from ``[-1, 1]`` to the Box; sampled and scored through SB3's methods.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Schedule,
        normalize_obs: bool = True,
        obs_clip: float = 10.0,
        actor_keys: list[str] | tuple[str, ...] | None = None,
        critic_keys: list[str] | tuple[str, ...] | None = None,
        observation_layout: dict[str, tuple[int, int]] | None = None,
        **kwargs: Any,
    ) -> None:
        self.actor_keys, self.critic_keys = _keys(actor_keys), _keys(critic_keys)
        self.observation_layout = None if observation_layout is None else dict(observation_layout)
        self.actor_columns, self.critic_columns = self._split_columns(observation_space)
        if self.actor_columns is not None:
            kwargs["share_features_extractor"] = False  # two extractors: one per network, each on its columns
        self.squashes_to_box = _bounded_box(action_space)
        if kwargs.get("use_sde") and self.squashes_to_box:
            kwargs["squash_output"] = True  # gSDE's noise, then tanh (SB3's TanhBijector), then the Box
        if isinstance(action_space, spaces.Box) and not self.squashes_to_box:
            warnings.warn(
                f"the action space {action_space} has infinite bounds, so roboppo's MlpPolicy cannot squash "
                "actions into it with tanh; it uses SB3's Gaussian (actions clipped to the Box) instead.",
                stacklevel=2,
            )
        kwargs.setdefault("features_extractor_class", NormalizedFlattenExtractor)
        if self.actor_columns is not None and kwargs["features_extractor_class"] is not NormalizedFlattenExtractor:
            raise ValueError(
                "actor_keys and critic_keys need roboppo's own features extractor, not a features_extractor_class."
            )
        if kwargs.get("optimizer_class", th.optim.Adam) is th.optim.Adam and kwargs.get("optimizer_kwargs") is None:
            kwargs["optimizer_kwargs"] = {"eps": 1e-5}  # SB3's eps
            if fused_adam_available():
                kwargs["optimizer_kwargs"]["fused"] = True  # one kernel per step instead of a dozen per parameter
        extractor_kwargs = dict(kwargs.pop("features_extractor_kwargs", None) or {})
        if kwargs["features_extractor_class"] is NormalizedFlattenExtractor:
            extractor_kwargs.update(clip=obs_clip, normalize=normalize_obs)
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_kwargs=extractor_kwargs, **kwargs
        )
        self.normalize_obs = normalize_obs
        self.obs_clip = obs_clip

    def _split_columns(self, space: spaces.Space) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
        """The actor's and the critic's columns of the flat observation, or (None, None) when both read all."""
        if self.actor_keys is None and self.critic_keys is None:
            return None, None
        layout = self.observation_layout
        if layout is None or not isinstance(space, spaces.Box):
            raise ValueError(
                "actor_keys and critic_keys choose keys of a Dict observation space; this policy observes "
                f"{space} without an observation_layout (roboppo's PPO fills it for an env with Dict observations)."
            )
        columns = []
        for role, keys in (("actor_keys", self.actor_keys), ("critic_keys", self.critic_keys)):
            chosen = keys or tuple(layout)
            unknown = [key for key in chosen if key not in layout]
            if unknown:
                raise ValueError(f"{role} {unknown} are not keys of the observation; its keys are {list(layout)}.")
            columns.append(tuple(i for key in chosen for i in range(*layout[key])))
        return columns[0], columns[1]

    def _build(self, lr_schedule: Schedule) -> None:
        if self.actor_columns is not None:  # the asymmetric actor-critic's extractors, before the networks
            extractor = self.features_extractor_kwargs
            self.pi_features_extractor = NormalizedFlattenExtractor(
                self.observation_space, columns=self.actor_columns, **extractor
            )
            self.vf_features_extractor = NormalizedFlattenExtractor(
                self.observation_space, columns=self.critic_columns, **extractor
            )
            self.features_extractor = self.pi_features_extractor
            self.features_dim = self.pi_features_extractor.features_dim
        if self.squashes_to_box and not self.use_sde:
            assert isinstance(self.action_space, spaces.Box)
            box = self.action_space
            self.action_dist = TanhNormalDistribution(int(np.prod(box.shape)), box.low, box.high)
        super()._build(lr_schedule)

    def _build_mlp_extractor(self) -> None:
        """SB3's networks; with critic columns of another width, the value network takes that width."""
        super()._build_mlp_extractor()
        critic = self.vf_features_extractor
        if self.actor_columns is None or critic.features_dim == self.features_dim:
            return
        values = MlpExtractor(critic.features_dim, self.net_arch, self.activation_fn, device=self.device)
        self.mlp_extractor.value_net = values.value_net
        self.mlp_extractor.latent_dim_vf = values.latent_dim_vf

    def uses_pre_tanh_path(self) -> bool:
        """Whether PPO may sample and score pre-tanh actions (:meth:`rollout_actions`, :meth:`evaluate_pre_tanh`).

        True for tanh-squashed Box actions unless a subclass overrides one of SB3's sampling or
        scoring methods (``SB3_CONTRACT``); then PPO goes through those methods, in env space.
        :func:`roboppo.ppo.fast_paths.sampler_choice` and ``update_choice`` decide on it.
        """
        if type(self.action_dist) is not TanhNormalDistribution:
            return False
        return all(getattr(type(self), name) is getattr(TanhGaussianPolicy, name) for name in SB3_CONTRACT)

    def rollout_actions(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor, th.Tensor]:
        """One rollout step: what ``forward(obs)`` samples, with less work per call and the pre-tanh action kept.

        Samples ``u = mean + std * noise`` directly instead of building SB3's distribution objects.

        :param obs: observations ``[batch, *obs_shape]`` as a tensor.
        :return: pre-tanh actions ``[batch, action_dim]``, env-space actions ``[batch, *action_shape]``,
            values ``[batch, 1]``, pre-tanh log-probabilities ``[batch]``.
        """
        assert isinstance(self.action_dist, TanhNormalDistribution), "only for tanh-squashed Box actions"
        pi_features, vf_features = self.actor_critic_features(obs)
        mean = self.action_net(self.mlp_extractor.forward_actor(pi_features))
        values = self.value_net(self.mlp_extractor.forward_critic(vf_features))
        noise = th.randn_like(mean)
        actions = mean + self.log_std.exp() * noise
        gaussian = (-0.5 * noise.square() - self.log_std - HALF_LOG_2PI).sum(dim=-1)
        log_probs = gaussian - tanh_log_det_jacobian(actions).sum(dim=-1)
        env_actions = self.action_dist.to_env(actions).reshape(-1, *self.action_space.shape)  # type: ignore[misc]
        return actions, env_actions, values, log_probs

    def evaluate_pre_tanh(
        self, obs: th.Tensor, pre_tanh: th.Tensor, entropy_noise: th.Tensor | None = None
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """``evaluate_actions`` for pre-tanh actions: values ``[batch, 1]``, exact log-probs and entropy ``[batch]``.

        :param entropy_noise: the standard normal draws of the entropy estimate (drawn here when None).
        """
        pi_features, vf_features = self.actor_critic_features(obs)
        latent_pi = self.mlp_extractor.forward_actor(pi_features)
        latent_vf = self.mlp_extractor.forward_critic(vf_features)
        distribution = self._get_action_dist_from_latent(latent_pi)
        assert isinstance(distribution, TanhNormalDistribution)
        entropy = distribution.pre_tanh_entropy(entropy_noise)
        return self.value_net(latent_vf), distribution.pre_tanh_log_prob(pre_tanh), entropy

    def actor_critic_features(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """The actor's and the critic's features of ``obs`` (the same tensor when they share an extractor)."""
        features = self.extract_features(obs)
        if isinstance(features, tuple):
            return features
        return features, features

    def observation_normalizers(self) -> list[NormalizedFlattenExtractor]:
        """The distinct normalizing extractors of this policy (two when actor and critic do not share one)."""
        extractors = {id(m): m for m in (self.pi_features_extractor, self.vf_features_extractor)}
        return [m for m in extractors.values() if isinstance(m, NormalizedFlattenExtractor)]

    def update_obs_normalizer(self, observations: th.Tensor | np.ndarray) -> None:
        """Fold raw observations ``[..., *obs_shape]`` (as the env returns them) into the running statistics."""
        normalizers = self.observation_normalizers()
        if not normalizers or not isinstance(self.observation_space, spaces.Box):
            return
        batch = th.as_tensor(observations, device=self.device).reshape(-1, *self.observation_space.shape)
        preprocessed = preprocess_obs(batch, self.observation_space, normalize_images=self.normalize_images)
        assert isinstance(preprocessed, th.Tensor)
        for normalizer in normalizers:
            normalizer.update(preprocessed)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(normalize_obs=self.normalize_obs, obs_clip=self.obs_clip)
        if self.actor_columns is not None:
            data.update(
                actor_keys=self.actor_keys, critic_keys=self.critic_keys, observation_layout=self.observation_layout
            )
        return data


@functools.cache
def fused_adam_available() -> bool:
    """Whether this torch runs Adam's fused kernel on the CPU (torch 2.4 and later); earlier ones refuse it."""
    try:
        with without_dynamo_import():
            th.optim.Adam([th.zeros(1, requires_grad=True)], fused=True)  # torch 2.3 refuses CPU tensors here
    except (RuntimeError, TypeError, ValueError):
        return False
    return True


def _keys(keys: list[str] | tuple[str, ...] | str | None) -> tuple[str, ...] | None:
    if keys is None:
        return None
    return (keys,) if isinstance(keys, str) else tuple(keys)


def _bounded_box(space: spaces.Space) -> bool:
    return isinstance(space, spaces.Box) and bool(np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)))
