"""The torch-tensor step result shared by roboppo's vector envs (``step_torch``)."""

from __future__ import annotations

from typing import NamedTuple

import torch as th


class TorchStep(NamedTuple):
    """One batched step as torch tensors, each ``[num_envs, ...]`` on the env's device.

    ``obs`` holds the next observation of every copy (the first of a new episode where one
    ended); ``final_obs`` the observation the step reached before any reset.
    """

    obs: th.Tensor
    reward: th.Tensor
    terminated: th.Tensor
    truncated: th.Tensor
    final_obs: th.Tensor
