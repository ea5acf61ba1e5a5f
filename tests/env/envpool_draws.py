"""The first draws of EnvPool's Go1 port, computed from its seed: each env's initial state and command.

EnvPool gives env ``i`` a ``std::mt19937`` seeded with ``seed + i``; libstdc++'s
``uniform_real_distribution<double>`` takes two 32-bit outputs per draw (``generate_canonical``)
and ``exponential_distribution`` is ``-log(1 - u)``. NumPy's legacy ``RandomState(seed)`` is the same
Mersenne Twister with the same seeding, so its raw outputs are EnvPool's. A test checks the result
against what EnvPool reports (its command), so a change of EnvPool's draws shows as a failure, not as
a silent mismatch.
"""

from __future__ import annotations

import mujoco
import numpy as np


class StdMt19937:
    """``std::mt19937`` with libstdc++'s real distributions."""

    def __init__(self, seed: int) -> None:
        self.state = np.random.RandomState(seed)

    def canonical(self) -> float:
        low, high = (int(v) for v in self.state.randint(0, 2**32, size=2, dtype=np.uint64))
        value = (low + high * 2.0**32) / 2.0**64
        return value if value < 1.0 else float(np.nextafter(1.0, 0.0))

    def uniform(self, low: float, high: float) -> float:
        return self.canonical() * (high - low) + low


def moved_and_turned(rng: StdMt19937, home_qpos: np.ndarray) -> np.ndarray:
    """Home moved by U(-0.5, 0.5) in x, then y, and turned by a yaw in U(-3.14, 3.14), as EnvPool draws them."""
    qpos = home_qpos.copy()
    qpos[0] += rng.uniform(-0.5, 0.5)
    qpos[1] += rng.uniform(-0.5, 0.5)
    yaw = rng.uniform(-3.14, 3.14)
    turned = np.empty(4)
    mujoco.mju_mulQuat(turned, qpos[3:7].copy(), np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))
    qpos[3:7] = turned
    return qpos


def go1_reset(seed: int, home_qpos: np.ndarray, nv: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """EnvPool's Go1 reset for an env seeded ``seed``: ``qpos``, ``qvel``, the first command and the steps it lasts."""
    rng = StdMt19937(seed)
    qpos = moved_and_turned(rng, home_qpos)
    qvel = np.zeros(nv)
    qvel[:6] = [rng.uniform(-0.5, 0.5) for _ in range(6)]
    countdown = round(-np.log(1.0 - rng.canonical()) * 5.0 / 0.02)
    command = np.array([rng.uniform(-a, a) for a in (1.5, 0.8, 1.2)])
    return qpos, qvel, command, countdown


def berkeley_reset(seed: int, home_qpos: np.ndarray, nv: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """EnvPool's Berkeley Humanoid reset for an env seeded ``seed``: ``qpos``, ``qvel``, the command and the gait's
    phase step."""
    rng = StdMt19937(seed)
    qpos = moved_and_turned(rng, home_qpos)
    for i in range(7, len(qpos)):
        qpos[i] *= rng.uniform(0.5, 1.5)
    qvel = np.zeros(nv)
    qvel[:6] = [rng.uniform(-0.5, 0.5) for _ in range(6)]
    phase_dt = 2 * np.pi * 0.02 * rng.uniform(1.25, 1.5)
    command = np.array([rng.uniform(-1.0, 1.0) for _ in range(3)])
    if rng.canonical() < 0.1:
        command[:] = 0.0
    return qpos, qvel, command, phase_dt


def panda_reset(seed: int, home_qpos: np.ndarray, box_qpos: int) -> tuple[np.ndarray, np.ndarray]:
    """EnvPool's PandaPickCube reset for an env seeded ``seed``: ``qpos`` (the cube moved) and the target."""
    rng = StdMt19937(seed)
    box_x, target_x, box_y, target_y = (rng.uniform(-0.2, 0.2) for _ in range(4))
    qpos = home_qpos.copy()
    qpos[box_qpos : box_qpos + 2] += (box_x, box_y)
    target = home_qpos[box_qpos : box_qpos + 3] + np.array([target_x, target_y, rng.uniform(0.2, 0.4)])
    return qpos, target
