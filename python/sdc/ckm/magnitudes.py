"""Protect one magnitude table (or a weighted count) straight from microdata, in this process: the dbt macro
``ckm_sum`` is rendered here and run on an in-memory DuckDB, as ``sdc.ckm.count_table`` does for counts.

    import sdc.ckm
    table = sdc.ckm.sum_table(df, ["wz", "region"], value="turnover", record_key="rk", modulus=10**8,
                              params="magnitude.yml")
"""

from __future__ import annotations

import os
from pathlib import Path

from sdc.conventions import CKM_SUM_OWN_COLUMNS, CKM_SUM_OWN_PATTERNS, RECORD_KEY_COLUMN
from sdc.warehouse.dimension_names import check_dimension_names
from sdc.errors import SdcError
from sdc.files import check_not_an_input, check_output_file
from sdc.warehouse.hierarchy import create_hierarchy_table, hierarchy_rows
from sdc.warehouse.loader import column_list, existing_key_sql, quote
from sdc.warehouse.macro_renderer import private_connection, render_macro, run_sql, sql_errors
from sdc.warehouse.microdata_input import register_microdata
from sdc.ptable.relation import create_nums_ptable_table
from sdc.warehouse.shared_database import shared_connection
from sdc.ckm._inputs import CKM_COMMAND, HIERARCHY, INPUT, MICRODATA, NUMS_PTABLE, check_input_keys, rounded, write_query_csv
from sdc.ckm.params import dbt_params, magnitude_params, nums_ptable
from sdc.ckm.reference import key_digits

TOTALS = ("cube", "rollup", "none")


def sum_table(
    data,
    dims: list[str],
    *,
    value: str | None = None,
    weight: str | None = None,
    record_key: str,
    modulus: int,
    params,
    ptable=None,
    hierarchy=None,
    totals: str = "cube",
    rules_preset: str = "handbook",
    audit: bool = False,
    check_keys: bool = True,
    complete: bool = True,
    digits: int | str | None = "default",
):
    """A magnitude table protected by the Cell Key Method, as a pandas DataFrame: one row per cell with the
    dimensions and ``value`` (the perturbed sum of ``value``); with a weight also ``weighted_value`` (the
    perturbed weighted sum); with only a weight, ``weighted_count`` (the perturbed sum of the weights). With
    ``audit``: also originals, cell key, sensitivity and each noise component (never publish those).

    params   a dict of magnitude parameters or a YAML file (sdc.ckm.params names them)
    ptable   the magnitude ptable: a file (sdc ptable --table nums) or a NumsPTableSet; default the params' ptable
    modulus  of the record keys: a power of 10 (the key's decimal digits are scrambled per component)
    complete every cell of the frame (cross product of each dimension's codes), empty ones with value 0;
             False: only cells with records
    digits   round the published magnitudes to this many decimals (negative: to tens, hundreds, ...) after
             the noise; default whole units (conventions.PUBLISHED_DIGITS, as the dbt macro ckm_published);
             None: unrounded

    The method (as τ-Argus and the R package cellKey define it): the cell's noise is the sum over its components
    j (its top_k largest contributions x_j for type top_contr; one for mean, range or sum) of δ_j · v_j, with
    δ_j = x_j · m(x_j) · ε_j (m: p for the simple multiplier, τ-Argus's flex function for flex) and v_j the
    noise of the magnitude ptable for the ratio |x / δ_j| at the cell key (scrambled per component),
    interpolated between the ptable's rows.

    >>> import pandas as pd
    >>> import sdc.ckm
    >>> from sdc.ptable import NumsPTableParams, NumsPTableSet, create_num_ptable
    >>> nums = NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=2, V=0.5)).table})
    >>> df = pd.DataFrame({"region": ["N", "N", "N", "S", "S", "S"],
    ...                    "income": [1200.0, 3400.0, 2100.0, 2800.0, 1900.0, 4100.0],
    ...                    "rk": [0.1723, 0.2031, 0.8812, 0.4417, 0.0559, 0.6302]})
    >>> params = {"type": "top_contr", "top_k": 1, "multiplier": {"type": "simple", "p": 0.05, "epsilon": [1]}}
    >>> table = sdc.ckm.sum_table(df, ["region"], value="income", record_key="rk", modulus=10**4,
    ...                           params=params, ptable=nums, audit=True)
    >>> print(table[["region", "value", "original_value", "delta_value_1", "noise_value"]].to_string(index=False))
    region   value  original_value  delta_value_1  noise_value
         N  6785.0          6700.0          170.0         85.0
         S  8595.0          8800.0          205.0       -205.0
     Total 15705.0         15500.0          205.0        205.0
    """
    with shared_connection() as con:
        sql = _protected_query(con, data, dims, value, weight, record_key, modulus, params, ptable, hierarchy,
                               totals, rules_preset, audit, check_keys, complete)
        return run_sql(con, rounded(con, sql, dims, digits)).df()


def protect_sum_table(input_path, dims: list[str], out, **options) -> int:
    """``sdc ckm --value``: write the table of ``sum_table`` (the same method; ``options`` are its keyword
    arguments: value, record_key, modulus and params at least) from the file ``input_path`` to the CSV file
    ``out``; returns the number of cells. ``out`` is checked before the work: none of the inputs (microdata, ptable,
    hierarchy, parameters and the ptable they name), and new or an earlier output of sdc ckm.

    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> from sdc.ckm import protect_sum_table
    >>> from sdc.ptable import NumsPTableParams, NumsPTableSet, create_num_ptable
    >>> nums = NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=2, V=0.5)).table})
    >>> params = {"multiplier": {"type": "simple", "p": 0.05, "epsilon": [1]}}
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     folder = pathlib.Path(folder)
    ...     pd.DataFrame({"region": ["N", "N", "N", "S", "S", "S"],
    ...                   "income": [1200.0, 3400.0, 2100.0, 2800.0, 1900.0, 4100.0],
    ...                   "rk": [0.1723, 0.2031, 0.8812, 0.4417, 0.0559, 0.6302]}).to_csv(folder / "micro.csv", index=False)
    ...     cells = protect_sum_table(folder / "micro.csv", ["region"], folder / "table.csv", value="income",
    ...                               record_key="rk", modulus=10**4, params=params, ptable=nums)
    ...     print(cells, (folder / "table.csv").read_text())
    3 region,value
    N,6785
    S,8595
    Total,15705
    <BLANKLINE>
    """
    given = options.get("params")
    params = options["params"] = magnitude_params(given)
    files = [options.get("ptable"), options.get("hierarchy"), given, params.ptable]
    # the inputs that are files (a ptable or parameters may also be given as objects)
    check_not_an_input(out, input_path, *[f for f in files if isinstance(f, (str, os.PathLike))])
    check_output_file(out, CKM_COMMAND)
    with private_connection("ckm") as con:
        sql = _protected_query(con, Path(input_path), dims, options.pop("value"), options.pop("weight", None),
                               options.pop("record_key"), options.pop("modulus"), options.pop("params"),
                               options.pop("ptable", None), options.pop("hierarchy", None),
                               options.pop("totals", "cube"), options.pop("rules_preset", "handbook"),
                               options.pop("audit", False), options.pop("check_keys", True),
                               options.pop("complete", True))
        digits = options.pop("digits", "default")
        if options:
            raise SdcError(f"unknown options: {', '.join(sorted(options))}")
        return write_query_csv(con, rounded(con, sql, dims, digits), out)


def _protected_query(con, data, dims, value, weight, record_key, modulus, params, ptable, hierarchy, totals,
                     rules_preset, audit, check_keys, complete) -> str:
    if isinstance(dims, str) or not dims or not all(isinstance(d, str) for d in dims):
        raise SdcError(f"dims must be a non-empty list of column names, got {dims!r}")
    dims = list(dims)
    if value is None and weight is None:
        raise SdcError("give value= (a numeric column to sum) or weight= (for a weighted count)")
    if isinstance(modulus, bool) or not isinstance(modulus, int):
        raise SdcError(f"modulus must be a whole number, got {modulus!r}")
    key_digits(modulus)
    if totals not in TOTALS:
        raise SdcError(f"totals must be cube, rollup or none, got {totals!r}")
    for dim in dims:
        quote(dim)
    check_dimension_names(dims, CKM_SUM_OWN_COLUMNS + (RECORD_KEY_COLUMN,),
                          {record_key: "record_key column", value: "value column", weight: "weight column"},
                          top_contributions=True, patterns=CKM_SUM_OWN_PATTERNS)
    params = magnitude_params(params)
    tables = nums_ptable(ptable, params)
    needed = dims + [record_key] + [c for c in (value, weight) if c]
    label, columns = register_microdata(con, data, INPUT, needed, numbers=needed[len(dims):],
                                        temporary=True)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise SdcError(f"column {missing[0]!r} is not in {label} ({column_list(columns)})")
    key_sql = existing_key_sql(con, columns, record_key, modulus, relation=INPUT, checked_later=check_keys)
    carried = [quote(c) for c in dims + [c for c in (value, weight) if c]]
    con.execute(f"create temp view {MICRODATA} as select {', '.join(carried)}, {key_sql} as {RECORD_KEY_COLUMN} "
                f"from {INPUT}")
    if check_keys:
        check_input_keys(con, str(MICRODATA), columns, record_key, modulus, label, checked_later=True)
    create_nums_ptable_table(con, str(NUMS_PTABLE), tables)
    if hierarchy is not None:
        create_hierarchy_table(con, str(HIERARCHY), hierarchy_rows(hierarchy))
    with sql_errors():
        sql = render_macro(
            con, "ckm_sum", MICRODATA, dims, value=value, weight=weight, params=dbt_params(params), ptable=NUMS_PTABLE,
            totals=totals, hierarchy=HIERARCHY if hierarchy is not None else None, modulus=modulus,
            check_keys=False, check_cell_keys=check_keys, rules_preset=rules_preset, audit=audit, complete=complete)
    order = ", ".join(f"try_cast({quote(d)} as double) is null, try_cast({quote(d)} as double), {quote(d)}"
                      for d in dims)
    return f"select * from ({sql}) as cells order by {order}"


def sum_quality(audit, table_name: str = "table", measure: str = "value"):
    """The quality figures of a magnitude table (macro ckm_sum_quality) from ``sum_table(..., audit=True)``:
    one row with the share of cells changed, the mean absolute and relative deviation, the distribution of the
    relative absolute deviations |x' - x| / |x| (median, 90th and 99th percentile, largest, shares below 1, 5 and
    10 %) and the sign changes, over the cells whose original is not 0.

    >>> import pandas as pd
    >>> import sdc.ckm
    >>> from sdc.ptable import NumsPTableParams, NumsPTableSet, create_num_ptable
    >>> nums = NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=2, V=0.5)).table})
    >>> df = pd.DataFrame({"region": ["N", "N", "N", "S", "S", "S"],
    ...                    "income": [1200.0, 3400.0, 2100.0, 2800.0, 1900.0, 4100.0],
    ...                    "rk": [0.1723, 0.2031, 0.8812, 0.4417, 0.0559, 0.6302]})
    >>> params = {"multiplier": {"type": "simple", "p": 0.05, "epsilon": [1]}}
    >>> audit = sdc.ckm.sum_table(df, ["region"], value="income", record_key="rk", modulus=10**4,
    ...                           params=params, ptable=nums, audit=True)
    >>> quality = sdc.ckm.sum_quality(audit, "income")
    >>> print(quality[["measure", "cells", "changed_share", "mean_absolute_deviation", "max_relative_noise"]].round(4).to_string(index=False))
    measure  cells  changed_share  mean_absolute_deviation  max_relative_noise
      value      3            1.0                    165.0              0.0233
    """
    return _run_macro_on_frames("ckm_sum_quality", {"sdc_audit_table": audit}, table_name=table_name,
                                measure=measure)


def mean_table(sums, counts, dims: list[str], numerator: str = "value", denominator: str = "count"):
    """Means as perturbed sum / perturbed count of the same cell (macro ckm_mean): ``sums`` a published
    sum_table, ``counts`` a published count_table (with weight= for ``denominator="weighted_count"``). Both
    noisy numbers are published already, so the mean gives nothing away that they do not.

    >>> import pandas as pd
    >>> import sdc.ckm
    >>> from sdc.ptable import NumsPTableParams, NumsPTableSet, PTableParams, create_num_ptable, create_ptable
    >>> ptable = create_ptable(PTableParams(D=3, V=1)).table
    >>> nums = NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=2, V=0.5)).table})
    >>> df = pd.DataFrame({"region": ["N", "N", "N", "S", "S", "S"],
    ...                    "income": [1200.0, 3400.0, 2100.0, 2800.0, 1900.0, 4100.0],
    ...                    "rk": [0.1723, 0.2031, 0.8812, 0.4417, 0.0559, 0.6302]})
    >>> params = {"multiplier": {"type": "simple", "p": 0.05, "epsilon": [1]}}
    >>> sums = sdc.ckm.sum_table(df, ["region"], value="income", record_key="rk", modulus=10**4,
    ...                          params=params, ptable=nums)
    >>> counts = sdc.ckm.count_table(df, ["region"], record_key="rk", modulus=10**4, ptable=ptable)
    >>> print(sdc.ckm.mean_table(sums, counts, ["region"]).to_string(index=False))
    region  mean_value
         N      3392.5
         S      4297.5
     Total      2617.5
    """
    if isinstance(dims, str) or not dims:
        raise SdcError(f"dims must be a non-empty list of column names, got {dims!r}")
    for name, frame, column in (("sums", sums, numerator), ("counts", counts, denominator)):
        missing = [c for c in list(dims) + [column] if c not in frame.columns]
        if missing:
            raise SdcError(f"column {missing[0]!r} is not in {name} ({', '.join(map(str, frame.columns))})")
    frames = {"sums": sums.assign(**{d: sums[d].astype(str) for d in dims}),
              "counts": counts.assign(**{d: counts[d].astype(str) for d in dims})}
    return _run_macro_on_frames("ckm_mean", frames, list(dims), numerator=numerator, denominator=denominator)


def _run_macro_on_frames(macro: str, frames: dict, *args, **kwargs):
    with shared_connection() as con:
        for name, frame in frames.items():
            con.register(f"{name}_frame", frame)
            con.execute(f"create temp view {name} as select * from {name}_frame")
        with sql_errors():
            sql = render_macro(con, macro, *frames, *args, **kwargs)
            return run_sql(con, sql).df()
