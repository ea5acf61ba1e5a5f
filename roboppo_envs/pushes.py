"""Pushes: MuJoCo Playground's velocity kicks on a robot's torso, for any of roboppo's batched MuJoCo envs.

A kick is a horizontal half-sine force ``0.5 sin(pi t / T) m v / T`` on the torso over ``T`` seconds
(``m`` the robot's mass), in a direction drawn when it starts, after a wait; each episode draws its
speed scale ``v``, length ``T`` and wait (Playground's ``_maybe_apply_perturbation`` and ``pert_config``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

#: Playground's ranges: the speed scale (m/s), the kick's length (s), the wait before each kick (s)
PUSHES = {"velocity_kick": (0.0, 3.0), "kick_durations": (0.05, 0.2), "kick_wait_times": (1.0, 3.0)}


def checked_pushes(
    pushes: bool | Mapping[str, Any] | None,
    env: str,
    defaults: dict[str, tuple[float, float]] = PUSHES,
    times: tuple[str, ...] = ("kick_durations", "kick_wait_times"),
) -> dict[str, tuple[float, float]] | None:
    """The push ranges: ``defaults`` (Playground's kicks), updated by a mapping; None for no pushes.

    :param times: the keys that are durations, which must be > 0 s.
    """
    if pushes is False or pushes is None:
        return None
    if pushes is True:
        return dict(defaults)
    if not isinstance(pushes, Mapping):
        raise TypeError(f"{env}: pushes must be True, False or a mapping of {sorted(defaults)}, got {pushes!r}.")
    ranges = dict(defaults)
    for key, value in pushes.items():
        if key not in defaults:
            raise ValueError(f"{env}: unknown pushes key {key!r}; the keys are {', '.join(defaults)}.")
        try:
            low, high = (float(bound) for bound in value)
        except (TypeError, ValueError):
            raise ValueError(f"{env}: pushes[{key!r}] must be a (low, high) pair of numbers, got {value!r}.") from None
        if not (0 <= low <= high < np.inf) or (key in times and low <= 0):
            raise ValueError(
                f"{env}: pushes[{key!r}] must be 0 <= low <= high (durations and waits > 0 s), got ({low}, {high})."
            )
        ranges[key] = (low, high)
    return ranges


class Kicks:
    """Each copy's kick schedule and progress, and the force it writes into the batch's ``xfrc_applied``.

    :param xfrc: the batch's live ``xfrc_applied`` rows ``[num_envs, nbody, 6]``.
    :param body: the torso's body id; ``mass``: the mass the kick moves (kg); ``dt``: the control period (s).
    """

    #: the per-copy arrays, as a saved state holds them
    ARRAYS = ("wait", "seconds", "steps_total", "speed", "since", "step", "direction")

    def __init__(self, ranges: dict[str, tuple[float, float]], xfrc: np.ndarray, body: int, mass: float, dt: float):
        self.ranges, self.xfrc, self.body, self.mass, self.dt = ranges, xfrc, body, mass, dt
        n = len(xfrc)
        self.wait = np.zeros(n, dtype=np.int64)  # control steps before a kick
        self.seconds = np.ones(n)  # a kick's length
        self.steps_total = np.zeros(n, dtype=np.int64)
        self.speed = np.zeros(n)
        self.since = np.zeros(n, dtype=np.int64)  # steps since the last kick ended
        self.step = np.zeros(n, dtype=np.int64)  # steps into the current kick
        self.direction = np.zeros((n, 3))

    def schedule(self, index: int, rng: np.random.Generator) -> None:
        """A new episode's wait, length and speed scale for copy ``index``, from its generator."""
        self.wait[index] = round(rng.uniform(*self.ranges["kick_wait_times"]) / self.dt)
        self.seconds[index] = rng.uniform(*self.ranges["kick_durations"])
        self.steps_total[index] = round(self.seconds[index] / self.dt)
        self.speed[index] = rng.uniform(*self.ranges["velocity_kick"])
        self.since[index] = self.step[index] = 0
        self.direction[index] = 0.0

    def apply(self, stepped: np.ndarray, rngs: list[np.random.Generator]) -> None:
        """Before a control step of the ``stepped`` copies: the force of a kick in progress, or the wait's count."""
        active = self.on() & stepped
        waiting = ~active & stepped
        t = self.step * self.dt
        force = 0.5 * np.sin(np.pi * t / self.seconds) * self.mass * self.speed / self.seconds
        self.xfrc[stepped] = 0.0
        self.xfrc[active, self.body, :3] = force[active, None] * self.direction[active]
        self.since[active & (self.step >= self.steps_total)] = 0
        self.step[active] += 1
        self.since[waiting] += 1
        starts = waiting & (self.since >= self.wait)
        self.step[starts] = 0
        for index in np.flatnonzero(starts):
            angle = rngs[index].uniform(0.0, 2 * np.pi)
            self.direction[index] = (np.cos(angle), np.sin(angle), 0.0)

    def on(self) -> np.ndarray:
        """Copies whose kick is in progress (Playground's ``steps_since_last_pert >= steps_until_next_pert``)."""
        return self.since >= self.wait

    def get_state(self) -> dict[str, np.ndarray]:
        return {f"kick_{name}": getattr(self, name).copy() for name in self.ARRAYS}

    def set_state(self, arrays: dict[str, np.ndarray]) -> None:
        for name in self.ARRAYS:
            getattr(self, name)[...] = arrays[f"kick_{name}"]
