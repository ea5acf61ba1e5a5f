"""Brax robots as Gymnasium environments (needs the ``brax`` extra: JAX and Brax).

Importing this package imports JAX; ``roboppo_envs`` itself only registers the ids, so
JAX loads when a Brax env is first made.
"""

from roboppo_envs.brax.single_env import BraxEnv
from roboppo_envs.brax.vector_env import BACKENDS, BraxNonFiniteError, BraxVectorEnv

__all__ = ["BACKENDS", "BraxEnv", "BraxNonFiniteError", "BraxVectorEnv"]
