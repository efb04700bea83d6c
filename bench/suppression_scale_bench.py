"""Cell suppression of hierarchical magnitude tables at scale, end to end (prints figures; no assertions).

Synthetic enterprises: every dimension has a hierarchy total -> 3 groups -> leaves (N nodes per dimension), so a
d-dimensional table has N^d cells (3-D: N = 10, 22, 46, 100 give 1,000, 10,648, 97,336 and 10^6 cells; 4-D: N = 10,
18 give 10^4 and 104,976). 20 enterprises per inner cell on average (leaves of
log-normal size), turnover log-normal, rules p:10 and nk:2,85
(and freq:3). Each size runs suppressed_table (heuristic) as `sdc suppress` does: the publishable table (the
primary cells' audit intervals only) and, with --audit-layout, the audit layout (every suppressed cell's
interval), and prints cells, primaries, secondaries, wall and CPU seconds (this process and its threads) and the
peak resident memory, then how the CPU time grows from one size to the next. ``--linked T``: T tables of N^d
cells each over d + 1 dimensions of one microdata, protected together (suppressed_linked_tables). ``--method``:
heuristic (default), optimal, hypercube or gauss. At 10^6 cells, SDC_DUCKDB_MEMORY_LIMIT=3GB keeps the cell table's
DuckDB within 3 GB.

Usage: .venv/bin/python bench/suppression_scale_bench.py [--dims 3] [--nodes 10 22] [--audit-layout] [--linked 3]
       [--method hypercube | --method gauss,heuristic,hypercube] [--counts] [--records-per-cell 20]
  --method with several methods runs each on the same tables in one run; --counts protects count tables under
  freq:3 (the drawn enterprises counted) instead of their turnover; --records-per-cell: fewer records per inner
  cell give more primaries (the default 20 gives 3-4 % under freq:3 in 4-D).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

GROUPS = 3
RECORDS_PER_CELL = 20


def hierarchy(dims: list[str], nodes: int) -> pd.DataFrame:
    leaves = nodes - 1 - GROUPS
    rows = []
    for d in dims:
        rows += [(d, "T", "")] + [(d, f"g{g}", "T") for g in range(GROUPS)]
        rows += [(d, f"{d}{i:03d}", f"g{i % GROUPS}") for i in range(leaves)]
    return pd.DataFrame(rows, columns=["dimension", "code", "parent"])


def enterprises(dims: list[str], nodes: int, seed: int = 1, records_per_cell: float = RECORDS_PER_CELL) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    leaves = nodes - 1 - GROUPS
    inner = leaves ** len(dims)
    n = int(records_per_cell * inner)
    # leaves of unequal size (a few large activities, many small ones), so that the inner cells range from
    # empty and dominated to large
    weights = rng.lognormal(0, 1, leaves)
    codes = {d: np.char.add(d, np.char.zfill(rng.choice(leaves, n, p=weights / weights.sum()).astype(str), 3))
             for d in dims}
    return pd.DataFrame({**codes, "turnover": np.round(rng.lognormal(7, 1.5, n))})


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run(label: str, work) -> tuple[int, float]:
    """Run ``work`` and print its figures; returns (cells, CPU seconds)."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    tables = work()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    frames = tables.values() if isinstance(tables, dict) else [tables]
    cells = sum(len(t) for t in frames)
    hidden = sum(int(t.status.isin(["primary", "secondary"]).sum() if "status" in t else t.published_value.isna().sum())
                 for t in frames)
    # only the audit layout says which cells are primary (the publishable table has no status column)
    primaries = (f"{sum(int((t.status == 'primary').sum()) for t in frames):>6,}"
                 if all("status" in t for t in frames) else f"{'—':>6}")
    print(f"{label:<44} {cells:>9,} cells {primaries} primaries {hidden:>7,} suppressed  wall {wall:7.1f} s  "
          f"CPU {cpu:7.1f} s  "
          f"peak {peak_gb():5.2f} GB", flush=True)
    return cells, cpu


def print_growth(figures: list[tuple[int, float]]) -> None:
    """How the CPU time grows with the cells from one size to the next (x1 per x1: linear)."""
    for (cells_a, cpu_a), (cells_b, cpu_b) in zip(figures, figures[1:]):
        print(f"growth {cells_a:,} -> {cells_b:,} cells: cells x{cells_b / cells_a:.1f}, "
              f"CPU x{cpu_b / max(cpu_a, 1e-9):.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", type=int, default=3)
    parser.add_argument("--nodes", type=int, nargs="+", default=[10, 22])
    parser.add_argument("--audit-layout", action="store_true")
    parser.add_argument("--linked", type=int, default=0)
    parser.add_argument("--method", default="heuristic",
                        help="one method or several (gauss,heuristic,hypercube: each in turn on the same tables)")
    parser.add_argument("--counts", action="store_true", help="count tables under freq:3 instead of turnover")
    parser.add_argument("--records-per-cell", type=float, default=RECORDS_PER_CELL,
                        help="records per inner cell on average (fewer: more primaries under freq:3)")
    args = parser.parse_args()
    from sdc.suppression import suppressed_linked_tables, suppressed_table

    rules = ["freq:3"] if args.counts else ["freq:3", "p:10", "nk:2,85"]
    methods = args.method.split(",")
    print(f"{os.cpu_count()} CPUs; {'counts' if args.counts else 'turnover'}; rules {', '.join(rules)}; "
          f"method {', '.join(methods)} (peak: of the process so far)", flush=True)
    figures = {method: [] for method in methods}
    for nodes in args.nodes:
        names = [f"d{k}" for k in range(args.dims + (1 if args.linked else 0))]
        micro = enterprises(names, nodes, records_per_cell=args.records_per_cell)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "micro.parquet"
            micro.to_parquet(path)
            h = hierarchy(names, nodes)
            for method in methods:
                options = dict(hierarchy=h, value=None if args.counts else "turnover", method=method,
                               audit=args.audit_layout)
                shown = f" {method}" if len(methods) > 1 else ""
                if args.linked:
                    tables = [names[:k] + names[k + 1:] for k in range(args.linked)]
                    figures[method].append(run(f"{args.linked} linked {args.dims}-D tables, N={nodes}{shown}",
                                               lambda: suppressed_linked_tables(path, tables, rules, **options)))
                else:
                    layout = " (audit layout)" if args.audit_layout else ""
                    figures[method].append(run(f"{args.dims}-D, N={nodes}{layout}{shown}",
                                               lambda: suppressed_table(path, names, rules, **options)))
    for method in methods:
        print_growth(figures[method])


if __name__ == "__main__":
    sys.exit(main())
