"""Gymnasium's ``VectorEnv`` contract on the batched MuJoCo envs, each point beside ``SyncVectorEnv``.

Rendering (one frame per copy), Gymnasium's own vector wrappers, ``close``, ``reset`` options,
``metadata``, ``get_attr`` / ``set_attr`` / ``call``: the batch and Gymnasium's synchronous vector env
of the same task are driven alike in the same test and must agree.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import vector as wrappers

import roboppo_envs  # noqa: F401  (registers the ids)

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
N = 3


def pair(
    name: str, mode: AutoresetMode | None = None, **kwargs: Any
) -> tuple[gym.vector.VectorEnv, gym.vector.VectorEnv]:
    """``roboppo/<name>-v5`` batched and Gymnasium's ``<name>-v5`` in a ``SyncVectorEnv``, both in autoreset ``mode``
    (None: each one's default, which is Gymnasium's ``NEXT_STEP`` for both)."""
    modes = {} if mode is None else {"autoreset_mode": mode}
    ours = gym.make_vec(f"roboppo/{name}-v5", num_envs=N, **modes, **kwargs)
    return ours, gym.make_vec(f"{name}-v5", num_envs=N, vectorization_mode="sync", vector_kwargs=modes, **kwargs)


def drive(envs: gym.vector.VectorEnv, steps: int, seed: int = 4) -> list[tuple[Any, ...]]:
    """Reset with ``seed`` and step random actions (the same for any env of the task); every result."""
    rng = np.random.default_rng(seed)
    results: list[tuple[Any, ...]] = [envs.reset(seed=seed)]
    space = envs.action_space
    for _ in range(steps):
        low, high = np.maximum(space.low, -2.0), np.minimum(space.high, 2.0)  # ClipAction's space is unbounded
        results.append(envs.step(rng.uniform(low, high).astype(space.dtype)))
    return results


def assert_same(ours: Any, theirs: Any, where: str) -> None:
    """Equal results, dtypes included; Gymnasium's ``final_obs`` is an array of objects, ours one array (documented)."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys(), f"{where}: {sorted(ours)} != {sorted(theirs)}"
        for key in theirs:
            if key == "final_obs":
                mask = theirs["_final_obs"]
                np.testing.assert_array_equal(ours[key][mask], np.stack(theirs[key][mask]), err_msg=where)
            elif key != "t":  # an episode's wall-clock time (RecordEpisodeStatistics)
                assert_same(ours[key], theirs[key], f"{where}: {key}")
    elif isinstance(theirs, list | tuple):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=where)
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype, where


@pytest.mark.parametrize("mode", ["rgb_array", "depth_array"])
def test_render_returns_one_frame_per_copy_as_sync_does(mode: str) -> None:
    ours, theirs = pair("Hopper", AutoresetMode.SAME_STEP, render_mode=mode, healthy_z_range=(1.2, 1.3))  # falls
    rng, space = np.random.default_rng(0), ours.action_space
    ours.reset(seed=2), theirs.reset(seed=2)
    for step in range(30):
        actions = rng.uniform(space.low, space.high).astype(np.float32)
        ours.step(actions), theirs.step(actions)
        if step % 10 == 0 or step > 25:
            frames, expected = ours.render(), theirs.render()
            assert isinstance(frames, tuple) and len(frames) == N
            for copy, (frame, their) in enumerate(zip(frames, expected, strict=True)):
                np.testing.assert_array_equal(frame, their, err_msg=f"copy {copy} at step {step}")
    assert len({frames[i].tobytes() for i in range(N)}) == N  # three different poses
    assert gym.make_vec("roboppo/Hopper-v5", num_envs=2).render() is None


def test_human_rendering_is_gymnasiums_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    """``human`` as Gymnasium documents it for vector envs: HumanRendering tiles the copies' frames in one window.

    The wrapper scales frames with OpenCV, a 50 MB install for one resize: a NumPy resize stands in for it."""
    import types

    def resize(image: np.ndarray, size: tuple[int, int], interpolation: int = 0) -> np.ndarray:
        rows = np.arange(size[1]) * image.shape[0] // size[1]
        cols = np.arange(size[0]) * image.shape[1] // size[0]
        return image[rows][:, cols]

    monkeypatch.setitem(__import__("sys").modules, "cv2", types.SimpleNamespace(resize=resize, INTER_AREA=3))
    with pytest.raises(ValueError, match=r"render_mode='human'.*gymnasium\.wrappers\.vector\.HumanRendering"):
        gym.make_vec("roboppo/Hopper-v5", num_envs=2, render_mode="human")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # no display here: pygame draws off screen
    envs = wrappers.HumanRendering(gym.make_vec("roboppo/Hopper-v5", num_envs=N, render_mode="rgb_array"))
    envs.reset(seed=0)
    envs.step(np.zeros((N, 3), np.float32))
    import pygame

    shown = pygame.surfarray.array3d(envs.window)  # the window holds the three copies side by side
    assert shown.shape[:2] == envs.screen_size and shown.std() > 0
    envs.close()


WRAPPERS: dict[str, Callable[[gym.vector.VectorEnv], gym.vector.VectorEnv]] = {
    "RecordEpisodeStatistics": wrappers.RecordEpisodeStatistics,
    "NormalizeObservation": wrappers.NormalizeObservation,
    "NormalizeReward": wrappers.NormalizeReward,
    "ClipAction": wrappers.ClipAction,
    "RescaleAction": lambda envs: wrappers.RescaleAction(envs, -0.5, 0.5),
    "TransformObservation": lambda envs: wrappers.TransformObservation(
        envs, lambda obs: 2 * obs, envs.observation_space
    ),
    "DictInfoToList": wrappers.DictInfoToList,
}


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_gymnasiums_vector_wrappers_give_what_they_give_on_sync(name: str) -> None:
    """In Gymnasium's default autoreset mode (observation wrappers refuse any other)."""
    ours, theirs = (WRAPPERS[name](envs) for envs in pair("Walker2d", max_episode_steps=40))  # truncations too
    for step, (a, b) in enumerate(zip(drive(ours, 100), drive(theirs, 100), strict=True)):
        assert_same(a, b, f"{name} at step {step}")


def test_record_video_writes_every_copys_frames(tmp_path: pathlib.Path) -> None:
    ours, theirs = pair("InvertedPendulum", render_mode="rgb_array")
    recorded = []
    for envs, folder in ((ours, tmp_path / "ours"), (theirs, tmp_path / "theirs")):
        video = wrappers.RecordVideo(envs, str(folder), episode_trigger=lambda episode: episode < 2)
        frames: list[np.ndarray] = []  # each the three copies side by side, kept as each video is written
        write = video.stop_recording
        video.stop_recording = lambda write=write, video=video, frames=frames: (  # type: ignore[method-assign]
            frames.extend(video.recorded_frames),
            write(),
        )
        drive(video, 40)
        video.close()
        recorded.append(np.stack(frames))
        assert sorted(p.name for p in folder.iterdir()) == ["rl-video-episode-0.mp4", "rl-video-episode-1.mp4"]
    assert recorded[0].shape[1:] == (480, 3 * 480, 3)
    np.testing.assert_array_equal(*recorded)


def test_close_sets_closed_and_may_be_called_twice() -> None:
    for envs in pair("Hopper"):
        envs.close()
        envs.close()
        assert envs.closed


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_reset_mask_resets_only_the_masked_copies_as_sync_does(mode: AutoresetMode) -> None:
    ours, theirs = pair("Ant", mode, max_episode_steps=1000)
    drive(ours, 15), drive(theirs, 15)
    mask = np.array([True, False, True])
    a, b = (
        ours.reset(seed=[7, 8, 9], options={"reset_mask": mask}),
        theirs.reset(seed=[7, 8, 9], options={"reset_mask": mask}),
    )
    assert_same(a, b, "masked reset")
    step = np.full((N, 8), 0.3, np.float32)
    assert_same(ours.step(step), theirs.step(step), "the step after it")
    with pytest.raises(ValueError, match=r"reset_mask.*at least one True"):
        ours.reset(options={"reset_mask": np.zeros(N, bool)})
    for wrong in ([True, False, True], np.array([1, 0, 1])):  # SyncVectorEnv raises TypeError for both
        for envs in (ours, theirs):
            with pytest.raises(TypeError, match="reset_mask"):
                envs.reset(options={"reset_mask": wrong})
    with pytest.raises(ValueError, match=r"reset_mask.*bool NumPy array of shape \(3,\)"):
        ours.reset(options={"reset_mask": np.ones(N + 1, bool)})


def test_a_first_reset_with_every_copy_masked_resets_them_all_as_sync_does() -> None:
    ours, theirs = pair("Hopper")
    every = np.ones(N, dtype=bool)
    assert_same(ours.reset(seed=4, options={"reset_mask": every}), theirs.reset(seed=4, options={"reset_mask": every}),
                "first reset, every copy masked")  # fmt: skip
    with pytest.raises(ValueError, match="first reset"):
        pair("Hopper")[0].reset(seed=4, options={"reset_mask": np.array([True, False, True])})


def test_metadata_names_the_autoreset_mode_and_the_frame_rate() -> None:
    ours, theirs = pair("Swimmer")
    assert ours.metadata["autoreset_mode"] == theirs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    for mode in AutoresetMode:
        assert pair("Swimmer", mode)[0].metadata["autoreset_mode"] == mode
    assert ours.metadata["render_fps"] == theirs.metadata["render_fps"]
    assert set(ours.metadata["render_modes"]) == set(theirs.metadata["render_modes"]) - {"human"}


def test_get_attr_set_attr_and_call_reach_each_copy_as_on_sync() -> None:
    ours, theirs = pair("Hopper")
    drive(ours, 12), drive(theirs, 12)
    for name in ("dt", "frame_skip", "state_vector", "healthy_reward", "is_healthy"):
        assert_same(ours.get_attr(name), theirs.get_attr(name), name)
    assert_same(ours.call("state_vector"), theirs.call("state_vector"), "call")
    qpos, qvel = np.full(6, 0.1) + np.array([0, 1.25, 0, 0, 0, 0]), np.zeros(6)
    ours.call("set_state", qpos, qvel), theirs.call("set_state", qpos, qvel)  # writes every copy's physics
    ours.set_attr("_healthy_reward", 3.0), theirs.set_attr("_healthy_reward", 3.0)  # the reward reads it next step
    ours.set_attr("frame_skip", 2), theirs.set_attr("frame_skip", 2)  # and the physics steps twice, not four times
    ours.set_attr("np_random", [np.random.default_rng(i) for i in range(N)])
    theirs.set_attr("np_random", [np.random.default_rng(i) for i in range(N)])
    step = np.full((N, 3), 0.2, np.float32)
    for k in range(20):
        assert_same(ours.step(step), theirs.step(step), f"step {k} after set_state and set_attr")
    with pytest.raises(ValueError, match=r"share one HopperEnv, so set_attr\('_healthy_reward'\) takes one value"):
        ours.set_attr("_healthy_reward", [1.0, 2.0, 3.0])


def test_sb3_vec_env_methods_reach_each_copy_as_dummy_vec_env() -> None:
    """SB3's get_attr / env_method / get_images on the adapted batch give what DummyVecEnv gives."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from roboppo.common.env_util import make_env_from_id

    ours = make_env_from_id("roboppo/Hopper-v5", n_envs=N, env_kwargs={"render_mode": "rgb_array"})
    theirs = DummyVecEnv([lambda: gym.make("Hopper-v5", render_mode="rgb_array") for _ in range(N)])
    ours.seed(3), theirs.seed(3)
    ours.reset(), theirs.reset()
    for _ in range(5):
        ours.step(np.full((N, 3), 0.4, np.float32)), theirs.step(np.full((N, 3), 0.4, np.float32))
    assert ours.get_attr("frame_skip") == theirs.get_attr("frame_skip") == [4] * N
    assert ours.get_attr("spec", indices=[0])[0].id == "roboppo/Hopper-v5"
    assert_same(ours.env_method("state_vector", indices=[1, 2]), theirs.env_method("state_vector", indices=[1, 2]), "")
    assert_same(ours.get_images(), theirs.get_images(), "images")


def test_a_nan_action_of_a_copy_reset_by_the_step_is_ignored_as_sync_does() -> None:
    """Under NEXT_STEP the step after a copy finished resets it and never uses its action; any other NaN is refused."""
    ours, theirs = pair("Hopper", max_episode_steps=2)
    zeros = np.zeros((N, 3), np.float32)
    for envs in (ours, theirs):
        envs.reset(seed=0)
        envs.step(zeros)
        assert envs.step(zeros)[3].all()  # every copy truncated at its second step
    ignored = zeros.copy()
    ignored[0] = np.nan
    assert_same(ours.step(ignored), theirs.step(ignored), "the resetting step with a NaN in copy 0's ignored row")
    with pytest.raises(ValueError, match=r"NaN or inf \(copies \[0\]\)"):
        ours.step(ignored)  # copy 0 now steps, so its NaN would reach the physics


def test_np_random_and_its_seed_are_each_copys_as_on_sync() -> None:
    ours, theirs = pair("Hopper")
    for envs in (ours, theirs):
        envs.reset(seed=3)
    assert ours.np_random_seed == theirs.np_random_seed == (3, 4, 5)
    ours_draws = [rng.integers(1 << 30) for rng in ours.np_random]
    assert ours_draws == [rng.integers(1 << 30) for rng in theirs.np_random]


def test_a_closed_env_says_so_where_it_would_need_its_simulations() -> None:
    envs = gym.make_vec("roboppo/Hopper-v5", num_envs=2)
    envs.reset(seed=0)
    envs.close()
    calls = (
        lambda: envs.reset(seed=0),
        lambda: envs.step(np.zeros((2, 3))),
        lambda: envs.get_attr("dt"),
        lambda: envs.call("state_vector"),
        lambda: envs.set_attr("frame_skip", 4),
    )
    for call in calls:
        with pytest.raises(RuntimeError, match=r"closed.*make a new one"):
            call()
