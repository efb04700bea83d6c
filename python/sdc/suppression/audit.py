"""The LP audit of a suppression pattern (reference suppression.md §2.7): what can an attacker who
knows every published cell and the table's additivity learn about each suppressed cell?

For every suppressed cell k, with published cells fixed at their values, all relations
``sum_j coefficient_j * y_j = 0`` holding, and a-priori bounds ``lower_i <= y_i <= upper_i`` on the
suppressed cells (0 and no upper bound for non-negative tables; at least 1 for a non-empty cell of a
frequency table), solve ``min y_k`` and ``max y_k`` (HiGHS). A sensitive cell is protected when its
feasible interval reaches ``value - protection_lower`` below and ``value + protection_upper`` above,
each clipped to the cell's a-priori bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix

from ..errors import SdcError

# Slack for comparing LP optima with required bounds (the LP works in floating point).
AUDIT_TOLERANCE = 1e-6


def default_upper(values) -> np.ndarray:
    """sdcTable's default a-priori upper bound of every cell: 1.5 x the largest value."""
    values = np.asarray(values, dtype=float)
    return np.full(len(values), 1.5 * np.abs(values).max() if len(values) else 0.0)


def forced_mask(n: int, primary, forced_publish) -> np.ndarray:
    """Cells that must be published; a primary among them is an error naming the cell."""
    forced = np.zeros(n, bool) if forced_publish is None else np.asarray(forced_publish, dtype=bool)
    clash = np.flatnonzero(np.asarray(primary, dtype=bool) & forced)
    if clash.size:
        raise SdcError(f"cell {int(clash[0])} is primary and forced to be published")
    return forced


@dataclass(frozen=True)
class CellInterval:
    cell: int  # index into the input arrays
    value: float
    feasible_lower: float
    feasible_upper: float  # inf when unbounded
    required_lower: float  # value - protection_lower (sensitive cells), else value
    required_upper: float
    sensitive: bool

    @property
    def protected(self) -> bool:
        return (
            self.feasible_lower <= self.required_lower + AUDIT_TOLERANCE
            and self.feasible_upper >= self.required_upper - AUDIT_TOLERANCE
        )

    @property
    def exactly_disclosed(self) -> bool:
        return self.feasible_upper - self.feasible_lower <= AUDIT_TOLERANCE


@dataclass(frozen=True)
class AuditResult:
    intervals: list[CellInterval]

    @property
    def failures(self) -> list[CellInterval]:
        """Sensitive cells whose feasible interval does not cover their protection interval."""
        return [c for c in self.intervals if c.sensitive and not c.protected]

    @property
    def passed(self) -> bool:
        return not self.failures


def audit_pattern(
    values,
    suppressed,
    constraints: list[list[tuple[int, float]]],
    *,
    sensitive=None,
    protection_lower=None,
    protection_upper=None,
    lower=None,
    upper=None,
    only=None,
) -> AuditResult:
    """Feasible interval of every suppressed cell (or of the suppressed cells listed in ``only``).

    values            true cell values (length n)
    suppressed        bool per cell
    constraints       each relation as [(cell index, coefficient), ...] with sum(coef * value) = 0
    sensitive         bool per cell (default: none); protection_lower/upper per cell (default 0)
    lower, upper      a-priori bounds of each cell (default 0 and +inf)
    """
    values = np.asarray(values, dtype=float)
    n = len(values)
    suppressed = np.asarray(suppressed, dtype=bool)
    sensitive = np.zeros(n, bool) if sensitive is None else np.asarray(sensitive, dtype=bool)
    lpl = np.zeros(n) if protection_lower is None else np.asarray(protection_lower, dtype=float)
    upl = np.zeros(n) if protection_upper is None else np.asarray(protection_upper, dtype=float)
    lower = np.zeros(n) if lower is None else np.asarray(lower, dtype=float)
    upper = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=float)
    for name, array in (("suppressed", suppressed), ("sensitive", sensitive), ("protection_lower", lpl),
                        ("protection_upper", upl), ("lower", lower), ("upper", upper)):
        if len(array) != n:
            raise SdcError(f"audit: {name} has {len(array)} entries for {n} cells")
    unsuppressed_sensitive = np.flatnonzero(sensitive & ~suppressed)
    if unsuppressed_sensitive.size:
        raise SdcError(f"audit: sensitive cell {int(unsuppressed_sensitive[0])} is published, not suppressed")
    matrix = _relation_matrix(constraints, n)
    residual = matrix @ values
    broken = np.flatnonzero(np.abs(residual) > AUDIT_TOLERANCE * max(1.0, np.abs(values).max()))
    if broken.size:
        raise SdcError(
            f"audit: the cell values break relation {int(broken[0])} (parent differs from the sum of its "
            f"children by {residual[broken[0]]:g}); the table is not additive"
        )
    hidden = np.flatnonzero(suppressed)
    if hidden.size == 0:
        return AuditResult([])
    shown = np.flatnonzero(~suppressed)
    # published cells move to the right-hand side: M_S y_S = -M_P a_P
    a_eq = matrix[:, hidden]
    b_eq = -(matrix[:, shown] @ values[shown])
    bounds = list(zip(lower[hidden], [None if np.isinf(u) else u for u in upper[hidden]]))
    intervals = []
    wanted = None if only is None else set(int(c) for c in only)
    for position, cell in enumerate(hidden):
        if wanted is not None and int(cell) not in wanted:
            continue
        objective = np.zeros(len(hidden))
        found = []
        for sign in (1.0, -1.0):
            objective[position] = sign
            lp = linprog(objective, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
            if lp.status == 3:  # unbounded
                found.append(-np.inf if sign > 0 else np.inf)
            elif lp.status != 0:
                raise SdcError(f"audit: the LP for cell {int(cell)} failed ({lp.message}); are the bounds consistent?")
            else:
                found.append(float(lp.x[position]))
        low, high = found
        # the protection interval, clipped to the a-priori bounds: what an attacker knows beforehand
        # (e.g. that a non-empty count is at least 1) cannot be protected
        required_lower = max(values[cell] - (lpl[cell] if sensitive[cell] else 0.0), min(lower[cell], values[cell]))
        required_upper = min(values[cell] + (upl[cell] if sensitive[cell] else 0.0), max(upper[cell], values[cell]))
        intervals.append(CellInterval(int(cell), float(values[cell]), low, high, required_lower, required_upper, bool(sensitive[cell])))
    return AuditResult(intervals)


def _relation_matrix(constraints, n):
    rows, cols, data = [], [], []
    for r, relation in enumerate(constraints):
        for cell, coefficient in relation:
            if not 0 <= cell < n:
                raise SdcError(f"audit: relation {r} names cell {cell}, but there are {n} cells")
            rows.append(r)
            cols.append(cell)
            data.append(coefficient)
    return csr_matrix((data, (rows, cols)), shape=(len(constraints), n)).toarray()
