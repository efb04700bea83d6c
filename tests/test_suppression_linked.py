"""Linked tables protected by one pattern (sdc.suppression.linked, linked_tables), and the progress and CPU time
limit of long solves, on the linked-tables example of GaussSuppression's vignette (tests/data/linked_example1.csv;
reference linked-suppression.md LT-1): age x eu x year and geo x year of one microdata set, frequency <= 2 primary
(sdc's freq:3: fewer than 3).

The audit of these tests is the LP (and integer) audit over the union of both tables' equations, each cell once
(a cell is the set of records it holds), built here from the tables' cells: a pattern passes only when no primary
cell of either table can be narrowed below its protection interval by what both tables publish."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sdc.errors import SdcError
from sdc.suppression import suppressed_linked_tables, suppressed_table
from sdc.suppression.audit import a_priori_lower, audit_pattern, default_upper
from sdc.suppression.linked import link_tables
from sdc.suppression.linked_tables import linked_cells
from sdc.suppression.pipeline import registered_microdata
from sdc.warehouse.macro_renderer import private_connection

DATA = Path(__file__).parent / "data" / "linked_example1.csv"
TABLES = [["age", "eu", "year"], ["geo", "year"]]
NAMES = ["age_eu_year", "geo_year"]
RULES = ["freq:3"]
# the primary cells (reference LT-1): all of value 2 but Portugal-2014 = 1
PRIMARY = ({("Total", "nonEU", "2015"), ("Total", "nonEU", "2016"), ("young", "Total", "2015"),
            ("young", "nonEU", "2015"), ("young", "nonEU", "2016")},
           {("Iceland", "2015"), ("Iceland", "2016"), ("Portugal", "2014"), ("Portugal", "2016")})
# GaussSuppression's secondary suppressions per mode (reference LT-1, its table of modes)
T1_SECONDARY = {("Total", "Total", "2015"), ("Total", "Total", "2016"), ("young", "Total", "2016")}
GAUSS_PATTERNS = {
    "local": (T1_SECONDARY, {("Iceland", "2014"), ("Portugal", "2015")}),
    "consistent": (T1_SECONDARY, {("Total", "2015"), ("Total", "2016"), ("Spain", "2014"), ("Spain", "2015")}),
    "super-consistent": (T1_SECONDARY, {("Total", "2015"), ("Total", "2016"), ("Spain", "2014"), ("Spain", "2016")}),
}


@pytest.fixture(scope="module")
def micro() -> pd.DataFrame:
    rows = pd.read_csv(DATA, dtype={"year": str})
    return rows.loc[rows.index.repeat(rows.freq)].drop(columns="freq").reset_index(drop=True)


@pytest.fixture(scope="module")
def union(micro):
    """(per table its cells, the tables as one problem)."""
    with private_connection("test") as con:
        hierarchy = registered_microdata(con, micro, ["age", "eu", "year", "geo"], RULES, None, None, None)
        per_table, linked = linked_cells(con, TABLES, NAMES, RULES, hierarchy, None, None, "handbook")
    return [cells for cells, _ in per_table], linked


def codes(cell: dict, dims: list[str]) -> tuple:
    return tuple(str(cell[d]) for d in dims)


def union_audit(union, suppressed_in_table):
    """The audit over both tables' equations of the pattern ``suppressed_in_table(t, codes) -> bool``: a cell is
    suppressed when no table publishes it (one that publishes it gives it away)."""
    cells, linked = union
    suppressed = np.array([all(suppressed_in_table(t, codes(cells[t][k], TABLES[t])) for t, k in rows)
                           for rows in linked.instances])
    values = np.array([c["value"] for c in linked.cells], dtype=float)
    freq = np.array([c["freq"] for c in linked.cells], dtype=float)
    return audit_pattern(values, suppressed, linked.relations,
                         sensitive=[c["status"] == "primary" for c in linked.cells],
                         protection_lower=[float(c["protection_lower"]) for c in linked.cells],
                         protection_upper=[float(c["protection_upper"]) for c in linked.cells],
                         lower=a_priori_lower(values, freq, magnitude=False), upper=default_upper(values),
                         integer=True)


def intervals_by_name(union, result) -> dict:
    _, linked = union
    return {linked.cells[iv.cell]["label"]: (iv.feasible_lower, iv.feasible_upper) for iv in result.intervals}


def gauss_pattern(mode: str):
    secondary = GAUSS_PATTERNS[mode]
    return lambda t, cell: cell in PRIMARY[t] | secondary[t]


def test_the_tables_share_the_cells_that_hold_the_same_records(micro, union):
    """Record-aware: nonEU-year of the first table is Iceland-year of the second, young-2016 is Total-2016 (no old
    person in 2016), young-2015 is nonEU-2015; the 29 + 16 cells are as many distinct ones as distinct sets of
    records (computed here from the records)."""
    cells, linked = union
    assert [len(c) for c in cells] == [29, 16]

    def records(t, cell):
        rows = micro
        for d, code in zip(TABLES[t], codes(cell, TABLES[t])):
            rows = rows if code == "Total" else rows[rows[d] == code]
        return frozenset(rows.index)
    sets = {records(t, c) for t, table in enumerate(cells) for c in table}
    assert len(linked.cells) == len(sets) == 26
    for rows in linked.instances:
        assert len({records(t, cells[t][k]) for t, k in rows}) == 1
    same = {frozenset((t, codes(cells[t][k], TABLES[t])) for t, k in rows) for rows in linked.instances if len(rows) > 1}
    assert frozenset({(0, ("Total", "nonEU", "2014")), (0, ("young", "nonEU", "2014")), (1, ("Iceland", "2014"))}) in same
    assert frozenset({(0, ("Total", "Total", "2016")), (0, ("young", "Total", "2016")), (1, ("Total", "2016"))}) in same
    assert frozenset({(0, ("Total", "nonEU", "2015")), (0, ("young", "Total", "2015")), (0, ("young", "nonEU", "2015")),
                      (1, ("Iceland", "2015"))}) in same
    primaries = {(t, codes(cells[t][k], TABLES[t])) for u, rows in enumerate(linked.instances) for t, k in rows
                 if linked.cells[u]["status"] == "primary"}
    assert primaries == {(0, c) for c in PRIMARY[0]} | {(1, c) for c in PRIMARY[1]}


def test_gauss_local_pattern_leaks_through_the_other_table(union):
    """'local' (each table alone): T2 publishes Total-2015 that T1 suppresses, and the primaries are pinned."""
    result = union_audit(union, gauss_pattern("local"))
    found = intervals_by_name(union, result)
    assert not result.passed
    assert found["age_eu_year (age='Total', eu='nonEU', year='2015')"] == (2.0, 2.0)
    assert found["age_eu_year (age='Total', eu='nonEU', year='2016')"] == (2.0, 2.0)
    assert found["geo_year (geo='Portugal', year='2014')"] == (1.0, 1.0)
    assert found["geo_year (geo='Portugal', year='2016')"] == (2.0, 2.0)


def test_gauss_consistent_pattern_leaks_the_primaries_the_vignette_names(union):
    """'consistent' (common cells suppressed together): EU-2016 (T1) - Spain-2016 (T2) = Portugal-2016 = 2, and
    from there Spain-2015 = 4, Spain-2014 = 15, Portugal-2014 = 1 (reference LT-1)."""
    result = union_audit(union, gauss_pattern("consistent"))
    found = intervals_by_name(union, result)
    assert not result.passed
    assert found["geo_year (geo='Portugal', year='2014')"] == (1.0, 1.0)
    assert found["geo_year (geo='Portugal', year='2016')"] == (2.0, 2.0)
    assert found["geo_year (geo='Spain', year='2014')"] == (15.0, 15.0)
    assert found["geo_year (geo='Spain', year='2015')"] == (4.0, 4.0)


def test_gauss_super_consistent_pattern_hides_every_cell_but_not_by_the_interval_sdc_asks(union):
    """'super-consistent' (GaussSuppression's default): no suppressed cell is determined, as the vignette says.
    Its intervals are those of the reference where a listed cell may be 0 ([0, 3] for Portugal-2016); an attacker
    who knows a listed cell holds at least one record narrows Portugal-2016 (2) to [1, 2], short of the one
    record above it that sdc's frequency rule asks."""
    result = union_audit(union, gauss_pattern("super-consistent"))
    found = intervals_by_name(union, result)
    assert all(high > low for low, high in found.values())
    assert found["geo_year (geo='Spain', year='2014')"] == (14.0, 15.0)
    assert found["geo_year (geo='Portugal', year='2016')"] == (1.0, 2.0)
    unprotected = [union[1].cells[iv.cell]["label"] for iv in result.intervals if not iv.protected]
    assert unprotected == ["geo_year (geo='Portugal', year='2016')"]


def test_tables_protected_one_by_one_fail_the_audit_of_both(micro, union):
    """sdc's own single-table protection, table by table: each pattern passes its own audit, the two together leak
    (T1 suppresses nonEU-2014, the same records as Iceland-2014, which T2 publishes...)."""
    alone = [suppressed_table(micro, dims, RULES) for dims in TABLES]
    hidden = [{codes(row, dims) for row in table[table.published_text == "x"].to_dict("records")}
              for table, dims in zip(alone, TABLES)]
    result = union_audit(union, lambda t, cell: cell in hidden[t])
    assert not result.passed
    assert "geo_year (geo='Portugal', year='2016')" in [union[1].cells[f.cell]["label"] for f in result.failures]


@pytest.mark.parametrize("method", ["heuristic", "optimal", "gauss"])
def test_linked_protection_gives_shared_cells_one_status_and_passes_the_audit_of_both(micro, union, method):
    tables = suppressed_linked_tables(micro, TABLES, RULES, method=method, audit=True)
    assert list(tables) == NAMES
    status = [{codes(row, dims): row["status"] for row in table.to_dict("records")}
              for table, dims in zip(tables.values(), TABLES)]
    cells, linked = union
    for rows in linked.instances:
        assert len({status[t][codes(cells[t][k], TABLES[t])] for t, k in rows}) == 1
    assert {c for c, s in status[0].items() if s == "primary"} == PRIMARY[0]
    assert {c for c, s in status[1].items() if s == "primary"} == PRIMARY[1]
    result = union_audit(union, lambda t, cell: status[t][cell] in ("primary", "secondary"))
    assert result.passed and result.intervals


def linked_cost(union, tables) -> float:
    """The secondary suppressions' total value, each distinct cell once."""
    cells, linked = union
    status = [{codes(row, dims): row["status"] for row in table.to_dict("records")}
              for table, dims in zip(tables.values(), TABLES)]
    return sum(c["value"] for c, rows in zip(linked.cells, linked.instances)
               if status[rows[0][0]][codes(cells[rows[0][0]][rows[0][1]], TABLES[rows[0][0]])] == "secondary")


def test_the_optimal_linked_pattern_is_the_cheapest_that_protects_both(micro, union):
    """The MILP over both tables: Total-2015 (9), Total-2016 (11, the cell young-2016 of T1 too),
    Spain-2014/2015/2016 (15, 4, 7) and Portugal-2015 (3): cost 49. GaussSuppression's super-consistent pattern
    costs 42 but leaves Portugal-2016 in [1, 2] (test above); the heuristic's pattern costs more."""
    optimal = suppressed_linked_tables(micro, TABLES, RULES, method="optimal", audit=True)
    secondary = {(name, codes(row, dims)) for (name, table), dims in zip(optimal.items(), TABLES)
                 for row in table.to_dict("records") if row["status"] == "secondary"}
    assert secondary == {
        ("age_eu_year", ("Total", "Total", "2015")), ("age_eu_year", ("Total", "Total", "2016")),
        ("age_eu_year", ("young", "Total", "2016")), ("geo_year", ("Portugal", "2015")),
        ("geo_year", ("Spain", "2014")), ("geo_year", ("Spain", "2015")), ("geo_year", ("Spain", "2016")),
        ("geo_year", ("Total", "2015")), ("geo_year", ("Total", "2016"))}
    assert linked_cost(union, optimal) == 9 + 11 + 15 + 4 + 7 + 3
    assert linked_cost(union, suppressed_linked_tables(micro, TABLES, RULES, method="heuristic", audit=True)) > 49
    # the default 'auto' solves tables this small by the MILP, and takes its pattern once proven (issue 50)
    auto = suppressed_linked_tables(micro, TABLES, RULES, audit=True)
    assert all((auto[name].status == optimal[name].status).all() for name in optimal)


def test_linked_tables_write_one_file_per_table_from_the_command_line(micro, tmp_path):
    source = tmp_path / "micro.csv"
    micro.to_csv(source, index=False)
    out = tmp_path / "out"
    out.mkdir()
    sdc = Path(sys.executable).parent / "sdc"
    run = subprocess.run([str(sdc), "suppress", "--input", str(source), "--dims", "age,eu,year", "--dims", "geo,year",
                          "--rule", "freq:3", "--method", "optimal", "--out", str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in out.glob("*.csv")) == ["age_eu_year.csv", "geo_year.csv"]
    geo = pd.read_csv(out / "geo_year.csv", dtype=str, keep_default_na=False)
    assert list(geo.columns) == ["geo", "year", "published_value", "published_text"]
    hidden = set(map(tuple, geo[geo.published_text == "x"][["geo", "year"]].values.tolist()))
    assert hidden == PRIMARY[1] | {("Portugal", "2015"), ("Spain", "2014"), ("Spain", "2015"), ("Spain", "2016"),
                                   ("Total", "2015"), ("Total", "2016")}
    assert "wrote 2 tables to" in run.stdout and "geo_year.csv: 16 cells" in run.stdout


@pytest.mark.parametrize("tables, message", [
    ([["age", "year"]], "at least two tables"),
    ([["age", "year"], ["age", "year"]], "the table 'age_year' is given twice"),
    ([["age", "year"], "geo"], "each table is a non-empty list of column names"),
    ([["age", "year"], ["geo", "nope"]], "column 'nope' is not in"),
])
def test_wrong_tables_are_named(micro, tables, message):
    with pytest.raises(SdcError, match=message):
        suppressed_linked_tables(micro, tables, RULES)


def test_an_out_path_that_is_a_file_is_refused_and_nothing_is_written(micro, tmp_path):
    from sdc.suppression.linked_tables import suppress_linked_tables

    source = tmp_path / "micro.csv"
    micro.to_csv(source, index=False)
    (tmp_path / "out.csv").write_text("keep\n")
    with pytest.raises(SdcError, match="is a file; with several --dims it is a folder"):
        suppress_linked_tables(source, TABLES, RULES, tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text() == "keep\n"


def test_two_tables_that_disagree_on_a_shared_cell_are_refused():
    def cell(value):
        return {"value": value, "freq": value, "status": "published", "rule": None, "protection_lower": 0,
                "protection_upper": 0, "contributors": value}
    with pytest.raises(SdcError, match=r"a \(x='T'\) and b \(y='T'\) hold the same records but differ in value \(9 and 8\)"):
        link_tables([[{**cell(9), "x": "T"}], [{**cell(8), "y": "T"}]], [[], []], [["k"], ["k"]], ["a", "b"],
                    dims=[["x"], ["y"]])


def test_the_last_release_of_one_table_is_kept_in_both(micro):
    """A-priori cells of the geo table: Spain-2015 published last time stays published (never a secondary), and the
    Iceland-2014 it suppressed stays suppressed - in the age table too, as nonEU-2014 and young-nonEU-2014."""
    last = pd.DataFrame({"geo": ["Spain", "Iceland"], "year": ["2015", "2014"], "status": ["published", "suppressed"],
                         "value": [4, None]})
    tables = suppressed_linked_tables(micro, TABLES, RULES, method="optimal", audit=True,
                                      a_priori={"geo_year": last})
    geo = {codes(r, TABLES[1]): r["status"] for r in tables["geo_year"].to_dict("records")}
    age = {codes(r, TABLES[0]): r["status"] for r in tables["age_eu_year"].to_dict("records")}
    assert geo[("Spain", "2015")] == "published"
    assert geo[("Iceland", "2014")] == "secondary"
    assert age[("Total", "nonEU", "2014")] == age[("young", "nonEU", "2014")] == "secondary"
    with pytest.raises(SdcError, match="a-priori cells for 'geo', which is none of the tables"):
        suppressed_linked_tables(micro, TABLES, RULES, a_priori={"geo": last})


def test_the_optimal_time_limit_counts_cpu_not_waiting(micro, monkeypatch):
    """A loaded machine (here: every cut round waits 0.3 s without using the CPU) does not eat the optimal
    method's time limit; measured in wall time, a limit of 0.5 s would stop it after the second round."""
    import time
    import warnings

    import sdc.suppression.optimal as optimal

    found = optimal._violated_cuts

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return found(*args, **kwargs)
    monkeypatch.setattr(optimal, "_violated_cuts", slow)
    with warnings.catch_warnings():
        warnings.simplefilter("error", optimal.TimeLimitWarning)
        tables = suppressed_linked_tables(micro, TABLES, RULES, method="optimal", time_limit=0.5)
    assert int(tables["geo_year"].published_value.isna().sum()) == 10


def test_long_solves_report_their_progress_as_log_records(micro, caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="sdc.suppression"):
        suppressed_linked_tables(micro, TABLES, RULES, method="heuristic")
    rounds = [r for r in caplog.records if r.name == "sdc.suppression.heuristic"]
    assert rounds and rounds[-1].done == rounds[-1].total == 4  # the last round: every sensitive cell protected
    assert any(r.getMessage().startswith("audit: 4 primary cells") for r in caplog.records)


def test_the_command_line_shows_progress_as_a_bar_on_a_terminal_and_as_lines_in_a_log():
    import io
    import logging

    from sdc.cli.suppress import _Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    def record(message, **extra):
        r = logging.LogRecord("sdc.suppression.heuristic", logging.INFO, __file__, 1, message, (), None)
        r.__dict__.update(extra)
        return r
    terminal = Terminal()
    shown = _Progress(terminal)
    shown.emit(record("round 1", done=5, total=20))
    shown.close()
    assert terminal.getvalue().startswith("\r\033[K[#####...............] round 1 (0 s)")
    assert terminal.getvalue().endswith("\r\033[K")  # the line is cleared at the end
    log = io.StringIO()
    lines = _Progress(log)
    lines.emit(record("round 1"))                      # a short solve prints nothing
    lines.next_line = 0.0
    lines.emit(record("round 2"))
    lines.emit(record("round 3"))                      # the next line waits EVERY seconds
    assert log.getvalue().splitlines() == [f"sdc suppress: {float(log.getvalue().split()[2]):6.1f} s round 2"]


def test_linked_mistakes_are_named_and_write_nothing(micro, tmp_path, capsys):
    """Several --dims with --target (one warehouse cell table), --a-priori that is a file instead of a folder of
    one file per table, and a dbt pattern model that names a table it did not list: each refused, naming it."""
    from sdc.cli import main
    from sdc.suppression.warehouse import linked_suppression_pattern

    source = tmp_path / "micro.csv"
    micro.to_csv(source, index=False)
    (tmp_path / "out").mkdir()
    assert main(["suppress", "--target", "duck", "--dims", "age,year", "--dims", "geo,year", "--cells", "main.c",
                 "--relations", "main.r", "--pattern", "main.p"]) == 2
    assert "--target protects one cell table (one --dims); several --dims (linked tables) work on --input" in \
        capsys.readouterr().err
    last = tmp_path / "last.csv"
    last.write_text("geo,year,status,value\nSpain,2015,published,4\n")
    assert main(["suppress", "--input", str(source), "--dims", "age,eu,year", "--dims", "geo,year", "--rule",
                 "freq:3", "--a-priori", str(last), "--out", str(tmp_path / "out")]) == 2
    assert ("with several --dims it is a folder of <table>.csv files (age_eu_year.csv, geo_year.csv)"
            in capsys.readouterr().err)
    assert not list((tmp_path / "out").iterdir())
    with pytest.raises(SdcError, match=r"table 'by_geo' is none of the tables \(by_age\)"):
        linked_suppression_pattern(None, "by_geo", {"by_age": (None, None, ["age"])}, None)
