"""`sdc release a-priori`: a suppression table's cells in a release of the ledger, as the a-priori cells of the
next pattern (suppression/a_priori.py says how the suppression keeps them)."""

from __future__ import annotations

import json
from pathlib import Path

from sdc.conventions import A_PRIORI_STATUS_COLUMN, A_PRIORI_VALUE_COLUMN, PUBLISHED_TEXT_COLUMN
from sdc.errors import SdcError
from sdc.files import check_output_file, csv_field, write_text_atomically
from sdc.release.ledger import LEDGER_SCHEMA, open_ledger


def a_priori_rows(ledger: str | Path, relation: str, release: int | None = None) -> tuple[int, list[str], list[dict]]:
    """(release, dimensions, rows) of ``relation``'s cells in ``release`` (default the last): the dimensions,
    status 'suppressed' (no value published) or 'published', and the published value; from the ledger file
    ``ledger`` that sdc publish writes. Only a suppression table's cells (a value and published_text) qualify.

    >>> import json, pathlib, shutil, tempfile
    >>> import duckdb
    >>> from sdc.release import a_priori_rows, publish, write_a_priori
    >>> def build(folder, sql):  # what dbt seed leaves: a seed's file and table, the manifest that tags it
    ...     with duckdb.connect(str(folder / "warehouse.duckdb")) as con:
    ...         _ = con.execute(f"create schema if not exists protected; create or replace table protected.cells as {sql}")
    ...         _ = con.execute(f"copy protected.cells to '{folder / 'cells.csv'}' (header)")
    ...     node = {"resource_type": "seed", "name": "cells", "alias": "cells", "schema": "protected",
    ...             "database": "warehouse", "tags": ["sdc_publish"], "config": {"materialized": "seed"},
    ...             "depends_on": {"macros": [], "nodes": []}, "root_path": str(folder), "original_file_path": "cells.csv"}
    ...     _ = (folder / "manifest.json").write_text(json.dumps({"nodes": {"seed.census.cells": node}}))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> build(folder, "select * from (values ('N', 5, '5'), ('S', null, 'x'), ('Total', 9, '9')) "
    ...               "t(region, freq, published_text)")
    >>> publish(folder / "warehouse.duckdb", folder / "publication.duckdb", manifest=folder / "manifest.json")
    ['cells']
    >>> found = a_priori_rows(folder / "sdc_ledger.duckdb", "cells")
    >>> found  # doctest: +NORMALIZE_WHITESPACE
    (1, ['region'], [{'region': 'N', 'status': 'published', 'value': 5},
                     {'region': 'S', 'status': 'suppressed', 'value': None},
                     {'region': 'Total', 'status': 'published', 'value': 9}])
    >>> shutil.rmtree(folder)
    """
    con = open_ledger(ledger, create=False, read_only=True)
    try:
        return a_priori_rows_in(con, relation, release, f"the ledger {ledger}")
    finally:
        con.close()


def a_priori_rows_in(con, relation: str, release: int | None, where: str) -> tuple[int, list[str], list[dict]]:
    """a_priori_rows on a ledger's DuckDB connection (a file's, or a PostgreSQL ledger's copy); ``where`` names it."""
    releases = [r for (r,) in con.execute(f"select release_id from {LEDGER_SCHEMA}.releases order by 1").fetchall()]
    if not releases:
        raise SdcError(f"{where} holds no release yet")
    release = releases[-1] if release is None else release
    if release not in releases:
        raise SdcError(f"{where} has no release {release} (releases: {', '.join(map(str, releases))})")
    names = [n for (n,) in con.execute(f"select distinct relation from {LEDGER_SCHEMA}.cells where release_id = ? "
                                        "order by 1", [release]).fetchall()]
    # the relation as the ledger names it (schema.name), or its name alone where that is unique
    found = [n for n in names if n == relation] or [n for n in names if n.rsplit(".", 1)[-1] == relation]
    if len(found) != 1:
        raise SdcError(f"release {release} in {where} published "
                       + (f"{len(found)} relations named {relation!r}: give one of " if found else
                          f"no relation {relation!r} (it published: ")
                       + f"{', '.join(found or names) or 'none'}" + ("" if found else ")"))
    relation = found[0]
    cells = con.execute(f"select cell, published from {LEDGER_SCHEMA}.cells where release_id = ? and relation = ? "
                        "order by cell", [release, relation]).fetchall()
    rows, dims = [], None
    for cell_text, published_text in cells:
        cell, published = json.loads(cell_text), json.loads(published_text)
        measures = [m for m in published if m != PUBLISHED_TEXT_COLUMN]
        if PUBLISHED_TEXT_COLUMN not in published or len(measures) != 1:
            raise SdcError(f"{relation} is no suppression table (its cells publish {', '.join(published)}, not a "
                           f"value and {PUBLISHED_TEXT_COLUMN}): a-priori cells are a suppression's")
        dims = dims or list(cell)
        value = published[measures[0]]
        rows.append({**cell, A_PRIORI_STATUS_COLUMN: "suppressed" if value is None else "published",
                     A_PRIORI_VALUE_COLUMN: value})
    return release, dims or [], rows


def target_a_priori_rows(pg, relation: str, release: int | None = None) -> tuple[int, list[str], list[dict]]:
    """a_priori_rows of the ledger in the PostgreSQL database ``pg`` (release/ledger_postgres.py)."""
    from sdc.release.ledger_postgres import read_existing_ledger

    # the cells of the one release asked for (default the last), not of every release
    ledger = read_existing_ledger(pg, "last" if release is None else (release,))
    try:
        return a_priori_rows_in(ledger.con, relation, release, ledger.where)
    finally:
        ledger.close()


def write_a_priori(out: str | Path, found: tuple[int, list[str], list[dict]]) -> dict:
    """Writes ``found`` (a_priori_rows or a_priori_rows_in: release, dimensions, rows) to the CSV file ``out``;
    returns what was written. The file is what ``sdc suppress --a-priori`` reads for the next pattern.

    >>> import json, pathlib, shutil, tempfile
    >>> import duckdb
    >>> from sdc.release import a_priori_rows, publish, write_a_priori
    >>> def build(folder, sql):  # what dbt seed leaves: a seed's file and table, the manifest that tags it
    ...     with duckdb.connect(str(folder / "warehouse.duckdb")) as con:
    ...         _ = con.execute(f"create schema if not exists protected; create or replace table protected.cells as {sql}")
    ...         _ = con.execute(f"copy protected.cells to '{folder / 'cells.csv'}' (header)")
    ...     node = {"resource_type": "seed", "name": "cells", "alias": "cells", "schema": "protected",
    ...             "database": "warehouse", "tags": ["sdc_publish"], "config": {"materialized": "seed"},
    ...             "depends_on": {"macros": [], "nodes": []}, "root_path": str(folder), "original_file_path": "cells.csv"}
    ...     _ = (folder / "manifest.json").write_text(json.dumps({"nodes": {"seed.census.cells": node}}))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> build(folder, "select * from (values ('N', 5, '5'), ('S', null, 'x'), ('Total', 9, '9')) "
    ...               "t(region, freq, published_text)")
    >>> publish(folder / "warehouse.duckdb", folder / "publication.duckdb", manifest=folder / "manifest.json")
    ['cells']
    >>> found = a_priori_rows(folder / "sdc_ledger.duckdb", "cells")
    >>> write_a_priori(folder / "a_priori.csv", found)
    {'release': 1, 'cells': 3, 'suppressed': 1, 'published': 2}
    >>> print((folder / "a_priori.csv").read_text())
    region,status,value
    N,published,5
    S,suppressed,
    Total,published,9
    <BLANKLINE>
    >>> shutil.rmtree(folder)
    """
    check_output_file(out, "sdc release a-priori")
    release, dims, rows = found
    columns = dims + [A_PRIORI_STATUS_COLUMN, A_PRIORI_VALUE_COLUMN]
    lines = [",".join(csv_field(c) for c in columns)]
    lines += [",".join(csv_field("" if row[c] is None else str(row[c])) for c in columns) for row in rows]
    write_text_atomically(Path(out), "\n".join(lines) + "\n", command="sdc release a-priori")
    return {"release": release, "cells": len(rows),
            "suppressed": sum(r[A_PRIORI_STATUS_COLUMN] == "suppressed" for r in rows),
            "published": sum(r[A_PRIORI_STATUS_COLUMN] == "published" for r in rows)}
