"""Utility and risk figures of one microaggregated column (reference §3.1).

  il_percent        IL = 100 · Σ(x - x')² / Σ(x - mean x)²   (Domingo-Ferrer & Mateo-Sanz 2002; for any
                    replacement, the squared change of each record, not the within-group SSE)
  il1s_mean         IL1s = 1/n · Σ |x - x'| / (√2 · S), S the sample sd of x (Mateo-Sanz, Sebé & Domingo-
                    Ferrer 2004); il1s_sum_sdcmicro is the same without 1/n, as sdcMicro's dUtility reports it
  mean / variance   of the original and the protected values (variance: population)
  correlation       r(x, x')
  min_group_size    the smallest group; k_effective the fewest records that share a released value in a
                    group (Höhne's values: min(b, n - b), 1 in a group of 3)
  interval_disclosure_share  SDID: share of records with |x - x'| <= 0.05 · sample sd of x' (sdcMicro dRisk)
  small_variance_preserving_groups  groups of 2 or 3 under variance-preserving values: a group of 2 gives
                    both values away (mean ± sd), in a group of 3 each member can solve for the other two
"""

from __future__ import annotations

import numpy as np

from sdc.microaggregation.methods import MicroaggregationResult

SDID_K = 0.05


def column_report(original, result: MicroaggregationResult) -> dict:
    """Utility and risk figures of one microaggregated column (see the module's text for each figure and its
    reference): information loss (IL, IL1s), moments before and after, correlation, group sizes, the effective
    k, the interval disclosure share, and warnings (groups below k, small variance-preserving groups).

    >>> from sdc.microaggregation import column_report, microaggregate
    >>> income = [1200, 3400, 2100, 2800, 1900, 4100]
    >>> report = column_report(income, microaggregate(income, k=3))
    >>> report["groups"], report["k_effective"], round(report["il_percent"], 2), round(report["correlation"], 4)
    (2, 3, 22.98, 0.8776)
    >>> report["mean_original"] == report["mean_protected"], report["warnings"]
    (True, [])
    """
    x = np.asarray(original, dtype=float)
    present = ~np.isnan(x)
    x, y, labels = (x, result.values, result.group) if present.all() else \
        (x[present], result.values[present], result.group[present])
    n = len(x)
    sst = float(((x - x.mean()) ** 2).sum())
    sse = float(((x - y) ** 2).sum())
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    il1s_sum = float((np.abs(x - y) / (np.sqrt(2) * sd)).sum()) if sd > 0 else 0.0
    sizes = np.bincount(labels)
    sharing = fewest_sharing(y, labels, sizes)
    small = int(((sizes == 2) | (sizes == 3)).sum()) if result.replacement == "hoehne" else 0
    warnings = []
    if sizes.min() < result.k:
        warnings.append(f"{int((sizes < result.k).sum())} groups have fewer than k = {result.k} records: a disclosure")
    if small:
        warnings.append(f"{small} groups of 2 or 3 records under variance-preserving values: a group of 2 gives "
                        "both values away, in a group of 3 each member can compute the other two exactly")
    protected_sd = float(y.std(ddof=1)) if n > 1 else 0.0
    return {
        "method": result.method,
        "replacement": result.replacement,
        "k": result.k,
        "group_size": result.group_size,
        "records": int(len(present)),
        "nulls": int(result.nulls),
        "groups": int(len(sizes)),
        "min_group_size": int(sizes.min()),
        "max_group_size": int(sizes.max()),
        "k_effective": int(sharing.min()),
        "sse": sse,
        "sst": sst,
        "il_percent": 100.0 * sse / sst if sst > 0 else 0.0,
        "il1s_mean": il1s_sum / n,
        "il1s_sum_sdcmicro": il1s_sum,
        "mean_original": float(x.mean()),
        "mean_protected": float(y.mean()),
        "variance_original": float(x.var()),
        "variance_protected": float(y.var()),
        "correlation": float(np.corrcoef(x, y)[0, 1]) if sd > 0 and y.std() > 0 else 1.0,
        "interval_disclosure_share": float((np.abs(x - y) <= SDID_K * protected_sd).mean()),
        "small_variance_preserving_groups": small,
        "warnings": warnings,
    }


def fewest_sharing(values: np.ndarray, labels: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per group (labels 0, 1, ..., every one non-empty), the fewest records that share one of the group's
    values, in O(n) for groups of one or two distinct values (every group under mean or variance-preserving
    replacement) and by one sort of the other groups' records (NaN counts as one value, -0.0 equals 0.0)."""
    groups = len(sizes)
    low = np.full(groups, np.inf)
    with np.errstate(invalid="ignore"):  # NaN propagates: such a group never passes the checks below
        np.minimum.at(low, labels, values)
    at_low = values == low[labels]
    low_count = np.bincount(labels[at_low], minlength=groups)
    split = low_count != sizes  # groups of more than one value
    if not split.any():
        return sizes.copy()
    others = ~at_low
    other_labels, other_values = labels[others], values[others]
    high = np.full(groups, -np.inf)
    with np.errstate(invalid="ignore"):
        np.maximum.at(high, other_labels, other_values)
    high_count = np.bincount(other_labels[other_values == high[other_labels]], minlength=groups)
    sharing = np.where(split, np.minimum(low_count, high_count), sizes)
    rest = np.flatnonzero(split & (low_count + high_count != sizes))  # three or more values, or NaN
    if len(rest):
        chosen = np.zeros(groups, dtype=bool)
        chosen[rest] = True
        members = np.flatnonzero(chosen[labels])
        order = members[np.lexsort((values[members], labels[members]))]
        v, g = values[order], labels[order]
        same = (g[1:] == g[:-1]) & ((v[1:] == v[:-1]) | (np.isnan(v[1:]) & np.isnan(v[:-1])))
        run_starts = np.flatnonzero(np.r_[True, ~same])
        run_lengths = np.diff(np.r_[run_starts, len(v)])
        run_groups = g[run_starts]
        group_starts = np.flatnonzero(np.r_[True, run_groups[1:] != run_groups[:-1]])
        sharing[run_groups[group_starts]] = np.minimum.reduceat(run_lengths, group_starts)
    return sharing
