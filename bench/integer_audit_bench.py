"""The integer audit's cost by table size (prints figures; no assertions).

Count tables with every margin (2-D and 3-D, inner counts drawn at random, about 8 % below the frequency
threshold 3: the primaries, protection 1), the heuristic's pattern, then the audit of that pattern twice:
the LP audit alone and with the MILP check of every sensitive cell (audit_pattern(integer=True)). It
prints the cells, primaries, suppressed cells, the largest group of suppressed cells, both times and how
many cells the integer check failed or skipped.

Usage: .venv/bin/python bench/integer_audit_bench.py [shape ...]     (default 10x10 30x30 6x6x6 10x10x10 14x14x14)
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import cube_table  # noqa: E402  (the tests' n-dimensional table with every margin)
from sdc.suppression.audit import audit_pattern, suppressed_groups, relation_matrix
from sdc.suppression.heuristic import heuristic_pattern
from sdc.suppression.problem import SuppressionProblem


def main(shapes):
    rng = np.random.default_rng(17)
    print(f"{'table':>10} {'cells':>6} {'primary':>7} {'suppr.':>6} {'group':>6} {'LP s':>7} {'LP+MILP s':>9} "
          f"{'int. failed':>11} {'skipped':>7}")
    for shape in shapes:
        dims = tuple(int(x) for x in shape.split("x"))
        inner = np.where(rng.random(dims) < 0.08, rng.integers(1, 3, size=dims), rng.integers(3, 40, size=dims))
        values, relations, _ = cube_table(inner)
        primary = (values > 0) & (values < 3)
        ones = primary * 1.0
        lower, upper = np.ones(len(values)), np.full(len(values), 1.5 * values.max())
        problem = SuppressionProblem.from_arrays(values, relations, primary, ones, ones, values, lower=lower, upper=upper)
        pattern = heuristic_pattern(problem)
        group = max(len(g) for g in suppressed_groups(relation_matrix(relations, len(values)).tocsc(), pattern))
        args = dict(sensitive=primary, protection_lower=ones, protection_upper=ones, lower=lower, upper=upper)
        started = time.perf_counter()
        audit_pattern(values, pattern, relations, **args)
        lp_seconds = time.perf_counter() - started
        started = time.perf_counter()
        result = audit_pattern(values, pattern, relations, integer=True, **args)
        milp_seconds = time.perf_counter() - started
        failed = sum(iv.integer_failed for iv in result.intervals)
        print(f"{shape:>10} {len(values):>6} {int(primary.sum()):>7} {int(pattern.sum()):>6} {group:>6} "
              f"{lp_seconds:>7.2f} {milp_seconds:>9.2f} {failed:>11} {len(result.unchecked):>7}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["10x10", "30x30", "6x6x6", "10x10x10", "14x14x14"])
