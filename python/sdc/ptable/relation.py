"""A ptable as a DuckDB table with the column types of the seed sdc_ptable (PTABLE_SEED_COLUMN_TYPES:
exact decimals), for the commands that run the macros on a DuckDB of their own (sdc ckm, sdc sql install).

The columns go to DuckDB as numpy arrays, whole numbers and decimals alike (a decimal as the integer count of
its last digit's units), and become the seed's types in one statement: no Python object per row, so ONS's
192 000 keys take milliseconds."""

from __future__ import annotations

import re

import numpy as np

from sdc.conventions import NUMS_PTABLE_COLUMNS, NUMS_V_DECIMALS, PTABLE_COLUMNS, PTABLE_SEED_COLUMN_TYPES
from sdc.quoting import quote_identifier, temporary
from sdc.ptable.table import PTable

# the name under which the arrays are visible to the statement that copies them (then it is dropped)
_SCAN = "sdc_ptable_arrays"
# a magnitude ptable's v and j: decimals with NUMS_V_DECIMALS places
_NUMS_TYPES = {**PTABLE_SEED_COLUMN_TYPES, "j": f"decimal(18,{NUMS_V_DECIMALS})",
               "v": f"decimal(18,{NUMS_V_DECIMALS})", "type": "varchar"}


def create_ptable_table(con, name: str, table: PTable) -> None:
    """Create (or replace) the table ``name`` (SQL, already quoted) holding ``table``'s rows."""
    _create_table(con, name, table.columns, {c: PTABLE_SEED_COLUMN_TYPES[c] for c in PTABLE_COLUMNS})


def create_nums_ptable_table(con, name: str, tables) -> None:
    """Create (or replace) ``name`` holding a magnitude ptable set (NUMS_PTABLE_COLUMNS: v and j as decimals)."""
    _create_table(con, name, tables.columns, {c: _NUMS_TYPES[c] for c in NUMS_PTABLE_COLUMNS})


def _create_table(con, name: str, columns: dict[str, np.ndarray], types: dict[str, str]) -> None:
    """``name`` with the columns ``types`` (name -> SQL type) from ``columns``: whole numbers, text, or for
    a decimal(w,s) the integers in units of 10^-s, which DuckDB scales exactly (decimal times decimal)."""
    con.register(_SCAN, {c: columns[c] for c in types})
    try:
        selected = ", ".join(_typed(quote_identifier(c), kind) for c, kind in types.items())
        con.execute(f"create or replace {temporary(name)}table {name} as select {selected} from {_SCAN}")
    finally:
        con.unregister(_SCAN)


def _typed(column: str, kind: str) -> str:
    decimal = re.fullmatch(r"decimal\((\d+),(\d+)\)", kind)
    if decimal is None or decimal.group(2) == "0":
        return f"cast({column} as {kind}) as {column}"
    unit = f"0.{'0' * (int(decimal.group(2)) - 1)}1"  # 10^-s as a decimal literal: the product stays exact
    return f"cast(cast({column} as decimal(18,0)) * {unit} as {kind}) as {column}"
