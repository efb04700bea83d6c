"""A throwaway dbt project with the package's macros as its own, for tests of the SQL path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from sdc.scratch import PROFILES_YAML, package_dir, project_yaml

REPO = Path(__file__).parent.parent
DEMO_PTABLE = REPO / "demo" / "seeds" / "sdc_ptable.csv"
DBT = Path(sys.executable).parent / "dbt"


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
        spark.master: "local[2]"
        spark.driver.bindAddress: "127.0.0.1"
        spark.driver.host: "127.0.0.1"
        spark.ui.enabled: "false"
        spark.sql.shuffle.partitions: "4"
        spark.sql.variable.substitute: "false"
"""


class ScratchProject:
    """With ``postgres`` (a tests/postgres_server.PostgresServer) the project builds on that server, in a schema
    of its own (``schema``), and runs the package's on-run-start hook (engine_setup) as a project using sdc
    as a package would."""

    def __init__(self, root: Path, postgres=None, schema: str = "main", spark: bool = False):
        self.root = root
        self.db = root / "warehouse.duckdb"
        self.postgres, self.schema, self.spark = postgres, schema, spark
        root.mkdir(parents=True, exist_ok=True)
        if spark:  # a local Spark session of dbt's own (its metastore and warehouse in this folder)
            # Spark's varchar needs a length: the hierarchy seed's text columns as string
            (root / "dbt_project.yml").write_text(project_yaml().replace("varchar", "string")
                                                  + 'on-run-start: ["{{ sdc.engine_setup() }}"]\n')
            (root / "profiles.yml").write_text(SPARK_PROFILE.format(schema=schema))
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

    def dbt(self, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, DBT_PROFILES_DIR=str(self.root), SDC_DUCKDB_PATH=str(self.db),
                   DBT_SEND_ANONYMOUS_USAGE_STATS="False", SPARK_LOCAL_IP="127.0.0.1")
        return subprocess.run([str(DBT), *args], cwd=self.root, env=env, capture_output=True, text=True, timeout=600)

    def compiled_sql(self, model: str) -> str:
        return (self.root / "target" / "compiled" / "sdc" / "models" / f"{model}.sql").read_text()
