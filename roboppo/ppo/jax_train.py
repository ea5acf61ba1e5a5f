"""PPO's gradient phase as one XLA program (JAX), for training on the CPU.

On a CPU, PyTorch spends most of a small network's minibatch update in per-call overhead:
a 64-sample update of Hopper's 64x64 actor-critic takes about 1.2 ms, of which the arithmetic
is a few percent. Here every epoch and minibatch of one rollout runs inside a single compiled
call (``jax.lax.scan`` over minibatches, the loss, its gradient, gradient clipping and Adam),
as Brax's PPO trains, so a rollout's updates cost about what their arithmetic costs.

The policy stays a PyTorch module: its parameters and its Adam state go to JAX at the start of
:func:`train_with_jax` and come back at the end, so ``save``/``load``, ``predict``, callbacks
and a later switch to the PyTorch loop see ordinary torch tensors. The losses, Adam (PyTorch's
formula and state), gradient clipping, ``target_kl`` early stopping, shuffling (``th.randperm``,
one per epoch, as :mod:`roboppo.ppo.lean_train`) and log keys are those of SB3's ``PPO.train``.

:func:`jax_unsupported` says why a model cannot take this path (not on the CPU, JAX missing,
a policy other than roboppo's MLP, an optimizer other than plain Adam); PPO then trains with
:func:`roboppo.ppo.lean_train.train_on_tensors`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th

from roboppo.common.distributions import TanhNormalDistribution
from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.ppo.lean_train import log_train_stats

if TYPE_CHECKING:
    from roboppo.ppo.ppo import PPO

# torch activation modules the compiled network reproduces, by the name of their JAX twin
ACTIVATIONS = {th.nn.Tanh: "tanh", th.nn.ReLU: "relu", th.nn.ELU: "elu", th.nn.SiLU: "silu"}


@dataclasses.dataclass(frozen=True)
class UpdateShape:
    """What the compiled update is specialised on (a new value compiles a new program, ~1 s)."""

    n_samples: int
    batch_size: int
    n_epochs: int
    pi_activations: tuple[str, ...]
    vf_activations: tuple[str, ...]
    normalize_advantage: bool
    clip_values: bool
    betas: tuple[float, float]
    eps: float


def jax_unsupported(model: PPO) -> str | None:
    """Why ``model`` cannot train through :func:`train_with_jax`, or None when it can."""
    policy = model.policy
    if model.device.type != "cpu":
        return f"the model runs on {model.device} (the compiled update is for CPU training)"
    try:
        import jax  # noqa: F401
        import optax  # noqa: F401
    except ImportError:
        return "JAX is not installed (pip install 'roboppo[brax]')"
    if not isinstance(policy.action_dist, TanhNormalDistribution):
        return f"the policy's distribution is {type(policy.action_dist).__name__}, not TanhNormalDistribution"
    extractors = {policy.pi_features_extractor, policy.vf_features_extractor}
    if not all(isinstance(e, NormalizedFlattenExtractor) for e in extractors):
        return "the policy has a features extractor other than NormalizedFlattenExtractor"
    optimizer = policy.optimizer
    group = optimizer.param_groups[0] if len(optimizer.param_groups) == 1 else {}
    if type(optimizer) is not th.optim.Adam or group.get("weight_decay") or group.get("amsgrad"):
        return "the optimizer is not plain Adam (one parameter group, no weight decay, no amsgrad)"
    if group.get("maximize"):
        return "the optimizer maximizes"
    for net in (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net):
        for module in net:
            if not isinstance(module, th.nn.Linear) and type(module) not in ACTIVATIONS:
                return f"the MLP has a {type(module).__name__} layer (supported: Linear, {_activation_names()})"
    covered = {id(p) for p in _torch_params(model)}
    if covered != {id(p) for p in policy.parameters() if p.requires_grad}:
        return "the policy has trainable parameters outside its MLP, action and value heads and log_std"
    return None


def _activation_names() -> str:
    return ", ".join(cls.__name__ for cls in ACTIVATIONS)


def _torch_params(model: PPO) -> list[th.Tensor]:
    """The trainable parameters in the order the compiled update holds them."""
    policy = model.policy
    linears: list[Any] = [
        *(m for m in policy.mlp_extractor.policy_net if isinstance(m, th.nn.Linear)),
        *(m for m in policy.mlp_extractor.value_net if isinstance(m, th.nn.Linear)),
        policy.action_net,
        policy.value_net,
    ]
    return [p for linear in linears for p in (linear.weight, linear.bias)] + [policy.log_std]


def _update_shape(model: PPO, n_samples: int) -> UpdateShape:
    policy = model.policy
    group = policy.optimizer.param_groups[0]

    def activations(net: th.nn.Sequential) -> tuple[str, ...]:
        """The activation after each Linear layer ("none" when there is none)."""
        names: list[str] = []
        for module in net:
            if isinstance(module, th.nn.Linear):
                names.append("none")
            else:
                names[-1] = ACTIVATIONS[type(module)]
        return tuple(names)

    return UpdateShape(
        n_samples=n_samples,
        batch_size=model.batch_size,
        n_epochs=model.n_epochs,
        pi_activations=activations(policy.mlp_extractor.policy_net),
        vf_activations=activations(policy.mlp_extractor.value_net),
        normalize_advantage=model.normalize_advantage,
        clip_values=model.clip_range_vf is not None,
        betas=tuple(group["betas"]),
        eps=float(group["eps"]),
    )


def train_with_jax(model: PPO) -> None:
    """Run ``model.n_epochs`` epochs of clipped-surrogate updates on ``model.rollout_buffer`` in one XLA call."""
    policy = model.policy
    policy.set_training_mode(True)
    model._update_learning_rate(policy.optimizer)
    progress = model._current_progress_remaining
    clip_range = float(model.clip_range(progress))  # type: ignore[operator]
    clip_range_vf = float(model.clip_range_vf(progress)) if model.clip_range_vf is not None else None  # type: ignore[operator]
    obs, actions, old_values, old_log_prob, advantages, returns = model.rollout_buffer.flat_tensors()  # type: ignore[attr-defined]
    with th.no_grad():  # the observation statistics are fixed during training
        pi_features = policy.pi_features_extractor(obs)
        vf_features = pi_features if policy.share_features_extractor else policy.vf_features_extractor(obs)
    n_samples = obs.shape[0]
    orders = th.stack([th.randperm(n_samples) for _ in range(model.n_epochs)]).int()
    noise = th.randn(model.n_epochs, n_samples, actions.shape[1])  # for the entropy estimate
    params = _torch_params(model)
    group = policy.optimizer.param_groups[0]
    hyper = {
        "lr": group["lr"],
        "clip_range": clip_range,
        "clip_range_vf": clip_range_vf or 0.0,
        "ent_coef": float(model.ent_coef),
        "vf_coef": float(model.vf_coef),
        "max_grad_norm": float(model.max_grad_norm),
        "target_kl": math.inf if model.target_kl is None else 1.5 * float(model.target_kl),
    }
    data = (pi_features, vf_features, actions, old_values, old_log_prob, advantages, returns)
    result = _compiled_update()(
        [_to_numpy(p) for p in params],
        _adam_state(policy.optimizer, params),
        tuple(_to_numpy(t) for t in data),
        _to_numpy(orders),
        _to_numpy(noise),
        hyper,
        shape=_update_shape(model, n_samples),
    )
    new_params, (step, exp_avg, exp_avg_sq), stat_sums, n_minibatches, epochs_run, last_loss = result
    _write_back(policy.optimizer, params, new_params, int(step), exp_avg, exp_avg_sq)
    model._n_updates += int(epochs_run)
    means = (np.asarray(stat_sums) / max(int(n_minibatches), 1)).tolist()
    log_train_stats(model, means, float(last_loss), clip_range, clip_range_vf)


def _to_numpy(tensor: th.Tensor) -> np.ndarray:
    return tensor.detach().contiguous().numpy()


def _adam_state(optimizer: th.optim.Optimizer, params: list[th.Tensor]) -> tuple[int, list, list]:
    """PyTorch Adam's step count and moment estimates (zeros before the first step)."""
    states = [optimizer.state.get(p, {}) for p in params]
    step = int(states[0]["step"]) if "step" in states[0] else 0

    def moments(key: str) -> list[np.ndarray]:
        return [_to_numpy(s[key]) if s else np.zeros(p.shape, np.float32) for s, p in zip(states, params, strict=True)]

    return step, moments("exp_avg"), moments("exp_avg_sq")


def _write_back(
    optimizer: th.optim.Optimizer,
    params: list[th.Tensor],
    new_params: Any,
    step: int,
    exp_avg: Any,
    exp_avg_sq: Any,
) -> None:
    """Copy the trained parameters and Adam state into the torch policy and optimizer."""
    with th.no_grad():
        for index, param in enumerate(params):
            param.copy_(th.from_numpy(np.array(new_params[index])))
            state = optimizer.state[param]
            state["step"] = th.tensor(float(step))  # float32, as torch's Adam keeps it (fused or not)
            state["exp_avg"] = th.from_numpy(np.array(exp_avg[index]))
            state["exp_avg_sq"] = th.from_numpy(np.array(exp_avg_sq[index]))


_UPDATE: Any = None


def _compiled_update() -> Any:
    """The jitted update, built on first use (importing JAX costs about a second)."""
    global _UPDATE
    if _UPDATE is None:
        from roboppo.ppo import jax_program

        _UPDATE = jax_program.build()
    return _UPDATE
