"""A trained policy as one file for a robot: raw observation in, the action ``predict`` would take out.

:func:`export_policy` traces the policy itself, not a rebuilt copy of its network: the file records
the operations ``policy.predict(obs, deterministic=True)`` runs (SB3's preprocessing, the
policy's features extractor with its observation statistics, its networks and any method a
subclass overrides, the deterministic action of its distribution, then ``predict``'s rescaling or
clipping to a Box). :class:`DeterministicPolicy` is that path as one module.

Before the file is put in place it is loaded back (``torch.jit.load`` or onnxruntime) and run on a
batch of observations drawn from the policy's observation statistics; if its actions differ from
``predict``'s by more than 1e-5, export fails and nothing is written. What cannot be traced (a
forward that branches on observation values in Python, an operation the exporter lacks) is
refused with one line naming the module; :func:`roboppo.ppo.fast_paths.export_refusal` names the
policies whose ``predict`` the file could not follow.

The file needs neither roboppo, SB3 nor Python: libtorch (C++) loads TorchScript, and ONNX
Runtime runs ONNX on most robot computers.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
import pathlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from torch import nn

from roboppo.common.errors import MissingDependencyError, UserInputError
from roboppo.common.files import atomic_target
from roboppo.common.normalization import RunningMeanStd
from roboppo.ppo.fast_paths import export_refusal

FORMATS = ("onnx", "torchscript")
CHECK_SAMPLES = 512  # observations the written file is checked on against predict
TOLERANCE = 1e-5


class ExportError(UserInputError, ValueError):
    """A policy or format the exporter does not handle, or a file that would not match ``predict``."""


class DeterministicPolicy(nn.Module):
    """``obs [batch, *obs_shape]`` (float32, raw) -> ``predict(obs, deterministic=True)``'s actions, as a module.

    :param policy: an SB3 policy (roboppo's or SB3's) with a Box observation space, set to eval mode as
        ``predict`` sets it. A policy on the CPU is used itself; one on another device is rebuilt on the CPU
        from its constructor parameters and weights, as SB3's ``BasePolicy.load`` rebuilds a policy.
    """

    low: th.Tensor
    high: th.Tensor

    def __init__(self, policy: BasePolicy) -> None:
        super().__init__()
        self.policy = policy if policy.device.type == "cpu" else _rebuilt_on_cpu(policy)
        self.policy.set_training_mode(False)
        space = policy.action_space
        self.action_shape: tuple[int, ...] = tuple(space.shape or ())
        self.box = isinstance(space, spaces.Box)
        self.squash = bool(policy.squash_output)
        low, high = (space.low, space.high) if isinstance(space, spaces.Box) else (np.zeros(0), np.zeros(0))
        self.register_buffer("low", th.as_tensor(low, dtype=th.float32))
        self.register_buffer("high", th.as_tensor(high, dtype=th.float32))
        # an asymmetric actor-critic: the file takes the actor's columns alone (what the robot senses)
        self.columns = getattr(self.policy, "actor_columns", None)
        self.eval()

    def inputs(self, observations: np.ndarray) -> np.ndarray:
        """What the file takes for full observations ``[batch, *obs_shape]``: the actor's columns of an asymmetric
        actor-critic, all of them otherwise."""
        return observations if self.columns is None else observations[:, list(self.columns)]

    def forward(self, obs: th.Tensor) -> th.Tensor:
        if self.columns is not None:  # the full observation predict takes, the critic's columns zero (unread)
            full = obs.new_zeros((obs.shape[0], *self.policy.observation_space.shape))  # type: ignore[misc]
            full[:, list(self.columns)] = obs
            obs = full
        actions = self.policy._predict(obs, deterministic=True).reshape(-1, *self.action_shape)
        if not self.box:
            return actions
        if self.squash:  # BasePolicy.unscale_action
            return self.low + 0.5 * (actions + 1.0) * (self.high - self.low)
        return th.clamp(actions, self.low, self.high)


def _rebuilt_on_cpu(policy: BasePolicy) -> BasePolicy:
    rebuilt = type(policy)(**policy._get_constructor_parameters())
    rebuilt.load_state_dict(policy.state_dict())
    return rebuilt.to("cpu")


def export_policy(
    policy: nn.Module, path: str | os.PathLike[str], fmt: str, metadata: dict[str, Any] | None = None
) -> pathlib.Path:
    """Write ``policy``'s deterministic controller to ``path`` as ``fmt`` (``"onnx"`` or ``"torchscript"``).

    Input ``observation`` ``[batch, *obs_shape]`` float32, output ``action`` ``[batch, *action_shape]``;
    the batch size is free. The file is written under a temporary name, checked against ``predict``
    and only then renamed into place: a failed or mismatching export leaves no file. ``metadata``
    (JSON-able values) goes into the file: ONNX ``metadata_props`` (each value JSON), TorchScript's
    ``metadata.json`` extra file; the observation's layout (the input's keys, in order) is added to it.

    :raises ExportError: unknown format, a policy export cannot follow, or a file that differs from ``predict``.
    """
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    reason = export_refusal(policy) if isinstance(policy, BasePolicy) else "it is not a Stable-Baselines3 policy"
    if reason is not None:
        raise ExportError(f"cannot export this policy: {reason}.")
    assert isinstance(policy, BasePolicy)
    module = DeterministicPolicy(policy)
    observations = probe_observations(policy, CHECK_SAMPLES)
    example = th.as_tensor(module.inputs(observations[:2]))
    properties = {key: json.dumps(value) for key, value in ({**(metadata or {}), **input_layout(policy)}).items()}
    with atomic_target(path) as partial:
        if fmt == "torchscript":
            th.jit.save(_trace(module, example), str(partial), _extra_files={"metadata.json": json.dumps(properties)})
            run = _torchscript_runner(partial)
        else:
            _write_onnx(module, example, partial)
            _add_onnx_metadata(partial, properties)
            run = _onnx_runner(partial)
        for size in (len(observations), 1):  # a batch of one: exporters may specialise on the batch size
            try:
                written = run(module.inputs(observations[:size]))
            except Exception as error:
                raise ExportError(
                    f"the {fmt} file fails on a batch of {size} observations ({type(error).__name__}: "
                    f"{str(error).strip()[:200]}); nothing was written."
                ) from error
            expected, _ = policy.predict(observations[:size], deterministic=True)  # the trained policy, as it runs
            _check_same(written, expected, fmt)
    return pathlib.Path(path)


def input_layout(policy: BasePolicy) -> dict[str, Any]:
    """``{"observation_layout": [[key, start, stop], ...]}``: where each key of a ``Dict`` observation lies in the
    file's input (the actor's keys alone for an asymmetric actor-critic); empty for a plain Box observation."""
    layout = getattr(policy, "observation_layout", None)
    if not layout:
        return {}
    keys = getattr(policy, "actor_keys", None) or sorted(layout, key=lambda key: layout[key][0])
    rows, start = [], 0
    for key in keys:
        width = layout[key][1] - layout[key][0]
        rows.append([key, start, start + width])
        start += width
    return {"observation_layout": rows}


def _add_onnx_metadata(path: pathlib.Path, properties: dict[str, str]) -> None:
    import onnx

    model = onnx.load(str(path))
    for key, value in properties.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))


def probe_observations(policy: BasePolicy, count: int, seed: int = 0) -> np.ndarray:
    """``count`` float32 observations around what the policy has seen: drawn from its running observation
    statistics (mean +- up to 4 standard deviations) when it keeps them, else from the observation space."""
    space = policy.observation_space
    assert isinstance(space, spaces.Box)
    rng = np.random.default_rng(seed)
    statistics = [m for m in policy.modules() if isinstance(m, RunningMeanStd) and float(m.count) > 0]
    normal = rng.normal(size=(count, *space.shape)) * np.linspace(0.0, 4.0, count).reshape(-1, *[1] * len(space.shape))
    columns = getattr(policy, "actor_columns", None)
    if statistics and columns is not None:  # the actor's statistics, for the actor's columns
        actor: RunningMeanStd = policy.pi_features_extractor.obs_rms  # type: ignore[union-attr,assignment]
        mean, var = np.zeros(space.shape), np.ones(space.shape)
        mean[list(columns)], var[list(columns)] = actor.mean.cpu().numpy(), actor.var.cpu().numpy()
        observations = mean + np.sqrt(var) * normal
    elif statistics:
        mean, var = statistics[0].mean.cpu().numpy(), statistics[0].var.cpu().numpy()
        observations = mean + np.sqrt(var) * normal
    else:
        observations = normal
    low = np.where(np.isfinite(space.low), space.low, -np.inf)
    high = np.where(np.isfinite(space.high), space.high, np.inf)
    return np.clip(observations, low, high).astype(np.float32)


def _check_same(written: np.ndarray, expected: np.ndarray, fmt: str) -> None:
    """Raise :class:`ExportError` unless the file's actions equal ``predict``'s (to ``TOLERANCE``)."""
    written = np.asarray(written).reshape(expected.shape)
    if np.issubdtype(expected.dtype, np.integer):
        differ = int((written != expected).sum())
        if differ:
            raise ExportError(f"the {fmt} file picks other actions than predict on {differ} of {len(expected)} "
                              "observations; nothing was written.")  # fmt: skip
        return
    gap = float(np.max(np.abs(written - expected), initial=0.0))
    if not np.allclose(written, expected, rtol=TOLERANCE, atol=TOLERANCE):
        raise ExportError(
            f"the {fmt} file's actions differ from predict(obs, deterministic=True) by up to {gap:.3g} on "
            f"{len(expected)} observations drawn from the observation statistics; nothing was written."
        )


def _trace(module: DeterministicPolicy, example: th.Tensor) -> th.jit.ScriptModule:
    """``torch.jit.trace`` of ``module``; what cannot be traced is refused, naming the module being run."""
    hooked = [name for name, m in module.named_modules() if m._backward_hooks or m._backward_pre_hooks]
    if hooked:
        raise ExportError(
            f"cannot export this policy as TorchScript: {hooked[0].removeprefix('policy.')} has a backward hook, "
            "which torch.jit.trace refuses; remove it (it does not change actions) or export to ONNX."
        )
    with _module_stack(module) as stack, _tracing(stack) as value_branches:
        try:
            traced = th.jit.trace(module, example, check_trace=False)
        except Exception as error:
            raise _untraceable(stack, error) from error
    if value_branches:
        where, message = value_branches[0]
        raise ExportError(
            f"cannot export this policy: {where} turns observation values into Python values while tracing, so the "
            f"file would freeze one branch ({message.splitlines()[0]})."
        )
    return traced


@contextlib.contextmanager
def _tracing(stack: list[str]) -> Iterator[list[tuple[str, str]]]:
    """Collect torch's ``TracerWarning``s with the module running when each was raised (see :func:`_module_stack`),
    with the distributions' argument checks off (their value tests are not part of what the policy computes)."""
    found: list[tuple[str, str]] = []
    validate = th.distributions.Distribution._validate_args
    with warnings.catch_warnings(), th.no_grad():
        warnings.simplefilter("always", th.jit.TracerWarning)
        show = warnings.showwarning

        def note(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if issubclass(category, th.jit.TracerWarning):
                found.append((stack[-1] if stack else "the policy", str(message)))
            else:
                show(message, category, *args, **kwargs)

        warnings.showwarning = note
        th.distributions.Distribution.set_default_validate_args(False)
        try:
            yield found
        finally:
            th.distributions.Distribution.set_default_validate_args(validate)


def _untraceable(stack: list[str], error: Exception) -> ExportError:
    where = stack[-1] if stack else "the policy"
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return ExportError(f"cannot export this policy: {where} cannot be traced ({type(error).__name__}: {first_line}).")


@contextlib.contextmanager
def _module_stack(module: DeterministicPolicy) -> Iterator[list[str]]:
    """The names of the policy's modules being run, innermost last (global hooks, removed on exit)."""
    names = {id(m): name.removeprefix("policy.") or type(m).__name__ for name, m in module.named_modules()}
    stack: list[str] = []

    def enter(m: nn.Module, inputs: Any) -> None:
        stack.append(names.get(id(m), type(m).__name__))

    def leave(m: nn.Module, inputs: Any, output: Any) -> None:
        stack.pop()

    handles = [nn.modules.module.register_module_forward_pre_hook(enter)]
    handles.append(nn.modules.module.register_module_forward_hook(leave))
    try:
        yield stack
    finally:
        for handle in handles:
            handle.remove()


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


def _write_onnx(module: DeterministicPolicy, example: th.Tensor, path: pathlib.Path) -> None:
    """torch's ``torch.export``-based ONNX exporter, with a free batch dimension."""
    try:
        import onnxscript  # noqa: F401  (torch's exporter needs onnx and onnxscript)
    except ImportError as error:
        raise MissingDependencyError(
            "ONNX export needs the onnx and onnxscript packages: pip install 'roboppo[export]'"
        ) from error
    if "dynamo" not in inspect.signature(th.onnx.export).parameters:
        raise MissingDependencyError(
            f"ONNX export needs torch 2.5 or newer (this is {th.__version__}): pip install 'roboppo[export]'; "
            "TorchScript export works on this torch"
        )
    batch = th.export.Dim("batch", min=1)
    with _module_stack(module) as stack, _quiet_exporter():
        try:
            program = th.onnx.export(
                module, (example,), input_names=["observation"], output_names=["action"],
                dynamic_shapes={"obs": {0: batch}}, dynamo=True, verbose=False,
            )  # fmt: skip
        except Exception as error:
            raise _untraceable(stack, error) from error
    assert program is not None
    program.save(str(path))


def _torchscript_runner(path: pathlib.Path) -> Callable[[np.ndarray], np.ndarray]:
    """The TorchScript file at ``path`` as a function of a batch of observations (loaded once)."""
    loaded = th.jit.load(str(path))

    def run(observations: np.ndarray) -> np.ndarray:
        with th.no_grad():
            return loaded(th.as_tensor(observations)).numpy()

    return run


def _onnx_runner(path: pathlib.Path) -> Callable[[np.ndarray], np.ndarray]:
    """The ONNX file at ``path`` as a function of a batch of observations (one onnxruntime session)."""
    try:
        import onnxruntime
    except ImportError as error:
        raise MissingDependencyError(
            "ONNX export checks the written file with onnxruntime: pip install 'roboppo[export]'"
        ) from error
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # a file specialised to one batch size warns; the check reports it instead
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def run(observations: np.ndarray) -> np.ndarray:
        (actions,) = session.run(["action"], {"observation": observations})
        return np.asarray(actions)

    return run
