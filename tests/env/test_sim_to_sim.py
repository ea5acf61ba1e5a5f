"""The sim-to-sim adapter reads roboppo's Go1 task and EnvPool's port alike (``roboppo-zoo eval --sim-to-sim``)."""

from __future__ import annotations

import pathlib

import gymnasium as gym
import numpy as np
import pytest

from roboppo import PPO
from roboppo.cli.sim_to_sim import measure, report
from roboppo_envs.playground.go1 import Go1JoystickVectorEnv
from tests.env.test_playground_tasks import QUIET, first_lasting_seed, start_as_envpool

envpool = pytest.importorskip("envpool")
LIMIT = 40  # shorter than the steps over which the two simulators agree to 1e-6


def test_one_policy_scores_the_same_on_both_simulators_from_the_same_states() -> None:
    """From EnvPool's initial states and commands, an episode of a fixed policy gets the same reward, tracking
    errors and ending on both, read through the observations alone."""
    n = 4
    model = PPO("MultiInputPolicy", "roboppo/Go1JoystickFlatTerrain-v1", n_envs=1, seed=0)
    ours = Go1JoystickVectorEnv(n, max_episode_steps=LIMIT, num_threads=1, autoreset_mode="NextStep", **QUIET)
    seed = first_lasting_seed(ours.init_qpos, n)
    theirs = envpool.make_gymnasium(
        "MuJoCoPlayground/Go1JoystickFlatTerrain-v1", num_envs=n, num_threads=1, seed=seed, max_episode_steps=LIMIT,
        **QUIET,
    )  # fmt: skip
    their_obs, their_info = theirs.reset()
    ours.reset(seed=123)
    obs = start_as_envpool(ours, their_info, seed)
    mine, reference = measure(model, ours, obs, n), measure(model, theirs, their_obs, n)
    for field in ("reward", "xy_error", "yaw_error", "fell"):
        np.testing.assert_allclose(getattr(mine, field), getattr(reference, field), atol=1e-5, err_msg=field)
    assert (mine.xy_error > 0.01).all() and mine.reward.min() > 0  # an untrained robot: it stands, and does not track
    table = report({"roboppo": mine, "EnvPool": reference})
    assert "+0.0%" in table.splitlines()[-1] or "-0.0%" in table.splitlines()[-1]


def test_a_task_without_a_port_is_refused_with_the_known_ones() -> None:
    from roboppo.cli.sim_to_sim import both
    from roboppo.common.errors import UserInputError

    with pytest.raises(UserInputError, match=r"it knows roboppo/Go1JoystickFlatTerrain-v1, .* not roboppo/Hopper-v5"):
        both(None, "roboppo/Hopper-v5", 1, 0)  # type: ignore[arg-type]


def test_the_robustness_sweep_holds_each_value_and_draws_the_figure(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roboppo.cli import robustness

    env_id = "roboppo/Go1JoystickFlatTerrain-v1"
    assert robustness.held(env_id, True, "floor_friction", 0.1) == {"floor_friction": (0.1, 0.1)}
    assert robustness.held(env_id, {"floor_friction": (0.5, 0.6)}, "torso_added_mass", 3.0) == {
        "floor_friction": (0.5, 0.6), "torso_added_mass": (3.0, 3.0),
    }  # fmt: skip
    alone = robustness.held(env_id, None, "floor_friction", 1.3)
    assert alone["floor_friction"] == (1.3, 1.3) and alone["torso_added_mass"] is None  # the others off
    envs = gym.make_vec(env_id, num_envs=2, randomize=robustness.held(env_id, True, "floor_friction", 0.1))
    envs.reset(seed=0)
    assert [float(r["floor_friction"][0]) for r in envs.get_attr("randomization")] == [0.1, 0.1]
    monkeypatch.setattr(robustness, "SWEEPS", {k: ((0.2, 1.0), u, r) for k, (_, u, r) in robustness.SWEEPS.items()})
    model = PPO("MultiInputPolicy", env_id, n_envs=1, seed=0)
    results = robustness.sweep(model, env_id, {"randomize": True, "max_episode_steps": 20}, 10, 0)
    assert [value for value, _ in results["floor_friction"]] == [0.2, 1.0]
    assert all(summary["episodes"] == 10 for rows in results.values() for _, summary in rows)
    robustness.plot(results, tmp_path / "robustness.png", "test")
    assert (tmp_path / "robustness.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
