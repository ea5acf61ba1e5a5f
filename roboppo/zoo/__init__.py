"""The hyperparameter zoo: tuned settings per env id, read from ``zoo_hparams/``."""

from roboppo.common.hparams import HparamsError, ZooEntry, load_gail_hparams, load_ppo_hparams

__all__ = ["HparamsError", "ZooEntry", "load_gail_hparams", "load_ppo_hparams"]
