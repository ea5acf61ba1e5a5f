"""Observation normalization that travels inside the policy.

The running statistics are module buffers, so ``model.save()`` writes them into the
model zip with the weights and ``PPO.load()`` restores them: there is no separate
``VecNormalize`` file to lose, and expert demonstrations, generator rollouts and
deployment all see the same normalization.
"""

from __future__ import annotations

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.preprocessing import get_flattened_obs_dim
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor


class RunningMeanStd(th.nn.Module):
    """Running mean and variance over a stream of batches (Chan et al.'s parallel update).

    Statistics are float64 buffers so that millions of updates do not drift.

    :param shape: shape of one sample.
    :param epsilon: added to the variance before the square root.
    """

    mean: th.Tensor
    var: th.Tensor
    count: th.Tensor

    def __init__(self, shape: tuple[int, ...], epsilon: float = 1e-8) -> None:
        super().__init__()
        self.epsilon = epsilon
        self.register_buffer("mean", th.zeros(shape, dtype=th.float64))
        self.register_buffer("var", th.ones(shape, dtype=th.float64))
        self.register_buffer("count", th.zeros((), dtype=th.float64))

    @th.no_grad()
    def update(self, batch: th.Tensor | np.ndarray) -> None:
        """Fold a batch ``[N, *shape]`` (or ``[T, B, *shape]``) into the statistics."""
        x = th.as_tensor(batch, dtype=th.float64, device=self.mean.device).reshape(-1, *self.mean.shape)
        batch_count = x.shape[0]
        if batch_count == 0:
            return
        batch_mean = x.mean(dim=0)
        batch_var = x.var(dim=0, unbiased=False)
        if self.count == 0:
            self.mean.copy_(batch_mean)
            self.var.copy_(batch_var)
            self.count.fill_(batch_count)
            return
        total = self.count + batch_count
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_var * batch_count + delta.square() * self.count * batch_count / total
        self.mean.add_(delta * batch_count / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def normalize(self, x: th.Tensor, clip: float) -> th.Tensor:
        """``clip((x - mean) / sqrt(var + eps), -clip, clip)`` in ``x``'s dtype."""
        mean = self.mean.to(x.dtype)
        std = th.sqrt(self.var + self.epsilon).to(x.dtype)
        return th.clamp((x - mean) / std, -clip, clip)


class NormalizedFlattenExtractor(BaseFeaturesExtractor):
    """Features extractor: normalize Box observations with running statistics, then flatten.

    The statistics have the observation's shape (any Box shape; images are normalized after
    SB3's ``/ 255``). They change only through :meth:`update`, which roboppo's PPO calls once
    per rollout with the collected batch, never inside ``forward``. Other observation spaces
    (``Discrete``, ``MultiDiscrete``, ``MultiBinary``, one-hot encoded by SB3) are flattened
    without normalization.

    :param observation_space: the policy's observation space (not ``Dict``: use ``MultiInputPolicy``).
    :param clip: normalized observations are clipped to ``[-clip, clip]``.
    :param normalize: when False the extractor only flattens (statistics are still kept).
    :param columns: the columns of a flat Box observation this extractor reads (an asymmetric actor-critic's
        actor or critic: one ``Dict`` key or several, flattened); its statistics are theirs. None: all of them.
    """

    columns: th.Tensor | None

    def __init__(
        self,
        observation_space: spaces.Space,
        clip: float = 10.0,
        normalize: bool = True,
        columns: tuple[int, ...] | None = None,
    ) -> None:
        if isinstance(observation_space, spaces.Dict):
            raise ValueError(
                "roboppo's MlpPolicy takes one observation array, got a Dict observation space; "
                'use "MultiInputPolicy" (SB3\'s policy for Dict observations).'
            )
        if columns is not None and not (
            isinstance(observation_space, spaces.Box) and len(observation_space.shape) == 1
        ):
            raise ValueError(f"columns select entries of a flat Box observation, got {observation_space}.")
        width = get_flattened_obs_dim(observation_space) if columns is None else len(columns)
        super().__init__(observation_space, features_dim=width)
        self.clip = clip
        self.normalize = normalize
        self.has_statistics = isinstance(observation_space, spaces.Box)
        shape = observation_space.shape if isinstance(observation_space, spaces.Box) else (self.features_dim,)
        if columns is not None:
            shape = (len(columns),)
            self.register_buffer("columns", th.as_tensor(columns, dtype=th.int64), persistent=False)
        else:
            self.columns = None
        self.obs_rms = RunningMeanStd(tuple(shape))

    def select(self, observations: th.Tensor) -> th.Tensor:
        """The columns this extractor reads (all of them without ``columns``)."""
        return observations if self.columns is None else observations[..., self.columns]

    def forward(self, observations: th.Tensor) -> th.Tensor:
        """``[batch, *obs_shape]`` -> ``[batch, features_dim]``"""
        observations = self.select(observations.float())
        if self.normalize and self.has_statistics:
            observations = self.obs_rms.normalize(observations, self.clip)
        return observations.flatten(start_dim=1)

    def update(self, observations: th.Tensor | np.ndarray) -> None:
        """Fold preprocessed observations ``[..., *obs_shape]`` into the running statistics."""
        if self.has_statistics:
            self.obs_rms.update(self.select(th.as_tensor(observations)))
