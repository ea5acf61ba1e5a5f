"""Whether a legged robot walks where it is told: a policy's velocity tracking over a fixed grid of commands.

``roboppo-zoo eval`` on a joystick task runs every command of :data:`COMMAND_GRID` (forward speeds from
-1 to 1.5 m/s, sideways +-0.5 m/s, yaw rates +-1 rad/s, standing still) in turn, each held for a whole
episode, with the run's own env keywords (its randomization and pushes), and reports per command and
overall:

- the xy-velocity tracking error, the mean over an episode's steps of ``|command_xy - v_xy|`` (m/s, the
  torso's velocity in its own frame, as the reward reads it);
- the yaw-rate error, the mean of ``|command_yaw - w_z|`` (rad/s, the gyro);
- falls (episodes that ended before their time limit) and the episode reward.

These are mjlab's tracking measures; the copies of one batch each hold one command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from roboppo.ppo import PPO

#: the commands ``(vx m/s, vy m/s, yaw rad/s)``, each held for a whole episode
COMMAND_GRID = np.array(
    [
        (-1.0, 0.0, 0.0), (-0.5, 0.0, 0.0), (0.5, 0.0, 0.0), (1.0, 0.0, 0.0), (1.5, 0.0, 0.0),
        (0.0, -0.5, 0.0), (0.0, 0.5, 0.0), (0.0, 0.0, -1.0), (0.0, 0.0, 1.0), (0.0, 0.0, 0.0),
    ]
)  # fmt: skip


@dataclass
class Tracking:
    """Per episode: its command, mean xy and yaw-rate errors, whether it fell, its reward."""

    command: np.ndarray
    xy_error: np.ndarray
    yaw_error: np.ndarray
    fell: np.ndarray
    reward: np.ndarray

    def summary(self) -> dict[str, float]:
        return {
            "xy_error": float(self.xy_error.mean()),
            "yaw_error": float(self.yaw_error.mean()),
            "falls": int(self.fell.sum()),
            "episodes": len(self.fell),
            "reward": float(self.reward.mean()),
        }


def is_joystick_task(env_id: str) -> bool:
    """True for the tasks a velocity command steers (the Playground joystick robots)."""
    return env_id.startswith("roboppo/") and "Joystick" in env_id


def track(model: PPO, env_id: str, episodes: int, seed: int, env_kwargs: dict[str, Any] | None = None) -> Tracking:
    """Run ``episodes`` deterministic episodes (rounded up to whole passes over :data:`COMMAND_GRID`)."""
    kwargs = {key: value for key, value in (env_kwargs or {}).items() if key != "command"}
    envs = gym.make_vec(env_id, num_envs=len(COMMAND_GRID), command=COMMAND_GRID, autoreset_mode="NextStep", **kwargs)
    base = envs.unwrapped
    passes = -(-episodes // len(COMMAND_GRID))
    rows = [_one_pass(model, envs, base, seed + index) for index in range(passes)]
    envs.close()
    return Tracking(*(np.concatenate(column) for column in zip(*rows, strict=True)))


def _one_pass(model: PPO, envs: Any, base: Any, seed: int) -> tuple[np.ndarray, ...]:
    """One episode per command: each copy runs until it ends (later steps of a finished copy are not counted)."""
    n = envs.num_envs
    obs, _ = envs.reset(seed=seed)
    running = np.ones(n, dtype=bool)
    steps, xy, yaw, reward, fell = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
    while running.any():
        actions, _ = model.predict(obs, deterministic=True)
        obs, step_reward, terminated, truncated, _ = envs.step(actions)
        velocity, yaw_rate = base._read("local_linvel")[:, :2], base._read("gyro")[:, 2]
        xy += running * np.linalg.norm(base.command[:, :2] - velocity, axis=1)
        yaw += running * np.abs(base.command[:, 2] - yaw_rate)
        reward += running * step_reward
        steps += running
        fell |= running & terminated
        running &= ~(terminated | truncated)
    return COMMAND_GRID.copy(), xy / steps, yaw / steps, fell, reward


def report(tracking: Tracking) -> str:
    """The per-command table and the totals, as ``roboppo-zoo eval`` prints them."""
    lines = ["command (vx, vy, yaw)    xy error m/s  yaw error rad/s  falls  reward"]
    for command in COMMAND_GRID:
        rows = np.all(tracking.command == command, axis=1)
        label = f"({command[0]:+.1f}, {command[1]:+.1f}, {command[2]:+.1f})"
        lines.append(
            f"{label:24s} {tracking.xy_error[rows].mean():12.3f} {tracking.yaw_error[rows].mean():16.3f}"
            f" {int(tracking.fell[rows].sum()):6d} {tracking.reward[rows].mean():7.1f}"
        )
    total = tracking.summary()
    lines.append(
        f"{'all':24s} {total['xy_error']:12.3f} {total['yaw_error']:16.3f} {total['falls']:6d} {total['reward']:7.1f}"
        f"   ({total['episodes']} episodes)"
    )
    return "\n".join(lines)
