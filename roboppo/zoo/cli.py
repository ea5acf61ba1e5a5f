"""``roboppo-zoo``: the command line.

    roboppo-zoo train --env RoboHopper-v0 [--seed 0] [--n-timesteps N] [--n-envs N] [-p key=value ...]
    roboppo-zoo train --resume runs/ppo_RoboHopper-v0_seed0_...
    roboppo-zoo eval --run RUN_DIR [--episodes 10] [--best]
    roboppo-zoo record --run RUN_DIR --out video.mp4
    roboppo-zoo plot RUN_DIR [RUN_DIR ...] --out curves.png
    roboppo-zoo benchmark [--envs ID ...] [--seeds 3] [--out bench/results/zoo]
    roboppo-zoo tune --env RoboHopper-v0 --n-trials 20 [--storage sqlite:///study.db] [--study-name NAME]
    roboppo-zoo collect-demos --model expert.zip --env RoboHopper-v0 --episodes 50 --out demos.npz
    roboppo-zoo bc --env RoboHopper-v0 --demos demos.npz [--n-demos N] [--batches 10000]
    roboppo-zoo gail --env RoboHopper-v0 --demos demos.npz [--n-demos N] [--init-from-bc] [--n-timesteps N]

Every sub-command is also callable in-process: ``main(["gail", "--env", ...])``. Bad input
(unknown env id, unreadable demonstrations or hyperparameters, a missing model) ends with a
one-line ``error: ...`` on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import pathlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

os.environ.setdefault("MUJOCO_GL", "egl")  # off-screen rendering for `record`; read when mujoco loads

import roboppo
from roboppo.common.errors import MissingDependencyError, UserInputError
from roboppo.common.validation import flag_type
from roboppo.zoo.runs import INTERRUPTED

# Sub-commands load their module (and PyTorch, SB3, imitation, ...) only when they run, so that
# `--help` is quick and a sub-command whose optional dependency is missing fails alone.
HANDLERS = {
    "train": "roboppo.zoo.train:train",
    "eval": "roboppo.zoo.watch:evaluate",
    "enjoy": "roboppo.zoo.watch:enjoy",
    "envs": "roboppo.zoo.watch:list_envs",
    "record": "roboppo.zoo.media:record",
    "plot": "roboppo.zoo.media:plot",
    "tune": "roboppo.zoo.tune:tune",
    "benchmark": "roboppo.zoo.benchmark:benchmark",
    "collect-demos": "roboppo.zoo.imitate:collect_demos",
    "bc": "roboppo.zoo.imitate:bc",
    "gail": "roboppo.zoo.imitate:gail",
    "export": "roboppo.zoo.deploy:export",
}
# optional package -> what to install for it
OPTIONAL = {
    "imitation": "pip install --no-deps imitation==1.0.1 (its release pins an old SB3; see the README's Install)",
    "jax": "pip install 'roboppo[brax]'",
    "brax": "pip install 'roboppo[brax]'",
    "optuna": "pip install optuna",
    "onnxscript": "pip install 'roboppo[export]'",
    "onnx": "pip install 'roboppo[export]'",
}


positive_int = flag_type("threads")  # an integer of at least 1


class DefaultsFormatter(argparse.HelpFormatter):
    """Help lines end with the flag's default, unless the help text already says it or there is none."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if "default" in text or default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            return text
        return f"{text} (default: {default})"


class Parser(argparse.ArgumentParser):
    """argparse with bad input reported as one ``error:`` line (exit code 2) that points to ``--help``,
    and every flag's default in ``--help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="roboppo-zoo", description="Train, imitate and evaluate robot controllers.")
    parser.add_argument("--version", action="version", version=f"roboppo-zoo {roboppo.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    fit = commands.add_parser("train", help="train PPO with the zoo's settings into a run folder")
    fit.add_argument("--env", default=None, help="registered env id")
    fit.add_argument("--seed", type=int, help="random seed (default: 0)")
    fit.add_argument(
        "-n", "--n-timesteps", type=flag_type("n_timesteps"), help="env steps (default: the zoo entry's); with "
        "--resume, the run's new budget",
    )  # fmt: skip
    fit.add_argument("--n-envs", type=flag_type("n_envs"), help="env copies (default: the zoo entry's)")
    fit.add_argument("--device", help="torch device (default: auto)")
    fit.add_argument("--env-threads", type=positive_int, help="threads stepping a MuJoCo batch (default: the cores)")
    fit.add_argument("--torch-threads", type=positive_int, help="torch threads (1 is fastest for small networks)")
    fit.add_argument("-p", action="append", metavar="KEY=VALUE", help="override a hyperparameter (repeatable)")
    fit.add_argument(
        "-params", "--hyperparams", nargs="+", metavar="KEY:VALUE", dest="params",
        help="rl-zoo3's form of -p: key:value pairs (values read as YAML, never evaluated)",
    )  # fmt: skip
    fit.add_argument(
        "--env-kwargs", nargs="+", metavar="KEY:VALUE", help="keywords of the env (values read as YAML), e.g. "
        "reset_noise_scale:0.01",
    )  # fmt: skip
    fit.add_argument("--tensorboard-log", type=pathlib.Path, help="also write TensorBoard events under this folder")
    fit.add_argument("--hparams", type=pathlib.Path, default=None, help="a ppo.yml (default: zoo_hparams/)")
    fit.add_argument("-f", "--log-folder", type=pathlib.Path, help="where run folders go (default: runs)")
    fit.add_argument(
        "--eval-freq", type=flag_type("eval_freq", allow_off=True), help='env steps between evaluations, or "off" '
        "(default: 10000)",
    )  # fmt: skip
    fit.add_argument("--eval-episodes", type=flag_type("eval_episodes"), help="episodes per evaluation (default: 10)")
    fit.add_argument(
        "--save-freq", type=flag_type("save_freq", allow_off=True), help="env steps between checkpoints (each at the "
        'first rollout boundary past a multiple, with its training state), or "off" (default: 50000)',
    )  # fmt: skip
    fit.add_argument(
        "--resume", type=pathlib.Path, default=None, metavar="RUN_DIR",
        help="continue a run (with --n-timesteps: to a new budget)",
    )  # fmt: skip
    fit.add_argument("--no-progress-bar", action="store_true", help="no progress bar (logs only)")

    check = commands.add_parser(
        "eval", help="evaluate a run's model deterministically (a joystick robot: its tracking over a command grid)"
    )
    add_model_flags(check)
    check.set_defaults(episodes=None)  # 10, or 50 for a joystick robot (5 per command of the grid)
    check.add_argument("--seed", type=int, default=12_345, help="seed of the evaluation env")

    watch = commands.add_parser("enjoy", help="watch a run's policy: a window with a display, else a video")
    add_model_flags(watch)
    watch.add_argument("--no-render", action="store_true", help="only print the returns (as eval)")
    watch.add_argument("--seed", type=int, default=0, help="seed of the env")

    listing = commands.add_parser("envs", help="the registered ids: spaces, solved thresholds, the extra each needs")
    del listing

    video = commands.add_parser("record", help="render a run's policy off-screen into a video")
    video.add_argument("--run", type=pathlib.Path, required=True, metavar="RUN_DIR", help="a run folder")
    video.add_argument("--out", type=pathlib.Path, required=True, help="video file (.mp4 or .gif)")
    video.add_argument("--episodes", type=flag_type("episodes"), default=1, help="episodes to record")
    video.add_argument("--max-steps", type=flag_type("max_steps"), default=1000, help="steps per episode at most")
    video.add_argument("--fps", type=flag_type("fps"), default=None, help="default: the env's render_fps")
    video.add_argument("--best", action="store_true", help="the best model by evaluation instead of the final")
    video.add_argument("--seed", type=int, default=0, help="seed of the env")

    search = commands.add_parser("tune", help="Optuna search over PPO hyperparameters (one study, many workers)")
    search.add_argument("--env", required=True, help="registered env id")
    search.add_argument("--n-trials", type=flag_type("n_trials"), default=20, help="trials for this worker")
    search.add_argument(
        "--n-timesteps", type=flag_type("n_timesteps"), default=50_000, help="env steps per trial, at most"
    )
    search.add_argument(
        "--eval-freq", type=flag_type("eval_freq"), default=10_000, help="env steps between evaluations"
    )
    search.add_argument("--eval-episodes", type=flag_type("eval_episodes"), default=5, help="episodes per evaluation")
    search.add_argument(
        "--storage", default=None,
        help="study database URL, e.g. postgresql+psycopg2://user:PASSWORD@host/db (default: $ROBOPPO_STORAGE, "
        "else sqlite in --log-folder); its password is never printed",
    )  # fmt: skip
    search.add_argument("--study-name", default=None, help="default: ppo-<env>")
    search.add_argument(
        "--heartbeat", type=positive_int, default=10, metavar="SECONDS",
        help="a running trial's heartbeat; a trial silent for 3 heartbeats is failed and retried (default: 10)",
    )  # fmt: skip
    search.add_argument("--env-threads", type=positive_int, help="threads of a MuJoCo batch (default: the cores)")
    search.add_argument("--torch-threads", type=positive_int, help="torch threads (1 is fastest for small networks)")
    search.add_argument("--log-folder", type=pathlib.Path, default=pathlib.Path("runs"), help="where the study goes")
    search.add_argument(
        "--out", type=pathlib.Path, default=None, help="best entry (default: <log-folder>/tune_<env>_best.yml)"
    )
    search.add_argument("--no-progress-bar", action="store_true", help="no progress bar")
    search.add_argument(
        "--ray-address", default=None,
        help="start --ray-workers workers as Ray tasks on this cluster (auto, ray://host:port, host:port, local)",
    )  # fmt: skip
    search.add_argument("--ray-workers", type=flag_type("jobs"), default=2, help="tuning workers on Ray (default: 2)")
    search.add_argument("--ray-cpus", type=flag_type("jobs"), default=1, help="CPUs each Ray worker declares")
    search.add_argument("--ray-gpus", type=float, default=0.0, help="GPUs each Ray worker declares")

    bench = commands.add_parser("benchmark", help="train every zoo entry over seeds beside stock SB3; table and plots")
    bench.add_argument("--envs", nargs="+", default=None, help="env ids (default: the MuJoCo entries)")
    bench.add_argument("--seeds", type=flag_type("seeds"), default=3, help="number of seeds")
    bench.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed, first-seed + 1, ...")
    bench.add_argument("--jobs", type=flag_type("jobs"), default=1, help="runs at a time, in separate processes")
    bench.add_argument("--n-timesteps", type=flag_type("n_timesteps"), default=None, help="override every budget")
    bench.add_argument("--eval-freq", type=flag_type("eval_freq"), default=10_000, help="env steps between evaluations")
    bench.add_argument("--eval-episodes", type=flag_type("eval_episodes"), default=10, help="episodes per evaluation")
    bench.add_argument(
        "--final-episodes", type=flag_type("eval_episodes"), default=50, help="episodes of each run's final evaluation"
    )
    bench.add_argument("--no-sb3", action="store_true", help="skip the stock SB3 rows")
    bench.add_argument("--hparams", type=pathlib.Path, default=None, help="a ppo.yml (default: zoo_hparams/)")
    bench.add_argument("--out", type=pathlib.Path, default=pathlib.Path("bench/results/zoo"), help="tables and plots")
    bench.add_argument(
        "--ray-address", default=None,
        help="run every (env, seed) as a Ray task: auto, ray://host:port, host:port, or local (start one)",
    )  # fmt: skip
    bench.add_argument("--ray-cpus", type=flag_type("jobs"), default=1, help="CPUs each Ray task declares (and uses)")
    bench.add_argument("--ray-gpus", type=float, default=0.0, help="GPUs each Ray task declares (fractions allowed)")

    curves = commands.add_parser("plot", help="learning curves (mean ± std over runs) as a PNG")
    curves.add_argument("runs", type=pathlib.Path, nargs="+", metavar="RUN_DIR")
    curves.add_argument("--out", type=pathlib.Path, default=pathlib.Path("curves.png"), help="the PNG to write")

    demos = commands.add_parser("collect-demos", help="save deterministic rollouts of a trained policy")
    demos.add_argument("--model", type=pathlib.Path, required=True, help="a model zip saved by roboppo")
    demos.add_argument("--env", required=True, help="registered env id")
    demos.add_argument("--episodes", type=flag_type("episodes"), default=50, help="episodes to record")
    demos.add_argument("--out", type=pathlib.Path, required=True, help="output .npz")
    demos.add_argument("--seed", type=int, default=0, help="seed of the first episode")

    cloning = commands.add_parser("bc", help="behaviour cloning from demonstrations (imitation's BC)")
    add_demo_flags(cloning)
    cloning.add_argument("--batches", type=flag_type("bc_batches"), default=10_000, help="gradient steps")

    imitate = commands.add_parser("gail", help="imitate demonstrations with GAIL")
    add_demo_flags(imitate)
    imitate.add_argument(
        "--n-timesteps", type=flag_type("n_timesteps"), default=None, help="generator env steps (default: gail.yml)"
    )
    imitate.add_argument("--init-from-bc", action="store_true", help="start the generator from behaviour cloning")
    imitate.add_argument(
        "--bc-batches", type=flag_type("bc_batches"), default=10_000, help="BC steps for --init-from-bc"
    )

    deploy = commands.add_parser("export", help="write a run's policy as one ONNX or TorchScript file for a robot")
    deploy.add_argument("--run", type=pathlib.Path, required=True, metavar="RUN_DIR", help="a run folder")
    deploy.add_argument("--format", choices=("onnx", "torchscript"), default="onnx", help="file format")
    deploy.add_argument("--out", type=pathlib.Path, required=True, help="file to write (.onnx or .pt)")
    deploy.add_argument("--best", action="store_true", help="the best model by evaluation instead of the final")
    return parser


def add_model_flags(command: argparse.ArgumentParser) -> None:
    """Which model ``eval`` and ``enjoy`` load: ``--run`` or, as rl-zoo3 does, ``--folder --env --exp-id``."""
    command.add_argument("--run", type=pathlib.Path, metavar="RUN_DIR", help="a run folder (train, gail or quickstart)")
    command.add_argument("-f", "--folder", type=pathlib.Path, help="rl-zoo3 style: the log folder holding the runs")
    command.add_argument("--env", help="with --folder: the env id of the run")
    command.add_argument(
        "--exp-id", type=int, default=0, help="with --folder: the N-th run of --env, oldest first (0: the latest)"
    )
    command.add_argument("-n", "--episodes", type=flag_type("episodes"), default=10, help="episodes to run")
    command.add_argument("--eval-episodes", type=flag_type("episodes"), dest="episodes", help="same as --episodes")
    command.add_argument("--best", "--load-best", action="store_true", help="the best model by evaluation")
    command.add_argument("--load-checkpoint", type=int, metavar="STEPS", help="the checkpoint saved at STEPS steps")


def add_demo_flags(command: argparse.ArgumentParser) -> None:
    """The flags ``bc`` and ``gail`` share: env, demonstrations, seed, folders, evaluation."""
    command.add_argument("--env", required=True, help="registered env id")
    command.add_argument(
        "--demos", type=pathlib.Path, required=True, help="demonstrations (.npz or folder; .pkl with --allow-pickle)"
    )
    command.add_argument("--n-demos", type=flag_type("n_demos"), default=None, help="use the first N episodes only")
    command.add_argument(
        "--clip-demo-actions", action="store_true", help="clip actions outside the env's bounds instead of refusing"
    )
    command.add_argument(
        "--allow-pickle", action="store_true", help="read pickled demonstrations (can run code: trusted files only)"
    )
    command.add_argument("--seed", type=int, default=0, help="random seed")
    command.add_argument("--log-folder", type=pathlib.Path, default=pathlib.Path("runs"), help="where run folders go")
    command.add_argument("--hparams", type=pathlib.Path, default=None, help="a gail.yml (default: zoo_hparams/)")
    command.add_argument(
        "--eval-episodes", type=flag_type("eval_episodes"), default=10, help="final evaluation episodes"
    )
    command.add_argument(
        "--allow-env-mismatch", action="store_true", help="accept demonstrations recorded on another env id"
    )
    command.add_argument("--no-progress-bar", action="store_true", help="no progress bar")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one sub-command; returns the exit code (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "train" and args.env is None and args.resume is None:
        parser.error("train needs --env ID, or --resume RUN_DIR to continue a run")
    if args.command in ("eval", "enjoy") and (args.run is None) == (args.folder is None or args.env is None):
        parser.error(f"{args.command} needs --run RUN_DIR, or --folder FOLDER --env ID [--exp-id N]")
    try:
        return load_handler(args.command)(args)
    except (UserInputError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: {args.command} stopped", file=sys.stderr)
        return INTERRUPTED


def load_handler(command: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs ``command``; a missing optional package is a :class:`MissingDependencyError`."""
    module_name, function = HANDLERS[command].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        package = (error.name or "").split(".")[0]
        if package not in OPTIONAL:
            raise
        raise MissingDependencyError(
            f"roboppo-zoo {command} needs the {package} package, which is not installed: {OPTIONAL[package]}"
        ) from error
    handler: Callable[[argparse.Namespace], int] = getattr(module, function)
    return handler


def entry_point() -> None:
    """The ``roboppo-zoo`` console script: :func:`main`, then an exit that skips the final garbage collection.

    A process that has imported torch (``torch._dynamo`` comes with the first optimizer) and JAX
    spends about a second at exit tracing their module graphs for reference cycles. By the time
    :func:`main` returns, every file the command wrote is complete (models and videos are closed,
    SB3's logger flushes each write), so the objects are frozen (``gc.freeze``) and left to the
    operating system; atexit handlers and stream flushes still run.
    """
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry_point()
