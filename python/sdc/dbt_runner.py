"""Run dbt on a project against a given DuckDB file (used by `sdc ckm` and `sdc sql install`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from .errors import SdcError


def run_dbt(project: Path, db: Path, args: list[str], what: str, work_dir: Path | None = None) -> str:
    """dbt ``args`` in ``project`` with the profile pointed at ``db``; returns stdout, raises SdcError on failure.

    ``work_dir`` receives dbt's target and log folders (default: inside the project).
    """
    env = dict(os.environ, DBT_PROFILES_DIR=str(project), SDC_DUCKDB_PATH=str(Path(db).resolve()),
               DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    paths = ["--target-path", str(work_dir / "target"), "--log-path", str(work_dir / "logs")] if work_dir else []
    dbt = Path(sys.executable).parent / "dbt"
    # subprocess.run kills dbt when sdc stops on an exception (SIGINT/SIGTERM/SIGHUP, see cli); the death
    # signal ends it when sdc is killed outright, so no dbt keeps writing into a removed scratch folder
    result = subprocess.run([str(dbt), *args, *paths], cwd=project, env=env, capture_output=True, text=True,
                            preexec_fn=_end_with_parent)
    if result.returncode != 0:
        raise SdcError(f"{what} failed: {dbt_error(result.stdout)}")
    return result.stdout


def _end_with_parent() -> None:
    """In the child before exec (Linux): SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


PR_SET_PDEATHSIG = 1


def dbt_error(stdout: str) -> str:
    """The message of dbt's first error: the lines after '... Error in ...', without colours and timestamps."""
    lines = [re.sub(r"^\d\d:\d\d:\d\d\s+", "", ANSI.sub("", line)).strip() for line in stdout.splitlines()]
    lines = [line for line in lines if line]
    for k, line in enumerate(lines):
        if "Error in " in line:
            detail = []
            for follow in lines[k + 1:]:
                if follow.startswith(">") or follow.startswith("Done.") or "Error in " in follow:
                    break
                detail.append(follow)
            return " ".join([line] + detail[:3])
    return " | ".join(lines[-4:])


ANSI = re.compile(r"\x1b\[[0-9;]*m")
