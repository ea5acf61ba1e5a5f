"""Domain randomization: each copy's physics redrawn at each of its resets, written into the batch's own fields.

``randomize=True`` draws what MuJoCo Playground's ``randomize.py`` draws for the robot (its ranges are
the defaults below); a mapping changes them: ``{"floor_friction": (0.2, 1.2), "kp_scale": (0.9, 1.1),
"armature_scale": None}`` widens one range, adds an option that is off by default and switches one off.
A value is a ``(low, high)`` pair or ``{"range": (low, high), "names": [...]}`` naming the geoms, bodies or
joints it applies to. Each copy draws from its own generator (the env's, after its initial state and
command), so a seeded env draws the same values every run.

The values go into per-simulation fields of the ``mujoco.batch.Batch`` (``Batch.expand``), never into a
rebuilt model: with randomization off no field is expanded and the env is the one built without it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np


@dataclass(frozen=True)
class Option:
    """One randomized quantity: what it names, how a drawn value applies, and what it means physically."""

    kind: str  # "geom", "body" or "joint": what ``names`` are
    how: str  # "set": the value replaces the field; "scale": multiplies the nominal value; "add": adds to it
    meaning: str
    positive: bool = False  # drawn values must be > 0 (scales, friction)
    axes: int = 1  # values drawn per named item (3: a centre-of-mass offset)


OPTIONS: dict[str, Option] = {
    "floor_friction": Option("geom", "set", "sliding friction coefficient of the floor", positive=True),
    "joint_friction_scale": Option("joint", "scale", "factor on each leg joint's dry friction (frictionloss)", True),
    "armature_scale": Option("joint", "scale", "factor on each leg joint's rotor inertia (armature)", positive=True),
    "torso_com_offset": Option("body", "add", "shift of the torso's centre of mass, m, per axis", axes=3),
    "link_mass_scale": Option("body", "scale", "factor on each link's mass", positive=True),
    "torso_added_mass": Option("body", "add", "mass added to the torso, kg (a payload)"),
    "default_pose_offset": Option("joint", "add", "offset of each joint's PD target centre, rad (calibration error)"),
    "kp_scale": Option("joint", "scale", "factor on each joint's position gain Kp", positive=True),
    "kd_scale": Option("joint", "scale", "factor on each joint's damping gain Kd", positive=True),
    "motor_strength": Option("joint", "scale", "factor on each motor's torque (Kp and its bias together)", True),
}

Ranges = dict[str, tuple[tuple[float, float], tuple[str, ...]]]


def resolve(randomize: bool | Mapping[str, Any] | None, defaults: Ranges, model: mujoco.MjModel, env: str) -> Ranges:
    """The options in force, each ``(low, high)`` with the names it applies to, checked against ``model``.

    :param randomize: None/False (none), True (``defaults``), or a mapping that updates ``defaults``.
    :param defaults: the robot's ranges (Playground's ``randomize.py``) with their default names.
    """
    if randomize is None or randomize is False:
        return {}
    if randomize is True:
        return dict(defaults)
    if not isinstance(randomize, Mapping):
        raise TypeError(f"{env}: randomize must be True, False, None or a mapping of options, got {randomize!r}.")
    ranges = dict(defaults)
    for key, value in randomize.items():
        if key not in OPTIONS:
            raise ValueError(f"{env}: unknown randomize option {key!r}; the options are {', '.join(OPTIONS)}.")
        if value is None:
            ranges.pop(key, None)
            continue
        names = defaults[key][1] if key in defaults else default_names(OPTIONS[key].kind, model)
        if isinstance(value, Mapping):
            unknown = set(value) - {"range", "names"}
            if unknown or "range" not in value:
                raise ValueError(
                    f"{env}: randomize[{key!r}] takes 'range' and optionally 'names', got {sorted(value)}."
                )
            names = tuple(value.get("names", names))
            value = value["range"]
        ranges[key] = (checked_range(key, value, env), names)
    for key, (bounds, names) in ranges.items():
        check_names(key, names, model, env)
        check_physical(key, bounds, names, model, env)
    return ranges


def checked_range(key: str, value: Any, env: str) -> tuple[float, float]:
    """``value`` as a ``(low, high)`` pair of finite numbers with ``low <= high``, or a ValueError naming ``key``."""
    try:
        low, high = (float(bound) for bound in value)
    except (TypeError, ValueError):
        raise ValueError(f"{env}: randomize[{key!r}] must be a (low, high) pair of numbers, got {value!r}.") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"{env}: randomize[{key!r}] must have finite bounds, got ({low}, {high}).")
    if low > high:
        raise ValueError(f"{env}: randomize[{key!r}] is inverted: low {low} > high {high}; write ({high}, {low}).")
    if OPTIONS[key].positive and low <= 0:
        raise ValueError(f"{env}: randomize[{key!r}] draws {OPTIONS[key].meaning}, which must be > 0; got low = {low}.")
    return low, high


def default_names(kind: str, model: mujoco.MjModel) -> tuple[str, ...]:
    """Every actuated joint (``joint``), every body but the world (``body``), or the floor (``geom``)."""
    if kind == "joint":
        return tuple(model.joint(int(j)).name for j in model.actuator_trnid[:, 0])
    if kind == "body":
        return tuple(model.body(b).name for b in range(1, model.nbody))
    return ("floor",)


def valid_names(kind: str, model: mujoco.MjModel) -> list[str]:
    """The named geoms, bodies or joints of ``model`` (joints: those a motor drives)."""
    if kind == "joint":
        return list(default_names("joint", model))
    count = model.ngeom if kind == "geom" else model.nbody
    names = (getattr(model, kind)(i).name for i in range(count))
    return [name for name in names if name]


def check_names(key: str, names: tuple[str, ...], model: mujoco.MjModel, env: str) -> None:
    kind = OPTIONS[key].kind
    valid = valid_names(kind, model)
    missing = [name for name in names if name not in valid]
    if missing or not names:
        raise ValueError(
            f"{env}: randomize[{key!r}] names {kind}s {missing or '(none)'} that the model lacks; "
            f"its {kind}s are {', '.join(valid)}."
        )


def check_physical(
    key: str, bounds: tuple[float, float], names: tuple[str, ...], model: mujoco.MjModel, env: str
) -> None:
    """A mass added must leave every named body heavier than nothing."""
    if key != "torso_added_mass":
        return
    lightest = min(float(model.body(name).mass[0]) for name in names)
    if lightest + bounds[0] <= 0:
        raise ValueError(
            f"{env}: randomize['torso_added_mass'] low {bounds[0]} kg would leave a body of {lightest:.3f} kg "
            "with no mass; keep low above minus the body's mass."
        )


class DomainRandomization:
    """Draws the options for the copies that reset and writes them into the batch's per-simulation fields.

    ``values[option]`` holds each copy's drawn values, ``[num_envs, items]`` (``[num_envs, items, 3]`` for
    ``torso_com_offset``); ``pose_offset`` the PD target offsets the env adds, zero where not drawn.
    """

    def __init__(self, batch: Any, model: mujoco.MjModel, ranges: Ranges, kp: float, kd: float) -> None:
        self.batch, self.ranges, self.kp, self.kd = batch, ranges, kp, kd
        self.ids = {key: self._ids(key, names, model) for key, (_, names) in ranges.items()}
        n = batch.nsim
        self.values = {
            key: np.zeros((n, len(ids), 3) if OPTIONS[key].axes == 3 else (n, len(ids)))
            for key, ids in self.ids.items()
        }
        self.pose_offset = np.zeros((n, model.nu))
        self._nominal = {name: getattr(model, name).copy() for name in self._fields()}
        self._fields_of = {name: batch.expand(name) for name in self._fields()}
        self._joint_actuator = {int(j): a for a, j in enumerate(model.actuator_trnid[:, 0])}
        self._jnt_dofadr = model.jnt_dofadr.copy()

    def _ids(self, key: str, names: tuple[str, ...], model: mujoco.MjModel) -> np.ndarray:
        kind = OPTIONS[key].kind
        return np.array([getattr(model, kind)(name).id for name in names], dtype=np.int64)

    def _fields(self) -> list[str]:
        fields = {
            "floor_friction": ["geom_friction"],
            "joint_friction_scale": ["dof_frictionloss"],
            "armature_scale": ["dof_armature"],
            "torso_com_offset": ["body_ipos"],
            "link_mass_scale": ["body_mass"],
            "torso_added_mass": ["body_mass"],
            "kp_scale": ["actuator_gainprm", "actuator_biasprm"],
            "motor_strength": ["actuator_gainprm", "actuator_biasprm"],
            "kd_scale": ["dof_damping"],
        }
        return sorted({name for key in self.ranges for name in fields.get(key, [])})

    def draw(self, rngs: list[np.random.Generator], copies: np.ndarray) -> None:
        """New values for ``copies`` from their generators, in the order of :data:`OPTIONS`, then written."""
        for index in copies:
            for key in OPTIONS:
                if key in self.ranges:
                    low, high = self.ranges[key][0]
                    self.values[key][index] = rngs[index].uniform(low, high, size=self.values[key].shape[1:])
        self._write(copies)

    def restore(self, values: dict[str, np.ndarray]) -> None:
        """Take every copy's values from a saved run and write them."""
        for key, value in values.items():
            self.values[key][...] = value
        self._write(np.arange(self.batch.nsim))

    def _write(self, copies: np.ndarray) -> None:
        fields, nominal, values = self._fields_of, self._nominal, self.values
        rows = np.asarray(copies)
        for name in fields:  # every drawn field starts again from the model's nominal values
            fields[name][rows] = nominal[name]
        if "floor_friction" in values:
            ids = self.ids["floor_friction"]
            fields["geom_friction"][rows[:, None], ids, 0] = values["floor_friction"][rows]
        for key, name in (("joint_friction_scale", "dof_frictionloss"), ("armature_scale", "dof_armature")):
            if key in values:
                dofs = self._jnt_dofadr[self.ids[key]]
                fields[name][rows[:, None], dofs] = nominal[name][dofs] * values[key][rows]
        if "torso_com_offset" in values:
            ids = self.ids["torso_com_offset"]
            fields["body_ipos"][rows[:, None], ids] = nominal["body_ipos"][ids] + values["torso_com_offset"][rows]
        if "link_mass_scale" in values:
            ids = self.ids["link_mass_scale"]
            fields["body_mass"][rows[:, None], ids] = nominal["body_mass"][ids] * values["link_mass_scale"][rows]
        if "torso_added_mass" in values:
            ids = self.ids["torso_added_mass"]
            fields["body_mass"][rows[:, None], ids] += values["torso_added_mass"][rows]
        if "kd_scale" in values:
            dofs = self._jnt_dofadr[self.ids["kd_scale"]]
            fields["dof_damping"][rows[:, None], dofs] = self.kd * values["kd_scale"][rows]
        self._write_gains(rows)
        if "default_pose_offset" in values:
            actuators = self._actuators("default_pose_offset")
            self.pose_offset[rows[:, None], actuators] = values["default_pose_offset"][rows]

    def _write_gains(self, rows: np.ndarray) -> None:
        """Kp (times the motor strength) into each actuator's gain and position bias."""
        if "kp_scale" not in self.values and "motor_strength" not in self.values:
            return
        gain = np.full((len(rows), len(self._joint_actuator)), self.kp)
        for key in ("kp_scale", "motor_strength"):
            if key in self.values:
                gain[:, self._actuators(key)] *= self.values[key][rows]
        self._fields_of["actuator_gainprm"][rows, :, 0] = gain
        self._fields_of["actuator_biasprm"][rows, :, 1] = -gain

    def _actuators(self, key: str) -> np.ndarray:
        return np.array([self._joint_actuator[int(j)] for j in self.ids[key]], dtype=np.int64)

    def attributes(self) -> dict[str, np.ndarray]:
        """Each option's drawn values, ``[num_envs, ...]`` (copies of them)."""
        return {key: value.copy() for key, value in self.values.items()}
