"""Microaggregation (sdc.microaggregation): seed 004 (Höhne), the optimal partition against brute force and
exact arithmetic, invariants, measures and bad input."""

import csv
import math
from collections import Counter
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest

from sdc.errors import SdcError
from sdc.microaggregation import MicroaggregationResult, column_report, microaggregate
from sdc.microaggregation.measures import fewest_sharing
from sdc.microaggregation.methods import _stable_order
from sdc.microaggregation.partition import optimal_groups

from conftest import DATA

SEED004 = [356, 670, 815, 132, 613, 916, 538, 348, 3, 396, 401]  # "Beispieldaten", input order
SEED004_PRINTED = {916: 800.33, 815: 800.33, 670: 657.54, 613: 517.33, 538: 517.33, 401: 393.20, 396: 366.66,
                   356: 366.66, 348: 336.97, 132: 158.71, 3: 67.5}  # "Schritt 4", per original value


def column(name):
    with open(DATA / name, newline="") as handle:
        return np.array([float(r["x"]) for r in csv.DictReader(handle)])


def test_seed004_group_size_choice():
    # Schritt 2: unweighted sums of the chunks' population variances for m = 3, 4, 5 (chunks 3+3+3+2,
    # 4+4+3, 5+5+1); the smallest, m = 3, is the document's "optimale Gruppengröße"
    result = microaggregate(SEED004, 3, "hoehne")
    assert result.group_size == 3
    assert result.criterion == pytest.approx({3: 22498.9166667, 4: 39214.9375, 5: 28719.28}, abs=1e-6)


def test_seed004_correct_values_keep_each_group_mean_and_variance():
    # The document's formulas with real division and the group's actual size; the short remainder (132, 3)
    # joins the last group so that no group is below k: {396, 356, 348, 132, 3}, b = rint(2.5) = 2.
    result = microaggregate(SEED004, 3, "hoehne")
    got = dict(zip(SEED004, result.values))
    expected = {916: (2401 + np.sqrt(45871)) / 3, 815: (2401 + np.sqrt(45871)) / 3, 670: (2401 - np.sqrt(183484)) / 3,
                613: 579.398711, 538: 579.398711, 401: 393.202578,
                396: 434.3851648344, 356: 434.3851648344, 348: 122.0765567771, 132: 122.0765567771, 3: 122.0765567771}
    for value, want in expected.items():
        assert got[value] == pytest.approx(want, abs=1e-6), value
    assert got[916] == pytest.approx(871.7250539862, abs=1e-9) and got[670] == pytest.approx(657.5498920276, abs=1e-9)
    x = np.array(SEED004, float)
    for g in np.unique(result.group):
        members = result.group == g
        assert result.values[members].mean() == pytest.approx(x[members].mean(), rel=1e-12)
        assert result.values[members].var() == pytest.approx(x[members].var(), rel=1e-9)


def test_seed004_legacy_reproduces_the_printed_numbers_and_why_they_are_wrong():
    # The printed values come from the Java code's integer division sqrt((m - b) / b) with int m, b
    # ((3 - 2) / 2 = 0: the "bigger" values get the bare group mean) and the nominal m = 3 in the short last
    # group (158.71 = 67.5 + sqrt(2) * 64.5), truncated to two decimals. Correct values: the test above.
    result = microaggregate(SEED004, 3, "hoehne", legacy=True)
    truncated = {v: np.floor(p * 100) / 100 for v, p in zip(SEED004, result.values)}
    assert truncated == pytest.approx(SEED004_PRINTED, abs=1e-9)
    # the printed output keeps neither the column's mean nor its variance
    assert result.values.mean() == pytest.approx(452.964349, abs=1e-6)
    assert np.mean(SEED004) == pytest.approx(471.636364, abs=1e-6)


def test_seed004_measures_as_the_reference_recomputes_them():
    x = np.array(SEED004, float)
    hoehne = column_report(x, microaggregate(x, 3, "hoehne"))
    assert hoehne["il_percent"] == pytest.approx(10.774, abs=5e-4)
    assert hoehne["il1s_sum_sdcmicro"] == pytest.approx(1.721, abs=5e-4)
    assert hoehne["il1s_mean"] == pytest.approx(0.156, abs=5e-4)
    assert hoehne["correlation"] == pytest.approx(0.9461, abs=5e-5)
    assert hoehne["interval_disclosure_share"] == pytest.approx(3 / 11)
    assert hoehne["k_effective"] == 1  # one record alone carries the smaller value of {916, 815, 670}
    assert hoehne["small_variance_preserving_groups"] == 2 and hoehne["warnings"]
    assert hoehne["mean_protected"] == pytest.approx(hoehne["mean_original"], rel=1e-12)
    assert hoehne["variance_protected"] == pytest.approx(hoehne["variance_original"], rel=1e-9)
    optimal = column_report(x, microaggregate(x, 3, "optimal"))
    # Hansen–Mukherjee: {3, 132, 348}, {356, 396, 401, 538}, {613, 670, 815, 916}, SSE 136 601.75
    assert optimal["sse"] == pytest.approx(136601.75)
    assert optimal["il_percent"] == pytest.approx(18.131, abs=5e-4)
    assert optimal["correlation"] == pytest.approx(0.9048, abs=5e-5)
    assert optimal["interval_disclosure_share"] == 0 and optimal["k_effective"] == 3
    fixed = microaggregate(x, 3, "fixed")  # ascending, remainder in the last group: 3 + 3 + 5
    assert sorted(np.bincount(fixed.group)) == [3, 3, 5]
    assert sorted(set(np.round(fixed.values, 6))) == pytest.approx([161.0, 384.333333, 710.4])


def set_partitions(items, k):
    """Every partition of items into blocks of at least k (not necessarily contiguous)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for size in range(k - 1, len(rest) + 1):
        for mates in combinations(rest, size):
            remaining = [i for i in rest if i not in mates]
            if remaining and len(remaining) < k:
                continue
            for tail in set_partitions(remaining, k):
                yield [(first, *mates)] + tail


def sse(values, blocks):
    return sum(((values[list(b)] - values[list(b)].mean()) ** 2).sum() for b in blocks)


@pytest.mark.parametrize("seed", range(25))
def test_optimal_equals_brute_force_over_every_partition(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(4, 10)), int(rng.integers(2, 4))
    if n < k:
        n = k
    x = np.round(rng.lognormal(3, 1, n), 1)
    best = min(sse(x, p) for p in set_partitions(list(range(n)), k))
    result = microaggregate(x, k, "optimal")
    sizes = np.bincount(result.group)
    assert sizes.min() >= k and (n < 2 * k or sizes.max() <= 2 * k - 1)
    assert ((x - result.values) ** 2).sum() == pytest.approx(best, rel=1e-9, abs=1e-9)


def exact_sse(values, labels):
    total = Fraction(0)
    for g in range(labels.max() + 1):
        members = [Fraction(v) for v in values[labels == g]]
        mean = sum(members) / len(members)
        total += sum((v - mean) ** 2 for v in members)
    return total


def exact_optimum(values, k):
    """The optimal SSE of sorted values in exact rational arithmetic (O(nk) DP)."""
    v = [Fraction(x) for x in values]
    s1, s2 = [Fraction(0)], [Fraction(0)]
    for x in v:
        s1.append(s1[-1] + x)
        s2.append(s2[-1] + x * x)
    best = [Fraction(0)] + [None] * len(v)
    for j in range(k, len(v) + 1):
        candidates = [best[j - s] + (s2[j] - s2[j - s]) - (s1[j] - s1[j - s]) ** 2 / s
                      for s in range(k, min(2 * k - 1, j) + 1) if best[j - s] is not None]
        best[j] = min(candidates) if candidates else None
    return best[len(v)]


def naive_prefix_sum_groups(v, k):
    """The textbook DP with global prefix sums of squares in floating point (what not to do)."""
    n = len(v)
    s1, s2 = np.r_[0, np.cumsum(v)], np.r_[0, np.cumsum(v * v)]
    cost, back = np.full(n + 1, np.inf), np.zeros(n + 1, int)
    cost[0] = 0
    for j in range(k, n + 1):
        for s in range(k, min(2 * k - 1, j) + 1):
            c = cost[j - s] + (s2[j] - s2[j - s]) - (s1[j] - s1[j - s]) ** 2 / s
            if c < cost[j]:
                cost[j], back[j] = c, j - s
    starts, j = [], n
    while j > 0:
        j = back[j]
        starts.append(j)
    marks = np.zeros(n, int)
    marks[np.array(starts[:-1], int)] = 1
    return np.cumsum(marks)


def test_optimal_is_exact_with_values_around_10_to_the_8():
    # 40 values 10^8 + 0..29: prefix sums of squares pass 2^53, and the textbook DP picks a partition with
    # SSE 28.25 instead of the optimum 18; the windowed sums keep the DP exact
    rng = np.random.default_rng(0)
    v = np.sort(1e8 + rng.integers(0, 30, 40).astype(float))
    assert exact_sse(v, optimal_groups(v, 3)) == exact_optimum(v, 3) == 18
    assert exact_sse(v, naive_prefix_sum_groups(v, 3)) == Fraction(113, 4)
    # the income test column (values up to 10^8): the partition's exact SSE is the exact optimum
    income = np.sort(column("microagg_income.csv"))
    assert exact_sse(income, optimal_groups(income, 3)) == exact_optimum(income, 3)


@pytest.mark.parametrize("method", ["optimal", "hoehne", "fixed"])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_invariants(method, k):
    x = column("microagg_income.csv")[:997]
    x[[5, 50, 500]] = np.nan  # NULLs stay NULL and are counted
    result = microaggregate(x, k, method)
    assert len(result.values) == len(x)
    assert np.array_equal(np.isnan(result.values), np.isnan(x)) and result.nulls == 3
    sizes = np.bincount(result.group[result.group >= 0])
    step = result.group_size or k
    assert sizes.min() >= k
    if method == "optimal":
        assert sizes.max() <= 2 * k - 1
    else:  # groups of k (m for Höhne), the remainder merged into the last
        assert (sizes[:-1] == step).all() and step <= sizes[-1] <= 2 * step - 1
    present = ~np.isnan(x)
    for g in range(len(sizes)):
        members = result.group == g
        assert result.values[members].mean() == pytest.approx(x[members].mean(), rel=1e-12)
        if method == "hoehne":
            assert result.values[members].var() == pytest.approx(x[members].var(), rel=1e-9)
    # groups are contiguous in sorted order: every value of a group lies between the group's bounds
    order = np.argsort(x[present], kind="stable")
    assert (np.diff(result.group[present][order]) >= 0).all() or method == "hoehne"
    report = column_report(x, result)
    assert report["records"] == len(x) and report["nulls"] == 3 and report["min_group_size"] >= k


def test_ties_are_broken_by_record_id_not_by_input_order():
    x = np.array([5.0, 1, 5, 5, 1, 1, 5])
    ids = np.array([70, 10, 20, 60, 30, 50, 40])
    a = microaggregate(x, 2, "fixed", ids=ids, replacement="hoehne")
    shuffled = np.array([3, 0, 6, 1, 5, 2, 4])
    b = microaggregate(x[shuffled], 2, "fixed", ids=ids[shuffled], replacement="hoehne")
    assert np.array_equal(a.values[shuffled], b.values)


def report_oracle(original, result):
    """column_report's figures the plain way: one pass over the records per group, Python sums."""
    records = [(float(x), float(y), int(g)) for x, y, g in zip(original, result.values, result.group)
               if not math.isnan(x)]
    xs, ys = [x for x, _, _ in records], [y for _, y, _ in records]
    n = len(records)
    members = {}
    for _, y, g in records:
        members.setdefault(g, []).append("NaN" if math.isnan(y) else y)  # -0.0 == 0.0 in a Counter too
    assert sorted(members) == list(range(len(members)))
    sizes = [len(members[g]) for g in range(len(members))]
    sharing = [min(Counter(members[g]).values()) for g in range(len(members))]
    mean_x, mean_y = math.fsum(xs) / n, math.fsum(ys) / n
    sst = math.fsum((x - mean_x) ** 2 for x in xs)
    syy = math.fsum((y - mean_y) ** 2 for y in ys)
    sxy = math.fsum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    sse = math.fsum((x - y) ** 2 for x, y in zip(xs, ys))
    sd = math.sqrt(sst / (n - 1)) if n > 1 else 0.0
    il1s_sum = math.fsum(abs(x - y) for x, y in zip(xs, ys)) / (math.sqrt(2) * sd) if sd > 0 else 0.0
    protected_sd = math.sqrt(syy / (n - 1)) if n > 1 else 0.0
    small = sum(s in (2, 3) for s in sizes) if result.replacement == "hoehne" else 0
    warnings = []
    if min(sizes) < result.k:
        below = sum(s < result.k for s in sizes)
        warnings.append(f"{below} groups have fewer than k = {result.k} records: a disclosure")
    if small:
        warnings.append(f"{small} groups of 2 or 3 records under variance-preserving values: a group of 2 gives "
                        "both values away, in a group of 3 each member can compute the other two exactly")
    return {
        "method": result.method, "replacement": result.replacement, "k": result.k,
        "group_size": result.group_size, "records": len(original), "nulls": result.nulls,
        "groups": len(sizes), "min_group_size": min(sizes), "max_group_size": max(sizes),
        "k_effective": min(sharing), "sse": sse, "sst": sst,
        "il_percent": 100 * sse / sst if sst > 0 else 0.0,
        "il1s_mean": il1s_sum / n, "il1s_sum_sdcmicro": il1s_sum,
        "mean_original": mean_x, "mean_protected": mean_y,
        "variance_original": sst / n, "variance_protected": syy / n,
        "correlation": sxy / math.sqrt(sst * syy) if sd > 0 and syy > 0 else 1.0,
        "interval_disclosure_share": sum(abs(x - y) <= 0.05 * protected_sd for x, y in zip(xs, ys)) / n,
        "small_variance_preserving_groups": small,
        "warnings": warnings,
    }


def assert_report_equals_oracle(original, result):
    got, want = column_report(original, result), report_oracle(original, result)
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        else:
            assert got[key] == value and type(got[key]) is type(value), key


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method, replacement", [("optimal", "mean"), ("optimal", "hoehne"), ("fixed", "mean"),
                                                 ("fixed", "hoehne"), ("hoehne", "hoehne")])
def test_report_equals_a_per_group_loop(seed, method, replacement):
    # incomes with ties (rounded) and NULLs, groups of k..2k-1 (the remainder group up to 2m-1 for hoehne)
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(40, 400)), int(rng.integers(2, 6))
    x = np.round(rng.lognormal(8, 1.5, n), -int(rng.integers(0, 3)))
    x[rng.random(n) < 0.1] = np.nan
    assert_report_equals_oracle(x, microaggregate(x, k, method, replacement=replacement))


@pytest.mark.parametrize("seed", range(10))
def test_report_equals_a_per_group_loop_for_any_released_values(seed):
    # groups of 1..9 records scattered over the input, released values drawn from a few per group (one, two
    # or more distinct values, -0.0 next to 0.0), NULLs: the paths column_report does not take for
    # microaggregate's own results (legacy keeps values, and a group below k must be reported)
    rng = np.random.default_rng(100 + seed)
    sizes = rng.integers(1, 10, int(rng.integers(1, 60)))
    labels = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    pools = [rng.choice([0.0, -0.0, 1.5, 7.0, 1e9, -3.25], int(rng.integers(1, 5))) for _ in sizes]
    values = np.array([rng.choice(pools[g]) for g in labels])
    original = np.round(values + rng.normal(0, 2, len(values)), 1)
    nulls = rng.random(len(values)) < 0.15
    original, values, labels = [np.insert(a, np.flatnonzero(nulls), fill)
                                for a, fill in ((original, np.nan), (values, np.nan), (labels, -1))]
    for replacement in ("mean", "hoehne"):
        result = MicroaggregationResult(values, labels, "fixed", replacement, 3, nulls=int(nulls.sum()))
        if np.isnan(original).all() or len(np.unique(original[~np.isnan(original)])) < 2:
            continue
        assert_report_equals_oracle(original, result)


def test_fewest_sharing_counts_nan_as_one_value():
    values = np.array([np.nan, 1.0, np.nan, 2.0, 2.0, np.nan, 0.0, -0.0, 5.0, np.nan, np.nan])
    labels = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 4, 4])
    # np.unique's counts per group, as the per-group loop had them: {NaN: 2, 1: 1}, {2: 2}, {NaN: 1},
    # {0: 2, 5: 1}, {NaN: 2}
    assert fewest_sharing(values, labels, np.bincount(labels)).tolist() == [1, 2, 1, 1, 2]


def test_ids_must_match_the_values():
    with pytest.raises(SdcError, match="give one id per value"):
        microaggregate([1.0, 2, 3, 4], 2, ids=[1, 2, 3])


@pytest.mark.parametrize("keys", [
    [3.0, -1, 3, 0, -0.0, 0, 7, -1, 3],  # whole numbers with ties, -0.0 next to 0.0: the packed int64 sort
    np.round(np.random.default_rng(1).lognormal(10, 2, 5000)),  # cents
    np.random.default_rng(2).integers(-3, 3, 5000).astype(float),  # nearly all ties
    [2.0 ** 52, -(2.0 ** 52), 0.0, 1.0],  # range 2^53: past the packed sort's room, numpy's stable sort
    [0.5, 0.25, 0.5, 1.0],  # not whole numbers
    [1.0, np.inf, 1.0, -np.inf],
])
def test_sort_by_value_then_position_equals_numpys_stable_argsort(keys):
    keys = np.asarray(keys, dtype=float)
    assert np.array_equal(_stable_order(keys), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("args, message", [
    (dict(values=[1.0, 2, 3], k=1), "k must be an integer of at least 2"),
    (dict(values=[1.0, 2, 3], k=4), "k = 4 exceeds the 3 non-NULL values"),
    (dict(values=["a", "b", "c"], k=2), "needs numeric values"),
    (dict(values=[1.0, 2, 3], k=2, method="mdav"), "method must be one of optimal, hoehne, fixed"),
    (dict(values=[1.0, 2, 3], k=2, method="fixed", legacy=True), "legacy reproduces seed 004"),
])
def test_bad_input(args, message):
    with pytest.raises(SdcError, match=message):
        microaggregate(**args)
