"""Time to build count perturbation tables (prints figures; no assertions).

Usage: .venv/bin/python bench/ptable_bench.py [repeats]
"""

import statistics
import sys
import time

from sdc.ptable import PTableParams, create_ptable

CASES = [
    ("D=5, V=3, js=2", PTableParams(D=5, V=3, js=2)),
    ("D=8, V=3, js=2, pstay=0.5", PTableParams(D=8, V=3, js=2, pstay=0.5)),
    ("D=2, V=1 (allow lower variance: 20 solves in row 1)", PTableParams(D=2, V=1)),
    ("D=20, V=15, js=4, optim=4", PTableParams(D=20, V=15, js=4, optim=4)),
]


def main(repeats: int) -> None:
    print(f"{'parameters':<55} {'rows':>5} {'intervals':>9} {'median ms':>10} {'min ms':>8}")
    for label, params in CASES:
        allow = "allow" in label
        create_ptable(params, allow_lower_variance=allow)  # warm-up: imports, scipy set-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            build = create_ptable(params, allow_lower_variance=allow)
            times.append(time.perf_counter() - start)
        table = build.table
        print(
            f"{label:<55} {table.max_i + 1:>5} {len(table):>9} "
            f"{1000 * statistics.median(times):>10.1f} {1000 * min(times):>8.1f}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
