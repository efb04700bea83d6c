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
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from .macro_renderer import Relation
from .quoting import quote_literal
from .scratch import make_scratch_folder

_lock = threading.RLock()
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
    with _lock:  # reentrant: kept_table holds it
        if _open is None or _open.pid != os.getpid():
            _open = _Database()
            _kept.clear()  # a forked child's: its parent's tables are not in the child's database
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


# tables kept in the shared database for the objects they were made from (a checked ptable): made once, not on
# every call; at most KEPT of them, the least recently used dropped first when no call is using it
KEPT = 8
_kept: "dict[int, _Kept]" = {}
_made = 0  # names are never used twice: a name's rows are always those of one object


class _Kept:
    def __init__(self, owner, name: str):
        self.owner = weakref.ref(owner)
        self.name = name
        self.users = 0


@contextmanager
def kept_table(owner, make: Callable[[duckdb.DuckDBPyConnection, str], None]) -> Iterator[Relation]:
    """The table of ``owner`` in the shared database, made by ``make(connection, name)`` (name quoted SQL) the
    first time and kept while ``owner`` lives; no other call drops it while this one is inside the block.
    ``owner`` must not change: the table holds its rows as they were."""
    global _made
    with _lock:
        database = _database()
        entry = _kept.pop(id(owner), None)
        if entry is not None and entry.owner() is not owner:  # a dead object's table, under a reused id
            _drop(database, entry)
            entry = None
        if entry is None:
            _made += 1
            entry = _Kept(owner, f"sdc_kept_{_made}")
            con = database.cursor()
            try:
                make(con, str(Relation("memory", "main", entry.name)))
            finally:
                con.close()
        _kept[id(owner)] = entry  # the most recently used last
        entry.users += 1
    try:
        yield Relation("memory", "main", entry.name)
    finally:
        with _lock:
            entry.users -= 1
            _forget_unused(database)


def _forget_unused(database) -> None:
    """Drop the tables of dead objects, and beyond KEPT the least recently used, where no call uses them."""
    for key, entry in list(_kept.items()):
        if entry.users == 0 and (entry.owner() is None or len(_kept) > KEPT):
            del _kept[key]
            _drop(database, entry)


def _drop(database, entry: _Kept) -> None:
    if _open is not None and _open.connection is database:
        database.execute(f"drop table if exists {Relation('memory', 'main', entry.name)}")
