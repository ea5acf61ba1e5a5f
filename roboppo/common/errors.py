"""Errors roboppo raises for bad input; each message names the problem and the fix."""

from __future__ import annotations


class UnknownEnvError(ValueError):
    """An environment id that is not registered with Gymnasium."""


class NonFiniteEnvOutputError(RuntimeError):
    """An environment returned NaN or inf in an observation or reward."""


class ModelLoadError(ValueError):
    """A model file exists but cannot be read as a roboppo model."""
