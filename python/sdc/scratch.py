"""A throwaway copy of the sdc dbt project on a temporary DuckDB, for the commands that run the warehouse
macros on a single file (`sdc ckm`, `sdc suppress`, `sdc audit`)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from .errors import SdcError

PROJECT_DIR = Path(__file__).resolve().parents[2]  # the dbt project next to the package (python/sdc/..)


def project_dir() -> Path:
    if not (PROJECT_DIR / "dbt_project.yml").is_file():
        raise SdcError(f"the sdc dbt project was not found at {PROJECT_DIR}; install sdc from a checkout (pip install -e .)")
    return PROJECT_DIR


def scratch_project(tmp: Path, source_tables: tuple[str, ...] = ("micro",)) -> Path:
    """Project files, macros and empty seeds/models folders under ``tmp``, with sources raw.<table>."""
    source = project_dir()
    project = tmp / "project"
    project.mkdir()
    for name in ("dbt_project.yml", "profiles.yml"):
        shutil.copy(source / name, project / name)
    shutil.copytree(source / "macros", project / "macros")
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
