"""Where roboppo keeps JAX's compiled programs, and when it leaves JAX's settings alone."""

from __future__ import annotations

import pathlib
from types import SimpleNamespace
from typing import Any

import pytest

from roboppo_envs.jax_cache import MIN_COMPILE_SECONDS, cache_folder, enable_compilation_cache


class FakeConfig:
    def __init__(self, folder: str | None = None) -> None:
        self.jax_compilation_cache_dir = folder
        self.updates: dict[str, Any] = {}

    def update(self, key: str, value: Any) -> None:
        self.updates[key] = value


def test_the_cache_defaults_to_the_user_cache_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROBOPPO_JAX_CACHE", raising=False)
    monkeypatch.setenv("HOME", "/home/someone")
    assert cache_folder() == "/home/someone/.cache/roboppo/jax"


def test_the_variable_moves_the_cache_and_short_compilations_are_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setenv("ROBOPPO_JAX_CACHE", str(tmp_path))
    config = FakeConfig()
    enable_compilation_cache(SimpleNamespace(config=config))
    assert config.updates == {
        "jax_compilation_cache_dir": str(tmp_path),
        "jax_persistent_cache_min_compile_time_secs": MIN_COMPILE_SECONDS,
    }


def test_an_empty_variable_turns_the_cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOPPO_JAX_CACHE", "")
    config = FakeConfig()
    enable_compilation_cache(SimpleNamespace(config=config))
    assert cache_folder() is None and config.updates == {}


def test_a_cache_configured_in_jax_is_left_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("ROBOPPO_JAX_CACHE", str(tmp_path))
    config = FakeConfig(folder="/elsewhere")
    enable_compilation_cache(SimpleNamespace(config=config))
    assert config.updates == {}
