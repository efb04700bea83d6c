"""The ledger of releases on PostgreSQL: `sdc publish --target` records each release in the warehouse itself.

The ledger lies in a schema of sdc's own in the build database (conventions.LEDGER_PG_SCHEMA, sdc_ledger), with
the tables of the DuckDB ledger (release/ledger.py: releases, cells); no reader role gets any right on it. Its
logic is ledger.py's, not a second one: what a step needs is read from PostgreSQL into an in-memory DuckDB
ledger of the same tables, ledger.py's functions run on that copy (check_against_last, withdrawn_relations,
record_release, releases_in, diff_in), and the rows record_release adds there are written back to PostgreSQL in
the caller's transaction, the one that writes the release audit. Before writing, the ledger's tables are locked
and their last release must still be the one the check read: two runs of sdc publish --target never record two
releases checked against the same one. A refused release writes nothing.

A schema of that name that sdc did not make (its comment is not the ledger's marker), or that holds other
relations, is never written: the command stops naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from sdc.conventions import LEDGER_PG_SCHEMA
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q
from sdc.release.ledger import LEDGER_SCHEMA, create_ledger_tables, diff_in, last_release, record_release, releases_in
from sdc.warehouse.database import duckdb_connect

LEDGER_MARKER = "sdc ledger of releases: sdc publish --target records every release here; no reader role reads it"
LEDGER_TABLES = ("cells", "releases")
RELEASE_COLUMNS = ("release_id", "published_at", "publication", "loads", "audit", "accepted")
CELL_COLUMNS = ("release_id", "relation", "cell", "published", "records", "parameters", "original")
CREATE_TABLES = (
    "create table {schema}.releases (release_id integer primary key, published_at text, publication text, "
    "loads json, audit json, accepted json)",
    "create table {schema}.cells (release_id integer not null references {schema}.releases, relation text not null, "
    "cell text not null, published text, records text, parameters text, original double precision, "
    "primary key (release_id, relation, cell))",
)


@dataclass
class TargetLedger:
    """The ledger of a PostgreSQL database as read: ``con`` an in-memory DuckDB ledger holding its releases and
    the cells of the releases read; ``exists``: the schema is there; ``last``: its last release then."""

    con: duckdb.DuckDBPyConnection
    database: str
    exists: bool
    last: int | None

    @property
    def where(self) -> str:
        return f"the ledger {LEDGER_PG_SCHEMA} of database {self.database}"

    def close(self) -> None:
        self.con.close()


def read_ledger(pg, cells: str | tuple[int, ...] = "last") -> TargetLedger:
    """The ledger of the database ``pg`` (psycopg2) copied into DuckDB: every release, and the cells of ``cells``:
    "last" (what sdc publish --target checks against), "all", or those releases. Ends its read transaction."""
    import psycopg2

    con = duckdb_connect()
    try:
        create_ledger_tables(con)
        with pg.cursor() as cur:
            cur.execute("select current_database()")
            (database,) = cur.fetchone()
            exists = _check_schema(cur, database)
            if exists:
                cur.execute(f"select release_id, published_at, publication, loads::text, audit::text, accepted::text "
                            f"from {q(LEDGER_PG_SCHEMA)}.releases order by 1")
                _insert(con, "releases", RELEASE_COLUMNS, cur.fetchall())
                last = last_release(con)
                wanted = [last] if cells == "last" else None if cells == "all" else list(cells)
                _read_cells(cur, con, wanted)
        pg.rollback()
    except psycopg2.Error as exc:
        pg.rollback()
        con.close()
        raise SdcError(f"cannot read the ledger of releases (schema {LEDGER_PG_SCHEMA}): "
                       f"{str(exc).strip().splitlines()[0]}; nothing was changed") from None
    except BaseException:
        con.close()
        raise
    return TargetLedger(con, database, exists, last_release(con))


def _read_cells(cur, con, wanted: list[int] | None) -> None:
    """The cells of the releases ``wanted`` (None: all) of the ledger read through ``cur`` into the DuckDB copy
    ``con``; a ledger of an sdc before the averaging audit over releases has no originals."""
    cur.execute("select count(*) from information_schema.columns where table_schema = %s and table_name = 'cells' "
                "and column_name = 'original'", (LEDGER_PG_SCHEMA,))
    (has_original,) = cur.fetchone()
    columns = [c if c != "original" or has_original else "null" for c in CELL_COLUMNS]
    cur.execute(f"select {', '.join(columns)} from {q(LEDGER_PG_SCHEMA)}.cells"
                + (" where release_id = any(%s)" if wanted is not None else ""),
                (wanted,) if wanted is not None else None)
    _insert(con, "cells", CELL_COLUMNS, cur.fetchall())


def read_cells(pg, ledger: TargetLedger, releases: list[int]) -> None:
    """The cells of ``releases`` added to the ledger's DuckDB copy (those it holds already left out)."""
    held = {r for (r,) in ledger.con.execute(f"select distinct release_id from {LEDGER_SCHEMA}.cells").fetchall()}
    wanted = sorted(set(releases) - held)
    if not wanted:
        return
    with pg.cursor() as cur:
        _read_cells(cur, ledger.con, wanted)
    pg.rollback()


def write_release(cur, ledger: TargetLedger, cells: list, loads: dict, audit: dict, publication: str,
                  accepted: list[dict]) -> int:
    """Record the release in the PostgreSQL ledger on the cursor ``cur``, in its transaction (the caller commits
    it with the release audit): the schema and tables made where missing, no one's but their owner's, locked;
    the rows record_release adds to the copy inserted. Returns the release's number."""
    from psycopg2.extras import execute_values

    schema = q(LEDGER_PG_SCHEMA)
    if not _check_schema(cur, ledger.database):
        cur.execute(f"create schema {schema}")
        cur.execute(f"comment on schema {schema} is %s", (LEDGER_MARKER,))
        for statement in CREATE_TABLES:
            cur.execute(statement.format(schema=schema))
    _keep_private(cur)
    cur.execute(f"alter table {schema}.cells add column if not exists original double precision")
    cur.execute(f"lock table {schema}.releases, {schema}.cells in exclusive mode")
    cur.execute(f"select max(release_id) from {schema}.releases")
    (now,) = cur.fetchone()
    if now != ledger.last:
        raise SdcError(f"release {now} was recorded in {ledger.where} while this one was audited (another sdc "
                       "publish --target ran meanwhile); nothing was written: run sdc publish --target again")
    release = record_release(ledger.con, cells, loads, audit, publication, accepted)
    for table, columns in (("releases", RELEASE_COLUMNS), ("cells", CELL_COLUMNS)):
        rows = ledger.con.execute(f"select {', '.join(columns)} from {LEDGER_SCHEMA}.{table} where release_id = ?",
                                  [release]).fetchall()
        execute_values(cur, f"insert into {schema}.{table} ({', '.join(columns)}) values %s", rows, page_size=5000)
    return release


def list_target_releases(pg) -> list[dict]:
    """ledger.releases_in on the ledger of the database ``pg``."""
    ledger = _existing(pg, "all")
    try:
        return releases_in(ledger.con)
    finally:
        ledger.close()


def diff_target_releases(pg, a: int, b: int) -> list[dict]:
    """ledger.diff_in on the ledger of the database ``pg``."""
    ledger = _existing(pg, (a, b))
    try:
        return diff_in(ledger.con, a, b, ledger.where)
    finally:
        ledger.close()


def read_existing_ledger(pg, cells="all") -> TargetLedger:
    """The ledger of the database ``pg`` with the cells of ``cells`` (as read_ledger); an error where there is none."""
    return _existing(pg, cells)


def _existing(pg, cells) -> TargetLedger:
    ledger = read_ledger(pg, cells)
    if not ledger.exists:
        ledger.close()
        raise SdcError(f"no ledger of releases in database {ledger.database} (schema {LEDGER_PG_SCHEMA}): sdc publish "
                       "--target writes it with the first release it records")
    return ledger


def _check_schema(cur, database: str) -> bool:
    """Whether the ledger's schema is there; one that sdc did not make, or that holds other relations, stops."""
    cur.execute("select oid, coalesce(pg_catalog.obj_description(oid, 'pg_namespace'), '') from pg_catalog.pg_namespace "
                "where nspname = %s", (LEDGER_PG_SCHEMA,))
    row = cur.fetchone()
    if row is None:
        return False
    where = f"schema {LEDGER_PG_SCHEMA} of database {database}"
    if row[1] != LEDGER_MARKER:
        raise SdcError(f"the {where} was not made by sdc publish --target (its comment is not the ledger's marker), "
                       "and sdc keeps its ledger of releases there: rename or drop that schema; nothing was changed")
    cur.execute("select relname from pg_catalog.pg_class where relnamespace = %s and relkind in ('r', 'p', 'v', 'm', "
                "'f') order by 1", (row[0],))
    tables = tuple(name for (name,) in cur.fetchall())
    if tables != LEDGER_TABLES:
        raise SdcError(f"the {where} holds {', '.join(tables) or 'no table'}, not the ledger's tables "
                       f"({', '.join(LEDGER_TABLES)}): it was changed outside sdc; nothing was changed")
    return True


def _keep_private(cur) -> None:
    """No role but the owner has a right on the ledger (default privileges may grant them on new tables)."""
    cur.execute("select distinct a.grantee from pg_catalog.pg_namespace as n cross join "
                "pg_catalog.aclexplode(n.nspacl) as a where n.nspname = %s and a.grantee <> n.nspowner "
                "union select distinct a.grantee from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n "
                "on n.oid = c.relnamespace cross join pg_catalog.aclexplode(c.relacl) as a "
                "where n.nspname = %s and a.grantee <> c.relowner", (LEDGER_PG_SCHEMA, LEDGER_PG_SCHEMA))
    grantees = [oid for (oid,) in cur.fetchall()]
    if not grantees:
        return
    cur.execute("select oid, rolname from pg_catalog.pg_roles where oid = any(%s)", ([g for g in grantees if g],))
    names = {oid: q(name) for oid, name in cur.fetchall()}
    roles = ", ".join(names.get(g, "public") if g else "public" for g in grantees)
    schema = q(LEDGER_PG_SCHEMA)
    cur.execute(f"revoke all on schema {schema} from {roles}")
    cur.execute(f"revoke all on all tables in schema {schema} from {roles}")


def _insert(con, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    if not rows:
        return
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(columns), dtype=object)
    cursor = con.cursor()  # a connection of its own for the frame's view
    try:
        cursor.register("sdc_ledger_rows", frame)
        cursor.execute(f"insert into {LEDGER_SCHEMA}.{table} ({', '.join(columns)}) select {', '.join(columns)} "
                       "from sdc_ledger_rows")
    finally:
        cursor.close()
