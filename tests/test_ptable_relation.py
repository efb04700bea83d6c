"""The ptable relation (sdc.ptable.relation) and the numpy reader of files of plain numbers (ONS, Cantabular,
sdc, SAS, τ-Argus).

The relation is built from numpy arrays in one statement; these tests compare it, row for row and type for
type, with a reference made here the slow way (one text per value, as the relation was built before), for
the kinds of table sdc meets: ONS's shipped table, a randomised ONS table (256 keys, each row's noise values
shuffled over the keys, so consecutive keys rarely share one), a 4096-key table, sdc-built tables, τ-Argus
files and magnitude ptables. The numpy reader is compared with the line reader on the same files: the same
table and notes, and where a file is refused, the same message (the numpy reader leaves every file it would
refuse, and every unusual one, to the line reader).
"""

import functools
from decimal import Decimal

import duckdb
import numpy as np
import pytest

from sdc.conventions import NUMS_PTABLE_COLUMNS, PTABLE_COLUMNS
from sdc.errors import SdcError
from sdc.ptable import PTableParams, create_ptable
from sdc.ptable.formats import parse_ptable, read_ptable, render_ptable
from sdc.ptable.nums import NumsPTableParams, combine, create_num_ptable
from sdc.ptable.relation import create_nums_ptable_table, create_ptable_table

from conftest import DATA, ons_10_5_rule

# per row i >= 3: how many of the keys get the noise -2..2 (mean 0); rows 1 and 2 may not go below 0
NOISE_SHARES = {1: {-1: 0.3, 0: 0.4, 1: 0.2, 2: 0.1}, 2: {-2: 0.1, -1: 0.2, 0: 0.4, 1: 0.2, 2: 0.1},
                3: {-2: 0.1, -1: 0.2, 0: 0.4, 1: 0.2, 2: 0.1}}


def random_ons_ptable(rows: int, keys: int, seed: int = 26) -> str:
    """An ONS-format table whose noise values are shuffled over the keys of each row (ONS publishes such
    tables): runs of one noise are short, so the table has about as many intervals as lines."""
    rng = np.random.default_rng(seed)
    lines = ["pcv,ckey,pvalue"]
    for i in range(1, rows + 1):
        shares = NOISE_SHARES[min(i, 3)]
        counts = [round(share * keys) for share in shares.values()]
        counts[list(shares).index(0)] += keys - sum(counts)
        noise = rng.permutation(np.repeat(list(shares), counts))
        lines += [f"{i},{k},{v}" for k, v in enumerate(noise)]
    return "\n".join(lines) + "\n"


def reference_relation(con, name, records, types):
    """The relation from its rows one value at a time: each value as decimal text, cast by DuckDB."""
    con.execute(f"create table {name} ({', '.join(f'{c} {t}' for c, t in types.items())})")
    values = [[str(record[c]) for record in records] for c in types]
    casts = ", ".join(f"cast(unnest(${k}::varchar[]) as {t})" for k, t in enumerate(types.values(), start=1))
    con.execute(f"insert into {name} select {casts}", values)


def count_records(table):
    """PTable rows as PTABLE_COLUMNS with the bounds as exact decimals, computed here from the arrays."""
    def decimal(units):
        return f"{Decimal(int(units)).scaleb(-8):f}"

    return [{"i": int(i), "j": int(j), "p": decimal(ub - lb), "v": int(j) - int(i), "p_int_lb": decimal(lb),
             "p_int_ub": decimal(ub)} for i, j, lb, ub in zip(table.i, table.j, table.lb_units, table.ub_units)]


def assert_same_relation(con, new, reference):
    assert con.execute(f"describe {new}").fetchall() == con.execute(f"describe {reference}").fetchall()
    for a, b in ((new, reference), (reference, new)):
        assert con.execute(f"select count(*) from (select * from {a} except all select * from {b})").fetchone() == (0,)
    assert con.execute(f"select count(*) from {new}").fetchone() == con.execute(f"select count(*) from {reference}").fetchone()


COUNT_TYPES = {"i": "integer", "j": "integer", "p": "decimal(9,8)", "v": "integer", "p_int_lb": "decimal(9,8)",
               "p_int_ub": "decimal(9,8)"}
TAUARGUS = """i;j;p;v;p_int_ub
0;0;1;0;1
1;0;0.3625;-1;0.3625
1;1;0.3625;0;0.725
1;2;0.1875;1;0.9125
1;3;0.0875;2;1
2;0;0.05154609;-2;0.05154609
2;1;0.2;-1;0.25154609
2;2;0.2;0;0.45154609
2;3;0.54845391;1;1
"""


@functools.cache
def random_256():
    return parse_ptable(random_ons_ptable(750, 256))[0]


COUNT_TABLES = {
    "ons shipped": lambda: read_ptable(DATA / "ons" / "ptable_10_5_rule.csv")[0],
    "ons random 256 keys": random_256,
    "ons random 4096 keys": lambda: parse_ptable(random_ons_ptable(12, 4096))[0],
    "sdc built": lambda: create_ptable(PTableParams(D=5, V=3, js=2)).table,
    "sdc file of the random one": lambda: parse_ptable(render_ptable(random_256(), "sdc"))[0],
    "tauargus": lambda: parse_ptable(TAUARGUS)[0],
    "tauargus export": lambda: parse_ptable(render_ptable(create_ptable(PTableParams(D=4, V=2, js=1)).table,
                                                          "tauargus"))[0],
}


@pytest.mark.parametrize("label", COUNT_TABLES)
def test_the_relation_equals_the_one_built_value_by_value(label):
    table = COUNT_TABLES[label]()
    con = duckdb.connect()
    create_ptable_table(con, "new", table)
    reference_relation(con, "reference", count_records(table), COUNT_TYPES)
    assert_same_relation(con, "new", "reference")
    assert [c[0] for c in con.execute("describe new").fetchall()] == list(PTABLE_COLUMNS)


def test_the_random_ons_table_has_short_runs_and_its_bounds_are_exact():
    table = random_256()
    assert len(table) > 140_000  # 192 000 keys, three intervals for every four keys
    con = duckdb.connect()
    create_ptable_table(con, "t", table)
    # key 37 of 256 = 0.14453125 exactly: the interval of row 5 that holds it starts at or below and ends above
    row = con.execute("select p_int_lb, p_int_ub, v from t where i = 5 and p_int_lb <= 0.14453125 "
                      "and 0.14453125 < p_int_ub").fetchall()
    assert len(row) == 1 and row[0][2] == table.lookup(5, 37 / 256)
    assert con.execute("select sum(p) from t where i = 750").fetchone()[0] == Decimal("1.00000000")


def test_magnitude_ptables_equal_the_ones_built_value_by_value():
    tables = combine(create_num_ptable(NumsPTableParams(D=5, V=1, step=4, icat=[1, 3, 5], optim=4)).table,
                     create_num_ptable(NumsPTableParams(D=5, V=1, step=2, type="small_cells", optim=4)).table)
    con = duckdb.connect()
    create_nums_ptable_table(con, "new", tables)
    types = {**COUNT_TYPES, "j": "decimal(18,4)", "v": "decimal(18,4)", "type": "varchar"}
    records = [{"i": int(i), "j": f"{Decimal(int(i) * 10**4 + int(v)).scaleb(-4):f}",
                "p": f"{Decimal(int(ub - lb)).scaleb(-8):f}", "v": f"{Decimal(int(v)).scaleb(-4):f}",
                "p_int_lb": f"{Decimal(int(lb)).scaleb(-8):f}", "p_int_ub": f"{Decimal(int(ub)).scaleb(-8):f}",
                "type": kind}
               for kind in ("all", "small_cells") for table in [tables.tables[kind]]
               for i, v, lb, ub in zip(table.i, table.v_units, table.lb_units, table.ub_units)]
    reference_relation(con, "reference", records, {c: types[c] for c in NUMS_PTABLE_COLUMNS})
    assert_same_relation(con, "new", "reference")
    assert con.execute("select count(*) filter (where v = -0.25), count(distinct type) from new").fetchone() == (3, 2)


def test_a_table_is_read_only_and_its_columns_are_made_once():
    table = parse_ptable(ons_10_5_rule(20))[0]
    with pytest.raises(ValueError, match="read-only"):
        table.lb_units[1] = 5
    assert table.columns is table.columns
    assert table.columns["p"].tolist()[:3] == [100_000_000, 100_000_000, 100_000_000]


# ------------------------------------------------------------------ the numpy reader against the line reader


def line_read(text: str, **kwargs):
    """The line reader's result: a space after the last number (which it strips) keeps numpy out."""
    return parse_ptable(text.rstrip("\n") + " \n", source="t.csv", **kwargs)


@functools.cache
def sdc_built():
    return create_ptable(PTableParams(D=4, V=2, js=1)).table


# without row 0; a p that differs from its interval's width by 10^-6 (allowed); an empty interval (dropped)
HAND_MADE = """i,j,p,v,p_int_lb,p_int_ub
1,0,0.30000100,-1,0,0.3
1,1,0.4,0,0.3,0.7
1,2,0,1,0.7,0.7
1,3,0.3,2,0.7,1
2,2,1,0,0,1
"""
PLAIN_FILES = {
    "ons random 256": lambda: random_ons_ptable(750, 256),
    "ons random 4096": lambda: random_ons_ptable(12, 4096),
    "ons 10_5 rule": lambda: ons_10_5_rule(30),
    "ons 10_5 rule to 750, semicolons": lambda: ons_10_5_rule(750).replace(",", ";"),
    "sdc file with reuse_from": lambda: render_ptable(random_256(), "sdc"),
    "sas file": lambda: render_ptable(sdc_built(), "sas"),
    "tauargus file": lambda: render_ptable(sdc_built(), "tauargus"),
    "tauargus by hand": lambda: TAUARGUS,
    "sdc by hand": lambda: HAND_MADE,
}


@pytest.mark.parametrize("label", PLAIN_FILES)
def test_the_numpy_reader_gives_the_line_readers_table_and_notes(label, monkeypatch):
    import sdc.ptable.formats

    text = PLAIN_FILES[label]()
    slow, slow_fmt, slow_notes = line_read(text)
    monkeypatch.setattr(sdc.ptable.formats, "_read_lines", lambda *args: pytest.fail("read line by line"))
    fast, fmt, notes = parse_ptable(text, source="t.csv")
    assert (fmt, notes) == (slow_fmt, slow_notes)
    for column in ("i", "j", "lb_units", "ub_units"):
        assert getattr(fast, column).tolist() == getattr(slow, column).tolist()
    assert (fast.reuse_from, fast.key_modulus) == (slow.reuse_from, slow.key_modulus)


def test_the_hand_made_file_keeps_its_p_column_tolerance_and_drops_the_empty_interval():
    table, _, notes = parse_ptable(HAND_MADE)
    assert table.ub_units[table.i == 1].tolist() == [30_000_000, 70_000_000, 100_000_000]
    assert notes[:2] == ["row i=0 added: zero cells stay zero", "1 empty interval(s) (p = 0) dropped"]


ONS_PROBLEMS = [
    (lambda lines: [("-" + line) if line.startswith("2,") else line for line in lines],
     r"t\.csv, line 258: row i=-2 is negative"),
    (lambda lines: [line for line in lines if not line.startswith("2,")],
     r"t\.csv: row i=2 is missing; rows must run 1\.\.3 without gaps .*; 1 rows are missing"),
    (lambda lines: ["1,7,-2" if line.startswith("1,7,") else line for line in lines],
     r"t\.csv, line 2, row i=1: noise v=-2 would publish -1, below 0"),
    (lambda lines: lines[:1] + [f"0,{k},{1 if k == 9 else 0}" for k in range(256)] + lines[1:],
     r"t\.csv, line 2, row i=0: zero cells must stay zero, but row 0 has noise v=\+1"),
]
SDC_PROBLEMS = [
    (lambda lines: [line.replace("1,2,0,1,0.7,0.7", "1,2,0,1,0.71,0.71") for line in lines],
     r"t\.csv, line 4, row i=1: gap in the intervals: lower bound 0.71 but the previous interval ends at 0.7"),
    (lambda lines: [line.replace("0.30000100", "0.30000101") for line in lines],
     r"line 2, row i=1: p = 0.30000101 disagrees with its interval \[0, 0.3\) of width 0.3"),
    (lambda lines: [line.replace("1,3,0.3,2", "1,4,0.3,2") for line in lines], r"line 5, row i=1: j=4 but i \+ v = 3"),
    (lambda lines: [line.replace("2,2,1,0,0,1", "2,2,0.9,0,0,0.9") for line in lines],
     r"row i=2: the intervals end at 0.9, not at 1"),
    (lambda lines: [line.replace("1,0,0.30000100,-1", "1,-1,0.30000100,-2") for line in lines],
     r"line 2, row i=1: noise v=-2 would publish -1, below 0"),
    (lambda lines: [lines[0] + ",reuse_from"] + [line + (",2" if k else ",1") for k, line in enumerate(lines[1:])],
     r"column reuse_from must hold one row number on every line, found 1, 2"),
    (lambda lines: [lines[0] + ",reuse_from"] + [line + ",3" for line in lines[1:]],
     r"reuse_from 3 is not a row of the table \(1\.\.2\)"),
]


@pytest.mark.parametrize("text, change, message",
                         [(random_ons_ptable(3, 256), *problem) for problem in ONS_PROBLEMS]
                         + [(HAND_MADE, *problem) for problem in SDC_PROBLEMS])
def test_a_file_of_plain_numbers_is_refused_with_the_line_readers_message(text, change, message):
    text = "\n".join(change(text.rstrip("\n").split("\n"))) + "\n"
    with pytest.raises(SdcError, match=message) as fast_error:
        parse_ptable(text, source="t.csv")
    with pytest.raises(SdcError) as slow_error:
        line_read(text)
    assert str(fast_error.value) == str(slow_error.value)


@pytest.mark.parametrize("field", ["1e-1", "0.123456789", " 0.5", "0,5", "+0.5", "0.5.1", "", "-", "0x1", "½"])
def test_a_field_that_is_no_plain_number_leaves_the_file_to_the_line_reader(field, monkeypatch):
    import sdc.ptable.formats

    lines = []
    monkeypatch.setattr(sdc.ptable.formats, "_read_lines", lambda *args: lines.append(1) or ("read", [], []))
    text = HAND_MADE.replace("1,1,0.4,0,0.3,0.7", f"1,1,{field},0,0.3,0.7")
    assert parse_ptable(text.replace(",", ";") if field == "0,5" else text)[0] == "read" and lines == [1]
