"""A-priori cells: the last release's pattern fed into the next one, so that a revision cannot be differenced.

An office publishes a suppression table month after month. If this month's secondary suppression hides a cell
that last month published, the suppression protects nothing (the reader has last month's value); if it publishes
a cell that last month hid, last month's pattern is undone for every reader who keeps both. τ-Argus handles this
with a-priori files; sdc's ledger refuses a release that changes a cell whose records did not change, and this
module gives the suppression the cells to keep:

* a cell **suppressed** in the last release stays suppressed (where it still has records): the heuristic and the
  optimal method treat it as suppressed from the outset, with no protection of its own to reach;
* a cell **published** in the last release with the value it has now is known to every reader: it may not serve
  as a secondary suppression (it is forced published, like an empty cell). A cell whose value changed carries no
  constraint.

The a-priori cells are rows of the table's dimensions and A_PRIORI_STATUS_COLUMN ('suppressed' or 'published'),
with A_PRIORI_VALUE_COLUMN the published value of a published cell. `sdc release a-priori` writes them from the
ledger; they are given as a file (sdc suppress --a-priori), a DataFrame (suppressed_table) or a relation (a dbt
seed for suppression_pattern).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sdc.conventions import A_PRIORI_STATUS_COLUMN, A_PRIORI_STATUSES, A_PRIORI_VALUE_COLUMN
from sdc.errors import SdcError

# an a-priori published value equals this month's when within this relative difference (as the verifier compares)
SAME_VALUE_TOLERANCE: float = 1e-9


@dataclass(frozen=True)
class APrioriCells:
    """Masks over a table's cells: ``suppressed`` stay suppressed, ``known`` are published (their value is
    public already); ``unmatched`` counts a-priori rows of cells the table no longer has."""

    suppressed: np.ndarray
    known: np.ndarray
    unmatched: int


def a_priori_cells(cells: list[dict], dims: list[str], rows: list[dict]) -> APrioriCells:
    """The masks of ``rows`` (a-priori rows as dicts) over ``cells`` (suppression_primary rows: the dimensions,
    value, status). A row must name every dimension, a status of A_PRIORI_STATUSES and, when published, a number;
    a cell listed twice is an error."""
    n = len(cells)
    suppressed, known = np.zeros(n, bool), np.zeros(n, bool)
    index = {_key(c, dims): k for k, c in enumerate(cells)}
    seen: set[tuple] = set()
    unmatched = 0
    for number, row in enumerate(rows, start=1):
        _check_row(row, dims, number)
        key = _key(row, dims)
        shown = _shown(row, dims)
        if key in seen:
            raise SdcError(f"a-priori cells: the cell ({shown}) is listed twice")
        seen.add(key)
        status = str(row[A_PRIORI_STATUS_COLUMN]).strip().lower()
        k = index.get(key)
        if k is None:
            unmatched += 1
            continue
        if cells[k]["status"] in ("primary", "empty"):
            continue  # the rules suppress it anyway; an empty cell is published as empty
        if status == "suppressed":
            suppressed[k] = True
        elif _same(_number(row.get(A_PRIORI_VALUE_COLUMN), shown), float(cells[k]["value"])):
            known[k] = True
    if rows and unmatched == len(rows):  # codes read as other types (a seed's "01" as 1): say so, keep nothing silently
        raise SdcError(f"a-priori cells: none of the {len(rows)} rows is a cell of this table (codes compared as text, "
                       f"e.g. {_shown(rows[0], dims)} against {_shown(cells[0], dims) if cells else 'no cell'}); give "
                       "the dimensions' codes as the table has them (a dbt seed: column_types varchar)")
    return APrioriCells(suppressed, known, unmatched)


def rows_of_frame(frame) -> list[dict]:
    """A-priori rows from a pandas DataFrame, a CSV file's path or a DuckDB relation (a dbt seed)."""
    import pandas as pd

    if isinstance(frame, pd.DataFrame):
        return frame.astype(object).where(frame.notna(), None).to_dict("records")
    if hasattr(frame, "columns") and hasattr(frame, "fetchall"):  # a DuckDB relation (a dbt seed in a Python model)
        names = list(frame.columns)
        return [dict(zip(names, row)) for row in frame.fetchall()]
    from sdc.files import read_csv_rows

    return read_csv_rows(str(frame), what="a-priori cells")


def _check_row(row: dict, dims: list[str], number: int) -> None:
    missing = [c for c in [*dims, A_PRIORI_STATUS_COLUMN] if c not in row]
    if missing:
        raise SdcError(f"a-priori cells: no column {missing[0]!r} (they need the table's dimensions "
                       f"{', '.join(dims)}, {A_PRIORI_STATUS_COLUMN} and {A_PRIORI_VALUE_COLUMN}; columns: "
                       f"{', '.join(map(str, row))})")
    status = str(row[A_PRIORI_STATUS_COLUMN] or "").strip().lower()
    if status not in A_PRIORI_STATUSES:
        raise SdcError(f"a-priori cells: row {number} ({_shown(row, dims)}) has {A_PRIORI_STATUS_COLUMN} "
                       f"{row[A_PRIORI_STATUS_COLUMN]!r}; it must be one of {', '.join(A_PRIORI_STATUSES)}")


def _number(value, shown: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise SdcError(f"a-priori cells: the published cell ({shown}) has no number in {A_PRIORI_VALUE_COLUMN} "
                       f"({value!r}): give the value the last release published")
    return number


def _same(before: float, now: float) -> bool:
    return abs(before - now) <= SAME_VALUE_TOLERANCE * max(1.0, abs(now))


def _key(row: dict, dims: list[str]) -> tuple:
    # codes as text: a CSV file's "3" is the cell table's 3
    return tuple(None if row[d] is None else str(row[d]) for d in dims)


def _shown(row: dict, dims: list[str]) -> str:
    return ", ".join(f"{d}={row.get(d)!r}" for d in dims)
