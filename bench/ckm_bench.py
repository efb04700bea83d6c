"""CKM cost against a plain count table (prints figures; no assertions).

For N generated microdata rows (40 regions x 20 age groups, a 0/1 fact, 8-digit record keys) it times
  plain  create table as select region, age, sum(f) ... group by rollup (region, age)
  ckm    create table as <the SQL that dbt renders for sdc.ckm_count(..., fact='f', totals='rollup')>:
         the audit table (9 columns), and the published projection (dimensions and count)
  floor  the one pass over the microdata that any CKM needs: count and key sum per finest cell, nothing else
  check  the audit SQL without its record-key range check (max key < M per cell), to price that check
on the same DuckDB database, best of R runs each, and prints the ratios to plain.
The CKM SQL is compiled by dbt once (the dbt path); timing the SQL leaves out dbt's start-up (printed
separately as the wall time of one `dbt build`).

Usage: .venv/bin/python bench/ckm_bench.py [N ...]      (default 1e6 1e7)
"""

import os
import re
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dbt_project_helper import ScratchProject  # noqa: E402

REPEATS = 7


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
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        con.execute(f"create or replace table bench_result as {sql}")
        times.append(time.perf_counter() - start)
    return min(times)


def without_key_check(sql: str) -> str:
    """The ckm_count SQL without the max-key aggregate and the check that no key reaches M."""
    sql, n = re.subn(r",\s*max\([^)]*\) as max_key", "", sql)
    sql, m = re.subn(r"\n\s*-- a key at or above M[^\n]*\n\s*and \(case when max_key >= .*? else true end\)", "", sql,
                     flags=re.S)
    if (n, m) != (1, 1):
        raise SystemExit("the key check of ckm_count was not found in the compiled SQL")
    return sql


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="sdc-bench-") as tmp:
        project = ScratchProject(Path(tmp) / "project")
        project.sources(["bench"])
        project.model("bench_ckm", "{{ sdc.ckm_count(source('raw', 'bench'), dims=['region', 'age'], fact='f', totals='rollup') }}")
        plain = "select region, age, sum(f) as n from raw.bench group by rollup (region, age)"
        floor = "select region, age, sum(f) as n, sum(rk_f) as key_sum from raw.bench group by region, age"
        # the same CKM written by hand: key sum, cell key, one range join, no checks
        by_hand = """
            with cells as (select region, age, sum(f) as n, sum(rk_f) % 100000000 as ck
                           from raw.bench group by rollup (region, age)),
                 pt as (select i, v, cast(round(p_int_lb * 1e8) as bigint) as lb, cast(round(p_int_ub * 1e8) as bigint) as ub
                        from main.sdc_ptable)
            select region, age, n + coalesce(v, 0) as n from cells
            left join pt on pt.i = least(n, 8) and ck >= pt.lb and ck < pt.ub"""
        print(f"DuckDB {duckdb.__version__}, {os.cpu_count()} cores; best of {REPEATS} runs")
        print(f"{'rows':>12} {'cells':>6} {'plain s':>9} {'floor s':>8} {'by hand s':>10} {'audit s':>9} "
              f"{'published s':>12} {'floor/plain':>12} {'hand/plain':>11} {'audit/plain':>12} {'published/plain':>16} "
              f"{'dbt build s':>12} {'key check':>10}")
        for n in sizes:
            con = duckdb.connect(str(project.db))
            generate(con, n)
            con.close()
            start = time.perf_counter()
            result = project.dbt("build", "--select", "bench_ckm", "sdc_ptable", "--indirect-selection", "cautious")
            dbt_seconds = time.perf_counter() - start
            if result.returncode != 0:
                raise SystemExit(result.stdout[-2000:])
            ckm = project.compiled_sql("bench_ckm")
            con = duckdb.connect(str(project.db))
            best_of(con, plain)  # warm the cache
            t_plain = best_of(con, plain)
            t_floor = best_of(con, floor)
            t_hand = best_of(con, by_hand)
            t_ckm = best_of(con, ckm)
            t_published = best_of(con, f'select region, age, "count" from ({ckm})')
            t_unchecked = best_of(con, without_key_check(ckm))
            cells = con.execute("select count(*) from bench_result").fetchone()[0]
            con.close()
            print(f"{n:>12,} {cells:>6} {t_plain:>9.3f} {t_floor:>8.3f} {t_hand:>10.3f} {t_ckm:>9.3f} {t_published:>12.3f} "
                  f"{t_floor / t_plain:>12.3f} {t_hand / t_plain:>11.3f} {t_ckm / t_plain:>12.3f} "
                  f"{t_published / t_plain:>16.3f} {dbt_seconds:>12.2f} {t_ckm / t_unchecked:>10.3f}")


if __name__ == "__main__":
    main([int(float(x)) for x in sys.argv[1:]] or [10**6, 10**7])
