"""The LP audit of a suppression pattern (reference suppression.md §2.7): what can an attacker who
knows every published cell and the table's additivity learn about each suppressed cell?

For every suppressed cell k, with published cells fixed at their values, all relations
``sum_j coefficient_j * y_j = 0`` holding, and a-priori bounds ``lower_i <= y_i <= upper_i`` on the
suppressed cells (0 and no upper bound for non-negative tables; at least 1 for a non-empty cell of a
frequency table), solve ``min y_k`` and ``max y_k`` (HiGHS). A sensitive cell is protected when its
feasible interval reaches ``value - protection_lower`` below and ``value + protection_upper`` above,
each clipped to the cell's a-priori interval: its own bounds, what they imply through the relations by
interval propagation (implied_bounds: a total of two non-empty counts is at least 2), and, where even those
cannot be reached with every cell suppressed, the exact interval by LP (AuditTable.clip_to_a_priori).

Large tables: suppressed cells only interact through relations that hold two or more of them, so the
LP splits into the connected groups of suppressed cells ("components"), each solved as one persistent
HiGHS model whose re-solves (one objective per cell and direction) start from the previous basis.
For a pass/fail check (``unprotected_cells``) every LP solution is also a feasible table: a cell whose
value in any solution found so far already reaches its required bound needs no LP of its own; in a group of
more than PUSH_CELLS suppressed cells a few LPs first push all open sides towards their bounds at once
(_push_towards_bounds), so that most cells settle without an LP of their own. The verdict is the same.

Integer tables (counts, magnitudes whose cells are whole numbers): an attacker who knows the cells are
integers does better than the LP; in three dimensions a pattern can leave a cell of value 2 the LP
interval [1, 4] while its only integer values are 2 and 4. ``integer=True`` adds, for every sensitive cell
the LP finds protected, a MILP check (HiGHS) of each end of its requirement: is there an integer table,
within the bounds and relations, with the cell <= required_lower, and one with it >= required_upper?
A group of more than INTEGER_CHECK_CELLS suppressed cells, a MILP that does not finish within
INTEGER_CHECK_SECONDS, or cells left when the audit's MILPs have taken INTEGER_CHECK_BUDGET, are not checked: the cell's ``integer_skipped`` says why, and the report says so
(a warning, not a pass: see pipeline.audit_cells_file).

Decimal values (amounts in cents): their float sums miss the exact decimal sums by noise, so a total differs
from the sum of its children by 1e-8, and where the suppressed cells close a cycle (two rows and two
columns) the attacker's equations contradict each other: the LP is infeasible. The LPs therefore work in
units of the values' decimals (decimal_units), where the values are whole numbers and the relations hold
exactly; their results are converted back.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, replace

import highspy
import numpy as np
from scipy.sparse import bmat, csc_matrix, csr_matrix, issparse
from scipy.sparse.csgraph import connected_components

from sdc.errors import SdcError

# Slack for comparing LP optima with required bounds (the LP works in floating point).
AUDIT_TOLERANCE = 1e-6
# HiGHS simplex_strategy values
SIMPLEX_DUAL, SIMPLEX_PRIMAL = 1, 4
# The exact integer check: groups of suppressed cells up to this size, and each MILP up to this time
# (bench/integer_audit_bench.py measures them; docs/concepts/suppression.md, "Integer audit").
INTEGER_CHECK_CELLS = 2_000
INTEGER_CHECK_SECONDS = 10.0
INTEGER_CHECK_BUDGET = 120.0  # seconds for all MILPs of one audit
# Sweeps of interval propagation through the relations (implied_bounds): a hierarchy of depth h in d
# dimensions settles in about h * d; more only where cycles of relations tighten bounds by ever smaller steps.
IMPLIED_BOUND_SWEEPS = 30
# integer programs whose answers are kept (MilpMemo): a method's last integer check and the verdict that follows
# it solve the same ones
MILP_MEMO_MODELS = 64
# Decimals looked for in the values (money has 2; sdc suppress writes at most 6)
MAX_DECIMALS = 6
# How far float sums of decimals may lie from their exact sums, relative to the largest value: far above the
# noise of summing 10^8 doubles, far below a cent of amounts up to 10^9
FLOAT_NOISE = 1e-12
# whole numbers up to this, and their sums, are exact in float64
EXACT_INTEGERS = 2.0 ** 53
# Groups of more than PUSH_CELLS suppressed cells are first pushed towards their bounds all at once
# (_push_towards_bounds), in up to PUSH_ROUNDS LPs, until one settles less than PUSH_SETTLED of the open sides
PUSH_CELLS = 500
PUSH_ROUNDS = 12
PUSH_SETTLED = 0.05


def default_upper(values) -> np.ndarray:
    """sdcTable's default a-priori upper bound of every cell: 1.5 x the largest value."""
    values = np.asarray(values, dtype=float)
    return np.full(len(values), 1.5 * np.abs(values).max() if len(values) else 0.0)


def a_priori_lower(values, freq, *, magnitude: bool) -> np.ndarray:
    """The a-priori lower bound of every cell, as the attacker of the audit assumes it: in a frequency
    table 1 for a non-empty cell, else 0; in a magnitude table 0, or, where a cell of the table is
    negative (a variable such as profit), -1.5 x the largest absolute value for every cell, the mirror of
    default_upper: the true table must lie within the bounds, and no sign is known beforehand."""
    values = np.asarray(values, dtype=float)
    freq = np.asarray(freq, dtype=float)
    if not magnitude:
        return np.where(freq > 0, 1.0, 0.0)
    if values.size and values.min() < 0:
        return -default_upper(values)
    return np.zeros(len(values))


def decimal_units(values, matrix, max_decimals: int = MAX_DECIMALS):
    """Each (scale, values * scale rounded to whole numbers), for d = 0, 1, ... max_decimals decimals with
    scale = 10^d, where every value lies within float noise of a multiple of 10^-d and every relation's sum
    of those whole numbers is exact in float64 (no partial sum beyond 2^53)."""
    values = np.asarray(values, dtype=float)
    noise = FLOAT_NOISE * max(1.0, float(np.abs(values).max(initial=0.0)))
    weight = abs(matrix)
    for decimals in range(max_decimals + 1):
        scale = 10.0 ** decimals
        units = np.round(values * scale)
        if max(np.abs(units).max(initial=0.0), (weight @ np.abs(units)).max(initial=0.0)) >= EXACT_INTEGERS:
            return
        if np.abs(values * scale - units).max(initial=0.0) <= noise * scale:
            yield scale, units


def exact_units(values, matrix, max_decimals: int = MAX_DECIMALS) -> tuple[float, np.ndarray]:
    """(scale, whole numbers) of decimal_units with the fewest decimals whose relations hold exactly (the exact
    decimal table the float sums stand for), or (1.0, values) where there is none (values with more
    decimals: the LPs then see the float values as they are)."""
    return next(((scale, units) for scale, units in decimal_units(values, matrix, max_decimals)
                 if not np.any(matrix @ units)), (1.0, np.asarray(values, dtype=float)))


def forced_mask(n: int, primary, forced_publish) -> np.ndarray:
    """Cells that must be published; a primary among them is an error naming the cell."""
    forced = np.zeros(n, bool) if forced_publish is None else np.asarray(forced_publish, dtype=bool)
    clash = np.flatnonzero(np.asarray(primary, dtype=bool) & forced)
    if clash.size:
        raise SdcError(f"cell {int(clash[0])} is primary and forced to be published")
    return forced


@dataclass(frozen=True)
class CellInterval:
    """What the audit finds for one suppressed cell: the interval an attacker can derive (feasible_lower/
    upper) and the interval it needs (required_lower/upper, sensitive cells only).

    >>> from sdc.suppression import audit_pattern
    >>> relations = [[(0, 1), (1, -1), (2, -1), (3, -1)]]          # 12 = 2 + 4 + 6
    >>> alone = audit_pattern([12, 2, 4, 6], [False, True, False, False], relations,
    ...                       sensitive=[False, True, False, False], protection_lower=[0, 1, 0, 0],
    ...                       protection_upper=[0, 1, 0, 0])
    >>> cell = alone.intervals[0]
    >>> cell.cell, (cell.feasible_lower, cell.feasible_upper), cell.exactly_disclosed, cell.protected
    (1, (2.0, 2.0), True, False)
    """

    cell: int  # index into the input arrays
    value: float
    feasible_lower: float
    feasible_upper: float  # inf when unbounded
    required_lower: float  # value - protection_lower (sensitive cells), else value
    required_upper: float
    sensitive: bool
    # integer check (integer tables, sensitive cells the LP protects): the least / greatest integer value
    # the cell can take where that misses the requirement, else a value found that reaches it; None when
    # not checked. integer_skipped: why the check was not done (too large, time limit)
    integer_lower: float | None = None
    integer_upper: float | None = None
    integer_skipped: str | None = None

    @property
    def lp_protected(self) -> bool:
        return (
            self.feasible_lower <= self.required_lower + AUDIT_TOLERANCE
            and self.feasible_upper >= self.required_upper - AUDIT_TOLERANCE
        )

    @property
    def integer_failed(self) -> bool:
        return ((self.integer_lower is not None and self.integer_lower > self.required_lower + AUDIT_TOLERANCE)
                or (self.integer_upper is not None and self.integer_upper < self.required_upper - AUDIT_TOLERANCE))

    @property
    def protected(self) -> bool:
        return self.lp_protected and not self.integer_failed

    @property
    def exactly_disclosed(self) -> bool:
        return self.feasible_upper - self.feasible_lower <= AUDIT_TOLERANCE


@dataclass(frozen=True)
class AuditResult:
    """The audit of a pattern: one CellInterval per suppressed cell, by cell index.

    >>> from sdc.suppression import audit_pattern
    >>> relations = [[(0, 1), (1, -1), (2, -1), (3, -1)]]          # 12 = 2 + 4 + 6
    >>> protection = dict(sensitive=[False, True, False, False], protection_lower=[0, 1, 0, 0],
    ...                   protection_upper=[0, 1, 0, 0])
    >>> alone = audit_pattern([12, 2, 4, 6], [False, True, False, False], relations, **protection)
    >>> alone.passed, [iv.cell for iv in alone.failures]
    (False, [1])
    >>> audit_pattern([12, 2, 4, 6], [False, True, True, False], relations, **protection).passed
    True
    """

    intervals: list[CellInterval]

    @property
    def failures(self) -> list[CellInterval]:
        """Sensitive cells whose feasible interval does not cover their protection interval."""
        return [c for c in self.intervals if c.sensitive and not c.protected]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def unchecked(self) -> list[CellInterval]:
        """Sensitive cells the LP protects whose integer check was skipped (too large, time limit)."""
        return [c for c in self.intervals if c.sensitive and c.protected and c.integer_skipped]


class AuditTable:
    """A table prepared for repeated audits: values, relations as a sparse matrix, a-priori bounds,
    and the protection interval each sensitive cell needs."""

    def __init__(self, values, constraints, *, sensitive=None, protection_lower=None, protection_upper=None,
                 lower=None, upper=None, integer: bool = False):
        values = np.asarray(values, dtype=float)
        n = len(values)
        self.values = values
        self.integer = integer
        if integer and np.any(np.abs(values - np.round(values)) > AUDIT_TOLERANCE):
            raise SdcError("audit: integer=True, but a cell value is not a whole number")
        self.sensitive = np.zeros(n, bool) if sensitive is None else np.asarray(sensitive, dtype=bool)
        lpl = np.zeros(n) if protection_lower is None else np.asarray(protection_lower, dtype=float)
        upl = np.zeros(n) if protection_upper is None else np.asarray(protection_upper, dtype=float)
        self.lower = np.zeros(n) if lower is None else np.asarray(lower, dtype=float)
        self.upper = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=float)
        for name, array in (("sensitive", self.sensitive), ("protection_lower", lpl), ("protection_upper", upl),
                            ("lower", self.lower), ("upper", self.upper)):
            if len(array) != n:
                raise SdcError(f"audit: {name} has {len(array)} entries for {n} cells")
        self.matrix = relation_matrix(constraints, n)
        residual = self.matrix @ values
        broken = np.flatnonzero(np.abs(residual) > AUDIT_TOLERANCE * max(1.0, np.abs(values).max(initial=0.0)))
        if broken.size:
            raise SdcError(
                f"audit: the cell values break relation {int(broken[0])} (parent differs from the sum of its "
                f"children by {residual[broken[0]]:g}); the table is not additive"
            )
        self.matrix_csc = self.matrix.tocsc()
        # the LPs' units (see the module docstring); an integer table keeps its own, where integrality holds
        self.scale, self.units = exact_units(values, self.matrix, 0 if integer else MAX_DECIMALS)
        # the protection interval, clipped to the a-priori bounds: what an attacker knows beforehand (that a
        # non-empty count is at least 1, and so a total of two non-empty counts at least 2) cannot be protected
        low, high = implied_bounds(self.matrix, self.lower, self.upper, integer=integer)
        self.required_lower = np.maximum(values - np.where(self.sensitive, lpl, 0.0), np.minimum(low, values))
        self.required_upper = np.minimum(values + np.where(self.sensitive, upl, 0.0), np.maximum(high, values))
        self._a_priori_lp = None
        self._clipped: set[int] = set()

    def check_pattern(self, suppressed) -> np.ndarray:
        suppressed = np.asarray(suppressed, dtype=bool)
        if len(suppressed) != len(self.values):
            raise SdcError(f"audit: suppressed has {len(suppressed)} entries for {len(self.values)} cells")
        exposed = np.flatnonzero(self.sensitive & ~suppressed)
        if exposed.size:
            raise SdcError(f"audit: sensitive cell {int(exposed[0])} is published, not suppressed")
        return suppressed

    def bound_reached(self, cell: int, sign: float, value: float) -> bool:
        """Whether ``value``, the least (sign +1) or greatest (sign -1) value an attacker finds for
        ``cell``, reaches the end of its required interval on that side."""
        required = self.required_lower[cell] if sign > 0 else self.required_upper[cell]
        return sign * (value - required) <= AUDIT_TOLERANCE

    def components(self, suppressed) -> list[np.ndarray]:
        """The suppressed cells in groups that share relations (cell indices, ascending)."""
        return suppressed_groups(self.matrix_csc, suppressed)

    def component_lp(self, cells: np.ndarray, suppressed) -> "ComponentLP":
        return ComponentLP(self, cells, suppressed)

    def clip_to_a_priori(self, cell: int) -> bool:
        """Narrow the protection interval of ``cell`` to its a-priori interval: what the bounds and the
        relations alone imply, with every cell suppressed (e.g. a total of two non-empty count cells is at
        least 2). No pattern can protect beyond that. Returns True when the interval changed."""
        cell = int(cell)
        if cell in self._clipped:
            return False
        self._clipped.add(cell)
        if self._a_priori_lp is None:
            everything = np.ones(len(self.values), bool)
            self._a_priori_lp = ComponentLP(self, np.arange(len(self.values)), everything)
            # every solution of this LP is a table the bounds and relations allow: a side that one of them
            # already takes the cell past needs no LP (an LP over the whole table: 1.6 s each at 10^4 cells)
            self._a_priori_seen = self._scaled_tables()
        before = (self.required_lower[cell], self.required_upper[cell])
        for sign in (1.0, -1.0):
            seen = self._a_priori_seen[0 if sign > 0 else 1]
            if self.bound_reached(cell, sign, seen[cell]):
                continue  # the a-priori interval reaches past the requirement on this side: nothing to clip
            required = self.required_lower[cell] if sign > 0 else self.required_upper[cell]
            if self.integer:  # whole-number cells reach the whole number at or beyond the requirement, or nothing
                required = np.floor(required + AUDIT_TOLERANCE) if sign > 0 else np.ceil(required - AUDIT_TOLERANCE)
            point = self._a_priori_lp.beyond(cell, sign, required)  # the a-priori LP's positions are the cells
            if point is not None:  # a table reaches the requirement: nothing to clip
                self._remember(point)
                continue
            end, point = self._a_priori_lp.extreme(cell, sign)  # none does: how far the cell goes, exactly
            if point is not None:
                self._remember(point)
            if sign > 0:  # an integer cell's a-priori interval has integer ends
                end = np.ceil(end - AUDIT_TOLERANCE) if self.integer else end
                self.required_lower[cell] = max(self.required_lower[cell], min(end, self.values[cell]))
            else:
                end = np.floor(end + AUDIT_TOLERANCE) if self.integer else end
                self.required_upper[cell] = min(self.required_upper[cell], max(end, self.values[cell]))
        return (self.required_lower[cell], self.required_upper[cell]) != before


    def _remember(self, point: np.ndarray) -> None:
        """Widen each cell's least and greatest value seen in a-priori tables by one more such table."""
        np.minimum(self._a_priori_seen[0], point, out=self._a_priori_seen[0])
        np.maximum(self._a_priori_seen[1], point, out=self._a_priori_seen[1])

    def _scaled_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The least and greatest value of each cell in tables the bounds and relations allow without an LP:
        the table itself, and the table scaled by the least and the greatest factor its bounds allow (the
        relations are homogeneous, so a scaled table keeps them): the zero table of a magnitude table whose
        cells may be 0, 1.5 x the table under sdcTable's default upper bound."""
        values = self.values
        low, high = values.copy(), values.copy()
        if np.any(values < 0):
            return low, high
        positive = values > 0
        factors = [0.0 if not positive.any() else float(np.max(self.lower[positive] / values[positive])),
                   float(np.min(self.upper[positive] / values[positive])) if positive.any() else 1.0]
        for factor in factors:
            if not np.isfinite(factor) or factor < 0:
                continue
            table = values * factor
            if np.all(table >= self.lower - AUDIT_TOLERANCE) and np.all(table <= self.upper + AUDIT_TOLERANCE):
                np.minimum(low, table, out=low)
                np.maximum(high, table, out=high)
        return low, high


class ComponentLP:
    """The attacker's LP over one component: variables are its suppressed cells, rows the relations
    that hold them, published cells moved to the right-hand side; in the table's exact units (values times
    table.scale), its results in the values' own."""

    def __init__(self, table: AuditTable, cells: np.ndarray, suppressed: np.ndarray):
        self.table = table
        self.cells = list(int(c) for c in cells)  # in column order
        self.position_of = {c: p for p, c in enumerate(self.cells)}
        block = table.matrix_csc[:, cells]
        rows = np.flatnonzero(np.diff(block.tocsr().indptr))
        self.rows = rows  # the relations, in LP row order
        self.row_of = {int(r): k for k, r in enumerate(rows)}  # relation -> LP row
        block = block.tocsr()[rows].tocsc()
        published = np.where(suppressed, 0.0, table.units)
        rhs = -(table.matrix[rows] @ published)
        self.rhs = rhs
        self._highs = highs_model(block, np.zeros(len(cells)), *self._bounds(cells), rhs, rhs)
        self._highs.setOptionValue("presolve", "off")  # keep the basis between re-solves
        self._rhs_changed = True  # whether the last basis is primal infeasible (first solve, free/unfree)
        self._objective_at = None
        self._freed = None  # a tentatively freed cell: (cell, its LP rows, their shifted right-hand sides)

    def _bounds(self, cells) -> tuple[np.ndarray, np.ndarray]:
        """The a-priori bounds of ``cells`` in the LP's units (HiGHS's infinity for none)."""
        table = self.table
        lower, upper = table.lower[cells] * table.scale, table.upper[cells] * table.scale
        return (np.where(np.isinf(lower), -highspy.kHighsInf, lower),
                np.where(np.isinf(upper), highspy.kHighsInf, upper))

    def reaches(self, cell: int, directions) -> bool:
        """Whether ``cell`` reaches its required bound in each direction (-1: upper, +1: lower)."""
        position = self.position_of[int(cell)]
        return all(self.table.bound_reached(cell, sign, self.extreme(position, sign)[0]) for sign in directions)

    def free(self, cell: int) -> bool:
        """Suppress the published ``cell`` tentatively, as one more column: possible when every relation
        that holds it is a row of this LP (otherwise it would join other components; returns False).
        ``unfree`` takes it back. The re-solve starts from the current basis."""
        table = self.table
        column = table.matrix_csc[:, cell]
        rows = [self.row_of.get(int(r)) for r in column.indices]
        if any(r is None for r in rows):
            return False
        h = self._highs
        rows = np.array(rows, dtype=np.int32)
        (lower,), (upper,) = self._bounds([cell])
        h.addCol(0.0, lower, upper, len(rows), rows, column.data)
        shifted = self.rhs[rows] + column.data * table.units[cell]  # its value leaves the right-hand side
        for r, b in zip(rows, shifted):
            h.changeRowBounds(int(r), b, b)
        self._freed = (int(cell), rows, shifted)
        self._rhs_changed = True
        return True

    def unfree(self) -> None:
        h = self._highs
        h.deleteCols(1, np.array([h.getNumCol() - 1], dtype=np.int32))
        for r in self._freed[1]:
            h.changeRowBounds(int(r), self.rhs[r], self.rhs[r])
        self._freed = None
        self._rhs_changed = True

    def prices(self, cells) -> np.ndarray:
        """The reduced cost each published cell of ``cells`` would have as a new column under the last
        solution (the pricing step of column generation): only a cell with a nonzero one can improve the
        objective from there (barring degeneracy). NaN for a cell with a relation outside this LP."""
        table = self.table
        duals = np.zeros(table.matrix.shape[0])
        duals[self.rows] = np.asarray(self._highs.getSolution().row_dual)[:len(self.rows)]
        outside = np.ones(table.matrix.shape[0])
        outside[self.rows] = 0.0
        columns = table.matrix_csc[:, cells]
        reduced = -(columns.T @ duals)  # the new column's objective coefficient is 0
        return np.where(abs(columns).T @ outside > 0, np.nan, reduced)

    def keep(self) -> None:
        """Make the freed cell a permanent column: the LP is then the one of the component grown by it,
        and goes on from its basis."""
        cell, rows, shifted = self._freed
        self.rhs[rows] = shifted
        self.position_of[cell] = len(self.cells)
        self.cells.append(cell)
        self._freed = None

    def push(self, positions: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        """A feasible table that minimises sum(weights * cells at ``positions``): one LP that moves many cells
        towards an end at once (its point, or None where HiGHS settles no optimum)."""
        h = self._highs
        if self._objective_at is not None:
            h.changeColCost(self._objective_at, 0.0)
            self._objective_at = None
        positions = np.asarray(positions, dtype=np.int32)
        h.changeColsCost(len(positions), positions, np.asarray(weights, dtype=float))
        h.setOptionValue("simplex_strategy", SIMPLEX_DUAL if self._rhs_changed else SIMPLEX_PRIMAL)
        self._rhs_changed = False
        h.run()
        point = None
        if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            point = np.asarray(h.getSolution().col_value) / self.table.scale
        h.changeColsCost(len(positions), positions, np.zeros(len(positions)))
        return point

    def beyond(self, position: int, sign: float, bound: float) -> np.ndarray | None:
        """A feasible table with the cell at ``position`` at or below ``bound`` (sign=+1) or at or above it (-1), or
        None where none is found (there is none, or HiGHS settles neither way: the caller's extreme decides): a
        question of feasibility (no objective), so the simplex stops at the first such table instead of going on
        to the extreme (on an LP over the 29,929 cells of three linked tables an extreme took up to 50 s where the
        requirement lay far inside)."""
        h = self._highs
        if self._objective_at is not None:
            h.changeColCost(self._objective_at, 0.0)
            self._objective_at = None
        (lower,), (upper,) = self._bounds([self.cells[position]])
        limit = bound * self.table.scale
        if sign > 0:
            h.changeColBounds(position, lower, max(min(limit, upper), lower))
        else:
            h.changeColBounds(position, min(max(limit, lower), upper), upper)
        h.setOptionValue("simplex_strategy", SIMPLEX_DUAL)  # every basis is optimal for no objective
        try:
            h.run()
            found = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
            return np.asarray(h.getSolution().col_value) / self.table.scale if found else None
        finally:
            h.changeColBounds(position, lower, upper)  # the solution stays feasible: primal simplex goes on

    def extreme(self, position: int, sign: float):
        """min (sign=+1) or max (sign=-1) of the cell at ``position``: (value, feasible point or None)."""
        h = self._highs
        if self._objective_at is not None:
            h.changeColCost(self._objective_at, 0.0)
        h.changeColCost(position, sign)
        self._objective_at = position
        # After an objective change the last basis is still primal feasible: primal simplex goes on from it
        # (15x fewer iterations than dual simplex on 2,500-cell components); after a right-hand-side change
        # it is dual feasible instead.
        h.setOptionValue("simplex_strategy", SIMPLEX_DUAL if self._rhs_changed else SIMPLEX_PRIMAL)
        self._rhs_changed = False
        h.run()
        status = h.getModelStatus()
        if status not in _SETTLED:
            status = self._solve_afresh()
        if status in (highspy.HighsModelStatus.kUnbounded, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            # the true table is feasible, so "unbounded or infeasible" is unbounded
            return (-np.inf if sign > 0 else np.inf), None
        if status != highspy.HighsModelStatus.kOptimal:
            raise SdcError(f"audit: the LP for cell {self.cells[position]} failed "
                           f"({h.modelStatusToString(status)}); are the bounds consistent?")
        point = np.asarray(h.getSolution().col_value) / self.table.scale
        return float(point[position]), point


    def _solve_afresh(self):
        """Re-solve without the last basis: after hundreds of warm-started re-solves of a large LP of large
        magnitudes HiGHS can end in 'Solve error' or 'Unknown' (a 4-D table of 10,000 turnover cells did); from
        scratch by dual simplex with presolve, then by interior point. The model itself is unchanged."""
        h = self._highs
        status = h.getModelStatus()
        for solver in ("simplex", "ipm"):
            h.clearSolver()
            h.setOptionValue("presolve", "on")
            h.setOptionValue("solver", solver)
            h.setOptionValue("simplex_strategy", SIMPLEX_DUAL)
            h.run()
            status = h.getModelStatus()
            if status in _SETTLED:
                break
        h.setOptionValue("presolve", "off")  # warm starts again from the new basis
        h.setOptionValue("solver", "simplex")
        self._rhs_changed = True
        return status


# the LP statuses that are an answer (optimal, or unbounded in the direction asked)
_SETTLED = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kUnbounded,
            highspy.HighsModelStatus.kUnboundedOrInfeasible)


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
    integer: bool = False,
    integer_cells: int = INTEGER_CHECK_CELLS,
    integer_seconds: float = INTEGER_CHECK_SECONDS,
    integer_budget: float = INTEGER_CHECK_BUDGET,
) -> AuditResult:
    """Feasible interval of every suppressed cell (or of the suppressed cells listed in ``only``).

    values            true cell values (length n)
    suppressed        bool per cell
    constraints       each relation as [(cell index, coefficient), ...] with sum(coef * value) = 0
    sensitive         bool per cell (default: none); protection_lower/upper per cell (default 0)
    lower, upper      a-priori bounds of each cell (default 0 and +inf)
    integer           the cells are whole numbers, and the attacker knows it: sensitive cells the LP protects
                      get the MILP check (groups up to ``integer_cells`` suppressed cells, ``integer_seconds``
                      per MILP, ``integer_budget`` seconds in all)

    A total of three parts with the part 2 and the part 4 suppressed: each lies anywhere in [0, 6].

    >>> from sdc.suppression import audit_pattern
    >>> result = audit_pattern([12, 2, 4, 6], [False, True, True, False], [[(0, 1), (1, -1), (2, -1), (3, -1)]],
    ...                        sensitive=[False, True, False, False], protection_lower=[0, 1, 0, 0],
    ...                        protection_upper=[0, 1, 0, 0])
    >>> [(iv.cell, iv.feasible_lower, iv.feasible_upper, iv.protected) for iv in result.intervals]
    [(1, 0.0, 6.0, True), (2, 0.0, 6.0, True)]
    """
    deadline = time.perf_counter() + integer_budget
    table = AuditTable(values, constraints, sensitive=sensitive, protection_lower=protection_lower,
                       protection_upper=protection_upper, lower=lower, upper=upper, integer=integer)
    suppressed = table.check_pattern(suppressed)
    wanted = None if only is None else set(int(c) for c in only)
    intervals = []
    for cells in table.components(suppressed):
        positions = [p for p, c in enumerate(cells) if wanted is None or int(c) in wanted]
        if not positions:
            continue
        lp = table.component_lp(cells, suppressed)
        found = []
        for position in positions:
            cell = int(cells[position])
            low, _ = lp.extreme(position, 1.0)
            high, _ = lp.extreme(position, -1.0)
            if table.sensitive[cell] and not (table.bound_reached(cell, 1.0, low)
                                              and table.bound_reached(cell, -1.0, high)):
                table.clip_to_a_priori(cell)
            found.append(CellInterval(cell, float(table.values[cell]), low, high, float(table.required_lower[cell]),
                                      float(table.required_upper[cell]), bool(table.sensitive[cell])))
        if integer:
            check = [iv.cell for iv in found if iv.sensitive and iv.lp_protected]
            reach = integer_reach(table, cells, suppressed, check, max_cells=integer_cells, seconds=integer_seconds,
                                  deadline=deadline)
            found = [replace(iv, required_lower=float(table.required_lower[iv.cell]),
                             required_upper=float(table.required_upper[iv.cell]),
                             **reach[iv.cell]) if iv.cell in reach else iv for iv in found]
        intervals.extend(found)
    intervals.sort(key=lambda interval: interval.cell)
    return AuditResult(intervals)


def integer_reach(table: AuditTable, cells, suppressed, check, *, max_cells: int = INTEGER_CHECK_CELLS,
                  seconds: float = INTEGER_CHECK_SECONDS, deadline: float = np.inf) -> dict[int, dict]:
    """The MILP check of the sensitive cells ``check`` of one group of suppressed cells ``cells``: per cell
    the CellInterval fields integer_lower, integer_upper (or integer_skipped).

    Each end is a feasibility MILP (the cell bounded by its required end, zero objective: HiGHS stops at
    the first integer table it finds); every table found settles the cells it already takes far enough.
    ``deadline`` (time.perf_counter()): cells not done by then are skipped.
    Only where none exists is the exact integer extreme solved, for the report; a cell that misses an end
    is first narrowed to its integer a-priori interval (clip_to_a_priori), as in the LP audit."""
    cells = np.asarray(cells)
    if len(cells) > max_cells:
        reason = f"group of {len(cells):,} suppressed cells > {max_cells:,}"
        return {int(c): {"integer_skipped": reason} for c in check}
    milp = ComponentMILP(table, cells, suppressed, seconds)
    position_of = {int(c): p for p, c in enumerate(cells)}
    seen_low = np.minimum(table.values[cells], milp.memo.low)  # the true table is an integer solution, as is
    seen_high = np.maximum(table.values[cells], milp.memo.high)  # every one found for this program before
    out = {}
    for cell in check:
        cell, p = int(cell), position_of[int(cell)]
        left = deadline - time.perf_counter()
        if left <= 0:
            out[cell] = {"integer_skipped": "the audit's MILP time budget is spent"}
            continue
        milp.seconds = min(seconds, left)
        result = {}
        for sign, name, seen in ((1.0, "integer_lower", seen_low), (-1.0, "integer_upper", seen_high)):
            for attempt in range(2):
                if table.bound_reached(cell, sign, seen[p]):
                    break
                status, point = milp.reach(p, sign)
                if status == "time":
                    result = {"integer_skipped": milp.timeout_reason(seconds)}
                    break
                if point is not None:
                    np.minimum(seen_low, point, out=seen_low)
                    np.maximum(seen_high, point, out=seen_high)
                elif attempt == 1 or not table.clip_to_a_priori(cell):
                    break
            if "integer_skipped" in result:
                break
            if table.bound_reached(cell, sign, seen[p]):
                result[name] = float(seen[p])
            else:
                status, extreme = milp.extreme(p, sign)
                if status == "time":
                    result = {"integer_skipped": milp.timeout_reason(seconds)}
                    break
                result[name] = extreme
        out[cell] = result
    return out


class ComponentMILP:
    """The attacker's integer program over one group of suppressed cells (variables: its cells, integer,
    within their a-priori bounds rounded inwards; rows: the relations that hold them). An integer table's units
    are its values (scale 1): integrality holds there."""

    def __init__(self, table: AuditTable, cells, suppressed, seconds: float):
        self.table = table
        self.cells = np.asarray(cells)
        block = table.matrix_csc[:, self.cells].tocsr()
        rows = np.flatnonzero(np.diff(block.indptr))
        published = np.where(suppressed, 0.0, table.units)
        rhs = -(table.matrix[rows] @ published)
        self.lower = np.ceil(table.lower[self.cells] - AUDIT_TOLERANCE)
        self.upper = np.floor(table.upper[self.cells] + AUDIT_TOLERANCE)
        m = len(self.cells)
        self._highs = highs_model(block[rows], np.zeros(m), self.lower,
                                  np.where(np.isinf(self.upper), highspy.kHighsInf, self.upper), rhs, rhs)
        self._highs.changeColsIntegrality(m, np.arange(m, dtype=np.int32),
                                          np.full(m, highspy.HighsVarType.kInteger))
        self._highs.setOptionValue("mip_rel_gap", 0.0)
        self.seconds = seconds
        self.memo = MilpMemo.of(self.cells, self.lower, self.upper, block[rows], rhs)

    def timeout_reason(self, seconds: float) -> str:
        return f"MILP over {seconds:g} s" if self.seconds >= seconds else "the audit's MILP time budget is spent"

    def _run(self):
        h = self._highs
        h.setOptionValue("time_limit", h.getRunTime() + self.seconds)  # HiGHS's run clock adds up over runs
        h.run()
        return h.getModelStatus()

    def reach(self, position: int, sign: float):
        """Is there an integer table with the cell at or beyond its required end (sign +1: <= required_lower,
        -1: >= required_upper)? ("yes", point), ("no", None) or ("time", None)."""
        table, cell, h = self.table, int(self.cells[position]), self._highs
        if sign > 0:
            bound = np.floor(table.required_lower[cell] + AUDIT_TOLERANCE)
        else:
            bound = np.ceil(table.required_upper[cell] - AUDIT_TOLERANCE)
        if (position, sign, float(bound)) in self.memo.infeasible:
            return "no", None
        if sign > 0:
            h.changeColBounds(position, self.lower[position], bound)
        else:
            h.changeColBounds(position, bound, highspy.kHighsInf if np.isinf(self.upper[position]) else self.upper[position])
        try:
            status = self._run()
        finally:
            h.changeColBounds(position, self.lower[position],
                              highspy.kHighsInf if np.isinf(self.upper[position]) else self.upper[position])
        if status == highspy.HighsModelStatus.kOptimal:
            point = np.asarray(h.getSolution().col_value)
            np.minimum(self.memo.low, point, out=self.memo.low)
            np.maximum(self.memo.high, point, out=self.memo.high)
            return "yes", point
        if status == highspy.HighsModelStatus.kInfeasible:
            self.memo.infeasible.add((position, sign, float(bound)))
            return "no", None
        if status == highspy.HighsModelStatus.kTimeLimit:
            return "time", None
        raise SdcError(f"audit: the integer check of cell {cell} failed ({h.modelStatusToString(status)})")

    def extreme(self, position: int, sign: float):
        """("ok", the least (sign +1) or greatest (-1) integer value of the cell) or ("time", None)."""
        h = self._highs
        h.changeColCost(position, sign)
        try:
            status = self._run()
        finally:
            h.changeColCost(position, 0.0)
        if status == highspy.HighsModelStatus.kOptimal:
            return "ok", float(np.asarray(h.getSolution().col_value)[position])
        if status == highspy.HighsModelStatus.kTimeLimit:
            return "time", None
        if status in (highspy.HighsModelStatus.kUnbounded, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            return "ok", (-np.inf if sign > 0 else np.inf)
        raise SdcError(f"audit: the integer check of cell {int(self.cells[position])} failed "
                       f"({h.modelStatusToString(status)})")


class MilpMemo:
    """What is known of one integer program (ComponentMILP's, named by its whole content: columns, their bounds,
    the rows and their right-hand sides): the least and greatest value of each column among the integer tables
    found for it, and which (column, side, bound) have none. Each is a fact about that program, so a check that
    reads them answers as one that solves it again would; the verdict after a method's integer check of the same
    pattern then needs few MILPs of its own. The last MILP_MEMO_MODELS programs are kept."""

    _kept: OrderedDict = OrderedDict()

    def __init__(self, columns: int):
        self.low, self.high = np.full(columns, np.inf), np.full(columns, -np.inf)  # no integer table found yet
        self.infeasible: set = set()

    @classmethod
    def of(cls, cells, lower, upper, rows, rhs) -> "MilpMemo":
        digest = hashlib.blake2b(digest_size=20)
        for part in (cells, lower, upper, rows.indptr, rows.indices, rows.data, rhs):
            array = np.ascontiguousarray(part)
            digest.update(str((array.dtype.str, array.shape)).encode())
            digest.update(array.tobytes())
        key = digest.digest()
        memo = cls._kept.get(key)
        if memo is None:
            memo = cls._kept[key] = cls(len(cells))
        cls._kept.move_to_end(key)
        while len(cls._kept) > MILP_MEMO_MODELS:
            cls._kept.popitem(last=False)
        return memo


def suppressed_groups(matrix_csc, suppressed) -> list[np.ndarray]:
    """The suppressed cells in groups that share relations (cell indices, ascending)."""
    hidden = np.flatnonzero(suppressed)
    if hidden.size == 0:
        return []
    incidence = matrix_csc[:, hidden].tocsr()
    touched = np.flatnonzero(np.diff(incidence.indptr))
    incidence = (incidence[touched] != 0).astype(np.int8)
    graph = bmat([[None, incidence], [incidence.T, None]], format="csr")
    count, labels = connected_components(graph, directed=False)
    cell_labels = labels[len(touched):]
    order = np.argsort(cell_labels, kind="stable")
    return np.split(hidden[order], np.flatnonzero(np.diff(cell_labels[order])) + 1)


def public_intervals(published, suppressed, constraints, *, lower, upper=None,
                     integer: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """What anyone can derive about each suppressed cell from the published cells alone: min and max of the
    cell over all tables that keep every relation, agree with the published cells and lie within the
    public a-priori bounds ``lower``/``upper`` (per cell; default upper +inf). ``published`` holds the values
    of the published cells; its entries for suppressed cells are never read (NaN is fine). With
    ``integer`` the ends are rounded inwards. Unsuppressed cells get NaN.

    The LPs work in units of the published values' decimals (decimal_units): the right-hand sides are then
    exact, so the equations agree as the exact table does (in float sums of cents they contradict each other)."""
    suppressed = np.asarray(suppressed, dtype=bool)
    n = len(suppressed)
    published = np.where(suppressed, 0.0, np.asarray(published, dtype=float))  # no suppressed value enters
    matrix = relation_matrix(constraints, n)
    matrix_csc = matrix.tocsc()
    scale, published = next(decimal_units(published, matrix), (1.0, published))
    lower = np.broadcast_to(np.asarray(lower, dtype=float) * scale, (n,))
    upper = np.full(n, np.inf) if upper is None else np.broadcast_to(np.asarray(upper, dtype=float) * scale, (n,))
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    for cells in suppressed_groups(matrix_csc, suppressed):
        block = matrix_csc[:, cells].tocsr()
        rows = np.flatnonzero(np.diff(block.indptr))
        rhs = -(matrix[rows] @ published)
        h = highs_model(block[rows], np.zeros(len(cells)), np.where(np.isinf(lower[cells]), -highspy.kHighsInf, lower[cells]),
                        np.where(np.isinf(upper[cells]), highspy.kHighsInf, upper[cells]), rhs, rhs)
        for position, cell in enumerate(cells):
            for sign, out in ((1.0, low), (-1.0, high)):
                h.changeColCost(position, sign)
                h.run()
                status = h.getModelStatus()
                if status == highspy.HighsModelStatus.kOptimal:
                    out[cell] = h.getSolution().col_value[position] / scale
                elif status in (highspy.HighsModelStatus.kUnbounded, highspy.HighsModelStatus.kUnboundedOrInfeasible):
                    out[cell] = -np.inf * sign
                else:
                    raise SdcError(f"published intervals: the LP for cell {int(cell)} failed "
                                   f"({h.modelStatusToString(status)})")
                h.changeColCost(position, 0.0)
    if integer:
        low, high = np.ceil(low - AUDIT_TOLERANCE), np.floor(high + AUDIT_TOLERANCE)
    return low, high


def integer_failures(table: AuditTable, suppressed, *, only=None, max_cells: int = INTEGER_CHECK_CELLS,
                     seconds: float = INTEGER_CHECK_SECONDS, budget: float = INTEGER_CHECK_BUDGET,
                     why: dict | None = None) -> tuple[list[int], list[int]]:
    """(sensitive cells of ``only``, default all, that miss an end of their requirement in integers; those
    whose check was skipped), for a pattern that passes the LP audit; ``why`` (a dict) gets, per skipped cell,
    the reason."""
    suppressed = table.check_pattern(suppressed)
    targets = table.sensitive if only is None else np.isin(np.arange(len(table.values)), list(only))
    failing, skipped = [], []
    deadline = time.perf_counter() + budget
    for cells in table.components(suppressed):
        check = cells[targets[cells]]
        if check.size == 0:
            continue
        for cell, found in integer_reach(table, cells, suppressed, check, max_cells=max_cells, seconds=seconds,
                                         deadline=deadline).items():
            if found.get("integer_skipped"):
                skipped.append(cell)
                if why is not None:
                    why[cell] = found["integer_skipped"]
            elif (not table.bound_reached(cell, 1.0, found["integer_lower"])
                  or not table.bound_reached(cell, -1.0, found["integer_upper"])):
                failing.append(cell)
    return sorted(failing), sorted(skipped)


def unprotected_cells(table: AuditTable, suppressed, *, only=None, cache: dict | None = None,
                      clip: bool = True) -> list[int]:
    """The sensitive cells (of ``only``, default all) whose feasible interval misses their protection
    interval: the pass/fail part of the audit, with as few LPs as the feasible points found allow.

    ``cache`` (a dict kept by the caller) remembers the result of components already checked, so a
    caller that adds cells one by one only pays for the components that changed. ``clip=False`` skips
    the a-priori clipping of failing cells (an LP over the whole table each): a caller that clips the
    cells it cannot fix itself (and then clears its cache) saves those LPs on intermediate patterns."""
    suppressed = table.check_pattern(suppressed)
    targets = table.sensitive if only is None else np.isin(np.arange(len(table.values)), list(only))
    failing = []
    for cells in table.components(suppressed):
        check = cells[targets[cells]]
        if check.size == 0:
            continue
        key = (cells.tobytes(), check.tobytes())
        if cache is not None and key in cache:
            failing.extend(cache[key])
            continue
        found = _component_failures(table, cells, suppressed, check, clip)
        if cache is not None:
            cache[key] = found
        failing.extend(found)
    return sorted(failing)


def unprotected_within(table: AuditTable, suppressed, cells, *, clip: bool = True) -> list[int]:
    """unprotected_cells for the sensitive cells among ``cells``, a union of whole groups of ``suppressed``:
    the groups are found among those cells alone, so a check costs what their group costs, not the table."""
    mask = np.zeros(len(table.values), bool)
    mask[np.asarray(cells, dtype=int)] = True
    failing = []
    for group in suppressed_groups(table.matrix_csc, mask & suppressed):
        check = group[table.sensitive[group]]
        if check.size:
            failing.extend(_component_failures(table, group, suppressed, check, clip))
    return sorted(failing)


def _component_failures(table: AuditTable, cells, suppressed, check, clip: bool = True) -> list[int]:
    lp = None  # built when a cell needs it
    position_of = {int(c): p for p, c in enumerate(cells)}
    # every solution is a feasible table; keep the lowest and highest value seen per cell
    seen_low = table.values[cells].copy()
    seen_high = seen_low.copy()
    if len(cells) > PUSH_CELLS and len(check) > PUSH_CELLS // 10:
        lp = table.component_lp(cells, suppressed)
        _push_towards_bounds(table, lp, check, position_of, seen_low, seen_high)
    failing = []
    for cell in check:
        p = position_of[int(cell)]
        for sign, reached in ((-1.0, lambda: table.bound_reached(cell, -1.0, seen_high[p])),
                              (1.0, lambda: table.bound_reached(cell, 1.0, seen_low[p]))):
            if reached():
                continue
            if lp is None:
                lp = table.component_lp(cells, suppressed)
            value, point = lp.extreme(p, sign)
            if point is not None:
                np.minimum(seen_low, point, out=seen_low)
                np.maximum(seen_high, point, out=seen_high)
            if sign < 0:
                seen_high[p] = max(seen_high[p], value)
            else:
                seen_low[p] = min(seen_low[p], value)
            if not reached() and clip and table.clip_to_a_priori(cell) and reached():
                continue
            if not reached():
                failing.append(int(cell))
                break
    return failing


def _push_towards_bounds(table: AuditTable, lp: ComponentLP, check, position_of, seen_low, seen_high) -> None:
    """Before one LP per cell and side: LPs that push every side not yet reached towards its required bound at
    once (each side weighted by the inverse of how far it has to go, a random side of each cell per LP), whose
    feasible tables settle most sides of a large group; rounds end when one settles few sides. What is still
    open gets its own LPs as before, so the verdict is the same, only cheaper."""
    rng = np.random.default_rng(0)  # a fixed seed: the same LPs, the same time, run after run
    check = np.asarray(check, dtype=int)
    positions = np.array([position_of[int(c)] for c in check])
    before = None  # the open sides before the last push
    for pushes in range(PUSH_ROUNDS + 1):
        open_low = table.required_lower[check] < seen_low[positions] - AUDIT_TOLERANCE
        open_high = table.required_upper[check] > seen_high[positions] + AUDIT_TOLERANCE
        open_count = int(open_low.sum() + open_high.sum())
        settled_few = before is not None and before - open_count < PUSH_SETTLED * before
        if open_count == 0 or settled_few or pushes == PUSH_ROUNDS:
            return
        before = open_count
        # a cell open on both sides is pushed down or up at random; one open on one side, that way
        down = np.where(open_low & open_high, rng.random(len(check)) < 0.5, open_low)
        pushed = open_low | open_high
        distance = np.where(down, table.values[check] - table.required_lower[check],
                            table.required_upper[check] - table.values[check])
        weights = np.where(down, 1.0, -1.0) / np.maximum(distance, AUDIT_TOLERANCE)
        point = lp.push(positions[pushed], weights[pushed])
        if point is None:
            return
        np.minimum(seen_low, point, out=seen_low)
        np.maximum(seen_high, point, out=seen_high)


def highs_model(matrix, cost, col_lower, col_upper, row_lower, row_upper) -> highspy.Highs:
    """A quiet HiGHS instance holding the LP min cost·x, row_lower <= matrix·x <= row_upper,
    col_lower <= x <= col_upper (``matrix`` sparse, any format)."""
    matrix = csc_matrix(matrix)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = matrix.shape[1], matrix.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, col_lower, col_upper
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = matrix.indptr
    lp.a_matrix_.index_ = matrix.indices
    lp.a_matrix_.value_ = matrix.data
    highs = quiet_highs()
    highs.passModel(lp)
    return highs


def quiet_highs() -> highspy.Highs:
    """A HiGHS instance that prints nothing. From highspy 1.16 on, its constructor writes HiGHS's copyright banner
    to the process's standard output before output_flag can be turned off (into dbt's output and every
    `sdc suppress`, new-user trial D18): standard output is pointed at the null device for the construction."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            highs = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    highs.setOptionValue("output_flag", False)
    return highs


def implied_bounds(matrix, lower, upper, *, integer: bool = False,
                   sweeps: int = IMPLIED_BOUND_SWEEPS) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on every cell that hold in every table within ``lower``/``upper`` keeping the relations
    (``matrix`` @ y = 0), by interval propagation: in each relation a cell's term lies within minus the sum of
    the other terms' ranges (a total of two count cells of at least 1 each is at least 2; a part is at most its
    total's bound less its siblings' lower bounds). Each sweep applies every relation once to the bounds of the
    last; every sweep's bounds are implied, so stopping after ``sweeps`` (where cycles of relations tighten them
    by ever smaller steps) is sound, only less tight. The exact a-priori interval is an LP over the whole table
    (AuditTable.clip_to_a_priori); this needs none, and in a hierarchy it is that interval wherever the cell's
    sub-totals alone bound it. ``integer``: whole-number cells, so the bounds are rounded inwards."""
    m = csr_matrix(matrix, dtype=float, copy=True)
    m.sum_duplicates()  # a cell listed twice in a relation is one term; a zero coefficient none (0 x inf is no bound)
    m.eliminate_zeros()
    m = m.tocoo()
    rows, cols, coefficient = m.row, m.col, m.data
    low, high = np.asarray(lower, dtype=float).copy(), np.asarray(upper, dtype=float).copy()
    count = m.shape[0]
    if not count:
        return low, high
    finite = np.abs(np.concatenate([low, high]))
    tolerance = AUDIT_TOLERANCE * max(1.0, float(finite[np.isfinite(finite)].max(initial=0.0)))
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(sweeps):
            ends = coefficient * low[cols], coefficient * high[cols]
            term_low, term_high = np.minimum(*ends), np.maximum(*ends)  # each term's range
            others_low = _others_sum(rows, term_low, count, -np.inf, widen=-1.0)
            others_high = _others_sum(rows, term_high, count, np.inf, widen=1.0)
            ends = -others_high / coefficient, -others_low / coefficient  # coefficient * y = -(the other terms)
            new_low, new_high = low.copy(), high.copy()
            np.maximum.at(new_low, cols, np.minimum(*ends))
            np.minimum.at(new_high, cols, np.maximum(*ends))
            if integer:
                new_low = np.maximum(low, np.ceil(new_low - AUDIT_TOLERANCE))
                new_high = np.minimum(high, np.floor(new_high + AUDIT_TOLERANCE))
            moved = bool((new_low > low + tolerance).any() or (new_high < high - tolerance).any())
            low, high = new_low, new_high
            if not moved:
                break
    return low, high


def _others_sum(rows, terms, count: int, infinite: float, widen: float) -> np.ndarray:
    """Per entry of a relation, the sum of the other entries' ``terms`` of its relation (``infinite`` where one of
    them is infinite), moved by ``widen`` times a bound on its rounding error: the relation's sum less the entry's
    own term cancels where that term is large (a bound of 1e12 beside cells of 0.1), and a bound must not be
    narrower than the exact one. Sums of multiples of 1/1024 below 2^43 (counts, and 1.5 times a count) are exact
    and stay as they are."""
    unbounded = np.isinf(terms)
    finite = np.where(unbounded, 0.0, terms)
    total = np.bincount(rows, finite, count)[rows] - finite
    size = np.bincount(rows, np.abs(finite), count)
    inexact = np.bincount(rows, finite * 1024 != np.round(finite * 1024), count) > 0
    inexact |= size >= 2.0 ** 43
    entries = np.bincount(rows, minlength=count)
    error = np.where(inexact, (entries + 2) * np.finfo(float).eps * size, 0.0)
    total += widen * error[rows]
    others_unbounded = np.bincount(rows, unbounded, count)[rows] - unbounded > 0
    return np.where(others_unbounded, infinite, total)


def relation_matrix(constraints, n) -> csr_matrix:
    """The relations as a sparse matrix (one row per relation, one column per cell); ``constraints`` are
    lists of (cell, coefficient), or such a matrix already (a SuppressionProblem's relations)."""
    if issparse(constraints):
        if constraints.shape[1] != n:
            raise SdcError(f"audit: the relations have {constraints.shape[1]} columns for {n} cells")
        return csr_matrix(constraints)
    rows, cols, data = [], [], []
    for r, relation in enumerate(constraints):
        for cell, coefficient in relation:
            if not 0 <= cell < n:
                raise SdcError(f"audit: relation {r} names cell {cell}, but there are {n} cells")
            rows.append(r)
            cols.append(cell)
            data.append(coefficient)
    return csr_matrix((data, (rows, cols)), shape=(len(constraints), n))
