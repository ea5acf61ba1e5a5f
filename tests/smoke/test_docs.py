"""Every Python code block in README.md and docs/ runs, in a temporary folder, with budgets capped.

Default budgets (``learn()`` without ``total_timesteps``) are capped by ``ROBOPPO_MAX_TIMESTEPS``, so
the README's examples run as written.
"""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# blocks that need what a test cannot provide, and where what they show is tested instead (none today)
NOT_RUN: dict[str, str] = {}


def python_blocks() -> list[tuple[str, str]]:
    blocks = []
    for doc in DOCS:
        text = doc.read_text()
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            code = match.group(1)
            if not any(marker in code for marker in NOT_RUN):
                line = text[: match.start()].count("\n") + 1
                blocks.append((f"{doc.name}:{line}", code))
    return blocks


BLOCKS = python_blocks()


def test_the_readme_starts_with_the_headline_line() -> None:
    _, first = BLOCKS[0]
    assert first == 'from roboppo import PPO\n\nmodel = PPO("MlpPolicy", "RoboAnt-v0").learn()\n'


@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_code_block_runs(
    where: str, code: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROBOPPO_MAX_TIMESTEPS", "1")
    namespace: dict = {"__name__": "__docs__"}
    exec(compile(code, where, "exec"), namespace)
    if "model" in namespace and hasattr(namespace["model"], "num_timesteps"):
        model = namespace["model"]
        assert model.num_timesteps in (0, model.n_envs * model.n_steps)  # built, or trained one capped rollout
    out = capsys.readouterr().out
    for comment in re.findall(r"print\(.*\)  # (.+)$", code, re.M):  # what the block says it prints
        alternatives = [text.split(" on a ")[0] for text in comment.split(", ")]  # "32 64 on a CPU, 2048 80 on a GPU"
        assert any(text in out for text in alternatives), (comment, out)
