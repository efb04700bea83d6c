"""Protect one frequency table straight from microdata (as ONS's function and cellKey do), in this process:
the dbt macro ``ckm_count`` is rendered here (macro_renderer: the same SQL as the warehouse models) and run
on an in-memory DuckDB that reads the data where they lie (for ``count_table`` the process's shared one:
shared_database). No dbt process, no copy of the microdata on disk.

    import sdc.ckm
    table = sdc.ckm.count_table(df, ["region", "sex"], record_key="rkey", modulus=256,
                                ptable="ptable_10_5_rule.csv", threshold=10)

``sdc ckm`` (the CLI) calls ``count_table`` and writes the table as CSV.
"""

from __future__ import annotations

import hashlib
import os
import weakref
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from .record_keys import check_record_keys
from .conventions import CKM_OWN_COLUMNS, CKM_SUM_MEASURES, KEY_FACT_PREFIX, PUBLISHED_DIGITS, RECORD_KEY_COLUMN, WEIGHTED_COUNT_METHODS
from .dimension_names import check_dimension_names
from .errors import SdcError
from .files import check_not_an_input, check_output_file, csv_field, write_text_atomically
from .hierarchy import create_hierarchy_table, hierarchy_rows
from .loader import column_list, existing_key_sql, fact_sql, quote
from .microdata_input import register_microdata
from .macro_renderer import Relation, RememberedQueries, private_connection, render_macro, run_sql, sql_errors
from .ptable.file_cache import read_ptable_file, remembered
from .ptable.formats import parse_ptable
from .ptable.relation import create_nums_ptable_table, create_ptable_table
from .ptable.table import PTable
from .shared_database import kept_names, kept_table, shared_connection

CKM_COMMAND = "sdc ckm"  # the mark of its outputs (sdc.files)
AUDIT_OUTPUT = ("original", "cell_key", "noise")
THRESHOLD_OUTPUT = "count_reason"   # why a count is published empty (with threshold=)
THRESHOLD_AUDIT = "perturbed"       # the count a threshold hid (audit only)
WEIGHTED_OUTPUT = "weighted_count"  # with weight=
WEIGHTED_AUDIT = "original_weighted_count"  # the exact sum of the weights (audit only)
COUNT_FACT = "f_sdc_count"
TOTALS = ("cube", "rollup", "none")
# digits= not given: the published magnitudes are rounded to conventions.PUBLISHED_DIGITS (whole units), as
# ckm_published does in dbt by default; None publishes them unrounded
DEFAULT_DIGITS = "default"

# the relations of one run, in DuckDB's temp catalog: the connection's own (shared_database)
_INPUT = "sdc_input"
_MICRODATA = Relation("temp", "main", "sdc_microdata")
_PTABLE = Relation("temp", "main", "sdc_ptable")
_HIERARCHY = Relation("temp", "main", "sdc_hierarchies")
_NUMS_PTABLE = Relation("temp", "main", "sdc_nums_ptable")


def count_table(
    data,
    dims: list[str],
    *,
    record_key: str,
    modulus: int,
    ptable,
    hierarchy=None,
    totals: str = "cube",
    count_var: str | None = None,
    threshold: int | None = None,
    audit: bool = False,
    complete: bool = True,
    reuse_from: int | None = None,
    check_keys: bool = True,
    weight: str | None = None,
    weighted_count: str = WEIGHTED_COUNT_METHODS[0],
    params=None,
    nums_ptable=None,
    digits: int | str | None = DEFAULT_DIGITS,
):
    """A frequency table protected by the Cell Key Method, as a pandas DataFrame: one row per cell with the
    dimensions and ``count`` (with ``threshold``: NULL below it and ``count_reason``; with ``weight``:
    ``weighted_count``; with ``audit``: also original, cell_key, noise, with a threshold perturbed, with a
    weight original_weighted_count; never publish those).

    data        pandas DataFrame, Arrow table, DuckDB relation, or a .csv/.parquet path
    dims        dimension columns; a total carries the hierarchy's root code, or ``Total``
    record_key  column of integer record keys in [0, modulus), or decimals k / modulus in [0, 1)
    modulus     M of the record keys (ONS: 256 or 4096; keys with d decimals: 10^d)
    ptable      perturbation table: a file in any format ``sdc ptable --import`` reads, a DataFrame of
                such a table (sdc or ONS columns), or a PTable
    hierarchy   file or DataFrame (dimension, code, parent) for hierarchical dimensions
    totals      cube (every margin and subtotal), rollup, none (the finest cells only, as ONS)
    count_var   0/1 column to count (default: every record)
    threshold   as ONS: a perturbed count below it is published empty (NULL)
    complete    every cell of the frame (cross product of each dimension's codes), empty ones as count 0,
                as ONS and cellKey; False: only cells with records
    reuse_from  counts above the ptable's last row cycle through rows reuse_from..last (ONS: 501); default
                the table's own rule (an ONS table, or its sdc file, carries it)
    check_keys  refuse record keys that cannot be uniform random (the record key checks); False only for
                hand-picked teaching keys
    weight      positive, finite weight column: adds ``weighted_count``, 0 where ``count`` is 0; with
                ``count_var``, the weights of the records it counts (as cellKey weights a count variable)
    weighted_count  "magnitude" (default): the sum of the weights perturbed by the magnitude method, with
                ``params`` (dict or YAML file, sdc.magnitude.params) and ``nums_ptable`` (default the params'
                ptable), plus the count's noise times the smallest weight and a noise of its own times the
                spread of the weights (macro ckm_count); "mean_weight": count' * sum of weights / count, as
                cellKey and τ-Argus, which reveals the cell's exact mean weight, a fraction whose denominator
                is the original count
    digits      round ``weighted_count`` to this many decimals (negative: to tens, hundreds, ...) after the
                noise, as it is published; default whole units (conventions.PUBLISHED_DIGITS, as the dbt
                macro ckm_published); None: unrounded
    """
    with shared_connection() as con, ExitStack() as keep:
        sql, _ = _protected_query(con, data, dims, record_key, modulus, ptable, hierarchy, totals, count_var,
                                  threshold, audit, complete, reuse_from, check_keys,
                                  weighting=_Weighting.of(weight, weighted_count, params, nums_ptable, modulus),
                                  keep=keep)
        return run_sql(con, rounded(con, sql, dims, digits)).df()


def protect_table(
    input_path: str | Path,
    dims: list[str],
    record_key: str,
    key_digits: int | None,
    ptable_path: str | Path,
    out: str | Path,
    hierarchy_path: str | Path | None = None,
    count_var: str | None = None,
    audit: bool = False,
    totals: str = "cube",
    modulus: int | None = None,
    threshold: int | None = None,
    complete: bool = True,
    reuse_from: int | None = None,
    weight: str | None = None,
    weighted_count: str = WEIGHTED_COUNT_METHODS[0],
    params=None,
    digits: int | str | None = DEFAULT_DIGITS,
) -> int:
    """``sdc ckm``: write the table of ``count_table`` to the CSV file ``out``; returns the number of cells."""
    if (key_digits is None) == (modulus is None):
        raise SdcError("give the record keys' modulus as --key-digits (M = 10^digits) or --modulus M, one of them")
    if key_digits is not None and not 1 <= key_digits <= 18:
        raise SdcError(f"--key-digits must be between 1 and 18, got {key_digits}")
    if modulus is not None and not 2 <= modulus <= 2**62:
        raise SdcError(f"--modulus must be a whole number in [2, 2^62], got {modulus}")
    modulus = modulus if modulus is not None else 10**key_digits
    weighting = _Weighting.of(weight, weighted_count, params, None, modulus)
    check_not_an_input(out, input_path, ptable_path, hierarchy_path, params,
                       weighting.params.ptable if weighting and weighting.params else None)
    check_output_file(out, CKM_COMMAND)
    with private_connection("ckm") as con:
        sql, columns = _protected_query(
            con, Path(input_path), dims, record_key, modulus, Path(ptable_path),
            Path(hierarchy_path) if hierarchy_path else None, totals, count_var, threshold, audit, complete,
            reuse_from, check_keys=True, option_names=True, weighting=weighting)
        return write_query_csv(con, rounded(con, sql, dims, digits), out, columns)


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


class _Weighting:
    """A weighted count's column, method and, for the magnitude method, its parameters and ptable."""

    def __init__(self, weight: str, method: str, params, tables):
        self.weight, self.method, self.params, self.tables = weight, method, params, tables

    @classmethod
    def of(cls, weight, method, params, nums_ptable, modulus) -> "_Weighting | None":
        if weight is None:
            if params is not None or nums_ptable is not None:
                raise SdcError("params and nums_ptable serve a weighted count: give weight= too")
            return None
        if not isinstance(weight, str) or not weight:
            raise SdcError(f"weight must be a column name, got {weight!r}")
        if method not in WEIGHTED_COUNT_METHODS:
            raise SdcError(f"weighted_count must be one of {', '.join(WEIGHTED_COUNT_METHODS)}, got {method!r}")
        if method == "mean_weight":
            if params is not None or nums_ptable is not None:
                raise SdcError("weighted_count 'mean_weight' scales the perturbed count: it takes no magnitude "
                               "params or nums_ptable")
            return cls(weight, method, None, None)
        from .magnitude.reference import key_digits
        from .magnitude.table import magnitude_params, nums_ptable as magnitude_ptable

        if params is None:
            raise SdcError("a weighted count by the magnitude method needs its parameters: give params= (a dict or "
                           "a YAML file), or weighted_count='mean_weight'")
        if not isinstance(modulus, bool) and isinstance(modulus, int):
            key_digits(modulus)  # the magnitude method scrambles decimal digits: M must be a power of 10
        params = magnitude_params(params)
        return cls(weight, method, params, magnitude_ptable(nums_ptable, params))


def _protected_query(con, data, dims, record_key, modulus, ptable, hierarchy, totals, count_var, threshold,
                     audit, complete, reuse_from, check_keys, option_names=False,
                     weighting: _Weighting | None = None, keep: ExitStack | None = None) -> tuple[str, list[str]]:
    """Set up the run's relations on ``con`` and return the query of the table with its column names. With
    ``keep`` (on the shared database) the ptable's relation is the one kept for the table (made on its first
    call), held until ``keep`` closes."""
    dims = _check_arguments(dims, record_key, modulus, totals, count_var, threshold, option_names,
                            weighting.weight if weighting else None)
    table = _ptable(ptable)
    if table.key_modulus is not None and table.key_modulus != modulus:
        raise SdcError(
            f"the perturbation table has integer cell keys 0..{table.key_modulus - 1}, made for record keys of "
            f"modulus {table.key_modulus}, but the record keys have modulus {modulus}: give keys and table of one modulus"
        )
    reuse_from = _reuse_from(table, reuse_from)
    needed = dims + [record_key] + ([count_var] if count_var else []) + ([weighting.weight] if weighting else [])
    label, columns = register_microdata(con, data, _INPUT, needed, numbers=needed[len(dims):], temporary=True)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise SdcError(f"column {missing[0]!r} is not in {label} ({column_list(columns)})")
    checked_later = check_keys and not count_var  # the record key checks then see every record's key
    key_sql = existing_key_sql(con, columns, record_key, modulus, relation=_INPUT, checked_later=checked_later)
    selected = ", ".join([quote(d) for d in dims] + ([quote(weighting.weight)] if weighting else [])
                         + [f"{key_sql} as {RECORD_KEY_COLUMN}"])
    if count_var:
        counted = fact_sql(con, columns, COUNT_FACT, count_var, relation=_INPUT)
        key_fact = quote(KEY_FACT_PREFIX + COUNT_FACT)
        con.execute(f"create temp view {_MICRODATA} as select *, {RECORD_KEY_COLUMN} * {COUNT_FACT} as {key_fact} "
                    f"from (select {selected}, {counted} as {COUNT_FACT} from {_INPUT})")
    else:
        con.execute(f"create temp view {_MICRODATA} as select {selected} from {_INPUT}")
    if check_keys:
        # the check ckm_count makes (ckm_check_record_keys), in its Python twin, to name the input's column
        counted = _MICRODATA if not count_var else f"(select * from {_MICRODATA} where {COUNT_FACT} = 1)"
        check_input_keys(con, counted, columns, record_key, modulus, label, checked_later)
    if keep is None:
        create_ptable_table(con, str(_PTABLE), table)
        ptable_relation = _PTABLE
    else:
        ptable_relation = keep.enter_context(
            kept_table(table, lambda shared, name: create_ptable_table(shared, name, table)))
    if hierarchy is not None:
        create_hierarchy_table(con, str(_HIERARCHY), hierarchy_rows(hierarchy))
    weighted = {}
    if weighting:
        weighted = {"weight": weighting.weight, "weighted_count": weighting.method}
        if weighting.method == "magnitude":
            from .magnitude.table import dbt_params

            create_nums_ptable_table(con, str(_NUMS_PTABLE), weighting.tables)
            weighted.update(params=dbt_params(weighting.params), nums_ptable=_NUMS_PTABLE)
    with sql_errors():  # the rendering runs queries (hierarchy shape, reuse rule)
        sql = render_macro(
            con, "ckm_count", _MICRODATA, dims, fact=COUNT_FACT if count_var else None, totals=totals,
            hierarchy=_HIERARCHY if hierarchy is not None else None, ptable=ptable_relation, modulus=modulus,
            reuse_from=reuse_from, check_keys=False, check_cell_keys=check_keys, complete=complete,
            threshold=threshold, remembered=_ptable_queries(table, ptable_relation), **weighted)
    output = dims + ["count"] + ([THRESHOLD_OUTPUT] if threshold is not None else [])
    output += [WEIGHTED_OUTPUT] if weighting else []
    if audit:
        output += list(AUDIT_OUTPUT) + ([THRESHOLD_AUDIT] if threshold is not None else [])
        output += [WEIGHTED_AUDIT] if weighting else []
    # codes are text in the table (a total's code is text): numbers among them in numeric order (1, 2, 10),
    # then the others (Total, letters) in text order
    order = ", ".join(f"try_cast({quote(d)} as double) is null, try_cast({quote(d)} as double), {quote(d)}"
                      for d in dims)
    return f"select {', '.join(quote(c) for c in output)} from ({sql}) as cells order by {order}", output


def check_input_keys(con, relation: str, columns, record_key: str, modulus: int, label: str,
                     checked_later: bool) -> None:
    """The record key checks over ``relation``'s keys; where they refuse keys whose NULLs and range were left to
    them (existing_key_sql, checked_later), the input's column is checked first, for its message."""
    try:
        with sql_errors():
            check_record_keys(con, relation, RECORD_KEY_COLUMN, modulus, f"in column {record_key!r} of {label}")
    except SdcError:
        if checked_later:
            existing_key_sql(con, columns, record_key, modulus, relation=_INPUT)  # raises for a NULL or a key outside
        raise


def _check_arguments(dims, record_key, modulus, totals, count_var, threshold, option_names, weight=None) -> list[str]:
    if isinstance(dims, str) or not dims or not all(isinstance(d, str) for d in dims):
        raise SdcError(f"dims must be a non-empty list of column names, got {dims!r}")
    dims = list(dims)
    if isinstance(modulus, bool) or not isinstance(modulus, int) or not 2 <= modulus <= 2**62:
        raise SdcError(f"modulus must be a whole number in [2, 2^62], got {modulus!r}")
    if totals not in TOTALS:
        raise SdcError(f"totals must be cube, rollup or none, got {totals!r}")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0):
        raise SdcError(f"threshold must be a whole number of at least 0, got {threshold!r}")
    for dim in dims:  # plain names only, as sdc suppress
        quote(dim)
    check_dimension_names(dims, CKM_OWN_COLUMNS + (RECORD_KEY_COLUMN, COUNT_FACT, THRESHOLD_OUTPUT),
                          {record_key: "--record-key column" if option_names else "record_key column",
                           count_var: "--count-var column" if option_names else "count_var column",
                           weight: "--weight column" if option_names else "weight column"})
    return dims


def _ptable(ptable) -> PTable:
    if isinstance(ptable, PTable):
        return ptable
    if isinstance(ptable, (str, os.PathLike)):
        return read_ptable_file(ptable)
    if hasattr(ptable, "to_csv") and hasattr(ptable, "columns"):  # a pandas DataFrame
        return _frame_ptable(ptable)
    raise SdcError(f"ptable must be a file path, a DataFrame or a PTable, got {type(ptable).__name__}")


# the results of the ptable checks of a rendering, kept with the table object (one per content: file_cache)
_PTABLE_QUERIES: dict[tuple[int, str], tuple[weakref.ref, RememberedQueries]] = {}
_CALL_RELATIONS = (_INPUT, _MICRODATA.identifier, _HIERARCHY.identifier, _NUMS_PTABLE.identifier)


def _ptable_queries(table: PTable, relation: Relation) -> RememberedQueries:
    """The queries over ``relation`` alone, which holds ``table``'s rows (made from it in every call, or kept for
    it under a name never used twice), give the same rows for the same ``table`` object: kept while it lives."""
    key = (id(table), str(relation))
    entry = _PTABLE_QUERIES.get(key)
    if entry is None or entry[0]() is not table:
        kept = kept_names()
        for old in [k for k in _PTABLE_QUERIES if k[1] != str(_PTABLE) and k[1] not in kept]:
            _PTABLE_QUERIES.pop(old, None)  # of a kept table dropped since: its name comes never again
        entry = (weakref.ref(table, lambda _: _PTABLE_QUERIES.pop(key, None)),
                 RememberedQueries(str(relation), _CALL_RELATIONS))
        _PTABLE_QUERIES[key] = entry
    return entry[1]


def _frame_ptable(frame) -> PTable:
    """A DataFrame ptable, parsed once per content (a notebook passes the same table for every call)."""
    digest = _frame_digest(frame)
    parse = lambda: parse_ptable(frame.to_csv(index=False), source="the ptable DataFrame")[0]  # noqa: E731
    return remembered(f"frame:{digest}", parse) if digest else parse()


def _frame_digest(frame) -> str | None:
    """SHA-256 of the column names, types and values of a DataFrame of numbers: equal digests, equal CSV text.
    None for other columns (text, pandas' nullable types), whose bytes are not their values: such a table is
    parsed every time."""
    digest = hashlib.sha256()
    for name, column in frame.items():
        if not isinstance(column.dtype, np.dtype) or column.dtype.kind not in "iufb":
            return None
        digest.update(f"{name!r}:{column.dtype.str}:{len(column)};".encode())
        digest.update(np.ascontiguousarray(column.to_numpy()).tobytes())
    return digest.hexdigest()


def _reuse_from(table: PTable, reuse_from: int | None) -> int | None:
    if reuse_from is None:
        return table.reuse_from
    if isinstance(reuse_from, bool) or not isinstance(reuse_from, int) or not 1 <= reuse_from <= table.max_i:
        raise SdcError(f"reuse_from must be a row of the perturbation table (1..{table.max_i}), got {reuse_from!r}")
    if table.reuse_from is not None and table.reuse_from != reuse_from:
        raise SdcError(f"the perturbation table reuses rows from {table.reuse_from} on, but reuse_from "
                       f"{reuse_from} was asked for: one table, one rule")
    return reuse_from


def sum_table(data, dims, **options):
    """A magnitude table (or weighted count) protected by the Cell Key Method: see sdc.magnitude.table.sum_table."""
    from .magnitude.table import sum_table as magnitude_sum_table

    return magnitude_sum_table(data, dims, **options)



def sum_quality(audit, table_name: str = "table", measure: str = "value"):
    """Quality figures of a magnitude table: see sdc.magnitude.table.sum_quality."""
    from .magnitude.table import sum_quality as magnitude_sum_quality

    return magnitude_sum_quality(audit, table_name, measure)


def mean_table(sums, counts, dims, **options):
    """Means as perturbed sum / perturbed count: see sdc.magnitude.table.mean_table."""
    from .magnitude.table import mean_table as magnitude_mean_table

    return magnitude_mean_table(sums, counts, dims, **options)
