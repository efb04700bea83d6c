"""Hostile-input suite (issue 17, section 1): names, codes, file names and option values built from quotes of
both kinds, ``;``, comment markers, newlines, NUL, glob characters, path separators, SQL keywords, Jinja
markers, the method's own column names and letter case, driven through every surface that takes them.

Every test asserts that nothing ran that the text said (the canary file is not created, the canary table
keeps its row) and that the command either stops with a clear error (SdcError, or exit 2 with one line
``sdc <command>: error: ...``) or round-trips exactly (every code and name comes back as itself, every CSV
row parses). The dbt-running surfaces batch many payloads into one file per example, so that one dbt run
covers them.
"""

from __future__ import annotations

import atexit
import collections
import csv
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest
import yaml
from hypothesis import HealthCheck, Phase, assume, event, example, given, settings
from hypothesis import strategies as st

from conftest import query
from dbt_project_helper import DEMO_PTABLE, ScratchProject
from sdc.warehouse.build_record import build_record_comment, build_record_of_comment
from sdc.ckm.counts import COUNT_FACT, protect_table
from sdc.conventions import (
    CKM_AUDIT_COLUMNS,
    CKM_OWN_COLUMNS,
    RECORD_KEY_COLUMN,
    SUPPRESSION_AUDIT_COLUMNS,
    SUPPRESSION_OWN_COLUMNS,
    TOTAL_LABEL,
)
from sdc.errors import SdcError
from sdc.files import mark_path, written_by
from sdc.warehouse.hierarchy import read_hierarchy
from sdc.warehouse.loader import load_microdata, read_facts_config
from sdc.microaggregation.tables import microaggregate_file, microaggregate_table
from sdc.ptable.formats import read_ptable
from sdc.release.publish import publish
from sdc.quoting import quote_identifier, quote_literal, quote_path
from sdc.warehouse.sql_install import install
from sdc.suppression.pipeline import audit_cells_file, suppress_table

SDC = Path(sys.executable).parent / "sdc"
PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# ------------------------------------------------------------------------------------------ canaries
# One folder per test session; payloads write the canary file or touch the canary table if they ever run.
CANARY_DIR = Path(tempfile.mkdtemp(prefix="sdc-hostile-"))
atexit.register(shutil.rmtree, CANARY_DIR, ignore_errors=True)
CANARY_FILE = CANARY_DIR / "canary.csv"
CANARY_ROW = ("alive",)

PAYLOADS = [
    f"x'; copy (select 1) to '{CANARY_FILE}'; --",
    f'x"; copy (select 1) to \'{CANARY_FILE}\'; --',
    f"x\") from m; copy (select 1) to '{CANARY_FILE}'; --",
    f"x'); copy (select 1) to '{CANARY_FILE}'; --",
    f"*/ copy (select 1) to '{CANARY_FILE}'; /*",
    "x\"; drop table canary; --",
    "x'; delete from canary; --",
    "x'); insert into canary values ('dead'); --",
    'x" as y; create table canary_made as select 1; --',
    "x' || (select status from canary) || '",
    "{{ 7 * 7 }}", "{% do x %}", "{# c #}", "}}", "{{",
]
OWN_COLUMNS = [*CKM_AUDIT_COLUMNS, "count", "rk", "rk_f", "freq", "value", *SUPPRESSION_AUDIT_COLUMNS, "published_text",
               "sdc_contributor", "dimension", "code", "parent", "level_1", "leaf", "i", "j", "p", "v", "p_int_lb",
               "m", "cells", "canary"]
KEYWORDS = ["select", "SELECT", "from", "drop table", "union all", "null", "NULL", TOTAL_LABEL, "total", "TOTAL"]
INGREDIENTS = ["'", '"', "''", '""', ";", "--", "/*", "*/", "\n", "\r", "\r\n", "\t", "\x00", "*", "?", "[", "]",
               "../", "/", "\\", "..", " ", ",", "%", "$1", "é", "ß", "{{", "}}", "{%", "#", *KEYWORDS,
               "${", "${env:HOME}", "${system:user.home}",  # Spark's variable substitution (red team 3)
               *OWN_COLUMNS, *(c.upper() for c in OWN_COLUMNS), *(c.title() for c in OWN_COLUMNS)]

_ordinary = st.text(alphabet="abcxyzABC_0123 -.", min_size=1, max_size=4)
_fragment = st.one_of(st.sampled_from(INGREDIENTS), _ordinary)
# any hostile text: a payload, or ingredients mixed with ordinary text
hostile_text = st.one_of(st.sampled_from(PAYLOADS), st.lists(_fragment, min_size=1, max_size=5).map("".join))
# names and codes a CSV file can carry (no NUL, not empty, nothing a reader trims away)
names = hostile_text.filter(lambda s: "\x00" not in s and s.strip() == s and s != "")
codes = names
# hierarchy codes: no carriage return (refused by read_hierarchy: the dbt seed cannot carry one)
hier_codes = codes.filter(lambda s: "\r" not in s)
# names the design allows where it wants plain names (loader.quote): keywords and the method's own columns
plain_names = st.sampled_from([c for c in OWN_COLUMNS + KEYWORDS if c.replace("_", "a").isalnum()]
                              + [c.upper() for c in OWN_COLUMNS])
# file names (no path separator: that names a folder; no NUL: no file can have it)
file_names = st.lists(st.one_of(st.sampled_from(["'", '"', ";", "*", "?", "[", "]", "{", "}", " ", "$", "..", "--",
                                                 "\n", "\r", "é", "~", "select", "m1", "#", "!", "\\"]), _ordinary),
                      min_size=1, max_size=5).map("".join).filter(lambda s: s not in (".", "..") and "/" not in s)

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MEDIUM = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def slow(examples: int):
    """A subprocess (dbt, the CLI) per example: few examples, and no shrinking (minutes per step); a failure
    is reported as found."""
    return settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


SLOW = slow(2)


def canary_table(db: Path | duckdb.DuckDBPyConnection) -> None:
    con = db if isinstance(db, duckdb.DuckDBPyConnection) else duckdb.connect(str(db))
    con.execute("create or replace table main.canary as select 'alive' as status")
    if con is not db:
        con.close()


def assert_no_side_effect(db: Path | None = None) -> None:
    assert not CANARY_FILE.exists(), "a payload ran: the canary file was written"
    if db is not None:
        con = duckdb.connect(str(db), read_only=True)
        try:
            assert con.execute("select * from main.canary").fetchall() == [CANARY_ROW]
            made = con.execute("select count(*) from duckdb_tables() where table_name ilike 'canary_made'").fetchone()[0]
            assert made == 0, "a payload ran: it created a table"
        finally:
            con.close()


def assert_clear_error(exc: BaseException, *hostile: str) -> None:
    """An SdcError with a message that, apart from the hostile text it quotes, is one line."""
    assert isinstance(exc, SdcError), f"{type(exc).__name__}: {exc}"
    message = str(exc)
    event("clear error")
    for text in sorted(hostile, key=len, reverse=True):
        message = message.replace(repr(text)[1:-1], "<h>").replace(text, "<h>")
    assert message.strip() and "\n" not in message and "\r" not in message, message
    assert "Traceback" not in message


def write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SDC), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def assert_cli_result(result: subprocess.CompletedProcess, command: str, *hostile: str) -> bool:
    """True when the command succeeded; else it must be exit 2 with one line 'sdc <command>: error: ...'."""
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    if result.returncode == 0:
        event("round trip")
        return True
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    if result.stderr.startswith(f"sdc {command}: error: "):
        assert_clear_error(SdcError(result.stderr.strip()), *hostile)
    else:  # argparse: usage line(s), then 'sdc <command>: error: ...' as its last line
        assert f"sdc {command}" in result.stderr and "error:" in result.stderr, result.stderr
    return False


def distinct_ci(values: list[str]) -> list[str]:
    """The values without case-insensitive duplicates (DuckDB names are case-insensitive)."""
    seen, out = set(), []
    for v in values:
        if v.lower() not in seen:
            seen.add(v.lower())
            out.append(v)
    return out


# ------------------------------------------------------------------------------------------ quoting.py
@FAST
@given(text=hostile_text)
def test_quote_literal_and_identifier_round_trip_through_duckdb(text):
    con = duckdb.connect()
    canary_table(con)
    if "\x00" in text:
        for quote in (quote_identifier, quote_literal):
            with pytest.raises(SdcError, match="cannot be an SQL"):
                quote(text)
        return
    assert con.execute(f"select {quote_literal(text)}").fetchone()[0] == text
    con.execute("create schema t")  # apart from main.canary: a name CANARY is the same table in DuckDB
    con.execute(f"create table t.{quote_identifier(text)} as select 1 as {quote_identifier(text)}")
    assert con.execute("select table_name, column_name from duckdb_columns() where schema_name = 't'").fetchall() \
        == [(text, text)]
    assert con.execute("select * from main.canary").fetchall() == [CANARY_ROW]
    assert not CANARY_FILE.exists()


@FAST
@example(name="m*")  # before: read every file beginning with m
@example(name="m[1]")  # before: read m1.csv
@example(name="\\*")  # DuckDB took the backslash for a separator
@example(name="a\\b")
@given(name=file_names)
def test_quote_path_reads_the_file_itself_never_a_pattern(name):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        folder = Path(tmp)
        target = folder / f"{name}.csv"
        target.write_text("a\ntarget\n")
        # files a glob of the name would also match
        for other in ("m1.csv", "x.csv", "a.csv", "select.csv", "1.csv"):
            if other != target.name:
                (folder / other).write_text("a\nother\n")
        if "\\" in name and any(c in name for c in "*?["):  # DuckDB cannot read these: refused by name
            with pytest.raises(SdcError, match="a path with a backslash and one of"):
                quote_path(target)
            return
        con = duckdb.connect()
        assert con.execute(f"select a from read_csv({quote_path(target)})").fetchall() == [("target",)]


# ------------------------------------------------------------------------------------------ sdc load
@MEDIUM
@example(columns=[";'"], values=["x'; y; --"], table="t")  # before: sniffed as one ';'-separated column
@given(columns=st.lists(names, min_size=1, max_size=4), values=st.lists(codes, min_size=1, max_size=6),
       table=st.one_of(names, plain_names))
def test_load_round_trips_hostile_column_names_and_values_or_refuses_clearly(columns, values, table):
    columns = [c for c in distinct_ci(columns) if c.lower() != "id"]
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        micro = tmp / "micro.csv"
        # an id column, and a plain first row so the reader types every column as text
        rows = [[str(k)] + [(["plain"] + values)[k % (len(values) + 1)] for _ in columns] for k in range(len(values) + 1)]
        write_csv(micro, ["id", *columns], rows)
        db = tmp / "wh.duckdb"
        canary_table(db)
        try:
            load_microdata(db, micro, table, id_column="id")
        except Exception as exc:  # noqa: BLE001 - the assertion names any other type
            assert_clear_error(exc, table, *columns, *values)
        else:
            event("round trip")
            con = duckdb.connect(str(db), read_only=True)
            try:
                loaded = con.execute(
                    f"select cast(id as varchar), {', '.join(quote_identifier(c) for c in columns)} "
                    f"from raw.{quote_identifier(table)} order by id").fetchall()
                names_loaded = [r[0] for r in con.execute(
                    "select column_name from duckdb_columns() where schema_name = 'raw' and table_name = ? "
                    "order by column_index", [table]).fetchall()]
            finally:
                con.close()
            assert loaded == [tuple(r) for r in rows]
            assert names_loaded[:len(columns) + 1] == ["id", *columns]
        assert_no_side_effect(db)


@MEDIUM
@example(name="m*")
@example(name="m[1]")
@example(name="*\\")
@given(name=file_names)
def test_load_reads_exactly_the_named_input_file(name):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        micro = tmp / f"{name}.csv"
        micro.write_text("id,a\n1,target\n")
        for other in ("m1.csv", "select.csv", "x.csv"):  # what a glob of the name could also match
            if other != micro.name:
                (tmp / other).write_text("id,a\n2,other\n")
        db = tmp / "wh.duckdb"
        canary_table(db)
        if "\\" in name and any(c in name for c in "*?["):  # a name DuckDB cannot read: refused by name
            with pytest.raises(SdcError) as caught:
                load_microdata(db, micro, "t", id_column="id")
            assert_clear_error(caught.value, str(micro))
        else:
            load_microdata(db, micro, "t", id_column="id")
            assert query(db, "select id, a from raw.t") == [(1, "target")]
        assert_no_side_effect(db)


@slow(3)
@given(table=st.one_of(names, plain_names), name=file_names, column=names)
def test_load_cli_with_hostile_options(table, name, column):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        micro = tmp / f"{name}.csv"
        write_csv(micro, ["id", column], [["1", "plain"], ["2", "x"]])
        db = tmp / "wh.duckdb"
        canary_table(db)
        result = run_cli("load", "--db", str(db), "--input", str(micro), "--table", table, "--id", "id",
                         "--key-mode", "existing", "--key-column", column)
        assert not assert_cli_result(result, "load", table, column, name)  # 'plain' is no record key
        result = run_cli("load", "--db", str(db), "--input", str(micro), "--table", table, "--id", "id")
        if assert_cli_result(result, "load", table, column, name):
            con = duckdb.connect(str(db), read_only=True)
            try:
                assert con.execute(f"select {quote_identifier(column)} from raw.{quote_identifier(table)} "
                                   "order by id").fetchall() == [("plain",), ("x",)]
            finally:
                con.close()
        assert_no_side_effect(db)


@MEDIUM
@example(fact="f_SELECT", rule="sex = 'm' or sex = '*/' or sex = '\"'")
@example(fact="f_count", rule="sex")  # a column that is not 0/1
@given(fact=st.one_of(names, plain_names.map(lambda n: "f_" + n)), rule=hostile_text.filter(lambda s: "\x00" not in s))
def test_load_config_with_hostile_fact_names_and_rules(fact, rule):
    """A facts config is YAML; its names must be plain, its rules one SQL condition on the input."""
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        write_csv(tmp / "m.csv", ["id", "sex"], [["1", "m"], ["2", "w"]])
        (tmp / "facts.yml").write_text(yaml.safe_dump({"facts": {fact: rule}}), encoding="utf-8")
        db = tmp / "wh.duckdb"
        canary_table(db)
        try:
            load_microdata(db, tmp / "m.csv", "t", id_column="id", facts=read_facts_config(tmp / "facts.yml"))
        except Exception as exc:  # noqa: BLE001
            assert_clear_error(exc, fact, rule)
        else:
            event("round trip")
            values = [r[0] for r in query(db, f"select {quote_identifier(fact)} from raw.t order by id")]
            assert values in ([0, 0], [0, 1], [1, 0], [1, 1])
        assert_no_side_effect(db)


# ------------------------------------------------------------------------------------------ sdc ckm
def microdata(path: Path, dims: list[str], codes_by_dim: list[list[str]], records: int = 60,
              extra: tuple = ()) -> list[tuple]:
    """A CSV file with the dims (codes cycling with different periods, then the ``extra`` cells), an id and
    record keys; returns the records' dimension codes."""
    rows, cells = [], []
    for k in range(records + len(extra)):
        cell = tuple(c[(k * (d + 1) + k // 7) % len(c)] for d, c in enumerate(codes_by_dim)) if k < records \
            else extra[k - records]
        cells.append(cell)
        rows.append([*cell, str(k), str((k * 1_654_321 + 12_345) % 10**8)])
    write_csv(path, [*dims, "id", "key"], rows)
    return cells


def hostile_hierarchy(path: Path, dim: str, root: str, leaves: list[str]) -> None:
    write_csv(path, ["dimension", "code", "parent"], [[dim, root, ""]] + [[dim, leaf, root] for leaf in leaves])


def expected_counts(cells: list[tuple], roots: list[str]) -> dict[tuple, int]:
    """Every cell of the cube (each dimension at its code or at its root) with its number of records."""
    out = collections.Counter()
    for cell in cells:
        for mask in itertools.product((False, True), repeat=len(cell)):
            out[tuple(r if m else c for c, m, r in zip(cell, mask, roots))] += 1
    return dict(out)


# plain dimension names that are SQL keywords, the total's label or names the macros use inside
ALLOWED_DIMS = ["region", "kind", "select", "from", "Total", "status", "level_1", "leaf", "m", "dimension", "code",
                "parent", "canary", "I", "P_INT_LB"]


@SLOW
@given(leaf_codes=st.lists(hier_codes, min_size=2, max_size=12, unique=True), other=st.lists(codes, min_size=1,
       max_size=6, unique=True), root=hier_codes, dims=st.lists(st.sampled_from(ALLOWED_DIMS), min_size=2, max_size=2, unique_by=str.lower))
def test_ckm_round_trips_hostile_codes_and_hierarchy_codes(leaf_codes, other, root, dims):
    """One hierarchical dimension (hostile root and leaf codes), one flat one (hostile codes). Every code comes
    back as itself and every count (with --audit: the original) is the true one."""
    assume(root not in leaf_codes and TOTAL_LABEL not in other)
    leaf_codes, other = ["plain", *leaf_codes], ["plain", *other]
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        cells = microdata(tmp / "m.csv", dims, [leaf_codes, other])
        hostile_hierarchy(tmp / "h.csv", dims[0], root, leaf_codes)
        out = tmp / "out.csv"
        written = protect_table(tmp / "m.csv", dims, "key", 8, DEMO_PTABLE, out, hierarchy_path=tmp / "h.csv", audit=True,
                                    complete=False)  # the cells with records, as expected_counts gives them
        table = read_csv(out)
        assert table[0] == [*dims, "count", "original", "cell_key", "noise"]
        got = {tuple(r[:2]): int(r[3]) for r in table[1:]}
        assert len(table) - 1 == written == len(got)
        assert got == expected_counts(cells, [root, TOTAL_LABEL])
        assert_no_side_effect()


@MEDIUM
@given(leaf_codes=st.lists(hier_codes, min_size=1, max_size=6, unique=True), other=st.lists(codes, min_size=1,
       max_size=4, unique=True), root=hier_codes, threshold=st.integers(0, 12))
def test_count_table_on_dataframes_round_trips_hostile_codes_in_a_complete_table(leaf_codes, other, root, threshold):
    """The Python API on a DataFrame with hostile codes, the hierarchy a DataFrame of hostile codes (bound as
    parameters, never SQL), a complete table with a threshold: every code comes back as itself, every original
    is the true count (0 for an empty cell of the frame), and a count is empty exactly when below the threshold."""
    import pandas as pd

    from sdc.ckm import count_table

    assume(root not in leaf_codes and TOTAL_LABEL not in other)
    leaf_codes, other = ["plain", *leaf_codes], ["plain", *other]
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        cells = microdata(Path(tmp) / "m.csv", ["region", "kind"], [leaf_codes, other], extra=(("plain", "plain"),))
    data = pd.DataFrame({"region": [c[0] for c in cells], "kind": [c[1] for c in cells],
                         "key": [(k * 1_654_321 + 12_345) % 10**8 for k in range(len(cells))]})
    hierarchy = pd.DataFrame([("region", root, None)] + [("region", leaf, root) for leaf in leaf_codes],
                             columns=["dimension", "code", "parent"])
    table = count_table(data, ["region", "kind"], record_key="key", modulus=10**8, ptable=DEMO_PTABLE,
                        hierarchy=hierarchy, threshold=threshold, audit=True, check_keys=False)
    expected = expected_counts(cells, [root, TOTAL_LABEL])
    got = {(r["region"], r["kind"]): r for r in table.to_dict("records")}
    assert set(expected) <= set(got)
    assert {region for region, _ in got} == {root, *leaf_codes}
    for cell, row in got.items():
        assert row["original"] == expected.get(cell, 0), cell
        assert pd.isna(row["count"]) == (row["perturbed"] < threshold), cell
    assert_no_side_effect()


OWN_CASES = st.sampled_from(OWN_COLUMNS).flatmap(lambda c: st.sampled_from([c, c.upper(), c.title()]))


@settings(max_examples=40, deadline=None)
@example(dims=["dimension"])  # a column of suppression_constraints
@given(dims=st.lists(st.one_of(OWN_CASES, st.sampled_from(ALLOWED_DIMS)), min_size=1, max_size=3))
def test_ckm_and_suppress_refuse_own_column_names_in_any_letter_case_before_any_work(dims):
    """A dimension named like a column the method adds (count, Noise, STATUS, ...) or listed twice is refused by
    name, before a dbt run; other keyword-like names are not refused for that."""
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        microdata(tmp / "m.csv", dims, [["a", "b"]] * len(dims))
        for run, own in ((lambda: protect_table(tmp / "m.csv", dims, "key", 8, DEMO_PTABLE, tmp / "out.csv"),
                          [*CKM_OWN_COLUMNS, RECORD_KEY_COLUMN, COUNT_FACT]),
                         (lambda: suppress_table(tmp / "m.csv", dims, ["freq:3"], tmp / "out.csv"),
                          [*SUPPRESSION_OWN_COLUMNS, "constraint_id", "dimension", "coefficient", "top_1", "top_2"])):
            lowered = [d.lower() for d in dims]
            clash = next((d for k, d in enumerate(dims) if d.lower() in own or d.lower() in lowered[:k]), None)
            if clash is None:
                continue  # a dbt run: the round-trip tests cover these names
            with pytest.raises(SdcError) as caught:
                run()
            assert_clear_error(caught.value, *dims)
            assert f"dimension {clash!r}" in str(caught.value)
            assert not (tmp / "out.csv").exists()
        assert_no_side_effect()


@settings(max_examples=60, deadline=None)
@given(dim=names, record_key=names)
def test_ckm_refuses_hostile_dimension_and_key_names_before_any_work(dim, record_key):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        write_csv(tmp / "m.csv", [dim, "key"] if dim != "key" else [dim, "k2"], [["a", "1"]])
        with pytest.raises(SdcError) as caught:
            protect_table(tmp / "m.csv", [dim], record_key, 8, DEMO_PTABLE, tmp / "out.csv")
        assert_clear_error(caught.value, dim, record_key)
        assert not (tmp / "out.csv").exists()
        assert_no_side_effect()


@slow(1)
@given(leaf_codes=st.lists(hier_codes, min_size=1, max_size=5, unique=True), root=hier_codes, out_name=file_names)
def test_ckm_cli_with_hostile_codes_and_file_names(leaf_codes, root, out_name):
    assume(root not in leaf_codes and root != "plain")
    leaf_codes = ["plain", *leaf_codes]
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        cells = microdata(tmp / f"{out_name}.in.csv", ["region"], [leaf_codes])
        hostile_hierarchy(tmp / f"{out_name}.h.csv", "region", root, leaf_codes)
        out = tmp / f"{out_name}.csv"
        result = run_cli("ckm", "--input", str(tmp / f"{out_name}.in.csv"), "--dims", "region", "--record-key", "key",
                         "--key-digits", "8", "--ptable", str(DEMO_PTABLE), "--hierarchy", str(tmp / f"{out_name}.h.csv"),
                         "--out", str(out))
        if assert_cli_result(result, "ckm", root, *leaf_codes, out_name):
            table = read_csv(out)
            assert table[0] == ["region", "count"]
            assert sorted(r[0] for r in table[1:]) == sorted(set(c[0] for c in cells) | {root})
        assert_no_side_effect()


@FAST
@given(code=names, at=st.sampled_from(["dimension", "code", "parent"]))
def test_hierarchy_file_with_hostile_codes_reads_back_or_refuses_a_carriage_return(code, at):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        path = Path(tmp) / "h.csv"
        row = {"dimension": "region", "code": "leaf", "parent": "top"} | {at: code}
        write_csv(path, ["dimension", "code", "parent"], [["region", "top", ""], list(row.values())])
        try:
            rows = read_hierarchy(path)
        except Exception as exc:  # noqa: BLE001
            assert_clear_error(exc, code, str(path))
        else:
            event("round trip")
            assert "\r" not in code and rows[1] == tuple(row.values())


# ------------------------------------------------------------------------------------------ sdc suppress
def _reads_as_number(text: str) -> bool:
    try:
        return math.isfinite(float(text.strip()))
    except ValueError:
        return False


@SLOW
@example(leaf_codes=["a", "b"], other=["x"], root="top", mark="0131")  # found by a CI run: printed as 131
@given(leaf_codes=st.lists(hier_codes, min_size=2, max_size=8, unique=True), other=st.lists(codes, min_size=1,
       max_size=4, unique=True), root=hier_codes, mark=hostile_text.filter(lambda s: "\x00" not in s))
def test_suppress_round_trips_hostile_codes_hierarchy_and_mark(leaf_codes, other, root, mark):
    assume(root not in leaf_codes and TOTAL_LABEL not in other)
    leaf_codes, other = ["plain", *leaf_codes], ["plain", *other]
    dims = ["region", "kind"]
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        # one record alone in its cell: a primary suppression, and secondaries beside it
        cells = microdata(tmp / "m.csv", dims, [leaf_codes, other], records=40, extra=[("plain", "rare")])
        hostile_hierarchy(tmp / "h.csv", "region", root, leaf_codes)
        out = tmp / "out.csv"
        if _reads_as_number(mark):  # a suppressed cell shown as 0131 reads as a published 131: refused
            with pytest.raises(SdcError, match="reads as a number"):
                suppress_table(tmp / "m.csv", dims, ["freq:3"], out, hierarchy_path=tmp / "h.csv", mark=mark)
            assert not out.exists()
            assert_no_side_effect()
            return
        # --audit: the layout with freq and status, which sdc audit reads back
        suppress_table(tmp / "m.csv", dims, ["freq:3"], out, hierarchy_path=tmp / "h.csv", mark=mark, audit=True)
        table = read_csv(out)
        header = table[0]
        assert header[:3] == ["region", "kind", "freq"]
        got = {tuple(r[:2]): int(r[2]) for r in table[1:] if int(r[2])}
        assert got == expected_counts(cells, [root, TOTAL_LABEL])
        text, status = header.index("published_text"), header.index("status")
        assert {r[status] for r in table[1:]} & {"primary", "secondary"}
        for r in table[1:]:
            assert r[text] == (mark if r[status] in ("primary", "secondary") else r[2])
        # the cells file, hostile codes and all, goes back into sdc audit with its hierarchy
        passed, lines = audit_cells_file(out, tmp / "h.csv")
        assert passed, lines
        assert_no_side_effect()


@SLOW
@given(leaf_codes=st.lists(hier_codes, min_size=3, max_size=6, unique=True), group=hier_codes, root=hier_codes)
def test_suppress_round_trips_hostile_codes_of_leaves_at_different_depths(leaf_codes, group, root):
    """Issue 50: a hierarchy of hostile codes whose leaves lie at different depths (two under a group, the others
    directly under the root): every code is one cell with its exact count, and the cells file passes sdc audit."""
    assume(len({root, group}) == 2 and not {root, group} & set(leaf_codes) and TOTAL_LABEL not in leaf_codes)
    leaf_codes = ["plain", *leaf_codes]
    dims = ["region", "kind"]
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        cells = microdata(tmp / "m.csv", dims, [leaf_codes, ["x", "y"]], records=40, extra=[("plain", "rare")])
        write_csv(tmp / "h.csv", ["dimension", "code", "parent"],
                  [["region", root, ""], ["region", group, root]]
                  + [["region", leaf, group if k < 2 else root] for k, leaf in enumerate(leaf_codes)])
        out = tmp / "out.csv"
        suppress_table(tmp / "m.csv", dims, ["freq:3"], out, hierarchy_path=tmp / "h.csv", audit=True)
        table = read_csv(out)
        got = {tuple(r[:2]): int(r[2]) for r in table[1:] if int(r[2])}
        assert len(table) - 1 == len({tuple(r[:2]) for r in table[1:]})  # no code twice
        expected = collections.Counter(expected_counts(cells, [root, TOTAL_LABEL]))
        for region, kind in cells:
            if region in leaf_codes[:2]:
                expected[(group, kind)] += 1
                expected[(group, TOTAL_LABEL)] += 1
        assert got == dict(expected)
        passed, lines = audit_cells_file(out, tmp / "h.csv")
        assert passed, lines
        assert_no_side_effect()


@slow(2)
@example(width="${system:user.home}\rLEAF3x Bxy")  # found here: the rule was echoed with its line break
@given(width=hostile_text.filter(lambda s: "\x00" not in s))
def test_suppress_cli_refuses_a_hostile_range_width(width):
    """range:w takes a number; anything else is refused with a clear error and nothing is written."""
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        write_csv(tmp / "m.csv", ["kind"], [["a"], ["a"], ["b"]])
        result = run_cli("suppress", "--input", str(tmp / "m.csv"), "--dims", "kind", "--rule", "freq:3", "--rule",
                         f"range:{width}", "--out", str(tmp / "out.csv"))
        if assert_cli_result(result, "suppress", width):
            assert float(width) > 0  # only a positive number passes
        else:
            assert not (tmp / "out.csv").exists()
        assert_no_side_effect()


@slow(2)
@given(column=names, rule_column=names)
def test_suppress_cli_refuses_hostile_dimension_and_manual_rule_columns(column, rule_column):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        write_csv(tmp / "m.csv", [column, "flag"], [["a", "true"], ["b", "false"]])
        result = run_cli("suppress", "--input", str(tmp / "m.csv"), "--dims", column.replace(",", ""), "--rule",
                         f"manual:{rule_column}", "--out", str(tmp / "out.csv"))
        # a name the design does not allow, or a manual rule on no column of the cells: refused, nothing written
        assert not assert_cli_result(result, "suppress", column, column.replace(",", ""), rule_column)
        assert not (tmp / "out.csv").exists()
        assert_no_side_effect()


@SLOW
@given(leaf_codes=st.lists(hier_codes, min_size=2, max_size=6, unique=True), other=st.lists(codes, min_size=1,
       max_size=4, unique=True), root=hier_codes,
       dims=st.lists(st.sampled_from(ALLOWED_DIMS), min_size=3, max_size=3, unique_by=str.lower))
def test_linked_suppress_round_trips_hostile_codes_and_writes_only_its_files(leaf_codes, other, root, dims):
    """Two tables of one file (sdc suppress with two --dims): hostile codes, a hierarchy of hostile codes (the
    cells' record keys are computed through it), dimension names that are keywords or the macros' own names.
    Each table's counts are exact, a margin the tables share has one status in both, and the folder holds
    exactly the two files named after the dimensions."""
    from sdc.suppression.linked_tables import suppress_linked_tables, table_name

    assume(root not in leaf_codes and TOTAL_LABEL not in other)
    tables = [[dims[0], dims[1]], [dims[0], dims[2]]]
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        cells = microdata(tmp / "m.csv", dims, [leaf_codes, other, other], records=40,
                          extra=[(leaf_codes[0], other[0], other[0])])
        hostile_hierarchy(tmp / "h.csv", dims[0], root, leaf_codes)
        out = tmp / "out"
        out.mkdir()
        try:
            suppress_linked_tables(tmp / "m.csv", tables, ["freq:3"], out, hierarchy_path=tmp / "h.csv", audit=True)
        except SdcError as exc:  # a name the design does not allow: refused, nothing written
            assert_clear_error(exc, *dims)
            assert not list(out.iterdir())
            assert_no_side_effect()
            return
        assert sorted(p.name for p in out.glob("*.csv")) == sorted(f"{table_name(t)}.csv" for t in tables)
        margins = []
        for t in tables:
            table = read_csv(out / f"{table_name(t)}.csv")
            header = table[0]
            assert header[:3] == [*t, "freq"]
            own = [tuple(c[dims.index(d)] for d in t) for c in cells]
            assert {tuple(r[:2]): int(r[2]) for r in table[1:]} == expected_counts(own, [root, TOTAL_LABEL])
            status = header.index("status")
            margins.append({r[0]: r[status] for r in table[1:] if r[1] == TOTAL_LABEL})
        assert margins[0] == margins[1]  # (code, Total) holds the same records in both tables
        assert_no_side_effect()


@slow(2)
@given(columns=st.lists(names, min_size=3, max_size=3, unique_by=str.lower))
def test_linked_suppress_cli_with_hostile_dimension_names(columns):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        write_csv(tmp / "m.csv", columns, [["a", "b", "c"], ["a", "d", "e"], ["f", "b", "e"]])
        (tmp / "out").mkdir()
        first, second = [c.replace(",", "") for c in columns[:2]], [columns[0].replace(",", ""), columns[2].replace(",", "")]
        result = run_cli("suppress", "--input", str(tmp / "m.csv"), "--dims", ",".join(first), "--dims",
                         ",".join(second), "--rule", "freq:3", "--out", str(tmp / "out"))
        written = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        if assert_cli_result(result, "suppress", *columns, *first, *second):
            assert len([w for w in written if w.startswith("out/") and w.endswith(".csv")]) == 2
        else:
            assert not list((tmp / "out").iterdir())
        assert all(w == "m.csv" or w.startswith("out/") for w in written)  # nothing beside the folder
        assert_no_side_effect()


# ------------------------------------------------------------------------------------------ sdc microaggregate
@MEDIUM
@given(others=st.lists(names, min_size=1, max_size=3), values=st.lists(codes, min_size=1, max_size=4),
       column=st.one_of(names, plain_names), out_name=file_names, key=names)
def test_microaggregate_file_keeps_hostile_names_and_values_of_other_columns(others, values, column, out_name, key):
    others = [o for o in distinct_ci(others) if o.lower() not in (column.lower(), "id")]
    key = key if key.lower() not in [c.lower() for c in ["id", column, *others]] else key + "_key"
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        rows = [[str(k), str(10 * k + k % 3)] + [(["plain"] + values)[k % (len(values) + 1)] for _ in others]
                + [str(k * 7 % 8)] for k in range(8)]
        write_csv(tmp / "in.csv", ["id", column, *others, key], rows)
        out = tmp / f"{out_name}.csv"
        try:
            # the key column (a hostile --record-key) and rk, rk_* are not copied
            microaggregate_file(tmp / "in.csv", out, [column], 2, "fixed", id_column="id", record_key=key)
        except Exception as exc:  # noqa: BLE001
            assert_clear_error(exc, column, *others, *values, out_name, key)
            assert not out.exists()
        else:
            event("round trip")
            table = read_csv(out)
            kept = [k for k, o in enumerate(others) if o.lower() != "rk" and not o.lower().startswith("rk_")]
            assert table[0] == ["id", column, *[others[k] for k in kept]]
            assert [r[:1] + r[2:] for r in table[1:]] == [r[:1] + [r[2 + k] for k in kept] for r in rows]
            assert sorted(os.listdir(tmp)) == sorted(["in.csv", out.name, mark_path(out).name])
            assert written_by(out) == "sdc microaggregate"
        assert_no_side_effect()


@MEDIUM
@example(table="select", schema="Count", column="noise")
@given(table=st.one_of(names, plain_names, plain_names), schema=st.one_of(names, plain_names, plain_names),
       column=st.one_of(names, plain_names, plain_names))
def test_microaggregate_table_with_hostile_names(table, schema, column):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        db = Path(tmp) / "wh.duckdb"
        con = duckdb.connect(str(db))
        canary_table(con)
        con.execute(f"create schema if not exists {quote_identifier(schema)}")
        con.execute(f"create table {quote_identifier(schema)}.{quote_identifier(table)} as "
                    f"select range as id, range * 3.0 as {quote_identifier(column)} from range(6)")
        con.close()
        name = f"{schema}.{table}"
        try:
            microaggregate_table(db, name, [column], 2, "fixed", id_column="id" if column.lower() != "id" else None)
        except Exception as exc:  # noqa: BLE001
            assert_clear_error(exc, table, schema, column, name)
        else:
            event("round trip")
            con = duckdb.connect(str(db), read_only=True)
            try:
                got = con.execute(f"select {quote_identifier(column)} from {quote_identifier(schema)}."
                                  f"{quote_identifier(table + '_microaggregated')} order by 1").fetchall()
            finally:
                con.close()
            assert [g[0] for g in got] == [1.5, 1.5, 7.5, 7.5, 13.5, 13.5]
        assert_no_side_effect(db)


@slow(3)
@given(table=st.one_of(names, plain_names), column=st.one_of(names, plain_names), out_table=st.one_of(names, plain_names))
def test_microaggregate_cli_with_hostile_names(table, column, out_table):
    # the canary table is the test's own; an input of that name would be a collision of the test, not of sdc
    assume(table.lower() != "canary" and out_table.lower() != "canary")
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        db = Path(tmp) / "wh.duckdb"
        con = duckdb.connect(str(db))
        canary_table(con)
        con.execute(f"create table main.{quote_identifier(table)} as select range as id, range * 3.0 as "
                    f"{quote_identifier(column)} from range(4)")
        con.close()
        result = run_cli("microaggregate", "--db", str(db), "--table", table, "--column", column, "--k", "2",
                         "--method", "fixed", "--out-table", out_table)
        if assert_cli_result(result, "microaggregate", table, column, out_table):
            assert query(db, f"select {quote_identifier(column)} from main.{quote_identifier(out_table)} order by 1") \
                == [(1.5,), (1.5,), (7.5,), (7.5,)]
        assert_no_side_effect(db)


# ------------------------------------------------------------------------------------------ ptable files
PTABLE_TEXT = DEMO_PTABLE.read_text()


@FAST
@given(field=hostile_text, line=st.integers(0, 40), column=st.integers(0, 5))
def test_ptable_file_with_a_hostile_field_is_refused_clearly(field, line, column):
    lines = PTABLE_TEXT.splitlines()
    line = min(line, len(lines) - 1)
    cells = lines[line].split(",")
    cells[column] = field
    text = "\n".join(lines[:line] + [",".join(cells)] + lines[line + 1:]) + "\n"
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        path = Path(tmp) / "pt.csv"
        path.write_bytes(text.encode("utf-8"))
        try:
            table, _, _ = read_ptable(path)
        except Exception as exc:  # noqa: BLE001
            assert_clear_error(exc, field, cells[column])
        else:  # only a field that reads as the same number can pass
            assert len(table) == len(read_ptable(DEMO_PTABLE)[0])
    assert_no_side_effect()


@slow(3)
@given(name=file_names)
def test_ptable_cli_writes_and_reads_exactly_the_named_files(name):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        out = tmp / f"{name}.csv"
        result = run_cli("ptable", "--import", str(DEMO_PTABLE), "--out", str(out))
        assert assert_cli_result(result, "ptable", name)
        assert sorted(os.listdir(tmp)) == sorted([out.name, mark_path(out).name])
        assert written_by(out) == "sdc ptable"
        result = run_cli("ptable", "--import", str(out), "--out", str(tmp / "copy.csv"))
        assert assert_cli_result(result, "ptable", name)
        assert (tmp / "copy.csv").read_text() == out.read_text()
    assert_no_side_effect()


# ------------------------------------------------------------------------------------------ sdc publish
def manifest(path: Path, schema: str, tables: list[str]) -> Path:
    nodes = {f"model.p.n{k}": {"resource_type": "model", "name": f"n{k}", "alias": t, "schema": schema,
                               "database": "wh", "tags": ["sdc_publish"],
                               "config": {"materialized": "table", "tags": ["sdc_publish"]},
                               "depends_on": {"macros": ["macro.sdc.ckm_published"], "nodes": []}}
             for k, t in enumerate(tables)}
    path.write_text(json.dumps({"metadata": {}, "nodes": nodes, "sources": {}, "macros": {}}))
    return path


@MEDIUM
@given(schema=names, tables=st.lists(names, min_size=1, max_size=3, unique_by=str.lower), column=names,
       value=codes, folder=st.one_of(st.none(), file_names, file_names.map(lambda n: f"sub/../{n}")))
def test_publish_hostile_relation_names_and_parquet_folder(schema, tables, column, value, folder):
    assume(column.lower() != "n")
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        (tmp / "sub").mkdir()
        db = tmp / "wh.duckdb"
        con = duckdb.connect(str(db))
        canary_table(con)
        con.execute(f"create schema if not exists {quote_identifier(schema)}")
        for t in tables:
            con.execute(f"create table {quote_identifier(schema)}.{quote_identifier(t)} as "
                        f"select {quote_literal(value)} as {quote_identifier(column)}, 3 as n")
        con.close()
        before = set(tmp.rglob("*"))
        out, parquet = tmp / "pub.duckdb", (tmp / folder if folder is not None else None)
        try:
            published = publish(db, out, parquet, manifest=manifest(tmp / "m.json", schema, tables))
        except Exception as exc:  # noqa: BLE001
            assert_clear_error(exc, schema, *tables, column, value, folder or "", f"{schema}.{tables[0]}")
            assert not out.exists()
            assert set(tmp.rglob("*")) == before | {tmp / "m.json"}
        else:
            event("round trip")
            assert published == tables
            con = duckdb.connect(str(out), read_only=True)
            try:
                for t in tables:
                    assert con.execute(f"select * from main.{quote_identifier(t)}").fetchall() == [(value, 3)]
                    if parquet is not None:  # read from a plain name: the folder's name may be none DuckDB reads
                        shutil.copy(parquet / f"{t}.parquet", tmp / "check.parquet")
                        assert con.execute(f"select * from read_parquet({quote_path(tmp / 'check.parquet')})"
                                           ).fetchall() == [(value, 3)]
            finally:
                con.close()
            written = set(tmp.rglob("*")) - before - {tmp / "m.json", out, tmp / "check.parquet"}
            assert all(parquet is not None and p.resolve().is_relative_to(parquet.resolve()) for p in written), written
        assert_no_side_effect(db)


@slow(3)
@given(table=names, folder=file_names)
def test_publish_cli_with_hostile_names(table, folder):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        db = tmp / "wh.duckdb"
        con = duckdb.connect(str(db))
        canary_table(con)
        con.execute("create schema protected")
        con.execute(f"create table protected.{quote_identifier(table)} as select 'a' as dim, 3 as n")
        con.close()
        result = run_cli("publish", "--db", str(db), "--out", str(tmp / "pub.duckdb"), "--parquet", str(tmp / folder),
                         "--manifest", str(manifest(tmp / "m.json", "protected", [table])))
        if assert_cli_result(result, "publish", table, folder):
            assert sorted(os.listdir(tmp / folder)) == sorted(["_sdc_publication.json", f"{table}.parquet"])
        assert_no_side_effect(db)


# ------------------------------------------------------------------------------------------ sdc sql install
@slow(2)
@given(schema=names, name=names, bad_relation=hostile_text)
def test_sql_install_with_a_hostile_ptable_relation(schema, name, bad_relation):
    """The warehouse's ptable lies in a relation with a hostile schema and name; --ptable-relation names it."""
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        db = Path(tmp) / "wh.duckdb"
        con = duckdb.connect(str(db))
        canary_table(con)
        con.execute(f"create schema if not exists {quote_identifier(schema)}")
        con.execute(f"create table {quote_identifier(schema)}.{quote_identifier(name)} as "
                    f"select * from read_csv({quote_path(DEMO_PTABLE)})")
        con.close()
        with pytest.raises(SdcError) as caught:  # a relation that does not exist, however it is spelt
            install(db, ptable_relation=bad_relation + "\x01")
        assert_clear_error(caught.value, bad_relation + "\x01")
        relation = f"{quote_identifier(schema)}.{quote_identifier(name)}"
        try:
            install(db, ptable_relation=relation)
        except Exception as exc:  # noqa: BLE001
            assert_clear_error(exc, schema, name, relation)
        else:
            event("round trip")
            con = duckdb.connect(str(db), read_only=True)
            try:  # the installed macros use that ptable: a cell of 1 record with key 0 gets row 1's noise
                assert con.execute("select sdc_ckm(1, 0)").fetchone()[0] is not None
            finally:
                con.close()
        assert_no_side_effect(db)


@slow(3)
@given(value=hostile_text.filter(lambda s: "\x00" not in s and not s.startswith("-")),
       option=st.sampled_from(["--modulus", "--reuse-from", "--ptable-relation", "--ptable"]))
def test_sql_install_cli_with_hostile_option_values(value, option):
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        db = Path(tmp) / "wh.duckdb"
        canary_table(db)
        result = run_cli("sql", "install", "--db", str(db), f"{option}={value}")
        assert not assert_cli_result(result, "sql", value)
        assert_no_side_effect(db)


# ------------------------------------------------------------------------------------------ dbt macro arguments
@SLOW
@given(dims=st.lists(hier_codes, min_size=2, max_size=2, unique_by=str.lower), leaf_codes=st.lists(hier_codes,
       min_size=1, max_size=10, unique=True), root=hier_codes, manual=names)
def test_dbt_macros_with_hostile_dimension_names_codes_and_manual_rule(dims, leaf_codes, root, manual):
    """ckm_count, suppression_cells, suppression_constraints and suppression_cells_from_aggregate with hostile
    dims, a hierarchy keyed by a hostile dimension name with hostile codes, and suppression_primary with a hostile
    manual rule, in a scratch dbt project (arguments written as the CLI writes them: Python repr)."""
    # names the macros refuse by design (their own columns, the record key, level suffixes): the own-column test
    own = {c.lower() for c in (*CKM_OWN_COLUMNS, *SUPPRESSION_OWN_COLUMNS, RECORD_KEY_COLUMN, "id")}
    assume(root not in leaf_codes and root != "plain" and not any(
        d.lower() in own or re.fullmatch("top_[0-9]+", d.lower()) or "__level_" in d.lower() or d.lower().endswith("__leaf")
        for d in dims))
    leaf_codes = ["plain", *leaf_codes]
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        p = ScratchProject(Path(tmp) / "project")
        micro = Path(tmp) / "m.csv"
        cells = microdata(micro, dims, [leaf_codes, ["a", "b"]])
        con = duckdb.connect(str(p.db))
        canary_table(con)
        con.execute("create schema raw")
        con.execute(f"create table raw.m as select {', '.join(quote_identifier(d) for d in dims)}, "
                    f"cast(key as bigint) as rk from read_csv({quote_path(micro)}, all_varchar = true)")
        # an aggregate table, made here: hostile names written into a model file would be read as Jinja
        con.execute(f"create table raw.leaf_counts as select {', '.join(quote_identifier(d) for d in dims)}, "
                    "count(*) as freq from raw.m group by all")
        con.close()
        with (p.root / "seeds" / "sdc_hierarchies.csv").open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle, lineterminator="\n").writerows(
                [["dimension", "code", "parent"], [dims[0], root, ""]] + [[dims[0], c, root] for c in leaf_codes])
        p.sources(["m", "leaf_counts"])
        p.model("cells", f"{{{{ sdc.ckm_count(source('raw', 'm'), dims={dims!r}, hierarchy=ref('sdc_hierarchies')) }}}}")
        h = "hierarchy=ref('sdc_hierarchies')"
        p.model("supp_cells", f"{{{{ sdc.suppression_cells(source('raw', 'm'), dims={dims!r}, {h}) }}}}")
        p.model("supp_relations", f"{{{{ sdc.suppression_constraints(ref('supp_cells'), {dims!r}, {h}) }}}}")
        dim_sql = ", ".join(quote_identifier(d) for d in dims)
        p.model("agg_cells", f"{{{{ sdc.suppression_cells_from_aggregate(source('raw', 'leaf_counts'), {dims!r}, {h}) }}}}")
        result = p.dbt("build")
        assert result.returncode == 0, result.stdout[-3000:]
        expected = expected_counts(cells, [root, TOTAL_LABEL])
        got = {tuple(r[:2]): r[2] for r in query(p.db, f"select {dim_sql}, original from main.cells")}
        # the complete frame adds the hierarchy's leaves without records as 0 (a leaf the cycling codes miss)
        assert {c: n for c, n in got.items() if n} == expected
        assert all(c[0] in (*leaf_codes, root) and c[1] in ("a", "b", TOTAL_LABEL) for c, n in got.items() if not n)
        for table in ("supp_cells", "agg_cells"):
            assert {tuple(r[:2]): r[2] for r in query(p.db, f"select {dim_sql}, freq from main.{table}") if r[2]} == expected
        # the relations name each dimension as itself, and every one holds: parent = sum of its children
        assert {r[0] for r in query(p.db, "select distinct dimension from main.supp_relations")} == set(dims)
        assert query(p.db, f"select constraint_id from main.supp_relations join main.supp_cells using ({dim_sql}) "
                           "group by all having sum(coefficient * freq) <> 0") == []
        # a manual rule on a hostile name is a compile error that names the rule (only plain names are columns)
        p.model("supp_primary", f"{{{{ sdc.suppression_primary(ref('supp_cells'), ['freq:3', {('manual:' + manual)!r}]) }}}}")
        result = p.dbt("build", "--select", "supp_primary")
        assert result.returncode != 0
        if not PLAIN.match(manual):
            assert "suppression_primary: rule" in result.stdout, result.stdout[-2000:]
        assert_no_side_effect(p.db)


# ------------------------------------------------------------------------------------------ magnitude CKM
def _nums_ptable_file(folder: Path, name: str = "nums.csv") -> Path:
    from sdc.ptable.nums import NumsPTableParams, NumsPTableSet, create_num_ptable, write_nums_ptable

    path = folder / name
    write_nums_ptable(NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=5, V=1)).table}), path)
    return path


MAGNITUDE = {"type": "top_contr", "top_k": 2,
             "multiplier": {"type": "simple", "p": 0.1, "epsilon": [1, 0.5]}}


@MEDIUM
@given(value=names, weight=names, codes_=st.lists(codes, min_size=1, max_size=4, unique=True))
def test_sum_and_weighted_count_with_hostile_value_weight_names_and_codes(value, weight, codes_):
    """sum_table and count_table(weight=) with hostile value and weight column names and hostile codes: the
    codes come back as themselves with the right sums, or the names are refused clearly before any work."""
    import pandas as pd

    from sdc.ckm import count_table
    from sdc.ckm import sum_table

    assume(len({value.lower(), weight.lower(), "region", "rk"}) == 4)
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        n = 40
        df = pd.DataFrame({"region": [codes_[k % len(codes_)] for k in range(n)],
                           value: [float(k % 9) for k in range(n)], weight: [1.0 + k % 3 for k in range(n)],
                           "rk": [(k * 1_654_321 + 12_345) % 10**8 for k in range(n)]})
        nums = _nums_ptable_file(tmp)
        try:
            got = sum_table(df, ["region"], value=value, weight=weight, record_key="rk", modulus=10**8,
                            params=MAGNITUDE, ptable=nums, check_keys=False, audit=True)
        except SdcError as exc:
            assert_clear_error(exc, value, weight, *codes_)
        else:
            truth = df.groupby("region")[value].sum()
            inner = got[got["region"] != TOTAL_LABEL].set_index("region")
            assert set(inner.index) == set(codes_) - {TOTAL_LABEL} or TOTAL_LABEL in codes_
            for code in inner.index:
                assert float(inner.loc[code, "original_value"]) == truth[code]
        try:
            counted = count_table(df, ["region"], record_key="rk", modulus=10**8, ptable=DEMO_PTABLE, weight=weight,
                                  weighted_count="mean_weight", check_keys=False, audit=True)
        except SdcError as exc:
            assert_clear_error(exc, weight, *codes_)
        else:
            sums = df.groupby("region")[weight].sum()
            for row in counted[counted["region"] != TOTAL_LABEL].itertuples(index=False):
                assert float(row.original_weighted_count) == sums[row.region]
        assert_no_side_effect()


@FAST
@given(where=st.sampled_from(["type", "preset", "sensitive", "multiplier_type", "name", "ptable"]), text=hostile_text)
def test_magnitude_parameters_with_hostile_values_are_refused_clearly(where, text):
    """Hostile text in any parameter of the YAML file (or the dict) is refused with a clear message; the
    sensitivity rules are parsed, never pasted into SQL."""
    from sdc.ckm.params import parse_params

    params = {"type": "top_contr", "top_k": 1, "multiplier": {"type": "flex", "fp": 100, "p": [0.3, 0.05],
                                                              "epsilon": [1], "q": 3}}
    if where == "multiplier_type":
        params["multiplier"]["type"] = text
    elif where == "sensitive":
        params["sensitive"] = [text]
    elif where == "name":
        params[text] = 1
    elif where == "ptable":
        params["ptable"] = text
    else:
        params[where] = text
    try:
        parsed = parse_params(params)
    except SdcError as exc:
        assert_clear_error(exc, text)
    else:  # only a ptable name can be any text: it names a file, read as that file
        assert where == "ptable" and str(parsed.ptable).endswith(text.split("/")[-1]) or parsed.ptable is not None
    assert_no_side_effect()


@slow(1)
@given(value=names, out_name=file_names)
def test_ckm_cli_magnitude_with_hostile_value_name_and_file_names(value, out_name):
    """sdc ckm --value/--weight/--params with a hostile value column and hostile names of the input, the
    parameters file, the ptable it names and the output: the table comes out with the true sums, or one line
    of error and no output."""
    assume(value.lower() not in ("region", "key", "id", "w") and "\n" not in value and "\r" not in value)
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        rows = [["a" if k % 3 else "b", str(k), str((k * 1_654_321 + 12_345) % 10**8), str(k % 7), str(1 + k % 2)]
                for k in range(60)]
        write_csv(tmp / f"{out_name}.in.csv", ["region", "id", "key", value, "w"], rows)
        _nums_ptable_file(tmp, f"{out_name}.nums.csv")
        (tmp / f"{out_name}.yml").write_text(yaml.safe_dump({**MAGNITUDE, "ptable": f"{out_name}.nums.csv"}))
        out = tmp / f"{out_name}.csv"
        result = run_cli("ckm", "--input", str(tmp / f"{out_name}.in.csv"), "--dims", "region", "--record-key", "key",
                         "--key-digits", "8", "--value", value, "--weight", "w", "--params", str(tmp / f"{out_name}.yml"),
                         "--audit", "--out", str(out))
        if assert_cli_result(result, "ckm", value, out_name):
            table = {r[0]: r for r in read_csv(out)[1:]}
            header = read_csv(out)[0]
            assert header[:4] == ["region", "value", "weighted_value", "records"]
            original = header.index("original_value")
            assert float(table["a"][original]) == sum(int(r[3]) for r in rows if r[0] == "a")
        else:
            assert not out.exists()
        assert_no_side_effect()


# ------------------------------------------------------------------------------------------ warehouse targets
def _duckdb_profile(folder: Path, db: Path) -> None:
    (folder / "profiles.yml").write_text(f"census:\n  target: duck\n  outputs:\n    duck:\n      type: duckdb\n"
                                         f"      path: {json.dumps(str(db))}\n")


@slow(6)
@given(value=hostile_text.filter(lambda s: "\x00" not in s),
       option=st.sampled_from(["--cells", "--relations", "--pattern", "--audit-table", "--dims", "--profile",
                               "--target"]))
def test_suppress_target_cli_with_hostile_option_values(value, option):
    """`sdc suppress --target` against a DuckDB target (profiles.yml) with one hostile option: the canary
    table is no cell table, so every run ends in one line of error, and nothing the text says runs."""
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        db = tmp / "wh.duckdb"
        canary_table(db)
        _duckdb_profile(tmp, db)
        options = {"--target": "duck", "--profile": "census", "--cells": "main.canary", "--relations": "main.canary",
                   "--pattern": "main.pattern_out", "--audit-table": "main.audit_out", "--dims": "status"}
        options[option] = value
        result = run_cli("suppress", "--profiles-dir", str(tmp), *[f"{k}={v}" for k, v in options.items()])
        assert not assert_cli_result(result, "suppress", value)
        assert_no_side_effect(db)
        con = duckdb.connect(str(db), read_only=True)
        try:
            assert {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()} == {"canary"}
        finally:
            con.close()


@slow(4)
@given(value=hostile_text.filter(lambda s: "\x00" not in s), option=st.sampled_from(["--profile", "--target"]))
def test_load_target_cli_with_hostile_profile_and_target_names(value, option):
    """A profile or target name is looked up in profiles.yml, never read as a path or SQL."""
    with tempfile.TemporaryDirectory(dir=CANARY_DIR) as tmp:
        tmp = Path(tmp)
        db = tmp / "wh.duckdb"
        canary_table(db)
        _duckdb_profile(tmp, db)
        write_csv(tmp / "m.csv", ["id", "a"], [[str(k), "x"] for k in range(5)])
        options = {"--target": "duck", "--profile": "census"}
        options[option] = value
        result = run_cli("load", "--profiles-dir", str(tmp), "--input", str(tmp / "m.csv"), "--table", "m", "--id", "id",
                         *[f"{k}={v}" for k, v in options.items()])
        if assert_cli_result(result, "load", value):  # only a name that is the real one (e.g. ' duck'?) loads
            assert value.strip() in ("duck", "census")
        assert_no_side_effect(db)


# ------------------------------------------------------------------------------------------ the publication gate
# Issue 25, section 1: a tagged view that reads raw microdata or an audit relation, in any SQL shape and any
# spelling of the name, is refused by sdc publish (the gate parses the view's SQL from the warehouse).
LEAKS = ["raw.persons", '"raw"."persons"', "RAW.PERSONS", '"RAW"."Persons"', "gatewh.raw.persons", "raw . persons",
         "main_audit.ckm_persons", '"main_audit"."CKM_PERSONS"', "gatewh.main_audit.ckm_persons"]
SHAPES = [
    "select count(*) as n from {leak}",
    "select (select count(*) from {leak}) as n from protected.persons",
    "with x as (select * from {leak}) select count(*) as n from x",
    "with persons as (select * from {leak}) select count(*) as n from persons",
    "select count(*) as n from protected.persons where exists (select 1 from {leak})",
    "select n from (select count(*) as n from {leak}) as s",
    "select count(*) as n from protected.persons, lateral (select * from {leak} limit 1) as l",
    "select count(*) as n from protected.persons where sex in (select sex from {leak})",
    "select count(*) as n from protected.persons union all select count(*) from {leak}",
    "select count(*) as n from protected.persons as p join {leak} as a on p.sex = a.sex",
    "/* from protected.persons */ select count(*) as n from {leak} -- protected",
]


@pytest.fixture(scope="module")
def gate_warehouse(tmp_path_factory):
    """raw.persons (sdc load), an audit relation and a protected table with hand-made build records of the steps
    ckm_count and ckm_published, as macros/build_record.sql writes them."""
    from test_publish import made_audit_parent, node, record_build, write_manifest

    root = tmp_path_factory.mktemp("hostile_gate")
    micro = root / "persons.csv"
    micro.write_text("id,sex\n" + "".join(f"{i},{'mw'[i % 2]}\n" for i in range(60)))
    db = root / "gatewh.duckdb"
    load_microdata(db, micro, "persons", id_column="id", key_mode="keyed", secret=b"hostile gate secret")
    con = duckdb.connect(str(db))
    made_audit_parent(con)
    con.execute("create schema main_audit")
    con.execute("create table main_audit.ckm_persons as select sex, count(*) as original, count(*) as count "
                "from raw.persons group by sex")
    record_build(con, "main_audit", "ckm_persons", step="ckm_count", reads=[])
    con.execute("create schema protected")
    con.execute("create table protected.persons as select sex, count from main_audit.ckm_persons")
    record_build(con, "protected", "persons", reads=[{"database": "gatewh", "schema": "main_audit", "name": "ckm_persons"}])
    canary_table(con)
    con.close()
    nodes = {"model.p.persons": node("persons", "protected", "gatewh"),
             "model.p.v": node("v", "protected", "gatewh", macros=(), materialized="view")}
    return db, write_manifest(root / "manifest.json", nodes)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.sampled_from(SHAPES), leak=st.sampled_from(LEAKS))
def test_a_published_view_that_reads_raw_or_audit_data_in_any_shape_is_refused(gate_warehouse, tmp_path, shape, leak):
    db, manifest = gate_warehouse
    con = duckdb.connect(str(db))
    try:
        con.execute(f"create or replace view protected.v as {shape.format(leak=leak)}")
    finally:
        con.close()
    out = tmp_path / f"pub-{abs(hash((shape, leak)))}.duckdb"
    with pytest.raises(SdcError) as refused:
        publish(db, out, manifest=manifest)
    message = str(refused.value)
    assert ("is raw microdata" in message or "is an audit relation" in message), message
    assert "refusing to publish protected.v (model.p.v)" in message
    assert_clear_error(refused.value)
    assert not out.exists()
    assert_no_side_effect(db)


# red team 9: Jinja in profiles.yml that reaches for Python's internals, each a way to run `id` or write a file
PROFILE_ESCAPES = [
    "{{ env_var.__globals__['os'].system('id > CANARY') }}",
    "{{ env_var.__init__.__globals__['os'].system('id > CANARY') }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.popen('id > CANARY').read() }}",
    "{{ lipsum.__globals__['os'].system('id > CANARY') }}",
    "{{ (env_var | attr('__globals__'))['os'].system('id > CANARY') }}",
]


@pytest.mark.parametrize("escape", PROFILE_ESCAPES)
@pytest.mark.parametrize("command", ["load", "suppress"])
def test_profile_jinja_is_sandboxed_as_dbt_renders_it(tmp_path, escape, command):
    """profiles.yml is rendered in a sandbox, as dbt does: a template that reaches for Python's internals is one
    line of error naming the unsafe attribute, runs nothing, and no warehouse is opened or made."""
    escape = escape.replace("CANARY", str(CANARY_FILE))
    (tmp_path / "profiles.yml").write_text("census:\n  target: duck\n  outputs:\n    duck:\n      type: duckdb\n"
                                           f"      path: \"{tmp_path}/w{escape}.duckdb\"\n")
    write_csv(tmp_path / "m.csv", ["id", "a"], [[str(k), "x"] for k in range(5)])
    args = (["load", "--input", str(tmp_path / "m.csv"), "--table", "m", "--id", "id"] if command == "load" else
            ["suppress", "--cells", "main.c", "--relations", "main.r", "--pattern", "main.p", "--dims", "a"])
    result = run_cli(*args, "--target", "duck", "--profile", "census", "--profiles-dir", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    line, = result.stderr.strip().splitlines()
    assert line.startswith(f"sdc {command}: error: {tmp_path / 'profiles.yml'}: refused, ") and "unsafe" in line, line
    assert "__" in line  # the attribute it refused
    assert not CANARY_FILE.exists() and not list(tmp_path.glob("*.duckdb"))


def test_profile_jinja_keeps_what_dbt_offers(tmp_path, monkeypatch):
    """The sandbox keeps env_var (with a default) and dbt's filters: the demo's kind of profile reads as before."""
    from sdc.warehouse.profiles import read_target

    monkeypatch.setenv("SDC_TEST_PG_PORT", "6543")
    (tmp_path / "profiles.yml").write_text(
        "census:\n  target: pg\n  outputs:\n    pg:\n      type: postgres\n"
        "      host: \"{{ env_var('SDC_TEST_UNSET_HOST', '127.0.0.1') }}\"\n"
        "      port: \"{{ env_var('SDC_TEST_PG_PORT') | as_number }}\"\n"
        "      user: \"{{ 'sdc' ~ '_dbt' | as_text }}\"\n")
    # as dbt: as_number makes the value a number, a value without such a filter stays text
    assert read_target(tmp_path, "census") == {"type": "postgres", "host": "127.0.0.1", "port": 6543,
                                               "user": "sdc_dbt"}


def _suppression_warehouse(folder: Path) -> Path:
    """A DuckDB warehouse as `sdc load` and the suppression macros leave it: raw.persons with its key store and
    the load log, and main.supp_primary / main.supp_relations (suppression_primary, suppression_constraints)."""
    from sdc.warehouse.macro_renderer import Relation, render_macro, run_sql

    db = folder / "wh.duckdb"
    write_csv(folder / "persons.csv", ["id", "state", "sex"],
              [[str(k), "e" if k in (1, 2, 5) else "abcd"[k % 4], "mw"[k // 4 % 2]] for k in range(120)])
    load_microdata(db, folder / "persons.csv", "persons", id_column="id", key_mode="random")
    con = duckdb.connect()
    try:
        con.execute(f"attach {quote_literal(str(db))} as wh")
        con.execute("create table micro as select * from wh.raw.persons")
        made = {"cells": ("suppression_cells", "micro", (["state", "sex"],), {}),
                "primary_cells": ("suppression_primary", "cells", (["freq:3"],), {}),
                "relations": ("suppression_constraints", "cells", (["state", "sex"],), {})}
        for table, (macro, source, args, kwargs) in made.items():
            run_sql(con, f"create table {table} as " + render_macro(con, macro, Relation("memory", "main", source),
                                                                    *args, **kwargs))
        con.execute("create table wh.main.supp_primary as select * from primary_cells")
        con.execute("create table wh.main.supp_relations as select * from relations")
        con.execute("create table wh.main.last_year as select 'kept' as status")
        con.execute("create view wh.main.a_view as select 1 as x")
    finally:
        con.close()
    return db


def _warehouse_state(db: Path) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {name: sorted(map(str, con.execute(f"select * from {name}").fetchall()))
                for name in ("raw.persons", "raw.persons__record_keys", "raw.sdc_loads", "main.last_year")}
    finally:
        con.close()


def test_suppress_target_writes_no_table_it_did_not_write_and_nothing_into_raw(tmp_path):
    """red team 4: `sdc suppress --target` with --pattern / --audit-table naming the raw microdata, the key store,
    the load log (in any letter case), a table or view that sdc suppress did not write: one line, exit 2, every
    table as it was. Its own earlier output (marked by a table comment) is replaced."""
    db = _suppression_warehouse(tmp_path)
    _duckdb_profile(tmp_path, db)
    before = _warehouse_state(db)
    base = ["suppress", "--target", "duck", "--profile", "census", "--profiles-dir", str(tmp_path),
            "--cells", "main.supp_primary", "--relations", "main.supp_relations", "--dims", "state,sex"]
    refused = [
        (["--pattern", "raw.persons", "--audit-table", "raw.sdc_loads"], "--pattern raw.persons: schema raw holds"),
        (["--pattern", "main.p", "--audit-table", "raw.sdc_loads"], "--audit-table raw.sdc_loads: schema raw holds"),
        (["--pattern", "RAW.Persons"], "--pattern RAW.Persons: schema raw holds"),
        (["--pattern", "raw.persons__record_keys"], "schema raw holds the loaded microdata"),
        (["--pattern", "raw.new_table"], "--pattern raw.new_table: schema raw holds"),
        (["--pattern", "main.last_year"], "--pattern main.last_year: a table of that name exists that sdc suppress "
                                          "did not write; it is not replaced"),
        (["--pattern", "Last_Year"], "a table of that name exists that sdc suppress did not write"),
        (["--pattern", "main.p", "--audit-table", "main.a_view"], "--audit-table main.a_view: a view of that name"),
    ]
    for extra, message in refused:
        run = run_cli(*base, *extra)
        assert run.returncode == 2 and "Traceback" not in run.stderr, (extra, run.stderr[-2000:])
        line, = run.stderr.strip().splitlines()
        assert message in line, (extra, line)
        assert _warehouse_state(db) == before
    loads = {"raw.persons": ["2026-01-02 03:04:05"]}  # the cell table's build record, as dbt would write it
    _comment(db, "table main.supp_primary", build_record_comment({"loads": loads, "step": "suppression_primary"}))
    for attempt in (1, 2):  # the second run replaces the tables the first wrote
        run = run_cli(*base, "--pattern", "main.p", "--audit-table", "main.a2")
        assert run.returncode == 0, (attempt, run.stderr[-2000:])
        if attempt == 1:  # the bare mark of a table written before build records: replaced as well
            _comment(db, "table main.p", "written by sdc suppress")
    assert _warehouse_state(db) == before
    con = duckdb.connect(str(db), read_only=True)
    try:
        marks = con.execute("select table_name, comment from duckdb_tables() where table_name in ('p', 'a2') "
                            "order by 1").fetchall()
        cells = con.execute("select count(*) from main.p").fetchone()[0]
    finally:
        con.close()
    # each a build record marked as sdc suppress's, with the loads of the cells it was solved from (new-user D6)
    record = {"written_by": "written by sdc suppress", "cells": "main.supp_primary", "loads": loads}
    assert [(name, build_record_of_comment(comment)) for name, comment in marks] == [("a2", record), ("p", record)]
    assert cells == 18  # 5 states x 2 sexes, their totals and the total: (5 + 1) * (2 + 1)


def _comment(db: Path, relation: str, text: str) -> None:
    con = duckdb.connect(str(db))
    try:
        con.execute(f"comment on {relation} is {quote_literal(text)}")
    finally:
        con.close()


def test_suppress_target_without_a_sensitive_cell_writes_an_empty_audit(tmp_path):
    """A pattern with no sensitive cell has an audit of no rows: written as an empty table (the DuckDB target
    stopped with a traceback on inserting no rows, and its failed rollback hid the cause)."""
    db = _suppression_warehouse(tmp_path)
    _duckdb_profile(tmp_path, db)
    con = duckdb.connect(str(db))
    con.execute("update main.supp_primary set status = 'published' where status = 'primary'")
    con.close()
    run = run_cli("suppress", "--target", "duck", "--profile", "census", "--profiles-dir", str(tmp_path),
                  "--cells", "main.supp_primary", "--relations", "main.supp_relations", "--dims", "state,sex",
                  "--pattern", "main.p", "--audit-table", "main.a")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "wrote 18 cells to main.p: 18 published; audit in main.a: 0 sensitive cells unprotected" in run.stdout
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("select count(*) from main.a").fetchone()[0] == 0
        assert con.execute("select count(*) from main.p where status = 'published'").fetchone()[0] == 18
    finally:
        con.close()
