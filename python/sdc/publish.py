"""Copy the protected relations into a separate publication database (and Parquet files) for BI tools.

DuckDB has no GRANT: a BI tool that opens the warehouse file could read the microdata. The publication
file holds copies of the tables of the ``protected`` schema only: no raw microdata, no record keys, no
audit columns, no view that could reach back into the warehouse. It is written to a temporary file and
renamed, so a failed run leaves the previous publication as it was.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb

from .errors import SdcError

PROTECTED_SCHEMA = "protected"


def publish(db: str | Path, out: str | Path, parquet_dir: str | Path | None = None) -> list[str]:
    """Copy every table of schema ``protected`` of ``db`` into ``out`` (schema main); returns the names."""
    db, out = Path(db), Path(out)
    if not db.is_file():
        raise SdcError(f"warehouse database not found: {db}")
    con = duckdb.connect()  # in memory: the warehouse attached read-only, the publication read-write
    try:
        con.execute(f"attach '{_literal(db)}' as warehouse (read_only)")
        rows = con.execute(
            "select table_name, table_type from information_schema.tables "
            "where table_catalog = 'warehouse' and table_schema = ? order by 1",
            [PROTECTED_SCHEMA],
        ).fetchall()
        views = [name for name, kind in rows if kind != "BASE TABLE"]
        if views:
            raise SdcError(f"protected relations must be tables to be published, not views: {', '.join(views)}")
        tables = [name for name, _ in rows]
        if not tables:
            raise SdcError(f"{db} has no tables in schema {PROTECTED_SCHEMA!r}; run dbt build first")
        tmp = out.with_name(out.name + ".tmp")
        tmp.unlink(missing_ok=True)
        con.execute(f"attach '{_literal(tmp)}' as publication")
        for name in tables:
            con.execute(f'create table publication.main."{name}" as select * from warehouse.{PROTECTED_SCHEMA}."{name}"')
        con.execute("detach publication")
        if parquet_dir is not None:
            _write_parquet(con, tables, Path(parquet_dir))
    finally:
        con.close()
    os.replace(tmp, out)
    return tables


def _write_parquet(con, tables, folder: Path) -> None:
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in tables:
        con.execute(f"copy warehouse.{PROTECTED_SCHEMA}.\"{name}\" to '{_literal(tmp / (name + '.parquet'))}' (format parquet)")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)


def _literal(path: Path) -> str:
    return str(path).replace("'", "''")
