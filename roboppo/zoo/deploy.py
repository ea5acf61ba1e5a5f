"""``roboppo-zoo export``: a run's policy as one file that maps raw observations to actions."""

from __future__ import annotations

import argparse

from gymnasium import spaces

from roboppo.export import export_policy
from roboppo.ppo import PPO
from roboppo.zoo.runs import model_file


def export(args: argparse.Namespace) -> int:
    """Write the run's (or its best) policy as ``args.format`` to ``args.out``; print its interface."""
    source = model_file(args.run, best=args.best)
    model = PPO.load(source, device="cpu")
    path = export_policy(model.policy, args.out, args.format)
    obs, act = model.observation_space, model.action_space
    assert isinstance(obs, spaces.Box)  # export refuses other observation spaces
    obs_shape = ", ".join(str(n) for n in ("batch", *obs.shape))
    shape = ", ".join(str(n) for n in ("batch", *(act.shape or ())))
    kind = f"within [{act.low.min():g}, {act.high.max():g}]" if isinstance(act, spaces.Box) else f"from {act}"
    print(
        f"Wrote {path} ({args.format}) from {source}, checked against predict:\n"
        f"  input  observation [{obs_shape}] float32, raw as the env returns it\n"
        f"  output action [{shape}], deterministic, {kind}"
    )
    return 0
