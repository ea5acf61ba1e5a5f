"""Tuned hyperparameters, one YAML file per algorithm, keyed by env id (see ppo.yml)."""
