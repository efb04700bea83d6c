"""The secondary suppression problem: one table's cells, relations, bounds and costs, checked once.

Like scipy's ``_LPProblem`` (optimize/_linprog_util.py), every method (heuristic.py, optimal.py) and the
entry point (secondary.py) take this one object instead of a dozen loose arrays, so that each array is
validated in one place and an error names the cell or parameter that is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix

from sdc.errors import SdcError
from sdc.suppression.a_priori import APrioriCells
from sdc.suppression.audit import AUDIT_TOLERANCE, AuditTable, a_priori_lower, default_upper

COSTS = ("value", "freq", "cells")
CELL_STATUSES = ("published", "primary", "empty")  # what suppression_primary gives a cell
_CELL_COLUMNS = ("value", "freq", "status", "protection_lower", "protection_upper")


@dataclass(frozen=True, eq=False, repr=False)
class SuppressionProblem:
    """A table to protect by secondary suppression. Arrays have one entry per cell; ``relations`` is the
    sparse matrix of the additivity equations (one row per relation: sum of coefficient x value = 0).

    ``primary``: cells the rules suppress, each needing ``protection_lower``/``protection_upper`` below
    and above its value; ``lower``/``upper``: what an attacker knows of every cell beforehand;
    ``cost``: what a secondary suppression costs; ``forced_published``: cells that may not be suppressed
    (empty cells, cells an earlier release published with today's value); ``forced_suppressed``: cells
    suppressed from the outset (an earlier release suppressed them); ``contributors`` (magnitude tables):
    a cell of one contributor lets that contributor recompute a second suppressed cell of its relation.

    >>> from sdc.suppression import SuppressionProblem
    >>> def cell(value, status="published", protection=0):
    ...     return {"value": value, "freq": value, "status": status,
    ...             "protection_lower": protection, "protection_upper": protection}
    >>> cells = [cell(12), cell(2, "primary", 1), cell(4), cell(6)]
    >>> relations = [[(0, 1.0), (1, -1.0), (2, -1.0), (3, -1.0)]]  # 12 = 2 + 4 + 6
    >>> problem = SuppressionProblem.from_cells(cells, relations, magnitude=False, cost="freq")
    >>> problem
    SuppressionProblem(4 cells, 1 relations, 1 primary, counts)
    >>> problem.lower.tolist(), problem.cost.tolist()
    ([1.0, 1.0, 1.0, 1.0], [12.0, 2.0, 4.0, 6.0])
    >>> SuppressionProblem.from_cells(cells, [[(0, 1.0), (7, -1.0)]], magnitude=False)
    Traceback (most recent call last):
    ...
    sdc.errors.SdcError: suppression problem: relation 0 names cell 7, but the table has 4 cells
    """

    values: np.ndarray
    relations: csr_matrix
    primary: np.ndarray
    protection_lower: np.ndarray
    protection_upper: np.ndarray
    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    freq: np.ndarray | None = None
    forced_published: np.ndarray | None = None
    forced_suppressed: np.ndarray | None = None
    empty: np.ndarray | None = None
    contributors: np.ndarray | None = None
    magnitude: bool = True
    labels: tuple[str, ...] = field(default=())
    coordinates: tuple[tuple, ...] | None = None  # each cell's codes, one per dimension (method hypercube)
    aliases: tuple[tuple[int, tuple], ...] = ()  # (cell, codes): further codes of a cell (linked tables)

    def __post_init__(self):
        n = _cell_count(self.values)
        set_ = object.__setattr__
        set_(self, "values", _numbers(self, "values", self.values, n))
        for name in ("protection_lower", "protection_upper", "cost", "lower", "upper", "freq", "contributors"):
            if getattr(self, name) is not None:
                set_(self, name, _numbers(self, name, getattr(self, name), n, infinite=name in ("lower", "upper")))
        set_(self, "primary", _mask(self, "primary", self.primary, n))
        for name in ("forced_published", "forced_suppressed", "empty"):
            set_(self, name, _mask(self, name, np.zeros(n, bool) if getattr(self, name) is None else getattr(self, name), n))
        set_(self, "labels", tuple(self.labels) or tuple(f"cell {k}" for k in range(n)))
        if len(self.labels) != n:
            raise SdcError(f"suppression problem: labels has {len(self.labels)} entries for {n} cells")
        if self.coordinates is not None:
            # a cell that several code combinations name (linked tables) gives a list of them: the first is its
            # coordinates, the others its aliases
            if len(self.coordinates) != n:
                raise SdcError(f"suppression problem: coordinates has {len(self.coordinates)} entries for {n} cells")
            named = [_code_combinations(k, c) for k, c in enumerate(self.coordinates)]
            set_(self, "coordinates", tuple(tuple(c[0]) for c in named))
            set_(self, "aliases", tuple(self.aliases) + tuple((k, tuple(a)) for k, c in enumerate(named) for a in c[1:]))
        set_(self, "relations", _relation_matrix(self.relations, n))
        _check_cells(self)
        _check_additive(self)

    @classmethod
    def from_cells(cls, cells: list[dict], relations, *, magnitude: bool, cost: str = "value",
                   prefer_low_levels: bool = False, a_priori: APrioriCells | None = None,
                   dims: list[str] | None = None, coordinates=None) -> SuppressionProblem:
        """The problem of a cell table from suppression_primary: one dict per cell with value, freq, status
        ('published', 'primary' or 'empty'), protection_lower/upper (and contributors when ``magnitude``),
        ``relations`` as lists of (cell index, coefficient). ``cost``/``prefer_low_levels``: see cell_costs;
        ``a_priori``: the last release's pattern (a_priori.py); ``dims``: the cells' dimension columns, to
        name a cell in messages and as its codes (``coordinates``, where not given: linked tables give their
        cells' codes over all their dimensions)."""
        cells = _checked_cells(cells, magnitude, dims)
        values = np.array([c["value"] for c in cells], dtype=float)
        freq = np.array([c["freq"] for c in cells], dtype=float)
        status = np.array([c["status"] for c in cells], dtype=object)
        primary, empty = status == "primary", status == "empty"
        labels = [_label(c, k, dims) for k, c in enumerate(cells)]
        _check_relation_cells(relations, len(cells))
        # an empty cell is published as empty: a known zero protects nothing (sdcTable's status z); a cell the
        # last release suppressed stays suppressed, one it published with today's value is public
        kept = np.zeros(len(cells), bool) if a_priori is None else a_priori.suppressed & ~primary & ~empty
        public = empty if a_priori is None else empty | (a_priori.known & ~primary)
        return cls(values=values, relations=relations, primary=primary,
                   protection_lower=[_level(c, "protection_lower", labels[k]) for k, c in enumerate(cells)],
                   protection_upper=[_level(c, "protection_upper", labels[k]) for k, c in enumerate(cells)],
                   cost=cell_costs(values, freq, relations, cost, prefer_low_levels=prefer_low_levels),
                   lower=a_priori_lower(values, freq, magnitude=magnitude), upper=default_upper(values),
                   freq=freq, forced_published=public, forced_suppressed=kept, empty=empty,
                   # a contributor alone in a cell knows its value: singletons matter in magnitude tables only
                   contributors=np.array([c["contributors"] for c in cells], dtype=float) if magnitude else None,
                   magnitude=magnitude, labels=tuple(labels),
                   coordinates=coordinates if coordinates is not None or not dims
                   else [tuple(c[d] for d in dims) for c in cells])

    @classmethod
    def from_arrays(cls, values, relations, primary, protection_lower, protection_upper, cost, *, lower=None,
                    upper=None, **fields) -> SuppressionProblem:
        """A problem from arrays: ``relations`` as lists of (cell index, coefficient) or a sparse matrix,
        ``primary`` a boolean mask or cell indices; a-priori bounds by default 0 and 1.5 x the largest value
        (sdcTable's). Further fields (freq, forced_published, ...) by name."""
        values = np.asarray(values, dtype=float)
        n = _cell_count(values)
        primary = np.asarray(primary)
        if primary.dtype != bool:
            primary = _index_mask(primary, n)
        return cls(values=values, relations=relations, primary=primary, protection_lower=protection_lower,
                   protection_upper=protection_upper, cost=cost, lower=np.zeros(n) if lower is None else lower,
                   upper=default_upper(values) if upper is None else upper, **fields)

    def __repr__(self) -> str:
        kind = "magnitudes" if self.magnitude else "counts"
        return (f"SuppressionProblem({len(self.values)} cells, {self.relations.shape[0]} relations, "
                f"{int(self.primary.sum())} primary, {kind})")

    @property
    def sensitive(self) -> np.ndarray:
        """The cells the methods start from: primaries and cells an earlier release suppressed."""
        return self.primary | self.forced_suppressed

    @property
    def integer(self) -> bool:
        """Counts, and magnitude tables of whole numbers: the attacker also knows the cells are integers."""
        return is_integer_table(self.values, self.magnitude)

    def method_table(self, *, integer: bool = False) -> AuditTable:
        """A fresh AuditTable of what the methods solve: a cell an earlier release suppressed is sensitive with
        nothing to reach (both methods keep it suppressed). Fresh: methods narrow its requirements in place."""
        kept = self.forced_suppressed
        return AuditTable(self.values, self.relations, sensitive=self.sensitive,
                          protection_lower=np.where(kept, 0.0, self.protection_lower),
                          protection_upper=np.where(kept, 0.0, self.protection_upper),
                          lower=self.lower, upper=self.upper, integer=integer)

    def constraint_lists(self) -> list[list[tuple[int, float]]]:
        """The relations as lists of (cell, coefficient), as audit_pattern also takes them."""
        m = self.relations
        return [list(zip(m.indices[m.indptr[r]:m.indptr[r + 1]].tolist(), m.data[m.indptr[r]:m.indptr[r + 1]].tolist()))
                for r in range(m.shape[0])]


def cell_costs(values, freq, relations, cost: str, *, prefer_low_levels: bool = False) -> np.ndarray:
    """The cost of suppressing each cell: its absolute value (cost 'value'), its frequency ('freq') or 1
    ('cells'). With ``prefer_low_levels`` each is multiplied by 10^k, k = the number of relations in which
    the cell is the total (in a table without hierarchies: the number of dimensions along which it is a
    total), so that totals are kept where possible; the methods then minimise that weighted cost."""
    if cost not in COSTS:
        raise SdcError(f"cost must be one of {', '.join(COSTS)}, got {cost!r}")
    values = np.asarray(values, dtype=float)
    n = len(values)
    base = {"value": lambda: np.maximum(np.abs(values), 1e-9), "freq": lambda: np.asarray(freq, dtype=float),
            "cells": lambda: np.ones(n)}[cost]()
    if not prefer_low_levels:
        return base
    level = np.zeros(n)
    for r, relation in enumerate(relations):
        parent = next((cell for cell, coefficient in relation if coefficient > 0), None)
        if parent is None:
            raise SdcError(f"suppression problem: relation {r} has no total (no cell with a positive coefficient)")
        level[parent] += 1
    return base * 10.0 ** level


def is_integer_table(values, magnitude: bool) -> bool:
    """Counts, and magnitude tables whose cells are all whole numbers, get the integer audit."""
    values = np.asarray(values, dtype=float)
    return not magnitude or bool(np.all(np.abs(values - np.round(values)) <= AUDIT_TOLERANCE))


def group_relations(members, cell_keys, dims) -> list[list[tuple[int, float]]]:
    """Rows (constraint_id, *codes, coefficient) of suppression_constraints as relations over cell indexes."""
    index = {key: k for k, key in enumerate(cell_keys)}
    relations: dict[str, list] = {}
    for constraint_id, *codes, coefficient in members:
        if tuple(codes) not in index:
            raise SdcError(f"cell {dict(zip(dims, codes))} of a relation is missing from the cells file")
        relations.setdefault(constraint_id, []).append((index[tuple(codes)], float(coefficient)))
    return list(relations.values())


def _code_combinations(k: int, codes) -> list[tuple]:
    """A cell's code combinations: a tuple of codes, or (a cell that several name) a list of such tuples."""
    if isinstance(codes, tuple):
        return [codes]
    if isinstance(codes, list) and codes and all(isinstance(c, tuple) for c in codes):
        return codes
    raise SdcError(f"suppression problem: coordinates of cell {k} must be a tuple of codes (or a list of tuples "
                   f"where several code combinations name the cell), got {codes!r}")


def _cell_count(values) -> int:
    n = np.asarray(values).shape[0] if np.ndim(values) == 1 else -1
    if n <= 0:
        raise SdcError("suppression problem: values must list at least one cell")
    return n


def _numbers(problem, name: str, array, n: int, *, infinite: bool = False) -> np.ndarray:
    try:
        array = np.array(array, dtype=float)
    except (TypeError, ValueError):
        raise SdcError(f"suppression problem: {name} must hold numbers") from None
    if array.shape != (n,):
        raise SdcError(f"suppression problem: {name} has {array.size} entries for {n} cells")
    bad = np.isnan(array) if infinite else ~np.isfinite(array)
    if bad.any():
        k = int(np.argmax(bad))
        raise SdcError(f"suppression problem: {name} of {_name(problem, k)} is {array[k]:g}, not a number")
    array.setflags(write=False)  # the problem is shared by methods and audit: nobody changes it
    return array


def _mask(problem, name: str, array, n: int) -> np.ndarray:
    array = np.array(array, dtype=bool)
    if array.shape != (n,):
        raise SdcError(f"suppression problem: {name} has {array.size} entries for {n} cells")
    array.setflags(write=False)
    return array


def _index_mask(cells, n: int) -> np.ndarray:
    mask = np.zeros(n, bool)
    for cell in np.ravel(cells).tolist():
        if not isinstance(cell, int) or not 0 <= cell < n:
            raise SdcError(f"suppression problem: primary cell {cell!r} is not in the table of {n} cells")
        mask[cell] = True
    return mask


def _name(problem, k: int) -> str:
    labels = getattr(problem, "labels", ())
    return labels[k] if isinstance(labels, tuple) and len(labels) > k else f"cell {k}"


def _check_relation_cells(relations, n: int) -> None:
    if hasattr(relations, "shape"):
        return
    for r, relation in enumerate(relations):
        for cell, coefficient in relation:
            if not isinstance(cell, (int, np.integer)) or not 0 <= cell < n:
                raise SdcError(f"suppression problem: relation {r} names cell {cell}, but the table has {n} cells")
            if not np.isfinite(coefficient) or coefficient == 0:
                raise SdcError(f"suppression problem: relation {r} gives cell {cell} the coefficient {coefficient!r}")


def _relation_matrix(relations, n: int) -> csr_matrix:
    if hasattr(relations, "shape"):
        if relations.shape[1] != n:
            raise SdcError(f"suppression problem: relations have {relations.shape[1]} columns for {n} cells")
        matrix = csr_matrix(relations, dtype=float)
    else:
        _check_relation_cells(relations, n)
        rows = [r for r, relation in enumerate(relations) for _ in relation]
        cells = [int(cell) for relation in relations for cell, _ in relation]
        coefficients = [float(c) for relation in relations for _, c in relation]
        matrix = csr_matrix((coefficients, (rows, cells)), shape=(len(relations), n))
    matrix.sort_indices()
    return matrix


def _check_cells(problem: SuppressionProblem) -> None:
    """Each array's entries are what the methods assume of them; an error names the first cell that is not."""
    p = problem
    checks = [
        (p.freq is not None and p.freq < 0, lambda k: f"has the negative frequency {p.freq[k]:g}"),
        ((p.protection_lower < 0) | (p.protection_upper < 0),
         lambda k: "has a negative protection level; protection levels are distances, at least 0"),
        (p.cost < 0, lambda k: f"has the negative cost {p.cost[k]:g}"),
        ((p.lower > p.values + AUDIT_TOLERANCE) | (p.upper < p.values - AUDIT_TOLERANCE),
         lambda k: f"has the value {p.values[k]:g} outside its a-priori bounds [{p.lower[k]:g}, {p.upper[k]:g}]"),
        (p.primary & p.forced_published, lambda k: "is primary and forced to be published"),
        (p.forced_suppressed & p.forced_published, lambda k: "is forced both to be suppressed and to be published"),
    ]
    for bad, message in checks:
        if np.any(bad):
            k = int(np.argmax(bad))
            raise SdcError(f"suppression problem: {_name(p, k)} {message(k)}")


def _check_additive(problem: SuppressionProblem) -> None:
    values, matrix = problem.values, problem.relations
    residual = matrix @ values
    broken = np.flatnonzero(np.abs(residual) > AUDIT_TOLERANCE * max(1.0, np.abs(values).max()))
    if broken.size:
        r = int(broken[0])
        row = slice(matrix.indptr[r], matrix.indptr[r + 1])
        total = next((int(c) for c, a in zip(matrix.indices[row], matrix.data[row]) if a > 0), int(matrix.indices[row][0]))
        raise SdcError(f"suppression problem: relation {r} does not hold: {_name(problem, total)} is "
                       f"{values[total]:g}, its parts sum to {values[total] - residual[r]:g}; the table is not additive")


def _checked_cells(cells, magnitude: bool, dims) -> list[dict]:
    if not cells:
        raise SdcError("suppression problem: no cells")
    needed = _CELL_COLUMNS + (("contributors",) if magnitude else ()) + tuple(dims or ())
    for k, c in enumerate(cells):
        missing = [name for name in needed if name not in c]
        if missing:
            raise SdcError(f"suppression problem: cell {k} has no {missing[0]!r}")
        if c["status"] not in CELL_STATUSES:
            raise SdcError(f"suppression problem: {_label(c, k, dims)} has status {c['status']!r}; it must be one of "
                           f"{', '.join(CELL_STATUSES)}")
    return cells


def _label(cell: dict, k: int, dims) -> str:
    if cell.get("label"):  # a cell of linked tables names its table (linked.py)
        return str(cell["label"])
    return f"cell {', '.join(f'{d}={cell[d]}' for d in dims)}" if dims else f"cell {k}"


def _level(cell: dict, name: str, label: str) -> float:
    try:
        return float(cell[name] if cell[name] is not None else 0.0)
    except (TypeError, ValueError):
        raise SdcError(f"suppression problem: {name} of {label} is {cell[name]!r}, not a number") from None
