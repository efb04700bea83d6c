"""The exact BLUE variances of a connected part too large for one dense matrix (issue 49), by dissection.

The record sets' Gram matrix G = B Bᵀ (B = W^½ A, one row per published record set, one column per finest cell)
is dense where a release has margins, but it has a structure: two record sets whose finest cells lie in
different codes of one dimension share no finest cell. Taking the dimension that leaves the fewest record sets
spread over more than one of its codes (the separator, J), the other record sets fall into groups, one per code,
and G is block diagonal on them:

    G = [[D, E], [Eᵀ, H]],   D = diag(D_1, .., D_g) (one block per code),   H on the separator.

For a positive semi-definite G, the range of E lies in the range of D and a null direction of a block D_r is a
null direction of G; the Schur complement S = H - Eᵀ D⁺ E is positive semi-definite, and

    null(G) = {(ν - D⁺ E y, y) : ν ∈ null(D), y ∈ null(S)}.

With N₁ an orthonormal basis of null(D) (block by block) and N₂ = [-D⁺ E Y; Y] (Y a basis of null(S), from its
pivoted Cholesky factor), orthogonal to N₁, the projection onto the range of G is I - N₁N₁ᵀ - N₂ M⁻¹ N₂ᵀ,
M = N₂ᵀ N₂: a row's
BLUE variance is V_i times its diagonal entry, as in averaging._exact_by_record_sets, without a matrix larger than
the separator's. The pseudo-inverse applied to a vector u in the range of G is the particular solution of the
block system made orthogonal to null(G): that gives the finest cells the reader identifies and their variances,
as on the whole matrix. Ranks are decided as there (a direction keeps less than RANK_TOLERANCE of its own squared
length), each block's and the Schur complement's relative to the original lengths of its record sets.

E is read only as W_r = S_rᵀ E_r, kept stacked (rank(D) × |J| numbers); every product is of stacked blocks of
thousands of rows (BLAS level 3). Cost: Σ_r rank(D_r) · |J| · (|J| + dim null(S)) operations. The 20 tables of a
census release (41,188 record sets, a separator of 7,588 by region, null(S) of 3,277): about 90 s of CPU on 2
cores and 2.1 GB (W and W Y L⁻ᵀ), whatever the records.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas, lapack, solve_triangular

# the rank and identification tolerances of both exact computations (averaging.py reads them from here): the
# pivoted Cholesky factor stops where a direction keeps less than RANK_TOLERANCE of its own squared length; a finest
# cell whose unit vector keeps NOT_IDENTIFIED of its squared length off the range is not identified; a candidate
# for an identified cell keeps at most CANDIDATE_OFF_ROW_SPACE of two random vectors off the row space (an
# identified cell 0 up to rounding; a cell keeping a share d falls below it with probability about (8e-5 / √d)²,
# and every candidate is checked exactly)
RANK_TOLERANCE = 1e-10
NOT_IDENTIFIED = 1e-8
CANDIDATE_OFF_ROW_SPACE = 1e-4
STACKED_ROWS = 4096  # rows of Eᵀ D⁺ E's factors multiplied at once
CANDIDATES_AT_ONCE = 1024  # finest cells whose variances are computed in one pass over the groups


def separator_groups(a: sp.csr_matrix, dimensions: list[np.ndarray]) -> tuple[np.ndarray, int] | None:
    """Per row the code of the dimension whose codes split the rows best (-1 for the separator: a row over more
    than one of its codes), and that dimension's index; None where no dimension leaves two groups.
    ``dimensions``: per dimension, each finest cell's code number. The dimensions are compared on a sample of
    each row's finest cells (its first, last and middle one), and only the chosen one is checked on all of them."""
    filled = np.flatnonzero(np.diff(a.indptr) > 0)
    first, last = a.indptr[filled], a.indptr[filled + 1] - 1
    sample = [a.indices[first], a.indices[last], a.indices[(first + last) // 2]]
    best = None
    for k, codes in enumerate(dimensions):
        seen = [codes[s] for s in sample]
        one = (seen[0] == seen[1]) & (seen[0] == seen[2])
        separator = len(a.indptr) - 1 - int(one.sum())
        if len(np.unique(seen[0][one])) >= 2 and (best is None or separator < best[0]):
            best = (separator, k)
    if best is None:
        return None
    codes = dimensions[best[1]]
    low, high = np.full(a.shape[0], -1, np.int64), np.full(a.shape[0], -2, np.int64)
    for rows, start, end in row_blocks(a, 1 << 24):
        low[rows] = np.minimum.reduceat(codes[a.indices[start:end]], a.indptr[rows] - start)
        high[rows] = np.maximum.reduceat(codes[a.indices[start:end]], a.indptr[rows] - start)
    groups = np.where(low == high, low, -1)
    return (groups, best[1]) if len(np.unique(groups[groups >= 0])) >= 2 else None


def row_blocks(a: sp.csr_matrix, size: int):
    """The rows with coefficients in blocks of about ``size`` coefficients: (rows, first, end) with the block's
    coefficients at a.indices[first:end] (so that no pass gathers all of them at once)."""
    filled = np.flatnonzero(np.diff(a.indptr) > 0)
    start = 0
    while start < len(filled):
        stop = max(start + 1, int(np.searchsorted(a.indptr[filled], a.indptr[filled[start]] + size)))
        block = filled[start:stop]
        yield block, a.indptr[block[0]], a.indptr[block[-1] + 1]
        start = stop


def _times(a: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """A x for a dense x (n x k), in blocks of rows (no float copy of A)."""
    found = np.zeros((a.shape[0], x.shape[1]))
    for rows, start, end in row_blocks(a, 1 << 24):
        found[rows] = np.add.reduceat(x[a.indices[start:end]], a.indptr[rows] - start, axis=0)
    return found


def _transposed_times(a: sp.csr_matrix, y: np.ndarray) -> np.ndarray:
    """Aᵀ y for a dense y (m x k), in blocks of rows."""
    found = np.zeros((a.shape[1], y.shape[1]))
    for rows, start, end in row_blocks(a, 1 << 24):
        owner = np.repeat(rows, np.diff(a.indptr)[rows])
        for c in range(y.shape[1]):
            found[:, c] += np.bincount(a.indices[start:end], weights=y[owner, c], minlength=a.shape[1])
    return found


def pivoted_cholesky(gram: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(factor, pivots from 0, rank) of LAPACK's pivoted Cholesky of gram scaled to D⁻¹ gram D⁻¹ (D = diag(scale),
    > 0; gram is overwritten, its lower triangle read): the factorisation stops where a direction keeps less than
    RANK_TOLERANCE of its scaled squared length. dpstrf compares only the pivots after the first with its
    tolerance, so a first pivot below it (a matrix that is 0 up to rounding) is rank 0 here, not rank 1."""
    gram /= scale[:, None]
    gram /= scale[None, :]
    factor, pivots, rank, _ = lapack.dpstrf(gram, lower=1, tol=RANK_TOLERANCE, overwrite_a=1)
    if rank and factor[0, 0] ** 2 <= RANK_TOLERANCE:
        rank = 0
    return factor, pivots - 1, int(rank)


def _factor(gram: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """R with gram = R Rᵀ (R of full column rank), the rank decided on gram scaled by the directions' original
    squared lengths (``lengths``, > 0; gram is overwritten)."""
    scale = np.sqrt(lengths)
    factor, pivots, rank = pivoted_cholesky(gram, scale)
    r = np.zeros((len(factor), rank))
    r[pivots] = np.tril(factor[:, :rank])
    return r * scale[:, None]


def _pseudo_inverse_and_null(gram: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S with gram⁺ = S Sᵀ, an orthonormal basis of gram's null space)."""
    r = _factor(gram, lengths)
    size, rank = r.shape
    if rank == 0:
        return np.zeros((size, 0)), np.eye(size)
    q, t = np.linalg.qr(r, mode="complete")
    t = t[:rank]
    return np.linalg.solve(t, q[:, :rank].T).T, q[:, rank:]


def _pivoted(gram: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pivots, L11, T) of a positive semi-definite matrix (its lower triangle read), the rank decided as in
    _factor: gram[p][:, p] = [L11; L21] [L11; L21]ᵀ with L11 lower triangular of full rank, so that x with
    x[p] = [L11⁻ᵀ L11⁻¹ u[p][:rank]; 0] solves gram x = u for u in its range, and Y with Y[p] = [T; I],
    T = -L11⁻ᵀ L21ᵀ, is a basis of its null space (gram is overwritten)."""
    scale = np.sqrt(lengths)
    factor, pivots, rank = pivoted_cholesky(gram, scale)  # gram: the Schur complement, no longer needed
    r = np.tril(factor[:, :rank]) * scale[pivots][:, None]
    del factor
    t = np.zeros((rank, len(lengths) - rank))
    if rank and len(lengths) > rank:
        t = -solve_triangular(r[:rank], r[rank:].T, lower=True, trans="T")
    return pivots, np.ascontiguousarray(r[:rank]), t


class _Blocks:
    """The factored blocks of one part: per group its rows, D_r⁺'s factor S_r and an orthonormal basis of
    null(D_r); W_r = S_rᵀ E_r, stacked (all that is read of E: Eᵀ D⁺ E = Σ W_rᵀ W_r and D_r⁺ E_r = S_r W_r); the
    separator's rows and the Schur complement's pivoted factor with its null space Y = P [T; I]; and, with L the
    Cholesky factor of M = YᵀY + Σ Z_rᵀ Z_r (Z_r = S_r W_r Y), the bases Y L⁻ᵀ and W Y L⁻ᵀ (S_r times a group's
    rows of the latter is Z_r L⁻ᵀ). The products are of stacked matrices, thousands of rows at once."""

    def __init__(self, a: sp.csr_matrix, weights: np.ndarray, groups: np.ndarray):
        # B = diag(weights) A is never formed (at 10^7 finest cells a float copy of A is gigabytes): the blocks
        # are A's overlap counts, scaled
        self.separator = np.flatnonzero(groups < 0)
        separator = a[self.separator].astype(np.int32)
        separator_t = separator.T.tocsr()  # once: a CSR block times it needs no conversion
        schur = (separator @ separator_t).toarray().astype(float)
        del separator
        w_j = weights[self.separator]
        schur *= w_j[:, None]
        schur *= w_j[None, :]
        schur = np.asfortranarray(schur)
        lengths = schur.diagonal().copy()
        order = np.argsort(groups, kind="stable")
        order = order[groups[order] >= 0]
        self.groups = []  # per group: its rows, S_r, null(D_r)'s basis, its first row in W
        kept = 0
        for rows in np.split(order, np.flatnonzero(np.diff(groups[order])) + 1) if len(order) else []:
            block = a[rows].astype(np.int32)
            d = (block @ block.T).toarray() * weights[rows][:, None] * weights[rows][None, :]
            s_r, null_r = _pseudo_inverse_and_null(d, d.diagonal().copy())
            self.groups.append((rows, s_r, null_r, kept))
            kept += s_r.shape[1]
        self.w = np.empty((kept, len(self.separator)))
        for (start, stop), chunk in self._chunks():  # W and S = H - Σ W_rᵀ W_r
            self.w[start:stop] = _stacked_w(a, chunk, separator_t, weights, w_j)
            schur = _less_gram(schur, self.w[start:stop])
        del separator_t
        self.pivots, self.l11, t = _pivoted(schur, lengths)
        del schur
        rank, k = len(self.l11), t.shape[1]
        self.separator = self.separator[self.pivots]  # from here on the separator's rows in pivoted order
        wy = np.empty((len(self.w), k))
        m = np.asfortranarray(t.T @ t + np.eye(k))
        for (start, stop), chunk in self._chunks():
            self.w[start:stop] = self.w[start:stop][:, self.pivots]
            # W Y = W[:, :rank] T + W[:, rank:] and M = TᵀT + I + Σ Z_rᵀ Z_r
            wy[start:stop] = self.w[start:stop, :rank] @ t + self.w[start:stop, rank:]
            z = np.vstack([s_r @ wy[first:first + s_r.shape[1]] for _, s_r, _, first in chunk])
            if k and len(z):
                m = blas.dsyrk(1.0, z.T, beta=1.0, c=m, trans=0, lower=1, overwrite_c=1)
        self.yl = np.zeros((len(self.separator), k))
        if k:  # Y L⁻ᵀ, and W Y L⁻ᵀ in place of W Y
            inverse_t = solve_triangular(np.linalg.cholesky(np.tril(m) + np.tril(m, -1).T), np.eye(k), lower=True).T
            self.yl[:rank] = t @ inverse_t
            self.yl[rank:] = inverse_t
            for start in range(0, len(wy), STACKED_ROWS):
                wy[start:start + STACKED_ROWS] = wy[start:start + STACKED_ROWS] @ inverse_t
        self.wyl = wy
        self.size = a.shape[0]

    def _chunks(self):
        """The groups in chunks of about STACKED_ROWS rows of W: ((first, end) of the chunk's rows in W, its
        groups)."""
        chunk = []
        for group in self.groups:
            chunk.append(group)
            end = group[3] + group[1].shape[1]
            if end - chunk[0][3] >= STACKED_ROWS:
                yield (chunk[0][3], end), chunk
                chunk = []
        if chunk:
            yield (chunk[0][3], chunk[-1][3] + chunk[-1][1].shape[1]), chunk

    def off_range(self) -> np.ndarray:
        """Per row, the diagonal of the projection onto the null space of G: |N₁ᵀ e_i|² + |L⁻¹ N₂ᵀ e_i|²."""
        found = np.zeros(self.size)
        found[self.separator] = (self.yl ** 2).sum(axis=1)
        for rows, s_r, null_r, first in self.groups:
            found[rows] = (null_r ** 2).sum(axis=1) + ((s_r @ self.wyl[first:first + s_r.shape[1]]) ** 2).sum(axis=1)
        return found

    def _stacked(self, u: np.ndarray) -> np.ndarray:
        """S_rᵀ u_r of every group, stacked as W's rows are."""
        found = np.empty((len(self.w), u.shape[1]))
        for rows, s_r, _, first in self.groups:
            found[first:first + s_r.shape[1]] = s_r.T @ u[rows]
        return found

    def pseudo_inverse(self, u: np.ndarray) -> np.ndarray:
        """G⁺ u for the columns of u (rows x k), each in the range of G: a solution of the block system, then
        without its part in null(G)."""
        x = np.zeros_like(u)
        t = self._stacked(u)
        rest = u[self.separator].copy()
        for start in range(0, len(self.w), STACKED_ROWS):  # u_J - Eᵀ D⁺ u_g = u_J - Wᵀ (S_rᵀ u_r)
            rest -= self.w[start:start + STACKED_ROWS].T @ t[start:start + STACKED_ROWS]
        rank = len(self.l11)
        on = solve_triangular(self.l11, solve_triangular(self.l11, rest[:rank], lower=True), lower=True, trans="T")
        x[self.separator[:rank]] = on
        for start in range(0, len(self.w), STACKED_ROWS):  # x_r = D_r⁺ (u_r - E_r x_J) = S_r (S_rᵀ u_r - W_r x_J)
            t[start:start + STACKED_ROWS] -= self.w[start:start + STACKED_ROWS, :rank] @ on
        for rows, s_r, _, first in self.groups:
            x[rows] = s_r @ t[first:first + s_r.shape[1]]
        if self.yl.shape[1]:  # N₂ = [-Z; Y]: x -= N₂ M⁻¹ N₂ᵀ x, M⁻¹ = L⁻ᵀ L⁻¹
            along = self.yl.T @ x[self.separator] - self.wyl.T @ self._stacked(x)
            x[self.separator] -= self.yl @ along
            for rows, s_r, _, first in self.groups:
                x[rows] += s_r @ (self.wyl[first:first + s_r.shape[1]] @ along)
        for rows, _, null_r, _ in self.groups:  # x -= N₁ N₁ᵀ x
            x[rows] -= null_r @ (null_r.T @ x[rows])
        return x


def _stacked_w(a: sp.csr_matrix, chunk: list, separator_t: sp.csr_matrix, weights: np.ndarray,
               separator_weights: np.ndarray) -> np.ndarray:
    """W_r = S_rᵀ E_r of a chunk of groups, stacked; E_r: the group's overlap counts with the separator's rows,
    weighted."""
    rows = np.concatenate([r for r, *_ in chunk])
    e = (a[rows].astype(np.int32) @ separator_t).toarray().astype(float)
    e *= weights[rows][:, None]
    e *= separator_weights[None, :]
    found, at = [], 0
    for r, s_r, *_ in chunk:
        found.append(s_r.T @ e[at:at + len(r)])
        at += len(r)
    return np.vstack(found)


def _less_gram(gram: np.ndarray, w: np.ndarray) -> np.ndarray:
    """gram - Wᵀ W (lower triangle, in place)."""
    if not len(w):
        return gram
    return blas.dsyrk(-1.0, w.T, beta=1.0, c=gram, trans=0, lower=1, overwrite_c=1)


def exact_by_dissection(a: sp.csr_matrix, v: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The figures of averaging._exact_by_record_sets ((F⁺)_jj for the identified finest cells, else inf, and
    each row's BLUE variance), computed by dissection along ``groups`` (separator_groups)."""
    weights = 1.0 / np.sqrt(v)
    blocks = _Blocks(a, weights, groups)
    rows = v * np.clip(1 - blocks.off_range(), 0, None)
    # finest cells: candidates where two random vectors keep nothing off the row space, each then checked
    omega = np.random.default_rng(0x5DC).standard_normal((a.shape[1], 2))
    off = omega - _transposed_times(a, weights[:, None] * blocks.pseudo_inverse(weights[:, None] * _times(a, omega)))
    candidates = np.flatnonzero(np.all(np.abs(off) <= CANDIDATE_OFF_ROW_SPACE, axis=1))
    finest = np.full(a.shape[1], np.inf)
    if len(candidates):
        columns = a[:, candidates].tocsc()
        for start in range(0, len(candidates), CANDIDATES_AT_ONCE):
            part = columns[:, start:start + CANDIDATES_AT_ONCE].toarray() * weights[:, None]
            x = blocks.pseudo_inverse(part)
            identified = 1 - (part * x).sum(axis=0) <= NOT_IDENTIFIED
            j = candidates[start:start + CANDIDATES_AT_ONCE]
            finest[j[identified]] = (x[:, identified] ** 2).sum(axis=0)
    return finest, rows
