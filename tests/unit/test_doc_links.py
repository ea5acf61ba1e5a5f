"""Every relative link in the README, CONTRIBUTING, docs/ and bench/ pages points to a file that exists."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *ROOT.glob("docs/*.md"), *ROOT.glob("bench/**/*.md")]


def relative_links(page: pathlib.Path) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8"))
    return [t.split("#")[0] for t in targets if not t.startswith(("http://", "https://", "mailto:", "#"))]


def test_every_relative_link_resolves() -> None:
    missing = [
        f"{page.relative_to(ROOT)} -> {target}"
        for page in PAGES
        for target in relative_links(page)
        if not (page.parent / target).exists()
    ]
    assert len(PAGES) > 20 and not missing, missing


def test_the_link_finder_sees_links() -> None:
    assert "docs/architecture.md" in relative_links(ROOT / "README.md")
