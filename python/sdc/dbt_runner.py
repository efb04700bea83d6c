"""Run dbt on a project against a given DuckDB file (used by `sdc ckm` and `sdc sql install`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .errors import SdcError


def run_dbt(project: Path, db: Path, args: list[str], what: str, work_dir: Path | None = None) -> str:
    """dbt ``args`` in ``project`` with the profile pointed at ``db``; returns stdout, raises SdcError on failure.

    ``work_dir`` receives dbt's target and log folders (default: inside the project).
    """
    env = dict(os.environ, DBT_PROFILES_DIR=str(project), SDC_DUCKDB_PATH=str(db), DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    paths = ["--target-path", str(work_dir / "target"), "--log-path", str(work_dir / "logs")] if work_dir else []
    dbt = Path(sys.executable).parent / "dbt"
    result = subprocess.run([str(dbt), *args, *paths], cwd=project, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower() and "Done." not in line]
        raise SdcError(f"{what} failed: " + " | ".join((errors or lines)[-4:]))
    return result.stdout
