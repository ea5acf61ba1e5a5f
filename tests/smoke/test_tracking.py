"""The tracking evaluation of a joystick robot: the command grid, its errors and falls, and its table."""

from __future__ import annotations

from typing import Any

import numpy as np

from roboppo.cli.tracking import COMMAND_GRID, report, track


class Still:
    """A policy that holds the home pose (actions 0)."""

    def predict(self, obs: Any, deterministic: bool = True) -> tuple[np.ndarray, None]:
        return np.zeros((len(obs["state"]), 12)), None


def test_a_robot_that_stands_still_tracks_only_the_zero_command() -> None:
    kwargs = {"max_episode_steps": 40, "noise_level": 0.0, "randomize": True}
    result = track(Still(), "roboppo/Go1JoystickFlatTerrain-v1", 12, seed=0, env_kwargs=kwargs)  # type: ignore[arg-type]
    assert len(result.fell) == 2 * len(COMMAND_GRID)  # rounded up to whole passes over the grid
    np.testing.assert_array_equal(result.command, np.vstack([COMMAND_GRID, COMMAND_GRID]))
    assert not result.fell.any()  # the home pose stands
    speed = np.linalg.norm(result.command[:, :2], axis=1)
    # standing, the error is about the commanded speed (the reset's push of up to 0.5 m/s dies out)
    np.testing.assert_allclose(result.xy_error[speed > 0], speed[speed > 0], atol=0.25)
    assert (result.xy_error[speed == 0] < 0.25).all()
    turning = result.command[:, 2] != 0
    np.testing.assert_allclose(result.yaw_error[turning], 1.0, atol=0.25)
    table = report(result)
    assert "(+1.5, +0.0, +0.0)" in table and "(20 episodes)" in table
    assert f"{result.summary()['xy_error']:12.3f}" in table.splitlines()[-1]
