"""Train an env's zoo entry for a few rollouts and save the final parameters, to compare two versions of roboppo.

Run it in two checkouts (or with two ``PYTHONPATH`` settings) and compare the files: equal
parameters mean the two versions train identically, step for step. The settings are the env's
entry in ``zoo_hparams/ppo.yml``, as each version reads it; ``--n-envs`` overrides its env count.

    python bench/same_run.py train RoboHopper-v0 20480 new.npz          # in this checkout
    PYTHONPATH=/path/to/other/checkout python bench/same_run.py train RoboHopper-v0 20480 old.npz
    python bench/same_run.py compare old.npz new.npz
"""

from __future__ import annotations

import argparse

import numpy as np
import torch as th


def train(env_id: str, steps: int, out: str, n_envs: int | None) -> None:
    from roboppo import PPO
    from roboppo.zoo import load_ppo_hparams

    th.set_num_threads(1)
    entry = load_ppo_hparams(env_id)
    n_envs = entry.n_envs if n_envs is None else n_envs
    model = PPO("MlpPolicy", env_id, n_envs=n_envs, seed=3, device="cpu", **entry.ppo_kwargs).learn(steps)
    params = th.nn.utils.parameters_to_vector(model.policy.parameters()).detach().numpy()
    np.savez(out, params=params)
    print(f"{env_id} ({n_envs} envs): {model.num_timesteps:,} steps, parameters saved to {out}")


def compare(first: str, second: str) -> None:
    a, b = np.load(first)["params"], np.load(second)["params"]
    print(f"max |difference| {np.abs(a - b).max():.3g}; identical: {np.array_equal(a, b)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("train", help="train the env's zoo entry and save its parameters")
    run.add_argument("env_id")
    run.add_argument("steps", type=int)
    run.add_argument("out")
    run.add_argument("--n-envs", type=int, default=None)
    check = commands.add_parser("compare", help="compare two saved parameter files")
    check.add_argument("first")
    check.add_argument("second")
    args = parser.parse_args()
    if args.command == "train":
        train(args.env_id, args.steps, args.out, args.n_envs)
    else:
        compare(args.first, args.second)


if __name__ == "__main__":
    main()
