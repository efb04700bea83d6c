"""Whether a published seed's file is the one the office committed (git), not one written during the build.

sdc verifies that a seed's table is its CSV file, but not where the file's content came from: a hook or a model that
writes the file from the microdata (``copy (select ... from raw.persons group by all) to 'seeds/labels.csv'``)
publishes originals through a seed on the next build (red team, issue 48). Reference data is content the office
reviews and commits, so where the project lies in a git repository a published seed's file must be committed and
unchanged since; outside one sdc cannot tell, and says so.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_TIMEOUT = 30  # seconds for one git command


def seed_file_state(path: Path) -> str | None:
    """'committed', 'changed since the last commit', 'not committed' (untracked or ignored), or None where the file
    lies in no git repository (or git is not installed)."""
    top = _git(path.parent, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return None
    root = Path(top.stdout.strip())
    tracked = _git(root, "ls-files", "--error-unmatch", "--", str(path.resolve()))
    if tracked is None or tracked.returncode != 0:
        return "not committed"
    status = _git(root, "status", "--porcelain", "--", str(path.resolve()))
    if status is None or status.returncode != 0:
        return None
    return "changed since the last commit" if status.stdout.strip() else "committed"


def _git(folder: Path, *arguments: str):
    try:
        return subprocess.run(["git", "-C", str(folder), *arguments], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
