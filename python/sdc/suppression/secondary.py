"""One entry point for secondary suppression, whose result has always passed the audit.

As scipy's ``linprog`` runs a method and then ``_check_result`` on its solution, ``secondary_suppression``
runs the heuristic (heuristic.py), the optimal method (optimal.py), the hypercube method (hypercube.py) or the
elimination of GaussSuppression completed by the heuristic (gauss.py) on a SuppressionProblem, grows the
pattern until an attacker who knows the cells are whole numbers learns no more (integer tables), and audits
the result (audit.py): a pattern that fails its own audit is never returned.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from sdc.errors import SdcError
from sdc.suppression.audit import (
    INTEGER_CHECK_CELLS,
    AuditResult,
    AuditTable,
    CellInterval,
    audit_pattern,
    integer_failures,
    unprotected_cells,
)
from sdc.suppression.gauss import gauss_pattern
from sdc.suppression.heuristic import PRUNE_GROUP_CELLS, heuristic_pattern, integer_safe_pattern, prune_pattern
from sdc.suppression.hypercube import Witness, grid_of, hypercube_pattern, prune_hypercubes, verified_witnesses
from sdc.suppression.optimal import optimal_pattern, proven_optimal_pattern, time_limit_seconds
from sdc.suppression.problem import SuppressionProblem

_log = logging.getLogger(__name__)  # progress of long solves (the CLI shows it; a log keeps it)
METHODS = ("heuristic", "optimal", "hypercube", "gauss", "auto")
# the method when none is named (the Python API, sdc suppress, the warehouse's suppression models): 'auto', the
# hypercube from AUTO_HYPERCUBE_CELLS cells where the cells have their codes in hierarchies, else the heuristic
# (README, "which method at which size": below, the heuristic is fast and hides about as few; above, the hypercube
# is several times faster, hides fewer on three-dimensional tables, and alone finishes dense tables of 10^5 cells);
# on count tables of up to AUTO_OPTIMAL_CELLS cells, or AUTO_OPTIMAL_PLANE_CELLS where they have two dimensions,
# first the optimal method, taken where it proves its optimum within AUTO_OPTIMAL_ROUNDS master problems (rounds, not
# seconds: the same outcome on a fast and a slow machine wherever the rounds finish within the time limit; LT-1: 18
# cells where the heuristic hides 23; 2-D counts of 1,516 cells: 231 against 251)
DEFAULT_METHOD = "auto"
AUTO_HYPERCUBE_CELLS = 10_000
AUTO_OPTIMAL_CELLS = 200
AUTO_OPTIMAL_PLANE_CELLS = 4_000
AUTO_OPTIMAL_ROUNDS = 60
INTERVALS = ("primary", "all", "none")
DEFAULT_TIME_LIMIT = 60.0  # seconds of the optimal method
# The few sensitive cells that method hypercube leaves to the LP audit (no hypercube fits them) get their integer
# check in groups of suppressed cells this many times larger than the audit's limit: each MILP's time limit and
# the audit's budget still bound the time (3 linked 4-D tables, 13 cells in a group of 6,385: 21 s)
REMAINDER_INTEGER_FACTOR = 10
STATUSES = ("published", "primary", "secondary", "empty")


class IntegerCheckWarning(UserWarning):
    """The pattern passes the LP audit, but the integer check of some sensitive cells was skipped (group too
    large or MILP time limit): they are not proven safe against an attacker who uses integrality."""

    def __init__(self, cells: list[int], reasons: list[str]):
        self.cells, self.reasons = cells, reasons
        super().__init__(f"integer check skipped for {len(cells)} sensitive cells ({'; '.join(sorted(set(reasons)))}): "
                         "they pass the LP audit, but are not proven safe against an attacker who knows the cells "
                         "are whole numbers")


@dataclass(frozen=True, eq=False)
class SuppressionPattern:
    """The audited result of secondary_suppression. ``status`` per cell: 'primary', 'secondary' (suppressed
    to protect a primary, or kept suppressed from an earlier release), 'published' or 'empty';
    ``audit``: the audit of every primary cell (see secondary_suppression's ``intervals``); ``optimal``:
    proven of minimum cost; ``time_limited``: the
    optimal method stopped at its time limit (the heuristic completed the pattern); ``cost``: the cost of
    every suppressed cell; ``lower_bound``: on the minimum cost (optimal method; None for the heuristic).

    >>> from sdc.suppression import SuppressionProblem, secondary_suppression
    >>> values = [12, 2, 4, 6]                           # a total and its three parts
    >>> problem = SuppressionProblem.from_arrays(values, [[(0, 1), (1, -1), (2, -1), (3, -1)]],
    ...                                          primary=[1], protection_lower=[0, 1, 0, 0],
    ...                                          protection_upper=[0, 1, 0, 0], cost=values)
    >>> pattern = secondary_suppression(problem, "optimal")
    >>> pattern.status
    ('published', 'primary', 'secondary', 'published')
    >>> pattern.secondary, pattern.optimal, pattern.cost
    ([2], True, 6.0)
    >>> pattern.interval(1).feasible_lower, pattern.interval(1).feasible_upper
    (0.0, 6.0)
    """

    suppressed: np.ndarray = field(repr=False)
    status: tuple[str, ...]
    audit: AuditResult = field(repr=False)
    method: str
    optimal: bool
    time_limited: bool
    cost: float
    lower_bound: float | None

    @property
    def secondary(self) -> list[int]:
        """The cells suppressed beyond the primaries."""
        return [k for k, s in enumerate(self.status) if s == "secondary"]

    def interval(self, cell: int) -> CellInterval | None:
        """The audit's interval of a primary cell, or of a secondary one where all intervals were asked for
        (None for a published cell)."""
        return self._intervals.get(cell)

    @cached_property
    def _intervals(self) -> dict[int, CellInterval]:
        return {iv.cell: iv for iv in self.audit.intervals}


def secondary_suppression(problem: SuppressionProblem, method: str = DEFAULT_METHOD, *,
                          time_limit: float = DEFAULT_TIME_LIMIT, intervals: str = "primary") -> SuppressionPattern:
    """The secondary suppression pattern of ``problem`` by ``method``: 'heuristic' (fast, after sdcTable's
    SIMPLEHEURISTIC), 'optimal' (minimum cost by mixed-integer programming; ``time_limit`` seconds, then
    the heuristic completes it with a TimeLimitWarning), 'hypercube' (τ-Argus's hypercubes, witnessed),
    'gauss' (GaussSuppression's elimination against exact disclosure, then the heuristic for the protection
    intervals, then pruned) or 'auto' (the default: count tables of up to AUTO_OPTIMAL_CELLS cells, or
    AUTO_OPTIMAL_PLANE_CELLS in two dimensions, by the optimal method where it proves its optimum within
    AUTO_OPTIMAL_ROUNDS master problems; otherwise the hypercube from AUTO_HYPERCUBE_CELLS cells where the cells
    have their codes, else the heuristic; the pattern's ``method`` says which ran). The pattern is audited
    before it is returned; one
    that fails its audit raises SdcError naming the cells. Integer tables (counts, whole-number magnitudes)
    are also protected against an attacker who knows that (IntegerCheckWarning where that check is skipped).
    ``intervals``: what the pattern's audit holds besides its verdict: 'primary' the interval of every primary
    cell (what protection is judged by), 'all' also of every secondary suppression (two more LPs per cell: an
    audit layout shows them), 'none' nothing (the verdict alone, where any feasible table an LP found already
    shows that a cell reaches its bound: at 10^4 cells a tenth of the LPs).

    A 2 x 2 count table with totals; (a, x) = 2 is primary under freq:3 and needs one more or one less:

    >>> from sdc.suppression import SuppressionProblem, secondary_suppression
    >>> keys = ["a,x", "a,y", "a,T", "b,x", "b,y", "b,T", "T,x", "T,y", "T,T"]
    >>> values = [2, 7, 9, 6, 8, 14, 8, 15, 23]
    >>> relations = [[(2, 1), (0, -1), (1, -1)], [(5, 1), (3, -1), (4, -1)], [(8, 1), (6, -1), (7, -1)],
    ...              [(6, 1), (0, -1), (3, -1)], [(7, 1), (1, -1), (4, -1)], [(8, 1), (2, -1), (5, -1)]]
    >>> problem = SuppressionProblem.from_arrays(values, relations, primary=[0], protection_lower=[1] + [0] * 8,
    ...     protection_upper=[1] + [0] * 8, cost=values, lower=[1] * 9, freq=values, magnitude=False, labels=keys)
    >>> pattern = secondary_suppression(problem)
    >>> [keys[k] for k in pattern.secondary]
    ['a,y', 'b,x', 'b,y']
    >>> cell = pattern.interval(0)
    >>> (cell.feasible_lower, cell.feasible_upper), (cell.required_lower, cell.required_upper), cell.protected
    ((1.0, 7.0), (1.0, 3.0), True)
    """
    if not isinstance(problem, SuppressionProblem):
        raise SdcError(f"secondary_suppression takes a SuppressionProblem, got {type(problem).__name__}")
    if method not in METHODS:
        raise SdcError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if intervals not in INTERVALS:
        raise SdcError(f"intervals must be one of {', '.join(INTERVALS)}, got {intervals!r}")
    time_limit = time_limit_seconds(time_limit)  # whichever method runs: a wrong value is wrong for all
    method, found = _auto_optimal(problem, time_limit) if method == "auto" else (method, None)
    suppressed, witnesses, proven, bound = found or _method_pattern(problem, method, time_limit)
    limited = method == "optimal" and not proven
    remainder = method == "hypercube"
    if problem.integer and (not remainder or len(witnesses) < int(problem.sensitive.sum())):
        # the LP's pattern may still give a cell away to one who knows cells are whole numbers (a hypercube's
        # witnesses are tables of whole numbers: only the cells without one are checked)
        witnessed = [w.target for w in witnesses]
        grown, _ = integer_safe_pattern(problem, suppressed, **_integer_limits(problem, remainder, witnessed))
        proven = proven and bool((grown == suppressed).all())  # a grown pattern is no longer proven minimal
        suppressed = grown
    return _checked_pattern(problem, suppressed, method, proven, limited, bound, intervals, witnesses)


def chosen_method(problem: SuppressionProblem, method: str) -> str:
    """The method that ``method`` names for ``problem`` where no MILP is tried: itself, or for 'auto' the
    hypercube where the problem has at least AUTO_HYPERCUBE_CELLS cells with their codes in one hierarchy per
    dimension (what it needs), else the heuristic."""
    if method != "auto":
        return method
    if problem.coordinates is None or len(problem.values) < AUTO_HYPERCUBE_CELLS:
        return "heuristic"
    try:
        grid_of(problem)  # relations the hypercube cannot take are refused here, naming the relation
    except SdcError as refused:
        _log.info("auto: the heuristic (%s)", refused)
        return "heuristic"
    _log.info("auto: the hypercube (%d cells with their codes)", len(problem.values))
    return "hypercube"


def optimal_first(problem: SuppressionProblem) -> bool:
    """Whether 'auto' tries the optimal method first: a table of counts (a magnitude table's singleton rule is the
    heuristic's) of at most AUTO_OPTIMAL_CELLS cells, or AUTO_OPTIMAL_PLANE_CELLS where every cell has two codes,
    sizes at which the MILP mostly closes its gap in seconds (three dimensions: 125 cells in 39 rounds, 3.7 s;
    319 cells not in 30 s)."""
    if problem.magnitude or not np.all(np.isfinite(problem.upper)):
        return False
    cells = len(problem.values)
    two_codes = problem.coordinates is not None and all(len(c) == 2 for c in problem.coordinates)
    return cells <= AUTO_OPTIMAL_CELLS or (two_codes and cells <= AUTO_OPTIMAL_PLANE_CELLS)


def _auto_optimal(problem: SuppressionProblem, time_limit: float) -> tuple[str, tuple | None]:
    """Method 'auto': the optimal method's pattern where optimal_first and the MILP proves it within
    AUTO_OPTIMAL_ROUNDS (the method, its _method_pattern tuple), else the method chosen_method names and None."""
    if not optimal_first(problem):
        return chosen_method(problem, "auto"), None
    try:
        result = proven_optimal_pattern(problem, rounds=AUTO_OPTIMAL_ROUNDS,
                                        time_limit=min(time_limit, DEFAULT_TIME_LIMIT))
    except SdcError as refused:  # no pattern at all: the heuristic's refusal names the cells
        _log.info("auto: %s; the heuristic", refused)
        return chosen_method(problem, "auto"), None
    if result is None:
        _log.info("auto: the optimal method did not prove its optimum in %d rounds; the heuristic",
                  AUTO_OPTIMAL_ROUNDS)
        return chosen_method(problem, "auto"), None
    _log.info("auto: the optimal method (%d cells, proven)", len(problem.values))
    return "optimal", (result.suppressed, [], True, result.lower_bound)


def _method_pattern(problem: SuppressionProblem, method: str, time_limit: float) -> tuple:
    """The method's pattern before the integer check and the audit: (suppressed, witnesses, proven minimal, lower
    bound on the minimum cost)."""
    if method == "heuristic":
        return prune_pattern(problem, heuristic_pattern(problem)), [], False, None
    if method == "gauss":  # exact disclosure by elimination, then the intervals by the LP heuristic
        return prune_pattern(problem, heuristic_pattern(problem, start=gauss_pattern(problem))), [], False, None
    if method == "hypercube":
        table = problem.method_table()
        suppressed, witnesses, failed = hypercube_pattern(problem, table)
        if failed:  # no hypercube fits these cells' bounds: the LP heuristic completes the pattern for them
            _log.info("hypercube: %d sensitive cells without a hypercube; the heuristic completes them", len(failed))
            # only they: a verified witness stays one as more cells are suppressed, so its cell needs no LP
            proven = verified_witnesses(problem, table, suppressed, list(witnesses))
            suppressed = heuristic_pattern(problem, start=suppressed, protected=np.flatnonzero(proven))
        # hypercubes overlap and each is chosen alone: many of their cells are not needed by the whole pattern,
        # as the LPs show (groups up to PRUNE_GROUP_CELLS), and in larger groups as other hypercubes show
        suppressed, witnesses = prune_hypercubes(problem, table, suppressed, witnesses, larger_than=PRUNE_GROUP_CELLS)
        suppressed = prune_pattern(problem, suppressed)
        proven = verified_witnesses(problem, table, suppressed, list(witnesses))
        return suppressed, [w for w in witnesses if proven[w.target]], False, None
    result = optimal_pattern(problem, time_limit=time_limit)
    return result.suppressed, [], result.proven, result.lower_bound


def _integer_limits(problem: SuppressionProblem, remainder: bool, witnessed) -> dict:
    """integer_safe_pattern's options: the cells without a witness, in larger groups, after method hypercube
    (none for the other methods: its own limits)."""
    if not remainder:
        return {}
    without = problem.sensitive.copy()
    without[list(witnessed)] = False
    return {"max_cells": INTEGER_CHECK_CELLS * REMAINDER_INTEGER_FACTOR, "only": np.flatnonzero(without)}


def _verdict(table: AuditTable, suppressed, witnessed,
             integer_cells: int = INTEGER_CHECK_CELLS) -> tuple[AuditResult, list[int], dict[int, str]]:
    """The audit's verdict without intervals: (an empty AuditResult, the sensitive cells an attacker narrows below
    their protection, those whose integer check was skipped -> why). The same LPs (and MILPs in integer tables)
    as audit_pattern, but a bound that a feasible table found so far already reaches needs no LP of its own, and
    a cell ``witnessed`` (a verified witness table reaches both its ends, in whole numbers where the table is
    integer) needs none at all; ``integer_cells``: the largest group whose integer check is done."""
    only = np.flatnonzero(table.sensitive & ~witnessed)
    failures, why = (unprotected_cells(table, suppressed, only=only) if only.size else []), {}
    if table.integer and not failures and only.size:
        failures, _ = integer_failures(table, suppressed, only=only, why=why, max_cells=integer_cells)
    return AuditResult([]), failures, why


def _checked_pattern(problem: SuppressionProblem, suppressed, method: str, proven: bool, limited: bool,
                     bound: float | None, intervals: str = "all", witnesses: list[Witness] = ()) -> SuppressionPattern:
    """The pattern after its audit (as scipy's _check_result): never one that leaves a cell unprotected.
    ``witnesses`` (method hypercube): each is checked on its own, and a cell it proves needs no LP in the verdict."""
    suppressed = np.asarray(suppressed, dtype=bool)
    for wrong, what in ((problem.sensitive & ~suppressed, "must be suppressed but is published"),
                        (problem.forced_published & suppressed, "must be published but is suppressed")):
        if wrong.any():
            raise SdcError(f"secondary suppression ({method}): {problem.labels[int(np.argmax(wrong))]} {what}")
    _log.info("audit: %d primary cells among %d suppressed cells", int(problem.primary.sum()), int(suppressed.sum()))
    judged = dict(sensitive=problem.primary, protection_lower=problem.protection_lower,
                  protection_upper=problem.protection_upper, lower=problem.lower, upper=problem.upper,
                  integer=problem.integer)
    integer_cells = INTEGER_CHECK_CELLS * (REMAINDER_INTEGER_FACTOR if method == "hypercube" else 1)
    # each witness checked on its own against the judged requirements: a cell it proves needs no LP in the
    # verdict, and (a table of whole numbers) no integer check where intervals are asked for
    table = AuditTable(problem.values, problem.relations, **judged) if intervals == "none" or witnesses else None
    witnessed = (verified_witnesses(problem, table, suppressed, list(witnesses)) if witnesses
                 else np.zeros(len(problem.values), bool))
    if witnesses:
        _log.info("audit: %d of %d primary cells proven by their witness tables",
                  int((witnessed & problem.primary).sum()), int(problem.primary.sum()))
    if intervals == "none":
        audit, failures, unchecked = _verdict(table, suppressed, witnessed, integer_cells)
    else:
        audit = audit_pattern(problem.values, suppressed, problem.relations, integer_cells=integer_cells,
                              only=None if intervals == "all" else np.flatnonzero(problem.primary), **judged)
        failures = [f.cell for f in audit.failures]
        unchecked = {iv.cell: iv.integer_skipped for iv in audit.unchecked if not witnessed[iv.cell]}
    if failures:  # never emit a pattern that fails its own audit
        names = "; ".join(problem.labels[cell] for cell in failures)
        raise SdcError(f"internal: the {method} pattern fails the audit for {names} (cells {failures})")
    if unchecked:
        warnings.warn(IntegerCheckWarning(list(unchecked), list(unchecked.values())), stacklevel=3)
    status = tuple("primary" if p else "empty" if e else "secondary" if s else "published"
                   for p, e, s in zip(problem.primary, problem.empty, suppressed))
    return SuppressionPattern(suppressed=suppressed, status=status, audit=audit, method=method, optimal=proven,
                              time_limited=limited, cost=float(problem.cost[suppressed].sum()), lower_bound=bound)
