"""Weighted magnitude tables and weighted counts of a count variable, as τ-Argus and cellKey 1.0.2 make them.

The largest contributions of a weighted sum are those of the records with the largest unweighted values (τ-Argus:
its top-n scores are the unweighted values, each kept with its record's weight, and x_j = weight · value;
cellKey: records ordered by |value|, then by weight, x_j = value · weight). On cellKey's test data the grand total
of income weighted by sampling_weight has x_j = 740000, 640000, 440000 (income 10000 times the weights 74, 64,
44), not the largest weighted contributions (992000 = 9920 · 100, twice). A count variable with a weight counts
its records and weights them (cellKey's countvars with w): the expected numbers are tabulated here in plain Python.
"""

from __future__ import annotations

import csv
from decimal import Decimal

import duckdb
import numpy as np
import pandas as pd
import pytest

import sdc.ckm
from sdc.cli import main
from sdc.warehouse.loader import load_microdata
from sdc.ckm.params import parse_params
from sdc.ckm.reference import magnifiers
from sdc.ptable.nums import NumsPTableParams, NumsPTableSet, create_num_ptable, write_nums_ptable

from conftest import DATA, REPO
from dbt_project_helper import ScratchProject
from weighted_count_noise import spread_noise

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
PTABLE = REPO / "demo" / "seeds" / "sdc_ptable.csv"
RUN = dict(record_key="rkeys", modulus=10**7)
# cellKey's example parameters (ck_flexparams(fp = 1000, p = c(0.30, 0.03), epsilon = c(1, 0.5, 0.2), q = 3))
FLEX = {"type": "flex", "fp": 1000, "p": [0.3, 0.03], "epsilon": [1, 0.5, 0.2], "q": 3}


def top_params(preset):
    return {"preset": preset, "type": "top_contr", "top_k": 3, "multiplier": FLEX}


@pytest.fixture(scope="module")
def nums_ptable(tmp_path_factory):
    path = tmp_path_factory.mktemp("nums") / "nums.csv"
    write_nums_ptable(NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=10, V=1)).table}), path)
    return path


def flex(z: float) -> float:
    """The flex function above fp, σ0 = 0.03, σ1 = 0.3, z_f = 1000, q = 3 (ckm.md §3.5), written out here."""
    s0, s1, zf, q = 0.03, 0.3, 1000.0, 3
    return s0 * (1 + ((s1 * z - s0 * zf) / (s0 * zf)) * (2 * zf / (z + zf)) ** q)


# ------------------------------------------------------------------------- the largest weighted contributions

# cell -> (the three largest incomes, x_j of income x sampling_weight). (male, r4): income 10000 (weights 74, 44),
# then 9990 twice, weights 99 and 85: the tie goes to the larger weight (cellKey), and x_3 = 989010 exceeds x_1
TRACE = {("Total", "Total"): ([10000, 10000, 10000], [740000, 640000, 440000]),
         ("Total", "r4"): ([10000, 10000, 10000], [740000, 640000, 440000]),
         ("male", "r4"): ([10000, 10000, 9990], [740000, 440000, 989010]),
         ("male", "r2"): ([9970, 9970, 9950], [737780, 378860, 865650])}


def test_the_cellkey_trace_in_the_one_cell_method():
    df = pd.read_csv(MICRODATA)
    for (sex, roof), (_, expected) in TRACE.items():
        part = df[((df.sex == sex) | (sex == "Total")) & ((df.roof == roof) | (roof == "Total"))]
        weighted = (part.income * part.sampling_weight).tolist()
        for preset in ("tauargus", "cellkey"):
            got = magnifiers(parse_params(top_params(preset)), sum(weighted), weighted, part.sampling_weight.sum(),
                             values=part.income.tolist())
            assert got == expected, (sex, roof, preset)
    # ranked by the weighted contributions themselves, the grand total's would be these (sdc before cellKey parity)
    total = (df.income * df.sampling_weight).tolist()
    assert magnifiers(parse_params(top_params("cellkey")), sum(total), total, 1) == [992000, 992000, 989010]


@pytest.mark.parametrize("preset", ["tauargus", "cellkey"])
def test_the_cellkey_trace_in_the_sql(nums_ptable, preset):
    """δ_j = x_j ε_j m(x_j) of each component in the audit of sum_table (every x_j is above fp, where both
    presets apply ε_j), for the weighted and the unweighted sum."""
    df = pd.read_csv(MICRODATA)
    audit = sdc.ckm.sum_table(df, ["sex", "roof"], value="income", weight="sampling_weight", params=top_params(preset),
                              ptable=nums_ptable, audit=True, **RUN).set_index(["sex", "roof"])
    for cell, (incomes, weighted) in TRACE.items():
        row = audit.loc[cell]
        for measure, magnifiers_ in (("weighted_value", weighted), ("value", incomes)):
            for j, (x_j, eps) in enumerate(zip(magnifiers_, FLEX["epsilon"]), start=1):
                assert row[f"delta_{measure}_{j}"] == pytest.approx(x_j * eps * flex(x_j), rel=1e-12), (cell, measure, j)
    # the grand total: 4580 records of income 22952978 and weighted income 1372406500, as in cellKey
    total = audit.loc[("Total", "Total")]
    assert (total["original_value"], total["original_weighted_value"]) == (22952978, 1372406500)


# ------------------------------------------------------------------------- count variables with weights

def counted_cells(count_var: str) -> dict:
    """Per cell of sex x roof with totals, over the records where count_var is 1: records, key sum, sum and
    smallest weight; every cell of the frame (the codes of all records), empty ones with (0, 0, 0, None)."""
    cells = {}
    with open(MICRODATA, newline="") as handle:
        records = list(csv.DictReader(handle))
    for sex in {r["sex"] for r in records} | {"Total"}:
        for roof in {r["roof"] for r in records} | {"Total"}:
            cells[(sex, roof)] = (0, Decimal(0), 0, None)
    for record in records:
        if record[count_var] != "1":
            continue
        weight = int(record["sampling_weight"])
        for cell in [(s, r) for s in (record["sex"], "Total") for r in (record["roof"], "Total")]:
            n, keys, weights, smallest = cells[cell]
            cells[cell] = (n + 1, keys + Decimal(record["rkeys"]), weights + weight,
                           weight if smallest is None else min(smallest, weight))
    return cells


def test_a_count_variable_with_weights_counts_and_weights_its_records(tmp_path, capsys):
    """sdc ckm --count-var with --weight and the cellKey / τ-Argus weighting (count' · sum of weights / count):
    the records, cell keys and weights of the count variable's records, in every cell of the frame."""
    out = tmp_path / "high.csv"
    assert main(["ckm", "--input", str(MICRODATA), "--dims", "sex,roof", "--record-key", "rkeys", "--key-digits", "7",
                 "--ptable", str(PTABLE), "--count-var", "cnt_highincome", "--weight", "sampling_weight",
                 "--weighted-count", "mean_weight", "--audit", "--digits", "none", "--out", str(out)]) == 0
    capsys.readouterr()
    got = pd.read_csv(out, keep_default_na=False)
    expected = counted_cells("cnt_highincome")
    assert len(got) == len(expected) == 18
    for row in got.itertuples():
        n, keys, weights, _ = expected[(row.sex, row.roof)]
        assert (row.original, row.original_weighted_count) == (n, weights), (row.sex, row.roof)
        assert row.cell_key == pytest.approx(float(keys % 1), abs=1e-12)
        assert row.weighted_count == (pytest.approx(row.count * weights / n, rel=1e-12) if n else 0)
    # empty cells of the frame: no record with a high income among (female, r5) and (male, r9)
    assert {(r.sex, r.roof) for r in got.itertuples() if r.original == 0} == {("female", "r5"), ("male", "r9")}
    # the weight changes no count: the counts of the count variable alone
    plain = sdc.ckm.count_table(MICRODATA, ["sex", "roof"], ptable=PTABLE, count_var="cnt_highincome", **RUN)
    assert got["count"].tolist() == plain["count"].tolist()
    n, _, weights, _ = expected[("Total", "Total")]
    assert (n, weights) == (445, 26807)  # 445 records of income >= 9000, their weights


def test_a_count_variable_with_weights_by_the_magnitude_method(nums_ptable):
    """weighted_count: the sum of the weights of the count variable's records, perturbed as sum_table perturbs
    the weights of those records alone, plus the count's noise times their smallest weight, plus the second noise
    of those records' keys times the spread of their weights; 0 where the count is 0."""
    df = pd.read_csv(MICRODATA)
    params = {"type": "top_contr", "top_k": 2,
              "multiplier": {"type": "flex", "fp": 100, "p": [0.3, 0.05], "epsilon": [1, 0.5], "q": 3}}
    got = sdc.ckm.count_table(df, ["sex", "roof"], ptable=PTABLE, count_var="cnt_highincome", weight="sampling_weight",
                              params=params, nums_ptable=nums_ptable, audit=True, digits=None, **RUN)
    sums = sdc.ckm.sum_table(df[df.cnt_highincome == 1], ["sex", "roof"], weight="sampling_weight", params=params,
                             ptable=nums_ptable, complete=False, digits=None, **RUN)
    merged = got.merge(sums, on=["sex", "roof"], how="left", suffixes=("", "_sum"))
    expected = counted_cells("cnt_highincome")
    records = {}  # per cell: the keys and weights of the count variable's records
    for record in df[df.cnt_highincome == 1].itertuples():
        for cell in [(s, r) for s in (record.sex, "Total") for r in (record.roof, "Total")]:
            keys, weights = records.setdefault(cell, ([], []))
            keys.append(round(record.rkeys * 10**7))
            weights.append(record.sampling_weight)
    for row in merged.itertuples():
        n, _, weights, smallest = expected[(row.sex, row.roof)]
        assert (row.original, row.original_weighted_count) == (n, weights)
        if row.count == 0:
            assert row.weighted_count == 0
        else:
            spread = max(records[(row.sex, row.roof)][1]) - smallest
            second = spread_noise(*records[(row.sex, row.roof)], PTABLE, RUN["modulus"])
            perturbed = max(row.weighted_count_sum + row.noise * smallest + second * spread, smallest)
            assert row.weighted_count == pytest.approx(perturbed, rel=1e-12), (row.sex, row.roof)
    assert (merged.weighted_count != merged.original_weighted_count).sum() >= 8  # perturbed, not copied


def test_dbt_ckm_count_of_a_fact_with_weights_gives_the_python_api_numbers(tmp_path, nums_ptable):
    """ckm_count(fact=, weight=) both ways in a dbt project (the fact loaded by sdc load) and count_table with
    count_var: the same cells."""
    p = ScratchProject(tmp_path / "project")
    load_microdata(p.db, MICRODATA, "survey", key_mode="existing", key_column="rkeys", modulus=10**7,
                   facts={"f_high": "cnt_highincome = 1"})
    p.sources(["survey"])
    p.seed("sdc_nums_ptable", nums_ptable.read_text())
    params = {"type": "top_contr", "top_k": 2,
              "multiplier": {"type": "flex", "fp": 100, "p": [0.3, 0.05], "epsilon": [1, 0.5], "q": 3}}
    for name, options in (("high_mean", "weighted_count='mean_weight'"), ("high_magnitude", f"params={params!r}")):
        p.model(name, "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'roof'], modulus=10000000, fact='f_high', "
                      f"weight='sampling_weight', {options}) }}}}")
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    df = pd.read_csv(MICRODATA)
    # the audit relations of dbt hold the exact magnitudes: the API's unrounded (digits=None)
    common = dict(ptable=PTABLE, count_var="cnt_highincome", weight="sampling_weight", audit=True, digits=None, **RUN)
    expected = {"high_mean": sdc.ckm.count_table(df, ["sex", "roof"], weighted_count="mean_weight", **common),
                "high_magnitude": sdc.ckm.count_table(df, ["sex", "roof"], params=params, nums_ptable=nums_ptable,
                                                      **common)}
    con = duckdb.connect(str(p.db), read_only=True)
    try:
        for model, frame in expected.items():
            built = con.execute(f"select * from main.{model}").df()
            merged = frame.merge(built, on=["sex", "roof"], suffixes=("", "_dbt"))
            assert len(merged) == len(frame) == len(built) == 18, model
            for column in ("count", "original", "cell_key", "noise", "weighted_count", "original_weighted_count"):
                assert np.allclose(merged[column].astype(float), merged[column + "_dbt"].astype(float),
                                   rtol=1e-12), (model, column)
    finally:
        con.close()
