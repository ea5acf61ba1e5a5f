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

The network is the policy's :class:`~roboppo.ppo.fast_paths.PolicyGraph`; whether this path
applies is decided by :func:`roboppo.ppo.fast_paths.update_choice`, and where it does not, PPO
trains with :mod:`roboppo.ppo.torch_train`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch as th

from roboppo.ppo.fast_paths import Op, PolicyGraph
from roboppo.ppo.update import RolloutBatch, UpdateSettings, UpdateStats, random_draws


def _update_shape(graph: PolicyGraph, settings: UpdateSettings, n_samples: int) -> Any:
    from roboppo.ppo.jax_program import UpdateShape

    group = graph.policy.optimizer.param_groups[0]
    return UpdateShape(
        n_samples=n_samples,
        batch_size=settings.batch_size,
        n_epochs=settings.n_epochs,
        actor=_shape_of(graph.actor),
        critic=_shape_of(graph.critic),
        normalize_advantage=settings.normalize_advantage,
        clip_values=settings.clip_range_vf is not None,
        betas=tuple(group["betas"]),
        eps=float(group["eps"]),
    )


def _shape_of(ops: tuple[Op, ...]) -> tuple[tuple[str, float, bool], ...]:
    return tuple((op.kind, op.arg, op.bias is not None) for op in ops)


def train(graph: PolicyGraph, batch: RolloutBatch, settings: UpdateSettings) -> UpdateStats:
    """``settings.n_epochs`` epochs of PPO minibatch updates of ``graph``'s policy on ``batch``, in one XLA call.

    ``graph`` comes from :func:`roboppo.ppo.fast_paths.update_choice`, which decided that this path applies.
    """
    policy = graph.policy
    obs, actions = batch.observations, batch.actions
    with th.no_grad():  # the observation statistics are fixed during training
        pi_features, vf_features = policy.actor_critic_features(obs)
    n_samples = obs.shape[0]
    orders, noise = random_draws(n_samples, settings.n_epochs, actions.shape[1])
    params = graph.parameters()
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
        shape=_update_shape(graph, settings, n_samples),
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
