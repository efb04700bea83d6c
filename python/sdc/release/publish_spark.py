"""`sdc publish --target` on Spark: the release audit, the ledger of releases and the publication of a Spark
warehouse (dbt-spark, method session; red team R4-6).

Spark has neither GRANT nor transactions, and no dbt hook audits a release there, so on Spark `sdc publish
--target` is the release itself, by the same code as on DuckDB and PostgreSQL:

* every relation the tagged relations reach (dbt's lineage, the build records: what each step read, the ptables
  and hierarchies of its call; for a view, the relations its SQL names), the raw tables among them and the load
  log are read through the session into a private DuckDB replica under the names of the manifest: a table's rows
  (a protection step built as a view too: its rows are compared with sdc's recomputation anyway), a view of one's
  own as its SQL translated from Spark's to DuckDB's by sqlglot, and so is the SQL of a table of one's own that a
  step reads as microdata (the manifest's, which sdc runs again). Only what the replica needs leaves Spark for
  the machine sdc runs on, into a scratch folder of mode 0700 that is removed at the end;
* sdc publish's checks, verification and release audit run on the replica (publish.check_release, copy_release,
  audit_checked_release), and the release is checked against the last one in the ledger of releases, the Spark
  database sdc_ledger (conventions.LEDGER_PG_SCHEMA; the tables of release/ledger.py, read into DuckDB and judged
  by ledger.py's rules);
* both passed, what sdc audited (the replica's copies of the tagged relations, not Spark's tables read again) is
  written to Spark: first into a staging database of sdc's own, then the release is recorded in the ledger, then
  the publication database (var sdc_publication_schema, default sdc_publication) is made anew from the staging
  copies with the audit's public part (public_audit.py) as table release_audit. Grant the catalog's readers that
  database only.

Refused, nothing is written, and a publication database that `dbt run-operation verify_published` made (its
marker, without a release_audit table: verified table by table, never audited as a release) is dropped, so that
its readers do not read a release the audit refused; one that an audited release made stays (the last release
that passed). A database of the publication's or the ledger's name that sdc did not make is never written.

Spark has no transactions: the ledger's last release is read again just before the release is recorded (another
run recorded meanwhile: nothing is recorded), and a failure while the publication database is replaced, after the
release was recorded, says so (run the command again: the cells are the recorded ones).
"""

from __future__ import annotations

import json
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from sdc.conventions import LEDGER_PG_SCHEMA, LOAD_LOG_TABLE, RAW_SCHEMA, RELEASE_AUDIT_TABLE
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q
from sdc.quoting import quote_spark_identifier as qs
from sdc.quoting import quote_literal, quote_spark_literal
from sdc.release.ledger import LEDGER_SCHEMA, create_ledger_tables, last_release, record_release
from sdc.release.ledger_postgres import CELL_COLUMNS, LEDGER_MARKER, RELEASE_COLUMNS
from sdc.release.public_audit import public_release_audit
from sdc.release.replica import (
    AuditedRelease,
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
from sdc.release.differencing import sketched_columns
from sdc.release.publish import Marked, builder_cubes
from sdc.warehouse.build_record import build_record_of_comment
from sdc.warehouse.macro_renderer import private_workspace

# the replica's catalog: Spark's own name of its session catalog (dbt-spark's nodes name no database)
CATALOG = "spark_catalog"
STAGING_SUFFIX = "__sdc_release"
# held while a run writes: a second run on the same publication stops instead of recording a release twice
LOCK_SUFFIX = "__sdc_lock"
LOCK_MARKER = "sdc publish --target is writing a release of this publication"
# the ledger's tables on Spark, in ledger.py's columns (JSON as text), each row with the run that wrote it: a
# release's cells are those of the run that recorded its row (cells a failed run left count for nothing)
LEDGER_DDL = {
    "releases": "release_id int, published_at string, publication string, loads string, audit string, accepted string, "
                "run string",
    "cells": "release_id int, relation string, cell string, published string, records string, parameters string, "
             "original double, run string",
}


@dataclass
class Found:
    """A relation of the Spark warehouse for the replica: ``kind`` table (its rows copied) or view (its SQL)."""

    schema: str
    name: str
    kind: str
    comment: str | None
    sql: str | None = None  # a view's SQL, as Spark keeps it
    reads: list = field(default_factory=list)


@dataclass
class SparkLedger:
    """The ledger database of Spark as read into DuckDB (``con``, the tables of ledger.py); ``last``: its last
    release then."""

    con: duckdb.DuckDBPyConnection
    exists: bool
    last: int | None
    target: str

    @property
    def where(self) -> str:
        return f"the ledger database {LEDGER_PG_SCHEMA} of {self.target}"

    def close(self) -> None:
        self.con.close()


def publish_spark(wh, shown: str, manifest: dict, manifest_path: Path, marked: list[Marked], schema: str,
                  marker: str, min_standard_error: float, accept_parameter_change: bool,
                  min_changed_records: int) -> dict:
    """The release of the Spark warehouse ``wh`` (sdc.warehouse.spark_target.SparkWarehouse) audited, checked
    against its ledger and published (the module's text); returns the audit."""
    _check_pyspark()
    with _lock(wh, schema, shown), private_workspace("publish") as (con, folder):
        ledger = None
        try:
            try:
                _check_databases(wh, schema, marker)
                # the ledger first: the replica holds the columns its record sketches are over
                ledger = _read_ledger(wh, shown, folder=folder)
                translated = _read_release(wh, con, folder, manifest, marked, ledger)
                release = audit_replica(con, adapted_manifest(manifest, translated), marked, f"{shown} (Spark)",
                                        manifest_path, min_standard_error)
                accepted = check_against_ledger(ledger, (schema, _held_release(wh, schema)), release,
                                                accept_parameter_change, min_changed_records, _fetch_cells(wh, ledger))
            except SdcError as exc:  # refused
                raise SdcError(f"{exc}; {_withdraw(wh, schema, marker)}") from None
            except Exception as exc:  # Spark's own errors (a lost server, a right missing)
                raise SdcError(f"cannot audit the release of {shown}: {_first_line(exc)}; nothing was "
                               "changed") from None
            _write(wh, con, release, marked, schema, marker, ledger, accepted)
        finally:
            if ledger is not None:
                ledger.close()
    return release.audit


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _check_pyspark() -> None:
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        raise SdcError(f"sdc publish --target on Spark hands tables over as Arrow, which needs PySpark 4 or later; "
                       f"this is PySpark {pyspark.__version__}: pip install 'pyspark>=4'")


@contextmanager
def _lock(wh, schema: str, shown: str):
    """A database of sdc's own held while the release is audited and written (the metastore makes a database once:
    a second run on the same publication stops here), dropped at the end."""
    lock = schema + LOCK_SUFFIX
    since = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        wh.session.sql(f"create database {qs(lock)} comment {quote_spark_literal(f'{LOCK_MARKER} (since {since})')}")
    except Exception as exc:
        try:
            held, comment = _database_comment(wh, lock)
        except Exception:  # the name itself is what Spark refused
            held, comment = False, None
        if held:
            raise SdcError(f"the database {lock} exists ({comment or 'not made by sdc'}): another sdc publish "
                           f"--target is writing a release of {schema}, or one was killed; when none runs, drop "
                           "it and run again; nothing was written") from None
        raise SdcError(f"cannot publish a release of {shown}: {_first_line(exc)}; nothing was written") from None
    try:
        yield
    finally:
        try:
            wh.session.sql(f"drop database if exists {qs(lock)} cascade")
        except Exception:  # the session is gone: the message says what happened; the lock says so to the next run
            pass


# ------------------------------------------------------------------------------------------ the databases
def _database_comment(wh, database: str) -> tuple[bool, str | None]:
    """(whether the database exists, its comment)."""
    if not wh.session.catalog.databaseExists(qs(database)):
        return False, None
    rows = {row[0]: row[1] for row in wh.session.sql(f"describe database extended {qs(database)}").collect()}
    return True, rows.get("Comment") or rows.get("comment")


def _check_databases(wh, schema: str, marker: str) -> None:
    """The publication, its staging and the ledger database are sdc's own or missing: none that sdc did not make
    is written or dropped."""
    rename = "drop it, or set var sdc_publication_schema (or --publication-schema) to a name of sdc's own"
    for database, mark, what, fix in (
            (schema, marker, "the publication database", rename),
            (schema + STAGING_SUFFIX, marker, "the staging database of the publication", rename),
            (LEDGER_PG_SCHEMA, LEDGER_MARKER, "the ledger of releases", "rename it: sdc keeps its ledger there")):
        exists, comment = _database_comment(wh, database)
        if exists and comment != mark:
            raise SdcError(f"the database {database} exists and was not made by sdc ({what} takes its name; its "
                           f"comment is not sdc's marker): {fix}")


# ------------------------------------------------------------------------------------------ the replica
def _relation(wh, schema: str, name: str) -> Found | None:
    rows = wh.described(schema, name)
    if rows is None:
        return None
    kind = "view" if rows.get("Type") == "VIEW" else "table"
    return Found(schema, name, kind, rows.get("Comment"), rows.get("View Text") if kind == "view" else None)


def _view_reads(view: Found) -> list[tuple[str, str]]:
    """The relations a view's SQL names (sqlglot, Spark's dialect); CTE names are not relations."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(view.sql or "", read="spark")
    except (sqlglot.errors.SqlglotError, ValueError) as exc:
        raise SdcError(f"{view.schema}.{view.name} is a view whose SQL sdc cannot read ({str(exc).splitlines()[0]})"
                       ) from None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return [(table.db or view.schema, table.name) for table in tree.find_all(exp.Table)
            if table.name and not (not table.db and table.name.lower() in ctes)]


def _closure(wh, manifest: dict, marked: list[Marked]) -> list[Found]:
    """Every relation the tagged ones reach, in the order found, and the load log."""
    parents = lineage_parents(manifest)
    wanted = [(m.schema, m.name) for m in marked] + [(s, n) for _, s, n in builder_cubes(manifest)]
    wanted.append((RAW_SCHEMA, LOAD_LOG_TABLE))
    found: dict[tuple[str, str], Found] = {}
    while wanted:
        schema, name = wanted.pop(0)
        if (schema.lower(), name.lower()) in found:
            continue
        item = _relation(wh, schema, name)
        if item is None:
            continue
        found[(schema.lower(), name.lower())] = item
        record = build_record_of_comment(item.comment) or {}
        if item.kind == "view" and record.get("step"):
            item.kind = "table"  # a protection step built as a view: its rows, compared with the recomputation
        item.reads = parents(schema, name) + [(s or schema, n) for s, n in record_names(record, CATALOG)]
        if item.kind == "view":
            item.reads += _view_reads(item)
        wanted += item.reads
    return list(found.values())


def _read_release(wh, con, folder: Path, manifest: dict, marked: list[Marked], ledger: SparkLedger) -> dict:
    """Everything the audit reads, copied into the replica (attached to ``con`` as CATALOG, then read-only), of
    loaded microdata the columns the audit may read (_audited_names); returns the translated SQL of the tables of
    one's own (replica.translated_sql)."""
    relations = _closure(wh, manifest, marked)
    names = _audited_names(wh, manifest, relations, marked, ledger)
    path = folder / "replica.duckdb"
    con.execute(f"attach {quote_literal(str(path))} as {q(CATALOG)}")
    con.execute(f"use {q(CATALOG)}")
    for schema in sorted({r.schema for r in relations}):
        con.execute(f"create schema if not exists {q(schema)}")
    try:
        for item in relations:
            if item.kind == "table":
                _copy_table(wh, con, item, names if is_loaded_microdata(item.schema, item.name) else None)
        _create_views(con, [item for item in relations if item.kind == "view"])
    except duckdb.Error as exc:
        raise SdcError(f"cannot copy the release into sdc's replica of the warehouse: "
                       f"{str(exc).strip().splitlines()[0]}; nothing was changed") from None
    translated = {}
    for item in relations:
        found = translated_sql(manifest, item.schema, item.name, item.comment, "spark") \
            if item.kind == "table" else None
        if found is not None:
            translated[(item.schema.lower(), item.name.lower())] = found
        if item.comment is not None:
            con.execute(f"comment on {'view' if item.kind == 'view' else 'table'} {q(item.schema)}.{q(item.name)} "
                        f"is {quote_literal(item.comment)}")
    con.execute("use memory")
    con.execute(f"detach {q(CATALOG)}")
    con.execute(f"attach {quote_literal(str(path))} as {q(CATALOG)} (read_only)")
    con.execute(f"use {q(CATALOG)}")
    return translated


def _audited_names(wh, manifest: dict, relations: list[Found], marked: list[Marked],
                   ledger: SparkLedger) -> set[str] | None:
    """replica.audited_names of the release: the build records, the SQL of the views and of the tables of one's own
    that run on the replica, the load log and the columns of the ledger's record sketches."""
    texts, queries = record_texts([item.comment for item in relations]), []
    whole = passed_on_whole([item.comment for item in relations], [(m.schema, m.name) for m in marked])
    for item in relations:
        sql = item.sql
        if sql is None and not (build_record_of_comment(item.comment) or {}).get("step"):  # a table of one's own
            sql = (node_of(manifest, item.schema, item.name) or {}).get("compiled_code")
        runs = item.kind == "view" or item.sql is None  # a step's view is copied as its rows
        if isinstance(sql, str) and runs and item.name.lower() not in whole:
            queries.append((sql, "spark"))
        elif isinstance(sql, str):  # every name of a published relation's SQL counts
            texts.append(sql)
        if item.schema.lower() == RAW_SCHEMA and item.name.lower() == LOAD_LOG_TABLE:
            texts += [json.dumps(row.asDict(), default=str, ensure_ascii=False)
                      for row in wh.session.table(f"{qs(item.schema)}.{qs(item.name)}").collect()]
    sketched = sketched_columns([audit for (audit,) in ledger.con.execute(
        f"select audit from {LEDGER_SCHEMA}.releases").fetchall()])
    return None if sketched is None else audited_names(texts, queries, sketched)


def _copy_table(wh, con, item: Found, names: set[str] | None = None) -> None:
    """The rows of a Spark table through Arrow; the load log's times as Spark's text of them (as build_record
    wrote them into the build records); of its columns those replica.copied_columns keeps of ``names`` (None:
    every one)."""
    frame = wh.session.table(f"{qs(item.schema)}.{qs(item.name)}")
    kept = copied_columns(frame.columns, names)
    if len(kept) < len(frame.columns):  # the others as NULL of their type
        from pyspark.sql.functions import col, lit

        frame = frame.select(*[col(qs(c)) if c in kept else lit(None).cast(t).alias(c) for c, t in frame.dtypes])
    if item.schema.lower() == RAW_SCHEMA and item.name.lower() == LOAD_LOG_TABLE:
        from pyspark.sql.functions import col

        frame = frame.select(*[col(qs(c)).cast("string").alias(c) if t.startswith("timestamp") else col(qs(c))
                               for c, t in frame.dtypes])
    table = frame.toArrow()
    con.register("sdc_spark_copy", table)
    try:
        con.execute(f"create table {q(item.schema)}.{q(item.name)} as select * from sdc_spark_copy")
        mark_not_copied(con, f"{q(item.schema)}.{q(item.name)}", list(frame.columns), kept)
    finally:
        con.unregister("sdc_spark_copy")


def _create_views(con, views: list[Found]) -> None:
    """The views of one's own, their SQL translated from Spark's to DuckDB's; a view over another after it."""
    pending = []
    for view in views:
        label = f"{view.schema}.{view.name}"
        pending.append((label, f"{q(view.schema)}.{q(view.name)}", view_sql(label, view.sql or "", "spark")))
    create_views(con, pending, "write views that the release reads in SQL that DuckDB reads too")


# ------------------------------------------------------------------------------------------ the ledger
def _read_ledger(wh, shown: str, cells: str | tuple[int, ...] = "last", folder: Path | None = None) -> SparkLedger:
    """The ledger database's releases and the cells of ``cells`` ("last", "all", or those releases), into an
    in-memory DuckDB ledger of ledger.py's tables (spilling, if at all, into ``folder``: it holds originals)."""
    from sdc.warehouse.database import duckdb_connect

    con = duckdb_connect()
    try:
        if folder is not None:
            con.execute(f"set temp_directory = {quote_literal(str(folder))}")
        create_ledger_tables(con)
        exists = wh.session.catalog.databaseExists(qs(LEDGER_PG_SCHEMA))
        if exists:
            _read_rows(wh, con, "releases", RELEASE_COLUMNS, None)
            last = last_release(con)
            wanted = ([last] if last is not None else []) if cells == "last" else None if cells == "all" else list(cells)
            if wanted is None or wanted:
                _read_rows(wh, con, "cells", CELL_COLUMNS, wanted)
    except BaseException:
        con.close()
        raise
    return SparkLedger(con, exists, last_release(con), shown)


def read_spark_ledger(wh, shown: str, cells: str | tuple[int, ...] = "all") -> SparkLedger:
    """The ledger of the Spark warehouse ``wh`` for sdc release --target and sdc report --target (as _read_ledger);
    an error where there is none."""
    try:
        ledger = _read_ledger(wh, shown, cells)
    except Exception as exc:
        if isinstance(exc, SdcError):
            raise
        raise SdcError(f"cannot read the ledger of releases of {shown} (database {LEDGER_PG_SCHEMA}): "
                       f"{_first_line(exc)}") from None
    if not ledger.exists:
        ledger.close()
        raise SdcError(f"no ledger of releases in {shown} (database {LEDGER_PG_SCHEMA}): sdc publish --target writes "
                       "it with the first release it records")
    return ledger


def _read_rows(wh, con, table: str, columns: tuple, releases: list[int] | None) -> None:
    """Rows of a ledger table into ``con``: the releases, or the cells of ``releases`` (None: all) that the run
    which recorded their release wrote."""
    ledger = qs(LEDGER_PG_SCHEMA)
    sql = f"select {', '.join('t.' + qs(c) for c in columns)} from {ledger}.{qs(table)} as t"
    if table == "cells":
        sql += f" left semi join {ledger}.releases as r on t.release_id = r.release_id and t.run = r.run"
    if releases is not None:
        sql += f" where t.release_id in ({', '.join(str(int(r)) for r in releases)})"
    rows = wh.session.sql(sql).toArrow()
    with con.cursor() as cur:  # a cursor of its own: ``con`` may hold an unfinished result of ledger.py's
        cur.register("sdc_ledger_rows", rows)
        cur.execute(f"insert into {LEDGER_SCHEMA}.{table} ({', '.join(columns)}) select {', '.join(columns)} "
                    "from sdc_ledger_rows")


def _fetch_cells(wh, ledger: SparkLedger):
    """ledger.py's fetch: the cells of earlier releases read when a check needs them."""
    def fetch(releases: list[int]) -> None:
        held = {r for (r,) in ledger.con.execute(f"select distinct release_id from {LEDGER_SCHEMA}.cells").fetchall()}
        wanted = sorted(set(releases) - held)
        if wanted and ledger.exists:
            _read_rows(wh, ledger.con, "cells", CELL_COLUMNS, wanted)
    return fetch


def _held_release(wh, schema: str) -> dict | None:
    """The public release audit that the publication database holds (None: none there)."""
    if not wh.session.catalog.databaseExists(qs(schema)) or \
            not wh.session.catalog.tableExists(f"{qs(schema)}.{qs(RELEASE_AUDIT_TABLE)}"):
        return None
    rows = wh.session.sql(f"select report from {qs(schema)}.{qs(RELEASE_AUDIT_TABLE)}").collect()
    try:
        found = json.loads(rows[0][0]) if rows and rows[0][0] else None
    except (TypeError, ValueError):
        found = None
    if not isinstance(found, dict):
        raise SdcError(f"the publication database {schema} holds a table {RELEASE_AUDIT_TABLE} that is no release "
                       "audit of sdc publish --target: it was changed by hand; drop the database and publish again")
    return found


# ------------------------------------------------------------------------------------------ writing Spark
def _write(wh, con, release: AuditedRelease, marked: list[Marked], schema: str, marker: str, ledger: SparkLedger,
           accepted: list) -> None:
    """The audited copies and the public audit into the staging database, the release into the ledger, then the
    publication database made anew from the staging copies."""
    audit, alias = release.audit, release.alias
    staging = schema + STAGING_SUFFIX
    names = [m.name for m in marked] + [RELEASE_AUDIT_TABLE]
    try:
        frames = {m.name: wh.session.createDataFrame(con.sql(f"select * from {q(alias)}.main.{q(m.name)}")
                                                     .to_arrow_table()) for m in marked}
        frames[RELEASE_AUDIT_TABLE] = wh.session.createDataFrame(
            [(json.dumps(public_release_audit(audit), sort_keys=True),)], schema="report string")
        wh.session.sql(f"drop database if exists {qs(staging)} cascade")
        wh.session.sql(f"create database {qs(staging)} comment {quote_spark_literal(marker)}")
        for name, frame in frames.items():
            frame.write.format("parquet").saveAsTable(f"{qs(staging)}.{qs(name)}")
        _check_replaceable(wh, schema, marker)
        _record(wh, ledger, release.cells, release.loads, audit, f"{schema} of {ledger.target}", accepted)
    except Exception as exc:
        if isinstance(exc, SdcError):
            raise SdcError(f"{exc}; the publication database and the ledger are as they were") from None
        raise SdcError(f"the release audit passed but the release cannot be written to Spark ({_first_line(exc)}); "
                       "the publication database and the ledger are as they were") from None
    try:
        wh.session.sql(f"drop database if exists {qs(schema)} cascade")
        wh.session.sql(f"create database {qs(schema)} comment {quote_spark_literal(marker)}")
        for name in names:
            wh.session.sql(f"create table {qs(schema)}.{qs(name)} using parquet as select * from "
                           f"{qs(staging)}.{qs(name)}")
        wh.session.sql(f"drop database {qs(staging)} cascade")
    except Exception as exc:
        raise SdcError(f"release {audit['release']} is recorded in {ledger.where} with its audit, but the "
                       f"publication database {schema} could not be replaced ({_first_line(exc)}): its readers do "
                       "not read it; run sdc publish --target again (it records the same cells as the next "
                       "release)") from None


def _check_replaceable(wh, schema: str, marker: str) -> None:
    """The publication database is sdc's (its marker, read again just before it is replaced) and holds tables
    only: a view or function in it is someone's own, which replacing the database would drop."""
    exists, comment = _database_comment(wh, schema)
    if not exists:
        return
    if comment != marker:
        raise SdcError(f"the database {schema} was made by someone else while sdc audited the release (its comment "
                       "is not sdc's marker): it is left as it is")
    # (a session's temporary views and functions are listed in every database: not its own)
    others = [r[1] for r in wh.session.sql(f"show views in {qs(schema)}").collect() if not r[2]]
    others += [r[0] for r in wh.session.sql(f"show user functions in {qs(schema)}").collect()
               if r[0].lower().split(".")[-2:-1] == [schema.lower()]]
    if others:
        raise SdcError(f"the publication database {schema} holds {', '.join(sorted(others))}, which sdc does not "
                       "make: replacing the database would drop it; move it elsewhere")


def _record(wh, ledger: SparkLedger, cells: list, loads: dict, audit: dict, publication: str,
            accepted: list) -> None:
    """The release appended to the ledger database (made where missing), if its last release is still the one
    the check read; its rows tagged with this run."""
    database = qs(LEDGER_PG_SCHEMA)
    wh.session.sql(f"create database if not exists {database} comment {quote_spark_literal(LEDGER_MARKER)}")
    for table, ddl in LEDGER_DDL.items():
        wh.session.sql(f"create table if not exists {database}.{qs(table)} ({ddl}) using parquet")
    now = wh.session.sql(f"select max(release_id) from {database}.releases").collect()[0][0]
    if now != ledger.last:
        raise SdcError(f"release {now} was recorded in {ledger.where} while this one was audited (another sdc "
                       "publish --target ran meanwhile)")
    release = record_release(ledger.con, cells, loads, audit, publication, accepted)
    run = uuid.uuid4().hex
    # cells first: the release's row, written last, is what makes them count
    for table, columns in (("cells", CELL_COLUMNS), ("releases", RELEASE_COLUMNS)):
        rows = ledger.con.sql(f"select {', '.join(columns)}, {quote_literal(run)} as run from {LEDGER_SCHEMA}.{table} "
                              f"where release_id = {int(release)}").to_arrow_table()
        frame = wh.session.createDataFrame(rows)
        types = dict(part.strip().split(" ", 1) for part in LEDGER_DDL[table].split(","))
        frame = frame.select(*[frame[c].cast(types[c]).alias(c) for c in (*columns, "run")])
        frame.write.insertInto(f"{database}.{qs(table)}")


def _withdraw(wh, schema: str, marker: str) -> str:
    """A publication database that verify_published made (its marker, no release audit) dropped: its tables were
    verified one by one and the release as a whole is refused. Returns what was done, for the message."""
    try:
        exists, comment = _database_comment(wh, schema)
        if not exists:
            return "nothing was written"
        if comment != marker:
            return f"nothing was written (the database {schema} is not sdc's and is left as it is)"
        if wh.session.catalog.tableExists(f"{qs(schema)}.{qs(RELEASE_AUDIT_TABLE)}"):
            return (f"nothing was written: the publication database {schema} keeps the last release that passed the "
                    "release audit")
        _check_replaceable(wh, schema, marker)
        wh.session.sql(f"drop database {qs(schema)} cascade")
    except Exception as exc:
        why = str(exc) if isinstance(exc, SdcError) else _first_line(exc)
        return (f"nothing was written, and the publication database {schema} that verify_published made could not be "
                f"withdrawn ({why}): its readers still read tables of a release the audit refuses; drop it")
    return (f"the publication database {schema} that verify_published made (tables verified one by one, never "
            "audited as a release) is dropped; nothing else was written")
