"""The same dbt models on DuckDB and on PostgreSQL (a throwaway cluster: tests/postgres_server.py) publish the same
cells: counts with cube totals, a hierarchy and a threshold, a fact, weighted counts; and a wrong ptable or weight
stops the PostgreSQL build naming the problem, as on DuckDB.

The microdata are loaded with record keys once (sdc load into DuckDB) and copied to PostgreSQL as they are, so
both engines see the same keys."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pytest

from conftest import DATA, REPO
from dbt_project_helper import ScratchProject
from sdc.hierarchy import read_hierarchy
from sdc.loader import load_microdata

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
PG_TYPES = {"VARCHAR": "text", "BIGINT": "bigint", "INTEGER": "integer", "SMALLINT": "smallint",
            "TINYINT": "smallint", "DOUBLE": "double precision", "BOOLEAN": "boolean", "UBIGINT": "numeric(20, 0)",
            "HUGEINT": "numeric(38, 0)", "TIMESTAMP": "timestamp", "TIMESTAMP WITH TIME ZONE": "timestamptz",
            "UINTEGER": "bigint", "USMALLINT": "integer", "UTINYINT": "smallint", "DATE": "date"}

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
    "counts_age": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'age'], modulus=10000000, "
                  "hierarchy=ref('sdc_hierarchies')) }}",
    "income": "{{ sdc.ckm_sum(source('raw', 'survey'), ['sex', 'age'], value='income', weight='sampling_weight', "
              "hierarchy=ref('sdc_hierarchies'), modulus=10000000, params=%(params)s, audit=true) }}",
}
# models on the published (and audit) relations above
DERIVED = {
    "mean_income": "{{ sdc.ckm_mean(ref('income'), ref('counts_age'), ['sex', 'age']) }}",
    "income_quality": "{{ sdc.ckm_sum_quality(ref('income_audit'), 'income') }}",
    "counts_quality": "{{ sdc.ckm_quality(ref('cube_audit'), 'cube') }}",
    # cell suppression's SQL steps: the cell table, the primary rules, the additivity relations
    "supp_cells": "{{ sdc.suppression_cells(source('raw', 'survey'), dims=['sex', 'age'], value='income', "
                  "hierarchy=ref('sdc_hierarchies')) }}",
    "supp_primary": "{{ sdc.suppression_primary(ref('supp_cells'), ['freq:3', 'p:10', 'nk:2,85']) }}",
    "supp_relations": "{{ sdc.suppression_constraints(ref('supp_cells'), ['sex', 'age'], "
                      "hierarchy=ref('sdc_hierarchies')) }}",
    # microaggregation of income in groups of 3: means, and Höhne's variance-preserving values
    "micro_mean": "{{ sdc.microaggregate_fixed(source('raw', 'survey'), 'income', 3, 'row_id') }}",
    "micro_hoehne": "{{ sdc.microaggregate_fixed(source('raw', 'survey'), 'income', 3, 'row_id', "
                    "replacement='hoehne') }}",
}
# the magnitude parameters: three components, separation, mu_c for the dominance rules
PARAMS = {"preset": "tauargus", "type": "top_contr", "top_k": 3, "mu_c": 1, "sensitive": ["p:10", "nk:2,85"],
          "separation": True, "multiplier": {"type": "flex", "fp": 500, "p": [0.25, 0.05], "epsilon": [1, 0.5, 0.2],
                                             "q": 3}}


def pg_type(duckdb_type: str) -> str:
    if duckdb_type.startswith("DECIMAL"):
        return duckdb_type.replace("DECIMAL", "numeric")
    return PG_TYPES[duckdb_type]


def copy_raw_tables(db, server, tables: list[str]) -> None:
    """raw.<table> and the load log from the DuckDB file ``db`` into PostgreSQL, rows and types as they are."""
    con = duckdb.connect(str(db), read_only=True)
    pg = server.connect()
    try:
        with pg.cursor() as cur:
            cur.execute("create schema if not exists raw")
            for table in [*tables, "sdc_loads"]:
                columns = con.execute(f"describe raw.{table}").fetchall()
                cur.execute(f"drop table if exists raw.{table}")
                cur.execute(f"create table raw.{table} (" + ", ".join(f'"{c[0]}" {pg_type(c[1])}' for c in columns) + ")")
                rows = con.execute(f"select * from raw.{table}").fetchall()
                placeholders = ", ".join(["%s"] * len(columns))
                cur.executemany(f"insert into raw.{table} values ({placeholders})", rows)
        pg.commit()
    finally:
        pg.close()
        con.close()


def project(root, server=None) -> ScratchProject:
    p = ScratchProject(root, postgres=server)
    rows = read_hierarchy(DATA / "cellkey_testdata_hierarchies.csv")
    p.seed("sdc_hierarchies", "dimension,code,parent\n" + "".join(f"{d},{c},{pa or ''}\n" for d, c, pa in rows))
    p.sources(["survey"])
    p.seed("sdc_nums_ptable", (REPO / "demo" / "seeds" / "sdc_nums_ptable.csv").read_text())
    for name, sql in MODELS.items():
        p.model(f"{name}_audit", sql % {"params": repr(PARAMS)} if "%(params)s" in sql else sql)
        p.model(name, f"{{{{ sdc.ckm_published(ref('{name}_audit')) }}}}")
    for name, sql in DERIVED.items():
        p.model(name, sql)
    return p


@pytest.fixture(scope="module")
def built(tmp_path_factory, postgres):
    root = tmp_path_factory.mktemp("engines")
    duck = project(root / "duckdb")
    load_microdata(duck.db, MICRODATA, "survey", key_mode="existing", key_column="rkeys", modulus=10**7,
                   facts={"f_high": "income > 6000"})
    pg = project(root / "postgres", postgres)
    copy_raw_tables(duck.db, postgres, ["survey"])
    for p in (duck, pg):
        result = p.dbt("build")
        assert result.returncode == 0, result.stdout[-4000:]
    return duck, pg


def published(p: ScratchProject, model: str) -> list[tuple]:
    if p.postgres is None:
        con = duckdb.connect(str(p.db), read_only=True)
        try:
            rows = con.execute(f"select * from main.{model}").fetchall()
            columns = [d[0] for d in con.description]
        finally:
            con.close()
    else:
        pg = p.postgres.connect()
        try:
            with pg.cursor() as cur:
                cur.execute(f"select * from main.{model}")
                rows, columns = cur.fetchall(), [d[0] for d in cur.description]
        finally:
            pg.close()

    def plain(v):
        return float(v) if isinstance(v, (float, Decimal)) else v
    return columns, sorted((tuple(plain(v) for v in row) for row in rows), key=repr)


@pytest.mark.parametrize("model", [*MODELS, *DERIVED])
def test_every_published_cell_is_the_same_on_duckdb_and_postgresql(built, model):
    duck, pg = built
    columns_duck, cells_duck = published(duck, model)
    columns_pg, cells_pg = published(pg, model)
    assert columns_duck == columns_pg
    assert len(cells_duck) == len(cells_pg) > (0 if model in DERIVED else 10)
    for a, b in zip(cells_duck, cells_pg):
        # counts and codes exactly; a weighted count or a sum: the same double up to the engines' last digits
        assert [x for x in a if not isinstance(x, float)] == [x for x in b if not isinstance(x, float)], (a, b)
        assert [x for x in b if isinstance(x, float)] == pytest.approx([x for x in a if isinstance(x, float)],
                                                                       rel=1e-12), (a, b)


def test_the_hierarchy_and_threshold_are_applied_on_postgresql(built):
    _, pg = built
    columns, cells = published(pg, "hierarchy")
    assert columns == ["sex", "age", "count", "count_reason"]
    hidden = [c for c in cells if c[2] is None]
    assert hidden and all(c[3] == "perturbed count below 10" for c in hidden)
    assert {c[1] for c in cells} >= {"Total", "age_group1", "age_group6"}


@pytest.mark.parametrize("name, sql, message", [
    ("gap", "{{ sdc.ckm_count(source('raw', 'survey'), ['sex'], modulus=10000000, ptable=ref('pt_gap')) }}",
     "the perturbation table has no interval for i = "),
    ("bad_weight", "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'roof'], modulus=10000000, weight='bad_weight', "
     "weighted_count='mean_weight') }}", "weight column bad_weight must be positive and finite; a record has 0 "
     "(in the cell sex = "),
])
def test_a_failing_check_stops_the_postgresql_build_with_its_message(built, name, sql, message):
    _, pg = built
    conn = pg.postgres.connect()
    with conn.cursor() as cur:
        cur.execute("alter table raw.survey add column if not exists bad_weight double precision")
        cur.execute("update raw.survey set bad_weight = case when row_id = 17 then 0 else 1 end")
    conn.commit()
    conn.close()
    ptable = (pg.root / "seeds" / "sdc_ptable.csv").read_text().splitlines()
    gap = next(l for l in ptable if l.startswith("8,8,"))  # the stay interval of the last row: a gap in it
    pg.seed("pt_gap", "\n".join(l for l in ptable if l != gap) + "\n")
    pg.model(name, "{{ config(materialized='table') }}" + sql)
    try:
        result = pg.dbt("build", "--select", f"pt_gap {name}")
    finally:
        (pg.root / "models" / f"{name}.sql").unlink()
    assert result.returncode != 0
    assert message in result.stdout, result.stdout[-3000:]
