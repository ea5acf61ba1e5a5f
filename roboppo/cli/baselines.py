"""Stock Stable-Baselines3 PPO with rl-baselines3-zoo's tuned hyperparameters: the public anchor.

rl-baselines3-zoo (``hyperparams/ppo.yml``) tunes PPO per MuJoCo env with ``normalize: true``
(``VecNormalize`` on observations and rewards); these are its values for the Gymnasium twins of
roboppo's MuJoCo envs. Used by ``roboppo-zoo benchmark`` and the scripts in ``bench/``.

A stock run given a checkpoint file saves one every ``save_every`` steps, at the start of a rollout:
the model zip (weights, optimizer, last observations) with everything its next rollouts depend on:
each Gymnasium env whole (MuJoCo's ``MjData``, its random generator, ``TimeLimit`` and ``Monitor``
counters), ``VecNormalize``'s statistics and running returns, and NumPy's and torch's global random
generators (minibatch order, action noise). Started again with the same file, the run continues from
it to the same weights an uninterrupted run ends with.
"""

from __future__ import annotations

import io
import pathlib
import pickle
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch as th
from gymnasium.utils import EzPickle
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import VecNormalize

import roboppo_envs
from roboppo.cli.stats import early_ends
from roboppo.common.files import atomic_target

GYMNASIUM_TWIN = {
    "RoboInvertedPendulum-v0": "InvertedPendulum-v5",
    "RoboInvertedDoublePendulum-v0": "InvertedDoublePendulum-v5",
    "RoboHopper-v0": "Hopper-v5",
} | {f"roboppo/{name}-v5": f"{name}-v5" for name in roboppo_envs.SUITE_NAMES}

_BIG_RELU = {
    "log_std_init": -2.0, "ortho_init": False, "activation_fn": th.nn.ReLU,
    "net_arch": {"pi": [256, 256], "vf": [256, 256]},
}  # fmt: skip

RL_ZOO3_PPO: dict[str, dict[str, Any]] = {
    "RoboInvertedPendulum-v0": {
        "n_steps": 32, "batch_size": 64, "gamma": 0.999, "learning_rate": 0.000222425, "ent_coef": 1.37976e-07,
        "clip_range": 0.4, "n_epochs": 5, "gae_lambda": 0.9, "max_grad_norm": 0.3, "vf_coef": 0.19816,
    },
    "RoboInvertedDoublePendulum-v0": {
        "n_steps": 128, "batch_size": 512, "gamma": 0.98, "learning_rate": 0.000155454, "ent_coef": 1.05057e-06,
        "clip_range": 0.4, "n_epochs": 10, "gae_lambda": 0.8, "max_grad_norm": 0.5, "vf_coef": 0.695929,
    },
    "RoboHopper-v0": {
        "n_steps": 512, "batch_size": 32, "gamma": 0.999, "learning_rate": 9.80828e-05, "ent_coef": 0.00229519,
        "clip_range": 0.2, "n_epochs": 5, "gae_lambda": 0.99, "max_grad_norm": 0.7, "vf_coef": 0.835671,
        "policy_kwargs": _BIG_RELU,
    },
    "roboppo/HalfCheetah-v5": {
        "n_steps": 512, "batch_size": 64, "gamma": 0.98, "learning_rate": 2.0633e-05, "ent_coef": 0.000401762,
        "clip_range": 0.1, "n_epochs": 20, "gae_lambda": 0.92, "max_grad_norm": 0.8, "vf_coef": 0.58096,
        "policy_kwargs": _BIG_RELU,
    },
    "roboppo/Walker2d-v5": {
        "n_steps": 512, "batch_size": 32, "gamma": 0.99, "learning_rate": 5.05041e-05, "ent_coef": 0.000585045,
        "clip_range": 0.1, "n_epochs": 20, "gae_lambda": 0.95, "max_grad_norm": 1.0, "vf_coef": 0.871923,
    },
}  # fmt: skip
# the suite ids of the three tasks above share their settings
RL_ZOO3_PPO |= {roboppo_envs.ROBO_SUITE_TWINS[robo]: RL_ZOO3_PPO[robo] for robo in roboppo_envs.ROBO_SUITE_TWINS}


def rl_zoo3_cartpole() -> dict[str, Any]:
    """rl-baselines3-zoo's PPO settings for ``CartPole-v1`` (with ``n_envs=8``, 100k steps): the discrete check."""
    return {
        "n_steps": 32, "batch_size": 256, "gae_lambda": 0.8, "gamma": 0.98, "n_epochs": 20, "ent_coef": 0.0,
        "learning_rate": LinearSchedule(1e-3, 0.0, 1.0), "clip_range": LinearSchedule(0.2, 0.0, 1.0),
    }  # fmt: skip


def train_stock_sb3(
    env_id: str,
    seed: int,
    n_timesteps: int,
    ppo_kwargs: dict[str, Any] | None = None,
    n_envs: int = 1,
    checkpoint: pathlib.Path | None = None,
    save_every: int | None = None,
) -> tuple[SB3PPO, VecNormalize, float]:
    """Stock SB3 PPO + ``VecNormalize`` on ``env_id``'s Gymnasium twin; returns (model, env, training seconds).

    With ``checkpoint``, a run saves it every ``save_every`` steps (default: a quarter of the budget) and,
    when the file holds an earlier run of the same env, seed and budget, continues from it.
    """
    kwargs = RL_ZOO3_PPO[env_id] if ppo_kwargs is None else ppo_kwargs
    run = {"env_id": env_id, "seed": seed, "n_timesteps": n_timesteps, "n_envs": n_envs, "ppo_kwargs": repr(kwargs)}
    resumed = None if checkpoint is None else load_checkpoint(checkpoint, run)
    if resumed is None:
        venv = make_vec_env(GYMNASIUM_TWIN[env_id], n_envs=n_envs, seed=seed)
        env = VecNormalize(venv, gamma=kwargs.get("gamma", 0.99))
        model, before = SB3PPO("MlpPolicy", env, seed=seed, **kwargs), 0.0
    else:
        model, env, before = resumed
    start = time.perf_counter()

    def clock() -> float:
        return before + time.perf_counter() - start

    every = save_every or max(n_timesteps // 4, 1)
    callback = None if checkpoint is None else Checkpoints(checkpoint, every, run, clock)
    model.learn(n_timesteps - model.num_timesteps, callback=callback, reset_num_timesteps=resumed is None)
    return model, env, clock()


class Checkpoints(BaseCallback):
    """Writes :func:`save_checkpoint` at the first rollout start after every ``every`` steps."""

    def __init__(self, path: pathlib.Path, every: int, run: dict[str, Any], clock: Callable[[], float]) -> None:
        super().__init__()
        self.path, self.every, self.run, self.clock = path, every, run, clock
        self.saved_at = 0  # the multiple of ``every`` last passed (a resumed run: the one it resumed from)

    def _on_training_start(self) -> None:
        self.saved_at = self.num_timesteps // self.every

    def _on_rollout_start(self) -> None:
        if self.num_timesteps // self.every > self.saved_at:
            save_checkpoint(self.path, self.model, self.run, self.clock())  # type: ignore[arg-type]
            self.saved_at = self.num_timesteps // self.every

    def _on_step(self) -> bool:
        return True


class _WholeEnvPickler(pickle.Pickler):
    """Pickles Gymnasium's ``EzPickle`` envs by their state rather than by their constructor arguments."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, EzPickle):
            return _restore_object, (type(obj), vars(obj))
        return NotImplemented


def _restore_object(cls: type, state: dict[str, Any]) -> Any:
    obj: Any = object.__new__(cls)
    obj.__dict__.update(state)
    return obj


def save_checkpoint(path: pathlib.Path, model: SB3PPO, run: dict[str, Any], seconds: float) -> None:
    """One file, written whole or not at all, from which :func:`load_checkpoint` continues ``model``'s run."""
    env = model.get_env()
    assert isinstance(env, VecNormalize), "stock runs train on VecNormalize"
    zipped = io.BytesIO()
    model.save(zipped)
    state = {
        "run": run, "seconds": seconds, "model": zipped.getvalue(), "venv": env.venv, "obs_rms": env.obs_rms,
        "ret_rms": env.ret_rms, "returns": env.returns, "gamma": env.gamma, "numpy": np.random.get_state(),
        "torch": th.get_rng_state(), "cuda": th.cuda.get_rng_state_all() if th.cuda.is_available() else [],
        "random": random.getstate(),
    }  # fmt: skip
    with atomic_target(path) as partial, open(partial, "wb") as file:
        _WholeEnvPickler(file).dump(state)


def load_checkpoint(path: pathlib.Path, run: dict[str, Any]) -> tuple[SB3PPO, VecNormalize, float] | None:
    """(model, env, seconds trained) of the checkpoint at ``path``; None when there is none, it is of another run
    or it cannot be read (each said in one line; the run then trains from the start).

    Sets NumPy's and torch's global random generators (CUDA's too): call it just before ``learn``. The
    file is a pickle this process family wrote (as SB3's own ``VecNormalize`` files are): load only your own.
    """
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as file:
            state = pickle.load(file)
    except Exception as error:  # a damaged file must not block the run for good
        print(f"{path} cannot be read ({type(error).__name__}: {error}); training from the start", flush=True)
        return None
    if state["run"] != run:
        print(f"{path} is of another run ({state['run']}); training from the start", flush=True)
        return None
    env = VecNormalize(state["venv"], gamma=state["gamma"])
    env.obs_rms, env.ret_rms, env.returns = state["obs_rms"], state["ret_rms"], state["returns"]
    model = SB3PPO.load(io.BytesIO(state["model"]))
    model.set_env(env, force_reset=False)
    np.random.set_state(state["numpy"])
    th.set_rng_state(state["torch"])
    if state["cuda"]:
        th.cuda.set_rng_state_all(state["cuda"])
    random.setstate(state["random"])
    print(f"{path}: continuing from {model.num_timesteps:,} steps", flush=True)
    return model, env, float(state["seconds"])


def evaluate_stock_sb3(
    model: SB3PPO, train_env: VecNormalize, env_id: str, seed: int, episodes: int = 10
) -> tuple[float, int]:
    """Deterministic mean return on a fresh twin env sharing the training observation statistics, and how many
    of the ``episodes`` terminated before the time limit (a fall)."""
    twin = GYMNASIUM_TWIN[env_id]
    eval_env = VecNormalize(make_vec_env(twin, n_envs=1, seed=seed), training=False, norm_reward=False)
    eval_env.obs_rms = train_env.obs_rms
    returns, lengths = evaluate_policy(
        model, eval_env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
    )
    return float(np.mean(returns)), early_ends(lengths, twin)
