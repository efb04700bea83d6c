"""Microaggregation speed and information loss (prints figures; no assertions).

For n = 10^5, 10^6, 10^7 log-normal values (incomes around 10^4..10^6, in cents: x 100) it times the
optimal partition (Hansen–Mukherjee via the shortest path), the fixed-size method and Höhne's method,
each including the sort, and prints IL = 100 SSE/SST side by side. Targets: optimal on 10^6 values
<= 1 s, on 10^7 <= 10 s (2 cores).

Usage: .venv/bin/python bench/microaggregation_bench.py [n ...] [--k K]
"""

import sys
import time

import numpy as np

from sdc.microaggregation import microaggregate


def main(sizes, k):
    print(f"k = {k}")
    print(f"{'n':>10} {'optimal s':>10} {'IL %':>9} {'fixed s':>9} {'IL %':>9} {'hoehne s':>9} {'IL %':>9}")
    rng = np.random.default_rng(2026)
    for n in sizes:
        x = np.round(np.exp(rng.normal(10, 1, n)) * 100)
        sst = ((x - x.mean()) ** 2).sum()
        line = f"{n:>10}"
        for method in ("optimal", "fixed", "hoehne"):
            start = time.perf_counter()
            result = microaggregate(x, k, method)
            seconds = time.perf_counter() - start
            il = 100 * ((x - result.values) ** 2).sum() / sst
            line += f" {seconds:>9.2f} {il:>9.5f}"
        print(line, flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    k = 3
    if "--k" in args:
        i = args.index("--k")
        k = int(args[i + 1])
        del args[i:i + 2]
    main([int(float(a)) for a in args] or [10**5, 10**6, 10**7], k)
