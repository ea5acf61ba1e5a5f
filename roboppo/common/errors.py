"""Errors roboppo raises for bad input; each message names the problem and the fix."""

from __future__ import annotations

from roboppo_envs.vector_api import NonFiniteEnvOutputError

__all__ = [
    "MissingDependencyError", "ModelLoadError", "NonFiniteEnvOutputError", "UnknownEnvError", "UserInputError",
]  # fmt: skip


class UserInputError(Exception):
    """Bad input from the user (a file, a setting, an id): ``roboppo-zoo`` prints it as one ``error:`` line.

    Every error of this kind carries a message that names the problem and the fix; the command
    line shows that message alone, without a traceback, and exits with code 2.
    """


class MissingDependencyError(UserInputError, ImportError):
    """A feature needs an optional package that is not installed; the message says what to install."""


class UnknownEnvError(UserInputError, ValueError):
    """An environment id that is not registered with Gymnasium."""


class ModelLoadError(UserInputError, ValueError):
    """A model file exists but cannot be read as a roboppo model."""
