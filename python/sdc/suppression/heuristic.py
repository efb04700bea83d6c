"""Fast secondary suppression: a constraint pass plus an attacker loop (after sdcTable's SIMPLEHEURISTIC,
reference suppression.md §2.4), for tables too large for the MILP.

Phase A: a relation with exactly one suppressed cell would give that cell away, so suppress the
cheapest publishable cell of it; repeat until no relation has a lone suppressed cell. Singletons: a
relation whose suppressed cells are a singleton (frequency 1) and one other cell lets the singleton
recompute the other, so a third cell is suppressed (when ``freq`` is given).
Phase B: run the LP audit; for every sensitive cell whose feasible interval is too narrow, try the
cheapest promising publishable cells near it in turn (up to TRIAL_CELLS) and keep the first that gives
the cell its protection interval (like sdcTable, which takes the cheapest cell of the sub-table); if none
does, suppress the cheapest publishable cell among the relations that contain it (preferring relations
with few suppressions); for a cell that stays unprotected after LOCAL_TRIES such steps (in three or more
dimensions protection often needs a whole cube of new suppressions at once), solve the cheapest
protecting perturbation as an LP (protection_flow) and suppress every cell it moves;
then Phase A again; repeat until the audit passes. The result always passes the audit, or the function
raises.

Costs decide which cell goes: pass e.g. value, frequency or 1 per cell, multiplied by a level weight so
that totals are kept (seed 003's principle: "je höher die Hierarchiestufe, desto wertvoller").
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix, hstack, vstack

from ..errors import SdcError
from .audit import AUDIT_TOLERANCE, AuditTable, default_upper, forced_mask, unprotected_cells

MAX_ATTACK_ROUNDS = 200
# In the attack step, how many of the cheapest promising cells are tried before a relation-local choice,
# and how often a cell gets a relation-local choice before the protection LP decides for it.
TRIAL_CELLS = 12
LOCAL_TRIES = 2


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
    start=None,
) -> np.ndarray:
    """Boolean mask of suppressed cells (primaries included) that passes the LP audit.
    ``start``: cells suppressed from the outset besides the primaries (e.g. a partial optimal pattern)."""
    a = np.asarray(values, dtype=float)
    n = len(a)
    sensitive = np.asarray(primary, dtype=bool).copy()
    suppressed = sensitive | (np.zeros(n, bool) if start is None else np.asarray(start, dtype=bool))
    cost = np.asarray(cost, dtype=float)
    forced = forced_mask(n, sensitive, forced_publish)
    upper = default_upper(a) if upper is None else np.asarray(upper, dtype=float)
    table = AuditTable(a, constraints, sensitive=sensitive, protection_lower=protection_lower,
                       protection_upper=protection_upper, lower=lower, upper=upper)
    members = [np.array([cell for cell, _ in relation], dtype=int) for relation in constraints]
    relations_of = [[] for _ in range(n)]
    for r, cells in enumerate(members):
        for cell in cells:
            relations_of[cell].append(r)
    candidates = ~forced
    hidden_count = np.array([int(suppressed[cells].sum()) for cells in members])

    def suppress(cell):
        suppressed[cell] = True
        for r in relations_of[cell]:
            hidden_count[r] += 1

    def cheapest(cells):
        open_cells = cells[~suppressed[cells] & candidates[cells]]
        return int(open_cells[np.lexsort((open_cells, cost[open_cells]))[0]]) if open_cells.size else None

    def constraint_pass(first_run):
        # a relation with one suppressed cell gives it away; revisit only relations that changed
        queue = list(range(len(members)))
        while queue:
            r = queue.pop()
            cells = members[r]
            lone = hidden_count[r] == 1
            singleton_pair = (first_run and freq is not None and hidden_count[r] == 2
                              and any(freq[c] == 1 for c in cells[suppressed[cells]]))
            if lone or singleton_pair:
                pick = cheapest(cells)
                if pick is not None:
                    suppress(pick)
                    queue.extend(relations_of[pick])

    incidence = (abs(table.matrix) > 0).astype(np.int32).tocsr()  # relations x cells
    incidence_t = incidence.T.tocsr()

    def promising(cell):
        """Open cells that could widen ``cell``'s interval, cheapest first: they share a relation with
        the group of suppressed cells ``cell`` belongs to, and every relation they are in already holds
        a suppressed cell (else the new cell would be exposed at once and add no freedom)."""
        group = next(cells for cells in table.components(suppressed) if cell in cells)
        group_mask = np.zeros(n, np.int32)
        group_mask[group] = 1
        near_relations = (incidence @ group_mask) > 0
        near_cells = (incidence_t @ near_relations.astype(np.int32)) > 0
        exposed = (incidence_t @ (hidden_count == 0).astype(np.int32)) > 0
        found = np.flatnonzero(near_cells & ~exposed & ~suppressed & candidates)
        return found[np.lexsort((found, cost[found]))]

    constraint_pass(first_run=True)
    cache: dict = {}
    local_tries: dict[int, int] = {}
    for _ in range(MAX_ATTACK_ROUNDS):
        failures = unprotected_cells(table, suppressed, cache=cache)
        if not failures:
            return suppressed
        added = False
        for cell in failures:
            if not unprotected_cells(table, suppressed, only=[cell], cache=cache):
                continue  # fixed by a cell added for an earlier failure of this round
            fixed = False
            for trial in promising(cell)[:TRIAL_CELLS]:
                attempt = suppressed.copy()
                attempt[trial] = True
                if not unprotected_cells(table, attempt, only=[cell]):
                    suppress(trial)
                    added = fixed = True
                    break
            if fixed:
                continue
            local_tries[cell] = local_tries.get(cell, 0) + 1
            if local_tries[cell] <= LOCAL_TRIES:
                # the cheapest open cell of the relation with the fewest suppressions around the cell
                pick = next((p for p in (cheapest(members[r]) for r in
                                         sorted(relations_of[cell], key=lambda r: hidden_count[r])) if p is not None), None)
                if pick is not None:
                    suppress(pick)
                    added = True
                    continue
            for extra in protection_flow(table, cell, suppressed, cost, candidates):
                suppress(extra)
                added = True
        if not added:
            raise SdcError("secondary suppression: sensitive cells cannot reach their protection intervals even "
                           f"with every publishable cell suppressed: cells {failures}")
        constraint_pass(first_run=False)
    raise SdcError(f"secondary suppression: no safe pattern after {MAX_ATTACK_ROUNDS} attack rounds")


def protection_flow(table: AuditTable, cell: int, suppressed, cost, candidates) -> list[int]:
    """Open cells to suppress so that ``cell`` reaches both ends of its protection interval: for each
    direction, the cheapest perturbation of the table that keeps every relation, moves ``cell`` by its
    protection level and stays within the a-priori bounds (the LP relaxation of one requirement of the
    MILP in optimal.py; a unit of movement of an open cell costs cost / room, suppressed cells are free).
    Every cell the perturbation moves is suppressed, so the pattern then admits it: the requirement holds."""
    n = len(table.values)
    a = table.values
    up_room = np.where(suppressed | candidates, np.maximum(table.upper - a, 0.0), 0.0)
    down_room = np.where(suppressed | candidates, np.maximum(a - table.lower, 0.0), 0.0)
    up_room = np.minimum(up_room, np.abs(a).max(initial=1.0) * 1e3)  # finite rooms keep the LP bounded
    moving = np.zeros(n, bool)
    for d in (table.required_upper[cell] - a[cell], table.required_lower[cell] - a[cell]):
        if abs(d) <= AUDIT_TOLERANCE:
            continue
        open_cell = ~suppressed
        unit_up = np.where(open_cell, cost / np.maximum(up_room, 1e-9), 0.0)
        unit_down = np.where(open_cell, cost / np.maximum(down_room, 1e-9), 0.0)
        target = csr_matrix(([1.0, -1.0], ([0, 0], [cell, n + cell])), shape=(1, 2 * n))
        a_eq = vstack([hstack([table.matrix, -table.matrix]), target], format="csr")
        b_eq = np.concatenate([np.zeros(table.matrix.shape[0]), [d]])
        lp = linprog(np.concatenate([unit_up, unit_down]), A_eq=a_eq, b_eq=b_eq,
                     bounds=np.column_stack([np.zeros(2 * n), np.concatenate([up_room, down_room])]), method="highs")
        if lp.status != 0:
            continue  # no perturbation reaches the bound: the caller reports the cell
        flow = lp.x[:n] + lp.x[n:]
        moving |= flow > AUDIT_TOLERANCE * max(1.0, abs(d))
    return [int(c) for c in np.flatnonzero(moving & ~suppressed)]
