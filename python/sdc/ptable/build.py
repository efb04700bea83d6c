"""Build a count perturbation table by maximum entropy (R package ptable 1.0.0).

Row 0 is fixed (0 stays 0). Each row i = 1..ncat is solved as a convex program (solver.py); the last
row stands for every original value >= ncat. Intervals are the cumulative probabilities rounded to
8 decimals and p is re-derived from the rounded bounds, as ptable does.

A row that cannot reach the variance V is an error that names the row and the largest variance it can
reach. With ``allow_lower_variance`` the reference's behaviour applies instead: the stay-probability
bound is lowered in steps of 0.05 (at most 20 solves per row) and rows that still miss V are listed in
the build's warnings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sdc.conventions import INTERVAL_SCALE
from sdc.errors import SdcError
from sdc.ptable.params import PTableParams
from sdc.ptable.solver import CONSTRAINT_TOLERANCE, MIN_PROBABILITY, RowProblem, max_entropy, variance_range
from sdc.ptable.table import PTable

PSTAY_STEP = 0.05
MAX_SOLVES = 20
# A row "reaches" V when its variance rounds to V at 3 decimals (ptable's check).
VARIANCE_REACHED = 5e-4


@dataclass(frozen=True)
class RowOutcome:
    """How row i was solved: solves used, final stay bound, and the variance it reached."""

    i: int
    solves: int
    pstay_bound: float
    variance: float
    reached: bool


@dataclass(frozen=True)
class PTableBuild:
    params: PTableParams
    table: PTable
    rows: list[RowOutcome]
    warnings: list[str] = field(default_factory=list)


def create_ptable(params: PTableParams, allow_lower_variance: bool = False) -> PTableBuild:
    """Build the count ptable for ``params`` by maximum entropy, as ``ptable::create_cnt_ptable`` (R package
    ptable): row 0 stays 0, each row i = 1..ncat is the distribution of the noise v with
    the largest entropy under mean 0 and variance V (at most V with optim 1, exactly V with optim 4), stay
    probability >= pstay and, with mono, a left tail non-decreasing towards 0. Returns a PTableBuild: ``table``
    (the PTable), ``rows`` (how each row was solved) and ``warnings``; raises SdcError naming the row if the
    parameters cannot be met (``allow_lower_variance``: lower the stay bound instead and warn).

    >>> from sdc.ptable import PTableParams, create_ptable
    >>> built = create_ptable(PTableParams(D=3, V=1))
    >>> built.table.max_i, len(built.table), built.warnings
    (3, 19, [])
    >>> [(s.i, round(s.mean, 6) + 0, round(s.variance, 6), round(s.p_sum, 6)) for s in built.table.row_stats()]
    [(0, 0.0, 0.0, 1.0), (1, 0.0, 1.0, 1.0), (2, 0.0, 1.0, 1.0), (3, 0.0, 1.0, 1.0)]
    >>> create_ptable(PTableParams(D=1, V=2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    sdc.errors.SdcError: row i=1 cannot reach V=2: the maximum-entropy distribution of this row has variance 0.66667 ...
    """
    params.validate()
    i_col, j_col, lb_col, ub_col = [0], [0], [0], [INTERVAL_SCALE]
    outcomes = []
    pstay, mono, optim = params.per_row("pstay"), params.per_row("mono"), params.per_row("optim")
    for i in range(1, params.ncat + 1):
        targets = np.array(params.support(i))
        probabilities, outcome = _solve_row(
            params, i, targets - i, float(pstay[i - 1]), bool(mono[i - 1]), int(optim[i - 1]), allow_lower_variance
        )
        outcomes.append(outcome)
        upper = _rounded_cumulative(probabilities, i)
        i_col += [i] * len(targets)
        j_col += targets.tolist()
        lb_col += [0] + upper[:-1]
        ub_col += upper
    table = PTable(np.array(i_col), np.array(j_col), np.array(lb_col), np.array(ub_col))
    warnings = [
        f"row i={o.i} misses V={params.V}: variance {o.variance:.5f} after {o.solves} solves "
        f"(stay bound lowered to {o.pstay_bound:.2f})"
        for o in outcomes
        if not o.reached and o.i > params.js
    ]
    return PTableBuild(params, table, outcomes, warnings)


def _solve_row(params, i, v, pstay, mono, optim, allow_lower_variance) -> tuple[np.ndarray, RowOutcome]:
    has_stay = bool((v == 0).any())
    bound = pstay if has_stay else 0.0
    equal = optim == 4
    for solve in range(1, MAX_SOLVES + 1):
        lower = np.full(len(v), MIN_PROBABILITY)
        if has_stay:
            lower[v == 0] = max(bound, MIN_PROBABILITY)
        problem = RowProblem(v, lower, params.V, equal, mono)
        reachable = variance_range(problem)
        if reachable is None:
            raise SdcError(
                f"row i={i}: no distribution meets the constraints (stay probability >= {bound}, mean 0, "
                f"every target >= {MIN_PROBABILITY}); lower pstay for this row"
            )
        least, most = reachable
        if least > params.V + CONSTRAINT_TOLERANCE:
            raise SdcError(
                f"row i={i}: the least variance this row can have is {least:.10g}, more than V={params.V} (mean 0, "
                f"every allowed target with probability >= {MIN_PROBABILITY:g}"
                + (f", stay probability >= {bound:g}" if has_stay and bound > 0 else "")
                + f"); choose V >= {math.ceil(least * 1e6) / 1e6:.6f}")
        if equal and most < params.V - CONSTRAINT_TOLERANCE:
            probabilities, variance, reached = None, most, False
        else:
            probabilities = max_entropy(problem)
            _check_solution(i, v, probabilities, params.V, equal)
            variance = float(probabilities @ v.astype(float) ** 2)
            reached = abs(variance - params.V) < VARIANCE_REACHED
        # Rows i <= js have no stay entry: nothing to lower (ptable does not retry them either).
        if reached or not has_stay:
            break
        if not allow_lower_variance:
            raise SdcError(_missed_variance_message(params, i, bound, variance, most, optim))
        if solve == MAX_SOLVES:
            break
        bound = max(round(bound - PSTAY_STEP, 10), 0.0)
    if probabilities is None:
        raise SdcError(
            f"row i={i}: optim=4 demands variance = V={params.V}, but the largest variance this row can have "
            f"is {most:.5f}; use optim=1 for this row or a smaller V"
        )
    outcome = RowOutcome(i, solve, bound, variance, reached)
    return probabilities, outcome


def _missed_variance_message(params, i, bound, variance, most, optim) -> str:
    stay = f" with stay probability >= {bound}" if bound > 0 else ""
    if optim == 4:
        reach = f"the largest variance this row can have{stay} is {most:.5f}"
    else:
        reach = (
            f"the maximum-entropy distribution of this row{stay} has variance {variance:.5f} at most "
            f"(any distribution of this row: up to {most:.5f}, e.g. with optim=4)"
        )
    return (
        f"row i={i} cannot reach V={params.V}: {reach}. Choose a smaller V, a larger D, or pass "
        f"--allow-lower-variance (allow_lower_variance=True) to lower the stay bound in steps of {PSTAY_STEP} "
        f"and accept rows that miss V"
    )


def _check_solution(i, v, p, variance, equal) -> None:
    """Never hand back a solver result that breaks a constraint."""
    v = v.astype(float)
    problems = []
    if abs(p.sum() - 1) > CONSTRAINT_TOLERANCE:
        problems.append(f"sum {p.sum():.12f}")
    if abs(p @ v) > CONSTRAINT_TOLERANCE:
        problems.append(f"mean {p @ v:.3e}")
    var = p @ v**2
    if var > variance + CONSTRAINT_TOLERANCE or (equal and abs(var - variance) > CONSTRAINT_TOLERANCE):
        problems.append(f"variance {var:.12f}")
    if problems:
        raise SdcError(f"row i={i}: the solver did not converge ({', '.join(problems)}); please report this")


def _rounded_cumulative(p: np.ndarray, i: int) -> list[int]:
    """Upper interval bounds in 10^-8 units: cumulative sums rounded to 8 decimals, last bound exactly 1."""
    upper = np.rint(np.cumsum(p) * INTERVAL_SCALE).astype(np.int64)
    if upper[-1] != INTERVAL_SCALE:
        raise SdcError(f"row i={i}: probabilities sum to {p.sum():.10f}, not 1")
    return upper.tolist()
