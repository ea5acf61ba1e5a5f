"""PPO's gradient phase as one XLA program (JAX), for training on the CPU.

On a CPU, PyTorch spends most of a small network's minibatch update in per-call overhead:
a 64-sample update of Hopper's 64x64 actor-critic takes about 1.2 ms, of which the arithmetic
is a few percent. Here every epoch and minibatch of one rollout runs inside a single compiled
call (``jax.lax.scan`` over minibatches, the loss, its gradient, gradient clipping and Adam),
as Brax's PPO trains, so a rollout's updates cost about what their arithmetic costs.

The policy stays a PyTorch module: its parameters and its Adam state go to JAX at the start of
:func:`train` and come back at the end, so ``save``/``load``, ``predict``, callbacks
and a later switch to the PyTorch loop see ordinary torch tensors. The losses, Adam (PyTorch's
formula and state), gradient clipping, ``target_kl`` early stopping and statistics are those of
SB3's ``PPO.train``; the shuffles and the entropy estimate's normal draws come from torch's
generator through :func:`~roboppo.ppo.update.random_draws`, as in :mod:`roboppo.ppo.torch_train`.

:func:`unsupported` says why a policy cannot take this path (not on the CPU, JAX missing, not on
the pre-tanh path, a network other than an MLP, an optimizer other than plain Adam); PPO then
trains with :mod:`roboppo.ppo.torch_train`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.torch_layers import MlpExtractor

from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.ppo.policies import TanhGaussianPolicy
from roboppo.ppo.update import RolloutBatch, UpdateSettings, UpdateStats, random_draws

# torch activation modules the compiled network reproduces, by the name of their JAX twin
ACTIVATIONS = {th.nn.Tanh: "tanh", th.nn.ReLU: "relu", th.nn.ELU: "elu", th.nn.SiLU: "silu"}


def unsupported(policy: TanhGaussianPolicy) -> str | None:
    """Why ``policy`` cannot be trained by :func:`train`, or None when it can."""
    if policy.device.type != "cpu":
        return f"the model runs on {policy.device} (the compiled update is for CPU training)"
    try:
        import jax  # noqa: F401
        import optax  # noqa: F401
    except ImportError:
        return "JAX is not installed (pip install 'roboppo[brax]')"
    if not policy.uses_pre_tanh_path():
        return (
            f"the policy ({type(policy).__name__}, {type(policy.action_dist).__name__}) is not on the pre-tanh path "
            "(tanh-squashed Box actions, SB3's sampling and scoring methods not overridden)"
        )
    extractors = {policy.pi_features_extractor, policy.vf_features_extractor}
    if not all(isinstance(e, NormalizedFlattenExtractor) for e in extractors):
        return "the policy has a features extractor other than NormalizedFlattenExtractor"
    optimizer = policy.optimizer
    group = optimizer.param_groups[0] if len(optimizer.param_groups) == 1 else {}
    if type(optimizer) is not th.optim.Adam or group.get("weight_decay") or group.get("amsgrad"):
        return "the optimizer is not plain Adam (one parameter group, no weight decay, no amsgrad)"
    if group.get("maximize"):
        return "the optimizer maximizes"
    if type(policy.mlp_extractor) is not MlpExtractor:
        return f"the policy's MLP extractor is a {type(policy.mlp_extractor).__name__}, not SB3's MlpExtractor"
    for net in (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net):
        for module in net:
            if not isinstance(module, th.nn.Linear) and type(module) not in ACTIVATIONS:
                return f"the MLP has a {type(module).__name__} layer (supported: Linear, {_activation_names()})"
    covered = {id(p) for p in _torch_params(policy)}
    if covered != {id(p) for p in policy.parameters() if p.requires_grad}:
        return "the policy has trainable parameters outside its MLP, action and value heads and log_std"
    return None


def _activation_names() -> str:
    return ", ".join(cls.__name__ for cls in ACTIVATIONS)


def _torch_params(policy: TanhGaussianPolicy) -> list[th.Tensor]:
    """The trainable parameters in the order the compiled update holds them."""
    linears: list[Any] = [
        *(m for m in policy.mlp_extractor.policy_net if isinstance(m, th.nn.Linear)),
        *(m for m in policy.mlp_extractor.value_net if isinstance(m, th.nn.Linear)),
        policy.action_net,
        policy.value_net,
    ]
    return [p for linear in linears for p in (linear.weight, linear.bias)] + [policy.log_std]


def _update_shape(policy: TanhGaussianPolicy, settings: UpdateSettings, n_samples: int) -> Any:
    from roboppo.ppo.jax_program import UpdateShape

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
        batch_size=settings.batch_size,
        n_epochs=settings.n_epochs,
        pi_activations=activations(policy.mlp_extractor.policy_net),
        vf_activations=activations(policy.mlp_extractor.value_net),
        normalize_advantage=settings.normalize_advantage,
        clip_values=settings.clip_range_vf is not None,
        betas=tuple(group["betas"]),
        eps=float(group["eps"]),
    )


def train(policy: TanhGaussianPolicy, batch: RolloutBatch, settings: UpdateSettings) -> UpdateStats:
    """``settings.n_epochs`` epochs of PPO minibatch updates of ``policy`` on ``batch``, in one XLA call."""
    obs, actions = batch.observations, batch.actions
    with th.no_grad():  # the observation statistics are fixed during training
        pi_features, vf_features = policy.actor_critic_features(obs)
    n_samples = obs.shape[0]
    orders, noise = random_draws(n_samples, settings.n_epochs, actions.shape[1])
    params = _torch_params(policy)
    hyper = {
        "lr": settings.learning_rate,
        "clip_range": settings.clip_range,
        "clip_range_vf": settings.clip_range_vf or 0.0,
        "ent_coef": settings.ent_coef,
        "vf_coef": settings.vf_coef,
        "max_grad_norm": settings.max_grad_norm,
        "target_kl": math.inf if settings.target_kl is None else 1.5 * settings.target_kl,
    }
    data = (pi_features, vf_features, actions, batch.old_values, batch.old_log_prob, batch.advantages, batch.returns)
    result = _compiled_update()(
        [_to_numpy(p) for p in params],
        _adam_state(policy.optimizer, params),
        tuple(_to_numpy(t) for t in data),
        _to_numpy(orders.int()),
        _to_numpy(noise),
        hyper,
        shape=_update_shape(policy, settings, n_samples),
    )
    new_params, (step, exp_avg, exp_avg_sq), stat_sums, n_minibatches, epochs_run, last_loss, kl, stop_kl = result
    _write_back(policy.optimizer, params, new_params, int(step), exp_avg, exp_avg_sq)
    policy_loss, value_loss, entropy_loss, _, clip_fraction = (
        np.asarray(stat_sums) / max(int(n_minibatches), 1)
    ).tolist()
    stop = None if np.isnan(stop_kl) else float(stop_kl)
    return UpdateStats(
        policy_loss, value_loss, entropy_loss, float(kl), clip_fraction, float(last_loss), int(epochs_run), stop
    )


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
