"""Secondary suppression by Gaussian elimination (issue 50), re-implemented from the specification of Statistics
Norway's GaussSuppression (SSBtools; ../shared/reference/linked-suppression.md §2), not from its code.

Every published cell is a sum of inner cells (the finest cells of all tables' variables, or the records): a
column of the model matrix X (inner cells × cells). Candidates are taken in a cost order, the cells to publish
first; each is reduced modulo the span of the cells published so far, as is every primary. Publishing a candidate
discloses a primary exactly when the primary's reduced vector is proportional to the candidate's: then the
candidate is suppressed (secondary), else published and used as a pivot. The arithmetic is on integers (each
vector divided by the gcd of its coefficients), so the test is exact.

The pattern is safe against exact disclosure in the model X; it is not by itself safe against interval
disclosure (a primary whose interval is narrower than its protection): sdc's audit decides that, as for every
other method.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np
import scipy.sparse as sp

# the share of the tie term in the candidates' score, and what puts zero cells first (§2.4)
TIE_WEIGHT = 0.99
ZERO_FIRST = 0.01


def candidate_order(x: sp.spmatrix, freq, weight=None, zeros_first: bool = True) -> np.ndarray:
    """The cells in the order GaussSuppression's default tries them, those to publish most first (§2.4): the
    score |v| + 0.99 · |Xᵀ X v| / max, v = (freq + 1) · weight (freq where negative); zero cells first unless
    ``zeros_first`` is false; ties in the cells' order (a stable sort)."""
    freq = np.asarray(freq, dtype=float)
    w = np.ones(len(freq)) if weight is None else np.clip(np.asarray(weight, dtype=float), 0, None)
    if weight is not None and w.min() == 0:
        w = w + w.max() * 1e-20
    v = np.where(freq < 0, freq, freq + 1) * w
    x = sp.csc_matrix(x, dtype=float)
    tie = np.abs(x.T @ (x @ v))
    if tie.max() > 0:
        tie = tie / tie.max()
    score = np.abs(v) + TIE_WEIGHT * tie
    if zeros_first:
        score = np.where(freq == 0, score + score.max() + ZERO_FIRST, score)
    return np.argsort(-score, kind="stable")


@dataclass
class GaussPattern:
    """What the elimination gives: the candidates suppressed (secondary), and the primaries that the forced
    cells alone disclose (unsafe: no suppression can protect them)."""

    secondary: list[int]
    unsafe: list[int]


def _column(x: sp.csc_matrix, j: int) -> dict[int, int]:
    start, end = x.indptr[j], x.indptr[j + 1]
    return {int(r): int(v) for r, v in zip(x.indices[start:end], x.data[start:end]) if v}


def _reduced(vector: dict[int, int], pivot: dict[int, int], row: int) -> dict[int, int]:
    """vector without its coefficient in ``row``: a multiple of vector less a multiple of the pivot, divided by
    the gcd of what is left (integers throughout)."""
    a, b = pivot[row], vector[row]
    g = gcd(a, b)
    fa, fb = a // g, b // g
    found = {r: fa * c for r, c in vector.items()}
    for r, c in pivot.items():
        found[r] = found.get(r, 0) - fb * c
    found = {r: c for r, c in found.items() if c}
    divisor = 0
    for c in found.values():
        divisor = gcd(divisor, c)
        if divisor == 1:
            break
    return {r: c // divisor for r, c in found.items()} if divisor > 1 else found


def _proportional(a: dict[int, int], b: dict[int, int]) -> bool:
    if len(a) != len(b):
        return False
    row = next(iter(a))
    if row not in b:
        return False
    ra, rb = a[row], b[row]
    return all(r in b and c * rb == b[r] * ra for r, c in a.items())


class _Elimination:
    """Sparse integer vectors under elimination, by key, with the index of the vectors that hold each row."""

    def __init__(self):
        self.vectors: dict[object, dict[int, int]] = {}
        self.holding: dict[int, set] = {}  # row -> the keys of the vectors with a coefficient there
        self.pivots = 0

    def add(self, key, vector: dict[int, int]) -> None:
        self.vectors[key] = vector
        for r in vector:
            self.holding.setdefault(r, set()).add(key)

    def drop(self, key) -> None:
        """A vector no longer reduced (a suppressed candidate)."""
        for r in self.vectors[key]:
            self.holding[r].discard(key)

    def publish(self, key) -> None:
        """``key``'s vector becomes a pivot: one of its rows (the one the fewest other vectors hold) leaves every
        other vector. Any row gives the same decisions: a candidate's reduced vector is proportional to a primary's
        exactly when the primary lies in the span of the published cells and the candidate."""
        pivot = self.vectors[key]
        row = min(pivot, key=lambda r: (len(self.holding.get(r, ())), r))  # the fewest vectors to reduce
        for other in list(self.holding.get(row, ())):
            if other == key:
                continue
            before = self.vectors[other]
            after = _reduced(before, pivot, row)
            for r in before.keys() - after.keys():
                self.holding[r].discard(other)
            for r in after.keys() - before.keys():
                self.holding.setdefault(r, set()).add(other)
            self.vectors[other] = after
        self.drop(key)
        self.pivots += 1

    def discloses(self, key) -> bool:
        """Publishing ``key`` would give a primary away: its vector is proportional to a primary's ("p", i)."""
        candidate = self.vectors[key]
        row = next(iter(candidate))
        return any(other[0] == "p" and _proportional(candidate, self.vectors[other])
                   for other in self.holding.get(row, ()))


def gauss_secondary(x: sp.spmatrix, candidates, primary, forced=(), known: sp.spmatrix | None = None) -> GaussPattern:
    """The secondary suppressions of GaussSuppression's elimination (§2.3) on the model matrix ``x`` (inner cells
    × cells, integer coefficients): ``candidates`` the cells in the order to try them (candidate_order; primaries
    among them are skipped), ``primary`` the cells to protect, ``forced`` cells published whatever they disclose
    (tried first; a forced primary is published). Primaries that the forced cells disclose are reported unsafe,
    whether or not any candidate follows them. ``known``: vectors over x's rows (one per row of ``known``) that
    the attacker knows before anything is published: with x the identity (a coordinate per cell), a table's
    additivity relations, so that the elimination runs on the relations of sdc's problems."""
    x = sp.csc_matrix(x)
    forced = [int(j) for j in dict.fromkeys(forced)]
    published = set(forced)
    primaries = [int(i) for i in dict.fromkeys(primary) if int(i) not in published]
    skipped = set(primaries) | published
    order = [int(j) for j in candidates if int(j) not in skipped]
    work = _Elimination()
    for j in forced + order:
        work.add(("c", j), _column(x, j))
    for i in primaries:
        work.add(("p", i), _column(x, i))
    known = sp.csr_matrix(known) if known is not None else sp.csr_matrix((0, x.shape[0]))
    for k in range(known.shape[0]):  # what the attacker knows from the outset: pivots before the forced cells
        start, end = known.indptr[k], known.indptr[k + 1]
        work.add(("k", k), {int(r): int(v) for r, v in zip(known.indices[start:end], known.data[start:end]) if v})
    for key in [("k", k) for k in range(known.shape[0])] + [("c", j) for j in forced]:
        if work.vectors[key]:  # published, whatever it discloses
            work.publish(key)
    unsafe = [i for i in primaries if not work.vectors[("p", i)]] if forced else []
    secondary = []
    for j in order:
        if work.pivots == x.shape[0]:
            break  # every inner cell is known: what is left is published
        key = ("c", j)
        if not work.vectors[key]:
            continue  # already a combination of published cells
        if work.discloses(key):
            secondary.append(j)
            work.drop(key)
            continue
        work.publish(key)
    return GaussPattern(sorted(secondary), sorted(unsafe))


def gauss_pattern(problem) -> np.ndarray:
    """Boolean mask of the cells a SuppressionProblem's elimination suppresses: its sensitive cells and the
    secondary suppressions gauss_secondary finds on its relations (x the identity, the relations known), the
    cells tried in decreasing cost (the costliest published first; sdc's cost in the place of GaussSuppression's
    score), its forced-published cells first, the cells an earlier release suppressed never tried. Safe against
    exact disclosure only: secondary.py completes it for the protection intervals. The vectors fill in as the
    relations are eliminated: its time grows with the square of the cells or faster (3-D tables without
    hierarchies: 1 s at 3,375 cells, 12 s at 8,000), less where hierarchies keep the relations short (1 s at
    10,554 cells).
    A primary that the cells which must be published give away is named in an SdcError."""
    from sdc.errors import SdcError

    relations = sp.csr_matrix(problem.relations)
    whole = np.round(relations.data)
    if not np.array_equal(relations.data, whole):
        raise SdcError("secondary suppression (gauss): the elimination needs relations with whole-number "
                       "coefficients; use method heuristic or optimal")
    n = len(problem.values)
    candidates = [int(j) for j in np.argsort(-np.asarray(problem.cost), kind="stable")
                  if not problem.forced_suppressed[j]]
    found = gauss_secondary(sp.identity(n, dtype=np.int64, format="csc"), candidates,
                            np.flatnonzero(problem.primary), np.flatnonzero(problem.forced_published),
                            known=sp.csr_matrix((whole.astype(np.int64), relations.indices, relations.indptr),
                                                shape=relations.shape))
    if found.unsafe:
        raise SdcError("secondary suppression (gauss): " + ", ".join(problem.labels[i] for i in found.unsafe) +
                       " can be computed from cells that must be published (empty cells, or cells an earlier release "
                       "published): no suppression protects them")
    suppressed = problem.sensitive.copy()
    suppressed[found.secondary] = True
    return suppressed
