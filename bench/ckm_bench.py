"""CKM cost against a plain CUBE count on the same data (prints figures; no assertions).

For N generated microdata rows (40 regions x 20 age groups, a 0/1 fact, 8-digit record keys) it times
  cube       create table as select region, age, sum(f) ... group by cube (region, age): the same 861 cells
  ckm        create table as <the SQL that dbt renders for sdc.ckm_count(..., fact='f')> (totals 'cube', the
             complete frame): the audit table (9 columns)
  published  the same query, only the dimensions and count kept
  floor      the one pass over the microdata that any CKM needs: count and key sum per finest cell, nothing else
  key range  ckm_count(..., check_keys=false, check_cell_keys=true): the audit SQL that looks for a key at or
             above M itself (the largest key per cell), as it does where the record key checks did not run;
             with them (ckm) every key has been seen in [0, M) before the query
on the same DuckDB database, side by side: each of R rounds runs every query once, in turn, so that a busy
spell of a shared machine hits all of them. It prints the best and the median of the R wall times, their ratios
to the cube's (best to best, median to median), and the ratio of the median CPU times (all DuckDB threads),
which the other processes of a shared machine disturb far less than the wall time.
The CKM SQL is compiled by dbt once (the dbt path); timing the SQL leaves out dbt's start-up (printed
separately as the wall time of one `dbt build`) and the record key checks, a query of their own before the
model's (README, Performance).

Usage: .venv/bin/python bench/ckm_bench.py [N ...]      (default 1e6 1e7)
"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dbt_project_helper import ScratchProject  # noqa: E402

REPEATS = 7
ROUNDS = 15


def generate(con, n: int) -> None:
    con.execute("create schema if not exists raw")
    con.execute(f"""
        create or replace table raw.bench as
        select range as id,
               'r' || (hash(range * 3 + 1) % 40) as region,
               'a' || (hash(range * 5 + 2) % 20) as age,
               cast(hash(range * 7 + 3) % 2 as tinyint) as f,
               cast(hash(range * 11 + 4) % 100000000 as bigint) as rk
        from range({n})""")
    con.execute("alter table raw.bench add column rk_f bigint")
    con.execute("update raw.bench set rk_f = rk * f")
    con.execute("checkpoint")


def best_of(con, sql: str, repeats: int = REPEATS) -> float:
    """The shortest of ``repeats`` runs of ``create table as sql`` (these machines are noisy)."""
    return min(timed(con, sql)[0] for _ in range(repeats))


def timed(con, sql: str) -> tuple[float, float]:
    """Wall and CPU seconds of ``create table as sql``."""
    wall, cpu = time.perf_counter(), time.process_time()
    con.execute(f"create or replace table bench_result as {sql}")
    return time.perf_counter() - wall, time.process_time() - cpu


def side_by_side(con, queries: dict[str, str], rounds: int = ROUNDS) -> dict[str, list[tuple[float, float]]]:
    """Every query once per round, in turn (after one warm-up run each): their times under the same load."""
    for sql in queries.values():
        timed(con, sql)
    times = {name: [] for name in queries}
    for _ in range(rounds):
        for name, sql in queries.items():
            times[name].append(timed(con, sql))
    return times


def side_by_side_header(first: str, base: str) -> str:
    return (f"{first:>12} {'query':>10} {'cells':>6} {'best s':>8} {'median s':>9} {'best/' + base:>11} "
            f"{'median/' + base:>13} {'cpu/' + base:>10}")


def print_side_by_side(label: str, times: dict[str, list[tuple[float, float]]], base: str, extra: dict) -> None:
    """One line per query: best and median wall time, their ratios to ``base``'s, the ratio of median CPU times."""
    walls = {name: [wall for wall, _ in runs] for name, runs in times.items()}
    cpus = {name: statistics.median(cpu for _, cpu in runs) for name, runs in times.items()}
    best_base, median_base = min(walls[base]), statistics.median(walls[base])
    for name, runs in walls.items():
        best, median = min(runs), statistics.median(runs)
        print(f"{label:>12} {name:>10} {extra[name]:>6} {best:>8.4f} {median:>9.4f} {best / best_base:>11.2f} "
              f"{median / median_base:>13.2f} {cpus[name] / cpus[base]:>10.2f}", flush=True)


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="sdc-bench-") as tmp:
        project = ScratchProject(Path(tmp) / "project")
        project.sources(["bench"])
        project.model("bench_ckm", "{{ sdc.ckm_count(source('raw', 'bench'), dims=['region', 'age'], fact='f') }}")
        project.model("bench_ckm_range", "{{ sdc.ckm_count(source('raw', 'bench'), dims=['region', 'age'], fact='f', "
                                         "check_keys=false, check_cell_keys=true) }}")
        cube = "select region, age, sum(f) as n from raw.bench group by cube (region, age)"
        floor = "select region, age, sum(f) as n, sum(rk_f) as key_sum from raw.bench group by region, age"
        print(f"DuckDB {duckdb.__version__}, {os.cpu_count()} cores; {ROUNDS} rounds side by side; "
              "ckm_count(fact='f') with totals 'cube', complete frame")
        print(side_by_side_header("rows", "cube"))
        for n in sizes:
            con = duckdb.connect(str(project.db))
            generate(con, n)
            con.close()
            start = time.perf_counter()
            result = project.dbt("build", "--select", "bench_ckm", "sdc_ptable", "--indirect-selection", "cautious")
            dbt_seconds = time.perf_counter() - start
            if result.returncode == 0:
                result = project.dbt("compile", "--select", "bench_ckm_range")
            if result.returncode != 0:
                raise SystemExit(result.stdout[-2000:])
            ckm = project.compiled_sql("bench_ckm")
            queries = {"cube": cube, "ckm": ckm, "published": f'select region, age, "count" from ({ckm})',
                       "floor": floor, "key range": project.compiled_sql("bench_ckm_range")}
            con = duckdb.connect(str(project.db))
            cells = {}
            for name, sql in queries.items():
                timed(con, sql)
                cells[name] = con.execute("select count(*) from bench_result").fetchone()[0]
            times = side_by_side(con, queries)
            con.close()
            print_side_by_side(f"{n:,}", times, "cube", cells)
            print(f"{n:>12,} dbt build of the model: {dbt_seconds:.2f} s (start-up, record key checks, the query)")


if __name__ == "__main__":
    main([int(float(x)) for x in sys.argv[1:]] or [10**6, 10**7])
