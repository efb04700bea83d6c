"""The range magnifier and the even/odd ptables of magnitude tables, on cells with records of value 0, as
τ-Argus and cellKey 1.0.2 compute them (τ-Argus: GetXj "D", SetCellKeyValuesCont; cellKey: its cells' largest
contributions and spread, .ck_perturb_nums).

range: the largest minus the smallest value over every record of the cell, zeros included, of the unweighted
values, also for a weighted sum; τ-Argus takes the values' sizes (max|v| - min|v|), cellKey the values
themselves (max v - min v). Parity: the number of the cell's records, zeros included, in both tools. The
expected numbers are tabulated here from the microdata (pandas, exact decimals), apart from sdc.
"""

from __future__ import annotations

import csv
from decimal import Decimal
from fractions import Fraction

import pandas as pd
import pytest

import sdc.ckm
from sdc.ckm.params import parse_params
from sdc.ckm.reference import magnifiers, perturb_cell, version_key
from sdc.ptable.nums import NumsPTableParams, NumsPTableSet, combine, create_num_ptable, write_nums_ptable

from conftest import DATA
from test_ckm_magnitude import M, _microdata, _tables

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
KEYS = 10**7  # the test data's record keys have 7 decimals
FLEX1 = {"type": "flex", "fp": 1000, "p": [0.3, 0.03], "epsilon": [1], "q": 3}


def flex(z: float) -> float:
    """m(z) of ckm.md §3.5 for σ0 = 0.03, σ1 = 0.3, z_f = 1000, q = 3, written out here (σ1 below z_f)."""
    s0, s1, zf, q = 0.03, 0.3, 1000.0, 3
    return s1 if z < zf else s0 * (1 + ((s1 * z - s0 * zf) / (s0 * zf)) * (2 * zf / (z + zf)) ** q)


def records() -> pd.DataFrame:
    """cellKey's test data with integer record keys (the 7-decimal keys as written in the file)."""
    with open(MICRODATA, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return pd.DataFrame({"sex": [r["sex"] for r in rows], "roof": [r["roof"] for r in rows],
                         "income": [int(r["income"]) for r in rows],
                         "sampling_weight": [int(r["sampling_weight"]) for r in rows],
                         "rkeys": [int(Decimal(r["rkeys"]) * KEYS) for r in rows]})


def cells(df: pd.DataFrame):
    """(sex, roof) -> the records of that cell of the cube (totals included)."""
    for sex in sorted(set(df.sex)) + ["Total"]:
        for roof in sorted(set(df.roof)) + ["Total"]:
            yield (sex, roof), df[((df.sex == sex) | (sex == "Total")) & ((df.roof == roof) | (roof == "Total"))]


@pytest.fixture(scope="module")
def parity_ptable(tmp_path_factory):
    """Even and odd tables that differ (variance 1 and 2.5, row 1 of the odd one short of it), so that the
    parity shows in the published values."""
    tables = combine(create_num_ptable(NumsPTableParams(D=5, V=1, type="even")).table,
                     create_num_ptable(NumsPTableParams(D=6, V=2.5, icat=[1, 3, 6], type="odd"),
                                       allow_lower_variance=True).table)
    path = tmp_path_factory.mktemp("nums") / "parity.csv"
    write_nums_ptable(tables, path)
    return tables, path


@pytest.fixture(scope="module")
def all_ptable(tmp_path_factory):
    path = tmp_path_factory.mktemp("nums") / "all.csv"
    write_nums_ptable(NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=5, V=1)).table}), path)
    return path


def microdata_cell(df: pd.DataFrame, region: str, size: str) -> pd.DataFrame:
    """The records of (region, size) of test_ckm_magnitude's microdata, totals included."""
    return df[((df.region == region) | (region == "Total")) & ((df["size"] == size) | (size == "Total"))]


def exact(part: pd.DataFrame, contributions: pd.Series) -> tuple[list[float], int]:
    """The contributions as the SQL holds them (6 decimals) and the cell key over the non-zero ones: the sum of
    their records' keys for their versions (weight, turnover, turnover x weight: the measures of the table)."""
    held = [float(Decimal(repr(float(c))).quantize(Decimal("0.000001"))) for c in contributions]
    keys = [version_key(r.rk, [r.w, r.turnover, r.turnover * r.w], M) for r in part.itertuples()]
    return held, sum(k for k, c in zip(keys, held) if c != 0) % M


# ------------------------------------------------------------------------------------------- range


@pytest.mark.parametrize("preset", ["tauargus", "cellkey"])
def test_range_on_the_cellkey_data(all_ptable, preset):
    """x_1 = the largest minus the smallest income of the cell's records, the record of income 0 included
    (in (male, r4): 10000 - 0, where its non-zero incomes alone give 10000 - 1); the weighted sum takes the
    same unweighted range. Incomes are not negative, so the presets agree; δ_1 = x_1 m(x_1) in the audit."""
    df = records()
    audit = sdc.ckm.sum_table(df, ["sex", "roof"], digits=None, value="income", weight="sampling_weight", record_key="rkeys",
                              modulus=KEYS, params={"preset": preset, "type": "range", "multiplier": FLEX1},
                              ptable=all_ptable, audit=True).set_index(["sex", "roof"])
    ranges = {cell: int(part.income.max() - part.income.min()) for cell, part in cells(df)}
    assert (ranges[("male", "r4")], ranges[("male", "Total")], ranges[("female", "r5")]) == (10000, 10000, 8463)
    assert len(audit) == len(ranges) == 18
    for cell, x_1 in ranges.items():
        for measure in ("value", "weighted_value"):
            assert audit.loc[cell, f"delta_{measure}_1"] == pytest.approx(x_1 * flex(x_1), rel=1e-12), (cell, measure)
    assert audit.loc[("male", "r4"), "delta_weighted_value_1"] == pytest.approx(478.5123966942149, rel=1e-12)


def test_the_presets_take_the_range_of_sizes_or_of_values():
    """Values -500, 300, 0, 400 (weights 2, 3, 4, 1): τ-Argus max|v| - min|v| = 500 - 0, cellKey
    max v - min v = 400 - (-500) = 900, for the sum and the weighted sum alike (the weighted contributions'
    range would be 900 - (-1000) = 1900); δ = x_1 · 0.1."""
    df = pd.DataFrame({"g": ["a"] * 4, "rk": [11_111_111, 23_456_789, 35_791_113, 48_642_086],
                       "v": [-500.0, 300.0, 0.0, 400.0], "w": [2.0, 3.0, 4.0, 1.0]})
    simple = {"type": "simple", "p": 0.1, "epsilon": [1]}
    for preset, x_1 in (("tauargus", 500), ("cellkey", 900)):
        params = {"preset": preset, "type": "range", "multiplier": simple}
        audit = sdc.ckm.sum_table(df, ["g"], digits=None, value="v", weight="w", record_key="rk", modulus=M, params=params,
                                  ptable=_tables(separation=False), audit=True, check_keys=False).set_index("g")
        for cell in ("a", "Total"):
            assert audit.loc[cell, "delta_value_1"] == pytest.approx(x_1 * 0.1, rel=1e-12), preset
            assert audit.loc[cell, "delta_weighted_value_1"] == pytest.approx(x_1 * 0.1, rel=1e-12), preset
        assert magnifiers(parse_params(params), 300.0, list(df.v * df.w), 10.0, values=list(df.v)) == [x_1]


@pytest.mark.parametrize("preset", ["tauargus", "cellkey"])
def test_sql_equals_the_one_cell_method_on_a_weighted_range(preset):
    """Negative values and zeros, weights, separation: the SQL equals the one-cell method in every cell, and
    its δ_1 is x_1 m(x_1) of the unweighted range tabulated here wherever that δ is neither capped at |x| nor
    below the separation point."""
    df = _microdata(seed=13)
    params = {"preset": preset, "type": "range", "multiplier": FLEX1, "separation": True}
    tables = _tables()
    audit = sdc.ckm.sum_table(df, ["region", "size"], digits=None, value="turnover", weight="w", record_key="rk", modulus=M,
                              params=params, ptable=tables, audit=True)
    parsed = parse_params(params)
    z_s = parsed.separation_point(tables.small_cells.variance_of_last_row())
    checked = 0
    for row in audit.itertuples():
        part = microdata_cell(df, row.region, row.size)
        spread = part.turnover.abs() if preset == "tauargus" else part.turnover
        x_1 = float(spread.max() - spread.min())
        for measure, weighted in (("value", part.turnover), ("weighted_value", part.turnover * part.w)):
            contributions, key = exact(part, weighted)
            x = float(getattr(row, f"original_{measure}"))
            expected, _ = perturb_cell(parsed, tables, x, contributions, key, M, values=list(part.turnover))
            assert getattr(row, measure) == pytest.approx(expected, rel=1e-9, abs=1e-6), (row.region, row.size, measure)
            delta = x_1 * flex(x_1)
            if x_1 >= z_s and abs(x) >= delta:
                assert getattr(row, f"delta_{measure}_1") == pytest.approx(delta, rel=1e-12)
                checked += 1
    assert checked >= 30


# ------------------------------------------------------------------------------------------- parity


def scrambled(key: int, times: int) -> int:
    """The 7-digit key with its first digit moved to the end, `times` times (ckm.md §3.5)."""
    for _ in range(times):
        key = key % 10**6 * 10 + key // 10**6
    return key


@pytest.mark.parametrize("preset", ["tauargus", "cellkey"])
def test_parity_counts_the_records_of_value_0(parity_ptable, preset):
    """top_contr, top_k 1, even/odd tables: a cell takes the table of the parity of its records, zeros
    included. (male, r4) has 1865 records, one of income 0: the odd table, though its 1864 contributors are
    even; so do (male, Total), (Total, r4) and (Total, Total). Each published value is worked out here: x_1
    the largest |income| (weighted: times the weight of that record, a tie to the larger weight), δ = x_1
    m(x_1), a = |x / δ|, V of the table at the cell key (τ-Argus: scrambled once; cellKey: as it is)."""
    tables, path = parity_ptable
    df = records()
    got = sdc.ckm.sum_table(df, ["sex", "roof"], digits=None, value="income", weight="sampling_weight", record_key="rkeys",
                            modulus=KEYS, params={"preset": preset, "type": "top_contr", "top_k": 1,
                                                  "multiplier": FLEX1, "version_keys": False},
                            ptable=path).set_index(["sex", "roof"])
    shifts = 1 if preset == "tauargus" else 0
    flipped = set()
    for cell, part in cells(df):
        nonzero = part[part.income != 0]
        key = scrambled(int(nonzero.rkeys.sum()) % KEYS, shifts)
        largest = part.assign(size=part.income.abs()).sort_values(["size", "sampling_weight"], ascending=False).iloc[0]

        def published(x, x_1, kind):
            delta = x_1 * flex(x_1)
            v = float(tables.tables[kind].lookup(Fraction(abs(x / delta)), Fraction(key * 10**8, KEYS)))
            return x + delta * v if v >= 0 else max(x + delta * v, 0.0)

        for measure, x, x_1 in (("value", part.income.sum(), largest.income),
                                ("weighted_value", (part.income * part.sampling_weight).sum(),
                                 largest.income * largest.sampling_weight)):
            kind = "even" if len(part) % 2 == 0 else "odd"
            expected = published(float(x), float(x_1), kind)
            assert got.loc[cell, measure] == pytest.approx(expected, rel=1e-12), (cell, measure)
            by_contributors = "even" if len(nonzero) % 2 == 0 else "odd"
            if by_contributors != kind:
                flipped.add(cell)
                other = published(float(x), float(x_1), by_contributors)
                assert got.loc[cell, measure] != pytest.approx(other, rel=1e-9)
    assert flipped == {("male", "r4"), ("male", "Total"), ("Total", "r4"), ("Total", "Total")}
    part = df[(df.sex == "male") & (df.roof == "r4")]
    assert (len(part), int((part.income != 0).sum()), int(part.income.sum())) == (1865, 1864, 9133736)
    assert int(part[part.income != 0].rkeys.sum()) % KEYS == 6943093  # its cell key, 0.6943093


@pytest.mark.parametrize("preset", ["tauargus", "cellkey"])
def test_sql_equals_the_one_cell_method_with_parity(parity_ptable, preset):
    """Zeros, negative values, weights: the SQL equals the one-cell method, and each cell's value is that of
    the one table of its records' parity (chosen here, given to the method as the only table)."""
    df = _microdata(seed=11)
    params = parse_params({"preset": preset, "type": "top_contr", "top_k": 1, "multiplier": FLEX1})
    tables, _ = parity_ptable
    got = sdc.ckm.sum_table(df, ["region", "size"], digits=None, value="turnover", weight="w", record_key="rk", modulus=M,
                            params={"preset": preset, "type": "top_contr", "top_k": 1, "multiplier": FLEX1},
                            ptable=tables)
    differ = changed = 0
    for row in got.itertuples():
        part = microdata_cell(df, row.region, row.size)
        one = NumsPTableSet({"all": tables.tables["even" if len(part) % 2 == 0 else "odd"]})
        differ += (len(part) - int((part.turnover != 0).sum())) % 2
        for measure, weighted in (("value", part.turnover), ("weighted_value", part.turnover * part.w)):
            contributions, key = exact(part, weighted)
            x = float(sum(Decimal(repr(c)) for c in contributions))
            for method_tables in (tables, one):
                expected, _ = perturb_cell(params, method_tables, x, contributions, key, M, values=list(part.turnover))
                assert getattr(row, measure) == pytest.approx(expected, rel=1e-9, abs=1e-6), (row, measure)
            other = NumsPTableSet({"all": tables.tables["odd" if len(part) % 2 == 0 else "even"]})
            changed += getattr(row, measure) != pytest.approx(
                perturb_cell(params, other, x, contributions, key, M, values=list(part.turnover))[0], rel=1e-9)
    assert differ >= 5 and changed >= 20  # cells whose records and contributors differ in parity; the parity tells
