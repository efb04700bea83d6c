"""The interface: microaggregate one numeric column.

Methods (deterministic order: by value, then record id):
  fixed     ascending sort, groups of k, the remainder merged into the last group (sdcMicro-compatible)
  hoehne    seed 004: descending sort, group size m in [k, 2k-1] by the smallest sum of the chunks'
            population variances, groups of m (remainder merged into the last group, so none is below
            k), variance-preserving values
  optimal   Hansen–Mukherjee: the partition into groups of k..2k-1 with the least within-group SSE
Replacement: 'mean' (group mean) or 'hoehne' (variance-preserving: the bigger half, b = rint(n/2) half to
even and at least 1, gets mean + sqrt((n-b)/b)·sd, the smaller half mean - sqrt(b/(n-b))·sd, sd the
population sd: every group keeps its mean and population variance). Method hoehne always uses 'hoehne'.

NULLs (NaN) stay NULL and take no part; the result counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sdc.errors import SdcError
from sdc.microaggregation.partition import (
    chunk_groups,
    fixed_groups,
    group_moments,
    hoehne_group_size,
    optimal_groups,
)

METHODS = ("optimal", "hoehne", "fixed")
REPLACEMENTS = ("mean", "hoehne")


@dataclass
class MicroaggregationResult:
    """What ``microaggregate`` returns: the protected ``values`` in input order (NaN where the input was NULL),
    each record's ``group`` (-1 for NULL), the method, replacement and k, for method hoehne the chosen group
    size m (``group_size``) and the criterion per m (the sum of the chunks' population variances), and the
    number of NULLs.

    >>> from sdc.microaggregation import microaggregate
    >>> result = microaggregate([1200, 3400, 2100, 2800, 1900, 4100, 2500], k=3, method="hoehne")
    >>> result.group_size, result.group.tolist(), result.group_sizes.tolist()
    (3, [1, 0, 1, 0, 1, 0, 1], [3, 4])
    >>> {m: round(c) for m, c in result.criterion.items()}
    {3: 344444, 4: 523889, 5: 616100}
    """

    values: np.ndarray  # protected values in input order (NaN where the input was NULL)
    group: np.ndarray  # group label per record (-1 for NULL)
    method: str
    replacement: str
    k: int
    group_size: int | None = None  # hoehne: the chosen m
    criterion: dict[int, float] = field(default_factory=dict)  # hoehne: sum of variances per m
    nulls: int = 0

    @property
    def group_sizes(self) -> np.ndarray:
        return np.bincount(self.group[self.group >= 0])


def microaggregate(values, k: int, method: str = "optimal", *, ids=None, replacement: str | None = None,
                   legacy: bool = False) -> MicroaggregationResult:
    """Microaggregate one column of numbers: groups of at least ``k`` records of neighbouring values, each value
    replaced by its group's mean (``replacement="mean"``) or by Höhne's variance-preserving values
    (``"hoehne"``: every group keeps its mean and population variance). ``method`` (see the module's text):
    optimal (Hansen–Mukherjee: the partition into groups of k..2k-1 with the least within-group sum of
    squares), hoehne (seed 004: groups of the size m in [k, 2k-1] with the smallest sum of variances,
    variance-preserving values) or fixed (groups of k in ascending order, sdcMicro's). NULLs (NaN) stay NULL.
    ``ids`` break ties between equal values (default: input position). ``legacy`` (method hoehne only)
    reproduces seed 004's printed numbers, bugs included (see _legacy_hoehne); never use it to protect data.

    >>> from sdc.microaggregation import microaggregate
    >>> result = microaggregate([1200, 3400, 2100, 2800, 1900, 4100], k=3)
    >>> result.values.round(2).tolist(), result.group.tolist()
    ([1733.33, 3433.33, 1733.33, 3433.33, 1733.33, 3433.33], [0, 1, 0, 1, 0, 1])
    >>> microaggregate([1200, 3400, 2100, 2800, 1900, 4100, 2500], k=3, method="hoehne").values.round(2).tolist()
    [1453.96, 3808.98, 2396.04, 2682.04, 1453.96, 3808.98, 2396.04]
    """
    if method not in METHODS:
        raise SdcError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    replacement = replacement or ("hoehne" if method == "hoehne" else "mean")
    if replacement not in REPLACEMENTS:
        raise SdcError(f"replacement must be one of {', '.join(REPLACEMENTS)}, got {replacement!r}")
    if method == "hoehne" and replacement != "hoehne":
        raise SdcError("method hoehne always replaces by the variance-preserving values")
    if legacy and method != "hoehne":
        raise SdcError("legacy reproduces seed 004 and exists for method hoehne only")
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise SdcError("microaggregation needs numeric values") from None
    if x.ndim != 1:
        raise SdcError("microaggregation works on one column at a time")
    if not isinstance(k, (int, np.integer)) or k < 2:
        raise SdcError(f"k must be an integer of at least 2 (a group of 1 is the record itself), got {k!r}")
    null = np.isnan(x)
    present = np.flatnonzero(~null) if null.any() else None  # None: every value (no copies)
    count = len(x) if present is None else len(present)
    if count < k:
        raise SdcError(f"k = {k} exceeds the {count} non-NULL values: no group of k can be formed")
    descending = method == "hoehne"
    # order by value (descending for Höhne's bigger/smaller halves), then record id (default: position)
    keys = x if present is None else x[present]
    keys = -keys if descending else keys
    if ids is not None and len(ids) != len(x):
        raise SdcError(f"ids: give one id per value ({len(ids)} ids for {len(x)} values)")
    tie = None if ids is None else np.asarray(ids) if present is None else np.asarray(ids)[present]
    if tie is None or _ascending(tie):  # ids in input order tie like positions
        order = _stable_order(keys)
    else:
        order = np.lexsort((tie, keys))
    if present is not None:
        order = present[order]
    sorted_values = x[order]
    nulls = len(x) - count  # with none, every entry below is written: no fill
    result = MicroaggregationResult(np.full(len(x), np.nan) if nulls else np.empty(len(x)),
                                    np.full(len(x), -1, dtype=np.int64) if nulls else np.empty(len(x), dtype=np.int64),
                                    method, replacement, int(k), nulls=nulls)
    if method == "fixed":
        labels = fixed_groups(len(order), k)
    elif method == "optimal":
        labels = optimal_groups(sorted_values, k)
    else:
        m, result.criterion = hoehne_group_size(sorted_values, k)
        result.group_size = m
        labels = chunk_groups(len(order), m) if legacy else fixed_groups(len(order), m)
    if legacy:
        protected = _legacy_hoehne(sorted_values, labels, result.group_size)
    elif replacement == "mean":
        protected = _group_means(sorted_values, labels)
    else:
        protected = _hoehne_values(sorted_values, labels, descending)
    result.values[order] = protected
    result.group[order] = labels
    return result


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable"), in about half the time where the keys are whole numbers (cents,
    counts) whose range leaves room for the position: one sort of the distinct int64 keys
    (key - min) * 2^b + position, b the bits of a position."""
    n = len(keys)
    bits = max((n - 1).bit_length(), 1)
    low, high = keys.min(), keys.max()
    if not (np.isfinite(low) and np.isfinite(high) and abs(low) < 2.0 ** 53 and abs(high) < 2.0 ** 53
            and high - low < 2.0 ** min(53, 62 - bits) and (np.trunc(keys) == keys).all()):
        return np.argsort(keys, kind="stable")
    packed = (keys - low).astype(np.int64)  # exact: whole numbers below 2^53 and their difference
    packed <<= bits
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    packed &= (1 << bits) - 1
    return packed


def _ascending(ids: np.ndarray) -> bool:
    """Whether numeric ids strictly increase (then a stable sort by value alone breaks ties by id)."""
    if not (np.issubdtype(ids.dtype, np.integer) or np.issubdtype(ids.dtype, np.floating)):
        return False
    return bool((ids[1:] > ids[:-1]).all())


def _group_means(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    mean, _, _ = group_moments(values, labels)
    return mean[labels]


def _hoehne_values(values: np.ndarray, labels: np.ndarray, descending: bool) -> np.ndarray:
    """Variance-preserving replacement per group (real division, the group's actual size): the b largest
    values of a group get the upper value."""
    mean, variance, sizes = group_moments(values, labels)
    sd = np.sqrt(variance)
    bigger = np.maximum(np.rint(sizes / 2), 1)  # half to even, like Java's Math.rint
    smaller = sizes - bigger
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = mean + np.sqrt(smaller / bigger) * sd
        lower = np.where(smaller > 0, mean - np.sqrt(bigger / np.maximum(smaller, 1)) * sd, mean)
    position = np.arange(len(values)) - np.r_[0, np.cumsum(sizes)[:-1]][labels]  # place within the group
    in_bigger = position < bigger[labels] if descending else position >= smaller[labels]
    return np.where(in_bigger, upper[labels], lower[labels])


def _legacy_hoehne(values_desc: np.ndarray, labels: np.ndarray, m: int) -> np.ndarray:
    """Seed 004's Java code as it ran: chunks of the nominal m (the short last chunk alone), factors
    sqrt((m - b) / b) and sqrt(b / (m - b)) in integer division with the nominal m, the bigger half cut
    into chunks of b of which only the first two are written (later rows keep their values)."""
    out = values_desc.copy()
    bounds = np.r_[0, np.cumsum(np.bincount(labels))]  # groups are contiguous: one slice each, no mask
    for g in range(labels[-1] + 1):
        idx = np.arange(bounds[g], bounds[g + 1])
        group = values_desc[idx]
        n = len(group)
        mean, sd = group.mean(), group.std()
        b = max(int(np.rint(n / 2)), 1)
        chunks = [idx[i:i + b] for i in range(0, n, b)]
        out[chunks[0]] = mean + np.sqrt((m - b) // b) * sd
        if len(chunks) > 1:
            out[chunks[1]] = mean - np.sqrt(b // (m - b) if m > b else 0) * sd
    return out
