"""The same saved policy in a second simulator: roboppo's Go1 task beside EnvPool's independent port.

``roboppo-zoo eval --run RUN --sim-to-sim`` runs the run's model deterministically on both, with
nominal physics (no randomization, no pushes) and each simulator's own command draws (EnvPool's
port cannot be given a fixed command), and reports for each the episode reward, the xy-velocity
and yaw-rate tracking errors and the falls, and their relative differences. Both are measured
through the observations alone (:func:`measure`: the command the policy sees, the torso's clean
velocity and gyro from ``privileged_state``), so the two are read the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from roboppo.common.errors import UserInputError
from roboppo.ppo import PPO

#: roboppo's id -> EnvPool's port of the same task
PORTS = {
    "roboppo/Go1JoystickFlatTerrain-v1": "MuJoCoPlayground/Go1JoystickFlatTerrain-v1",
    "roboppo/Go1JoystickRoughTerrain-v1": "MuJoCoPlayground/Go1JoystickRoughTerrain-v1",
}
# where the Go1's observations hold the command (state) and the clean gyro and velocity (privileged_state)
COMMAND, GYRO, LINVEL = slice(45, 48), slice(48, 51), slice(57, 60)


@dataclass
class Episodes:
    """Per finished episode: its reward, mean xy and yaw-rate errors, and whether it fell."""

    reward: np.ndarray
    xy_error: np.ndarray
    yaw_error: np.ndarray
    fell: np.ndarray

    def summary(self) -> dict[str, float]:
        return {
            "reward": float(self.reward.mean()),
            "xy_error": float(self.xy_error.mean()),
            "yaw_error": float(self.yaw_error.mean()),
            "falls": float(self.fell.mean()),
        }


def measure(model: PPO, envs: Any, obs: dict[str, np.ndarray], episodes: int) -> Episodes:
    """Step ``envs`` (NEXT_STEP autoreset, from ``obs``) with ``model``'s deterministic actions until ``episodes``
    episodes have ended, the first ``episodes`` to end kept; a copy's reset step after it ended is not counted."""
    n = len(obs["state"])
    sums, steps = np.zeros((n, 3)), np.zeros(n)
    resetting = np.zeros(n, dtype=bool)
    done: list[tuple[float, float, float, bool]] = []
    while len(done) < episodes:
        actions, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = envs.step(actions)
        counted = ~resetting
        command, state = obs["state"][:, COMMAND], obs["privileged_state"]
        errors = np.stack(
            [
                np.asarray(reward, np.float64),
                np.linalg.norm(command[:, :2] - state[:, LINVEL][:, :2], axis=1),
                np.abs(command[:, 2] - state[:, GYRO][:, 2]),
            ],
            axis=1,
        )
        sums += counted[:, None] * errors
        steps += counted
        ended = counted & (terminated | truncated)
        for i in np.flatnonzero(ended):
            done.append((sums[i, 0], sums[i, 1] / steps[i], sums[i, 2] / steps[i], bool(terminated[i])))
            sums[i], steps[i] = 0.0, 0
        resetting = ended
    return Episodes(*(np.array(column) for column in zip(*done[:episodes], strict=True)))


def both(model: PPO, env_id: str, episodes: int, seed: int, num_envs: int = 10) -> dict[str, Episodes]:
    """``episodes`` episodes of ``model`` on roboppo's task and on EnvPool's port, nominal physics on both."""
    if env_id not in PORTS:
        known = ", ".join(sorted(PORTS))
        raise UserInputError(f"--sim-to-sim compares a task with EnvPool's port of it; it knows {known}, not {env_id}.")
    try:
        import envpool
    except ModuleNotFoundError as error:
        raise UserInputError("--sim-to-sim needs EnvPool: pip install envpool==1.2.5 (in the dev extra).") from error
    ours = gym.make_vec(env_id, num_envs=num_envs, autoreset_mode="NextStep")
    theirs = envpool.make_gymnasium(PORTS[env_id], num_envs=num_envs, num_threads=1, seed=seed)
    results = {
        "roboppo": measure(model, ours, ours.reset(seed=seed)[0], episodes),
        "EnvPool": measure(model, theirs, theirs.reset()[0], episodes),
    }
    ours.close()
    theirs.close()
    return results


def report(results: dict[str, Episodes]) -> str:
    """Both simulators' summaries and EnvPool's relative difference to roboppo's."""
    ours, theirs = (results[name].summary() for name in ("roboppo", "EnvPool"))
    lines = ["simulator   episodes   reward  xy error m/s  yaw error rad/s  falls"]
    for name, summary in (("roboppo", ours), ("EnvPool", theirs)):
        count = len(results[name].reward)
        lines.append(
            f"{name:10s} {count:9d} {summary['reward']:8.2f} {summary['xy_error']:13.3f} "
            f"{summary['yaw_error']:16.3f} {summary['falls']:6.0%}"
        )
    keys = ("reward", "xy_error", "yaw_error")
    relative = {key: (theirs[key] - ours[key]) / max(abs(ours[key]), 1e-9) for key in keys}
    lines.append(
        f"{'difference':10s} {'':9s} {relative['reward']:+8.1%} {relative['xy_error']:+13.1%} "
        f"{relative['yaw_error']:+16.1%}"
    )
    return "\n".join(lines)
