"""roboppo's ``MlpPolicy``: a tanh-squashed Gaussian actor-critic with in-policy observation normalization."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import Schedule

from roboppo.common.distributions import HALF_LOG_2PI, TanhNormalDistribution, tanh_log_det_jacobian
from roboppo.common.normalization import NormalizedFlattenExtractor


class TanhGaussianPolicy(ActorCriticPolicy):
    """Actor-critic MLP whose actions are ``tanh`` of a diagonal Gaussian, rescaled to the Box.

    Differences from Stable-Baselines3's ``MlpPolicy``:

    - ``forward`` and ``_predict`` return **pre-tanh** actions ``u``; the rollout buffer
      stores them and ``evaluate_actions`` scores them, so log-probabilities are exact for
      what was sampled. :meth:`unscale_action` maps ``u`` to ``low + (tanh(u) + 1) / 2 * (high - low)``;
      SB3 calls it for every action sent to an env (rollouts, ``predict``, evaluation).
    - Deterministic actions are the squashed mean, ``tanh(mean)``.
    - Adam (SB3's ``eps=1e-5``) runs fused: one kernel per step instead of a dozen per parameter.
    - Observations are normalized by running statistics stored as buffers in the policy
      (see :class:`~roboppo.common.normalization.NormalizedFlattenExtractor`); they are
      updated by PPO once per rollout and saved inside the model zip.

    :param observation_space: flat Box observations.
    :param action_space: Box actions with finite bounds.
    :param lr_schedule: learning-rate schedule.
    :param normalize_obs: normalize observations with running statistics.
    :param obs_clip: clip normalized observations to ``[-obs_clip, obs_clip]``.
    :param kwargs: every other keyword of SB3's ``ActorCriticPolicy`` (``net_arch``,
        ``activation_fn``, ``log_std_init``, ``ortho_init``, ...).
    """

    _box_low: th.Tensor
    _box_half_range: th.Tensor

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Schedule,
        normalize_obs: bool = True,
        obs_clip: float = 10.0,
        **kwargs: Any,
    ) -> None:
        if not isinstance(action_space, spaces.Box):
            raise ValueError(
                f"roboppo's tanh-Gaussian policy needs a continuous Box action space, got {action_space}. "
                "Use stable_baselines3.PPO for discrete actions."
            )
        if not np.all(np.isfinite(action_space.low)) or not np.all(np.isfinite(action_space.high)):
            raise ValueError(
                f"the action space {action_space} needs finite low and high bounds to rescale tanh actions."
            )
        if kwargs.get("use_sde"):
            raise ValueError("roboppo's tanh-Gaussian policy does not support use_sde=True.")
        kwargs.setdefault("features_extractor_class", NormalizedFlattenExtractor)
        if kwargs.get("optimizer_class", th.optim.Adam) is th.optim.Adam and kwargs.get("optimizer_kwargs") is None:
            kwargs["optimizer_kwargs"] = {"eps": 1e-5, "fused": True}  # SB3's eps; one fused kernel per step
        extractor_kwargs = dict(kwargs.pop("features_extractor_kwargs", None) or {})
        if kwargs["features_extractor_class"] is NormalizedFlattenExtractor:
            extractor_kwargs.update(clip=obs_clip, normalize=normalize_obs)
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_kwargs=extractor_kwargs, **kwargs
        )
        self.normalize_obs = normalize_obs
        self.obs_clip = obs_clip

    @property
    def squash_output(self) -> bool:
        """Always True: SB3 then routes every action through :meth:`unscale_action`."""
        return True

    def _build(self, lr_schedule: Schedule) -> None:
        assert isinstance(self.action_space, spaces.Box)
        self.action_dist = TanhNormalDistribution(int(np.prod(self.action_space.shape)))
        low, high = (th.as_tensor(bound, dtype=th.float32) for bound in (self.action_space.low, self.action_space.high))
        self.register_buffer("_box_low", low, persistent=False)  # for squash_to_box; not saved
        self.register_buffer("_box_half_range", 0.5 * (high - low), persistent=False)
        super()._build(lr_schedule)

    def unscale_action(self, scaled_action: np.ndarray) -> np.ndarray:
        """Map pre-tanh actions ``u`` ``[batch, action_dim]`` into the Box.

        ``a = low + (tanh(u) + 1) / 2 * (high - low)``
        """
        assert isinstance(self.action_space, spaces.Box)
        low, high = self.action_space.low, self.action_space.high
        squashed = np.tanh(scaled_action)
        return (low + 0.5 * (squashed + 1.0) * (high - low)).astype(self.action_space.dtype)

    def squash_to_box(self, pre_tanh: th.Tensor) -> th.Tensor:
        """Torch twin of :meth:`unscale_action` for rollouts that stay on the device, ``[batch, action_dim]``."""
        low, half_range = self._box_low, self._box_half_range
        if low.device != pre_tanh.device:
            low, half_range = low.to(pre_tanh.device), half_range.to(pre_tanh.device)
        return low + (th.tanh(pre_tanh) + 1.0) * half_range

    def forward_rollout(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """What ``forward(obs)`` returns, with less work per call (rollouts call it every vector step).

        Samples ``u = mean + std * noise`` directly instead of building SB3's distribution objects.

        :param obs: raw observations ``[batch, obs_dim]``.
        :return: pre-tanh actions ``[batch, action_dim]``, values ``[batch, 1]``, log-probabilities ``[batch]``.
        """
        pi_features = self.pi_features_extractor(obs)
        vf_features = pi_features if self.share_features_extractor else self.vf_features_extractor(obs)
        mean = self.action_net(self.mlp_extractor.forward_actor(pi_features))
        values = self.value_net(self.mlp_extractor.forward_critic(vf_features))
        noise = th.randn_like(mean)
        actions = mean + self.log_std.exp() * noise
        gaussian = (-0.5 * noise.square() - self.log_std - HALF_LOG_2PI).sum(dim=-1)
        return actions, values, gaussian - tanh_log_det_jacobian(actions).sum(dim=-1)

    def scale_action(self, action: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`unscale_action` for actions strictly inside the Box (pre-tanh result)."""
        assert isinstance(self.action_space, spaces.Box)
        low, high = self.action_space.low, self.action_space.high
        squashed = 2.0 * (np.asarray(action, dtype=np.float64) - low) / (high - low) - 1.0
        return np.arctanh(np.clip(squashed, -1.0 + 1e-6, 1.0 - 1e-6))

    def observation_normalizers(self) -> list[NormalizedFlattenExtractor]:
        """The distinct normalizing extractors of this policy (two when actor and critic do not share one)."""
        extractors = {id(m): m for m in (self.pi_features_extractor, self.vf_features_extractor)}
        return [m for m in extractors.values() if isinstance(m, NormalizedFlattenExtractor)]

    def update_obs_normalizer(self, observations: th.Tensor | np.ndarray) -> None:
        """Fold raw observations ``[..., obs_dim]`` into the running statistics."""
        for normalizer in self.observation_normalizers():
            normalizer.update(observations)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(normalize_obs=self.normalize_obs, obs_clip=self.obs_clip)
        data.pop("squash_output", None)
        data.pop("use_sde", None)
        return data
