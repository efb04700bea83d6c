"""The perturbation table as data: rows (i, j, v) with exact interval bounds, lookup and row statistics."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..conventions import INTERVAL_DECIMALS, INTERVAL_SCALE
from ..errors import SdcError


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
    lower bound and partition [0, 1).
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

    @property
    def v(self) -> np.ndarray:
        return self.j - self.i

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
        stats = []
        p, v = self.p, self.v
        for row in self.row_values():
            mask = self.i == row
            pr, vr = p[mask], v[mask]
            stats.append(
                RowStats(
                    i=row,
                    mean=float(pr @ vr),
                    variance=float(pr @ vr.astype(float) ** 2),
                    p_stay=float(pr[vr == 0].sum()),
                    p_sum=float(pr.sum()),
                )
            )
        return stats

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


def ptable_row(n: int, max_i: int, reuse_from: int | None = None) -> int:
    """Row of the table for original value n > 0 (the SQL macro ckm_ptable_row computes the same)."""
    if n <= max_i or reuse_from is None:
        return min(n, max_i)
    return reuse_from + (n - reuse_from) % (max_i - reuse_from + 1)


def format_units(units: int) -> str:
    """10^-8 units as a fixed-point decimal string, e.g. 36250000 -> '0.36250000'."""
    whole, frac = divmod(units, INTERVAL_SCALE)
    return f"{whole}.{frac:0{INTERVAL_DECIMALS}d}"
