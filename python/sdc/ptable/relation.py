"""A ptable as a DuckDB table with the column types of the seed sdc_ptable (PTABLE_SEED_COLUMN_TYPES:
exact decimals), for the commands that run the macros on a DuckDB of their own (sdc ckm, sdc sql install)."""

from __future__ import annotations

from ..conventions import PTABLE_COLUMNS, PTABLE_SEED_COLUMN_TYPES
from ..quoting import quote_identifier
from .table import PTable


def create_ptable_table(con, name: str, table: PTable) -> None:
    """Create (or replace) the table ``name`` (SQL, already quoted) holding ``table``'s rows. One statement
    from the rows as text, whatever the size: a VALUES list of the same rows takes DuckDB ten times longer."""
    types = [PTABLE_SEED_COLUMN_TYPES[c] for c in PTABLE_COLUMNS]
    columns = ", ".join(f"{quote_identifier(c)} {t}" for c, t in zip(PTABLE_COLUMNS, types))
    con.execute(f"create or replace table {name} ({columns})")
    records = table.records()
    values = [[str(record[c]) for record in records] for c in PTABLE_COLUMNS]
    unnested = ", ".join(f"cast(unnest(${k}::varchar[]) as {t})" for k, t in enumerate(types, start=1))
    con.execute(f"insert into {name} select {unnested}", values)


def create_nums_ptable_table(con, name: str, tables) -> None:
    """Create (or replace) ``name`` holding a magnitude ptable set (NUMS_PTABLE_COLUMNS: v and j as decimals)."""
    from ..conventions import NUMS_PTABLE_COLUMNS, NUMS_V_DECIMALS

    fractional = f"decimal(18,{NUMS_V_DECIMALS})"
    types = {**PTABLE_SEED_COLUMN_TYPES, "j": fractional, "v": fractional, "type": "varchar"}
    columns = ", ".join(f"{quote_identifier(c)} {types[c]}" for c in NUMS_PTABLE_COLUMNS)
    con.execute(f"create or replace table {name} ({columns})")
    records = tables.records()
    values = [[str(record[c]) for record in records] for c in NUMS_PTABLE_COLUMNS]
    unnested = ", ".join(f"cast(unnest(${k}::varchar[]) as {types[c]})" for k, c in enumerate(NUMS_PTABLE_COLUMNS, start=1))
    con.execute(f"insert into {name} select {unnested}", values)
