"""Observations, rewards, terminations and initial states of the v5 MuJoCo tasks, over a batch.

Each task reads its coefficients from a single Gymnasium v5 env (so every constructor keyword
of that env keeps working) and computes, for ``N`` simulations at once, what that env's
``step`` and ``reset_model`` compute for one. The arithmetic is the same, term by term, so a
batch equals ``N`` single envs (``tests/env/test_mujoco_vector_env.py`` checks it).

A task names the ``MjData`` fields it reads (``fields``); the vector env hands them over as a dict
of ``[N, ...]`` arrays bound to its ``mujoco.batch.Batch`` (current after each step), plus a copy
of the ``before_fields`` taken before the step.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import numpy as np

State = dict[str, np.ndarray]


def clip(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """``np.clip(values, low, high)``, NaN included, without its Python wrapper (a third of the time here)."""
    return np.minimum(np.maximum(values, low), high)


class MujocoTask:
    """Base class: the per-batch counterpart of one Gymnasium ``MujocoEnv`` subclass."""

    fields: ClassVar[tuple[str, ...]] = ("qpos", "qvel")
    #: the fields ``reward_and_termination`` reads from ``before`` (the state before the step); only these
    #: are copied, so a task that reads another field of ``before`` must name it here
    before_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, env: Any) -> None:
        self.init_qpos: np.ndarray = env.init_qpos
        self.init_qvel: np.ndarray = env.init_qvel
        self.noise: float = env._reset_noise_scale
        self.dt: float = env.dt

    def observe(self, state: State) -> np.ndarray:
        """Observations ``[N, obs_dim]`` (float64) of ``state``."""
        raise NotImplementedError

    def reward_and_termination(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rewards ``[N]`` (float64) and terminations ``[N]`` (bool) of one step from ``before`` to ``state``."""
        raise NotImplementedError

    def initial_state(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``qpos, qvel`` of a new episode, drawing from ``rng`` exactly as ``reset_model`` does."""
        qpos = self.init_qpos + rng.uniform(low=-self.noise, high=self.noise, size=self.init_qpos.size)
        qvel = self.init_qvel + rng.uniform(low=-self.noise, high=self.noise, size=self.init_qvel.size)
        return qpos, qvel


class InvertedPendulumTask(MujocoTask):
    """``InvertedPendulum-v5``: +1 per step while the pole stays within 0.2 rad."""

    def observe(self, state: State) -> np.ndarray:
        return np.concatenate([state["qpos"], state["qvel"]], axis=1)

    def reward_and_termination(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        terminated = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
        return (~terminated).astype(np.float64), terminated


class InvertedDoublePendulumTask(MujocoTask):
    """``InvertedDoublePendulum-v5``: alive bonus minus tip-distance and joint-velocity penalties."""

    fields = ("qpos", "qvel", "site_xpos", "qfrc_constraint")

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.healthy_reward: float = env._healthy_reward

    def observe(self, state: State) -> np.ndarray:
        qpos = state["qpos"]
        parts = [
            qpos[:, :1],
            np.sin(qpos[:, 1:]),
            np.cos(qpos[:, 1:]),
            clip(state["qvel"], -10.0, 10.0),
            clip(state["qfrc_constraint"][:, :1], -10.0, 10.0),
        ]
        return np.concatenate(parts, axis=1)

    def reward_and_termination(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        tip = state["site_xpos"][:, 0]
        x, y = tip[:, 0], tip[:, 2]
        terminated = y <= 1
        v1, v2 = state["qvel"][:, 1], state["qvel"][:, 2]
        dist_penalty = 0.01 * x**2 + (y - 2) ** 2
        vel_penalty = 1e-3 * v1**2 + 5e-3 * v2**2
        alive_bonus = self.healthy_reward * (~terminated)
        return alive_bonus - dist_penalty - vel_penalty, terminated

    def initial_state(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        qpos = self.init_qpos + rng.uniform(low=-self.noise, high=self.noise, size=self.init_qpos.size)
        qvel = self.init_qvel + rng.standard_normal(self.init_qvel.size) * self.noise
        return qpos, qvel


class HopperTask(MujocoTask):
    """``Hopper-v5``: forward velocity + healthy bonus - control cost; ends when unhealthy."""

    before_fields = ("qpos",)

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.forward_weight: float = env._forward_reward_weight
        self.ctrl_weight: float = env._ctrl_cost_weight
        self.healthy_reward: float = env._healthy_reward
        self.terminate_when_unhealthy: bool = env._terminate_when_unhealthy
        self.skip_x: bool = env._exclude_current_positions_from_observation
        # is_healthy's three ranges as bounds on state_vector()[1:]: z, the torso angle, then the rest
        size = self.init_qpos.size + self.init_qvel.size - 1
        (z_low, z_high), (angle_low, angle_high) = env._healthy_z_range, env._healthy_angle_range
        self.healthy_low = np.full(size, env._healthy_state_range[0], dtype=np.float64)
        self.healthy_high = np.full(size, env._healthy_state_range[1], dtype=np.float64)
        self.healthy_low[:2] = z_low, angle_low
        self.healthy_high[:2] = z_high, angle_high

    def observe(self, state: State) -> np.ndarray:
        position = state["qpos"][:, 1:] if self.skip_x else state["qpos"]
        return np.concatenate([position, clip(state["qvel"], -10.0, 10.0)], axis=1)

    def is_healthy(self, state: State) -> np.ndarray:
        """Gymnasium's three strict range checks (z, angle, the rest of the state) as one comparison per bound."""
        checked = np.concatenate([state["qpos"], state["qvel"]], axis=1)[:, 1:]
        within = (self.healthy_low < checked) & (checked < self.healthy_high)
        return cast(np.ndarray, within.all(axis=1))

    def reward_and_termination(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        x_velocity = (state["qpos"][:, 0] - before["qpos"][:, 0]) / self.dt
        healthy = self.is_healthy(state)
        rewards = self.forward_weight * x_velocity + healthy * self.healthy_reward
        ctrl_cost = self.ctrl_weight * np.square(actions).sum(axis=1)
        terminated = ~healthy if self.terminate_when_unhealthy else np.zeros_like(healthy)
        return rewards - ctrl_cost, terminated
