"""Every shell, SQL, Python and file example of the documentation (the pages under docs/) runs as written.

Each page's fenced blocks are read in order and carried out in temporary folders:

* a block whose first line names a file (``# packages.yml``, ``-- models/x.sql``) or that follows
  ``<!-- file: NAME -->`` is written to that file; one that names a file of the demo project
  (``demo/...``) must equal that file (an "(excerpt)" must be lines of it);
* a ``sh`` block runs in bash (``/path/to/sdc`` stands for this checkout; ``pip install`` lines are left
  out: the wheel is built and run by tests/test_packaging.py);
* an ``sql`` block whose first line is ``-- in FILE.duckdb`` is a query on that database: it must return rows;
* a ``python`` block without a file name runs as a script.

The section "Add sdc to your dbt project" of the analytics engineer's guide runs in an empty folder of its own
(with a microdata file ``persons.csv``), as a newcomer would follow it; every other example runs in one folder
prepared with the files the examples name (students.parquet, micro.csv, ...), page after page in the order of
TOUR (a load before the dbt build that reads it, the publication before the queries on it). `make demo` and
`make test` are the two commands themselves (tests/test_demo_warehouse.py builds the demo; CI runs the suite).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from conftest import DATA, REPO
from docs_pages import nav_pages, page_text

BIN = Path(sys.executable).parent
ADD_PAGE, ADD_SECTION = "guides/analytics-engineer.md", "Add sdc to your dbt project"
NOT_RUN = ("make demo", "make test")  # the two commands themselves
# The pages whose examples build on each other, in the order they run in one folder: the ptable, the load,
# the dbt build and publication, then what reads the warehouse and the publication.
TOUR = ("concepts/ckm-counts.md", "guides/operator.md", "guides/analytics-engineer.md", "guides/analyst.md",
        "guides/statistician.md", "concepts/ckm-magnitudes.md", "guides/bi-author.md", "concepts/suppression.md",
        "concepts/microaggregation.md")


@dataclass
class Block:
    page: str  # the page under docs/
    section: str  # the '## ' heading above the block
    lang: str
    body: str
    file: str | None
    line: int


def page_blocks(page: str) -> list[Block]:
    blocks, section, marker = [], "", None
    lines = page_text(page).splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("## "):
            section = line[3:].strip()
        found = re.fullmatch(r"<!-- file: (\S+) -->", line.strip())
        if found:
            marker = found.group(1)
        elif line.startswith("```"):
            lang, start = line[3:].strip(), k + 1
            k += 1
            while not lines[k].startswith("```"):
                k += 1
            body = "\n".join(lines[start:k]) + "\n"
            blocks.append(Block(page, section, lang, body, marker or _named_file(lang, body), start))
            marker = None
        k += 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in nav_pages() for block in page_blocks(page)]


def _named_file(lang: str, body: str) -> str | None:
    first = body.splitlines()[0] if body.strip() else ""
    prefix = {"sql": "-- ", "yaml": "# ", "python": "# "}.get(lang)
    if prefix and first.startswith(prefix):
        name = first[len(prefix):].split()[0] if first[len(prefix):].strip() else ""
        if re.fullmatch(r"[\w./-]+\.(sql|ya?ml|py|csv)", name):
            return name
    return None


class Runner:
    """Carries out blocks in one working folder, keeping the `export`s of earlier shell blocks."""

    def __init__(self, work: Path):
        self.work = work
        self.exports: list[str] = []
        self.env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", DBT_SEND_ANONYMOUS_USAGE_STATS="False")
        for name in ("DBT_PROFILES_DIR", "SDC_DUCKDB_PATH"):
            self.env.pop(name, None)

    def run(self, block: Block) -> None:
        where = f"docs/{block.page} line {block.line} ({block.lang})"
        if block.file:
            self._file(block, where)
        elif block.lang == "sh":
            self._shell(block, where)
        elif block.lang == "sql":
            self._query(block, where)
        elif block.lang == "python":
            result = subprocess.run([sys.executable, "-c", block.body], cwd=self.work, env=self.env,
                                    capture_output=True, text=True, timeout=300)
            assert result.returncode == 0, f"{where}: {result.stderr[-2000:]}"

    def _file(self, block: Block, where: str) -> None:
        text = block.body.replace("/path/to/sdc", str(REPO))
        if block.file.startswith("demo/"):
            lines = text.splitlines(keepends=True)
            own = "".join(lines[1:]) if lines and block.file in lines[0] else text
            actual = (REPO / block.file).read_text(encoding="utf-8")
            if "(excerpt)" in lines[0]:  # every line of the excerpt is a line of the file
                missing = [l for l in own.splitlines() if l not in actual.splitlines()]
                assert not missing, f"{where}: not in {block.file}: {missing}"
            else:
                assert own.strip() == actual.strip(), f"{where} differs from {block.file}"
            return
        target = self.work / block.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def _shell(self, block: Block, where: str) -> None:
        lines = [l for l in block.body.replace("/path/to/sdc", str(REPO)).splitlines() if not l.startswith("pip install")]
        script = "\n".join(self.exports + lines)
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=self.work, env=self.env,
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, f"{where}:\n{block.body}\nstdout: {result.stdout[-3000:]}\nstderr: {result.stderr[-3000:]}"
        self.exports += [l for l in lines if l.startswith("export ")]

    def _query(self, block: Block, where: str) -> None:
        first = block.body.splitlines()[0]
        found = re.fullmatch(r"-- in (\S+\.duckdb)\b.*", first)
        assert found, f"{where}: an SQL example names its database (-- in FILE.duckdb) or its file"
        con = duckdb.connect(str(self.work / found.group(1)), read_only=True)
        try:
            rows = con.execute(block.body).fetchall()
        finally:
            con.close()
        assert rows, f"{where}: no rows"


def runnable(block: Block) -> bool:
    return block.lang in ("sh", "sql", "python", "yaml", "csv") and not any(c in block.body for c in NOT_RUN)


def in_add_section(block: Block) -> bool:
    return block.page == ADD_PAGE and block.section == ADD_SECTION


def test_every_example_is_run_or_named_as_not_run():
    blocks = all_blocks()
    skipped = [b for b in blocks if b.lang in ("sh", "sql", "python") and not runnable(b)]
    assert [b.page for b in skipped] == ["index.md", "quickstart/duckdb.md"]
    assert all(line.startswith(NOT_RUN) for b in skipped for line in b.body.splitlines())
    assert any(in_add_section(b) for b in blocks)
    # every page with an example to run is on the tour (or is the section that runs in a folder of its own)
    to_run = {b.page for b in blocks if runnable(b) and not in_add_section(b)}
    assert to_run <= set(TOUR), sorted(to_run - set(TOUR))


def test_add_sdc_to_your_dbt_project_runs_verbatim(tmp_path):
    work = tmp_path / "census"
    work.mkdir()
    _persons(work / "persons.csv")
    runner = Runner(work)
    blocks = [b for b in page_blocks(ADD_PAGE) if b.section == ADD_SECTION]
    assert len([b for b in blocks if b.lang == "sh"]) >= 4
    for block in blocks:
        if runnable(block):
            runner.run(block)
    con = duckdb.connect(str(work / "publication.duckdb"), read_only=True)
    try:
        published = con.execute('select state, sex, "count" from persons_by_state_sex').fetchall()
    finally:
        con.close()
    assert len(published) == 7 * 3  # US, 2 regions, 4 states by sex 1, 2 and Total


def _persons(path: Path) -> None:
    rng = np.random.default_rng(7)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["person_id", "state", "sex", "age"])
        for k in range(5_000):
            writer.writerow([k + 1, rng.choice(["NY", "PA", "FL", "TX"], p=[0.4, 0.25, 0.2, 0.15]),
                             rng.choice(["1", "2"]), int(rng.integers(0, 95))])


def test_every_other_example_runs(tmp_path):
    work = tmp_path / "tour"
    _tour_folder(work)
    runner = Runner(work)
    blocks = [b for page in TOUR for b in page_blocks(page) if not in_add_section(b) and runnable(b)]
    assert len([b for b in blocks if b.lang == "sh"]) >= 10
    for block in blocks:
        runner.run(block)


def _tour_folder(work: Path) -> None:
    """The files the examples outside "Add sdc to your dbt project" name, and a copy of the demo project
    that uses this checkout as its sdc package."""
    from sdc.demo import write_enterprises, write_students
    from sdc.ptable.formats import read_ptable, write_ptable

    for folder in ("seeds", "warehouse"):
        (work / folder).mkdir(parents=True)
    write_students(work / "students.parquet", 20_000)
    write_enterprises(work / "enterprises.parquet")
    shutil.copy(DATA / "cellkey_testdata_with_rkeys.csv", work / "micro.csv")
    shutil.copy(DATA / "cellkey_testdata_hierarchies.csv", work / "hierarchies.csv")
    table, _, _ = read_ptable(REPO / "demo" / "seeds" / "sdc_ptable.csv")
    write_ptable(table, work / "office_ptable.txt", "tauargus")  # a table made elsewhere, in τ-Argus's format
    shutil.copytree(REPO / "demo", work / "demo", ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    (work / "demo" / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    (work / "demo" / "package-lock.yml").unlink(missing_ok=True)


def test_the_docs_never_install_sdc_by_its_bare_name():
    """New-user trial D9: `sdc` on the public package index is an unrelated project; `pip install "sdc[postgres]"`
    fetched its wheel. Every install the README and the pages show names a checkout, a wheel, a git URL or the
    distribution sdc-warehouse."""
    text = (REPO / "README.md").read_text() + "".join(page_text(page) for page in nav_pages())
    installs = re.findall(r"pip install\s+(\"[^\"]*\"|\S+)", text)
    assert installs  # the docs do show installs
    for target in installs:
        name = target.strip('"')
        assert not re.fullmatch(r"sdc(\[[a-z,]+\])?([=<>~!].*)?", name), f"pip install {target} installs another package"


def test_every_document_the_docs_cite_is_named():
    """New-user trial D18: the README cited "seed 000-004" and their tables without saying what they are. The
    page "The documents behind the examples" names every one the README and the pages cite."""
    text = (REPO / "README.md").read_text() + "".join(page_text(page) for page in nav_pages())
    named = set(re.findall(r"^\| seed (00\d) \|", page_text("concepts/documents.md"), re.MULTILINE))
    cited = set(re.findall(r"seeds? (00\d)", text))
    assert cited and cited <= named, sorted(cited - named)
