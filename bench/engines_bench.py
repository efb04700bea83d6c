"""The CKM count model on DuckDB and PostgreSQL against each engine's own plain GROUP BY (prints figures).

For N generated records (40 regions x 20 age groups, 8-digit record keys, cube totals: 861 cells) it builds
one dbt project per engine (the PostgreSQL one on a throwaway cluster, tests/postgres_server.py), compiles the
model {{ sdc.ckm_count(source('raw', 'bench'), ['region', 'age']) }} with dbt (the engine's own SQL through
adapter.dispatch), and times on each engine, best of R:
  plain   create table as select region, age, count(*) ... group by cube (region, age)
  ckm     create table as <the compiled ckm_count>
and prints the ratio ckm / plain per engine (the issue's target: at most 1.3). On PostgreSQL both run with
jit = off, as dbt runs the models of the sdc macros (engine_model_settings). Spark is not covered yet.

Usage: .venv/bin/python bench/engines_bench.py [N ...]      (default 1e6 1e7)
"""

import os
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dbt_project_helper import ScratchProject  # noqa: E402
from postgres_server import throwaway_postgres  # noqa: E402

REPEATS = 3
MODEL = "{{ sdc.ckm_count(source('raw', 'bench'), ['region', 'age']) }}"
PLAIN = "select region, age, count(*) as n from raw.bench group by cube (region, age)"


def generate_duckdb(path: Path, n: int) -> None:
    con = duckdb.connect(str(path))
    con.execute("create schema if not exists raw")
    con.execute(f"""create or replace table raw.bench as
        select range as id, 'r' || (hash(range * 3 + 1) % 40) as region, 'a' || (hash(range * 5 + 2) % 20) as age,
               cast(hash(range * 11 + 4) % 100000000 as bigint) as rk
        from range({n})""")
    con.execute("checkpoint")
    con.close()


def generate_postgres(server, n: int) -> None:
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute("create schema if not exists raw")
        cur.execute("drop table if exists raw.bench")
        cur.execute(f"""create table raw.bench as
            select i as id, 'r' || (abs(hashint8extended(i, 1)) % 40) as region, 'a' || (abs(hashint8extended(i, 2)) % 20) as age,
                   abs(hashint8extended(i, 4)) % 100000000 as rk
            from generate_series(0, {n} - 1) as i""")
        cur.execute("analyze raw.bench")
    conn.commit()
    conn.close()


def compiled(project: ScratchProject) -> str:
    project.sources(["bench"])
    project.model("bench_ckm", MODEL)
    result = project.dbt("seed")  # the ptable: ckm_count reads it while compiling
    if result.returncode != 0:
        raise SystemExit(result.stdout[-3000:])
    result = project.dbt("compile", "--select", "bench_ckm")
    if result.returncode != 0:
        raise SystemExit(result.stdout[-3000:])
    return project.compiled_sql("bench_ckm").split("\n", 1)[1]  # without the config line


def best(run) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder, throwaway_postgres() as server:
        folder = Path(folder)
        print(f"{os.cpu_count()} cores; DuckDB {duckdb.__version__}, PostgreSQL 15; best of {REPEATS}; "
              "40 x 20 cells, cube")
        print(f"{'records':>12} {'engine':>10} {'plain s':>9} {'ckm s':>9} {'ckm/plain':>10}")
        for n in sizes:
            duck = ScratchProject(folder / f"duck_{n}")
            generate_duckdb(duck.db, n)
            pg = ScratchProject(folder / f"pg_{n}", postgres=server)
            generate_postgres(server, n)
            sql = {"duckdb": compiled(duck), "postgres": compiled(pg)}
            con = duckdb.connect(str(duck.db))
            con.execute("set threads to " + str(os.cpu_count()))
            t_plain = best(lambda: con.execute(f"create or replace table main.t as {PLAIN}"))
            t_ckm = best(lambda: con.execute(f"create or replace table main.t as {sql['duckdb']}"))
            con.close()
            print(f"{n:>12,} {'duckdb':>10} {t_plain:>9.3f} {t_ckm:>9.3f} {t_ckm / t_plain:>10.2f}", flush=True)
            conn = server.connect()
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("set jit = off")  # as the sdc macros' models run (engine_model_settings)

                def run(query):
                    cur.execute("drop table if exists main.t")
                    cur.execute(f"create table main.t as {query}")
                t_plain = best(lambda: run(PLAIN))
                t_ckm = best(lambda: run(sql["postgres"]))
            conn.close()
            print(f"{n:>12,} {'postgres':>10} {t_plain:>9.3f} {t_ckm:>9.3f} {t_ckm / t_plain:>10.2f}", flush=True)


if __name__ == "__main__":
    main([int(float(a)) for a in sys.argv[1:]] or [10**6, 10**7])
