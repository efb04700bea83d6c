"""Optimal secondary suppression by mixed-integer programming (reference suppression.md §2.8, the model of
Fischetti and Salazar), solved by cut generation with scipy.optimize.milp and linprog (HiGHS).

A pattern x (x_i = 1: suppressed; primaries fixed at 1, forced-publish cells at 0) protects primary k in
direction d (d = +UPL_k or -LPL_k, clipped to the a-priori interval as in the audit) exactly when the
attacker's table can move k by d: some perturbation f with

    M f = 0 (the table stays additive),  f_k = d,  -(a_i - lower_i) x_i <= f_i <= (upper_i - a_i) x_i

exists (the attacker's feasible set is convex and contains the true table). Instead of one flow per
requirement inside a single huge MILP, the master problem keeps only x:

    minimise  sum_i cost_i x_i   subject to the cuts found so far, x binary

and for its solution each requirement's largest achievable movement t*(x) is an LP whose capacities are
linear in x. Its duals give a Benders cut  sum_i mu_i room_i x_i >= |d| - t*(x) + sum_i mu_i room_i x*_i,
valid for every pattern (the LP value is concave in the capacities) and violated by the current one. The
loop ends when no requirement is violated: that pattern is safe and, since every cut is a necessary
condition, of minimum cost. Two families of cuts are known in advance: in each relation that holds a
primary, another cell must be suppressed.

At the time limit the heuristic completes the last master pattern, and a TimeLimitWarning gives the cost
of the result and the lower bound the master problem has proven.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import csr_matrix, hstack, vstack

from sdc.errors import SdcError
from sdc.suppression.audit import AUDIT_TOLERANCE, AuditTable, default_upper, forced_mask, unprotected_cells

MAX_ROUNDS = 500


class TimeLimitWarning(UserWarning):
    """The optimal method stopped at its time limit; the heuristic completed the pattern (which passes the
    audit). ``time_limit``, ``cost`` (of the returned pattern) and ``lower_bound`` (on the optimum)."""

    def __init__(self, time_limit: float, cost: float, lower_bound: float):
        self.time_limit, self.cost, self.lower_bound = time_limit, cost, lower_bound
        super().__init__(
            f"the optimal method stopped at its time limit of {time_limit:g} s; the pattern costs {cost:g}, the "
            f"minimum is at least {lower_bound:g} (lower bound); the heuristic completed the pattern, which "
            "passes the audit"
        )


def optimal_pattern(
    values,
    constraints: list[list[tuple[int, float]]],
    primary,
    protection_lower,
    protection_upper,
    cost,
    *,
    lower=None,
    upper=None,
    forced_publish=None,
    time_limit: float = 60.0,
) -> np.ndarray:
    """Boolean mask of the suppressed cells (primaries included) of the minimum-cost safe pattern.

    lower/upper: a-priori bounds of the cells (default 0 and 1.5 x the largest value, sdcTable's default).
    time_limit: seconds (>= 0; inf: none). At the time limit the last master pattern is completed by the
    heuristic (safe, with a TimeLimitWarning that gives the proven lower bound); 0 gives the heuristic's
    pattern at once.
    """
    started = time.perf_counter()
    time_limit = float(time_limit)
    if np.isnan(time_limit) or time_limit < 0:
        raise SdcError(f"optimal suppression: the time limit must be a number of seconds >= 0, got {time_limit!r}")
    a = np.asarray(values, dtype=float)
    n = len(a)
    primary = np.asarray(primary, dtype=bool)
    cost = np.asarray(cost, dtype=float)
    lower = np.zeros(n) if lower is None else np.asarray(lower, dtype=float)
    upper = default_upper(a) if upper is None else np.asarray(upper, dtype=float)
    forced = forced_mask(n, primary, forced_publish)
    if np.any(~np.isfinite(upper)):
        raise SdcError("optimal suppression needs finite upper bounds for every cell")
    table = AuditTable(a, constraints, sensitive=primary, protection_lower=protection_lower,
                       protection_upper=protection_upper, lower=lower, upper=upper)
    bound = float(cost[primary].sum())  # proven lower bound of the optimum so far
    requirements = []
    for k in np.flatnonzero(primary):
        # two LPs over the whole table per primary: at 10^5 cells this alone outlasts a minute
        if time.perf_counter() - started >= time_limit:
            return _finish_at_time_limit(None, values, constraints, primary, protection_lower, protection_upper, cost,
                                         lower, upper, forced_publish, bound, time_limit)
        table.clip_to_a_priori(k)
        for d in (table.required_upper[k] - a[k], table.required_lower[k] - a[k]):
            if abs(d) > AUDIT_TOLERANCE:
                requirements.append((int(k), float(d)))
    if not requirements:
        return primary.copy()
    up_room = np.where(forced, 0.0, np.maximum(upper - a, 0.0))
    down_room = np.where(forced, 0.0, np.maximum(a - lower, 0.0))
    up_room[primary] = np.maximum(upper[primary] - a[primary], 0.0)
    down_room[primary] = np.maximum(a[primary] - lower[primary], 0.0)
    separation = _Separation(table.matrix, up_room, down_room)

    moving = np.zeros(n, bool)
    moving[[k for k, _ in requirements]] = True
    cuts: list[tuple[csr_matrix, float]] = _relation_cuts(table.matrix, moving)
    low = primary.astype(float)
    high = np.where(forced, 0.0, 1.0)
    x = None
    audits: dict = {}
    for _ in range(MAX_ROUNDS):
        remaining = time_limit - (time.perf_counter() - started)
        if remaining <= 0:
            return _finish_at_time_limit(x, values, constraints, primary, protection_lower, protection_upper, cost,
                                         lower, upper, forced_publish, bound, time_limit)
        master_constraints = []
        if cuts:
            master_constraints.append(LinearConstraint(vstack([c for c, _ in cuts], format="csr"),
                                                       np.array([b for _, b in cuts]), np.inf))
        result = milp(cost, constraints=master_constraints, integrality=np.ones(n), bounds=Bounds(low, high),
                      options={"time_limit": remaining})
        if result.status == 1:  # time limit inside the master: its incumbent (if any) is not proven optimal
            dual_bound = getattr(result, "mip_dual_bound", None)
            if dual_bound is not None and np.isfinite(dual_bound):
                bound = max(bound, float(dual_bound))
            start = x if result.x is None else result.x > 0.5
            return _finish_at_time_limit(start, values, constraints, primary, protection_lower, protection_upper,
                                         cost, lower, upper, forced_publish, bound, time_limit)
        if result.x is None:
            raise SdcError("optimal suppression: no pattern protects every primary (a requirement needs a "
                           "forced-publish cell, or the bounds leave no room)")
        x = result.x > 0.5
        bound = max(bound, float(result.fun))  # every cut is necessary: the master's optimum bounds the optimum
        violated = False
        failing = set(unprotected_cells(table, x, cache=audits))  # the audit is cheaper than a cut LP
        for k, d in requirements:
            if k not in failing:
                continue
            cut = separation.cut(x, k, d)
            if cut is not None:
                cuts.append(cut)
                violated = True
        if not violated:
            return x
    raise SdcError(f"optimal suppression did not converge in {MAX_ROUNDS} rounds")


class _Separation:
    """For a pattern x and a requirement (k, d): the largest movement t*(x) <= |d| of cell k in direction
    sign(d), as an LP over f = f+ - f- (f+ <= up_room x, f- <= down_room x); a cut when t* < |d|."""

    def __init__(self, matrix: csr_matrix, up_room, down_room):
        self.n = matrix.shape[1]
        self.rows = matrix.shape[0]
        self.up_room = up_room
        self.down_room = down_room
        # variables: f+ (n), f- (n), t; rows: M f+ - M f- = 0, then f+_k - f-_k - sign t = 0 (set per call)
        self.flow = hstack([matrix, -matrix, csr_matrix((self.rows, 1))], format="csr")

    def cut(self, x, k, d):
        n = self.n
        sign = 1.0 if d > 0 else -1.0
        target = csr_matrix(([1.0, -1.0, -sign], ([0, 0, 0], [k, n + k, 2 * n])), shape=(1, 2 * n + 1))
        objective = np.zeros(2 * n + 1)
        objective[-1] = -1.0  # maximise t
        caps = np.concatenate([self.up_room * x, self.down_room * x, [abs(d)]])
        lp = linprog(objective, A_eq=vstack([self.flow, target], format="csr"), b_eq=np.zeros(self.rows + 1),
                     bounds=np.column_stack([np.zeros(2 * n + 1), caps]), method="highs")
        if lp.status != 0:
            raise SdcError(f"optimal suppression: separation LP for cell {k} failed ({lp.message})")
        reach = -lp.fun
        if reach >= abs(d) - AUDIT_TOLERANCE * max(1.0, abs(d)):
            return None
        # mu >= 0: how much the reach grows per unit of capacity of each flow variable
        mu = -np.asarray(lp.upper.marginals)[: 2 * n]
        weight = mu[:n] * self.up_room + mu[n:] * self.down_room
        weight[np.abs(weight) < 1e-12] = 0.0
        rhs = abs(d) - reach + float(weight @ x)
        return csr_matrix(weight.reshape(1, -1)), rhs


def _relation_cuts(matrix: csr_matrix, primary) -> list[tuple[csr_matrix, float]]:
    """In every relation that holds a primary that must move, at least one other cell is suppressed."""
    cuts = []
    incidence = (abs(matrix) > 0).astype(float).tocsr()
    for r in range(matrix.shape[0]):
        cells = incidence.indices[incidence.indptr[r]:incidence.indptr[r + 1]]
        for k in cells[primary[cells]]:
            others = cells[cells != k]
            row = np.zeros(matrix.shape[1])
            row[others] = 1.0
            cuts.append((csr_matrix(row.reshape(1, -1)), 1.0))
    return cuts


def _finish_at_time_limit(x, values, constraints, primary, protection_lower, protection_upper, cost, lower, upper,
                          forced_publish, bound, time_limit):
    from sdc.suppression.heuristic import heuristic_pattern

    start = primary if x is None else x
    pattern = heuristic_pattern(values, constraints, primary, protection_lower, protection_upper, cost, lower=lower,
                                upper=upper, forced_publish=forced_publish, start=start)
    cost = np.asarray(cost, dtype=float)
    warnings.warn(TimeLimitWarning(time_limit, float(cost[pattern].sum()), bound), stacklevel=3)
    return pattern
