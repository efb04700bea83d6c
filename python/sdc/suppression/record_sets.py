"""Which records a cell holds, as a key: cells of two tables with equal keys are one cell (linked tables).

The key is computed from the microdata, not read from the codes: the microdata's finest cells over every
dimension of the tables are numbered, and a cell is the set of finest cells its codes take in (a total, or a
dimension the table does not have, takes in all; a hierarchy's code, its leaves). So (sex=m, region=Total) of
sex x region and (sex=m) of sex x age are one cell, and so are two codes that hold the same records (a region
whose persons all live in one county). Used to protect linked tables (linked_tables.py) and by the release
audit that checks them (sdc.release.linked_suppression).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdc.conventions import TOTAL_LABEL
from sdc.quoting import quote_identifier as q
from sdc.quoting import quote_literal


@dataclass(frozen=True)
class KeyedTable:
    """One table whose cells get keys: its dimensions, the hierarchy relation (SQL name) whose rows for a
    dimension define that dimension's codes (None: leaves and the total), and the text of its totals."""

    dims: list[str]
    hierarchy: str | None = None
    total: str = TOTAL_LABEL


def record_set_keys(con, source: str, tables: list[KeyedTable], finest: str = "sdc_linked_finest") -> list[dict]:
    """Per table: its cells' codes (a tuple of text, None for a null code) -> (key, number of finest cells).
    ``source``: the microdata relation (SQL); ``finest``: the name of the temporary table of finest cells."""
    union: list[str] = []
    for table in tables:
        union += [d for d in table.dims if d.lower() not in {u.lower() for u in union}]
    column = {d.lower(): f"sdc_d{k}" for k, d in enumerate(union)}
    con.execute(f"create or replace temp table {finest} as select row_number() over () as sdc_finest, * from "
                f"(select {', '.join(f'cast({q(d)} as varchar) as {column[d.lower()]}' for d in union)} "
                f"from {source} group by all) as finest")
    found = []
    for table in tables:
        joins, codes = [], []
        for k, d in enumerate(table.dims):
            leaves = _codes_of_leaves(con, table, d, finest, column[d.lower()])
            joins.append(f"join ({leaves}) as a{k} on a{k}.leaf = f.{column[d.lower()]}")
            codes.append(f"a{k}.code")
        rows = con.execute(
            f"select {', '.join(codes)}, md5(string_agg(cast(f.sdc_finest as varchar), ',' order by f.sdc_finest)), "
            f"count(*) from {finest} as f {' '.join(joins)} group by all").fetchall()
        found.append({tuple(r[:len(codes)]): tuple(r[len(codes):]) for r in rows})
    return found


def _codes_of_leaves(con, table: KeyedTable, dim: str, finest: str, column: str) -> str:
    """SQL (leaf, code): every code of ``dim`` that takes in the leaf value, the leaf and total included; a
    hierarchy's codes from its parents, as suppression_cells reads them."""
    leaves = f"select distinct {column} as leaf, {column} as code from {finest}"
    if table.hierarchy is not None:
        has_rows = con.execute(f"select count(*) from {table.hierarchy} where dimension = ?", [dim]).fetchone()[0]
        if has_rows:
            return (f"with recursive nodes as (select cast(code as varchar) as code, nullif(cast(parent as varchar), "
                    f"'') as parent from {table.hierarchy} where dimension = {quote_literal(dim)}), "
                    f"up(leaf, code) as ({leaves} union select up.leaf, nodes.parent from up join nodes "
                    "on nodes.code = up.code where nodes.parent is not null) select leaf, code from up")
    return f"{leaves} union all select distinct {column}, {quote_literal(table.total)} from {finest}"
