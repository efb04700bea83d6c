"""Optimal secondary suppression by mixed-integer programming (reference suppression.md §2.8, the compact
"perturbation flow" model of Fischetti and Salazar), solved with scipy.optimize.milp (HiGHS).

Variables: x_i in {0, 1} (1 = suppressed; primaries fixed at 1, forced-publish cells at 0) and, for every
protection requirement r = (primary k, direction d) with d = +UPL_k or -LPL_k, flows f+_r, f-_r >= 0:

    minimise  sum_i cost_i x_i
    subject to M (f+_r - f-_r) = 0               the table stays additive
               f+_{r,k} - f-_{r,k} = d           cell k moves by its protection level
               f+_{r,i} <= (upper_i - a_i) x_i   only suppressed cells move, within their bounds
               f-_{r,i} <= (a_i - lower_i) x_i

Because the attacker's feasible set is convex and contains the true table, a pattern admits these flows
exactly when every primary can reach a - LPL and a + UPL: the optimum is the cheapest pattern that passes
the LP audit (audit.py), which the caller can confirm.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import bmat, csr_matrix, diags, identity, lil_matrix

from ..errors import SdcError
from .audit import AUDIT_TOLERANCE, AuditTable, default_upper, forced_mask, relation_matrix


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
    """
    a = np.asarray(values, dtype=float)
    n = len(a)
    primary = np.asarray(primary, dtype=bool)
    lpl = np.asarray(protection_lower, dtype=float)
    upl = np.asarray(protection_upper, dtype=float)
    cost = np.asarray(cost, dtype=float)
    lower = np.zeros(n) if lower is None else np.asarray(lower, dtype=float)
    upper = default_upper(a) if upper is None else np.asarray(upper, dtype=float)
    forced = forced_mask(n, primary, forced_publish)
    if np.any(~np.isfinite(upper)):
        raise SdcError("optimal suppression needs finite upper bounds for every cell")
    m = relation_matrix(constraints, n)
    # protection intervals clipped to what the bounds and relations allow at all (as in the audit)
    table = AuditTable(a, constraints, sensitive=primary, protection_lower=lpl, protection_upper=upl,
                       lower=lower, upper=upper)
    requirements = []
    for k in np.flatnonzero(primary):
        table.clip_to_a_priori(k)
        for d in (table.required_upper[k] - a[k], table.required_lower[k] - a[k]):
            if abs(d) > AUDIT_TOLERANCE:
                requirements.append((k, d))
    if not requirements:
        return primary.copy()
    up_room = np.maximum(upper - a, 0.0)
    down_room = np.maximum(a - lower, 0.0)
    blocks_eq, rhs_eq, blocks_ub = [], [], []
    r_count = len(requirements)
    m_sparse = csr_matrix(m)
    rows = m.shape[0]
    # variable layout: x (n), then for each requirement f+ (n), f- (n)
    for r, (k, d) in enumerate(requirements):
        unit = lil_matrix((1, n))
        unit[0, k] = 1.0
        flow_cols = [None] * (2 * r_count)
        flow_cols[2 * r] = bmat([[m_sparse], [unit]])
        flow_cols[2 * r + 1] = bmat([[-m_sparse], [-unit]])
        blocks_eq.append([csr_matrix((rows + 1, n))] + flow_cols)
        rhs_eq.append(np.concatenate([np.zeros(rows), [d]]))
        cap_plus = [None] * (2 * r_count)
        cap_plus[2 * r] = identity(n)
        cap_minus = [None] * (2 * r_count)
        cap_minus[2 * r + 1] = identity(n)
        blocks_ub.append([-diags(up_room)] + cap_plus)
        blocks_ub.append([-diags(down_room)] + cap_minus)
    for block in blocks_eq + blocks_ub:  # give every empty flow block its shape
        for j in range(1, len(block)):
            if block[j] is None:
                block[j] = csr_matrix((block[0].shape[0], n))
    a_eq = bmat(blocks_eq, format="csr")
    a_ub = bmat(blocks_ub, format="csr")
    rhs = np.concatenate(rhs_eq)
    total = n + 2 * n * r_count
    objective = np.concatenate([cost, np.zeros(2 * n * r_count)])
    integrality = np.concatenate([np.ones(n), np.zeros(2 * n * r_count)])
    low = np.zeros(total)
    high = np.full(total, np.inf)
    low[:n] = primary.astype(float)
    high[:n] = np.where(forced, 0.0, 1.0)
    result = milp(
        objective,
        constraints=[LinearConstraint(a_eq, rhs, rhs), LinearConstraint(a_ub, -np.inf, 0.0)],
        integrality=integrality,
        bounds=Bounds(low, high),
        options={"time_limit": time_limit},
    )
    if result.x is None:
        raise SdcError(f"optimal suppression found no pattern ({result.message}); check protection levels and bounds")
    if result.status != 0:  # stopped at the time limit with a feasible pattern that is not proven optimal
        gap = getattr(result, "mip_gap", None)
        warnings.warn(
            f"optimal suppression stopped at the {time_limit:g} s time limit: the pattern is safe but not proven "
            f"optimal" + (f" (MIP gap {100 * gap:.1f} %)" if gap is not None else ""),
            stacklevel=2,
        )
    return result.x[:n] > 0.5
