"""Protect one frequency table straight from a microdata file (as the ONS function and cellKey do), by
running the dbt macro ``ckm_count`` on a temporary DuckDB: the same SQL as the warehouse models."""

from __future__ import annotations

from pathlib import Path

import duckdb

from .conventions import CKM_OWN_COLUMNS, RECORD_KEY_COLUMN
from .dbt_runner import run_dbt
from .dimension_names import check_dimension_names
from .errors import SdcError
from .hierarchy import read_hierarchy
from .loader import column_list, load_microdata, quote, source_sql
from .files import check_not_an_input, check_output_file, csv_field, csv_header, read_failure, write_text_atomically
from .ptable.formats import read_ptable, render_ptable
from .scratch import scratch_folder, scratch_project, write_hierarchy_seed

AUDIT_OUTPUT = ("original", "cell_key", "noise")
COUNT_FACT = "f_sdc_count"


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
) -> int:
    """Write one row per cell (dims, count[, original, cell_key, noise]) to ``out``; returns the cell count."""
    if not dims:
        raise SdcError("--dims needs at least one column")
    if (key_digits is None) == (modulus is None):
        raise SdcError("give the record keys' modulus as --key-digits (M = 10^digits) or --modulus M, one of them")
    if key_digits is not None and not 1 <= key_digits <= 18:
        raise SdcError(f"--key-digits must be between 1 and 18, got {key_digits}")
    if modulus is not None and not 2 <= modulus <= 2**62:
        raise SdcError(f"--modulus must be a whole number in [2, 2^62], got {modulus}")
    if totals not in ("cube", "rollup", "none"):
        raise SdcError(f"totals must be cube, rollup or none, got {totals!r}")
    for dim in dims:  # plain names only, as sdc suppress: checked before the dbt run, not after it
        quote(dim)
    check_dimension_names(dims, CKM_OWN_COLUMNS + (RECORD_KEY_COLUMN, COUNT_FACT),
                          {record_key: "--record-key column", count_var: "--count-var column"})
    check_not_an_input(out, input_path, ptable_path, hierarchy_path)
    check_output_file(out, _earlier_output, "sdc ckm")
    columns = _input_columns(Path(input_path))
    missing = [d for d in dims + [record_key] + ([count_var] if count_var else []) if d not in columns]
    if missing:
        raise SdcError(f"column {missing[0]!r} is not in {input_path} ({column_list(columns)})")
    table, _, _ = read_ptable(ptable_path)
    hierarchy = read_hierarchy(hierarchy_path) if hierarchy_path else None
    modulus = modulus if modulus is not None else 10**key_digits
    with scratch_folder("ckm") as tmp:
        project = scratch_project(Path(tmp))
        db = Path(tmp) / "ckm.duckdb"
        facts = {COUNT_FACT: count_var} if count_var else {}
        load_microdata(db, input_path, "micro", key_mode="existing", key_column=record_key, modulus=modulus, facts=facts)
        (project / "seeds" / "sdc_ptable.csv").write_text(render_ptable(table))
        hierarchy_arg = write_hierarchy_seed(project, hierarchy)
        arguments = [
            "source('raw', 'micro')",
            f"dims={dims!r}",
            f"fact={COUNT_FACT!r}" if count_var else "fact=none",
            f"totals={totals!r}",
            f"hierarchy={hierarchy_arg}",
            f"modulus={modulus}",
            f"reuse_from={table.reuse_from}" if table.reuse_from else "reuse_from=none",
        ]
        (project / "models" / "cells.sql").write_text(
            "{{ config(materialized='table') }}\n{{ sdc.ckm_count(" + ", ".join(arguments) + ") }}\n"
        )
        run_dbt(project, db, ["build", "--select", "cells", "sdc_ptable", "sdc_hierarchies",
                              "--indirect-selection", "cautious"], "protecting the table")
        wanted = dims + ["count"] + (list(AUDIT_OUTPUT) if audit else [])
        con = duckdb.connect(str(db), read_only=True)
        try:
            columns = ", ".join(quote(c) for c in wanted)
            rows = con.execute(f"select {columns} from main.cells order by {', '.join(quote(d) for d in dims)}").fetchall()
        finally:
            con.close()
    lines = [",".join(wanted)] + [",".join(csv_field(v) for v in row) for row in rows]
    write_text_atomically(Path(out), "\n".join(lines) + "\n")
    return len(rows)


def _earlier_output(path: Path) -> bool:
    """A cell table sdc ckm wrote: its header ends with count (and the audit columns with --audit)."""
    header = csv_header(path)
    return bool(header) and (header[-1] == "count" or header[-4:] == ["count", *AUDIT_OUTPUT])


def _input_columns(path: Path) -> list[str]:
    con = duckdb.connect()
    try:
        return [r[0] for r in con.execute(f"describe select * from {source_sql(path)}").fetchall()]
    except duckdb.Error as exc:
        raise read_failure(exc, path) from None
    finally:
        con.close()
