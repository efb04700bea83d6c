"""Secondary suppression and its audit on engines without dbt Python models (PostgreSQL; Spark outside
Databricks): `sdc suppress --target` reads the cell table and the relations that the SQL macros built
(suppression_primary, suppression_constraints) through the dbt profile, solves, and writes the pattern and
its audit back in one transaction. Between two dbt selections:

    dbt build --select +supp_x_primary supp_x_relations
    sdc suppress --target pg --cells audit.supp_x_primary --relations audit.supp_x_relations \\
                 --pattern audit.supp_x_pattern --audit-table audit.supp_x_audit --dims a,b [--magnitude]
    dbt build --select supp_x_published        # suppression_published(source('audit', 'supp_x_pattern'), ...)

The pattern is the one the dbt-duckdb Python model (sdc.suppression.warehouse.secondary_suppression) gives.
"""

from __future__ import annotations

import re

from ..errors import SdcError
from ..quoting import quote_identifier
from .warehouse import audit_columns, pattern_columns

_RELATION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")


def relation_name(text: str, option: str) -> str:
    """schema.table (or table) of plain names, quoted."""
    if not isinstance(text, str) or not _RELATION.fullmatch(text):
        raise SdcError(f"{option} must name a table as schema.table with plain names, got {text!r}")
    return ".".join(quote_identifier(part) for part in text.split("."))


def suppress_tables(target, *, cells: str, relations: str, pattern: str, audit: str | None, dims: list[str],
                    magnitude: bool, **options) -> dict:
    """Read ``cells`` and ``relations``, write ``pattern`` (and ``audit``) in one transaction, replacing them.
    Returns counts of the pattern's statuses and of unprotected sensitive cells found by the audit."""
    con = target.connection
    cells_sql, relations_sql = relation_name(cells, "--cells"), relation_name(relations, "--relations")
    pattern_sql = relation_name(pattern, "--pattern")
    audit_sql = relation_name(audit, "--audit-table") if audit else None
    if {pattern_sql, audit_sql} & {cells_sql, relations_sql} or pattern_sql == audit_sql:
        raise SdcError("--pattern and --audit-table must name two tables other than the cells and relations they read")
    cur = con.cursor()
    try:
        names, rows = _read(cur, f"select * from {cells_sql} order by "
                            + ", ".join(quote_identifier(d) for d in _checked(dims)))
        missing = [d for d in dims if d not in names]
        if missing:
            raise SdcError(f"column {missing[0]!r} is not in {cells} (columns: {', '.join(names)})")
        if not rows:
            raise SdcError(f"{cells} is empty")
        rel_names, _ = _read(cur, f"select * from {relations_sql} where 1 = 0")
        for name in ["constraint_id", *dims, "coefficient"]:
            if name not in rel_names:
                raise SdcError(f"{relations} has no column {name!r} (made by suppression_constraints?)")
        cur.execute("select " + ", ".join(quote_identifier(c) for c in ["constraint_id", *dims, "coefficient"])
                    + f" from {relations_sql} order by constraint_id")
        members = [tuple(row) for row in cur.fetchall()]
        columns = pattern_columns(rows, names, members, dims, magnitude=magnitude, **options)
        pattern_rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
        audited = audit_columns(pattern_rows, members, dims, magnitude=magnitude) if audit else None
        _replace_table(cur, target, pattern_sql, columns)
        if audited is not None:
            _replace_table(cur, target, audit_sql, audited)
        con.commit()
    except Exception:
        con.rollback()
        raise
    finally:
        cur.close()
    statuses = {}
    for status in columns["status"]:
        statuses[status] = statuses.get(status, 0) + 1
    unprotected = sum(not p for p in audited["protected"]) if audited else 0
    return {"statuses": statuses, "unprotected": unprotected}


def _checked(dims):
    if isinstance(dims, str) or not dims:
        raise SdcError(f"--dims must list the table's dimension columns, got {dims!r}")
    return dims


def _read(cur, sql: str):
    cur.execute(sql)
    names = [d[0] for d in cur.description]
    return names, [dict(zip(names, row)) for row in cur.fetchall()] if "where 1 = 0" not in sql else []


def _sql_type(target, values: list) -> str:
    """boolean, bigint, double or text, from the values (NULLs aside); a column of only NULLs is text."""
    present = [_plain(v) for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "boolean"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "bigint"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "double precision" if target.type == "postgres" else "double"
    return "text" if target.type == "postgres" else "varchar"


def _replace_table(cur, target, table_sql: str, columns: dict) -> None:
    """Drop and create ``table_sql`` with ``columns`` in the open transaction (PostgreSQL and DuckDB both
    roll DDL back with the transaction, so a failed run leaves the old table)."""
    definitions = []
    for name, values in columns.items():
        kind = _sql_type(target, values)
        definitions.append(f"{quote_identifier(name)} {kind}")
    cur.execute(f"drop table if exists {table_sql}")
    schema = table_sql.rsplit(".", 1)[0] if "." in table_sql else None
    if schema:
        cur.execute(f"create schema if not exists {schema}")
    cur.execute(f"create table {table_sql} ({', '.join(definitions)})")
    names = list(columns)
    marker = ", ".join([target.placeholder] * len(names))
    rows = [tuple(_plain(v) for v in row) for row in zip(*columns.values())]
    cur.executemany(f"insert into {table_sql} ({', '.join(quote_identifier(n) for n in names)}) values ({marker})",
                    rows)


def _plain(value):
    """numpy scalars and Decimals as Python numbers for the driver."""
    if value is None:
        return None
    if type(value).__module__ == "numpy":
        return value.item()
    if type(value).__name__ == "Decimal":
        return float(value)
    return value
