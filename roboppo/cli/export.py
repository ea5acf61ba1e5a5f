"""``roboppo-zoo export``: a run's policy as one file that maps raw observations to actions."""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

import gymnasium as gym
from gymnasium import spaces

import roboppo_envs
from roboppo.cli.runs import model_file, read_config
from roboppo.export import export_policy
from roboppo.ppo import PPO


def export(args: argparse.Namespace) -> int:
    """Write the run's (or its best) policy as ``args.format`` to ``args.out``; print its interface."""
    source = model_file(args.run, best=args.best)
    model = PPO.load(source, device="cpu")
    config = read_config(args.run)
    metadata = robot_metadata(config["env"], config.get("env_kwargs"))
    path = export_policy(model.policy, args.out, args.format, metadata)
    obs, act = model.observation_space, model.action_space
    assert isinstance(obs, spaces.Box)  # export refuses other observation spaces
    columns = getattr(model.policy, "actor_columns", None)  # an asymmetric actor-critic's file takes the actor's
    obs_shape = ", ".join(str(n) for n in ("batch", *((len(columns),) if columns else obs.shape)))
    shape = ", ".join(str(n) for n in ("batch", *(act.shape or ())))
    kind = f"within [{act.low.min():g}, {act.high.max():g}]" if isinstance(act, spaces.Box) else f"from {act}"
    print(
        f"Wrote {path} ({args.format}) from {source}, checked against predict:\n"
        f"  input  observation [{obs_shape}] float32, raw as the env returns it\n"
        f"  output action [{shape}], deterministic, {kind}"
    )
    if metadata:
        print(f"  metadata: {', '.join(sorted(metadata))} (the robot's control loop reads them from the file)")
    return 0


def robot_metadata(env_id: str, env_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """For a Playground robot, what its control loop needs (:meth:`PlaygroundVectorEnv.deployment`), with the
    kit's ``history`` and ``action_latency`` the policy was trained under; nothing for other envs."""
    if env_id not in roboppo_envs.PLAYGROUND_ENVS:
        return {}
    kwargs = dict(env_kwargs or {})
    kit = {key: kwargs.pop(key, default) for key, default in (("history", 1), ("action_latency", 0))}
    kwargs.pop("num_threads", None)
    envs = gym.make_vec(env_id, num_envs=1, **kwargs)
    facts = envs.unwrapped.deployment()  # type: ignore[attr-defined]
    envs.close()
    return {"env_id": env_id, **facts, **kit, "env_kwargs": env_kwargs or {}}


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """The flags of ``export``; the handler each runs."""
    parser.set_defaults(handler=export)
    parser.add_argument("--run", type=pathlib.Path, required=True, metavar="RUN_DIR", help="a run folder")
    parser.add_argument("--format", choices=("onnx", "torchscript"), default="onnx", help="file format")
    parser.add_argument("--out", type=pathlib.Path, required=True, help="file to write (.onnx or .pt)")
    parser.add_argument("--best", action="store_true", help="the best model by evaluation instead of the final")
