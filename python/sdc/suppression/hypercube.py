"""Secondary suppression that scales: for every sensitive cell a hypercube of suppressed cells whose perturbation
proves the cell's protection (after τ-Argus's hypercube method, GHMITER; reference suppression.md).

In a table whose relations are one-dimensional hierarchies (a total and its parts along one dimension), a vector
v_k over the codes of dimension k that is additive along its hierarchy (v[parent] = sum of v[children]) gives,
as the product v_0 x v_1 x ... of one such vector per dimension, a change of the table that keeps every relation.
For a sensitive cell x, each v_k is +1 at x's code and either -1 at a sibling (with both continued down to a leaf
where the code is itself a total) or +1 on the code's ancestors ("up"): the cells where the product is not zero
form a hypercube around x (2^d cells where every code has a usable sibling). Suppressing the hypercube, the table
plus delta times the product is a table the attacker cannot tell from the true one: it keeps every published
cell and every relation, and delta is chosen so that x reaches the end of its protection interval and every cell
stays within its a-priori bounds (the other way round likewise). That table is the witness of x's protection:
checked on its own (verified_witnesses), it replaces the audit's two LPs for x, and with whole-number deltas in an
integer table also the integer audit. Sensitive cells are taken in turn, largest first; a cell already
suppressed costs nothing, so later hypercubes reuse earlier ones, and a hypercube that moves another sensitive
cell far enough is that cell's witness too. The pattern usually suppresses more than the LP heuristic (each cell
gets a whole hypercube where the LP finds the cheapest completion), at a cost in time that grows with the number
of sensitive cells, not with the size of the groups of suppressed cells the LP audit solves over.

Unlike sdcTable's and τ-Argus's GHMITER, which choose corners of cubes within each non-hierarchical sub-table
(and repeat passes because a cube of one sub-table can be undone by the totals of another), the vectors here
run through the whole hierarchy of each dimension, so one hypercube's change keeps every relation of the table
(of all linked tables) at once, and its witness proves the protection without another pass.

A cell that has only one contributor (magnitude tables) changes only in the hypercubes of cells that contributor
contributes to: its contributor knows its value, and every other witness stays a table that contributor cannot rule
out. That a witness may change the single-contributor cells of x's own contributors is a modelling assumption (the
primary rules' protection levels already assume that the contributors of a cell know their own contributions), not
something the audit checks; the heuristic's singleton rule (a third cell where a relation holds a singleton and one
other suppressed cell) is not applied to hypercube patterns.
"""

from __future__ import annotations

import functools
import logging
import math
import weakref
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csc_matrix

from sdc.errors import SdcError
from sdc.suppression.audit import AUDIT_TOLERANCE

_log = logging.getLogger(__name__)

# A dimension's code that a cell does not have (a linked table without that dimension): the dimension's total
MISSING = type("MissingCode", (), {"__repr__": lambda self: "MISSING"})()
# Hypercubes tried per sensitive cell: the product of the best few candidates per dimension (more for a cell
# that gets none among the first)
MAX_COMBINATIONS = 64
RETRY_COMBINATIONS = 4096
# The grid's entry of a combination of codes that a table has but no cell (-1: no table has it)
KNOWN_ZERO = -2
# The grid of every combination of codes (an index from codes to cell) is dense up to this many entries
MAX_GRID = 50_000_000


@dataclass(frozen=True)
class Witness:
    """A table the attacker cannot tell from the true one in which ``target`` reaches its protection bound: the
    true table plus ``up`` (or minus ``down``) times ``signs`` on ``cells`` (every other cell unchanged)."""

    target: int
    cells: np.ndarray
    signs: np.ndarray
    up: float
    down: float


class CellGrid:
    """The cells of a table by their codes: per dimension each code's parent and children, as the relations give
    them; ``index[codes]`` is the cell with those code ids (-1 where the table has none). ``aliases``: further
    codes of cells, (cell, codes) (linked tables: one set of records that two code combinations hold, such as a
    group with one non-empty part); ``multiplicity``: how many code combinations each cell has."""

    def __init__(self, coordinates, relations, aliases=()):
        n = len(coordinates)
        owner = np.concatenate([np.arange(n), np.array([cell for cell, _ in aliases], dtype=np.int64)])
        coordinates = [tuple(c) for c in coordinates] + [tuple(codes) for _, codes in aliases]
        width = len(coordinates[0]) if coordinates else 0
        if width == 0 or any(len(c) != width for c in coordinates):
            raise SdcError("hypercube: every cell needs one code per dimension")
        self.width = width
        codes = [sorted({c[k] for c in coordinates if c[k] is not MISSING}, key=repr) for k in range(width)]
        self.code_id = [{code: i for i, code in enumerate(dimension)} for dimension in codes]
        ids = np.array([[-1 if code is MISSING else self.code_id[k][code] for k, code in enumerate(c)]
                        for c in coordinates], dtype=np.int64).reshape(len(coordinates), width)
        aliased = np.zeros(n, bool)
        aliased[owner[n:]] = True
        matrix = relations.tocsr()
        # the relations that show the hierarchies: those of cells with one code combination (a relation of an
        # aliased cell, or one its codes cancelled out of, holds for every witness all the same: it is checked)
        numbers = np.flatnonzero((np.diff(matrix.indptr) >= 2) & ~(abs(matrix) @ aliased.astype(float) > 0))
        matrix = matrix[numbers]
        totals, parts, dimension = _relation_parts(matrix, ids, numbers)
        self.parent = [_parents(k, codes[k], ids, totals[dimension == k], parts[dimension == k])
                       for k in range(width)]
        for k in range(width):  # a code that a cell lacks (linked tables): its dimension's total
            lacking = ids[:, k] < 0
            if lacking.any():
                roots = np.flatnonzero(self.parent[k] < 0)
                _check_one_root(k, len(roots))
                ids[lacking, k] = roots[0]
        _relation_parts(matrix, ids, numbers)  # now strictly: each relation sums along one dimension
        self.children = [[np.flatnonzero(parent == code).tolist() for code in range(len(parent))]
                         for parent in self.parent]
        self.leaf = [np.array([not children for children in dimension]) for dimension in self.children]
        self.siblings = [[np.array([c for c in (dimension[parent[code]] if parent[code] >= 0 else []) if c != code],
                                   dtype=np.int64) for code in range(len(parent))]
                         for dimension, parent in zip(self.children, self.parent)]
        self.root = [np.array([(self.ancestors(k, code) or [code])[-1] for code in range(len(parent))], dtype=np.int64)
                     for k, parent in enumerate(self.parent)]
        # within[k][a, b]: code a is b or lies within it along dimension k (the padding code: nothing)
        self.within = []
        for k in range(width):
            within = np.zeros((len(codes[k]) + 1, len(codes[k]) + 1), bool)
            for code in range(len(codes[k])):
                within[code, [code] + self.ancestors(k, code)] = True
            self.within.append(within)
        self.coordinates = ids[:n]
        self._place(ids, owner, tuple(len(dimension) for dimension in codes))

    def _place(self, ids: np.ndarray, owner: np.ndarray, shape: tuple) -> None:
        """index (KNOWN_ZERO where a table has the codes but no cell) and multiplicity of the cells at ``ids`` (one
        row per code combination, of cell
        ``owner``), in a grid of ``shape`` codes."""
        if math.prod(shape) > MAX_GRID:
            raise SdcError(f"hypercube: {' x '.join(map(str, shape))} combinations of codes are too many for its "
                           f"grid (at most {MAX_GRID:,})")
        n = len(self.coordinates)
        # one more code per dimension, never a cell: the padding of hypercubes with fewer codes along it
        self.pad = shape
        padded = tuple(size + 1 for size in shape)
        self.index = np.full(padded, -1, dtype=np.int64)
        flat, first = np.unique(np.ravel_multi_index(ids.T, padded) * (n + 1) + owner, return_index=True)
        places, cells = flat // (n + 1), owner[first]
        if len(np.unique(places)) != len(places):
            raise SdcError("hypercube: two cells have the same codes")
        self.index.ravel()[places] = cells
        self.multiplicity = np.bincount(cells, minlength=n)
        # a combination of codes that some table has, but no cell: an empty cell the table leaves out, a known
        # zero that no hypercube may change (combinations no table has, of linked tables, carry anything)
        known_zero = np.zeros(padded, bool)
        inner = tuple(slice(0, size) for size in shape)
        for form in _table_forms(ids, self.parent):
            belongs = np.ones(shape, bool)
            for k in range(self.width):
                if k not in form:
                    belongs &= (self.parent[k] < 0).reshape([-1 if j == k else 1 for j in range(self.width)])
            known_zero[inner] |= belongs & (self.index[inner] < 0)
        self.index[known_zero] = KNOWN_ZERO

    @property
    def known_zero(self) -> np.ndarray:
        """The combinations of codes that a table has but no cell (empty cells left out): zero, known."""
        return self.index == KNOWN_ZERO

    def ancestors(self, k: int, code: int) -> list[int]:
        chain = []
        while self.parent[k][code] >= 0:
            code = int(self.parent[k][code])
            chain.append(code)
        return chain


_GRIDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def grid_of(problem) -> CellGrid:
    """The CellGrid of ``problem`` (a SuppressionProblem with coordinates), built once per problem: the method
    and the check of its witnesses read the same one."""
    if problem not in _GRIDS:
        _GRIDS[problem] = CellGrid(problem.coordinates, problem.relations, problem.aliases)
    return _GRIDS[problem]


def _parents(k: int, codes: list, ids: np.ndarray, totals: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """The parent code id of every code of dimension k (-1: a total), from the relations along k."""
    known = (ids[parts, k] >= 0) & (ids[totals, k] >= 0)
    edges = np.unique(np.stack([ids[parts[known], k], ids[totals[known], k]], axis=1), axis=0)
    twice = np.flatnonzero(np.diff(edges[:, 0]) == 0) if len(edges) else []
    if len(twice):
        child, a, b = edges[twice[0], 0], edges[twice[0], 1], edges[twice[0] + 1, 1]
        raise SdcError(f"hypercube: code {codes[child]!r} of dimension {k + 1} has two totals, {codes[a]!r} and "
                       f"{codes[b]!r}; the method needs one hierarchy per dimension")
    parent = np.full(len(codes), -1)
    parent[edges[:, 0]] = edges[:, 1]
    return parent


def _table_forms(ids: np.ndarray, parent: list[np.ndarray]) -> list[frozenset]:
    """The dimensions of each table: the largest sets of dimensions in which cells have codes other than a total
    (a linked table's inner cells; its margins, and cells it shares, are totals in some of them)."""
    inner = np.stack([parent[k][ids[:, k]] >= 0 for k in range(ids.shape[1])], axis=1)
    found = {frozenset(np.flatnonzero(row).tolist()) for row in np.unique(inner, axis=0)}
    return [form for form in found if not any(form < other for other in found)]


def _relation_parts(matrix, ids: np.ndarray, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(total cell, part cell, dimension summed along) per part of every relation, checked: each relation is a
    total (+1) and its parts (-1) whose codes differ from the total's in one dimension, the same for all parts
    (a code -1, lacking, differs from none). ``numbers``: the relations' numbers in the problem (messages)."""
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    positive = matrix.data > 0
    counts = np.bincount(rows[positive], minlength=matrix.shape[0])
    bad = np.flatnonzero((counts != 1) | (np.bincount(rows, weights=np.abs(matrix.data) != 1,
                                                      minlength=matrix.shape[0]) > 0))
    if bad.size:
        raise SdcError(f"hypercube: relation {int(numbers[bad[0]])} is not a total and its parts (coefficients +1 and -1); "
                       "the method needs hierarchical relations")
    total_of = np.zeros(matrix.shape[0], dtype=np.int64)
    total_of[rows[positive]] = matrix.indices[positive]
    parts, part_rows = matrix.indices[~positive], rows[~positive]
    totals = total_of[part_rows]
    a, b = ids[totals], ids[parts]
    differ = (a != b) & (a >= 0) & (b >= 0)
    count = differ.sum(axis=1)
    dimension = np.argmax(differ, axis=1)
    wrong = (count != 1)
    first = np.full(matrix.shape[0], -1)
    rows_seen, at = np.unique(part_rows, return_index=True)
    first[rows_seen] = dimension[at]
    wrong |= first[part_rows] != dimension
    if wrong.any():
        r = int(numbers[part_rows[np.argmax(wrong)]])
        raise SdcError(f"hypercube: relation {r} sums cells that differ from their total in more than one "
                       "dimension, or along several; the method needs totals along one dimension")
    return totals, parts, dimension


def _check_one_root(k: int, count: int) -> None:
    if count != 1:
        raise SdcError(f"hypercube: a cell lacks dimension {k + 1}, whose hierarchy has {count} totals; "
                       "its total must be one code")


@dataclass
class _Search:
    grid: CellGrid
    values: np.ndarray
    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    usable: np.ndarray  # may be suppressed and changed by another cell's hypercube (not forced published)
    single: np.ndarray  # has one contributor: changed only in that contributor's own hypercubes
    holds: np.ndarray  # has records (not empty)
    suppressed: np.ndarray


def hypercube_pattern(problem, table) -> tuple[np.ndarray, list[Witness], list[int]]:
    """(suppressed mask, one witness per sensitive cell that has one, the sensitive cells without one) of
    ``problem`` (a SuppressionProblem with coordinates); ``table``: its method_table (required intervals)."""
    if problem.coordinates is None:
        raise SdcError("method hypercube needs the cells' codes (a table of dimensions); this problem has none")
    grid = grid_of(problem)
    search = _Search(grid, problem.values, problem.cost, table.lower, table.upper, ~problem.forced_published,
                     _single(problem), ~problem.empty, table.sensitive.copy())
    targets = np.flatnonzero(table.sensitive)
    integer = problem.integer
    deltas = {int(x): _deltas(max(table.required_upper[x] - problem.values[x], 0.0),
                              max(problem.values[x] - table.required_lower[x], 0.0), integer,
                              1.0 / table.scale, table.upper[x] - problem.values[x]) for x in targets}
    witnesses: dict[int, Witness] = {}
    for done, x in enumerate(targets[np.argsort(-problem.values[targets], kind="stable")].tolist()):
        if x not in witnesses:
            _take(search, witnesses, deltas, _best_hypercube(search, x, *deltas[x]))
        if done % 5000 == 4999:
            _log.info("hypercube: %d of %d sensitive cells, %d cells suppressed", done + 1, len(targets),
                      int(search.suppressed.sum()), extra={"done": done + 1, "total": len(targets)})
    # a second look at the cells without one, among many more combinations of each dimension's vectors
    for x in [x for x in targets.tolist() if x not in witnesses]:
        _take(search, witnesses, deltas, _best_hypercube(search, x, *deltas[x], RETRY_COMBINATIONS))
    # only witnesses that hold on their own count (relations of aliased cells are not in the grid): a cell whose
    # witness does not is left to the LP heuristic and audit like one without
    found = list(witnesses.values())
    held = verified_witnesses(problem, table, search.suppressed, found)
    found = [w for w in found if held[w.target]]
    return search.suppressed, found, sorted(x for x in targets.tolist() if not held[x])


def prune_hypercubes(problem, table, suppressed, witnesses: list[Witness], *,
                     larger_than: int = 0) -> tuple[np.ndarray, list[Witness]]:
    """The pattern without the secondary suppressions its witnesses can do without, and the witnesses that prove
    it: each secondary cell, the costliest first, is published where every witness that changes it has another
    hypercube among the cells that stay suppressed (which then becomes that cell's witness). Hypercubes chosen
    one by one overlap, and a later one can stand in for an earlier one's cells. No LP, so it reaches groups of
    suppressed cells too large for prune_pattern's LPs (dense tables, where the hypercubes join up); only the
    cells of groups of more than ``larger_than`` suppressed cells are tried (prune_pattern publishes more in the
    others, and publishes less after this). A sensitive cell whose witness does not hold (or that has none)
    keeps its group of suppressed cells as it is: which of them protect it is unknown here."""
    suppressed = np.asarray(suppressed, dtype=bool).copy()
    witnesses = _holding(problem, table, suppressed, witnesses)
    held = np.zeros(len(problem.values), bool)
    held[[w.target for w in witnesses]] = True
    stay = table.sensitive.copy()
    for group in table.components(suppressed):
        if len(group) <= larger_than or (table.sensitive[group] & ~held[group]).any():
            stay[group] = True
    grid = grid_of(problem)
    search = _Search(grid, problem.values, problem.cost, table.lower, table.upper, ~problem.forced_published,
                     _single(problem), ~problem.empty, suppressed)
    by_target = {w.target: w for w in witnesses}
    users: dict[int, set] = {}  # cell -> the targets whose witness changes it
    for w in by_target.values():
        for cell in w.cells.tolist():
            users.setdefault(cell, set()).add(w.target)
    secondary = np.flatnonzero(suppressed & ~stay)
    published = 0
    for cell in secondary[np.lexsort((secondary, -problem.cost[secondary]))].tolist():
        search.suppressed[cell] = False
        replacements = {}
        for target in users.get(cell, ()):
            w = by_target[target]
            found = _best_hypercube(search, target, w.up, w.down, within=True)
            if found is None:
                break
            replacements[target] = found
        else:
            published += 1
            for target, found in replacements.items():
                for old in by_target[target].cells.tolist():
                    users[old].discard(target)
                for new in found.cells.tolist():
                    users.setdefault(new, set()).add(target)
                by_target[target] = found
            continue
        search.suppressed[cell] = True
    _log.info("hypercube: %d of %d secondary suppressions published by other witnesses", published, len(secondary))
    return search.suppressed, list(by_target.values())


def _holding(problem, table, suppressed, witnesses: list[Witness]) -> list[Witness]:
    """One witness per target that holds on its own: verified_witnesses judges targets, so a target with several
    witnesses has each checked alone (else a wrong one could stand beside a right one)."""
    by_target: dict[int, list[Witness]] = {}
    for w in witnesses:
        by_target.setdefault(w.target, []).append(w)
    single = [ws[0] for ws in by_target.values() if len(ws) == 1]
    held = verified_witnesses(problem, table, suppressed, single)
    found = [w for w in single if held[w.target]]
    for ws in (ws for ws in by_target.values() if len(ws) > 1):
        found += [w for w in ws if verified_witnesses(problem, table, suppressed, [w])[w.target]][:1]
    return found


def _take(search: _Search, witnesses: dict, deltas: dict, witness: Witness | None) -> None:
    """Suppress the cells of ``witness``, and let it stand for every other sensitive cell it moves far enough:
    the same change, turned so that the cell moves up, scaled down to that cell's protection (the bounds hold
    for every fraction of a change that keeps them)."""
    if witness is None:
        return
    search.suppressed[witness.cells] = True
    witnesses[witness.target] = witness
    for cell, sign in zip(witness.cells.tolist(), witness.signs.tolist()):
        if cell in witnesses or cell not in deltas:
            continue
        up, down = deltas[cell]
        reach_up, reach_down = (witness.up, witness.down) if sign > 0 else (witness.down, witness.up)
        if up <= reach_up and down <= reach_down and _no_strangers(search, cell, witness.cells):
            witnesses[cell] = Witness(cell, witness.cells, witness.signs * sign, up, down)


def _no_strangers(search: _Search, x: int, cells: np.ndarray) -> bool:
    """Whether every single-contributor cell among ``cells`` (but x) is one of x's own contributors'."""
    single = cells[search.single[cells] & (cells != x)]
    return not single.size or bool(_shares_contributor(search, x, tuple(search.grid.coordinates[single].T)).all())


def _single(problem) -> np.ndarray:
    n = len(problem.values)
    return problem.contributors == 1 if problem.contributors is not None else np.zeros(n, bool)


def _deltas(up: float, down: float, integer: bool, unit: float, room: float) -> tuple[float, float]:
    """How far the witness moves the cell up and down: its protection (whole numbers in an integer table); a
    cell that needs none (kept from an earlier release) moves one unit, so that it cannot be recomputed."""
    if integer:
        up, down = math.ceil(up - AUDIT_TOLERANCE), math.ceil(down - AUDIT_TOLERANCE)
    if up <= AUDIT_TOLERANCE and down <= AUDIT_TOLERANCE:
        return (unit, 0.0) if room >= unit else (0.0, unit)
    return float(up), float(down)


def _best_hypercube(search: _Search, x: int, up: float, down: float,
                    limit: int = MAX_COMBINATIONS, within: bool = False) -> Witness | None:
    """The cheapest hypercube around ``x`` (cost of the cells it newly suppresses) whose change by up and down
    keeps every cell within its bounds, among the best few vectors per dimension; None if none does. All
    combinations at once: an array of combinations x positions, padded where a vector has fewer codes.
    ``within``: only hypercubes of cells suppressed already."""
    grid = search.grid
    width = grid.width
    options = [_dimension_options(search, x, k, up, down, limit) for k in range(width)]
    keep = _options_kept([len(codes) for codes, _ in options], limit)
    where, sign_factors = [], []
    for k, ((codes, signs), n) in enumerate(zip(options, keep)):
        codes, signs = codes[:n], signs[:n]
        length = codes.shape[1]
        shape = [1] * (2 * width)
        shape[2 * k], shape[2 * k + 1] = n, length
        where.append(codes.reshape(shape))
        sign_factors.append(signs.reshape(shape))
    # axes (option 0, code 0, option 1, code 1, ...) -> (options..., codes...) -> (combination, position)
    order = [2 * k for k in range(width)] + [2 * k + 1 for k in range(width)]
    combinations = math.prod(keep)
    where = tuple(np.broadcast_arrays(*where))
    cells = grid.index[where].transpose(order).reshape(combinations, -1)
    signs = functools.reduce(np.multiply, sign_factors)
    signs = np.broadcast_to(signs, where[0].shape).transpose(order).reshape(combinations, -1)
    present = (cells >= 0) & (signs != 0)
    safe = np.where(present, cells, 0)
    values = search.values[safe]
    # x's own contributor may be the one of a single-contributor cell that holds x's records or that x holds
    single = search.single[safe] & present
    if single.any():  # x's own contributors' cells are no strangers (the check only where needed: it costs)
        single &= ~_shares_contributor(search, x, where).transpose(order).reshape(combinations, -1)
    blocked = ~search.usable[safe] | single
    fits = ~((cells == KNOWN_ZERO) & (signs != 0)).any(axis=1) & ~(present & blocked & (cells != x)).any(axis=1)
    for delta in (up, -down):
        if delta:
            moved = values + delta * signs
            outside = (moved < search.lower[safe] - AUDIT_TOLERANCE) | (moved > search.upper[safe] + AUDIT_TOLERANCE)
            fits &= ~(present & outside).any(axis=1)
    fresh = present & ~search.suppressed[safe]
    if within:
        fits &= ~fresh.any(axis=1)
    if not fits.any():
        return None
    cost = np.where(fresh, search.cost[safe], 0.0).sum(axis=1)
    candidates = np.flatnonzero(fits)
    for best in candidates[np.lexsort((fresh[candidates].sum(axis=1), cost[candidates]))]:
        found = _one_change_per_cell(grid, cells[best][present[best]], signs[best][present[best]])
        if found is not None:
            return Witness(x, found[0], found[1].astype(int), up, down)
    return None


def _one_change_per_cell(grid: CellGrid, cells: np.ndarray, signs: np.ndarray):
    """(cells, signs) with each cell once, where a cell of several code combinations (aliases) is at all of them
    with one sign (else it would change and not change at once): None where one is not."""
    if not (grid.multiplicity[cells] > 1).any():
        return cells, signs
    unique, first, count = np.unique(cells, return_index=True, return_counts=True)
    for cell, times in zip(unique, count):
        if times != grid.multiplicity[cell] or len(set(signs[cells == cell].tolist())) != 1:
            return None
    return unique, signs[first]


def _shares_contributor(search: _Search, x: int, codes: tuple) -> np.ndarray:
    """Whether the cells at ``codes`` (one broadcastable array of code ids per dimension) have records in common
    with x: along every dimension one code lies within the other, and the cell of the inner codes is not empty.
    The one contributor of such a single-contributor cell is one of x's contributors."""
    grid = search.grid
    meet, common = [], True
    for k, code_ids in enumerate(codes):
        mine = grid.coordinates[x, k]  # x: one cell, or one per code (an array)
        common = common & (grid.within[k][code_ids, mine] | grid.within[k][mine, code_ids])
        meet.append(np.where(grid.within[k][code_ids, mine], code_ids, mine))
    cells = grid.index[tuple(np.broadcast_arrays(*meet))]
    return common & (cells >= 0) & search.holds[np.maximum(cells, 0)]


def _options_kept(counts: list[int], limit: int) -> list[int]:
    """How many of each dimension's best options to combine: as many as ``limit`` combinations allow, evenly."""
    keep = [1] * len(counts)
    while True:
        grown = False
        for k in range(len(counts)):
            if keep[k] < counts[k] and math.prod(keep) // keep[k] * (keep[k] + 1) <= limit:
                keep[k] += 1
                grown = True
        if not grown:
            return keep


def _dimension_options(search: _Search, x: int, k: int, up: float, down: float,
                       limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The additive vectors of dimension k through x's code as rows of (codes, signs), padded (the padding code,
    sign 0), best first by the cells they take on x's own line along k; the 'up' vector (x's code and its
    ancestors) is always among them."""
    grid = search.grid
    code = int(grid.coordinates[x][k])
    own = _down_chain(search, x, k, code)
    climb = grid.ancestors(k, code)
    siblings = grid.siblings[k][code]
    leaves = grid.leaf[k][siblings]
    chains = {int(s): _down_chain(search, x, k, int(s)) for s in siblings[~leaves]}  # the leaves: themselves
    length = max([len(own) + 1] + [len(own) + len(chain) for chain in chains.values()] + [len(climb) + len(own)])
    codes = np.full((len(siblings) + 1, length), grid.pad[k])
    signs = np.zeros((len(siblings) + 1, length))
    codes[:, :len(own)], signs[:, :len(own)] = own, 1
    codes[:-1, len(own)], signs[:-1, len(own)] = siblings, -1
    for i in np.flatnonzero(~leaves):
        chain = chains[int(siblings[i])]
        codes[i, len(own):len(own) + len(chain)], signs[i, len(own):len(own) + len(chain)] = chain, -1
    codes[-1, len(own):len(own) + len(climb)], signs[-1, len(own):len(own) + len(climb)] = climb, 1  # upward
    signs[-1, len(own) + len(climb):] = 0
    fitting, cost = _line_fits(search, x, k, codes[:-1], signs[:-1], up, down)
    ranked = np.lexsort((cost, ~fitting))
    # the up vector always exists but takes the totals: after the siblings whose line carries the change,
    # as many as this dimension's share of the combinations leaves room for
    head = min(int(fitting.sum()), max(1, int(limit ** (1 / grid.width)) - 1))
    rows = np.concatenate([ranked[:head], [len(siblings)], ranked[head:]])
    return codes[rows], signs[rows]


def _line_fits(search: _Search, x: int, k: int, codes: np.ndarray, signs: np.ndarray, up: float,
               down: float) -> tuple[np.ndarray, np.ndarray]:
    """Per vector of dimension k (rows of codes and signs): (whether x's line along k can carry the change, the
    cost it newly suppresses there): _best_hypercube's check in one dimension, to rank the vectors."""
    grid = search.grid
    at = grid.coordinates[x]
    line = grid.index[tuple(at[:k]) + (slice(None),) + tuple(at[k + 1:])]  # the cell of every code along k
    cells = line[codes]
    used = signs != 0
    safe = np.maximum(cells, 0)
    single = search.single[safe] & used & (cells != x)
    if single.any():  # _shares_contributor along one line: only the codes along k differ from x's
        mine = at[k]
        inside, around = grid.within[k][codes, mine], grid.within[k][mine, codes]
        meet = line[np.where(inside, codes, mine)]
        single &= ~((inside | around) & (meet >= 0) & search.holds[np.maximum(meet, 0)])
    fits = ~((used & (cells < 0)) | (used & ~search.usable[safe] & (cells != x)) | single).any(axis=1)
    values = search.values[safe]
    for delta in (up, -down):
        if delta:
            moved = values + delta * signs
            outside = (moved < search.lower[safe] - AUDIT_TOLERANCE) | (moved > search.upper[safe] + AUDIT_TOLERANCE)
            fits &= ~(used & outside).any(axis=1)
    fresh = used & (cells >= 0) & ~search.suppressed[safe]
    return fits, np.where(fresh, search.cost[safe], 0.0).sum(axis=1)


def _down_chain(search: _Search, x: int, k: int, code: int) -> list[int]:
    """``code`` and, where it is a total along k, a part of it, down to a leaf: the part whose cells on x's line
    may change and are largest (the change runs through them). Where x's line along k is no table's (linked
    tables: k is a dimension x's table lacks), the cells of the line with one of x's other codes at its total."""
    grid = search.grid
    chain = [code]
    if not grid.children[k][code]:
        return chain
    mine = code == grid.coordinates[x][k]  # x's own parts: their contributors are x's
    while grid.children[k][chain[-1]]:
        children = grid.children[k][chain[-1]]
        scores = [_part_score(search, x, k, child, mine) for child in children]
        chain.append(children[max(range(len(children)), key=lambda i: scores[i])])
    return chain


def _part_score(search: _Search, x: int, k: int, child: int, mine: bool) -> tuple[bool, float]:
    """(whether the cells of x's line at ``child`` may change, the least of their values)."""
    grid = search.grid
    at = grid.coordinates[x].copy()
    at[k] = child
    probes = [tuple(at)]
    if grid.index[probes[0]] == KNOWN_ZERO:
        return False, -np.inf
    if grid.index[probes[0]] < 0:
        for j in range(grid.width):
            if j != k and grid.parent[j][at[j]] >= 0:
                probes.append(tuple(at[:j]) + (grid.root[j][at[j]],) + tuple(at[j + 1:]))
    cells = [int(c) for c in (grid.index[p] for p in probes) if c >= 0]
    if not cells:
        return False, -np.inf
    free = all(search.usable[c] and (mine or not search.single[c]) for c in cells)
    return free, float(min(search.values[c] for c in cells))


def verified_witnesses(problem, table, suppressed, witnesses: list[Witness]) -> np.ndarray:
    """The sensitive cells whose witness holds, checked on its own: it changes suppressed cells only, once each,
    keeps every relation exactly, moves its cell up to one end of the required interval and down to the other,
    every cell within its bounds (by whole numbers in an integer table), and changes no single-contributor cell
    but those of its cell's own contributors. All witnesses at once: one row per (witness, cell)."""
    n = len(problem.values)
    proven = np.zeros(n, bool)
    if not witnesses:
        return proven
    targets = np.array([w.target for w in witnesses])
    up, down = np.array([w.up for w in witnesses], float), np.array([w.down for w in witnesses], float)
    column = np.repeat(np.arange(len(witnesses)), [len(w.cells) for w in witnesses])
    cells = np.concatenate([w.cells for w in witnesses]).astype(np.int64)
    signs = np.concatenate([w.signs for w in witnesses]).astype(float)
    change = csc_matrix((signs, (cells, column)), shape=(n, len(witnesses)))
    ok = np.asarray(abs(problem.relations @ change).sum(axis=0)).ravel() == 0  # signs of +-1: exact in floats
    key = np.sort(column * n + cells)
    twice = np.unique(key[1:][key[1:] == key[:-1]] // n)
    wrong = ~suppressed[cells] | problem.forced_published[cells] | (np.abs(signs) != 1)
    for delta in (up[column], -down[column]):
        moved = problem.values[cells] + delta * signs
        wrong |= (moved < table.lower[cells] - AUDIT_TOLERANCE) | (moved > table.upper[cells] + AUDIT_TOLERANCE)
    stranger = _single(problem)[cells] & (cells != targets[column])
    if stranger.any():  # a single-contributor cell of one of x's own contributors may change
        grid = grid_of(problem)
        search = _Search(grid, problem.values, problem.cost, table.lower, table.upper, ~problem.forced_published,
                         _single(problem), ~problem.empty, suppressed)
        rows = np.flatnonzero(stranger)
        stranger[rows] = ~_shares_contributor(search, targets[column[rows]], tuple(grid.coordinates[cells[rows]].T))
    wrong |= stranger
    ok &= np.bincount(column, weights=wrong, minlength=len(witnesses)) == 0
    at_target = cells == targets[column]
    ok &= np.bincount(column[at_target], weights=signs[at_target] == 1, minlength=len(witnesses)) == 1
    ok &= np.bincount(column[at_target], minlength=len(witnesses)) == 1
    ok &= problem.values[targets] + up >= table.required_upper[targets] - AUDIT_TOLERANCE
    ok &= problem.values[targets] - down <= table.required_lower[targets] + AUDIT_TOLERANCE
    if problem.integer:
        ok &= (up == np.round(up)) & (down == np.round(down))
    ok[twice] = False
    proven[targets[ok]] = True
    return proven
