"""Generative adversarial imitation learning on ``imitation``, with roboppo PPO as the generator."""

from roboppo.gail.demos import DemoError, Demonstrations, load_demonstrations, save_demonstrations
from roboppo.gail.trainer import GAILTrainer, collect_demonstrations

__all__ = [
    "DemoError",
    "Demonstrations",
    "GAILTrainer",
    "collect_demonstrations",
    "load_demonstrations",
    "save_demonstrations",
]
