"""Reading input files and writing output files, alike for every command.

Outputs are written under a temporary name beside the target and renamed at the end, so a failed run
leaves the previous file as it was and no temporary file behind; a failed write (a full disk, no
permission) is one line naming the file. Inputs that are missing, folders or not UTF-8 are one line too.
"""

from __future__ import annotations

import codecs
import csv
import errno
import io
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from .errors import SdcError

NO_SPACE = "no space left on device"


def check_output_file(out, earlier_output: Callable[[Path], bool] | None = None, what: str = "") -> Path:
    """Fail before the work, not after it, when ``out`` cannot be a file: it is a folder, or its folder does
    not exist (sdc creates no folders for its outputs). With ``earlier_output``, a file that exists is
    replaced only if it looks like an earlier output of the command (``what``): sdc never writes over a
    file it did not make, such as microdata given as --out by mistake; deleting it is telling sdc to."""
    out = Path(out)
    if out.is_dir():
        raise SdcError(f"cannot write {out}: it is a folder; give a file name")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise SdcError(f"cannot write {out}: folder {folder} does not exist")
    if earlier_output is not None and out.is_file() and out.stat().st_size > 0 and not earlier_output(out):
        raise SdcError(f"{out} exists and is not an earlier output of {what}: sdc replaces only its own outputs; "
                       "delete it first or give another file")
    return out


def csv_header(path: Path) -> list[str]:
    """The column names in the first line of a CSV file; [] for one that is not UTF-8 CSV text."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return next(csv.reader(handle), [])
    except (UnicodeDecodeError, csv.Error, OSError):
        return []


def starts_with(path: Path, signature: bytes) -> bool:
    """True if the file begins with ``signature`` (a file format's magic bytes, e.g. PNG's)."""
    with path.open("rb") as handle:
        return handle.read(len(signature)) == signature


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
def staged_file(path, suffix: str = "") -> Iterator[Path]:
    """A temporary path beside ``path`` for the caller to write; renamed over ``path`` when the block ends
    without error, removed on any error (a failed write becomes one SdcError naming ``path``). ``suffix``
    keeps the extension for writers that choose the format by it (DuckDB COPY, matplotlib)."""
    path = check_output_file(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        failure = write_failure(exc, path)
        if failure is not None:
            raise failure from None
        raise


def write_text_atomically(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    with staged_file(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC)
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked
                view = view[os.write(fd, view):]
            os.fsync(fd)  # a full disk can surface only here (delayed allocation)
        finally:
            os.close(fd)


def check_not_an_input(out, *inputs) -> None:
    """Refuses an output path that is one of the command's input files: sdc never writes over what it reads."""
    target = Path(out).resolve()
    for given in inputs:
        if given is not None and (Path(given).resolve() == target
                                  or (target.exists() and Path(given).exists() and os.path.samefile(given, target))):
            raise SdcError(f"--out {out} is the input file {given}: give another file (sdc never writes over what it reads)")


def csv_field(value) -> str:
    """A value as a CSV field: empty for None, quoted when it holds a comma, a quote or a line break (else a
    mark or code with one would split its row)."""
    text = "" if value is None else str(value)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text


def read_text(path, what: str) -> str:
    """The text of a UTF-8 file (a byte-order mark dropped), with one-line errors naming the file for a
    missing file, a folder and bytes that are not UTF-8."""
    path = Path(path)
    if path.is_dir():
        raise SdcError(f"{what} {path} is a folder")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SdcError(f"{what} not found: {path}") from None
    except OSError as exc:
        raise SdcError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SdcError(_not_utf8(what, path, exc.object[exc.start], exc.start)) from None


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
