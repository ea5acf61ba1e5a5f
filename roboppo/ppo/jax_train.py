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

import dataclasses
import math
import os
import pathlib
import warnings
from typing import Any

import numpy as np
import torch as th

from roboppo.ppo.fast_paths import Op, PolicyGraph
from roboppo.ppo.update import Revaluation, RolloutBatch, UpdateSettings, UpdateStats, random_draws


def _update_shape(graph: PolicyGraph, settings: UpdateSettings, n_samples: int, revaluation: Revaluation | None) -> Any:
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
        recompute_advantage=revaluation is not None,
        n_envs=0 if revaluation is None else revaluation.buffer.n_envs,
    )


def _shape_of(ops: tuple[Op, ...]) -> tuple[tuple[str, float, bool], ...]:
    return tuple((op.kind, op.arg, op.bias is not None) for op in ops)


def train(
    graph: PolicyGraph, batch: RolloutBatch, settings: UpdateSettings, revaluation: Revaluation | None = None
) -> UpdateStats:
    """``settings.n_epochs`` epochs of PPO minibatch updates of ``graph``'s policy on ``batch``, in one XLA call.

    ``graph`` comes from :func:`roboppo.ppo.fast_paths.update_choice`, which decided that this path applies.
    With ``revaluation``, every epoch after the first trains on advantages and returns recomputed with
    the critic as it is then, as :func:`roboppo.ppo.torch_train.train` does.
    """
    return start(graph, batch, settings, revaluation=revaluation).apply(graph.parameters(), graph.policy.optimizer)


@dataclasses.dataclass
class PendingUpdate:
    """An update :func:`start` handed to JAX: its result (read when needed) and the settings it ran with.

    The policy is untouched until :meth:`apply` writes the result into it, so the policy can sample
    a rollout meanwhile. Pickling waits for the result and keeps it as NumPy arrays, so a model
    saved with an update pending continues exactly where it was.
    """

    outputs: Any
    settings: UpdateSettings
    #: the observation statistics the update's inputs were normalized with (set by the caller)
    statistics: list[dict[str, th.Tensor]] = dataclasses.field(default_factory=list)
    explained_variance: float = float("nan")

    def wait(self) -> None:
        """Wait for the result (it stays as NumPy arrays)."""
        self.outputs = _as_numpy(self.outputs)

    def parameters(self) -> list[np.ndarray]:
        """The trained parameters, in :meth:`PolicyGraph.parameters`'s order."""
        self.wait()
        return list(self.outputs[0])

    def apply(self, params: list[th.Tensor], optimizer: th.optim.Optimizer) -> UpdateStats:
        """Write the trained parameters into ``params`` and Adam's state into ``optimizer``; the update's statistics."""
        self.wait()
        new_params, (step, exp_avg, exp_avg_sq), stat_sums, n_minibatches, epochs_run, last_loss, kl, stop_kl = (
            self.outputs
        )
        _write_back(optimizer, params, new_params, int(step), exp_avg, exp_avg_sq)
        policy_loss, value_loss, entropy_loss, _, clip_fraction = (
            np.asarray(stat_sums) / max(int(n_minibatches), 1)
        ).tolist()
        stop = None if np.isnan(stop_kl) else float(stop_kl)
        return UpdateStats(
            policy_loss, value_loss, entropy_loss, float(kl), clip_fraction, float(last_loss), int(epochs_run), stop
        )

    def __getstate__(self) -> dict[str, Any]:
        self.wait()
        return self.__dict__


def start(
    graph: PolicyGraph,
    batch: RolloutBatch,
    settings: UpdateSettings,
    background: bool = False,
    revaluation: Revaluation | None = None,
) -> PendingUpdate:
    """Hand the update of :func:`train` to JAX and return at once, the policy untouched (JAX runs it on its threads).

    Every random draw is taken here, in the calling thread, so a run is the same whenever the result
    is read. The inputs are copies: the rollout buffer may be refilled meanwhile. ``background``:
    the update shares the cores with work that should not wait for it (the next rollout), so XLA's
    compute threads are put at the lowest priority (:func:`lower_compute_threads`).
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
    gae_inputs = None
    if revaluation is not None:
        buffer = revaluation.buffer
        hyper |= {"gamma": buffer.gamma, "gamma_lambda": buffer.gamma * buffer.gae_lambda}
        with th.no_grad():
            last_features = policy.actor_critic_features(revaluation.last_observations)[1]
        gae_inputs = (
            buffer.rewards.copy(),
            buffer.episode_starts.copy(),
            _copy(last_features),
            revaluation.last_dones.astype(np.float32),
        )
    step, exp_avg, exp_avg_sq = _adam_state(policy.optimizer, params)
    outputs = _compiled_update()(
        [_copy(p) for p in params],
        (step, [m.copy() for m in exp_avg], [m.copy() for m in exp_avg_sq]),
        tuple(_copy(t) for t in data),
        _copy(orders.int()),
        _copy(noise),
        hyper,
        gae_inputs,
        shape=_update_shape(graph, settings, n_samples, revaluation),
    )
    if background:
        lower_compute_threads()
    return PendingUpdate(outputs, settings)


#: XLA's CPU compute threads already put at the lowest priority
_LOWERED: set[int] = set()


def compute_threads() -> list[int]:
    """The ids of this process's XLA CPU compute threads (named ``*XLAEigen*``); none outside Linux."""
    tasks = pathlib.Path("/proc/self/task")
    if not tasks.is_dir():
        return []
    ids = []
    for task in tasks.iterdir():
        try:
            name = (task / "comm").read_text()
        except OSError:  # the thread ended
            continue
        if "XLAEigen" in name:
            ids.append(int(task.name))
    return ids


def lower_compute_threads() -> None:
    """Put XLA's CPU compute threads (:func:`compute_threads`) at the lowest priority, nice 19, each once.

    An update running beside a rollout then takes a core only where the rollout leaves one free,
    instead of slowing the physics threads the rollout waits for. A thread's priority cannot be
    raised again without privileges, so these threads stay at nice 19 for the rest of the process:
    other JAX work on the CPU in it (a Brax env, another model's update) runs at that priority too,
    which costs nothing on cores nothing else wants. Outside Linux, nothing is changed.
    """
    if not hasattr(os, "setpriority"):
        return
    for tid in compute_threads():
        if tid not in _LOWERED:
            os.setpriority(os.PRIO_PROCESS, tid, 19)
            _LOWERED.add(tid)


def _to_numpy(tensor: th.Tensor) -> np.ndarray:
    return tensor.detach().contiguous().numpy()


def _copy(tensor: th.Tensor) -> np.ndarray:
    """A NumPy copy (JAX may read a NumPy array in place, after the tensor behind it has changed)."""
    return tensor.detach().numpy().copy()


def _as_numpy(tree: Any) -> Any:
    """``tree`` with every array as a NumPy array (waits for JAX's results)."""
    if isinstance(tree, (list, tuple)):
        return type(tree)(_as_numpy(item) for item in tree)
    return np.asarray(tree)


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
    """Copy the trained parameters and Adam state into the torch policy and optimizer, in place where the
    optimizer already holds state tensors of the right shape (one copy each, no allocation)."""
    with th.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # JAX's results are read-only; each is copied, never written
        for index, param in enumerate(params):
            param.copy_(th.as_tensor(np.asarray(new_params[index])))
            state = optimizer.state[param]
            for key, values in (("exp_avg", exp_avg[index]), ("exp_avg_sq", exp_avg_sq[index])):
                source = th.as_tensor(np.asarray(values))
                if isinstance(state.get(key), th.Tensor) and state[key].shape == source.shape:
                    state[key].copy_(source)
                else:
                    state[key] = source.clone()
            state["step"] = th.tensor(float(step))  # float32, as torch's Adam keeps it (fused or not)


_UPDATE: Any = None


def _compiled_update() -> Any:
    """The jitted update, built on first use (importing JAX costs about a second)."""
    global _UPDATE
    if _UPDATE is None:
        from roboppo.ppo import jax_program

        _UPDATE = jax_program.build()
    return _UPDATE
