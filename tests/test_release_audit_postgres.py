"""The release audit of sdc publish on PostgreSQL: `sdc publish --target` (python/sdc/release/publish_target.py) runs the
verification and the release audit of python/sdc/release/ (zeros, two methods over one population, linked
suppression, averaging CKM noise) over the release that grant_published copied into its publication schema, and
either writes the audit into that schema (table release_audit) or withdraws the publication.

On main 44955c4 grant_published published releases that sdc publish refuses on DuckDB: two CKM count tables of
one population whose averaged noise leaves a standard error below the floor, and a magnitude table that tells a
published zero from an empty cell (red team R3-3); `sdc publish` had no --target. Every test here failed there.

The project is built twice, on PostgreSQL (a database of its own on the session's server) and on DuckDB, from the
same microdata with the same record keys, so that the two audits can be compared figure by figure."""

from __future__ import annotations

import json
import re
import shutil

import psycopg2
import pytest

from dbt_project_helper import REPO, ScratchProject
from sdc.cli import main
from sdc.release.public_audit import public_release_audit
from sdc.warehouse.loader import load_microdata
from sdc.warehouse.scratch import project_yaml
from test_engine_postgres import copy_raw_tables, own_database, pg_rows
from test_engine_postgres_access import READER_PASSWORD

pytestmark = pytest.mark.postgres

TABLE = "pga_persons"
READER = "pga_reader"
PUBLICATION = "pga_publication"
MARKER = "sdc publication: grant_published copies the verified release here and replaces the schema each time"
NUMS_SEED_TYPES = ("    sdc_nums_ptable:\n      +column_types: {i: integer, j: \"decimal(9,4)\", p: \"decimal(9,8)\", "
                   "v: \"decimal(9,4)\", p_int_lb: \"decimal(9,8)\", p_int_ub: \"decimal(9,8)\", type: varchar}\n")
PROJECT_EXTRA = f"""
models:
  sdc:
    audit: {{+schema: audit, +materialized: table}}
    protected: {{+schema: protected, +materialized: table, +tags: ["sdc_publish"]}}
vars:
  sdc_publication_schema: {PUBLICATION}
  sdc_magnitude_params:
    preset: tauargus
    type: top_contr
    top_k: 3
    multiplier: {{type: flex, fp: 500, p: [0.25, 0.05], epsilon: [1, 0.5, 0.2], q: 3}}
    mu_c: 1
    sensitive: ["p:10", "nk:2,85"]
    separation: true
on-run-start: ["{{{{ sdc.engine_setup() }}}}"]
on-run-end: ["{{{{ sdc.grant_published(['{READER}']) }}}}"]
"""
# every combination of sex (2) x region (5) x age (3) holds records (i mod 30), as tests/test_release_averaging.py;
# a confidential column no table reads (diagnosis)
AGES = "id,sex,region,age,income,diagnosis\n" + "".join(
    f"{i},{'mw'[i % 2]},R{i % 5},A{i % 3},{1000 + (i * 7919) % 5000},D{i % 7}\n" for i in range(400))
# eight regions of one person each: a count of 1 is published as 0 or 3 and more (js = 2), as
# tests/test_release_verification.py LONE
LONE = "id,sex,region,age,income\n" + "".join(
    f"{i},{'mw'[i % 2]},{f'L{i // 3}' if i < 24 else f'R{i % 5}'},A{i % 3},{1000 + (i * 7919) % 5000}.25\n"
    for i in range(400))
SECRET = b"release audit on postgres"

# two CKM count tables of one population (averaging: 1.14 together, 1.29 and 1.22 alone), a magnitude table of the
# same cells with the remedy for published zeros, and cell suppression of the men's incomes (another population)
RELEASE = {
    "audit/ckm_persons.sql": f"{{{{ sdc.ckm_count(source('raw', '{TABLE}'), dims=['sex', 'region']) }}}}",
    "audit/ckm_by_age.sql": f"{{{{ sdc.ckm_count(source('raw', '{TABLE}'), dims=['sex', 'age']) }}}}",
    "audit/ckm_income.sql": f"{{{{ sdc.ckm_sum(source('raw', '{TABLE}'), dims=['sex', 'region'], value='income', "
                            "zero_with_counts=ref('sdc_ptable')) }}",
    "protected/persons.sql": "{{ sdc.ckm_published(ref('ckm_persons')) }}",
    "protected/by_age.sql": "{{ sdc.ckm_published(ref('ckm_by_age')) }}",
    "protected/income.sql": "{{ sdc.ckm_published(ref('ckm_income')) }}",
    # the men, of region R1 only two: their cells are suppressed
    "audit/supp_men.sql": f"{{{{ config(materialized='view') }}}}select * from {{{{ source('raw', '{TABLE}') }}}} "
                          "where sex = 'm' and (region <> 'R1' or id < 20)",
    "audit/supp_cells.sql": "{{ sdc.suppression_cells(ref('supp_men'), dims=['region'], value='income') }}",
    "audit/supp_primary.sql": "{{ sdc.suppression_primary(ref('supp_cells'), ['freq:6', 'p:10']) }}",
    "audit/supp_relations.sql": "{{ sdc.suppression_constraints(ref('supp_cells'), ['region']) }}",
    "protected/men_suppressed.sql": "{{ sdc.suppression_published('SCHEMA_audit.supp_pattern', ['region'], "
                                    "value='value') }}",
    # microdata of one's own: a staging table that a CKM step reads (computed again from its SQL)
    "audit/persons_kept.sql": f"select * from {{{{ source('raw', '{TABLE}') }}}} where id <> 2",
    "audit/ckm_kept.sql": "{{ sdc.ckm_count(ref('persons_kept'), dims=['region']) }}",
    "protected/kept.sql": "{{ sdc.ckm_published(ref('ckm_kept')) }}",
}
# R3-3: the same counts beside the magnitudes without the remedy
ZEROS = {
    "audit/ckm_persons.sql": RELEASE["audit/ckm_persons.sql"],
    "audit/ckm_income.sql": f"{{{{ sdc.ckm_sum(source('raw', '{TABLE}'), dims=['sex', 'region'], value='income') }}}}",
    "protected/persons.sql": RELEASE["protected/persons.sql"],
    "protected/income.sql": RELEASE["protected/income.sql"],
}


def make_project(root, server, schema: str, models: dict, persons: str) -> ScratchProject:
    """The dbt project with ``models`` on ``server`` (PostgreSQL) or, without one, on DuckDB; raw.pga_persons loaded
    into a DuckDB file with record keys (the same keys on both engines), then copied to PostgreSQL."""
    p = ScratchProject(root, postgres=server, schema=schema)
    text = project_yaml().replace("seeds:\n  sdc:\n", "seeds:\n  sdc:\n" + NUMS_SEED_TYPES) + PROJECT_EXTRA
    (p.root / "dbt_project.yml").write_text(text)
    shutil.copy(REPO / "demo" / "seeds" / "sdc_nums_ptable.csv", p.root / "seeds" / "sdc_nums_ptable.csv")
    p.sources([TABLE])
    audit_schema = f"{schema}_audit"
    for name, sql in models.items():
        (p.root / "models" / name).parent.mkdir(parents=True, exist_ok=True)
        (p.root / "models" / name).write_text(sql.replace("SCHEMA_audit", audit_schema))
    (root / "persons.csv").write_text(persons)
    staging = root / "staging.duckdb" if server is not None else p.db
    load_microdata(staging, root / "persons.csv", TABLE, id_column="id", key_mode="keyed", secret=SECRET)
    if server is not None:
        copy_raw_tables(staging, server, [TABLE])
    suppressed = "men_suppressed" in {name.rsplit("/", 1)[-1][:-4] for name in models}
    result = p.dbt("build", *(["--exclude", "men_suppressed"] if suppressed else []))
    assert result.returncode == 0, result.stdout[-4000:]
    if suppressed:  # docs/quickstart/postgresql.md: the cells, sdc suppress --target, then the published table
        env = {} if server is not None else {"SDC_DUCKDB_PATH": str(p.db)}
        with environment(env):
            assert main(["suppress", "--target", "pg" if server is not None else "duckdb", "--profile", "sdc_scratch",
                         "--profiles-dir", str(p.root), "--cells", f"{audit_schema}.supp_primary",
                         "--relations", f"{audit_schema}.supp_relations", "--pattern", f"{audit_schema}.supp_pattern",
                         "--dims", "region", "--magnitude"]) == 0
        # the whole project again: the manifest holds the SQL of every model (a selection's, of the selected only)
        result = p.dbt("build")
        assert result.returncode == 0, result.stdout[-4000:]
    return p


class environment:
    def __init__(self, values: dict):
        self.values, self.saved = values, {}

    def __enter__(self):
        import os

        for k, v in self.values.items():
            self.saved[k] = os.environ.get(k)
            os.environ[k] = v

    def __exit__(self, *exc):
        import os

        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def reader_role(server) -> None:
    admin = server.connect()
    try:
        with admin.cursor() as cur:
            cur.execute("select 1 from pg_roles where rolname = %s", (READER,))
            if cur.fetchone() is None:
                cur.execute(f"create role {READER} login password '{READER_PASSWORD}'")
        admin.commit()
    finally:
        admin.close()


@pytest.fixture(scope="module")
def release(tmp_path_factory, postgres):
    """The release on PostgreSQL (database pga_release), built and published by grant_published."""
    server = own_database(postgres, "pga_release")
    reader_role(server)
    return make_project(tmp_path_factory.mktemp("pga_release"), server, "pga", RELEASE, AGES)


@pytest.fixture(scope="module")
def zeros(tmp_path_factory, postgres):
    server = own_database(postgres, "pga_zeros")
    reader_role(server)
    return make_project(tmp_path_factory.mktemp("pga_zeros"), server, "pga", ZEROS, LONE)


def publish_target(p: ScratchProject, *more: str, target: str = "pg") -> int:
    return main(["publish", "--target", target, "--profiles-dir", str(p.root), "--project-dir", str(p.root), *more])


def as_reader(p: ScratchProject, sql: str) -> list[tuple]:
    return pg_rows(p.postgres, sql, user=READER, password=READER_PASSWORD)


def schema_comment(p: ScratchProject) -> list[tuple]:
    return pg_rows(p.postgres, "select obj_description(oid, 'pg_namespace') from pg_namespace where nspname = "
                               f"'{PUBLICATION}'")


def catalog(p: ScratchProject) -> list[tuple]:
    """Every relation of the database outside the system schemas, with its kind and comment, and every schema."""
    return pg_rows(p.postgres, "select n.nspname, c.relname, c.relkind, obj_description(c.oid, 'pg_class') from pg_class "
                               "as c join pg_namespace as n on n.oid = c.relnamespace where n.nspname not in "
                               "('pg_catalog', 'information_schema', 'pg_toast') and n.nspname not like 'pg_temp%' "
                               "and n.nspname not like 'pg_toast_temp%' order by 1, 2") + \
        pg_rows(p.postgres, "select nspname, '', 'schema', obj_description(oid, 'pg_namespace') from pg_namespace "
                            "order by 1")


def republish(p: ScratchProject) -> None:
    """The publication made again, as after the next dbt build (the grant_published operation; its manifest, which
    holds no compiled SQL, elsewhere: sdc publish reads the build's)."""
    result = p.dbt("run-operation", "grant_published", "--args", f"{{roles: [{READER}]}}",
                   "--target-path", str(p.root / "operation"))
    assert result.returncode == 0, result.stdout[-3000:]


# ------------------------------------------------------------------------------------------ averaging CKM noise
def test_averaged_noise_below_the_floor_is_refused_and_the_publication_withdrawn(release, tmp_path, capsys):
    """Two CKM count tables of one population take the sex margins and the total to a standard error of 1.14
    (tests/test_release_averaging.py): under the floor 1.2 the release is refused naming the tables and the cell,
    and the publication grant_published made is dropped; under the default floor 1.0 it passes, the audit is
    written into the publication schema for the reader role, and nothing else in the database changes."""
    republish(release)
    assert as_reader(release, f"select count(*) from {PUBLICATION}.by_age") == [(12,)]
    before = catalog(release)
    assert publish_target(release, "--min-standard-error", "1.2") == 2
    err = capsys.readouterr().err
    assert err.startswith("sdc publish: error: the release lets a reader average the CKM noise: the cell (sex='"), err
    assert ("of pga_protected.by_age (the same records in pga_protected.persons) is estimated from the CKM count "
            "tables of raw.pga_persons (pga_protected.by_age, pga_protected.persons) with a standard error of 1.14, "
            "below the floor of 1.2 (sdc publish --min-standard-error)") in err, err
    assert f"the publication schema {PUBLICATION} that grant_published made is dropped: the release is withdrawn" in err
    assert schema_comment(release) == []
    with pytest.raises(psycopg2.errors.UndefinedTable):
        as_reader(release, f"select count(*) from {PUBLICATION}.by_age")
    # nothing else was changed
    assert catalog(release) == [r for r in before if r[0] != PUBLICATION]

    republish(release)
    before = catalog(release)
    audit = tmp_path / "release_audit.json"
    assert publish_target(release, "--audit-json", str(audit)) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == ("audited the 5 relations tagged sdc_publish in target pg (by_age, income, kept, "
                        f"men_suppressed, persons), as grant_published published them in schema {PUBLICATION}"), out
    assert lines[1].startswith("verified 5 relations against sdc's recomputation from the microdata; release audit "
                               "passed (published zeros, two methods over one population: "), out
    assert "  pga_protected.by_age (ckm counts): 12 cells, 0 published as 0, 0 suppressed" in lines
    assert "  pga_protected.men_suppressed (cell suppression): 6 cells, 0 published as 0, 2 suppressed" in lines, out
    assert ("averaging CKM noise: the smallest standard error of a count with records is 1.14 (exact), the cell "
            "(sex=") in out
    assert lines[-3:] == [f"wrote the release audit to {PUBLICATION}.{'release_audit'} (read by {READER})",
                          "recorded as release 1 in the ledger sdc_ledger of database pga_release",
                          f"wrote the release audit to {audit}"], out
    report = json.loads(audit.read_text())
    assert report["averaging"]["smallest_standard_error"] == pytest.approx(1.1421, abs=1e-4)
    assert report["verified"] == ["pga_protected.by_age", "pga_protected.income", "pga_protected.kept",
                                  "pga_protected.men_suppressed", "pga_protected.persons"]
    (stored,) = as_reader(release, f"select report from {PUBLICATION}.release_audit")
    # the readers' part of it only (red team R4-1); the office's whole audit is the ledger's
    assert (json.loads(stored[0]) if isinstance(stored[0], str) else stored[0]) == public_release_audit(report)
    after = catalog(release)
    # the audit wrote its table and the ledger of releases (release/ledger_postgres.py), nothing else
    ledger = [r[:3] for r in after if r[0] == "sdc_ledger"]
    assert [r for r in after if r[1] != "release_audit" and r[0] != "sdc_ledger"] == before
    assert [r[:3] for r in after if r[1] == "release_audit"] == [(PUBLICATION, "release_audit", "r")]
    assert ledger == [("sdc_ledger", "cells", "r"), ("sdc_ledger", "cells_pkey", "i"), ("sdc_ledger", "releases", "r"),
                      ("sdc_ledger", "releases_pkey", "i"), ("sdc_ledger", "", "schema")], ledger
    # a second run replaces its own table
    assert publish_target(release) == 0
    assert as_reader(release, f"select count(*) from {PUBLICATION}.release_audit") == [(1,)]


# ------------------------------------------------------------------------------------------ R3-3
def test_a_magnitude_beside_a_count_published_as_zero_is_refused_as_on_duckdb(zeros, capsys):
    """R3-3 on PostgreSQL: the count table publishes 0 for a cell with one record, the magnitude table its income;
    grant_published published both (each table alone is protected), sdc publish --target refuses the release as
    sdc publish does on DuckDB, and withdraws it."""
    false_zeros = pg_rows(zeros.postgres, "select c.sex, c.region, i.value from pga_audit.ckm_persons as c join "
                                          "pga_protected.income as i using (sex, region) where c.count = 0 and "
                                          "c.original > 0 and c.region like 'L%' order by 1, 2")
    assert false_zeros and all(value != 0 for _, _, value in false_zeros)  # the leak is there to find
    assert as_reader(zeros, f"select count(*) from {PUBLICATION}.income") != [(0,)]  # and was published
    assert publish_target(zeros) == 2
    err = capsys.readouterr().err
    assert err.startswith("sdc publish: error: the release tells a published zero from an empty cell: "
                          "pga_protected.persons publishes the count 0 for the cell (sex="), err
    assert "and pga_protected.income publishes" in err
    assert f"the publication schema {PUBLICATION} that grant_published made is dropped: the release is withdrawn" in err
    assert schema_comment(zeros) == []


# ------------------------------------------------------------------------------------------ the same audit
def normalised(report: dict) -> dict:
    """The audit with the engines' names of the same relations made one: the profile's schema (pga on PostgreSQL,
    main on DuckDB: the seeds) and dbt's schemas <schema>_audit and <schema>_protected; the time of the audit
    left out, and the ledger of releases (the file sdc publish --db keeps beside the warehouse) and what it
    compares with its last release (the records changed since: none on DuckDB's first release). The sketches of
    the records are the same on both engines."""
    text = json.dumps({k: v for k, v in report.items()
                       if k not in ("published_at", "release", "ledger", "ledger_id", "published", "withdrawn",
                                    "changed_records")},
                      sort_keys=True)
    text = re.sub(r"\b(pga|main)_(audit|protected)\b", r"\2", text)
    text = re.sub(r"\b(pga|main)\.(sdc_\w+)", r"\2", text)
    found = json.loads(text)
    # populations in the order of their microdata's names, which hold the database's name
    found["averaging"]["populations"].sort(key=lambda p: p["population"])
    return found


def test_the_audit_on_postgres_equals_the_audit_of_the_same_project_on_duckdb(release, tmp_path_factory, capsys):
    """The same models, microdata and record keys built on DuckDB and published with sdc publish --db: the two
    release audits agree in every figure (cells, zeros, cell pairs compared across methods, the suppression
    table, every standard error of averaging, each table's quality, the ptables), names and time aside: one
    audit, two engines."""
    root = tmp_path_factory.mktemp("pga_duckdb")
    duck = make_project(root, None, "main", RELEASE, AGES)
    on_duckdb = root / "duckdb.json"
    assert main(["publish", "--db", str(duck.db), "--out", str(root / "pub.duckdb"), "--project-dir", str(duck.root),
                 "--audit-json", str(on_duckdb)]) == 0
    if not schema_comment(release):
        republish(release)
    on_postgres = root / "postgres.json"
    assert publish_target(release, "--audit-json", str(on_postgres)) == 0
    capsys.readouterr()
    duckdb_report, postgres_report = (json.loads(p.read_text()) for p in (on_duckdb, on_postgres))
    assert duckdb_report["cells_compared_across_methods"] > 0 and len(duckdb_report["tables"]) == 5
    assert [t["suppressed"] for t in duckdb_report["tables"] if t["method"] == "cell suppression"] == [2]
    assert len(duckdb_report["averaging"]["populations"]) == 2 and duckdb_report["quality"]
    assert duckdb_report["published_at"] and postgres_report["published_at"]
    assert normalised(postgres_report) == normalised(duckdb_report)


# ------------------------------------------------------------------------------------------ hostile
def test_a_target_that_does_not_exist_is_one_line_and_changes_nothing(release, tmp_path, capsys):
    """--target names no target of the profile, or one that is not PostgreSQL; --out (the DuckDB publication
    file) beside it; a publication schema that a tagged relation is built into, even with grant_published's
    marker: each is refused before anything is read, and nothing in the database changes."""
    if not schema_comment(release):
        republish(release)
    before = catalog(release)
    assert publish_target(release, target="nowhere") == 2
    err = capsys.readouterr().err
    assert err == ("sdc publish: error: profile 'sdc_scratch' has no target 'nowhere' (targets: pg)\n"), err
    # a DuckDB target: its publication is a file (sdc publish --db)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "profiles.yml").write_text((release.root / "profiles.yml").read_text()
                                           + f"    duck:\n      type: duckdb\n      path: {tmp_path / 'w.duckdb'}\n")
    assert main(["publish", "--target", "duck", "--profiles-dir", str(profiles), "--project-dir", str(release.root)]) == 2
    assert capsys.readouterr().err == (
        "sdc publish: error: sdc publish --target audits a PostgreSQL or Spark warehouse, and target duck is of type duckdb: "
        "publish a DuckDB warehouse with sdc publish --db <its file> --out <publication file>\n")
    assert not (tmp_path / "w.duckdb").exists()
    # --out belongs to the DuckDB publication file
    assert publish_target(release, "--out", "pub.duckdb") == 2
    assert "--out and --parquet write the publication file of sdc publish --db" in capsys.readouterr().err
    # the schema dbt builds the tagged relations into, marked as if grant_published had made it: never dropped
    con = release.postgres.connect()
    with con.cursor() as cur:
        cur.execute("comment on schema pga_protected is %s", (MARKER,))
    con.commit()
    con.close()
    try:
        marked = catalog(release)
        for schema in ("pga_protected", "raw"):
            assert publish_target(release, "--publication-schema", schema, "--min-standard-error", "1.2") == 2
            err = capsys.readouterr().err
            assert f"the publication schema is '{schema}', which holds raw data or relations dbt builds" in err, err
            assert catalog(release) == marked
    finally:
        con = release.postgres.connect()
        with con.cursor() as cur:
            cur.execute("comment on schema pga_protected is null")
        con.commit()
        con.close()
    assert catalog(release) == before


def test_a_publication_schema_that_grant_published_did_not_make_is_never_dropped_nor_written(release, capsys):
    """A schema of that name whose comment is not grant_published's marker (one's own schema, or a marker
    edited): the refused release leaves it as it is, and a passed audit is not written into it."""
    if not schema_comment(release):
        republish(release)
    con = release.postgres.connect()
    with con.cursor() as cur:
        cur.execute(f"comment on schema {PUBLICATION} is 'our own notes'")
        cur.execute(f"drop table if exists {PUBLICATION}.release_audit")
    con.commit()
    con.close()
    try:
        before = catalog(release)
        assert publish_target(release, "--min-standard-error", "1.2") == 2
        err = capsys.readouterr().err
        assert "the release lets a reader average the CKM noise" in err
        assert (f"the schema {PUBLICATION} was not made by grant_published (its comment is not grant_published's "
                "marker): it is left as it is") in err, err
        assert catalog(release) == before
        # nothing written: an error, so that a scheduled job does not take it for a release
        assert publish_target(release) == 2
        err = capsys.readouterr().err
        assert (f"sdc publish: error: the release audit passed, but nothing was published or recorded: the schema "
                f"{PUBLICATION} was not made by grant_published (its comment is not grant_published's marker)") in err, err
        assert catalog(release) == before
    finally:
        con = release.postgres.connect()
        with con.cursor() as cur:
            cur.execute(f"comment on schema {PUBLICATION} is %s", (MARKER,))
        con.commit()
        con.close()


# ------------------------------------------------------------------------------------------ the table builder
ANALYST = "pga_analyst"
CODES = "dimension,code,parent\n" + "".join(
    f"{dim},{code},{'' if code == 'Total' else 'Total'}\n"
    for dim, codes in (("sex", "mw"), ("region", [f"R{k}" for k in range(5)]), ("age", [f"A{k}" for k in range(3)]))
    for code in ["Total", *codes])
GRANT_BUILDER = ("{% macro grant_builder() %}{% do run_query(sdc.ckm_table_builder(ref('persons_cube'), "
                 f"['sex', 'region', 'age'], ['{ANALYST}'], hierarchy=ref('codes'))) %}}"
                 "{% do run_query('commit') %}{% endmacro %}")


def test_the_table_builder_s_cube_is_part_of_the_release_audit(release, tmp_path, capsys):
    """Analysts read every cell of the table builder's cube through its function: the cube (ckm_finest_cells) is
    verified against sdc's recomputation and counted in the release audit as one more CKM count table of its
    population. Beside the two published tables of the same persons (1.14 without it), its cells take the smallest
    standard error to 1.12: under a floor of 1.13 the release passed without the cube and is refused with it.
    The refusal withdraws the builder too (red team R4-12: the analysts kept every cell of the refused cube):
    EXECUTE on its function is revoked from the analysts, until the next build grants it again."""
    republish(release)
    assert publish_target(release, "--min-standard-error", "1.13") == 0
    capsys.readouterr()
    model = release.root / "models" / "audit" / "persons_cube.sql"
    seed = release.root / "seeds" / "codes.csv"
    operation = release.root / "macros" / "grant_builder.sql"
    seed.write_text(CODES)
    operation.parent.mkdir(exist_ok=True)
    operation.write_text(GRANT_BUILDER)
    model.write_text(f"{{{{ sdc.ckm_finest_cells(source('raw', '{TABLE}'), ['sex', 'region', 'age'], "
                     "hierarchy=ref('codes')) }}")
    admin = release.postgres.connect()
    with admin.cursor() as cur:
        cur.execute("select 1 from pg_roles where rolname = %s", (ANALYST,))
        if cur.fetchone() is None:
            cur.execute(f"create role {ANALYST} login password '{READER_PASSWORD}'")
        cur.execute(f"grant connect on database {release.postgres.dbname} to {ANALYST}")
    admin.commit()
    admin.close()
    ask = "select count(*) from pga_audit.sdc_ckm_table(array['sex', 'region', 'age'])"
    try:
        result = release.dbt("build")
        assert result.returncode == 0, result.stdout[-3000:]
        result = release.dbt("run-operation", "grant_builder", "--target-path", str(release.root / "operation"))
        assert result.returncode == 0, result.stdout[-3000:]
        assert pg_rows(release.postgres, ask, user=ANALYST, password=READER_PASSWORD) == [(3 * 6 * 4,)]
        assert publish_target(release, "--min-standard-error", "1.13") == 2
        err = capsys.readouterr().err
        assert "the release lets a reader average the CKM noise: the cell (sex=" in err and \
            "of pga_audit.persons_cube" in err and "with a standard error of 1.12, below the floor of 1.13" in err, err
        assert err.rstrip().endswith("; the table builder is withdrawn (EXECUTE revoked: "
                                     f"pga_audit.sdc_ckm_table(text[],jsonb) from {ANALYST})"), err
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            pg_rows(release.postgres, ask, user=ANALYST, password=READER_PASSWORD)
        republish(release)
        audit = tmp_path / "audit.json"
        assert publish_target(release, "--audit-json", str(audit)) == 0
        report = json.loads(audit.read_text())
        assert "pga_audit.persons_cube" in report["verified"]
        assert {t["table"]: t["cells"] for t in report["tables"]}["pga_audit.persons_cube"] == 3 * 6 * 4
        population = next(p for p in report["averaging"]["populations"] if "pga_audit.persons_cube" in p["tables"])
        assert {"pga_protected.persons", "pga_protected.by_age"} <= set(population["tables"])
        assert report["averaging"]["smallest_standard_error"] == pytest.approx(1.12, abs=0.005)
    finally:
        model.unlink()
        seed.unlink()
        operation.unlink()
        admin = release.postgres.connect()
        with admin.cursor() as cur:
            cur.execute("drop table if exists pga_audit.persons_cube")
            cur.execute("drop function if exists pga_audit.sdc_ckm_table(text[], jsonb)")
            cur.execute("drop table if exists pga.codes")
        admin.commit()
        admin.close()
        assert release.dbt("build").returncode == 0


# ------------------------------------------------------------------------------------------ the replica
def test_the_replica_holds_only_the_columns_of_the_microdata_that_the_audit_reads(release, monkeypatch, capsys):
    """Issue 49: sdc publish --target copied every column of the loaded microdata into its replica (a file on the
    machine that runs it), the confidential column no table reads (diagnosis) among them. It copies the values of
    the columns the release audit reads by name (the steps' dimensions, measures and record keys, what the views
    filter on; a column the men's view passes on counts only where it is read by its name: PostgreSQL writes the
    view's star out as every column) and the others as NULL, so that the views still run; the audit of every
    table is the same. On the previous code the replica held every diagnosis."""
    import importlib

    publish_module = importlib.import_module("sdc.release.publish_target")  # the module, not sdc.release's function
    copied, copy_table = {}, publish_module._copy_table

    def recording(cur, con, folder, catalog, item, names=None):
        copy_table(cur, con, folder, catalog, item, names)
        copied[(item.schema, item.name)] = con.execute(
            f'select count(id), count(sex), count(region), count(age), count(income), count(rk), count(diagnosis) '
            f'from {catalog}."{item.schema}"."{item.name}"').fetchall() if item.name == TABLE else None

    monkeypatch.setattr(publish_module, "_copy_table", recording)
    republish(release)
    assert publish_target(release) == 0
    out = capsys.readouterr().out
    assert "verified 5 relations against sdc's recomputation from the microdata; release audit passed" in out, out
    assert copied[("raw", TABLE)] == [(400, 400, 400, 400, 400, 400, 0)]
