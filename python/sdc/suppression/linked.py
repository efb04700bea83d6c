"""Linked tables: several cell tables of one microdata set as one suppression problem (reference
linked-suppression.md §1, §8).

Tables that count (or sum) the same records share cells: turnover by activity x region and by activity x size
class publish the same activity margins. An attacker holds every table, so a shared cell is one number and the
equations of both tables meet in it. Protected one by one, a pattern can suppress a cell in one table that the
other publishes, or leave a primary cell that the equations of both pin (GaussSuppression's linked-tables
vignette). Here the tables become one problem: a cell is the set of records it holds (``keys``: equal keys, one
cell, whatever its codes), the tables' additivity relations are stacked over those cells, a cell is primary when
any table's rules make it so, and its protection is the widest any table asks. One pattern of that problem gives
every shared cell one status, and its audit covers the union of the equations.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdc.errors import SdcError

# the values of one cell in two tables differ by no more than this, relative (float sums in another order)
SAME_VALUE_TOLERANCE = 1e-9
# the cell fields that must agree between the tables that hold a cell
_STATUS_ORDER = ("empty", "published", "primary")


@dataclass(frozen=True)
class LinkedCells:
    """The tables as one problem: ``cells`` (one dict per distinct cell, in the layout of suppression_primary)
    and ``relations`` (every table's relations over those cells); ``cell_of[t][k]``: the cell of row k of table
    t; ``instances[u]``: the (table, row) pairs that hold cell u."""

    cells: list[dict]
    relations: list[list[tuple[int, float]]]
    cell_of: list[list[int]]
    instances: list[list[tuple[int, int]]]

    @property
    def shared(self) -> list[int]:
        """The cells that more than one table holds."""
        return [u for u, rows in enumerate(self.instances) if len({t for t, _ in rows}) > 1]


def link_tables(tables: list[list[dict]], relations: list[list[list[tuple[int, float]]]], keys: list[list],
                names: list[str], *, dims: list[list[str]] | None = None) -> LinkedCells:
    """One problem of the tables ``tables`` (each a list of suppression_primary rows: value, freq, status, rule,
    protection_lower/upper, contributors) with their ``relations`` (per table, lists of (row, coefficient)).
    ``keys[t][k]`` identifies the records of row k of table t (equal keys: the same cell); ``names`` name the
    tables in messages, ``dims`` their dimension columns (to name a cell).

    Two tables of one survey share the total 9 and the cell a = 4:

    >>> from sdc.suppression.linked import link_tables
    >>> def cell(value, status="published"):
    ...     return {"value": value, "freq": value, "status": status, "rule": None, "protection_lower": 0,
    ...             "protection_upper": 0, "contributors": value}
    >>> by_x = [cell(9), cell(4), cell(5)]                  # total, a, b
    >>> by_y = [cell(9), cell(4), cell(2, "primary"), cell(3)]  # total, a (same records), c, d
    >>> linked = link_tables([by_x, by_y], [[[(0, 1), (1, -1), (2, -1)]], [[(0, 1), (1, -1), (2, -1), (3, -1)]]],
    ...                      [["T", "a", "b"], ["T", "a", "c", "d"]], ["by_x", "by_y"])
    >>> len(linked.cells), linked.shared, linked.cell_of
    (5, [0, 1], [[0, 1, 2], [0, 1, 3, 4]])
    >>> linked.relations
    [[(0, 1.0), (1, -1.0), (2, -1.0)], [(0, 1.0), (1, -1.0), (3, -1.0), (4, -1.0)]]
    """
    if not (len(tables) == len(relations) == len(keys) == len(names)):
        raise SdcError("linked tables: tables, relations, keys and names must have one entry per table")
    if len(tables) < 2:
        raise SdcError(f"linked tables: give at least two tables, got {len(tables)}")
    for t, (rows, table_keys) in enumerate(zip(tables, keys)):
        if len(rows) != len(table_keys):
            raise SdcError(f"linked tables: {names[t]} has {len(rows)} cells but {len(table_keys)} keys")
    instances, cell_of = group_cells(keys)
    cells = [_joint_cell(tables, rows, names, dims) for rows in instances]
    return LinkedCells(cells, _stacked(relations, cell_of, names), cell_of, instances)


def group_cells(keys: list[list]) -> tuple[list[list[tuple[int, int]]], list[list[int]]]:
    """Cells with equal keys as one: (per cell, the (table, row) pairs that hold it; per table, row -> cell)."""
    unknown: dict = {}
    instances: list[list[tuple[int, int]]] = []
    cell_of: list[list[int]] = []
    for t, table_keys in enumerate(keys):
        mapped = []
        for k, key in enumerate(table_keys):
            u = unknown.setdefault(key, len(unknown))
            if u == len(instances):
                instances.append([])
            instances[u].append((t, k))
            mapped.append(u)
        cell_of.append(mapped)
    return instances, cell_of


def _joint_cell(tables, rows: list[tuple[int, int]], names, dims) -> dict:
    """One cell from its rows in the tables: the values must agree; primary where any table's rules say so,
    with the widest protection any asks; the label of its first table."""
    t0, k0 = rows[0]
    first = tables[t0][k0]
    joint = dict(first, label=_label(first, names[t0], dims[t0] if dims else None))
    for t, k in rows[1:]:
        row = tables[t][k]
        for field in ("value", "freq"):
            a, b = float(first[field] or 0), float(row[field] or 0)
            if abs(a - b) > SAME_VALUE_TOLERANCE * max(1.0, abs(a)):
                raise SdcError(
                    f"linked tables: {joint['label']} and {_label(row, names[t], dims[t] if dims else None)} hold the "
                    f"same records but differ in {field} ({a:.10g} and {b:.10g}); are they tables of one microdata?")
        if _STATUS_ORDER.index(row["status"]) > _STATUS_ORDER.index(joint["status"]):
            joint["status"], joint["rule"] = row["status"], row.get("rule")
        for side in ("protection_lower", "protection_upper"):
            joint[side] = max(float(joint[side] or 0), float(row[side] or 0))
    return joint


def _stacked(relations, cell_of: list[list[int]], names) -> list[list[tuple[int, float]]]:
    """Every table's relations over the joint cells; a relation two codes of one cell cancel out of is dropped,
    and one that two tables both have is kept once."""
    stacked, seen = [], set()
    for t, (table_relations, mapped) in enumerate(zip(relations, cell_of)):
        for relation in table_relations:
            terms: dict[int, float] = {}
            for row, coefficient in relation:
                if not 0 <= row < len(mapped):
                    raise SdcError(f"linked tables: a relation of {names[t]} names cell {row}, but it has "
                                   f"{len(mapped)} cells")
                u = mapped[row]
                terms[u] = terms.get(u, 0.0) + float(coefficient)
            kept = tuple(sorted((u, c) for u, c in terms.items() if c != 0.0))
            if kept and kept not in seen and tuple((u, -c) for u, c in kept) not in seen:
                seen.add(kept)
                stacked.append(list(kept))
    return stacked


def _label(row: dict, name: str, dims: list[str] | None) -> str:
    if not dims:
        return name
    return f"{name} ({', '.join(f'{d}={row.get(d)!r}' for d in dims)})"
