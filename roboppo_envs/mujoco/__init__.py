"""MuJoCo environments (Gymnasium v5 physics and rewards, float32 observations)."""

from roboppo_envs.mujoco.envs import RoboHopperEnv, RoboInvertedDoublePendulumEnv, RoboInvertedPendulumEnv

__all__ = ["RoboHopperEnv", "RoboInvertedDoublePendulumEnv", "RoboInvertedPendulumEnv"]
