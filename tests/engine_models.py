"""The models that run on every engine (tests/test_engine_postgres.py, tests/test_engine_spark.py): counts with cube
totals, a hierarchy and a threshold, a fact, weighted counts both ways and of a fact, magnitude tables, means,
quality, the SQL steps of cell suppression and microaggregation; and how two engines' published cells are
compared."""

from __future__ import annotations

from decimal import Decimal

import pytest

from conftest import DATA, REPO
from dbt_project_helper import ScratchProject
from sdc.warehouse.hierarchy import read_hierarchy

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
MODELS = {
    "cube": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'roof', 'urbrur'], modulus=10000000) }}",
    "hierarchy": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'age'], modulus=10000000, "
                 "hierarchy=ref('sdc_hierarchies'), threshold=10) }}",
    "rollup_fact": "{{ sdc.ckm_count(source('raw', 'survey'), ['water', 'roof'], modulus=10000000, "
                   "fact='f_high', totals='rollup') }}",
    "weighted": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'roof'], modulus=10000000, "
                "weight='sampling_weight', weighted_count='mean_weight') }}",
    "weighted_magnitude": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'roof'], modulus=10000000, "
                          "weight='sampling_weight', params=%(params)s) }}",
    "weighted_fact": "{{ sdc.ckm_count(source('raw', 'survey'), ['water', 'roof'], modulus=10000000, fact='f_high', "
                     "weight='sampling_weight', params=%(params)s) }}",
    # leaves at different depths (issue 50): age_group4..6 directly under the total, beside young's groups
    "unbalanced": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'age'], modulus=10000000, "
                  "hierarchy=ref('sdc_unbalanced')) }}",
    "counts_age": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'age'], modulus=10000000, "
                  "hierarchy=ref('sdc_hierarchies')) }}",
    "income": "{{ sdc.ckm_sum(source('raw', 'survey'), ['sex', 'age'], value='income', weight='sampling_weight', "
              "hierarchy=ref('sdc_hierarchies'), modulus=10000000, params=%(params)s, audit=true) }}",
    # a frame with an empty cell (female, r5: no record in survey_gap); PostgreSQL once failed on its NULL list
    # of top contributions ("cannot accumulate null arrays", red team 16)
    "income_gap": "{{ sdc.ckm_sum(ref('survey_gap'), ['sex', 'roof'], value='income', modulus=10000000, "
                  "params=%(params)s, audit=true) }}",
    "weighted_gap": "{{ sdc.ckm_count(ref('survey_gap'), ['sex', 'roof'], modulus=10000000, "
                    "weight='sampling_weight', params=%(params)s) }}",
    # type range as τ-Argus takes it: the largest minus the smallest |income| of the cell's records, zeros included
    "income_range": "{{ sdc.ckm_sum(source('raw', 'survey'), ['sex', 'roof'], value='income', "
                    "weight='sampling_weight', modulus=10000000, params={'preset': 'tauargus', 'type': 'range', "
                    "'multiplier': {'type': 'flex', 'fp': 500, 'p': [0.25, 0.05], 'epsilon': [1], 'q': 3}}, "
                    "audit=true) }}",
}
# the input of the models with an empty cell: the survey without its 11 records of (female, r5)
STAGING = {"survey_gap": "select * from {{ source('raw', 'survey') }} where not (sex = 'female' and roof = 'r5')"}
# models on the published (and audit) relations above
DERIVED = {
    "mean_income": "{{ sdc.ckm_mean(ref('income'), ref('counts_age'), ['sex', 'age']) }}",
    "income_quality": "{{ sdc.ckm_sum_quality(ref('income_audit'), 'income') }}",
    "counts_quality": "{{ sdc.ckm_quality(ref('cube_audit'), 'cube') }}",
    # cell suppression's SQL steps: the cell table, the primary rules, the additivity relations
    "supp_cells": "{{ sdc.suppression_cells(source('raw', 'survey'), dims=['roof', 'water'], value='income') }}",
    "supp_primary": "{{ sdc.suppression_primary(ref('supp_cells'), ['freq:6', 'p:10', 'nk:2,85']) }}",
    "supp_relations": "{{ sdc.suppression_constraints(ref('supp_cells'), ['roof', 'water']) }}",
    "supp_unbalanced_cells": "{{ sdc.suppression_cells(source('raw', 'survey'), dims=['sex', 'age'], value='income', "
                             "hierarchy=ref('sdc_unbalanced')) }}",
    "supp_unbalanced_relations": "{{ sdc.suppression_constraints(ref('supp_unbalanced_cells'), ['sex', 'age'], "
                                 "hierarchy=ref('sdc_unbalanced')) }}",
    # microaggregation of income in groups of 3: means, and Höhne's variance-preserving values
    "micro_mean": "{{ sdc.microaggregate_fixed(source('raw', 'survey'), 'income', 3, 'row_id') }}",
    "micro_hoehne": "{{ sdc.microaggregate_fixed(source('raw', 'survey'), 'income', 3, 'row_id', "
                    "replacement='hoehne') }}",
}
# the magnitude parameters: three components, separation, mu_c for the dominance rules
PARAMS = {"preset": "tauargus", "type": "top_contr", "top_k": 3, "mu_c": 1, "sensitive": ["p:10", "nk:2,85"],
          "separation": True, "multiplier": {"type": "flex", "fp": 500, "p": [0.25, 0.05], "epsilon": [1, 0.5, 0.2],
                                             "q": 3}}


def project(root, server=None, spark: bool = False, spark_remote: str | None = None) -> ScratchProject:
    """The models above in a scratch project: on DuckDB (with the secondary step as a dbt Python model), on the
    PostgreSQL ``server``, or on a local Spark session."""
    p = ScratchProject(root, postgres=server, spark=spark, spark_remote=spark_remote)
    rows = read_hierarchy(DATA / "cellkey_testdata_hierarchies.csv")
    p.seed("sdc_hierarchies", "dimension,code,parent\n" + "".join(f"{d},{c},{pa or ''}\n" for d, c, pa in rows))
    unbalanced = [(d, c, None if c == "Total" else "Total" if c in ("young", "age_group4", "age_group5",
                                                                  "age_group6") else pa)
                  for d, c, pa in rows if d == "age" and c != "old"]
    p.seed("sdc_unbalanced", "dimension,code,parent\n" + "".join(f"{d},{c},{pa or ''}\n" for d, c, pa in unbalanced))
    p.sources(["survey"])
    p.seed("sdc_nums_ptable", (REPO / "demo" / "seeds" / "sdc_nums_ptable.csv").read_text())
    for name, sql in MODELS.items():
        p.model(f"{name}_audit", sql % {"params": repr(PARAMS)} if "%(params)s" in sql else sql)
        p.model(name, f"{{{{ sdc.ckm_published(ref('{name}_audit')) }}}}")
    for name, sql in {**STAGING, **DERIVED}.items():
        p.model(name, sql)
    if server is None and not spark:  # DuckDB: the secondary step as a dbt Python model (the demo's way)
        (p.root / "models" / "supp_pattern.py").write_text(SECONDARY_MODEL)
    return p


SECONDARY_MODEL = """
def model(dbt, session):
    from sdc.suppression.warehouse import suppression_pattern

    return suppression_pattern(session, dbt.ref("supp_primary"), dbt.ref("supp_relations"), dims=["roof", "water"],
                               magnitude=True, method="heuristic", cost="value", publish_intervals=True)
"""


def keyed_survey_on_duckdb(db, secret: str) -> list[tuple]:
    """(row_id, rk, sex) of MICRODATA loaded into the DuckDB file ``db`` in keyed mode: the keys every engine's
    keyed load must give."""
    import duckdb

    from sdc.warehouse.loader import load_microdata

    load_microdata(db, MICRODATA, "keyed_survey", id_column="row_id", key_mode="keyed", secret=secret.encode())
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(con.execute("select row_id, rk, sex from raw.keyed_survey").fetchall())
    finally:
        con.close()


def plain_cells(rows) -> list[tuple]:
    """Rows sorted, numbers of decimal or float type as floats (engines type a sum differently)."""
    def plain(v):
        return float(v) if isinstance(v, (float, Decimal)) else v
    return sorted((tuple(plain(v) for v in row) for row in rows), key=repr)


def assert_same_cells(ours: list[tuple], theirs: list[tuple], label) -> None:
    """Counts and codes exactly; a weighted count or a sum: the same double up to the engines' last digits."""
    assert len(ours) == len(theirs), (label, len(ours), len(theirs))
    for a, b in zip(ours, theirs):
        assert [x for x in a if not isinstance(x, float)] == [x for x in b if not isinstance(x, float)], (label, a, b)
        assert [x for x in b if isinstance(x, float)] == pytest.approx([x for x in a if isinstance(x, float)],
                                                                       rel=1e-12), (label, a, b)
