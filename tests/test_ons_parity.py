"""sdc reproduces ONS's cell-key-perturbation 3.1.0 cell by cell, from the CLI and the Python API.

tests/data/ons/ (ONS's package is MIT; see tests/data/README.md):
  ptable_10_5_rule.csv      the ptable ONS ships (data_files/), as it is: quoted header "pcv","ckey","pvalue"
  ons_testdata_<n>.csv      ONS's example microdata: utils/generate_test_data.generate_test_data(size=n)
                            (seed 111, integer record keys 0..255)
  ons_table_*.csv           create_perturbed_table(...) of ONS 3.1.0 on those data (columns: the tabulated
                            variables, pre_sdc_count, ckey, pcv, pvalue, count; count empty below threshold)

Each ONS table is a table of inner cells (ONS has no totals): sdc's totals='none'. ONS publishes every cell of
the cross product of the observed codes, empty ones included; the threshold empties counts below it, empty
cells included; counts above 750 use rows ((n - 1) mod 250) + 501.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pytest

from sdc.ckm import count_table
from sdc.cli import main
from sdc.errors import SdcError
from sdc.ptable.formats import read_ptable, write_ptable

ONS = Path(__file__).parent / "data" / "ons"
PTABLE = ONS / "ptable_10_5_rule.csv"

# expected file -> (data file, tabulated variables (geog + tab_vars), threshold)
CASES = {
    "ons_table_var1_var5_var8_t10.csv": ("ons_testdata_1000.csv", ["var1", "var5", "var8"], 10),
    "ons_table_var1_var5_var8_t0.csv": ("ons_testdata_1000.csv", ["var1", "var5", "var8"], 0),
    "ons_table_var9_var10_t10.csv": ("ons_testdata_1000.csv", ["var9", "var10"], 10),
    "ons_table_large_var1_var2_t10.csv": ("ons_testdata_5000.csv", ["var1", "var2"], 10),
    "ons_table_large_var3_t0.csv": ("ons_testdata_5000.csv", ["var3"], 0),
}


def ons_cells(name: str, dims: list[str]) -> dict[tuple, dict]:
    with (ONS / name).open(newline="") as handle:
        return {tuple(row[d] for d in dims): row for row in csv.DictReader(handle)}


def sdc_cells(table: pd.DataFrame, dims: list[str]) -> dict[tuple, dict]:
    return {tuple(str(row[d]) for d in dims): row for row in table.to_dict("records")}


def published(value) -> str:
    return "" if value is None or pd.isna(value) else str(int(value))


@pytest.mark.parametrize("expected, case", CASES.items(), ids=list(CASES))
def test_count_table_equals_ons_on_every_cell(expected, case):
    data, dims, threshold = case
    table = count_table(ONS / data, dims, record_key="record_key", modulus=256, ptable=PTABLE, totals="none",
                        threshold=threshold, audit=True)
    ons, ours = ons_cells(expected, dims), sdc_cells(table, dims)
    assert set(ours) == set(ons)  # the same frame: every combination of observed codes, empty ones included
    for cell, row in ons.items():
        mine = ours[cell]
        assert published(mine["count"]) == row["count"], cell
        assert mine["original"] == int(row["pre_sdc_count"]), cell
        if int(row["pre_sdc_count"]) > 0:
            assert round(mine["cell_key"] * 256) == int(row["ckey"]), cell
            assert mine["noise"] == int(row["pvalue"]), cell
        assert (not pd.isna(mine.get("count_reason"))) == (row["count"] == ""), cell


def test_the_cases_cover_empty_thresholded_and_large_cells():
    rows = [row for name in CASES for row in csv.DictReader((ONS / name).open())]
    assert sum(int(r["pre_sdc_count"]) == 0 for r in rows) >= 50
    assert sum(r["count"] == "" and int(r["pre_sdc_count"]) > 0 for r in rows) >= 100
    assert sum(int(r["pre_sdc_count"]) > 750 for r in rows) >= 5
    # ONS's documented rows (CellKeyPerturbation_Py.md): (10, ckey 173) -> 10; (7, 180) -> empty; (14, 66) -> 15
    first = ons_cells("ons_table_var1_var5_var8_t10.csv", ["var1", "var5", "var8"])
    assert [first[("1", "1", k)]["count"] for k in "ABCD"] == ["10", "10", "", "15"]


def test_the_cli_writes_the_same_table_as_ons(tmp_path):
    out = tmp_path / "table.csv"
    code = main(["ckm", "--input", str(ONS / "ons_testdata_5000.csv"), "--dims", "var1,var2", "--record-key",
                 "record_key", "--modulus", "256", "--ptable", str(PTABLE), "--totals", "none", "--threshold", "10",
                 "--out", str(out)])
    assert code == 0
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["var1", "var2", "count", "count_reason"]
    ons = ons_cells("ons_table_large_var1_var2_t10.csv", ["var1", "var2"])
    assert {(r["var1"], r["var2"]): r["count"] for r in rows} == {cell: row["count"] for cell, row in ons.items()}


def test_ons_reuse_of_rows_501_to_750_survives_conversion_to_the_sdc_format(tmp_path):
    table, _, _ = read_ptable(PTABLE)
    assert (table.reuse_from, table.key_modulus) == (501, 256)
    converted = tmp_path / "ons_as_sdc.csv"
    write_ptable(table, converted)
    assert converted.read_text().splitlines()[0] == "i,j,p,v,p_int_lb,p_int_ub,reuse_from"
    again, fmt, _ = read_ptable(converted)
    assert (fmt, again.reuse_from) == ("sdc", 501)
    # the converted table gives ONS's counts above 750 (the 5000-record table has counts up to 1757)
    ours = count_table(ONS / "ons_testdata_5000.csv", ["var3"], record_key="record_key", modulus=256,
                       ptable=converted, totals="none")
    ons = ons_cells("ons_table_large_var3_t0.csv", ["var3"])
    assert {(str(r["var3"]),): int(r["count"]) for r in ours.to_dict("records")} == \
        {cell: int(row["count"]) for cell, row in ons.items()}
    # without the rule every count above 750 would use row 750: a different table, so the rule matters here
    plain = count_table(ONS / "ons_testdata_5000.csv", ["var3"], record_key="record_key", modulus=256,
                        ptable=converted, totals="none", reuse_from=501)
    assert plain["count"].tolist() == ours["count"].tolist()


def test_reuse_from_from_the_cli_and_a_conflicting_rule_is_refused(tmp_path):
    table, _, _ = read_ptable(PTABLE)
    from dataclasses import replace

    plain = tmp_path / "no_rule.csv"
    write_ptable(replace(table, reuse_from=None), plain)
    args = ["ckm", "--input", str(ONS / "ons_testdata_5000.csv"), "--dims", "var3", "--record-key", "record_key",
            "--modulus", "256", "--totals", "none"]
    assert main(args + ["--ptable", str(plain), "--reuse-from", "501", "--out", str(tmp_path / "a.csv")]) == 0
    assert main(args + ["--ptable", str(plain), "--out", str(tmp_path / "b.csv")]) == 0
    with_rule = {r["var3"]: r["count"] for r in csv.DictReader((tmp_path / "a.csv").open())}
    ons = ons_cells("ons_table_large_var3_t0.csv", ["var3"])
    assert with_rule == {cell[0]: row["count"] for cell, row in ons.items()}
    # counts 1757, 1240, 1006, 997 all lie above 750: without the rule, all use row 750 (noise 0 there)
    without = {r["var3"]: int(r["count"]) for r in csv.DictReader((tmp_path / "b.csv").open())}
    assert without == {cell[0]: int(row["pre_sdc_count"]) for cell, row in ons.items()}
    assert without != {k: int(v) for k, v in with_rule.items()}
    with pytest.raises(SdcError, match="reuses rows from 501 on, but reuse_from 600 was asked for"):
        count_table(ONS / "ons_testdata_5000.csv", ["var3"], record_key="record_key", modulus=256, ptable=PTABLE,
                    reuse_from=600)


def test_a_ptable_for_another_key_modulus_is_refused_naming_both(tmp_path):
    out = tmp_path / "t.csv"
    code = main(["ckm", "--input", str(ONS / "ons_testdata_1000.csv"), "--dims", "var1", "--record-key",
                 "record_key", "--modulus", "4096", "--ptable", str(PTABLE), "--out", str(out)])
    assert code == 2 and not out.exists()
    with pytest.raises(SdcError, match=r"cell keys 0\.\.255, made for record keys of modulus 256, but the record "
                                       r"keys have modulus 4096"):
        count_table(ONS / "ons_testdata_1000.csv", ["var1"], record_key="record_key", modulus=4096, ptable=PTABLE)


def test_missing_record_keys_are_an_error_with_the_number_of_rows(tmp_path):
    data = pd.read_csv(ONS / "ons_testdata_1000.csv")
    data["record_key"] = data["record_key"].astype("float64")
    data.loc[[3, 17, 400], "record_key"] = None
    with pytest.raises(SdcError, match="record key column 'record_key' is NULL in 3 rows"):
        count_table(data, ["var1"], record_key="record_key", modulus=256, ptable=PTABLE)


def test_the_api_gives_the_same_table_from_a_dataframe_arrow_a_relation_and_files(tmp_path):
    frame = pd.read_csv(ONS / "ons_testdata_1000.csv")
    parquet = tmp_path / "data.parquet"
    frame.to_parquet(parquet)
    con = duckdb.connect()
    relation = con.sql(f"select * from read_csv('{ONS / 'ons_testdata_1000.csv'}')")
    arguments = dict(record_key="record_key", modulus=256, ptable=PTABLE, threshold=10, audit=True)
    tables = [
        count_table(source, ["var1", "var8"], **arguments)
        for source in (frame, pa.Table.from_pandas(frame), relation, ONS / "ons_testdata_1000.csv", str(parquet))
    ]
    con.close()
    first = tables[0].astype(str)
    assert len(first) == (5 + 1) * (4 + 1)  # cube: 5 x 4 cells, 5 + 4 margins, the total
    for other in tables[1:]:
        assert other.astype(str).equals(first)
    # a ptable as a DataFrame, in ONS's columns, gives the same table
    ptable_frame = pd.read_csv(PTABLE)
    assert count_table(frame, ["var1", "var8"], **dict(arguments, ptable=ptable_frame)).astype(str).equals(first)


def test_complete_false_leaves_out_the_empty_cells():
    full = count_table(ONS / "ons_testdata_1000.csv", ["var1", "var5", "var8"], record_key="record_key",
                       modulus=256, ptable=PTABLE, totals="none", audit=True)
    observed = count_table(ONS / "ons_testdata_1000.csv", ["var1", "var5", "var8"], record_key="record_key",
                           modulus=256, ptable=PTABLE, totals="none", audit=True, complete=False)
    assert len(full) == 200 and (full["original"] == 0).sum() == 22
    assert len(observed) == 178 and (observed["original"] > 0).all()
    assert (full[full["original"] == 0]["count"] == 0).all()


def test_the_sdc_ckm_process_does_not_start_dbt(tmp_path):
    # the CLI runs in process: no dbt subprocess, so no dbt module is ever loaded
    out = tmp_path / "t.csv"
    code = (
        "import sys\nfrom sdc.cli import main\n"
        "assert main(sys.argv[1:]) == 0\n"
        "assert not [m for m in sys.modules if m == 'dbt' or m.startswith('dbt.')]\n"
    )
    result = subprocess.run([sys.executable, "-c", code, "ckm", "--input", str(ONS / "ons_testdata_1000.csv"),
                             "--dims", "var1", "--record-key", "record_key", "--modulus", "256", "--ptable",
                             str(PTABLE), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert out.read_text().splitlines()[0] == "var1,count"


def test_the_warehouse_takes_the_reuse_rule_from_a_converted_ons_table(tmp_path):
    """ckm_count in dbt: the sdc file of ONS's table carries reuse_from 501 (a column), so the seed alone gives
    ONS's counts above 750; asking for another rule stops the build naming both."""
    from dbt_project_helper import ScratchProject
    from sdc.ptable.formats import render_ptable

    project = ScratchProject(tmp_path / "project")
    project.seed("sdc_ptable", render_ptable(read_ptable(PTABLE)[0]))
    project.sources(["ons"])
    con = duckdb.connect(str(project.db))
    con.execute("create schema raw")
    con.execute(f"create table raw.ons as select var3, record_key as rk from read_csv('{ONS / 'ons_testdata_5000.csv'}')")
    con.close()
    project.model("ons_var3", "{{ sdc.ckm_count(source('raw', 'ons'), dims=['var3'], modulus=256, totals='none') }}")
    project.model("ons_var3_other_rule", "{{ sdc.ckm_count(source('raw', 'ons'), dims=['var3'], modulus=256, "
                                         "totals='none', reuse_from=600) }}", tags=["other_rule"])
    result = project.dbt("build", "--exclude", "tag:other_rule")
    assert result.returncode == 0, result.stdout
    con = duckdb.connect(str(project.db), read_only=True)
    counts = dict(con.execute("select var3, count from main.ons_var3").fetchall())
    con.close()
    ons = ons_cells("ons_table_large_var3_t0.csv", ["var3"])
    assert {str(k): str(v) for k, v in counts.items()} == {cell[0]: row["count"] for cell, row in ons.items()}
    failed = project.dbt("build", "--select", "tag:other_rule")
    assert failed.returncode != 0
    assert "reuses rows from 501 on (its column reuse_from), but reuse_from 600 was asked for" in failed.stdout


def test_a_missing_column_is_named_with_the_columns_the_file_has(tmp_path, capsys):
    out = tmp_path / "t.csv"
    assert main(["ckm", "--input", str(ONS / "ons_testdata_1000.csv"), "--dims", "var1,nosuch", "--record-key",
                 "record_key", "--modulus", "256", "--ptable", str(PTABLE), "--out", str(out)]) == 2
    assert "column 'nosuch' is not in" in (err := capsys.readouterr().err)
    assert "columns: record_key, var1, var2, var3, var4, var5, var6, var7, var8, var9, var10" in err
    assert not out.exists()


def test_data_without_records_give_a_table_of_zeros():
    empty = pd.read_csv(ONS / "ons_testdata_1000.csv").iloc[:0]
    table = count_table(empty, ["var1", "var8"], record_key="record_key", modulus=256, ptable=PTABLE, audit=True)
    assert table.to_dict("records") == [{"var1": "Total", "var8": "Total", "count": 0, "original": 0,
                                         "cell_key": 0.0, "noise": 0}]


def test_numeric_codes_come_in_numeric_order_and_the_total_last():
    table = count_table(ONS / "ons_testdata_1000.csv", ["var5"], record_key="record_key", modulus=256, ptable=PTABLE)
    assert table["var5"].tolist() == [str(k) for k in range(1, 11)] + ["Total"]
