"""Episodes that end early, in adversarial imitation: the absorbing state of Kostrikov et al. 2019.

Hopper's episodes end when it falls. Handled naively, GAIL leaks the episode length into the
reward: its reward ``-log(1 - D)`` is never negative, so every step survived pays whatever the
agent does and falling is penalised by construction; the logit reward ``log D - log(1 - D)`` errs
the other way. imitation refuses variable horizons for this reason.

"Discriminator-Actor-Critic" (DAC, ICLR 2019) makes termination a transition into an *absorbing
state* that loops on itself forever, and lets the discriminator learn its reward like any other:

- the discriminator sees one more input feature, the **absorbing indicator** (0 for real states,
  1 for the absorbing state, whose other features are 0) and a **fixed absorbing action** (0);
- an episode that **terminated**, in the expert data or the generator's, gets the transition into
  the absorbing state and one (absorbing, absorbing action) sample; an episode cut by the time
  limit gets neither, since it did not end;
- the **policy's value bootstrap**: after a terminating step the return continues in the absorbing
  state forever, ``gamma * r_abs / (1 - gamma)`` with ``r_abs`` the reward the discriminator now
  gives the absorbing state. :class:`AbsorbingBootstrap` adds it to the terminating step's reward,
  so PPO's targets need no absorbing observation.

One change to the published method, for on-policy PPO: the absorbing state is a single point, so
the discriminator's best output there has a closed form, the log-ratio of how often the expert's
and the generator's data are in it (:func:`absorbing_logit`). :class:`AbsorbingRewardNet` uses that
value for absorbing samples and its network for every other one. Learned as a network weight
instead, it lagged behind the generator: for the first ~150k steps on Hopper (and ~20k on the
pendulum) the discriminator paid about as much for the absorbing state as for the generator's real
states, so falling at once was worth the ``1 / (1 - gamma)`` bootstrap, and the generator learned
to fall (evaluation returns 5-9 on Hopper, 2-100 on the pendulum).

An expert that never falls gives the discriminator absorbing samples from the generator only, so
it learns that ending is not expert-like; an expert that ends its episodes (reaching a goal) makes
ending rewarding. Either way it is learned from the data. The policy itself only ever sees the
env's observations, so the trained generator runs on the plain env.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from imitation.data import buffer, rollout, types
from imitation.rewards import reward_nets
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

ABSORBING_INFO = {"absorbing": True}


def with_indicator(obs: np.ndarray) -> np.ndarray:
    """``obs`` ``[n, dim]`` with the absorbing indicator column (0: a real state) appended."""
    obs = np.asarray(obs)
    return np.concatenate([obs.reshape(len(obs), -1), np.zeros((len(obs), 1), obs.dtype)], axis=1)


def absorbing_state(obs_dim: int, dtype: Any = np.float32) -> np.ndarray:
    """The absorbing state: every feature 0, the indicator 1 (``obs_dim + 1`` values)."""
    state = np.zeros(obs_dim + 1, dtype)
    state[-1] = 1
    return state


def indicator_space(space: gym.spaces.Box) -> gym.spaces.Box:
    """``space`` flattened, with the indicator's [0, 1] appended: what the discriminator reads."""
    low, high = space.low.reshape(-1), space.high.reshape(-1)
    dtype = space.dtype
    return gym.spaces.Box(np.append(low, 0).astype(dtype), np.append(high, 1).astype(dtype), dtype=dtype)  # type: ignore[arg-type]


def add_absorbing(transitions: types.Transitions, terminated: np.ndarray) -> types.Transitions:
    """Indicator column on every state; each terminated transition leads into the absorbing state,
    followed by one (absorbing state, absorbing action) sample."""
    rows = np.flatnonzero(terminated) + 1
    obs = with_indicator(types.assert_not_dictobs(transitions.obs))
    next_obs = with_indicator(types.assert_not_dictobs(transitions.next_obs))
    absorbing = absorbing_state(obs.shape[1] - 1, obs.dtype)
    next_obs[terminated] = absorbing
    acts = np.asarray(transitions.acts)
    infos = transitions.infos if transitions.infos is not None else np.array([{}] * len(acts))
    absorbing_infos = np.empty(len(rows), dtype=object)
    absorbing_infos[:] = [ABSORBING_INFO] * len(rows)
    return types.Transitions(
        obs=np.insert(obs, rows, absorbing, axis=0),
        acts=np.insert(acts, rows, np.zeros(acts.shape[1:], acts.dtype), axis=0),
        infos=np.insert(np.asarray(infos, dtype=object), rows, absorbing_infos),
        next_obs=np.insert(next_obs, rows, absorbing, axis=0),
        dones=np.insert(np.asarray(transitions.dones) & ~terminated, rows, True),
    )


def expert_transitions(trajectories: Sequence[types.Trajectory]) -> types.Transitions:
    """The expert's transitions with the absorbing state after each episode that terminated.

    ``Trajectory.terminal`` must mean *terminated* (not cut by the time limit), as
    :func:`roboppo.gail.load_demonstrations` sets it.
    """
    flat = rollout.flatten_trajectories(list(trajectories))
    return add_absorbing(flat, np.asarray(flat.dones, bool))


def terminations(dones: np.ndarray, infos: Sequence[dict[str, Any]] | np.ndarray) -> np.ndarray:
    """Which ends terminated: done, and not by the time limit (SB3's ``TimeLimit.truncated`` info key)."""
    truncated = np.array([bool(info.get("TimeLimit.truncated", False)) for info in infos], dtype=bool)
    return np.asarray(dones, bool) & ~truncated


def generator_terminations(transitions: types.Transitions) -> np.ndarray:
    """Which generator transitions terminated (:func:`terminations` of their dones and infos)."""
    infos = transitions.infos if transitions.infos is not None else [{}] * len(transitions.dones)
    return terminations(transitions.dones, infos)


class AbsorbingReplayBuffer(buffer.ReplayBuffer):
    """imitation's generator replay buffer, storing transitions as :func:`add_absorbing` makes them."""

    def __init__(self, capacity: int, observation_space: gym.spaces.Box, action_space: gym.spaces.Box) -> None:
        assert action_space.shape is not None
        super().__init__(
            capacity,
            obs_shape=indicator_space(observation_space).shape,
            act_shape=action_space.shape,
            obs_dtype=observation_space.dtype,
            act_dtype=action_space.dtype,
        )

        self.absorbing_fraction = absorbing_fraction(0, 0)

    def store(self, transitions: types.Transitions, truncate_ok: bool = True) -> None:
        """Store one round's samples; :attr:`absorbing_fraction` is then theirs."""
        terminated = generator_terminations(transitions)
        super().store(add_absorbing(transitions, terminated), truncate_ok=truncate_ok)
        count = int(terminated.sum())
        self.absorbing_fraction = absorbing_fraction(count, len(terminated) + count)


class AbsorbingBootstrap(VecEnvWrapper):
    """Adds the absorbing state's discounted value to the reward of every terminating step.

    :param value: ``gamma * r_abs / (1 - gamma)`` for the current discriminator; its owner sets
        :attr:`value` again whenever the absorbing reward changes (once per GAIL round).
    """

    def __init__(self, venv: VecEnv, value: float) -> None:
        super().__init__(venv)
        self.value = value

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        terminated = terminations(dones, infos)
        if terminated.any():
            rewards = np.where(terminated, rewards + self.value, rewards)
        return obs, rewards, dones, infos


def absorbing_logit(expert_fraction: float, generator_fraction: float) -> float:
    """The optimal discriminator logit on the absorbing state: ``log(p_expert / p_generator)``, with
    ``p`` the fraction of each side's transitions that are absorbing samples."""
    return float(np.log(expert_fraction) - np.log(generator_fraction))


def absorbing_fraction(count: int, total: int) -> float:
    """How often a dataset is in the absorbing state, with half a sample added (never 0 or 1)."""
    return (count + 0.5) / (total + 1.0)


class AbsorbingRewardNet(reward_nets.RewardNet):
    """A reward network on states with the absorbing indicator: ``inner`` (on the env's observations)
    for real states, :attr:`absorbing_logit` for the absorbing state.

    :param inner: imitation's network for real states (``BasicRewardNet``, possibly spectrally normalized).
    """

    def __init__(self, inner: reward_nets.RewardNet) -> None:
        assert isinstance(inner.observation_space, gym.spaces.Box)
        super().__init__(indicator_space(inner.observation_space), inner.action_space, inner.normalize_images)
        self.inner = inner
        self.absorbing_logit: th.Tensor
        self.register_buffer("absorbing_logit", th.tensor(0.0))

    def forward(self, state: th.Tensor, action: th.Tensor, next_state: th.Tensor, done: th.Tensor) -> th.Tensor:
        absorbing = state[:, -1] > 0.5
        real = self.inner(state[:, :-1], action, next_state[:, :-1], done)
        return th.where(absorbing, self.absorbing_logit.to(real.dtype), real)
