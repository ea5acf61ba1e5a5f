"""The sim-to-sim adapter reads roboppo's Go1 task and EnvPool's port alike (``roboppo-zoo eval --sim-to-sim``)."""

from __future__ import annotations

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
