"""``sdc sql install``: the ptable and the CKM macros in a DuckDB database, for ad-hoc SQL.

The ptable is loaded into ``sdc_ckm.sdc_ptable`` (exact decimals); the macros are created by the dbt
operation ``install_sql_macros``, which renders the same SQL pieces as the model macro ``ckm_count``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

from .ckm import project_dir
from .errors import SdcError
from .ptable.formats import read_ptable, render_ptable


def install(db: str | Path, ptable_path: str | Path | None = None, modulus: int | None = None) -> str:
    """Install into ``db``; returns dbt's log line. Running it again replaces what it installed."""
    db = Path(db)
    if not db.parent.is_dir():
        raise SdcError(f"folder of {db} does not exist")
    ptable_path = Path(ptable_path) if ptable_path else project_dir() / "seeds" / "sdc_ptable.csv"
    table, _, _ = read_ptable(ptable_path)
    with tempfile.TemporaryDirectory(prefix="sdc-sql-") as tmp:
        csv_path = Path(tmp) / "ptable.csv"
        csv_path.write_text(render_ptable(table))
        con = duckdb.connect(str(db))
        try:
            con.execute("create schema if not exists sdc_ckm")
            con.execute(
                "create or replace table sdc_ckm.sdc_ptable as select * from read_csv(?, header = true, columns = "
                "{'i': 'integer', 'j': 'integer', 'p': 'decimal(9,8)', 'v': 'integer', "
                "'p_int_lb': 'decimal(9,8)', 'p_int_ub': 'decimal(9,8)'})",
                [str(csv_path)],
            )
        finally:
            con.close()
    args = {"ptable": "sdc_ckm.sdc_ptable"}
    if modulus is not None:
        args["modulus"] = modulus
    if table.reuse_from:
        args["reuse_from"] = table.reuse_from
    project = project_dir()
    env = dict(os.environ, DBT_PROFILES_DIR=str(project), SDC_DUCKDB_PATH=str(db), DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    with tempfile.TemporaryDirectory(prefix="sdc-dbt-") as tmp:
        result = subprocess.run(
            [str(Path(sys.executable).parent / "dbt"), "run-operation", "install_sql_macros", "--args", json.dumps(args),
             "--target-path", str(Path(tmp) / "target"), "--log-path", str(Path(tmp) / "logs")],
            cwd=project, env=env, capture_output=True, text=True,
        )
    if result.returncode != 0:
        tail = [line.strip() for line in result.stdout.splitlines() if line.strip()][-4:]
        raise SdcError("installing the SQL macros failed: " + " | ".join(tail))
    installed = [line for line in result.stdout.splitlines() if "installed sdc_" in line]
    return installed[-1].split("  ", 1)[-1].strip() if installed else "installed"
