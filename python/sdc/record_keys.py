"""Refuse record keys that cannot be uniform on [0, M): range, share of distinct values, uniformity.

The thresholds and why they are safe for genuinely random keys: conventions.py, "record key checks".
The dbt macros make the same check in macros/ckm/ckm_check_record_keys.sql.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .conventions import RECORD_KEY_ALPHA, RECORD_KEY_BINS, RECORD_KEY_MIN_DISTINCT_FRACTION, RECORD_KEY_MIN_RECORDS
from .errors import SdcError


@dataclass(frozen=True)
class KeyStatistics:
    n: int
    nulls: int
    outside: int  # keys below 0 or at or above M
    distinct: int  # approx_count_distinct: a few per cent off, far inside the factor the check allows
    ks: float  # Kolmogorov-Smirnov distance to the uniform, read at the bin edges


def statistics_sql(relation_sql: str, key_sql: str, modulus: int, bins: int = RECORD_KEY_BINS) -> str:
    """One row (n, nulls, outside, distinct, ks) over the integer keys ``key_sql`` of ``relation_sql``.

    Bin j holds the keys in [j w, (j + 1) w) with w = ceil(M / bins) (64-bit integers: 128-bit division is
    15 times slower); the empirical CDF is compared with the uniform one at both edges of every non-empty bin
    (across a run of empty bins the distance is largest at its ends)."""
    m = modulus
    w = -(-m // bins)
    return f"""
    with keys as (
        select {key_sql} as k from {relation_sql}
    ),
    summary as (
        select count(*) as n, count(*) - count(k) as nulls, count(*) filter (where k < 0 or k >= {m}) as outside,
               approx_count_distinct(k) as distinct_keys
        from keys
    ),
    bins as (
        select cast(k as bigint) // {w} as bin, count(*) as records from keys where k >= 0 and k < {m} group by all
    ),
    cumulated as (
        select bin, records, sum(records) over (order by bin) as upto from bins
    ),
    distance as (
        select coalesce(max(greatest(
            upto / n - least((bin + 1) * {w}, {m}) / {m},
            bin * {w} / {m} - (upto - records) / n)), 0) as ks
        from cumulated, summary
    )
    select n, nulls, outside, distinct_keys, ks from summary, distance
    """


def statistics(con, relation_sql: str, key_sql: str, modulus: int) -> KeyStatistics:
    n, nulls, outside, distinct, ks = con.execute(statistics_sql(relation_sql, key_sql, modulus)).fetchall()[0]
    return KeyStatistics(int(n), int(nulls), int(outside), int(distinct), float(ks))


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
