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

import logging
from dataclasses import dataclass, field

import highspy
import numpy as np
from scipy.sparse import csr_matrix, hstack, vstack

from sdc.errors import SdcError
from sdc.suppression.audit import (
    AUDIT_TOLERANCE,
    INTEGER_CHECK_CELLS,
    INTEGER_CHECK_SECONDS,
    AuditTable,
    highs_model,
    integer_failures,
    unprotected_cells,
)
from sdc.suppression.problem import SuppressionProblem

_log = logging.getLogger(__name__)  # progress of long solves (the CLI shows it; a log keeps it)
MAX_ATTACK_ROUNDS = 200
MAX_INTEGER_ROUNDS = 50
# In the attack step, how many of the cheapest promising cells are tried before a relation-local choice,
# and how often a cell gets a relation-local choice before the protection LP decides for it.
TRIAL_CELLS = 12
LOCAL_TRIES = 2
# Protection LPs with more columns than this are solved by interior point (then crossover): 6 s instead of
# 38 s by dual simplex with 44,000 columns; simplex is faster on small ones (0.2 s instead of 0.5 s at 9,000).
FLOW_IPM_COLUMNS = 20_000
# prune_pattern tries the secondary suppressions of groups up to this many suppressed cells
PRUNE_GROUP_CELLS = 5_000


@dataclass
class _Search:
    """What the heuristic changes as it goes: the pattern, per relation its suppressed cells, the attacker
    LPs of the current round, and which sensitive cells are known to be protected."""

    table: AuditTable  # its requirements are narrowed in place (clip_to_a_priori)
    suppressed: np.ndarray
    candidates: np.ndarray  # cells that may become secondary suppressions
    members: list  # per relation: its cells
    coefficients: list  # per relation: their coefficients
    relations_of: list  # per cell: its relations
    hidden_count: np.ndarray  # per relation: how many of its cells are suppressed
    incidence: csr_matrix  # relations x cells, 1 where a cell is in a relation
    incidence_t: csr_matrix
    singletons: np.ndarray | None  # contributors per cell (magnitude tables), for the singleton rule
    component_lps: dict = field(default_factory=dict)  # attacker LPs of the groups met in this round
    cache: dict = field(default_factory=dict)  # audits of unchanged groups
    local_tries: dict = field(default_factory=dict)
    known_safe: np.ndarray | None = None
    flow: "ProtectionFlow | None" = None


def heuristic_pattern(problem: SuppressionProblem, start=None, *, singletons: bool = True,
                      protected=None) -> np.ndarray:
    """Boolean mask of suppressed cells (primaries and forced-suppressed cells included) that passes the
    LP audit of ``problem.method_table()``. ``start``: cells suppressed from the outset besides those (e.g.
    a partial optimal pattern); ``singletons``: apply the singleton rule of magnitude tables (the optimal
    method's completion does not, as its MILP does not); ``protected``: sensitive cells already proven
    protected under ``start`` (hypercube witnesses), which no LP needs to attack again: suppressing more
    cells only widens their intervals."""
    search = _new_search(problem, start, singletons)
    _constraint_pass(problem, search, first_run=True)
    search.flow = ProtectionFlow(search.table, problem.cost, search.candidates)
    # Suppressing a further cell frees a published value within its bounds, so every feasible interval can
    # only widen (and clipping only narrows requirements): a cell found protected stays protected.
    search.known_safe = np.zeros(len(problem.values), bool)
    if protected is not None:
        search.known_safe[np.asarray(protected, dtype=int)] = True
    sensitive = int(search.table.sensitive.sum())
    for round_number in range(1, MAX_ATTACK_ROUNDS + 1):
        pending = np.flatnonzero(search.table.sensitive & ~search.known_safe)
        failures = unprotected_cells(search.table, search.suppressed, only=pending, cache=search.cache, clip=False)
        _log.info("heuristic round %d: %d of %d sensitive cells protected, %d cells suppressed", round_number,
                  sensitive - len(failures), sensitive, int(search.suppressed.sum()),
                  extra={"done": sensitive - len(failures), "total": sensitive})
        if not failures:
            return search.suppressed
        search.known_safe[pending] = True
        search.known_safe[failures] = False
        search.component_lps.clear()
        if not any([_fix_cell(problem, search, cell) for cell in failures]):
            names = ", ".join(problem.labels[c] for c in failures)
            raise SdcError("secondary suppression: sensitive cells cannot reach their protection intervals even "
                           f"with every publishable cell suppressed: {names} (cells {failures})")
        _constraint_pass(problem, search, first_run=False)
    raise SdcError(f"secondary suppression: no safe pattern after {MAX_ATTACK_ROUNDS} attack rounds")


def _new_search(problem: SuppressionProblem, start, singletons: bool) -> _Search:
    table = problem.method_table()
    n = len(problem.values)
    suppressed = table.sensitive.copy()
    if start is not None:
        suppressed |= np.asarray(start, dtype=bool)
    matrix = problem.relations
    members = [matrix.indices[matrix.indptr[r]:matrix.indptr[r + 1]] for r in range(matrix.shape[0])]
    coefficients = [matrix.data[matrix.indptr[r]:matrix.indptr[r + 1]] for r in range(matrix.shape[0])]
    relations_of = [[] for _ in range(n)]
    for r, cells in enumerate(members):
        for cell in cells:
            relations_of[cell].append(r)
    incidence = (abs(table.matrix) > 0).astype(np.int32).tocsr()
    return _Search(table=table, suppressed=suppressed, candidates=~problem.forced_published, members=members,
                   coefficients=coefficients, relations_of=relations_of,
                   hidden_count=np.array([int(suppressed[cells].sum()) for cells in members], dtype=int),
                   incidence=incidence, incidence_t=incidence.T.tocsr(),
                   singletons=problem.contributors if singletons else None)


def _suppress(search: _Search, cell: int) -> None:
    search.suppressed[cell] = True
    for r in search.relations_of[cell]:
        search.hidden_count[r] += 1


def _cheapest(problem: SuppressionProblem, search: _Search, cells) -> int | None:
    """The cheapest open cell of ``cells`` (ties: the lowest index), or None."""
    open_cells = cells[~search.suppressed[cells] & search.candidates[cells]]
    if not open_cells.size:
        return None
    return int(open_cells[np.lexsort((open_cells, problem.cost[open_cells]))[0]])


def _too_narrow(problem: SuppressionProblem, search: _Search, r: int) -> bool:
    """Whether relation ``r`` alone keeps a sensitive cell of it from its protection interval: its
    suppressed cells have a known weighted sum, so each ranges only as far as the bounds of the
    others allow. Only one more suppressed cell in the relation can widen that."""
    table, cells, coefficient = search.table, search.members[r], search.coefficients[r]
    hidden = search.suppressed[cells]
    if not table.sensitive[cells[hidden]].any():
        return False
    cells, coefficient = cells[hidden], coefficient[hidden]
    total = float(coefficient @ problem.values[cells])  # sum of coefficient * value over them: the published rest
    ends = np.stack([coefficient * table.lower[cells], coefficient * table.upper[cells]])
    low, high = ends.min(axis=0), ends.max(axis=0)  # each term's range within the cell's bounds
    for k in np.flatnonzero(table.sensitive[cells]):
        # coefficient_k * y_k = total - (the other terms)
        ends_k = ((total - np.delete(high, k).sum()) / coefficient[k],
                  (total - np.delete(low, k).sum()) / coefficient[k])
        if not (table.bound_reached(cells[k], 1.0, min(ends_k)) and table.bound_reached(cells[k], -1.0, max(ends_k))):
            return True
    return False


def _constraint_pass(problem: SuppressionProblem, search: _Search, *, first_run: bool) -> None:
    """Phase A: a relation with one suppressed cell gives it away; revisit only relations that changed."""
    queue = list(range(len(search.members)))
    while queue:
        r = queue.pop()
        cells, count = search.members[r], search.hidden_count[r]
        singleton_pair = (first_run and search.singletons is not None and count == 2
                          and any(search.singletons[c] == 1 for c in cells[search.suppressed[cells]]))
        if count == 1 or singleton_pair or (count > 1 and _too_narrow(problem, search, r)):
            pick = _cheapest(problem, search, cells)
            if pick is not None:
                _suppress(search, pick)
                queue.extend(search.relations_of[pick])


def _neighbourhood(search: _Search, group) -> np.ndarray:
    """The group and every cell that shares a relation with one of its cells (a mask)."""
    group_mask = np.zeros(len(search.suppressed), np.int32)
    group_mask[group] = 1
    near_relations = (search.incidence @ group_mask) > 0
    return (search.incidence_t @ near_relations.astype(np.int32)) > 0


def _promising(problem: SuppressionProblem, search: _Search, group) -> np.ndarray:
    """Open cells that could widen the intervals of a group of suppressed cells, cheapest first: they
    share a relation with the group, and every relation they are in already holds a suppressed cell
    (else the new cell would be exposed at once and add no freedom)."""
    exposed = (search.incidence_t @ (search.hidden_count == 0).astype(np.int32)) > 0
    found = np.flatnonzero(_neighbourhood(search, group) & ~exposed & ~search.suppressed & search.candidates)
    return found[np.lexsort((found, problem.cost[found]))]


def _improving(search: _Search, lp, cells) -> np.ndarray:
    """Which of ``cells`` could move the last solution's objective as one more column: a nonzero
    reduced cost with room in its direction (cells that would join other groups cannot be priced
    here and stay)."""
    table, a = search.table, search.table.values
    reduced = lp.prices(cells)
    return (np.isnan(reduced) | ((reduced < -AUDIT_TOLERANCE) & (table.upper[cells] > a[cells]))
            | ((reduced > AUDIT_TOLERANCE) & (a[cells] > table.lower[cells])))


def _group_of(search: _Search, cell: int) -> np.ndarray:
    return next(cells for cells in search.table.components(search.suppressed) if cell in cells)


def _fixing_trial(problem: SuppressionProblem, search: _Search, cell: int) -> tuple[bool, int | None]:
    """(True, None) when ``cell`` has its protection interval already; else (False, the first of the
    cheapest promising cells, among those the failing LPs price as improving, whose suppression gives
    it, or None). A trial is one more column of the group's LP, re-solved from its basis, and only in
    the directions that fail (the others cannot get worse). A successful trial's column stays: the LP
    is then the grown group's, for later cells."""
    group = _group_of(search, cell)
    lp = search.component_lps.pop(group.tobytes(), None) or search.table.component_lp(group, search.suppressed)
    trials = _promising(problem, search, group)
    directions = []
    for sign in (-1.0, 1.0):
        if not lp.reaches(cell, [sign]):
            directions.append(sign)
            trials = trials[_improving(search, lp, trials)]
    found = _first_fixing_cell(search, lp, cell, trials[:TRIAL_CELLS], directions) if directions else None
    if found is not None and lp.position_of.get(found) is not None:
        group = np.sort(np.append(group, found))  # the LP is now the grown group's
    if found is None or lp.position_of.get(found) is not None:
        search.component_lps[group.tobytes()] = lp
    return not directions, found


def _first_fixing_cell(search: _Search, lp, cell: int, trials, directions) -> int | None:
    """The first of ``trials`` whose suppression lets ``cell`` reach its bounds in ``directions``."""
    for trial in trials:
        if lp.free(trial):
            if lp.reaches(cell, directions):
                lp.keep()
                return int(trial)
            lp.unfree()
        else:  # it links the group with others: audit the merged group
            attempt = search.suppressed.copy()
            attempt[trial] = True
            if not unprotected_cells(search.table, attempt, only=[cell], clip=False):
                return int(trial)
    return None


def _fix_cell(problem: SuppressionProblem, search: _Search, cell: int) -> bool:
    """Phase B for one failing cell: suppress what protects it (a trial cell, else a relation-local choice,
    else the protection LP's cells). Returns whether anything changed (False: no progress possible)."""
    protected, trial = _fixing_trial(problem, search, cell)
    if protected:  # by a cell added for an earlier failure of this round
        search.known_safe[cell] = True
        return False
    if trial is not None:
        _suppress(search, trial)
        search.known_safe[cell] = True
        return True
    if search.table.clip_to_a_priori(cell):  # the bounds alone may make part of the interval unreachable
        search.cache.clear()  # verdicts under the old requirement; the groups' LPs hold none and stay
        group = _group_of(search, cell)
        lp = search.component_lps.get(group.tobytes()) or search.table.component_lp(group, search.suppressed)
        search.component_lps[group.tobytes()] = lp
        if lp.reaches(cell, (-1.0, 1.0)):
            return True  # progress: the cell is as protected as any pattern can make it
    search.local_tries[cell] = search.local_tries.get(cell, 0) + 1
    if search.local_tries[cell] <= LOCAL_TRIES:
        pick = _relation_local_pick(problem, search, cell)
        if pick is not None:
            _suppress(search, pick)
            return True
    around = np.flatnonzero(_neighbourhood(search, _group_of(search, cell)))
    extras = search.flow.cells_to_suppress(cell, search.suppressed, around)
    for extra in extras:
        _suppress(search, extra)
    return bool(extras)


def _relation_local_pick(problem: SuppressionProblem, search: _Search, cell: int) -> int | None:
    """The cheapest open cell of the relation with the fewest suppressions around ``cell``."""
    for r in sorted(search.relations_of[cell], key=lambda r: search.hidden_count[r]):
        pick = _cheapest(problem, search, search.members[r])
        if pick is not None:
            return pick
    return None


def prune_pattern(problem: SuppressionProblem, suppressed, *, max_group: int = PRUNE_GROUP_CELLS) -> np.ndarray:
    """The pattern without the secondary suppressions it does not need, the costliest first: each is published
    tentatively and stays published where every sensitive cell of its group of suppressed cells keeps its
    protection interval (LP), a cell kept from an earlier release stays one that cannot be recomputed, and no
    relation of it is left with a singleton and one other suppressed cell.
    Only cells of groups up to ``max_group`` suppressed cells are tried. Publishing more cells only narrows
    intervals, so one pass leaves no cell that could be published alone. Deterministic, so two runs (two models of
    linked tables) prune alike. The methods add cells one failing cell (or one hypercube) at a time and never take
    one back; on generated 2-D turnover tables this recovers most of the cost above the MILP's optimum.

    Each sensitive cell keeps, per side, a witness: a table the attacker cannot rule out that takes the cell to
    that end of its protection interval, moving as few of the cells still to be tried as it can. Publishing a cell
    that no witness moves keeps every witness a solution, so only the witnesses that move it are sought again; the
    verdict is the LP's either way, the witnesses only save LPs."""
    search = _new_search(problem, suppressed, singletons=True)
    table = search.table
    if (search.suppressed != np.asarray(suppressed, dtype=bool)).any():
        return np.asarray(suppressed, dtype=bool)  # no pattern of the method (a sensitive cell published): as it is
    removable = search.suppressed & ~table.sensitive & ~problem.forced_suppressed
    for group in table.components(search.suppressed):
        trial = group[removable[group]]
        if len(group) > max_group or not trial.size:
            continue
        witnesses = _Witnesses(table, group, trial, problem.forced_suppressed)
        if not witnesses.complete:
            continue  # a sensitive cell is short of its interval already: nothing can be published
        order = trial[np.lexsort((trial, -problem.cost[trial]))]
        for done, cell in enumerate(order):
            if done % 1000 == 999:
                _log.info("pruning: %d of %d cells of a group tried, %d published", done + 1, len(order),
                          int((~search.suppressed[order[:done]]).sum()), extra={"done": done + 1, "total": len(order)})
            _publish(search, int(cell))
            if _relation_fails(problem, search, int(cell)) or not witnesses.publish(int(cell)):
                _suppress(search, int(cell))
                witnesses.keep_suppressed(int(cell))
    return search.suppressed


class _Witnesses:
    """For one group of suppressed cells, per sensitive cell and side, a witness: a change of the table that keeps
    every relation and bound, leaves the published cells as they are and takes the cell to that end of its
    protection interval (an LP over each cell's rise and fall, y = values + up - down); kept with the cells it
    moves, and per cell the witnesses that move it. The LP moves as few cells still to be tried as it can (each
    unit of theirs costs 1, the others' nothing), so that publishing one disturbs few witnesses. A cell kept
    suppressed from an earlier release (``kept``) has nothing to reach but must not become recomputable: its witness
    moves it by one unit, up or down (as the hypercube's does). ``complete``: whether every sensitive cell has its
    witnesses."""

    def __init__(self, table: AuditTable, group: np.ndarray, trial: np.ndarray, kept: np.ndarray):
        self.table, self.group = table, group
        self.position_of = {int(c): p for p, c in enumerate(group)}
        n, scale = len(group), table.scale
        a = table.values[group]
        rise = np.where(np.isinf(table.upper[group]), highspy.kHighsInf, (table.upper[group] - a) * scale)
        fall = np.where(np.isinf(table.lower[group]), highspy.kHighsInf, (a - table.lower[group]) * scale)
        self.rooms = np.maximum(np.concatenate([rise, fall]), 0.0)
        block = table.matrix_csc[:, group]
        rows = np.flatnonzero(np.diff(block.tocsr().indptr))
        block = block.tocsr()[rows]
        cost = np.zeros(2 * n)
        tried = np.array([self.position_of[int(c)] for c in trial], dtype=int)
        cost[tried] = cost[n + tried] = 1.0
        self.lp = highs_model(hstack([block, -block]), cost, np.zeros(2 * n), self.rooms, np.zeros(len(rows)),
                              np.zeros(len(rows)))
        self.moves: dict[tuple[int, float], np.ndarray] = {}  # (cell, side) -> the positions its witness moves
        self.moved_by = [set() for _ in group]  # position -> the witnesses that move it
        self.complete = True
        for cell in group[table.sensitive[group]]:
            for sign in ((0.0,) if kept[cell] else (-1.0, 1.0)):
                moved = self._witness(int(cell), sign)
                if moved is None:
                    self.complete = False
                    return
                self._keep((int(cell), sign), moved)

    def publish(self, cell: int) -> bool:
        """Fix ``cell`` at its value; whether every sensitive cell keeps both witnesses (those that moved ``cell``
        sought anew). If not, ``cell`` moves again and the witnesses stay as they were."""
        position = self.position_of[cell]
        affected = sorted(self.moved_by[position])
        self._set_rooms(position, 0.0, 0.0)
        found = []
        for key in affected:
            moved = self._witness(*key)
            if moved is None:
                self._set_rooms(position, *self.rooms[[position, len(self.group) + position]])
                return False
            found.append((key, moved))
        for key, moved in found:
            self._keep(key, moved)
        return True

    def keep_suppressed(self, cell: int) -> None:
        """``cell`` stays suppressed and will not be tried again: witnesses may move it for free."""
        position = self.position_of[cell]
        self.lp.changeColsCost(2, np.array([position, len(self.group) + position], dtype=np.int32), np.zeros(2))

    def _set_rooms(self, position: int, rise: float, fall: float) -> None:
        n = len(self.group)
        self.lp.changeColBounds(position, 0.0, rise)
        self.lp.changeColBounds(n + position, 0.0, fall)

    def _witness(self, cell: int, sign: float) -> np.ndarray | None:
        """The positions a witness for ``cell`` on side ``sign`` moves (-1: its upper end, +1: its lower end, 0: one
        unit either way), or None where none reaches that end (after narrowing the requirement to what the
        a-priori bounds allow)."""
        table = self.table
        if sign == 0.0:
            for side in (1.0, -1.0):
                moved = self._moved(cell, side, 1.0)
                if moved is not None:
                    return moved
            return None
        for _ in range(2):
            end = table.required_lower[cell] if sign > 0 else table.required_upper[cell]
            shift = abs(end - table.values[cell]) * table.scale
            if shift <= AUDIT_TOLERANCE:
                return np.zeros(0, dtype=int)
            moved = self._moved(cell, sign, shift)
            if moved is not None or not table.clip_to_a_priori(cell):
                return moved
        return None

    def _moved(self, cell: int, sign: float, shift: float) -> np.ndarray | None:
        """The positions moved by the solution with least movement that takes ``cell`` down (sign +1) or up (-1) by
        at least ``shift`` units, or None where there is none."""
        position, n = self.position_of[cell], len(self.group)
        moving, still = (n + position, position) if sign > 0 else (position, n + position)
        self.lp.changeColBounds(moving, shift, self.rooms[moving])
        self.lp.changeColBounds(still, 0.0, 0.0)
        self.lp.run()
        solved = self.lp.getModelStatus() == highspy.HighsModelStatus.kOptimal
        x = np.asarray(self.lp.getSolution().col_value) if solved else None
        self.lp.changeColBounds(moving, 0.0, self.rooms[moving])
        self.lp.changeColBounds(still, 0.0, self.rooms[still])
        return np.flatnonzero(np.abs(x[:n] - x[n:]) > AUDIT_TOLERANCE) if solved else None

    def _keep(self, key: tuple[int, float], moved: np.ndarray) -> None:
        for position in self.moves.get(key, ()):
            self.moved_by[position].discard(key)
        self.moves[key] = moved
        for position in moved:
            self.moved_by[position].add(key)


def _publish(search: _Search, cell: int) -> None:
    search.suppressed[cell] = False
    for r in search.relations_of[cell]:
        search.hidden_count[r] -= 1


def _relation_fails(problem: SuppressionProblem, search: _Search, cell: int) -> bool:
    """Whether a relation of ``cell`` alone now gives a sensitive cell away, keeps it short of its protection, or
    holds two suppressed cells of which one has a single contributor (who could subtract their own value:
    magnitude tables): phase A's conditions, asked before any LP."""
    for r in search.relations_of[cell]:
        cells = search.members[r]
        hidden = cells[search.suppressed[cells]]
        if len(hidden) == 1 and search.table.sensitive[hidden].any():
            return True
        if len(hidden) == 2 and search.singletons is not None and (search.singletons[hidden] == 1).any():
            return True
        if len(hidden) > 1 and _too_narrow(problem, search, r):
            return True
    return False


def integer_safe_pattern(problem: SuppressionProblem, suppressed, *, max_cells: int = INTEGER_CHECK_CELLS,
                         seconds: float = INTEGER_CHECK_SECONDS, only=None):
    """Grow ``suppressed``, a pattern that passes the LP audit, until it also passes the integer audit of
    an integer table (audit.integer_reach), and return (pattern, cells whose integer check was skipped).

    For each failing cell, the cheapest cells that share a relation with its group are tried in turn (up
    to TRIAL_CELLS; those whose relations all hold a suppressed cell first, since any other would be
    exposed at once) and the first that gives it both ends in integers is kept; if none does, the cheapest
    is kept anyway (more suppression never narrows an interval, so the loop progresses). The heuristic
    then restores what the LP audit needs around the new cells. Raises when no safe pattern is found. ``only``:
    the sensitive cells to check (default all)."""
    table = problem.method_table(integer=True)
    suppressed = np.asarray(suppressed, dtype=bool).copy()
    limits = {"max_cells": max_cells, "seconds": seconds}
    for _ in range(MAX_INTEGER_ROUNDS):
        failing, skipped = integer_failures(table, suppressed, only=only, **limits)
        if not failing:
            return suppressed, skipped
        for cell in failing:
            if not integer_failures(table, suppressed, only=[cell], **limits)[0]:
                continue  # protected by a cell added for an earlier one
            suppressed[_integer_pick(problem, table, suppressed, cell, limits)] = True
        suppressed = heuristic_pattern(problem, start=suppressed)
    raise SdcError(f"secondary suppression: no pattern that passes the integer audit after {MAX_INTEGER_ROUNDS} rounds")


def _integer_pick(problem: SuppressionProblem, table: AuditTable, suppressed, cell: int, limits: dict) -> int:
    """The open cell near ``cell``'s group to suppress so that ``cell`` reaches its ends in integers: the
    first of the cheapest that does, else the cheapest."""
    incidence = (abs(table.matrix) > 0).astype(np.int32).tocsr()  # relations x cells
    incidence_t = incidence.T.tocsr()
    group = next(cells for cells in table.components(suppressed) if cell in cells)
    mask = np.zeros(len(suppressed), np.int32)
    mask[group] = 1
    near = (incidence_t @ ((incidence @ mask) > 0).astype(np.int32)) > 0
    exposed = (incidence_t @ ((incidence @ suppressed.astype(np.int32)) == 0).astype(np.int32)) > 0
    open_cells = np.flatnonzero(near & ~suppressed & ~problem.forced_published)
    if open_cells.size == 0:
        raise SdcError(f"secondary suppression: {problem.labels[cell]} is protected in the LP relaxation only: its "
                       "integer values miss its protection interval, and no cell near it can be suppressed")
    open_cells = open_cells[np.lexsort((open_cells, problem.cost[open_cells], exposed[open_cells]))]
    for trial in open_cells[:TRIAL_CELLS]:
        attempt = suppressed.copy()
        attempt[trial] = True
        if not integer_failures(table, attempt, only=[cell], **limits)[0]:
            return int(trial)
    return int(open_cells[0])


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
