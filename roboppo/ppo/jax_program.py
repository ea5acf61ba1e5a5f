"""The JAX program behind :mod:`roboppo.ppo.jax_train`: every epoch and minibatch of a rollout in one call.

Kept apart so that importing roboppo does not import JAX. The network is the policy's
:class:`~roboppo.ppo.fast_paths.PolicyGraph`, lowered here one operation at a time
(:data:`JAX_OPS`); its operations are part of :class:`UpdateShape` (what the program is compiled
for) and its parameters come as the flat list :meth:`PolicyGraph.parameters` gives (each linear
layer's weight ``[out, in]`` and bias, actor then critic, then ``log_std``); Adam's state as
PyTorch keeps it (step count, first and second moments).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import optax

from roboppo.common.distributions import HALF_LOG_2PI, LOG_2
from roboppo_envs.jax_cache import enable_compilation_cache


@dataclasses.dataclass(frozen=True)
class UpdateShape:
    """What the compiled update is specialised on (a new value compiles a new program, ~1 s)."""

    n_samples: int
    batch_size: int
    n_epochs: int
    actor: tuple[tuple[str, float, bool], ...]  # (operation, its parameter, whether a linear layer has a bias)
    critic: tuple[tuple[str, float, bool], ...]
    normalize_advantage: bool
    clip_values: bool
    betas: tuple[float, float]
    eps: float
    recompute_advantage: bool = False
    n_envs: int = 0  # the rollout's copies, with recompute_advantage (samples are step-major: [n_steps, n_envs])


# each activation of roboppo.common.activations.ACTIVATIONS, given its parameter
JAX_OPS = {
    "tanh": lambda x, _: jnp.tanh(x),
    "relu": lambda x, _: jax.nn.relu(x),
    "elu": lambda x, alpha: jax.nn.elu(x, alpha),
    "leaky_relu": lambda x, slope: jax.nn.leaky_relu(x, slope),
    "silu": lambda x, _: jax.nn.silu(x),
    "sigmoid": lambda x, _: jax.nn.sigmoid(x),
    "identity": lambda x, _: x,
}


def build() -> Any:
    """``update`` compiled by ``jax.jit`` (one program per :class:`UpdateShape` and array shapes), run on the CPU.

    Compiled programs are kept on disk (:mod:`roboppo_envs.jax_cache`), so a later process with
    the same shapes loads the update instead of compiling it. The CPU is pinned so that a JAX
    build with GPU support does not move the update (and its host copies) to a GPU that the
    torch model does not use.
    """
    enable_compilation_cache(jax)
    compiled = jax.jit(update, static_argnames=("shape",))
    cpu = jax.devices("cpu")[0]

    def on_cpu(*args: Any, **kwargs: Any) -> Any:
        with jax.default_device(cpu):
            return compiled(*args, **kwargs)

    return on_cpu


def update(
    params: list,
    adam: tuple,
    data: tuple,
    orders: Any,
    noise: Any,
    hyper: dict,
    revaluation: tuple | None = None,
    *,
    shape: UpdateShape,
) -> tuple:
    """``shape.n_epochs`` shuffled passes of clipped-surrogate minibatch updates.

    :param params: trainable parameters (see the module docstring).
    :param adam: ``(step, exp_avg, exp_avg_sq)`` as PyTorch's Adam keeps them.
    :param data: actor features, critic features ``[n, obs_dim]``, pre-tanh actions ``[n, act_dim]``,
        old values, old log-probs, advantages, returns ``[n]``.
    :param orders: one permutation of ``range(n)`` per epoch, ``[n_epochs, n]``.
    :param noise: standard normal draws for the entropy estimate, ``[n_epochs, n, act_dim]``.
    :param hyper: ``lr``, ``clip_range``, ``clip_range_vf``, ``ent_coef``, ``vf_coef``,
        ``max_grad_norm``, ``target_kl`` (already times 1.5; ``inf`` for none); with
        ``shape.recompute_advantage`` also ``gamma`` and ``gamma_lambda`` (``gamma * gae_lambda``).
    :param revaluation: with ``shape.recompute_advantage``: the rewards and episode starts
        ``[n_steps, n_envs]``, the critic features of the observations after the last step
        ``[n_envs, obs_dim]`` and their dones ``[n_envs]``; every epoch after the first then trains on
        advantages and returns recomputed with the critic as it is (:func:`_gae`, SB3's GAE).
    :return: new parameters, new Adam state, summed minibatch statistics (policy, value and
        entropy loss, approx KL, clip fraction), number of minibatches run, epochs started,
        the last minibatch's loss, the mean approx KL of the last epoch that ran, and the approx
        KL at which ``target_kl`` stopped (NaN when it did not).
    """
    step, exp_avg, exp_avg_sq = adam
    optimizer = optax.scale_by_adam(b1=shape.betas[0], b2=shape.betas[1], eps=shape.eps)
    carry = {
        "params": params,
        "adam": optax.ScaleByAdamState(count=jnp.asarray(step, jnp.int32), mu=exp_avg, nu=exp_avg_sq),
        "stopped": jnp.asarray(False),
        "stat_sum": jnp.zeros(5),
        "n_minibatches": jnp.asarray(0),
        "epochs_run": jnp.asarray(0),
        "last_loss": jnp.asarray(0.0),
        "epoch_kl_sum": jnp.asarray(0.0),  # approx KL summed over the last epoch that ran, as SB3 logs it
        "epoch_minibatches": jnp.asarray(0),
        "stop_kl": jnp.asarray(jnp.nan),
    }

    def minibatch(carry: dict, index: Any, epoch_noise: Any, epoch_data: tuple) -> dict:
        batch = [array[index] for array in epoch_data]
        (loss, stats), grads = jax.value_and_grad(_loss, has_aux=True)(
            carry["params"], batch, epoch_noise[index], hyper, shape
        )
        counted = ~carry["stopped"]
        kl_stop = stats[3] > hyper["target_kl"]  # SB3 checks before stepping and leaves every epoch
        apply = counted & ~kl_stop
        grads = _clip_by_global_norm(grads, hyper["max_grad_norm"])
        directions, adam_state = optimizer.update(grads, carry["adam"])
        stepped = [p - hyper["lr"] * d for p, d in zip(carry["params"], directions, strict=True)]
        keep = jax.tree_util.tree_map(lambda new, old: jnp.where(apply, new, old), (stepped, adam_state),
                                      (carry["params"], carry["adam"]))  # fmt: skip
        return {
            "params": keep[0],
            "adam": keep[1],
            "stopped": carry["stopped"] | kl_stop,
            "stat_sum": carry["stat_sum"] + jnp.where(counted, stats, 0.0),
            "n_minibatches": carry["n_minibatches"] + counted,
            "epochs_run": carry["epochs_run"],
            "last_loss": jnp.where(counted, loss, carry["last_loss"]),
            "epoch_kl_sum": carry["epoch_kl_sum"] + jnp.where(counted, stats[3], 0.0),
            "epoch_minibatches": carry["epoch_minibatches"] + counted,
            "stop_kl": jnp.where(counted & kl_stop, stats[3], carry["stop_kl"]),
        }

    n_full = shape.n_samples // shape.batch_size

    def epoch(carry: dict, inputs: tuple) -> tuple[dict, None]:
        order, epoch_noise, first = inputs
        epoch_data = data
        if shape.recompute_advantage:
            assert revaluation is not None
            advantages, returns = jax.lax.cond(
                first,  # the rollout's own advantages: its values came from these weights
                lambda: (data[5], data[6]),
                lambda: _revalued(carry["params"], data[1], revaluation, hyper, shape),
            )
            epoch_data = (*data[:5], advantages, returns)
        running = ~carry["stopped"]
        carry = {
            **carry,
            "epochs_run": carry["epochs_run"] + running,
            "epoch_kl_sum": jnp.where(running, 0.0, carry["epoch_kl_sum"]),
            "epoch_minibatches": jnp.where(running, 0, carry["epoch_minibatches"]),
        }
        full = order[: n_full * shape.batch_size].reshape(n_full, shape.batch_size)
        carry, _ = jax.lax.scan(lambda c, index: (minibatch(c, index, epoch_noise, epoch_data), None), carry, full)
        if n_full * shape.batch_size < shape.n_samples:  # SB3's last, shorter minibatch
            carry = minibatch(carry, order[n_full * shape.batch_size :], epoch_noise, epoch_data)
        return carry, None

    firsts = jnp.arange(shape.n_epochs) == 0
    carry, _ = jax.lax.scan(epoch, carry, (orders, noise, firsts))
    adam_out = carry["adam"]
    last_epoch_kl = carry["epoch_kl_sum"] / jnp.maximum(carry["epoch_minibatches"], 1)
    return (
        carry["params"],
        (adam_out.count, adam_out.mu, adam_out.nu),
        carry["stat_sum"],
        carry["n_minibatches"],
        carry["epochs_run"],
        carry["last_loss"],
        last_epoch_kl,
        carry["stop_kl"],
    )


def _revalued(params: list, vf_features: Any, revaluation: tuple, hyper: dict, shape: UpdateShape) -> tuple[Any, Any]:
    """The rollout's advantages and returns (flat) under the critic ``params`` give."""
    rewards, episode_starts, last_vf_features, last_dones = revaluation
    start = sum(1 + has_bias for kind, _, has_bias in shape.actor if kind == "linear")
    values = _run(shape.critic, params, start, vf_features)[0][:, 0].reshape(-1, shape.n_envs)
    last_values = _run(shape.critic, params, start, last_vf_features)[0][:, 0]
    advantages = _gae(values, last_values, rewards, episode_starts, last_dones, hyper["gamma"], hyper["gamma_lambda"])
    return advantages.reshape(-1), (advantages + values).reshape(-1)


def _gae(
    values: Any, last_values: Any, rewards: Any, episode_starts: Any, last_dones: Any, gamma: Any, gamma_lambda: Any
) -> Any:
    """GAE ``[n_steps, n_envs]``, as SB3's ``RolloutBuffer.compute_returns_and_advantage`` computes it."""
    next_non_terminal = jnp.concatenate([1.0 - episode_starts[1:], (1.0 - last_dones)[None]])
    next_values = jnp.concatenate([values[1:], last_values[None]])
    deltas = rewards + gamma * next_values * next_non_terminal - values

    def back(gae: Any, step: tuple) -> tuple[Any, Any]:
        delta, non_terminal = step
        gae = delta + gamma_lambda * non_terminal * gae
        return gae, gae

    return jax.lax.scan(back, jnp.zeros_like(last_values), (deltas, next_non_terminal), reverse=True)[1]


def _loss(params: list, batch: list, noise: Any, hyper: dict, shape: UpdateShape) -> tuple[Any, Any]:
    """PPO's loss on one minibatch and its statistics, as :func:`roboppo.ppo.torch_train._minibatch_loss`."""
    pi_features, vf_features, actions, old_values, old_log_prob, advantages, returns = batch
    mean, values, log_std = _forward(params, pi_features, vf_features, shape)
    std = jnp.exp(log_std)
    gaussian = jnp.sum(-0.5 * ((actions - mean) / std) ** 2 - log_std - HALF_LOG_2PI, axis=-1)
    log_prob = gaussian - jnp.sum(_tanh_log_det_jacobian(actions), axis=-1)
    sampled = mean + std * noise  # the entropy estimate of roboppo.common.distributions.TanhNormalDistribution
    entropy = jnp.sum(0.5 + HALF_LOG_2PI + log_std) + jnp.sum(_tanh_log_det_jacobian(sampled), axis=-1)
    if shape.normalize_advantage and advantages.shape[0] > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std(ddof=1) + 1e-8)
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    clipped_ratio = jnp.clip(ratio, 1 - hyper["clip_range"], 1 + hyper["clip_range"])
    policy_loss = -jnp.mean(jnp.minimum(advantages * ratio, advantages * clipped_ratio))
    if shape.clip_values:
        values = old_values + jnp.clip(values - old_values, -hyper["clip_range_vf"], hyper["clip_range_vf"])
    value_loss = jnp.mean((returns - values) ** 2)
    entropy_loss = -jnp.mean(entropy)
    loss = policy_loss + hyper["ent_coef"] * entropy_loss + hyper["vf_coef"] * value_loss
    approx_kl = jnp.mean((ratio - 1) - log_ratio)
    clip_fraction = jnp.mean((jnp.abs(ratio - 1) > hyper["clip_range"]).astype(jnp.float32))
    stats = jax.lax.stop_gradient(jnp.stack([policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction]))
    return loss, stats


def _forward(params: list, pi_features: Any, vf_features: Any, shape: UpdateShape) -> tuple[Any, Any, Any]:
    """Pre-tanh action means ``[b, act_dim]``, values ``[b]`` and ``log_std`` ``[act_dim]``."""
    mean, used = _run(shape.actor, params, 0, pi_features)
    values, used = _run(shape.critic, params, used, vf_features)
    return mean, values[:, 0], params[used]


def _run(ops: tuple[tuple[str, float, bool], ...], params: list, start: int, x: Any) -> tuple[Any, int]:
    """The operations on ``x``, linear layers taking their tensors from ``params[start]`` on; the next index."""
    for kind, arg, has_bias in ops:
        if kind != "linear":
            x = JAX_OPS[kind](x, arg)
            continue
        x = x @ params[start].T
        if has_bias:
            x = x + params[start + 1]
        start += 1 + has_bias
    return x, start


def _tanh_log_det_jacobian(pre_tanh: Any) -> Any:
    """``log(1 - tanh(u)^2)`` in the stable form of :func:`roboppo.common.distributions.tanh_log_det_jacobian`."""
    return 2.0 * (LOG_2 - pre_tanh - jax.nn.softplus(-2.0 * pre_tanh))


def _clip_by_global_norm(grads: list, max_norm: Any) -> list:
    """``torch.nn.utils.clip_grad_norm_``: scale by ``max_norm / (norm + 1e-6)`` when that is below 1."""
    norm = jnp.sqrt(sum(jnp.sum(g**2) for g in grads))
    scale = jnp.minimum(max_norm / (norm + 1e-6), 1.0)
    return [g * scale for g in grads]
