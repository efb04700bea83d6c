"""The same dbt models on DuckDB and on PostgreSQL (a throwaway cluster: tests/postgres_server.py) publish the same
cells: counts with cube totals, a hierarchy and a threshold, a fact, weighted counts; and a wrong ptable or weight
stops the PostgreSQL build naming the problem, as on DuckDB.

The microdata are loaded with record keys once (sdc load into DuckDB) and copied to PostgreSQL as they are, so
both engines see the same keys."""

from __future__ import annotations

import re

import duckdb
import pytest

from dbt_project_helper import ScratchProject
from engine_models import DERIVED, MICRODATA, MODELS, assert_same_cells, keyed_survey_on_duckdb, plain_cells, project
from sdc.warehouse.build_record import build_record_of_comment
from sdc.warehouse.target_load import postgres_type

pytestmark = pytest.mark.postgres


def copy_raw_tables(db, server, tables: list[str]) -> None:
    """raw.<table> from the DuckDB file ``db`` into PostgreSQL, rows and types as they are, with their rows of the
    load log (the rows of other tables stay: test modules share the server). Rows are replaced, not the tables,
    so views over them stay."""
    con = duckdb.connect(str(db), read_only=True)
    pg = server.connect()
    names = ", ".join(f"'{table}'" for table in tables)
    try:
        with pg.cursor() as cur:
            cur.execute("create schema if not exists raw")
            for table, where in [*((table, "") for table in tables), ("sdc_loads", f" where table_name in ({names})")]:
                columns = con.execute(f"describe raw.{table}").fetchall()
                cur.execute(f"create table if not exists raw.{table} ("
                            + ", ".join(f'"{c[0]}" {postgres_type(c[1])}' for c in columns) + ")")
                cur.execute(f"delete from raw.{table}{where}")
                rows = con.execute(f"select * from raw.{table}{where}").fetchall()
                cur.executemany(f"insert into raw.{table} values ({', '.join(['%s'] * len(columns))})", rows)
        pg.commit()
    finally:
        pg.close()
        con.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory, postgres, engine_reference):
    pg = project(tmp_path_factory.mktemp("engines") / "postgres", postgres)
    copy_raw_tables(engine_reference.db, postgres, ["survey"])
    result = pg.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    return engine_reference, pg


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
    return columns, plain_cells(rows)


@pytest.mark.parametrize("model", [*MODELS, *DERIVED])
def test_every_published_cell_is_the_same_on_duckdb_and_postgresql(built, model):
    duck, pg = built
    columns_duck, cells_duck = published(duck, model)
    columns_pg, cells_pg = published(pg, model)
    assert columns_duck == columns_pg
    assert len(cells_duck) > (0 if model in DERIVED else 10)
    assert_same_cells(cells_duck, cells_pg, model)


def test_the_hierarchy_and_threshold_are_applied_on_postgresql(built):
    _, pg = built
    columns, cells = published(pg, "hierarchy")
    assert columns == ["sex", "age", "count", "count_reason"] + [f"{d}__{c}" for d in ("sex", "age")
                                                                  for c in ("level", "is_total", "parent", "sort")]
    hidden = [c for c in cells if c[2] is None]
    assert hidden and all(c[3] == "perturbed count below 10" for c in hidden)
    assert {c[1] for c in cells} >= {"Total", "age_group1", "age_group6"}


def test_leaves_at_different_depths_are_one_cell_each_on_postgresql(built):
    """age_group4..6 directly under the total beside young's three groups (issue 50): each code one cell per sex,
    a leaf one level up no total, and the cells of the same records as under the balanced hierarchy."""
    _, pg = built
    columns, cells = published(pg, "unbalanced")
    code, level, is_total = (columns.index(c) for c in ("age", "age__level", "age__is_total"))
    assert sorted((c[0], c[code]) for c in cells) == sorted(
        (sex, age) for sex in ("Total", "female", "male")
        for age in ("Total", "young", *(f"age_group{k}" for k in range(1, 7))))
    assert {(c[code], c[level], c[is_total]) for c in cells if c[code].startswith("age_group")} == {
        *((f"age_group{k}", 2, False) for k in (1, 2, 3)), *((f"age_group{k}", 1, False) for k in (4, 5, 6))}
    balanced = {(c[0], c[1]): c[2] for c in published(pg, "counts_age")[1]}
    assert all(c[2] == balanced[(c[0], c[code])] for c in cells)


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


def test_a_join_that_repeats_records_is_named_on_postgresql(built):
    """PostgreSQL counts the distinct record keys exactly in the record-key statistics, and the check of repeated
    records takes that count instead of a second one: a staging join that repeats every record is still named."""
    _, pg = built
    n = pg_rows(pg.postgres, "select count(*) from raw.survey")[0][0]
    pg.model("survey_twice", "select s.* from {{ source('raw', 'survey') }} as s "
                             "cross join (select 1 as copy union all select 2) as copies")
    pg.model("repeated", "{{ sdc.ckm_count(ref('survey_twice'), ['sex'], modulus=10000000) }}")
    try:
        result = pg.dbt("build", "--select", "survey_twice repeated")
    finally:
        for name in ("survey_twice", "repeated"):
            (pg.root / "models" / f"{name}.sql").unlink()
    out = " ".join(result.stdout.split())
    found = re.search(r"ckm_count: the relation \S+survey_twice\S* repeats records: (\d+) of (\d+) record keys", out)
    assert result.returncode != 0 and found, out[-3000:]
    # every record a second time, and the few keys of distinct records that coincide by chance
    assert int(found.group(2)) == 2 * n and n <= int(found.group(1)) <= n + 5, found.group(0)


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
    on_duckdb = keyed_survey_on_duckdb(tmp_path / "duck.duckdb", secret)
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
        + "    cluster:\n      type: spark\n      method: thrift\n      host: spark.example\n      schema: x\n")
    base = ["load", "--profiles-dir", str(tmp_path), "--input", str(MICRODATA), "--table", "mistakes",
            "--key-mode", "existing", "--key-column", "rkeys", "--modulus", "10000000"]
    cases = [
        (["--target", "pg"], "--target needs a dbt profile: give --profile NAME, or run sdc in a dbt project"),
        (["--target", "pg", "--profile", "nope"], "has no profile 'nope'"),
        (["--target", "prod", "--profile", "census"], "profile 'census' has no target 'prod' (targets: pg, down, cluster)"),
        (["--target", "cluster", "--profile", "census"], "target 'cluster' is a Spark target of method 'thrift'; sdc connects to Spark through a PySpark session "
         "(method: session) only"),
        (["--target", "down", "--profile", "census"], "cannot connect to the target's PostgreSQL server"),
        (["--target", "pg", "--profile", "census", "--db", "x.duckdb"], "not allowed with argument"),
    ]
    for extra, message in cases:
        run = subprocess.run([str(sdc), *base, *extra], cwd=tmp_path, capture_output=True, text=True, timeout=300)
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


def own_database(server, name: str):
    """A database of its own on the session's server (owned by the dbt role), for a test that puts tables of
    its choosing into raw: the other tests' raw schema stays as they left it."""
    import dataclasses

    admin = server.connect(user="postgres")
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(f"create database {name} owner {server.user}")
    finally:
        admin.close()
    return dataclasses.replace(server, dbname=name)


def sdc_cli(*args: str, env: dict | None = None):
    import os
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.run([str(Path(sys.executable).parent / "sdc"), *args], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **(env or {})))


def pg_rows(server, sql: str, **login) -> list[tuple]:
    """The rows of ``sql``, as the dbt role or as the role ``login`` names (user=, password=)."""
    conn = server.connect(**login)
    conn.autocommit = True  # each statement commits, as a BI tool's or an analyst's client does by default
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("kept", ["sdc_loads", "random_survey__record_keys"])
def test_sdc_load_target_with_a_foreign_load_log_or_key_store_is_one_line_and_changes_nothing(postgres, tmp_path, kept):
    """red team 15: a raw.sdc_loads (or key store) that sdc load did not write, e.g. one left by a suppression
    pattern written over it: one line naming the table, exit 2; the table keeps its rows and nothing is loaded."""
    server = own_database(postgres, f"rt15_{kept[:6]}")
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute("create schema raw")
        cur.execute(f"create table raw.{kept} (state text, sex text, status text)")
        cur.execute(f"insert into raw.{kept} values ('NY', 'w', 'primary')")
    conn.commit()
    conn.close()
    (tmp_path / "profiles.yml").write_text("census:\n  target: pg\n  outputs:\n    pg:\n" + server.profile("main"))
    run = sdc_cli("load", "--target", "pg", "--profile", "census", "--profiles-dir", str(tmp_path), "--input",
                  str(MICRODATA), "--id", "row_id", "--table", "random_survey", "--key-mode", "random")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
    line, = run.stderr.strip().splitlines()
    assert line.startswith(f"sdc load: error: raw.{kept} in the target is not the ") and \
        "it has columns state, sex, status" in line, line
    assert pg_rows(server, f"select * from raw.{kept}") == [("NY", "w", "primary")]
    assert pg_rows(server, "select table_name from information_schema.tables where table_schema = 'raw'") == [(kept,)]


def test_sdc_suppress_target_writes_no_table_it_did_not_write_and_nothing_into_raw(built):
    """red team 4: `--pattern raw.survey --audit-table raw.sdc_loads` dropped the raw microdata and the load log;
    now refused with one line, as is a table that sdc suppress did not write, and both stay as they were. Its own
    earlier output (a table comment marks it) is replaced."""
    _, pg = built
    conn = pg.postgres.connect()
    with conn.cursor() as cur:
        cur.execute("create table if not exists main.last_year as select 'kept' as status")
    conn.commit()
    conn.close()

    def state():
        return (pg_rows(pg.postgres, "select count(*), sum(rk) from raw.survey"),
                pg_rows(pg.postgres, "select * from raw.sdc_loads order by 1"),
                pg_rows(pg.postgres, "select * from main.last_year"))

    before = state()
    base = ["suppress", "--target", "pg", "--profile", "sdc_scratch", "--profiles-dir", str(pg.root), "--dims",
            "roof,water", "--magnitude", "--cells", "main.supp_primary", "--relations", "main.supp_relations"]
    refused = [
        (["--pattern", "raw.survey", "--audit-table", "raw.sdc_loads"], "--pattern raw.survey: schema raw holds"),
        (["--pattern", "main.rt4_pattern", "--audit-table", "raw.sdc_loads"], "--audit-table raw.sdc_loads: schema raw"),
        (["--pattern", "RAW.survey"], "--pattern RAW.survey: schema raw holds"),
        (["--pattern", "main.last_year"], "--pattern main.last_year: a table of that name exists that sdc suppress "
                                          "did not write; it is not replaced"),
    ]
    for extra, message in refused:
        run = sdc_cli(*base, *extra)
        assert run.returncode == 2 and "Traceback" not in run.stderr, (extra, run.stderr[-2000:])
        line, = run.stderr.strip().splitlines()
        assert message in line, (extra, line)
    assert state() == before and before[0][0][0] == 4580
    for attempt in (1, 2):  # the second run replaces what the first wrote
        run = sdc_cli(*base, "--pattern", "main.rt4_pattern", "--audit-table", "main.rt4_audit")
        assert run.returncode == 0, (attempt, run.stderr[-2000:])
    assert state() == before
    (pattern_mark, audit_mark, cells_mark), = pg_rows(
        pg.postgres, "select obj_description('main.rt4_pattern'::regclass, 'pg_class'), obj_description("
                     "'main.rt4_audit'::regclass, 'pg_class'), obj_description('main.supp_primary'::regclass, 'pg_class')")
    # a build record marked as sdc suppress's, with the loads of the cell table it was solved from (new-user D6)
    record = build_record_of_comment(pattern_mark)
    assert record == build_record_of_comment(audit_mark) == {
        "written_by": "written by sdc suppress", "cells": "main.supp_primary",
        "loads": build_record_of_comment(cells_mark)["loads"]}
    assert list(record["loads"]) == ["raw.survey"]


def test_sdc_load_target_reload_under_a_dependent_view(postgres, tmp_path):
    """red team R3-7: a dbt staging view over the raw table (dbt's default for staging) blocked every reload with
    a traceback (cannot drop table raw.persons because other objects depend on it). A reload with the same
    columns replaces the rows, so the view keeps working and shows them; one whose columns change is one line
    naming the view, exit 2, and changes nothing."""
    server = own_database(postgres, "rt37_view")
    (tmp_path / "profiles.yml").write_text("census:\n  target: pg\n  outputs:\n    pg:\n" + server.profile("main"))
    first, second, wider = tmp_path / "persons.csv", tmp_path / "persons_v2.csv", tmp_path / "persons_v3.csv"
    first.write_text("id,state,sex\n" + "".join(f"{i},{'CA' if i % 3 else 'NY'},{'mw'[i % 2]}\n"
                                                for i in range(1, 41)))
    second.write_text("id,state,sex\n" + "".join(f"{i},{'CA' if i % 3 else 'TX'},{'mw'[i % 2]}\n"
                                                 for i in range(1, 61)))
    wider.write_text("id,state,sex,age\n" + "".join(f"{i},CA,m,{i}\n" for i in range(1, 11)))

    def load(path):
        return sdc_cli("load", "--target", "pg", "--profile", "census", "--profiles-dir", str(tmp_path), "--input",
                       str(path), "--table", "persons", "--id", "id", "--key-mode", "random")

    assert load(first).returncode == 0
    keys = dict(pg_rows(server, "select id, rk from raw.persons"))
    admin = server.connect(user="postgres")
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute("create role rt37_reader")
    admin.close()
    conn = server.connect()
    with conn.cursor() as cur:  # as dbt builds a staging model over a source, and grants what an analyst reads
        cur.execute("create schema main_audit")
        cur.execute("create view main_audit.persons_minus_one as select * from raw.persons where id <> 2")
        cur.execute("grant select on raw.persons to rt37_reader")
    conn.commit()
    conn.close()
    run = load(second)
    assert run.returncode == 0, run.stderr[-2000:]
    assert pg_rows(server, "select count(*), count(*) filter (where state = 'TX') from main_audit.persons_minus_one") \
        == [(59, 20)]
    reloaded = dict(pg_rows(server, "select id, rk from raw.persons"))
    assert len(reloaded) == 60 and all(reloaded[i] == keys[i] for i in keys)  # the stored keys kept
    assert pg_rows(server, "select has_table_privilege('rt37_reader', 'raw.persons', 'select')") == [(True,)]
    log = "select rows, loaded_at from raw.sdc_loads where table_name = 'persons'"
    (logged,) = pg_rows(server, log)
    assert logged[0] == 60
    run = load(wider)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
    line, = run.stderr.strip().splitlines()
    assert line == ("sdc load: error: raw.persons in the target changes its columns (id, state, sex, rk -> id, state, "
                    "sex, age, rk), and these depend on it: view main_audit.persons_minus_one. Drop them first (dbt "
                    "build makes dbt's views again) or load under another --table; nothing was changed")
    # the same names, another type: the types are named
    typed = tmp_path / "persons_v4.csv"
    typed.write_text("id,state,sex\n" + "".join(f"{i},CA,{i % 2}\n" for i in range(1, 11)))
    run = load(typed)
    assert run.returncode == 2 and run.stderr.startswith(
        "sdc load: error: raw.persons in the target changes its columns (id bigint, state text, sex text, rk bigint -> "
        "id bigint, state text, sex bigint, rk bigint), and these depend on it: view main_audit.persons_minus_one."), \
        run.stderr[-2000:]
    assert pg_rows(server, "select count(*) from main_audit.persons_minus_one") == [(59,)]
    assert dict(pg_rows(server, "select id, rk from raw.persons")) == reloaded
    assert pg_rows(server, log) == [logged]
    assert pg_rows(server, "select count(*) from raw.persons__record_keys") == [(60,)]


def test_a_reload_into_postgresql_with_another_key_mode_is_refused_and_changes_nothing(postgres, tmp_path):
    """New-user N1 as found, on PostgreSQL: `sdc load --target pg` keyed, then the same file without
    --key-mode (random): every record got a new key, exit 0. Now refused naming both modes, the target unchanged;
    --rekey does it on purpose and the load log records the break."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    sdc = Path(sys.executable).parent / "sdc"
    (tmp_path / "profiles.yml").write_text("census:\n  target: pg\n  outputs:\n    pg:\n" + postgres.profile("main"))
    env = dict(os.environ, SDC_KEY_SECRET="a test secret of at least thirty-two bytes, not the demo's")
    base = [str(sdc), "load", "--target", "pg", "--profile", "census", "--profiles-dir", str(tmp_path),
            "--input", str(MICRODATA), "--id", "row_id", "--table", "rekey_survey"]

    def state():
        return pg_rows(postgres, "select row_id, rk from raw.rekey_survey order by 1"), \
            pg_rows(postgres, "select key_mode, rekeyed, loaded_at from raw.sdc_loads where table_name = 'rekey_survey'")

    first = subprocess.run(base + ["--key-mode", "keyed"], capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    before = state()
    again = subprocess.run(base, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 2
    assert "this load would change its record keys (key mode keyed -> random)" in again.stderr, again.stderr
    assert state() == before
    rekeyed = subprocess.run(base + ["--rekey"], capture_output=True, text=True, env=env, timeout=300)
    assert rekeyed.returncode == 0, rekeyed.stderr
    keys, log = state()
    assert log[0][:2] == ("random", True)
    assert sum(a == b for a, b in zip(keys, before[0])) < 5  # (row_id, rk) pairs: every key drawn anew
