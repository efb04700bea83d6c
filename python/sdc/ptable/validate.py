"""Check a perturbation table made elsewhere and turn it into a PTable.

Every reader (formats.py) produces ``Entry`` objects: one interval of one row, in the order of the file.
``assemble`` checks them and names the row of the first problem:

* each row's intervals cover [0, 1) in order, without gap or overlap (first bound 0, last bound 1);
* no negative probability (an upper bound below its lower bound);
* the p column, where the file has one, agrees with the interval widths and sums to 1;
* j = i + v where the file gives both; no perturbed value below 0;
* rows run 1..max i without a gap; row 0, if given, keeps 0 at 0 (it is added when missing).

Bounds with more than 8 decimals are rounded to 8, and empty intervals (p = 0) are dropped: the
warehouse lookup compares 8-decimal integers and can never hit an empty interval. Both are reported.
A mean or variance that is not what the row promises is not an error, but it is reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np

from sdc.conventions import INTERVAL_DECIMALS, INTERVAL_SCALE
from sdc.errors import SdcError
from sdc.ptable.table import PTable

# Tolerance for a file's p column against its interval widths, and for a row mean reported as biased.
P_COLUMN_TOLERANCE = Decimal("1e-6")
_P_TOLERANCE_UNITS = int(P_COLUMN_TOLERANCE * INTERVAL_SCALE)
MEAN_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Entry:
    """One interval of row i as read from a file (line = line number, for messages)."""

    i: int
    v: int
    ub: Decimal
    line: int
    lb: Decimal | None = None  # None: the previous entry's upper bound (cumulative formats)
    p: Decimal | None = None


def assemble(entries: list[Entry], source: str) -> tuple[PTable, list[str]]:
    """Validate entries and build the PTable; returns it with notes about what was changed."""
    if not entries:
        raise SdcError(f"{source}: the file has no ptable rows")
    notes: list[str] = []
    rows: dict[int, list[Entry]] = {}
    for entry in entries:
        if entry.i < 0:
            raise SdcError(f"{source}, line {entry.line}: row i={entry.i} is negative")
        rows.setdefault(entry.i, []).append(entry)
    max_i = max(rows)
    present = sorted(i for i in rows if i > 0)
    if len(present) < max_i:  # counted, never listed: a file with i = 10^9 must fail at once
        first = next((n for n, i in enumerate(present, start=1) if i != n), len(present) + 1)
        raise SdcError(
            f"{source}: row i={first} is missing; rows must run 1..{max_i} without gaps "
            f"(the last row stands for every larger value); {max_i - len(present)} rows are missing"
        )
    i_col, j_col, lb_col, ub_col = [], [], [], []
    rounded_by = Decimal(0)
    dropped = 0
    for i in sorted(rows):
        intervals = _check_row(i, rows[i], source)
        for v, lb, ub in intervals:
            lb_units, lb_change = _to_units(lb)
            ub_units, ub_change = _to_units(ub)
            rounded_by = max(rounded_by, lb_change, ub_change)
            if ub_units == lb_units:
                dropped += 1
                continue
            i_col.append(i)
            j_col.append(i + v)
            lb_col.append(lb_units)
            ub_col.append(ub_units)
    if 0 not in rows:
        i_col, j_col, lb_col, ub_col = [0] + i_col, [0] + j_col, [0] + lb_col, [INTERVAL_SCALE] + ub_col
        notes.append("row i=0 added: zero cells stay zero")
    if rounded_by > 0:
        notes.append(f"interval bounds rounded to {INTERVAL_DECIMALS} decimals (largest change {rounded_by:.1E})")
    if dropped:
        notes.append(f"{dropped} empty interval(s) (p = 0) dropped")
    return _with_mean_notes(PTable(np.array(i_col), np.array(j_col), np.array(lb_col), np.array(ub_col)), notes)


def assemble_arrays(i: np.ndarray, v: np.ndarray, ub_units: np.ndarray, lb_units: np.ndarray | None = None,
                    p_units: np.ndarray | None = None, mean_notes: bool = True) -> tuple[PTable, list[str]] | None:
    """``assemble`` with numpy, for a file read by numpy (formats.py): one entry per line, in the file's order,
    bounds and p as whole 10^-8 units (no rounding needed), lower bounds None for the cumulative formats.
    The table and notes ``assemble`` gives where it accepts the entries; None where it would refuse them:
    the caller then reads the file line by line, which names the problem. ``mean_notes`` False: no notes on
    biased rows (a table checked again, whose notes were given when it was read)."""
    order = np.argsort(i, kind="stable")  # assemble's order: by row, each row's entries as in the file
    i, v, ub_units = i[order], v[order], ub_units[order]
    starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]])
    rows = i[starts]
    if rows[0] < 0 or len(rows[rows > 0]) != rows[-1]:  # a negative row, or a row missing from 1..max i
        return None
    previous = np.r_[0, ub_units[:-1]]
    previous[starts] = 0  # each row starts at 0, each next interval where the one before ends
    if lb_units is not None and (lb_units[order] != previous).any():
        return None
    width = ub_units - previous
    wide = width > 0
    ends = np.r_[starts[1:], len(i)] - 1
    if (width < 0).any() or (ub_units[ends] != INTERVAL_SCALE).any() or (wide & ((i + v < 0) | ((i == 0) & (v != 0)))).any():
        return None
    if p_units is not None:
        p_units = p_units[order]
        if (p_units < 0).any() or (np.abs(p_units - width) > _P_TOLERANCE_UNITS).any() \
                or (np.abs(np.add.reduceat(p_units, starts) - INTERVAL_SCALE) > _P_TOLERANCE_UNITS).any():
            return None
    notes: list[str] = []
    i, v, lb_units, ub_units = i[wide], v[wide], previous[wide], ub_units[wide]
    if rows[0] != 0:
        i, v, lb_units, ub_units = np.r_[0, i], np.r_[0, v], np.r_[0, lb_units], np.r_[INTERVAL_SCALE, ub_units]
        notes.append("row i=0 added: zero cells stay zero")
    if not wide.all():
        notes.append(f"{len(wide) - int(wide.sum())} empty interval(s) (p = 0) dropped")
    table = PTable(i, i + v, lb_units, ub_units)
    return _with_mean_notes(table, notes) if mean_notes else (table, notes)


def _with_mean_notes(table: PTable, notes: list[str]) -> tuple[PTable, list[str]]:
    notes += [f"row i={stats.i}: mean noise {stats.mean:+.6f} (not unbiased)" for stats in table.row_stats()
              if abs(stats.mean) > MEAN_TOLERANCE]
    return table, notes


def _check_row(i: int, entries: list[Entry], source: str) -> list[tuple[int, Decimal, Decimal]]:
    """The row's intervals (v, lb, ub) in file order, after every check of the module docstring."""
    intervals = []
    previous = Decimal(0)
    p_sum = Decimal(0)
    has_p = all(e.p is not None for e in entries)
    for entry in entries:
        where = f"{source}, line {entry.line}, row i={i}"
        lb = previous if entry.lb is None else entry.lb
        if entry.lb is not None and entry.lb != previous:
            kind = "gap" if entry.lb > previous else "overlap"
            raise SdcError(
                f"{where}: {kind} in the intervals: lower bound {entry.lb} but the previous interval ends at {previous}"
            )
        if entry.ub < lb:
            raise SdcError(
                f"{where}: upper bound {entry.ub} is below the lower bound {lb} (negative probability, v={entry.v:+d})"
            )
        width = entry.ub - lb
        if entry.p is not None:
            if entry.p < 0:
                raise SdcError(f"{where}: p = {entry.p} is negative")
            if abs(entry.p - width) > P_COLUMN_TOLERANCE:
                raise SdcError(f"{where}: p = {entry.p} disagrees with its interval [{lb}, {entry.ub}) of width {width}")
            p_sum += entry.p
        if width > 0 and i + entry.v < 0:
            raise SdcError(f"{where}: noise v={entry.v:+d} would publish {i + entry.v}, below 0")
        if i == 0 and width > 0 and entry.v != 0:
            raise SdcError(f"{where}: zero cells must stay zero, but row 0 has noise v={entry.v:+d}")
        intervals.append((entry.v, lb, entry.ub))
        previous = entry.ub
    if intervals[0][1] != 0:
        raise SdcError(f"{source}, row i={i}: the first interval starts at {intervals[0][1]}, not at 0")
    if previous != 1:
        raise SdcError(
            f"{source}, row i={i}: the intervals end at {previous}, not at 1 (probabilities sum to {previous})"
        )
    if has_p and abs(p_sum - 1) > P_COLUMN_TOLERANCE:
        raise SdcError(f"{source}, row i={i}: the p column sums to {p_sum}, not 1")
    return intervals


def _to_units(bound: Decimal) -> tuple[int, Decimal]:
    """A bound in 10^-8 units (rounded half-even) and how much the rounding moved it."""
    scaled = (bound * INTERVAL_SCALE).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
    return int(scaled), abs(scaled / INTERVAL_SCALE - bound)
