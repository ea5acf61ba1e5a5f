"""``roboppo-zoo``: the command line, one module of this package per command, each with its flags and its handler.

    roboppo-zoo train --env RoboHopper-v0 [--seed 0] [--n-timesteps N] [--n-envs N] [-p key=value ...]
    roboppo-zoo train --resume runs/ppo_RoboHopper-v0_seed0_...
    roboppo-zoo eval --run RUN_DIR [--episodes 10] [--best]
    roboppo-zoo enjoy --run RUN_DIR                     # watch the policy (a window, else a video)
    roboppo-zoo record --run RUN_DIR --out video.mp4
    roboppo-zoo export --run RUN_DIR --out policy.onnx
    roboppo-zoo plot RUN_DIR [RUN_DIR ...] --out curves.png
    roboppo-zoo benchmark [--envs ID ...] [--seeds 3] [--out bench/results/zoo]
    roboppo-zoo tune --env RoboHopper-v0 --n-trials 20 [--storage sqlite:///study.db] [--study-name NAME]
    roboppo-zoo collect-demos --model expert.zip --env RoboHopper-v0 --episodes 50 --out demos.npz
    roboppo-zoo bc --env RoboHopper-v0 --demos demos.npz [--n-demos N] [--batches 10000]
    roboppo-zoo gail --env RoboHopper-v0 --demos demos.npz [--n-demos N] [--init-from-bc] [--n-timesteps N]

:data:`COMMANDS` names each command's module, which gives ``add_arguments(command, parser)``; only the
module of the command that runs is imported (with PyTorch, SB3, imitation, ...), so ``--help`` is quick
and a command whose optional dependency is missing fails alone. Every command is also callable
in-process: ``main(["gail", "--env", ...])``. Bad input (unknown env id, unreadable demonstrations or
hyperparameters, a missing model) ends with a one-line ``error: ...`` on stderr and exit code 2,
before anything is written.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import types
from collections.abc import Sequence
from typing import Any, NoReturn

os.environ.setdefault("MUJOCO_GL", "egl")  # off-screen rendering for `record`; read when mujoco loads

import roboppo
from roboppo.cli.runs import INTERRUPTED
from roboppo.common.errors import MissingDependencyError, UserInputError

#: command -> (its module in this package, its line in --help)
COMMANDS = {
    "train": ("train", "train PPO with the zoo's settings into a run folder"),
    "eval": (
        "evaluate",
        "evaluate a run's model deterministically (a joystick robot: its tracking over a command grid)",
    ),
    "enjoy": ("evaluate", "watch a run's policy: a window with a display, else a video"),
    "envs": ("evaluate", "the registered ids: spaces, solved thresholds, the extra each needs"),
    "record": ("media", "render a run's policy off-screen into a video"),
    "tune": ("tune", "Optuna search over PPO hyperparameters (one study, many workers)"),
    "benchmark": ("benchmark", "train every zoo entry over seeds beside stock SB3; table and plots"),
    "plot": ("media", "learning curves (mean ± std over runs) as a PNG"),
    "collect-demos": ("imitate", "save deterministic rollouts of a trained policy"),
    "bc": ("imitate", "behaviour cloning from demonstrations (imitation's BC)"),
    "gail": ("imitate", "imitate demonstrations with GAIL"),
    "export": ("export", "write a run's policy as one ONNX or TorchScript file for a robot"),
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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser: every command listed; ``command``'s flags added from its module (which this imports)."""
    parser = Parser(prog="roboppo-zoo", description="Train, imitate and evaluate robot controllers.")
    parser.add_argument("--version", action="version", version=f"roboppo-zoo {roboppo.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, text) in COMMANDS.items():
        sub = commands.add_parser(name, help=text, description=text)
        if name == command:
            command_module(name).add_arguments(name, sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (2 for bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((word for word in argv if word in COMMANDS), None)
    try:
        parser = build_parser(command)
        args = parser.parse_args(argv)
        check = getattr(args, "check", None)
        if check is not None and (problem := check(args)):
            parser.error(problem)
        code: int = args.handler(args)
        return code
    except (UserInputError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: {command} stopped", file=sys.stderr)
        return INTERRUPTED


def command_module(command: str) -> types.ModuleType:
    """The module of ``command``; a missing optional package is a :class:`MissingDependencyError`."""
    try:
        return importlib.import_module(f"roboppo.cli.{COMMANDS[command][0]}")
    except ModuleNotFoundError as error:
        package = (error.name or "").split(".")[0]
        if package not in OPTIONAL:
            raise
        raise MissingDependencyError(
            f"roboppo-zoo {command} needs the {package} package, which is not installed: {OPTIONAL[package]}"
        ) from error


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
