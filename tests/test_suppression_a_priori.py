"""A-priori cells: the last release's suppression pattern fed into the next (python/sdc/suppression/a_priori.py,
`sdc release a-priori`), so that a revision cannot be differenced against the last release.

The table: regions A, B, C by categories x, y, z, freq:3, cost = frequency. Month 1 suppresses A/x (2 persons)
with the secondaries A/y, B/x, B/y. In month 2 four persons join B/y; every other cell keeps its records. sdc's
heuristic alone would now protect A/x with A/z and B/z and publish A/y = 9, which month 1 hid: a reader of both
months has it, and month 1's protection of A/x rests on it. With month 1's cells a-priori, A/y stays
suppressed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdc.cli import main
from sdc.errors import SdcError
from sdc.suppression.a_priori import a_priori_cells
from sdc.suppression.pipeline import suppressed_table

MONTH_1 = {("A", "x"): 2, ("A", "y"): 9, ("A", "z"): 12, ("B", "x"): 7, ("B", "y"): 8, ("B", "z"): 10,
           ("C", "x"): 11, ("C", "y"): 6, ("C", "z"): 13}
MONTH_2 = {**MONTH_1, ("B", "y"): 12}


def microdata(counts: dict) -> pd.DataFrame:
    return pd.DataFrame([cell for cell, n in counts.items() for _ in range(n)], columns=["region", "kind"])


def pattern(counts: dict, **options) -> dict:
    """The published texts by the heuristic (the case is about what it alone does), or the method named."""
    options = {"method": "heuristic", **options}
    table = suppressed_table(microdata(counts), ["region", "kind"], ["freq:3"], cost="freq", **options)
    return {f"{r}/{k}": text for r, k, text in zip(table.region, table.kind, table.published_text)}


def a_priori_of(counts: dict) -> pd.DataFrame:
    """What `sdc release a-priori` writes of a release that published ``counts``' pattern."""
    table = suppressed_table(microdata(counts), ["region", "kind"], ["freq:3"], cost="freq", method="heuristic")
    return pd.DataFrame({"region": table.region, "kind": table.kind,
                         "status": np.where(table.published_value.isna(), "suppressed", "published"),
                         "value": table.published_value})


SUPPRESSED_IN_MONTH_1 = {"A/x", "A/y", "B/x", "B/y"}


def test_the_heuristic_alone_would_publish_cells_the_last_release_suppressed():
    month_1 = pattern(MONTH_1)
    assert {c for c, t in month_1.items() if t == "x"} == SUPPRESSED_IN_MONTH_1
    month_2 = pattern(MONTH_2)
    assert {c for c, t in month_2.items() if t == "x"} == {"A/x", "A/z", "B/x", "B/z"}
    assert month_2["A/y"] == "9"  # hidden in month 1, records unchanged


@pytest.mark.parametrize("method", ["heuristic", "auto"])
def test_the_last_release_s_suppressed_cells_stay_suppressed(method):
    """Also under 'auto', which solves a table this small by the MILP."""
    month_2 = pattern(MONTH_2, a_priori=a_priori_of(MONTH_1), method=method)
    assert {c for c, t in month_2.items() if t == "x"} == SUPPRESSED_IN_MONTH_1
    # the changed totals are published with their new values
    assert (month_2["B/Total"], month_2["Total/y"], month_2["Total/Total"]) == ("29", "27", "82")


def test_a_cell_the_last_release_published_is_never_a_secondary_suppression():
    """A/y gains 4 persons: alone, the heuristic then hides B/z (10, published in month 1 and unchanged) in
    place of B/y. B/z's value is public: hiding it protects nothing. With the a-priori cells B/z stays published
    and the pattern finds its protection elsewhere; it still passes sdc's own audit (protect_cells refuses to
    return a pattern that does not)."""
    grown = {**MONTH_1, ("A", "y"): 13}
    assert pattern(grown)["B/z"] == "x"
    with_a_priori = pattern(grown, a_priori=a_priori_of(MONTH_1))
    assert with_a_priori["B/z"] == "10"
    assert with_a_priori["A/x"] == "x"


def test_a_published_cell_whose_value_changed_carries_no_constraint():
    cells = [{"region": "B", "kind": "z", "value": 12.0, "status": "published"}]
    rows = [{"region": "B", "kind": "z", "status": "published", "value": "10"}]
    found = a_priori_cells(cells, ["region", "kind"], rows)
    assert not found.known.any() and not found.suppressed.any()
    found = a_priori_cells(cells, ["region", "kind"], [{**rows[0], "value": "12"}])
    assert found.known.tolist() == [True]


def test_a_priori_cells_of_which_none_is_a_cell_of_the_table_are_refused():
    """Codes of another type (a seed that read "01" as 1) would match nothing and keep nothing: refused."""
    cells = [{"region": "01", "kind": "x", "value": 2.0, "status": "primary"}]
    with pytest.raises(SdcError, match=r"none of the 1 rows is a cell of this table \(codes compared as text, e.g. "
                                       r"region=1, kind='x' against region='01', kind='x'\)"):
        a_priori_cells(cells, ["region", "kind"], [{"region": 1, "kind": "x", "status": "suppressed", "value": None}])


@pytest.mark.parametrize("rows, message", [
    ([{"region": "A", "status": "published", "value": 1}], r"no column 'kind' \(they need the table's dimensions "
                                                            r"region, kind, status and value"),
    ([{"region": "A", "kind": "x", "status": "hidden", "value": None}],
     r"row 1 \(region='A', kind='x'\) has status 'hidden'; it must be one of suppressed, published"),
    ([{"region": "A", "kind": "z", "status": "published", "value": ""}],
     r"the published cell \(region='A', kind='z'\) has no number in value"),
    ([{"region": "A", "kind": "x", "status": "suppressed", "value": None}] * 2,
     r"the cell \(region='A', kind='x'\) is listed twice"),
])
def test_bad_a_priori_cells_are_refused_naming_the_row(rows, message):
    cells = [{"region": "A", "kind": "x", "value": 2.0, "status": "primary"},
             {"region": "A", "kind": "z", "value": 12.0, "status": "published"}]
    with pytest.raises(SdcError, match=message):
        a_priori_cells(cells, ["region", "kind"], rows)


def test_sdc_suppress_reads_a_priori_cells_from_a_file(tmp_path, capsys):
    data, last = tmp_path / "month2.csv", tmp_path / "a_priori.csv"
    microdata(MONTH_2).to_csv(data, index=False)
    a_priori_of(MONTH_1).to_csv(last, index=False)
    out = tmp_path / "protected.csv"
    assert main(["suppress", "--input", str(data), "--dims", "region,kind", "--rule", "freq:3", "--cost", "freq",
                 "--a-priori", str(last), "--out", str(out)]) == 0
    table = pd.read_csv(out, dtype=str)
    hidden = {f"{r}/{k}" for r, k, t in zip(table.region, table.kind, table.published_text) if t == "x"}
    assert hidden == SUPPRESSED_IN_MONTH_1
    assert main(["suppress", "--input", str(data), "--dims", "region,kind", "--rule", "freq:3",
                 "--a-priori", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "other.csv")]) == 2
    assert "missing.csv" in capsys.readouterr().err and not (tmp_path / "other.csv").exists()


def test_sdc_suppress_target_keeps_the_last_pattern_of_a_warehouse_s_cell_table(tmp_path, capsys):
    """`sdc suppress --target` (engines without dbt Python models) with --a-priori: the module's two months on a
    warehouse's cell table (a DuckDB target)."""
    import duckdb

    from sdc.warehouse.macro_renderer import Relation, render_macro

    db = tmp_path / "warehouse.duckdb"
    (tmp_path / "profiles.yml").write_text(f"office:\n  target: duck\n  outputs:\n    duck:\n      type: duckdb\n"
                                           f"      path: {db}\n")

    def solve(counts: dict, a_priori=None) -> dict:
        con = duckdb.connect(str(db))
        con.register("persons_frame", microdata(counts))
        con.execute("create or replace table persons as select * from persons_frame")
        cells = render_macro(con, "suppression_cells", Relation(None, "main", "persons"), ["region", "kind"])
        con.execute(f"create or replace table cells as {cells}")
        primary = render_macro(con, "suppression_primary", Relation(None, "main", "cells"), ["freq:3"])
        relations = render_macro(con, "suppression_constraints", Relation(None, "main", "cells"), ["region", "kind"])
        con.execute(f"create or replace table supp_primary as {primary}")
        con.execute(f"create or replace table supp_relations as {relations}")
        con.close()
        assert main(["suppress", "--target", "duck", "--profile", "office", "--profiles-dir", str(tmp_path),
                     "--cells", "main.supp_primary", "--relations", "main.supp_relations", "--pattern",
                     "main.supp_pattern", "--dims", "region,kind", "--cost", "freq", "--method", "heuristic"]
                    + (["--a-priori", str(a_priori)] if a_priori else [])) == 0
        con = duckdb.connect(str(db), read_only=True)
        found = {f"{r}/{k}": t for r, k, t in con.execute("select region, kind, published_text from supp_pattern")
                 .fetchall()}
        con.close()
        return found

    month_1 = solve(MONTH_1)
    hidden_1 = {c for c, t in month_1.items() if t == "x"}
    assert hidden_1 == SUPPRESSED_IN_MONTH_1
    assert solve(MONTH_2)["A/y"] == "9"
    last = tmp_path / "a_priori.csv"
    last.write_text("region,kind,status,value\n" + "".join(
        f"{c.split('/')[0]},{c.split('/')[1]},{'suppressed' if t == 'x' else 'published'},{'' if t == 'x' else t}\n"
        for c, t in month_1.items()))
    month_2 = solve(MONTH_2, a_priori=last)
    assert {c for c, t in month_2.items() if t == "x"} == hidden_1
    assert month_2["B/Total"] == "29" and month_2["Total/Total"] == "82"
    capsys.readouterr()


HOSTILE_CODES = ["x'; drop table cells; --", 'line\nbreak "q"', "*.csv", "../..", "select"]


def test_hostile_codes_and_relation_names_are_text_never_sql(tmp_path, capsys):
    """Codes with quotes, ';', newlines, globs and '..' go through an a-priori file as text and match their cells;
    a hostile relation name for sdc release a-priori is only looked up, and the ledger stays as it was."""
    import json

    from sdc.release.ledger import LedgerCell, open_ledger, record_release

    counts = {(code, kind): n for code, (kind, n) in zip(HOSTILE_CODES, [("x", 2), ("y", 9), ("x", 7), ("y", 8),
                                                                        ("x", 11)])}
    counts.update({(code, "y" if kind == "x" else "x"): 10 for code, kind in list(counts)})
    month_1 = pattern(counts)
    hidden = {c for c, t in month_1.items() if t == "x"}
    assert f"{HOSTILE_CODES[0]}/x" in hidden  # the cell of 2 persons, and its secondaries
    last = tmp_path / "a_priori.csv"
    a_priori_of(counts).to_csv(last, index=False)
    assert {c for c, t in pattern(counts, a_priori=str(last)).items() if t == "x"} == hidden

    ledger = tmp_path / "ledger.duckdb"
    con = open_ledger(ledger, create=True)
    record_release(con, [LedgerCell("protected.t", json.dumps({"region": HOSTILE_CODES[0]}),
                                    json.dumps({"freq": None, "published_text": "x"}), "r", "p")],
                   {}, {"published_at": "then"}, "p.duckdb", [])
    con.close()
    before = ledger.read_bytes()
    for name in HOSTILE_CODES:
        assert main(["release", "a-priori", name, "--ledger", str(ledger), "--out", str(tmp_path / "out.csv")]) == 2
        assert "published no relation" in capsys.readouterr().err
    assert ledger.read_bytes() == before and not (tmp_path / "out.csv").exists()
    assert main(["release", "a-priori", "t", "--ledger", str(ledger), "--out", str(tmp_path / "out.csv")]) == 0
    capsys.readouterr()
    written = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    assert written.to_dict("records") == [{"region": HOSTILE_CODES[0], "status": "suppressed", "value": ""}]


@pytest.mark.parametrize("method", ["optimal", "auto", "heuristic"])
def test_a_cell_kept_from_the_last_release_is_not_left_recomputable_by_the_milp(method):
    """Review of issue 50's auto: the MILP gave a cell kept suppressed from the last release no requirement, so it
    could leave it the only suppressed cell of its row (10 recomputed exactly). It now needs one unit of movement,
    down where its bounds allow, as the heuristic's witness for it; the attacker's interval is [5, 11] either way."""
    from sdc.suppression import SuppressionProblem
    from sdc.suppression.secondary import secondary_suppression

    inner = np.array([[2, 7, 50], [6, 8, 9], [40, 3, 10]], float)
    full = np.vstack([np.hstack([inner, inner.sum(1, keepdims=True)]), np.hstack([inner.sum(0), inner.sum()])])
    index = np.arange(16).reshape(4, 4)
    relations = [[(int(index[r, 3]), 1.0)] + [(int(index[r, c]), -1.0) for c in range(3)] for r in range(4)]
    relations += [[(int(index[3, c]), 1.0)] + [(int(index[r, c]), -1.0) for r in range(3)] for c in range(4)]
    primary, kept = np.zeros(16, bool), np.zeros(16, bool)
    primary[index[0, 0]], kept[index[2, 2]] = True, True
    values = full.ravel()
    problem = SuppressionProblem.from_arrays(values, relations, primary, primary * 1.0, primary * 1.0, values,
                                             lower=np.ones(16), magnitude=False, forced_suppressed=kept)
    pattern = secondary_suppression(problem, method, intervals="all")
    cell = pattern.interval(int(index[2, 2]))
    assert (cell.feasible_lower, cell.feasible_upper) == (5.0, 11.0)
    assert pattern.method == ("heuristic" if method == "heuristic" else "optimal")
