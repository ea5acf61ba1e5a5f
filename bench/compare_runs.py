"""Evaluation returns of groups of `roboppo-zoo train` run folders, per seed and side by side.

Each group is a folder of run folders (``--log-folder``); a run's curve is its ``eval/mean_reward``
column in ``progress.csv``. Prints one row per run (final and best evaluation) and one per group
(mean ± std of the final evaluations), and draws the group means over env steps.

    python bench/compare_runs.py bench/results/zoo-hopper-jax/runs bench/results/zoo-hopper-torch/runs \\
        --labels jax torch --out bench/results/hopper_backends.md
"""

from __future__ import annotations

import argparse
import csv
import pathlib

import numpy as np
from _report import publish


def eval_curve(run: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    """Env steps and mean evaluation returns logged by the run's ``EvalCallback``."""
    with open(run / "progress.csv", newline="") as file:
        rows = [row for row in csv.DictReader(file) if row.get("eval/mean_reward")]
    steps = np.array([float(row["time/total_timesteps"]) for row in rows])
    return steps, np.array([float(row["eval/mean_reward"]) for row in rows])


def group_table(label: str, folder: pathlib.Path) -> tuple[list[str], dict[str, np.ndarray]]:
    lines, curves = [], {}
    for run in sorted(path for path in folder.iterdir() if (path / "progress.csv").is_file()):
        steps, returns = eval_curve(run)
        if len(returns) == 0:
            continue
        curves[run.name] = np.stack([steps, returns])
        best = int(np.argmax(returns))
        best_text = f"{returns[best]:,.0f} at {steps[best]:,.0f}"
        lines.append(f"| {label} | {run.name} | {steps[-1]:,.0f} | {returns[-1]:,.0f} | {best_text} |")
    finals = np.array([curve[1, -1] for curve in curves.values()])
    lines.append(f"| **{label}** | {len(finals)} runs | | **{finals.mean():,.0f} ± {finals.std():,.0f}** | |")
    return lines, curves


def plot(groups: dict[str, dict[str, np.ndarray]], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for label, curves in groups.items():
        length = min(curve.shape[1] for curve in curves.values())
        stacked = np.stack([curve[:, :length] for curve in curves.values()])
        steps, returns = stacked[0, 0], stacked[:, 1]
        line = axis.plot(steps, returns.mean(axis=0), label=f"{label} (mean of {len(curves)})")[0]
        for run_returns in returns:
            axis.plot(steps, run_returns, color=line.get_color(), alpha=0.25, linewidth=0.8)
    axis.set_xlabel("env steps")
    axis.set_ylabel("evaluation return")
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=pathlib.Path, help="folders of run folders, one per group")
    parser.add_argument("--labels", nargs="+", help="a name per folder (default: the folder names)")
    parser.add_argument("--out", type=pathlib.Path, default=None, help="markdown file; a PNG goes beside it")
    args = parser.parse_args()
    labels = args.labels or [folder.name for folder in args.folders]
    if len(labels) != len(args.folders):
        parser.error(f"{len(args.folders)} folders but {len(labels)} labels; give one label per folder.")
    lines = ["| group | run | env steps | final evaluation | best evaluation |", "|---|---|---:|---:|---|"]
    groups = {}
    for label, folder in zip(labels, args.folders, strict=True):
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder of run folders.")
        rows, groups[label] = group_table(label, folder)
        lines += rows
    publish("\n".join(lines), args.out)
    if args.out is not None:
        plot(groups, args.out.with_suffix(".png"))


if __name__ == "__main__":
    main()
