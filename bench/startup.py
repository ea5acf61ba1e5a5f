"""Start-up of ``roboppo-zoo train``: this checkout against an earlier commit, interleaved.

    python bench/startup.py --before feab97a^ --repeats 5 --out bench/results/startup.md

Two commands, each run ``--repeats`` times per checkout, alternating checkouts so that a busy
machine slows both alike (the earlier commit comes from ``git worktree``, run with this
environment's packages):

- ``roboppo-zoo train --help``: importing the command line (what every command pays);
- ``roboppo-zoo train --env RoboInvertedPendulum-v0 -n 256 ...``: a whole run of one rollout
  (imports, env and policy, the compiled update from a warm cache, one evaluation, the run folder).

Prints the median wall time per command and checkout, their ratio, and every line a run printed
to stderr that is not roboppo's own (third-party notices: none expected). A second table times the
phases of ``PPO("MlpPolicy", "RoboHopper-v0").learn()`` in a fresh process, JAX's compilation cache
warm: seconds from the process's first line to ``from roboppo import PPO`` done, the first env step,
the end of the first rollout, and the end of the first update (its program loaded from the cache).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _report import publish

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMANDS = {
    "train --help": ["train", "--help"],
    "train, one rollout": [
        "train",
        "--env",
        "RoboInvertedPendulum-v0",
        "-n",
        "256",
        "--eval-episodes",
        "2",
        "--no-progress-bar",
    ],
}


def timed(tree: pathlib.Path, args: list[str], log_folder: pathlib.Path) -> tuple[float, list[str]]:
    """Wall seconds of ``roboppo-zoo ARGS`` importing roboppo from ``tree``, and its foreign stderr lines."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    extra = ["-f", str(log_folder)] if "--env" in args else []
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "roboppo.cli", *args, *extra], env=env, cwd=tree, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{args} failed in {tree}:\n{done.stderr}")
    foreign = [line for line in done.stderr.splitlines() if line.strip() and "roboppo" not in line.lower()]
    return seconds, foreign


PHASES = """
import json, time
start = time.perf_counter()
from roboppo import PPO
from stable_baselines3.common.callbacks import BaseCallback
marks = {"import": time.perf_counter() - start}
class Marks(BaseCallback):
    def _on_step(self):
        marks.setdefault("first env step", time.perf_counter() - start)
        return True
    def _on_rollout_end(self):
        marks.setdefault("first rollout", time.perf_counter() - start)
    def _on_rollout_start(self):  # the second rollout starts when the first update is done
        if "first rollout" in marks:
            marks.setdefault("first update", time.perf_counter() - start)
model = PPO("MlpPolicy", "RoboHopper-v0", seed=0)
model.learn(2 * model.n_steps * model.n_envs, callback=Marks())
print(json.dumps(marks))
"""


def phases(tree: pathlib.Path) -> dict[str, float]:
    """Seconds to each start-up phase of a Hopper run importing roboppo from ``tree``."""
    done = subprocess.run([sys.executable, "-c", PHASES], env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the earlier commit (any git revision)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        before = pathlib.Path(scratch) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before), args.before],
                       check=True, capture_output=True)  # fmt: skip
        try:
            table = measure({"before": before, "now": ROOT}, args.repeats, pathlib.Path(scratch) / "runs", args.before)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=True)
    publish(table, args.out)


def measure(trees: dict[str, pathlib.Path], repeats: int, runs: pathlib.Path, before: str) -> str:
    times: dict[tuple[str, str], list[float]] = {}
    foreign: set[str] = set()
    for name, command in COMMANDS.items():
        for round_ in range(repeats + 1):  # the first round warms the caches and is not counted
            for label, tree in trees.items():
                seconds, lines = timed(tree, command, runs / f"{label}{round_}")
                foreign.update(lines)
                if round_:
                    times.setdefault((name, label), []).append(seconds)
            print(f"{name}: round {round_} of {repeats} done", flush=True)
    marks: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    for round_ in range(repeats + 1):
        for label, tree in trees.items():
            if round_:
                marks[label].append(phases(tree))
            else:
                phases(tree)  # warms JAX's cache with this tree's update
        print(f"phases: round {round_} of {repeats} done", flush=True)
    rows = ["| command | before (`" + before + "`) | now | now / before |", "|---|---:|---:|---:|"]
    for name in COMMANDS:
        old, new = (statistics.median(times[(name, label)]) for label in ("before", "now"))
        rows.append(f"| `roboppo-zoo {' '.join(COMMANDS[name])}` | {old:.2f} s | {new:.2f} s | {new / old:.2f} |")
    notices = "\n".join(f"    {line}" for line in sorted(foreign)) or "    (none)"
    text = "\n".join(rows) + f"\n\nMedians of {repeats} runs each. Lines on stderr not from roboppo:\n\n{notices}"
    phase_rows = [
        '`PPO("MlpPolicy", "RoboHopper-v0").learn()`, seconds from the start of the process, JAX\'s cache warm:', "",
        "| phase done | before (`" + before + "`) | now |", "|---|---:|---:|",
    ]  # fmt: skip
    for phase in marks["now"][0]:
        old, new = (statistics.median(run[phase] for run in marks[label]) for label in ("before", "now"))
        phase_rows.append(f"| {phase} | {old:.2f} s | {new:.2f} s |")
    return text + "\n\n" + "\n".join(phase_rows)


if __name__ == "__main__":
    main()
