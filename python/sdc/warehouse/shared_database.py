"""One in-memory DuckDB per process for the table functions a notebook calls again and again
(``sdc.ckm.count_table``, ``sum_table``): opening a DuckDB database costs about 14 ms (it builds its catalog of
functions anew), a connection to an open one 0.2 ms.

Each call gets a connection of its own and creates its relations in DuckDB's temp catalog, which belongs to
that connection alone and is dropped when it closes: calls, also from several threads at once, neither see nor
leave anything of each other's. What DuckDB spills beyond its memory limit goes to a private folder (0700) of
the process, removed when the process exits, a multiprocessing worker included (after a SIGKILL, by the next
sdc command: scratch.py). A forked child opens a database of its own (DuckDB's state cannot cross a fork).
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

from sdc.warehouse.macro_renderer import Relation
from sdc.quoting import quote_literal
from sdc.warehouse.scratch import make_scratch_folder
from sdc.warehouse.database import duckdb_connect

_lock = threading.RLock()
_open: "_Database | None" = None


class _Database:
    def __init__(self):
        from multiprocessing import util  # its finalizers run where atexit does not: a worker's os._exit

        self.pid = os.getpid()
        self.folder: Path = make_scratch_folder("session")
        self.connection = duckdb_connect()
        self.connection.execute(f"set temp_directory = {quote_literal(str(self.folder))}")
        atexit.register(self.close)
        util.Finalize(self, self.close, exitpriority=0)

    def close(self) -> None:
        global _open
        with _lock:
            if os.getpid() != self.pid or self.folder is None:  # a forked child leaves its parent's alone
                return
            self.connection.close()
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
            if _open is self:
                _open = None
                _kept.clear()


def _database() -> duckdb.DuckDBPyConnection:
    global _open
    with _lock:  # reentrant: kept_table holds it
        if _open is None or _open.pid != os.getpid():
            _open = _Database()
            _kept.clear()  # a forked child's: its parent's tables are not in the child's database
        return _open.connection


def _after_fork_in_child() -> None:
    """A fork copies the lock as it is: held, if another thread of the parent was inside it."""
    global _lock, _open
    _lock = threading.RLock()
    _open = None
    _kept.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


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
        self.users: set[object] = set()  # a token per call inside kept_table


@contextmanager
def kept_table(owner, make: Callable[[duckdb.DuckDBPyConnection, str], None]) -> Iterator[Relation]:
    """The table of ``owner`` in the shared database, made by ``make(connection, name)`` (name quoted SQL) the
    first time and kept while ``owner`` lives; no other call drops it while this one is inside the block.
    ``owner`` must not change: the table holds its rows as they were."""
    token, entry = object(), None
    try:
        with _lock:
            database = _database()
            entry = _kept.pop(id(owner), None)
            if entry is not None and entry.owner() is not owner:  # a dead object's table, under a reused id
                _drop(database, entry)
                entry = None
            if entry is None:
                entry = _made_table(database, owner, make)
            _kept[id(owner)] = entry  # the most recently used last
            entry.users.add(token)
        yield Relation("memory", "main", entry.name)
    finally:
        if entry is not None:
            with _lock:
                entry.users.discard(token)  # (never added, if stopped before)
                if _open is not None:
                    _forget_unused(_open.connection)


def _made_table(database, owner, make) -> _Kept:
    global _made
    _made += 1
    entry = _Kept(owner, f"sdc_kept_{_made}")
    con = database.cursor()
    try:
        make(con, str(Relation("memory", "main", entry.name)))
    except BaseException:  # an error or Ctrl-C: no table under a name nobody will use
        _drop(database, entry)
        raise
    finally:
        con.close()
    return entry


def _forget_unused(database) -> None:
    """Drop the tables of dead objects, and beyond KEPT the least recently used, where no call uses them."""
    for key, entry in list(_kept.items()):
        if not entry.users and (entry.owner() is None or len(_kept) > KEPT):
            del _kept[key]
            _drop(database, entry)


def _drop(database, entry: _Kept) -> None:
    try:
        database.execute(f"drop table if exists {Relation('memory', 'main', entry.name)}")
    except duckdb.Error:
        pass  # a table left costs memory until the process ends, never a result


def kept_names() -> set[str]:
    """The relations (quoted SQL) of the tables kept now."""
    with _lock:
        return {str(Relation("memory", "main", entry.name)) for entry in _kept.values()}
