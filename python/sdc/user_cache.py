"""The user's cache folder for what sdc derives from its own code and the user's files, kept between
processes: $XDG_CACHE_HOME/sdc/<name> (or ~/.cache/sdc/<name>). It holds no microdata, only compiled macros
(macro_renderer) and checked perturbation tables (ptable.file_cache), and is used only where it is the
user's own folder with mode 0700; elsewhere every process works without it, with the same results."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_folder(name: str) -> Path | None:
    """The cache folder ``name``, made if need be, or None where it cannot be made the user's own (0700)."""
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        folder = base / "sdc" / name
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
    except (OSError, RuntimeError):  # RuntimeError: no home folder to be found
        return None
    return folder
