"""Microdata for the functions that protect one table (sdc.ckm.count_table, sdc ckm, the suppression
pipeline): a CSV/Parquet file, a pandas DataFrame, an Arrow table or a DuckDB relation, made readable as one
relation of the command's in-memory DuckDB. Nothing is written anywhere: DuckDB reads a DataFrame, an Arrow
table or a Parquet file where it lies, and parses a text file once into memory (only the needed columns)."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from sdc.errors import SdcError
from sdc.files import read_failure
from sdc.warehouse.loader import quote, source_sql

KINDS = "a pandas DataFrame, an Arrow table, a DuckDB relation or a .csv, .tsv, .txt or .parquet path"


def register_microdata(con, data, name: str, needed: list[str], numbers=(), temporary: bool = False
                       ) -> tuple[str, list[str]]:
    """Make ``data`` the relation ``name`` (a plain name) on ``con``; returns how messages name the data and
    all of its columns (a text file keeps only the needed ones, but a message lists what the file has).
    A text file's columns are text exactly as delivered (codes are never read as BOOLEAN or dates), but for
    ``numbers``, the numeric columns the command needs (record key, weight, value), which DuckDB reads as
    numbers (sdc.warehouse.loader.source_sql). ``temporary``: the relation goes to DuckDB's temp catalog, the connection's
    own (sdc.warehouse.shared_database)."""
    kind = "temp " if temporary else ""
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if path.is_dir():
            raise SdcError(f"input file {path} is a folder")
        source = source_sql(path, numbers=[c for c in numbers if c], con=con)
        try:
            if path.suffix.lower() == ".parquet":
                con.execute(f"create {kind}view {quote(name)} as select * from {source}")
            else:
                wanted = ", ".join(quote(c) for c in dict.fromkeys(needed))
                try:
                    con.execute(f"create {kind}table {quote(name)} as select {wanted} from {source}")
                except duckdb.BinderException:  # a needed column is missing: the caller names it, with the file's
                    pass
                else:
                    return str(path), list(dict.fromkeys(needed))
            return str(path), [r[0] for r in con.execute(f"describe select * from {source}").fetchall()]
        except duckdb.Error as exc:
            raise read_failure(exc, path) from None
    if isinstance(data, duckdb.DuckDBPyRelation):
        # a relation belongs to its own connection: its needed columns come over as Arrow
        kept = [c for c in data.columns if c in needed] or data.columns
        data = data.select(*[quote(c) for c in kept]).to_arrow_table()
    if not (hasattr(data, "columns") or hasattr(data, "schema")):
        raise SdcError(f"the microdata must be {KINDS}, got {type(data).__name__}")
    con.register(f"{name}_data", data)
    con.execute(f"create {kind}view {quote(name)} as select * from {quote(name + '_data')}")
    return "the data", [r[0] for r in con.execute(f"describe {quote(name)}").fetchall()]
