"""Refuse record keys that cannot be uniform on [0, M): range, share of distinct values, uniformity.

The thresholds and why they are safe for genuinely random keys: conventions.py, "record key checks".
The dbt macros make the same check in macros/ckm/_ckm_check_record_keys.sql.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sdc.conventions import (
    RECORD_KEY_ALPHA,
    RECORD_KEY_BINS,
    RECORD_KEY_MIN_DISTINCT_FRACTION,
    RECORD_KEY_MIN_RECORDS,
)
from sdc.errors import SdcError


@dataclass(frozen=True)
class KeyStatistics:
    n: int
    nulls: int
    outside: int  # keys below 0 or at or above M
    distinct: int  # exact where a bin holds one key value (M <= bins), else approx_count_distinct: a few per
    #                cent off, far inside the factor the check allows
    ks: float  # Kolmogorov-Smirnov distance to the uniform, read at the bin edges


def binned_sql(relation_sql: str, key_sql: str, modulus: int, bins: int = RECORD_KEY_BINS) -> str:
    """The keys ``key_sql`` of ``relation_sql`` counted by bin, in one pass: bin j holds the keys in
    [j w, (j + 1) w) with w = ceil(M / bins) (64-bit integers: 128-bit division is 15 times slower), bin -1 those
    below 0 or at or above M, bin NULL the NULLs."""
    w = -(-modulus // bins)
    return f"""
    select case when k < 0 or k >= {modulus} then -1 else cast(k as bigint) // {w} end as bin, count(*) as records
    from (select {key_sql} as k from {relation_sql}) as keys
    group by 1
    """


def statistics(con, relation_sql: str, key_sql: str, modulus: int, bins: int = RECORD_KEY_BINS) -> KeyStatistics:
    """(n, nulls, outside, distinct, ks) of the integer keys ``key_sql`` of ``relation_sql``: the binned counts
    of one pass (binned_sql) and, where a bin spans more than one key value, DuckDB's estimate of the distinct
    keys in a second (two plain passes take 0.6 of the time of one query that does both, 10^6 to 10^7 keys)."""
    w = -(-modulus // bins)
    counts = con.execute(binned_sql(relation_sql, key_sql, modulus, bins)).fetchall()
    n = sum(records for _, records in counts)
    nulls = sum(records for b, records in counts if b is None)
    outside = sum(records for b, records in counts if b == -1)
    inside = sorted((b, records) for b, records in counts if b is not None and b >= 0)
    if w == 1:
        distinct = len(inside)
    else:
        distinct = con.execute(f"select approx_count_distinct({key_sql}) from {relation_sql}").fetchall()[0][0]
    return KeyStatistics(int(n), int(nulls), int(outside), int(distinct), _distance(inside, n, w, modulus))


def _distance(bin_counts: list[tuple[int, int]], n: int, w: int, modulus: int) -> float:
    """The empirical CDF of the keys against the uniform one at both edges of every non-empty bin (across a run
    of empty bins the distance is largest at its ends); 0 without keys."""
    distance, upto = 0.0, 0
    for b, records in bin_counts:
        below, upto = upto, upto + records
        distance = max(distance, upto / n - min((b + 1) * w, modulus) / modulus, b * w / modulus - below / n)
    return distance


def expected_distinct(n: int, modulus: int) -> float:
    """Mean number of distinct values among n keys uniform on M values: M (1 - (1 - 1/M)^n)."""
    return -modulus * math.expm1(n * math.log1p(-1 / modulus))


def log10_p(n: int, ks: float) -> float:
    """log10 of the DKW bound 2 exp(-2 n D^2) on P(distance >= D) for uniform keys (at most 0: p <= 1)."""
    return min(0.0, math.log10(2) - 2 * n * ks * ks / math.log(10))


def problem(stats: KeyStatistics, modulus: int) -> str | None:
    """What rules the keys out as uniform on [0, M), naming the statistic; None if nothing does."""
    if stats.nulls:
        return f"{stats.nulls} of {stats.n} keys are NULL"
    if stats.outside:
        return f"{stats.outside} of {stats.n} keys lie outside [0, {modulus})"
    expected = expected_distinct(stats.n, modulus)
    if stats.n >= RECORD_KEY_MIN_RECORDS and stats.distinct < RECORD_KEY_MIN_DISTINCT_FRACTION * expected:
        return (f"distinct share {stats.distinct / stats.n:.4g}: {stats.distinct} distinct values in {stats.n} keys, "
                f"where uniform keys give about {expected:.6g} (refused below {RECORD_KEY_MIN_DISTINCT_FRACTION} of that)")
    log_p = log10_p(stats.n, stats.ks)
    if log_p < math.log10(RECORD_KEY_ALPHA):
        return (f"Kolmogorov-Smirnov distance {stats.ks:.4g} to the uniform over {stats.n} keys has "
                f"p <= 10^{log_p:.1f}, below {RECORD_KEY_ALPHA:g}")
    return None


def check_record_keys(con, relation_sql: str, key_sql: str, modulus: int, what: str) -> KeyStatistics:
    """Raise SdcError naming ``what`` (the key column and where it comes from) if the keys cannot be uniform."""
    stats = statistics(con, relation_sql, key_sql, modulus)
    reason = problem(stats, modulus)
    if reason:
        raise SdcError(f"record keys {what} are not uniform random on [0, {modulus}): {reason}. Keys must be "
                       "secret random integers (sdc load --key-mode random draws them)")
    return stats
