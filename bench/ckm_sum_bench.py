"""Magnitude CKM cost against the CKM count table on the same data (prints figures; no assertions).

For N generated records (3 dimensions: 60 WZ divisions x 10 regions x 5 size classes, a heavy-tailed turnover,
8-digit record keys) it times, on one DuckDB database, side by side (R rounds, each query once per round):
  plain   create table as select ..., sum(turnover) ... group by cube (wz, region, size)
  count   the SQL of sdc.ckm_count(..., totals='cube') (the published frame: every cell, empty ones too)
  sum     the SQL of sdc.ckm_sum(..., value='turnover', totals='cube') with type top_contr, top_k 3, the flex
          multiplier and separation (top 3 contributions of every cell, subtotals included, from the records)
  floor   the one pass over the records that any magnitude CKM needs: per finest cell the count, key sums,
          the exact sum and the top 3 contributions (no subtotals, no perturbation)
and prints best and median times with their ratios to count (sum / count: the issue's target is at most 2)
and the ratio of the median CPU times (ckm_bench.print_side_by_side). Then, end
to end (what a user waits for), the processes `sdc ckm` (count table) and `sdc ckm --value turnover --params`
on the same records as a Parquet file, writing the CSV table. The SQL is the macros'
own, rendered in this process (sdc.warehouse.macro_renderer: the text dbt compiles); dbt's start-up is not timed.

Usage: .venv/bin/python bench/ckm_sum_bench.py [N ...]      (default 1e6 1e7)
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import yaml

from ckm_bench import print_side_by_side, side_by_side, side_by_side_header, timed  # noqa: E402  (bench/ is the script's folder)
from sdc.warehouse.macro_renderer import render_macro
from sdc.ptable import PTableParams, create_ptable
from sdc.ptable.nums import NumsPTableParams, combine, create_num_ptable
from sdc.ptable.formats import write_ptable
from sdc.ptable.nums import write_nums_ptable
from sdc.ptable.relation import create_nums_ptable_table, create_ptable_table

SDC = Path(sys.executable).parent / "sdc"

REPEATS = 3
ROUNDS = 7
PARAMS = {"preset": "tauargus", "type": "top_contr", "top_k": 3, "separation": True,
          "multiplier": {"type": "flex", "fp": 1000, "p": [0.3, 0.03], "epsilon": [1, 0.5, 0.2], "q": 3}}


def generate(con, n: int) -> None:
    con.execute("drop table if exists micro")
    con.execute(f"""
        create table micro as
        select range as id,
               'wz' || (hash(range * 3 + 1) % 60) as wz,
               'r' || (hash(range * 5 + 2) % 10) as region,
               's' || (hash(range * 13 + 5) % 5) as size,
               round(exp(5 + 2 * ((hash(range * 7 + 3) % 1000000) / 1000000.0 - 0.5) * 3), 2) as turnover,
               cast(hash(range * 11 + 4) % 100000000 as bigint) as rk
        from range({n})""")
    con.execute("checkpoint")


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        con = duckdb.connect(str(Path(folder) / "bench.duckdb"))
        counts_ptable = create_ptable(PTableParams(D=5, V=3, js=2, pstay=0.5)).table
        create_ptable_table(con, "cnt_ptable", counts_ptable)
        nums = combine(create_num_ptable(NumsPTableParams(D=5, V=1, icat=[1, 5])).table,
                       create_num_ptable(NumsPTableParams(D=5, V=1, step=5, icat=[1, 3, 5], optim=[4, 1, 1],
                                                          type="small_cells")).table)
        create_nums_ptable_table(con, "nums_ptable", nums)
        files = Path(folder)
        write_ptable(counts_ptable, files / "counts.csv")
        write_nums_ptable(nums, files / "nums.csv")
        (files / "params.yml").write_text(yaml.safe_dump({**PARAMS, "ptable": "nums.csv"}))
        dims = ["wz", "region", "size"]
        generate(con, 1000)  # the macros read the relation's columns while rendering
        count_sql = render_macro(con, "ckm_count", "micro", dims, ptable="cnt_ptable", check_keys=False)
        sum_sql = render_macro(con, "ckm_sum", "micro", dims, value="turnover", params=PARAMS,
                               ptable="nums_ptable", check_keys=False)
        plain_sql = "select wz, region, size, sum(turnover) as value from micro group by cube (wz, region, size)"
        floor_sql = ("select wz, region, size, count(*) as n, sum(rk) as keys, max(rk) as max_key, "
                     "sum(rk) filter (where turnover = 0) as zero_keys, sum(cast(turnover as decimal(18, 6))) as s, "
                     "count(*) filter (where turnover <> 0) as contributors, "
                     "max(abs(turnover), 3) filter (where turnover <> 0) as top from micro group by wz, region, size")
        print(f"DuckDB {duckdb.__version__}, {os.cpu_count()} cores, {ROUNDS} rounds side by side; 3 dimensions "
              "(60 x 10 x 5), cube; ckm_sum: top_contr, top_k 3, flex, separation")
        print(side_by_side_header("records", "count"))
        for n in sizes:
            generate(con, n)
            queries = {"plain": plain_sql, "count": count_sql, "floor": floor_sql, "sum": sum_sql}
            cells = {}
            for name, sql in queries.items():
                timed(con, sql)
                cells[name] = con.execute("select count(*) from bench_result").fetchone()[0]
            print_side_by_side(f"{n:,}", side_by_side(con, queries, ROUNDS), "count", cells)
            con.execute(f"copy micro to '{files / f'micro_{n}.parquet'}' (format parquet)")
        con.close()
        print("end to end, processes (read Parquet, protect, write CSV):")
        print(f"{'records':>12} {'sdc ckm s':>10} {'--value s':>10} {'ratio':>6}")
        for n in sizes:
            common = ["ckm", "--input", str(files / f"micro_{n}.parquet"), "--dims", "wz,region,size",
                      "--record-key", "rk", "--key-digits", "8"]
            count = best_process(common + ["--ptable", str(files / "counts.csv"), "--out", str(files / "c.csv")])
            summed = best_process(common + ["--value", "turnover", "--params", str(files / "params.yml"),
                                            "--out", str(files / "s.csv")])
            print(f"{n:>12,} {count:>10.2f} {summed:>10.2f} {summed / count:>6.2f}", flush=True)


def best_process(args: list[str]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        subprocess.run([str(SDC), *args], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


if __name__ == "__main__":
    main([int(float(a)) for a in sys.argv[1:]] or [10**6, 10**7])
