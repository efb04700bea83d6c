"""Magnitude tables by the Cell Key Method (reference ckm.md §3.5, §4): the ptables, the method for one cell
(sdc.ckm.reference), and the SQL macro ckm_sum compared with it cell by cell on microdata.

The expected values come from the documents (the Handbook's interpolation example, cellKey's E = 1.34, the
magnitude ptables τ-Argus ships as test data) or from an independent tabulation of the microdata in pandas.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from sdc.errors import SdcError
from sdc.ckm.params import parse_params
from sdc.ckm.reference import perturb_cell, scramble, version_key
from sdc.ckm import sum_table
from sdc.ptable.nums import (
    NumsPTable,
    NumsPTableParams,
    combine,
    create_num_ptable,
    parse_nums_ptable,
    render_nums_ptable,
)

from weighted_count_noise import spread_noise

M = 10**8
FLEX = {"type": "flex", "fp": 1000, "p": [0.3, 0.03], "epsilon": [1, 0.5, 0.2], "q": 3}

# τ-Argus test data (sdcTools/tauargus data/cellkey/Magnitude/ptab_savings_all.txt), made by R's ptable with
# D = 5, V = 1, step = 2, icat = (1, 5): the upper interval bounds, rows 1 and 5
SAVINGS_ALL_UB = {
    1: "0.24006614 0.48013228 0.72019843 0.82396868 0.89079851 0.9333078 0.96001407 0.97658544 0.98674137 "
       "0.99288885 0.99656412 0.99873432 1",
    5: "0.00000074 0.00000874 0.00007565 0.000512 0.00272796 0.01149219 0.03848782 0.10324676 0.22423215 "
       "0.40026458 0.59973537 0.77576783 0.89675325 0.96151221 0.98850784 0.99727205 0.999488 0.99992435 "
       "0.99999126 0.99999926 1",
}
# ptab_savings_smallcells.txt: D = 8, V = 2, step = 2, icat = (1, 8); row 1 cannot reach V = 2 (ptable keeps
# the largest variance it reaches, 1.11013)
SMALLCELLS_ROW1_UB = ("0.24385038 0.48770077 0.73155115 0.82973047 0.89202763 0.9315567 0.95663885 0.97255409 "
                      "0.9826527 0.98906051 0.99312642 0.99570634 0.99734336 0.99838209 0.99904119 0.99945941 "
                      "0.99972478 0.99989316 1")
SMALLCELLS_ROW8_UB = ("0.00000002 0.00000013 0.0000008 0.00000445 0.00002186 0.00009515 0.00036744 0.00126025 "
                      "0.00384366 0.01044042 0.02530674 0.05487188 0.10676031 0.18712671 0.29697458 0.42947627 "
                      "0.57052369 0.70302543 0.81287322 0.89323963 0.94512809 0.97469326 0.9895596 0.99615644 "
                      "0.99873979 0.99963257 0.99990485 0.99997814 0.99999555 0.9999992 0.99999987 0.99999998 1")


def _ub(table, row):
    return table.ub_units[table.i == row] / 1e8


def _floats(text):
    return np.array([float(x) for x in text.split()])


# ------------------------------------------------------------------------------------------- ptables


def test_magnitude_ptable_reproduces_tau_argus_test_ptable():
    table = create_num_ptable(NumsPTableParams(D=5, V=1, step=2, icat=[1, 5])).table
    assert np.abs(_ub(table, 1) - _floats(SAVINGS_ALL_UB[1])).max() <= 1e-8
    # row 5: the published row is R's SLSQP result, 4e-8 short of the optimum (0.17603243 left of 0,
    # 0.17603246 right of it); ours is the exact optimum, symmetric around 0
    assert np.abs(_ub(table, 5) - _floats(SAVINGS_ALL_UB[5])).max() <= 1e-7
    p5 = table.p[table.i == 5]
    assert np.abs(p5 - p5[::-1]).max() <= 1e-8
    assert list(table.v[table.i == 1]) == [-1 + k / 2 for k in range(13)]  # j = 0, 0.5, .., 6
    assert table.rows == [0, 1, 5]


def test_magnitude_ptable_with_a_row_that_misses_the_variance():
    with pytest.raises(SdcError, match="row i=1 cannot reach V=2"):
        create_num_ptable(NumsPTableParams(D=8, V=2, step=2, icat=[1, 8]))
    built = create_num_ptable(NumsPTableParams(D=8, V=2, step=2, icat=[1, 8]), allow_lower_variance=True)
    assert built.warnings == ["row i=1 misses V=2: variance 1.11013"]
    assert np.abs(_ub(built.table, 1) - _floats(SMALLCELLS_ROW1_UB)).max() <= 1e-8
    # row 8: the published row is R's SLSQP result, which stops 5e-8 short of the optimum (its two halves
    # differ: 0.13250169 left of 0, 0.13250174 right of it); ours is the exact optimum, symmetric around 0
    assert np.abs(_ub(built.table, 8) - _floats(SMALLCELLS_ROW8_UB)).max() <= 1e-7
    p8 = built.table.p[built.table.i == 8]
    assert np.abs(p8 - p8[::-1]).max() <= 1e-8


def test_magnitude_ptable_rows_have_mean_zero_and_the_variance():
    table = create_num_ptable(NumsPTableParams(D=10, V=3, step=2, icat=[1, 5, 10], optim=[4, 1, 1])).table
    for i, mean, variance, total in table.row_stats():
        assert total == pytest.approx(1, abs=1e-12)
        assert abs(mean) < 1e-7
        assert variance == pytest.approx(0 if i == 0 else 3, abs=1e-6)
    assert sum(table.p) == pytest.approx(4)  # ptable's test: sum(pt_ex_nums()@pTable$p) == 4 (rows 0, 1, 5, 10)


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(D=5, V=1, icat=[2, 5]), "icat must hold 1 and D=5"),
        (dict(D=5, V=1, icat=[1, 5, 6]), "icat may not go above D=5"),
        (dict(D=10, V=1, step=5), r"D \* step = 50 is too large"),
        (dict(D=5, V=1, type="both"), "type must be one of"),
        (dict(D=5, V=-1), "V must be a positive number"),
    ],
)
def test_magnitude_ptable_parameters_are_checked(params, message):
    with pytest.raises(SdcError, match=message):
        create_num_ptable(NumsPTableParams(**params))


def test_magnitude_ptable_file_round_trip_and_checks():
    tables = combine(create_num_ptable(NumsPTableParams(D=5, V=1)).table,
                     create_num_ptable(NumsPTableParams(D=5, V=1, step=5, icat=[1, 3, 5], optim=[4, 1, 1],
                                                        type="small_cells")).table)
    text = render_nums_ptable(tables)
    again = parse_nums_ptable(text)
    assert render_nums_ptable(again) == text
    # the τ-Argus form (no lower bounds) reads back to the same intervals
    assert render_nums_ptable(parse_nums_ptable(render_nums_ptable(tables, "tauargus"))) == text
    lines = text.splitlines()
    with pytest.raises(SdcError, match="leaves a gap|overlaps"):
        parse_nums_ptable("\n".join(lines[:3] + lines[4:]))
    with pytest.raises(SdcError, match="needs the rows of type 'all'"):
        parse_nums_ptable("\n".join(line for line in lines if not line.endswith(",all")))


# ------------------------------------------------------------------------------------ one cell (§3.5, §4)


def _handbook_table():
    """The Handbook's toy table (ckm.md §4 T8) as magnitude rows 1..3 (its rows are not unbiased: a toy)."""
    rows = [(1, -1, 0, 0.5), (1, 1, 0.5, 1), (2, 0, 0, 0.8), (2, 1, 0.8, 1), (3, -1, 0, 0.3), (3, 0, 0.3, 0.7),
            (3, 1, 0.7, 1)]
    return NumsPTable("all", np.array([r[0] for r in rows]), np.array([r[1] * 10**4 for r in rows]),
                      np.array([round(r[2] * 1e8) for r in rows]), np.array([round(r[3] * 1e8) for r in rows]))


@pytest.mark.parametrize(
    "p, key, expected",
    [
        # x = 300, largest contribution 200, δ = 0.6 · 200: a = 2.5, v(2) = 0, v(3) = 1 -> 300 + 120 · 0.5 = 360
        (0.6, 79_999_999, 360),
        # δ = 0.5 · 200: a = 3 (the last row), v = 1 -> 400
        (0.5, 79_999_999, 400),
        # The Handbook's key is 0.8 itself, with its convention lb < ck <= ub: 0.8 lies in row 2's first
        # interval (0, 0.8]. We follow cellKey and τ-Argus, lb <= ck < ub: 0.8 opens row 2's second interval
        # (v = 1), so the same cell gets 300 + 120 · 1 = 420; a key just below 0.8 gives the printed 360.
        (0.6, 80_000_000, 420),
    ],
)
def test_handbook_interpolation_example(p, key, expected):
    params = parse_params({"preset": "cellkey", "type": "top_contr", "top_k": 1,
                           "multiplier": {"type": "simple", "p": p, "epsilon": [1]}})
    value, components = perturb_cell(params, combine(_handbook_table()), 300, [200, 100], key, M)
    assert value == pytest.approx(expected, abs=1e-9)
    assert components[0].ratio == pytest.approx(300 / (200 * p))


def test_separation_point_and_e():
    params = parse_params({"type": "top_contr", "top_k": 3, "separation": True,
                           "multiplier": {**FLEX, "epsilon": [1, 0.5, 0.3]}})
    assert params.multiplier.e == pytest.approx(1.34)  # cellKey tests/testthat/test_numvars.R
    # z_s = sqrt(m1²) / (σ1 sqrt(E)); with a small-cells table of variance 1 on its last row: 1 / (0.3 · sqrt(1.34))
    assert params.separation_point(1.0) == pytest.approx(1 / (0.3 * math.sqrt(1.34)))
    assert parse_params({"multiplier": FLEX | {"epsilon": [1]}}).separation_point(None) == 0


def test_flex_function():
    m = parse_params({"multiplier": FLEX | {"epsilon": [1]}}).multiplier
    assert m.m(500) == 0.3 and m.m(1000) == pytest.approx(0.3)  # σ1 up to fp, continuous at fp
    assert m.m(1e9) == pytest.approx(0.03, rel=1e-3)  # towards σ0 for large values
    assert m.m(2000) < m.m(1500) < m.m(1000)


def test_scrambling_moves_the_first_digit_to_the_end():
    assert scramble(12345678, M, 1) == 23456781
    assert scramble(12345678, M, 2) == 34567812
    assert scramble(1234567, M, 1) == 12345670  # 0.01234567 -> 0.12345670
    assert scramble(12345678, M, 8) == 12345678


# --------------------------------------------------------------------------- the SQL against one cell's method


def _microdata(n=3000, seed=7):
    rng = np.random.default_rng(seed)
    value = np.round(rng.lognormal(6, 1.5, n), 2)
    value[rng.random(n) < 0.1] = 0  # records that contribute nothing
    value[rng.random(n) < 0.05] *= -1  # a few negative contributions
    return pd.DataFrame({
        "region": rng.choice(["N", "S", "E", "W"], n, p=[0.5, 0.3, 0.15, 0.05]),
        "size": rng.choice(["1", "2", "3"], n, p=[0.6, 0.35, 0.05]),
        "rk": rng.integers(0, M, n),
        "turnover": value,
        "w": np.round(rng.uniform(1, 40, n), 3),
    })


def _tables(separation=True, parity=False):
    parts = []
    if parity:
        parts += [create_num_ptable(NumsPTableParams(D=5, V=1, type="even")).table,
                  create_num_ptable(NumsPTableParams(D=6, V=1, icat=[1, 3, 6], type="odd")).table]
    else:
        parts.append(create_num_ptable(NumsPTableParams(D=5, V=1, icat=[1, 5])).table)
    if separation:
        parts.append(create_num_ptable(NumsPTableParams(D=5, V=1, step=5, icat=[1, 3, 5], optim=[4, 1, 1],
                                                        type="small_cells")).table)
    return combine(*parts)


def _expected(df, dims, params, tables, value, weight=None, rules_inclusive=False, rank_by_value=True,
              table_weight=None):
    """Each cell of the cube tabulated in pandas, then perturbed by the one-cell method (weighted
    contributions ranked by their records' values; rank_by_value=False: by themselves). ``table_weight``: the
    weight of the table whose unweighted measure this is (its records' version keys hold the weight too)."""
    params = parse_params(params)
    d = df.copy()
    contribution = d[value] * d[weight] if weight else d[value]
    d["c"] = [Decimal(repr(float(x))).quantize(Decimal("0.000001"), ROUND_HALF_EVEN) for x in contribution]
    d["v"] = [Decimal(repr(float(x))).quantize(Decimal("0.000001"), ROUND_HALF_EVEN) for x in d[value]]
    d["wt"] = d[weight] if weight else 1.0
    # each record's key for its version: weight, value, weighted value (as ckm_sum's measures) behind its key
    keyed = weight or table_weight
    d["vk"] = [version_key(r.rk, [getattr(r, keyed), getattr(r, value), getattr(r, value) * getattr(r, keyed)]
                           if keyed else [getattr(r, value)], M) for r in d.itertuples()]
    out = {}
    for keep in [(True, True), (True, False), (False, True), (False, False)]:
        grouped = [dim for dim, k in zip(dims, keep) if k]
        groups = d.groupby(grouped) if grouped else [((), d)]
        for key, part in groups:
            key = key if isinstance(key, tuple) else (key,)
            labels = iter(key)
            cell = tuple(next(labels) if k else "Total" for k in keep)
            contributions = [float(c) for c in part["c"]]
            nonzero = part[part["c"] != 0]
            keys = part["vk"] if params.version_keys else part["rk"]
            ck = int(keys[part["c"] != 0].sum()) % M if not params.use_zero_rkeys else int(keys.sum()) % M
            records = len(part)
            sensitive = any(0 < records < int(r.split(":")[1]) for r in params.sensitive if r.startswith("freq:"))
            x = float(sum(part["c"]))
            out[cell] = perturb_cell(params, tables, x, contributions, ck, M, weight_sum=float(part["wt"].sum()),
                                     sensitive=sensitive,
                                     values=[float(v) for v in part["v"]] if rank_by_value else None)[0]
    return out


PARAM_SETS = {
    "tauargus top 3, separation, mu_c": {"preset": "tauargus", "type": "top_contr", "top_k": 3, "multiplier": FLEX,
                                         "mu_c": 2, "sensitive": ["freq:40"], "separation": True},
    "cellkey top 3, separation, mu_c": {"preset": "cellkey", "type": "top_contr", "top_k": 3, "multiplier": FLEX,
                                        "mu_c": 2, "sensitive": ["freq:40"], "separation": True},
    "cellkey top 2, other key, zero keys": {"preset": "cellkey", "type": "top_contr", "top_k": 2, "same_key": False,
                                            "use_zero_rkeys": True,
                                            "multiplier": {"type": "simple", "p": 0.05, "epsilon": [1, 0.5]}},
    "mean": {"type": "mean", "multiplier": {"type": "simple", "p": 0.1, "epsilon": [1]}},
    "range": {"type": "range", "multiplier": FLEX | {"epsilon": [1]}, "separation": True},
    "sum": {"type": "sum", "preset": "cellkey", "multiplier": FLEX | {"epsilon": [1]}},
}


@pytest.mark.parametrize("name", PARAM_SETS)
def test_sql_equals_the_one_cell_method(name):
    df = _microdata()
    params = PARAM_SETS[name]
    tables = _tables(separation=params.get("separation", False))
    got = sum_table(df, ["region", "size"], digits=None, value="turnover", record_key="rk", modulus=M, params=params, ptable=tables)
    expected = _expected(df, ["region", "size"], params, tables, "turnover")
    assert len(got) == len(expected) == 4 * 3 + 4 + 3 + 1
    for row in got.itertuples():
        assert row.value == pytest.approx(expected[(row.region, row.size)], rel=1e-9, abs=1e-6), (row.region, row.size)


def test_sql_equals_the_one_cell_method_with_parity_and_weights():
    df = _microdata(seed=11)
    params = {"type": "top_contr", "top_k": 1, "multiplier": FLEX | {"epsilon": [1]}}
    tables = _tables(separation=False, parity=True)
    got = sum_table(df, ["region", "size"], digits=None, value="turnover", weight="w", record_key="rk", modulus=M,
                    params=params, ptable=tables)
    unweighted = _expected(df, ["region", "size"], params, tables, "turnover", table_weight="w")
    weighted = _expected(df, ["region", "size"], params, tables, "turnover", weight="w")
    for row in got.itertuples():
        assert row.value == pytest.approx(unweighted[(row.region, row.size)], rel=1e-9, abs=1e-6)
        assert row.weighted_value == pytest.approx(weighted[(row.region, row.size)], rel=1e-9, abs=1e-6)


@pytest.mark.parametrize("preset", ["tauargus", "cellkey"])
def test_sql_equals_the_one_cell_method_on_weighted_contributions_ranked_by_value(preset):
    """Both presets rank the weighted contributions by their records' values, a tie by the larger weight (as
    τ-Argus and cellKey do): three components, separation, mu_c; turnover in hundreds, so that values tie."""
    df = _microdata(seed=5)
    df["turnover"] = (df["turnover"] / 100).round() * 100
    params = {"preset": preset, "type": "top_contr", "top_k": 3, "multiplier": FLEX, "mu_c": 2,
              "sensitive": ["freq:40"], "separation": True}
    tables = _tables()
    got = sum_table(df, ["region", "size"], digits=None, value="turnover", weight="w", record_key="rk", modulus=M,
                    params=params, ptable=tables)
    weighted = _expected(df, ["region", "size"], params, tables, "turnover", weight="w")
    unweighted = _expected(df, ["region", "size"], params, tables, "turnover", table_weight="w")
    assert len(got) == len(weighted) == 20
    for row in got.itertuples():
        assert row.weighted_value == pytest.approx(weighted[(row.region, row.size)], rel=1e-9, abs=1e-6)
        assert row.value == pytest.approx(unweighted[(row.region, row.size)], rel=1e-9, abs=1e-6)
    # the ranking decides: in most cells the records of the largest values are not those of the largest
    # weighted contributions
    by_contribution = _expected(df, ["region", "size"], params, tables, "turnover", weight="w", rank_by_value=False)
    assert sum(weighted[c] != by_contribution[c] for c in weighted) >= 10


# ------------------------------------------------------------------------------------------- properties


def test_noise_is_zero_mean_over_cell_keys_and_bounded():
    """For a fixed cell, the noise averaged over all cell keys is 0 (each ptable row has mean 0 and the
    interpolation is linear), and |noise| <= Σ_j δ_j (D + μ)."""
    params = parse_params({"preset": "tauargus", "type": "top_contr", "top_k": 3, "multiplier": FLEX})
    tables = _tables(separation=False)
    contributions = [40_000.0, 25_000.0, 9_000.0] + [1_000.0] * 60  # a large cell: no clamp binds
    x = sum(contributions)
    keys = np.random.default_rng(2).integers(0, M, 20000)
    noise = []
    for key in keys:
        value, components = perturb_cell(params, tables, x, contributions, int(key), M)
        noise.append(value - x)
        assert abs(value - x) <= sum(c.delta * 5 for c in components) + 1e-9
        assert value > 0
    noise = np.array(noise)
    # the keys are random: the mean lies within 4 standard errors of 0
    assert abs(noise.mean()) < 4 * noise.std() / math.sqrt(len(noise))
    assert noise.std() > 0.3 * components[0].delta  # it does perturb


def test_properties_of_a_protected_table():
    df = _microdata(seed=3)
    params = PARAM_SETS["tauargus top 3, separation, mu_c"]
    tables = _tables()
    audit = sum_table(df, ["region", "size"], digits=None, value="turnover", record_key="rk", modulus=M, params=params,
                      ptable=tables, audit=True)
    original = audit["original_value"].astype(float)
    # no sign change, zero stays zero
    assert ((audit["value"] >= 0) == (original >= 0)).all() and ((audit["value"] <= 0) == (original <= 0)).all()
    # bounded: each component adds at most δ_j (D + mu_c), D = 5
    bound = sum(audit[f"delta_value_{j}"].fillna(0) for j in (1, 2, 3)) * (5 + 2)
    assert ((audit["value"] - original).abs() <= bound + 1e-6).all()
    assert (audit["value"] != original).mean() > 0.5


def test_same_cell_same_value_in_two_tables():
    """The margins of region are the same cells in a table by region x size and a table by region alone."""
    df = _microdata(seed=5)
    params = PARAM_SETS["cellkey top 3, separation, mu_c"]
    tables = _tables()
    two = sum_table(df, ["region", "size"], digits=None, value="turnover", record_key="rk", modulus=M, params=params, ptable=tables)
    one = sum_table(df.sample(frac=1, random_state=1), ["region"], digits=None, value="turnover", record_key="rk", modulus=M,
                    params=params, ptable=tables)
    margins = two[two["size"] == "Total"].set_index("region")["value"]
    assert (one.set_index("region")["value"] == margins).all()  # exact: sums and keys are exact


def test_zero_cells_stay_zero():
    df = pd.DataFrame({"g": ["a", "a", "b", "b"], "rk": [10, 20, 30, 40], "v": [0.0, 0.0, 5.0, 7.0]})
    params = {"type": "top_contr", "top_k": 2, "multiplier": {"type": "simple", "p": 0.5, "epsilon": [1, 0.5]}}
    got = sum_table(df, ["g"], digits=None, value="v", record_key="rk", modulus=M, params=params, ptable=_tables(False),
                    check_keys=False)
    assert got.set_index("g").loc["a", "value"] == 0


def test_a_complete_table_publishes_empty_cells_as_zero():
    """As ckm_count: every cell of the frame (region x size), the empty one (W, 3) with value 0; the others
    are the same cells, with the same values, as without the frame."""
    df = _microdata(seed=4)
    df = df[~((df["region"] == "W") & (df["size"] == "3"))]
    run = dict(value="turnover", record_key="rk", modulus=M, params=PARAM_SETS["sum"], ptable=_tables(False))
    complete = sum_table(df, ["region", "size"], digits=None, **run).set_index(["region", "size"])["value"]
    sparse = sum_table(df, ["region", "size"], digits=None, complete=False, **run).set_index(["region", "size"])["value"]
    assert len(complete) == 4 * 3 + 4 + 3 + 1 and len(sparse) == len(complete) - 1
    assert complete.loc[("W", "3")] == 0
    assert (complete.drop(("W", "3")) == sparse.loc[complete.drop(("W", "3")).index]).all()


@pytest.mark.parametrize("name", ["x_value_0", "MAG_value_2", "key_1", "noise_weighted_value", "v_1_all_5",
                                  "delta_raw_value_3", "top_2"])
def test_a_dimension_named_like_a_column_family_of_the_method_is_refused(name):
    """ckm_sum's steps add column families (x_<measure>_<j>, key_<j>, v_<j>_<type>_<row>, ...): a dimension
    of such a name would be overwritten; the Python API and the macro refuse it, naming it."""
    import duckdb

    from sdc.warehouse.macro_renderer import render_macro

    df = _microdata(n=200).rename(columns={"region": name})
    with pytest.raises(SdcError, match=f"dimension '{name}' has the name of a column"):
        sum_table(df, [name], digits=None, value="turnover", record_key="rk", modulus=M, params=PARAM_SETS["sum"],
                  ptable=_tables(False))
    con = duckdb.connect()
    con.register("micro", df.rename(columns={"rk": "rk"}))
    with pytest.raises(Exception, match=f"dimension '{name}' has the name of a column"):
        render_macro(con, "ckm_sum", "micro", [name], value="turnover", params=PARAM_SETS["sum"], ptable="pt",
                     check_keys=False)


def test_publication_refuses_the_audit_columns_of_a_magnitude_table():
    from sdc.release.publish import unpublishable

    for column in ("original_value", "noise_value_1", "delta_weighted_count_2", "contributors_weighted_value",
                   "noise_value", "records", "sensitive", "sensitive_rule", "original_weighted_count", "cell_key"):
        assert unpublishable(column), column
    for column in ("value", "weighted_value", "weighted_count", "count", "region", "noise_level"):
        assert not unpublishable(column), column


def test_quality_figures_of_a_magnitude_table_match_numpy():
    import sdc.ckm

    df = _microdata(seed=9)
    audit = sum_table(df, ["region", "size"], digits=None, value="turnover", record_key="rk", modulus=M,
                      params=PARAM_SETS["tauargus top 3, separation, mu_c"], ptable=_tables(), audit=True)
    figures = sdc.ckm.sum_quality(audit, "turnover").iloc[0]
    o = audit["original_value"].astype(float).to_numpy()
    p = audit["value"].to_numpy()
    keep = o != 0
    rad = np.abs(p[keep] - o[keep]) / np.abs(o[keep])
    assert figures["cells"] == keep.sum() == 20
    assert figures["changed_share"] == pytest.approx(np.mean(p[keep] != o[keep]))
    assert figures["mean_relative_deviation"] == pytest.approx(rad.mean())
    assert figures["rad_median"] == pytest.approx(np.quantile(rad, 0.5))
    assert figures["rad_p90"] == pytest.approx(np.quantile(rad, 0.9))
    assert figures["max_relative_noise"] == pytest.approx(rad.max())
    assert figures["share_rad_below_5pct"] == pytest.approx(np.mean(rad < 0.05))
    assert figures["sign_changes"] == 0 and 0 < figures["max_relative_noise"] < 1


def test_means_are_perturbed_sum_over_perturbed_count(tmp_path):
    import sdc.ckm
    from sdc.ptable import PTableParams, create_ptable
    from sdc.ptable.formats import write_ptable

    df = _microdata(seed=10)
    write_ptable(create_ptable(PTableParams(D=3, V=1.5, js=1)).table, tmp_path / "cnt.csv")
    sums = sum_table(df, ["region"], digits=None, value="turnover", record_key="rk", modulus=M, params=PARAM_SETS["sum"],
                     ptable=_tables(False))
    counts = sdc.ckm.count_table(df, ["region"], digits=None, record_key="rk", modulus=M, ptable=tmp_path / "cnt.csv",
                                 threshold=200)
    means = sdc.ckm.mean_table(sums, counts, ["region"]).set_index("region")["mean_value"]
    joined = sums.set_index("region").join(counts.set_index("region"))
    for region, row in joined.iterrows():
        if pd.isna(row["count"]):  # a count below the threshold: no mean
            assert pd.isna(means[region])
        else:
            assert means[region] == pytest.approx(row["value"] / row["count"], rel=1e-12)
    assert means.isna().sum() >= 1 and means.notna().sum() >= 3
    with pytest.raises(SdcError, match="column 'weighted_count' is not in counts"):
        sdc.ckm.mean_table(sums, counts, ["region"], denominator="weighted_count")
    # dims that are not the tables' dimensions would pair every sum with every count: refused
    two = sum_table(df, ["region", "size"], digits=None, value="turnover", record_key="rk", modulus=M, params=PARAM_SETS["sum"],
                    ptable=_tables(False))
    with pytest.raises(SdcError, match=r"ckm_mean: dims region are not the dimensions of sums \(its columns besides "
                                       r"the measures: region, size\)"):
        sdc.ckm.mean_table(two, counts, ["region"])
    with pytest.raises(SdcError, match=r"dims region are not the dimensions of counts \(its columns besides the "
                                       r"measures: region, size\)"):
        sdc.ckm.mean_table(sums, counts.assign(size="Total"), ["region"])


# ------------------------------------------------------------------------- where τ-Argus and cellKey differ


def _one_cell(preset, contributions, key, **extra):
    """One cell whose record keys sum to ``key``: the cell key itself (not the records' keys for their versions)."""
    df = pd.DataFrame({"g": ["a"] * len(contributions), "v": contributions,
                       "rk": [key] + [0] * (len(contributions) - 1)})
    params = {"preset": preset, "version_keys": False, **extra}
    return sum_table(df, ["g"], digits=None, value="v", record_key="rk", modulus=M, params=params, ptable=_tables(False),
                     totals="none", audit=True, check_keys=False).iloc[0]


def test_presets_differ_in_epsilon_below_fp():
    # component 2 below fp: τ-Argus δ_2 = x_2 · p_small · ε_2, cellKey δ_2 = x_2 · p_small
    for preset, expected in (("tauargus", 300 * 0.3 * 0.5), ("cellkey", 300 * 0.3)):
        row = _one_cell(preset, [900.0, 300.0, 50.0], 12345678, type="top_contr", top_k=2,
                        multiplier=FLEX | {"epsilon": [1, 0.5]})
        assert row["delta_value_2"] == pytest.approx(expected)


def test_presets_differ_in_mu_c():
    # a sensitive cell: τ-Argus adds mu_c to component 1 only; cellKey to every component
    common = dict(type="top_contr", top_k=2, mu_c=3, sensitive=["freq:10"],
                  multiplier={"type": "simple", "p": 0.1, "epsilon": [1, 0.5]})
    for preset in ("tauargus", "cellkey"):
        row = _one_cell(preset, [900.0, 300.0, 50.0], 77777777, **common)
        assert row["sensitive"]
        for j in (1, 2):
            noise, delta = row[f"noise_value_{j}"], row[f"delta_value_{j}"]
            if noise != 0:
                with_mu = preset == "cellkey" or j == 1
                assert abs(noise) >= (3 * delta if with_mu else 0) - 1e-9
                assert (abs(noise) <= 5 * delta + 1e-9) == (not with_mu or abs(noise) < 3 * delta + 5 * delta)


def test_presets_differ_in_the_clamp():
    """cellKey adds mu_c to every component and so clamps every component: with a large mu_c, component 2
    would push a sensitive cell below 0, and the clamp stops it at exactly 0. τ-Argus clamps only component 1,
    which it may: it adds mu_c to component 1 only, and without mu_c a component cannot change the sign
    (the ptable's targets j >= 0 give V >= -a, so x̂ = δ V >= -|x|)."""
    # 22 records, x = 700: component 1 (δ = 20) moves it by 20 (20 + |V|) to 1100..1200 or 300..200, where
    # component 2 (δ = 20) down by 20 (20 + |V|) >= 400 needs the clamp
    params = dict(type="top_contr", top_k=2, mu_c=20, sensitive=["freq:30"],
                  multiplier={"type": "simple", "p": 0.2, "epsilon": [1, 1]})
    values = {"tauargus": [], "cellkey": []}
    df = pd.DataFrame({"g": [f"c{k}" for k in range(300) for _ in range(22)],
                       "v": ([100.0, 100.0] + [25.0] * 20) * 300,
                       "rk": np.random.default_rng(4).integers(0, M, 22 * 300)})
    for preset in values:
        got = sum_table(df, ["g"], digits=None, value="v", record_key="rk", modulus=M, params={"preset": preset, **params},
                        ptable=_tables(False), totals="none", audit=True, check_keys=False)
        values[preset] = got
    cellkey = values["cellkey"]
    assert (cellkey["value"] >= 0).all()
    clamped = cellkey[(cellkey["noise_value_2"] < 0) & (cellkey["value"] == 0)]
    assert len(clamped) > 0  # the clamp of component 2 bound
    assert (values["tauargus"]["value"] >= 0).all()


def test_presets_differ_in_the_key_of_component_1():
    key = 12345678
    tables = _tables(False)
    for preset, key_used in (("tauargus", scramble(key, M, 1)), ("cellkey", key)):
        params = parse_params({"preset": preset, "type": "top_contr", "top_k": 1,
                               "multiplier": {"type": "simple", "p": 0.1, "epsilon": [1]}})
        row = _one_cell(preset, [5000.0, 100.0], key, type="top_contr", top_k=1,
                        multiplier={"type": "simple", "p": 0.1, "epsilon": [1]})
        ratio = 5100 / 500
        expected = tables.tables["all"].lookup(Fraction(ratio), Fraction(key_used * 10**8, M))
        assert row["noise_value_1"] == pytest.approx(float(expected) * 500)
        assert params.same_key == (preset == "cellkey")


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "params, message",
    [
        ({"top_k": 7, "multiplier": FLEX}, "top_k must be a whole number from 1 to 6"),
        ({"top_k": 0, "multiplier": FLEX}, "top_k must be a whole number from 1 to 6"),
        ({"topk": 3, "multiplier": FLEX}, "unknown parameter 'topk'"),
        ({"multiplier": FLEX | {"epsilon": [1], "fpp": 3}}, "unknown multiplier parameter 'fpp'"),
        ({"top_k": 2, "multiplier": FLEX | {"epsilon": [1]}}, "epsilon has 1 values but there are 2"),
        ({"multiplier": FLEX | {"epsilon": [1], "q": 1}}, "q must be a number > 1"),
        ({"mu_c": 2, "multiplier": FLEX | {"epsilon": [1]}}, "no rule makes a cell sensitive"),
        ({"preset": "sdcmicro", "multiplier": FLEX | {"epsilon": [1]}}, "preset must be one of"),
    ],
)
def test_bad_parameters_are_named(params, message):
    with pytest.raises(SdcError, match=message):
        parse_params(params)


def test_bad_input_is_refused():
    df = _microdata(n=300)
    params = {"type": "top_contr", "top_k": 1, "multiplier": FLEX | {"epsilon": [1]}, "separation": True}
    run = dict(record_key="rk", modulus=M, params=params)
    with pytest.raises(SdcError, match="no small_cells part"):
        sum_table(df, ["region"], digits=None, value="turnover", ptable=_tables(separation=False), **run)
    with pytest.raises(SdcError, match="column 'region' must be numeric"):
        sum_table(df, ["size"], digits=None, value="region", ptable=_tables(), **run)
    for bad in (np.nan, np.inf):
        broken = df.copy()
        broken.loc[5, "turnover"] = bad
        with pytest.raises(SdcError, match="value column \"?turnover\"? must be a finite number"):
            sum_table(broken, ["region"], digits=None, value="turnover", ptable=_tables(), **run)
    for bad in (0.0, -1.0, np.nan):
        broken = df.copy()
        broken.loc[5, "w"] = bad
        with pytest.raises(SdcError, match="weight column \"?w\"? must be positive and finite"):
            sum_table(broken, ["region"], digits=None, value="turnover", weight="w", ptable=_tables(), **run)
    with pytest.raises(SdcError, match="must be a power of 10"):
        sum_table(df, ["region"], digits=None, value="turnover", ptable=_tables(), **{**run, "modulus": 4096})
    # contributions are exact 6-decimal numbers below 10^12: a larger one is named, with the way out; so is a
    # product value x weight beyond it
    broken = df.copy()
    broken.loc[7, "turnover"] = 2.5e12
    with pytest.raises(SdcError, match=r"contributions to value \(column turnover\) must be below 10\^12.*a record "
                                       r"has 2500000000000.*give the column in larger units"):
        sum_table(broken, ["region"], digits=None, value="turnover", ptable=_tables(), **run)
    broken = df.copy()
    broken.loc[7, ["turnover", "w"]] = [9e10, 20.0]
    with pytest.raises(SdcError, match=r"contributions to weighted_value \(turnover x w\) must be below 10\^12"):
        sum_table(broken, ["region"], digits=None, value="turnover", weight="w", ptable=_tables(), **run)


# ------------------------------------------------------------------------------------------- weighted counts


def _denominator_attack(count, weighted):
    """The original count read back as the denominator of the mean weight: with integer weights, n · (W / n')
    is the integer sum of weights only for the true n (when W = n' · S / n)."""
    candidates = range(max(1, count - 3), count + 4)
    return min(candidates, key=lambda n: abs(n * weighted / count - round(n * weighted / count)))


def test_weighted_counts_do_not_reveal_the_original_count(tmp_path):
    rng = np.random.default_rng(8)
    n = 1200
    df = pd.DataFrame({"g": rng.choice([f"c{k:02d}" for k in range(60)], n), "rk": rng.integers(0, M, n),
                       "w": rng.integers(50, 150, n)})
    counts_ptable = tmp_path / "cnt.csv"
    from sdc.ptable import PTableParams, create_ptable
    from sdc.ptable.formats import write_ptable

    write_ptable(create_ptable(PTableParams(D=3, V=1.5, js=1)).table, counts_ptable)
    params = {"type": "top_contr", "top_k": 1, "multiplier": FLEX | {"epsilon": [1]}}
    from sdc.ckm import weighted_count_table

    got = weighted_count_table(df, ["g"], digits=None, weight="w", record_key="rk", modulus=M, ptable=counts_ptable,
                               params=params, nums_ptable=_tables(False), totals="none", audit=True)
    truth = df.groupby("g").agg(n=("w", "size"), s=("w", "sum"))
    got = got.set_index("g").join(truth)
    assert (got["original"] == got["n"]).all() and (got["original_weighted_count"] == got["s"]).all()
    perturbed = got[got["count"] != got["n"]]
    assert len(perturbed) >= 20
    # cellKey's and τ-Argus's weighted count, count' · S / n, gives the original count away ...
    scaled = [_denominator_attack(c, c * s / n) for c, s, n in zip(perturbed["count"], perturbed["s"], perturbed["n"])]
    assert np.mean(np.array(scaled) == perturbed["n"].to_numpy()) > 0.7
    # ... the magnitude-perturbed sum of weights does not: the attack is no better than a guess among 7
    ours = [_denominator_attack(c, w) for c, w in zip(perturbed["count"], perturbed["weighted_count"])]
    assert np.mean(np.array(ours) == perturbed["n"].to_numpy()) < 0.35
    # and the weighted count is the sum of weights perturbed as sum_table perturbs it plus the count's noise
    # times the cell's smallest weight (red team 6) plus the second noise times the cell's spread of weights
    # (red team 3); 0 where the count was perturbed to 0 (a false zero must not show a weight)
    sums = sum_table(df, ["g"], digits=None, weight="w", record_key="rk", modulus=M, params=params, ptable=_tables(False),
                     totals="none", audit=True).set_index("g")
    positive = got["count"] > 0
    smallest = df.groupby("g")["w"].min()
    spread = df.groupby("g")["w"].max() - smallest
    second = pd.Series({g: spread_noise(cell["rk"].tolist(), cell["w"].tolist(), counts_ptable, M)
                        for g, cell in df.groupby("g")})
    cells = got.index[positive]
    assert np.allclose(got.loc[positive, "weighted_count"],
                       np.maximum(sums.loc[cells, "weighted_count"]
                                  + (got["count"] - got["n"])[positive] * smallest[cells]
                                  + second[cells] * spread[cells], smallest[cells]), rtol=1e-12)
    assert (got.loc[positive, "weighted_count"] > 0).all() and (got.loc[~positive, "weighted_count"] == 0).all()
    sums = sums.join(truth)
    assert ((sums["weighted_count"] - sums["s"]).abs() <= sums["delta_weighted_count_1"] * 5 + 1e-6).all()


def test_cli_magnitude_table(tmp_path):
    from sdc.cli import main

    df = _microdata(n=800)
    df.to_csv(tmp_path / "micro.csv", index=False)
    from sdc.ptable.nums import write_nums_ptable

    write_nums_ptable(_tables(), tmp_path / "nums.csv")
    (tmp_path / "params.yml").write_text(
        "preset: cellkey\ntype: top_contr\ntop_k: 3\n"
        "multiplier: {type: flex, fp: 1000, p: [0.3, 0.03], epsilon: [1, 0.5, 0.2], q: 3}\n"
        "mu_c: 2\nsensitive: ['freq:40']\nseparation: true\nptable: nums.csv\n")
    out = tmp_path / "out.csv"
    args = ["ckm", "--input", str(tmp_path / "micro.csv"), "--dims", "region,size", "--record-key", "rk",
            "--key-digits", "8", "--value", "turnover", "--params", str(tmp_path / "params.yml"), "--out", str(out)]
    assert main(args) == 0
    got = pd.read_csv(out, dtype={"size": str})
    expected = sum_table(df, ["region", "size"], value="turnover", record_key="rk", modulus=M,
                         params=tmp_path / "params.yml")  # both round to whole units by default
    assert list(got.columns) == ["region", "size", "value"]
    assert np.allclose(got["value"], expected["value"], rtol=1e-12)
    # a bad parameter file writes nothing
    (tmp_path / "params.yml").write_text("top_k: 9\nmultiplier: {type: simple, p: 0.1}\n")
    out.unlink()
    assert main(args) == 2 and not out.exists()


def test_a_null_value_stops_the_table_naming_the_cell_and_the_guide_says_what_to_do():
    """New user D12: ckm_sum over an income with NULLs stopped with a clear message, but no page said what to do.
    The message names the cell; the analytics engineer's guide, where the magnitude tables are built, gives the
    two ways (leave the records out in a staging view, or count a missing value as 0)."""
    from pathlib import Path

    df = _microdata(n=300)
    df["turnover"] = df["turnover"].astype(object)
    df.loc[5, "turnover"] = None
    with pytest.raises(SdcError, match=r"value column \"?turnover\"? must be a finite number; a record has NULL "
                                       r"\(in the cell region = \w+"):
        sum_table(df, ["region"], digits=None, value="turnover", record_key="rk", modulus=M,
                  params={"type": "sum", "multiplier": {"type": "simple", "p": 0.05, "epsilon": [1]}},
                  ptable=_tables(separation=False))
    guide = (Path(__file__).parent.parent / "docs" / "guides" / "analytics-engineer.md").read_text(encoding="utf-8")
    section = guide[guide.index("## Magnitude tables in dbt"):]
    section = section[:section.index("\n## ")]
    assert "stops the build on a NULL, naming the cell" in section
    assert "where income is not null" in section and "coalesce(income, 0)" in section
