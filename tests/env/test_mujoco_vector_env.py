"""Batched MuJoCo vector envs: equal to single envs step by step, autoreset, threads, bad input."""

from __future__ import annotations

import pathlib
import sys

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import roboppo_envs
from roboppo_envs.mujoco import MujocoVectorEnv, RoboHopperVectorEnv
from roboppo_envs.mujoco.vector_env import MujocoCompilerWarning, available_cpus, contacts_possible
from tests.conftest import ROBO_IDS


def random_actions(envs: MujocoVectorEnv, rng: np.random.Generator) -> np.ndarray:
    space = envs.single_action_space
    return rng.uniform(space.low, space.high, size=(envs.num_envs, *space.shape)).astype(np.float32)


@pytest.mark.parametrize("env_id", ROBO_IDS)
def test_batch_equals_single_envs_step_by_step_across_resets(env_id: str, rng: np.random.Generator) -> None:
    assert compare_with_single_envs(env_id, {}, rng) > 0


# Hopper's health checks with every range narrowed (z, the angle and the state each end episodes here), and off
HOPPER_HEALTH = [
    {"healthy_z_range": (1.22, 1.28), "healthy_angle_range": (-0.08, 0.07), "healthy_state_range": (-3.0, 3.5)},
    {"terminate_when_unhealthy": False, "healthy_reward": 0.5, "exclude_current_positions_from_observation": False},
]


@pytest.mark.parametrize("kwargs", HOPPER_HEALTH, ids=["narrow-ranges", "no-termination"])
def test_hopper_health_settings_match_single_envs(kwargs: dict, rng: np.random.Generator) -> None:
    resets = compare_with_single_envs("RoboHopper-v0", kwargs, rng)
    assert (resets == 0) == (kwargs.get("terminate_when_unhealthy") is False)


def test_hopper_health_check_matches_gymnasium_on_every_bound() -> None:
    """States on, just inside and just outside each of the six bounds, and NaN, against Gymnasium's is_healthy."""
    kwargs = {"healthy_z_range": (1.0, 1.5), "healthy_angle_range": (-0.1, 0.2), "healthy_state_range": (-3.0, 4.0)}
    single = gym.make("RoboHopper-v0", **kwargs).unwrapped
    task = gym.make_vec("RoboHopper-v0", num_envs=1, **kwargs).task
    single.reset(seed=0)
    base = np.concatenate([single.init_qpos, single.init_qvel])
    states = [base]
    for index, (low, high) in [(1, kwargs["healthy_z_range"]), (2, kwargs["healthy_angle_range"])] + [
        (i, kwargs["healthy_state_range"]) for i in (3, 7, 11)
    ]:
        for value in (low, high, np.nextafter(low, 0.0), np.nextafter(high, 0.0), low - 0.5, high + 0.5, np.nan):
            state = base.copy()
            state[index] = value
            states.append(state)
    nq = single.init_qpos.size
    expected = []
    for state in states:
        single.set_state(state[:nq], state[nq:])
        expected.append(single.is_healthy)
    batch = np.stack(states)
    healthy = task.is_healthy({"qpos": batch[:, :nq], "qvel": batch[:, nq:]})
    assert healthy.tolist() == expected
    assert 0 < sum(expected) < len(expected)


def compare_with_single_envs(env_id: str, kwargs: dict, rng: np.random.Generator) -> int:
    """Step 3 batched copies and 3 single envs with the same actions for 300 steps, asserting equality.

    :return: how many episodes ended.
    """
    envs = gym.make_vec(env_id, num_envs=3, num_threads=2, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    singles = [gym.make(env_id, **kwargs) for _ in range(3)]
    obs, _ = envs.reset(seed=11)
    single_obs = [env.reset(seed=11 + i)[0] for i, env in enumerate(singles)]
    resets = 0
    for _ in range(300):
        np.testing.assert_array_equal(obs, np.stack(single_obs))
        actions = random_actions(envs, rng)
        obs, rewards, terminated, truncated, info = envs.step(actions)
        for i, env in enumerate(singles):
            single_obs[i], reward, term, trunc, _ = env.step(actions[i])
            assert rewards[i] == pytest.approx(reward, rel=1e-12, abs=1e-12)
            assert (terminated[i], truncated[i]) == (term, trunc)
            if term or trunc:
                np.testing.assert_array_equal(info["final_obs"][i], single_obs[i])
                single_obs[i], _ = env.reset()
                resets += 1
    return resets


def balance(obs: np.ndarray) -> np.ndarray:
    """A PD controller that keeps the pendulum up for a whole episode; ``obs`` is ``[n, 4]``."""
    return np.clip(obs @ np.array([[0.5], [10.0], [0.5], [2.0]]), -3, 3).astype(np.float32)


def test_truncation_at_1000_steps_matches_time_limit() -> None:
    kwargs = {"reset_noise_scale": 0.0}
    envs = gym.make_vec("RoboInvertedPendulum-v0", num_envs=2, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    single = gym.make("RoboInvertedPendulum-v0", **kwargs)
    obs, _ = envs.reset(seed=0)
    single_obs, _ = single.reset(seed=0)
    for step in range(1, 1001):
        actions = balance(obs)
        obs, rewards, terminated, truncated, info = envs.step(actions)
        single_obs, _, single_term, single_trunc, _ = single.step(actions[0])
        assert (terminated[0], truncated[0]) == (single_term, single_trunc)
        assert truncated.all() == (step == 1000) and not terminated.any()
    assert rewards.tolist() == [1.0, 1.0]
    np.testing.assert_array_equal(info["final_obs"][0], single_obs)
    np.testing.assert_array_equal(obs[0], single.reset()[0])  # SAME_STEP: the next episode's first obs
    assert info["_final_obs"].tolist() == [True, True]


def test_same_step_autoreset_reports_final_observations(rng: np.random.Generator) -> None:
    assert (
        gym.make_vec("RoboHopper-v0", num_envs=4).metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    )  # Gymnasium's
    envs = gym.make_vec("RoboHopper-v0", num_envs=4, autoreset_mode="SameStep")
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    envs.reset(seed=3)
    for _ in range(200):
        obs, _, terminated, truncated, info = envs.step(random_actions(envs.unwrapped, rng))
        done = terminated | truncated
        if done.any():
            break
    assert done.any(), "random actions make the hopper fall within 200 steps"
    assert info["_final_obs"].tolist() == done.tolist()
    assert not np.array_equal(obs[done], info["final_obs"][done])
    np.testing.assert_array_equal(obs[~done], info["final_obs"][~done])
    assert envs.unwrapped._steps[done].tolist() == [0] * int(done.sum())


def test_thread_count_does_not_change_results(rng: np.random.Generator) -> None:
    one, two = (gym.make_vec("RoboHopper-v0", num_envs=5, num_threads=n) for n in (1, 2))
    assert (one.unwrapped.num_threads, two.unwrapped.num_threads) == (1, min(2, available_cpus()))
    np.testing.assert_array_equal(one.reset(seed=1)[0], two.reset(seed=1)[0])
    for _ in range(50):
        actions = random_actions(one.unwrapped, rng)
        for a, b in zip(one.step(actions)[:4], two.step(actions)[:4], strict=True):
            np.testing.assert_array_equal(a, b)


def test_default_threads_follow_the_machine_and_excess_is_capped() -> None:
    assert RoboHopperVectorEnv(num_envs=64).num_threads == available_cpus()
    assert RoboHopperVectorEnv(num_envs=1).num_threads == 1
    with pytest.warns(UserWarning, match="CPU cores available"):
        envs = RoboHopperVectorEnv(num_envs=64, num_threads=available_cpus() + 7)
    assert envs.num_threads == available_cpus()


def test_render_shows_every_copy() -> None:
    envs = gym.make_vec("RoboInvertedPendulum-v0", num_envs=2, render_mode="rgb_array")
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 2 and all(f.ndim == 3 and f.shape[2] == 3 and f.std() > 0 for f in frames)
    assert not np.array_equal(*frames)


def test_render_after_a_reset_shows_the_new_episode(rng: np.random.Generator) -> None:
    """Hopper resets without mj_forward (its observation is the state alone); a frame still shows the new pose."""
    envs = gym.make_vec("RoboHopper-v0", num_envs=2, render_mode="rgb_array")
    single = gym.make("RoboHopper-v0", render_mode="rgb_array")
    envs.reset(seed=3)
    for _ in range(20):
        envs.step(random_actions(envs, rng))
    moved = envs.render()[0]
    envs.reset(seed=5)
    single.reset(seed=5)
    frame = envs.render()[0]
    assert not np.array_equal(frame, moved)
    np.testing.assert_array_equal(frame, single.render())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"num_envs": 0}, "num_envs must be at least 1"), ({"num_envs": 2, "num_threads": 0}, "num_threads")],
)
def test_bad_sizes_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RoboHopperVectorEnv(**kwargs)


def test_bad_actions_name_the_expected_shape() -> None:
    envs = RoboHopperVectorEnv(num_envs=2)
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(np.zeros((2, 3), np.float32))
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        envs.step(np.zeros((3,), np.float32))
    bad = np.zeros((2, 3), np.float32)
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf \(copies \[1\]\)"):
        envs.step(bad)


def test_an_infinite_reward_names_the_reward_keywords_not_the_physics() -> None:
    """An infinite cost weight makes the reward inf while the state stays finite: the error says which."""
    from roboppo_envs.mujoco import MujocoNonFiniteError

    envs = gym.make_vec("roboppo/Hopper-v5", num_envs=2, ctrl_cost_weight=np.inf)
    envs.reset(seed=0)
    with pytest.raises(MujocoNonFiniteError, match=r"reward is NaN or inf in copies \[0, 1\] .*reward keywords"):
        envs.step(np.full((2, 3), 0.5, np.float32))


def test_make_vec_uses_the_batched_env_for_every_mujoco_id() -> None:
    for env_id in ROBO_IDS:
        assert roboppo_envs.has_vector_env(env_id)
        assert isinstance(gym.make_vec(env_id, num_envs=2).unwrapped, MujocoVectorEnv)
    assert not roboppo_envs.has_vector_env("CartPole-v1")


def test_an_old_mujoco_is_named_with_the_upgrade(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mujoco.batch", None)  # what `import mujoco.batch` meets before MuJoCo 4.0
    with pytest.raises(ImportError, match=r"mujoco\.batch, new in MuJoCo 4\.0.*pip install -U 'mujoco>=4'"):
        RoboHopperVectorEnv(num_envs=2)


def test_every_copy_steps_in_one_batch_on_the_requested_threads() -> None:
    envs = RoboHopperVectorEnv(num_envs=5, num_threads=min(2, available_cpus()))
    assert (envs._batch.nsim, envs._batch.nthread) == (5, envs.num_threads)
    envs.reset(seed=0)
    before = envs._batch.state.copy()
    envs.step(np.zeros((5, 3), dtype=np.float32))
    assert (envs._batch.state != before).any(axis=1).all(), "one step moved every copy's state row"


@pytest.mark.parametrize("env_id", ["roboppo/Hopper-v5", "roboppo/Reacher-v5"])  # with and without collisions
def test_a_next_step_reset_does_not_simulate_the_copies_it_resets(env_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under NEXT_STEP the copies a step resets are left out of its physics (their step would be discarded)."""
    envs = gym.make_vec(env_id, num_envs=3, max_episode_steps=2).unwrapped
    stepped: list[list[bool] | None] = []
    step = envs._batch.step

    def spy(ids: np.ndarray | None, **kwargs: int) -> None:
        stepped.append(ids if ids is None else ids.tolist())
        step(ids, **kwargs)

    monkeypatch.setattr(envs._batch, "step", spy)
    envs.reset(seed=0)
    actions = np.zeros((3, envs.single_action_space.shape[0]))
    envs.step(actions)
    envs.step(actions)  # every copy truncated
    envs._autoreset[1] = False  # as if copy 1 were mid-episode: it steps, and its step count ends it
    envs.step(actions)
    envs.step(actions)
    assert stepped == [None, None, [False, True, False], [True, False, True]]


def test_an_edit_to_the_model_reaches_the_physics_as_in_a_single_env() -> None:
    envs = RoboHopperVectorEnv(num_envs=2)
    single = gym.make("RoboHopper-v0").unwrapped
    envs.reset(seed=0)
    single.reset(seed=0)
    for model in (envs.model, single.model):
        model.body_mass[:] *= 2.0  # domain randomization edits the env's model in place
    actions = np.full((2, 3), 0.5, dtype=np.float32)
    for _ in range(20):
        obs, *_ = envs.step(actions)
        single_obs, *_ = single.step(actions[0])
    np.testing.assert_array_equal(obs[0], single_obs)


def test_a_model_without_possible_contacts_steps_as_gymnasiums_before_and_after_an_edit_allowing_them() -> None:
    """The double pendulum's geoms cannot touch (contype 0), so its batch skips MuJoCo's collision stage; an
    edit letting every geom touch every other, with the floor raised into the poles, is simulated, contacts
    included, as in Gymnasium's env."""
    envs = gym.make_vec("roboppo/InvertedDoublePendulum-v5", num_envs=1).unwrapped
    single = gym.make("InvertedDoublePendulum-v5").unwrapped
    assert not contacts_possible(envs.model)
    floor = mujoco.mj_name2id(single.model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    envs.reset(seed=3)
    single.reset(seed=3)
    flags = envs.model.opt.disableflags
    actions = np.full((1, 1), 0.05)
    for step in range(7):
        if step == 3:
            for model in (envs.model, single.model):
                for field in ("geom_contype", "geom_conaffinity", "body_contype", "body_conaffinity"):
                    getattr(model, field)[:] = 1
                model.geom_pos[floor, 2] = 0.9  # the floor now cuts through the poles
        obs, reward, terminated, *_ = envs.step(actions)
        single_obs, single_reward, *_ = single.step(actions[0])
        np.testing.assert_array_equal(obs[0], single_obs.astype(obs.dtype))
        assert reward[0] == single_reward and not terminated[0]
    assert single.data.ncon > 0, "the edit made contacts happen, so a skipped collision stage would show"
    assert envs.model.opt.disableflags == flags


def test_close_releases_the_batch() -> None:
    envs = RoboHopperVectorEnv(num_envs=2)
    envs.close()
    assert not hasattr(envs, "_batch")
    envs.close()  # twice is fine, as for Gymnasium's envs


def test_mujoco_compiler_warnings_become_one_python_warning_and_no_log_file(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What MuJoCo prints while compiling a model (here its deprecation of ``settotalmass``, which Gymnasium's
    HalfCheetah file uses and the twin compiles without) comes once as a Python warning."""
    from roboppo_envs.mujoco.vector_env import mujoco_warnings_as_python_warnings

    monkeypatch.chdir(tmp_path)
    xml = (
        '<mujoco><compiler settotalmass="2"/>'
        '<worldbody><body><freejoint/><geom size="0.1"/></body></worldbody></mujoco>'
    )
    with pytest.warns(MujocoCompilerWarning, match="settotalmass"), mujoco_warnings_as_python_warnings():
        mujoco.MjModel.from_xml_string(xml)
    assert mujoco.get_mju_user_warning() is None  # MuJoCo's own handler is back
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
