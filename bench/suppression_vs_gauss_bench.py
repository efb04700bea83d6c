"""sdc's secondary suppression methods beside GaussSuppression's stored results on the same tables (issue 50; prints
figures, no assertions): GaussSuppression's example of two linked tables (LT-1, and LT-2 with the interval option
range:4), a 3-D count table of about 10^4 cells and, with --linked, three linked 4-D count tables of about 3 x 10^4.

The table: bench/suppression_scale_bench.py's 3-D count table, N = 22 (every dimension Total -> 3 groups -> 18
leaves, leaves of log-normal weight, about 20 records per inner cell, seed 1: 10,554 non-empty cells), rule freq:3.
GaussSuppression (R) ran on it once, by bench/gauss_reference/run_gausssuppression.R; its suppressed cells are
stored in bench/gauss_reference/counts_3d_n22_pattern.csv and its figures in counts.csv (with its interval
requirement protectionLimit = 1, by Rglpk, it keeps the same pattern). The bench prints, in one
run, each sdc method's suppressed cells and CPU seconds, the stored figures, and sdc's audit of GaussSuppression's
pattern: sdc's requirement (each primary at least ±1 from its value, an attacker who knows that a suppressed count
cell holds at least one record, and that cells are whole numbers) is stricter than GaussSuppression's default
(no cell exactly disclosed), so the audit says how many of its primaries fall short. For a like-for-like count,
the bench then brings GaussSuppression's stored pattern to sdc's requirement (sdc's heuristic from its cells, then
the pruning and the integer check; audited) and prints that count beside sdc's methods.

With --large, the issue's large tables follow, each in its own process (so that its peak memory is its own) by
bench/suppression_scale_bench.py under the default method: a 4-D turnover table of about 10^5 cells, a dense 4-D
count table (about 11 % primaries) of about 10^5, and the 3-D turnover and dense count tables of about 10^6
(GaussSuppression did not finish the dense 4-D table in 15 minutes; no count of it is stored).

Usage: .venv/bin/python bench/suppression_vs_gauss_bench.py [--methods auto,gauss,heuristic,hypercube] [--linked]
       [--large]
       .venv/bin/python bench/suppression_vs_gauss_bench.py --inputs DIR   (the R script's inputs, then stop)
       .venv/bin/python bench/suppression_vs_gauss_bench.py --linked-inputs DIR   (the same for the linked tables)
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suppression_scale_bench import cpu_seconds, enterprises, hierarchy  # noqa: E402

REFERENCE = Path(__file__).resolve().parent / "gauss_reference"
LT1 = Path(__file__).resolve().parents[1] / "tests" / "data" / "linked_example1.csv"
DIMS, NODES, RULES = ["d0", "d1", "d2"], 22, ["freq:3"]
# three linked 4-D tables over five dimensions, N = 10 (Total -> 3 groups -> 6 leaves): every two tables share a
# 3-D margin, all three the 2-D margins of d0 x d1
LINKED_DIMS, LINKED_NODES = ["d0", "d1", "d2", "d3", "d4"], 10
LINKED_TABLES = [["d0", "d1", "d2", "d3"], ["d0", "d1", "d2", "d4"], ["d0", "d1", "d3", "d4"]]


def write_inputs(folder: Path, micro: pd.DataFrame, h: pd.DataFrame) -> None:
    """micro.csv and hierarchy.csv (mapsFrom, mapsTo, level) for run_gausssuppression.R."""
    folder.mkdir(parents=True, exist_ok=True)
    micro.to_csv(folder / "micro.csv", index=False)
    rows = [(r.dimension, r.code, r.parent, 1 if r.code.startswith(r.dimension) else 2)
            for r in h.itertuples() if r.parent]
    pd.DataFrame(rows, columns=["dim", "mapsFrom", "mapsTo", "level"]).to_csv(folder / "hierarchy.csv", index=False)


def write_linked_inputs(folder: Path) -> None:
    """run_gausssuppression_linked.R's inputs: micro.csv, hierarchy.csv and tables.csv (one table per line)."""
    micro = enterprises(LINKED_DIMS, LINKED_NODES).drop(columns="turnover")
    write_inputs(folder, micro, hierarchy(LINKED_DIMS, LINKED_NODES))
    (folder / "tables.csv").write_text("".join(",".join(t) + "\n" for t in LINKED_TABLES))


def audit_reference(table: pd.DataFrame, h: pd.DataFrame) -> str:
    """sdc's audit (LP and integer check) of GaussSuppression's stored pattern on sdc's cells of the table."""
    from sdc.suppression.pipeline import audit_cells_file

    stored = pd.read_csv(REFERENCE / "counts_3d_n22_pattern.csv", dtype={d: str for d in DIMS})
    status = {tuple(r[:3]): r[4] for r in stored.itertuples(index=False)}
    cells = table[DIMS + ["freq"]].copy()
    cells["status"] = [status.get(tuple(r), "published") for r in table[DIMS].itertuples(index=False)]
    cells["protection_lower"] = cells["protection_upper"] = (cells.status == "primary").astype(int)
    with tempfile.TemporaryDirectory() as folder:
        cells.to_csv(Path(folder) / "cells.csv", index=False)
        h.to_csv(Path(folder) / "hierarchy.csv", index=False)
        _, lines = audit_cells_file(Path(folder) / "cells.csv", Path(folder) / "hierarchy.csv")
    return lines[-1]


def completed_reference(micro: pd.DataFrame, h: pd.DataFrame, rules: list[str], value: str | None,
                        stored: Path) -> str:
    """GaussSuppression's stored pattern brought to sdc's requirement, like for like: its suppressed cells as the
    start of sdc's heuristic (which adds what the intervals need), then sdc's pruning and integer check, and the
    audit; the suppressed cells and CPU seconds of that completion."""
    import numpy as np

    from sdc.suppression import SuppressionProblem
    from sdc.suppression.audit import audit_pattern
    from sdc.suppression.heuristic import heuristic_pattern, integer_safe_pattern, prune_pattern
    from sdc.suppression.pipeline import _cells_and_relations

    cells, relations = _cells_and_relations(micro, DIMS, rules, h, value, None, "handbook")
    problem = SuppressionProblem.from_cells(cells, relations, magnitude=value is not None, dims=DIMS)
    pattern = pd.read_csv(stored, dtype={d: str for d in DIMS})
    hidden = {tuple(r[:3]) for r in pattern.itertuples(index=False) if r[-1] in ("primary", "secondary")}
    start = np.array([tuple(c[d] for d in DIMS) in hidden for c in cells])
    cpu = cpu_seconds()
    suppressed = prune_pattern(problem, heuristic_pattern(problem, start=start))
    if problem.integer:
        suppressed, _ = integer_safe_pattern(problem, suppressed)
    cpu = cpu_seconds() - cpu
    audit = audit_pattern(problem.values, suppressed, problem.constraint_lists(), sensitive=problem.primary,
                          protection_lower=problem.protection_lower, protection_upper=problem.protection_upper,
                          lower=problem.lower, upper=problem.upper, integer=problem.integer,
                          only=np.flatnonzero(problem.primary))
    return (f"{int(suppressed.sum()):,} suppressed ({len(hidden):,} stored, completed and pruned by sdc) in "
            f"{cpu:.1f} CPU s; audit {'passed' if audit.passed else 'FAILED'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--methods", default="auto,gauss,heuristic,hypercube")
    parser.add_argument("--inputs", type=Path, help="write the R script's inputs into this folder and stop")
    parser.add_argument("--linked-inputs", type=Path, help="write the linked R script's inputs here and stop")
    parser.add_argument("--linked", action="store_true", help="also the three linked 4-D tables (minutes)")
    parser.add_argument("--large", action="store_true", help="also the tables of 10^5 and 10^6 cells (about 10 min)")
    parser.add_argument("--magnitude-inputs", type=Path, help="write the p %% R script's inputs here and stop")
    args = parser.parse_args()
    if args.linked_inputs:
        write_linked_inputs(args.linked_inputs)
        return
    if args.magnitude_inputs:
        write_inputs(args.magnitude_inputs, enterprises(DIMS, NODES), hierarchy(DIMS, NODES))
        return
    from sdc.suppression import suppressed_table

    lt1(args.methods.split(",") + ["optimal"])
    micro, h = enterprises(DIMS, NODES).drop(columns="turnover"), hierarchy(DIMS, NODES)
    if args.inputs:
        write_inputs(args.inputs, micro, h)
        return
    print(f"3-D count table, N = {NODES}, rule {', '.join(RULES)}; 2 cores; CPU seconds of this process", flush=True)
    table = None
    for method in args.methods.split(","):
        cpu, wall = cpu_seconds(), time.perf_counter()
        table = suppressed_table(micro, DIMS, RULES, hierarchy=h, method=method, audit=True)
        suppressed = int(table.status.isin(["primary", "secondary"]).sum())
        print(f"  sdc {method:<10} {len(table):>7,} cells {int((table.status == 'primary').sum()):>5} primaries "
              f"{suppressed:>6,} suppressed  CPU {cpu_seconds() - cpu:6.1f} s  wall {time.perf_counter() - wall:6.1f} s",
              flush=True)
    with (REFERENCE / "counts.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            print(f"  stored: {row['case']}: {int(row['suppressed']):,} suppressed of {int(row['cells']):,} cells "
                  f"({row['primaries']} primaries), CPU {row['cpu_seconds'] or '-'} s; {row['tool']}; "
                  f"requirement: {row['requirement']}")
    print(f"  sdc's audit of GaussSuppression's 3-D pattern: {audit_reference(table, h)}", flush=True)
    completed = completed_reference(micro, h, RULES, None, REFERENCE / "counts_3d_n22_pattern.csv")
    print(f"  GaussSuppression's 3-D pattern at sdc's requirement: {completed}", flush=True)
    magnitude(args.methods.split(","))
    if args.linked:
        linked(args.methods.split(","))
    if args.large:
        large()


def audit_linked_reference(micro: pd.DataFrame, h: pd.DataFrame) -> str:
    """sdc's verdict on GaussSuppression's stored linked pattern: the pattern as the last release's cells
    (a-priori), every cell it published forced published, and the heuristic asked to protect the primaries from
    there; the cells that no pattern can then protect fall short of sdc's requirement."""
    import re

    from sdc.errors import SdcError
    from sdc.suppression import suppressed_linked_tables

    stored = pd.read_csv(REFERENCE / "counts_linked_4d_n10_pattern.csv", dtype=str)
    hidden = {tuple(r) for r in stored[LINKED_DIMS].itertuples(index=False)}
    base = suppressed_linked_tables(micro, LINKED_TABLES, RULES, hierarchy=h, method="hypercube", audit=True)
    a_priori = {}
    for (name, table), dims in zip(base.items(), LINKED_TABLES):
        keys = [tuple(r[d] if d in dims else "T" for d in LINKED_DIMS) for r in table.to_dict("records")]
        cells = table[dims].copy()
        cells["status"] = ["suppressed" if k in hidden else "published" for k in keys]
        cells["value"] = table["freq"]
        a_priori[name] = cells
    try:
        suppressed_linked_tables(micro, LINKED_TABLES, RULES, hierarchy=h, method="heuristic", a_priori=a_priori)
    except SdcError as refused:
        short = len(re.findall(r"\(d0=", str(refused)))
        return f"{short} of its primaries cannot reach sdc's protection interval: {refused}"
    return "every primary reaches sdc's protection interval"


def magnitude(methods: list[str]) -> None:
    """The 3-D turnover table under the p % rule alone (p:10, each record a contributor): each method's suppressed
    cells and CPU seconds, and sdc's audit of GaussSuppression's stored pattern (SuppressDominantCells,
    pPercent = 10) on sdc's cells and protection levels."""
    from sdc.suppression import suppressed_table
    from sdc.suppression.pipeline import audit_cells_file

    micro, h = enterprises(DIMS, NODES), hierarchy(DIMS, NODES)
    print(f"3-D turnover table, N = {NODES}, rule p:10", flush=True)
    table = None
    for method in methods:
        cpu, wall = cpu_seconds(), time.perf_counter()
        table = suppressed_table(micro, DIMS, ["p:10"], hierarchy=h, value="turnover", method=method, audit=True)
        print(f"  sdc {method:<10} {len(table):>7,} cells {int((table.status == 'primary').sum()):>5} primaries "
              f"{int(table.status.isin(['primary', 'secondary']).sum()):>6,} suppressed  CPU {cpu_seconds() - cpu:6.1f} s"
              f"  wall {time.perf_counter() - wall:6.1f} s", flush=True)
    stored = pd.read_csv(REFERENCE / "turnover_3d_n22_p10_pattern.csv", dtype={d: str for d in DIMS})
    status = {tuple(r[:3]): r[-1] for r in stored.itertuples(index=False)}
    cells = table[DIMS + ["freq", "value", "protection_lower", "protection_upper"]].copy()
    cells["status"] = [status.get(tuple(r), "published") for r in table[DIMS].itertuples(index=False)]
    with tempfile.TemporaryDirectory() as folder:
        cells.to_csv(Path(folder) / "cells.csv", index=False)
        h.to_csv(Path(folder) / "hierarchy.csv", index=False)
        _, lines = audit_cells_file(Path(folder) / "cells.csv", Path(folder) / "hierarchy.csv")
    print(f"  sdc's audit of GaussSuppression's p % pattern: {lines[-1]}", flush=True)
    completed = completed_reference(micro, h, ["p:10"], "turnover", REFERENCE / "turnover_3d_n22_p10_pattern.csv")
    print(f"  GaussSuppression's p % pattern at sdc's requirement: {completed}", flush=True)


def lt1(methods: list[str]) -> None:
    """GaussSuppression's example of two linked tables (tests/data/linked_example1.csv, LT-1), freq:3, and with the
    option range:4 (LT-2, its rangeMin = 4): each method's suppressed cells (counted once per table)."""
    from sdc.suppression import suppressed_linked_tables

    rows = pd.read_csv(LT1, dtype={"year": str})
    micro = rows.loc[rows.index.repeat(rows.freq)].drop(columns="freq").reset_index(drop=True)
    print("LT-1: two linked tables (age x eu x year, geo x year), freq:3; LT-2: with range:4", flush=True)
    for method in methods:
        found = []
        for rules in (RULES, RULES + ["range:4"]):
            tables = suppressed_linked_tables(micro, [["age", "eu", "year"], ["geo", "year"]], rules, method=method,
                                              audit=True)
            found.append(sum(int(t.status.isin(["primary", "secondary"]).sum()) for t in tables.values()))
        print(f"  sdc {method:<10} LT-1 {found[0]:>3} suppressed   LT-2 {found[1]:>3} suppressed", flush=True)


def linked(methods: list[str]) -> None:
    """The three linked 4-D tables: each method's suppressed cells (a cell that several tables show, counted once
    per table, as GaussSuppression counts its output rows) and CPU seconds."""
    from sdc.suppression import suppressed_linked_tables

    micro = enterprises(LINKED_DIMS, LINKED_NODES).drop(columns="turnover")
    h = hierarchy(LINKED_DIMS, LINKED_NODES)
    leaves = LINKED_NODES - 4
    print(f"three linked 4-D count tables ({'; '.join(' x '.join(t) for t in LINKED_TABLES)}), N = {LINKED_NODES}, "
          f"{len(micro):,} records ({len(micro.drop_duplicates()):,} distinct leaf combinations of "
          f"{leaves ** len(LINKED_DIMS):,}: dimensions drawn independently), rule {', '.join(RULES)}", flush=True)
    for method in methods:
        cpu, wall = cpu_seconds(), time.perf_counter()
        tables = suppressed_linked_tables(micro, LINKED_TABLES, RULES, hierarchy=h, method=method, audit=True)
        cells = sum(len(t) for t in tables.values())
        primaries = sum(int((t.status == "primary").sum()) for t in tables.values())
        suppressed = sum(int(t.status.isin(["primary", "secondary"]).sum()) for t in tables.values())
        print(f"  sdc {method:<10} {cells:>7,} cells {primaries:>5} primaries {suppressed:>6,} suppressed  "
              f"CPU {cpu_seconds() - cpu:6.1f} s  wall {time.perf_counter() - wall:6.1f} s", flush=True)
    print(f"  sdc's verdict on GaussSuppression's stored linked pattern: {audit_linked_reference(micro, h)}", flush=True)


# (dimensions, N, count table, records per inner cell): every dimension Total -> 3 groups -> N - 4 leaves; the
# 4-D count table with 6 records per inner cell has about 11 % primaries, the 3-D one with 20 about 15 %
LARGE_TABLES = [(4, 18, False, 20), (4, 18, True, 6), (3, 100, False, 20), (3, 100, True, 20)]
# DuckDB's share of the memory when it builds the cells of 17.7 million records: as much as it may take (80 % of
# the machine's) unless limited, so the bench limits it as an office would (it spills beyond)
LARGE_DUCKDB_MEMORY = "3GB"


def large() -> None:
    """The tables of 10^5 and 10^6 cells under the default method, each by suppression_scale_bench.py in a process
    of its own; its figure lines as they come."""
    import os
    import subprocess

    from sdc.conventions import MEMORY_LIMIT_ENV

    scale = Path(__file__).resolve().parent / "suppression_scale_bench.py"
    env = {**os.environ, MEMORY_LIMIT_ENV: os.environ.get(MEMORY_LIMIT_ENV, LARGE_DUCKDB_MEMORY)}
    print(f"large tables, method auto, {MEMORY_LIMIT_ENV}={env[MEMORY_LIMIT_ENV]}", flush=True)
    for dims, nodes, counts, records in LARGE_TABLES:
        command = [sys.executable, str(scale), "--dims", str(dims), "--nodes", str(nodes), "--method", "auto",
                   "--records-per-cell", str(records)] + (["--counts"] if counts else [])
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        kind = (f"counts, freq:3, {records} records per inner cell" if counts
                else "turnover, freq:3, p:10, nk:2,85")
        for line in done.stdout.splitlines():
            if line.startswith(f"{dims}-D"):
                print(f"  {kind}: {line}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
