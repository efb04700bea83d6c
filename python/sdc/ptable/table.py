"""The perturbation table as data: rows (i, j, v) with exact interval bounds, lookup and row statistics."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from sdc.conventions import INTERVAL_DECIMALS, INTERVAL_SCALE
from sdc.errors import SdcError


@dataclass(frozen=True)
class RowStats:
    """Check figures of one row, like ptable's ``empResults``."""

    i: int
    mean: float
    variance: float
    p_stay: float
    p_sum: float


@dataclass(frozen=True)
class PTable:
    """A count perturbation table.

    Bounds are held as integers in units of 10^-8 (``lb_units``, ``ub_units``), so a file written and
    read again is identical and interval checks are exact. Entries of one ``i`` are ordered by their
    lower bound and partition [0, 1). The arrays are read-only copies: a table never changes once made,
    so what is derived from it once (``columns``) stays true.

    Row i holds the noise v = j - i of an original count i; a cell with count n and cell key ck in [0, 1) gets
    the v of the interval [lb, ub) of row min(n, max i) that holds ck (``lookup``). Tables come from
    ``create_ptable`` or a file (``read_ptable``); by hand, a row 1 that moves to 0 or 2 with probability 1/2:

    >>> import numpy as np
    >>> from sdc.ptable import PTable
    >>> table = PTable(i=np.array([0, 1, 1]), j=np.array([0, 0, 2]), lb_units=np.array([0, 0, 50_000_000]),
    ...                ub_units=np.array([100_000_000, 50_000_000, 100_000_000]))
    >>> table.max_i, len(table), table.lookup(1, 0.3), table.lookup(1, 0.7), table.lookup(7, 0.7)
    (1, 3, -1, 1, 1)
    >>> table.records()[1]
    {'i': 1, 'j': 0, 'p': '0.50000000', 'v': -1, 'p_int_lb': '0.00000000', 'p_int_ub': '0.50000000'}
    >>> [(s.i, s.mean, s.variance) for s in table.row_stats()]
    [(0, 0.0, 0.0), (1, 0.0, 1.0)]
    """

    i: np.ndarray
    j: np.ndarray
    lb_units: np.ndarray
    ub_units: np.ndarray
    # None: every count above max i uses row max i. Else counts above max i cycle through the rows
    # reuse_from..max i (ONS: reuse_from = 501, max i = 750, row = ((n - 1) mod 250) + 501).
    reuse_from: int | None = None
    # The record-key modulus K an integer-key table (ONS, Cantabular: cell keys 0..K-1) was made for; None
    # for tables of intervals, which serve any modulus.
    key_modulus: int | None = None

    def __post_init__(self):
        read_only_copies(self, ("i", "j", "lb_units", "ub_units"))

    @property
    def v(self) -> np.ndarray:
        return self.j - self.i

    @cached_property
    def columns(self) -> dict[str, np.ndarray]:
        """The columns of conventions.PTABLE_COLUMNS as whole numbers, p and the bounds in 10^-8 units (the
        exact decimals of the relation, sdc.ptable.relation): computed once per table."""
        return {"i": self.i, "j": self.j, "p": self.ub_units - self.lb_units, "v": self.v,
                "p_int_lb": self.lb_units, "p_int_ub": self.ub_units}

    @property
    def p(self) -> np.ndarray:
        """Probabilities re-derived from the rounded bounds (as ptable does)."""
        return (self.ub_units - self.lb_units) / INTERVAL_SCALE

    @property
    def p_int_lb(self) -> np.ndarray:
        return self.lb_units / INTERVAL_SCALE

    @property
    def p_int_ub(self) -> np.ndarray:
        return self.ub_units / INTERVAL_SCALE

    @property
    def max_i(self) -> int:
        return int(self.i.max())

    def __len__(self) -> int:
        return len(self.i)

    def row_values(self) -> list[int]:
        return sorted(set(int(x) for x in self.i))

    def lookup(self, n: int, cell_key: float) -> int:
        """Noise for a cell with original value n and cell key in [0, 1): row min(n, max i), lb <= ck < ub."""
        if n == 0:
            return 0
        if not 0 <= cell_key < 1:
            raise SdcError(f"cell key must be in [0, 1), got {cell_key!r}")
        row = ptable_row(n, self.max_i, self.reuse_from)
        key_units = Fraction(str(cell_key)) * INTERVAL_SCALE  # exact: the decimal the user wrote
        for i, lb, ub, v in zip(self.i, self.lb_units, self.ub_units, self.v):
            if i == row and lb <= key_units < ub:
                return int(v)
        raise SdcError(f"no interval of row i={row} contains the cell key {cell_key}")

    def row_stats(self) -> list[RowStats]:
        """One RowStats per row, in order of i: sums per row at once (ONS's tables have 750 rows)."""
        order = np.argsort(self.i, kind="stable")
        i, p, v = self.i[order], self.p[order], self.v[order].astype(float)
        starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]])
        sums = [np.add.reduceat(x, starts) for x in (p * v, p * v**2, np.where(v == 0, p, 0.0), p)]
        return [RowStats(i=int(row), mean=float(mean), variance=float(variance), p_stay=float(stay), p_sum=float(total))
                for row, mean, variance, stay, total in zip(i[starts], *sums)]

    def transition_matrix(self) -> tuple[list[int], list[int], np.ndarray]:
        """(rows i, columns j, P[i, j]) with P summed over split intervals of the same (i, j)."""
        rows = self.row_values()
        cols = sorted(set(int(x) for x in self.j))
        matrix = np.zeros((len(rows), len(cols)))
        row_index = {r: k for k, r in enumerate(rows)}
        col_index = {c: k for k, c in enumerate(cols)}
        for r, c, prob in zip(self.i, self.j, self.p):
            matrix[row_index[int(r)], col_index[int(c)]] += prob
        return rows, cols, matrix

    def records(self) -> list[dict]:
        """Rows as dicts with the columns of conventions.PTABLE_COLUMNS, bounds as exact decimal strings."""
        out = []
        for i, j, lb, ub in zip(self.i, self.j, self.lb_units, self.ub_units):
            out.append(
                {
                    "i": int(i),
                    "j": int(j),
                    "p": format_units(int(ub - lb)),
                    "v": int(j - i),
                    "p_int_lb": format_units(int(lb)),
                    "p_int_ub": format_units(int(ub)),
                }
            )
        return out


def read_only_copies(table, names: tuple[str, ...]) -> None:
    """Make the arrays ``names`` of a frozen table read-only whole-number copies of what it was given."""
    for name in names:
        values = np.array(getattr(table, name), dtype=np.int64)
        values.flags.writeable = False
        object.__setattr__(table, name, values)


def ptable_row(n: int, max_i: int, reuse_from: int | None = None) -> int:
    """Row of the table for original value n > 0 (the SQL macro ckm_ptable_row computes the same)."""
    if n <= max_i or reuse_from is None:
        return min(n, max_i)
    return reuse_from + (n - reuse_from) % (max_i - reuse_from + 1)


def format_units(units: int) -> str:
    """10^-8 units as a fixed-point decimal string, e.g. 36250000 -> '0.36250000'."""
    whole, frac = divmod(units, INTERVAL_SCALE)
    return f"{whole}.{frac:0{INTERVAL_DECIMALS}d}"
