"""The cell table of cell suppression for a count table against the CKM count table of the same records (prints
figures; no assertions). New-user trial D17: suppression_cells ranked every record as a contributor, 9.9 s and
3.5 GB at 2.2 million records against 0.19 s for ckm_count; a count table is now aggregated to its cells first.

Records: region (4 codes) x education (6) x race (3), uniform record keys, in an in-memory DuckDB; both macros
rendered by sdc's renderer, each query run once after a warm-up run. Prints records, cells and seconds of
suppression_cells (no value), of suppression_cells with a value of 1 per record (the per-record path the count
table used before), and of ckm_count.

Usage: .venv/bin/python bench/suppression_cells_bench.py [records ...]     (default 2.2e6)
"""

import sys
import time

import duckdb

from sdc.warehouse.macro_renderer import render_macro
from sdc.ptable import PTableParams, create_ptable
from sdc.ptable.relation import create_ptable_table

DIMS = ["region", "education", "race"]


def timed(con, sql: str) -> tuple[int, float]:
    con.execute(f"select count(*) from ({sql})").fetchall()  # warm-up
    start = time.perf_counter()
    (cells,) = con.execute(f"select count(*) from ({sql})").fetchone()
    return cells, time.perf_counter() - start


def main(sizes: list[int]) -> None:
    print("records    cells  suppression_cells  per-record path  ckm_count")
    for n in sizes:
        con = duckdb.connect()
        con.execute(f"""create table persons as select
            ['northeast', 'south', 'west', 'central'][1 + (i % 4)] as region,
            ['<9years', '9-11years', '12years', '13-15years', '16years', '>16years'][1 + cast(hash(i) % 6 as bigint)] as education,
            ['white', 'black', 'other'][1 + cast(hash(i + 1) % 3 as bigint)] as race,
            1 as one,
            cast(hash(i + 2) % 100000000 as bigint) as rk
            from range({n}) as t(i)""")
        create_ptable_table(con, "sdc_ptable", create_ptable(PTableParams(D=3, V=2, js=1)).table)
        counted = render_macro(con, "suppression_cells", "persons", DIMS)
        per_record = render_macro(con, "suppression_cells", "persons", DIMS, value="one")
        ckm = render_macro(con, "ckm_count", "persons", DIMS, ptable="sdc_ptable", check_keys=False)
        cells, t_counted = timed(con, counted)
        _, t_per_record = timed(con, per_record)
        _, t_ckm = timed(con, ckm)
        print(f"{n:>9,} {cells:>6} {t_counted:>15.3f} s {t_per_record:>14.3f} s {t_ckm:>8.3f} s")
        con.close()


if __name__ == "__main__":
    main([int(float(x)) for x in sys.argv[1:]] or [2_200_000])
