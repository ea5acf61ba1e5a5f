"""Variable-length episodes in adversarial imitation, handled with an absorbing state.

Hopper's episodes end early when it falls. Handled naively, GAIL leaks the episode length into
the reward: its reward ``-log(1 - D)`` is never negative, so every step survived pays whatever
the agent does; the logit reward ``log D - log(1 - D)`` errs the other way, and a learner whose
states look un-expert learns to end episodes at once (both seen on the pendulum). imitation
refuses variable horizons for this reason.

roboppo follows Kostrikov et al. 2019 (DAC, "Discriminator-Actor-Critic"): termination leads to
an *absorbing state* that loops on itself forever, and the reward of being there is learned by
the discriminator like any other. :class:`AbsorbingState` makes the terminating step an ordinary
one and adds a single step in the absorbing state (the final observation, repeated), which ends
by time-limit truncation, so PPO bootstraps the absorbing state's value
``r(absorbing) / (1 - gamma)`` instead of unrolling the loop. Experts that never fall give the
discriminator no absorbing samples, so it learns that falling is not expert-like and the
learner is taught not to fall; an expert that does end its episodes (reaching a goal) would
make termination rewarding instead. Nothing about the length of an episode is rewarded by
construction. Evaluation always runs the plain env.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class AbsorbingState(gym.Wrapper):
    """Turn termination into one step in an absorbing state that ends by truncation.

    The terminating step returns ``terminated=False``; the next step, whatever the action,
    returns the final observation again with reward 0, ``truncated=True`` and
    ``info["absorbing"] = True``.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._absorbing_obs: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self._absorbing_obs = None
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._absorbing_obs is not None:
            return self._absorbing_obs.copy(), 0.0, False, True, {"absorbing": True}
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated:
            self._absorbing_obs = np.array(obs, copy=True)
        return obs, float(reward), False, bool(truncated and not terminated), info
