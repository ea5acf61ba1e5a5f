"""Which computation runs a policy: the one place that decides, and the description the fast paths read.

roboppo's policy is its torch modules. Two fast paths compute the same thing with less overhead:
the NumPy rollout sampler (:mod:`roboppo.ppo.sampler`) and the compiled JAX update
(:mod:`roboppo.ppo.jax_train`). Both are built from one :class:`PolicyGraph`, the list of
operations the policy's own modules perform, and this module is the only place that decides
whether a policy has one. The rule is exactness, not resemblance: a fast path accepts exactly
the modules it was written for, and everything else runs the policy's torch code.

- Every module of the policy is of an **exact** type from a closed list (``type(m) is nn.Tanh``,
  never ``isinstance``): a subclass of ``nn.Tanh`` with its own ``forward`` is not ``tanh``.
- Activations carry their parameters into the graph (ELU's ``alpha``, LeakyReLU's slope).
- No forward or backward hooks (on a module, on a parameter or global), no parametrization
  (``torch.nn.utils.parametrize``, weight norm), no method replaced on an instance (the action
  distribution included) or on one of those classes, no torch function they call replaced
  (``_PINNED``), no ``torch.autocast``, no policy method overridden by a subclass other than the
  constructors (``SB3_CONSTRUCTORS``).
- Parameters are plain float32 ``nn.Parameter`` on the CPU; ``log_std`` has one per action dimension.

The update also needs plain Adam over exactly the graph's parameters, each used once (no tied
weights), all at the same Adam step, no frozen parameter and no optimizer or gradient hook.
Where the graph or the update is refused, the reason names the module or the setting, PPO says
it once (``verbose >= 1``) and runs the torch path, which is the reference.

:meth:`PolicyGraph.current` tells a sampler, in a few microseconds, whether the graph still
describes the policy (:class:`Watch`): the same modules, parameter objects at the same addresses,
the same activation parameters and action bounds, no new hooks. A parameter replaced
(``load_state_dict(assign=True)``, ``p.data = ...``, ``policy.to(torch.float64)``) or a hook added
during a rollout makes the sampler describe the policy again, and step aside when it no longer
qualifies.

Export does not use the graph: it traces the policy's own ``predict`` path (:mod:`roboppo.export`);
:func:`export_refusal` says what it cannot follow.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import inspect
import operator
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common import policies as sb3_policies
from stable_baselines3.common.distributions import DiagGaussianDistribution
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, MlpExtractor
from torch import nn
from torch.optim import optimizer as torch_optimizer
from torch.utils.hooks import RemovableHandle

from roboppo.common import distributions
from roboppo.common.activations import ACTIVATION_NAMES, ACTIVATIONS
from roboppo.common.distributions import TanhNormalDistribution
from roboppo.common.normalization import NormalizedFlattenExtractor, RunningMeanStd
from roboppo.ppo.policies import TanhGaussianPolicy

DISTRIBUTION_BOUNDS = ("low", "high", "half_range")  # what the sampler reads of TanhNormalDistribution
# policy attributes that change what the graph is (which extractors run, how observations are preprocessed)
POLICY_SETTINGS = ("action_dist", "share_features_extractor", "normalize_images")
HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
# policy methods a subclass may override without changing what the policy computes
SB3_CONSTRUCTORS = frozenset(
    {"__init__", "_build", "_build_mlp_extractor", "_get_constructor_parameters", "init_weights"}
)
# what export runs besides the policy's modules: overriding one of these changes predict's result
EXPORT_METHODS = ("predict", "obs_to_tensor", "unscale_action")


@dataclasses.dataclass(frozen=True)
class Op:
    """One operation of the graph: ``linear`` (weight ``[out, in]``, bias or None) or an activation."""

    kind: str
    weight: th.Tensor | None = None
    bias: th.Tensor | None = None
    arg: float = 0.0  # ELU's alpha, LeakyReLU's negative slope


@dataclasses.dataclass(frozen=True, repr=False)
class PolicyGraph:
    """What roboppo's policy computes on its pre-tanh path, as operations on its own tensors.

    ``features``: the actor's normalizing extractor, and the critic's (the same object when shared).
    ``actor``: the hidden layers then the action head; ``critic``: the hidden layers then the value head.
    """

    policy: TanhGaussianPolicy
    pi_features: NormalizedFlattenExtractor
    vf_features: NormalizedFlattenExtractor
    actor: tuple[Op, ...]
    critic: tuple[Op, ...]
    log_std: th.Tensor
    watch: Watch  # the policy as the graph was made from it

    def parameters(self) -> list[th.Tensor]:
        """The trainable tensors in the compiled update's order: actor then critic ops, then ``log_std``."""
        return [t for op in (*self.actor, *self.critic) for t in (op.weight, op.bias) if t is not None] + [self.log_std]

    def __repr__(self) -> str:
        ops = ", ".join(op.kind for op in self.actor)
        return f"PolicyGraph(actor: {ops}; critic: {', '.join(op.kind for op in self.critic)})"

    def current(self) -> bool:
        """Whether this graph still describes the policy (see the module docstring)."""
        return self.watch.unchanged()


@dataclasses.dataclass(frozen=True)
class Choice:
    """Which computation runs: ``path`` (``numpy``/``jax``, ``torch``, ``sb3``), the graph, and why not faster."""

    path: str
    graph: PolicyGraph | None = None
    reason: str | None = None


def sampler_choice(policy: nn.Module) -> Choice:
    """How a rollout samples: ``numpy`` (the graph), ``torch`` (``rollout_actions``) or ``sb3`` (``forward``)."""
    tanh_reason = pre_tanh_refusal(policy)
    if tanh_reason is not None:
        return Choice("sb3", reason=tanh_reason)
    graph = _graph(policy)  # type: ignore[arg-type]
    if isinstance(graph, str):
        return Choice("torch", reason=graph)
    return Choice("numpy", graph)


def update_choice(policy: nn.Module, backend: str = "auto") -> Choice:
    """How PPO's update runs: ``jax`` (compiled from the graph), ``torch`` (:mod:`~roboppo.ppo.torch_train`) or ``sb3``.

    :param backend: ``"auto"`` takes the fastest path the policy allows, ``"torch"`` never the compiled one,
        ``"jax"`` raises ``ValueError`` naming the reason when the compiled update is refused.
    """
    tanh_reason = pre_tanh_refusal(policy)
    if tanh_reason is not None:
        return Choice("sb3", reason=tanh_reason)
    if backend == "torch":
        return Choice("torch", reason="train_backend='torch'")
    graph = _graph(policy)  # type: ignore[arg-type]
    reason = graph if isinstance(graph, str) else _update_refusal(graph)
    if reason is None:
        assert isinstance(graph, PolicyGraph)
        return Choice("jax", graph)
    if backend == "jax":
        raise ValueError(f"train_backend='jax' cannot train this model: {reason}. Use train_backend='torch'.")
    return Choice("torch", reason=reason)


def pre_tanh_refusal(policy: nn.Module) -> str | None:
    """Why PPO cannot sample and score ``policy``'s pre-tanh actions (it then uses SB3's methods), or None."""
    if not isinstance(policy, TanhGaussianPolicy):  # other policies are SB3's, trained by SB3's code
        return f"{type(policy).__name__} is not roboppo's tanh-Gaussian policy"
    if not policy.uses_pre_tanh_path():
        return (
            f"the policy ({type(policy).__name__}, {type(policy.action_dist).__name__}) samples through SB3's "
            "methods (gSDE, actions not tanh-squashed to a bounded Box, or forward, evaluate_actions, "
            "get_distribution, _get_action_dist_from_latent or extract_features overridden)"
        )
    replaced = _code_names(type(policy)).intersection(vars(policy))
    if replaced:
        return f"policy.{min(replaced)} is replaced on the instance"
    return None


def describe(policy: nn.Module) -> PolicyGraph | str:
    """The :class:`PolicyGraph` of ``policy``, or the reason the fast paths cannot compute it."""
    reason = pre_tanh_refusal(policy)
    return reason if reason is not None else _graph(policy)  # type: ignore[arg-type]


def _graph(policy: TanhGaussianPolicy) -> PolicyGraph | str:
    """:func:`describe` for a policy on the pre-tanh path (:func:`pre_tanh_refusal` said None)."""
    reason = _policy_refusal(policy)
    if reason is None:
        reason = next((r for r in map(_module_refusal, policy.named_modules()) if r is not None), None)
    if reason is not None:
        return reason
    pi_features, vf_features = _extractors(policy)
    mlp = policy.mlp_extractor
    for name, extractor in (("actor", pi_features), ("critic", vf_features)):
        if type(extractor) is not NormalizedFlattenExtractor or type(extractor.obs_rms) is not RunningMeanStd:
            return f"the {name}'s features extractor is a {type(extractor).__name__}, not NormalizedFlattenExtractor"
        if {extractor.obs_rms.mean.dtype, extractor.obs_rms.var.dtype} - {th.float32, th.float64}:
            return f"the {name}'s observation statistics are {extractor.obs_rms.mean.dtype}, not float32 or float64"
    if type(mlp) is not MlpExtractor or not type(mlp.policy_net) is type(mlp.value_net) is nn.Sequential:
        return f"the MLP extractor is a {type(mlp).__name__}, not SB3's MlpExtractor"
    names = {id(module): name for name, module in policy.named_modules()}
    actor = _ops([*mlp.policy_net, policy.action_net], names)
    critic = _ops([*mlp.value_net, policy.value_net], names)
    if isinstance(actor, str) or isinstance(critic, str):
        return actor if isinstance(actor, str) else str(critic)
    if type(policy.action_net) is not nn.Linear or type(policy.value_net) is not nn.Linear:
        return "the action or value head is not a torch.nn.Linear"
    assert isinstance(pi_features, NormalizedFlattenExtractor) and isinstance(vf_features, NormalizedFlattenExtractor)
    return PolicyGraph(policy, pi_features, vf_features, actor, critic, policy.log_std, Watch(policy))


def export_refusal(policy: nn.Module) -> str | None:
    """What :func:`roboppo.export.export_policy` cannot follow in ``policy``'s ``predict``, or None."""
    space = getattr(policy, "observation_space", None)
    if not isinstance(space, spaces.Box):
        return f"export takes one observation array (a Box space); this policy observes {space}"
    for name in EXPORT_METHODS:
        if name in vars(policy) or getattr(type(policy), name, None) is not getattr(TanhGaussianPolicy, name):
            return f"{type(policy).__name__} overrides {name}, which the exported file would not run"
    return None


# -- the rules --------------------------------------------------------------------------------------


def _policy_refusal(policy: TanhGaussianPolicy) -> str | None:
    space = policy.observation_space
    if policy.device.type != "cpu":
        return f"the policy is on {policy.device} (the fast paths run on the CPU)"
    if not isinstance(space, spaces.Box) or (policy.normalize_images and is_image_space(space)):
        return f"the observations ({space}) are not a non-image Box"
    if type(policy.action_dist) is not TanhNormalDistribution:
        return f"the action distribution is a {type(policy.action_dist).__name__}"
    for cls in type(policy).__mro__:
        if cls is TanhGaussianPolicy:
            break
        overridden = sorted(n for n, value in vars(cls).items() if n not in SB3_CONSTRUCTORS and _is_code(value))
        if overridden:
            return f"{cls.__name__} overrides {', '.join(overridden)}"
    if any(_global_hooks()):
        return "a global module hook is registered (torch.nn.modules.module.register_module_forward_hook, ...)"
    if _autocast_on():
        return "torch.autocast is on (the fast paths compute in float32)"
    replaced = _code_names(type(policy.action_dist)).intersection(vars(policy.action_dist))
    if replaced:
        return f"policy.action_dist.{min(replaced)} is replaced on the instance"
    action_dim = int(np.prod(policy.action_space.shape))  # type: ignore[arg-type]
    if type(policy.log_std) is not nn.Parameter or tuple(policy.log_std.shape) != (action_dim,):
        return f"policy.log_std is not a Parameter of shape ({action_dim},), one per action dimension"
    return _replaced_on_a_class()


def _module_refusal(named: tuple[str, nn.Module]) -> str | None:
    """Why module ``name`` keeps the fast paths away: hooks, parametrizations, a replaced forward, odd parameters."""
    name, module = named
    where = name or "the policy"
    if "parametrizations" in module._modules:  # what torch.nn.utils.parametrize registers
        return f"{where} ({type(module).__name__}) is parametrized (weight norm or torch.nn.utils.parametrize)"
    if any(getattr(module, hook, None) for hook in HOOK_TABLES):
        return f"{where} ({type(module).__name__}) has a forward or backward hook"
    replaced = _code_names(type(module)).intersection(vars(module))
    if replaced:
        return f"{where}.{min(replaced)} is replaced on the instance"
    for param_name, param in module.named_parameters(recurse=False):
        if type(param) is not nn.Parameter or param.dtype != th.float32 or param.device.type != "cpu":
            return f"{where}.{param_name} is not a float32 torch.nn.Parameter on the CPU"
    return None


def _ops(modules: list[nn.Module], names: dict[int, str]) -> tuple[Op, ...] | str:
    ops = []
    for module in modules:
        if type(module) is nn.Linear:
            ops.append(Op("linear", module.weight, module.bias))
        elif type(module) in ACTIVATION_NAMES:
            kind = ACTIVATION_NAMES[type(module)]
            attribute = ACTIVATIONS[kind][1]
            ops.append(Op(kind, arg=0.0 if attribute is None else float(getattr(module, attribute))))
        else:
            known = ", ".join(cls.__name__ for cls in (nn.Linear, *ACTIVATION_NAMES))  # type: ignore[attr-defined]
            kind = f"{type(module).__module__}.{type(module).__qualname__}"
            return f"{names.get(id(module), 'a layer')} is a {kind} (the fast paths compute exactly {known})"
    return tuple(ops)


def _update_refusal(graph: PolicyGraph) -> str | None:
    """Why the compiled update cannot train ``graph``'s policy with its optimizer, or None."""
    if not _jax_installed():
        return "JAX is not installed (pip install 'roboppo[brax]')"
    policy = graph.policy
    params = graph.parameters()
    ids = {id(p) for p in params}
    if ids != {id(p) for p in policy.parameters() if p.requires_grad} or not all(p.requires_grad for p in params):
        return "the policy has frozen parameters or trainable parameters outside its layers and log_std"
    storages = {p.untyped_storage().data_ptr() for p in params}
    if len(ids) < len(params) or len(storages) < len(params):
        return "a parameter is used twice or shares its storage with another (tied weights)"
    if any(p._backward_hooks or getattr(p, "_post_accumulate_grad_hooks", None) for p in params):
        return "a parameter has a gradient hook (Tensor.register_hook)"
    optimizer = policy.optimizer
    if type(optimizer) is not th.optim.Adam or len(optimizer.param_groups) != 1:
        return f"the optimizer is {type(optimizer).__name__} with {len(optimizer.param_groups)} groups, not plain Adam"
    group = optimizer.param_groups[0]
    if {id(p) for p in group["params"]} != ids:
        return "the optimizer does not hold the policy's current parameters (replaced after it was built?)"
    steps = {float(optimizer.state[p]["step"]) if "step" in optimizer.state.get(p, {}) else None for p in params}
    if len(steps) > 1:
        return "Adam's step counts differ between parameters (some were frozen or added later)"
    for option in ("weight_decay", "amsgrad", "maximize", "decoupled_weight_decay"):
        if group.get(option):
            return f"Adam's {option} is set"
    optimizer_hooks = (optimizer._optimizer_step_pre_hooks, optimizer._optimizer_step_post_hooks)
    if any(optimizer_hooks) or any(_global_optimizer_hooks()):
        return "the optimizer has a step hook"
    return None


def _extractors(policy: TanhGaussianPolicy) -> tuple[nn.Module, nn.Module]:
    """The extractors ``extract_features`` uses (SB3 reads ``features_extractor`` when they are shared)."""
    if policy.share_features_extractor:
        return policy.features_extractor, policy.features_extractor
    return policy.pi_features_extractor, policy.vf_features_extractor


class Watch:
    """What a policy's graph was made from, checked in a few microseconds: every module (and its class), every
    parameter and buffer object (and the address and contiguity of its data), the layers of each ``nn.Sequential``,
    the activations' parameters, the action bounds and the policy settings the graph depends on, and whether any
    hook was registered since (torch numbers every hook handle; backward hooks only change the update, which is
    decided afresh at every rollout)."""

    def __init__(self, policy: nn.Module, hook_tables: bool = False) -> None:
        """:param hook_tables: also watch the size of every forward hook table, to see hooks removed (for a
        policy refused for its hooks, which may qualify again)."""
        self._tables: list[dict] = []
        self._keys: list[str] = []
        self._objects: list[Any] = []
        self._args: list[tuple[nn.Module, str, Any]] = []
        self._hook_count = RemovableHandle.next_id
        self._modules = list({id(m): m for m in _modules(policy)}.values())  # shared extractors once
        for module in self._modules:
            for table in (module._modules, module._parameters, module._buffers):
                self._tables += [table] * len(table)
                self._keys += table.keys()
                self._objects += table.values()
            attribute = ACTIVATIONS[ACTIVATION_NAMES[type(module)]][1] if type(module) in ACTIVATION_NAMES else None
            if attribute is not None:
                self._args.append((module, attribute, getattr(module, attribute)))
        # exact types run fixed code: only a Sequential's forward runs whatever children it holds
        self._sized: list[dict] = [m._modules for m in self._modules if type(m) is nn.Sequential]
        if hook_tables:
            self._sized += list(_global_hooks()[:2])
            self._sized += [table for m in self._modules for table in (m._forward_hooks, m._forward_pre_hooks)]
        self._watch(vars(policy), POLICY_SETTINGS)
        distribution = vars(policy).get("action_dist")  # not a module: its bounds are plain tensor attributes
        if distribution is not None:
            self._watch(vars(distribution), DISTRIBUTION_BOUNDS)
        self._types = list(map(type, self._modules))
        self._tensors = [t for t in self._objects if isinstance(t, th.Tensor)]
        self._pointers = list(map(th.Tensor.data_ptr, self._tensors))
        self._layouts = list(map(th.Tensor.is_contiguous, self._tensors))
        self._sizes = list(map(len, self._sized))

    def _watch(self, table: dict, keys: tuple[str, ...]) -> None:
        for key in keys:
            self._tables.append(table)
            self._keys.append(key)
            self._objects.append(table.get(key))

    def unchanged(self) -> bool:
        """Whether the policy still holds the same objects, at the same addresses, with the same hooks."""
        return (
            all(map(operator.is_, map(dict.get, self._tables, self._keys), self._objects))
            and list(map(th.Tensor.data_ptr, self._tensors)) == self._pointers
            and RemovableHandle.next_id == self._hook_count
            and list(map(len, self._sized)) == self._sizes
            and list(map(type, self._modules)) == self._types
            and list(map(th.Tensor.is_contiguous, self._tensors)) == self._layouts
            and all(getattr(module, name) == value for module, name, value in self._args)
        )


def _modules(module: nn.Module) -> Iterator[nn.Module]:
    """``module.modules()`` without its bookkeeping of names (faster; repeated modules appear again)."""
    yield module
    for child in module._modules.values():
        if child is not None:
            yield from _modules(child)


def _global_hooks() -> tuple[dict, ...]:
    module = nn.modules.module
    return (
        module._global_forward_hooks,
        module._global_forward_pre_hooks,
        module._global_backward_hooks,
        module._global_backward_pre_hooks,
    )


def _global_optimizer_hooks() -> tuple[dict, ...]:
    return (torch_optimizer._global_optimizer_pre_hooks, torch_optimizer._global_optimizer_post_hooks)


def _code_names(cls: type) -> frozenset[str]:
    """The names ``cls`` defines as code (an instance attribute of one of them replaces a method); cached."""
    names = _CODE_NAMES.get(cls)
    if names is None:
        names = _CODE_NAMES[cls] = frozenset(n for n in dir(cls) if _is_code(inspect.getattr_static(cls, n, None)))
    return names


_CODE_NAMES: dict[type, frozenset[str]] = {}


def _class_code(classes: tuple[type, ...]) -> list[tuple[type, str, Any]]:
    """Every method each class defines, as it is now."""
    return [(cls, name, value) for cls in classes for name, value in vars(cls).items() if _is_code(value)]


def _replaced_on_a_class() -> str | None:
    """A method of a class the fast paths compute, or a function those methods call, replaced since roboppo was
    imported (``nn.Tanh.forward = ...``, ``torch.nn.functional.linear = ...``)."""
    for cls, name, value in _PRISTINE:
        if vars(cls).get(name) is not value:
            return f"{cls.__name__}.{name} was replaced on the class"
    for module, name, value in _PINNED:
        if getattr(module, name) is not value:
            return f"{module.__name__}.{name} was replaced"
    return None


def _autocast_on() -> bool:
    try:
        return th.is_autocast_enabled("cpu")
    except TypeError:  # torch before 2.4
        return th.is_autocast_cpu_enabled()


@functools.cache
def _jax_installed() -> bool:
    return importlib.util.find_spec("jax") is not None and importlib.util.find_spec("optax") is not None


def _is_code(value: Any) -> bool:
    """A function, a static or class method, a property or another class: what a class body overrides with code."""
    return inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod, property, type))


# the classes whose code the fast paths reproduce, and that code as it was when this module was imported
_PRISTINE = _class_code(
    (*TanhGaussianPolicy.__mro__[:-1], NormalizedFlattenExtractor, BaseFeaturesExtractor, RunningMeanStd, MlpExtractor,
     nn.Sequential, nn.Linear, *ACTIVATION_NAMES, TanhNormalDistribution, DiagGaussianDistribution)
)  # fmt: skip
# the functions those classes' methods call, as they were when this module was imported
_PINNED = [
    (module, name, getattr(module, name))
    for module, names in (
        (nn.functional, ("linear", "relu", "elu", "leaky_relu", "silu", "softplus")),
        (th, ("tanh", "sigmoid", "clamp", "sqrt", "exp")),
        (distributions, ("softplus", "tanh_log_det_jacobian")),
        (sb3_policies, ("preprocess_obs",)),
    )
    for name in names
]
