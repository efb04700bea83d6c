"""The sdc dbt package and throwaway dbt projects built on it, for the commands that run the warehouse
macros on a single file (`sdc ckm`, `sdc suppress`, `sdc audit`, `sdc sql install`).

The package (dbt_project.yml and macros/) ships inside the Python package as ``sdc/dbt_package`` (the
build copies it there: setup.py), so every command works without a checkout; in an editable install from
a checkout it is the checkout itself.
"""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .conventions import PTABLE_SEED_COLUMN_TYPES
from .errors import SdcError

_HERE = Path(__file__).resolve().parent
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
OWNER_FILE = "owner.pid"


@contextmanager
def scratch_folder(kind: str) -> Iterator[Path]:
    """A private folder (mode 0700) for one command's throwaway dbt project and its DuckDB copy of the
    microdata, removed when the command ends: normally, on an error, or on SIGINT/SIGTERM/SIGHUP (the CLI
    turns those into exceptions). Only SIGKILL leaves it behind; the next command that makes a scratch
    folder removes the folders of sdc processes that no longer run, so no copy outlives the next run."""
    remove_orphaned_scratch_folders()
    folder = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{kind}-"))
    try:
        (folder / OWNER_FILE).write_text(str(os.getpid()))
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_orphaned_scratch_folders() -> list[Path]:
    """Remove this user's scratch folders whose sdc process is gone (killed with SIGKILL); returns them."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        try:
            if folder.stat().st_uid != os.getuid() or _process_runs(int((folder / OWNER_FILE).read_text())):
                continue
        except (OSError, ValueError):
            continue  # not ours, or being created right now (no owner file yet)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scratch_project(tmp: Path, source_tables: tuple[str, ...] = ("micro",)) -> Path:
    """A project under ``tmp`` with the package's macros as its own (so ``sdc.<macro>`` resolves), empty
    seeds/ and models/ folders, and sources raw.<table>."""
    project = tmp / "project"
    project.mkdir()
    (project / "dbt_project.yml").write_text(project_yaml())
    (project / "profiles.yml").write_text(PROFILES_YAML)
    shutil.copytree(package_dir() / "macros", project / "macros")
    (project / "seeds").mkdir()
    (project / "models").mkdir()
    tables = "".join(f"      - name: {t}\n" for t in source_tables)
    (project / "models" / "sources.yml").write_text(f"version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n{tables}")
    return project


def write_hierarchy_seed(project: Path, rows: list[tuple[str, str, str]] | None) -> str:
    """Write the hierarchy as seed sdc_hierarchies; returns the macro argument for it ('none' if no rows)."""
    if not rows:
        return "none"
    with (project / "seeds" / "sdc_hierarchies.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["dimension", "code", "parent"])
        writer.writerows(rows)
    return "ref('sdc_hierarchies')"
