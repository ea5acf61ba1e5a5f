"""Every relative link in the README, CONTRIBUTING, docs/ and bench/ pages points to a file that exists,
and every ``#anchor`` in them to a heading of the page it names."""

from __future__ import annotations

import collections
import functools
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *ROOT.glob("docs/*.md"), *ROOT.glob("bench/**/*.md")]


def links(page: pathlib.Path) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8"))
    return [t for t in targets if not t.startswith(("http://", "https://", "mailto:"))]


def relative_links(page: pathlib.Path) -> list[str]:
    return [t.split("#")[0] for t in links(page) if not t.startswith("#")]


@functools.cache  # a page linked many times is read once
def anchors(page: pathlib.Path) -> set[str]:
    """GitHub's ids for the page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    seen: collections.Counter[str] = collections.Counter()
    ids, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        heading = re.match(r"#{1,6} (.+)", line)
        if heading and not fenced:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            ids.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
            seen[slug] += 1
    return ids


def test_every_relative_link_resolves() -> None:
    missing = [
        f"{page.relative_to(ROOT)} -> {target}"
        for page in PAGES
        for target in relative_links(page)
        if not (page.parent / target).exists()
    ]
    assert len(PAGES) > 20 and not missing, missing


def test_every_anchor_names_a_heading() -> None:
    missing = []
    for page in PAGES:
        for target in links(page):
            path, _, anchor = target.partition("#")
            linked = page.parent / path if path else page
            if anchor and linked.suffix == ".md" and linked.exists() and anchor not in anchors(linked):
                missing.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not missing, missing


def test_the_link_finder_sees_links() -> None:
    assert "docs/architecture.md" in relative_links(ROOT / "README.md")
    assert "imitation-gail" in anchors(ROOT / "README.md")
    assert "under-a-policy-humanoid" in anchors(ROOT / "bench/results/suite_env_speed.md")
