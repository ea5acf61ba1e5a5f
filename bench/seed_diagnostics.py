"""Per-seed training curves of several settings side by side: what a stalled seed does differently.

For every run folder written by ``roboppo-zoo train`` (grouped by the folder above it, one group
per setting) this plots, against env steps, the evaluation return and the training scalars that
tell a stalled seed from a good one: episode length, action std, entropy loss, value loss and
explained variance, learning rate. A table lists each run's evaluations and its std at the end.

    python bench/seed_diagnostics.py /tmp/h15/base /tmp/h15/std1 --out bench/results/hopper_seeds
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import sys

import numpy as np

from roboppo.common.files import atomic_target, write_atomic

PANELS = [
    ("rollout/ep_len_mean", "episode length (training)"),
    ("train/std", "action std (pre-tanh)"),
    ("train/entropy_loss", "entropy loss"),
    ("train/value_loss", "value loss"),
    ("train/explained_variance", "explained variance"),
    ("train/learning_rate", "learning rate"),
]


def read_progress(run: pathlib.Path) -> dict[str, np.ndarray]:
    columns: dict[str, list[float]] = {}
    for path in sorted(run.glob("progress*.csv")):
        with path.open() as handle:
            for row in csv.DictReader(handle):
                for key, value in row.items():
                    columns.setdefault(key, []).append(float(value) if value not in ("", None) else np.nan)
    return {key: np.array(values) for key, values in columns.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", type=pathlib.Path, nargs="+", help="log folders, one per setting")
    parser.add_argument("--out", type=pathlib.Path, required=True, help="output prefix (.png and .md are added)")
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 4, figsize=(20, 8))
    lines = ["| setting | run | evaluations (every 100k) | std at the end |", "|---|---|---|---:|"]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for color, group in zip(colors, args.groups, strict=False):
        for run in sorted(p for p in group.glob("*") if (p / "evaluations.npz").is_file()):
            with np.load(run / "evaluations.npz") as history:
                steps, returns = history["timesteps"], history["results"].mean(axis=1)
            progress = read_progress(run)
            label = f"{group.name} {run.name.split('_seed')[1][:3].rstrip('_')}"
            axes[0, 0].plot(steps, returns, color=color, marker="o", ms=3, label=label)
            x = progress["time/total_timesteps"]
            for axis, (key, title) in zip(axes.flat[1:], PANELS, strict=False):
                if key in progress:
                    axis.plot(x, progress[key], color=color, lw=0.8)
                axis.set_title(title)
            stds = progress.get("train/std", np.array([np.nan]))
            std = stds[np.isfinite(stds)][-1] if np.isfinite(stds).any() else np.nan
            lines.append(f"| {group.name} | {run.name} | {', '.join(f'{r:,.0f}' for r in returns)} | {std:.2f} |")
    axes[0, 0].set_title("evaluation return")
    axes[0, 0].legend(fontsize=6, ncol=2)
    for axis in axes.flat:
        axis.set_xlabel("env steps")
        axis.grid(alpha=0.3)
    axes.flat[-1].axis("off")
    figure.tight_layout()
    with atomic_target(args.out.with_suffix(".png")) as partial:
        figure.savefig(partial, dpi=100)
    command = " ".join(["python", "bench/seed_diagnostics.py", *sys.argv[1:]])
    write_atomic(args.out.with_suffix(".md"), f"`{command}`\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
