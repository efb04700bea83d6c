"""Secondary suppression and its audit on engines without dbt Python models (PostgreSQL; Spark outside
Databricks): `sdc suppress --target` reads the cell table and the relations that the SQL macros built
(suppression_primary, suppression_constraints) through the dbt profile, solves, and writes the pattern and
its audit back in one transaction. Between two dbt selections:

    dbt build --select +supp_x_primary supp_x_relations
    sdc suppress --target pg --cells audit.supp_x_primary --relations audit.supp_x_relations \\
                 --pattern audit.supp_x_pattern --audit-table audit.supp_x_audit --dims a,b [--magnitude]
    dbt build --select supp_x_published        # suppression_published(source('audit', 'supp_x_pattern'), ...)

The pattern is the one the dbt-duckdb Python model (sdc.suppression.warehouse.suppression_pattern) gives.

The pattern and audit tables never go into the raw schema (microdata, record keys, the load log), and replace
only a table an earlier `sdc suppress --target` wrote: each carries a build record (its comment) marked
written_by OUTPUT_MARK, checked before anything is dropped. The record holds the loads of the cell table the
pattern was solved from, so that grant_published and sdc publish refuse a pattern older than a reload beside
tables built from the new load (it would publish other cells than they do).
"""

from __future__ import annotations

import re

from sdc.warehouse.build_record import build_record_comment, build_record_of_comment
from sdc.conventions import RAW_SCHEMA
from sdc.errors import SdcError
from sdc.quoting import quote_identifier
from sdc.suppression.a_priori import a_priori_cells, rows_of_frame
from sdc.suppression.warehouse import audit_columns, pattern_columns

# written_by in the build record of every table sdc suppress --target writes (before it, the whole comment):
# only such a table is replaced by a later run.
OUTPUT_MARK = "written by sdc suppress"

_RELATION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")


def relation_name(text: str, option: str, quote=quote_identifier) -> str:
    """schema.table (or table) of plain names, quoted (``quote``: the engine's quoting)."""
    if not isinstance(text, str) or not _RELATION.fullmatch(text):
        raise SdcError(f"{option} must name a table as schema.table with plain names, got {text!r}")
    return ".".join(quote(part) for part in text.split("."))


def suppress_tables(target, *, cells: str, relations: str, pattern: str, audit: str | None, dims: list[str],
                    magnitude: bool, a_priori=None, **options) -> dict:
    """Read ``cells`` and ``relations``, write ``pattern`` (and ``audit``) replacing them, both or neither (see
    sdc.warehouse.profiles.Target.replace_tables and sdc.warehouse.spark_target). Returns counts of the pattern's statuses and of
    unprotected sensitive cells found by the audit. ``a_priori``: the last release's cells (a CSV file of `sdc
    release a-priori`, a_priori.py)."""
    q = target.quote
    cells_sql, relations_sql = relation_name(cells, "--cells", q), relation_name(relations, "--relations", q)
    pattern_sql = relation_name(pattern, "--pattern", q)
    audit_sql = relation_name(audit, "--audit-table", q) if audit else None
    if {pattern_sql, audit_sql} & {cells_sql, relations_sql} or pattern_sql == audit_sql:
        raise SdcError("--pattern and --audit-table must name two tables other than the cells and relations they read")
    for option, name in (("--pattern", pattern), ("--audit-table", audit)):
        if name:
            check_output_table(target, name, option)
    names = _column_names(target, cells_sql, cells, "--cells")
    missing = [d for d in _checked(dims) if d not in names]
    if missing:
        raise SdcError(f"column {missing[0]!r} is not in {cells} (columns: {', '.join(names)})")
    names, rows = target.query(f"select * from {cells_sql} order by " + ", ".join(q(d) for d in dims))
    if not rows:
        raise SdcError(f"{cells} is empty")
    rows = [dict(zip(names, row)) for row in rows]
    rel_names = _column_names(target, relations_sql, relations, "--relations")
    for name in ["constraint_id", *dims, "coefficient"]:
        if name not in rel_names:
            raise SdcError(f"{relations} has no column {name!r} (made by suppression_constraints?)")
    _, members = target.query("select " + ", ".join(q(c) for c in ["constraint_id", *dims, "coefficient"])
                              + f" from {relations_sql} order by constraint_id")
    last = a_priori_cells(rows, dims, rows_of_frame(a_priori)) if a_priori is not None else None
    columns = pattern_columns(rows, names, members, dims, magnitude=magnitude, a_priori=last, **options)
    pattern_rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
    audited = audit_columns(pattern_rows, members, dims, magnitude=magnitude) if audit else None
    comment = output_comment(target, cells)
    target.replace_tables([(pattern, columns)] + ([(audit, audited)] if audited else []), comment=comment)
    statuses = {}
    for status in columns["status"]:
        statuses[status] = statuses.get(status, 0) + 1
    unprotected = sum(not p for p in audited["protected"]) if audited else 0
    return {"statuses": statuses, "unprotected": unprotected}


def check_output_table(target, name: str, option: str) -> None:
    """An output of sdc suppress never goes into the raw schema and replaces no table or view that an earlier
    sdc suppress did not write (its comment is OUTPUT_MARK)."""
    schema = name.split(".")[0] if "." in name else None
    found = target.existing_relation(name)
    if (found[0] if found else schema or "").lower() == RAW_SCHEMA:
        raise SdcError(f"{option} {name}: schema {RAW_SCHEMA} holds the loaded microdata, their record keys and "
                       f"the load log; give {option} in another schema")
    if found and (found[1] != "table" or not written_by_sdc_suppress(found[2])):
        raise SdcError(f"{option} {name}: a {found[1]} of that name exists that sdc suppress did not write; it is "
                       f"not replaced: give another {option}, or drop it first")


def output_comment(target, cells: str) -> str:
    """The build record of the tables solved from ``cells``: marked as sdc suppress's, with the loads in the
    build record of ``cells`` (none when dbt wrote it no record)."""
    found = target.existing_relation(cells)
    loads = (build_record_of_comment(found[2] if found else None) or {}).get("loads") or {}
    return build_record_comment({"written_by": OUTPUT_MARK, "cells": cells, "loads": loads})


def written_by_sdc_suppress(comment) -> bool:
    """True for the comment of a table sdc suppress --target wrote (a build record, or the bare mark)."""
    return comment == OUTPUT_MARK or (build_record_of_comment(comment) or {}).get("written_by") == OUTPUT_MARK


def _column_names(target, relation_sql: str, relation: str, option: str) -> list[str]:
    """The relation's columns; a relation the target does not have is named as the user gave it."""
    try:
        return target.column_names(relation_sql)
    except SdcError:
        raise
    except Exception as exc:  # the driver's own error (psycopg2, duckdb, Spark's AnalysisException)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SdcError(f"{option} {relation}: cannot read it ({first})") from None


def _checked(dims):
    if isinstance(dims, str) or not dims:
        raise SdcError(f"--dims must list the table's dimension columns, got {dims!r}")
    return dims
