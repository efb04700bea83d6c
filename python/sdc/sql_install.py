"""``sdc sql install``: the ptable and the CKM macros in a DuckDB database, for ad-hoc SQL.

The ptable is loaded into ``sdc_ckm.sdc_ptable`` (exact decimals); the macros are created by the dbt
operation ``install_sql_macros``, which renders the same SQL pieces as the model macro ``ckm_count``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import duckdb

from .dbt_runner import run_dbt
from .errors import SdcError
from .ptable.formats import read_ptable, render_ptable
from .scratch import project_dir


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
    with tempfile.TemporaryDirectory(prefix="sdc-dbt-") as tmp:
        stdout = run_dbt(project_dir(), db, ["run-operation", "install_sql_macros", "--args", json.dumps(args)],
                         "installing the SQL macros", work_dir=Path(tmp))
    installed = [line for line in stdout.splitlines() if "installed sdc_" in line]
    return installed[-1].split("  ", 1)[-1].strip() if installed else "installed"
