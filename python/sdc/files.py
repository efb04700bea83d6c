"""Reading input files and writing output files, alike for every command.

Outputs are written under a temporary name beside the target and renamed at the end, so a failed run
leaves the previous file as it was and no temporary file behind; a failed write (a full disk, no
permission) is one line naming the file. Inputs that are missing, folders or not UTF-8 are one line too.

Each output carries a mark: a small JSON file beside it (``.NAME.sdc.json``: the command that wrote it and
the SHA-256 of the bytes it wrote). A file that exists is replaced only when its mark names the same
command and its bytes are still the ones written, never because its columns or its first bytes look right:
microdata or someone's ptable given as --out by mistake is refused, and so is an output edited since.
"""

from __future__ import annotations

import codecs
import csv
import errno
import hashlib
import io
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sdc.errors import SdcError

NO_SPACE = "no space left on device"


def check_output_file(out, command: str | None = None) -> Path:
    """Fail before the work, not after it, when ``out`` cannot be written: it is a folder, its folder does not
    exist (sdc creates no folders for its outputs) or cannot be written, or the file there cannot be replaced.
    With ``command`` (e.g. "sdc ckm"), a file that exists is replaced only if it is an earlier output of that
    command (its mark, see ``written_by``): sdc never writes over a file it did not make, such as microdata
    given as --out by mistake; deleting it is telling sdc to."""
    out = Path(out)
    if out.is_dir():
        raise SdcError(f"cannot write {out}: it is a folder; give a file name")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise SdcError(f"cannot write {out}: folder {folder} does not exist")
    if command is not None and out.is_file() and out.stat().st_size > 0 and written_by(out) != command:
        raise SdcError(f"{out} exists and is not an earlier output of {command}: sdc replaces only its own outputs; "
                       "delete it first or give another file")
    if mark_path(out).is_dir():
        raise SdcError(f"cannot write {out}: {mark_path(out)}, where sdc marks its output, is a folder")
    _check_writable(out, folder)
    return out


def mark_path(out) -> Path:
    """The mark beside an output: ``.NAME.sdc.json`` in its folder."""
    out = Path(out)
    return out.with_name(f".{out.name}.sdc.json")


def written_by(path) -> str | None:
    """The command that wrote ``path`` (e.g. "sdc ckm"), if its mark says so and the file holds exactly the
    bytes that command wrote; None for any other file (no mark, a mark that does not parse, a file changed
    since)."""
    try:
        mark = json.loads(mark_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(mark, dict) or not isinstance(mark.get("written_by"), str):
        return None
    try:
        if Path(path).stat().st_size != mark.get("bytes") or _sha256(Path(path)) != mark.get("sha256"):
            return None
    except OSError:
        return None
    return mark["written_by"]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _check_writable(out: Path, folder: Path) -> None:
    """A file can be created in ``folder`` and an existing ``out`` renamed (as the final replace does): tried,
    as permissions alone do not tell (root, immutable files and folders, read-only mounts)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise SdcError(f"cannot write {out}: folder {folder} cannot be written ({_reason(exc)})") from None
    if not out.is_symlink() and not out.exists():
        return
    moved = f"{probe}.probe"  # a free name: mkstemp made it unique
    try:
        os.rename(out, moved)
    except OSError as exc:
        raise SdcError(f"cannot write {out}: the file there cannot be replaced ({_reason(exc)})") from None
    finally:
        if os.path.lexists(moved):
            os.rename(moved, out)


def _reason(exc: OSError) -> str:
    return {errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
            errno.EROFS: "read-only file system"}.get(exc.errno, (exc.strerror or str(exc)).lower())


def disk_full(exc: BaseException, path) -> SdcError | None:
    """``exc`` (an OSError or a DuckDB error) as "cannot write <path>: no space left on device" if that is
    what it is, else None. In words, because DuckDB buries it in JSON."""
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or NO_SPACE in str(exc).lower():
        return SdcError(f"cannot write {path}: {NO_SPACE}")
    return None


def write_failure(exc: BaseException, path) -> SdcError | None:
    """A failed write of ``path`` (an OSError, or a DuckDB I/O error) as one line; None for other errors."""
    text = str(exc)
    full = disk_full(exc, path)
    if full is not None:
        return full
    if isinstance(exc, OSError):
        return SdcError(f"cannot write {path}: {exc.strerror or text}")
    if type(exc).__name__ == "IOException":  # duckdb.IOException, without importing duckdb here
        return SdcError(f"cannot write {path}: {(text.strip().splitlines() or [''])[0]}")
    return None


@contextmanager
def staged_file(path, suffix: str = "", command: str | None = None) -> Iterator[Path]:
    """A temporary path beside ``path`` for the caller to write; renamed over ``path`` when the block ends
    without error, removed on any error (a failed write becomes one SdcError naming ``path``). ``suffix``
    keeps the extension for writers that choose the format by it (DuckDB COPY, matplotlib). With
    ``command``, ``path`` is replaced only if that command wrote it (``check_output_file``), and the new file
    is marked as written by it (the mark is written first, renamed last: a run cut in between leaves a
    file whose mark does not match, which no command replaces)."""
    path = check_output_file(path, command)
    staged: list[str] = []
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
        os.close(fd)
        staged.append(tmp)
        yield Path(tmp)
        if command is not None:
            staged.append(_stage_mark(Path(tmp), path, command))
        os.replace(tmp, path)
        staged.remove(tmp)
        if command is not None:
            os.replace(staged.pop(), mark_path(path))
    except BaseException as exc:
        for name in staged:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
        failure = write_failure(exc, path)
        if failure is not None:
            raise failure from None
        raise


def _stage_mark(written: Path, path: Path, command: str) -> str:
    """The mark of ``written`` (to become ``path``) in a temporary file beside it; its name."""
    mark = {"written_by": command, "file": path.name, "bytes": written.stat().st_size, "sha256": _sha256(written),
            "note": "sdc replaces this file only while it holds these bytes; delete both to free the name"}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".sdc.json", dir=path.parent)
    try:
        _write_all(fd, (json.dumps(mark, indent=1) + "\n").encode("utf-8"))
    except BaseException:
        os.unlink(tmp)
        raise
    finally:
        os.close(fd)
    return tmp


def write_text_atomically(path: Path, text: str, command: str | None = None) -> None:
    """``text`` as the file ``path``, replaced only when complete (and, with ``command``, only if that command
    wrote it; then marked as its output)."""
    stage_text(path, text, command).commit()


class StagedText:
    """A text written completely under a temporary name beside ``path`` (and its mark), not yet in place:
    ``commit`` renames it over ``path``, ``discard`` removes it. For an output that must not replace the earlier
    one before another output is complete too (sdc publish: the audit file and the publication)."""

    def __init__(self, path: Path, staged: list[str]):
        self.path, self._staged = path, staged  # the text, then its mark if any

    def commit(self) -> None:
        try:
            os.replace(self._staged[0], self.path)
            self._staged.pop(0)
            if self._staged:
                os.replace(self._staged.pop(), mark_path(self.path))
        except BaseException as exc:
            self.discard()
            failure = write_failure(exc, self.path)
            if failure is not None:
                raise failure from None
            raise

    def discard(self) -> None:
        while self._staged:
            try:
                os.unlink(self._staged.pop())
            except FileNotFoundError:
                pass


def stage_text(path, text: str, command: str | None = None) -> StagedText:
    """``text`` written under a temporary name beside ``path`` (checked as ``check_output_file`` checks it), with
    its mark for ``command``; a failed write is one SdcError naming ``path`` and leaves nothing behind."""
    path = check_output_file(path, command)
    staged = StagedText(path, [])
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        staged._staged.append(tmp)
        try:
            _write_all(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        if command is not None:
            staged._staged.append(_stage_mark(Path(tmp), path, command))
    except BaseException as exc:
        staged.discard()
        failure = write_failure(exc, path)
        if failure is not None:
            raise failure from None
        raise
    return staged


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:  # os.write may write less than asked
        view = view[os.write(fd, view):]
    os.fsync(fd)  # a full disk can surface only here (delayed allocation)


def check_not_an_input(out, *inputs, flag: str = "--out") -> None:
    """Refuses an output path (given as ``flag``) that is one of the command's input files: sdc never writes
    over what it reads."""
    for given in inputs:
        if given is not None and same_file(out, given):
            raise SdcError(f"{flag} {out} is the input file {given}: give another file (sdc never writes over what "
                           "it reads)")


def same_file(a, b) -> bool:
    """One path however spelt (``..``, symbolic links), or one file by two names (a hard link); neither needs to
    exist."""
    if Path(a).resolve() == Path(b).resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def csv_field(value) -> str:
    """A value as a CSV field: empty for None, quoted when it holds a comma, a quote or a line break (else a
    mark or code with one would split its row)."""
    text = "" if value is None else str(value)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text


def read_text(path, what: str) -> str:
    """The text of a UTF-8 file (a byte-order mark dropped), with one-line errors naming the file for a
    missing file, a folder and bytes that are not UTF-8."""
    return decode_text(read_bytes(path, what), path, what)


def read_bytes(path, what: str) -> bytes:
    """The bytes of a file, with one-line errors naming the file for a missing file and a folder."""
    path = Path(path)
    if path.is_dir():
        raise SdcError(f"{what} {path} is a folder")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise SdcError(f"{what} not found: {path}") from None
    except OSError as exc:
        raise SdcError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def decode_text(data: bytes, path, what: str) -> str:
    """The bytes ``data`` of the file ``path`` as UTF-8 text (a byte-order mark dropped), or an error naming
    the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SdcError(_not_utf8(what, Path(path), exc.object[exc.start], exc.start)) from None


def read_csv_rows(path, what: str) -> list[dict]:
    """The rows of a UTF-8 CSV file as dicts (errors as read_text)."""
    return list(csv.DictReader(io.StringIO(read_text(path, what), newline="")))


def read_failure(exc: BaseException, path, what: str = "input file") -> SdcError:
    """DuckDB's error reading a data file as one line; for bytes that are not UTF-8, where they are (DuckDB's
    line numbers point elsewhere)."""
    text = str(exc)
    if "not utf-8 encoded" in text.lower():
        found = _first_bad_utf8(Path(path))
        if found is not None:
            return SdcError(_not_utf8(what, path, *found))
    return SdcError(f"cannot read {path}: {(text.strip().splitlines() or [''])[0]}")


def _not_utf8(what: str, path, byte: int, offset: int) -> str:
    return f"{what} {path} is not valid UTF-8 (byte 0x{byte:02x} at offset {offset}); save it as UTF-8"


def _first_bad_utf8(path: Path, chunk: int = 1 << 20) -> tuple[int, int] | None:
    """(the first byte that is not UTF-8, its offset in the file), reading in chunks."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    consumed = 0
    try:
        with path.open("rb") as handle:
            while block := handle.read(chunk):
                pending = len(decoder.getstate()[0])  # bytes of a character cut by the previous chunk
                try:
                    decoder.decode(block)
                except UnicodeDecodeError as exc:
                    return exc.object[exc.start], consumed - pending + exc.start
                consumed += len(block)
    except OSError:
        return None
    return None
