"""Microaggregation in the warehouse: the SQL macro microaggregate_fixed equals the Python method, and
`sdc microaggregate` writes protected copies of tables and files (or nothing, on bad input)."""

import duckdb
import numpy as np
import pytest

from dbt_project_helper import ScratchProject
from sdc.cli import main
from sdc.warehouse.loader import load_microdata
from sdc.microaggregation import microaggregate

from conftest import DATA


@pytest.fixture(scope="module")
def sql_project(tmp_path_factory):
    p = ScratchProject(tmp_path_factory.mktemp("microaggregation") / "project")
    con = duckdb.connect(str(p.db))
    con.execute("create schema raw")
    # the income column with ties (rounded to 10,000) and two NULLs, ids in scrambled order
    con.execute(f"create table raw.income as select (row_id * 7919) % 100003 as id, "
                f"case when row_id in (17, 4000) then null else round(x, -4) end as x, 'kept' as other "
                f"from read_csv('{DATA / 'microagg_income.csv'}')")
    con.close()
    p.sources(["income"])
    p.model("income_mean", "{{ sdc.microaggregate_fixed(source('raw', 'income'), 'x', 3, 'id') }}")
    p.model("income_hoehne", "{{ sdc.microaggregate_fixed(source('raw', 'income'), 'x', 4, 'id', replacement='hoehne') }}")
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-3000:]
    return p


def read(db, sql):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("model, k, replacement", [("income_mean", 3, "mean"), ("income_hoehne", 4, "hoehne")])
def test_sql_macro_equals_the_python_fixed_method(sql_project, model, k, replacement):
    source = read(sql_project.db, "select id, x from raw.income order by id")
    ids = np.array([r[0] for r in source])
    x = np.array([np.nan if r[1] is None else r[1] for r in source], dtype=float)
    expected = microaggregate(x, k, "fixed", ids=ids, replacement=replacement).values
    rows = read(sql_project.db, f"select id, x, other from {model} order by id")
    assert [r[0] for r in rows] == list(ids) and {r[2] for r in rows} == {"kept"}
    got = np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=float)
    assert np.array_equal(np.isnan(got), np.isnan(x)) and np.isnan(got).sum() == 2
    assert got[~np.isnan(got)] == pytest.approx(expected[~np.isnan(expected)], rel=1e-12)


def test_sql_macro_refuses_k_below_2(tmp_path):
    p = ScratchProject(tmp_path / "project")
    p.sources(["income"])
    p.model("bad", "{{ sdc.microaggregate_fixed(source('raw', 'income'), 'x', 1, 'id') }}")
    result = p.dbt("compile")
    assert result.returncode != 0 and "k must be an integer of at least 2, got 1" in result.stdout


def test_cli_table_copy_keeps_rows_and_other_columns(tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema raw")
    con.execute(f"create table raw.people as select row_id, x as income, x / 2 as expend, 'z' || row_id as name "
                f"from read_csv('{DATA / 'microagg_income.csv'}')")
    con.close()
    assert main(["microaggregate", "--db", str(db), "--table", "raw.people", "--column", "income", "--column",
                 "expend", "--k", "3", "--method", "optimal", "--id", "row_id", "--out-table", "safe.people",
                 "--report", str(tmp_path / "report.json")]) == 0
    out = capsys.readouterr().out
    assert "income: optimal k=3, 4580 records (0 NULL)" in out and "wrote safe.people" in out
    original = read(db, "select row_id, income, expend, name from raw.people order by row_id")
    protected = read(db, "select row_id, income, expend, name from safe.people order by row_id")
    assert len(protected) == len(original) == 4580
    assert [r[::3] for r in protected] == [r[::3] for r in original]
    x = np.array([r[1] for r in original])
    assert [r[1] for r in protected] == pytest.approx(list(microaggregate(x, 3, "optimal", ids=np.arange(1, 4581)).values))
    import json
    report = json.loads((tmp_path / "report.json").read_text())
    assert [r["column"] for r in report] == ["income", "expend"] and report[0]["min_group_size"] == 3


@pytest.mark.parametrize("args, message", [
    (["--table", "raw.missing", "--column", "income"], "table 'raw.missing' not found"),
    (["--table", "raw.people", "--column", "name"], "column 'name' of table 'raw.people' is VARCHAR, not numeric"),
    (["--table", "raw.people", "--column", "nope"], "column 'nope' is not in table 'raw.people'"),
    (["--table", "raw.people", "--column", "income", "--k", "1"], "k must be an integer of at least 2"),
    (["--table", "raw.people", "--column", "income", "--k", "9"], "k = 9 exceeds the 3 non-NULL values"),
])
def test_cli_bad_input_writes_nothing(tmp_path, capsys, args, message):
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema raw")
    con.execute("create table raw.people as select * from (values (1, 10.0, 'a'), (2, 20.0, 'b'), (3, null, 'c'), "
                "(4, 40.0, 'd')) t(id, income, name)")
    con.close()
    argv = ["microaggregate", "--db", str(db), *args]
    if "--k" not in args:
        argv += ["--k", "2"]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert read(db, "select schema_name, table_name from duckdb_tables() order by all") == [("raw", "people")]


def test_cli_file_mode(tmp_path, capsys):
    out = tmp_path / "safe.csv"
    assert main(["microaggregate", "--input", str(DATA / "microagg_tiny12.csv"), "--out", str(out),
                 "--column", "x", "--k", "3", "--method", "fixed"]) == 0
    rows = [line.split(",") for line in out.read_text().splitlines()[1:]]
    # 1 2 3 | 10 11 12 | 50 51 52 | 100 101 1000 -> 2, 11, 51, 1201/3
    assert [int(a) for a, _ in rows] == list(range(1, 13))
    assert [float(b) for _, b in rows] == pytest.approx([2] * 3 + [11] * 3 + [51] * 3 + [1201 / 3] * 3, rel=1e-15)
    capsys.readouterr()
    assert main(["microaggregate", "--input", str(DATA / "microagg_tiny12.csv"), "--out", str(tmp_path / "x.txt"),
                 "--column", "x", "--k", "3"]) == 2
    assert "give a .csv or .parquet output file" in capsys.readouterr().err


def test_shuffle_moves_whole_rows(tmp_path):
    plain, shuffled = tmp_path / "plain.csv", tmp_path / "shuffled.csv"
    common = ["--input", str(DATA / "microagg_income.csv"), "--column", "x", "--k", "3"]
    assert main(["microaggregate", *common, "--out", str(plain)]) == 0
    assert main(["microaggregate", *common, "--out", str(shuffled), "--shuffle-rows"]) == 0
    rows = lambda path: path.read_text().splitlines()[1:]  # noqa: E731
    assert rows(plain) != rows(shuffled) and sorted(rows(plain)) == sorted(rows(shuffled))


@pytest.mark.parametrize("scan_in_row_order", [True, False])
def test_large_file_copy_keeps_every_row_in_its_place(tmp_path, monkeypatch, scan_in_row_order):
    # 300,000 rows (several row groups, read and written by both threads): every row stays in its place, NULLs
    # stay NULL, the values are the Python method's; False: the path for a scan that returns sdc_rows out of
    # row order (arrays put into row order, the copy sorted back by row number)
    from sdc.microaggregation import tables

    n = 300_000
    rng = np.random.default_rng(1)
    x = np.round(rng.lognormal(10, 1, n))
    x[rng.random(n) < 0.01] = np.nan
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    con = duckdb.connect()
    con.register("t", {"row_id": np.arange(n), "income": x, "tag": np.arange(n) % 7})
    con.execute(f"copy (select row_id, nullif(income, 'NaN'::double) as income, tag from t) to '{source}' "
                "(format parquet)")
    if not scan_in_row_order:
        monkeypatch.setattr(tables, "_in_row_order", lambda rows: False)
    assert main(["microaggregate", "--input", str(source), "--out", str(out), "--column", "income", "--k", "3"]) == 0
    got = con.execute(f"select row_id, coalesce(income, 'NaN'::double) as income, tag from '{out}'").fetchnumpy()
    con.close()
    assert np.array_equal(got["row_id"], np.arange(n)) and np.array_equal(got["tag"], np.arange(n) % 7)
    assert np.array_equal(got["income"], microaggregate(x, 3, "optimal").values, equal_nan=True)


@pytest.mark.parametrize("bad", ["'inf'", "'-inf'", "'nan'"])
def test_a_value_that_is_not_finite_is_refused_naming_column_and_row(tmp_path, capsys, bad):
    """Issue 17: one inf made all 1,000 values inf ("IL 0.0000 %"); NaN is no value to protect (NULL is)."""
    import duckdb

    data = tmp_path / "x.parquet"
    duckdb.execute(f"copy (select range as id, case when range = 6 then cast({bad} as double) else range * 1.5 end "
                   f"as income from range(20)) to '{data}' (format parquet)")
    out = tmp_path / "safe.parquet"
    code = main(["microaggregate", "--input", str(data), "--out", str(out), "--column", "income", "--k", "3"])
    err = capsys.readouterr().err
    assert code == 2 and "column 'income'" in err and "in row 7: microaggregation needs finite values" in err
    assert not out.exists()


def test_the_copy_replaces_only_a_table_it_wrote_and_never_goes_into_raw(tmp_path, capsys):
    """`--out-table raw.b` replaced another loaded table, `raw.a__record_keys` the key store, exit 0."""
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema raw")
    con.execute("create table raw.a as select range as id, range * 2.0 as x from range(9)")
    con.execute("create table raw.a__record_keys as select range as id, 17 as rk from range(9)")
    con.execute("create table main.report as select 42 as answer")
    con.execute("create view main.v as select 1 as one")
    con.close()
    before = {t: read(db, f"select * from {t} order by all") for t in ("raw.a__record_keys", "main.report", "main.v")}
    run = ["microaggregate", "--db", str(db), "--table", "raw.a", "--column", "x", "--k", "3", "--id", "id"]
    for target, message in [("raw.a__record_keys", "schema raw holds the loaded microdata"),
                            (None, "protected copy raw.a_microaggregated: schema raw"),
                            ("main.report", "a table of that name exists that sdc microaggregate did not write"),
                            ("main.v", "a view of that name exists")]:
        assert main(run + (["--out-table", target] if target else [])) == 2
        assert message in capsys.readouterr().err
    assert {t: read(db, f"select * from {t} order by all") for t in before} == before
    for _ in range(2):  # its own copy it replaces
        assert main(run + ["--out-table", "safe.a"]) == 0
    assert read(db, "select x from safe.a order by id") == [(2.0,)] * 3 + [(8.0,)] * 3 + [(14.0,)] * 3


def test_the_protected_copy_carries_no_record_keys(tmp_path, capsys):
    """New-user trial D8: rk, the key facts rk_* and the named record-key column stay behind, in the warehouse
    copy and in a file copy; the other columns and the rows are those of the source."""
    micro = tmp_path / "micro.csv"
    micro.write_text("id,sex,income,f_x\n" + "".join(f"{k},{'mw'[k % 2]},{100 * k + 1},{k % 2}\n" for k in range(1, 13)))
    db = tmp_path / "w.duckdb"
    load_microdata(db, micro, "persons", id_column="id", key_mode="keyed", secret=b"a test secret of 32 bytes......",
                   facts={"f_m": "sex = 'm'"})
    assert main(["microaggregate", "--db", str(db), "--table", "raw.persons", "--column", "income", "--k", "3",
                 "--id", "id", "--out-table", "microdata.persons"]) == 0
    columns = [r[0] for r in read(db, "select column_name from duckdb_columns() where schema_name = 'microdata' "
                                      "order by column_index")]
    assert columns == ["id", "sex", "income", "f_x", "f_m"]
    assert read(db, "select id, sex, f_x, f_m from microdata.persons order by id") == \
        read(db, "select id, sex, f_x, f_m from raw.persons order by id")
    # a file copy of keyed data, and a record-key column of another name given by --record-key
    keyed = tmp_path / "keyed.parquet"
    con = duckdb.connect(str(db))
    try:
        con.execute(f"copy (select *, rk as rkey from raw.persons) to '{keyed}' (format parquet)")
    finally:
        con.close()
    out = tmp_path / "safe.csv"
    assert main(["microaggregate", "--input", str(keyed), "--out", str(out), "--column", "income", "--k", "3",
                 "--record-key", "rkey"]) == 0
    assert out.read_text().splitlines()[0] == "id,sex,income,f_x,f_m"
    capsys.readouterr()
    assert main(["microaggregate", "--input", str(keyed), "--out", str(tmp_path / "x.csv"), "--column", "rk",
                 "--k", "3"]) == 2
    assert "column 'rk' of " in capsys.readouterr().err and not (tmp_path / "x.csv").exists()
