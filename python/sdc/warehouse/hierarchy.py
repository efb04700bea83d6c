"""Hierarchy files: ``dimension, code, parent`` (the root has an empty parent and its code labels the
total), or the level format of sdcHierarchies/sdcTable ``dim, level, name`` with ``@`` for the root,
``@@`` for its children and so on, children listed after their parent."""

from __future__ import annotations

import os
from pathlib import Path

from sdc.errors import SdcError
from sdc.files import read_csv_rows
from sdc.quoting import temporary


def hierarchy_rows(source) -> list[tuple[str, str, str | None]]:
    """Rows (dimension, code, parent) of a hierarchy file (read_hierarchy) or of a pandas DataFrame with the
    columns dimension, code, parent (a missing or empty parent marks the root)."""
    if isinstance(source, (str, os.PathLike)):
        return read_hierarchy(source)
    if not hasattr(source, "itertuples"):
        raise SdcError(f"hierarchy must be a file path or a DataFrame (dimension, code, parent), got {type(source).__name__}")
    missing = {"dimension", "code", "parent"} - set(source.columns)
    if missing:
        raise SdcError(f"the hierarchy DataFrame needs the columns dimension, code, parent ({', '.join(sorted(missing))} missing)")
    return [(str(dim), str(code), None if parent is None or parent != parent or parent == "" else str(parent))
            for dim, code, parent in source[["dimension", "code", "parent"]].itertuples(index=False)]


def create_hierarchy_table(con, name: str, rows) -> None:
    """The table ``name`` (SQL, already quoted) as the seed sdc_hierarchies holds a hierarchy: dimension,
    code, parent as text, for the commands that render the macros on a DuckDB of their own."""
    con.execute(f"create {temporary(name)}table {name} (dimension varchar, code varchar, parent varchar)")
    if rows:
        con.executemany(f"insert into {name} values (?, ?, ?)", [tuple(r) for r in rows])


def read_hierarchy(path: str | Path) -> list[tuple[str, str, str]]:
    """Rows (dimension, code, parent) from either format; checks one root per dimension."""
    path = Path(path)
    read = read_csv_rows(path, "hierarchy file")
    rows = [r for r in read if any((v or "").strip() for v in r.values() if isinstance(v, str))]
    if not rows:
        header = path.read_text(encoding="utf-8-sig").strip()
        raise SdcError(f"hierarchy file {path} has no rows" + (" below its header" if header else ""))
    header = set(rows[0])
    if {"dimension", "code", "parent"} <= header:
        out = [(r["dimension"].strip(), r["code"].strip(), (r["parent"] or "").strip()) for r in rows]
    elif {"dim", "level", "name"} <= header:
        out = _from_levels(rows, path)
    else:
        raise SdcError(f"{path}: expected columns dimension,code,parent or dim,level,name; got {sorted(header)}")
    for dim, code, parent in out:  # the dbt seed that carries the hierarchy cannot be read with one (DuckDB's sniffer)
        if "\r" in dim + code + parent:
            raise SdcError(f"{path}: {next(t for t in (dim, code, parent) if chr(13) in t)!r} holds a carriage return; "
                           "a hierarchy code cannot")
    roots: dict[str, list[str]] = {}
    for dim, code, parent in out:
        if not parent:
            roots.setdefault(dim, []).append(code)
    for dim in dict.fromkeys(d for d, _, _ in out):
        if len(roots.get(dim, [])) != 1:
            raise SdcError(f"{path}: dimension {dim!r} needs exactly one root (a code without parent), has {roots.get(dim, [])}")
    return out


def _from_levels(rows: list[dict], path: Path) -> list[tuple[str, str, str]]:
    out = []
    stack: dict[str, list[str]] = {}  # dimension -> codes on the path from the root
    for line, row in enumerate(rows, start=2):
        dim, level, name = row["dim"].strip(), row["level"].strip(), row["name"].strip()
        depth = len(level)
        if not level or set(level) != {"@"}:
            raise SdcError(f"{path}, line {line}: level {level!r} must be one or more '@'")
        path_codes = stack.setdefault(dim, [])
        if depth > len(path_codes) + 1:
            raise SdcError(f"{path}, line {line}: {name!r} at level {level} has no parent one level up")
        del path_codes[depth - 1:]
        out.append((dim, name, path_codes[-1] if path_codes else ""))
        path_codes.append(name)
    return out
