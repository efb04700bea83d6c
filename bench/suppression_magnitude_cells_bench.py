"""The cell table of a hierarchical magnitude table (suppression_cells with a value column, no holdings): the
top-n contributions ranked among the finest cells' top n (the path since issue 36) against every record ranked in
every cell (the path before; the same table with every record a holding of its own). Prints figures; no
assertions.

Records: bench/suppression_scale_bench.py's synthetic enterprises over 3 dimensions of N nodes each (total -> 3
groups -> N - 4 leaves; N^3 cells), 20 per finest cell on average; each path runs in a process of its own (its
peak memory is its own), on DuckDB from a Parquet file, and prints cells, wall and CPU seconds and peak resident
memory.

Usage: .venv/bin/python bench/suppression_magnitude_cells_bench.py [N ...] [--new-only] [--memory-limit=3GB]
(default N = 22 46; --memory-limit: DuckDB's, beyond which it spills to disk)
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def measure(folder: str, path: str) -> None:
    """One path (new: no holding; old: one holding per record) in this process."""
    import duckdb

    from sdc.warehouse.macro_renderer import Relation, render_macro

    con = duckdb.connect()
    if len(sys.argv) > 4:  # a memory limit for DuckDB (it spills beyond it), e.g. 3GB
        con.execute(f"set memory_limit = '{sys.argv[4]}'; set temp_directory = '{folder}/spill'")
    con.execute(f"create view micro as select *, row_number() over () as record from '{folder}/micro.parquet'")
    con.execute(f"create table sdc_hierarchies as select * from '{folder}/hierarchy.parquet'")
    holding = {"new": None, "old": "record"}[path]
    sql = render_macro(con, "suppression_cells", Relation("memory", "main", "micro"), ["d0", "d1", "d2"],
                       value="turnover", holding=holding, hierarchy=Relation("memory", "main", "sdc_hierarchies"))
    wall, usage = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    (cells,) = con.execute(f"select count(*) from ({sql})").fetchone()
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    print(f"{path:<4} {cells:>10,} cells  wall {time.perf_counter() - wall:7.1f} s  CPU {cpu:7.1f} s  "
          f"peak {after.ru_maxrss / 2**20:5.2f} GB", flush=True)


def main(arguments: list[str]) -> None:
    from suppression_scale_bench import enterprises, hierarchy

    new_only = "--new-only" in arguments
    limit = next((a.split("=", 1)[1] for a in arguments if a.startswith("--memory-limit=")), None)
    sizes = [int(a) for a in arguments if not a.startswith("--")] or [22, 46]
    for nodes in sizes:
        with tempfile.TemporaryDirectory() as folder:
            micro = enterprises(["d0", "d1", "d2"], nodes)
            micro.to_parquet(f"{folder}/micro.parquet")
            hierarchy(["d0", "d1", "d2"], nodes).to_parquet(f"{folder}/hierarchy.parquet")
            print(f"N = {nodes}: {len(micro):,} records", flush=True)
            for path in ("new",) if new_only else ("new", "old"):
                subprocess.run([sys.executable, __file__, "--measure", folder, path, *([limit] if limit else [])],
                               check=False)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        measure(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1:])
