"""How a legged robot's tracking holds up as the floor gets slippery and the torso heavy, past the training ranges.

``roboppo-zoo eval --run RUN --robustness FIGURE.png`` runs the tracking evaluation
(:mod:`roboppo.cli.tracking`: the command grid, deterministic actions) with the run's env keywords and
one physical value held fixed on every copy, for each value of :data:`SWEEPS`: the floor's friction
and the mass added to the torso. The rest of the run's randomization and its pushes stay as trained.
It prints the xy and yaw-rate errors and the falls per value and draws them, the training range
shaded.
"""

from __future__ import annotations

import itertools
import pathlib
from typing import Any

import gymnasium as gym

from roboppo.cli.tracking import track
from roboppo.common.files import atomic_target
from roboppo.ppo import PPO

#: randomization option -> (the values held fixed in turn, its unit, the training range of Playground's Go1)
SWEEPS: dict[str, tuple[tuple[float, ...], str, tuple[float, float]]] = {
    "floor_friction": ((0.1, 0.2, 0.4, 0.7, 1.0, 1.3, 1.6), "", (0.4, 1.0)),
    "torso_added_mass": ((-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0), "kg", (-1.0, 1.0)),
}
Results = dict[str, list[tuple[float, dict[str, float]]]]


def sweep(model: PPO, env_id: str, env_kwargs: dict[str, Any] | None, episodes: int, seed: int) -> Results:
    """For each option of :data:`SWEEPS` and each of its values: the tracking summary with that value on every copy."""
    kwargs = dict(env_kwargs or {})
    results: Results = {}
    for option, (values, _, _) in SWEEPS.items():
        rows = []
        for value in values:
            randomize = held(env_id, kwargs.get("randomize"), option, value)
            tracking = track(model, env_id, episodes, seed, {**kwargs, "randomize": randomize})
            rows.append((value, tracking.summary()))
            print(f"  {option} = {value:+g}: {_line(tracking.summary())}", flush=True)
        results[option] = rows
    return results


def held(env_id: str, trained: Any, option: str, value: float) -> dict[str, Any]:
    """The ``randomize`` keyword of the run's own (``trained``), with ``option`` held at ``value`` on every copy."""
    if trained is True:
        return {option: (value, value)}  # a mapping updates the robot's defaults
    if isinstance(trained, dict):
        return {**trained, option: (value, value)}
    envs = gym.make_vec(env_id, num_envs=1)
    defaults = dict(envs.unwrapped.default_randomization)  # type: ignore[attr-defined]
    envs.close()
    return {**{key: None for key in defaults}, option: (value, value)}  # trained without: only this option


def _line(summary: dict[str, float]) -> str:
    return (
        f"xy error {summary['xy_error']:.3f} m/s, yaw error {summary['yaw_error']:.3f} rad/s, "
        f"{summary['falls']:.0f} falls in {summary['episodes']:.0f}"
    )


def plot(results: Results, out: pathlib.Path, title: str) -> None:
    """Two columns (friction, added mass), two rows (tracking errors, falls), the training ranges shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, len(results), figsize=(5 * len(results), 6), sharex="col", squeeze=False)
    for column, (option, rows) in enumerate(results.items()):
        values = [value for value, _ in rows]
        _, unit, (low, high) = SWEEPS[option]
        top, bottom = axes[0][column], axes[1][column]
        top.plot(values, [s["xy_error"] for _, s in rows], "o-", label="xy error (m/s)")
        top.plot(values, [s["yaw_error"] for _, s in rows], "s-", label="yaw-rate error (rad/s)")
        bottom.bar(values, [s["falls"] / s["episodes"] for _, s in rows], width=0.6 * min(_gaps(values)))
        for axis in (top, bottom):
            axis.axvspan(low, high, color="0.9", zorder=0, label="training range" if axis is top else None)
        top.set_ylabel("tracking error")
        bottom.set_ylabel("episodes that fell")
        bottom.set_xlabel(option.replace("_", " ") + (f" ({unit})" if unit else ""))
        top.legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    with atomic_target(out) as partial:
        figure.savefig(partial, format=out.suffix.lstrip(".") or "png", dpi=100)
    plt.close(figure)


def _gaps(values: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(values)] or [1.0]
