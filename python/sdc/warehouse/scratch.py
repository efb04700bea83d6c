"""The sdc dbt package (whose macros the commands render in process: macro_renderer), the dbt project
settings a throwaway project on it needs (tests build such projects), and the private scratch folders of
the commands that handle microdata (`sdc ckm`, `sdc suppress`, `sdc audit`: DuckDB spills there).

The package (dbt_project.yml and macros/) ships inside the Python package as ``sdc/dbt_package`` (the
build copies it there: setup.py), so every command works without a checkout; in an editable install from
a checkout it is the checkout itself.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdc.conventions import PTABLE_SEED_COLUMN_TYPES
from sdc.errors import SdcError

_HERE = Path(__file__).resolve().parents[1]  # the sdc package folder (this module lies in sdc/warehouse)
PACKAGED = _HERE / "dbt_package"  # written by the build (setup.py)
CHECKOUT = _HERE.parents[1]        # python/sdc/.. /.. in a checkout


def package_dir() -> Path:
    """The folder of the sdc dbt package (dbt_project.yml and macros/)."""
    for candidate in (PACKAGED, CHECKOUT):
        if (candidate / "dbt_project.yml").is_file() and (candidate / "macros").is_dir():
            return candidate
    raise SdcError(f"the sdc dbt macros are missing from this installation ({PACKAGED}); reinstall sdc")


def project_yaml(name: str = "sdc") -> str:
    """dbt_project.yml of a throwaway project named ``name`` (macros, models and seeds in its own folders)."""
    types = ", ".join(f"{column}: {kind!r}" for column, kind in PTABLE_SEED_COLUMN_TYPES.items())
    return (
        f"name: {name}\nconfig-version: 2\nprofile: sdc_scratch\n"
        "macro-paths: [macros]\nmodel-paths: [models]\nseed-paths: [seeds]\ntest-paths: [tests]\n"
        "flags: {send_anonymous_usage_stats: false}\n"
        f"seeds:\n  {name}:\n    sdc_ptable:\n      +column_types: {{{types}}}\n"
        "    sdc_hierarchies:\n      +column_types: {dimension: varchar, code: varchar, parent: varchar}\n"
    )


PROFILES_YAML = (
    "sdc_scratch:\n  target: duckdb\n  outputs:\n    duckdb:\n      type: duckdb\n"
    "      path: \"{{ env_var('SDC_DUCKDB_PATH') }}\"\n      threads: 1\n"
)


SCRATCH_PREFIX = "sdc-scratch-"


@contextmanager
def scratch_folder(kind: str) -> Iterator[Path]:
    """A private folder (mode 0700) for one command's DuckDB spill files (microdata beyond the memory limit),
    removed when the command ends: normally, on an error, or on SIGINT/SIGTERM/SIGHUP (the CLI turns those
    into exceptions). Only SIGKILL leaves it behind; the next command that makes a scratch folder removes the
    folders of sdc processes that no longer run, so nothing outlives the next run. The folder's name holds
    its process id (sdc-scratch-<kind>-<pid>-<random>): a process killed the moment the folder exists still
    leaves a folder that names its owner."""
    folder = make_scratch_folder(kind)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def make_scratch_folder(kind: str) -> Path:
    """A new private scratch folder named for this process (the caller removes it); first removes the
    folders of sdc processes that no longer run."""
    remove_orphaned_scratch_folders()
    return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{kind}-{os.getpid()}-"))


def own_scratch_folders() -> set[Path]:
    """This process's scratch folders (the process id in their names: _owner)."""
    return {folder for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*") if _owner(folder) == os.getpid()}


def remove_scratch_folders_made_since(before: set[Path]) -> None:
    """Remove this process's scratch folders not in ``before``: after a signal, also one made in the instant
    between its creation and the code that would have removed it (scratch_folder's try)."""
    for folder in own_scratch_folders() - before:
        shutil.rmtree(folder, ignore_errors=True)


def remove_orphaned_scratch_folders() -> list[Path]:
    """Remove this user's scratch folders whose sdc process is gone (killed with SIGKILL); returns them."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        owner = _owner(folder)
        try:
            if owner is None or folder.stat().st_uid != os.getuid() or _process_runs(owner):
                continue
        except OSError:
            continue  # gone meanwhile
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _owner(folder: Path) -> int | None:
    """The process id in a scratch folder's name; for a folder of an older sdc (sdc-scratch-<kind>-<random>,
    which held a DuckDB copy of the microdata) the one in its file owner.pid; None if neither says."""
    parts = folder.name[len(SCRATCH_PREFIX):].split("-")
    if len(parts) >= 3 and parts[1].isdigit():
        return int(parts[1])
    try:
        return int((folder / "owner.pid").read_text())
    except (OSError, ValueError):
        return None  # not an sdc folder, or one being made right now


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
