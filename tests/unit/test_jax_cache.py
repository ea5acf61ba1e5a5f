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
        "jax_compilation_cache_max_size": 512 * 2**20,
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


@pytest.mark.parametrize(("value", "message"), [("lots", "not a whole number"), ("0", "at least 1")])
def test_a_bad_size_cap_is_named(monkeypatch: pytest.MonkeyPatch, value: str, message: str) -> None:
    monkeypatch.setenv("ROBOPPO_JAX_CACHE_MB", value)
    with pytest.raises(ValueError, match=f"ROBOPPO_JAX_CACHE_MB='{value}' .*{message}"):
        enable_compilation_cache(SimpleNamespace(config=FakeConfig()))


def test_the_cache_stays_under_its_cap(tmp_path: pathlib.Path) -> None:
    """Real JAX: programs of 0.4 MB each, a 1 MB cap; the least recently used are evicted."""
    import subprocess
    import sys

    code = (
        "import jax, jax.numpy as jnp, numpy as np\n"
        "from roboppo_envs.jax_cache import enable_compilation_cache\n"
        "enable_compilation_cache(jax)\n"
        "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n"
        "for i in range(8):\n"
        "    table = jnp.asarray(np.random.default_rng(i).normal(size=100_000).astype(np.float32))\n"
        "    jax.jit(lambda x, t=table: (x + t).sum()).lower(1.0).compile()(1.0)\n"
    )
    env = {"ROBOPPO_JAX_CACHE": str(tmp_path), "ROBOPPO_JAX_CACHE_MB": "1", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, **env}, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    sizes = [path.stat().st_size for path in tmp_path.rglob("*") if path.is_file()]
    assert len(sizes) >= 1 and sum(sizes) <= 2**20 < 8 * 400_000


def test_programs_cached_without_a_cap_get_an_access_time(tmp_path: pathlib.Path) -> None:
    """Entries an uncapped cache wrote have no access time; JAX's eviction would fail on them at every write."""
    from roboppo_envs.jax_cache import add_missing_access_times

    (tmp_path / "jit_update-abc-cache").write_bytes(b"program")
    (tmp_path / "jit_step-def-cache").write_bytes(b"program")
    (tmp_path / "jit_step-def-atime").write_bytes((123).to_bytes(8, "little"))
    add_missing_access_times(str(tmp_path))
    assert (tmp_path / "jit_update-abc-atime").read_bytes() == bytes(8)
    assert int.from_bytes((tmp_path / "jit_step-def-atime").read_bytes(), "little") == 123
