"""`sdc microaggregate`: a protected copy of a DuckDB table or of a CSV/Parquet file.

Every other column and the row count stay as they are (a CSV's other columns are copied as the text they were
delivered as), but for the record keys, which the copy does not carry: ``rk``, the key facts ``rk_*`` and a
record-key column the caller names; each named column is microaggregated on its own (its type becomes DOUBLE:
group means are not integers). The copy is written in one transaction (a file is written under a temporary name
and renamed), so on any error nothing changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np

from sdc.warehouse.database import connect, duckdb_connect, is_numeric_type, transaction
from sdc.conventions import KEY_FACT_PREFIX, RAW_SCHEMA, RECORD_KEY_COLUMN
from sdc.errors import SdcError
from sdc.files import check_not_an_input, check_output_file, disk_full, read_failure, staged_file, write_text_atomically
from sdc.quoting import quote_identifier, quote_literal
from sdc.warehouse.loader import quote, source_sql, text_file_numbers
from sdc.microaggregation.measures import column_report
from sdc.microaggregation.methods import microaggregate

def microaggregate_table(db, table: str, columns: list[str], k: int, method: str, *, out_table: str | None = None,
                         id_column: str | None = None, replacement: str | None = None,
                         shuffle_rows: bool = False, record_key: str | None = None,
                         report: str | Path | None = None) -> list[dict]:
    """``sdc microaggregate --db``: write ``out_table`` (default <table>_microaggregated; never in schema raw,
    which holds the loaded microdata), a copy of ``table`` without its record keys in which each of ``columns``
    is microaggregated with ``microaggregate(values, k, method)``, into the DuckDB file ``db``, in one
    transaction; returns one ``column_report`` per column. With ``report``, the figures as JSON to that
    file too.

    >>> import pathlib, tempfile
    >>> import duckdb
    >>> from sdc.microaggregation import microaggregate_table
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     db = str(pathlib.Path(folder) / "warehouse.duckdb")
    ...     with duckdb.connect(db) as con:
    ...         _ = con.execute("create schema raw; create table raw.people as select * from (values "
    ...                         "(1, 1200), (2, 3400), (3, 2100), (4, 2800), (5, 1900), (6, 4100)) t(id, income)")
    ...     reports = microaggregate_table(db, "raw.people", ["income"], 3, "optimal", id_column="id",
    ...                                    out_table="micro.people")
    ...     with duckdb.connect(db) as con:
    ...         rows = con.execute("select id, round(income, 2) from micro.people order by id").fetchall()
    >>> rows
    [(1, 1733.33), (2, 3433.33), (3, 1733.33), (4, 3433.33), (5, 1733.33), (6, 3433.33)]
    >>> reports[0]["groups"], reports[0]["k_effective"]
    (2, 3)
    """
    _check_report(report, db)
    source = _qualified(table)
    target = _qualified(out_table or f"{table}_microaggregated")
    if target == source:
        raise SdcError("the protected copy must not replace its source table; give another --out-table")
    con = connect(db, must_exist=True)
    try:
        exists = con.execute("select count(*) from duckdb_tables() where schema_name = ? and table_name = ?",
                             _parts(table)).fetchone()[0]
        if not exists:
            raise SdcError(f"table {table!r} not found in {db}")
        reports, protected = _protect(con, source, columns, k, method, id_column, replacement, f"table {table!r}",
                                      shuffle_rows, record_key=record_key)
        schema, name = _parts(out_table or f"{table}_microaggregated")
        _check_target(con, schema, name)
        try:
            with transaction(con):
                con.execute(f"create schema if not exists {quote(schema)}")
                con.execute(f"create or replace table {target} as {protected}")
                con.execute(f"comment on table {target} is {quote_literal(OUTPUT_MARK)}")
        except duckdb.Error as exc:
            full = disk_full(exc, db)
            if full is None:
                raise
            raise full from None
    finally:
        con.close()
    _write_report(report, reports)
    return reports


def microaggregate_file(input_path, out, columns: list[str], k: int, method: str, *, id_column: str | None = None,
                        replacement: str | None = None, shuffle_rows: bool = False,
                        record_key: str | None = None, report: str | Path | None = None) -> list[dict]:
    r"""``sdc microaggregate --input``: write the protected copy of a CSV or Parquet file to ``out`` (.csv or
    .parquet): each of ``columns`` microaggregated with ``microaggregate(values, k, method)``, as numbers, every
    other column of a CSV as the text it was delivered as, no record keys; returns one ``column_report`` per
    column. With ``report``, the figures as JSON to that file too.

    >>> import pathlib, tempfile
    >>> from sdc.microaggregation import microaggregate_file
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     folder = pathlib.Path(folder)
    ...     _ = (folder / "micro.csv").write_text("id,region,income\n1,N,1200\n2,N,3400\n3,N,2100\n"
    ...                                           "4,S,2800\n5,S,1900\n6,S,4100\n")
    ...     reports = microaggregate_file(folder / "micro.csv", folder / "protected.csv", ["income"], 3, "optimal",
    ...                                   id_column="id")
    ...     print((folder / "protected.csv").read_text())
    id,region,income
    1,N,1733.3333333333335
    2,N,3433.3333333333335
    3,N,1733.3333333333335
    4,S,3433.3333333333335
    5,S,1733.3333333333335
    6,S,3433.3333333333335
    <BLANKLINE>
    >>> reports[0]["method"], reports[0]["records"], reports[0]["groups"]
    ('optimal', 6, 2)
    """
    _check_report(report, input_path, out)
    input_path, out = Path(input_path), Path(out)
    check_output_file(out)
    check_not_an_input(out, input_path)
    fmt = {".csv": "csv, header true", ".parquet": "parquet"}.get(out.suffix.lower())
    if fmt is None:
        raise SdcError(f"{out}: give a .csv or .parquet output file")
    source = source_sql(input_path, numbers=columns)
    check_output_file(out, "sdc microaggregate")  # an earlier copy; anything else (other microdata) is kept
    # ties between equal values are broken in the id's order: numeric where DuckDB reads the ids as numbers
    id_type = _sniffed_type(input_path, id_column) if id_column else None
    con = duckdb_connect()
    try:
        # read once, straight into _protect's numbered copy (no table of the file first)
        reports, protected = _protect(con, source, columns, k, method, id_column, replacement, str(input_path),
                                      shuffle_rows, record_key=record_key, id_type=id_type)
        with staged_file(out, suffix=out.suffix, command="sdc microaggregate") as tmp:
            con.execute(f"copy ({protected}) to {quote_literal(tmp)} (format {fmt})")
    finally:
        con.close()
    _write_report(report, reports)
    return reports


REPORT_WRITER = "sdc microaggregate --report"  # the mark of the report file (sdc.files)


def _check_report(report, *inputs) -> None:
    """``report`` is checked before the work, as the copy is: none of the inputs, new or an earlier report."""
    if report:
        check_not_an_input(report, *inputs, flag="--report")
        check_output_file(report, REPORT_WRITER)


def _write_report(report, reports: list[dict]) -> None:
    if report:
        write_text_atomically(Path(report), json.dumps(reports, indent=2) + "\n", command=REPORT_WRITER)


def _sniffed_type(path: Path, column: str) -> str | None:
    """The numeric type DuckDB reads ``column`` of a text file as (None: text, or a Parquet file's own type)."""
    if path.suffix.lower() == ".parquet":
        return None
    return text_file_numbers(source_sql(path, numbers=[column])).get(column)


def _is_record_key(column: str, record_key: str | None) -> bool:
    """A record key the protected copy does not carry: rk, a key fact rk_*, or the caller's record-key column."""
    name = column.lower()
    return (name == RECORD_KEY_COLUMN or name.startswith(KEY_FACT_PREFIX)
            or (record_key is not None and name == record_key.lower()))


def _protect(con, source: str, columns, k, method, id_column, replacement, where, shuffle_rows=False, *,
             record_key=None, id_type=None):
    """Microaggregate the columns; returns the reports and a query of the protected table without the record
    keys, in row order or, with ``shuffle_rows``, in random order (whole rows move: a column is never shuffled
    on its own, which would cut every value from its record). ``id_type``: the type the ties are ordered by."""
    types = _checked_columns(con, source, columns, id_column, record_key, where)
    dropped = [c for c in types if _is_record_key(c, record_key)]
    # One scan fetches the row numbers, the ids and every column; sdc_rows comes back in row order (DuckDB
    # keeps insertion order), else the arrays are put into row order here. The protected values go back
    # in the scan's order and meet their rows by a positional join, each pair checked by its row number
    # (no hash join, no sort of 10^7 rows).
    try:
        con.execute(f"create temp table sdc_rows as select row_number() over () as sdc_row, * from {source}")
    except duckdb.Error as exc:
        raise read_failure(exc, where) from None
    for name in columns:  # one inf would make every group mean inf; NaN is no value to protect
        if types[name].upper() in ("DOUBLE", "FLOAT", "REAL"):
            bad = con.execute(f"select sdc_row, {quote(name)} from sdc_rows where isnan({quote(name)}) "
                              f"or isinf({quote(name)}) limit 1").fetchone()
            if bad:
                raise SdcError(f"column {name!r} of {where} holds {bad[1]} in row {bad[0]}: microaggregation needs "
                               "finite values (use NULL for a missing value)")
    fetched = con.execute(
        f"select sdc_row, {_tie(id_column, id_type) + ' as sdc_tie, ' if id_column else ''}"
        + ", ".join(f"coalesce(cast({quote(name)} as double), 'NaN'::double) as sdc_value_{i}"
                    for i, name in enumerate(columns))
        + " from sdc_rows").fetchnumpy()
    rows = np.asarray(fetched["sdc_row"])
    in_order = _in_row_order(rows)
    to_rows = slice(None) if in_order else np.argsort(rows)  # scan position of row 1, 2, ...
    ids = np.asarray(fetched["sdc_tie"] if id_column else rows)[to_rows]
    reports, protected = [], {"sdc_row": rows}
    for i, name in enumerate(columns):
        x = np.asarray(fetched[f"sdc_value_{i}"], dtype=float)[to_rows]
        try:
            result = microaggregate(x, k, method, ids=ids, replacement=replacement)
        except SdcError as exc:
            raise SdcError(f"column {name!r}: {exc}") from None
        protected[name] = result.values if in_order else result.values[rows - 1]
        reports.append({"column": name, **column_report(x, result)})
    del fetched
    con.register("sdc_protected_values", protected)
    replaced = ", ".join(f"nullif(p.{quote(c)}, 'NaN'::double) as {quote(c)}" for c in columns)
    order = " order by random()" if shuffle_rows else "" if in_order else " order by r.sdc_row"
    excluded = ", ".join(["sdc_row"] + [quote_identifier(c) for c in dropped])
    query = (f"select r.* exclude ({excluded}) replace ({replaced}) from sdc_rows r "
             "positional join sdc_protected_values p where case when r.sdc_row = p.sdc_row then true "
             f"else error('sdc microaggregate: the protected values are out of step with their rows') end{order}")
    return reports, query


def _checked_columns(con, source: str, columns, id_column, record_key, where: str) -> dict:
    """The source's column types, after checking the columns to protect (there, numeric, each once, no record
    key) and the --id and --record-key columns."""
    if not columns:
        raise SdcError("give at least one --column")
    try:
        types = dict(con.execute(f"select column_name, column_type from (describe select * from {source})").fetchall())
    except duckdb.Error as exc:
        raise read_failure(exc, where) from None
    for name in columns + ([id_column] if id_column else []):
        quote(name)
        if name not in types:
            raise SdcError(f"column {name!r} is not in {where} (columns: {', '.join(types)})")
    for name in columns:
        if not is_numeric_type(types[name]):
            raise SdcError(f"column {name!r} of {where} is {types[name]}, not numeric")
    if len(set(columns)) != len(columns):
        raise SdcError("a column is named twice")
    if record_key is not None and record_key not in types:
        raise SdcError(f"record key column {record_key!r} is not in {where} (columns: {', '.join(types)})")
    for name, what in [(c, "column") for c in columns] + ([(id_column, "--id column")] if id_column else []):
        if _is_record_key(name, record_key):
            raise SdcError(f"{what} {name!r} of {where} is a record key ({RECORD_KEY_COLUMN}, {KEY_FACT_PREFIX}* or "
                           "--record-key), which the protected copy does not carry; give another column")
    return types


def _tie(id_column: str, id_type: str | None) -> str:
    return f"cast({quote(id_column)} as {id_type})" if id_type else quote(id_column)


def _in_row_order(rows: np.ndarray) -> bool:
    """Whether a scan of sdc_rows returned the row numbers 1, 2, ..., n in order."""
    return bool(np.array_equal(rows, np.arange(1, len(rows) + 1)))


# The comment on every table sdc microaggregate writes: only such a table is replaced by a later run.
OUTPUT_MARK = "written by sdc microaggregate"


def _check_target(con, schema: str, name: str) -> None:
    """The protected copy never goes into the raw schema (microdata, key stores, load log) and replaces no
    table or view that sdc microaggregate did not write."""
    if schema.lower() == RAW_SCHEMA:
        raise SdcError(f"protected copy {schema}.{name}: schema {RAW_SCHEMA} holds the loaded microdata, their "
                       "record keys and the load log; give --out-table in another schema")
    found = con.execute("select 'table', comment from duckdb_tables() where schema_name = ? and table_name = ? "
                        "union all select 'view', comment from duckdb_views() where schema_name = ? and view_name = ?",
                        [schema, name, schema, name]).fetchall()
    if found and found[0] != ("table", OUTPUT_MARK):
        raise SdcError(f"protected copy {schema}.{name}: a {found[0][0]} of that name exists that sdc microaggregate "
                       "did not write; it is not replaced: give another --out-table, or drop it first")


def _parts(table: str) -> list[str]:
    parts = table.split(".")
    if len(parts) == 1:
        return ["main", parts[0]]
    if len(parts) == 2:
        return parts
    raise SdcError(f"{table!r}: give a table as name or schema.name")


def _qualified(table: str) -> str:
    return ".".join(quote(p) for p in _parts(table))
