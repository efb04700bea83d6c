"""`sdc publish --target`: the release audit of sdc publish on a PostgreSQL warehouse.

On PostgreSQL the dbt hook grant_published (macros/grant_published.sql) checks and verifies each tagged relation
and copies the release into a schema of sdc's own (var sdc_publication_schema, default sdc_publication) that the
reader roles read. What no single table shows (python/sdc/release/audit.py: published zeros told from empty cells,
two methods over nearly the same records, linked suppression tables, averaging CKM noise) is audited here, by the
same Python code as on DuckDB, on a private replica:

* one read-only transaction (repeatable read: one snapshot) copies into a temporary DuckDB file, under the names
  of the manifest (the DuckDB catalog is named as the PostgreSQL database), every relation that the tagged
  relations reach: through dbt's lineage, the build records (what each step read, the ptables and hierarchies of
  its call) and, for views, PostgreSQL's dependencies; each with its build record (the relation's comment), the
  raw tables among them, the load log, and the tables of the publication schema. A protection step built as a
  view is copied as a table of its rows (its cells are compared with sdc's recomputation anyway); a view of
  one's own stays a view, its SQL (pg_get_viewdef) translated to DuckDB's by sqlglot, and so does the SQL of a
  table of one's own that a step reads as microdata (the manifest's, which sdc runs again). A translation that
  changes what the SQL gives can only make the recomputation differ from what PostgreSQL published: a refusal;
* the replica is opened read-only and sdc publish's checks, verification and release audit run on it
  (publish.check_release, copy_release, audit_checked_release); the publication schema must hold exactly what
  was audited;
* the release is checked against the last one in the ledger of releases, schema sdc_ledger of the build
  database (release/ledger_postgres.py: ledger.py's rules, e.g. a cell whose records did not change keeps its
  published value);
* both passed: in one transaction, only while the publication schema is still the one audited, the audit's JSON
  is written into it as table release_audit (only where grant_published made that schema: its comment is
  grant_published's marker), readable by the roles that read the schema, and the release is recorded in the
  ledger; with a publication database (--publication-database, var sdc_publication_database), the locked tables
  and the audit replace the publication there (release/publication_database.py), committed after the build
  database's transaction. Refused: that schema is dropped (the release is withdrawn), nothing is recorded, the
  publication database keeps the last release, and the message says so. A schema of that name without the
  marker is never written and never dropped; nothing else on PostgreSQL is written.

The replica (raw microdata among it) lies in a private scratch folder (mode 0700) that is removed at the end.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from sdc.warehouse.build_record import build_record_of_comment
from sdc.conventions import (
    DBT_LEFTOVER_SUFFIXES,
    LEDGER_PG_SCHEMA,
    LOAD_LOG_TABLE,
    MIN_STANDARD_ERROR,
    PROTECTION_STEPS,
    PUBLICATION_SCHEMA,
    RAW_SCHEMA,
    RELEASE_AUDIT_TABLE,
)
from sdc.errors import SdcError
from sdc.warehouse.profiles import _read_yaml, _render_values, connect_postgres, connect_target, read_target
from sdc.files import check_not_an_input, check_output_file, write_text_atomically
from sdc.release.publish import (
    AUDIT_JSON_WRITER,
    Marked,
    builder_cubes,
    manifest_location,
    read_manifest,
)
from sdc.quoting import quote_identifier as q
from sdc.quoting import quote_literal
from sdc.release.averaging import check_floor
from sdc.release.differencing import MIN_CHANGED_RECORDS, check_minimum, sketched_columns
from sdc.release.ledger_postgres import TargetLedger, read_cells, read_ledger, write_release
from sdc.release.public_audit import public_release_audit
from sdc.release.replica import (
    adapted_manifest,
    audit_replica,
    audited_names,
    check_against_ledger,
    copied_columns,
    create_views,
    is_loaded_microdata,
    mark_not_copied,
    lineage_parents,
    node_of,
    passed_on_whole,
    record_names,
    record_texts,
    translated_sql,
    view_sql,
)
from sdc.release.publication_database import check_database_name, ensure_database, held_release, stage_publication
from sdc.warehouse.database import duckdb_connect
from sdc.warehouse.macro_renderer import private_workspace

# names DuckDB keeps for its own catalogs: a PostgreSQL database of such a name cannot be mirrored under it
RESERVED_CATALOGS: tuple[str, ...] = ("memory", "temp", "system", "main")
NOT_MARKED = "was not made by grant_published (its comment is not grant_published's marker)"
# dates and times as DuckDB reads them back from PostgreSQL's text
DATESTYLE = "ISO, YMD"


@dataclass
class TargetRelease:
    """What sdc publish --target did: the tagged relations audited, the publication schema (``published``: one that
    grant_published made), and whether the audit was written there (else why not), read by which roles; the
    release's number in the ledger, and the publication database it was copied into."""

    names: list[str]
    schema: str
    target: str
    published: bool = False
    written: bool = False
    why_not: str | None = None
    readers: list[str] = field(default_factory=list)
    release: int | None = None  # its number in the ledger
    ledger: str | None = None
    database: str | None = None  # the publication database
    withdrawn: list[str] = field(default_factory=list)  # tables the publication database no longer holds
    elsewhere: str | None = None  # where the last release went, when this one went elsewhere
    published_to: str | None = None  # database.schema of this release
    spark: bool = False  # on Spark sdc publishes the release itself (release/publish_spark.py)


@dataclass
class Publication:
    """The publication schema as the read transaction saw it."""

    name: str
    oid: int | None = None  # None: there is none
    marked: bool = False
    tables: list[str] = field(default_factory=list)
    digests: dict = field(default_factory=dict)


@dataclass
class Mirrored:
    """A relation of the warehouse in the replica: ``kind`` table (its rows copied) or view (its SQL)."""

    oid: int
    schema: str
    name: str
    relkind: str
    comment: str | None
    kind: str
    reads: list = field(default_factory=list)  # (schema, name) it reads: lineage, record, dependencies


# ------------------------------------------------------------------------------------------ the command
def publish_target(profiles_dir, profile: str, target: str | None, *, project_dir=None, manifest=None,
                   report: dict | None = None, min_standard_error: float = MIN_STANDARD_ERROR,
                   publication_schema: str | None = None, publication_database: str | None = None,
                   publication_target: str | None = None, min_changed_records: int = MIN_CHANGED_RECORDS,
                   accept_parameter_change: bool = False, audit_json: str | Path | None = None) -> TargetRelease:
    r"""Audit the release that grant_published published on the PostgreSQL ``target`` (see the module's text),
    check it against the last release in the ledger (release/ledger_postgres.py) and, both passed, write the
    audit, record the release and, with ``publication_database``, publish it into that database
    (release/publication_database.py); returns what was audited and written; ``report`` gets the audit's
    figures, and with ``audit_json`` that file (JSON) too. A DuckDB warehouse is published by ``publish`` instead:

    >>> import pathlib, tempfile
    >>> from sdc.release import publish_target
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (pathlib.Path(folder) / "profiles.yml").write_text(
    ...         "census:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n      path: warehouse.duckdb\n")
    ...     publish_target(folder, "census", None)
    Traceback (most recent call last):
      ...
    sdc.errors.SdcError: sdc publish --target audits a PostgreSQL or Spark warehouse, and the default target of profile census is of type duckdb: publish a DuckDB warehouse with sdc publish --db <its file> --out <publication file>
    """
    if audit_json:
        check_audit_json(audit_json, project_dir, manifest)
    check_floor(min_standard_error)
    check_minimum(min_changed_records)
    output = read_target(profiles_dir, profile, target)
    shown = f"target {target}" if target else f"the default target of profile {profile}"
    if output["type"] == "spark":
        return _publish_on_spark(output, shown, project_dir, manifest, report, min_standard_error,
                                 publication_schema, publication_database or publication_target, min_changed_records,
                                 accept_parameter_change, audit_json)
    _check_postgres(output, shown)
    manifest_path, manifest_data, marked = read_manifest(project_dir, manifest)
    schema = publication_schema_of(publication_schema, project_dir)
    place = _publication_place(profiles_dir, profile, output, publication_target, publication_database,
                               _project_var(project_dir, "sdc_publication_database"))
    database = place.database if place is not None else None
    _check_names(manifest_data, marked, schema)
    marker = publication_marker()
    result = TargetRelease(sorted(m.name for m in marked), schema, shown)
    with connect_target(profiles_dir, profile, target) as where:
        pg = where.connection
        build_database = pg.get_dsn_parameters()["dbname"]
        if place is not None and place.target is None:
            check_database_name(database, build_database)
        held = held_release(place.connect, database, schema) if place is not None else None
        try:
            checked = _checked_release(pg, manifest_data, manifest_path, marked, schema, marker, shown,
                                       min_standard_error, accept_parameter_change, (database, held),
                                       min_changed_records)
        except _NotAudited:
            raise
        except SdcError as exc:  # refused
            if database is None:
                raise
            raise SdcError(f"{exc}; the publication database {database} is left as it was (its readers keep the last "
                           "release that passed)") from None
        try:
            audit = checked.audit
            _publish_checked(pg, checked, result, place, schema, build_database, marker)
        finally:
            if checked.ledger is not None:
                checked.ledger.close()
    _report(audit, report, audit_json)
    return result


def _report(audit: dict, report: dict | None, audit_json) -> None:
    """The audit's figures into ``report``, and with ``audit_json`` into that file."""
    if report is not None:
        report.update(audit)
    if audit_json:
        write_text_atomically(Path(audit_json), json.dumps(audit, indent=2, sort_keys=True) + "\n",
                              command=AUDIT_JSON_WRITER)


def _check_postgres(output: dict, shown: str) -> None:
    if output["type"] != "postgres":
        hint = ("publish a DuckDB warehouse with sdc publish --db <its file> --out <publication file>"
                if output["type"] == "duckdb" else "sdc publishes releases of DuckDB, PostgreSQL and Spark")
        raise SdcError(f"sdc publish --target audits a PostgreSQL or Spark warehouse, and {shown} is of type "
                       f"{output['type']}: {hint}")


def _publish_on_spark(output: dict, shown: str, project_dir, manifest, report: dict | None, min_standard_error: float,
                      publication_schema: str | None, elsewhere: str | None, min_changed_records: int,
                      accept_parameter_change: bool, audit_json) -> TargetRelease:
    """The release of a Spark warehouse: audited, recorded and published by sdc itself (release/publish_spark.py)."""
    from sdc.release.publish_spark import publish_spark
    from sdc.warehouse.spark_target import SparkWarehouse

    if elsewhere is not None:
        raise SdcError("--publication-database and --publication-target name a PostgreSQL database; on Spark the "
                       "release is published into the database var sdc_publication_schema (or --publication-schema) "
                       "names")
    manifest_path, manifest_data, marked = read_manifest(project_dir, manifest)
    schema = publication_schema_of(publication_schema, project_dir)
    _check_names(manifest_data, marked, schema)
    result = TargetRelease(sorted(m.name for m in marked), schema, shown, spark=True)
    wh = SparkWarehouse(output, shown)
    try:
        audit = publish_spark(wh, shown, manifest_data, manifest_path, marked, schema, publication_marker(),
                              min_standard_error, accept_parameter_change, min_changed_records)
    finally:
        wh.close()
    result.published = result.written = True
    result.release, result.ledger = audit["release"], audit["ledger"]
    result.published_to = schema
    result.withdrawn = list(audit.get("withdrawn") or [])
    _report(audit, report, audit_json)
    return result


@dataclass
class PublicationPlace:
    """Where the audited release is copied for its readers: a database of the build server
    (--publication-database) or the database of another dbt target (--publication-target, e.g. another cluster,
    whose readers see nothing of the build in any catalog: red team R4-3)."""

    database: str
    connect: object  # () -> a psycopg2 connection to it
    target: str | None = None  # the dbt target, for another server

    def label(self, schema: str) -> str:
        return f"{self.database}.{schema}" + (f" of target {self.target}" if self.target else "")


def _publication_place(profiles_dir, profile: str, output: dict, publication_target: str | None,
                       publication_database: str | None, project_database: str | None) -> PublicationPlace | None:
    """The publication's place: --publication-target, else --publication-database, else the project's var."""
    if publication_target is not None:
        if publication_database is not None:
            raise SdcError("--publication-target names the publication database's own connection (its dbname); give "
                           "it or --publication-database (a database of the build server), not both")
        other = read_target(profiles_dir, profile, publication_target)
        if other["type"] != "postgres":
            raise SdcError(f"--publication-target {publication_target} is of type {other['type']}: the publication "
                           "goes into a PostgreSQL database")
        name = str(other.get("dbname") or other.get("database") or "")
        same = (str(other.get("host")), int(other.get("port", 5432))) == (str(output.get("host")),
                                                                         int(output.get("port", 5432)))
        if same and name == str(output.get("dbname") or output.get("database")):
            raise SdcError(f"--publication-target {publication_target} is the build database itself: the publication "
                           "goes into a database of its own, so that its readers see nothing else")
        return PublicationPlace(name, lambda: connect_postgres(other), publication_target)
    database = publication_database or project_database
    if database is not None:
        return PublicationPlace(database, lambda: connect_postgres(output, database))
    return None


def _publish_checked(pg, checked, result: TargetRelease, place: PublicationPlace | None, schema: str,
                     build_database: str, marker: str) -> None:
    """The release that passed: its audit written and recorded, and with ``database`` copied there; or, where
    grant_published has not published it (no schema, or one not sdc's), ``result.why_not`` says so."""
    publication, audit = checked.publication, checked.audit
    if publication.oid is None:
        result.why_not = (f"there is no schema {schema} (grant_published publishes the release there: its "
                          "on-run-end hook, or dbt run-operation grant_published)")
        return
    if not publication.marked:
        result.why_not = f"the schema {schema} {NOT_MARKED}"
        return
    result.published = True
    if place is not None and place.target is None:
        ensure_database(pg, place.database)  # another server's database is its administrator's to make
    checked.publication_name = place.label(schema) if place is not None else f"{build_database}.{schema}"
    last = checked.ledger.con.execute("select publication from main.releases order by release_id desc limit 1"
                                      ).fetchone()
    if last is not None and last[0] and last[0] != checked.publication_name:
        result.elsewhere = last[0]  # a monthly job that lost --publication-database (new user D10)
    result.published_to = checked.publication_name
    result.readers, result.withdrawn = _write_release(pg, checked, marker, place.connect if place is not None else None)
    result.written, result.release, result.ledger = True, audit["release"], checked.ledger.where
    result.database = None if place is None else place.database + (f" of target {place.target}" if place.target else "")


def check_audit_json(path: str | Path, project_dir=None, manifest=None) -> None:
    """The audit file of publish_target may be written: a file of its own (no symbolic link), none that it reads
    (the manifest, the run results), and new or an earlier audit file of sdc publish."""
    if Path(path).is_symlink():
        raise SdcError(f"--audit-json {path} is a symbolic link: give the path of a file of its own")
    manifest_path = manifest_location(project_dir, manifest)
    check_not_an_input(path, manifest_path, manifest_path.with_name("run_results.json"), flag="--audit-json")
    check_output_file(path, AUDIT_JSON_WRITER)


@dataclass
class Checked:
    """A release that passed the audit and the ledger's check: the publication schema as read, the audit's
    figures, the release's cells and loads for the ledger (release/ledger.py), the ledger as read (None without a
    publication schema that grant_published made: nothing to record) and the parameter changes accepted."""

    publication: Publication
    audit: dict
    cells: list
    loads: dict
    ledger: TargetLedger | None
    accepted: list
    publication_name: str = ""


def _checked_release(pg, manifest: dict, manifest_path: Path, marked: list[Marked], schema: str, marker: str,
                     shown: str, min_standard_error: float, accept_parameter_change: bool,
                     held: tuple[str | None, dict | None] = (None, None),
                     min_changed_records: int = MIN_CHANGED_RECORDS) -> Checked:
    """The release read into the replica, audited and checked against the ledger's last release (and the release
    ``held`` by the publication database, (name, its public audit), against the ledger); refused, the publication
    schema is withdrawn and the message says so."""
    ledger = None
    with private_workspace("publish") as (con, folder):
        try:
            translated: dict = {}
            publication, sketched_last = _read_release(pg, con, folder, manifest, marked, schema, marker, translated)
            if publication.marked:
                ledger = _read_ledger(pg)
                if ledger.last != sketched_last:  # the replica holds the columns of the snapshot's sketches only
                    raise _NotAudited(f"the ledger recorded release {ledger.last} while sdc read the release: run "
                                      "sdc publish --target again; nothing was changed")
            release = audit_replica(con, adapted_manifest(manifest, translated), marked, f"{shown} (PostgreSQL)",
                                    manifest_path, min_standard_error,
                                    lambda alias: _check_publication_copies(con, alias, marked, publication))
            accepted = check_against_ledger(ledger, held, release, accept_parameter_change, min_changed_records,
                                            lambda releases: read_cells(pg, ledger, releases))
            audit, cells, loads = release.audit, release.cells, release.loads
        except BaseException as exc:
            if ledger is not None:
                ledger.close()
            if isinstance(exc, SdcError) and not isinstance(exc, _NotAudited):  # refused: withdrawn
                _end(pg)
                builders = _withdraw_builders(pg, manifest)
                raise SdcError(f"{exc}; {_withdraw(pg, schema, marker)}" + (f"; {builders}" if builders else "")
                               ) from None
            raise
    return Checked(publication, audit, cells, loads, ledger, accepted)


def _read_ledger(pg) -> TargetLedger:
    """The ledger's last release; a ledger that cannot be read is no refusal of the release (nothing withdrawn)."""
    try:
        return read_ledger(pg, "last")
    except SdcError as exc:
        raise _NotAudited(str(exc)) from None


def publication_marker() -> str:
    """The comment grant_published puts on the publication schema it makes (its macro gate_publication_marker)."""
    from sdc.warehouse.macro_renderer import render_macro

    con = duckdb_connect()
    try:
        return str(render_macro(con, "gate_publication_marker")).strip()
    finally:
        con.close()


def _project_var(project_dir, name: str) -> str | None:
    """The var ``name`` of the dbt project (dbt_project.yml: vars, or vars of the package sdc), as
    grant_published reads sdc_publication_schema; None where it is not set."""
    folder = Path(project_dir) if project_dir is not None else (
        Path(os.environ["DBT_PROJECT_DIR"]) if os.environ.get("DBT_PROJECT_DIR") else
        next((f for f in [Path.cwd(), *Path.cwd().parents] if (f / "dbt_project.yml").is_file()), None))
    path = folder / "dbt_project.yml" if folder is not None else None
    if path is None or not path.is_file():
        return None
    variables = _read_yaml(path, path.read_text(encoding="utf-8")).get("vars")
    variables = variables if isinstance(variables, dict) else {}
    scoped = variables.get("sdc") if isinstance(variables.get("sdc"), dict) else {}
    value = variables.get(name, scoped.get(name))
    if value is None:
        return None
    value = _render_values(value, path, f"vars.{name}")
    if not isinstance(value, str) or not value.strip():
        raise SdcError(f"{path}: var {name} is {value!r}, no name")
    return value.strip()


def _check_names(manifest: dict, marked: list[Marked], schema: str) -> None:
    """The publication schema is no schema the project builds into or reads sources from, nor the raw schema
    (sdc never drops those), and no tagged relation takes the name of the audit's table there."""
    schemas = {RAW_SCHEMA} | {str(s.get("schema", "")).lower() for s in (manifest.get("sources") or {}).values()}
    schemas |= {str(n.get("schema", "")).lower() for n in (manifest.get("nodes") or {}).values()
                if n.get("resource_type") in ("model", "seed", "snapshot")}
    if schema.lower() == LEDGER_PG_SCHEMA or LEDGER_PG_SCHEMA in schemas:
        raise SdcError(f"{LEDGER_PG_SCHEMA} is the schema of sdc's ledger of releases (no reader role reads it): neither "
                       "the publication schema nor a schema of the dbt project may take its name")
    if schema.lower() in schemas:
        raise SdcError(f"the publication schema is {schema!r}, which holds raw data or relations dbt builds: "
                       "grant_published replaces its publication schema each time, and sdc publish --target never "
                       "writes or drops such a schema; set var sdc_publication_schema (or --publication-schema) to a "
                       "schema of sdc's own")
    for m in marked:
        if m.name.lower() == RELEASE_AUDIT_TABLE:
            raise SdcError(f"{m.relation} ({m.node_id}) is published as {schema}.{m.name}, the table the release "
                           "audit is written to: give it another dbt alias")


# ------------------------------------------------------------------------------------------ reading PostgreSQL
def _read_release(pg, con, folder: Path, manifest: dict, marked: list[Marked], schema: str, marker: str,
                  translated: dict) -> tuple[Publication, int | None]:
    """Everything the audit reads, copied in one read-only snapshot into the replica (attached to ``con`` under
    the database's name, read-only); returns the publication schema as that snapshot showed it and the last
    release of the ledger it showed (whose record sketches' columns the replica holds), and fills ``translated``
    (_translate)."""
    import psycopg2

    pg.set_session(isolation_level="REPEATABLE READ", readonly=True)
    try:
        cur = pg.cursor()
        try:
            # every name in the views' SQL qualified; numbers and times in the forms DuckDB reads back exactly
            cur.execute("set local search_path = pg_catalog; set local extra_float_digits = 1; "
                        f"set local datestyle = {quote_literal(DATESTYLE)}; set local timezone = 'UTC'; "
                        "set local intervalstyle = 'postgres'; set local bytea_output = 'hex'")
            cur.execute("select current_database()")
            (database,) = cur.fetchone()
            if database.lower() in RESERVED_CATALOGS:
                raise _NotAudited(f"sdc publish --target mirrors the database under its name, and {database!r} is "
                                  "a name DuckDB keeps for itself: the release cannot be audited; nothing was changed")
            _check_leftovers(cur, marked)
            publication = _publication(cur, schema, marker)
            relations = _closure(cur, manifest, marked, database, publication)
            names, last = _audited_names(cur, manifest, relations, marked)
            _build_replica(cur, con, folder, database, manifest, relations, translated, names)
        finally:
            cur.close()
    except psycopg2.Error as exc:
        _end(pg)
        raise _NotAudited(f"cannot read the release from the warehouse: {str(exc).strip().splitlines()[0]}; "
                         "nothing was changed") from None
    except duckdb.Error as exc:
        raise SdcError(f"cannot copy the release into sdc's replica of the warehouse: "
                       f"{str(exc).strip().splitlines()[0]}") from None
    _end(pg)
    return publication, last


class _NotAudited(SdcError):
    """The release could not be read (a connection lost, a right missing, a database name DuckDB keeps for
    itself): no refusal of the release, nothing is withdrawn."""


def _end(pg) -> None:
    """End the transaction and leave the connection for writing."""
    try:
        pg.rollback()
        pg.set_session(isolation_level="READ COMMITTED", readonly=False)
    except Exception:  # a lost connection: nothing to end
        pass


def _check_leftovers(cur, marked: list[Marked]) -> None:
    """dbt-postgres builds a model as <name>__dbt_tmp and keeps the old one as <name>__dbt_backup until the commit:
    one beside a tagged relation is a build that was killed half-way (publish.py _check_leftovers)."""
    schemas = sorted({m.schema for m in marked})
    cur.execute("select n.nspname || '.' || c.relname, c.relname from pg_catalog.pg_class as c join "
                "pg_catalog.pg_namespace as n on n.oid = c.relnamespace where n.nspname = any(%s) "
                "and c.relkind in ('r', 'p', 'v', 'm') order by 1", (schemas,))
    left = [relation for relation, name in cur.fetchall() if name.lower().endswith(DBT_LEFTOVER_SUFFIXES)]
    if left:
        raise SdcError(f"{', '.join(left)} lie beside the tagged relations: a dbt build was interrupted and the "
                       "warehouse may hold tables of two builds; run dbt build to the end before publishing")


def _publication(cur, schema: str, marker: str) -> Publication:
    cur.execute("select oid, coalesce(pg_catalog.obj_description(oid, 'pg_namespace'), '') from "
                "pg_catalog.pg_namespace where nspname = %s", (schema,))
    row = cur.fetchone()
    found = Publication(schema)
    if row is None:
        return found
    found.oid, found.marked = row[0], row[1] == marker
    if found.marked:
        cur.execute("select relname from pg_catalog.pg_class where relnamespace = %s and relkind in ('r', 'p', 'v', 'm') "
                    "and relname <> %s order by 1", (found.oid, RELEASE_AUDIT_TABLE))
        found.tables = [name for (name,) in cur.fetchall()]
        found.digests = _digests(cur, schema, found.tables)
    return found


def _digests(cur, schema: str, tables: list[str]) -> dict:
    """The md5 of each table's rows (as text, in order): whether it changed between two transactions."""
    found = {}
    for table in tables:
        cur.execute(f"select pg_catalog.md5(coalesce(pg_catalog.string_agg(t::text, E'\\n' order by t::text), '')) "
                    f"from {q(schema)}.{q(table)} as t")
        found[table] = cur.fetchone()[0]
    return found


def _relation(cur, schema: str, name: str) -> tuple | None:
    """(oid, schema, name, relkind, comment) of a relation, its names as PostgreSQL spells them (exactly, else in
    any letter case when only one matches)."""
    sql = ("select c.oid, n.nspname, c.relname, c.relkind, pg_catalog.obj_description(c.oid, 'pg_class') from "
           "pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on n.oid = c.relnamespace "
           "where c.relkind in ('r', 'p', 'v', 'm', 'f') and ")
    cur.execute(sql + "n.nspname = %s and c.relname = %s", (schema, name))
    rows = cur.fetchall()
    if not rows:
        cur.execute(sql + "lower(n.nspname) = lower(%s) and lower(c.relname) = lower(%s)", (schema, name))
        rows = cur.fetchall()
    return tuple(rows[0]) if len(rows) == 1 else None


def _closure(cur, manifest: dict, marked: list[Marked], database: str, publication: Publication) -> list[Mirrored]:
    """Every relation the tagged ones reach (the module's text), in the order found; the load log, and the
    tables of a publication schema that grant_published made."""
    parents = lineage_parents(manifest)

    # the tagged relations, the table builder's cubes (part of the release audit), the load log
    wanted = [(m.schema, m.name) for m in marked] + [(s, n) for _, s, n in builder_cubes(manifest)]
    wanted += [(RAW_SCHEMA, LOAD_LOG_TABLE)]
    wanted += [(publication.name, table) for table in publication.tables]
    found: dict[int, Mirrored] = {}
    while wanted:
        schema, name = wanted.pop(0)
        row = _relation(cur, schema, name)
        if row is None or row[0] in found:
            continue
        oid, schema, name, relkind, comment = row
        record = build_record_of_comment(comment) or {}
        published = schema == publication.name and publication.marked
        # a view with a step (a protection step built as a view): its rows, compared with the recomputation
        kind = "view" if relkind == "v" and not record.get("step") and not published else "table"
        item = Mirrored(oid, schema, name, relkind, comment, kind)
        found[oid] = item
        if published:
            continue
        reads = parents(schema, name) + [(s or schema, n) for s, n in record_names(record, database)]
        if relkind == "v":
            live = _view_reads(cur, oid)
            if kind == "table":
                _check_step_view(cur, item, record, live, database)
            reads += live
        item.reads = reads
        wanted += reads
    return list(found.values())


def _view_reads(cur, oid: int) -> list[tuple[str, str]]:
    """The relations a view reads, from PostgreSQL's dependencies of its rewrite rule."""
    cur.execute("select distinct n.nspname, c.relname from pg_catalog.pg_rewrite as r join pg_catalog.pg_depend as d "
                "on d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass and d.objid = r.oid "
                "and d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass join pg_catalog.pg_class as c "
                "on c.oid = d.refobjid join pg_catalog.pg_namespace as n on n.oid = c.relnamespace "
                "where r.ev_class = %s and c.oid <> r.ev_class order by 1, 2", (oid,))
    return [tuple(row) for row in cur.fetchall()]


def _view_functions(cur, oid: int) -> list[str]:
    """The functions of the database's own (outside pg_catalog) a view calls."""
    cur.execute("select distinct n.nspname || '.' || p.proname from pg_catalog.pg_rewrite as r join pg_catalog.pg_depend "
                "as d on d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass and d.objid = r.oid "
                "and d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass join pg_catalog.pg_proc as p "
                "on p.oid = d.refobjid join pg_catalog.pg_namespace as n on n.oid = p.pronamespace "
                "where r.ev_class = %s and n.nspname not in ('pg_catalog', 'information_schema') order by 1", (oid,))
    return [name for (name,) in cur.fetchall()]


def _check_step_view(cur, view: Mirrored, record: dict, live: list, database: str) -> None:
    """A protection step's view whose SQL in the warehouse reads more than its step read was replaced after the
    build (release_gate.py checks the same on DuckDB's SQL of the view)."""
    declared = set()
    # beside its input a publishing step reads the hierarchy of its dimension columns (d__level, ...)
    for schema, name in record_names({"reads": record.get("reads") or [], "hierarchy": record.get("hierarchy")},
                                      database):
        row = _relation(cur, schema or view.schema, name)
        if row is not None:
            declared.add(row[0])
    extra = []
    for schema, name in live:
        row = _relation(cur, schema, name)
        if row is not None and row[0] not in declared:
            extra.append(f"{schema}.{name}")
    if record.get("step") in PROTECTION_STEPS and extra:
        raise SdcError(f"{view.schema}.{view.name} is a view whose SQL in the warehouse reads {', '.join(extra)} "
                       f"beside what its step {record['step']} read: the view was replaced after dbt built it")


# ------------------------------------------------------------------------------------------ the replica
def _audited_names(cur, manifest: dict, relations: list[Mirrored], marked: list[Marked]
                   ) -> tuple[set[str] | None, int | None]:
    """(replica.audited_names of the release: the build records, the SQL of the views and of the tables of one's
    own that run on the replica, the load log and the columns of the ledger's record sketches; the ledger's last
    release)."""
    texts, queries = record_texts([item.comment for item in relations]), []
    whole = passed_on_whole([item.comment for item in relations], [(m.schema, m.name) for m in marked])
    for item in relations:
        sql = None
        if item.relkind == "v":
            cur.execute("select pg_catalog.pg_get_viewdef(%s, true)", (item.oid,))
            (sql,) = cur.fetchone()
        elif not (build_record_of_comment(item.comment) or {}).get("step"):  # a table of one's own: its SQL again
            sql = (node_of(manifest, item.schema, item.name) or {}).get("compiled_code")
        runs = item.kind == "view" or item.relkind != "v"  # a step's view is copied as its rows
        if isinstance(sql, str) and runs and item.name.lower() not in whole:
            queries.append((sql, "postgres"))
        elif isinstance(sql, str):  # every name of a published relation's SQL counts
            texts.append(sql)
        if item.schema.lower() == RAW_SCHEMA and item.name.lower() == LOAD_LOG_TABLE:
            cur.execute(f"select pg_catalog.row_to_json(t)::text from {q(item.schema)}.{q(item.name)} as t")
            texts += [row for (row,) in cur.fetchall()]
    last = None
    if _relation(cur, LEDGER_PG_SCHEMA, "releases") is not None:
        cur.execute(f"select audit::text, release_id from {q(LEDGER_PG_SCHEMA)}.releases order by release_id")
        held = cur.fetchall()
        last = held[-1][1] if held else None
        sketched = sketched_columns([audit for audit, _ in held])
        if sketched is None:
            return None, last
        return audited_names(texts, queries, sketched), last
    return audited_names(texts, queries), last


def _build_replica(cur, con, folder: Path, database: str, manifest: dict, relations: list[Mirrored],
                   translated: dict, names: set[str] | None = None) -> None:
    """The relations in a DuckDB file attached as ``database`` (then read-only), with their comments (build
    records), of loaded microdata the columns replica.copied_columns keeps of ``names``; fills ``translated``
    with the SQL of the tables of one's own (_translate)."""
    path = folder / "replica.duckdb"
    catalog = q(database)
    con.execute(f"attach {quote_literal(str(path))} as {catalog}")
    con.execute(f"use {catalog}")
    for schema in sorted({r.schema for r in relations}):
        con.execute(f"create schema if not exists {catalog}.{q(schema)}")
    views = []
    for item in relations:
        if item.kind == "view":
            views.append(item)
            continue
        _copy_table(cur, con, folder, catalog, item, names if is_loaded_microdata(item.schema, item.name) else None)
    _create_views(cur, con, catalog, views)
    for item in relations:
        found = _translate(manifest, item)
        if found is not None:
            translated[(item.schema.lower(), item.name.lower())] = found
        if item.comment is not None:
            what = "view" if item.kind == "view" else "table"
            con.execute(f"comment on {what} {catalog}.{q(item.schema)}.{q(item.name)} is {quote_literal(item.comment)}")
    con.execute("use memory")
    con.execute(f"detach {catalog}")
    con.execute(f"attach {quote_literal(str(path))} as {catalog} (read_only)")
    con.execute(f"use {catalog}")


def _copy_table(cur, con, folder: Path, catalog: str, item: Mirrored, names: set[str] | None = None) -> None:
    """The rows of a relation through a CSV file (PostgreSQL's COPY, DuckDB's read_csv), its columns' types
    mapped (the load log's loaded_at as PostgreSQL's text, as build_record compares it); of its columns those
    replica.copied_columns keeps of ``names`` (None: every one)."""
    cur.execute("select a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) from pg_catalog.pg_attribute as a "
                "where a.attrelid = %s and a.attnum > 0 and not a.attisdropped order by a.attnum", (item.oid,))
    columns = cur.fetchall()
    kept = set(copied_columns([name for name, _ in columns], names))
    load_log = item.schema.lower() == RAW_SCHEMA and item.name.lower() == LOAD_LOG_TABLE
    types = {name: ("VARCHAR" if load_log and pg_type.startswith("timestamp") else duckdb_type(pg_type))
             for name, pg_type in columns}
    selected = ", ".join(f"{q(name)}::text" if types[name] == "VARCHAR" and load_log else
                         q(name) if name in kept else f"null as {q(name)}" for name, _ in columns)
    csv = folder / f"copy_{uuid.uuid4().hex}.csv"
    try:
        if load_log:  # loaded_at as the dbt session wrote it into the build records: in the server's own DateStyle
            cur.execute("set local datestyle to default")
        with csv.open("w", encoding="utf-8") as handle:
            cur.copy_expert(f"copy (select {selected} from {q(item.schema)}.{q(item.name)}) to stdout "
                            "with (format csv, header true)", handle)
        if load_log:
            cur.execute(f"set local datestyle = {quote_literal(DATESTYLE)}")
        spec = "{" + ", ".join(f"{quote_literal(c)}: {quote_literal(t)}" for c, t in types.items()) + "}"
        try:
            table = f"{catalog}.{q(item.schema)}.{q(item.name)}"
            con.execute(f"create table {table} as select * from "
                        f"read_csv({quote_literal(str(csv))}, header = true, auto_detect = false, columns = {spec}, "
                        "delim = ',', quote = '\"', escape = '\"', nullstr = '', allow_quoted_nulls = false)")
            mark_not_copied(con, table, [name for name, _ in columns], kept)
        except duckdb.Error as exc:
            raise SdcError(f"cannot copy {item.schema}.{item.name} into sdc's replica of the warehouse: "
                           f"{str(exc).strip().splitlines()[0]}") from None
    finally:
        csv.unlink(missing_ok=True)


def duckdb_type(pg_type: str) -> str:
    """DuckDB's type for PostgreSQL's (format_type's spelling); text for what has no counterpart."""
    import re

    kind = pg_type.lower()
    simple = {"bigint": "BIGINT", "integer": "INTEGER", "smallint": "SMALLINT", "double precision": "DOUBLE",
              "real": "FLOAT", "boolean": "BOOLEAN", "date": "DATE", "numeric": "DOUBLE", "uuid": "UUID"}
    if kind in simple:
        return simple[kind]
    decimal = re.fullmatch(r"numeric\((\d+),\s*(\d+)\)", kind)
    if decimal:
        precision, scale = int(decimal.group(1)), int(decimal.group(2))
        return f"DECIMAL({precision}, {scale})" if precision <= 38 else "DOUBLE"
    if re.fullmatch(r"timestamp(\(\d\))? without time zone", kind):
        return "TIMESTAMP"
    if re.fullmatch(r"timestamp(\(\d\))? with time zone", kind):
        return "TIMESTAMP WITH TIME ZONE"
    return "VARCHAR"


def _create_views(cur, con, catalog: str, views: list[Mirrored]) -> None:
    """The views of one's own, their SQL translated from PostgreSQL's to DuckDB's; a view over another view after
    it. A view that calls a function of the database's own is refused: what it reads cannot be told."""
    pending = []
    for view in views:
        functions = _view_functions(cur, view.oid)
        if functions:
            raise SdcError(f"{view.schema}.{view.name} is a view that calls {functions[0]}, a function of the "
                           "database's own: what it reads cannot be told; use PostgreSQL's built-in functions only")
        cur.execute("select pg_catalog.pg_get_viewdef(%s, true)", (view.oid,))
        label = f"{view.schema}.{view.name}"
        pending.append((label, f"{catalog}.{q(view.schema)}.{q(view.name)}",
                        view_sql(label, cur.fetchone()[0], "postgres")))
    create_views(con, pending, "publish views over protected relations in SQL that DuckDB reads too")


def _translate(manifest: dict, item: Mirrored) -> tuple[str, str] | None:
    """replica.translated_sql for a table (PostgreSQL's SQL)."""
    return translated_sql(manifest, item.schema, item.name, item.comment, "postgres") if item.kind == "table" else None


# ------------------------------------------------------------------------------------------ the audit
def _check_publication_copies(con, alias: str, marked: list[Marked], publication: Publication) -> None:
    """The publication schema (one that grant_published made) holds exactly the copies sdc audits."""
    if not publication.marked:
        return
    try:
        _check_publication(con, alias, marked, publication)
    except duckdb.Error as exc:
        raise SdcError(f"cannot compare the publication schema {publication.name} with the release sdc audited: "
                       f"{str(exc).strip().splitlines()[0]}") from None


def _check_publication(con, alias: str, marked: list[Marked], publication: Publication) -> None:
    """Every table of the publication is a tagged relation's copy, with the rows sdc checked (copy_release)."""
    schema = publication.name
    names = {m.name.lower(): m for m in marked}
    extra = sorted(t for t in publication.tables if t.lower() not in names)
    missing = sorted(m.name for m in marked if m.name.lower() not in {t.lower() for t in publication.tables})
    why = None
    if extra or missing:
        why = "; ".join(part for part in (f"it holds {', '.join(extra)}, which the manifest does not tag" if extra else "",
                                          f"it lacks {', '.join(missing)}" if missing else "") if part)
    else:
        for table in publication.tables:
            m = names[table.lower()]
            mine = f"{q(alias)}.main.{q(m.name)}"
            theirs = f"{q(publication.name)}.{q(table)}"
            have = [c for (c,) in con.execute(f"select column_name from (describe select * from {theirs})").fetchall()]
            want = [c for (c,) in con.execute(f"select column_name from (describe select * from {mine})").fetchall()]
            if [c.lower() for c in have] != [c.lower() for c in want]:
                why = f"{schema}.{table} has the columns {', '.join(have)}, the release {', '.join(want)}"
                break
            differs = con.execute(f"select (select count(*) from (select * from {theirs} except all select * from {mine})) "
                                  f"+ (select count(*) from (select * from {mine} except all select * from {theirs}))"
                                  ).fetchone()[0]
            if differs:
                why = f"{schema}.{table} differs from {m.relation} in {differs} row(s)"
                break
    if why:
        raise SdcError(f"the publication schema {schema} does not hold the release sdc audited: {why} (grant_published "
                       "copied another build, or its tables were changed since); run dbt build, which publishes the "
                       "release again, then sdc publish --target")


# ------------------------------------------------------------------------------------------ writing PostgreSQL
def _write_release(pg, checked: Checked, marker: str, connect_publication) -> tuple[list[str], list[str]]:
    """In one transaction of the build database, only if the publication schema is still the one audited (not
    replaced, its tables unchanged, locked until the commit): the audit as table release_audit of that schema,
    granted to the roles that read it, and the release in the ledger. With ``connect_publication`` (a connection
    to the publication database), that database's publication replaced by the locked tables and the audit, in its
    own transaction, committed after the build database's. Returns the reader roles, and the tables the
    publication database no longer holds."""
    import psycopg2

    publication, audit = checked.publication, checked.audit
    pub, withdrawn = None, []
    try:
        with pg.cursor() as cur:
            readers = _lock_publication(cur, publication, marker)
            _write_audit(cur, publication.name, readers, public_release_audit(audit))
            write_release(cur, checked.ledger, checked.cells, checked.loads, audit, checked.publication_name,
                          checked.accepted)
            if connect_publication is not None:
                pub = connect_publication()
                withdrawn = stage_publication(cur, pub, publication.name, publication.tables, readers,
                                              public_release_audit(audit), marker)
        pg.commit()
        if pub is not None:
            _commit_publication(pub, checked)
    except psycopg2.Error as exc:
        _rollback(pg, pub)
        where = f"{publication.name}.{RELEASE_AUDIT_TABLE}, the ledger" + (" and the publication database"
                                                                          if connect_publication else "")
        raise SdcError(f"the release audit passed but cannot be written to {where}: "
                       f"{str(exc).strip().splitlines()[0]}; nothing was written") from None
    except BaseException:
        _rollback(pg, pub)
        raise
    finally:
        if pub is not None:
            pub.close()
    return readers, withdrawn


def _lock_publication(cur, publication: Publication, marker: str) -> list[str]:
    """The publication schema's tables locked (grant_published cannot replace them until the commit) and found as
    audited; returns the roles that read the schema."""
    schema = q(publication.name)
    if publication.tables:
        cur.execute("lock table " + ", ".join(f"{schema}.{q(t)}" for t in publication.tables) + " in share mode")
    cur.execute("select oid, coalesce(pg_catalog.obj_description(oid, 'pg_namespace'), '') from "
                "pg_catalog.pg_namespace where nspname = %s", (publication.name,))
    row = cur.fetchone()
    if row is None or row[0] != publication.oid or row[1] != marker or \
            _digests(cur, publication.name, publication.tables) != publication.digests:
        raise SdcError(f"the publication schema {publication.name} was replaced or changed while sdc audited "
                       "it (a dbt build ran meanwhile); the audit is not written: run sdc publish --target again")
    cur.execute("select r.rolname from pg_catalog.pg_namespace as n cross join "
                "pg_catalog.aclexplode(n.nspacl) as a left join pg_catalog.pg_roles as r on r.oid = a.grantee "
                "where n.oid = %s and a.privilege_type = 'USAGE' and a.grantee <> n.nspowner order by 1",
                (publication.oid,))
    return sorted({name or "public" for (name,) in cur.fetchall()})


def _write_audit(cur, schema: str, readers: list[str], audit: dict) -> None:
    table = f"{q(schema)}.{q(RELEASE_AUDIT_TABLE)}"
    cur.execute(f"drop table if exists {table}")
    cur.execute(f"create table {table} (report json)")
    cur.execute(f"insert into {table} values (%s)", (json.dumps(audit, sort_keys=True),))
    cur.execute(f"comment on table {table} is %s", ("sdc publish --target: the release audit of this "
                                                     "publication (python/sdc/release/audit.py)",))
    if readers:
        cur.execute(f"grant select on {table} to " + ", ".join(r if r == "public" else q(r) for r in readers))


def _commit_publication(pub, checked: Checked) -> None:
    """The publication database's transaction, after the build database's: a failure here leaves its readers the
    last release, and the ledger holds this one too."""
    import psycopg2

    try:
        pub.commit()
    except psycopg2.Error as exc:
        raise SdcError(f"release {checked.audit['release']} is recorded in {checked.ledger.where} with its audit, but "
                       f"the publication database could not be replaced ({str(exc).strip().splitlines()[0]}): its "
                       "readers still read the last release; run sdc publish --target again") from None


def _rollback(*connections) -> None:
    for connection in connections:
        if connection is not None:
            try:
                connection.rollback()
            except Exception:  # a lost connection: nothing to roll back
                pass


def _withdraw(pg, schema: str, marker: str) -> str:
    """Drop the publication schema that grant_published made (its marker; nothing else), in one transaction;
    returns what was done, for the message."""
    import psycopg2

    try:
        with pg.cursor() as cur:
            cur.execute("select coalesce(pg_catalog.obj_description(oid, 'pg_namespace'), '') from "
                        "pg_catalog.pg_namespace where nspname = %s", (schema,))
            row = cur.fetchone()
            if row is None:
                pg.rollback()
                return f"there is no publication schema {schema}: nothing was published to withdraw"
            if row[0] != marker:
                pg.rollback()
                return f"the schema {schema} {NOT_MARKED}: it is left as it is"
            # grant_published makes tables only: anything else there is someone's own, which a cascade would take
            cur.execute("select c.relname from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on "
                        "n.oid = c.relnamespace where n.nspname = %s and c.relkind not in ('r', 'p') order by 1",
                        (schema,))
            others = [name for (name,) in cur.fetchall()]
            if others:  # the audit of an earlier run, if any, does not stay beside a refused release
                cur.execute(f"drop table if exists {q(schema)}.{q(RELEASE_AUDIT_TABLE)}")
                pg.commit()
                return (f"the schema {schema} holds {', '.join(others)}, which grant_published does not make: it is "
                        "left as it is (without a release_audit table); drop it to withdraw the refused release")
            cur.execute(f"drop schema {q(schema)} cascade")
        pg.commit()
    except psycopg2.Error as exc:
        pg.rollback()
        return (f"the publication schema {schema} could not be dropped ({str(exc).strip().splitlines()[0]}): its "
                "readers still read the refused release; drop it")
    return (f"the publication schema {schema} that grant_published made is dropped: the release is withdrawn (fix "
            "it; the next dbt build publishes it again, then run sdc publish --target)")


def _withdraw_builders(pg, manifest: dict) -> str:
    """A refused release withdraws the table builder too (red team R4-12): its analysts read every cell of the
    cube, which the release audit judges with the tagged tables. EXECUTE on every builder function over a cube of
    the release (ckm_table_builder's security-definer function, whose body names the cube) is revoked from every
    role but its owner; the next dbt build grants it again. Returns what was done, for the message."""
    import psycopg2

    withdrawn = []
    try:
        with pg.cursor() as cur:
            for _, schema, name in builder_cubes(manifest):
                # the cube as the builder's body names it (sql_identifier quotes every part)
                cells = f"{q(schema)}.{q(name)}"
                cur.execute(
                    "select p.oid::regprocedure::text, r.rolname from pg_catalog.pg_proc as p "
                    "join pg_catalog.pg_namespace as n on n.oid = p.pronamespace "
                    "cross join lateral pg_catalog.aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) as a "
                    "left join pg_catalog.pg_roles as r on r.oid = a.grantee "
                    "where p.prosecdef and a.privilege_type = 'EXECUTE' and a.grantee <> p.proowner "
                    "and pg_catalog.pg_get_function_identity_arguments(p.oid) = 'dims text[], filters jsonb' "
                    "and position(%s in p.prosrc) > 0 order by 1, 2", (f"cells text := {quote_literal(cells)};",))
                for function, role in cur.fetchall():
                    cur.execute(f"revoke execute on function {function} from {q(role) if role else 'public'}")
                    withdrawn.append(f"{function} from {role or 'public'}")
        pg.commit()
    except psycopg2.Error as exc:
        pg.rollback()
        return (f"the table builder's function could not be withdrawn ({str(exc).strip().splitlines()[0]}): its "
                "analysts still read the refused cube; revoke EXECUTE on it")
    return f"the table builder is withdrawn (EXECUTE revoked: {', '.join(withdrawn)})" if withdrawn else ""


def publication_schema_of(given: str | None, project_dir) -> str:
    """The publication schema: as given, else var sdc_publication_schema of the project, else sdc's default."""
    return given or _project_var(project_dir, "sdc_publication_schema") or PUBLICATION_SCHEMA
