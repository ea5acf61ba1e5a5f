"""Pieces shared by roboppo's algorithms: distributions, normalization, env helpers, errors."""
