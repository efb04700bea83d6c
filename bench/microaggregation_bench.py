"""Microaggregation speed and information loss (prints figures; no assertions).

For n = 10^5, 10^6, 10^7 log-normal values (incomes around 10^4..10^6, in cents: x 100) it times the
optimal partition (Hansen–Mukherjee via the shortest path), the fixed-size method and Höhne's method,
each including the sort, and prints IL = 100 SSE/SST side by side. Targets: optimal on 10^6 values
<= 1 s, on 10^7 <= 10 s (2 cores).

Then the END-TO-END figure, the one the README quotes: the whole command as a user runs it, a separate
process timed by the wall clock (start-up, reading, sort, partition, report, writing the copy):

  sdc microaggregate --input X.parquet --out Y.parquet --column income --k 3 --method optimal
  sdc microaggregate --db X.duckdb --table raw.incomes --column income --k 3 --method optimal

on the same incomes (columns id, income, region) at 10^6 and 10^7 rows. Target: <= 15 s at 10^7 values on
2 cores. Beside the wall clock it prints the command's CPU time (user + system, all its threads) and the load
average before the run: on a machine shared with other work the wall clock grows with the load, the CPU time
much less.

Usage: .venv/bin/python bench/microaggregation_bench.py [n ...] [--k K] [--end-to-end N,N,...]
       (--end-to-end 0 skips the end-to-end runs; --end-to-end only skips the in-process table)
"""

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from sdc.microaggregation import microaggregate


def incomes(n, rng):
    return np.round(np.exp(rng.normal(10, 1, n)) * 100)


def main(sizes, k):
    print(f"k = {k}")
    print(f"{'n':>10} {'optimal s':>10} {'IL %':>9} {'fixed s':>9} {'IL %':>9} {'hoehne s':>9} {'IL %':>9}")
    rng = np.random.default_rng(2026)
    for n in sizes:
        x = incomes(n, rng)
        sst = ((x - x.mean()) ** 2).sum()
        line = f"{n:>10}"
        for method in ("optimal", "fixed", "hoehne"):
            start = time.perf_counter()
            result = microaggregate(x, k, method)
            seconds = time.perf_counter() - start
            il = 100 * ((x - result.values) ** 2).sum() / sst
            line += f" {seconds:>9.2f} {il:>9.5f}"
        print(line, flush=True)


def sdc_command():
    script = Path(sys.executable).parent / "sdc"
    if script.is_file():
        return [str(script)]
    found = shutil.which("sdc")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from sdc.cli import main; sys.exit(main())"]


def timed(argv):
    """Wall clock and CPU time (user + system of the child and its threads) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({run.returncode}):\n{run.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, run.stdout


def end_to_end(sizes, k):
    load = os.getloadavg()[0]
    print(f"\nEND-TO-END: the whole `sdc microaggregate ... --column income --k {k} --method optimal` as its own "
          f"process (start-up, read, partition, report, write)")
    print(f"machine: {os.cpu_count()} cores, DuckDB {duckdb.__version__}, numpy {np.__version__}; "
          f"load average {load:.2f} at the start")
    print(f"{'n':>10} {'path':>22} {'wall s':>8} {'cpu s':>8} {'load':>6}")
    sdc = sdc_command()
    with tempfile.TemporaryDirectory(prefix="sdc-microagg-bench-") as tmp:
        tmp = Path(tmp)
        for n in sizes:
            source, out, db = tmp / f"incomes_{n}.parquet", tmp / f"safe_{n}.parquet", tmp / f"incomes_{n}.duckdb"
            con = duckdb.connect(str(db))
            con.register("generated", {"id": np.arange(1, n + 1), "income": incomes(n, np.random.default_rng(2026)),
                                       "region": np.arange(n) % 17})
            con.execute(f"copy (select * from generated) to '{source}' (format parquet)")
            con.execute("create schema raw")
            con.execute(f"create table raw.incomes as select * from read_parquet('{source}')")
            con.close()
            common = ["--column", "income", "--k", str(k), "--method", "optimal"]
            runs = [("file (--input/--out)", [*sdc, "microaggregate", "--input", str(source), "--out", str(out),
                                              *common]),
                    ("table (--db/--table)", [*sdc, "microaggregate", "--db", str(db), "--table", "raw.incomes",
                                              *common])]
            for label, argv in runs:
                load = os.getloadavg()[0]
                wall, cpu, stdout = timed(argv)
                print(f"{n:>10} {label:>22} {wall:>8.2f} {cpu:>8.2f} {load:>6.2f}", flush=True)
            for path in (source, out, db):
                path.unlink()


if __name__ == "__main__":
    args = sys.argv[1:]
    k = 3
    e2e = [10**6, 10**7]
    only_e2e = False
    if "--k" in args:
        i = args.index("--k")
        k = int(args[i + 1])
        del args[i:i + 2]
    if "--end-to-end" in args:
        i = args.index("--end-to-end")
        value = args[i + 1]
        del args[i:i + 2]
        if value == "only":
            only_e2e = True
        else:
            e2e = [int(float(v)) for v in value.split(",") if int(float(v)) > 0]
    if not only_e2e:
        main([int(float(a)) for a in args] or [10**5, 10**6, 10**7], k)
    if e2e:
        end_to_end(e2e, k)
