"""PPO with a tanh-Gaussian policy and in-policy observation normalization."""

from roboppo.ppo.policies import TanhGaussianPolicy
from roboppo.ppo.ppo import PPO

MlpPolicy = TanhGaussianPolicy

__all__ = ["PPO", "MlpPolicy", "TanhGaussianPolicy"]
