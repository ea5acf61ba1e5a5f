"""The Brax adapter: Gymnasium vector semantics, seeding, host arrays, errors."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import roboppo_envs
from roboppo_envs.brax import BraxNonFiniteError, BraxVectorEnv

jax = pytest.importorskip("jax")

LIMIT = 6
#: every pendulum batch here has two copies: the time limit and autoreset mode are traced, so they share one program
COPIES = 2
pytestmark = pytest.mark.xdist_group("brax-pendulums")  # one worker compiles, the JAX cache serves the rest


@pytest.fixture(scope="module")
def pendulums() -> Iterator[BraxVectorEnv]:
    """Two Brax inverted pendulums truncated after LIMIT steps (compiled once for the module)."""
    envs = BraxVectorEnv(
        "inverted_pendulum", COPIES, max_episode_steps=LIMIT, env_id="Pendulums", autoreset_mode="SameStep"
    )
    yield envs
    envs.close()


def rollout(envs: BraxVectorEnv, seed: int, actions: np.ndarray) -> list[np.ndarray]:
    obs, _ = envs.reset(seed=seed)
    trajectory = [obs]
    for action in actions:
        obs, reward, *_ = envs.step(action)
        trajectory += [obs, reward]
    return trajectory


def test_brax_ids_are_registered_with_a_vector_entry_point() -> None:
    for env_id in ("RoboAnt-v0", "RoboHalfCheetah-v0", "RoboHumanoid-v0", "RoboBraxHopper-v0"):
        spec = gym.spec(env_id)
        assert spec.vector_entry_point is not None and spec.max_episode_steps == 1000
        assert roboppo_envs.is_brax_id(env_id)
    assert not roboppo_envs.is_brax_id("RoboHopper-v0")  # MuJoCo's hopper is another robot


def test_make_vec_returns_the_brax_vector_env() -> None:
    envs = gym.make_vec("RoboBraxInvertedPendulum-v0", num_envs=COPIES, max_episode_steps=50)
    assert isinstance(envs, BraxVectorEnv)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # Gymnasium's default
    assert envs.max_episode_steps == 50 and envs.num_envs == COPIES


def test_reset_and_step_shapes_and_dtypes(pendulums: BraxVectorEnv) -> None:
    obs, info = pendulums.reset(seed=0)
    assert obs.shape == (COPIES, 4) and obs.dtype == np.float32 and info == {}
    assert pendulums.observation_space.contains(obs)
    obs, reward, terminated, truncated, info = pendulums.step(np.zeros((COPIES, 1), np.float32))
    assert obs.shape == (COPIES, 4) and obs.dtype == np.float32
    assert reward.shape == (COPIES,) and reward.dtype == np.float64
    assert terminated.dtype == bool and truncated.dtype == bool


def test_truncation_at_the_limit_keeps_the_terminal_observation(pendulums: BraxVectorEnv) -> None:
    pendulums.reset(seed=1)
    for _ in range(LIMIT - 1):
        _, _, terminated, truncated, info = pendulums.step(np.zeros((COPIES, 1), np.float32))
        assert not truncated.any() and info == {}
    obs, _, terminated, truncated, info = pendulums.step(np.zeros((COPIES, 1), np.float32))
    assert truncated.all() and not terminated.any()
    assert info["_final_obs"].all()
    # autoreset in the same step: obs are the new episodes' first, final_obs the old ones' last
    assert np.abs(obs).max() < 0.02  # fresh initial states are near upright and at rest
    assert not np.allclose(info["final_obs"], obs)
    _, _, _, truncated, _ = pendulums.step(np.zeros((COPIES, 1), np.float32))
    assert not truncated.any()  # step counters restarted


def test_termination_is_not_truncation() -> None:
    envs = BraxVectorEnv("inverted_pendulum", num_envs=COPIES, max_episode_steps=1000, autoreset_mode="SameStep")
    envs.reset(seed=2)
    push = np.ones((COPIES, 1), np.float32)
    for _ in range(200):  # pushing the cart one way topples the pole well before the limit
        _, _, terminated, truncated, info = envs.step(push)
        if terminated.any():
            break
    assert terminated.any() and not (terminated & truncated).any()
    assert info["_final_obs"][terminated].all()
    assert np.abs(info["final_obs"][terminated][:, 1]).max() > 0.2  # the pole angle that ended it


def test_same_seed_same_trajectory_other_seed_another(pendulums: BraxVectorEnv, rng: np.random.Generator) -> None:
    actions = rng.uniform(-1, 1, size=(LIMIT + 3, COPIES, 1)).astype(np.float32)
    first, again, other = (rollout(pendulums, seed, actions) for seed in (5, 5, 6))
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(first[0], other[0])


def test_two_instances_with_one_seed_agree() -> None:
    actions = np.full((3, 2, 1), 0.3, np.float32)
    runs = [rollout(BraxVectorEnv("inverted_pendulum", num_envs=2), 9, actions) for _ in range(2)]
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_single_env_passes_the_checkers_and_renders() -> None:
    env = gym.make("RoboBraxInvertedPendulum-v0", render_mode="rgb_array")
    gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env, warn=True)
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == (240, 320, 3) and frame.dtype == np.uint8
    assert frame.std() > 1.0  # a picture, not a blank


def test_step_returns_writable_host_arrays(pendulums: BraxVectorEnv) -> None:
    """Wrappers (VecNormalize, user code) may write into what step returns, as with SB3's own VecEnvs."""
    obs, _ = pendulums.reset(seed=0)
    assert obs.flags.writeable
    obs, reward, terminated, truncated, _ = pendulums.step(np.zeros((COPIES, 1), np.float32))
    assert all(array.flags.writeable for array in (obs, reward, terminated, truncated))
    assert obs.shape == (COPIES, 4) and reward.dtype == np.float64 and terminated.dtype == np.bool_


def test_unknown_brax_name_and_backend_list_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown Brax environment 'antt'; valid names: .*\bant\b.*humanoid"):
        BraxVectorEnv("antt", num_envs=1)
    with pytest.raises(ValueError, match=r"unknown Brax backend 'mujoco'; valid backends: spring, positional"):
        BraxVectorEnv("ant", num_envs=1, backend="mujoco")


def test_wrong_action_batches_name_expected_and_actual(pendulums: BraxVectorEnv) -> None:
    pendulums.reset(seed=0)
    expected = r"Pendulums: actions must be a float array of shape \(2, 1\), got float32 \(3, 1\)"
    with pytest.raises(ValueError, match=expected):
        pendulums.step(np.zeros((3, 1), np.float32))
    with pytest.raises(ValueError, match=r"got int64 \(2, 1\)"):
        pendulums.step(np.zeros((COPIES, 1), np.int64))


def test_nan_in_the_brax_state_names_env_and_step() -> None:
    envs = BraxVectorEnv("inverted_pendulum", num_envs=2, env_id="NaNPendulum")
    envs.reset(seed=0)
    envs.step(np.zeros((2, 1), np.float32))
    with pytest.raises(BraxNonFiniteError, match=r"NaNPendulum: .*NaN or inf at vector step 2"):
        envs.step(np.full((2, 1), np.nan, np.float32))


def test_missing_jax_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)
    monkeypatch.delitem(sys.modules, "roboppo_envs.brax.vector_env")
    with pytest.raises(ImportError, match=r"pip install 'roboppo\[brax\]'"):
        import roboppo_envs.brax.vector_env  # noqa: F401


def test_the_vector_api_as_gymnasium_documents_it() -> None:
    """Frames per copy, reset_mask, get_attr / set_attr / call, close twice; other autoreset modes refused."""
    envs = gym.make_vec("RoboBraxInvertedPendulum-v0", num_envs=COPIES, render_mode="rgb_array")
    envs.reset(seed=0)
    frames = envs.render()
    assert isinstance(frames, tuple) and len(frames) == COPIES and all(f.shape == (240, 320, 3) for f in frames)
    for _ in range(5):
        moved, *_ = envs.step(np.full((COPIES, 1), 0.5, np.float32))
    again, _ = envs.reset(options={"reset_mask": np.array([True, False])})
    np.testing.assert_array_equal(again[1], moved[1])  # copy 1 kept its episode
    assert not np.array_equal(again[0], moved[0])
    assert envs.unwrapped.get_attr("dt") == (envs.unwrapped.brax_env.dt,) * COPIES
    with pytest.raises(ValueError, match="share one Brax env"):
        envs.unwrapped.set_attr("dt", [0.01, 0.02])
    envs.close()
    envs.close()
    assert envs.closed
    first = gym.make_vec("RoboBraxInvertedPendulum-v0", num_envs=COPIES)
    masked, _ = first.reset(seed=0, options={"reset_mask": np.ones(COPIES, dtype=bool)})  # a first reset of every copy
    again = gym.make_vec("RoboBraxInvertedPendulum-v0", num_envs=COPIES).reset(seed=0)[0]
    np.testing.assert_array_equal(masked, again)


def test_next_step_autoreset_returns_the_last_observation_then_resets() -> None:
    """NEXT_STEP as SyncVectorEnv: the finishing step returns the episode's last observation; the next step
    only resets those copies (reward 0, not done, action unused) and their step counters restart."""
    envs = BraxVectorEnv("inverted_pendulum", num_envs=2, max_episode_steps=LIMIT)
    envs.reset(seed=3)
    for _ in range(LIMIT):
        last, reward, _, truncated, info = envs.step(np.zeros((2, 1), np.float32))
    assert truncated.all() and "final_obs" not in info and reward.min() > 0
    assert np.abs(last).max() > 1e-3  # the episode's own last state, not a fresh one
    first, reward, terminated, truncated, _ = envs.step(np.ones((2, 1), np.float32))
    np.testing.assert_array_equal(reward, 0.0)
    assert not (terminated | truncated).any() and np.abs(first).max() < 0.02  # near upright and at rest
    for step in range(1, LIMIT + 1):
        _, _, _, truncated, _ = envs.step(np.zeros((2, 1), np.float32))
        assert truncated.all() == (step == LIMIT)


def test_disabled_autoreset_waits_for_a_masked_reset() -> None:
    envs = BraxVectorEnv("inverted_pendulum", num_envs=2, max_episode_steps=2, autoreset_mode="Disabled")
    envs.reset(seed=4)
    for _ in range(2):
        _, _, _, truncated, _ = envs.step(np.zeros((2, 1), np.float32))
    assert truncated.all()
    with pytest.raises(RuntimeError, match=r"copies \[0, 1\] finished.*reset_mask"):
        envs.step(np.zeros((2, 1), np.float32))
    envs.reset(options={"reset_mask": np.array([True, True])})
    _, _, _, truncated, _ = envs.step(np.zeros((2, 1), np.float32))
    assert not truncated.any()


def test_step_infos_carry_the_reward_terms_as_sync_vector_env_lays_them_out() -> None:
    """Brax's per-term metrics with their masks; the finished copies' terms in final_info; the terms add
    up to the reward; a copy that reset in the step has its reset's terms (Brax's are zeros)."""
    envs = gym.make_vec("RoboBraxHopper-v0", num_envs=2, max_episode_steps=3, autoreset_mode="SameStep")
    terms = ["reward_ctrl", "reward_forward", "reward_healthy", "x_position", "x_velocity"]
    _, info = envs.reset(seed=0)
    assert sorted(info) == sorted(terms + [f"_{t}" for t in terms]) and all(info[f"_{t}"].all() for t in terms)
    for _ in range(3):
        _, reward, _, truncated, info = envs.step(np.full((2, 3), 0.2, np.float32))
        step_terms = info["final_info"] if truncated.all() else info
        total = step_terms["reward_forward"] + step_terms["reward_healthy"] + step_terms["reward_ctrl"]
        np.testing.assert_allclose(total, reward, rtol=1e-5, atol=1e-5)
        assert np.all(step_terms["reward_ctrl"] < 0) and np.all(step_terms["x_velocity"] != 0)
    assert truncated.all() and info["_final_info"].all() and info["final_info"]["_x_position"].all()
    np.testing.assert_array_equal(info["reward_forward"], 0.0)
    assert info["reward_forward"].dtype == np.float64 and info["_reward_forward"].all()
    _, info = envs.reset(options={"reset_mask": np.array([True, False])})  # the reset copy's terms alone
    np.testing.assert_array_equal(info["_reward_forward"], [True, False])
    assert info["reward_forward"].shape == (2,)
