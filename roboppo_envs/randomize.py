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
        names = defaults[key][1] if key in defaults else default_names(OPTIONS[key].kind, model, key)
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
        check_position_control(key, model, env)
    return ranges


def check_position_control(key: str, model: mujoco.MjModel, env: str) -> None:
    """Kp and a PD target's centre exist only for position actuators (a gain and a position bias)."""
    if key not in ("kp_scale", "default_pose_offset"):
        return
    if not np.all(model.actuator_biasprm[:, 1] < 0):
        raise ValueError(
            f"{env}: randomize[{key!r}] needs position-controlled joints (PD motors); this model's actuators apply "
            "torques directly: randomize 'motor_strength' (and 'kd_scale' for joint damping) instead."
        )


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


def default_names(kind: str, model: mujoco.MjModel, key: str = "") -> tuple[str, ...]:
    """Every actuated joint (``joint``), every body but the world (``body``; the root body, the torso, for the
    ``torso_`` options), or the floor (``geom``)."""
    if key.startswith("torso_"):
        return (item_name(model, "body", 1),)
    if kind == "joint":
        return tuple(item_name(model, "joint", int(j)) for j in model.actuator_trnid[:, 0])
    if kind == "body":
        return tuple(item_name(model, "body", b) for b in range(1, model.nbody))
    return ("floor",)


def item_name(model: mujoco.MjModel, kind: str, index: int) -> str:
    """The name of geom, body or joint ``index``; ``#<index>`` for one the model leaves unnamed."""
    return getattr(model, kind)(index).name or f"#{index}"


def valid_names(kind: str, model: mujoco.MjModel) -> list[str]:
    """The geoms, bodies or joints of ``model`` by name (``#<index>`` where unnamed; joints: those a motor drives)."""
    if kind == "joint":
        return list(default_names("joint", model))
    count = model.ngeom if kind == "geom" else model.nbody
    return [item_name(model, kind, i) for i in range(count)]


def check_names(key: str, names: tuple[str, ...], model: mujoco.MjModel, env: str) -> None:
    kind = OPTIONS[key].kind
    plural = {"geom": "geoms", "body": "bodies", "joint": "joints"}[kind]
    valid = valid_names(kind, model)
    missing = [name for name in names if name not in valid]
    if missing or not names:
        raise ValueError(
            f"{env}: randomize[{key!r}] names {plural} {missing or '(none)'} that the model lacks; "
            f"its {plural} are {', '.join(valid)}."
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

    def __init__(self, batch: Any, model: mujoco.MjModel, ranges: Ranges) -> None:
        self.batch, self.ranges = batch, ranges
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
        ids = [int(name[1:]) if name.startswith("#") else getattr(model, kind)(name).id for name in names]
        return np.array(ids, dtype=np.int64)

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
            fields["dof_damping"][rows[:, None], dofs] = nominal["dof_damping"][dofs] * values["kd_scale"][rows]
        self._write_gains(rows)
        if "default_pose_offset" in values:
            actuators = self._actuators("default_pose_offset")
            self.pose_offset[rows[:, None], actuators] = values["default_pose_offset"][rows]

    def _write_gains(self, rows: np.ndarray) -> None:
        """Each actuator's gain and position bias times its Kp scale and motor strength."""
        if "kp_scale" not in self.values and "motor_strength" not in self.values:
            return
        factor = np.ones((len(rows), len(self._nominal["actuator_gainprm"])))
        for key in ("kp_scale", "motor_strength"):
            if key in self.values:
                factor[:, self._actuators(key)] *= self.values[key][rows]
        self._fields_of["actuator_gainprm"][rows, :, 0] = self._nominal["actuator_gainprm"][:, 0] * factor
        self._fields_of["actuator_biasprm"][rows, :, 1] = self._nominal["actuator_biasprm"][:, 1] * factor

    def _actuators(self, key: str) -> np.ndarray:
        return np.array([self._joint_actuator[int(j)] for j in self.ids[key]], dtype=np.int64)

    def attributes(self) -> dict[str, np.ndarray]:
        """Each option's drawn values, ``[num_envs, ...]`` (copies of them)."""
        return {key: value.copy() for key, value in self.values.items()}
