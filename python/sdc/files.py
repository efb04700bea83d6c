"""Writing output files: atomically, so a failed run leaves the previous file as it was."""

from __future__ import annotations

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


def csv_field(value) -> str:
    """A value as a CSV field: empty for None, quoted when it holds a comma or a quote."""
    text = "" if value is None else str(value)
    return '"' + text.replace('"', '""') + '"' if "," in text or '"' in text else text
