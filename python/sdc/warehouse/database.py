"""Opening the DuckDB files of a warehouse, and reading DuckDB's answers, in one place for every command."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

import duckdb

from sdc.conventions import MEMORY_LIMIT_ENV
from sdc.errors import SdcError
from sdc.quoting import quote_literal

_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "UHUGEINT", "FLOAT", "REAL", "DOUBLE", "DECIMAL", "NUMERIC")


def duckdb_connect(database: str | Path = ":memory:", **options) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect(database, **options)`` under the memory limit of $SDC_DUCKDB_MEMORY_LIMIT where it is set
    (every DuckDB sdc opens goes through here). A value DuckDB does not take is an SdcError naming the variable.

    >>> import os
    >>> os.environ["SDC_DUCKDB_MEMORY_LIMIT"] = "500MB"
    >>> duckdb_connect().execute("select current_setting('memory_limit')").fetchone()[0]
    '476.8 MiB'
    >>> del os.environ["SDC_DUCKDB_MEMORY_LIMIT"]
    """
    limit = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    # checked before anything is opened (a new file would be made); DuckDB reads a negative size as no limit and
    # takes the first size of a garbled value, so only a single positive size or share gets that far
    if limit and not _MEMORY_LIMIT.fullmatch(limit):
        raise SdcError(_memory_limit_error(limit, "not a single positive size"))
    con = duckdb.connect(str(database), **options)
    if limit:
        try:
            con.execute(f"set memory_limit = {quote_literal(limit)}")
        except duckdb.Error as exc:
            con.close()
            raise SdcError(_memory_limit_error(limit, first_line(exc))) from None
    return con


_MEMORY_LIMIT = re.compile(r"[0-9]+(\.[0-9]+)? ?([KMGT]i?B|%)", re.IGNORECASE)


def _memory_limit_error(limit: str, why: str) -> str:
    return (f"{MEMORY_LIMIT_ENV}={limit!r} is not a memory limit DuckDB takes (a size such as 4GB or 500MB, or a "
            f"share such as 50%): {why}")


def connect(db: str | Path, *, read_only: bool = False, must_exist: bool = False,
            what: str = "", storage_version: str | None = None) -> duckdb.DuckDBPyConnection:
    """A connection to the DuckDB file ``db`` (``what`` names it in messages, e.g. "the warehouse"). A missing
    folder, a missing file where one must exist, or a file another process holds open (DuckDB allows one
    writer) is an SdcError naming the file. A file it creates is readable by its owner only, and written in
    DuckDB's ``storage_version`` where one is given (an existing file keeps its own)."""
    path = Path(db)
    name = f"{what} {db}" if what else str(db)
    if not path.parent.is_dir():
        raise SdcError(f"cannot open {name}: folder {path.parent} does not exist")
    if (read_only or must_exist) and not path.is_file():
        raise SdcError(f"database file not found: {db}" if not path.exists() else f"{db} is not a file")
    new = not path.exists()
    try:
        config = {"storage_compatibility_version": storage_version} if new and storage_version else {}
        con = duckdb_connect(path, read_only=read_only, config=config)
        if new and path.is_file():
            os.chmod(path, 0o600)  # a warehouse holds microdata and record keys: its owner's only
        return con
    except duckdb.Error as exc:
        message = first_line(exc)
        if "lock" in message.lower():
            raise SdcError(f"cannot open {name}: another process is using it ({message})") from None
        raise SdcError(f"cannot open {name}: {message}") from None


def first_line(exc: BaseException) -> str:
    """The first line of an error message (DuckDB's messages go on with hints and context)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def is_numeric_type(duckdb_type: str) -> bool:
    """True for DuckDB's integer, floating-point and decimal types (DECIMAL(p, s) included)."""
    return str(duckdb_type).upper().split("(")[0].strip() in _NUMERIC


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection):
    """One transaction: committed when the block ends, rolled back on any error. The error that stopped it is
    the one raised: a rollback that fails too (after a failed commit, e.g. on a full disk, DuckDB has already
    rolled back and "cannot rollback - no transaction is active") must not hide it."""
    con.execute("begin transaction")
    try:
        yield con
        con.execute("commit")
    except BaseException:
        try:
            con.execute("rollback")
        except duckdb.Error:
            pass
        raise
