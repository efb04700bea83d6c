"""Time to turn a ptable into the engine's relation (sdc.ptable.relation), against the record-by-record way
(PTable.records(): one decimal text per value, cast by DuckDB), side by side in one run (prints figures).

Tables: ONS's shipped ptable_10_5_rule.csv (750 x 256 keys, one noise per row: 751 intervals), a randomised
ONS table of the same size (bench/random_ons_ptable.py: 161 338 intervals), a randomised 4096-key table
(rows 1..50), the randomised 256-key table written as an sdc file, and a magnitude ptable set.
Columns: the file's lines, the table's intervals, reading the file (sdc.ptable.formats), reading it as a new
process does after the first (sdc.ptable.file_cache: the checked table from the user's cache folder, here one
of the bench's own), the relation on a fresh table (first), again for the same table (its columns are kept:
DuckDB's copy is all that is left), the record-by-record relation, and the ratio record-by-record / first.
Best of R runs each.

Usage: .venv/bin/python bench/ptable_relation_bench.py [R]      (default 5)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import duckdb

from random_ons_ptable import write_random_ons_ptable
from sdc.conventions import PTABLE_COLUMNS, PTABLE_SEED_COLUMN_TYPES
from sdc.ptable import file_cache
from sdc.ptable.formats import read_ptable, write_ptable
from sdc.ptable.nums import NumsPTableParams, combine, create_num_ptable
from sdc.ptable.relation import create_nums_ptable_table, create_ptable_table

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 20


def best(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1000 * min(times)


def record_by_record(con, table) -> None:
    types = [PTABLE_SEED_COLUMN_TYPES[c] for c in PTABLE_COLUMNS]
    con.execute(f"create or replace table by_record ({', '.join(f'{c} {t}' for c, t in zip(PTABLE_COLUMNS, types))})")
    records = table.records()
    values = [[str(record[c]) for record in records] for c in PTABLE_COLUMNS]
    casts = ", ".join(f"cast(unnest(${k}::varchar[]) as {t})" for k, t in enumerate(types, start=1))
    con.execute(f"insert into by_record select {casts}", values)


def main(repeats: int) -> None:
    con = duckdb.connect()
    print(f"ptable relation, best of {repeats}; goal: at most {GOAL_MS} ms for 192 000 lines")
    print(f"{'table':<28} {'lines':>8} {'intervals':>9} {'read ms':>8} {'cached ms':>9} {'first ms':>8} "
          f"{'again ms':>8} {'by record ms':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory(prefix="sdc-bench-ptable-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        random_256, random_4096, as_sdc = (Path(tmp) / name for name in ("r256.csv", "r4096.csv", "r256_sdc.csv"))
        write_random_ons_ptable(random_256)
        write_random_ons_ptable(random_4096, keys=4096, last_row=50)
        write_ptable(read_ptable(random_256)[0], as_sdc)
        files = {"ONS shipped (10_5 rule)": ROOT / "tests" / "data" / "ons" / "ptable_10_5_rule.csv",
                 "ONS random, 256 keys": random_256, "ONS random, 4096 keys": random_4096,
                 "sdc file (random 256)": as_sdc}
        for label, path in files.items():
            lines = sum(1 for _ in path.open()) - 1
            read = best(lambda: read_ptable(path), repeats)
            file_cache.read_ptable_file(path)  # stored in the cache
            cached = best(lambda: (file_cache._read.clear(), file_cache.read_ptable_file(path)), repeats)
            table = read_ptable(path)[0]
            # a fresh copy each time: its columns are not made yet
            first = best(lambda: create_ptable_table(con, "fresh", replace(table)), repeats)
            again = best(lambda: create_ptable_table(con, "again", table), repeats)
            slow = best(lambda: record_by_record(con, table), max(1, repeats // 2))
            print(f"{label:<28} {lines:>8} {len(table):>9} {read:>8.1f} {cached:>9.1f} {first:>8.1f} {again:>8.1f} "
                  f"{slow:>12.1f} {slow / first:>5.0f}x", flush=True)
    nums = combine(create_num_ptable(NumsPTableParams(D=5, V=1, step=4, icat=[1, 3, 5], optim=4)).table,
                   create_num_ptable(NumsPTableParams(D=5, V=1, step=2, type="small_cells", optim=4)).table)
    first = best(lambda: create_nums_ptable_table(con, "nums", nums), repeats)
    print(f"{'magnitude set (all + small)':<28} {'':>8} {len(nums.records()):>9} {'':>8} {'':>9} {first:>8.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
