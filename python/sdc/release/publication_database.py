"""A PostgreSQL database of its own for the publication: `sdc publish --target --publication-database NAME`.

Inside the build database a reader role sees more than the tables it may read: the catalog shows the names of
the raw, audit and ledger tables to anyone who can connect, and their exact row counts (pg_class.reltuples,
pg_stat_user_tables.n_live_tup). A database is PostgreSQL's unit of that visibility: a role connected to one
sees only its catalog. So the verified release is copied into a database that holds nothing else:

* sdc creates it where it is missing (CREATE DATABASE: the dbt role needs CREATEDB, or an administrator creates
  it for that role) and marks it with a comment; an existing database without the mark is used only while it
  holds no relation and no schema but public;
* each release replaces the whole publication schema there (named as in the build database) in one
  transaction: what the last release published and this one does not is gone ("withdrawn");
* the content is the publication schema of the build database, read in the transaction that locked it and
  found it unchanged since sdc audited it (target_publish.py), in PostgreSQL's binary form (every value as it
  is), and the release audit;
* the reader roles (those grant_published lets read the publication schema) get CONNECT on the database, USAGE
  on the schema and SELECT on its tables; PUBLIC loses CONNECT and TEMPORARY there, and a role that no longer
  reads loses CONNECT.

The database's transaction is committed after the build database's (the release audit and the ledger): a
failure between the two leaves the readers the last release, recorded in the ledger together with this one.
"""

from __future__ import annotations

import json
import tempfile

from sdc.conventions import RELEASE_AUDIT_TABLE
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q

DATABASE_MARKER = "sdc publication database: sdc publish --target replaces its publication with each verified release"
SYSTEM_DATABASES = ("postgres", "template0", "template1")
MAX_NAME_BYTES = 63  # PostgreSQL's NAMEDATALEN - 1: a longer name is cut short without an error
SPOOL_BYTES = 1 << 26  # a table's rows in memory up to this size, then in a temporary file


def check_database_name(name: str, build_database: str) -> None:
    """The publication database is none of PostgreSQL's own and not the build database."""
    if not name or not name.strip() or len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise SdcError(f"--publication-database {name!r}: give a database name of 1 to {MAX_NAME_BYTES} bytes")
    if name == build_database:
        raise SdcError(f"--publication-database {name} is the build database itself (the target's dbname): the "
                       "publication goes into a database of its own, so that its readers see nothing else")
    if name in SYSTEM_DATABASES:
        raise SdcError(f"--publication-database {name} is one of PostgreSQL's own databases: give another name")


def ensure_database(pg, name: str) -> bool:
    """Create the database ``name`` (owned by the connection's role) where it is missing; True when created.
    Without the right to create databases, stops saying who can do what; nothing is changed then."""
    import psycopg2

    pg.rollback()
    with pg.cursor() as cur:
        cur.execute("select 1 from pg_catalog.pg_database where datname = %s", (name,))
        if cur.fetchone() is not None:
            pg.rollback()
            return False
        cur.execute("select current_user, rolcreatedb or rolsuper from pg_catalog.pg_roles where rolname = current_user")
        user, allowed = cur.fetchone()
    pg.rollback()
    need = (f"role {user} may not create databases (no CREATEDB): give it that right (alter role {_shown(user)} "
            f"createdb), or let an administrator create the database for it (create database {_shown(name)} owner "
            f"{_shown(user)}), then run sdc publish --target again; nothing was written")
    if not allowed:
        raise SdcError(f"cannot create the publication database {name}: {need}")
    pg.autocommit = True  # CREATE DATABASE runs outside a transaction
    try:
        with pg.cursor() as cur:
            cur.execute(f"create database {q(name)}")
            # marked at once: what a template database gives every new one is no reason to refuse it later
            cur.execute(f"comment on database {q(name)} is %s", (DATABASE_MARKER,))
    except psycopg2.errors.InsufficientPrivilege:
        raise SdcError(f"cannot create the publication database {name}: {need}") from None
    except psycopg2.Error as exc:
        raise SdcError(f"cannot create the publication database {name}: {str(exc).strip().splitlines()[0]}; nothing "
                       "was written") from None
    finally:
        pg.autocommit = False
    return True


def _shown(name: str) -> str:
    """A name as one types it in SQL: quoted only where it must be."""
    import re

    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else q(name)


def stage_publication(build, pub, schema: str, tables: list[str], readers: list[str], audit: dict,
                      marker: str) -> list[str]:
    """In the open transaction of ``pub`` (the publication database), the schema ``schema`` replaced by the
    ``tables`` of that schema read through the cursor ``build`` (the build database's locked transaction) and the
    release audit, granted to ``readers``. Not committed. Returns the tables it held that are gone now."""
    with pub.cursor() as cur:
        cur.execute("select current_database(), coalesce(pg_catalog.shobj_description(oid, 'pg_database'), '') "
                    "from pg_catalog.pg_database where datname = current_database()")
        database, mark = cur.fetchone()
        if mark != DATABASE_MARKER:
            _check_empty(cur, database)
            cur.execute(f"comment on database {q(database)} is %s", (DATABASE_MARKER,))
        before = _previous_tables(cur, database, schema, marker)
        cur.execute(f"drop schema if exists {q(schema)} cascade")
        cur.execute(f"create schema {q(schema)}")
        cur.execute(f"comment on schema {q(schema)} is %s", (marker,))
        for table in tables:
            _copy_table(build, cur, schema, table)
        audit_table = f"{q(schema)}.{q(RELEASE_AUDIT_TABLE)}"
        cur.execute(f"create table {audit_table} (report json)")
        cur.execute(f"insert into {audit_table} values (%s)", (json.dumps(audit, sort_keys=True),))
        _grant(cur, database, schema, readers)
    return sorted(set(before) - set(tables))


def held_release(connect, database: str, schema: str) -> dict | None:
    """The public release audit that the publication database ``database`` (``connect()`` opens it) holds in
    ``schema``; None where the database, the schema or the audit is not there."""
    import psycopg2

    try:
        pub = connect()
    except SdcError as exc:  # connect_postgres's message
        if f'database "{database}" does not exist' in str(exc):
            return None
        raise
    try:
        with pub.cursor() as cur:
            cur.execute("select to_regclass(%s) is not null", (f"{q(schema)}.{q(RELEASE_AUDIT_TABLE)}",))
            if not cur.fetchone()[0]:
                return None
            cur.execute(f"select report::text from {q(schema)}.{q(RELEASE_AUDIT_TABLE)}")
            row = cur.fetchone()
        found = json.loads(row[0]) if row and row[0] else None
        return found if isinstance(found, dict) else None
    except psycopg2.Error as exc:
        raise SdcError(f"cannot read the release audit of the publication database {database}: "
                       f"{str(exc).strip().splitlines()[0]}") from None
    finally:
        pub.close()


def _check_empty(cur, database: str) -> None:
    """A database that sdc did not mark is used only while it holds nothing: no relation, no schema but public."""
    cur.execute("select n.nspname || '.' || c.relname from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n "
                "on n.oid = c.relnamespace where n.nspname not in ('pg_catalog', 'information_schema') "
                "and n.nspname not like 'pg\\_toast%' and n.nspname not like 'pg\\_temp\\_%' "
                "union all select nspname from pg_catalog.pg_namespace where nspname not in "
                "('pg_catalog', 'information_schema', 'public') and nspname not like 'pg\\_toast%' "
                "and nspname not like 'pg\\_temp\\_%' order by 1 limit 3")
    found = [name for (name,) in cur.fetchall()]
    if found:
        raise SdcError(f"the database {database} holds {', '.join(found)}, and sdc did not make it a publication "
                       "database (its comment is not sdc's marker): the publication goes into a database that holds "
                       "nothing else; give another --publication-database (sdc creates it); nothing was written")


def _previous_tables(cur, database: str, schema: str, marker: str) -> list[str]:
    """The tables of the last publication; a schema of that name that sdc did not make stops."""
    cur.execute("select oid, coalesce(pg_catalog.obj_description(oid, 'pg_namespace'), '') from "
                "pg_catalog.pg_namespace where nspname = %s", (schema,))
    row = cur.fetchone()
    if row is None:
        return []
    if row[1] != marker:
        raise SdcError(f"the schema {schema} of the publication database {database} was not made by sdc (its comment "
                       "is not the publication's marker): it is left as it is, and nothing was written")
    cur.execute("select relname from pg_catalog.pg_class where relnamespace = %s and relkind in ('r', 'p', 'v', 'm') "
                "and relname <> %s order by 1", (row[0], RELEASE_AUDIT_TABLE))
    return [name for (name,) in cur.fetchall()]


def _copy_table(build, cur, schema: str, table: str) -> None:
    """One table of the build database's publication schema: its columns and types, then its rows (binary COPY:
    both ends are one server, each value arrives as it was)."""
    build.execute("select a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) from pg_catalog.pg_attribute as a "
                  "where a.attrelid = %s::regclass and a.attnum > 0 and not a.attisdropped order by a.attnum",
                  (f"{q(schema)}.{q(table)}",))
    columns = build.fetchall()
    relation = f"{q(schema)}.{q(table)}"
    cur.execute(f"create table {relation} (" + ", ".join(f"{q(name)} {kind}" for name, kind in columns) + ")")
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as rows:
        build.copy_expert(f"copy {relation} to stdout with (format binary)", rows)
        rows.seek(0)
        cur.copy_expert(f"copy {relation} from stdin with (format binary)", rows)


def _grant(cur, database: str, schema: str, readers: list[str]) -> None:
    """CONNECT, USAGE and SELECT for the readers; PUBLIC and former readers lose CONNECT."""
    db = q(database)
    roles = [r if r == "public" else q(r) for r in readers]
    cur.execute(f"revoke connect, temporary on database {db} from public")
    cur.execute("select r.rolname from pg_catalog.pg_database as d cross join pg_catalog.aclexplode(d.datacl) as a "
                "join pg_catalog.pg_roles as r on r.oid = a.grantee where d.datname = %s and a.grantee <> d.datdba "
                "and a.privilege_type = 'CONNECT'", (database,))
    former = sorted({name for (name,) in cur.fetchall()} - set(readers))
    if former:
        cur.execute(f"revoke connect on database {db} from " + ", ".join(q(r) for r in former))
    if roles:
        cur.execute(f"grant connect on database {db} to " + ", ".join(roles))
        cur.execute(f"grant usage on schema {q(schema)} to " + ", ".join(roles))
        cur.execute(f"grant select on all tables in schema {q(schema)} to " + ", ".join(roles))
