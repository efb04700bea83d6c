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

from sdc.conventions import (
    CKM_OWN_COLUMNS,
    KEY_FACT_PREFIX,
    RECORD_KEY_COLUMN,
    WEIGHTED_COUNT_METHODS,
)
from sdc.warehouse.dimension_names import check_dimension_names
from sdc.errors import SdcError
from sdc.files import check_not_an_input, check_output_file
from sdc.warehouse.hierarchy import create_hierarchy_table, hierarchy_rows
from sdc.warehouse.loader import column_list, existing_key_sql, fact_sql, quote
from sdc.warehouse.microdata_input import register_microdata
from sdc.warehouse.macro_renderer import (
    Relation,
    RememberedQueries,
    private_connection,
    render_macro,
    run_sql,
    sql_errors,
)
from sdc.ptable.file_cache import read_ptable_file, remembered
from sdc.ptable.formats import parse_ptable
from sdc.ptable.relation import create_nums_ptable_table, create_ptable_table
from sdc.ptable.table import PTable
from sdc.warehouse.shared_database import kept_names, kept_table, shared_connection
from sdc.ckm._inputs import (
    CKM_COMMAND,
    DEFAULT_DIGITS,
    HIERARCHY,
    INPUT,
    MICRODATA,
    NUMS_PTABLE,
    PTABLE,
    check_input_keys,
    rounded,
    write_query_csv,
)
from sdc.ckm.params import dbt_params, magnitude_params, nums_ptable as magnitude_ptable
from sdc.ckm.reference import key_digits

AUDIT_OUTPUT = ("original", "cell_key", "noise")
THRESHOLD_OUTPUT = "count_reason"   # why a count is published empty (with threshold=)
THRESHOLD_AUDIT = "perturbed"       # the count a threshold hid (audit only)
WEIGHTED_OUTPUT = "weighted_count"  # with weight=
WEIGHTED_AUDIT = "original_weighted_count"  # the exact sum of the weights (audit only)
COUNT_FACT = "f_sdc_count"
TOTALS = ("cube", "rollup", "none")


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
                ``params`` (dict or YAML file, sdc.ckm.params) and ``nums_ptable`` (default the params'
                ptable), plus the count's noise times the smallest weight and a noise of its own times the
                spread of the weights (macro ckm_count); "mean_weight": count' * sum of weights / count, as
                cellKey and τ-Argus, which reveals the cell's exact mean weight, a fraction whose denominator
                is the original count
    digits      round ``weighted_count`` to this many decimals (negative: to tens, hundreds, ...) after the
                noise, as it is published; default whole units (conventions.PUBLISHED_DIGITS, as the dbt
                macro ckm_published); None: unrounded

    The method (ONS, cellKey, τ-Argus): a cell's key is the sum of its records' keys mod M,
    scaled to [0, 1); the published count is n + v, v the noise of the ptable's row min(n, max i) whose
    interval holds the cell key. A cell of the same records gets the same noise in every table.

    >>> import pandas as pd
    >>> import sdc.ckm
    >>> from sdc.ptable import PTableParams, create_ptable
    >>> ptable = create_ptable(PTableParams(D=3, V=1)).table
    >>> df = pd.DataFrame({"region": ["N", "N", "N", "S", "S", "S"], "sex": ["f", "m", "f", "m", "m", "f"],
    ...                    "rkey": [17, 203, 88, 141, 5, 230]})
    >>> table = sdc.ckm.count_table(df, ["region", "sex"], record_key="rkey", modulus=256, ptable=ptable)
    >>> print(table.to_string(index=False))
    region   sex  count
         N Total      2
         N     f      2
         N     m      2
         S Total      3
         S     f      2
         S     m      2
     Total Total      6
     Total     f      3
     Total     m      3
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
    """``sdc ckm``: write the table of ``count_table`` (the same method and options, from the file
    ``input_path``, with the ptable file ``ptable_path``) to the CSV file ``out``; returns the number of cells.
    The record keys' modulus is ``modulus``, or 10^``key_digits`` (give one of them).

    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> from sdc.ckm import protect_table
    >>> from sdc.ptable import PTableParams, create_ptable, write_ptable
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     folder = pathlib.Path(folder)
    ...     pd.DataFrame({"region": ["N", "N", "N", "S", "S", "S"],
    ...                   "rkey": [17, 203, 88, 141, 5, 230]}).to_csv(folder / "micro.csv", index=False)
    ...     write_ptable(create_ptable(PTableParams(D=3, V=1)).table, folder / "ptable.csv")
    ...     cells = protect_table(folder / "micro.csv", ["region"], "rkey", None, folder / "ptable.csv",
    ...                           folder / "table.csv", modulus=256)
    ...     print(cells, (folder / "table.csv").read_text())
    3 region,count
    N,2
    S,3
    Total,6
    <BLANKLINE>
    """
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
    label, columns = register_microdata(con, data, INPUT, needed, numbers=needed[len(dims):], temporary=True)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise SdcError(f"column {missing[0]!r} is not in {label} ({column_list(columns)})")
    checked_later = check_keys and not count_var  # the record key checks then see every record's key
    key_sql = existing_key_sql(con, columns, record_key, modulus, relation=INPUT, checked_later=checked_later)
    selected = ", ".join([quote(d) for d in dims] + ([quote(weighting.weight)] if weighting else [])
                         + [f"{key_sql} as {RECORD_KEY_COLUMN}"])
    if count_var:
        counted = fact_sql(con, columns, COUNT_FACT, count_var, relation=INPUT)
        key_fact = quote(KEY_FACT_PREFIX + COUNT_FACT)
        con.execute(f"create temp view {MICRODATA} as select *, {RECORD_KEY_COLUMN} * {COUNT_FACT} as {key_fact} "
                    f"from (select {selected}, {counted} as {COUNT_FACT} from {INPUT})")
    else:
        con.execute(f"create temp view {MICRODATA} as select {selected} from {INPUT}")
    if check_keys:
        # the check ckm_count makes (ckm_check_record_keys), in its Python twin, to name the input's column
        counted = MICRODATA if not count_var else f"(select * from {MICRODATA} where {COUNT_FACT} = 1)"
        check_input_keys(con, counted, columns, record_key, modulus, label, checked_later)
    ptable_relation = _ptable_relation(con, table, keep)
    if hierarchy is not None:
        create_hierarchy_table(con, str(HIERARCHY), hierarchy_rows(hierarchy))
    weighted = {}
    if weighting:
        weighted = {"weight": weighting.weight, "weighted_count": weighting.method}
        if weighting.method == "magnitude":
            create_nums_ptable_table(con, str(NUMS_PTABLE), weighting.tables)
            weighted.update(params=dbt_params(weighting.params), nums_ptable=NUMS_PTABLE)
    with sql_errors():  # the rendering runs queries (hierarchy shape, reuse rule)
        sql = render_macro(
            con, "ckm_count", MICRODATA, dims, fact=COUNT_FACT if count_var else None, totals=totals,
            hierarchy=HIERARCHY if hierarchy is not None else None, ptable=ptable_relation, modulus=modulus,
            reuse_from=reuse_from, check_keys=False, check_cell_keys=check_keys, complete=complete,
            threshold=threshold, remembered=_ptable_queries(table, ptable_relation), **weighted)
    output = _output_columns(dims, threshold, weighting, audit)
    # codes are text in the table (a total's code is text): numbers among them in numeric order (1, 2, 10),
    # then the others (Total, letters) in text order
    order = ", ".join(f"try_cast({quote(d)} as double) is null, try_cast({quote(d)} as double), {quote(d)}"
                      for d in dims)
    return f"select {', '.join(quote(c) for c in output)} from ({sql}) as cells order by {order}", output


def _output_columns(dims, threshold, weighting, audit) -> list[str]:
    """The table's columns: the dimensions, count, what threshold= and weight= add, and with audit= the
    audit columns."""
    output = dims + ["count"] + ([THRESHOLD_OUTPUT] if threshold is not None else [])
    output += [WEIGHTED_OUTPUT] if weighting else []
    if audit:
        output += list(AUDIT_OUTPUT) + ([THRESHOLD_AUDIT] if threshold is not None else [])
        output += [WEIGHTED_AUDIT] if weighting else []
    return output


def _ptable_relation(con, table: PTable, keep: ExitStack | None):
    """The ptable as a relation of the run or, with ``keep`` (the shared database), the one kept for it."""
    if keep is None:
        create_ptable_table(con, str(PTABLE), table)
        return PTABLE
    return keep.enter_context(kept_table(table, lambda shared, name: create_ptable_table(shared, name, table)))


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
_CALL_RELATIONS = (INPUT, MICRODATA.identifier, HIERARCHY.identifier, NUMS_PTABLE.identifier)


def _ptable_queries(table: PTable, relation: Relation) -> RememberedQueries:
    """The queries over ``relation`` alone, which holds ``table``'s rows (made from it in every call, or kept for
    it under a name never used twice), give the same rows for the same ``table`` object: kept while it lives."""
    key = (id(table), str(relation))
    entry = _PTABLE_QUERIES.get(key)
    if entry is None or entry[0]() is not table:
        kept = kept_names()
        for old in [k for k in _PTABLE_QUERIES if k[1] != str(PTABLE) and k[1] not in kept]:
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





def weighted_count_table(data, dims: list[str], *, weight: str, record_key: str, modulus: int, ptable, params=None,
                         nums_ptable=None, weighted_count: str = "magnitude", **options):
    """Weighted counts: ``count`` (the count perturbed by the count ptable) and ``weighted_count``; the same as
    ``sdc.ckm.count_table(..., weight=)`` (see there for ``weighted_count``, the method: by default the sum of
    the weights perturbed by the magnitude method of ``params`` with the magnitude ptable ``nums_ptable``).

    >>> import pandas as pd
    >>> import sdc.ckm
    >>> from sdc.ptable import NumsPTableParams, NumsPTableSet, PTableParams, create_num_ptable, create_ptable
    >>> ptable = create_ptable(PTableParams(D=3, V=1)).table
    >>> nums = NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=2, V=0.5)).table})
    >>> df = pd.DataFrame({"region": ["N", "N", "N", "S", "S", "S"], "weight": [1.5, 2.0, 1.0, 2.5, 1.0, 3.0],
    ...                    "rk": [0.1723, 0.2031, 0.8812, 0.4417, 0.0559, 0.6302]})
    >>> params = {"multiplier": {"type": "simple", "p": 0.05, "epsilon": [1]}}
    >>> table = sdc.ckm.weighted_count_table(df, ["region"], weight="weight", record_key="rk", modulus=10**4,
    ...                                      ptable=ptable, params=params, nums_ptable=nums)
    >>> print(table.to_string(index=False))
    region  count  weighted_count
         N      2             4.0
         S      2             6.0
     Total      6             9.0
    """
    return count_table(data, dims, record_key=record_key, modulus=modulus, ptable=ptable, weight=weight,
                       weighted_count=weighted_count, params=params, nums_ptable=nums_ptable, **options)
