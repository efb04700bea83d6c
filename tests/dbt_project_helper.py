"""A throwaway dbt project with the package's macros as its own, for tests of the SQL path."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sdc.warehouse.scratch import PROFILES_YAML, package_dir, project_yaml

REPO = Path(__file__).parent.parent
DEMO = REPO / "demo"
DEMO_PTABLE = DEMO / "seeds" / "sdc_ptable.csv"
DBT = Path(sys.executable).parent / "dbt"


def install_demo_packages() -> None:
    """``dbt deps`` for the demo project, once: the tests that build the demo run in parallel workers, and a
    ``dbt deps`` recreates demo/dbt_packages while another worker's dbt may be parsing it (a doc block of the
    package then goes missing). One worker installs under a lock; the others find the link in place."""
    lock = Path(tempfile.gettempdir()) / f"sdc-demo-deps-{hashlib.sha1(str(DEMO).encode()).hexdigest()[:12]}.lock"
    link = DEMO / "dbt_packages" / "sdc"
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if link.exists() and link.resolve() == REPO.resolve():
            return
        subprocess.run([str(DBT), "deps"], cwd=DEMO, env=dict(os.environ, DBT_PROFILES_DIR=str(DEMO)),
                       capture_output=True, check=True, timeout=300)


SPARK_PROFILE = """sdc_scratch:
  target: spark
  outputs:
    spark:
      type: spark
      method: session
      host: NA
      schema: {schema}
      threads: 1
      server_side_parameters:
{parameters}"""
# a local session of its own; on a Spark Connect server (tests/spark_server.py) only the per-session part
SPARK_SESSION = {"spark.master": "local[2]", "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
                 "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
                 "spark.sql.variable.substitute": "false"}


def spark_parameters(parameters: dict, remote: str | None, indent: int = 8) -> str:
    """server_side_parameters as YAML lines: all of them for a session of its own, the per-session ones for a
    session on the server ``remote``."""
    from spark_server import session_parameters

    chosen = session_parameters(parameters) if remote else parameters
    return "".join(f'{" " * indent}{k}: "{v}"\n' for k, v in chosen.items())


def dbt_in_process(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """``dbt *args`` as the command line runs it in ``cwd`` with the environment ``env`` (its console output, its
    exit code: 0, 1 for failed nodes, 2 for an error), invoked in this process: a dbt process spends ~1.5 s of
    CPU importing dbt before it starts, which was the larger part of most test runs. Afterwards the adapter
    is reset and DuckDB's file closed, so the test reads it as a dbt process would have left it.

    dbt's caches for in-process test suites are on (``enable_test_caching``, as dbt's own pytest fixtures set it):
    the Jinja parse of a macro file, keyed by its text, is kept for the next run; a project's full parse
    then takes ~1 s instead of ~6 s, of which the package's 700 macros parsed twice were nearly all."""
    import gc
    import io

    from dbt.adapters.factory import reset_adapters
    from dbt.cli.main import dbtRunner
    from dbt_common.events.functions import capture_stdout_logs, stop_capture_stdout_logs
    from dbt_common.tests import enable_test_caching

    enable_test_caching()

    saved_env, saved_cwd, output = dict(os.environ), os.getcwd(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    capture_stdout_logs(output)
    try:
        result = dbtRunner().invoke(args)
    finally:
        stop_capture_stdout_logs()
        reset_adapters()
        if "dbt.adapters.duckdb.connections" in sys.modules:  # its database stays open in the process otherwise
            sys.modules["dbt.adapters.duckdb.connections"].DuckDBConnectionManager.close_all_connections()
        gc.collect()
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    code = 0 if result.success else 2 if result.exception is not None else 1
    return subprocess.CompletedProcess([str(DBT), *args], code, output.getvalue(), "")


class ScratchProject:
    """With ``postgres`` (a tests/postgres_server.PostgresServer) the project builds on that server, in a schema
    of its own (``schema``), and runs the package's on-run-start hook (engine_setup) as a project using sdc
    as a package would."""

    def __init__(self, root: Path, postgres=None, schema: str = "main", spark: bool = False,
                 spark_remote: str | None = None):
        self.root = root
        self.spark_remote = spark_remote  # sc://... of a Spark Connect server that holds this project's catalog
        self.db = root / "warehouse.duckdb"
        self.postgres, self.schema, self.spark = postgres, schema, spark
        root.mkdir(parents=True, exist_ok=True)
        if spark:  # a local Spark session of dbt's own (its metastore and warehouse in this folder)
            # Spark's varchar needs a length: the hierarchy seed's text columns as string
            (root / "dbt_project.yml").write_text(project_yaml().replace("varchar", "string")
                                                  + 'on-run-start: ["{{ sdc.engine_setup() }}"]\n')
            (root / "profiles.yml").write_text(
                SPARK_PROFILE.format(schema=schema, parameters=spark_parameters(SPARK_SESSION, spark_remote)))
        elif postgres is None:
            (root / "dbt_project.yml").write_text(project_yaml())
            (root / "profiles.yml").write_text(PROFILES_YAML)
        else:
            (root / "dbt_project.yml").write_text(project_yaml() + 'on-run-start: ["{{ sdc.engine_setup() }}"]\n')
            (root / "profiles.yml").write_text("sdc_scratch:\n  target: pg\n  outputs:\n    pg:\n"
                                               + postgres.profile(schema))
        shutil.copytree(package_dir() / "macros", root / "macros")
        (root / "seeds").mkdir()
        (root / "models").mkdir()
        shutil.copy(DEMO_PTABLE, root / "seeds" / "sdc_ptable.csv")

    def seed(self, name: str, text: str) -> None:
        (self.root / "seeds" / f"{name}.csv").write_text(text)

    def model(self, name: str, sql: str, tags: list[str] | None = None) -> None:
        # tables, so that a build runs the query (a view would only be checked when read)
        config = f"{{{{ config(materialized='table', tags={tags or []!r}) }}}}\n"
        (self.root / "models" / f"{name}.sql").write_text(config + sql)

    def sources(self, tables: list[str]) -> None:
        listed = "\n".join(f"      - name: {t}" for t in tables)
        (self.root / "models" / "sources.yml").write_text(
            f"version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n{listed}\n"
        )

    def env(self, **extra: str) -> dict:
        """The environment of a dbt or sdc run in this project."""
        env = dict(os.environ, DBT_PROFILES_DIR=str(self.root), SDC_DUCKDB_PATH=str(self.db),
                   DBT_SEND_ANONYMOUS_USAGE_STATS="False", SPARK_LOCAL_IP="127.0.0.1", **extra)
        if self.spark_remote:
            env["SPARK_REMOTE"] = self.spark_remote
        return env

    def dbt(self, *args: str) -> subprocess.CompletedProcess:
        # a dbt-spark session is the process's: each run in a process of its own (and every run so, to compare,
        # with SDC_TESTS_DBT_SUBPROCESS=1)
        if self.spark or os.environ.get("SDC_TESTS_DBT_SUBPROCESS"):
            # the Spark project's whole build takes 3-5 minutes on 2 cores alone, past 10 beside a loaded suite
            return subprocess.run([str(DBT), *args], cwd=self.root, env=self.env(), capture_output=True, text=True,
                                  timeout=1800)
        return dbt_in_process(list(args), self.root, self.env())

    def compiled_sql(self, model: str) -> str:
        return (self.root / "target" / "compiled" / "sdc" / "models" / f"{model}.sql").read_text()
