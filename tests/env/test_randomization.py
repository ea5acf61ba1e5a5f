"""The sim-to-real kit of the robot tasks: domain randomization, kicks, and the errors bad settings get."""

from __future__ import annotations

import numpy as np
import pytest

from roboppo_envs.playground.go1 import GO1_RANDOMIZATION, Go1JoystickVectorEnv

#: every option at the model's own values: drawn and written, but the physics of an env built without it
NOMINAL = {
    "floor_friction": (0.6, 0.6),
    "joint_friction_scale": (1.0, 1.0),
    "armature_scale": (1.0, 1.0),
    "torso_com_offset": (0.0, 0.0),
    "link_mass_scale": (1.0, 1.0),
    "torso_added_mass": (0.0, 0.0),
    "default_pose_offset": (0.0, 0.0),
    "kp_scale": (1.0, 1.0),
    "kd_scale": (1.0, 1.0),
    "motor_strength": (1.0, 1.0),
}


def run(env: Go1JoystickVectorEnv, steps: int = 30, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = [obs["privileged_state"]]
    for _ in range(steps):
        obs, reward, *_ = env.step(rng.uniform(-0.5, 0.5, size=(env.num_envs, 12)))
        out += [obs["privileged_state"], reward]
    return out


def test_randomization_off_and_at_nominal_values_is_bit_identical() -> None:
    plain = run(Go1JoystickVectorEnv(3, noise_level=0.0, command=(0.5, 0.0, 0.0)))
    off = run(Go1JoystickVectorEnv(3, noise_level=0.0, command=(0.5, 0.0, 0.0), randomize=False))
    nominal = run(Go1JoystickVectorEnv(3, noise_level=0.0, command=(0.5, 0.0, 0.0), randomize=NOMINAL))
    for a, b, c in zip(plain, off, nominal, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_playground_ranges_are_drawn_per_copy_redrawn_at_reset_and_seeded() -> None:
    env = Go1JoystickVectorEnv(8, randomize=True)
    env.reset(seed=3)
    drawn = env.get_attr("randomization")
    assert set(drawn[0]) == set(GO1_RANDOMIZATION)
    for key, ((low, high), _) in GO1_RANDOMIZATION.items():
        values = np.stack([copy[key] for copy in drawn])
        assert (values >= low).all() and (values <= high).all(), key
        assert np.unique(values.reshape(8, -1)[:, 0]).size == 8, f"{key}: each copy draws its own"
    again = Go1JoystickVectorEnv(8, randomize=True)
    again.reset(seed=3)
    np.testing.assert_array_equal(again.get_attr("randomization")[5]["floor_friction"], drawn[5]["floor_friction"])
    mask = np.zeros(8, dtype=bool)
    mask[2] = True
    env.reset(options={"reset_mask": mask})
    redrawn = env.get_attr("randomization")
    assert redrawn[2]["floor_friction"] != drawn[2]["floor_friction"]  # the copy that reset drew anew
    assert redrawn[3]["floor_friction"] == drawn[3]["floor_friction"]  # the others keep theirs


def test_drawn_values_are_the_physics_each_copy_simulates() -> None:
    ranges = {**{key: None for key in GO1_RANDOMIZATION}, "floor_friction": (0.2, 1.2), "torso_added_mass": (1.0, 2.0)}
    ranges |= {"motor_strength": (0.5, 0.9), "kd_scale": (1.5, 2.0), "torso_com_offset": (-0.05, 0.05)}
    env = Go1JoystickVectorEnv(4, randomize=ranges)
    env.reset(seed=0)
    drawn, model = env.get_attr("randomization"), env.model
    floor, torso = model.geom("floor").id, model.body("trunk").id
    for index in range(4):
        simulated = env._batch.get_model(index)
        assert simulated.geom_friction[floor, 0] == drawn[index]["floor_friction"][0]
        assert simulated.body_mass[torso] == model.body_mass[torso] + drawn[index]["torso_added_mass"][0]
        np.testing.assert_array_equal(simulated.actuator_gainprm[:, 0], 35.0 * drawn[index]["motor_strength"])
        np.testing.assert_array_equal(simulated.actuator_biasprm[:, 1], -35.0 * drawn[index]["motor_strength"])
        np.testing.assert_array_equal(simulated.dof_damping[6:], 0.5 * drawn[index]["kd_scale"])
        np.testing.assert_array_equal(
            simulated.body_ipos[torso], model.body_ipos[torso] + drawn[index]["torso_com_offset"][0]
        )
    assert env._batch.get_model(0).geom_friction[floor, 0] != env._batch.get_model(1).geom_friction[floor, 0]


def test_a_pose_offset_moves_the_pd_targets_and_a_weaker_motor_pushes_less() -> None:
    offset = Go1JoystickVectorEnv(2, noise_level=0.0, randomize={"default_pose_offset": (0.05, 0.05)})
    offset.reset(seed=0)
    offset.step(np.zeros((2, 12)))
    np.testing.assert_allclose(offset._ctrl, np.tile(offset.default_pose + 0.05, (2, 1)))
    torques = {}
    for strength in (1.0, 0.5):
        env = Go1JoystickVectorEnv(1, noise_level=0.0, randomize={"motor_strength": (strength, strength)})
        env.reset(seed=0)
        obs, *_ = env.step(np.full((1, 12), 0.5))
        torques[strength] = np.abs(obs["privileged_state"][0, 87:99]).sum()  # the motor torques
    assert torques[0.5] < 0.8 * torques[1.0]


def test_kicks_follow_playgrounds_schedule() -> None:
    pushes = {"kick_wait_times": (0.1, 0.1), "kick_durations": (0.1, 0.1), "velocity_kick": (2.0, 2.0)}
    env = Go1JoystickVectorEnv(2, noise_level=0.0, pushes=pushes, command=(0.0, 0.0, 0.0))
    obs, _ = env.reset(seed=0)
    forces, flags = [], []
    for _ in range(20):
        obs, *_ = env.step(np.zeros((2, 12)))
        forces.append(obs["privileged_state"][:, 119:122].copy())
        flags.append(obs["privileged_state"][:, 122].copy())
    force = np.array(forces)  # [step, copy, xyz]
    magnitude = np.linalg.norm(force, axis=-1)
    assert (force[..., 2] == 0).all()  # horizontal kicks
    peak = 0.5 * env.torso_mass * 2.0 / 0.1  # half-sine force giving the torso 2 m/s over 0.1 s
    assert magnitude.max() == pytest.approx(peak, rel=0.05)
    assert (magnitude[:5] == 0).all()  # a 5-step wait before the first kick
    assert (np.array(flags)[magnitude > 1] == 1).all()  # the critic sees when a kick is on
    first = force[:11, 0][magnitude[:11, 0] > 1]  # the first kick: one direction, drawn when it starts
    unit = first / np.linalg.norm(first, axis=-1, keepdims=True)
    np.testing.assert_allclose(unit, np.tile(unit[0], (len(unit), 1)))
    without = Go1JoystickVectorEnv(2, noise_level=0.0, command=(0.0, 0.0, 0.0))
    without.reset(seed=0)
    for _ in range(20):
        calm, *_ = without.step(np.zeros((2, 12)))
    assert (calm["privileged_state"][:, 119:123] == 0).all()


@pytest.mark.parametrize(
    ("randomize", "message"),
    [
        ({"floor_grip": (0.1, 1.0)}, "unknown randomize option 'floor_grip'; the options are floor_friction"),
        ({"floor_friction": (1.0, 0.4)}, "is inverted: low 1.0 > high 0.4"),
        ({"floor_friction": ()}, "must be a (low, high) pair"),
        ({"link_mass_scale": (-0.1, 1.1)}, "must be > 0; got low = -0.1"),
        ({"floor_friction": {"range": (0.4, 1.0), "names": ["ground"]}}, "names geoms ['ground'] that the model lacks"),
        ({"kp_scale": {"range": (0.9, 1.1), "names": ["FR_knee"]}}, "its joints are FR_hip_joint"),
        ({"torso_added_mass": (-6.0, 1.0)}, "would leave a body of 5.204 kg"),
        ({"floor_friction": (0.4, float("nan"))}, "must have finite bounds"),
        ("yes", "randomize must be True, False, None or a mapping"),
    ],
)
def test_bad_randomization_is_named(randomize: object, message: str) -> None:
    with pytest.raises((ValueError, TypeError)) as error:
        Go1JoystickVectorEnv(1, randomize=randomize)  # type: ignore[arg-type]
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pushes": {"kick_speed": (0, 1)}}, "unknown pushes key 'kick_speed'; the keys are velocity_kick"),
        ({"pushes": {"kick_durations": (0.0, 0.1)}}, "durations and waits > 0 s"),
        ({"noise_level": -1.0}, "noise_level must be a finite number >= 0"),
        ({"command": (1.0, 0.0)}, "three finite numbers"),
        ({"terrain": "stairs"}, "terrain must be one of ['flat', 'rough']"),
    ],
)
def test_bad_kit_settings_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=None) as error:
        Go1JoystickVectorEnv(1, **kwargs)
    assert message in str(error.value)
