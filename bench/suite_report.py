"""The MuJoCo suite's results page: every tuned ``roboppo/<Name>-v5`` entry beside the public anchors.

Reads the tables ``roboppo-zoo benchmark`` wrote into ``bench/results/suite/<task>/`` (one folder per
task, each made by the command at its top) and writes ``bench/results/suite/README.md``: per task the
seeds, the IQM of the final returns with its 95% interval (rliable), mean ± std, worst seed, episodes
that ended in a fall, wall time per run, and the anchors; then every seed. The figure
``learning_curves.png`` draws, per task, the IQM over seeds of the periodic evaluations with its
interval as a band, and the anchors as lines.

    python bench/suite_report.py
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import re

import numpy as np
from _report import commit

from roboppo.common.callbacks import read_evaluations
from roboppo.common.files import atomic_target, write_atomic
from roboppo.zoo.stats import iqm_intervals

SUITE = pathlib.Path(__file__).parent / "results" / "suite"

# published results at 1M steps (rl-baselines3-zoo's benchmark table; CleanRL's ppo_continuous_action)
ANCHORS: dict[str, dict[str, float]] = {
    "HalfCheetah": {"rl-zoo3 PPO": 5819},
    "Walker2d": {"rl-zoo3 PPO": 3479, "rl-zoo3 TRPO": 4933},
    "Ant": {"rl-zoo3 PPO": 1327, "rl-zoo3 TRPO": 4982},
    "Swimmer": {"rl-zoo3 PPO": 282, "rl-zoo3 TRPO": 366},
    "Humanoid": {"CleanRL PPO": 716},
    "Hopper": {"rl-zoo3 PPO": 2410},
}


@dataclasses.dataclass
class Seed:
    seed: int
    final: float
    early: str
    seconds: float


def read_seeds(table: pathlib.Path) -> tuple[str, list[Seed]]:
    """The command and roboppo's per-seed rows of a ``benchmark.md``."""
    text = table.read_text()
    command = text.splitlines()[0].strip("`") if text.startswith("`") else "(command not recorded)"
    seeds = []
    for line in text.split("Every seed")[-1].splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 8 and cells[1] == "roboppo" and cells[2].isdigit():
            seconds = float(re.sub(r"[^\d.]", "", cells[7]))
            seeds.append(Seed(int(cells[2]), float(cells[3].replace(",", "")), cells[4], seconds))
    return command, sorted(seeds, key=lambda s: s.seed)


def curves(folder: pathlib.Path) -> tuple[np.ndarray, np.ndarray] | None:
    """Evaluation steps and returns ``[seeds, evaluations]`` of every run under ``folder``, cut to the shortest.

    The run folders are not committed (their models are large): the benchmark keeps a copy of each
    run's evaluations in ``rows/``; tables from before that keep theirs in ``curves.npz``.
    """
    kept_runs = sorted(folder.glob("rows/*/seed*.npz")) or sorted(folder.glob("runs/*/seed*/*/evaluations.npz"))
    histories = [read_evaluations(path) for path in kept_runs]
    kept = folder / "curves.npz"
    if not histories:
        if not kept.is_file():
            return None
        with np.load(kept) as saved:
            return saved["steps"], saved["returns"]
    length = min(len(h["timesteps"]) for h in histories)
    returns = np.stack([np.asarray(h["results"])[:length].mean(axis=1) for h in histories])
    steps = np.asarray(histories[0]["timesteps"])[:length]
    with atomic_target(kept) as partial, open(partial, "wb") as file:
        np.savez(file, steps=steps, returns=returns)
    return steps, returns


def summary(tasks: dict[str, tuple[str, list[Seed]]]) -> str:
    lines = [
        "| task | seeds | IQM [95% CI] | mean ± std | worst seed | episodes ended early | time / run | anchors |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for task, (_, seeds) in tasks.items():
        finals = np.array([s.final for s in seeds])
        interval = iqm_intervals({task: finals})[task]
        counted = [tuple(int(n) for n in s.early.split(" of ")) for s in seeds if s.early]
        fell = [early for early, _ in counted if early]
        falls = f"{sum(fell)} of {sum(n for _, n in counted)} ({len(fell)} seeds)" if fell else ""
        anchors = ", ".join(f"{name} {value:,.0f}" for name, value in ANCHORS.get(task, {}).items())
        lines.append(
            f"| {task} | {len(seeds)} | {interval} | {finals.mean():,.0f} ± {finals.std():,.0f} | {finals.min():,.0f} "
            f"| {falls or 'none'} | {np.mean([s.seconds for s in seeds]):,.0f} s | {anchors} |"
        )
    return "\n".join(lines)


def seed_lines(tasks: dict[str, tuple[str, list[Seed]]]) -> str:
    lines = []
    for task, (command, seeds) in tasks.items():
        finals = ", ".join(f"{s.seed}: {s.final:,.0f}" for s in seeds)
        lines.append(f"- **{task}** (`{command}`): {finals}")
    return "\n".join(lines)


def figure(tasks: dict[str, tuple[str, list[Seed]]], out: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = {task: curves(SUITE / task.lower()) for task in tasks}
    drawn = {task: data for task, data in drawn.items() if data is not None}
    fig, axes = plt.subplots(1, max(len(drawn), 1), figsize=(5 * max(len(drawn), 1), 3.8), squeeze=False)
    for axis, (task, (steps, returns)) in zip(axes[0], drawn.items(), strict=False):
        iqm = [iqm_intervals({"x": returns[:, i]})["x"] for i in range(returns.shape[1])]
        axis.plot(steps, [i.value for i in iqm], label=f"roboppo, IQM of {len(returns)} seeds")
        axis.fill_between(steps, [i.low for i in iqm], [i.high for i in iqm], alpha=0.25, label="95% CI")
        for (name, value), style in zip(ANCHORS.get(task, {}).items(), ("--", ":"), strict=False):
            axis.axhline(value, linestyle=style, color="gray", label=f"{name} at 1M")
        axis.set(title=f"roboppo/{task}-v5", xlabel="env steps", ylabel="evaluation return")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    fig.tight_layout()
    with atomic_target(out) as partial:
        fig.savefig(partial, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()
    tasks = {
        folder.name: read_seeds(folder / "benchmark.md")
        for folder in sorted(SUITE.iterdir())
        if (folder / "benchmark.md").is_file()
    }
    names = {name.lower(): name for name in ANCHORS}
    tasks = {names.get(key, key): value for key, value in tasks.items() if value[1]}
    figure(tasks, SUITE / "learning_curves.png")
    made_at = commit()
    text = (
        "# The MuJoCo suite: tuned entries at 1M steps\n\n"
        "Made by `python bench/suite_report.py`"
        + (f" at commit {made_at}" if made_at else "")
        + " from the tables in the task folders (each made by the command "
        "listed below it). Final return: the final model's mean over deterministic episodes on a fresh env; "
        "an episode ended early when it terminated before the time limit (a fall). IQM: interquartile mean over "
        "seeds with its 95% stratified-bootstrap interval (rliable). Time / run: wall time of one run, two runs "
        "at a time on 2 cores, periodic evaluations included.\n\n"
        f"{summary(tasks)}\n\n![learning curves](learning_curves.png)\n\nEvery seed:\n\n{seed_lines(tasks)}\n"
    )
    write_atomic(SUITE / "README.md", text)
    print(text)


if __name__ == "__main__":
    main()
