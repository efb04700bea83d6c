"""Weighted counts by the Cell Key Method (cellKey and τ-Argus): the unweighted count n is perturbed to n', and
the published weighted count is n' · (weighted sum / n); zero stays zero. Checked cell by cell against an
independent computation on cellKey's test data (its sampling_weight), from the API, the CLI and dbt."""

from __future__ import annotations

import csv
import math
from decimal import Decimal

import pandas as pd
import pytest

from conftest import DATA, REPO
from sdc.ckm import count_table
from sdc.cli import main
from sdc.errors import SdcError
from sdc.hierarchy import read_hierarchy
from sdc.ptable.formats import read_ptable

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
HIERARCHY = DATA / "cellkey_testdata_hierarchies.csv"
PTABLE = REPO / "demo" / "seeds" / "sdc_ptable.csv"


def expected_weighted(dims, count_var=None):
    """Per cell (every code of the hierarchies): records, exact key sum and weighted sum, summed record by record
    into each ancestor code; then n' = n + noise from the ptable and n' * W / n."""
    hierarchy = read_hierarchy(HIERARCHY)
    parent = {(d, c): p for d, c, p in hierarchy}
    cells = {}
    with MICRODATA.open(newline="") as handle:
        for record in csv.DictReader(handle):
            if count_var and record[count_var] == "0":
                continue
            combos = [[]]
            for dim in dims:
                codes = [record[dim]]
                while parent.get((dim, codes[-1])):
                    codes.append(parent[(dim, codes[-1])])
                combos = [c + [a] for c in combos for a in codes]
            for combo in combos:
                n, keys, w = cells.get(tuple(combo), (0, Decimal(0), 0))
                cells[tuple(combo)] = (n + 1, keys + Decimal(record["rkeys"]), w + int(record["sampling_weight"]))
    table, _, _ = read_ptable(PTABLE)
    out = {}
    for cell, (n, keys, w) in cells.items():
        perturbed = n + table.lookup(n, float(keys % 1))
        out[cell] = (perturbed, w, 0.0 if perturbed == 0 else perturbed * w / n)
    return out


@pytest.mark.parametrize("dims, count_var", [(["sex", "age"], None), (["roof", "water"], None),
                                             (["sex", "age"], "cnt_highincome")])
def test_weighted_counts_equal_an_independent_computation(dims, count_var):
    table = count_table(MICRODATA, dims, record_key="rkeys", modulus=10**7, ptable=PTABLE, hierarchy=HIERARCHY,
                        count_var=count_var, weight="sampling_weight", audit=True)
    expected = expected_weighted(dims, count_var)
    rows = table.to_dict("records")
    assert {tuple(r[d] for d in dims) for r in rows if r["original"] > 0} == set(expected)
    for row in rows:
        cell = tuple(row[d] for d in dims)
        if cell not in expected:  # an empty cell of the frame: zero stays zero
            assert row["count"] == 0 and row["weighted_count"] == 0 and row["weighted_original"] == 0
            continue
        perturbed, weight_sum, weighted = expected[cell]
        assert row["count"] == perturbed and row["weighted_original"] == weight_sum, cell
        assert math.isclose(row["weighted_count"], weighted, rel_tol=1e-12), cell
    # the weights of cellKey's data are 20-100 per person: the total is the population, 273,170
    total = next(r for r in rows if all(r[d] == "Total" for d in dims))
    if count_var is None:
        assert total["weighted_original"] == 273170


def test_the_same_cell_gets_the_same_weighted_count_in_every_table():
    arguments = dict(record_key="rkeys", modulus=10**7, ptable=PTABLE, weight="sampling_weight")
    by_sex_roof = count_table(MICRODATA, ["sex", "roof"], **arguments)
    by_sex = count_table(MICRODATA, ["sex"], **arguments)
    margin = by_sex_roof[by_sex_roof["roof"] == "Total"].set_index("sex")["weighted_count"]
    assert margin.to_dict() == by_sex.set_index("sex")["weighted_count"].to_dict()


def test_the_cli_writes_weighted_count_and_a_threshold_empties_it_too(tmp_path):
    out = tmp_path / "t.csv"
    assert main(["ckm", "--input", str(MICRODATA), "--dims", "sex,roof", "--record-key", "rkeys", "--key-digits",
                 "7", "--ptable", str(PTABLE), "--weight", "sampling_weight", "--threshold", "20", "--out",
                 str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == ["sex", "roof", "count", "weighted_count", "count_reason"]
    for row in rows:
        assert (row["count"] == "") == (row["weighted_count"] == "") == (row["count_reason"] != "")
    assert sum(row["count"] == "" for row in rows) >= 3  # r5, r6, r9 hold fewer than 20 persons


@pytest.mark.parametrize("bad, shown", [(0, "0.0"), (-3, "-3.0"), (float("inf"), "inf"), (float("nan"), "NULL"),
                                        (None, "NULL")])  # pandas NaN is missing: NULL
def test_a_weight_that_is_not_positive_and_finite_is_named_with_its_record(tmp_path, bad, shown):
    data = pd.read_csv(MICRODATA)
    data["sampling_weight"] = data["sampling_weight"].astype("float64")
    data.loc[17, "sampling_weight"] = bad
    record = data.loc[17]
    with pytest.raises(SdcError, match=rf"weight column sampling_weight must hold positive finite numbers, found "
                                       rf"{shown} in a record with sex = {record['sex']}, roof = {record['roof']}"):
        count_table(data, ["sex", "roof"], record_key="rkeys", modulus=10**7, ptable=PTABLE, weight="sampling_weight")


def test_weight_mistakes_are_refused_and_nothing_is_written(tmp_path, capsys):
    base = ["ckm", "--input", str(MICRODATA), "--dims", "sex,roof", "--record-key", "rkeys", "--key-digits", "7",
            "--ptable", str(PTABLE)]
    out = tmp_path / "t.csv"
    for weight, message in [("sex", "dimension 'sex' is also the --weight column"),
                            ("nosuch", "column 'nosuch' is not in"),
                            ("roof_text", None)]:
        if weight == "roof_text":
            text = tmp_path / "text_weights.csv"
            frame = pd.read_csv(MICRODATA)
            frame["roof_text"] = frame["roof"]
            frame.to_csv(text, index=False)
            arguments = base[:2] + [str(text)] + base[3:]
            message = f"--weight column 'roof_text' of {text} has type VARCHAR, not a number"
        else:
            arguments = base
        assert main(arguments + ["--weight", weight, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists()


def test_a_nan_weight_is_refused_naming_it():
    import duckdb

    con = duckdb.connect()
    relation = con.sql(f"select sex, roof, rkeys, case when row_id = 5 then 'nan'::double else sampling_weight end as w "
                       f"from read_csv('{MICRODATA}')")
    with pytest.raises(SdcError, match="weight column w must hold positive finite numbers, found nan in a record"):
        count_table(relation, ["sex", "roof"], record_key="rkeys", modulus=10**7, ptable=PTABLE, weight="w")
    con.close()


def test_ckm_published_keeps_the_weighted_count_and_the_reason_and_drops_the_audit_columns():
    import duckdb

    from sdc.macro_renderer import Relation, render_macro

    con = duckdb.connect()
    con.execute(f"create table pt as select * from read_csv('{PTABLE}')")
    con.execute(f"create table micro as select sex, roof, sampling_weight, cast(round(rkeys * 1e7) as bigint) as rk "
                f"from read_csv('{MICRODATA}')")
    audit = render_macro(con, "ckm_count", "micro", ["sex", "roof"], ptable="pt", modulus=10**7,
                         weight="sampling_weight", threshold=20)
    con.execute(f"create table audit as {audit}")
    published = con.execute(render_macro(con, "ckm_published", Relation("memory", "main", "audit")))
    assert [d[0] for d in published.description] == ["sex", "roof", "count", "weighted_count", "count_reason"]
    con.close()
