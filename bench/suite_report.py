"""The MuJoCo suite's results page: every tuned ``roboppo/<Name>-v5`` entry beside the public anchors.

Reads the tables ``roboppo-zoo benchmark`` wrote into ``bench/results/suite/<task>/`` (the entries at
1M steps) and ``bench/results/suite-10m/<task>/`` (the 10M-step tier), one folder per task, each made
by the command at its top, and writes ``bench/results/suite/README.md``: per task the seeds, the IQM
of the final returns with its 95% interval (rliable), mean ± std, worst seed, episodes that ended in
a fall, wall time per run, and the anchors; then every seed. The figures ``learning_curves.png`` and
``learning_curves_10m.png`` draw, per task, the IQM over seeds of the periodic evaluations with its
interval as a band, and the anchors as lines.

    python bench/suite_report.py
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import re

import numpy as np
from _report import commit

import roboppo_envs
from roboppo.cli.stats import iqm_intervals, score
from roboppo.common.callbacks import read_evaluations
from roboppo.common.files import atomic_target, write_atomic

RESULTS = pathlib.Path(__file__).parent / "results"
SUITE = RESULTS / "suite"
SUITE_10M = RESULTS / "suite-10m"

# published results at 1M steps (rl-baselines3-zoo's benchmark table; CleanRL's ppo_continuous_action), and
# Gymnasium's reward_threshold where neither publishes PPO (Pusher's, 0, is out of reach and not drawn)
ANCHORS: dict[str, dict[str, float]] = {
    "HalfCheetah": {"rl-zoo3 PPO": 5819},
    "Walker2d": {"rl-zoo3 PPO": 3479, "rl-zoo3 TRPO": 4933},
    "Ant": {"rl-zoo3 PPO": 1327, "rl-zoo3 TRPO": 4982},
    "Swimmer": {"rl-zoo3 PPO": 282, "rl-zoo3 TRPO": 366},
    "Humanoid": {"CleanRL PPO": 716},
    "Hopper": {"rl-zoo3 PPO": 2410},
    "Reacher": {"Gymnasium threshold": -3.75},
}
# published results at 10M steps (Sample Factory's APPO on MuJoCo)
ANCHORS_10M: dict[str, dict[str, float]] = {
    "HalfCheetah": {"Sample Factory APPO": 6263},
    "Ant": {"Sample Factory APPO": 5876},
    "Humanoid": {"Sample Factory APPO": 5439},
    "Walker2d": {"Sample Factory APPO": 5488},
}


@dataclasses.dataclass
class Seed:
    seed: int
    final: float
    early: str
    seconds: float
    stock: dict | None = None  # stock SB3's row for this seed, where the benchmark ran it beside roboppo


def kept_rows(folder: pathlib.Path, system: str) -> dict[int, dict]:
    """The rows the benchmark kept per seed: roboppo's in ``<folder>/rows/``, stock SB3's in ``<folder>/sb3/``."""
    rows = (json.loads(path.read_text()) for path in folder.glob(f"{system}/*/seed*.json"))
    return {row["seed"]: row for row in rows}


def read_seeds(table: pathlib.Path) -> tuple[str, list[Seed]]:
    """The command and roboppo's per-seed rows of a ``benchmark.md``, each final return read unrounded from the
    row the benchmark kept beside it where there is one, with stock SB3's row of the same seed."""
    text = table.read_text()
    kept, stock = kept_rows(table.parent, "rows"), kept_rows(table.parent, "sb3")
    command = text.splitlines()[0].strip("`") if text.startswith("`") else "(command not recorded)"
    seeds = []
    for line in text.split("Every seed")[-1].splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 8 and cells[1] == "roboppo" and cells[2].isdigit():
            seconds = float(re.sub(r"[^\d.]", "", cells[7]))
            seed = int(cells[2])
            final = kept[seed]["final_return"] if seed in kept else float(cells[3].replace(",", ""))
            seeds.append(Seed(seed, final, cells[4], seconds, stock.get(seed)))
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


Tasks = dict[str, tuple[str, list[Seed]]]


def read_tier(folder: pathlib.Path) -> Tasks:
    """Every task folder's command and seeds under ``folder``, named as the anchors name them."""
    names = {name.lower(): name for name in roboppo_envs.SUITE_NAMES}
    tables = sorted(folder.glob("*/benchmark.md"))
    tasks = {names.get(table.parent.name, table.parent.name): read_seeds(table) for table in tables}
    return {task: value for task, value in tasks.items() if value[1]}


def stock_cell(seeds: list[Seed]) -> str:
    """Stock SB3 + rl-zoo3 on the same seeds: IQM [95% CI] and worst seed, or how many of the seeds it has run."""
    rows = [s.stock for s in seeds if s.stock]
    if not rows:
        return ""
    finals = np.array([row["final_return"] for row in rows])
    seconds = np.mean([row["seconds"] for row in rows])
    cell = f"{iqm_intervals({'sb3': finals})['sb3']}, worst {score(finals.min())}, {seconds:,.0f} s / run"
    if len(rows) == len(seeds):
        return cell
    mine = iqm_intervals({"roboppo": np.array([s.final for s in seeds if s.stock])})["roboppo"]
    return f"{cell} ({len(rows)} of {len(seeds)} seeds so far; roboppo on the same {len(rows)}: {mine})"


def summary(tasks: Tasks, anchors: dict[str, dict[str, float]], stock_column: bool = False) -> str:
    """The table; with ``stock_column``, stock SB3 + rl-zoo3 where it ran beside roboppo on the same seeds."""
    stock = " stock SB3 + rl-zoo3 here, same seeds |" if stock_column else ""
    lines = [
        "| task | seeds | IQM [95% CI] | mean ± std | worst seed | episodes ended early | time / run |"
        f"{stock} anchors |",
        "|---|---:|---:|---:|---:|---:|---:|" + ("---|" if stock else "") + "---|",
    ]
    for task, (_, seeds) in tasks.items():
        column = f" {stock_cell(seeds) or 'not run'} |" if stock_column else ""
        finals = np.array([s.final for s in seeds])
        interval = iqm_intervals({task: finals})[task]
        counted = [tuple(int(n) for n in s.early.split(" of ")) for s in seeds if s.early]
        fell = [early for early, _ in counted if early]
        fallen = "1 seed" if len(fell) == 1 else f"{len(fell)} seeds"
        falls = f"{sum(fell)} of {sum(n for _, n in counted)} ({fallen})" if fell else ""
        named = ", ".join(f"{name} {score(value)}" for name, value in anchors.get(task, {}).items())
        lines.append(
            f"| {task} | {len(seeds)} | {interval} | {score(finals.mean())} "
            f"± {score(finals.std(), like=finals.mean())} "
            f"| {score(finals.min())} | {falls or 'none'} | {np.mean([s.seconds for s in seeds]):,.0f} s |"
            f"{column} {named} |"
        )
    return "\n".join(lines)


def seed_lines(tasks: Tasks) -> str:
    lines = []
    for task, (command, seeds) in tasks.items():
        finals = ", ".join(f"{s.seed}: {score(s.final)}" for s in seeds)
        ran = ", ".join(f"{s.seed}: {score(s.stock['final_return'])}" for s in seeds if s.stock)
        lines.append(f"- **{task}** (`{command}`): {finals}" + (f"; stock SB3 + rl-zoo3: {ran}" if ran else ""))
    return "\n".join(lines)


def figure(
    tasks: Tasks, folder: pathlib.Path, anchors: dict[str, dict[str, float]], budget: str, out: pathlib.Path
) -> None:
    """Learning curves of the tasks under ``folder`` against their anchors at ``budget``, written to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = {task: curves(folder / task.lower()) for task in tasks}
    drawn = {task: data for task, data in drawn.items() if data is not None}
    columns = min(max(len(drawn), 1), 4)
    rows = -(-max(len(drawn), 1) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.8 * rows), squeeze=False)
    for axis in axes.flat[len(drawn) :]:
        axis.set_visible(False)
    for axis, (task, (steps, returns)) in zip(axes.flat, drawn.items(), strict=False):
        iqm = [iqm_intervals({"x": returns[:, i]})["x"] for i in range(returns.shape[1])]
        axis.plot(steps, [i.value for i in iqm], label=f"roboppo, IQM of {len(returns)} seeds")
        axis.fill_between(steps, [i.low for i in iqm], [i.high for i in iqm], alpha=0.25, label="95% CI")
        for (name, value), style in zip(anchors.get(task, {}).items(), ("--", ":"), strict=False):
            axis.axhline(value, linestyle=style, color="gray", label=f"{name} at {budget}")
        axis.set(title=f"roboppo/{task}-v5", xlabel="env steps", ylabel="evaluation return")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    fig.tight_layout()
    with atomic_target(out) as partial:
        fig.savefig(partial, dpi=110)
    plt.close(fig)


def tier_10m(tasks: Tasks) -> str:
    if not tasks:
        return ""
    figure(tasks, SUITE_10M, ANCHORS_10M, "10M", SUITE / "learning_curves_10m.png")
    return (
        "\n## 10M steps\n\nThe same tasks trained for 10M steps with settings sized to run in under 30 minutes "
        "on 2 cores (one `.yml` per task in [suite-10m/](../suite-10m/)), against Sample Factory's APPO at 10M. "
        "Time / run: one run at a time on 2 cores, periodic evaluations included. HalfCheetah runs its 1M "
        "entry's recipe as it was before lambda 0.9 (lambda 0.92) with a larger batch (16 envs x 512 steps, "
        "minibatch 512, 5 epochs): of its 21 minutes, "
        "stepping the envs takes about 2 and the policy (sampling and update) the rest. Walker2d, whose physics "
        "costs about three times HalfCheetah's per step, runs the same with 128x128 networks instead of 256x256, "
        "about 10 minutes a run (at 256x256 its runs took 40-44 minutes on a slow host, for IQM 7,220: "
        "[the search](../suite-search/README.md#the-10m-step-tier)). Ant, whose stepping alone takes about 17 "
        "minutes for 10M steps, runs Sample Factory's MuJoCo settings on roboppo's "
        "policy (64x64 tanh networks, 64 envs x 64 steps, minibatch 1,024, 2 epochs, a learning rate of 3e-3 "
        "decaying), whose update is a small share of a run. Humanoid has no 10M tier yet: with those settings its "
        "run stepped at about 3,000 steps/s, about 55 minutes for 10M steps "
        "([what was searched](../suite-search/README.md#the-10m-step-tier)).\n\n"
        f"{summary(tasks, ANCHORS_10M)}\n\n![learning curves at 10M](learning_curves_10m.png)\n\n"
        f"Every seed:\n\n{seed_lines(tasks)}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()
    tasks = read_tier(SUITE)
    figure(tasks, SUITE, ANCHORS, "1M", SUITE / "learning_curves.png")
    made_at = commit()
    text = (
        "# The MuJoCo suite: tuned entries at 1M steps\n\n"
        "Made by `python bench/suite_report.py`"
        + (f" at commit {made_at}" if made_at else "")
        + " from the tables in the task folders (each made by the command "
        "listed below it). Final return: the final model's mean over deterministic episodes on a fresh env; "
        "an episode ended early when it terminated before the time limit (a fall). IQM: interquartile mean over "
        "seeds with its 95% stratified-bootstrap interval (rliable). Time / run: wall time of one run, two runs "
        "at a time on 2 cores, periodic evaluations included. Reacher's anchor is Gymnasium's reward threshold; "
        "Pusher has none (no published PPO result, and its threshold, 0, is out of reach). Stock SB3 + rl-zoo3: "
        "Stable-Baselines3's PPO with rl-baselines3-zoo's tuned settings and `VecNormalize` on Gymnasium's env, "
        "run by the same command on the same seeds and budget, where the table was made without `--no-sb3`.\n\n"
        f"{summary(tasks, ANCHORS, stock_column=True)}\n\n![learning curves](learning_curves.png)\n\nEvery seed:\n\n"
        f"{seed_lines(tasks)}\n" + tier_10m(read_tier(SUITE_10M))
    )
    write_atomic(SUITE / "README.md", text)
    print(text)


if __name__ == "__main__":
    main()
