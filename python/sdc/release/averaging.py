"""Averaging CKM noise over the tables of a release (issue 33): how well a reader of every published CKM count
of one population can estimate each count, and a floor under it.

The model. A population is the microdata one or more ``ckm_count`` calls read with the same fact. Its finest
cells are the cross product of every dimension the release's CKM count tables of it use, at their leaves; a
published cell covers the finest cells under its codes (a table covers every code of a dimension it does not
use), and its count is their sum plus one noise. The noise depends on the cell's records only (its cell key),
so cells with the same records carry the same noise and count once; the noises of different record sets are
pairwise independent (a cell key is the sum of its record keys modulo M, uniform given any other cell's key),
so they are uncorrelated, each with the variance of its ptable row. The reader's best linear unbiased estimate
(BLUE) of the finest counts x from the published counts y = A x + e, Var e = diag(V_i), has the covariance
(Aᵀ W A)⁺, W = diag(1 / V_i), for every count it identifies at all (a combination a with a in the row space of
A); a finest cell outside it has no unbiased estimate (infinite variance).

What the reader is assumed to know, so that the figures are the smallest a linear attack reaches:

* which finest cells are empty (a structural zero, a published zero that is one: sdc does not rely on it being
  secret). Knowing some cells exactly only removes unknowns, which lowers every other variance; an empty cell
  carries no noise (zero stays zero) and is left out;
* each published cell's noise variance (the variance of its own ptable row, which depends on its original
  count): the BLUE with the true variances has the smallest variance of all linear unbiased estimates.

Not modelled: estimates that are not linear (the ptable's shape: a count never published in 1..js, the bounds
of the noise, a perturbed count never below 0), and relations between populations (a fact that is the sum of
two others, a view that filters the records of a loaded table: audited as separate populations).

Exact where a connected part (finest cells and record sets linked through the published cells that cover them)
has at most AVERAGING_EXACT_CELLS finest cells or at most that many record sets: the pseudo-inverse from a pivoted
Cholesky factor of F (n × n, n finest cells) or of the record sets' Gram matrix W^½ A Aᵀ W^½ (m × m, m record
sets), whichever is smaller (``_exact``, ``_exact_by_record_sets``). Beyond both, exact as well where one
dimension splits the record sets: those within one of its codes share no finest cell with those of another, and
the ones over several of its codes (the separator) number at most AVERAGING_SEPARATOR_CELLS; the record sets'
Gram matrix is then factored block by block (averaging_dissection.py: the 20 tables of a census release over one
population, 41,188 record sets, with a separator of 7,588). Beyond that a lower
bound, proven by Cauchy-Schwarz (for a combination a in the range of F = Aᵀ W A,
(aᵀ F⁺ a)(aᵀ F a) >= (aᵀ a)²):

* a finest cell j:     Var >= 1 / Σ_i a_ij² / V_i  (its variance if every other finest cell were known);
* a published cell a:  Var >= (aᵀ a)² / Σ_i (a_iᵀ a)² / V_i, and >= the bound of each finest cell it covers
  (x = e_j: Var >= 1 / F_jj), the larger of the two (the first only where the overlaps are affordable).

The floor (sdc publish --min-standard-error, conventions.MIN_STANDARD_ERROR) is held by every finest cell with
records that the release identifies and every published cell with records; a lower bound below the floor
refuses as well (it is said to be one).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.linalg import solve_triangular
from scipy.sparse.csgraph import connected_components

from sdc.conventions import AVERAGING_EXACT_CELLS, AVERAGING_SEPARATOR_CELLS, MIN_STANDARD_ERROR, TOTAL_LABEL
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q
from sdc.quoting import quote_literal
from sdc.release.averaging_dissection import (
    CANDIDATE_OFF_ROW_SPACE,
    NOT_IDENTIFIED,
    exact_by_dissection,
    pivoted_cholesky,
    row_blocks,
    separator_groups,
)
from sdc.release.populations import population_of

EXACT, LOWER_BOUND = "exact", "lower bound"
# a table whose code combinations are at most this many finds its cells by a dense array of them (else by sorting)
DENSE_LOOKUP_KEYS = 20_000_000
# the lower bound of a published cell from its overlaps with every other one where their products number at most
# this (else from its finest cells' bounds alone)
OVERLAP_PRODUCTS = 2e9
# rows of A multiplied at once (bounds the dense blocks to a few million numbers)
BLOCK_NUMBERS = 4_000_000
# the dissection keeps, per group record set, its part of W = Sᵀ E (against the separator) and of the null space's
# second basis (floats): at most this many of each (2.4 GB each), else the lower bound
DISSECTION_NUMBERS = 300_000_000


# ------------------------------------------------------------------------------------------ the linear algebra
@dataclass(frozen=True)
class BlueVariances:
    """The variance of the reader's BLUE of each finest cell (``finest``; inf where no combination of published
    cells identifies it) and of each row's own count (``rows``), and whether each is exact (else a lower bound)."""

    finest: np.ndarray
    rows: np.ndarray
    finest_exact: np.ndarray
    rows_exact: np.ndarray


def blue_variances(design, noise_variances, exact_limit: int = AVERAGING_EXACT_CELLS,
                   dimensions: list[np.ndarray] | None = None,
                   separator_limit: int = AVERAGING_SEPARATOR_CELLS) -> BlueVariances:
    """``design``: one row per published record set, one column per finest cell (its coefficients: 1 where the
    cell covers the finest cell); ``noise_variances``: one per row, > 0; ``dimensions``: per dimension, each
    finest cell's code number (for the dissection of a large part). See the module's text."""
    # a design's coefficients stay as they are (population_design's are 1 as int8: at 10^7 finest cells a float
    # copy of the whole matrix is gigabytes); the exact parts, which are small, compute in floats
    a = sp.csr_matrix(design) if sp.issparse(design) else sp.csr_matrix(np.asarray(design, dtype=float))
    if a.dtype.kind not in "iuf":
        a = a.astype(float)
    v = np.asarray(noise_variances, dtype=float)
    n_rows, n = a.shape
    if v.shape != (n_rows,) or not np.all(v > 0) or not np.all(np.isfinite(v)):
        raise ValueError("one positive, finite noise variance per row")
    finest, rows = np.full(n, np.inf), np.zeros(n_rows)
    finest_exact, rows_exact = np.ones(n, dtype=bool), np.ones(n_rows, dtype=bool)
    # connected parts: rows and finest cells linked by the coefficients; F is block diagonal over them
    row_part, cell_part, parts = _connected_parts(a)
    order_rows, order_cells = np.argsort(row_part, kind="stable"), np.argsort(cell_part, kind="stable")
    row_starts = np.searchsorted(row_part[order_rows], np.arange(parts + 1))
    cell_starts = np.searchsorted(cell_part[order_cells], np.arange(parts + 1))
    for part in range(parts):
        i = order_rows[row_starts[part]:row_starts[part + 1]]
        j = order_cells[cell_starts[part]:cell_starts[part + 1]]
        if not len(j) or not len(i):  # a row without finest cells (its count is 0, known), a cell under no row
            continue
        whole = len(i) == n_rows and len(j) == n and (np.diff(i) > 0).all() and (np.diff(j) > 0).all()
        block = a if whole else a[i][:, j]  # one part, the usual case: no copy of the design
        if len(j) <= min(len(i), exact_limit):
            finest[j], rows[i] = _exact(block, v[i])
        elif len(i) <= exact_limit:
            finest[j], rows[i] = _exact_by_record_sets(block, v[i])
        elif (split := _split(block, j, whole, dimensions, separator_limit)) is not None:
            finest[j], rows[i] = exact_by_dissection(block, v[i], split)
        else:
            finest[j], rows[i] = _lower_bounds(block, v[i])
            finest_exact[j] = rows_exact[i] = False
    return BlueVariances(finest, rows, finest_exact, rows_exact)


def _split(block: sp.csr_matrix, cells: np.ndarray, whole: bool, dimensions, limit: int) -> np.ndarray | None:
    """The groups of a part's rows for the dissection (averaging_dissection.separator_groups), where a dimension
    leaves at most ``limit`` of them in the separator."""
    if dimensions is None or limit <= 0 or not (block.data == 1).all():
        return None  # the dissection counts overlaps: coefficients 1 only (population_design's); else the bound
    found = separator_groups(block, [codes if whole else codes[cells] for codes in dimensions])
    if found is None:
        return None
    separator = int((found[0] < 0).sum())
    return None if separator > limit or (len(found[0]) - separator) * separator > DISSECTION_NUMBERS else found[0]


def _connected_parts(a: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, int]:
    """The connected part of each row and finest cell (a finest cell under no row: a part of its own), and how
    many: the rows linked through the finest cells they share (each finest cell's rows joined to its first), a
    graph of as many edges as coefficients, not the (rows + cells)² bipartite one."""
    n_rows, n = a.shape
    sizes = np.diff(a.indptr)
    if n and (sizes == n).any():  # a row over every finest cell (a grand total): one part, and each empty row
        row_part = np.zeros(n_rows, dtype=np.int64)
        row_part[sizes == 0] = 1 + np.arange(int((sizes == 0).sum()))
        return row_part, np.zeros(n, dtype=np.int64), 1 + int((sizes == 0).sum())
    columns = a.tocsc()
    columns.sort_indices()
    rows = columns.indices.astype(np.int64)
    first = np.repeat(rows[columns.indptr[:-1][np.diff(columns.indptr) > 0]], np.diff(columns.indptr)[
        np.diff(columns.indptr) > 0])
    graph = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (first, rows)), shape=(n_rows, n_rows))
    parts, row_part = connected_components(graph, directed=False) if n_rows else (0, np.zeros(0, np.int64))
    cell_part = np.empty(n, dtype=np.int64)
    covered = np.diff(columns.indptr) > 0
    cell_part[covered] = row_part[rows[columns.indptr[:-1][covered]]]
    cell_part[~covered] = parts + np.arange(int((~covered).sum()))
    return row_part, cell_part, parts + int((~covered).sum())


def _pseudo_inverse_factor(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S, R) for a positive semi-definite matrix G with a positive diagonal: G = R Rᵀ with R of full column rank
    and S = R (Rᵀ R)⁻¹, so that G⁺ = S Sᵀ and the projection onto the range of G is S Rᵀ (diagonal: the row sums
    of S * R). The rank is decided on G scaled to a unit diagonal, C = D^-½ G D^-½ (D its diagonal): a pivoted
    Cholesky factor C = L Lᵀ stops where a direction keeps less than RANK_TOLERANCE of its own length, whatever
    the sizes and variances of the others (on G itself a total over many finest cells with a small variance made
    a single cell's direction look negligible); R = D^½ L, and S from the QR factors of R (R = Q T: S = Q T⁻ᵀ)."""
    scale = np.sqrt(gram.diagonal().copy())
    scale[scale == 0] = 1.0  # an empty row and column: no direction, left out by the factor
    factor, pivots, rank = pivoted_cholesky(gram, scale)
    del gram  # overwritten by the factor: only its lower triangle's first ``rank`` columns are read
    r = np.zeros((len(factor), rank))
    r[pivots] = np.tril(factor[:, :rank])
    del factor
    r *= scale[:, None]
    q, t = np.linalg.qr(r)
    return solve_triangular(t, q.T, lower=False).T, r


def _exact(a: sp.csr_matrix, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F⁺)_jj for the identified finest cells (else inf) and a_iᵀ F⁺ a_i for the rows, F = Aᵀ W A, computed on
    F (the finest cells' space): F⁺ = S Sᵀ, and a finest cell is identified where the projection onto the range
    of F keeps its unit vector (its diagonal is 1)."""
    a = a.astype(float)
    s, r = _pseudo_inverse_factor((a.T @ sp.diags(1.0 / v) @ a).toarray())
    finest = (s ** 2).sum(axis=1)
    finest[1 - (s * r).sum(axis=1) > NOT_IDENTIFIED] = np.inf
    rows = np.empty(a.shape[0])
    step = max(1, BLOCK_NUMBERS // max(1, s.shape[1]))
    for start in range(0, a.shape[0], step):
        rows[start:start + step] = ((a[start:start + step] @ s) ** 2).sum(axis=1)
    return finest, rows


def _exact_by_record_sets(a: sp.csr_matrix, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same figures as ``_exact``, computed on the published record sets' space, for a part with fewer record
    sets than finest cells. With B = W^½ A and G = B Bᵀ (one row and column per record set):

    * a row's BLUE is its observation projected (in the metric W) onto the counts some x gives, range(A), so its
      variance is V_i P_ii with P = G G⁺ the projection onto range(B);
    * F⁺ = (Bᵀ B)⁺ = Bᵀ (G⁺)² B, so a finest cell's variance is |G⁺ b_j|², b_j = B e_j its column; it is
      identified where e_j lies in the row space of B: b_jᵀ G⁺ b_j = 1.

    Which finest cells to compute: the component of a random vector ω off the row space of B, ω - Bᵀ G⁺ B ω, is
    0 at every identified cell and, at a cell whose unit vector keeps a share d off the row space, normal with
    variance d; cells where it is near 0 for two such vectors are the candidates, each then checked and computed
    exactly as above (a cell that is no candidate keeps a share off the row space: not identified)."""
    b = (sp.diags(1.0 / np.sqrt(v)) @ a.astype(float)).tocsc()
    s, r = _pseudo_inverse_factor((b @ b.T).toarray())
    rows = v * (s * r).sum(axis=1)
    omega = np.random.default_rng(0x5DC).standard_normal((b.shape[1], 2))
    off = omega - b.T @ (s @ (s.T @ (b @ omega)))
    candidates = np.flatnonzero(np.all(np.abs(off) <= CANDIDATE_OFF_ROW_SPACE, axis=1))
    finest = np.full(b.shape[1], np.inf)
    step = max(1, BLOCK_NUMBERS // max(1, s.shape[1]))
    for start in range(0, len(candidates), step):
        j = candidates[start:start + step]
        weights = (b[:, j].T @ s)  # (Sᵀ b_j)ᵀ per candidate
        identified = 1 - (weights ** 2).sum(axis=1) <= NOT_IDENTIFIED
        finest[j[identified]] = ((weights[identified] @ s.T) ** 2).sum(axis=1)
    return finest, rows


def _lower_bounds(a: sp.csr_matrix, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1 / Σ_i a_ij² / V_i per finest cell and (aᵀa)² / Σ_i (a_iᵀ a)² / V_i per row (the module's text)."""
    weights = 1.0 / v
    per_cell = np.zeros(a.shape[1])  # rows over each finest cell
    if (a.data == 1).all():  # a design's coefficients are 1: sums over its rows' finest cells, in blocks of rows
        diagonal, length = np.zeros(a.shape[1]), np.diff(a.indptr).astype(np.float64)
        for block, low, high in row_blocks(a, 4 * BLOCK_NUMBERS):
            diagonal += np.bincount(a.indices[low:high], weights=np.repeat(weights[block], length[block].astype(
                np.int64)), minlength=a.shape[1])
            per_cell += np.bincount(a.indices[low:high], minlength=a.shape[1])
    else:
        squares = a.multiply(a)
        diagonal = np.asarray(squares.T @ weights).ravel()
        length = np.asarray(squares.sum(axis=1)).ravel()
        per_cell = np.bincount(a.indices, minlength=a.shape[1]).astype(np.float64)
        del squares
    with np.errstate(divide="ignore"):
        finest = np.where(diagonal > 0, 1.0 / np.where(diagonal > 0, diagonal, 1.0), np.inf)
    # a row: x = e_j for a finest cell j it covers gives Var >= 1 / F_jj, the largest of its cells' bounds
    rows = np.zeros(a.shape[0])
    for block, low, high in row_blocks(a, BLOCK_NUMBERS):
        rows[block] = np.maximum.reduceat(finest[a.indices[low:high]], a.indptr[block] - low)
    # and x = its own coefficients: (aᵀa)² / Σ_i (a_iᵀ a)² / V_i, where the overlaps of every two rows are
    # affordable (their products number Σ_j (rows over finest cell j)²)
    if float(per_cell @ per_cell) <= OVERLAP_PRODUCTS:
        a = a.astype(float)  # overlaps are counts beyond an int8
        step = max(1, BLOCK_NUMBERS // max(1, a.shape[0]))
        transposed = a.T.tocsr()  # once: a CSR block times a CSC matrix converts the whole matrix each time
        for start in range(0, a.shape[0], step):
            overlaps = a[start:start + step] @ transposed
            rows[start:start + step] = np.maximum(
                rows[start:start + step],
                length[start:start + step] ** 2 / (overlaps.multiply(overlaps) @ weights))
    return finest, rows


# ------------------------------------------------------------------------------------------ one population
@dataclass
class CountCell:
    codes: tuple  # text, one per dimension of its table
    original: int
    variance: float | None  # of its noise; None where nothing is published (a threshold's NULL)


@dataclass
class CountTable:
    """A verified CKM count table as the averaging audit reads it: its dimensions (lower case), for each the
    codes over a leaf code (``over``), and its cells."""

    label: str
    dims: list[str]
    totals: dict[str, str]  # dimension -> code of its total
    parents: dict[str, dict[str, str | None]]  # hierarchical dimension -> code -> parent code
    cells: list[CountCell]
    index: dict = field(default_factory=dict)

    def __post_init__(self):
        self.index = {cell.codes: k for k, cell in enumerate(self.cells)}

    def over(self, dim: str, leaf: str) -> list[str]:
        """The codes of this table's cells over a finest cell's code: itself and its total, or in a hierarchy
        the code and every ancestor up to the root."""
        parents = self.parents.get(dim)
        if parents is None:
            return [leaf, self.totals[dim]]
        found, code = [], leaf
        while code is not None and code not in found:
            found.append(code)
            code = parents.get(code)
        return found


@dataclass
class Design:
    """A population's published record sets over its finest cells with records."""

    dims: list[str]
    finest: "list[tuple] | FinestCells"  # codes of each finest cell with records
    records: np.ndarray
    matrix: sp.csr_matrix  # rows: distinct record sets; columns: finest cells
    variances: np.ndarray
    names: list[list[tuple[str, str]]]  # per row: (table, cell as shown) that publish it
    cell_rows: dict = field(default_factory=dict)  # (table, cell codes) -> row

    def dimension_numbers(self) -> list[np.ndarray]:
        """Per dimension, each finest cell's code number."""
        if isinstance(self.finest, FinestCells):
            return self.finest.numbers
        return [np.unique(np.asarray([str(cell[p]) for cell in self.finest], dtype=str), return_inverse=True)[1]
                .reshape(-1) for p in range(len(self.dims))]


def population_design(dims: list[str], finest: "list[tuple] | FinestCells", records,
                      tables: list[CountTable]) -> Design:
    """The design of one population: every published cell with records as the set of finest cells it covers,
    cells with the same set (the same records, so the same noise) once, in the order they first appear. Each
    cell's finest cells must add up to its original count (a check of the mapping against sdc's recomputation).
    Vectorised: per table, one pass over the finest cells for each choice of level per dimension (a code or its
    total; in a hierarchy the code or one of its ancestors)."""
    records = np.asarray(records, dtype=np.int64)
    n = len(finest)
    # per dimension: its codes among the finest cells and, per finest cell, which one
    columns = (finest.coded() if isinstance(finest, FinestCells) else
               [np.unique(np.asarray([str(cell[p]) for cell in finest], dtype=str), return_inverse=True)
                for p in range(len(dims))])
    published, segments = _expanded_cells(dims, columns, records, tables, n)
    same = _same_records(segments, n)
    rows: list[int] = []  # per row: its expanded cell
    variances: list[float] = []
    names: list[list[tuple[str, str]]] = []
    cell_rows: dict[tuple, int] = {}
    by_key: dict[int, list[int]] = {}  # key -> rows with it (more than one only where the sums collide)
    for table, k, e in published:
        cell = table.cells[k]
        key = int(same[e])
        row = next((r for r in by_key.get(key, ())
                    if rows[r] == e or np.array_equal(segments.of(rows[r]), segments.of(e))), None)
        if row is None:
            row = len(rows)
            rows.append(e)
            variances.append(cell.variance)
            names.append([])
            by_key.setdefault(key, []).append(row)
        # the same records give the same cell key: one noise (the smaller variance if two ptables differ)
        variances[row] = min(variances[row], cell.variance)
        names[row].append((table.label, ", ".join(f"{d}={c!r}" for d, c in zip(table.dims, cell.codes))))
        cell_rows[(table.label, cell.codes)] = row
    return Design(dims, finest, records, segments.matrix(rows, n), np.array(variances, dtype=float), names,
                  cell_rows)


class Segments:
    """The finest cells of every expanded cell, in ascending order: one piece per table (the finest cells of the
    cells it is the first to cover, one after another), and per expanded cell its piece and where in it. The
    pieces are kept as they were made, not copied into one array: at 10^7 finest cells they hold a few hundred
    million numbers."""

    def __init__(self):
        self.pieces: list[np.ndarray] = []
        self.owners, self.piece, self.begin, self.end = [], [], [], []

    def add(self, keys: np.ndarray, owners: np.ndarray, n: int) -> None:
        """A piece: ``keys`` (sorted here, in place) is expanded cell * n + finest cell for each of its pairs,
        ``owners`` the expanded cells it holds (every pair of each of them)."""
        keys.sort()
        owners = np.sort(owners)
        begin = np.searchsorted(keys, owners * max(n, 1))
        self.owners.append(owners)
        self.piece.append(np.full(len(owners), len(self.pieces), dtype=np.int64))
        self.begin.append(begin)
        self.end.append(np.append(begin[1:], len(keys)) if len(owners) else begin)
        np.remainder(keys, max(n, 1), out=keys)
        self.pieces.append(keys.astype(np.int32 if n < 2 ** 31 else np.int64))

    def close(self, count: int) -> None:
        """Index the pieces by expanded cell (0 .. count - 1, each held by one piece)."""
        owners = np.concatenate(self.owners) if self.owners else np.zeros(0, np.int64)
        if len(owners) != count or len(np.unique(owners)) != count:
            raise AssertionError("each expanded cell is held by one piece")
        order = np.empty(count, dtype=np.int64)
        order[owners] = np.arange(count)
        self.piece, self.begin, self.end = (np.concatenate(x)[order] if count else np.zeros(0, np.int64)
                                            for x in (self.piece, self.begin, self.end))
        self.owners = []

    def of(self, e: int) -> np.ndarray:
        return self.pieces[self.piece[e]][self.begin[e]:self.end[e]]

    def sizes(self) -> np.ndarray:
        return self.end - self.begin

    def matrix(self, cells: list[int], n: int) -> sp.csr_matrix:
        """The CSR matrix of these expanded cells' finest cells (coefficients 1, held as int8)."""
        sizes = self.sizes()[cells] if cells else np.zeros(0, np.int64)
        indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        indices = np.empty(int(indptr[-1]), dtype=np.int32 if n < 2 ** 31 else np.int64)
        for row, e in enumerate(cells):
            indices[indptr[row]:indptr[row + 1]] = self.of(e)
        return sp.csr_matrix((np.ones(len(indices), dtype=np.int8), indices, indptr), shape=(len(cells), n))


def _expanded_cells(dims: list[str], columns: list[tuple], records: np.ndarray, tables: list[CountTable],
                    n: int) -> tuple[list[tuple[CountTable, int, int]], Segments]:
    """(published cells as (table, cell index, expanded cell), the finest cells of every expanded cell);
    refuses a cell whose finest cells do not hold its original count."""
    # every cell with records once per set of finest codes it covers (a total of one table and the same total of
    # another, a code and its only child: one set), expanded to its finest cells; every published cell (records
    # and a noise, in table and cell order) with the expanded cell of its codes
    covers: dict[tuple, int] = {}
    interned: list[dict] = [{} for _ in dims]
    published: list[tuple[CountTable, int, int]] = []
    segments = Segments()
    for table in tables:
        combination, choices = _members(table, dims, columns, n)
        combinations = len(choices[0]) if choices else 1
        records_of = np.bincount(combination, weights=records, minlength=combinations)  # per combination
        finest_of = np.bincount(combination, minlength=combinations)
        held = np.zeros(len(table.cells), dtype=np.int64)
        for cells in choices:
            at = cells >= 0
            held += np.rint(np.bincount(cells[at], weights=records_of[at], minlength=len(table.cells))).astype(
                np.int64)
        wrong = np.flatnonzero(held != np.array([cell.original for cell in table.cells], dtype=np.int64))
        if len(wrong):
            cell = table.cells[wrong[0]]
            shown = ", ".join(f"{d}={c!r}" for d, c in zip(table.dims, cell.codes))
            raise SdcError(f"the averaging audit cannot place the cell ({shown}) of {table.label} among the "
                           f"finest cells of its population: they hold {int(held[wrong[0]])} records, "
                           f"the cell {cell.original}; refusing to publish")
        source = np.full(len(table.cells), -1, dtype=np.int64)  # the expanded cell a cell is the first of
        for k, cover in enumerate(_covers(table, dims, columns, interned)):
            if held[k] <= 0:
                continue
            e = covers.get(cover)
            if e is None:
                e = source[k] = covers[cover] = len(covers)
            if table.cells[k].variance is not None:
                published.append((table, k, e))
        # the pairs of the cells this table is the first to cover, as expanded cell * n + finest cell, in one
        # array: per choice of levels, each combination's expanded cell handed to its finest cells
        owners = [np.where(cells >= 0, source[np.maximum(cells, 0)], -1) for cells in choices]
        keys = np.empty(int(sum(finest_of[owner >= 0].sum() for owner in owners)), dtype=np.int64)
        at = 0
        for owner in owners:
            if not (owner >= 0).any():
                continue
            per_finest = owner[combination]
            hit = np.flatnonzero(per_finest >= 0)
            keys[at:at + len(hit)] = per_finest[hit] * max(n, 1) + hit
            at += len(hit)
            del per_finest, hit
        segments.add(keys, source[source >= 0], n)
        del keys, combination
    segments.close(len(covers))
    return published, segments


def _same_records(segments: Segments, n: int) -> np.ndarray:
    """Per expanded cell, a number shared by the cells with the same finest cells (and, where two random sums
    collide, by others too: the caller compares those cell by cell)."""
    sizes = segments.sizes()
    # cells with the same finest cells (the same records: one cell key, one noise) are one row: found by their
    # size and a random 64-bit sum over their finest cells, then compared cell by cell
    weights = np.random.default_rng(0x5DC).integers(0, 2 ** 63, size=n, dtype=np.int64).view(np.uint64)
    sums = np.zeros(len(sizes), np.uint64)
    for p, piece in enumerate(segments.pieces):  # per piece: its cells' parts lie one after another
        mine = np.flatnonzero(segments.piece == p)
        mine = mine[np.argsort(segments.begin[mine], kind="stable")]
        if len(mine) and len(piece):
            sums[mine] = np.add.reduceat(weights[piece], segments.begin[mine])
    order = np.lexsort((sums, sizes))  # stable: within equal keys in the order cells appear
    boundary = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        boundary[1:] = (np.diff(sizes[order]) != 0) | (np.diff(sums[order].view(np.int64)) != 0)
    group = np.cumsum(boundary) - 1
    same = np.empty(len(order), dtype=np.int64)
    same[order] = group  # per expanded cell: its key's number
    return same


def _covers(table: CountTable, dims: list[str], columns: list[tuple], interned: list[dict]) -> list[tuple]:
    """Per cell of ``table``: per dimension of the population, the finest codes its code covers (all of them for a
    dimension the table does not use), each set as a number (``interned``, per dimension, shared by the tables):
    cells of equal tuples cover the same finest cells."""
    per_dim = []
    for p, d in enumerate(dims):
        leaves = columns[p][0]
        if d not in table.dims:
            per_dim.append(None)
            continue
        under: dict[str, list[int]] = {}
        for index, leaf in enumerate(leaves):
            for code in table.over(d, str(leaf)):
                under.setdefault(code, []).append(index)
        per_dim.append(under)
    everything = [interned[p].setdefault(frozenset(range(len(columns[p][0]))), len(interned[p]))
                  for p in range(len(dims))]
    found = []
    for cell in table.cells:
        codes = dict(zip(table.dims, cell.codes))
        found.append(tuple(
            everything[p] if under is None else
            interned[p].setdefault(frozenset(under.get(str(codes[d]), ())), len(interned[p]))
            for p, (d, under) in enumerate(zip(dims, per_dim))))
    return found


def _members(table: CountTable, dims: list[str], columns: list[tuple], n: int) -> tuple[np.ndarray, list]:
    """Which cells of ``table`` each finest cell lies under: (each finest cell's combination of the table's leaf
    codes, numbered; per choice of levels, the cell of each combination at those levels, -1 where none). Per
    dimension of the table, the codes over each leaf code at each level (``CountTable.over``); the table's cells
    looked up per combination, not per finest cell."""
    if not table.cells:
        return np.zeros(n, dtype=np.int64), []
    positions = [dims.index(d) for d in table.dims]
    ids: list[dict] = []  # per table dimension: code -> integer
    levels: list[np.ndarray] = []  # per table dimension: leaf code x level -> code id (-1 past the top)
    for d, p in zip(table.dims, positions):
        leaves = columns[p][0]
        chains = [table.over(d, str(leaf)) for leaf in leaves]
        codes = {c: i for i, c in enumerate(sorted({c for chain in chains for c in chain} |
                                                   {str(cell.codes[len(ids)]) for cell in table.cells}))}
        depth = max(len(chain) for chain in chains) if chains else 1
        padded = np.full((len(leaves), depth), -1, dtype=np.int64)
        for row, chain in enumerate(chains):
            padded[row, :len(chain)] = [codes[c] for c in chain]
        ids.append(codes)
        levels.append(padded)
    sizes = [len(codes) for codes in ids]
    strides = np.cumprod([1] + sizes[:0:-1])[::-1]  # mixed radix over the table's dimensions (the last fastest)
    cell_keys = np.ravel_multi_index(
        tuple(np.array([codes[str(cell.codes[k])] for cell in table.cells]) for k, codes in enumerate(ids)), sizes)
    total = int(np.prod(sizes))
    # the table's cells by key: a dense array where the codes' combinations are few (the usual case), else sorted
    dense = total <= DENSE_LOOKUP_KEYS
    if dense:
        lookup = np.full(total, -1, dtype=np.int64)
        lookup[cell_keys] = np.arange(len(cell_keys))
    else:
        order = np.argsort(cell_keys)
        sorted_keys = cell_keys[order]
    # each finest cell's combination of the table's leaf codes, and the combinations that occur (their digits)
    leaf_counts = [len(columns[p][0]) for p in positions]
    combination = np.zeros(n, dtype=np.int64)
    for p, count in zip(positions, leaf_counts):
        combination *= count
        combination += columns[p][1].reshape(-1)
    if np.prod(leaf_counts, dtype=np.float64) <= min(DENSE_LOOKUP_KEYS, 4 * max(n, 1)):
        occurring = np.arange(int(np.prod(leaf_counts)), dtype=np.int64)
    else:
        occurring, combination = np.unique(combination, return_inverse=True)
        combination = combination.reshape(-1)
    digits = np.unravel_index(occurring, leaf_counts) if leaf_counts else ()
    found = []
    for choice in itertools.product(*(range(padded.shape[1]) for padded in levels)):
        # each combination's key at this choice of levels, negative where a dimension has no code at its level
        keys = np.zeros(len(occurring), dtype=np.int64)
        for padded, digit, c, stride in zip(levels, digits, choice, strides):
            part = padded[digit, c]
            keys += np.where(part >= 0, part * stride, -total - 1)
        if dense:
            cells = lookup[np.maximum(keys, 0)]
            cells[keys < 0] = -1
        else:
            at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
            cells = np.where((keys >= 0) & (sorted_keys[at] == keys), order[at], -1)
        if (cells >= 0).any():
            found.append(cells)
    return combination, found


@dataclass
class PopulationDesign:
    """A population of the release as the averaging audit found it: its design, tables, verified items and BLUE."""

    shown: str
    design: Design
    tables: list
    items: list
    found: BlueVariances


# ------------------------------------------------------------------------------------------ the release
def audit_averaging(verifier, verified: list, floor: float = MIN_STANDARD_ERROR,
                    exact_limit: int = AVERAGING_EXACT_CELLS) -> dict:
    """The standard errors of the reader's BLUE per population of the release's CKM count tables (the module's
    text); refuses the release where one with records is below ``floor``. Returns the figures for the audit."""
    check_floor(floor)
    verifier.averaging_designs = []
    populations: dict[tuple, list] = {}
    for item in sorted({v.rel.key: v for v in verified}.values(), key=lambda v: v.rel.key):
        if item.kind == "ckm_count" and item.audit is not None:
            populations.setdefault(population_of(item), []).append(item)
    figures, table_figures, worst = [], {}, None
    for (source, fact), items in sorted(populations.items(), key=lambda p: (p[0][0], str(p[0][1]))):
        tables = [_count_table(verifier, item) for item in items]
        dims = sorted({d for t in tables for d in t.dims})
        finest, records = _finest_cells(verifier, source, fact, dims)
        design = population_design(dims, finest, records, tables)
        found = blue_variances(design.matrix, design.variances, exact_limit, design.dimension_numbers())
        shown = _population_shown(verifier, items[0], fact)
        # for the audit over the releases in the ledger (averaging_releases.py), once the ledger is read
        verifier.averaging_designs = getattr(verifier, "averaging_designs", []) + [
            PopulationDesign(shown, design, tables, items, found)]
        for r, published in enumerate(design.names):
            error, exact = math.sqrt(found.rows[r]), bool(found.rows_exact[r])
            for label, cell in published:
                table = table_figures.setdefault(label, {"table": label, "smallest_standard_error": None})
                if table["smallest_standard_error"] is None or error < table["smallest_standard_error"]:
                    table.update(smallest_standard_error=error, method=EXACT if exact else LOWER_BOUND, cell=cell)
        least = _least(design, found)
        figures.append({
            "population": shown, "tables": [t.label for t in tables], "dimensions": dims,
            "finest_cells_with_records": len(finest), "record_sets": len(design.names),
            "not_identified": int(np.sum(~np.isfinite(found.finest))),
            "method": EXACT if bool(np.all(found.finest_exact)) else LOWER_BOUND,
            "smallest_standard_error": None if least is None else _rounded(least[0]),
            "cell": None if least is None else least[2]})
        if least is not None and (worst is None or least[0] < worst[0]):
            worst = (*least, shown, [t.label for t in tables])
    report = {"min_standard_error": floor, "populations": figures,
              "tables": [{**t, "smallest_standard_error": _rounded(t["smallest_standard_error"])}
                         for _, t in sorted(table_figures.items())],
              "smallest_standard_error": None if worst is None else _rounded(worst[0]),
              "method": None if worst is None else EXACT if worst[1] else LOWER_BOUND,
              "cell": None if worst is None else worst[2]}
    if worst is not None and worst[0] < floor:
        error, exact, what, shown, tables = worst
        size = ("" if exact else f" (a lower bound: a connected set of more than {exact_limit} finest cells is not "
                                 "computed exactly, and sdc refuses on the bound)")
        raise SdcError(
            f"the release lets a reader average the CKM noise: {what} is estimated from the CKM count tables of "
            f"{shown} ({', '.join(tables)}) with a standard error of {error:.3g}{size}, below the floor of {floor:g} "
            "(sdc publish --min-standard-error): publish fewer tables or margins of this population, or a ptable "
            "with a larger variance V")
    return report


def check_floor(floor) -> None:
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not (math.isfinite(floor) and floor >= 0):
        raise SdcError(f"the minimum standard error (--min-standard-error) must be a number of at least 0, "
                       f"got {floor!r}")


def _least(design: Design, found: BlueVariances) -> tuple | None:
    """The smallest standard error of a population, over its identified finest cells and its published record
    sets: (standard error, exact, the cell as shown)."""
    finest = found.finest
    j = int(np.argmin(finest)) if len(finest) else None
    r = int(np.argmin(found.rows)) if len(found.rows) else None
    if r is not None and (j is None or not math.isfinite(finest[j]) or found.rows[r] <= finest[j]):
        (table, cell), *others = design.names[r]
        also = sorted({t for t, _ in others} - {table})
        return (math.sqrt(found.rows[r]), bool(found.rows_exact[r]),
                f"the cell ({cell}) of {table}" + (f" (the same records in {', '.join(also)})" if also else ""))
    if j is None or not math.isfinite(finest[j]):
        return None
    codes = ", ".join(f"{d}={c!r}" for d, c in zip(design.dims, design.finest[j]))
    return math.sqrt(finest[j]), bool(found.finest_exact[j]), f"the finest cell ({codes})"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _count_table(verifier, item) -> CountTable:
    """A verified ckm_count table: its recomputed cells, totals, hierarchies and noise variances."""
    con, call = verifier.con, item.call
    dims = [str(d) for d in call["dims"]]
    total = str((call.get("settings") or {}).get("sdc_total_label") or TOTAL_LABEL)
    parents: dict[str, dict] = {}
    if call.get("hierarchy"):
        relation = verifier.wh_name(verifier._named(call["hierarchy"], [item.rel.label], "hierarchy"))
        for dim in dims:
            found = con.execute(f"select cast(code as varchar), nullif(cast(parent as varchar), '') from {relation} "
                                f"where dimension = {quote_literal(dim)}").fetchall()
            if found:
                parents[dim.lower()] = dict(found)
    ptable = verifier.wh_name(verifier._named(call["ptable"], [item.rel.label], "ptable"))
    # the variance of each row's noise, with the probabilities the CKM applies (the widths of the key intervals)
    variances = dict(con.execute(
        f"select i, sum(cast(p_int_ub - p_int_lb as double) * v * v) - power(sum(cast(p_int_ub - p_int_lb as "
        f"double) * v), 2) from {ptable} group by i").fetchall())
    cells = []
    # in the order of their codes: the audit's figures (which cell of equal standard errors it names) do not
    # depend on the order in which the engine returns the rows
    for *codes, original, row, count in con.execute(
            f"select {', '.join(f'cast({q(d)} as varchar)' for d in dims)}, original, ptable_row, count "
            f"from {item.audit} order by all").fetchall():
        variance = None
        if count is not None and original:
            variance = variances.get(row)
            if variance is None or not variance > 0:
                raise SdcError(f"{item.rel.label}: ptable row {row} gives no noise to a cell of {original} records; "
                               "refusing to publish")
        cells.append(CountCell(tuple(codes), int(original), variance))
    return CountTable(item.rel.label, [d.lower() for d in dims], {d.lower(): total for d in dims},
                      parents, cells)


def _finest_cells(verifier, source: str, fact, dims: list[str]) -> tuple["FinestCells", np.ndarray]:
    """The finest cells with records of a population: per dimension its codes and each finest cell's code number,
    and their counts. The engine numbers the codes (one small table of codes per dimension, joined), so that ten
    million finest cells come back as numbers, not as text."""
    import pyarrow as pa

    con = verifier.con
    codes = []
    for d in dims:
        found = [c for (c,) in con.execute(f"select distinct cast({q(d)} as varchar) from {source}").fetchall()]
        codes.append(sorted(found, key=lambda c: (c is None, c or "")))
    names = [verifier._temp("finest_codes") for _ in dims]
    counted = "count(*)" if fact is None else f"sum(s.{q(str(fact))})"
    try:
        for name, found in zip(names, codes):
            con.register(name, pa.table({"code": pa.array(found, pa.string()),
                                         "id": pa.array(np.arange(len(found), dtype=np.int32))}))
        joins = " ".join(f"join {name} as k{k} on cast(s.{q(d)} as varchar) is not distinct from k{k}.code"
                         for k, (name, d) in enumerate(zip(names, dims)))
        found = con.execute(
            f"select {', '.join(f'k{k}.id as c{k}' for k in range(len(dims)))}, {counted} as n "
            f"from (select * from {source}) as s {joins} group by all having {counted} > 0 order by all").fetchnumpy()
    finally:
        for name in names:
            con.unregister(name)
    return (FinestCells([np.asarray(["None" if c is None else c for c in found_codes], dtype=str)
                         for found_codes in codes],
                        [np.asarray(found[f"c{k}"], dtype=np.int32) for k in range(len(dims))]),
            np.asarray(found["n"], dtype=np.int64))


class FinestCells:
    """Finest cells as, per dimension, its codes (in order) and each finest cell's code number; a cell (``[j]``)
    as the tuple of its codes."""

    def __init__(self, codes: list[np.ndarray], numbers: list[np.ndarray]):
        self.codes, self.numbers = codes, numbers

    def __len__(self) -> int:
        return len(self.numbers[0]) if self.numbers else 0

    def __getitem__(self, j: int) -> tuple:
        return tuple(str(codes[numbers[j]]) for codes, numbers in zip(self.codes, self.numbers))

    def __iter__(self):
        return (self[j] for j in range(len(self)))

    def coded(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per dimension: (its codes that occur, each finest cell's number among them), as np.unique gives them."""
        found = []
        for codes, numbers in zip(self.codes, self.numbers):
            occurring = np.flatnonzero(np.bincount(numbers, minlength=len(codes)))
            if len(occurring) == len(codes):
                found.append((codes, numbers))
            else:  # a code of the dimension with no finest cell of the population (its records count 0)
                renumber = np.full(len(codes), -1, dtype=np.int32)
                renumber[occurring] = np.arange(len(occurring), dtype=np.int32)
                found.append((codes[occurring], renumber[numbers]))
        return found


def _population_shown(verifier, item, fact) -> str:
    relation = next((r for r in verifier.inputs.values() if str(r) == population_of(item)[0]), None)
    name = (f"{relation.schema}.{relation.identifier}" if relation is not None and relation.database != "temp"
            else "the microdata of " + ", ".join(sorted(item.roots)))
    return name + (f" (fact {fact})" if fact is not None else "")
