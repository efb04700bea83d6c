"""`sdc suppress` with several --dims: the tables of one microdata file protected by one pattern (linked.py).

Each table's cells, primary rules and relations come from the same macros as a single table's (pipeline.py);
a cell's records are keyed from the microdata (record_sets.py), so a cell that two tables share is one cell of
the joint problem; secondary suppression and the audit run once over all tables, and each table is written
from that one pattern: a shared cell has one status in every table, and what the tables publish together
leaves every primary cell its protection interval.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from sdc.conventions import TOTAL_LABEL
from sdc.errors import SdcError
from sdc.files import (
    check_not_an_input,
    check_output_file,
    csv_field,
    write_text_atomically,
)
from sdc.suppression.a_priori import APrioriCells, a_priori_cells, rows_of_frame
from sdc.suppression.hypercube import MISSING
from sdc.suppression.linked import LinkedCells, link_tables
from sdc.suppression.pipeline import (
    check_options,
    check_time_limit,
    protect_cells,
    registered_microdata,
    table_cells,
    table_frame,
    table_rows,
)
from sdc.suppression.record_sets import KeyedTable, record_set_keys
from sdc.suppression.secondary import DEFAULT_METHOD, DEFAULT_TIME_LIMIT
from sdc.warehouse.macro_renderer import private_connection


def table_name(dims: list[str]) -> str:
    """A linked table's name: its dimensions joined by '_' (the file name of `sdc suppress` with several --dims)."""
    return "_".join(re.sub(r"[^0-9A-Za-z]+", "-", d).strip("-") or "dim" for d in dims)


def suppressed_linked_tables(data, tables: list[list[str]], rules: list[str], *, hierarchy=None,
                             value: str | None = None, holding: str | None = None, preset: str = "handbook",
                             method: str = DEFAULT_METHOD, cost: str = "value", mark: str = "x",
                             publish_intervals: bool = False, prefer_low_levels: bool = False,
                             time_limit: float = DEFAULT_TIME_LIMIT, audit: bool = False, a_priori=None) -> dict:
    """Several tables of ``data`` (each a list of dimension columns) protected by one pattern: a dict of
    table_name -> DataFrame as suppressed_table gives for one table. Cells that hold the same records are one
    cell (one status in every table); the audit covers the equations of all tables together. ``a_priori``: a
    dict table_name -> the last release's cells of that table (DataFrame or CSV path). The other options are
    suppressed_table's.

    Persons by sex x region and by sex x age share the sex margins, one cell each, published in both tables;
    the pattern is audited over the equations of both tables together:

    >>> import pandas as pd
    >>> from sdc.suppression import suppressed_linked_tables
    >>> micro = pd.DataFrame({"sex": list("mmmmmmmfffffff"), "region": list("aaaaabbaaabbbb"),
    ...                       "age": list("oooooyooyoyoyy")})
    >>> tables = suppressed_linked_tables(micro, [["sex", "region"], ["sex", "age"]], ["freq:3"])
    >>> by_region = tables["sex_region"]
    >>> by_region[by_region.published_text == "x"][["sex", "region"]].values.tolist()
    [['f', 'a'], ['f', 'b'], ['m', 'a'], ['m', 'b']]
    >>> by_age = tables["sex_age"]
    >>> by_age[by_age.published_text == "x"][["sex", "age"]].values.tolist()
    [['f', 'o'], ['f', 'y'], ['m', 'o'], ['m', 'y']]
    """
    names = _checked_tables(tables)
    check_options(rules, value, method, cost, time_limit, tables[0], mark=mark)
    protected = _protected_tables(data, tables, names, rules, hierarchy, value, holding, preset, method, cost, mark,
                                  publish_intervals, prefer_low_levels, time_limit, audit, a_priori)
    return {name: table_frame(columns, rows, value) for name, (columns, rows, _) in protected.items()}


def suppress_linked_tables(input_path, tables: list[list[str]], rules: list[str], out_dir, *, hierarchy_path=None,
                           value: str | None = None, holding: str | None = None, preset: str = "handbook",
                           method: str = DEFAULT_METHOD, cost: str = "value", mark: str = "x",
                           publish_intervals: bool = False, prefer_low_levels: bool = False,
                           time_limit: float = DEFAULT_TIME_LIMIT, audit: bool = False, a_priori=None) -> dict:
    """Write each table of suppressed_linked_tables to ``out_dir``/<table_name>.csv (a folder that exists: sdc creates no folders for its outputs);
    ``a_priori``: a folder of the last release's cells, one <table_name>.csv per table (a table without a file
    has none). Returns table_name -> counts by status. Nothing is written unless every table is protected."""
    names = _checked_tables(tables)
    check_options(rules, value, method, cost, time_limit, mark=mark)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise SdcError(f"--out {out_dir} is a file; with several --dims it is a folder for one CSV per table")
    outs = {name: out_dir / f"{name}.csv" for name in names}
    last = _a_priori_files(a_priori, names)
    for out in outs.values():
        check_not_an_input(out, input_path, hierarchy_path, *last.values())
        check_output_file(out, "sdc suppress")
    protected = _protected_tables(input_path, tables, names, rules, hierarchy_path, value, holding, preset, method,
                                  cost, mark, publish_intervals, prefer_low_levels, time_limit, audit, last or None)
    for name, (columns, rows, _) in protected.items():
        lines = [",".join(csv_field(c) for c in columns)]
        lines += [",".join(csv_field(row[c]) for c in columns) for row in rows]
        write_text_atomically(outs[name], "\n".join(lines) + "\n", command="sdc suppress")
    return {name: counts for name, (_, _, counts) in protected.items()}


def linked_cells(con, tables: list[list[str]], names: list[str], rules, hierarchy, value, holding,
                 preset) -> tuple[list[tuple[list[dict], list]], LinkedCells]:
    """(per table its cells and relations, the tables as one problem) of the microdata registered in ``con``."""
    per_table = [table_cells(con, dims, rules, hierarchy, value, holding, preset, prefix=f"sdc_t{t}_")
                 for t, dims in enumerate(tables)]
    linked = keyed_link(con, "micro", per_table, tables, names,
                        hierarchy="sdc_hierarchies" if hierarchy is not None else None)
    return per_table, linked


def keyed_link(con, source: str, per_table, tables: list[list[str]], names: list[str], *, hierarchy: str | None,
               total: str = TOTAL_LABEL) -> LinkedCells:
    """The tables (per table its cells and relations) as one problem, a cell keyed by the records of ``source``
    (SQL) it holds; ``hierarchy``: the SQL name of the hierarchy the cells were made with."""
    found = record_set_keys(con, source, [KeyedTable(dims, hierarchy, total) for dims in tables])
    keys = []
    for (cells, _), dims, name, by_codes in zip(per_table, tables, names, found):
        table_keys = []
        for c in cells:
            codes = tuple(None if c[d] is None else str(c[d]) for d in dims)
            if codes not in by_codes:
                raise SdcError(f"linked tables: the records of the cell ({', '.join(map(str, codes))}) of {name} "
                               "cannot be found in the microdata")
            table_keys.append(by_codes[codes][0])
        keys.append(table_keys)
    return link_tables([cells for cells, _ in per_table], [relations for _, relations in per_table], keys, names,
                       dims=tables)


def protect_linked(per_table, linked: LinkedCells, tables, names, *, magnitude: bool, a_priori: dict | None = None,
                   **options) -> list[list[dict]]:
    """One pattern of the linked problem (protect_cells's options), as per table one PATTERN_COLUMNS dict per
    cell; ``a_priori``: table name -> the last release's cells of that table."""
    last = _joint_a_priori(per_table, linked, tables, names, a_priori) if a_priori else None
    codes = _joint_codes(per_table, linked, tables) if options.get("method") == "hypercube" else None
    protected = protect_cells(linked.cells, linked.relations, magnitude=magnitude, a_priori=last,
                              coordinates=codes, **options)
    return [[protected[u] for u in linked.cell_of[t]] for t in range(len(tables))]


def _protected_tables(data, tables, names, rules, hierarchy_path, value, holding, preset, method, cost, mark,
                      publish_intervals, prefer_low_levels, time_limit, audit, a_priori) -> dict:
    """table_name -> (columns, rows, counts) of every table, from one pattern."""
    union: list[str] = []
    for dims in tables:
        union += [d for d in dims if d not in union]
    with private_connection("suppress") as con:
        hierarchy = registered_microdata(con, data, union, rules, hierarchy_path, value, holding)
        per_table, linked = linked_cells(con, tables, names, rules, hierarchy, value, holding, preset)
    protected = protect_linked(per_table, linked, tables, names, magnitude=value is not None, a_priori=a_priori,
                               method=method, cost=cost, mark=mark, publish_intervals=publish_intervals,
                               prefer_low_levels=prefer_low_levels, time_limit=check_time_limit(time_limit),
                               intervals="all" if audit else "none")
    return {name: table_rows(cells, protected[t], dims, value=value, audit=audit, publish_intervals=publish_intervals)
            for t, ((cells, _), dims, name) in enumerate(zip(per_table, tables, names))}


def _joint_codes(per_table, linked: LinkedCells, tables) -> list[list[tuple]]:
    """Each joint cell's codes over the dimensions of all tables, one combination per place it has: a table's
    cell has its own codes and the total of every other dimension (MISSING where no table shows which code that
    is). A cell that two code combinations hold (the same records, such as a group with one non-empty part) has
    both."""
    union: list[str] = []
    for dims in tables:
        union += [d for d in dims if d not in union]
    totals = _dimension_totals(per_table, tables)
    joint = []
    for rows in linked.instances:
        places: list[tuple] = []
        for t, k in rows:
            cell = per_table[t][0][k]
            place = tuple(cell[d] if d in tables[t] else totals.get(d, MISSING) for d in union)
            if place not in places:
                places.append(place)
        joint.append(places)
    return joint


def _dimension_totals(per_table, tables) -> dict:
    """Each dimension's total code: the code of a table's cells that no relation along the dimension has as a
    part (where the tables show exactly one)."""
    parts: dict[str, set] = {}
    seen: dict[str, set] = {}
    for (cells, relations), dims in zip(per_table, tables):
        for d in dims:
            seen.setdefault(d, set()).update(c[d] for c in cells)
        for relation in relations:
            total = next(cells[row] for row, coefficient in relation if coefficient > 0)
            for row, coefficient in relation:
                if coefficient < 0:
                    for d in dims:
                        if cells[row][d] != total[d]:
                            parts.setdefault(d, set()).add(cells[row][d])
    found = {d: codes - parts.get(d, set()) for d, codes in seen.items()}
    return {d: codes.pop() for d, codes in found.items() if len(codes) == 1}


def _joint_a_priori(per_table, linked: LinkedCells, tables, names, a_priori: dict) -> APrioriCells:
    """The last release's cells of each table over the joint cells: a cell any table published with today's
    value is public (so no longer kept suppressed: suppressing it now would protect nothing); one any table
    suppressed stays suppressed."""
    unknown = [name for name in a_priori if name not in names]
    if unknown:
        raise SdcError(f"a-priori cells for {unknown[0]!r}, which is none of the tables ({', '.join(names)})")
    n = len(linked.cells)
    suppressed, known, unmatched = np.zeros(n, bool), np.zeros(n, bool), 0
    for t, ((cells, _), dims, name) in enumerate(zip(per_table, tables, names)):
        if name not in a_priori:
            continue
        own = a_priori_cells(cells, dims, rows_of_frame(a_priori[name]))
        index = np.asarray(linked.cell_of[t])
        np.logical_or.at(suppressed, index, own.suppressed)
        np.logical_or.at(known, index, own.known)
        unmatched += own.unmatched
    return APrioriCells(suppressed & ~known, known, unmatched)


def _checked_tables(tables) -> list[str]:
    if isinstance(tables, str) or not isinstance(tables, (list, tuple)) or len(tables) < 2:
        raise SdcError(f"linked tables: give a list of at least two tables (each a list of dimension columns), "
                       f"got {tables!r}")
    for dims in tables:
        if isinstance(dims, str) or not dims or not all(isinstance(d, str) for d in dims):
            raise SdcError(f"linked tables: each table is a non-empty list of column names, got {dims!r}")
    names = [table_name(list(dims)) for dims in tables]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise SdcError(f"linked tables: the table {twice!r} is given twice")
    return names


def _a_priori_files(a_priori, names: list[str]) -> dict:
    """The last release's cell files in the folder ``a_priori``: <table_name>.csv per table that has one."""
    if a_priori is None:
        return {}
    if isinstance(a_priori, dict):
        return a_priori
    folder = Path(a_priori)
    if not folder.is_dir():
        raise SdcError(f"--a-priori {folder}: with several --dims it is a folder of <table>.csv files "
                       f"({', '.join(f'{n}.csv' for n in names)})")
    files = {name: folder / f"{name}.csv" for name in names if (folder / f"{name}.csv").is_file()}
    if not files:
        raise SdcError(f"--a-priori {folder} holds none of {', '.join(f'{n}.csv' for n in names)}")
    return files
