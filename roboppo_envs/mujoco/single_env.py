"""One copy of a batched v5 task behind ``gym.Env``: what ``gym.make("roboppo/<Name>-v5")`` returns.

It steps a one-copy :class:`~roboppo_envs.mujoco.vector_env.MujocoVectorEnv` on the calling
thread, without its autoreset (``gym.make`` adds the ``TimeLimit``), and returns what Gymnasium's
``<Name>-v5`` returns, types included: float64 observations, NumPy scalar rewards and info terms
(Python scalars where Gymnasium's env gives those). So ``gymnasium.utils.env_match.check_environments_match``
holds between the two, and a model trained on the batch is evaluated on the same computation.

Gymnasium's env's own attributes are there too (``env.unwrapped.data``, ``model``, ``dt``,
``frame_skip``, ``init_qpos``, ``state_vector()``, ``set_state()``, the reward weights): ``data`` is
the copy's ``MjData``, kept current after every step once it was read, and a state written into it
(``data.qpos[:] = ...``) is the state the next step starts from, as in Gymnasium's env.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.utils import EzPickle

from roboppo_envs.mujoco.vector_env import FRAME_MODES, MujocoVectorEnv


class MujocoSuiteEnv(gym.Env, EzPickle):
    """Gymnasium's ``<task>-v5``, computed by roboppo's batched task for one copy.

    :param task: the Gymnasium env, e.g. ``"Hopper"`` (a key of :data:`~roboppo_envs.mujoco.tasks.SUITE`).
    :param render_mode: ``"rgb_array"``, ``"depth_array"``, ``"rgbd_tuple"`` or None.
    :param env_kwargs: the keyword arguments of Gymnasium's env (``xml_file``, ``frame_skip``, reward weights, ...).
    """

    metadata: dict[str, Any] = {"render_modes": list(FRAME_MODES)}

    def __init__(self, task: str, render_mode: str | None = None, **env_kwargs: Any) -> None:
        EzPickle.__init__(self, task, render_mode, **env_kwargs)
        self.vector = MujocoVectorEnv(
            1, task=task, num_threads=1, max_episode_steps=-1, render_mode=render_mode, **env_kwargs
        )
        self.template = self.vector.template
        self.observation_space = self.vector.single_observation_space
        self.action_space = self.vector.single_action_space
        self.metadata = {**self.template.metadata, "render_modes": self.vector.metadata["render_modes"]}
        self.render_mode = render_mode
        self._python = self.vector.task.python_scalars
        self._shared: np.ndarray | None = None  # the state last copied into ``data``, once a caller read it
        self._ready = True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.vector._rngs[0] = self.np_random  # initial states are drawn from env.unwrapped.np_random
        obs, info = self.vector.reset()
        self._pull()
        return obs[0], self._first(info)

    def step(self, action: Any) -> tuple[np.ndarray, Any, bool, bool, dict[str, Any]]:
        actions = self.vector._checked_actions(np.asarray(action)[None])
        self._push()
        obs, reward, terminated, terms = self.vector._simulate(actions)
        self._pull()
        value = self._python["reward"](reward[0]) if "reward" in self._python else reward[0]
        return obs[0].astype(self.observation_space.dtype), value, bool(terminated[0]), False, self._first(terms)

    def render(self) -> Any:
        self._push()  # the frame shows a state written into ``data``, and the next step starts from it
        if self._shared is not None:  # with the positions ``data`` holds (set_state's, or stale ones)
            self.vector._left[0] = copy.copy(self.template.data)
        frames = self.vector.render()
        self._pull()
        return None if frames is None else frames[0]

    def close(self) -> None:
        self.vector.close()

    def __getattr__(self, name: str) -> Any:
        """Gymnasium's env's attribute ``name`` as this copy has it; a method runs on the copy."""
        if name.startswith("__") or "vector" not in self.__dict__:
            raise AttributeError(name)
        template = self.__dict__["template"]
        if not hasattr(type(template), name) and name not in template.__dict__:
            raise AttributeError(f"{type(self).__name__} ({type(template).__name__} batched) has no attribute {name!r}")
        if name == "data":
            self._share()
            return template.data
        value = getattr(template, name)
        if not callable(value) or not hasattr(value, "__self__"):
            return value

        def on_copy(*args: Any, **kwargs: Any) -> Any:
            self._share()  # the method works on ``data`` as Gymnasium's does; the next step starts from it
            template._np_random = self.vector._rngs[0] = self.np_random
            result = getattr(template, name)(*args, **kwargs)
            self.vector._attrs[0] = self.vector._read_attrs()  # reset_model leaves Reacher's goal, ...
            return result

        return on_copy

    def __setattr__(self, name: str, value: Any) -> None:
        """A setting of Gymnasium's env (``_ctrl_cost_weight``, ...) is set there and used from the next step."""
        template = self.__dict__.get("template")
        ours = name in self.__dict__ or hasattr(type(self), name) or name.startswith("_np_random")
        if self.__dict__.get("_ready") and not ours and name in template.__dict__:
            self.vector._set_template_attr(name, value)
            return
        super().__setattr__(name, value)

    def _share(self) -> None:
        """From now on ``data`` is the copy's ``MjData`` as callers see it: refreshed after every step, read
        before the next (a caller's state, and the positions their ``mj_forward`` computed, or did not)."""
        if self._shared is None:
            self._shared = np.empty(0)
            self._pull()

    def _pull(self) -> None:
        """Copy the copy's ``MjData`` into ``data`` (once callers share it)."""
        if self._shared is None:
            return
        with self.vector._as_copy(0):
            pass
        self._shared = self.vector._batch.state[0].copy()

    def _push(self) -> None:
        """Start the next step from ``data``: its state, if a caller changed it since :meth:`_pull`, and the
        positions the reward reads from before the step (stale until ``mj_forward``, as in Gymnasium's env)."""
        if self._shared is None or self._shared.size == 0:
            return
        data = self.template.data
        state = np.empty_like(self._shared)
        mujoco.mj_getState(self.vector.model, data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        if not np.array_equal(state, self._shared, equal_nan=True):
            self.vector._batch.state[0] = state
        self.vector._before_rows[0] = self.vector._before_fields(data)

    def _first(self, terms: dict[str, Any]) -> dict[str, Any]:
        """Copy 0's terms, in the types Gymnasium's env returns."""
        first = {key: value[0] for key, value in terms.items() if not key.startswith("_")}
        return {key: self._python[key](value) if key in self._python else value for key, value in first.items()}
