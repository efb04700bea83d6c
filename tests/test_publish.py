"""`sdc publish`: what a dbt project tags sdc_publish, and nothing else, reaches the publication file and the
Parquet folder; raw microdata, keys, audit columns and suppressed values are refused; nothing that sdc did not
write is deleted or overwritten; a failed run leaves the previous publication as it was; the file opens in
DuckDB 1.0.0."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from dbt_project_helper import dbt_in_process
from sdc.cli import main
from sdc.conventions import (
    CKM_AUDIT_COLUMNS,
    PARQUET_MARKER_FILE,
    PTABLE_SEED_COLUMN_TYPES,
    SUPPRESSION_AUDIT_COLUMNS,
)
from sdc.errors import SdcError
from sdc.warehouse.loader import load_microdata
from sdc.release.publish import publish, unpublishable
from sdc.quoting import quote_identifier, quote_literal

REPO = Path(__file__).resolve().parent.parent
OLDEST_CLIENT = "1.0.0"  # the oldest DuckDB that reads the publication's storage format v1.0.0

# ------------------------------------------------------------------------------------------ a real dbt project
PROJECT_YML = """name: pubtest
version: "1.0.0"
config-version: 2
profile: pubtest
model-paths: [models]
seed-paths: [seeds]
flags: {send_anonymous_usage_stats: false}
models:
  pubtest:
    audit: {+schema: audit, +materialized: table}
    protected: {+schema: protected, +materialized: table, +tags: ["sdc_publish"]}
    staging: {+materialized: view}
    other: {+materialized: table}
seeds:
  pubtest:
    sdc_ptable:
      +column_types: {%s}
""" % ", ".join(f"{k}: {v!r}" for k, v in PTABLE_SEED_COLUMN_TYPES.items())
PROFILES_YML = """pubtest:
  target: duckdb
  outputs:
    duckdb:
      type: duckdb
      path: "{{ env_var('SDC_DUCKDB_PATH') }}"
      threads: 1
"""
MODELS = {
    "sources.yml": "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n      - name: persons\n",
    "audit/ckm_persons.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region']) }}\n",
    "protected/persons_by_sex_region.sql": "{{ sdc.ckm_published(ref('ckm_persons')) }}\n",
    "protected/persons_view.sql": "{{ config(materialized='view') }}\n{{ sdc.ckm_published(ref('ckm_persons')) }}\n",
    "staging/stg_persons.sql": "select * from {{ source('raw', 'persons') }}\n",
    "other/raw_counts.sql": "select sex, count(*) as n from {{ source('raw', 'persons') }} group by 1\n",
    "other/counts_from_staging.sql": "select sex, count(*) as n from {{ ref('stg_persons') }} group by 1\n",
    # the original behind a new name, read from the audit relation (found by a new user)
    "other/renamed_original.sql": "select sex, region, original as persons from {{ ref('ckm_persons') }}\n",
    # a protection step beside raw data: two parents
    "other/published_union_raw.sql": "{{ sdc.ckm_published(ref('ckm_persons')) }}\nunion all\n"
                                     "select sex, region, 1, 1, false, 'Total', 1, 1, false, 'Total', 1 "
                                     "from {{ source('raw', 'persons') }}\n",
    # a BI view on a protected model: allowed; a table built by a model of one's own records its build by the hook
    "other/bi_view.sql": "{{ config(post_hook=\"{{ sdc.build_record() }}\") }}\n"
                         "select * from {{ ref('persons_by_sex_region') }} where sex = 'm'\n",
    "other/bi_view_unrecorded.sql": "select * from {{ ref('persons_by_sex_region') }} where sex = 'w'\n",
}
PUBLISHED = ["persons_by_sex_region", "persons_view"]


@dataclass
class Built:
    project: Path
    db: Path
    manifest: Path

    def manifest_json(self) -> dict:
        return json.loads(self.manifest.read_text())


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    """One dbt project that uses sdc as a package, with dbt's default schema names (main_protected, ...)."""
    return make_project(tmp_path_factory.mktemp("pubtest"), MODELS)


def make_project(root: Path, models: dict[str, str]) -> Built:
    """A dbt project with ``models`` (path -> text) on raw.persons (400 records), loaded and built."""
    project = root / "project"
    (project / "seeds").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(PROJECT_YML)
    (project / "profiles.yml").write_text(PROFILES_YML)
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    shutil.copy(REPO / "demo" / "seeds" / "sdc_ptable.csv", project / "seeds" / "sdc_ptable.csv")
    # reference data: the regions' names (a seed the office may publish)
    (project / "seeds" / "regions.csv").write_text("region,name\n" + "".join(f"R{k},Region {k}\n" for k in range(5)))
    for name, text in models.items():
        (project / "models" / name).parent.mkdir(parents=True, exist_ok=True)
        (project / "models" / name).write_text(text)
    micro = root / "persons.csv"
    micro.write_text("id,sex,region\n" + "".join(f"{i},{'mw'[i % 2]},{'R' + str(i % 5)}\n" for i in range(400)))
    db = root / "warehouse.duckdb"
    load_microdata(db, micro, "persons", id_column="id", key_mode="keyed", secret=b"publish test secret")
    built = Built(project, db, project / "target" / "manifest.json")
    dbt(built, "deps")
    dbt(built, "build")
    return built


def dbt(built: Built, *args: str) -> None:
    env = dict(os.environ, DBT_PROFILES_DIR=str(built.project), SDC_DUCKDB_PATH=str(built.db),
               DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    result = dbt_in_process(list(args), built.project, env)
    assert result.returncode == 0, result.stdout[-4000:]


def edited_manifest(built: Built, tmp: Path, tag: tuple[str, ...] = (), untag: tuple[str, ...] = (),
                    **node_changes) -> Path:
    """A copy of the project's manifest with the tag added to the nodes ``tag``, taken from the nodes ``untag``
    (as dbt writes it: node tags and config tags), and node fields changed."""
    manifest = built.manifest_json()
    for n in manifest["nodes"].values():
        if n["name"] in tag:
            n["tags"] = n["config"]["tags"] = n["tags"] + ["sdc_publish"]
        if n["name"] in untag:
            n["tags"] = n["config"]["tags"] = []
        n.update(node_changes.get(n["name"], {}))
    path = tmp / "manifest.json"
    path.write_text(json.dumps(manifest))
    return path


# ------------------------------------------------------------------------------------------ hand-made warehouses
def node(name: str, schema: str = "protected", database: str = "wh", *, tags=("sdc_publish",),
         macros=("macro.sdc.ckm_published",), parents=(), resource="model", materialized="table", alias=None,
         compiled_code: str | None = None) -> dict:
    found = {"resource_type": resource, "name": name, "alias": alias or name, "schema": schema, "database": database,
             "tags": list(tags), "config": {"materialized": materialized, "tags": list(tags)},
             "depends_on": {"macros": list(macros), "nodes": list(parents)}}
    if compiled_code is not None:
        found["compiled_code"] = compiled_code
    return found


def write_manifest(path: Path, nodes: dict, sources: dict | None = None, macros: dict | None = None) -> Path:
    path.write_text(json.dumps({"metadata": {}, "nodes": nodes, "sources": sources or {}, "macros": macros or {}}))
    return path


def record_build(con, schema: str, table: str, loads: dict | None = None, step: str | None = "ckm_published",
                 reads: list[dict] | None = None, sql: str | None = None) -> None:
    """The build record that macros/build_record.sql commits with each relation the sdc macros build; by default
    that of a ckm_published step over the hand-made audit relation audit.cells (made_audit_parent), which the gate
    of what a relation reads lets pass and the verification of its content refuses; with ``sql`` and no step,
    that of a table of one's own built from that SQL."""
    record = {"invocation_id": "hand-made", "loads": loads or {}}
    if sql is not None:
        record["sql_md5"] = hashlib.md5(sql.encode("utf-8")).hexdigest()
    if step is not None:
        database = con.execute("select current_database()").fetchone()[0]
        record.update(step=step, ptables={} if step != "ckm_count" else {"count": "hand-made"},
                      reads=reads if reads is not None else [{"database": database, "schema": "audit", "name": "cells"}])
    con.execute(f"comment on table {quote_identifier(schema)}.{quote_identifier(table)} is "
                f"{quote_literal(json.dumps({'sdc_build': record}))}")


def made_audit_parent(con) -> None:
    """audit.cells: a hand-made relation with the build record of a ckm_count step (the gate's audit parent)."""
    con.execute("create schema if not exists audit")
    con.execute("create or replace table audit.cells as select 1 as original")
    record_build(con, "audit", "cells", step="ckm_count", reads=[])


def hand_made(tmp: Path, tables: dict[str, str], schema: str = "protected", name: str = "wh") -> tuple[Path, Path]:
    """A warehouse <name>.duckdb with the tables (name -> select) in ``schema``, each a seed of the dbt project (its
    CSV file written from the select, its table loaded from it: what dbt seed gives; readers may get seeds, and
    sdc compares each with its file), and a manifest that tags them."""
    db = tmp / f"{name}.duckdb"
    seeds = tmp / f"{name}_seeds"
    seeds.mkdir(exist_ok=True)
    con = duckdb.connect(str(db))
    con.execute(f"create schema if not exists {quote_identifier(schema)}")
    made_audit_parent(con)
    for table, select in tables.items():
        csv = seeds / f"{len(list(seeds.iterdir()))}.csv"
        con.execute(f"copy ({select}) to {quote_literal(str(csv))} (header)")
        con.execute(f"create table {quote_identifier(schema)}.{quote_identifier(table)} as {select}")
        record_build(con, schema, table, step=None, sql=select)
    con.close()
    files = {t: str(f.name) for t, f in zip(tables, sorted(seeds.iterdir(), key=lambda f: int(f.stem))[-len(tables):])}
    nodes = {f"seed.p.{t}": {**node(t, schema, name, macros=(), resource="seed", materialized="seed"),
                             "root_path": str(seeds), "original_file_path": files[t]} for t in tables}
    return db, write_manifest(tmp / "manifest.json", nodes)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder``: relative path -> sha256 (byte for byte)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def office_audit(db: Path) -> dict:
    """The full audit of the last release, as the ledger beside the warehouse ``db`` keeps it (the office's)."""
    from sdc.release.ledger import default_ledger, release_audit

    return release_audit(default_ledger(db))


def public_audit(out: Path) -> dict:
    """The release audit that the readers of the publication ``out`` read."""
    import json

    return json.loads(rows(out, "select report from sdc_publication.release_audit")[0][0])


def rows(db: Path, sql: str) -> list:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def no_temp_files(*folders: Path) -> bool:
    return not any(p.name.startswith(".sdc-publish-") for f in folders if f.exists() for p in f.iterdir())


# ------------------------------------------------------------------------------------------ quoting
def test_quote_identifier_doubles_quotes_and_round_trips_any_name():
    assert quote_identifier("a") == '"a"'
    assert quote_identifier('x"y') == '"x""y"'
    con = duckdb.connect()
    for name in ['t"; drop table canary; --', "it's", "semi;colon", "new\nline", '""', "Ä ö"]:
        con.execute(f"create table {quote_identifier(name)} ({quote_identifier(name)} integer)")
        assert con.execute("select table_name, column_name from duckdb_columns() where table_name = ?",
                           [name]).fetchall() == [(name, name)]
    for bad in ["", "a\x00b"]:
        with pytest.raises(SdcError):
            quote_identifier(bad)


def test_quote_literal_doubles_quotes_and_round_trips_any_text():
    assert quote_literal("it's") == "'it''s'"
    con = duckdb.connect()
    for text in ["it's", "'; drop table x; --", "new\nline", "back\\slash", ""]:
        assert con.execute(f"select {quote_literal(text)}").fetchone()[0] == text
    with pytest.raises(SdcError):
        quote_literal("a\x00b")


# ------------------------------------------------------------------------------------------ what is published
def test_publishes_the_tagged_tables_and_views_of_a_project_with_default_schema_names(built, tmp_path):
    out, folder = tmp_path / "pub.duckdb", tmp_path / "parquet"
    assert publish(built.db, out, folder, project_dir=built.project) == PUBLISHED
    assert rows(built.db, "select table_schema, table_name, table_type from information_schema.tables "
                          "where table_name in ('persons_by_sex_region', 'persons_view') order by 2") == [
        ("main_protected", "persons_by_sex_region", "BASE TABLE"), ("main_protected", "persons_view", "VIEW")]
    # the view is published as a table with the view's data; nothing else, no views
    assert rows(out, "select schema_name, table_name from duckdb_tables() order by all") == [
        ("main", "persons_by_sex_region"), ("main", "persons_view"), ("sdc_publication", "relations"),
        ("sdc_publication", "release_audit")]
    assert rows(out, "select count(*) from duckdb_views() where not internal") == [(0,)]
    assert rows(out, "select * from sdc_publication.relations order by name") == [
        ("persons_by_sex_region", "warehouse.main_protected.persons_by_sex_region", "model.pubtest.persons_by_sex_region",
         "table"),
        ("persons_view", "warehouse.main_protected.persons_view", "model.pubtest.persons_view", "view")]
    for name in PUBLISHED:
        warehouse = rows(built.db, f"select * from main_protected.{name} order by all")
        assert len(warehouse) > 0
        assert rows(out, f"select * from main.{name} order by all") == warehouse
        assert rows(out, f"select * from read_parquet('{folder / (name + '.parquet')}') order by all") == warehouse
        assert [c for (c,) in rows(out, f"select column_name from duckdb_columns() where table_name = '{name}'")] == [
            "sex", "region", "count"] + [f"{d}__{c}" for d in ("sex", "region") for c in ("level", "is_total", "parent", "sort")]
    assert sorted(p.name for p in folder.iterdir()) == [PARQUET_MARKER_FILE] + [f"{n}.parquet" for n in PUBLISHED]
    assert json.loads((folder / PARQUET_MARKER_FILE).read_text())["files"] == [f"{n}.parquet" for n in PUBLISHED]
    assert no_temp_files(tmp_path, folder)


def test_cli_reads_the_manifest_of_the_working_directory(built, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(built.project)
    out = tmp_path / "pub.duckdb"
    assert main(["publish", "--db", str(built.db), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"published 2 relations to {out}\nverified ")
    assert [t for (t,) in rows(out, "select table_name from duckdb_tables() where schema_name = 'main' order by 1")] \
        == PUBLISHED


def test_a_tagged_seed_is_published_and_a_snapshot_refused(built, tmp_path):
    manifest = edited_manifest(built, tmp_path, tag=("regions",))
    assert publish(built.db, tmp_path / "pub.duckdb", manifest=manifest) == sorted(PUBLISHED + ["regions"])
    assert rows(tmp_path / "pub.duckdb", "select * from regions order by all") == \
        rows(built.db, "select * from main.regions order by all")
    assert {"table": "main.regions", "method": "reference data (a seed)"} in public_audit(tmp_path / "pub.duckdb")["tables"]
    # a snapshot keeps what its SQL gave at each run, which sdc cannot compute again: a relation of one's own
    db, _ = hand_made(tmp_path, {"persons_snapshot": "select 'm' as sex, 3 as count"}, schema="snapshots")
    snap = write_manifest(tmp_path / "snap.json", {"snapshot.p.persons_snapshot": node(
        "persons_snapshot", "snapshots", resource="snapshot", materialized="snapshot",
        compiled_code="select 'm' as sex, 3 as count")})
    with pytest.raises(SdcError, match=r"snapshots.persons_snapshot \(snapshot.p.persons_snapshot\) is a relation of one's own"):
        publish(db, tmp_path / "snap.duckdb", manifest=snap)


@pytest.mark.parametrize("model, path", [
    ("raw_counts", "raw_counts <- source raw.persons"),
    ("counts_from_staging", "counts_from_staging <- stg_persons <- source raw.persons"),
])
def test_a_tagged_relation_built_on_raw_microdata_without_protection_is_refused(built, tmp_path, model, path):
    manifest = edited_manifest(built, tmp_path, tag=(model,))
    with pytest.raises(SdcError, match=f"relation main.{model} .* reaches raw microdata, source raw.persons, "
                                       "without a protection step") as error:
        publish(built.db, tmp_path / "pub.duckdb", manifest=manifest)
    assert str(error.value).endswith(path)
    assert not (tmp_path / "pub.duckdb").exists() and no_temp_files(tmp_path)


@pytest.mark.parametrize("model, message", [
    ("renamed_original", "relation main.renamed_original .* reads the audit relation ckm_persons, which holds the "
                         "original values, without a protection step .*: renamed_original <- ckm_persons$"),
    ("published_union_raw", "relation main.published_union_raw .* (reads the audit relation ckm_persons|"
                            "reaches raw microdata, source raw.persons)"),
])
def test_originals_behind_a_new_name_or_beside_a_protection_step_are_refused(built, tmp_path, model, message):
    """Before, a model reading ckm_count's relation counted as protected: `original as persons` was published."""
    with pytest.raises(SdcError, match=message):
        publish(built.db, tmp_path / "pub.duckdb", manifest=edited_manifest(built, tmp_path, tag=(model,)))
    assert not (tmp_path / "pub.duckdb").exists()


def test_a_view_on_a_protected_model_is_refused_as_a_relation_of_ones_own(built, tmp_path):
    """Red team R4-2: a relation of one's own publishes what its SQL says, and its SQL can carry numbers no step
    computed; readers get sdc's steps and seeds only (a BI tool filters the step itself)."""
    manifest = edited_manifest(built, tmp_path, tag=("bi_view",))
    with pytest.raises(SdcError, match=r"^main.bi_view \(model.pubtest.bi_view\) is a relation of one's own \(a view "
                                       r"or table that no sdc step built\): what it publishes is what its SQL says"):
        publish(built.db, tmp_path / "pub.duckdb", manifest=manifest)
    assert not (tmp_path / "pub.duckdb").exists()


def test_lineage_counts_a_protection_macro_called_through_a_project_macro(tmp_path):
    db, _ = hand_made(tmp_path, {"t": "select 'm' as sex, 3 as count"})
    source = {"source.p.raw.persons": {"resource_type": "source", "source_name": "raw", "name": "persons"}}
    audit = node("audit", "audit", tags=(), macros=["macro.sdc.ckm_count"], parents=["source.p.raw.persons"])
    wrapped = node("t", macros=["macro.p.my_publish"], parents=["model.p.audit"],
                   compiled_code="select 'm' as sex, 3 as count")
    nodes = {"model.p.t": wrapped, "model.p.audit": audit}
    macros = {"macro.p.my_publish": {"depends_on": {"macros": ["macro.sdc.ckm_published"]}}}
    # the lineage passes (the protection macro called through the project's); the warehouse's table is then judged
    # by what it is: no step built it
    with pytest.raises(SdcError, match=r"protected.t \(model.p.t\) is a relation of one's own"):
        publish(db, tmp_path / "a.duckdb", manifest=write_manifest(tmp_path / "a.json", nodes, source, macros))
    macros = {"macro.p.my_publish": {"depends_on": {"macros": ["macro.dbt.something"]}}}
    with pytest.raises(SdcError, match="reads the audit relation audit"):
        publish(db, tmp_path / "b.duckdb", manifest=write_manifest(tmp_path / "b.json", nodes, source, macros))
    tagged_source = dict(source)
    tagged_source["source.p.raw.persons"] = dict(source["source.p.raw.persons"], tags=["sdc_publish"])
    with pytest.raises(SdcError, match="source source.p.raw.persons is tagged sdc_publish: a source is raw data"):
        publish(db, tmp_path / "c.duckdb", manifest=write_manifest(tmp_path / "c.json", {"model.p.t": wrapped},
                                                                     tagged_source, macros))


def test_a_tagged_audit_relation_is_refused_naming_the_column(built, tmp_path):
    manifest = edited_manifest(built, tmp_path, tag=("ckm_persons",))
    with pytest.raises(SdcError, match="relation main_audit.ckm_persons .* is an audit relation: it is built by "
                                         "sdc.ckm_count, whose relations can hold the original values"):
        publish(built.db, tmp_path / "pub.duckdb", manifest=manifest)


@pytest.mark.parametrize("column", [*CKM_AUDIT_COLUMNS, "rk", "rk_f_students", *SUPPRESSION_AUDIT_COLUMNS, "top_1",
                                    "top_12", "feasible_lower", "required_upper", "RK", "Noise"])
def test_a_column_that_undoes_the_protection_is_refused(tmp_path, column):
    # status, rule, lower and upper are refused beside a suppression column (here freq)
    db, manifest = hand_made(tmp_path, {"cells": f"select 'a' as dim, 3 as freq, 7 as {quote_identifier(column)}"})
    with pytest.raises(SdcError, match=f"relation protected.cells .* carries column '{column}'"):
        publish(db, tmp_path / "pub.duckdb", manifest=manifest)
    assert not (tmp_path / "pub.duckdb").exists()


def test_publishable_column_names():
    assert not any(unpublishable(c) for c in ["count", "sex", "value", "freq", "published_text", "top", "topic",
                                              "top_x", "risk", "original_code"])
    assert all(unpublishable(c) for c in ["rk", "rk_x", "cell_key", "top_3", "feasible_x", "required_x", "Status"])
    # a census dimension called status is not a suppression status (reviewer's finding)
    assert not unpublishable("status", ["state", "status", "count"])
    assert unpublishable("status", ["state", "status", "published_text"])
    assert unpublishable("Rule", ["dim", "Rule", "protection_lower"])


def test_a_table_with_a_dimension_called_status_is_published(tmp_path):
    db, manifest = hand_made(tmp_path, {"employment": "select 'employed' as status, 'm' as sex, 7 as count"})
    assert publish(db, tmp_path / "pub.duckdb", manifest=manifest) == ["employment"]


SUPPRESSED_OK = ("select * from (values ('a', 5, '5'), ('b', null, 'x'), ('Total', 9, '9'), ('c', null, '3-8'), "
                 "('d', 0, '0')) t(dim, freq, published_text)")


@pytest.mark.parametrize("select, column, example", [
    # the true value of a suppressed cell (mark x) left in the value column
    ("select * from (values ('a', 5, '5'), ('b', 2, 'x')) t(dim, freq, published_text)", "freq", "x"),
    # an interval instead of the value, value column still filled (a magnitude table)
    ("select * from (values ('a', 10.5, '10.5'), ('b', 2.25, '0-20')) t(dim, value, published_text)", "value", "0-20"),
    # a second copy of the value beside the value column NULLed by suppression_published
    ("select * from (values ('a', 5, 5, '5'), ('b', null, 2, 'x')) t(dim, freq, copy, published_text)", "copy", "x"),
])
def test_the_true_value_of_a_suppressed_cell_is_refused(tmp_path, select, column, example):
    db, manifest = hand_made(tmp_path, {"supp": select, "ok": SUPPRESSED_OK})
    with pytest.raises(SdcError, match=f"relation protected.supp .* shows the true value of 1 suppressed cell.* "
                                       f"column '{column}' \\(published_text '{example}'\\)"):
        publish(db, tmp_path / "pub.duckdb", manifest=manifest)


def test_suppressed_cells_with_null_values_are_published(tmp_path):
    db, manifest = hand_made(tmp_path, {"ok": SUPPRESSED_OK, "magnitude": (
        "select * from (values (1, 'a', 1234.5, '1234.5'), (2, 'b', null, 'x'), (3, 'c', 1e6 + 1e-9, '1000000')) "
        "t(year, dim, value, published_text)")})
    assert publish(db, tmp_path / "pub.duckdb", manifest=manifest) == ["magnitude", "ok"]
    assert rows(tmp_path / "pub.duckdb", "select * from ok order by dim") == rows(db, "select * from protected.ok order by dim")


@pytest.mark.parametrize("select, cell", [
    # a ckm_published relation: dimensions and count (the reported case: each cell perturbed and original)
    ("select * from (values ('m', 'R1', 5), ('w', 'R1', 3), ('m', 'R1', 7)) t(sex, region, count)",
     "sex='m', region='R1'"),
    # a suppression_published relation: the value column and published_text are no dimensions
    ("select * from (values ('a', 5, '5'), ('b', null, 'x'), ('a', 6, '6'), ('a', null, 'x')) t(dim, freq, published_text)",
     "dim='a'"),
])
def test_a_relation_with_a_duplicate_cell_is_refused(tmp_path, capsys, select, cell):
    db, manifest = hand_made(tmp_path, {"ok": SUPPRESSED_OK, "twice": select})
    out, folder = tmp_path / "pub.duckdb", tmp_path / "parquet"
    code = main(["publish", "--db", str(db), "--manifest", str(manifest), "--out", str(out), "--parquet", str(folder)])
    assert code == 2
    times = 3 if cell == "dim='a'" else 2
    assert capsys.readouterr().err == (
        f"sdc publish: error: relation protected.twice (seed.p.twice) holds the cell ({cell}) {times} times: every "
        "cell is published once (a perturbation table with overlapping intervals, or a join that repeats rows, "
        "publishes a cell twice); fix the model and run dbt build\n")
    assert not out.exists() and not folder.exists() and no_temp_files(tmp_path)


def test_cells_that_differ_in_a_numeric_dimension_are_not_duplicates(tmp_path):
    # year is numeric but no value column (it differs from published_text): cells (2020, a) and (2021, a) are two
    db, manifest = hand_made(tmp_path, {"years": "select * from (values (2020, 'a', null, 'x'), (2021, 'a', 4, '4'), "
                                                 "(2020, 'b', null, 'x')) t(year, dim, value, published_text)"})
    assert publish(db, tmp_path / "pub.duckdb", manifest=manifest) == ["years"]
    assert rows(tmp_path / "pub.duckdb", "select count(*) from years") == [(3,)]


# ------------------------------------------------------------------------------------------ manifest and warehouse
def test_nothing_tagged_is_refused(built, tmp_path):
    manifest = built.manifest_json()
    for n in manifest["nodes"].values():
        n["tags"], n["config"]["tags"] = [], []
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    with pytest.raises(SdcError, match="no relation in .*m.json is tagged sdc_publish: tag the protected models in dbt"):
        publish(built.db, tmp_path / "pub.duckdb", manifest=tmp_path / "m.json")


def test_a_tagged_relation_missing_from_the_warehouse_is_refused(built, tmp_path):
    manifest = edited_manifest(built, tmp_path, persons_view={"alias": "not_built_yet"})
    with pytest.raises(SdcError, match=r"relation main_protected.not_built_yet \(model.pubtest.persons_view, tagged "
                                       r"sdc_publish\) is not in the warehouse .*warehouse.duckdb: run dbt build"):
        publish(built.db, tmp_path / "pub.duckdb", manifest=manifest)


def test_the_manifest_of_another_warehouse_is_refused(built, tmp_path):
    other = tmp_path / "other.duckdb"
    shutil.copy(built.db, other)
    with pytest.raises(SdcError, match=r"the manifest .*manifest.json belongs to warehouse 'warehouse' .* but "
                                       r".*other.duckdb is warehouse 'other'"):
        publish(other, tmp_path / "pub.duckdb", project_dir=built.project)


def test_two_relations_with_one_published_name_are_refused(tmp_path):
    db, _ = hand_made(tmp_path, {"t": "select 1 as count"})
    con = duckdb.connect(str(db))
    con.execute("create schema other; create table other.T as select 2 as count")
    con.close()
    manifest = write_manifest(tmp_path / "m.json", {"model.p.a": node("t"), "model.p.b": node("T", "other")})
    with pytest.raises(SdcError, match="protected.t and other.T would both be published as 'T'"):
        publish(db, tmp_path / "pub.duckdb", manifest=manifest)


# ------------------------------------------------------------------------------------------ never delete what sdc did not write
def test_parquet_into_the_warehouse_folder_deletes_nothing(built, tmp_path, capsys):
    """The reported case: --parquet W, where W holds the warehouse and other files."""
    folder = tmp_path / "W"
    folder.mkdir()
    db = folder / "warehouse.duckdb"
    shutil.copy(built.db, db)
    (folder / "notes.txt").write_text("keep me")
    (folder / "sub").mkdir()
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n")
    before = snapshot(folder)
    assert main(["publish", "--db", str(db), "--project-dir", str(built.project), "--out", str(tmp_path / "pub.duckdb"),
                 "--parquet", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err == (f"sdc publish: error: --parquet {folder} is not empty and has no {PARQUET_MARKER_FILE} of sdc publish "
                   "(it holds notes.txt, sub, warehouse.duckdb); refusing to write there: give a new or empty folder\n")
    assert snapshot(folder) == before and sorted(p.name for p in folder.iterdir()) == ["notes.txt", "sub", "warehouse.duckdb"]
    assert not (tmp_path / "pub.duckdb").exists()


def test_parquet_dot_from_the_working_directory(built, tmp_path, monkeypatch, capsys):
    full = tmp_path / "full"
    full.mkdir()
    shutil.copy(built.db, full / "warehouse.duckdb")
    before = snapshot(full)
    monkeypatch.chdir(full)
    assert main(["publish", "--db", "warehouse.duckdb", "--manifest", str(built.manifest), "--out", "pub.duckdb",
                 "--parquet", "."]) == 2
    assert "sdc publish: error: --parquet . is not empty" in capsys.readouterr().err
    assert snapshot(full) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert main(["publish", "--db", str(full / "warehouse.duckdb"), "--manifest", str(built.manifest),
                 "--out", str(tmp_path / "pub.duckdb"), "--parquet", "."]) == 0
    assert sorted(p.name for p in empty.iterdir()) == [PARQUET_MARKER_FILE] + [f"{n}.parquet" for n in PUBLISHED]


def test_parquet_folder_keeps_other_files_and_drops_only_its_own(built, tmp_path):
    folder = tmp_path / "parquet"
    out = tmp_path / "pub.duckdb"
    publish(built.db, out, folder, project_dir=built.project)
    (folder / "notes.txt").write_text("mine")
    (folder / "other.parquet").write_text("not sdc's")
    both = snapshot(folder)
    # the view is no longer tagged: its file goes, the user's files stay byte for byte
    manifest = edited_manifest(built, tmp_path, untag=("persons_view",))
    assert publish(built.db, out, folder, manifest=manifest) == ["persons_by_sex_region"]
    after = snapshot(folder)
    assert sorted(after) == [PARQUET_MARKER_FILE, "notes.txt", "other.parquet", "persons_by_sex_region.parquet"]
    assert after["notes.txt"] == both["notes.txt"] and after["other.parquet"] == both["other.parquet"]
    assert json.loads((folder / PARQUET_MARKER_FILE).read_text())["files"] == ["persons_by_sex_region.parquet"]
    assert no_temp_files(folder, tmp_path)


def test_a_parquet_file_sdc_did_not_write_is_not_overwritten(built, tmp_path):
    folder = tmp_path / "parquet"
    folder.mkdir()
    (folder / PARQUET_MARKER_FILE).write_text(json.dumps({"written_by": "sdc publish", "files": []}))
    (folder / "persons_view.parquet").write_text("someone else's")
    before = snapshot(folder)
    with pytest.raises(SdcError, match="already holds persons_view.parquet, which sdc publish did not write"):
        publish(built.db, tmp_path / "pub.duckdb", folder, project_dir=built.project)
    assert snapshot(folder) == before


@pytest.mark.parametrize("listed", ["../outside.parquet", "warehouse.duckdb", "sub/x.parquet", ".hidden.parquet"])
def test_a_forged_marker_removes_nothing(built, tmp_path, listed):
    folder = tmp_path / "parquet"
    folder.mkdir()
    (folder / PARQUET_MARKER_FILE).write_text(json.dumps({"written_by": "sdc publish", "files": [listed]}))
    (tmp_path / "outside.parquet").write_text("outside")
    shutil.copy(built.db, folder / "warehouse.duckdb")
    before, around = snapshot(folder), snapshot(tmp_path)
    with pytest.raises(SdcError, match="lists .*, which is no file sdc publish writes"):
        publish(built.db, tmp_path / "pub.duckdb", folder, project_dir=built.project)
    assert snapshot(folder) == before and snapshot(tmp_path) == around


def test_relation_names_that_are_no_safe_file_names_are_refused_for_parquet(tmp_path):
    for i, name in enumerate(["../escape", "a/b", "..", ".hidden", "x;y", "new\nline", "a\\b"]):
        case = tmp_path / str(i)
        case.mkdir()
        db, manifest = hand_made(case, {name: "select 1 as count"})
        with pytest.raises(SdcError, match="cannot be a Parquet file name"):
            publish(db, case / "pub.duckdb", case / "parquet", manifest=manifest)
        assert sorted(p.name for p in case.iterdir()) == ["manifest.json", "wh.duckdb", "wh_seeds"]
        assert publish(db, case / "pub.duckdb", manifest=manifest) == [name]  # without --parquet it is fine
    assert not list(tmp_path.glob("*.parquet"))


@pytest.mark.parametrize("how", ["same path", "other path", "symlink", "hard link"])
def test_out_that_is_the_warehouse_is_refused(built, tmp_path, how):
    db = tmp_path / "warehouse.duckdb"
    shutil.copy(built.db, db)
    (tmp_path / "sub").mkdir()
    out = {"same path": db, "other path": tmp_path / "sub" / ".." / "warehouse.duckdb",
           "symlink": tmp_path / "link.duckdb", "hard link": tmp_path / "hard.duckdb"}[how]
    if how == "symlink":
        out.symlink_to(db)
    if how == "hard link":
        os.link(db, out)
    before = snapshot(tmp_path)
    with pytest.raises(SdcError, match=f"--out {out} is the warehouse database {db} itself"):
        publish(db, out, manifest=built.manifest)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("content", ["text", "duckdb"])
def test_out_that_is_no_publication_is_not_overwritten(built, tmp_path, content):
    out = tmp_path / "important.duckdb"
    if content == "text":
        out.write_text("my thesis")
    else:
        duckdb.connect(str(out)).execute("create table t as select 42 as answer").close()
    before = snapshot(tmp_path)
    with pytest.raises(SdcError, match=f"--out {out} exists and is not a publication written by sdc publish; "
                                       "refusing to overwrite it"):
        publish(built.db, out, project_dir=built.project)
    assert snapshot(tmp_path) == before


def test_a_previous_publication_is_replaced(built, tmp_path):
    out = tmp_path / "pub.duckdb"
    publish(built.db, out, manifest=edited_manifest(built, tmp_path, tag=("regions",)))
    assert publish(built.db, out, project_dir=built.project) == PUBLISHED
    assert [t for (t,) in rows(out, "select table_name from duckdb_tables() where schema_name = 'main' order by 1")] \
        == PUBLISHED
    assert no_temp_files(tmp_path)


# ------------------------------------------------------------------------------------------ atomic
def test_a_failure_after_tables_were_copied_leaves_the_previous_publication(tmp_path):
    tables = {"a_ok": SUPPRESSED_OK, "z_leak": "select * from (values ('a', 5, '5'), ('b', 2, 'x')) t(dim, freq, published_text)"}
    db, manifest = hand_made(tmp_path, tables)
    own = json.loads(manifest.read_text())["nodes"]
    good = write_manifest(tmp_path / "good.json", {"seed.p.a_ok": own["seed.p.a_ok"]})
    bad = write_manifest(tmp_path / "bad.json", {k: own[k] for k in ("seed.p.a_ok", "seed.p.z_leak")})
    out, folder = tmp_path / "pub" / "pub.duckdb", tmp_path / "pub" / "parquet"
    out.parent.mkdir()
    publish(db, out, folder, manifest=good)
    before = snapshot(out.parent)
    with pytest.raises(SdcError, match="relation protected.z_leak .* shows the true value"):
        publish(db, out, folder, manifest=bad)
    assert snapshot(out.parent) == before and no_temp_files(out.parent, folder)
    # a Parquet folder the failed run created is gone again
    with pytest.raises(SdcError, match="shows the true value"):
        publish(db, tmp_path / "new.duckdb", tmp_path / "new_parquet", manifest=bad)
    assert not (tmp_path / "new.duckdb").exists() and not (tmp_path / "new_parquet").exists()
    assert no_temp_files(tmp_path)


# ------------------------------------------------------------------------------------------ errors are one line
HOLD_LOCK = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
time.sleep(60)
"""


def test_a_locked_warehouse_is_one_line_and_exit_2(built, tmp_path, capsys):
    db = tmp_path / "warehouse.duckdb"
    shutil.copy(built.db, db)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        assert main(["publish", "--db", str(db), "--project-dir", str(built.project),
                     "--out", str(tmp_path / "pub.duckdb")]) == 2
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert err.startswith(f"sdc publish: error: cannot open the warehouse {db}: another process is using it (IO Error: ")
    assert err.count("\n") == 1 and "lock" in err
    assert no_temp_files(tmp_path) and not (tmp_path / "pub.duckdb").exists()
    # a previous publication that a program holds open for writing is left alone, in one line too
    out = tmp_path / "pub.duckdb"
    publish(db, out, project_dir=built.project)
    before = snapshot(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        assert main(["publish", "--db", str(db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert err.startswith(f"sdc publish: error: cannot read --out {out} to check that sdc publish wrote it: IO Error: ")
    assert err.count("\n") == 1
    assert snapshot(tmp_path) == before


def test_a_missing_output_folder_is_one_line_and_exit_2(built, tmp_path, capsys):
    out = tmp_path / "no" / "such" / "pub.duckdb"
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"sdc publish: error: output folder {out.parent} does not exist (--out {out})\n"
    missing = tmp_path / "no" / "parquet"
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project),
                 "--out", str(tmp_path / "pub.duckdb"), "--parquet", str(missing)]) == 2
    assert capsys.readouterr().err == f"sdc publish: error: --parquet {missing}: folder {missing.parent} does not exist\n"


def test_a_missing_manifest_is_one_line_and_exit_2(built, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["publish", "--db", str(built.db), "--out", "pub.duckdb"]) == 2
    assert capsys.readouterr().err == (
        f"sdc publish: error: dbt manifest not found: {Path('target') / 'manifest.json'}; run dbt build (or dbt parse) "
        "in the dbt project, give --project-dir, or give --manifest\n")
    assert main(["publish", "--db", str(built.db), "--out", "pub.duckdb", "--manifest", "nope.json"]) == 2
    assert capsys.readouterr().err == "sdc publish: error: dbt manifest not found: nope.json\n"
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------ hostile names
def test_hostile_names_reach_sql_only_quoted(tmp_path):
    schema = "s\"; drop table main.canary; --"
    table = "t\"'; drop table main.canary; --\nx"
    columns = ['a"b', "c'd", "e;f", "g\nh", "count"]
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create table main.canary as select 'alive' as status")
    con.execute(f"create schema {quote_identifier(schema)}")
    select = ", ".join(f"{i} as {quote_identifier(c)}" for i, c in enumerate(columns))
    con.execute(f"create table {quote_identifier(schema)}.{quote_identifier(table)} as select {select}")
    made_audit_parent(con)
    con.execute(f"copy (select {select}) to {quote_literal(str(tmp_path / 'x.csv'))} (header)")  # a seed's file
    con.close()
    manifest = write_manifest(tmp_path / "m.json", {"seed.p.x": {
        **node("x", schema, alias=table, macros=(), resource="seed", materialized="seed"),
        "root_path": str(tmp_path), "original_file_path": "x.csv"}})
    out = tmp_path / "pub.duckdb"
    assert publish(db, out, manifest=manifest) == [table]
    assert rows(out, "select column_name from duckdb_columns() where schema_name = 'main' and not internal order by column_index") == \
        [(c,) for c in columns]
    assert rows(out, f"select * from main.{quote_identifier(table)}") == [(0, 1, 2, 3, 4)]
    assert rows(db, "select * from main.canary") == [("alive",)]
    assert rows(out, "select relation from sdc_publication.relations") == [(f"wh.{schema}.{table}",)]
    # a second run replaces its own publication; the canary is still there
    assert publish(db, out, manifest=manifest) == [table]
    assert rows(db, "select * from main.canary") == [("alive",)]


# ------------------------------------------------------------------------------------------ older clients
READ_ALL = """
import json, sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
tables = con.execute("select schema_name, table_name from duckdb_tables() order by all").fetchall()
data = {f"{s}.{t}": [[repr(v) for v in row] for row in con.execute(f'select * from "{s}"."{t}" order by all').fetchall()]
        for s, t in tables}
print(json.dumps({"version": duckdb.__version__, "tables": data}))
"""


def old_client_python(version: str) -> Path:
    """A venv with duckdb==version, cached under the system temp folder (built once, renamed into place)."""
    home = Path(tempfile.gettempdir()) / f"sdc-test-duckdb-{version}"
    if not (home / "ready").exists():
        staging = Path(tempfile.mkdtemp(prefix=f"sdc-test-duckdb-{version}-", dir=tempfile.gettempdir()))
        subprocess.run([sys.executable, "-m", "venv", str(staging)], check=True, timeout=120)
        result = subprocess.run([str(staging / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                 "--disable-pip-version-check", f"duckdb=={version}"], capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"pip install duckdb=={version} failed: {result.stderr[-2000:]}"
        (staging / "ready").write_text(version)
        shutil.rmtree(home, ignore_errors=True)  # an unfinished one (no ready file)
        try:
            staging.rename(home)  # only bin/python is used, which works from the renamed folder
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another run put it there first
    return home / "bin" / "python"


def test_the_oldest_supported_client_reads_every_published_table(built, tmp_path):
    out = tmp_path / "pub.duckdb"
    publish(built.db, out, project_dir=built.project)
    assert out.read_bytes()[8:12] == b"DUCK" and int.from_bytes(out.read_bytes()[12:20], "little") == 64
    script = tmp_path / "read_all.py"
    script.write_text(READ_ALL)
    results = {}
    for python in (old_client_python(OLDEST_CLIENT), Path(sys.executable)):
        copy = tmp_path / f"copy-{len(results)}.duckdb"  # each client on its own copy: nothing written back
        shutil.copy(out, copy)
        result = subprocess.run([str(python), str(script), str(copy)], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        results[python] = json.loads(result.stdout)
    old, new = results.values()
    assert old["version"] == OLDEST_CLIENT and new["version"] == duckdb.__version__
    assert sorted(old["tables"]) == ["main.persons_by_sex_region", "main.persons_view", "sdc_publication.relations",
                                     "sdc_publication.release_audit"]
    assert old["tables"] == new["tables"] and all(old["tables"].values())


def test_nothing_is_published_after_a_failed_dbt_run(built, tmp_path, capsys):
    """Found by a new user: a build that failed on one model left the old tables, and sdc publish shipped them
    (the same cell with two values across tables). dbt's run_results.json beside the manifest says so."""
    manifest = edited_manifest(built, tmp_path)
    results = {"results": [{"unique_id": "model.pubtest.persons_by_sex_region", "status": "success"},
                           {"unique_id": "model.pubtest.ckm_persons", "status": "error"}]}
    (tmp_path / "run_results.json").write_text(json.dumps(results))
    code = main(["publish", "--db", str(built.db), "--manifest", str(manifest), "--out", str(tmp_path / "pub.duckdb")])
    assert code == 2
    assert "did not succeed: 1 node(s) failed or were skipped, first model.pubtest.ckm_persons" in capsys.readouterr().err
    assert not (tmp_path / "pub.duckdb").exists()
    results["results"][1]["status"] = "success"
    (tmp_path / "run_results.json").write_text(json.dumps(results))
    assert publish(built.db, tmp_path / "pub.duckdb", manifest=manifest) == PUBLISHED


# ------------------------------------------------------------------------------------------ one consistent build
MIXED_MODELS = {
    "sources.yml": MODELS["sources.yml"],
    "audit/ckm_sex.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex']) }}\n",
    "audit/ckm_region.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['region']) }}\n",
    "protected/by_sex.sql": "{{ sdc.ckm_published(ref('ckm_sex')) }}\n",
    "protected/by_sex_view.sql": "{{ config(materialized='view') }}\n{{ sdc.ckm_published(ref('ckm_sex')) }}\n",
    "protected/by_region.sql": "{{ sdc.ckm_published(ref('ckm_region')) }}\n",
}


def loaded_at(db: Path) -> str:
    return rows(db, "select cast(loaded_at as varchar) from raw.sdc_loads where table_name = 'persons'")[0][0]


def build_record(db: Path, relation: str) -> dict:
    schema, name = relation.split(".")
    (comment,) = rows(db, f"select comment from duckdb_tables() where schema_name = '{schema}' and table_name = '{name}'")[0]
    return json.loads(comment)["sdc_build"]


def test_relations_built_from_two_loads_are_refused_and_one_build_publishes(tmp_path, capsys, monkeypatch):
    """The reported case: kill -9 of dbt build left tables of the new load next to tables of the old one, and sdc
    publish shipped both. Here: build, sdc load again, rebuild one protected table with its audit model only."""
    built = make_project(tmp_path, MIXED_MODELS)
    first = loaded_at(built.db)
    invocation = json.loads((built.project / "target" / "run_results.json").read_text())["metadata"]["invocation_id"]
    for relation in ("main_audit.ckm_sex", "main_protected.by_sex", "main_protected.by_region"):
        record = build_record(built.db, relation)
        assert (record["invocation_id"], record["loads"]) == (invocation, {"raw.persons": [first]})
    out = tmp_path / "pub.duckdb"
    assert publish(built.db, out, project_dir=built.project) == ["by_region", "by_sex", "by_sex_view"]

    monkeypatch.setenv("SDC_KEY_SECRET", "publish test secret")
    assert main(["load", "--db", str(built.db), "--input", str(tmp_path / "persons.csv"), "--table", "persons",
                 "--id", "id", "--key-mode", "keyed"]) == 0
    second = loaded_at(built.db)
    assert second > first
    dbt(built, "build", "--select", "+by_region")
    capsys.readouterr()
    before = snapshot(tmp_path)
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"sdc publish: error: the tagged relations were built from different loads of raw.persons (load of {first}: "
        f"main_protected.by_sex, main_protected.by_sex_view; load of {second}: main_protected.by_region): a dbt build "
        "was interrupted or ran on part of the project; run dbt build after the last sdc load\n")
    assert snapshot(tmp_path) == before

    # a view reads its audit table live: rebuilt alone, the view shows the new load, the table beside it the old
    dbt(built, "build", "--select", "ckm_region", "by_region", "ckm_sex")
    with pytest.raises(SdcError, match=f"load of {first}: main_protected.by_sex; load of {second}: "
                                       "main_protected.by_region, main_protected.by_sex_view\\)"):
        publish(built.db, out, project_dir=built.project)

    dbt(built, "build")
    assert publish(built.db, out, project_dir=built.project) == ["by_region", "by_sex", "by_sex_view"]
    assert build_record(built.db, "main_protected.by_sex")["loads"] == {"raw.persons": [second]}
    assert rows(out, "select * from by_sex order by all") == rows(built.db, "select * from main_protected.by_sex order by all")

    # one load across the release, but sdc load ran again since: not the data the office loaded last (new-user D6)
    assert main(["load", "--db", str(built.db), "--input", str(tmp_path / "persons.csv"), "--table", "persons",
                 "--id", "id", "--key-mode", "keyed"]) == 0
    third = loaded_at(built.db)
    capsys.readouterr()
    before = snapshot(tmp_path)
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "sdc publish: error: main_protected.by_region, main_protected.by_sex, main_protected.by_sex_view were built "
        f"from the load of raw.persons of {second}, but its last sdc load is of {third}: run dbt build (and sdc "
        "suppress --target again for a suppression pattern) after the last sdc load\n")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("suffix", ["__dbt_backup", "__dbt_tmp"])
def test_a_relation_left_by_an_interrupted_build_is_refused(built, tmp_path, capsys, suffix):
    db = tmp_path / "warehouse.duckdb"
    shutil.copy(built.db, db)
    con = duckdb.connect(str(db))
    con.execute(f"create table main_protected.persons_by_sex_region{suffix} as select * from main_protected.persons_by_sex_region")
    con.close()
    out = tmp_path / "pub.duckdb"
    assert main(["publish", "--db", str(db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"sdc publish: error: main_protected.persons_by_sex_region{suffix} lie beside the tagged relations: a dbt "
        "build was interrupted and the warehouse may hold tables of two builds; run dbt build to the end before publishing\n")
    assert not out.exists() and no_temp_files(tmp_path)


def test_a_tagged_table_without_a_build_record_is_refused_naming_the_hook(built, tmp_path, capsys):
    manifest = edited_manifest(built, tmp_path, tag=("bi_view_unrecorded",))
    assert main(["publish", "--db", str(built.db), "--manifest", str(manifest), "--out", str(tmp_path / "pub.duckdb")]) == 2
    assert capsys.readouterr().err == (
        "sdc publish: error: no build record on main.bi_view_unrecorded (which load of the source tables it was built "
        "from), so a publication mixed from two builds cannot be told apart: the sdc macros (ckm_count, ckm_published, "
        "suppression_*) record it: run dbt build (persist_docs for relations writes over the record); a table of your "
        "own is not published, with a record or without (its SQL can carry numbers no step computed): tag the "
        "protection steps\n")
    assert not (tmp_path / "pub.duckdb").exists()
    # the model bi_view carries that hook: its record names the load of its protected parent
    assert build_record(built.db, "main.bi_view")["loads"] == {"raw.persons": [loaded_at(built.db)]}
