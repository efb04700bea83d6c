"""$SDC_DUCKDB_MEMORY_LIMIT bounds every DuckDB database sdc opens itself: a command's in-memory database, the
warehouse file, the Python API's shared database. A value DuckDB does not take stops the command, naming the
variable, before it writes anything."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sdc.conventions import MEMORY_LIMIT_ENV
from sdc.errors import SdcError
from sdc.warehouse.database import connect
from sdc.warehouse.macro_renderer import private_connection

PACKAGE = Path(__file__).parent.parent / "python" / "sdc"
SDC = Path(sys.executable).parent / "sdc"
LIMIT_SQL = "select current_setting('memory_limit')"


def limit_of(con) -> str:
    return con.execute(LIMIT_SQL).fetchone()[0]


def test_every_duckdb_sdc_opens_takes_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "300MB")
    with private_connection("test") as con:
        assert limit_of(con) == "286.1 MiB"  # DuckDB shows 300 * 10^6 bytes in MiB
    con = connect(tmp_path / "warehouse.duckdb")
    assert limit_of(con) == "286.1 MiB"
    con.close()
    # the Python API's database is one per process: asked in a process of its own
    code = f"from sdc.warehouse.shared_database import _database\nprint(_database().execute({LIMIT_SQL!r}).fetchone()[0])"
    shared = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **{MEMORY_LIMIT_ENV: "300MB"}),
                            capture_output=True, text=True)
    assert shared.stdout.strip() == "286.1 MiB", shared.stderr
    monkeypatch.delenv(MEMORY_LIMIT_ENV)
    with private_connection("test") as con:
        assert limit_of(con) != "286.1 MiB"  # DuckDB's default: 80 % of the machine's memory


def test_the_package_opens_duckdb_only_through_duckdb_connect():
    """A database opened with duckdb.connect itself would escape the limit (the examples in docstrings may)."""
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb"):
                calls.append(str(path.relative_to(PACKAGE)))
    assert calls == ["warehouse/database.py"]


# DuckDB itself reads -1GB as no limit; the value is a quoted literal, never SQL
@pytest.mark.parametrize("value", ["lots", "4 gigs", "-1GB", "1GB'; set memory_limit = '-1GB'; --", "1GB\n2GB",
                                   "100\nMB", "*"])
def test_a_limit_duckdb_does_not_take_is_named_and_opens_nothing(value, tmp_path, monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, value)
    with pytest.raises(SdcError) as refused:
        connect(tmp_path / "new.duckdb")
    assert str(refused.value).startswith(f"SDC_DUCKDB_MEMORY_LIMIT={value!r} is not a memory limit DuckDB takes")
    assert not list(tmp_path.iterdir())


def test_sdc_suppress_under_a_limit_writes_the_same_table_and_a_bad_limit_writes_nothing(tmp_path):
    rng = np.random.default_rng(7)
    source = tmp_path / "micro.csv"
    source.write_text("region,sector\n" + "".join(f"r{rng.integers(1, 5)},s{rng.integers(1, 4)}\n" for _ in range(300)))

    def suppress(out: Path, limit: str | None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != MEMORY_LIMIT_ENV}
        if limit is not None:
            env[MEMORY_LIMIT_ENV] = limit
        return subprocess.run([str(SDC), "suppress", "--input", str(source), "--dims", "region,sector", "--rule",
                               "freq:25", "--out", str(out)], env=env, capture_output=True, text=True)

    free, limited, refused = tmp_path / "free.csv", tmp_path / "limited.csv", tmp_path / "refused.csv"
    assert suppress(free, None).returncode == 0
    run = suppress(limited, "200MB")
    assert run.returncode == 0, run.stderr
    assert limited.read_text() == free.read_text() and "x" in free.read_text()
    run = suppress(refused, "lots")
    assert run.returncode == 2 and "SDC_DUCKDB_MEMORY_LIMIT='lots' is not a memory limit DuckDB takes" in run.stderr
    assert not refused.exists()
