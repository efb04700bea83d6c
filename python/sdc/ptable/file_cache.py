"""Ptable files read once per content, also across processes.

ONS's tables have 192 000 lines: reading and checking one takes 40-50 ms, an eighth of what ``sdc ckm`` took
on 10^5 records. The checked table (its arrays, its reuse rule and key modulus) is kept in the process and,
as an .npz file, in the user's cache folder (sdc.user_cache: sdc/ptables, mode 0700), named by the SHA-256
of the file's bytes and of this package's source: a changed file, or a changed reader, is read afresh. A
table taken from the cache is checked again (sdc.ptable.validate: every row a partition of [0, 1), no
negative counts; the digest it was stored under, against a copied file); one that cannot be loaded or fails
that check is read from its file and stored anew. Only someone who can write the user's 0700 folder can put a
different table there, as they could change sdc's own code.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from sdc.files import decode_text, read_bytes
from sdc.user_cache import user_cache_folder
from sdc.ptable.formats import parse_ptable
from sdc.ptable.table import PTable
from sdc.ptable.validate import assemble_arrays

CACHE_FOLDER = "ptables"
KEPT_FILES = 16       # the newest tables used; an ONS table of 256 random keys takes 2.5 MB
_IN_PROCESS_KEPT = 8  # a notebook protects many tables with one or two ptables
_ARRAYS = ("i", "j", "lb_units", "ub_units")

_read: dict[str, PTable] = {}  # by digest, the last _IN_PROCESS_KEPT tables read in this process
# the bytes and digest of each file at its last read, by path: a file read again with the same bytes (compared,
# 0.3 ms for ONS's 2 MB table) is not hashed again (1-2 ms on every count_table call). No file times are trusted:
# some file systems have no change time, and a network one may answer stat() from a stale cache.
_last_read: dict[str, tuple[bytes, str]] = {}
_LAST_READ_MAX_BYTES = 32 * 2**20


def read_ptable_file(path: str | os.PathLike) -> PTable:
    """The checked table of a ptable file (any format ``read_ptable`` reads), read once per content."""
    data = read_bytes(path, "ptable file")  # names a missing or unreadable file
    where = os.path.abspath(path)
    last = _last_read.get(where)
    if last is not None and last[0] == data:
        digest = last[1]
    else:
        hasher = hashlib.sha256(_reader_fingerprint())
        hasher.update(data)
        digest = hasher.hexdigest()
        _last_read.pop(where, None)
        if len(data) <= _LAST_READ_MAX_BYTES:
            _keep(_last_read, where, (data, digest))
    return remembered(digest, lambda: _cached_or_parsed(digest, data, Path(path)))


def remembered(digest: str, read: Callable[[], PTable]) -> PTable:
    """The table of content ``digest`` read in this process before, else ``read()`` kept for the next call
    (ptable files here, DataFrames passed as ``ptable=`` in sdc.ckm)."""
    table = _read.get(digest)
    if table is None:
        table = read()
        _keep(_read, digest, table)
    return table


def _keep(store: dict, key, value) -> None:
    """``store[key] = value``, the oldest entry dropped where the store holds _IN_PROCESS_KEPT already."""
    if len(store) >= _IN_PROCESS_KEPT:
        store.pop(next(iter(store)), None)
    store[key] = value


def _cached_or_parsed(digest: str, data: bytes, path: Path) -> PTable:
    folder = user_cache_folder(CACHE_FOLDER)
    cached = _load(folder / f"{digest}.npz") if folder else None
    if cached is not None:
        return cached
    table = parse_ptable(decode_text(data, path, "ptable file"), source=str(path))[0]
    if folder:
        _store(folder, digest, table)
    return table


@functools.cache
def _reader_fingerprint() -> bytes:
    """SHA-256 of the source of sdc.ptable and sdc.conventions: a table read by other code is read again."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for module in sorted(here.glob("*.py")) + [here.parent / "conventions.py"]:
        digest.update(module.name.encode() + b"\0" + module.read_bytes())
    return digest.digest()


def _load(file: Path) -> PTable | None:
    """The table stored in ``file`` if it is there, complete, the one its name says (it holds the digest it
    was stored under) and passes the checks of a table read; else None."""
    try:
        with np.load(file, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in _ARRAYS}
            reuse_from, key_modulus = (int(x) for x in stored["rules"])
            named = str(stored["digest"])
    except Exception:  # noqa: BLE001 - missing, cut short or not an npz file: a miss, read the file again
        return None
    if f"{named}.npz" != file.name:  # another table's file, copied or renamed
        return None
    i, j, lb, ub = (arrays[name] for name in _ARRAYS)
    if any(a.ndim != 1 or a.dtype.kind != "i" or len(a) != len(i) for a in (i, j, lb, ub)) or not len(i):
        return None
    checked = assemble_arrays(i.astype(np.int64), (j - i).astype(np.int64), ub.astype(np.int64),
                              lb.astype(np.int64), mean_notes=False)
    if checked is None:
        return None
    table = checked[0]
    # the check's table is the stored one, entry for entry (it adds no row 0, drops no empty interval)
    if any(not np.array_equal(getattr(table, name), arrays[name]) for name in _ARRAYS):
        return None
    if not 0 <= reuse_from <= table.max_i or key_modulus < 0 or key_modulus == 1:
        return None
    _mark_used(file)
    return replace(table, reuse_from=reuse_from or None, key_modulus=key_modulus or None)


def _store(folder: Path, digest: str, table: PTable) -> None:
    """Write the table to the cache, whole or not at all (a file of its own, then renamed); the cache is an
    aid: a full disk or a read-only folder leaves it as it was."""
    part = folder / f".{digest}.{os.getpid()}.npz"
    arrays = {name: _compact(getattr(table, name)) for name in _ARRAYS}
    try:
        np.savez(part, **arrays, rules=np.array([table.reuse_from or 0, table.key_modulus or 0], dtype=np.int64),
                 digest=np.array(digest))
        os.replace(part, folder / f"{digest}.npz")
        _mark_used(folder / f"{digest}.npz")
        _remove_old(folder)
    except OSError:
        part.unlink(missing_ok=True)


def _compact(values: np.ndarray) -> np.ndarray:
    """int32 where every value fits (bounds are at most 10^8 units): half the bytes to write and to read."""
    small = not len(values) or (values.min() >= np.iinfo(np.int32).min and values.max() <= np.iinfo(np.int32).max)
    return values.astype(np.int32) if small else values


def _mark_used(file: Path) -> None:
    """Recently used: kept when older tables are removed. The clock's nanoseconds, as the file system's own
    time may move in steps of milliseconds."""
    now = time.time_ns()
    try:
        os.utime(file, ns=(now, now))
    except OSError:  # removed by another process meanwhile, or a folder made read-only
        pass


def _remove_old(folder: Path) -> None:
    """Keep the KEPT_FILES most recently used tables."""
    files = []
    for file in folder.glob("*.npz"):
        if file.name.startswith("."):  # another process's table being written
            continue
        try:
            files.append((file.stat().st_mtime_ns, file))
        except OSError:  # removed by another process meanwhile
            continue
    for _, file in sorted(files, reverse=True)[KEPT_FILES:]:
        file.unlink(missing_ok=True)
