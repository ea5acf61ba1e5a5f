"""The eleven ``roboppo/<Name>-v5`` envs against Gymnasium's ``<Name>-v5``, under their constructor keywords.

Each batch is stepped beside Gymnasium's own ``SyncVectorEnv`` (same-step autoreset) with the same
seeds and actions; observations, rewards, terminations, truncations, info terms with their masks,
``final_obs`` and ``final_info`` must be equal, bit for bit: under chosen keyword values (``KWARGS``)
and under values and seeds drawn from each constructor's signature. The single envs pass Gymnasium's
``check_environments_match``.
"""

from __future__ import annotations

import copy
import inspect
import pathlib
import pickle
from typing import Any

import gymnasium as gym
import gymnasium.envs.mujoco
import mujoco
import numpy as np
import pytest
from gymnasium.envs.registration import load_env_creator
from gymnasium.utils.env_match import check_environments_match
from gymnasium.vector import AutoresetMode

import roboppo_envs

ASSETS = pathlib.Path(gymnasium.envs.mujoco.__file__).parent / "assets"

# every constructor keyword of each v5 env, at values that change what it computes (narrow health
# ranges end episodes early; cost weights, frame skips, observation switches, another model file)
KWARGS: dict[str, list[dict[str, Any]]] = {
    "Ant": [
        {},
        {"healthy_z_range": (0.45, 0.8), "contact_force_range": (-0.3, 0.5), "contact_cost_weight": 0.02,
         "ctrl_cost_weight": 0.1, "healthy_reward": 0.5, "forward_reward_weight": 2.0, "main_body": "torso"},
        {"include_cfrc_ext_in_observation": False, "exclude_current_positions_from_observation": False,
         "terminate_when_unhealthy": False, "frame_skip": 3, "reset_noise_scale": 0.3, "main_body": 2},
    ],
    "HalfCheetah": [
        {},
        {"forward_reward_weight": 0.5, "ctrl_cost_weight": 0.3, "reset_noise_scale": 0.4, "frame_skip": 2,
         "exclude_current_positions_from_observation": False},
    ],
    "Hopper": [
        {},
        {"healthy_z_range": (1.22, 1.28), "healthy_angle_range": (-0.08, 0.07), "healthy_state_range": (-3.0, 3.5)},
        {"healthy_state_range": (-0.02, 100.0), "healthy_angle_range": (-1.0, 1.0)},
        {"terminate_when_unhealthy": False, "healthy_reward": 0.5, "exclude_current_positions_from_observation": False,
         "forward_reward_weight": 2.0, "ctrl_cost_weight": 0.01, "frame_skip": 2, "reset_noise_scale": 0.05},
        {"xml_file": str(ASSETS / "hopper.xml")},
    ],
    "Humanoid": [
        {},
        {"healthy_z_range": (1.2, 1.6), "contact_cost_weight": 1e-4, "contact_cost_range": (-1.0, 0.02),
         "ctrl_cost_weight": 0.3, "healthy_reward": 2.0, "forward_reward_weight": 3.0, "reset_noise_scale": 0.1},
        {"include_cinert_in_observation": False, "include_cvel_in_observation": False,
         "include_qfrc_actuator_in_observation": False, "exclude_current_positions_from_observation": False,
         "terminate_when_unhealthy": False, "frame_skip": 3},
        {"include_cfrc_ext_in_observation": False, "include_cinert_in_observation": True},
    ],
    "HumanoidStandup": [
        {},
        {"uph_cost_weight": 2.0, "ctrl_cost_weight": 0.3, "impact_cost_weight": 1e-4, "reset_noise_scale": 0.1,
         "impact_cost_range": (-1.0, 0.05), "include_cvel_in_observation": False,
         "exclude_current_positions_from_observation": False},
    ],
    "InvertedDoublePendulum": [{}, {"healthy_reward": 3.0, "reset_noise_scale": 0.3, "frame_skip": 2}],
    "InvertedPendulum": [{}, {"reset_noise_scale": 0.2, "frame_skip": 3}],
    "Pusher": [
        {},
        {"reward_near_weight": 1.0, "reward_dist_weight": 0.5, "reward_control_weight": 0.3, "frame_skip": 3},
    ],
    "Reacher": [{}, {"reward_dist_weight": 2.0, "reward_control_weight": 0.3, "frame_skip": 3}],
    "Swimmer": [
        {},
        {"forward_reward_weight": 2.0, "ctrl_cost_weight": 0.1, "reset_noise_scale": 0.5, "frame_skip": 2,
         "exclude_current_positions_from_observation": False},
    ],
    "Walker2d": [
        {},
        {"healthy_z_range": (1.1, 1.4), "healthy_angle_range": (-0.1, 0.1), "healthy_reward": 2.0,
         "forward_reward_weight": 0.5, "ctrl_cost_weight": 0.1, "reset_noise_scale": 0.05},
        {"terminate_when_unhealthy": False, "exclude_current_positions_from_observation": False, "frame_skip": 2,
         "xml_file": str(ASSETS / "walker2d.xml")},
    ],
}  # fmt: skip

CASES = [(name, kwargs) for name, variants in KWARGS.items() for kwargs in variants]


def test_every_task_of_the_suite_is_registered_and_covered() -> None:
    assert set(KWARGS) == set(roboppo_envs.SUITE_NAMES)
    assert len(roboppo_envs.SUITE_NAMES) == 11
    for name in roboppo_envs.SUITE_NAMES:
        ours, theirs = gym.spec(f"roboppo/{name}-v5"), gym.spec(f"{name}-v5")
        assert (ours.max_episode_steps, ours.reward_threshold) == (theirs.max_episode_steps, theirs.reward_threshold)
        assert roboppo_envs.gymnasium_twin(f"roboppo/{name}-v5") == f"{name}-v5"
    assert roboppo_envs.gymnasium_twin("RoboHopper-v0") == "Hopper-v5"
    assert roboppo_envs.gymnasium_twin("RoboAnt-v0") is None


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{i}" for n, v in KWARGS.items() for i in range(len(v))])
def test_batch_equals_gymnasium_sync_vector_env(name: str, kwargs: dict[str, Any]) -> None:
    resets = compare_with_gymnasium(name, kwargs)
    terminates = gym.make(f"{name}-v5", **kwargs).unwrapped
    if getattr(terminates, "_terminate_when_unhealthy", False) and "healthy_z_range" in kwargs:
        assert resets > 3  # the narrow ranges ended episodes, so the autoreset was compared too


@pytest.mark.parametrize("name", sorted(KWARGS))
def test_single_env_passes_gymnasiums_check_environments_match(name: str) -> None:
    check_environments_match(gym.make(f"{name}-v5"), gym.make(f"roboppo/{name}-v5"), num_steps=300, seed=17)


def test_batched_env_returns_gymnasiums_types() -> None:
    envs = gym.make_vec("roboppo/Hopper-v5", num_envs=2)
    obs, _ = envs.reset(seed=0)
    assert obs.dtype == np.float64 and envs.single_observation_space == gym.make("Hopper-v5").observation_space
    single = gym.make("roboppo/InvertedPendulum-v5")
    single.reset(seed=0)
    _, reward, *_ = single.step(single.action_space.sample())
    assert type(reward) is int  # as InvertedPendulum-v5's


@pytest.mark.parametrize(
    ("name", "healthy_reward"),
    [("Hopper", 2), ("Hopper", np.float32(1.5)), ("InvertedDoublePendulum", 1), ("InvertedDoublePendulum", 9.5)],
)
def test_single_env_survive_term_has_the_type_of_the_keyword(name: str, healthy_reward: Any) -> None:
    """Gymnasium multiplies ``healthy_reward`` by a Python bool or int: an int keyword gives an int term."""
    ours, theirs = (
        gym.make(f"roboppo/{name}-v5", healthy_reward=healthy_reward),
        gym.make(f"{name}-v5", healthy_reward=healthy_reward),
    )
    check_environments_match(theirs, ours, num_steps=20, seed=3)
    ours.reset(seed=3)
    _, _, _, _, info = ours.step(ours.action_space.sample() * 0)
    assert type(info["reward_survive"]) is type(True * healthy_reward)


def test_a_masked_reset_keeps_the_other_copies_observations_even_if_the_caller_changed_them() -> None:
    ours = gym.make_vec("roboppo/Hopper-v5", num_envs=3)
    theirs = gym.make_vec("Hopper-v5", num_envs=3, vectorization_mode="sync")
    for envs in (ours, theirs):
        envs.reset(seed=3)
    zeros = np.zeros((3, 3))
    expected, _, _, _, _ = theirs.step(zeros)
    returned, _, _, _, _ = ours.step(zeros)
    np.testing.assert_array_equal(returned, expected)
    returned += 100.0  # the caller's array, not the env's
    mask = np.array([True, False, False])
    after_theirs, _ = theirs.reset(options={"reset_mask": mask})
    after_ours, _ = ours.reset(options={"reset_mask": mask})
    np.testing.assert_array_equal(after_ours[1:], expected[1:])
    np.testing.assert_array_equal(after_ours, after_theirs)


@pytest.mark.parametrize(
    ("name", "variant"), [("Ant", 1), ("Hopper", 1), ("Humanoid", 1), ("Walker2d", 1), ("Reacher", 0)]
)
def test_next_step_autoreset_equals_gymnasiums_default(name: str, variant: int) -> None:
    """Gymnasium's default mode: a finished copy resets at the next step, which ignores its action."""
    assert compare_with_gymnasium(name, KWARGS[name][variant], mode=AutoresetMode.NEXT_STEP) > 3


# keywords a draw leaves alone: the model file and body (covered in KWARGS), and rendering's
NOT_DRAWN = {"self", "xml_file", "main_body", "default_camera_config", "render_mode", "width", "height",
             "camera_id", "camera_name", "max_geom", "visual_options", "kwargs"}  # fmt: skip


def drawn_kwargs(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """About half of ``<name>-v5``'s constructor keywords (at least one), read from its signature, each at a
    drawn value: switches flipped, frame skips of 1 to 6, numbers scaled by 0.3 to 3, ranges moved and narrowed."""
    signature = inspect.signature(load_env_creator(gym.spec(f"{name}-v5").entry_point).__init__)
    defaults = {key: p.default for key, p in signature.parameters.items() if key not in NOT_DRAWN}
    defaults = {key: default for key, default in defaults.items() if default is not inspect.Parameter.empty}
    chosen = rng.random(len(defaults)) < 0.5
    chosen[rng.integers(len(defaults))] = True  # at least one
    drawn: dict[str, Any] = {}
    for (key, default), draw in zip(defaults.items(), chosen, strict=True):
        if not draw:
            continue
        if isinstance(default, bool):
            drawn[key] = not default
        elif key == "frame_skip":
            drawn[key] = int(rng.integers(1, 7))
        elif isinstance(default, int | float):
            drawn[key] = float(default * rng.uniform(0.3, 3.0)) if default else float(rng.uniform(0.0, 0.5))
        elif isinstance(default, tuple):
            low, high = default
            width = high - low if np.isfinite(high - low) else 1.0
            drawn[key] = (float(low + rng.uniform(-0.3, 0.3) * width), float(high - rng.uniform(0.0, 0.4) * width))
    return drawn


@pytest.mark.parametrize("draw", [0, 1])
@pytest.mark.parametrize("name", sorted(KWARGS))
def test_batch_equals_gymnasium_under_drawn_keyword_values_and_seeds(name: str, draw: int) -> None:
    """Keyword values and seeds nobody chose: a draw per task from its constructor's own signature, so a
    keyword Gymnasium adds is drawn too. Either autoreset mode."""
    rng = np.random.default_rng([draw, *name.encode()])
    kwargs = drawn_kwargs(name, rng)
    mode = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP)[draw]
    seed, action_seed = (int(value) for value in rng.integers(0, 2**31, size=2))
    try:
        compare_with_gymnasium(name, kwargs, steps=150, max_steps=60, mode=mode, seed=seed, action_seed=action_seed)
    except AssertionError as error:
        error.add_note(f"drawn: {kwargs}, reset seed {seed}, action seed {action_seed}")
        raise


def compare_with_gymnasium(
    name: str,
    kwargs: dict[str, Any],
    steps: int = 250,
    max_steps: int = 70,
    mode: AutoresetMode = AutoresetMode.SAME_STEP,
    seed: int = 5,
    action_seed: int = 3,
) -> int:
    """Step 3 batched copies and Gymnasium's SyncVectorEnv alike; assert equality; return how many episodes ended."""
    ours = gym.make_vec(
        f"roboppo/{name}-v5", num_envs=3, num_threads=2, max_episode_steps=max_steps, autoreset_mode=mode, **kwargs
    )
    theirs = gym.make_vec(
        f"{name}-v5", num_envs=3, vectorization_mode="sync", max_episode_steps=max_steps,
        vector_kwargs={"autoreset_mode": mode}, **kwargs,
    )  # fmt: skip
    (obs, info), (their_obs, their_info) = ours.reset(seed=seed), theirs.reset(seed=seed)
    np.testing.assert_array_equal(obs, their_obs)
    assert_infos_equal(info, their_info)
    rng, space, ends = np.random.default_rng(action_seed), ours.action_space, 0
    for step in range(steps):
        actions = rng.uniform(space.low, space.high).astype(np.float32)
        mine, their = ours.step(actions), theirs.step(actions)
        for part, a, b in zip(("obs", "reward", "terminated", "truncated"), mine[:4], their[:4], strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} {part} at step {step}")
        assert_infos_equal(mine[4], their[4], f"{name} info at step {step}")
        ends += int((mine[2] | mine[3]).sum())
    return ends


def assert_infos_equal(ours: dict[str, Any], theirs: dict[str, Any], where: str = "reset") -> None:
    """The same terms and masks; equal values wherever the mask is set.

    ``final_obs`` is one array here, an array of objects in Gymnasium's."""
    assert ours.keys() == theirs.keys(), where
    for key in (key for key in theirs if not key.startswith("_")):
        mask = theirs[f"_{key}"]
        np.testing.assert_array_equal(ours[f"_{key}"], mask, err_msg=f"{where}: mask of {key}")
        if key == "final_info":
            assert_infos_equal(ours[key], theirs[key], f"{where} (final_info)")
        elif key == "final_obs":
            np.testing.assert_array_equal(ours[key][mask], np.stack(theirs[key][mask]), err_msg=f"{where}: final_obs")
        else:
            assert ours[key].dtype == theirs[key].dtype, f"{where}: dtype of {key}"
            np.testing.assert_array_equal(ours[key][mask], theirs[key][mask], err_msg=f"{where}: {key}")


@pytest.mark.parametrize("name", ["Ant", "Humanoid", "Hopper", "Reacher"])
def test_a_saved_state_continues_exactly_in_another_env(name: str) -> None:
    """get_state / set_state (what a resumed run restores): the same steps, infos and resets afterwards."""
    first, second = (
        gym.make_vec(f"roboppo/{name}-v5", num_envs=3, max_episode_steps=40, autoreset_mode=AutoresetMode.SAME_STEP)
        for _ in range(2)
    )
    first.reset(seed=1)
    second.reset(seed=99)
    rng, space = np.random.default_rng(0), first.action_space
    for _ in range(25):
        first.step(rng.uniform(space.low, space.high).astype(np.float32))
    second.set_state(*first.get_state())
    for step in range(60):  # across the 40-step truncation, so resets draw from the restored generators
        actions = rng.uniform(space.low, space.high).astype(np.float32)
        a, b = first.step(actions), second.step(actions)
        for x, y in zip(a[:4], b[:4], strict=True):
            np.testing.assert_array_equal(x, y, err_msg=f"{name} at step {step}")
        assert_infos_equal(a[4], b[4], f"{name} info at step {step}")
    with pytest.raises(ValueError, match="saved state is of roboppo/Walker2d-v5"):
        second.set_state(*gym.make_vec("roboppo/Walker2d-v5", num_envs=3).get_state())


def test_a_saved_state_is_continued_after_calls_and_a_reset_drops_it() -> None:
    """A state saved after a ``do_simulation`` call continues as the original does; a state restored over one
    replaces what that call left; a reset after a restore starts from the reset's positions."""
    actions = np.full((2, 8), 0.1)
    envs = gym.make_vec("roboppo/Ant-v5", num_envs=2)
    envs.reset(seed=1)
    envs.call("do_simulation", np.full(8, 0.5), 3)
    saved = envs.unwrapped.get_state()
    expected = envs.step(actions)[4]["x_velocity"]
    for other in (gym.make_vec("roboppo/Ant-v5", num_envs=2), envs):
        other.reset(seed=4)
        other.call("do_simulation", np.full(8, -0.5), 2)
        other.unwrapped.set_state(*saved)
        other.get_attr("data")
        np.testing.assert_array_equal(other.step(actions)[4]["x_velocity"], expected)
    theirs = gym.make_vec("Ant-v5", num_envs=2, vectorization_mode="sync")
    envs.unwrapped.set_state(*saved)
    for each in (envs, theirs):
        each.reset(seed=3)
    np.testing.assert_array_equal(envs.step(actions)[4]["x_velocity"], theirs.step(actions)[4]["x_velocity"])


def test_an_unknown_task_names_the_suite() -> None:
    from roboppo_envs.mujoco import MujocoVectorEnv

    with pytest.raises(ValueError, match=r"unknown MuJoCo task 'Cheetah'; the v5 suite has Ant, HalfCheetah, Hopper"):
        MujocoVectorEnv(2, task="Cheetah")


@pytest.mark.parametrize(("limit", "expected"), [(None, 50), (-1, None), (20, 20)])
def test_make_vec_reads_max_episode_steps_as_gym_make_does(limit: int | None, expected: int | None) -> None:
    """None: the registered limit (Reacher's 50); -1: none; the sub-env spec says the same."""
    ours = gym.make_vec("roboppo/Reacher-v5", num_envs=2, max_episode_steps=limit)
    theirs = gym.make_vec("Reacher-v5", num_envs=2, vectorization_mode="sync", max_episode_steps=limit)
    ours.reset(seed=0)
    theirs.reset(seed=0)
    first_truncation = {}
    for envs in (ours, theirs):
        for step in range(1, 61):
            if envs.step(np.zeros((2, 2)))[3].any():
                first_truncation[envs] = step
                break
    assert first_truncation.get(ours) == first_truncation.get(theirs) == expected
    assert ours.get_attr("spec")[0].max_episode_steps == theirs.get_attr("spec")[0].max_episode_steps == expected
    with pytest.raises(ValueError, match="max_episode_steps must be a positive number of steps, -1"):
        gym.make_vec("roboppo/Reacher-v5", num_envs=2, max_episode_steps=0)


@pytest.mark.parametrize(("name", "forward"), [("Ant", False), ("Ant", True), ("Hopper", False), ("Humanoid", True)])
def test_single_env_data_and_methods_are_gymnasiums(name: str, forward: bool) -> None:
    """``unwrapped.data``, ``model``, ``dt``, ``state_vector()``, ``set_state()`` and reward settings, as
    Gymnasium's env has them; a state written into ``data`` (with or without ``mj_forward``) is where the
    next step starts, and a reward weight or frame skip set on the env is used from the next step."""
    ours, theirs = gym.make(f"roboppo/{name}-v5"), gym.make(f"{name}-v5")
    rng = np.random.default_rng(1)
    for env in (ours, theirs):
        env.reset(seed=4)
    assert ours.unwrapped.dt == theirs.unwrapped.dt and ours.unwrapped.frame_skip == theirs.unwrapped.frame_skip
    assert ours.get_wrapper_attr("dt") == theirs.get_wrapper_attr("dt")
    np.testing.assert_array_equal(ours.unwrapped.init_qpos, theirs.unwrapped.init_qpos)
    data = ours.unwrapped.data  # held across steps, as scripts do

    def step_both(steps: int) -> None:
        for _ in range(steps):
            action = rng.uniform(-0.4, 0.4, ours.action_space.shape)
            mine, their = ours.step(action), theirs.step(action)
            np.testing.assert_array_equal(mine[0], their[0])
            assert mine[1:4] == their[1:4]
        np.testing.assert_array_equal(data.xpos, theirs.unwrapped.data.xpos)
        np.testing.assert_array_equal(ours.unwrapped.state_vector(), theirs.unwrapped.state_vector())

    step_both(5)
    for env_data, model in ((data, ours.unwrapped.model), (theirs.unwrapped.data, theirs.unwrapped.model)):
        env_data.qpos[0] += 0.2
        env_data.qvel[:] = 0.5
        if forward:
            mujoco.mj_forward(model, env_data)
    step_both(5)
    qpos, qvel = theirs.unwrapped.init_qpos + 0.01, theirs.unwrapped.init_qvel
    for env in (ours, theirs):
        env.unwrapped.set_state(qpos, qvel)
        env.unwrapped._ctrl_cost_weight = 2.5
        env.unwrapped.frame_skip = 2
    step_both(5)


def test_single_env_np_random_is_the_generator_its_resets_draw_from() -> None:
    ours, theirs = gym.make("roboppo/Walker2d-v5"), gym.make("Walker2d-v5")
    for env in (ours, theirs):
        env.reset(seed=7)
    assert ours.unwrapped.np_random.random() == theirs.unwrapped.np_random.random()
    for env in (ours, theirs):
        env.unwrapped.np_random = np.random.default_rng(123)
    np.testing.assert_array_equal(ours.reset()[0], theirs.reset()[0])


def test_batch_get_attr_data_gives_each_copys_state() -> None:
    ours = gym.make_vec("roboppo/Hopper-v5", num_envs=3)
    theirs = gym.make_vec("Hopper-v5", num_envs=3, vectorization_mode="sync")
    for envs in (ours, theirs):
        envs.reset(seed=2)
        envs.step(np.full((3, 3), 0.3))
    for mine, their in zip(ours.get_attr("data"), theirs.get_attr("data"), strict=True):
        np.testing.assert_array_equal(mine.qpos, their.qpos)
        np.testing.assert_array_equal(mine.xpos, their.xpos)


def test_integer_actions_tuple_seeds_and_copies_behave_as_gymnasiums() -> None:
    ours = gym.make_vec("roboppo/Hopper-v5", num_envs=2)
    theirs = gym.make_vec("Hopper-v5", num_envs=2, vectorization_mode="sync")
    np.testing.assert_array_equal(ours.reset(seed=(3, 9))[0], theirs.reset(seed=(3, 9))[0])
    integers = np.ones((2, 3), dtype=np.int64)
    np.testing.assert_array_equal(ours.step(integers)[1], theirs.step(integers)[1])
    single, twin = gym.make("roboppo/Hopper-v5", frame_skip=2), gym.make("Hopper-v5", frame_skip=2)
    for copied in (copy.deepcopy(single), pickle.loads(pickle.dumps(single))):  # a new env built alike
        assert copied.unwrapped.frame_skip == 2
        np.testing.assert_array_equal(copied.reset(seed=1)[0], twin.reset(seed=1)[0])
        assert copied.step([0, 1, 0])[1] == twin.step([0, 1, 0])[1]
    assert copy.deepcopy(ours).reset(seed=0)[0].shape == (2, 11)


def test_single_env_renders_a_state_written_into_data_and_steps_from_it() -> None:
    ours, theirs = (
        gym.make("roboppo/Hopper-v5", render_mode="rgb_array"),
        gym.make("Hopper-v5", render_mode="rgb_array"),
    )
    for env in (ours, theirs):
        env.reset(seed=1)
        env.unwrapped.data.qpos[1] += 0.3
    np.testing.assert_array_equal(ours.render(), theirs.render())
    mine, their = ours.step(np.full(3, 0.1)), theirs.step(np.full(3, 0.1))
    np.testing.assert_array_equal(mine[0], their[0])
    assert mine[1] == their[1]
    for env in (ours, theirs):  # set_state's mj_forward: the frame and the next reward see its positions
        env.unwrapped.set_state(env.unwrapped.data.qpos + 0.1, env.unwrapped.data.qvel)
    np.testing.assert_array_equal(ours.render(), theirs.render())
    assert ours.step(np.zeros(3))[1] == theirs.step(np.zeros(3))[1]


def _write_then_set_state(env: gym.Env, nu: int) -> Any:
    env.unwrapped.data.qvel[0] += 1.0
    env.unwrapped.set_state(env.unwrapped.init_qpos, env.unwrapped.init_qvel)
    return env.step(np.zeros(nu))[1]


def _forward_between_steps(env: gym.Env, nu: int) -> Any:
    env.step(np.zeros(nu))
    mujoco.mj_forward(env.unwrapped.model, env.unwrapped.data)
    return env.step(np.zeros(nu))[1]


def _forward_then_method(env: gym.Env, nu: int) -> Any:
    env.unwrapped.data.qpos[1] += 0.3
    mujoco.mj_forward(env.unwrapped.model, env.unwrapped.data)
    return float(env.unwrapped.get_body_com(env.unwrapped.model.body(1).name)[2]), env.step(np.zeros(nu))[1]


def _do_simulation(env: gym.Env, nu: int) -> Any:
    env.unwrapped.do_simulation(np.ones(nu), 2)
    return env.unwrapped.data.xpos.copy().tolist(), env.step(np.zeros(nu))[1]


def _reassigned_generator(env: gym.Env, nu: int) -> Any:
    env.unwrapped.np_random = np.random.default_rng(5)
    return env.unwrapped.reset_model().tolist()


@pytest.mark.parametrize("name", ["Hopper", "Ant"])
@pytest.mark.parametrize(
    "script",
    [_write_then_set_state, _forward_between_steps, _forward_then_method, _do_simulation, _reassigned_generator],
)
def test_single_env_methods_and_data_interleave_as_in_gymnasium(name: str, script: Any) -> None:
    """Gymnasium's methods run on ``data`` as the caller left it (their ``mj_forward`` or not), and the next
    step reads its state and its pre-step positions from there."""
    results = []
    for env in (gym.make(f"roboppo/{name}-v5"), gym.make(f"{name}-v5")):
        env.reset(seed=0)
        results.append(script(env, env.action_space.shape[0]))
    assert results[0] == results[1]


def _plain(step: tuple[Any, ...]) -> Any:
    """A step's reward, flags and info terms (each as a list where it is an array), for ``==``."""
    reward, terminated, truncated, info = step[1:]
    return reward, terminated, truncated, {key: np.asarray(value).tolist() for key, value in info.items()}


def _edited_timestep(env: gym.Env, nu: int) -> Any:
    env.unwrapped.model.opt.timestep *= 2
    return env.unwrapped.dt, _plain(env.step(np.full(nu, 0.2)))


def _forces_after_steps(env: gym.Env, nu: int) -> Any:
    data = env.unwrapped.data
    after_reset = [field.copy().tolist() for field in (data.cacc, data.cfrc_int, data.cfrc_ext)]
    for _ in range(20):
        env.step(np.full(nu, 0.3))
    return after_reset, [field.copy().tolist() for field in (data.cacc, data.cfrc_int, data.cfrc_ext)]


def _left_by_reset(env: gym.Env, nu: int) -> Any:
    names = ("goal", "cylinder_pos", "goal_pos")
    left = {name: getattr(env.unwrapped, name).tolist() for name in names if hasattr(env.unwrapped, name)}
    env.unwrapped.set_state(env.unwrapped.init_qpos, env.unwrapped.init_qvel)
    return left, env.unwrapped.init_qpos.tolist(), env.step(np.full(nu, 0.1))[1]


def _reset_model_then_step(env: gym.Env, nu: int) -> Any:
    env.unwrapped.reset_model()
    left = getattr(env.unwrapped, "goal", None)
    return None if left is None else left.tolist(), _plain(env.step(np.full(nu, 0.1)))


def _action_dtypes(env: gym.Env, nu: int) -> Any:
    steps = [env.step(np.ones(nu, dtype=dtype))[1:] for dtype in (np.int64, np.uint8, np.bool_, np.float32)]
    return [(repr(reward), {key: repr(value) for key, value in info.items()}) for reward, _, _, info in steps]


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # Gymnasium's cost of uint8 actions
@pytest.mark.parametrize(
    ("name", "script"),
    [
        ("Hopper", _edited_timestep),
        ("Ant", _edited_timestep),
        ("HumanoidStandup", _edited_timestep),
        ("Hopper", _forces_after_steps),
        ("Ant", _forces_after_steps),
        ("Reacher", _left_by_reset),
        ("Pusher", _left_by_reset),
        ("Reacher", _reset_model_then_step),
        ("Reacher", _action_dtypes),
        ("Walker2d", _action_dtypes),
    ],
)
def test_single_env_model_edits_forces_reset_attributes_and_action_types_as_gymnasium(name: str, script: Any) -> None:
    """A timestep edited on the model changes ``dt`` and the reward; ``data``'s accelerations and forces
    (``cacc``, ``cfrc_int``, ``cfrc_ext``) are those ``mj_rnePostConstraint`` leaves after a step (zero after
    a reset); Reacher's ``goal`` and Pusher's ``cylinder_pos`` (written into ``init_qpos``, as Gymnasium's
    reset does); integer, boolean and float32 actions give the rewards and terms of the same types."""
    results = []
    for env in (gym.make(f"roboppo/{name}-v5"), gym.make(f"{name}-v5")):
        env.reset(seed=5)
        results.append(script(env, env.action_space.shape[0]))
    assert results[0] == results[1]


def test_batch_call_get_attr_and_rewards_per_copy_as_sync_vector_env() -> None:
    """``call`` of a method that changes a copy's state (``do_simulation``) leaves its pre-step positions as
    the method left them; arrays a method returns, and ``np_random_seed``, are each copy's; rewards are
    float64 whatever the actions' dtype."""
    ours = gym.make_vec("roboppo/Ant-v5", num_envs=3)
    theirs = gym.make_vec("Ant-v5", num_envs=3, vectorization_mode="sync")
    for envs in (ours, theirs):
        envs.reset(seed=9)
        envs.call("do_simulation", np.full(8, 0.3), 3)
    assert ours.get_attr("np_random_seed") == theirs.get_attr("np_random_seed") == (9, 10, 11)
    mine, their = ours.call("get_body_com", "torso"), theirs.call("get_body_com", "torso")
    np.testing.assert_array_equal(np.stack(mine), np.stack(their))
    actions = np.full((3, 8), 0.2, dtype=np.longdouble)
    for mine, their in zip(ours.step(actions)[:2], theirs.step(actions)[:2], strict=True):
        np.testing.assert_array_equal(mine, their)
        assert mine.dtype == their.dtype
    forces = zip(ours.get_attr("data"), theirs.get_attr("data"), strict=True)
    for mine, their in forces:
        np.testing.assert_array_equal(mine.cfrc_int, their.cfrc_int)


@pytest.mark.parametrize("env_id", [*roboppo_envs.suite_ids(), "RoboHopper-v0", "roboppo/Go1JoystickFlatTerrain-v1"])
def test_no_env_warns_or_prints_on_creation(env_id: str, capfd: pytest.CaptureFixture) -> None:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym.make_vec(env_id, num_envs=2).close()
        gym.make(env_id).close()
    assert [str(w.message) for w in caught] == []
    assert capfd.readouterr() == ("", "")


def test_half_cheetah_compiles_without_settotalmass_into_gymnasiums_model() -> None:
    """Gymnasium's file sets the total mass with a deprecated compiler attribute; the twin sets it after compiling."""
    import warnings

    twin = gym.make_vec("roboppo/HalfCheetah-v5", num_envs=1).model  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MuJoCo's deprecation of settotalmass, which Gymnasium's file uses
        theirs = gym.make("HalfCheetah-v5").unwrapped.model  # type: ignore[attr-defined]
    assert theirs.body_mass.sum() == pytest.approx(14.0)
    fields = ("body_mass", "body_inertia", "body_subtreemass", "dof_invweight0", "body_invweight0", "actuator_acc0")
    for field in fields:
        np.testing.assert_array_equal(getattr(twin, field), getattr(theirs, field), err_msg=field)
    assert (twin.stat.meanmass, twin.stat.meaninertia) == (theirs.stat.meanmass, theirs.stat.meaninertia)
