"""The documentation's pages (docs/, named in mkdocs.yml's nav), for the tests that check what they say."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
GENERATED = "reference/"  # written by docs/gen_reference.py, not committed


def page_text(path: str) -> str:
    """The text of one page, by its path under docs/ (as mkdocs.yml names it), e.g. "guides/analyst.md"."""
    return (DOCS / path).read_text(encoding="utf-8")


def nav_pages(generated: bool = False) -> list[str]:
    """Every page of the nav, in its order; the generated reference pages only with ``generated``."""
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    found: list[str] = []

    def walk(entries):
        for entry in entries:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            if isinstance(value, list):
                walk(value)
            elif generated or not value.startswith(GENERATED):
                found.append(value)

    walk(nav)
    return found
