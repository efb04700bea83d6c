"""Fast secondary suppression: a constraint pass plus an attacker loop (after sdcTable's SIMPLEHEURISTIC,
reference suppression.md §2.4), for tables too large for the MILP.

Phase A: a relation with exactly one suppressed cell would give that cell away, so suppress the
cheapest publishable cell of it; repeat until no relation has a lone suppressed cell. Singletons: a
relation whose suppressed cells are a singleton (frequency 1) and one other cell lets the singleton
recompute the other, so a third cell is suppressed (when ``freq`` is given).
Phase B: run the LP audit; for every sensitive cell whose feasible interval is too narrow, try the
cheapest publishable cells of the table in turn (up to TRIAL_CELLS) and keep the first that gives the
cell its protection interval (like sdcTable, which takes the cheapest cell of the sub-table); if none
does, suppress the cheapest publishable cell among the relations that contain it (preferring relations
with few suppressions); then Phase A again; repeat until the audit passes. The result always passes the audit,
or the function raises.

Costs decide which cell goes: pass e.g. value, frequency or 1 per cell, multiplied by a level weight so
that totals are kept (seed 003's principle: "je höher die Hierarchiestufe, desto wertvoller").
"""

from __future__ import annotations

import numpy as np

from ..errors import SdcError
from .audit import audit_pattern, default_upper, forced_mask

MAX_ATTACK_ROUNDS = 200
# In the attack step, how many of the cheapest open cells are tried before a relation-local choice.
TRIAL_CELLS = 12


def heuristic_pattern(
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
    freq=None,
) -> np.ndarray:
    """Boolean mask of suppressed cells (primaries included) that passes the LP audit."""
    a = np.asarray(values, dtype=float)
    n = len(a)
    suppressed = np.asarray(primary, dtype=bool).copy()
    sensitive = suppressed.copy()
    cost = np.asarray(cost, dtype=float)
    forced = forced_mask(n, sensitive, forced_publish)
    upper = default_upper(a) if upper is None else np.asarray(upper, dtype=float)
    members = [[cell for cell, _ in relation] for relation in constraints]
    relations_of = [[] for _ in range(n)]
    for r, cells in enumerate(members):
        for cell in cells:
            relations_of[cell].append(r)
    candidates = ~forced

    def cheapest(cells):
        open_cells = [c for c in cells if not suppressed[c] and candidates[c]]
        return min(open_cells, key=lambda c: (cost[c], c)) if open_cells else None

    def constraint_pass(first_run):
        changed = True
        while changed:
            changed = False
            for cells in members:
                hidden = [c for c in cells if suppressed[c]]
                if len(hidden) == 1 or (
                    first_run and freq is not None and len(hidden) == 2 and any(freq[c] == 1 for c in hidden)
                ):
                    pick = cheapest(cells)
                    if pick is not None:
                        suppressed[pick] = True
                        changed = True

    constraint_pass(first_run=True)
    for _ in range(MAX_ATTACK_ROUNDS):
        result = audit_pattern(a, suppressed, constraints, sensitive=sensitive, protection_lower=protection_lower,
                               protection_upper=protection_upper, lower=lower, upper=upper)
        if result.passed:
            return suppressed
        added = False
        audit_args = dict(sensitive=sensitive, protection_lower=protection_lower, protection_upper=protection_upper,
                          lower=lower, upper=upper)
        for failure in result.failures:
            order = sorted((c for c in range(n) if not suppressed[c] and candidates[c]), key=lambda c: (cost[c], c))
            fixed = False
            for trial in order[:TRIAL_CELLS]:
                attempt = suppressed.copy()
                attempt[trial] = True
                check = audit_pattern(a, attempt, constraints, only=[failure.cell], **audit_args)
                if check.passed:
                    suppressed[trial] = True
                    added = fixed = True
                    break
            if fixed:
                continue
            relations = sorted(relations_of[failure.cell], key=lambda r: sum(suppressed[c] for c in members[r]))
            for r in relations:
                pick = cheapest(members[r])
                if pick is not None:
                    suppressed[pick] = True
                    added = True
                    break
        if not added:
            raise SdcError("secondary suppression: sensitive cells stay unprotected with every relation suppressed; "
                           f"cells {[f.cell for f in result.failures]} cannot reach their protection intervals")
        constraint_pass(first_run=False)
    raise SdcError(f"secondary suppression: no safe pattern after {MAX_ATTACK_ROUNDS} attack rounds")
