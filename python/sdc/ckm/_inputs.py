"""What the table functions of sdc.ckm share: the names of a run's relations in DuckDB's temp catalog,
the record key checks of the input, rounding of the published magnitudes and writing a query as CSV."""

from __future__ import annotations

from pathlib import Path

from sdc.conventions import CKM_SUM_MEASURES, PUBLISHED_DIGITS, RECORD_KEY_COLUMN
from sdc.errors import SdcError
from sdc.files import csv_field, write_text_atomically
from sdc.warehouse.loader import existing_key_sql, quote
from sdc.warehouse.macro_renderer import Relation, render_macro, run_sql, sql_errors
from sdc.warehouse.record_keys import check_record_keys

CKM_COMMAND = "sdc ckm"  # the mark of its outputs (sdc.files)


# digits= not given: the published magnitudes are rounded to conventions.PUBLISHED_DIGITS (whole units), as
# ckm_published does in dbt by default; None publishes them unrounded
DEFAULT_DIGITS = "default"


# the relations of one run, in DuckDB's temp catalog: the connection's own (shared_database)
INPUT = "sdc_input"
MICRODATA = Relation("temp", "main", "sdc_microdata")
PTABLE = Relation("temp", "main", "sdc_ptable")
HIERARCHY = Relation("temp", "main", "sdc_hierarchies")
NUMS_PTABLE = Relation("temp", "main", "sdc_nums_ptable")


def rounded(con, sql: str, dims: list[str], digits: int | str | None) -> str:
    """``sql`` with its published magnitudes (value, weighted_value, weighted_count) rounded to ``digits``
    decimals, negative ones to tens, hundreds, ... (whole numbers then): after the noise, so that the noise is
    the method's and each number moves by at most half a unit of its last digit. Counts stay as they are.
    DEFAULT_DIGITS: conventions.PUBLISHED_DIGITS where the table has magnitudes; None: unrounded. The rounding
    is the dbt macro's (ckm_published_rounded), so a file and the warehouse publish the same numbers."""
    if digits is None:
        return sql
    default = isinstance(digits, str) and digits == DEFAULT_DIGITS
    if default:
        digits = PUBLISHED_DIGITS
    if isinstance(digits, bool) or not isinstance(digits, int) or not -15 <= digits <= 15:
        raise SdcError(f"digits (of the published magnitudes) must be a whole number from -15 to 15, got "
                       f"{digits!r}; None publishes them unrounded")
    columns = [d[0] for d in run_sql(con, f"select * from ({sql}) as protected limit 0").description]
    measures = [c for c in columns if c in CKM_SUM_MEASURES and c not in dims]
    if not measures:
        if default:
            return sql
        raise SdcError(f"digits rounds published magnitudes ({', '.join(CKM_SUM_MEASURES)}); this table has none "
                       "(a count table has one with a weight)")
    return f"select * replace ({', '.join(_rounding(con, c, digits) for c in measures)}) from ({sql}) as protected"


def _rounding(con, column: str, digits: int) -> str:
    """A decimal type holds the rounded number exactly (a double near 0.29 prints as 0.29000000000000004)."""
    value = render_macro(con, "ckm_published_rounded", f"protected.{quote(column)}", digits)
    kind = f"decimal(38, {digits})" if digits > 0 else "hugeint"
    return f"cast({value} as {kind}) as {quote(column)}"


def write_query_csv(con, sql: str, out: str | Path, columns: list[str] | None = None) -> int:
    """Write the rows of ``sql`` as a CSV file (replaced only when complete, and only if sdc ckm wrote it);
    returns the number of rows. No DataFrame on the way: a command-line run need not import pandas."""
    result = run_sql(con, sql)
    columns = columns or [d[0] for d in result.description]
    rows = result.fetchall()
    lines = [",".join(columns)] + [",".join(csv_field(v) for v in row) for row in rows]
    write_text_atomically(Path(out), "\n".join(lines) + "\n", command=CKM_COMMAND)
    return len(rows)


def check_input_keys(con, relation: str, columns, record_key: str, modulus: int, label: str,
                     checked_later: bool) -> None:
    """The record key checks over ``relation``'s keys; where they refuse keys whose NULLs and range were left to
    them (existing_key_sql, checked_later), the input's column is checked first, for its message."""
    try:
        with sql_errors():
            check_record_keys(con, relation, RECORD_KEY_COLUMN, modulus, f"in column {record_key!r} of {label}")
    except SdcError:
        if checked_later:
            existing_key_sql(con, columns, record_key, modulus, relation=INPUT)  # raises for a NULL or a key outside
        raise
