"""Codes arrive exactly as delivered (new-user trial D7): a CSV's columns are text in every interface (sdc load,
sdc ckm, sdc suppress, sdc microaggregate, the Python API given a path), never BOOLEAN or dates; only the
numbers a command needs (ids, record keys, weights, values) are read as numbers."""

import csv
from pathlib import Path

import duckdb
import pytest

from sdc.ckm import count_table
from sdc.cli import main
from sdc.warehouse.loader import load_microdata

from conftest import REPO, query

PTABLE = REPO / "demo" / "seeds" / "sdc_ptable.csv"
# codes DuckDB's sniffer would read as BOOLEAN (yes/no, T/F, true/false) or DATE, or change (01, ' a ')
CODES = {
    "hispanic": ["yes", "no"],
    "tf": ["T", "F"],
    "flag": ["true", "false"],
    "day": ["2024-01-01", "2024-02-29"],
    "kreis": ["01", "10"],
    "spaced": [" a ", "b"],
}


@pytest.fixture
def coded_csv(tmp_path) -> Path:
    """60 records: the coded columns (each code pattern with another period), an id, integer record keys
    (spread over [0, 10^8)), a weight and an income."""
    path = tmp_path / "coded.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", *CODES, "rkey", "w", "income"])
        for k in range(60):
            codes = [values[(k // (d + 1)) % 2] for d, values in enumerate(CODES.values())]
            writer.writerow([k + 1, *codes, (k * 1_654_321 + 12_345) % 10**8, f"{1 + k % 3}.5", f"{1000 + 7 * k}.25"])
    return path


def delivered(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_load_keeps_codes_as_text_and_numbers_as_numbers(tmp_path, coded_csv):
    db = tmp_path / "w.duckdb"
    load_microdata(db, coded_csv, "persons", id_column="id", key_mode="existing", key_column="rkey", modulus=10**8)
    types = dict(query(db, "select column_name, data_type from duckdb_columns() where table_name = 'persons'"))
    assert {c: types[c] for c in CODES} == {c: "VARCHAR" for c in CODES}
    assert (types["id"], types["rk"], types["w"], types["income"]) == ("BIGINT", "BIGINT", "DOUBLE", "DOUBLE")
    names = ", ".join(CODES)
    loaded = query(db, f"select {names}, w, income from raw.persons order by id")
    assert loaded == [(*(r[c] for c in CODES), float(r["w"]), float(r["income"])) for r in delivered(coded_csv)]


def test_ckm_count_table_and_cli_publish_the_delivered_codes(tmp_path, coded_csv, capsys):
    dims = ["hispanic", "tf", "day"]
    cells = count_table(coded_csv, dims, record_key="rkey", modulus=10**8, ptable=PTABLE)
    assert {tuple(c) for c in cells[dims].itertuples(index=False)} == {
        (h, t, d) for h in ["yes", "no", "Total"] for t in ["T", "F", "Total"] for d in ["2024-01-01", "2024-02-29", "Total"]
    }
    out = tmp_path / "cells.csv"
    assert main(["ckm", "--input", str(coded_csv), "--dims", "flag,kreis,spaced", "--record-key", "rkey",
                 "--key-digits", "8", "--ptable", str(PTABLE), "--weight", "w", "--weighted-count", "mean_weight",
                 "--out", str(out)]) == 0
    rows = delivered(out)
    assert {(r["flag"], r["kreis"], r["spaced"]) for r in rows} == {
        (f, k, s) for f in ["true", "false", "Total"] for k in ["01", "10", "Total"] for s in [" a ", "b", "Total"]
    }
    total = next(r for r in rows if r["flag"] == r["kreis"] == r["spaced"] == "Total")
    assert float(total["weighted_count"]) == pytest.approx(sum(float(r["w"]) for r in delivered(coded_csv)), rel=0.05)


def test_suppress_publishes_the_delivered_codes(tmp_path, coded_csv, capsys):
    out = tmp_path / "supp.csv"
    assert main(["suppress", "--input", str(coded_csv), "--dims", "hispanic,kreis", "--value", "income",
                 "--rule", "freq:3", "--out", str(out)]) == 0
    rows = delivered(out)
    assert {(r["hispanic"], r["kreis"]) for r in rows} == {
        (h, k) for h in ["yes", "no", "Total"] for k in ["01", "10", "Total"]
    }
    cell = next(r for r in rows if (r["hispanic"], r["kreis"]) == ("no", "01"))
    records = [r for r in delivered(coded_csv) if (r["hispanic"], r["kreis"]) == ("no", "01")]
    assert float(cell["published_value"]) == pytest.approx(sum(float(r["income"]) for r in records))


def test_microaggregated_file_keeps_every_other_column_as_delivered(tmp_path, coded_csv, capsys):
    out = tmp_path / "safe.csv"
    assert main(["microaggregate", "--input", str(coded_csv), "--out", str(out), "--column", "income", "--k", "3",
                 "--id", "id"]) == 0
    original, copy = delivered(coded_csv), delivered(out)
    kept = ["id", *CODES, "rkey", "w"]
    assert list(copy[0]) == kept + ["income"]
    assert [[r[c] for c in kept] for r in copy] == [[r[c] for c in kept] for r in original]
    incomes = [float(r["income"]) for r in copy]
    assert sum(incomes) == pytest.approx(sum(float(r["income"]) for r in original))
    assert min(incomes.count(v) for v in incomes) >= 3
    # the same as Parquet: every other column text, as delivered
    parquet = tmp_path / "safe.parquet"
    assert main(["microaggregate", "--input", str(coded_csv), "--out", str(parquet), "--column", "income",
                 "--k", "3"]) == 0
    con = duckdb.connect()
    try:
        rows = con.execute(f"select {', '.join(kept)} from read_parquet('{parquet}')").fetchall()
    finally:
        con.close()
    assert [list(r) for r in rows] == [[r[c] for c in kept] for r in original]
