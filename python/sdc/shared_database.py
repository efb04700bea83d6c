"""One in-memory DuckDB per process for the table functions a notebook calls again and again
(``sdc.ckm.count_table``, ``sum_table``): opening a DuckDB database costs about 14 ms (it builds its catalog of
functions anew), a connection to an open one 0.2 ms.

Each call gets a connection of its own and creates its relations in DuckDB's temp catalog, which belongs to
that connection alone and is dropped when it closes: calls, also from several threads at once, neither see nor
leave anything of each other's. What DuckDB spills beyond its memory limit goes to a private folder (0700) of
the process, removed when the process exits (after a SIGKILL, by the next sdc command: scratch.py). A forked
child opens a database of its own (DuckDB's state cannot cross a fork).
"""

from __future__ import annotations

import atexit
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from .quoting import quote_literal
from .scratch import make_scratch_folder

_lock = threading.Lock()
_open: "_Database | None" = None


class _Database:
    def __init__(self):
        self.pid = os.getpid()
        self.folder: Path = make_scratch_folder("session")
        self.connection = duckdb.connect()
        self.connection.execute(f"set temp_directory = {quote_literal(str(self.folder))}")
        atexit.register(self.close)

    def close(self) -> None:
        if os.getpid() == self.pid:  # a forked child leaves its parent's database and folder alone
            self.connection.close()
            shutil.rmtree(self.folder, ignore_errors=True)


def _database() -> duckdb.DuckDBPyConnection:
    global _open
    with _lock:
        if _open is None or _open.pid != os.getpid():
            _open = _Database()
        return _open.connection


@contextmanager
def shared_connection() -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection of its own to the process's shared in-memory DuckDB, closed at the end (with whatever
    the call made in the temp catalog)."""
    con = _database().cursor()
    try:
        yield con
    finally:
        con.close()
