"""The documentation site builds: docs/gen_reference.py writes the reference pages, then MkDocs builds every
page of mkdocs.yml's nav in strict mode (a broken link or anchor, a missing page or a page left out of the nav
fails it), and headless Chromium shows the navigation of the built pages."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from docs_pages import nav_pages

BIN = Path(sys.executable).parent
SECTIONS = {  # the nav's sections and the titles of their pages, as mkdocs.yml names them
    "Quickstarts": ["DuckDB", "PostgreSQL", "Spark"],
    "Guides": ["Analytics engineer", "Analyst", "BI author", "Statistician", "Operator"],
    "Concepts": ["CKM: counts", "CKM: magnitudes", "Cell suppression", "Microaggregation",
                 "The documents behind the examples"],
    "Reference": ["CLI", "dbt macros", "Python API"],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built as `make docs` builds it, from a copy of docs/ whose reference pages the generator writes
    afresh (none of the checkout's own are used)."""
    tmp = tmp_path_factory.mktemp("docs_site")
    shutil.copytree(REPO / "docs", tmp / "docs", ignore=shutil.ignore_patterns("reference"))
    shutil.copy(REPO / "mkdocs.yml", tmp / "mkdocs.yml")
    generate = subprocess.run([sys.executable, "docs/gen_reference.py", str(tmp / "docs" / "reference")], cwd=REPO,
                              capture_output=True, text=True, timeout=300)
    assert generate.returncode == 0, generate.stderr[-3000:]
    # run from the checkout: security.md includes SECURITY.md from the snippets' base path, the working folder
    build = subprocess.run([str(BIN / "mkdocs"), "build", "--strict", "--config-file", str(tmp / "mkdocs.yml"),
                            "--site-dir", str(tmp / "site")], cwd=REPO, capture_output=True, text=True, timeout=300,
                           env={"NO_MKDOCS_2_WARNING": "1", "PATH": f"{BIN}:/usr/bin:/bin"})
    assert build.returncode == 0, build.stderr[-4000:]
    return tmp / "site"


def built(site: Path, page: str) -> Path:
    return site / ("index.html" if page == "index.md" else page[:-len(".md")] + "/index.html")


def test_every_page_of_the_nav_is_built(site):
    pages = nav_pages(generated=True)
    assert {"reference/cli.md", "reference/macros.md", "reference/python.md"} <= set(pages)
    for page in pages:
        assert built(site, page).is_file(), page
    security = built(site, "security.md").read_text(encoding="utf-8")
    assert "Threat model" in security and "--8&lt;--" not in security  # SECURITY.md itself, included


def test_every_page_under_docs_is_in_the_nav():
    """A page that no nav entry names would build but no one would find it (strict mode warns; this names it)."""
    pages = {str(path.relative_to(REPO / "docs")) for path in (REPO / "docs").rglob("*.md")
             if not str(path.relative_to(REPO / "docs")).startswith("reference/")}
    assert pages == set(nav_pages())


def test_a_broken_link_fails_the_build(site, tmp_path):
    """Strict mode is on: the same docs with one link to a missing anchor do not build."""
    shutil.copytree(site.parent / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + "\n[broken](guides/analyst.md#no-such-section)\n")
    build = subprocess.run([str(BIN / "mkdocs"), "build", "--config-file", str(tmp_path / "mkdocs.yml"),
                            "--site-dir", str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True,
                           timeout=300, env={"NO_MKDOCS_2_WARNING": "1", "PATH": f"{BIN}:/usr/bin:/bin"})
    assert build.returncode != 0 and "no-such-section" in build.stderr


def _dom(chromium: str, page: Path) -> str:
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return html.unescape(run.stdout)


@pytest.mark.parametrize("page", ["index.md", "reference/cli.md"])
def test_the_navigation_renders_in_headless_chromium(site, chromium, page):
    """The built page as a browser parses it: the nav's sections and every page's link are in its DOM."""
    dom = _dom(chromium, built(site, page))
    texts = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text)).strip()
             for text in re.findall(r'<(?:a|label)[^>]*class="md-nav__link[^"]*"[^>]*>(.*?)</(?:a|label)>', dom, re.S)]
    for section, titles in SECTIONS.items():
        assert section in texts, (section, texts)
        for title in titles:
            assert title in texts, (title, texts)
    hrefs = [re.search(r'href="([^"]*)"', tag).group(1) for tag in re.findall(r"<a\b[^>]*>", dom)
             if "md-nav__link" in tag and 'href="' in tag]
    assert ("reference/cli/" if page == "index.md" else "../../quickstart/duckdb/") in hrefs, hrefs
