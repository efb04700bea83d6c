"""The record key checks at 10^6 and 10^7 keys (prints figures; no assertions).

For N uniform record keys in a DuckDB table, with ONS's modulus 256 (a bin of the checks per key value) and
sdc's default 10^8 (bins of 10^5 values), it times side by side, in rounds (each round runs every variant once,
in turn, so that a busy spell of a shared machine hits all of them):
  python     record_keys.statistics: what sdc load --key-mode existing, sdc ckm and count_table check
  macro      ckm_check_record_keys rendered in this process (macro_renderer): the query that a ckm_count model
             runs before its own, with the macro's judgement
  scan       select count(*), sum(k): one pass over the keys, the floor of any check
Prints the best and median wall time of each and their ratio to the scan (median to median).

Usage: .venv/bin/python bench/record_key_checks_bench.py [N ...]      (default 1e6 1e7)
"""

import os
import statistics as stats
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from sdc.warehouse.macro_renderer import render_macro  # noqa: E402
from sdc.warehouse.record_keys import statistics  # noqa: E402

ROUNDS = 9
MODULI = (256, 10**8)


def main(sizes: list[int]) -> None:
    print(f"machine: {os.cpu_count()} cores; duckdb {duckdb.__version__}; {ROUNDS} rounds")
    print(f"{'keys':>12} {'M':>10}  {'variant':<7} {'best':>9} {'median':>9}  median / scan")
    for n in sizes:
        con = duckdb.connect()
        for modulus in MODULI:
            con.execute(f"create or replace table keys as select cast(hash(range * 7 + 1) % {modulus} as bigint) as rk "
                        f"from range({n})")
            variants = {
                "python": lambda: statistics(con, "keys", "rk", modulus),
                "macro": lambda: render_macro(con, "ckm_check_record_keys", "keys", "rk", None, modulus, "ckm_count"),
                "scan": lambda: con.execute("select count(*), sum(rk) from keys").fetchall(),
            }
            times = {name: [] for name in variants}
            for _ in range(ROUNDS):
                for name, run in variants.items():
                    start = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - start)
            scan = stats.median(times["scan"])
            for name, values in times.items():
                print(f"{n:>12,} {modulus:>10}  {name:<7} {min(values) * 1000:>7.1f}ms {stats.median(values) * 1000:>7.1f}ms"
                      f"  {stats.median(values) / scan:>5.1f}", flush=True)
        con.close()


if __name__ == "__main__":
    main([int(float(a)) for a in sys.argv[1:]] or [10**6, 10**7])
