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
primary, another cell must be suppressed. A cell kept suppressed from an earlier release requires one unit of
movement (down where its a-priori bounds allow, else up), so that it never becomes recomputable.

At the time limit the heuristic completes the last master pattern, and a TimeLimitWarning gives the cost
of the result and the lower bound the master problem has proven.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import csr_matrix, hstack, vstack

from sdc.errors import SdcError
from sdc.suppression.audit import AUDIT_TOLERANCE, AuditTable, unprotected_cells
from sdc.suppression.heuristic import heuristic_pattern
from sdc.suppression.problem import SuppressionProblem

_log = logging.getLogger(__name__)  # progress of long solves (the CLI shows it; a log keeps it)
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


@dataclass(frozen=True)
class OptimalResult:
    """The optimal method's pattern; ``proven``: of minimum cost (else completed by the heuristic at the time
    limit); ``lower_bound``: on the minimum cost, as far as the master problem has proven it."""

    suppressed: np.ndarray
    proven: bool
    lower_bound: float


def optimal_pattern(problem: SuppressionProblem, *, time_limit: float = 60.0) -> OptimalResult:
    """The minimum-cost safe pattern (primaries and forced-suppressed cells included) of ``problem``, whose
    a-priori upper bounds must be finite.

    time_limit: CPU seconds of this process (HiGHS's threads included; >= 0; inf: none), so that a loaded
    machine does not cut the search short: wall time counts what other processes got. At the time limit the last master pattern is completed by the
    heuristic (safe, with a TimeLimitWarning that gives the proven lower bound); 0 gives the heuristic's
    pattern at once.
    """
    time_limit = time_limit_seconds(time_limit)
    found = _search(problem, time_limit, MAX_ROUNDS)
    if isinstance(found, _Stopped):
        return _finish_at_time_limit(problem, found.x, found.bound, time_limit)
    return found


def proven_optimal_pattern(problem: SuppressionProblem, *, rounds: int, time_limit: float) -> OptimalResult | None:
    """The minimum-cost pattern where the cut loop proves it within ``rounds`` master problems and ``time_limit``
    CPU seconds, else None (nothing completed, no warning): for method 'auto', which falls back to the heuristic.
    The rounds make the outcome the same on a fast and a slow machine wherever they finish within the seconds."""
    found = _search(problem, time_limit_seconds(time_limit), rounds)
    return None if isinstance(found, _Stopped) else found


@dataclass(frozen=True)
class _Stopped:
    """The cut loop stopped before its pattern was proven: the last master pattern (None: none yet) and the lower
    bound on the minimum cost."""

    x: np.ndarray | None
    bound: float


def time_limit_seconds(time_limit, name: str = "secondary suppression: the time limit (of the optimal method, and "
                                              "of auto's)") -> float:
    """A time limit in seconds as a float (0: the heuristic's pattern at once; inf: no limit); anything else (a
    text, None, a negative number, NaN) an SdcError that calls it ``name`` (sdc suppress: --time-limit)."""
    try:
        seconds = float(time_limit)
    except (TypeError, ValueError):  # a text or None from a caller of the Python API, named as given
        seconds = float("nan")
    if np.isnan(seconds) or seconds < 0:
        raise SdcError(f"{name} must be a number of seconds (>= 0), got {time_limit!r}")
    return seconds


def _search(problem: SuppressionProblem, time_limit: float, rounds: int) -> OptimalResult | _Stopped:
    """The proven optimum, or where the time or the rounds run out first, where the search stopped."""
    started = time.process_time()
    if np.any(~np.isfinite(problem.upper)):
        raise SdcError("optimal suppression needs finite upper bounds for every cell")
    table = problem.method_table()
    bound = float(problem.cost[table.sensitive].sum())  # proven lower bound of the optimum so far
    requirements = _requirements(table, started + time_limit)
    if requirements is None:
        return _Stopped(None, bound)
    requirements += _kept_requirements(problem, table)
    if not requirements:
        return OptimalResult(table.sensitive.copy(), True, bound)
    return _cut_loop(problem, table, requirements, bound, started, time_limit, rounds)


def _requirements(table: AuditTable, deadline: float) -> list[tuple[int, float]] | None:
    """Per sensitive cell and direction, the movement d it needs, clipped to its a-priori interval; None when
    the deadline (time.process_time()) passes first."""
    a, requirements = table.values, []
    for k in np.flatnonzero(table.sensitive):
        # two LPs over the whole table per primary: at 10^5 cells this alone outlasts a minute
        if time.process_time() >= deadline:
            return None
        table.clip_to_a_priori(k)
        for d in (table.required_upper[k] - a[k], table.required_lower[k] - a[k]):
            if abs(d) > AUDIT_TOLERANCE:
                requirements.append((int(k), float(d)))
    return requirements


def _kept_requirements(problem: SuppressionProblem, table: AuditTable) -> list[tuple[int, float]]:
    """A cell kept suppressed from an earlier release has nothing to reach, but must not become recomputable: it
    needs one unit of movement (1 / the table's decimal scale), down where its a-priori bounds allow, else up, as
    the heuristic's witness for it. A cell whose bounds leave it no unit either way is known, and needs nothing."""
    unit, a = 1.0 / table.scale, problem.values
    found = []
    for k in np.flatnonzero(problem.forced_suppressed):
        if a[k] - problem.lower[k] >= unit:
            found.append((int(k), -unit))
        elif problem.upper[k] - a[k] >= unit:
            found.append((int(k), unit))
    return found


def _separation(problem: SuppressionProblem, table: AuditTable) -> "_Separation":
    """The cut LPs: every open cell moves within its a-priori bounds, a forced-published one not at all."""
    a, forced, sensitive = problem.values, problem.forced_published, table.sensitive
    up_room = np.where(forced, 0.0, np.maximum(problem.upper - a, 0.0))
    down_room = np.where(forced, 0.0, np.maximum(a - problem.lower, 0.0))
    up_room[sensitive] = np.maximum(problem.upper[sensitive] - a[sensitive], 0.0)
    down_room[sensitive] = np.maximum(a[sensitive] - problem.lower[sensitive], 0.0)
    return _Separation(table.matrix, up_room, down_room)


def _cut_loop(problem, table, requirements, bound, started, time_limit, rounds) -> OptimalResult | _Stopped:
    """Solve the master problem, add a cut for every requirement its pattern misses, until none does."""
    n = len(problem.values)
    separation = _separation(problem, table)
    moving = np.zeros(n, bool)
    moving[[k for k, _ in requirements]] = True
    cuts: list[tuple[csr_matrix, float]] = _relation_cuts(table.matrix, moving)
    bounds = Bounds(table.sensitive.astype(float), np.where(problem.forced_published, 0.0, 1.0))
    x, audits = None, {}
    for round_number in range(1, rounds + 1):
        remaining = time_limit - (time.process_time() - started)
        if remaining <= 0:
            return _Stopped(x, bound)
        result = _master(problem.cost, cuts, bounds, remaining)
        if result.status == 1:  # time limit inside the master: its incumbent (if any) is not proven optimal
            return _Stopped(x if result.x is None else result.x > 0.5, _proven_bound(result, bound))
        if result.x is None:
            raise SdcError("optimal suppression: no pattern protects every primary (a requirement needs a "
                           "forced-publish cell, or the bounds leave no room)")
        x = result.x > 0.5
        bound = _proven_bound(result, bound, solved=True)
        new_cuts = _violated_cuts(table, separation, requirements, x, audits, problem.forced_suppressed)
        _log.info("optimal round %d: lower bound %.6g, %d cuts, %d new, %.0f of %.0f CPU seconds", round_number,
                  bound, len(cuts), len(new_cuts), time.process_time() - started, time_limit,
                  extra={"done": time.process_time() - started, "total": time_limit})
        if not new_cuts:
            return OptimalResult(x, True, bound)
        cuts.extend(new_cuts)
    if rounds < MAX_ROUNDS:
        return _Stopped(x, bound)
    raise SdcError(f"optimal suppression did not converge in {MAX_ROUNDS} rounds")


def _proven_bound(result, bound: float, *, solved: bool = False) -> float:
    """The lower bound on the optimum after a master solve: every cut is necessary, so what the master proves of
    its own optimum (HiGHS's dual bound; where it gives none, the optimum of a ``solved`` master) bounds it."""
    dual_bound = getattr(result, "mip_dual_bound", None)
    if dual_bound is not None and np.isfinite(dual_bound):
        return max(bound, float(dual_bound))
    return max(bound, float(result.fun)) if solved else bound


def _master(cost, cuts, bounds: Bounds, seconds: float):
    """The master problem: the cheapest binary x that satisfies every cut so far."""
    constraints = []
    if cuts:
        constraints.append(LinearConstraint(vstack([c for c, _ in cuts], format="csr"),
                                            np.array([b for _, b in cuts]), np.inf))
    # HiGHS's own limit is wall time: on a loaded machine the master stops before the CPU budget, never after;
    # no relative gap (HiGHS's default 1e-4 would call a pattern optimal that costs up to 0.01 % more)
    return milp(cost, constraints=constraints, integrality=np.ones(len(cost)), bounds=bounds,
                options={"time_limit": seconds, "mip_rel_gap": 0.0})


def _violated_cuts(table, separation, requirements, x, audits, kept) -> list[tuple[csr_matrix, float]]:
    """A Benders cut for every requirement the pattern x misses (none: x is safe). A kept cell's unit of movement
    is not the audit's (it requires nothing of it): its separation LP decides."""
    failing = set(unprotected_cells(table, x, cache=audits))  # the audit is cheaper than a cut LP
    cuts = [separation.cut(x, k, d) for k, d in requirements if k in failing or kept[k]]
    return [cut for cut in cuts if cut is not None]


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


def _finish_at_time_limit(problem: SuppressionProblem, x, bound: float, time_limit: float) -> OptimalResult:
    """Complete the last master pattern (or the primaries) by the heuristic, with a TimeLimitWarning."""
    pattern = heuristic_pattern(problem, start=x, singletons=False)
    warnings.warn(TimeLimitWarning(time_limit, float(problem.cost[pattern].sum()), bound), stacklevel=3)
    return OptimalResult(pattern, False, bound)
