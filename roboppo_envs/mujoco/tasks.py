"""Observations, rewards, terminations, infos and initial states of the v5 MuJoCo tasks, over a batch.

Each task reads its coefficients from a single Gymnasium v5 env (so every constructor keyword
of that env keeps working) and computes, for ``N`` simulations at once, what that env's
``step``, ``reset_model`` and ``_get_reset_info`` compute for one. The arithmetic is the same,
term by term and in the same types (a cost of float32 actions stays float32, as in Gymnasium),
so a batch equals ``N`` single envs; ``tests/env/test_mujoco_suite.py`` checks it against
Gymnasium's envs under their keywords.

A task names the ``MjData`` fields it reads (``fields``); the vector env hands them over as a dict
of ``[N, ...]`` arrays bound to its ``mujoco.batch.Batch`` (current after each step), plus a copy
of the ``before_fields`` taken before the step. ``cfrc_ext`` (contact forces) is computed by
``mj_rnePostConstraint``, which a batch step does not run: the vector env runs it after each step
when a task names that field.
"""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np
from gymnasium.envs.mujoco.ant_v5 import AntEnv
from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv
from gymnasium.envs.mujoco.hopper_v5 import HopperEnv
from gymnasium.envs.mujoco.humanoid_v5 import HumanoidEnv
from gymnasium.envs.mujoco.humanoidstandup_v5 import HumanoidStandupEnv
from gymnasium.envs.mujoco.inverted_double_pendulum_v5 import InvertedDoublePendulumEnv
from gymnasium.envs.mujoco.inverted_pendulum_v5 import InvertedPendulumEnv
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
from gymnasium.envs.mujoco.pusher_v5 import PusherEnv
from gymnasium.envs.mujoco.reacher_v5 import ReacherEnv
from gymnasium.envs.mujoco.swimmer_v5 import SwimmerEnv
from gymnasium.envs.mujoco.walker2d_v5 import Walker2dEnv

State = dict[str, np.ndarray]
Info = dict[str, np.ndarray]


def clip(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """``np.clip(values, low, high)``, NaN included, without its Python wrapper (a third of the time here)."""
    return np.minimum(np.maximum(values, low), high)


def row_norms(vectors: np.ndarray) -> np.ndarray:
    """``np.linalg.norm(v)`` of each row, computed as NumPy computes it for one vector (``sqrt(v @ v)``)."""
    return np.sqrt(np.array([row @ row for row in vectors]))


def powers_of_two(values: np.ndarray) -> np.ndarray:
    """``v ** 2`` of each entry as for a NumPy scalar: libm's ``pow`` (it may differ from ``v * v`` in the last bit)."""
    return np.array([value**2 for value in values.tolist()], dtype=np.float64)


def squared_sums(values: np.ndarray) -> np.ndarray:
    """``np.sum(np.square(v))`` of each copy's ``v`` (every axis but the first), in ``v``'s dtype."""
    return np.square(values).reshape(len(values), -1).sum(axis=1)


def healthy_ends(healthy: np.ndarray, terminate_when_unhealthy: bool) -> np.ndarray:
    """Terminations: the unhealthy copies, or none when the env does not end unhealthy episodes."""
    return ~healthy if terminate_when_unhealthy else np.zeros_like(healthy)


def position_info(xy: np.ndarray) -> Info:
    """``x_position``, ``y_position`` and ``distance_from_origin`` of each copy's ``xy`` ``[N, 2]``."""
    return {"x_position": xy[:, 0].copy(), "y_position": xy[:, 1].copy(), "distance_from_origin": row_norms(xy)}


class MujocoTask:
    """Base class: the per-batch counterpart of one Gymnasium ``MujocoEnv`` subclass.

    :param env: the single Gymnasium env whose coefficients the task reads.
    """

    fields: ClassVar[tuple[str, ...]] = ("qpos", "qvel")
    #: the fields ``step`` reads from ``before`` (the state before the step); only these are copied
    before_fields: ClassVar[tuple[str, ...]] = ()
    #: info keys (and ``"reward"``) that the Gymnasium env returns as Python scalars, not NumPy ones, and their types
    #: (a task whose term's type follows a keyword's sets its own in ``__init__``)
    python_scalars: dict[str, type] = {}
    #: attributes ``reset_model`` sets on the Gymnasium env besides its state (Reacher's ``goal``)
    left_by_reset: ClassVar[tuple[str, ...]] = ()

    def __init__(self, env: Any) -> None:
        self.init_qpos: np.ndarray = env.init_qpos
        self.init_qvel: np.ndarray = env.init_qvel
        self.noise: float = getattr(env, "_reset_noise_scale", 0.0)
        self.model: mujoco.MjModel = env.model
        self.frame_skip: int = env.frame_skip

    @property
    def dt(self) -> float:
        """``MujocoEnv.dt``, read at every step: an edit of ``model.opt.timestep`` changes the rewards too."""
        return self.model.opt.timestep * self.frame_skip

    def observe(self, state: State) -> np.ndarray:
        """Observations ``[N, obs_dim]`` (float64) of ``state``."""
        raise NotImplementedError

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        """Rewards ``[N]``, terminations ``[N]`` (bool) and info terms of one step from ``before`` to ``state``."""
        raise NotImplementedError

    def reset_info(self, state: State) -> Info:
        """The info terms ``reset`` returns (``_get_reset_info``) for the copies in ``state``."""
        return {}

    def initial_state(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``qpos, qvel`` of a new episode, drawing from ``rng`` exactly as ``reset_model`` does."""
        qpos = self.init_qpos + rng.uniform(low=-self.noise, high=self.noise, size=self.init_qpos.size)
        qvel = self.init_qvel + rng.uniform(low=-self.noise, high=self.noise, size=self.init_qvel.size)
        return qpos, qvel

    def leave_on_env(self, env: Any, qpos: np.ndarray) -> None:
        """Set what ``reset_model`` leaves on the Gymnasium env besides its state, for the episode begun at ``qpos``."""


class GaussianVelocityMixin:
    """``reset_model`` drawing the velocities from a normal distribution (HalfCheetah, Ant, the double pendulum)."""

    init_qpos: np.ndarray
    init_qvel: np.ndarray
    noise: float

    def initial_state(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        qpos = self.init_qpos + rng.uniform(low=-self.noise, high=self.noise, size=self.init_qpos.size)
        qvel = self.init_qvel + self.noise * rng.standard_normal(self.init_qvel.size)
        return qpos, qvel


# -- pendulums ----------------------------------------------------------------------------------


class InvertedPendulumTask(MujocoTask):
    """``InvertedPendulum-v5``: +1 per step while the pole stays within 0.2 rad."""

    python_scalars = {"reward": int, "reward_survive": int}

    def observe(self, state: State) -> np.ndarray:
        return np.concatenate([state["qpos"], state["qvel"]], axis=1)

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        terminated = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
        survive = (~terminated).astype(np.int64)
        return survive.astype(np.float64), terminated, {"reward_survive": survive}


class InvertedDoublePendulumTask(GaussianVelocityMixin, MujocoTask):
    """``InvertedDoublePendulum-v5``: alive bonus minus tip-distance and joint-velocity penalties."""

    fields = ("qpos", "qvel", "site_xpos", "qfrc_constraint")

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.healthy_reward: float = env._healthy_reward
        # Gymnasium's ``healthy_reward * int(not terminated)``: a Python int or float, or the keyword's NumPy type
        self.python_scalars = {"reward_survive": type(self.healthy_reward * 1)}

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

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        tip = state["site_xpos"][:, 0]
        x, y = tip[:, 0], tip[:, 2]
        terminated = y <= 1
        v1, v2 = state["qvel"][:, 1], state["qvel"][:, 2]
        dist_penalty = 0.01 * powers_of_two(x) + powers_of_two(y - 2)
        vel_penalty = 1e-3 * powers_of_two(v1) + 5e-3 * powers_of_two(v2)
        alive_bonus = self.healthy_reward * (~terminated)
        info = {"reward_survive": alive_bonus, "distance_penalty": -dist_penalty, "velocity_penalty": -vel_penalty}
        return alive_bonus - dist_penalty - vel_penalty, terminated, info


# -- planar runners: HalfCheetah, Hopper, Walker2d, Swimmer ------------------------------------------


class PlanarTask(MujocoTask):
    """A robot rewarded for its forward velocity ``(x_after - x_before) / dt`` minus a control cost."""

    before_fields = ("qpos",)
    #: how many leading ``qpos`` entries ``exclude_current_positions_from_observation`` drops
    skipped: ClassVar[int] = 1

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.forward_weight: float = env._forward_reward_weight
        self.ctrl_weight: float = env._ctrl_cost_weight
        self.skip = self.skipped if env._exclude_current_positions_from_observation else 0

    def positions(self, state: State) -> np.ndarray:
        return state["qpos"][:, self.skip :]

    def forward_and_ctrl(self, before: State, state: State, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x_velocity = (state["qpos"][:, 0] - before["qpos"][:, 0]) / self.dt
        return x_velocity, self.ctrl_weight * squared_sums(actions)


class HalfCheetahTask(GaussianVelocityMixin, PlanarTask):
    """``HalfCheetah-v5``: forward velocity - control cost; never terminates."""

    def observe(self, state: State) -> np.ndarray:
        return np.concatenate([self.positions(state), state["qvel"]], axis=1)

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        x_velocity, ctrl_cost = self.forward_and_ctrl(before, state, actions)
        forward = self.forward_weight * x_velocity
        info = {"x_position": state["qpos"][:, 0].copy(), "x_velocity": x_velocity}
        info |= {"reward_forward": forward, "reward_ctrl": -ctrl_cost}
        return forward - ctrl_cost, np.zeros(len(obs), dtype=bool), info

    def reset_info(self, state: State) -> Info:
        return {"x_position": state["qpos"][:, 0].copy()}


class SwimmerTask(PlanarTask):
    """``Swimmer-v5``: forward velocity - control cost; never terminates."""

    skipped = 2

    def observe(self, state: State) -> np.ndarray:
        return np.concatenate([self.positions(state), state["qvel"]], axis=1)

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        xy_velocity = (state["qpos"][:, :2] - before["qpos"][:, :2]) / self.dt
        ctrl_cost = self.ctrl_weight * squared_sums(actions)
        forward = self.forward_weight * xy_velocity[:, 0]
        info = self.reset_info(state) | {"x_velocity": xy_velocity[:, 0], "y_velocity": xy_velocity[:, 1]}
        info |= {"reward_forward": forward, "reward_ctrl": -ctrl_cost}
        return forward - ctrl_cost, np.zeros(len(obs), dtype=bool), info

    def reset_info(self, state: State) -> Info:
        return position_info(state["qpos"][:, :2])


class HoppingTask(PlanarTask):
    """Hopper and Walker2d: forward velocity + healthy bonus - control cost; ends when unhealthy."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.healthy_reward: float = env._healthy_reward
        self.terminate_when_unhealthy: bool = env._terminate_when_unhealthy
        self.z_range: tuple[float, float] = env._healthy_z_range
        self.angle_range: tuple[float, float] = env._healthy_angle_range

    def observe(self, state: State) -> np.ndarray:
        return np.concatenate([self.positions(state), clip(state["qvel"], -10.0, 10.0)], axis=1)

    def is_healthy(self, state: State) -> np.ndarray:
        """``min_z < z < max_z`` and ``min_angle < angle < max_angle`` (strict, as Gymnasium's)."""
        z, angle = state["qpos"][:, 1], state["qpos"][:, 2]
        (z_low, z_high), (angle_low, angle_high) = self.z_range, self.angle_range
        return (z_low < z) & (z < z_high) & (angle_low < angle) & (angle < angle_high)

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        x_velocity, ctrl_cost = self.forward_and_ctrl(before, state, actions)
        healthy = self.is_healthy(state)
        forward = self.forward_weight * x_velocity
        survive = healthy * self.healthy_reward
        terminated = healthy_ends(healthy, self.terminate_when_unhealthy)
        info = self.reset_info(state) | {"x_velocity": x_velocity}
        info |= {"reward_forward": forward, "reward_ctrl": -ctrl_cost, "reward_survive": survive}
        return forward + survive - ctrl_cost, terminated, info

    def reset_info(self, state: State) -> Info:
        qpos = state["qpos"]
        return {"x_position": qpos[:, 0].copy(), "z_distance_from_origin": qpos[:, 1] - self.init_qpos[1]}


class HopperTask(HoppingTask):
    """``Hopper-v5``: also every entry of ``state_vector()[2:]`` (the angle included) within ``healthy_state_range``."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.state_range: tuple[float, float] = env._healthy_state_range
        # Gymnasium's ``is_healthy * healthy_reward`` (a Python bool times the keyword): the keyword's type
        self.python_scalars = {"reward_survive": type(True * self.healthy_reward)}

    def is_healthy(self, state: State) -> np.ndarray:
        rest = np.concatenate([state["qpos"][:, 2:], state["qvel"]], axis=1)
        low, high = self.state_range
        return super().is_healthy(state) & ((low < rest) & (rest < high)).all(axis=1)


class Walker2dTask(HoppingTask):
    """``Walker2d-v5``."""


# -- Ant, Humanoid, HumanoidStandup: free bodies with contact forces -------------------------------


class FreeBodyTask(MujocoTask):
    """A robot on a free joint: the first two ``qpos`` entries (x, y) may leave the observation."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.skip = 2 if env._exclude_current_positions_from_observation else 0

    def xy_info(self, state: State) -> Info:
        qpos = state["qpos"]
        return {"x_position": qpos[:, 0].copy(), "y_position": qpos[:, 1].copy()}


class AntTask(GaussianVelocityMixin, FreeBodyTask):
    """``Ant-v5``: main body's forward velocity + healthy bonus - control and contact costs."""

    fields = ("qpos", "qvel", "xpos", "cfrc_ext")
    before_fields = ("xpos",)

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.forward_weight: float = env._forward_reward_weight
        self.ctrl_weight: float = env._ctrl_cost_weight
        self.contact_weight: float = env._contact_cost_weight
        self.healthy_reward: float = env._healthy_reward
        self.terminate_when_unhealthy: bool = env._terminate_when_unhealthy
        self.z_range: tuple[float, float] = env._healthy_z_range
        self.force_range: tuple[float, float] = env._contact_force_range
        self.main_body: int = env.model.body(env._main_body).id
        self.include_cfrc: bool = env._include_cfrc_ext_in_observation

    def contact_forces(self, state: State) -> np.ndarray:
        return clip(state["cfrc_ext"], *self.force_range)

    def observe(self, state: State) -> np.ndarray:
        parts = [state["qpos"][:, self.skip :], state["qvel"]]
        if self.include_cfrc:
            parts.append(self.contact_forces(state)[:, 1:].reshape(len(parts[0]), -1))
        return np.concatenate(parts, axis=1)

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        body = self.main_body
        xy_velocity = (state["xpos"][:, body, :2] - before["xpos"][:, body, :2]) / self.dt
        forward = xy_velocity[:, 0] * self.forward_weight
        z = state["qpos"][:, 2]
        finite = np.isfinite(state["qpos"]).all(axis=1) & np.isfinite(state["qvel"]).all(axis=1)
        healthy = finite & (self.z_range[0] <= z) & (z <= self.z_range[1])
        survive = healthy * self.healthy_reward
        ctrl_cost = self.ctrl_weight * squared_sums(actions)
        contact_cost = self.contact_weight * squared_sums(self.contact_forces(state))
        terminated = healthy_ends(healthy, self.terminate_when_unhealthy)
        info = self.reset_info(state) | {"x_velocity": xy_velocity[:, 0], "y_velocity": xy_velocity[:, 1]}
        info |= {"reward_forward": forward, "reward_ctrl": -ctrl_cost, "reward_contact": -contact_cost}
        info["reward_survive"] = survive
        return forward + survive - (ctrl_cost + contact_cost), terminated, info

    def reset_info(self, state: State) -> Info:
        return position_info(state["qpos"][:, :2])


class HumanoidBodyTask(FreeBodyTask):
    """What Humanoid and HumanoidStandup share: observation parts, tendon infos, the quadratic costs."""

    fields: ClassVar[tuple[str, ...]] = (
        "qpos", "qvel", "ctrl", "cinert", "cvel", "qfrc_actuator", "cfrc_ext", "ten_length", "ten_velocity",
    )  # fmt: skip

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.ctrl_weight: float = env._ctrl_cost_weight
        self.parts = [
            name
            for name, included in [
                ("cinert", env._include_cinert_in_observation),
                ("cvel", env._include_cvel_in_observation),
                ("qfrc_actuator", env._include_qfrc_actuator_in_observation),
                ("cfrc_ext", env._include_cfrc_ext_in_observation),
            ]
            if included is True
        ]

    def observe(self, state: State) -> np.ndarray:
        n = len(state["qpos"])
        parts = [state["qpos"][:, self.skip :], state["qvel"]]
        for name in self.parts:
            part = state[name][:, 6:] if name == "qfrc_actuator" else state[name][:, 1:]
            parts.append(part.reshape(n, -1))
        return np.concatenate(parts, axis=1)

    def tendon_info(self, state: State) -> Info:
        return {"tendon_length": state["ten_length"].copy(), "tendon_velocity": state["ten_velocity"].copy()}

    def quadratic_costs(self, state: State, weight: float, cost_range: tuple[float, float]) -> tuple[np.ndarray, ...]:
        """The control cost (of ``data.ctrl``) and the contact cost ``weight * sum(cfrc_ext**2)`` in ``cost_range``."""
        contact = np.clip(weight * squared_sums(state["cfrc_ext"]), *cost_range)
        return self.ctrl_weight * squared_sums(state["ctrl"]), contact


class HumanoidTask(HumanoidBodyTask):
    """``Humanoid-v5``: center-of-mass forward velocity + healthy bonus - control and contact costs."""

    fields = (*HumanoidBodyTask.fields, "xipos")
    before_fields = ("xipos",)

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.forward_weight: float = env._forward_reward_weight
        self.contact_weight: float = env._contact_cost_weight
        self.contact_range: tuple[float, float] = env._contact_cost_range
        self.healthy_reward: float = env._healthy_reward
        self.terminate_when_unhealthy: bool = env._terminate_when_unhealthy
        self.z_range: tuple[float, float] = env._healthy_z_range
        self.body_mass: np.ndarray = env.model.body_mass

    def mass_center(self, xipos: np.ndarray) -> np.ndarray:
        """Gymnasium's ``mass_center`` (``x, y`` of the mass-weighted mean of ``xipos``) of each copy.

        Its ``einsum("b,bj->j")`` adds the bodies' terms in order, as this sum over the body axis does."""
        weighted = (self.body_mass[None, :, None] * xipos).sum(axis=1)
        return (weighted / self.body_mass.sum())[:, :2]

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        xy_velocity = (self.mass_center(state["xipos"]) - self.mass_center(before["xipos"])) / self.dt
        forward = self.forward_weight * xy_velocity[:, 0]
        z = state["qpos"][:, 2]
        healthy = (self.z_range[0] < z) & (z < self.z_range[1])
        survive = healthy * self.healthy_reward
        ctrl_cost, contact_cost = self.quadratic_costs(state, self.contact_weight, self.contact_range)
        terminated = healthy_ends(healthy, self.terminate_when_unhealthy)
        info = self.reset_info(state) | {"x_velocity": xy_velocity[:, 0], "y_velocity": xy_velocity[:, 1]}
        info |= {"reward_survive": survive, "reward_forward": forward}
        info |= {"reward_ctrl": -ctrl_cost, "reward_contact": -contact_cost}
        return forward + survive - (ctrl_cost + contact_cost), terminated, info

    def reset_info(self, state: State) -> Info:
        return position_info(state["qpos"][:, :2]) | self.tendon_info(state)


class HumanoidStandupTask(HumanoidBodyTask):
    """``HumanoidStandup-v5``: torso height per timestep - control and impact costs + 1; never terminates."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.uph_weight: float = env._uph_cost_weight
        self.impact_weight: float = env._impact_cost_weight
        self.impact_range: tuple[float, float] = env._impact_cost_range

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        uph = (state["qpos"][:, 2] - 0) / self.model.opt.timestep
        ctrl_cost, impact_cost = self.quadratic_costs(state, self.impact_weight, self.impact_range)
        info = self.reset_info(state) | {"reward_linup": uph, "reward_quadctrl": -ctrl_cost}
        info["reward_impact"] = -impact_cost
        return uph - ctrl_cost - impact_cost + 1, np.zeros(len(obs), dtype=bool), info

    def reset_info(self, state: State) -> Info:
        qpos = state["qpos"]
        info = self.xy_info(state) | {"z_distance_from_origin": qpos[:, 2] - self.init_qpos[2]}
        return info | self.tendon_info(state)


# -- arms: Reacher, Pusher -----------------------------------------------------------------------


class ArmTask(MujocoTask):
    """A fixed-base arm rewarded for distances between bodies; never terminates."""

    fields = ("qpos", "qvel", "xpos")

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.body = {name: env.model.body(name).id for name in self.bodies}

    bodies: ClassVar[tuple[str, ...]] = ()

    def com(self, state: State, name: str) -> np.ndarray:
        """``get_body_com(name)`` of each copy: the body's ``xpos``."""
        return state["xpos"][:, self.body[name]]


class ReacherTask(ArmTask):
    """``Reacher-v5``: minus the fingertip's distance to the target minus a control cost."""

    bodies = ("fingertip", "target")
    left_by_reset = ("goal",)

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.dist_weight: float = env._reward_dist_weight
        self.control_weight: float = env._reward_control_weight

    def observe(self, state: State) -> np.ndarray:
        qpos, theta = state["qpos"], state["qpos"][:, :2]
        gap = (self.com(state, "fingertip") - self.com(state, "target"))[:, :2]
        return np.concatenate([np.cos(theta), np.sin(theta), qpos[:, 2:], state["qvel"][:, :2], gap], axis=1)

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        reward_dist = -row_norms(self.com(state, "fingertip") - self.com(state, "target")) * self.dist_weight
        reward_ctrl = -squared_sums(actions) * self.control_weight
        info = {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl}
        return reward_dist + reward_ctrl, np.zeros(len(obs), dtype=bool), info

    def initial_state(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        qpos = rng.uniform(low=-0.1, high=0.1, size=self.init_qpos.size) + self.init_qpos
        while True:
            goal = rng.uniform(low=-0.2, high=0.2, size=2)
            if np.linalg.norm(goal) < 0.2:
                break
        qpos[-2:] = goal
        qvel = self.init_qvel + rng.uniform(low=-0.005, high=0.005, size=self.init_qvel.size)
        qvel[-2:] = 0
        return qpos, qvel

    def leave_on_env(self, env: Any, qpos: np.ndarray) -> None:
        env.goal = qpos[-2:].copy()


class PusherTask(ArmTask):
    """``Pusher-v5``: minus the arm's distance to the object, the object's to the goal, and a control cost."""

    bodies = ("tips_arm", "object", "goal")
    left_by_reset = ("cylinder_pos", "goal_pos", "init_qpos")

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.near_weight: float = env._reward_near_weight
        self.dist_weight: float = env._reward_dist_weight
        self.control_weight: float = env._reward_control_weight

    def observe(self, state: State) -> np.ndarray:
        bodies = [self.com(state, name) for name in self.bodies]
        return np.concatenate([state["qpos"][:, :7], state["qvel"][:, :7], *bodies], axis=1)

    def step(
        self, before: State, state: State, actions: np.ndarray, obs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Info]:
        target = self.com(state, "object")
        reward_near = -row_norms(target - self.com(state, "tips_arm")) * self.near_weight
        reward_dist = -row_norms(target - self.com(state, "goal")) * self.dist_weight
        reward_ctrl = -squared_sums(actions) * self.control_weight
        info = {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl, "reward_near": reward_near}
        return reward_dist + reward_ctrl + reward_near, np.zeros(len(obs), dtype=bool), info

    def initial_state(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        # Gymnasium writes the cylinder and goal into init_qpos itself (``qpos = self.init_qpos``); only
        # those four entries change, and each reset overwrites them, so a copy here draws the same states
        qpos = self.init_qpos.copy()
        goal = np.asarray([0, 0])
        while True:
            cylinder = np.concatenate([rng.uniform(low=-0.3, high=0, size=1), rng.uniform(low=-0.2, high=0.2, size=1)])
            if np.linalg.norm(cylinder - goal) > 0.17:
                break
        qpos[-4:-2] = cylinder
        qpos[-2:] = goal
        qvel = self.init_qvel + rng.uniform(low=-0.005, high=0.005, size=self.init_qvel.size)
        qvel[-4:] = 0
        return qpos, qvel

    def leave_on_env(self, env: Any, qpos: np.ndarray) -> None:
        env.cylinder_pos, env.goal_pos = qpos[-4:-2].copy(), np.asarray([0, 0])
        env.init_qpos[-4:] = qpos[-4:]  # Gymnasium's ``qpos = self.init_qpos``, written into


#: the eleven v5 tasks: for each, Gymnasium's env class (its keywords, model and spaces) and the task that batches it;
#: ``roboppo/<Name>-v5`` is ``<Name>-v5`` batched
SUITE: dict[str, tuple[type[MujocoEnv], type[MujocoTask]]] = {
    "Ant": (AntEnv, AntTask),
    "HalfCheetah": (HalfCheetahEnv, HalfCheetahTask),
    "Hopper": (HopperEnv, HopperTask),
    "Humanoid": (HumanoidEnv, HumanoidTask),
    "HumanoidStandup": (HumanoidStandupEnv, HumanoidStandupTask),
    "InvertedDoublePendulum": (InvertedDoublePendulumEnv, InvertedDoublePendulumTask),
    "InvertedPendulum": (InvertedPendulumEnv, InvertedPendulumTask),
    "Pusher": (PusherEnv, PusherTask),
    "Reacher": (ReacherEnv, ReacherTask),
    "Swimmer": (SwimmerEnv, SwimmerTask),
    "Walker2d": (Walker2dEnv, Walker2dTask),
}
