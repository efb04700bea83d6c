"""Sensitive cells of the magnitude Cell Key Method always move by at least mu_c δ_1 (red team 7, new-user
trial D4): where the ptable draws V = 0 for a cell that a rule flags, the sign comes from the component key's
last binary digit. Checked on the demo's turnover table (its records, keys, parameters and ptables), and on
the one-cell method against the SQL for cells whose ptable noise is 0."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml

import sdc.ckm
from sdc.demo import write_enterprises
from sdc.warehouse.loader import load_microdata
from sdc.ckm.params import parse_params
from sdc.ckm.reference import perturb_cell
from sdc.ptable.nums import NumsPTableParams, combine, create_num_ptable

REPO = Path(__file__).parent.parent
DEMO = REPO / "demo"
M = 10**8


@pytest.fixture(scope="module")
def demo_turnover(tmp_path_factory):
    """The demo's turnover cells (ckm_umsatz_nach_wz_region) with the audit columns, on its keyed load."""
    tmp = tmp_path_factory.mktemp("turnover")
    write_enterprises(tmp / "enterprises.parquet")
    load_microdata(tmp / "sdc.duckdb", tmp / "enterprises.parquet", "enterprises", id_column="id",
                   key_mode="keyed", secret=b"test secret of the demo suite")
    con = duckdb.connect(str(tmp / "sdc.duckdb"), read_only=True)
    try:
        records = con.execute("select wz, region, umsatz, rk from raw.enterprises").df()
    finally:
        con.close()
    params = yaml.safe_load((DEMO / "dbt_project.yml").read_text())["vars"]["sdc_magnitude_params"]
    hierarchy = pd.read_csv(DEMO / "seeds" / "sdc_hierarchies.csv", dtype=str, keep_default_na=False)
    audit = sdc.ckm.sum_table(records, ["wz", "region"], value="umsatz", record_key="rk", modulus=M, params=params,
                              ptable=DEMO / "seeds" / "sdc_nums_ptable.csv", hierarchy=hierarchy, audit=True)
    return records, params, audit


def test_every_sensitive_turnover_cell_of_the_demo_moves_by_at_least_mu_c_delta(demo_turnover):
    _, params, audit = demo_turnover
    sensitive = audit[audit["sensitive"]]
    assert len(sensitive) >= 5
    noise = (sensitive["value"] - sensitive["original_value"].astype(float)).abs()
    floor = params["mu_c"] * sensitive["delta_value_1"]
    # the first component's own move: mu_c δ_1 at least, whatever V the ptable drew
    assert (sensitive["noise_value_1"].abs() >= floor - 1e-6).all()
    # components 2 and 3 (τ-Argus: no mu_c) may move the cell back by up to D δ_j each (D = 5, the demo's nums
    # ptable): the whole move is guaranteed only down to mu_c δ_1 - D (δ_2 + δ_3)
    later = sum(sensitive[f"delta_value_{j}"].fillna(0) for j in (2, 3))
    assert (sensitive[[f"noise_value_{j}" for j in (2, 3)]].abs().fillna(0).le(5 * sensitive[
        [f"delta_value_{j}" for j in (2, 3)]].fillna(0).to_numpy() + 1e-6)).all().all()
    assert (noise >= floor - 5 * later - 1e-6).all(), sensitive[noise < floor - 5 * later - 1e-6]
    # in the cells that are not sensitive the ptable's V = 0 still adds nothing (as τ-Argus)
    insensitive = audit[~audit["sensitive"] & (audit["original_value"] != 0)]
    assert (insensitive["noise_value_1"] == 0).sum() >= 3


def test_a_sensitive_cell_with_ptable_noise_zero_gets_mu_c_with_the_key_s_sign():
    """Cells whose first component draws V = 0: the one-cell method adds ±mu_c δ_1, + for an even scrambled
    key and - for an odd one; the SQL gives the same values; an insensitive cell with V = 0 is unchanged."""
    tables = combine(create_num_ptable(NumsPTableParams(D=5, V=1, icat=[1, 5])).table)
    params = parse_params({"preset": "tauargus", "type": "top_contr", "top_k": 1, "mu_c": 2,
                           "sensitive": ["freq:4"], "multiplier": {"type": "simple", "p": 0.1, "epsilon": [1]}})
    contributions = [1000.0, 400.0, 100.0]
    rng = np.random.default_rng(5)
    found = {1: 0, -1: 0}
    rows = []
    for key in rng.integers(0, M, 4000):
        value, (component,) = perturb_cell(params, tables, 1500.0, contributions, int(key), M, sensitive=True)
        if component.noise != 0:
            continue
        plain, _ = perturb_cell(params, tables, 1500.0, contributions, int(key), M, sensitive=False)
        assert plain == 1500.0
        scrambled = (int(key) % 10**7) * 10 + int(key) // 10**7  # τ-Argus: component 1 uses the key scrambled once
        direction = 1 if scrambled % 2 == 0 else -1
        assert value == pytest.approx(1500.0 + direction * 2 * 100.0)  # δ_1 = 0.1 x 1000
        found[direction] += 1
        rows.append(int(key))
        if len(rows) == 40:
            break
    assert found[1] >= 5 and found[-1] >= 5
    from sdc.ckm.reference import noise_direction

    assert noise_direction(0.0, 7, 2.0) == -1 and noise_direction(0.0, 8, 2.0) == 1
    assert noise_direction(0.0, 7, 0.0) == 0 and noise_direction(-0.5, 8, 2.0) == -1
    # the same cells in SQL: each a cell of three records whose keys sum to the cell key
    df = pd.DataFrame({"g": [f"c{k:02d}" for k in range(len(rows)) for _ in range(3)],
                       "v": contributions * len(rows),
                       "rk": [k for key in rows for k in (key, 0, 0)]})
    got = sdc.ckm.sum_table(df, ["g"], value="v", record_key="rk", modulus=M, totals="none", audit=True,
                            check_keys=False, ptable=tables,
                            params={"preset": "tauargus", "type": "top_contr", "top_k": 1, "mu_c": 2, "version_keys": False,
                                    "sensitive": ["freq:4"],
                                    "multiplier": {"type": "simple", "p": 0.1, "epsilon": [1]}})
    assert got["sensitive"].all()
    for row, key in zip(got.sort_values("g").itertuples(), rows):
        expected, _ = perturb_cell(params, tables, 1500.0, contributions, key, M, sensitive=True)
        assert row.value == pytest.approx(expected, rel=1e-12)
        assert abs(row.value - 1500.0) >= 200.0 - 1e-9
