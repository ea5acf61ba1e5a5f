"""The Playground robot tasks against EnvPool's independent port of MuJoCo Playground, side by side.

Step by step: with observation noise and pushes off, the same initial state and command (EnvPool's,
computed from its seed: ``envpool_draws``) and the same actions, observations, every reward term, the
reward, terminations and truncations agree for 55 control steps. The tolerance is absolute: 1e-6 for
the Go1 (EnvPool 1.2.5 steps its own MuJoCo 3.6, roboppo MuJoCo 4, and the two agree to about 1e-13
here; EnvPool returns the reward as float32, about 1e-9). The Go1's sphere feet make one contact each,
and every copy agrees for all 55 steps. The Berkeley Humanoid's feet are boxes, whose contacts with the
floor (up to four corners) come and go as a foot tilts, and there the two MuJoCo versions part
(measured over 55 steps, 4 copies, seeds 0-3: by at most 5e-6 under actions in +-0.1, by up to 2.5 in a
joint velocity under +-0.2, by up to 8e-2 under +-0.4). So a humanoid copy is compared, to 1e-4, until
it ends or its physics parts from EnvPool's (its privileged state differs by more than 1e-4); the test
asserts that at least half the copies agree to their end.

In distribution: with noise, command sampling, resets (and the humanoid's pushes) on, over the same
random-action rollouts (32 copies x 500 steps each), the mean of each reward term and the termination
rate differ by at most 4.5 standard errors (the copies' spread, both envs' added): each comparison a
false alarm about once in 150,000 runs.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import roboppo_envs
from roboppo_envs.playground.base import PlaygroundVectorEnv
from roboppo_envs.playground.berkeley_humanoid import BerkeleyHumanoidJoystickVectorEnv
from roboppo_envs.playground.go1 import Go1JoystickVectorEnv
from roboppo_envs.playground.joystick import JoystickVectorEnv
from roboppo_envs.playground.panda import PandaPickCubeVectorEnv
from tests.env.envpool_draws import berkeley_reset, go1_reset, panda_reset

envpool = pytest.importorskip("envpool")

Z_LIMIT = 4.5
STEPS = 55
TOLERANCE = 1e-6
PARTED = 1e-4  # the humanoid's physics has parted from EnvPool's
#: each task: its env, its keywords, EnvPool's keywords that switch its draws after the reset off, the actions'
#: amplitude (the humanoid's smaller: see the module's docstring), and whether its physics may part from EnvPool's
QUIET = {"noise_level": 0.0}  # the joystick tasks' observation noise off, in both
HUMANOID = ({"terrain": "flat", "pushes": False, **QUIET}, {"push_enable": False, **QUIET})
TASKS = {
    "Go1JoystickFlatTerrain": (Go1JoystickVectorEnv, {"terrain": "flat", **QUIET}, QUIET, 0.4, False),
    "Go1JoystickRoughTerrain": (Go1JoystickVectorEnv, {"terrain": "rough", **QUIET}, QUIET, 0.4, False),
    "BerkeleyHumanoidJoystickFlatTerrain": (BerkeleyHumanoidJoystickVectorEnv, *HUMANOID, 0.1, True),
    "PandaPickCube": (PandaPickCubeVectorEnv, {}, {}, 1.0, False),  # the arm's draws are all at the reset
}


def first_lasting_seed(home_qpos: np.ndarray, n: int) -> int:
    """The first EnvPool seed whose ``n`` Go1 envs keep their first command past the compared steps (a new command
    is drawn from each env's own generator)."""
    return next(s for s in range(1000) if all(go1_reset(s + i, home_qpos, 18)[3] > STEPS for i in range(n)))


def envpool_env(task: str, num_envs: int, seed: int, **kwargs: object) -> object:
    return envpool.make_gymnasium(f"MuJoCoPlayground/{task}-v1", num_envs=num_envs, num_threads=1, seed=seed, **kwargs)


def start_as_envpool(ours: PlaygroundVectorEnv, their_info: dict, seed: int) -> dict[str, np.ndarray]:
    """Put ``ours`` where EnvPool's envs seeded ``seed + i`` start (their initial states, commands and clocks)."""
    n = ours.num_envs
    if isinstance(ours, PandaPickCubeVectorEnv):
        starts = [panda_reset(seed + i, ours.init_qpos, ours.box_qpos) for i in range(n)]
        qpos, target = (np.array(values) for values in zip(*starts, strict=True))
        ours.set_robot_state(qpos, np.zeros((n, ours.model.nv)))
        return ours.set_target(target)
    assert isinstance(ours, JoystickVectorEnv)
    if isinstance(ours, Go1JoystickVectorEnv):
        starts = [go1_reset(seed + i, ours.init_qpos, ours.model.nv) for i in range(n)]
        qpos, qvel, command, countdown = (np.array(values) for values in zip(*starts, strict=True))
        np.testing.assert_array_equal(countdown, their_info["steps_until_next_cmd"])
        ours.steps_until_next_cmd[:] = countdown
    else:
        assert isinstance(ours, BerkeleyHumanoidJoystickVectorEnv)
        draws = [berkeley_reset(seed + i, ours.init_qpos, ours.model.nv) for i in range(n)]
        qpos, qvel, command, phase_dt = (np.array(values) for values in zip(*draws, strict=True))
        ours.phase_dt[:] = phase_dt
        ours._ctrl[:] = qpos[:, 7:]  # the humanoid's reset holds its drawn joint angles
    np.testing.assert_allclose(command, their_info["command"], atol=1e-12)  # the same draws as EnvPool's
    ours.set_command(command)
    return ours.set_robot_state(qpos, qvel)


@pytest.mark.parametrize("task", list(TASKS))
def test_steps_as_envpools_port(task: str) -> None:
    env_class, kwargs, theirs_kwargs, amplitude, may_part = TASKS[task]
    n = 8  # the humanoid falls within 35 to 80 steps even without actions: some copies last the 55
    ours = env_class(n, max_episode_steps=STEPS, num_threads=1, **kwargs)
    seed = first_lasting_seed(ours.init_qpos, n) if env_class is Go1JoystickVectorEnv else 0
    theirs = envpool_env(task, n, seed, max_episode_steps=STEPS, **theirs_kwargs)
    their_obs, their_info = as_dict(*theirs.reset())
    ours.reset(seed=123)
    obs = start_as_envpool(ours, their_info, seed)
    for key in obs:
        np.testing.assert_allclose(obs[key], their_obs[key], atol=TOLERANCE, err_msg=f"reset {key}")
    rng = np.random.default_rng(seed)
    alive = np.ones(n, dtype=bool)  # a copy that ended resets from different draws: compared up to its end
    compared, parted = np.zeros(n, dtype=int), np.zeros(n, dtype=bool)
    for step in range(STEPS):
        actions = rng.uniform(-amplitude, amplitude, size=(n, ours.model.nu))
        their_obs, their_reward, their_term, their_trunc, their_info = theirs.step(actions)
        their_obs = as_dict(their_obs, their_info)[0]
        obs, reward, terminated, truncated, info = ours.step(actions)
        where = f"step {step + 1}"
        if may_part:  # the humanoid: a copy whose physics parted from EnvPool's is compared no further
            gap = np.abs(obs["privileged_state"] - their_obs["privileged_state"]).max(axis=1)
            parted |= alive & (gap > PARTED)
            alive &= ~parted
        compared += alive
        fell = terminated | their_term  # the Go1's fall draws the next command, from each env's own generator
        tolerance = PARTED if may_part else TOLERANCE
        for key in obs:
            mine, reference = obs[key].copy(), their_obs[key].copy()
            if isinstance(ours, Go1JoystickVectorEnv):
                mine[fell, 45:48] = reference[fell, 45:48]
            np.testing.assert_allclose(mine[alive], reference[alive], atol=tolerance, err_msg=where)
        for term in ours.reward_scales:
            mine, reference = info[f"reward_{term}"][alive], their_info[f"reward_{term}"][alive]
            np.testing.assert_allclose(mine, reference, atol=tolerance, err_msg=f"{where} {term}")
        np.testing.assert_allclose(reward[alive], their_reward[alive], atol=tolerance, err_msg=where)
        np.testing.assert_array_equal(terminated[alive], their_term[alive], err_msg=where)
        np.testing.assert_array_equal(truncated[alive], their_trunc[alive], err_msg=where)
        alive &= ~(terminated | truncated)
    print(f"{task}: steps compared per copy {compared.tolist()}, parted {parted.tolist()}")
    assert parted.mean() <= 0.5  # at least half the copies agree to their end (a fall or the 55th step)


def as_dict(obs: object, info: dict) -> tuple[dict[str, np.ndarray], dict]:
    """EnvPool's observations as a ``Dict``'s (its Panda returns the ``state`` array alone)."""
    return (obs if isinstance(obs, dict) else {"state": obs}), info


def rollout_means(env: object, seed: int, num_envs: int, steps: int, terms: dict, nu: int) -> dict[str, np.ndarray]:
    """Each copy's mean of every reward term, the reward and terminations over random actions."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed) if isinstance(env, PlaygroundVectorEnv) else env.reset()  # type: ignore[attr-defined]
    sums = {key: np.zeros(num_envs) for key in [*terms, "reward", "terminated"]}
    for _ in range(steps):
        _, reward, terminated, _, info = env.step(rng.uniform(-1, 1, size=(num_envs, nu)))  # type: ignore[attr-defined]
        for term in terms:
            sums[term] += info[f"reward_{term}"]
        sums["reward"] += reward
        sums["terminated"] += terminated
    return {key: value / steps for key, value in sums.items()}


@pytest.mark.parametrize(
    ("task", "falls"),
    [("Go1JoystickFlatTerrain", True), ("BerkeleyHumanoidJoystickFlatTerrain", True), ("PandaPickCube", False)],
)
def test_agrees_in_distribution_with_envpools_port(task: str, falls: bool) -> None:
    env_class = TASKS[task][0]
    n, steps, terms = 32, 500, env_class.reward_scales
    ours_env = env_class(n, num_threads=2)
    nu = ours_env.model.nu
    theirs = rollout_means(envpool_env(task, n, seed=5), 5, n, steps, terms, nu)  # the humanoid's pushes on in both
    ours = rollout_means(ours_env, 5, n, steps, terms, nu)
    if falls:  # random actions make the robots fall: the rate is compared (the Panda's cube stays in its box)
        assert theirs["terminated"].mean() > 0.002
    for key in theirs:
        se = np.sqrt(theirs[key].var(ddof=1) / n + ours[key].var(ddof=1) / n)
        gap = abs(theirs[key].mean() - ours[key].mean())
        assert gap <= Z_LIMIT * se + 1e-12, f"{key}: EnvPool {theirs[key].mean():.5f}, roboppo {ours[key].mean():.5f}"


def test_registered_ids_make_the_task() -> None:
    assert roboppo_envs.playground_ids() == [
        "roboppo/BerkeleyHumanoidJoystickFlatTerrain-v1",
        "roboppo/Go1JoystickFlatTerrain-v1",
        "roboppo/Go1JoystickRoughTerrain-v1",
        "roboppo/PandaPickCube-v1",
    ]
    humanoid = gym.make("roboppo/BerkeleyHumanoidJoystickFlatTerrain-v1")
    assert humanoid.observation_space["state"].shape == (52,) and humanoid.reset(seed=0)[0]["state"].shape == (52,)
    assert (
        roboppo_envs.playground_twin("roboppo/Go1JoystickFlatTerrain-v1")
        == "MuJoCoPlayground/Go1JoystickFlatTerrain-v1"
    )
    vector = gym.make_vec("roboppo/Go1JoystickRoughTerrain-v1", num_envs=3)
    assert isinstance(vector, Go1JoystickVectorEnv) and vector.terrain == "rough" and vector.num_envs == 3
    env = gym.make("roboppo/Go1JoystickFlatTerrain-v1", noise_level=0.0)
    obs, info = env.reset(seed=4)
    assert obs["state"].shape == (48,) and obs["privileged_state"].shape == (123,)
    np.testing.assert_array_equal(obs["state"][-3:], info["command"])  # the command is the state's last three
    single = Go1JoystickVectorEnv(1, noise_level=0.0)
    np.testing.assert_array_equal(single.reset(seed=4)[0]["state"][0], obs["state"])  # gym.make's copy is copy 0
    assert env.spec is not None and env.spec.max_episode_steps == 1000


def test_same_step_autoreset_keeps_the_final_observation() -> None:
    env = Go1JoystickVectorEnv(2, noise_level=0.0, max_episode_steps=3, autoreset_mode="SameStep")
    env.reset(seed=0)
    for _ in range(3):
        obs, _, _, truncated, info = env.step(np.zeros((2, 12)))
    assert truncated.all() and info["_final_obs"].all()
    assert not np.array_equal(info["final_obs"]["state"], obs["state"])  # the new episode's start is returned
    assert (env.steps == 0).all()


def test_a_fixed_command_holds_through_resampling() -> None:
    env = Go1JoystickVectorEnv(2, command=(0.5, 0.0, 0.2))
    env.reset(seed=0)
    env.steps_until_next_cmd[:] = 1  # falls due at the next step
    _, _, _, _, info = env.step(np.zeros((2, 12)))
    np.testing.assert_array_equal(info["command"], [[0.5, 0.0, 0.2]] * 2)
    assert (info["steps_until_next_cmd"] > 0).all()  # a new countdown was drawn


def test_commands_resample_as_playground_says() -> None:
    env = Go1JoystickVectorEnv(400, noise_level=0.0)
    env.reset(seed=1)
    before = env.command.copy()
    env.steps_until_next_cmd[:] = 1
    env.step(np.zeros((400, 12)))
    after = env.command
    changed = after != before
    assert 0.4 < changed.mean() < 0.6  # each axis switches with probability 1/2
    zeroed = (after == 0) & changed
    keep = np.array([0.9, 0.25, 0.5])
    rate = zeroed.sum(axis=0) / changed.sum(axis=0)  # a switched axis is zeroed with probability 1 - b
    np.testing.assert_allclose(rate, 1 - keep, atol=0.12)
    assert (np.abs(after) <= env.command_amplitude).all()


def test_frames_show_the_command_and_the_achieved_velocity() -> None:
    env = Go1JoystickVectorEnv(1, render_mode="rgb_array", command=(0.8, 0.0, 0.3))
    env.reset(seed=0)
    (before,) = env.render()  # type: ignore[misc]
    env.set_command([-0.5, 0.2, 0.0])
    (after,) = env.render()  # type: ignore[misc]
    assert before.shape == (480, 640, 3)
    red = (before[:20, :, 0] > 150) & (before[:20, :, 1] < 60)  # the command's line is written in red
    assert red.sum() > 50
    changed = np.abs(before.astype(int) - after.astype(int)).max(axis=-1) > 60  # pixels the new caption redrew
    assert changed[:20].sum() > 50 and changed[40:].sum() == 0  # (the renderer's own pixels differ by a few levels)
