"""A trained policy as one file for a robot: raw observation in, env-space action out.

:func:`export_policy` writes a TorchScript or ONNX file of :class:`DeployablePolicy`, the
deterministic path of roboppo's ``MlpPolicy`` with everything a deployment would otherwise
have to re-implement inside it: the running observation statistics (normalize and clip), the
actor network, the action mean, ``tanh`` and the rescaling to the Box bounds. What it returns
equals ``model.predict(obs, deterministic=True)`` (``tests/unit/test_export.py`` checks it to
1e-5 on 1,000 observations with ``torch.jit.load`` and onnxruntime).

The file holds copies of the weights; it needs neither roboppo, SB3 nor Python: libtorch
(C++) loads TorchScript, and ONNX Runtime runs ONNX on most robot computers.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import pathlib
import warnings
from collections.abc import Iterator

import torch as th
from gymnasium import spaces
from torch import nn

from roboppo.common.distributions import TanhNormalDistribution
from roboppo.common.errors import MissingDependencyError, UserInputError
from roboppo.common.files import atomic_target
from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.ppo.policies import TanhGaussianPolicy, has_forward_hooks

FORMATS = ("onnx", "torchscript")


class ExportError(UserInputError, ValueError):
    """A policy or format the exporter does not handle; the message says why."""


class DeployablePolicy(nn.Module):
    """``obs [batch, obs_dim]`` (float32, raw as the env returns it) -> deterministic actions ``[batch, act_dim]``.

    :param policy: roboppo's ``TanhGaussianPolicy`` with Box observations and bounded Box actions.
    """

    obs_mean: th.Tensor
    obs_std: th.Tensor
    low: th.Tensor
    high: th.Tensor
    half_range: th.Tensor

    def __init__(self, policy: nn.Module) -> None:
        super().__init__()
        reason = unsupported(policy)
        if reason is not None:
            raise ExportError(f"cannot export this policy: {reason}.")
        assert isinstance(policy, TanhGaussianPolicy)
        extractor = policy.pi_features_extractor
        assert isinstance(extractor, NormalizedFlattenExtractor)
        statistics = extractor.obs_rms
        self.normalize = bool(extractor.normalize)
        self.clip = float(extractor.clip)
        self.register_buffer("obs_mean", statistics.mean.to(th.float32).clone())
        self.register_buffer("obs_std", th.sqrt(statistics.var + statistics.epsilon).to(th.float32))
        self.actor = copy.deepcopy(policy.mlp_extractor.policy_net).cpu()
        self.mean_head = copy.deepcopy(policy.action_net).cpu()
        distribution = policy.action_dist
        assert isinstance(distribution, TanhNormalDistribution)
        self.register_buffer("low", distribution.low.clone())
        self.register_buffer("high", distribution.high.clone())
        self.register_buffer("half_range", distribution.half_range.clone())
        self.eval()

    def forward(self, obs: th.Tensor) -> th.Tensor:
        x = obs.float()
        if self.normalize:
            x = th.clamp((x - self.obs_mean) / self.obs_std, -self.clip, self.clip)
        mean = self.mean_head(self.actor(x.flatten(start_dim=1)))
        return th.clamp(self.low + (th.tanh(mean) + 1.0) * self.half_range, self.low, self.high)


def unsupported(policy: nn.Module) -> str | None:
    """Why ``policy`` cannot be exported, or None."""
    if not isinstance(policy, TanhGaussianPolicy) or not isinstance(policy.action_dist, TanhNormalDistribution):
        return f"only roboppo's MlpPolicy with bounded Box actions exports, got {type(policy).__name__}"
    space = policy.observation_space
    if not isinstance(space, spaces.Box) or len(space.shape) != 1:
        return f"observations must be a flat Box, got {space}"
    if type(policy.pi_features_extractor) is not NormalizedFlattenExtractor:
        return f"the features extractor is a {type(policy.pi_features_extractor).__name__}"
    if has_forward_hooks(policy):
        return "the policy has forward hooks"
    return None


def export_policy(policy: nn.Module, path: str | os.PathLike[str], fmt: str) -> pathlib.Path:
    """Write ``policy``'s deterministic controller to ``path`` as ``fmt`` (``"onnx"`` or ``"torchscript"``).

    The file is written under a temporary name and renamed into place, so a failed export
    leaves no partial file. Input ``observation`` ``[batch, obs_dim]`` float32, output
    ``action`` ``[batch, act_dim]``; the batch size is free.
    """
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    module = DeployablePolicy(policy)
    example = th.zeros((2, *module.obs_mean.shape), dtype=th.float32)
    with atomic_target(path) as partial:
        if fmt == "torchscript":
            th.jit.save(th.jit.trace(module, example), str(partial))
        else:
            _write_onnx(module, example, partial)
    return pathlib.Path(path)


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Silence what torch's ONNX exporter reports that does not concern a policy: one line per torchvision
    operator it skips when torchvision is absent, and a FutureWarning from inside torch's pytree code."""
    registration = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = registration.level
    registration.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
            yield
    finally:
        registration.setLevel(level)


def _write_onnx(module: DeployablePolicy, example: th.Tensor, path: pathlib.Path) -> None:
    """torch's ``torch.export``-based ONNX exporter, with a free batch dimension."""
    try:
        import onnxscript  # noqa: F401  (torch's exporter needs onnx and onnxscript)
    except ImportError as error:
        raise MissingDependencyError(
            "ONNX export needs the onnx and onnxscript packages: pip install 'roboppo[export]'"
        ) from error
    batch = th.export.Dim("batch", min=1)
    with _quiet_exporter():
        program = th.onnx.export(
            module, (example,), input_names=["observation"], output_names=["action"],
            dynamic_shapes={"obs": {0: batch}}, dynamo=True, verbose=False,
        )  # fmt: skip
    assert program is not None
    program.save(str(path))
