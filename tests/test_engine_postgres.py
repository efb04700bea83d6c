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
from sdc.target_load import postgres_type

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
    "supp_cells": "{{ sdc.suppression_cells(source('raw', 'survey'), dims=['roof', 'water'], value='income') }}",
    "supp_primary": "{{ sdc.suppression_primary(ref('supp_cells'), ['freq:6', 'p:10', 'nk:2,85']) }}",
    "supp_relations": "{{ sdc.suppression_constraints(ref('supp_cells'), ['roof', 'water']) }}",
    # microaggregation of income in groups of 3: means, and Höhne's variance-preserving values
    "micro_mean": "{{ sdc.microaggregate_fixed(source('raw', 'survey'), 'income', 3, 'row_id') }}",
    "micro_hoehne": "{{ sdc.microaggregate_fixed(source('raw', 'survey'), 'income', 3, 'row_id', "
                    "replacement='hoehne') }}",
}
# the magnitude parameters: three components, separation, mu_c for the dominance rules
PARAMS = {"preset": "tauargus", "type": "top_contr", "top_k": 3, "mu_c": 1, "sensitive": ["p:10", "nk:2,85"],
          "separation": True, "multiplier": {"type": "flex", "fp": 500, "p": [0.25, 0.05], "epsilon": [1, 0.5, 0.2],
                                             "q": 3}}


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
                cur.execute(f"create table raw.{table} (" + ", ".join(f'"{c[0]}" {postgres_type(c[1])}' for c in columns) + ")")
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
    if server is None:  # DuckDB: the secondary step as a dbt Python model (the demo's way)
        (p.root / "models" / "supp_pattern.py").write_text(SECONDARY_MODEL)
    return p


SECONDARY_MODEL = """
def model(dbt, session):
    from sdc.suppression.warehouse import secondary_suppression

    return secondary_suppression(session, dbt.ref("supp_primary"), dbt.ref("supp_relations"), dims=["roof", "water"],
                                 magnitude=True, method="heuristic", cost="value", publish_intervals=True)
"""


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


def test_secondary_suppression_on_postgresql_between_two_dbt_selections(built, tmp_path):
    """PostgreSQL runs no dbt Python models: `sdc suppress --target` reads the cell table and relations the
    macros built, writes the pattern and its audit in one transaction, and a second dbt selection publishes
    it. The pattern is the one DuckDB's Python model made."""
    import subprocess
    import sys
    from pathlib import Path

    duck, pg = built
    sdc = Path(sys.executable).parent / "sdc"
    run = subprocess.run([str(sdc), "suppress", "--target", "pg", "--profile", "sdc_scratch", "--profiles-dir",
                          str(pg.root), "--cells", "main.supp_primary", "--relations", "main.supp_relations",
                          "--pattern", "main.supp_pattern", "--audit-table", "main.supp_audit", "--dims", "roof,water",
                          "--magnitude", "--publish-intervals"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "0 sensitive cells unprotected" in run.stdout and "secondary" in run.stdout
    pg.model("supp_published", "{{ sdc.suppression_published('main.supp_pattern', ['roof', 'water'], value='value') }}")
    result = pg.dbt("build", "--select", "supp_published")
    assert result.returncode == 0, result.stdout[-3000:]
    pick = "select roof, water, status, published_text from main.supp_pattern"
    con = duckdb.connect(str(duck.db), read_only=True)
    try:
        ours = sorted(con.execute(pick).fetchall())
    finally:
        con.close()
    conn = pg.postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(pick)
            on_pg = sorted(cur.fetchall())
            cur.execute("select count(*), bool_and(protected) from main.supp_audit")
            audited = cur.fetchone()
            cur.execute("select count(*) filter (where value is null), count(*) filter (where published_text = "
                        "cast(value as text) or published_text = cast(cast(value as bigint) as text)) from main.supp_published")
            hidden, shown = cur.fetchone()
    finally:
        conn.close()
    assert on_pg == ours and any(r[2] == "secondary" for r in ours)
    assert audited == (sum(r[2] in ("primary", "secondary") for r in ours), True)
    # the published table hides exactly the suppressed cells, and shows every other value
    assert hidden == audited[0] and shown == len(ours) - hidden


def test_secondary_suppression_target_mistakes_are_named(built, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    _, pg = built
    sdc = Path(sys.executable).parent / "sdc"
    base = ["suppress", "--target", "pg", "--profile", "sdc_scratch", "--profiles-dir", str(pg.root), "--dims", "roof,water"]
    cases = [
        (["--cells", "main.supp_primary", "--relations", "main.supp_relations"], "--target needs --pattern"),
        (["--cells", "main.supp_primary", "--relations", "main.supp_relations", "--pattern", "main.x; drop table y"],
         "--pattern must name a table as schema.table with plain names"),
        (["--cells", "main.supp_primary", "--relations", "main.supp_primary", "--pattern", "main.p2"],
         "has no column 'constraint_id'"),
        (["--cells", "main.supp_primary", "--relations", "main.supp_relations", "--pattern", "main.supp_primary"],
         "must name two tables other than the cells and relations"),
    ]
    for extra, message in cases:
        run = subprocess.run([str(sdc), *base, *extra], capture_output=True, text=True, timeout=300)
        assert run.returncode == 2 and message in run.stderr, (extra, run.stderr)
    bad_profile = subprocess.run([str(sdc), *base[:3], "--profile", "nope", "--profiles-dir", str(pg.root), "--dims", "sex",
                                  "--cells", "a.b", "--relations", "a.c", "--pattern", "a.d"],
                                 capture_output=True, text=True, timeout=300)
    assert bad_profile.returncode == 2 and "has no profile 'nope'" in bad_profile.stderr


def test_sdc_load_into_postgresql_gives_the_keys_of_duckdb_and_keeps_stored_keys(postgres, tmp_path):
    """`sdc load --target`: keyed mode gives every record the key DuckDB gives it; random mode stores its keys
    in the target, and a reload of the same ids keeps them."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    sdc = Path(sys.executable).parent / "sdc"
    (tmp_path / "profiles.yml").write_text("census:\n  target: pg\n  outputs:\n    pg:\n" + postgres.profile("main"))
    secret = "a test secret of at least thirty-two bytes, not the demo's"
    env = dict(os.environ, SDC_KEY_SECRET=secret)
    common = ["--input", str(MICRODATA), "--id", "row_id"]
    keyed = subprocess.run([str(sdc), "load", "--target", "pg", "--profile", "census", "--profiles-dir", str(tmp_path),
                            "--table", "keyed_survey", "--key-mode", "keyed", *common],
                           capture_output=True, text=True, env=env, timeout=300)
    assert keyed.returncode == 0, keyed.stderr
    load_microdata(tmp_path / "duck.duckdb", MICRODATA, "keyed_survey", id_column="row_id", key_mode="keyed",
                   secret=secret.encode())
    con = duckdb.connect(str(tmp_path / "duck.duckdb"), read_only=True)
    try:
        on_duckdb = sorted(con.execute("select row_id, rk, sex from raw.keyed_survey").fetchall())
    finally:
        con.close()
    pg = postgres.connect()
    try:
        with pg.cursor() as cur:
            cur.execute("select row_id, rk, sex from raw.keyed_survey")
            on_postgres = sorted(cur.fetchall())
    finally:
        pg.close()
    assert on_postgres == on_duckdb and len(on_postgres) == 4580

    def random_keys():
        run = subprocess.run([str(sdc), "load", "--target", "pg", "--profile", "census", "--profiles-dir",
                              str(tmp_path), "--table", "random_survey", "--key-mode", "random", *common],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        conn = postgres.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("select row_id, rk from raw.random_survey")
                return dict(cur.fetchall())
        finally:
            conn.close()

    first, second = random_keys(), random_keys()
    assert first == second and len(set(first.values())) > 4500  # stored keys kept, keys distinct
    conn = postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("select table_name, key_mode, modulus from raw.sdc_loads where table_name like '%_survey' "
                        "order by table_name")
            log = cur.fetchall()
    finally:
        conn.close()
    assert ("keyed_survey", "keyed", 100000000) in log and ("random_survey", "random", 100000000) in log


def test_sdc_load_target_mistakes_are_named_and_change_nothing(postgres, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    sdc = Path(sys.executable).parent / "sdc"
    (tmp_path / "profiles.yml").write_text(
        "census:\n  target: pg\n  outputs:\n    pg:\n" + postgres.profile("main")
        + "    down:\n" + postgres.profile("main").replace(f"port: {postgres.port}", "port: 1")
        + "    cluster:\n      type: spark\n      method: session\n      host: NA\n      schema: x\n")
    base = ["load", "--profiles-dir", str(tmp_path), "--input", str(MICRODATA), "--table", "mistakes",
            "--key-mode", "existing", "--key-column", "rkeys", "--modulus", "10000000"]
    cases = [
        (["--target", "pg"], "--target needs --profile"),
        (["--target", "pg", "--profile", "nope"], "has no profile 'nope'"),
        (["--target", "prod", "--profile", "census"], "profile 'census' has no target 'prod' (targets: pg, down, cluster)"),
        (["--target", "cluster", "--profile", "census"], "target 'cluster' is of type 'spark'; sdc connects to postgres, duckdb"),
        (["--target", "down", "--profile", "census"], "cannot connect to the target's PostgreSQL server"),
        (["--target", "pg", "--profile", "census", "--db", "x.duckdb"], "not allowed with argument"),
    ]
    for extra, message in cases:
        run = subprocess.run([str(sdc), *base, *extra], capture_output=True, text=True, timeout=300)
        assert run.returncode == 2 and message in run.stderr, (extra, run.stderr)
    # a load that fails (keys that are not uniform) changes nothing in the target: no table, no log entry
    bad = tmp_path / "bad.csv"
    bad.write_text("id,sex,rkeys\n" + "".join(f"{k},m,0.5\n" for k in range(200)))
    run = subprocess.run([str(sdc), "load", "--target", "pg", "--profile", "census", "--profiles-dir", str(tmp_path),
                          "--input", str(bad), "--table", "mistakes", "--key-mode", "existing", "--key-column", "rkeys",
                          "--modulus", "10000000"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "not uniform random" in run.stderr, run.stderr
    conn = postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("select count(*) from information_schema.tables where table_name = 'mistakes'")
            assert cur.fetchone()[0] == 0
            cur.execute("select count(*) from information_schema.tables where table_schema = 'raw' "
                        "and table_name = 'sdc_loads'")
            if cur.fetchone()[0]:
                cur.execute("select count(*) from raw.sdc_loads where table_name = 'mistakes'")
                assert cur.fetchone()[0] == 0
    finally:
        conn.close()
