"""Multi-seed statistics for ``roboppo-zoo benchmark``: interval estimates and performance profiles by ``rliable``,
and the env steps and wall-clock time a run took to first reach a target.

``rliable`` (Agarwal et al., 2021) is the standard for reporting RL results over few seeds: the
interquartile mean (IQM, the mean of the middle 50% of runs) is robust to one outlier seed yet
uses half the runs, and its 95% interval comes from a stratified bootstrap over the runs.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from roboppo.common.callbacks import read_evaluations

BOOTSTRAP_REPS = 2000


def early_ends(lengths: npt.ArrayLike, env_id: str) -> int:
    """How many episodes of these ``lengths`` ended before ``env_id``'s time limit (a fall); 0 without a limit."""
    limit = gym.spec(env_id).max_episode_steps
    return 0 if limit is None else int(np.sum(np.asarray(lengths) < limit))


def score(value: float, decimals: int = 0, like: float | None = None) -> str:
    """A return as tables print it: ``decimals`` places from 100 up, two below (Reacher's -3.87, not -4).

    ``like``: the return whose size decides instead (a spread printed as its mean is).
    """
    size = abs(value if like is None else like)
    return f"{value:,.{decimals if size >= 100 else 2}f}"


@dataclasses.dataclass(frozen=True)
class Interval:
    """A point estimate with its 95% bootstrap interval."""

    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{score(self.value)} [{score(self.low)}, {score(self.high)}]"


def iqm_intervals(scores: dict[str, np.ndarray], seed: int = 0) -> dict[str, Interval]:
    """The IQM of each system's final scores (one per seed) with its 95% stratified-bootstrap interval.

    Each system's bootstrap starts from ``seed``, so its interval depends on its own scores only, not on
    which other systems share the table.
    """
    return {name: _iqm_interval(np.asarray(values, dtype=float), seed) for name, values in scores.items()}


def _iqm_interval(values: np.ndarray, seed: int) -> Interval:
    from rliable import library as rly
    from rliable import metrics

    np.random.seed(seed)  # rliable's bootstrap draws from NumPy's global generator
    points, intervals = rly.get_interval_estimates(
        {"x": values.reshape(-1, 1)}, lambda x: np.array([metrics.aggregate_iqm(x)]), reps=BOOTSTRAP_REPS
    )
    return Interval(float(points["x"][0]), float(intervals["x"][0, 0]), float(intervals["x"][1, 0]))


def performance_profile(scores: dict[str, np.ndarray], title: str, out: pathlib.Path) -> None:
    """Plot the fraction of runs scoring above each threshold (with bootstrap bands) into a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import library as rly
    from rliable import plot_utils

    from roboppo.common.files import atomic_target

    matrices = {name: np.asarray(values, dtype=float).reshape(-1, 1) for name, values in scores.items()}
    everything = np.concatenate(list(matrices.values()))
    taus = np.linspace(min(0.0, float(everything.min())), float(everything.max()) * 1.02, 101)
    np.random.seed(0)
    profiles, bands = rly.create_performance_profile(matrices, taus, reps=BOOTSTRAP_REPS)
    figure, axis = plt.subplots(figsize=(6, 4))
    plot_utils.plot_performance_profiles(
        profiles, taus, performance_profile_cis=bands, xlabel="final return τ", ax=axis, legend=True
    )
    axis.set_title(title)
    axis.set_ylabel("fraction of runs with return > τ")
    figure.tight_layout()
    with atomic_target(out) as partial:
        figure.savefig(partial, dpi=120)
    plt.close(figure)


def time_to_target(run_dir: pathlib.Path, target: float) -> tuple[int, float] | None:
    """Env steps and seconds (of the run alone, its evaluations included) until its evaluation first reached
    ``target``; None when it never did.

    The seconds come from the run's ``progress.csv`` (``time/time_elapsed`` at the first logged rollout
    that ends at or after the evaluation's step).
    """
    history = read_evaluations(run_dir / "evaluations.npz")
    means = np.asarray(history["results"]).mean(axis=1)
    reached = np.flatnonzero(means >= target)
    if reached.size == 0:
        return None
    steps = int(history["timesteps"][reached[0]])
    seconds = [elapsed for logged, elapsed in timings(run_dir) if logged >= steps]
    return steps, seconds[0] if seconds else float("nan")


def timings(run_dir: pathlib.Path) -> list[tuple[int, float]]:
    """``(time/total_timesteps, time/time_elapsed)`` of every rollout a run's ``progress.csv`` logged.

    SB3 also writes rows holding evaluation scalars only; they are skipped.
    """
    with (run_dir / "progress.csv").open() as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("time/time_elapsed")]
    return [(int(float(row["time/total_timesteps"])), float(row["time/time_elapsed"])) for row in rows]
