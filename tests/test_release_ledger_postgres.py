"""The ledger of releases and the publication database on PostgreSQL (release/ledger_postgres.py,
release/publication_database.py).

A two-month scenario as tests/test_release_ledger.py runs it on DuckDB, on PostgreSQL: load, dbt build (whose
hook grant_published publishes into the build database's publication schema), sdc publish --target (audit,
ledger in schema sdc_ledger of the build database, the verified release copied into a database of its own);
a reload with some records changed, rebuild, publish; sdc release diff --target names the changed cells with
their reason. A new ptable changes cells whose records did not: refused, and nothing is written (ledger and
publication database as they were). Then the publication database as its reader sees it: nothing of the raw,
audit or ledger tables in any catalog view, no connection to the build database, the verified numbers."""

from __future__ import annotations

import json
import re
import shutil

import psycopg2
import pytest

from dbt_project_helper import ScratchProject
from sdc.cli import main
from sdc.warehouse.loader import load_microdata
from sdc.release.ledger_postgres import LEDGER_MARKER
from sdc.warehouse.scratch import project_yaml
from test_engine_postgres import copy_raw_tables, own_database, pg_rows
from test_release_ledger import persons  # the DuckDB scenario's 400 persons

pytestmark = pytest.mark.postgres

TABLE = "led_persons"
READER = "led_reader"
READER_PASSWORD = "led reader"
PUBLICATION = "led_publication"
READERS_DATABASE = "led_readers"  # made by an administrator for the dbt role (it has no CREATEDB)
SECRET = b"ledger on postgres"
PROJECT_EXTRA = f"""
models:
  sdc:
    audit: {{+schema: audit, +materialized: table}}
    protected: {{+schema: protected, +materialized: table, +tags: ["sdc_publish"]}}
vars:
  sdc_publication_schema: {PUBLICATION}
on-run-start: ["{{{{ sdc.engine_setup() }}}}"]
on-run-end: ["{{{{ sdc.grant_published(['{READER}']) }}}}"]
"""
MODELS = {
    "audit/ckm_by_region.sql": f"{{{{ sdc.ckm_count(source('raw', '{TABLE}'), dims=['sex', 'region']) }}}}",
    "protected/by_region.sql": "{{ sdc.ckm_published(ref('ckm_by_region')) }}",
}
# what a reader of the publication database must not see a trace of
HIDDEN = ("raw", "led_audit", "led_protected", "sdc_ledger", TABLE, "sdc_loads", "ckm_by_region", "releases", "cells")


def load(p: ScratchProject, text: str, **options) -> None:
    """raw.led_persons loaded with record keys (a DuckDB file, then copied to PostgreSQL with its load log row)."""
    (p.root / "persons.csv").write_text(text)
    staging = p.root / "staging.duckdb"
    options = {"key_mode": "keyed", "secret": SECRET, **options}
    load_microdata(staging, p.root / "persons.csv", TABLE, id_column="id", **options)
    copy_raw_tables(staging, p.postgres, [TABLE])


def build(p: ScratchProject, *args: str) -> None:
    result = p.dbt(*(args or ("build",)))
    assert result.returncode == 0, result.stdout[-4000:]


def admin(server, *statements: str, database: str | None = None) -> None:
    import dataclasses

    conn = dataclasses.replace(server, dbname=database or server.dbname).connect(user="postgres")
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def office(tmp_path_factory, postgres):
    """The project on a database of its own (led_build), month 1 loaded and built; the reader role, and the
    publication database an administrator made for the dbt role (empty)."""
    server = own_database(postgres, "led_build")
    admin(server, f"create role {READER} login password '{READER_PASSWORD}'",
          f"create database {READERS_DATABASE} owner {server.user}")
    p = ScratchProject(tmp_path_factory.mktemp("led"), postgres=server, schema="led")
    (p.root / "dbt_project.yml").write_text(project_yaml() + PROJECT_EXTRA)
    p.sources([TABLE])
    for name, sql in MODELS.items():
        (p.root / "models" / name).parent.mkdir(parents=True, exist_ok=True)
        (p.root / "models" / name).write_text(sql)
    load(p, persons())
    build(p)
    return p


def sdc(p: ScratchProject, *args: str) -> int:
    return main([*args, "--target", "pg", "--profiles-dir", str(p.root), "--project-dir", str(p.root)])


def publish(p: ScratchProject, *more: str, database: str = READERS_DATABASE) -> int:
    """sdc publish --target into ``database``, under the floor of 0.4: the two months below re-key and change the
    ptable, so readers hold three noises of unchanged cells (each test that needs the default floor gives it); and
    without a minimum of changed records (they move two persons on purpose)."""
    return sdc(p, "publish", "--publication-database", database, "--min-standard-error", "0.4",
               "--min-changed-records", "0", *more)


def in_database(p: ScratchProject, database: str, sql: str, **login) -> list[tuple]:
    import dataclasses

    return pg_rows(dataclasses.replace(p.postgres, dbname=database), sql, **login)


def as_reader(p: ScratchProject, sql: str, database: str = READERS_DATABASE) -> list[tuple]:
    return in_database(p, database, sql, user=READER, password=READER_PASSWORD)


def ledger_rows(p: ScratchProject) -> list[tuple]:
    return pg_rows(p.postgres, "select r.release_id, count(c.cell) from sdc_ledger.releases as r left join "
                               "sdc_ledger.cells as c using (release_id) group by 1 order by 1")


def published(p: ScratchProject, database: str = READERS_DATABASE) -> list[tuple]:
    return as_reader(p, f"select * from {PUBLICATION}.by_region order by 1, 2", database)


def released(p: ScratchProject, database: str = READERS_DATABASE) -> int:
    (report,) = as_reader(p, f"select report from {PUBLICATION}.release_audit", database)[0]
    return (json.loads(report) if isinstance(report, str) else report)["release"]


# ------------------------------------------------------------------------------------------ two months
def test_two_months_on_postgres_recorded_in_the_warehouse_with_a_refused_parameter_change(office, capsys):
    p = office
    assert pg_rows(p.postgres, "select count(*) from pg_namespace where nspname = 'sdc_ledger'") == [(0,)]
    assert publish(p) == 0
    out = capsys.readouterr().out
    assert "recorded as release 1 in the ledger sdc_ledger of database led_build" in out, out
    assert (f"published 1 relations and the release audit to database {READERS_DATABASE}, schema {PUBLICATION} "
            f"(read by {READER})") in out, out
    first = published(p)
    assert first and released(p) == 1
    assert ledger_rows(p) == [(1, len(first))]
    # the verified copy in the build database: the same rows
    assert pg_rows(p.postgres, f"select * from {PUBLICATION}.by_region order by 1, 2") == first
    # the reader gets nothing on the ledger (while it may still connect to the build database)
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
        pg_rows(p.postgres, "select count(*) from sdc_ledger.releases", user=READER, password=READER_PASSWORD)

    # month 2: two persons of R0 moved to R1; every other cell keeps its records and so its published value.
    # A run of part of the project first (as the suppression's documented steps are, before sdc suppress --target):
    # it builds no tagged relation, so its hook leaves the publication as it is and exits 0 (new user D3: it judged
    # the last release's tables against the new load and stopped the monthly job)
    load(p, persons(moved=2))
    result = p.dbt("build", "--select", "ckm_by_region")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "grant_published: this run built no relation tagged sdc_publish; the publication is left as it is" in \
        result.stdout and published(p) == first
    build(p)
    assert publish(p) == 0
    assert "recorded as release 2 in the ledger sdc_ledger of database led_build" in capsys.readouterr().out
    second = published(p)
    assert released(p) == 2 and second != first
    assert sdc(p, "release", "diff", "1", "2") == 0
    lines = capsys.readouterr().out.splitlines()
    changed = lines[:-1]
    assert changed and all(": changed (microdata change): " in line for line in changed), lines
    assert lines[-1] == f"release 1 -> 2: {len(changed)} changed (microdata change)"
    regions = {line.split("region=")[1].split(",")[0].split(")")[0] for line in changed}
    assert {"R0", "R1"} <= regions <= {"R0", "R1"}, lines  # R2..R4 and the total over regions kept their records
    assert sdc(p, "release", "list") == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in listed] == ["release 1", "release 2"]
    assert f"1 tables, {len(second)} cells, {READERS_DATABASE}.{PUBLICATION}" in listed[1], listed
    # the release report of the PostgreSQL release: its tables, and the changes from the ledger in the warehouse
    html = p.root / "release_report.html"
    assert sdc(p, "report", "--publication-schema", PUBLICATION, "--out", str(html)) == 0
    assert capsys.readouterr().out.strip() == ("wrote the office report (internal: never give it to readers) of "
                                               f"release 2, 1 tables ({len(second)} cells), to {html}")
    text = html.read_text()
    assert text.startswith("<!-- INTERNAL: the office report") and "Averaging CKM noise" in text
    assert f"schema {PUBLICATION} of database led_build" in text
    assert f"Release 1 &rarr; 2: {len(changed)} changed (microdata change)." in text
    assert text.count("<td>microdata change</td>") == len(changed)

    # a new ptable: cells whose records did not change would get other noise: refused, nothing written
    seed = p.root / "seeds" / "sdc_ptable.csv"
    seed.unlink()
    assert main(["ptable", "--D", "4", "--V", "2.5", "--js", "2", "--out", str(seed)]) == 0
    build(p)
    ledger_before = ledger_rows(p)
    assert publish(p) == 2
    err = capsys.readouterr().err
    assert ("whose records did not change would be published with other values than in release 2, because the "
            "parameters of led_protected.by_region changed") in err, err
    assert f"the publication schema {PUBLICATION} that grant_published made is dropped: the release is withdrawn" in err
    assert err.rstrip().endswith(f"; the publication database {READERS_DATABASE} is left as it was (its readers keep "
                                 "the last release that passed)"), err
    assert ledger_rows(p) == ledger_before
    assert published(p) == second and released(p) == 2  # the readers keep the last release
    # accepted: recorded as such
    build(p, "run-operation", "grant_published", "--args", f"{{roles: [{READER}]}}",
          "--target-path", str(p.root / "operation"))
    # accepted, it hands readers a second noise of every unchanged cell, counted over the releases (red team R4-5):
    # refused at the floor of 1 and withdrawn; published under a lower floor
    assert publish(p, "--accept-parameter-change", "--min-standard-error", "1") == 2
    assert "the releases in the ledger let a reader average the CKM noise: the cell " in capsys.readouterr().err
    build(p, "run-operation", "grant_published", "--args", f"{{roles: [{READER}]}}",
          "--target-path", str(p.root / "operation"))
    assert publish(p, "--accept-parameter-change") == 0
    assert "recorded as release 3" in capsys.readouterr().out
    assert released(p) == 3
    assert sdc(p, "release", "diff", "2", "3") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("release 2 -> 3: ") and lines[-1].endswith("changed (parameter change)"), lines
    assert sdc(p, "release", "list") == 0
    assert "cells changed by accepted parameter changes" in capsys.readouterr().out.splitlines()[-1]
    # a re-key on purpose (sdc load --rekey, in the load log): every cell may change, and the diff says why
    load(p, persons(moved=2), key_mode="random", secret=None, rekey=True)
    build(p)
    assert publish(p) == 0
    assert "recorded as release 4" in capsys.readouterr().out
    assert sdc(p, "release", "diff", "3", "4") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("release 3 -> 4: ") and lines[-1].endswith("changed (re-key)"), lines
    assert sdc(p, "release", "diff", "1", "9") == 2
    assert "the ledger sdc_ledger of database led_build has no release 9 (releases: 1, 2, 3, 4)" in \
        capsys.readouterr().err
    # a-priori cells come from the same ledger (a CKM table has none: it publishes every cell)
    out = p.root / "a_priori.csv"
    assert sdc(p, "release", "a-priori", "by_region", "--out", str(out)) == 2
    assert "led_protected.by_region is no suppression table (its cells publish count, not a value and " \
           "published_text)" in capsys.readouterr().err
    assert sdc(p, "release", "a-priori", "by_sex", "--release", "2", "--out", str(out)) == 2
    assert "release 2 in the ledger sdc_ledger of database led_build published no relation 'by_sex' (it published: " \
           "led_protected.by_region)" in capsys.readouterr().err
    assert not out.exists()


# ------------------------------------------------------------------------------------------ the reader's database
def test_the_reader_of_the_publication_database_sees_nothing_of_the_build_database(office, capsys):
    """CREATE DATABASE without the right names it and changes nothing; with it, sdc makes the database. Its
    reader sees in no catalog view anything of raw, audit or ledger; cannot connect to the build database once
    CONNECT is revoked from PUBLIC there; reads the numbers sdc verified. A relation no longer published is
    dropped from it."""
    p = office
    name = "led_readers_new"
    before = pg_rows(p.postgres, "select datname from pg_database order by 1")
    assert publish(p, database=name) == 2
    err = capsys.readouterr().err
    assert (f"cannot create the publication database {name}: role sdc_dbt may not create databases (no CREATEDB): "
            f"give it that right (alter role sdc_dbt createdb), or let an administrator create the database for it "
            f"(create database {name} owner sdc_dbt)") in err, err
    assert pg_rows(p.postgres, "select datname from pg_database order by 1") == before
    admin(p.postgres, f"alter role {p.postgres.user} createdb")
    try:
        assert publish(p, database=name) == 0
    finally:
        admin(p.postgres, f"alter role {p.postgres.user} nocreatedb")
    capsys.readouterr()
    admin(p.postgres, "revoke connect on database led_build from public", database="led_build")
    try:
        with pytest.raises(psycopg2.OperationalError, match="permission denied for database"):
            pg_rows(p.postgres, "select 1", user=READER, password=READER_PASSWORD)
        # the catalog of the publication database, as its reader sees it
        views = {
            "pg_class": "select relname from pg_class",
            "pg_namespace": "select nspname from pg_namespace",
            "pg_stat_user_tables": "select schemaname || '.' || relname || ' ' || n_live_tup from pg_stat_user_tables",
            "tables": "select table_schema || '.' || table_name from information_schema.tables",
            "columns": "select table_schema || '.' || table_name || '.' || column_name from information_schema.columns",
        }
        for view, sql in views.items():
            names = [str(row[0]) for row in as_reader(p, sql, name)]
            leaks = [n for n in names if set(re.split(r"[. ]", n)) & set(HIDDEN)]
            assert names and not leaks, (view, leaks)
        user_tables = as_reader(p, "select schemaname, relname from pg_stat_user_tables order by 1, 2", name)
        assert user_tables == [(PUBLICATION, "by_region"), (PUBLICATION, "release_audit")]
        assert as_reader(p, "select table_schema, table_name from information_schema.tables where table_schema "
                            "not in ('pg_catalog', 'information_schema') order by 1, 2", name) == user_tables
        assert [s for (s,) in as_reader(p, "select nspname from pg_namespace order by 1", name)
                if not s.startswith("pg_") and s != "information_schema"] == [PUBLICATION, "public"]
        # the numbers sdc verified (the build database's publication schema, compared with its recomputation)
        verified = pg_rows(p.postgres, f"select * from {PUBLICATION}.by_region order by 1, 2")
        assert published(p, name) == verified == pg_rows(p.postgres, "select * from led_protected.by_region "
                                                                     "order by 1, 2")
        # nobody else may connect: PUBLIC lost CONNECT there
        assert in_database(p, name, "select has_database_privilege('public', current_database(), 'connect')") == \
            [(False,)]
    finally:
        admin(p.postgres, "grant connect on database led_build to public", database="led_build")

    # a relation published once and no longer: dropped from the publication database
    extra = p.root / "models" / "protected" / "by_sex.sql"
    (p.root / "models" / "audit" / "ckm_by_sex.sql").write_text(
        f"{{{{ sdc.ckm_count(source('raw', '{TABLE}'), dims=['sex']) }}}}")
    extra.write_text("{{ sdc.ckm_published(ref('ckm_by_sex')) }}")
    build(p)
    assert publish(p, database=name) == 0
    assert "by_sex" in {t for (t,) in as_reader(p, f"select tablename from pg_tables where schemaname = "
                                                   f"'{PUBLICATION}'", name)}
    capsys.readouterr()
    extra.unlink()
    (p.root / "models" / "audit" / "ckm_by_sex.sql").unlink()
    build(p)
    assert publish(p, database=name) == 0
    out = capsys.readouterr().out
    assert "withdrawn: led_protected.by_sex (published in release" in out, out
    assert "; dropped there: by_sex" in out, out
    assert as_reader(p, f"select tablename from pg_tables where schemaname = '{PUBLICATION}' order by 1", name) == \
        [("by_region",), ("release_audit",)]


def test_the_reader_of_the_publication_database_reads_exactly_what_security_md_lists(office, capsys):
    """What the reader role can really read in the publication database, enumerated from PostgreSQL's privileges
    (every relation it may SELECT, function it may EXECUTE, schema it may use), against SECURITY.md's PostgreSQL
    row; its public audit holds no figure computed from the originals (red team R4-1, new user D2), and the
    readers' report (--public) is made from it alone. The cluster-wide statistics still show the build database
    (R4-3): SECURITY.md says so and names the remedy, a publication cluster of its own."""
    from test_reader_surface import security_md_list

    p = office
    build(p, "run-operation", "grant_published", "--args", f"{{roles: [{READER}]}}",
          "--target-path", str(p.root / "operation"))
    assert publish(p) == 0
    capsys.readouterr()
    relations = as_reader(p, "select n.nspname || '.' || c.relname from pg_class as c join pg_namespace as n on "
                             "n.oid = c.relnamespace where n.nspname not in ('pg_catalog', 'information_schema') "
                             "and n.nspname not like 'pg\\_%' and has_table_privilege(c.oid, 'SELECT') order by 1")
    listed = [n.replace("sdc_publication.", f"{PUBLICATION}.") for n in security_md_list("PostgreSQL")
              if n.startswith("sdc_publication.")]
    assert [r for (r,) in relations] == sorted(n.replace("<published relation>", "by_region") for n in listed)
    assert as_reader(p, "select p.oid::regprocedure from pg_proc as p join pg_namespace as n on n.oid = "
                        "p.pronamespace where n.nspname not in ('pg_catalog', 'information_schema') and "
                        "has_function_privilege(p.oid, 'EXECUTE')") == []
    assert [s for (s,) in as_reader(p, "select nspname from pg_namespace where has_schema_privilege(oid, 'USAGE') "
                                       "and nspname not like 'pg\\_%' and nspname <> 'information_schema' order by 1")] \
        == [PUBLICATION, "public"]
    (report,) = as_reader(p, f"select report from {PUBLICATION}.release_audit")[0]
    report = json.loads(report) if isinstance(report, str) else report
    from sdc.release.public_audit import PUBLIC_AUDIT_KEYS

    assert sorted(report) == sorted(PUBLIC_AUDIT_KEYS) and "quality" not in json.dumps(report)
    # the same cluster: the build database's activity counters (each load's rows) are readable (R4-3)
    assert as_reader(p, "select count(*) from pg_stat_database where datname = 'led_build'") == [(1,)]
    assert "pg_stat_database" in security_md_list("PostgreSQL")
    html = p.root / "public.html"
    assert sdc(p, "report", "--publication-schema", PUBLICATION, "--public", "--out", str(html)) == 0
    text = html.read_text()
    assert text.startswith("<!doctype html>") and "Hellinger" not in text and "standard error of" not in text
    # the monthly job without its --publication-database: the release is recorded, and a warning says that the
    # readers' database stays on the last release (new user D10)
    last = released(p)
    assert sdc(p, "publish", "--min-standard-error", "0.4") == 0
    err = capsys.readouterr().err  # (and that the project's seeds lie in no git repository: a test's project)
    assert [line for line in err.strip().splitlines() if "lies in no git repository" not in line] == [
        f"warning: release {last} was published to {READERS_DATABASE}.{PUBLICATION}, this one to "
                           f"led_build.{PUBLICATION}: the readers of {READERS_DATABASE}.{PUBLICATION} still read release "
        f"{last}; give --publication-database (or var sdc_publication_database) to publish there"]
    assert released(p) == last


def test_a_release_command_or_publication_database_that_cannot_be_is_one_line(office, capsys):
    p = office
    assert publish(p, database="led_build") == 2
    assert "--publication-database led_build is the build database itself" in capsys.readouterr().err
    assert publish(p, database="postgres") == 2
    assert "one of PostgreSQL's own databases" in capsys.readouterr().err
    assert publish(p, "--ledger", "x.duckdb") == 2
    assert "on PostgreSQL the ledger of releases is schema sdc_ledger of the build database" in capsys.readouterr().err
    assert main(["release", "list", "--db", "w.duckdb", "--profile", "x"]) == 2
    assert "belong to --target" in capsys.readouterr().err
    # a schema sdc_ledger that sdc did not make: never written, and the release is not withdrawn for it
    made = pg_rows(p.postgres, "select count(*) from pg_namespace where nspname = 'sdc_ledger'") == [(0,)]
    admin(p.postgres, "create schema if not exists sdc_ledger", "comment on schema sdc_ledger is 'our own notes'",
          database="led_build")
    try:
        ledger = pg_rows(p.postgres, "select count(*) from pg_class where relnamespace = 'sdc_ledger'::regnamespace")
        assert publish(p) == 2
        err = capsys.readouterr().err
        assert ("the schema sdc_ledger of database led_build was not made by sdc publish --target (its comment is not "
                "the ledger's marker), and sdc keeps its ledger of releases there: rename or drop that schema; "
                "nothing was changed") in err, err
        assert pg_rows(p.postgres, "select count(*) from pg_class where relnamespace = 'sdc_ledger'::regnamespace") == \
            ledger
        assert pg_rows(p.postgres, f"select count(*) from pg_namespace where nspname = '{PUBLICATION}'") == [(1,)]
    finally:
        admin(p.postgres, "drop schema sdc_ledger" if made else f"comment on schema sdc_ledger is '{LEDGER_MARKER}'",
              database="led_build")
    shutil.rmtree(p.root / "operation", ignore_errors=True)


def test_the_roles_recipe_of_the_quickstart_leaves_the_dbt_role_able_to_build(office):
    """New user D1: the "Roles" recipe of docs/quickstart/postgresql.md, run as written on a build database the
    administrator owns, revoked CONNECT from PUBLIC and granted the dbt role CREATE only: it could no longer
    connect. The recipe is run here as the docs give it (the names made this test's own), then the dbt role
    connects and makes a schema, and the reader cannot connect."""
    import dataclasses

    from test_reader_surface import REPO

    text = (REPO / "docs" / "quickstart" / "postgresql.md").read_text(encoding="utf-8")
    recipe = text[text.index("-- PostgreSQL, as a database administrator"):]
    recipe = recipe[:recipe.index("```")]
    names = {"sdc_dbt": "d1_dbt", "bi_reader": "d1_reader", "analyst": "d1_analyst", "census_public": "d1_public",
             "census": "d1_census", "'...'": "'d1 pw'"}
    statements = []
    for line in recipe.splitlines():
        sql = line.split("--")[0].strip().rstrip(";")
        if sql:
            statements.append(re.sub("|".join(map(re.escape, names)), lambda m: names[m.group(0)], sql))
    assert len(statements) == 7 and any(s.startswith("revoke connect on database d1_census") for s in statements)
    assert "create database d1_census" in statements  # the build database, the administrator's
    admin(office.postgres, *statements)
    build_database = dataclasses.replace(office.postgres, dbname="d1_census")
    conn = build_database.connect(user="d1_dbt", password="d1 pw")
    try:
        with conn.cursor() as cur:
            cur.execute("create schema d1_audit")
        conn.commit()
    finally:
        conn.close()
    with pytest.raises(psycopg2.OperationalError, match="permission denied for database"):
        build_database.connect(user="d1_reader", password="d1 pw")


def test_a_publication_target_on_a_cluster_of_its_own_shows_its_readers_nothing_of_the_build(office, capsys):
    """Red team R4-3, new user D6: pg_stat_database is cluster-wide, so a reader of the publication database read
    each load's exact record count from the build database's insert counters; no grant hides it. With
    --publication-target (another target of the profile: a PostgreSQL server of its own) the audited release is
    copied there: its reader reads the published cells and the public audit, and no catalog or statistics view
    of that cluster knows the build database. The publication there names its release and ledger (R4-7)."""
    import dataclasses

    from postgres_server import throwaway_postgres

    p = office
    build(p, "run-operation", "grant_published", "--args", f"{{roles: [{READER}]}}",
          "--target-path", str(p.root / "operation"))
    profiles = p.root / "profiles.yml"
    before = profiles.read_text()
    with throwaway_postgres() as other:
        # its administrator makes the reader role and the database for the dbt role, as on the build's server
        admin(other, f"create role {READER} login password '{READER_PASSWORD}'", "create database led_elsewhere "
              f"owner {other.user}", database="postgres")
        public = dataclasses.replace(other, dbname="led_elsewhere")
        profiles.write_text(before + "    pub:\n" + public.profile("led"))
        try:
            assert sdc(p, "publish", "--publication-target", "pub", "--min-standard-error", "0.4") == 0
            out = capsys.readouterr().out
            assert "the release audit to database led_elsewhere of target pub, schema led_publication" in out, out
            verified = pg_rows(p.postgres, f"select * from {PUBLICATION}.by_region order by 1, 2")
            reader = dict(user=READER, password=READER_PASSWORD)
            assert pg_rows(public, f"select * from {PUBLICATION}.by_region order by 1, 2", **reader) == verified
            (report,) = pg_rows(public, f"select report from {PUBLICATION}.release_audit", **reader)[0]
            report = json.loads(report) if isinstance(report, str) else report
            assert report["release"] == ledger_rows(p)[-1][0] and len(report["ledger"]) == 16
            # nothing of the build in the reader's cluster: no database, no statistics of its loads
            names = [d for (d,) in pg_rows(public, "select datname from pg_stat_database where datname is not null",
                                           **reader)]
            assert "led_build" not in names and "led_elsewhere" in names
            assert pg_rows(public, "select count(*) from pg_database where datname = 'led_build'", **reader) == [(0,)]
        finally:
            profiles.write_text(before)


def test_three_months_on_postgres_with_a_reader_cluster_run_with_the_documented_commands(postgres, tmp_path_factory,
                                                                                          monkeypatch):
    """The issue's monthly job on PostgreSQL, the readers on a cluster of their own, with the commands the guides give
    and nothing else, each exit 0: sdc load --target, dbt build, sdc publish --target --publication-target, the
    office's and the public report; month 2 a revision (twelve incomes corrected, which no published table reads,
    and twelve persons joined: twelve changed records of what the counts read), month 3 a new secret (sdc load
    --rekey). The readers' cluster holds each release and nothing of the build."""
    import dataclasses

    from postgres_server import throwaway_postgres
    from test_release_ledger import month_persons

    server = own_database(postgres, "three_build")
    admin(server, "select 1")
    p = ScratchProject(tmp_path_factory.mktemp("three"), postgres=server, schema="three")
    (p.root / "dbt_project.yml").write_text(project_yaml() + PROJECT_EXTRA.replace(READER, "three_reader"))
    seed = p.root / "seeds" / "sdc_ptable.csv"
    seed.unlink()
    assert main(["ptable", "--D", "5", "--V", "4", "--js", "2", "--out", str(seed)]) == 0  # the guide's step 5
    p.sources(["persons"])
    (p.root / "models" / "audit").mkdir()
    (p.root / "models" / "protected").mkdir()
    (p.root / "models" / "audit" / "ckm_persons.sql").write_text(
        "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region']) }}")
    (p.root / "models" / "protected" / "persons.sql").write_text("{{ sdc.ckm_published(ref('ckm_persons')) }}")
    admin(server, "create role three_reader login password 'three'")
    with throwaway_postgres() as other:
        admin(other, "create role three_reader login password 'three'", f"create database three_public owner "
              f"{other.user}", database="postgres")
        public = dataclasses.replace(other, dbname="three_public")
        (p.root / "profiles.yml").write_text((p.root / "profiles.yml").read_text() + "    pub:\n"
                                             + public.profile("three"))
        where = ["--target", "pg", "--profiles-dir", str(p.root), "--project-dir", str(p.root)]
        micro = p.root / "persons.csv"

        def run_month(text: str, secret: str, *load_options: str) -> None:
            micro.write_text(text)
            monkeypatch.setenv("SDC_KEY_SECRET", secret)
            assert main(["load", *where, "--input", str(micro), "--table", "persons", "--id", "id",
                         "--key-mode", "keyed", *load_options]) == 0
            result = p.dbt("build")
            assert result.returncode == 0, result.stdout[-3000:]
            assert main(["publish", *where, "--publication-target", "pub"]) == 0
            assert main(["report", *where, "--out", str(p.root / "office.html")]) == 0
            assert main(["report", *where, "--public", "--out", str(p.root / "public.html")]) == 0

        run_month(month_persons(), "the office's first secret")
        run_month(month_persons(revised=12, joined=12), "the office's first secret")
        run_month(month_persons(revised=12, joined=12), "a second secret, month three", "--rekey")
        reader = dict(user="three_reader", password="three")
        (report,) = pg_rows(public, f"select report from {PUBLICATION}.release_audit", **reader)[0]
        report = json.loads(report) if isinstance(report, str) else report
        assert report["release"] == 3 and report["checks"]["averaging"] == "passed"
        assert pg_rows(public, f"select * from {PUBLICATION}.persons order by 1, 2", **reader) == \
            pg_rows(server, f"select * from {PUBLICATION}.persons order by 1, 2")
        assert pg_rows(public, "select count(*) from pg_stat_database where datname = 'three_build'", **reader) == [(0,)]
        # the office report of release 2, from the ledger in the build database (new user D13)
        assert main(["report", *where, "--release", "2", "--out", str(p.root / "release2.html")]) == 0
        assert "Release 1 &rarr; 2: " in (p.root / "release2.html").read_text()
        # next month's build re-made the publication schema, not yet audited: an earlier release's report comes
        # from the ledger alone; the current one waits for sdc publish
        result = p.dbt("build")
        assert result.returncode == 0, result.stdout[-3000:]
        (p.root / "release2.html").unlink()
        assert main(["report", *where, "--release", "2", "--out", str(p.root / "release2.html")]) == 0
        text = (p.root / "release2.html").read_text()
        assert "Release 1 &rarr; 2: " in text and "as recorded in the ledger sdc_ledger of database three_build" in text
        assert main(["report", *where, "--out", str(p.root / "now.html")]) == 2
        assert not (p.root / "now.html").exists()
    assert pg_rows(server, "select count(*) from sdc_ledger.releases") == [(3,)]
