"""Fast secondary suppression: a constraint pass plus an attacker loop (after sdcTable's SIMPLEHEURISTIC,
reference suppression.md §2.4), for tables too large for the MILP.

Phase A: a relation with exactly one suppressed cell would give that cell away, so suppress the
cheapest publishable cell of it; repeat until no relation has a lone suppressed cell. Singletons: a
relation whose suppressed cells are a singleton (frequency 1) and one other cell lets the singleton
recompute the other, so a third cell is suppressed (when ``freq`` is given).
A relation whose suppressed cells' known sum keeps a sensitive one of them short of its protection
interval (each ranges only as far as the others' bounds allow) also gets one more suppressed cell.
Phase B: run the LP audit; for every sensitive cell whose feasible interval is too narrow, try the
cheapest promising publishable cells near it in turn (up to TRIAL_CELLS; only cells whose reduced cost in
the failing LP says they can move its optimum) and keep the first that gives the cell its protection
interval (like sdcTable, which takes the cheapest cell of the sub-table); if none
does, suppress the cheapest publishable cell among the relations that contain it (preferring relations
with few suppressions); for a cell that stays unprotected after LOCAL_TRIES such steps (in three or more
dimensions protection often needs a whole cube of new suppressions at once), solve the cheapest
protecting perturbation as an LP (ProtectionFlow) and suppress every cell it moves;
then Phase A again; repeat until the audit passes. The result always passes the audit, or the function
raises.

Costs decide which cell goes: pass e.g. value, frequency or 1 per cell, optionally multiplied by a level
weight so that totals are kept (pipeline.cell_costs with prefer_low_levels; seed 003's principle: "je
höher die Hierarchiestufe, desto wertvoller").
"""

from __future__ import annotations

import highspy
import numpy as np
from scipy.sparse import csr_matrix, hstack, vstack

from sdc.errors import SdcError
from sdc.suppression.audit import (
    AUDIT_TOLERANCE,
    INTEGER_CHECK_CELLS,
    INTEGER_CHECK_SECONDS,
    AuditTable,
    default_upper,
    forced_mask,
    highs_model,
    integer_failures,
    unprotected_cells,
)

MAX_ATTACK_ROUNDS = 200
MAX_INTEGER_ROUNDS = 50
# In the attack step, how many of the cheapest promising cells are tried before a relation-local choice,
# and how often a cell gets a relation-local choice before the protection LP decides for it.
TRIAL_CELLS = 12
LOCAL_TRIES = 2
# Protection LPs with more columns than this are solved by interior point (then crossover): 6 s instead of
# 38 s by dual simplex with 44,000 columns; simplex is faster on small ones (0.2 s instead of 0.5 s at 9,000).
FLOW_IPM_COLUMNS = 20_000


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
    coefficients = [np.array([coefficient for _, coefficient in relation]) for relation in constraints]
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

    def too_narrow(r):
        """Whether the relation alone keeps a sensitive cell of it from its protection interval: its
        suppressed cells have a known weighted sum, so each ranges only as far as the bounds of the
        others allow. Only one more suppressed cell in the relation can widen that."""
        cells, coefficient = members[r], coefficients[r]
        hidden = suppressed[cells]
        if not sensitive[cells[hidden]].any():
            return False
        cells, coefficient = cells[hidden], coefficient[hidden]
        total = float(coefficient @ a[cells])  # sum of coefficient * value over them: the published rest
        ends = np.stack([coefficient * table.lower[cells], coefficient * table.upper[cells]])
        low, high = ends.min(axis=0), ends.max(axis=0)  # each term's range within the cell's bounds
        for k in np.flatnonzero(sensitive[cells]):
            # coefficient_k * y_k = total - (the other terms)
            ends_k = ((total - np.delete(high, k).sum()) / coefficient[k],
                      (total - np.delete(low, k).sum()) / coefficient[k])
            span = (min(ends_k), max(ends_k))
            if not (table.bound_reached(cells[k], 1.0, span[0]) and table.bound_reached(cells[k], -1.0, span[1])):
                return True
        return False

    def constraint_pass(first_run):
        # a relation with one suppressed cell gives it away; revisit only relations that changed
        queue = list(range(len(members)))
        while queue:
            r = queue.pop()
            cells = members[r]
            lone = hidden_count[r] == 1
            singleton_pair = (first_run and freq is not None and hidden_count[r] == 2
                              and any(freq[c] == 1 for c in cells[suppressed[cells]]))
            if lone or singleton_pair or (hidden_count[r] > 1 and too_narrow(r)):
                pick = cheapest(cells)
                if pick is not None:
                    suppress(pick)
                    queue.extend(relations_of[pick])

    incidence = (abs(table.matrix) > 0).astype(np.int32).tocsr()  # relations x cells
    incidence_t = incidence.T.tocsr()

    def neighbourhood(group):
        """The group and every cell that shares a relation with one of its cells (a mask)."""
        group_mask = np.zeros(n, np.int32)
        group_mask[group] = 1
        near_relations = (incidence @ group_mask) > 0
        return (incidence_t @ near_relations.astype(np.int32)) > 0

    def promising(group):
        """Open cells that could widen the intervals of a group of suppressed cells, cheapest first: they
        share a relation with the group, and every relation they are in already holds a suppressed cell
        (else the new cell would be exposed at once and add no freedom)."""
        exposed = (incidence_t @ (hidden_count == 0).astype(np.int32)) > 0
        found = np.flatnonzero(neighbourhood(group) & ~exposed & ~suppressed & candidates)
        return found[np.lexsort((found, cost[found]))]

    def improving(lp, cells):
        """Which of ``cells`` could move the last solution's objective as one more column: a nonzero
        reduced cost with room in its direction (cells that would join other groups cannot be priced
        here and stay)."""
        reduced = lp.prices(cells)
        return (np.isnan(reduced) | ((reduced < -AUDIT_TOLERANCE) & (table.upper[cells] > a[cells]))
                | ((reduced > AUDIT_TOLERANCE) & (a[cells] > table.lower[cells])))

    component_lps: dict[bytes, object] = {}  # attacker LPs of the components met in this attack round

    def group_of(cell):
        return next(cells for cells in table.components(suppressed) if cell in cells)

    def fixing_trial(cell):
        """(True, None) when ``cell`` has its protection interval already; else (False, the first of the
        cheapest promising cells, among those the failing LPs price as improving, whose suppression gives
        it, or None). A trial is one more column of the group's LP, re-solved from its basis, and only in
        the directions that fail (the others cannot get worse). A successful trial's column stays: the LP
        is then the grown group's, for later cells."""
        group = group_of(cell)
        lp = component_lps.pop(group.tobytes(), None) or table.component_lp(group, suppressed)
        trials = promising(group)
        directions = []
        for sign in (-1.0, 1.0):
            if not lp.reaches(cell, [sign]):
                directions.append(sign)
                trials = trials[improving(lp, trials)]
        found = None
        if directions:
            for trial in trials[:TRIAL_CELLS]:
                if lp.free(trial):
                    if lp.reaches(cell, directions):
                        lp.keep()
                        group = np.sort(np.append(group, trial))
                        found = int(trial)
                        break
                    lp.unfree()
                else:  # it links the group with others: audit the merged group
                    attempt = suppressed.copy()
                    attempt[trial] = True
                    if not unprotected_cells(table, attempt, only=[cell], clip=False):
                        found = int(trial)
                        break
        if found is None or lp.position_of.get(found) is not None:
            component_lps[group.tobytes()] = lp
        return not directions, found

    constraint_pass(first_run=True)
    cache: dict = {}
    local_tries: dict[int, int] = {}
    flow = ProtectionFlow(table, cost, candidates)
    # Suppressing a further cell frees a published value within its bounds, so every feasible interval can
    # only widen (and clipping only narrows requirements): a cell found protected stays protected.
    known_safe = np.zeros(n, bool)
    for _ in range(MAX_ATTACK_ROUNDS):
        pending = np.flatnonzero(sensitive & ~known_safe)
        failures = unprotected_cells(table, suppressed, only=pending, cache=cache, clip=False)
        if not failures:
            return suppressed
        known_safe[pending] = True
        known_safe[failures] = False
        component_lps.clear()
        added = False
        for cell in failures:
            protected, trial = fixing_trial(cell)
            if protected:  # by a cell added for an earlier failure of this round
                known_safe[cell] = True
                continue
            if trial is not None:
                suppress(trial)
                known_safe[cell] = added = True
                continue
            if table.clip_to_a_priori(cell):  # the bounds alone may make part of the interval unreachable
                cache.clear()
                component_lps.clear()
                if not unprotected_cells(table, suppressed, only=[cell], clip=False):
                    added = True  # progress: the cell is as protected as any pattern can make it
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
            around = np.flatnonzero(neighbourhood(group_of(cell)))
            for extra in flow.cells_to_suppress(cell, suppressed, around):
                suppress(extra)
                added = True
        if not added:
            raise SdcError("secondary suppression: sensitive cells cannot reach their protection intervals even "
                           f"with every publishable cell suppressed: cells {failures}")
        constraint_pass(first_run=False)
    raise SdcError(f"secondary suppression: no safe pattern after {MAX_ATTACK_ROUNDS} attack rounds")


def integer_safe_pattern(values, constraints, primary, protection_lower, protection_upper, cost, suppressed, *,
                         lower=None, upper=None, forced_publish=None, freq=None,
                         max_cells: int = INTEGER_CHECK_CELLS, seconds: float = INTEGER_CHECK_SECONDS):
    """Grow ``suppressed``, a pattern that passes the LP audit, until it also passes the integer audit of
    an integer table (audit.integer_reach), and return (pattern, cells whose integer check was skipped).

    For each failing cell, the cheapest cells that share a relation with its group are tried in turn (up
    to TRIAL_CELLS; those whose relations all hold a suppressed cell first, since any other would be
    exposed at once) and the first that gives it both ends in integers is kept; if none does, the cheapest
    is kept anyway (more suppression never narrows an interval, so the loop progresses). The heuristic
    then restores what the LP audit needs around the new cells. Raises when no safe pattern is found."""
    a = np.asarray(values, dtype=float)
    n = len(a)
    primary = np.asarray(primary, dtype=bool)
    cost = np.asarray(cost, dtype=float)
    forced = forced_mask(n, primary, forced_publish)
    upper = default_upper(a) if upper is None else np.asarray(upper, dtype=float)
    table = AuditTable(a, constraints, sensitive=primary, protection_lower=protection_lower,
                       protection_upper=protection_upper, lower=lower, upper=upper, integer=True)
    incidence = (abs(table.matrix) > 0).astype(np.int32).tocsr()  # relations x cells
    incidence_t = incidence.T.tocsr()
    suppressed = np.asarray(suppressed, dtype=bool).copy()
    for _ in range(MAX_INTEGER_ROUNDS):
        failing, skipped = integer_failures(table, suppressed, max_cells=max_cells, seconds=seconds)
        if not failing:
            return suppressed, skipped
        for cell in failing:
            if not integer_failures(table, suppressed, only=[cell], max_cells=max_cells, seconds=seconds)[0]:
                continue  # protected by a cell added for an earlier one
            group = next(cells for cells in table.components(suppressed) if cell in cells)
            mask = np.zeros(n, np.int32)
            mask[group] = 1
            near = (incidence_t @ ((incidence @ mask) > 0).astype(np.int32)) > 0
            hidden_count = incidence @ suppressed.astype(np.int32)
            exposed = (incidence_t @ (hidden_count == 0).astype(np.int32)) > 0
            open_cells = np.flatnonzero(near & ~suppressed & ~forced)
            if open_cells.size == 0:
                raise SdcError(f"secondary suppression: cell {cell} is protected in the LP relaxation only: its "
                               "integer values miss its protection interval, and no cell near it can be suppressed")
            open_cells = open_cells[np.lexsort((open_cells, cost[open_cells], exposed[open_cells]))]
            pick = open_cells[0]
            for trial in open_cells[:TRIAL_CELLS]:
                attempt = suppressed.copy()
                attempt[trial] = True
                if not integer_failures(table, attempt, only=[cell], max_cells=max_cells, seconds=seconds)[0]:
                    pick = trial
                    break
            suppressed[pick] = True
        suppressed = heuristic_pattern(a, constraints, primary, protection_lower, protection_upper, cost, lower=lower,
                                       upper=upper, forced_publish=forced_publish, freq=freq, start=suppressed)
    raise SdcError(f"secondary suppression: no pattern that passes the integer audit after {MAX_INTEGER_ROUNDS} rounds")


class ProtectionFlow:
    """Open cells to suppress so that a cell reaches both ends of its protection interval: for each
    direction, the cheapest perturbation of the table that keeps every relation, moves the cell by its
    protection level and stays within the a-priori bounds (the LP relaxation of one requirement of the
    MILP in optimal.py; a unit of movement of an open cell costs cost / room, suppressed cells are free).
    Every cell the perturbation moves is suppressed, so the pattern then admits it: the requirement holds.

    The LP (f+ and f- per cell; rows: the relations and one target row) is built per call over the cells
    ``around`` the target: its group of suppressed cells and their neighbours. Cells outside stay put,
    so a perturbation found there is one of the whole table; only when none exists there is the whole
    table searched. (At 10^5 cells a whole-table solve took 294 s, one over the neighbourhood 6 s.)"""

    def __init__(self, table: AuditTable, cost, candidates):
        self.table = table
        a = table.values
        cost = np.asarray(cost, dtype=float)
        up_room = np.where(candidates, np.maximum(table.upper - a, 0.0), 0.0)
        down_room = np.where(candidates, np.maximum(a - table.lower, 0.0), 0.0)
        sensitive = table.sensitive  # primaries may always move within their bounds
        up_room[sensitive] = np.maximum(table.upper - a, 0.0)[sensitive]
        down_room[sensitive] = np.maximum(a - table.lower, 0.0)[sensitive]
        up_room = np.minimum(up_room, np.abs(a).max(initial=1.0) * 1e3)  # finite rooms keep it bounded
        self.room = np.concatenate([up_room, down_room])
        self.unit_cost = np.concatenate([cost / np.maximum(up_room, 1e-9), cost / np.maximum(down_room, 1e-9)])

    def cells_to_suppress(self, cell: int, suppressed, around=None) -> list[int]:
        table, a = self.table, self.table.values
        n = len(a)
        columns = np.arange(n) if around is None else np.asarray(around)
        block = table.matrix_csc[:, columns].tocsr()
        rows = np.flatnonzero(np.diff(block.indptr))
        m = len(columns)
        target = csr_matrix(([1.0], ([0], [int(np.searchsorted(columns, cell))])), shape=(1, m))  # f+ - f- = d
        both = np.concatenate([columns, n + columns])
        free = np.concatenate([suppressed[columns], suppressed[columns]])  # suppressed cells move for free
        highs = highs_model(vstack([hstack([block[rows], -block[rows]]), hstack([target, -target])]),
                            np.where(free, 0.0, self.unit_cost[both]), np.zeros(2 * m), self.room[both],
                            np.zeros(len(rows) + 1), np.zeros(len(rows) + 1))
        if 2 * m > FLOW_IPM_COLUMNS:
            highs.setOptionValue("solver", "ipm")  # with crossover: a vertex, so few cells move
        moving = np.zeros(n, bool)
        for d in (table.required_upper[cell] - a[cell], table.required_lower[cell] - a[cell]):
            if abs(d) <= AUDIT_TOLERANCE:
                continue
            highs.changeRowBounds(len(rows), d, d)
            highs.run()
            if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                if around is not None:
                    return self.cells_to_suppress(cell, suppressed)
                continue  # no perturbation reaches the bound: the caller reports the cell
            x = np.asarray(highs.getSolution().col_value)
            moving[columns[x[:m] + x[m:] > AUDIT_TOLERANCE * max(1.0, abs(d))]] = True
        return [int(c) for c in np.flatnonzero(moving & ~suppressed)]
