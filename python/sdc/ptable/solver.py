"""Maximum-entropy distribution of one ptable row, and the range of variances a row can reach.

One row of a count ptable is the convex program (R package ptable)::

    maximise   -Σ p_k log p_k
    subject to Σ p_k = 1,  Σ v_k p_k = 0,
               Σ v_k² p_k <= V   (optim 1)   or   = V   (optim 4),
               p_k >= lower_k,
               p_k <= p_{k+1} for the entries left of v = 0   (mono: left tail rises towards 0).

The objective is strictly concave, so the optimum is unique. We solve the Lagrange dual instead of the
primal: for multipliers y the inner minimum is attained at ``p_k = max(lower_k, exp(-1 - (Mᵀy)_k))``, which
makes the dual a smooth concave function of a handful of multipliers (two or three equalities plus the
inequalities). L-BFGS-B maximises it from y = 0, then Newton's method on the active constraints polishes
the result to machine precision. Neither step depends on a start value for p, unlike the SLSQP call of
the R package ptable; the result is the same optimum to about 1e-12.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog, minimize

# Every allowed target keeps at least this probability (as in ptable), so every target can occur; defined
# with the parameters, whose check of V relies on it.
from sdc.ptable.params import MIN_PROBABILITY

# Residual of the constraints (sum, mean, variance) that a solution must meet.
CONSTRAINT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RowProblem:
    """The convex program of one ptable row."""

    v: np.ndarray  # noise values of the support, ascending
    lower: np.ndarray  # lower bound of each probability
    variance: float | None  # V; None drops the variance constraint
    equal_variance: bool  # optim 4: variance = V instead of <= V
    mono: bool

    def constraint_matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(A_eq, b_eq, G, h) with A_eq p = b_eq and G p <= h (bounds on p excluded)."""
        n = len(self.v)
        a_eq = [np.ones(n), self.v.astype(float)]
        b_eq = [1.0, 0.0]
        g, h = [], []
        if self.variance is not None:
            target = a_eq if self.equal_variance else g
            (b_eq if self.equal_variance else h).append(float(self.variance))
            target.append(self.v.astype(float) ** 2)
        g_mono, h_mono = self.mono_constraints()
        g.extend(g_mono)
        h.extend(h_mono)
        return np.array(a_eq), np.array(b_eq), np.array(g).reshape(-1, n), np.array(h)

    def mono_constraints(self) -> tuple[list[np.ndarray], list[float]]:
        """p_k - p_{k+1} <= 0 for every entry left of v = 0 (none if 0 is not in the support)."""
        n = len(self.v)
        zero = np.flatnonzero(self.v == 0)
        if not self.mono or zero.size == 0:
            return [], []
        rows = []
        for k in range(int(zero[0])):
            row = np.zeros(n)
            row[k], row[k + 1] = 1.0, -1.0
            rows.append(row)
        return rows, [0.0] * len(rows)


def variance_range(problem: RowProblem) -> tuple[float, float] | None:
    """Smallest and largest variance of any distribution meeting every constraint but the variance one.

    Two linear programs (HiGHS). None when no distribution meets the constraints at all.
    """
    free = RowProblem(problem.v, problem.lower, None, False, problem.mono)
    a_eq, b_eq, g, h = free.constraint_matrices()
    bounds = list(zip(problem.lower, np.ones(len(problem.v))))
    v2 = problem.v.astype(float) ** 2
    result = []
    for sign in (1.0, -1.0):
        lp = linprog(
            sign * v2,
            A_ub=g if len(h) else None,
            b_ub=h if len(h) else None,
            A_eq=a_eq,
            b_eq=b_eq,
            bounds=bounds,
            method="highs",
            options={"primal_feasibility_tolerance": 1e-10},
        )
        if lp.status != 0:
            return None
        result.append(float(v2 @ lp.x))
    return result[0], result[1]


def max_entropy(problem: RowProblem) -> np.ndarray:
    """The unique maximum-entropy probabilities of the row (caller checks feasibility first)."""
    a_eq, b_eq, g, h = problem.constraint_matrices()
    m = np.vstack([a_eq, g])
    rhs = np.concatenate([b_eq, h])
    n_eq = len(b_eq)
    lower = problem.lower

    def primal(y: np.ndarray) -> np.ndarray:
        exponent = np.minimum(-1.0 - m.T @ y, 700.0)
        return np.maximum(lower, np.exp(exponent))

    def negative_dual(y: np.ndarray) -> tuple[float, np.ndarray]:
        p = primal(y)
        residual = m @ p - rhs
        return -(float(np.sum(p * np.log(p))) + float(y @ residual)), -residual

    bounds = [(None, None)] * n_eq + [(0.0, None)] * len(h)
    fit = minimize(
        negative_dual,
        np.zeros(len(rhs)),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 20000, "ftol": 1e-16, "gtol": 1e-13, "maxcor": 30},
    )
    y = _newton_polish(fit.x, m, rhs, n_eq, lower, primal)
    return primal(y)


def _newton_polish(y, m, rhs, n_eq, lower, primal):
    """Newton's method on the constraints that are active at the L-BFGS-B point.

    Returns the polished multipliers if they still satisfy the optimality conditions (inequality
    multipliers >= 0, inactive inequalities satisfied), else the unpolished ones.
    """
    p = primal(y)
    slack = rhs[n_eq:] - m[n_eq:] @ p
    active = np.concatenate([np.ones(n_eq, bool), (y[n_eq:] > 1e-12) | (np.abs(slack) < 1e-9)])
    m_a, rhs_a = m[active], rhs[active]
    best = y.copy()
    best_norm = np.linalg.norm(m_a @ p - rhs_a)
    current = y.copy()
    for _ in range(50):
        p = primal(current)
        residual = m_a @ p - rhs_a
        if np.linalg.norm(residual) < 1e-15:
            break
        free = p > lower  # entries at their lower bound do not move with y
        jacobian = -(m_a[:, free] * p[free]) @ m_a[:, free].T
        step = np.linalg.lstsq(jacobian, residual, rcond=None)[0]
        trial = current.copy()
        scale = 1.0
        for _ in range(30):
            trial[active] = current[active] - scale * step
            if np.linalg.norm(m_a @ primal(trial) - rhs_a) < np.linalg.norm(residual):
                break
            scale /= 2
        else:
            break
        current = trial
    p = primal(current)
    norm = np.linalg.norm(m_a @ p - rhs_a)
    multipliers_ok = np.all(current[n_eq:][active[n_eq:]] >= -1e-10)
    inactive_ok = np.all(m[n_eq:][~active[n_eq:]] @ p <= rhs[n_eq:][~active[n_eq:]] + 1e-12)
    if norm < best_norm and multipliers_ok and inactive_ok:
        return current
    return best
