"""MuJoCo robots as one batched Gymnasium vector env, stepped on MuJoCo's own thread pool.

``gym.make_vec("RoboHopper-v0", num_envs=16)`` returns a :class:`MujocoVectorEnv`:

- the copies are the simulations of one persistent ``mujoco.batch.Batch``: each keeps its own
  ``MjData`` (so its solver warm start, and hence its trajectory, is exactly that of a single
  env), and one ``Batch.step`` call runs ``mj_step`` on all of them on ``num_threads`` C++
  threads, releasing the GIL once per vector step rather than once per copy;
- the fields the task reads are live ``[N, ...]`` arrays bound to the batch, so nothing is
  gathered copy by copy;
- observations, rewards and terminations are computed for the whole batch with NumPy
  (:mod:`roboppo_envs.mujoco.tasks`), term by term as the Gymnasium v5 env does;
- autoreset as Gymnasium's vector envs (``autoreset_mode``): ``NEXT_STEP`` by default (a finished
  copy resets at the next ``step``, which ignores its action); roboppo's trainers use ``SAME_STEP``
  (a finished copy is reset inside the same ``step``; the returned observation is the new
  episode's first and the last one of the finished episode is in ``info["final_obs"]``, rows
  where ``info["_final_obs"]`` is True);
- copy ``i`` reset with ``seed`` draws its initial states as ``gym.make(id)`` reset with
  ``seed + i`` does, so a batch reproduces single envs step for step; a later reset without a
  seed continues each copy's generator, as Gymnasium's envs do.
"""

from __future__ import annotations

import contextlib
import copy
import os
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.utils import EzPickle
from gymnasium.utils.seeding import np_random
from gymnasium.vector import AutoresetMode, VectorEnv

from roboppo_envs import randomize as dr
from roboppo_envs.mujoco.model_files import set_total_mass, without_total_mass
from roboppo_envs.mujoco.robo_v0 import RoboHopperEnv, RoboInvertedDoublePendulumEnv, RoboInvertedPendulumEnv
from roboppo_envs.mujoco.tasks import (
    SUITE,
    HopperTask,
    Info,
    InvertedDoublePendulumTask,
    InvertedPendulumTask,
    MujocoTask,
    State,
)
from roboppo_envs.pushes import Kicks, checked_pushes
from roboppo_envs.vector_api import (
    NonFiniteEnvOutputError,
    expand,
    nonfinite_rows,
    reset_mask,
    scattered,
    time_limit,
    with_masks,
)

#: the render modes whose frames a vector env returns, one per copy
FRAME_MODES = ("rgb_array", "depth_array", "rgbd_tuple")
#: what a ``mujoco.MjvCamera`` holds
CAMERA_FIELDS = ("type", "fixedcamid", "trackbodyid", "lookat", "distance", "azimuth", "elevation", "orthographic")
#: ``MjData`` fields that are state (set by a reset, read by ``mj_step``), not computed from it
STATE_FIELDS = ("qpos", "qvel")
#: a reset of at most ``FEW_RESETS_DOFS // nv`` copies (at least 2) runs ``mj_forward`` in this thread on
#: one scratch ``MjData``: a batch call wakes its threads, which costs more than a few forwards of a small
#: model (the double pendulum's take about 5 us each); more copies use the batch's threads
FEW_RESETS_DOFS = 256
#: MuJoCo's switch for its collision stage
NO_CONTACT = int(mujoco.mjtDisableBit.mjDSBL_CONTACT)


def suite_randomization(model: mujoco.MjModel) -> dr.Ranges:
    """What ``randomize=True`` draws for a v5 task (Gymnasium has no randomization; modest ranges in the spirit of
    Playground's): link masses and motor strength x U(0.9, 1.1), rotor inertia x U(1.0, 1.05), the torso's centre
    of mass +-2 cm, and the floor's friction U(0.5, 1.5) x its own where the task has a floor."""
    ranges: dr.Ranges = {
        "link_mass_scale": ((0.9, 1.1), dr.default_names("body", model)),
        "armature_scale": ((1.0, 1.05), dr.default_names("joint", model)),
        "torso_com_offset": ((-0.02, 0.02), dr.default_names("body", model, "torso_com_offset")),
        "motor_strength": ((0.9, 1.1), dr.default_names("joint", model)),
    }
    floor = next((i for i in range(model.ngeom) if model.geom(i).name == "floor"), None)
    if floor is not None:
        friction = float(model.geom_friction[floor, 0])
        ranges["floor_friction"] = ((0.5 * friction, 1.5 * friction), ("floor",))
    return ranges


def contacts_possible(model: mujoco.MjModel) -> bool:
    """Whether MuJoCo's collision stage can find a contact in ``model``: an explicit pair, a flex, or two geoms
    passing its filter (one's ``contype`` sharing a bit with the other's ``conaffinity``; checked over all geoms
    at once, so a False is certain)."""
    if model.npair or model.nflex:
        return True
    return bool(np.bitwise_or.reduce(model.geom_contype) & np.bitwise_or.reduce(model.geom_conaffinity))


class MujocoCompilerWarning(UserWarning):
    """A warning MuJoCo printed while compiling an env's model (Gymnasium's HalfCheetah file: ``settotalmass``)."""


@contextlib.contextmanager
def mujoco_warnings_as_python_warnings() -> Iterator[None]:
    """MuJoCo's warnings inside the block become Python warnings, each shown once and filterable.

    MuJoCo's own handler prints every warning again for every env built and appends it to a
    ``MUJOCO_LOG.TXT`` in the working folder; a training run builds several envs.
    """
    caught: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(caught.append)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)
        for message in caught:
            warnings.warn(f"MuJoCo: {message}", MujocoCompilerWarning, stacklevel=1)


def batch_class() -> type[Any]:
    """``mujoco.batch.Batch``, or an ImportError naming the MuJoCo version it needs."""
    try:
        from mujoco.batch import Batch
    except ImportError as error:
        raise ImportError(
            f"roboppo's batched MuJoCo envs step on mujoco.batch, new in MuJoCo 4.0; this is MuJoCo "
            f"{mujoco.__version__}: pip install -U 'mujoco>=4'"
        ) from error
    return Batch


#: a MuJoCo batch's NaN or inf: the one :class:`~roboppo_envs.vector_api.NonFiniteEnvOutputError`
MujocoNonFiniteError = NonFiniteEnvOutputError


def available_cpus() -> int:
    """CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def resolve_num_threads(num_threads: int | None, num_envs: int) -> int:
    """Threads stepping ``num_envs`` copies: default one per available core (at most one per copy).

    More threads than cores is capped with a warning; fewer than one is an error.
    """
    cores = available_cpus()
    if num_threads is None:
        return max(1, min(cores, num_envs))
    if num_threads < 1:
        raise ValueError(f"num_threads must be at least 1, got {num_threads}.")
    if num_threads > cores:
        warnings.warn(
            f"num_threads={num_threads} exceeds the {cores} CPU cores available; using {cores}.",
            stacklevel=3,
        )
        num_threads = cores
    return min(num_threads, num_envs)


class MujocoVectorEnv(VectorEnv, EzPickle):
    """``num_envs`` copies of a Gymnasium v5 MuJoCo env stepped as one batch.

    ``task`` names the Gymnasium env (``"Hopper"`` for ``Hopper-v5``, a key of
    :data:`~roboppo_envs.mujoco.tasks.SUITE`); the ``Robo*VectorEnv`` subclasses name theirs as
    class attributes instead (``env_class``, ``task_class``).

    :param num_envs: number of copies.
    :param task: the Gymnasium v5 env these copies are (observations of its dtype, float64).
    :param num_threads: threads stepping the copies, the calling one included (default: one per
        available core, at most ``num_envs``; more than the machine has is capped with a warning).
    :param max_episode_steps: steps after which an episode is truncated: None for the registered limit of
        Gymnasium's ``<task>-v5`` (1,000 for the ``Robo*-v0`` ids), -1 for none, as ``gym.make`` reads it.
    :param render_mode: ``"rgb_array"``, ``"depth_array"`` or ``"rgbd_tuple"``: ``render()`` returns a tuple with
        one frame per copy, as ``SyncVectorEnv``. For a window, wrap an ``"rgb_array"`` env in
        ``gymnasium.wrappers.vector.HumanRendering``.
    :param autoreset_mode: how finished copies reset, as Gymnasium's ``SyncVectorEnv`` (default ``NEXT_STEP``,
        Gymnasium's; roboppo's trainers use ``SAME_STEP``).
    :param randomize: domain randomization redrawn at each reset of a copy (:mod:`roboppo_envs.randomize`): True
        for :data:`SUITE_RANDOMIZATION`'s ranges, a mapping to change them, None or False for none. While it is on,
        the copies simulate the batch's own per-copy model fields, so an edit of ``envs.model`` no longer reaches them.
    :param pushes: velocity kicks on the torso (the root body), as MuJoCo Playground's
        (:mod:`roboppo_envs.pushes`): True for its ranges, a mapping to change them.
    :param env_kwargs: keyword arguments of the single env (reward weights, ``reset_noise_scale``, ...).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": list(FRAME_MODES)}
    env_class: ClassVar[type[Any]]
    task_class: ClassVar[type[MujocoTask]]

    def __init__(
        self,
        num_envs: int,
        task: str | None = None,
        num_threads: int | None = None,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        randomize: bool | dict[str, Any] | None = None,
        pushes: bool | dict[str, Any] = False,
        **env_kwargs: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}.")
        # a pickle or deepcopy is a new batch built with these arguments, as for Gymnasium's MuJoCo envs
        EzPickle.__init__(
            self,
            num_envs,
            task,
            num_threads,
            max_episode_steps,
            render_mode,
            autoreset_mode,
            randomize,
            pushes,
            **env_kwargs,
        )
        env_class, task_class = self._classes(task)
        if render_mode is not None and render_mode not in FRAME_MODES:
            raise ValueError(
                f"render_mode={render_mode!r}: a batched env renders {', '.join(FRAME_MODES)} (one frame per copy); "
                "for a window, wrap a render_mode='rgb_array' env in gymnasium.wrappers.vector.HumanRendering."
            )
        compiled_kwargs, total_mass = without_total_mass(env_class, env_kwargs)
        with mujoco_warnings_as_python_warnings():
            self.template = env_class(render_mode=render_mode, **compiled_kwargs)
        if total_mass is not None:
            set_total_mass(self.template.model, self.template.data, total_mass)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.template.metadata, "autoreset_mode": self.autoreset_mode}
        self.metadata["render_modes"] = [mode for mode in self.metadata["render_modes"] if mode in FRAME_MODES]
        self.model: mujoco.MjModel = self.template.model
        self.frame_skip: int = self.template.frame_skip
        self.task = task_class(self.template)
        self.name = type(self).__name__ if task is None else f"roboppo/{task}-v5"
        registered = gym.spec(f"{task}-v5").max_episode_steps if task is not None else 1000
        self.max_episode_steps = time_limit(max_episode_steps, registered, self.name)
        self.num_envs, self.render_mode = num_envs, render_mode
        self.num_threads = resolve_num_threads(num_threads, num_envs)
        self.single_observation_space = self.template.observation_space
        self.single_action_space = self.template.action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self._obs_dtype = self.single_observation_space.dtype
        self._batch = batch_class()(self.model, nsim=num_envs, nthread=self.num_threads, persistent=True)
        ranges = dr.resolve(randomize, suite_randomization(self.model), self.model, self.name)
        self.randomizer = dr.DomainRandomization(self._batch, self.model, ranges) if ranges else None
        kicks = checked_pushes(pushes, self.name)
        dt = float(self.model.opt.timestep) * self.frame_skip
        self.kicks = None if kicks is None else Kicks(kicks, self._batch.bind("xfrc_applied"), 1, self.torso_mass, dt)
        if self.randomizer is None:
            # every copy runs on this env's own model (the batch would otherwise simulate a copy of it), so an
            # edit to ``envs.model`` (a mass, a friction) reaches the physics at the next step
            self._batch.set_models(self.model)
        self._ctrl, self._qpos, self._qvel = (self._batch.bind(name) for name in ("ctrl", "qpos", "qvel"))
        # live views: state rows (qpos, qvel) and outputs refreshed by every call (site_xpos, ...)
        self._state: State = {name: self._batch.bind(name) for name in self.task.fields if name != "cfrc_ext"}
        contact = "cfrc_ext" in self.task.fields
        self._contact = ContactForces(self._batch, self.model, self.randomizer is not None) if contact else None
        if self._contact is not None:
            self._state["cfrc_ext"] = self._contact.cfrc_ext
        self._batch.reset()  # every row now holds mj_resetData's state: a new episode starts from a copy of it
        # mj_forward after a reset only computes what the task reads: positions, forces (mj_step recomputes
        # it all from the state before it integrates); a task that reads the state alone skips it
        self._forward_on_reset = not set(self.task.fields) <= set(STATE_FIELDS)
        # the scratch forward leaves the batch's own derived fields stale, so only for tasks that read none
        # of them from before a step (the double pendulum, the arms)
        # (not with randomization: each copy's model is its own)
        few_fields = set(self.task.before_fields) <= set(STATE_FIELDS) and self.randomizer is None
        self._scratch = mujoco.MjData(self.model) if few_fields else None
        self._few_resets = max(2, FEW_RESETS_DOFS // self.model.nv)
        # a model no two of whose geoms can touch (the pendulums, Reacher) skips MuJoCo's collision stage, checked
        # again before every step so that an edit making contacts possible (a geom's contype) is simulated
        self._collision_free = not contacts_possible(self.model)
        self._stale = np.zeros(num_envs, dtype=bool)  # reset without mj_forward: positions of the old episode
        self._obs: np.ndarray | None = None  # the observations last returned (a copy: a masked reset keeps the others)
        self._cameras: dict[int, mujoco.MjvCamera] = {}  # each copy's render camera, once it rendered
        self._reset_row = self._batch.state[0].copy()
        self._rngs, self._seeds = (list(values) for values in zip(*(np_random() for _ in range(num_envs)), strict=True))
        self._attrs: list[dict[str, Any]] = [{} for _ in range(num_envs)]  # each copy's task.left_by_reset
        self._stepped = np.zeros(num_envs, dtype=bool)  # copies stepped since their last reset
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._autoreset = np.zeros(num_envs, dtype=bool)  # copies whose episode ended at the last step
        self._needs_reset = True
        # a copy's fields the next step reads as before it, where they are not its batch row's: as a caller
        # left them in its MjData, or as a saved run had them
        self._before_rows: dict[int, State] = {}
        self._left: dict[int, mujoco.MjData] = {}  # a copy's MjData as a caller's method left it, until it steps
        self.closed = False

    @property
    def torso_mass(self) -> float:
        """The mass a kick moves: the root body's subtree (the whole robot, for a free-floating one), kg."""
        return float(self.model.body_subtreemass[1])

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """Each copy's seed (-1 where unknown), as ``SyncVectorEnv`` gives its envs' ``np_random_seed``."""
        return tuple(self._seeds)

    @property  # type: ignore[misc]
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """Each copy's generator, the one its resets draw from, as ``SyncVectorEnv`` gives its envs' ``np_random``."""
        return tuple(self._rngs)

    @classmethod
    def _classes(cls, task: str | None) -> tuple[type[Any], type[MujocoTask]]:
        if task is None:
            if not hasattr(cls, "task_class"):
                raise TypeError(f"{cls.__name__} needs task=, one of {sorted(SUITE)}.")
            return cls.env_class, cls.task_class
        if task not in SUITE:
            raise ValueError(f"unknown MuJoCo task {task!r}; the v5 suite has {', '.join(sorted(SUITE))}.")
        return SUITE[task]

    # -- Gymnasium VectorEnv API ----------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | list[int | None] | tuple[int | None, ...] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every copy; copy ``i`` is seeded with ``seed + i`` (or ``seed[i]`` from a list).

        As in Gymnasium, a copy reset without a seed continues its generator, so every reset after a
        seeded one is reproducible; only a copy that was never seeded draws from OS entropy.
        """
        self._check_open()
        if isinstance(seed, list | tuple):
            seeds = list(seed)
        else:
            seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        if len(seeds) != self.num_envs:
            raise ValueError(f"{self.name}: reset(seed=list) needs {self.num_envs} seeds, got {len(seeds)}.")
        mask = reset_mask(options, self.num_envs, self.name, self._needs_reset)
        mask = np.ones(self.num_envs, dtype=bool) if mask is None else mask
        copies = np.flatnonzero(mask)
        for index, s in enumerate(seeds):
            if s is not None and mask[index]:
                self._rngs[index], self._seeds[index] = np_random(s)
        first, reset_info = self._reset_copies(copies)
        obs = np.empty((self.num_envs, *first.shape[1:]), self._obs_dtype)
        if self._obs is not None:  # the copies not reset keep their last observation
            obs[...] = self._obs
        obs[copies] = first  # cast to the observation dtype, as astype does
        self._steps[copies] = 0
        self._autoreset[copies] = False
        self._needs_reset = False
        self._obs = obs.copy()
        info = with_masks(reset_info, self.num_envs) if mask.all() else scattered(reset_info, copies, self.num_envs)
        return obs, info

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every copy with actions ``[num_envs, action_dim]``; finished copies reset as ``autoreset_mode`` says.

        ``info`` is laid out as Gymnasium's ``SyncVectorEnv`` lays out its copies' infos: each term
        with a ``_term`` mask; a copy that reset in this call has its reset's terms instead. Under
        ``SAME_STEP`` the finished episode's last observation and terms are in ``final_obs`` and
        ``final_info`` (rows where ``_final_obs`` / ``_final_info`` are True; ``final_obs`` is one
        array, not an array of objects).
        """
        self._check_open()
        pending = self._autoreset if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.zeros_like(self._autoreset)
        actions = self._checked_actions(np.asarray(actions), ignore=pending)
        if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset.any():
            raise RuntimeError(
                f"{self.name}: copies {np.flatnonzero(self._autoreset).tolist()} finished their episodes; with "
                "autoreset_mode DISABLED reset them first: reset(options={'reset_mask': mask})."
            )
        obs64, reward, terminated, terms = self._simulate(actions, ignore=pending)
        reward = reward.astype(np.float64, copy=False)  # as SyncVectorEnv stores its copies' rewards
        self._steps += 1
        limit = self.max_episode_steps
        truncated = self._steps >= limit if limit is not None else np.zeros(self.num_envs, dtype=bool)
        info = with_masks(terms, self.num_envs)
        if pending.any():  # NEXT_STEP: the copies that finished last step only reset (their action is unused)
            obs64, info = self._reset_into(obs64, info, np.flatnonzero(pending))
            reward[pending], terminated[pending], truncated[pending] = 0, False, False
        obs = obs64.astype(self._obs_dtype)
        done = terminated | truncated
        self._autoreset = done
        if self.autoreset_mode == AutoresetMode.SAME_STEP and done.any():
            final_info = {
                key: np.where(expand(done, value), value, 0).astype(value.dtype) for key, value in terms.items()
            }
            extra = {
                "final_obs": obs,
                "_final_obs": done,
                "final_info": with_masks(final_info, done),
                "_final_info": done,
            }
            obs64, info = self._reset_into(obs64, info, np.flatnonzero(done))
            obs = obs64.astype(self._obs_dtype)
            info |= extra
            self._autoreset = np.zeros_like(done)
        self._obs = obs64  # not the array returned, which the caller may change
        return obs, reward, terminated, truncated, info

    def _reset_into(self, obs64: np.ndarray, info: dict[str, Any], copies: np.ndarray) -> tuple[np.ndarray, dict]:
        """``copies`` reset: their first observations in a copy of ``obs64``, their reset terms in ``info``."""
        obs64 = obs64.copy()
        obs64[copies], reset_info = self._reset_copies(copies)
        self._steps[copies] = 0
        return obs64, with_reset_terms(info, reset_info, copies)

    def render(self) -> tuple[Any, ...] | None:  # type: ignore[override]
        """One frame per copy, as ``SyncVectorEnv`` (None without a ``render_mode``)."""
        if self.render_mode is None:
            return None
        self._check_open()
        frames = []
        for index in range(self.num_envs):
            with self._as_copy(index):
                frames.append(self._frame(index))
        return tuple(frames)

    def _frame(self, index: int) -> Any:
        """Copy ``index``'s frame from the template's renderer, through a camera of the copy's own.

        A Gymnasium env's viewer places its camera when it first renders (at the middle of what it
        shows then) and tracking cameras move with the robot: each copy keeps the camera a viewer of
        its own would have.
        """
        renderer = self.template.mujoco_renderer
        viewer = renderer._get_viewer(self.render_mode)
        camera = self._cameras.get(index)
        if camera is None:  # as a new viewer: the camera placed on this copy's data, then the env's camera config
            viewer._init_camera()
            renderer._set_cam_config()
        else:
            for field in CAMERA_FIELDS:
                setattr(viewer.cam, field, getattr(camera, field))
        frame = self.template.render()
        self._cameras[index] = copy.copy(viewer.cam)
        return frame

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name`` of each copy, called with the arguments where it is a method (``SyncVectorEnv.call``).

        The copies share one Gymnasium env, the template: for each copy in turn it holds that copy's
        ``MjData`` and generator, and a call that changes the copy's physics state (``set_state``)
        writes it back to the copy.
        """
        self._check_open()
        results = []
        for index in range(self.num_envs):
            with self._as_copy(index):
                value = getattr(self.template, name)
                value = value(*args, **kwargs) if callable(value) else value
                # the template's MjData holds each copy in turn: each copy's is a copy of it (and of an array
                # a method returns, which may be a view into it: get_body_com)
                of_copy = value is self.template.data or isinstance(value, np.ndarray)
                results.append(copy.copy(value) if of_copy else value)
        return tuple(results)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """``name`` of each copy (:meth:`call` without arguments); ``data`` gives a copy of each copy's ``MjData``
        (to change a copy's state: ``call("set_state", qpos, qvel)`` on every copy, or a masked reset);
        ``randomization`` each copy's drawn values (a dict, empty without randomization)."""
        if name == "randomization":
            values = self.randomizer.attributes() if self.randomizer is not None else {}
            return tuple({key: value[i] for key, value in values.items()} for i in range(self.num_envs))
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set ``name`` on the env; a list or tuple gives one value per copy (``SyncVectorEnv.set_attr``).

        ``np_random`` is each copy's own; any other attribute belongs to the one template all copies
        share, so it takes one value for all. The task then reads the env again (reward weights,
        health ranges, ...), so the next step uses the new value.
        """
        self._check_open()
        values = list(values) if isinstance(values, list | tuple) else [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"{self.name}: set_attr({name!r}) needs one value or {self.num_envs}, got {len(values)}.")
        if name == "np_random":  # as Env.np_random's setter: the seed is unknown
            self._rngs, self._seeds = values, [-1] * self.num_envs
            return
        if any(value is not values[0] and not _equal(value, values[0]) for value in values[1:]):
            raise ValueError(
                f"{self.name}: the copies share one {type(self.template).__name__}, so set_attr({name!r}) takes one "
                "value for all of them; for per-copy physics edit envs.model (shared) or build separate envs."
            )
        self._set_template_attr(name, values[0])

    def _set_template_attr(self, name: str, value: Any) -> None:
        """Set ``name`` on the template for every copy; the next step uses it."""
        setattr(self.template, name, value)
        for attrs in self._attrs:
            if name in attrs:
                attrs[name] = copy.deepcopy(value)
        self._reread_template()

    def _read_attrs(self) -> dict[str, Any]:
        """The template's values of what a reset leaves on it (the copy it holds now)."""
        names = [name for name in self.task.left_by_reset if hasattr(self.template, name)]
        return {name: copy.deepcopy(getattr(self.template, name)) for name in names}

    def _write_attrs(self, attrs: dict[str, Any]) -> None:
        """Give the template a copy's values of what a reset leaves; arrays in place (``init_qpos`` is the task's)."""
        for name, value in attrs.items():
            current = getattr(self.template, name, None)
            if isinstance(current, np.ndarray) and np.shape(value) == current.shape:
                current[...] = value
            else:
                setattr(self.template, name, copy.deepcopy(value))

    def _reread_template(self) -> None:
        """Take up a changed setting of the template: the task's weights and ranges, the frame skip."""
        self.task = type(self.task)(self.template)
        self.frame_skip = self.template.frame_skip

    @contextlib.contextmanager
    def _as_copy(self, index: int) -> Iterator[None]:
        """The template holding copy ``index``'s ``MjData`` and generator; what a caller changed is kept.

        The copy's ``MjData`` is its batch row's, with the accelerations and forces ``MujocoEnv`` computes
        after a step; or, after a call that changed the state or positions, the ``MjData`` as that call left
        it (positions stale after ``do_simulation``, as in Gymnasium's env) until the next step or reset.
        """
        if self._stale[index]:
            self._batch.forward(np.array([index]))
            self._stale[index] = False
        if self.template.spec is None and self.spec is not None:  # gym.make_vec set the batch's spec
            self.template.spec = single_spec(self.spec)
        data = self.template.data
        if index in self._left:
            mujoco.mj_copyData(data, self.model, self._left[index])
        else:
            self._batch.get_data(index, data)
            if self._stepped[index]:  # as MujocoEnv after mj_step: accelerations and forces
                mujoco.mj_rnePostConstraint(self.model, data)
            if self._contact is not None:
                data.cfrc_ext[:] = self._contact.cfrc_ext[index]
        self._write_attrs(self._attrs[index])
        self.template._np_random, self.template._np_random_seed = self._rngs[index], self._seeds[index]
        state, fields = self._batch.state[index].copy(), self._before_fields(data)
        yield
        self._rngs[index], self._seeds[index] = self.template.np_random, self.template.np_random_seed
        self._attrs[index] = self._read_attrs()  # a reset through a call leaves its own
        after = np.empty_like(state)
        mujoco.mj_getState(self.model, data, after, mujoco.mjtState.mjSTATE_INTEGRATION)
        left = self._before_fields(data)
        if not np.array_equal(after, state) or any(not np.array_equal(left[name], fields[name]) for name in left):
            self._batch.state[index] = after  # the next step starts here, its reward reading ``left`` as before
            self._left[index], self._before_rows[index] = copy.copy(data), left

    def _before_fields(self, data: mujoco.MjData) -> State:
        """Copies of the fields of ``data`` that the next step's reward reads from before it."""
        return {name: getattr(data, name).copy() for name in self.task.before_fields}

    def close(self, **kwargs: Any) -> None:
        """Release the batch (its threads and every copy's ``MjData``) and the template env; again: nothing."""
        if self.closed:
            return
        if hasattr(self, "_batch"):
            del self._batch, self._state, self._ctrl, self._qpos, self._qvel, self._contact
        self.template.close()
        self.closed = True

    # -- state, to continue a run exactly ------------------------------------------------------

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Everything the next ``step`` depends on: arrays (each copy's physics state row, episode steps, the
        fields the task reads from before a step, contact forces) and JSON-able values (each copy's generator)."""
        arrays = {"physics": self._batch.state.copy(), "steps": self._steps.copy()}
        arrays |= {f"before_{name}": values for name, values in self._before().items()}
        if self._contact is not None:
            arrays["cfrc_ext"] = self._contact.cfrc_ext.copy()
        if self.randomizer is not None:
            arrays |= {f"randomization_{key}": value for key, value in self.randomizer.attributes().items()}
        if self.kicks is not None:
            arrays |= self.kicks.get_state()
        meta = {"env": self.name, "num_envs": self.num_envs, "needs_reset": self._needs_reset}
        meta["rngs"] = [rng.bit_generator.state for rng in self._rngs]
        return arrays, meta

    def set_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Continue from what :meth:`get_state` returned (of an env built alike: same task, copies and keywords)."""
        if (meta["env"], meta["num_envs"]) != (self.name, self.num_envs) or arrays[
            "physics"
        ].shape != self._batch.state.shape:
            raise ValueError(
                f"{self.name}: the saved state is of {meta['env']} with {meta['num_envs']} copies "
                f"(state rows {arrays['physics'].shape}); this env has {self.num_envs} "
                f"(rows {self._batch.state.shape})."
            )
        self._batch.state[:] = arrays["physics"]
        self._steps[:] = arrays["steps"]
        for rng, state in zip(self._rngs, meta["rngs"], strict=True):
            rng.bit_generator.state = state
        fields, copies = self.task.before_fields, range(self.num_envs)
        self._before_rows = {i: {name: arrays[f"before_{name}"][i].copy() for name in fields} for i in copies}
        self._left = {}
        if self.randomizer is not None:
            self.randomizer.restore({key: arrays[f"randomization_{key}"] for key in self.randomizer.values})
        if self.kicks is not None:
            self.kicks.set_state(arrays)
        if self._contact is not None:
            self._contact.refresh(np.arange(self.num_envs))
            self._contact.cfrc_ext[:] = arrays["cfrc_ext"]
        self._needs_reset = bool(meta["needs_reset"])
        self._stale[:] = True
        self._stepped[:] = self._steps > 0

    # -- stepping -------------------------------------------------------------------------------

    def _simulate(
        self, actions: np.ndarray, ignore: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Info]:
        """Step the copies (no truncation, no reset): float64 observations, rewards, terminations, info terms.

        ``ignore``: copies about to be reset, left out of the physics (their rows are discarded, not checked
        for NaN)."""
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: call reset() before step().")
        before = self._before()
        self._before_rows, self._left = {}, {}
        self._ctrl[:] = actions
        # copies about to be reset are not stepped: their step would be discarded (EnvPool skips it too)
        stepped = None if ignore is None or not ignore.any() else ~ignore
        if self.kicks is not None:
            self.kicks.apply(np.ones(self.num_envs, dtype=bool) if stepped is None else stepped, self._rngs)
        if stepped is None or stepped.any():
            self._step_physics(stepped)
        if self._contact is not None:
            self._contact.update(stepped)
        self._stale[:] = False
        self._stepped[:] = True
        obs64 = self.task.observe(self._state)
        reward, terminated, terms = self.task.step(before, self._state, actions, obs64)
        self._check_finite(obs64, reward, ignore)
        return obs64, reward, terminated, terms

    def _step_physics(self, copies: np.ndarray | None) -> None:
        """``mj_step`` ``frame_skip`` times for each of ``copies`` (a mask, None for all), as in ``do_simulation``."""
        if self._collision_free and not contacts_possible(self.model):
            self._step_without_collisions(copies)
        else:
            self._batch.step(copies, nstep=self.frame_skip)

    def _step_without_collisions(self, copies: np.ndarray | None) -> None:
        """``Batch.step`` with MuJoCo's collision stage switched off for the call: the same step where no contact
        can arise (:func:`contacts_possible`), without the stage's pass over every geom (about a sixth of the
        double pendulum's ``mj_step``). The model's flags are as they were after the call."""
        options = self.model.opt
        flags = options.disableflags
        options.disableflags = flags | NO_CONTACT
        try:
            self._batch.step(copies, nstep=self.frame_skip)
        finally:
            options.disableflags = flags

    def _before(self) -> State:
        """The fields the next step's reward reads from before it, for every copy."""
        before = {name: self._state[name].copy() for name in self.task.before_fields}
        for index, rows in self._before_rows.items():
            for name, row in rows.items():
                before[name][index] = row
        return before

    def _reset_copies(self, copies: np.ndarray) -> tuple[np.ndarray, Info]:
        """Reset ``copies`` as ``MujocoEnv.reset`` does each; return their first observations (float64) and reset info.

        ``mj_resetData`` (its state row, which is all a step reads: ``mjSTATE_INTEGRATION``; and zero
        contact forces), the new ``qpos, qvel`` from each copy's generator, then ``mj_forward`` where
        the task reads more than ``qpos, qvel``.
        """
        self._batch.state[copies] = self._reset_row
        for index in copies:
            self._qpos[index], self._qvel[index] = self.task.initial_state(self._rngs[index])
        self._stepped[copies] = False
        if self.kicks is not None:
            for index in copies:
                self.kicks.schedule(index, self._rngs[index])
        if self.randomizer is not None:  # drawn after the initial states: the same states as without it
            self.randomizer.draw(self._rngs, copies)
            if self._contact is not None:
                self._contact.refresh(copies)
        for index in copies if self.task.left_by_reset else ():  # Reacher's goal, ... (the template holds each)
            self.task.leave_on_env(self.template, self._qpos[index])
            self._attrs[index] = self._read_attrs()
        for index in copies if self._left or self._before_rows else ():  # a reset's mj_forward: new positions
            self._before_rows.pop(index, None)
            self._left.pop(index, None)
        if self._contact is not None:
            self._contact.cfrc_ext[copies] = 0.0
        here = self._forward_on_reset and self._scratch is not None and len(copies) <= self._few_resets
        if self._forward_on_reset and not here:
            self._batch.forward(copies)
        else:  # the copies' own MjData still hold the old episode's positions
            self._stale[copies] = True
        rows = {name: array[copies] for name, array in self._state.items()}
        if here:
            rows |= self._forward_here(copies)
        return self.task.observe(rows), self.task.reset_info(rows)

    def _forward_here(self, copies: np.ndarray) -> State:
        """The derived fields the task reads, by ``mj_forward`` of each copy's state row on the scratch ``MjData``."""
        assert self._scratch is not None
        derived = [name for name in self._state if name not in STATE_FIELDS and name != "cfrc_ext"]
        rows = {name: np.empty((len(copies), *self._state[name].shape[1:])) for name in derived}
        for row, index in enumerate(copies):
            mujoco.mj_setState(self.model, self._scratch, self._batch.state[index], mujoco.mjtState.mjSTATE_INTEGRATION)
            mujoco.mj_forward(self.model, self._scratch)
            for name in derived:
                rows[name][row] = getattr(self._scratch, name)
        return rows

    # -- checks ---------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"{self.name}: this env was closed, which released its simulations; make a new one.")

    def _checked_actions(self, actions: np.ndarray, ignore: np.ndarray | None = None) -> np.ndarray:
        """``actions`` checked; the rows of copies in ``ignore`` (reset by this step under ``NEXT_STEP``, their
        actions unused, as Gymnasium's ``SyncVectorEnv`` never passes them on) are not checked, and zeroed."""
        expected = (self.num_envs, self.model.nu)
        if actions.shape != expected or actions.dtype.kind not in "biuf":
            raise ValueError(
                f"{self.name}: actions must be a numeric array of shape {expected} (num_envs, action_dim), "
                f"got {actions.dtype} {actions.shape}."
            )
        # any numeric dtype, kept as Gymnasium's env keeps it: ``data.ctrl`` casts it to float64, and the
        # control costs are computed in the action's own dtype (an integer cost for integer actions)
        finite = np.isfinite(actions)
        if not finite.all():
            bad = ~finite.all(axis=1)
            if ignore is not None:
                bad &= ~ignore
            if bad.any():
                rows = np.flatnonzero(bad).tolist()
                raise ValueError(f"{self.name}: actions contain NaN or inf (copies {rows}); check the policy's output.")
            actions = np.where(finite, actions, 0).astype(actions.dtype)  # only ignored rows; MuJoCo would warn
        return actions

    def _check_finite(self, obs: np.ndarray, reward: np.ndarray, ignore: np.ndarray | None = None) -> None:
        bad_obs = [int(row) for row in nonfinite_rows(obs) if ignore is None or not ignore[row]]
        bad_reward = [int(row) for row in nonfinite_rows(reward[:, None]) if ignore is None or not ignore[row]]
        if not (bad_obs or bad_reward):
            return
        rows = bad_obs or bad_reward
        where = f"copies {rows} (episode steps {self._steps[rows].tolist()})"
        if bad_obs:
            raise NonFiniteEnvOutputError(
                f"{self.name}: the simulation returned NaN or inf in {where}; the physics diverged."
            )
        raise NonFiniteEnvOutputError(
            f"{self.name}: the reward is NaN or inf in {where} while the state is finite; check the reward keywords "
            "(weights and *_range bounds must be finite where they apply)."
        )


class ContactForces:
    """``cfrc_ext`` of every copy after a step: ``mj_rnePostConstraint``, as ``MujocoEnv`` runs after ``mj_step``.

    A batch step stops at ``mj_step``; this loads each copy's ``MjData`` (a persistent batch keeps
    them) into one scratch ``MjData`` and runs the function on it, about 8 us per copy.
    """

    def __init__(self, batch: Any, model: mujoco.MjModel, per_copy: bool = False) -> None:
        """:param per_copy: the copies simulate models of their own (domain randomization): each copy's forces are
        computed on its model (:meth:`refresh` after its fields change)."""
        self.batch, self.model = batch, model
        self.scratch = mujoco.MjData(model)
        self.cfrc_ext = np.zeros((batch.nsim, model.nbody, 6))
        self.models = [batch.get_model(i) for i in range(batch.nsim)] if per_copy else None

    def refresh(self, copies: np.ndarray) -> None:
        """Take up the copies' model fields again (their randomization was redrawn)."""
        if self.models is not None:
            for index in copies:
                self.batch.get_model(int(index), self.models[index])

    def update(self, copies: np.ndarray | None = None) -> None:
        """Recompute ``cfrc_ext`` of ``copies`` (a mask, None for all): those a step just moved."""
        for index in range(self.batch.nsim) if copies is None else np.flatnonzero(copies):
            self.batch.get_data(index, self.scratch)
            mujoco.mj_rnePostConstraint(self.model if self.models is None else self.models[index], self.scratch)
            self.cfrc_ext[index] = self.scratch.cfrc_ext


def make_vector(num_envs: int, task: str, action_latency: int = 0, history: int = 1, **kwargs: Any) -> VectorEnv:
    """What ``gym.make_vec("roboppo/<Name>-v5")`` builds: the batch, wrapped for the kit's ``action_latency`` and
    ``history`` (:mod:`roboppo_envs.kit`; the batch itself when neither is asked for)."""
    from roboppo_envs.kit import checked_kit, with_kit

    checked_kit(f"roboppo/{task}-v5", action_latency, history)
    return with_kit(MujocoVectorEnv(num_envs, task=task, **kwargs), action_latency, history)


def single_spec(spec: gym.envs.registration.EnvSpec) -> gym.envs.registration.EnvSpec:
    """What ``gym.make`` of the batch's id with its keywords has as ``spec``: each copy's, as in ``SyncVectorEnv``."""
    vector_only = {"num_envs", "num_threads", "autoreset_mode", "vectorization_mode", "max_episode_steps"}
    single = copy.deepcopy(gym.spec(spec.id))
    single.kwargs = {**single.kwargs, **{k: v for k, v in spec.kwargs.items() if k not in vector_only}}
    limit = spec.kwargs.get("max_episode_steps")
    if limit is not None:  # gym.make(id, max_episode_steps=limit): its TimeLimit's (none for -1)
        single.max_episode_steps = None if limit == -1 else limit
    return single


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(np.all(a == b))
    except (TypeError, ValueError):
        return False


def with_reset_terms(info: dict[str, Any], reset_info: Info, finished: np.ndarray) -> dict[str, Any]:
    """The step's info with the ``finished`` copies' terms replaced by their reset's (absent terms masked out,
    and left out where no copy has them)."""
    for key in [key for key in info if not key.startswith("_")]:
        value = info[key] = info[key].copy()
        if key in reset_info:
            value[finished] = reset_info[key]
        else:
            value[finished] = 0
            info[f"_{key}"][finished] = False
            if not info[f"_{key}"].any():  # no copy has this term now
                del info[key], info[f"_{key}"]
    return info


class RoboInvertedPendulumVectorEnv(MujocoVectorEnv):
    """Batched ``RoboInvertedPendulum-v0``."""

    env_class = RoboInvertedPendulumEnv
    task_class = InvertedPendulumTask


class RoboInvertedDoublePendulumVectorEnv(MujocoVectorEnv):
    """Batched ``RoboInvertedDoublePendulum-v0``."""

    env_class = RoboInvertedDoublePendulumEnv
    task_class = InvertedDoublePendulumTask


class RoboHopperVectorEnv(MujocoVectorEnv):
    """Batched ``RoboHopper-v0``."""

    env_class = RoboHopperEnv
    task_class = HopperTask
