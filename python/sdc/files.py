"""Writing output files: atomically, so a failed run leaves the previous file as it was."""

from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path

from .errors import SdcError


def write_text_atomically(path: Path, text: str) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise SdcError(f"cannot write {path}: folder {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def check_not_an_input(out, *inputs) -> None:
    """Refuses an output path that is one of the command's input files: sdc never writes over what it reads."""
    target = Path(out).resolve()
    for given in inputs:
        if given is not None and (Path(given).resolve() == target
                                  or (target.exists() and Path(given).exists() and os.path.samefile(given, target))):
            raise SdcError(f"--out {out} is the input file {given}: give another file (sdc never writes over what it reads)")


def csv_field(value) -> str:
    """A value as a CSV field: empty for None, quoted when it holds a comma or a quote."""
    text = "" if value is None else str(value)
    return '"' + text.replace('"', '""') + '"' if "," in text or '"' in text else text


def read_csv_rows(path, what: str) -> list[dict]:
    """The rows of a UTF-8 CSV file as dicts, with one-line errors for a missing file, a folder or bytes
    that are not UTF-8."""
    path = Path(path)
    if path.is_dir():
        raise SdcError(f"{what} {path} is a folder")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise SdcError(f"{what} not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise SdcError(f"{what} {path} is not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset "
                       f"{exc.start}); save it as UTF-8") from None
    return list(csv.DictReader(io.StringIO(text, newline="")))
