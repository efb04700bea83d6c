"""Partitions of sorted values into microaggregation groups (labels 0, 1, ... in sorted order).

Every function works on values already sorted (by value, then record id) and returns one group label
per position. Groups are contiguous in sorted order.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, dijkstra


def fixed_groups(n: int, k: int) -> np.ndarray:
    """Consecutive groups of k; the remainder (n mod k values) joins the last group (sdcMicro's mafast)."""
    return np.minimum(np.arange(n) // k, max(n // k - 1, 0))


def chunk_groups(n: int, m: int) -> np.ndarray:
    """Consecutive chunks of m, the last one shorter when m does not divide n (seed 004's split)."""
    return np.arange(n) // m


def hoehne_group_size(values_desc: np.ndarray, k: int) -> tuple[int, dict[int, float]]:
    """Seed 004's choice of m in [k, 2k-1]: split into chunks of m and take the m with the smallest
    unweighted sum of the chunks' population variances (strict <: the smallest m wins ties).
    Returns m and the criterion per m."""
    criterion = {}
    best_m, best = k, np.inf
    for m in range(k, 2 * k):
        _, variance, _ = group_moments(values_desc, chunk_groups(len(values_desc), m))
        total = float(variance.sum())
        criterion[m] = total
        if total < best:
            best_m, best = m, total
    return best_m, criterion


def group_moments(values: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, population variance and size of each group of contiguous labels 0, 1, ..., from deviations to
    each group's first value (exact for large values with a small spread)."""
    sizes = np.bincount(labels)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    deviation = values - values[starts][labels]
    shift = np.bincount(labels, weights=deviation) / sizes
    variance = np.maximum(np.bincount(labels, weights=deviation * deviation) / sizes - shift * shift, 0.0)
    return values[starts] + shift, variance, sizes


def _window_sse_steps(values: np.ndarray, k: int):
    """Sum of squared deviations from the window mean of every window of s = 2..2k-1 sorted values, one s at a
    time, in place: yields s and the SSEs (entry i: the window starting at i; a view into a buffer that the next
    step overwrites). Computed from differences to the window's first value (s1 = s1[:m] + d,
    s2 = s2[:m] + d * d, max(s2 - s1 * s1 / s, 0)), so values around 10^8 (incomes in cents) keep their
    precision; global prefix sums of squares would pass 2^53 and cancel catastrophically."""
    n = len(values)
    s1 = np.zeros(n)
    s2 = np.zeros(n)
    d = np.empty(n)
    sse = np.empty(n)
    for t in range(2, 2 * k):
        m = n - t + 1
        if m <= 0:
            break
        s1, s2, d, sse = s1[:m], s2[:m], d[:m], sse[:m]
        np.subtract(values[t - 1:t - 1 + m], values[:m], out=d)
        s1 += d
        np.multiply(d, d, out=d)
        s2 += d
        if t >= k:
            np.multiply(s1, s1, out=sse)
            sse /= t
            np.subtract(s2, sse, out=sse)
            yield t, np.maximum(sse, 0.0, out=sse)


def optimal_groups(values: np.ndarray, k: int) -> np.ndarray:
    """The partition into groups of k..2k-1 consecutive sorted values with the least within-group sum of
    squares (Hansen & Mukherjee 2003): a shortest path from 0 to n over the edges i -> i+s, weighted by
    the SSE of values[i:i+s], found by scipy's Dijkstra (C speed; every weight is >= 0). The graph is
    written in CSR form directly (row i: the edges to i+k..i+2k-1, by target) and the path read back by
    a breadth-first search over the predecessor links: O(n k) and O(n), no Python loop over groups."""
    n = len(values)
    if n < 2 * k:
        return np.zeros(n, dtype=np.int64)
    full = n - 2 * k + 2  # sources 0..n-2k+1 have all k edges; n-2k+2..n-k have k-1..1; the rest none
    edges = full * k + k * (k - 1) // 2
    index = np.int32 if edges < np.iinfo(np.int32).max else np.int64
    indptr = np.empty(n + 2, dtype=index)
    indptr[:full + 1] = np.arange(0, (full + 1) * k, k, dtype=index)
    indptr[full + 1:n - k + 2] = full * k + np.cumsum(np.arange(k - 1, 0, -1), dtype=index)
    indptr[n - k + 2:] = edges
    weights = np.empty(edges)
    targets = np.empty(edges, dtype=index)
    head_weights = weights[:full * k].reshape(full, k)
    head_targets = targets[:full * k].reshape(full, k)
    tiny = np.finfo(float).tiny  # a zero-weight edge must stay an edge: the smallest positive double
    for s, sse in _window_sse_steps(values, k):  # changes no comparison
        j = s - k
        np.add(sse[:full], tiny, out=head_weights[:, j])
        head_targets[:, j] = np.arange(s, full + s, dtype=index)
        tail = np.arange(full, n - s + 1)  # the sources past the head with an edge of s
        weights[indptr[tail] + j] = sse[tail] + tiny
        targets[indptr[tail] + j] = tail + s
    del head_weights, head_targets
    graph = csr_matrix((weights, targets, indptr), shape=(n + 1, n + 1))
    _, predecessor = dijkstra(graph, directed=True, indices=0, return_predecessors=True)
    del graph, weights, targets
    # the path n -> predecessor[n] -> ... -> 0: the nodes a search from n reaches over the links j -> pred[j]
    linked = predecessor >= 0
    links_ptr = np.zeros(n + 2, dtype=index)
    np.cumsum(linked, out=links_ptr[1:])
    links = csr_matrix((np.ones(int(links_ptr[-1]), dtype=np.int8), predecessor[linked].astype(index), links_ptr),
                       shape=(n + 1, n + 1))
    path = breadth_first_order(links, n, directed=True, return_predecessors=False)
    boundaries = np.zeros(n, dtype=np.int64)
    boundaries[path[(path > 0) & (path < n)]] = 1  # every group start but the first
    return np.cumsum(boundaries)
