"""``sdc sql install``: the Cell Key Method as DuckDB macros in a warehouse, for ad-hoc SQL.

An analyst then protects any GROUP BY, ROLLUP, CUBE or GROUPING SETS with ``sdc_ckm(count, key_sum)`` and
gets the numbers the dbt models publish, because the macros use the same perturbation table and the same
record-key modulus:

ptable    by default the warehouse's own: the one relation named ``sdc_ptable`` (a seed or model, any
          schema) with the ptable columns, read through the view ``sdc_ckm.ptable_intervals``, so a later
          ``dbt seed`` is used at once. Several such relations: choose with ``ptable_relation``. A ptable
          file (``ptable_path``) is an explicit choice; it is refused when the warehouse has an
          ``sdc_ptable`` with other intervals (two ptables would publish two noisy values of one cell,
          which gives the original away). A file equal to the warehouse's ptable installs the view on the
          warehouse's ptable; without one, a copy in ``sdc_ckm.ptable_file``.
modulus   the one the microdata were loaded with (``raw.sdc_loads``, every load still in the warehouse
          must agree); a different ``modulus`` is refused. No load recorded: ``modulus`` or 10^8.

The SQL is rendered by the dbt operation ``install_sql_macros`` (the same pieces as ``ckm_count``) in a
throwaway project and executed here in one transaction: any error leaves the warehouse, and the macros
installed before, unchanged. Every name that reaches SQL is looked up in the catalog with bound
parameters and double-quoted.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from sdc.conventions import DEFAULT_KEY_MODULUS, LOAD_LOG_TABLE, PTABLE_COLUMNS, PTABLE_SEED_COLUMN_TYPES, RAW_SCHEMA
from sdc.warehouse.database import connect, duckdb_connect, transaction
from sdc.errors import SdcError
from sdc.files import disk_full
from sdc.quoting import quote_identifier, quote_path
from sdc.ptable.formats import REUSE_FROM_COLUMN, parse_ptable, read_ptable, render_ptable
from sdc.ptable.table import PTable
from sdc.ptable.relation import create_ptable_table
from sdc.warehouse.macro_renderer import render_macro

SCHEMA = "sdc_ckm"             # what the install owns: never taken for the warehouse's ptable
PTABLE_NAME = "sdc_ptable"     # the seed's name (ckm_count's default ref('sdc_ptable'))
FILE_TABLE = "ptable_file"     # copy of a --ptable file when the warehouse has no ptable of its own
MAX_MODULUS = 2**62
_PART = re.compile(r'"((?:[^"]|"")+)"|([^".\s]+)')


@dataclass(frozen=True)
class Relation:
    schema: str
    name: str

    @property
    def sql(self) -> str:
        return f"{quote_identifier(self.schema)}.{quote_identifier(self.name)}"

    @property
    def label(self) -> str:
        plain = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
        return ".".join(p if plain.match(p) else quote_identifier(p) for p in (self.schema, self.name))


def install(
    db: str | Path,
    ptable_path: str | Path | None = None,
    modulus: int | None = None,
    ptable_relation: str | None = None,
    reuse_from: int | None = None,
) -> str:
    r"""``sdc sql install``: install the macros sdc_ckm, sdc_noise and sdc_cell_key (see the module's text) into
    the existing DuckDB file ``db``; returns one line saying what was installed. In the package's API:
    ``sdc.warehouse.install_sql_macros``.

    Relative paths are taken from the caller's working directory. Running it again replaces what it installed.
    ``sdc_ckm(count, key_sum)`` is the count perturbed as ckm_count perturbs it, key_sum the sum of the
    counted records' keys (the key fact rk_f of a fact f):

    >>> import pathlib, tempfile
    >>> import duckdb
    >>> from sdc.ptable import PTableParams, create_ptable, write_ptable
    >>> from sdc.warehouse import install_sql_macros, load_microdata
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     folder = pathlib.Path(folder)
    ...     _ = (folder / "micro.csv").write_text("id,region,ef28\n1,N,1\n2,N,3\n3,N,3\n4,S,4\n5,S,1\n6,S,3\n")
    ...     _ = load_microdata(folder / "warehouse.duckdb", folder / "micro.csv", "students", id_column="id",
    ...                        key_mode="keyed", secret=b"a secret of 16 bytes or more", facts={"f_first": "ef28 = 1"})
    ...     write_ptable(create_ptable(PTableParams(D=3, V=1)).table, folder / "ptable.csv")
    ...     print(install_sql_macros(folder / "warehouse.duckdb", folder / "ptable.csv"))
    ...     with duckdb.connect(str(folder / "warehouse.duckdb")) as con:
    ...         rows = con.execute("select region, sdc_ckm(sum(f_first), sum(rk_f_first)) from raw.students "
    ...                            "group by rollup (region) order by region").fetchall()
    ... # doctest: +ELLIPSIS
    installed sdc_ckm, sdc_noise, sdc_cell_key in .../warehouse.duckdb: modulus 100000000 (as loaded: raw.students), ptable .../ptable.csv (--ptable; copied to sdc_ckm.ptable_file; rows 0..3; counts above 3 use row 3)
    >>> rows
    [('N', 2), ('S', 1), (None, 1)]
    """
    if modulus is not None and (isinstance(modulus, bool) or not isinstance(modulus, int) or not 2 <= modulus <= MAX_MODULUS):
        raise SdcError(f"--modulus must be a whole number in [2, 2^62], got {modulus!r}")
    if reuse_from is not None and (isinstance(reuse_from, bool) or not isinstance(reuse_from, int) or reuse_from < 1):
        raise SdcError(f"--reuse-from must be a whole number >= 1, got {reuse_from!r}")
    if ptable_path is not None and ptable_relation is not None:
        raise SdcError("give --ptable FILE or --ptable-relation schema.name, not both")
    db = Path(os.path.abspath(db))
    file_table = read_ptable(Path(os.path.abspath(ptable_path)))[0] if ptable_path is not None else None
    con = _open(db)
    try:
        source, table, (ptable_name, ptable_how) = _choose_ptable(con, ptable_path, file_table, ptable_relation)
        modulus, modulus_text = _modulus(con, modulus)
        if reuse_from is not None and table.reuse_from is not None and reuse_from != table.reuse_from:
            raise SdcError(f"the ptable {ptable_name} reuses rows from {table.reuse_from} on (its column "
                           f"{REUSE_FROM_COLUMN}), but --reuse-from {reuse_from} was asked for: one table, one rule")
        reuse_from = reuse_from if reuse_from is not None else table.reuse_from
        if reuse_from is not None and reuse_from > table.max_i:
            raise SdcError(f"--reuse-from {reuse_from} is above the last ptable row {table.max_i}")
        relation = source or Relation(SCHEMA, FILE_TABLE)
        statements = _render(relation.sql, modulus, reuse_from)
        _execute(con, statements, table if source is None else None, db)
    finally:
        con.close()
    larger = (f"counts above {table.max_i} reuse rows {reuse_from}..{table.max_i}" if reuse_from is not None
              else f"counts above {table.max_i} use row {table.max_i}")
    return (f"installed sdc_ckm, sdc_noise, sdc_cell_key in {db}: modulus {modulus} ({modulus_text}), "
            f"ptable {ptable_name} ({ptable_how}; rows 0..{table.max_i}; {larger})")


# ------------------------------------------------------------------------------------------ the database


def _open(db: Path) -> duckdb.DuckDBPyConnection:
    if not db.exists():
        raise SdcError(f"database file not found: {db}; sdc sql install adds macros to an existing warehouse")
    return connect(db, must_exist=True)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _execute(con: duckdb.DuckDBPyConnection, statements: tuple[str, ...], file_table: PTable | None, db: Path) -> None:
    """Remove what earlier installs left in the way, copy the file's ptable if needed, run the statements:
    one transaction."""
    try:
        with transaction(con):
            _replace_macros(con, statements, file_table)
    except duckdb.Error as exc:
        raise SdcError(f"installing the SQL macros failed: {disk_full(exc, db) or _one_line(exc)}") from None


def _replace_macros(con, statements: tuple[str, ...], file_table: PTable | None) -> None:
    """Drop what earlier installs left in the way, copy the file's ptable if needed, run the statements."""
    kinds = dict(con.execute(
        "select table_name, table_type from information_schema.tables "
        "where table_catalog = current_database() and table_schema = ?", [SCHEMA]).fetchall())
    for name in ("sdc_ptable", "ptable_intervals", "ptable_lookup", FILE_TABLE):
        if name in kinds and not (name == FILE_TABLE and file_table is not None):
            kind = "view" if kinds[name] == "VIEW" else "table"
            con.execute(f"drop {kind} {SCHEMA}.{quote_identifier(name)}")
    if file_table is not None:
        _copy_ptable(con, file_table)
    for statement in statements:
        con.execute(statement)


def _copy_ptable(con: duckdb.DuckDBPyConnection, table: PTable) -> None:
    con.execute(f"create schema if not exists {SCHEMA}")
    create_ptable_table(con, f"{SCHEMA}.{FILE_TABLE}", table)


# ------------------------------------------------------------------------------------------ the ptable


def _choose_ptable(con, ptable_path, file_table: PTable | None, ptable_relation: str | None):
    """(relation to read, or None for the file's copy; the validated table; (name, how) for the report)."""
    candidates = _ptable_relations(con)
    if ptable_relation is not None:
        relation = _find_relation(con, ptable_relation, candidates)
        return relation, _read_relation(con, relation), (relation.label, "--ptable-relation")
    if file_table is not None:
        for relation in candidates:
            difference = _difference(file_table, _read_relation(con, relation))
            if difference:
                raise SdcError(
                    f"--ptable {ptable_path} differs from the warehouse's ptable {relation.label} ({difference}); "
                    "the published tables use the warehouse's: install without --ptable to use it, or seed "
                    f"{ptable_path} and rebuild the tables first (two ptables give two noisy values of one cell)"
                )
        if len(candidates) == 1:
            return candidates[0], file_table, (str(ptable_path), f"--ptable; equal to {candidates[0].label}, read from there")
        return None, file_table, (str(ptable_path), f"--ptable; copied to {SCHEMA}.{FILE_TABLE}")
    if not candidates:
        raise SdcError(
            f"the warehouse has no ptable: no table or view named {PTABLE_NAME} with the columns "
            f"{', '.join(PTABLE_COLUMNS)}; run `dbt seed` (or `dbt build`) in your dbt project first, "
            "or give --ptable FILE"
        )
    if len(candidates) > 1:
        raise SdcError(
            f"the warehouse has {len(candidates)} ptables named {PTABLE_NAME}: "
            f"{', '.join(r.label for r in candidates)}; choose the one the published tables use with "
            "--ptable-relation schema.name"
        )
    return candidates[0], _read_relation(con, candidates[0]), (candidates[0].label, "the warehouse's, read through a view")


def _ptable_relations(con) -> list[Relation]:
    """Every table or view named sdc_ptable with the ptable columns, outside the install's own schema."""
    rows = con.execute(
        """
        select t.table_schema, t.table_name
        from information_schema.tables as t
        join information_schema.columns as c
          on c.table_catalog = t.table_catalog and c.table_schema = t.table_schema and c.table_name = t.table_name
        where t.table_catalog = current_database() and lower(t.table_name) = ? and t.table_schema <> ?
          and lower(c.column_name) in (select unnest(?))
        group by all
        having count(distinct lower(c.column_name)) = ?
        order by all
        """,
        [PTABLE_NAME, SCHEMA, list(PTABLE_COLUMNS), len(PTABLE_COLUMNS)],
    ).fetchall()
    return [Relation(schema, name) for schema, name in rows]


def _find_relation(con, text: str, candidates: list[Relation]) -> Relation:
    """The relation --ptable-relation names: schema.name (parts may be double-quoted), or a name alone
    when it is unique. Looked up in the catalog with bound parameters, never pasted into SQL."""
    found = ", ".join(r.label for r in candidates) or "none"
    parts = _split_name(text)
    if parts is None:
        raise SdcError(f"--ptable-relation {text!r} is not a relation name schema.name (ptables named {PTABLE_NAME}: {found})")
    (schema, schema_quoted), (name, name_quoted) = parts if len(parts) == 2 else ((None, False), parts[0])
    rows = con.execute(
        "select table_schema, table_name from information_schema.tables where table_catalog = current_database() "
        "and (case when ? then table_name = ? else lower(table_name) = lower(?) end) "
        "and (? is null or (case when ? then table_schema = ? else lower(table_schema) = lower(?) end)) order by all",
        [name_quoted, name, name, schema, schema_quoted, schema, schema],
    ).fetchall()
    if not rows:
        raise SdcError(f"--ptable-relation {text!r}: no table or view of that name in the warehouse (ptables named {PTABLE_NAME}: {found})")
    if len(rows) > 1:
        listed = ", ".join(Relation(*row).label for row in rows)
        raise SdcError(f"--ptable-relation {text!r} names {len(rows)} relations ({listed}); give schema.name")
    relation = Relation(*rows[0])
    if relation.schema == SCHEMA:
        raise SdcError(f"--ptable-relation {relation.label}: schema {SCHEMA} belongs to sdc sql install; name the seed")
    columns = {row[0].lower() for row in con.execute(
        "select column_name from information_schema.columns where table_catalog = current_database() "
        "and table_schema = ? and table_name = ?", [relation.schema, relation.name]).fetchall()}
    missing = [c for c in PTABLE_COLUMNS if c not in columns]
    if missing:
        raise SdcError(f"--ptable-relation {relation.label} is not a ptable: it has no column {', '.join(missing)}")
    return relation


def _split_name(text: str) -> list[tuple[str, bool]] | None:
    """[(part, quoted)] of 'name', 'schema.name', '"sch.ema"."na""me"'; None if it is not of that form."""
    if any(ord(ch) < 32 for ch in text):
        return None
    parts, pos = [], 0
    while True:
        match = _PART.match(text, pos)
        if not match:
            return None
        parts.append((match.group(1).replace('""', '"'), True) if match.group(1) is not None else (match.group(2), False))
        pos = match.end()
        if pos == len(text):
            return parts if len(parts) <= 2 else None
        if text[pos] != ".":
            return None
        pos += 1


def _read_relation(con, relation: Relation) -> PTable:
    """The relation's rows, checked as a ptable file is (the same parser and messages), with the reuse rule
    of its column reuse_from where it has one (a seeded sdc file of an ONS table), as ckm_count reads it."""
    try:
        names = [d[0].lower() for d in con.execute(f"select * from {relation.sql} limit 0").description]
        columns = list(PTABLE_COLUMNS) + ([REUSE_FROM_COLUMN] if REUSE_FROM_COLUMN in names else [])
        rows = con.execute(
            f"select {', '.join(columns)} from {relation.sql} order by i, p_int_lb, p_int_ub").fetchall()
    except duckdb.Error as exc:
        raise SdcError(f"cannot read the ptable {relation.label}: {_one_line(exc)}") from None
    lines = [",".join(columns)]
    lines += [",".join("" if value is None else str(value) for value in row) for row in rows]
    return parse_ptable("\n".join(lines) + "\n", "sdc", source=f"ptable {relation.label} (rows ordered by i, p_int_lb)")[0]


def _difference(a: PTable, b: PTable) -> str | None:
    """Where two ptables' intervals differ first, in words; None if they are the same."""
    def rows(t: PTable) -> dict[int, list[tuple[int, int, int]]]:
        out: dict[int, list[tuple[int, int, int]]] = {}
        for i, j, lb, ub in zip(t.i, t.j, t.lb_units, t.ub_units):
            out.setdefault(int(i), []).append((int(j) - int(i), int(lb), int(ub)))
        return out

    ra, rb = rows(a), rows(b)
    if ra == rb:
        return None
    if max(ra) != max(rb):
        return f"rows 0..{max(ra)} against 0..{max(rb)}"
    first = min(i for i in ra if ra[i] != rb.get(i))
    return f"first in row i={first}"


# ------------------------------------------------------------------------------------------ the modulus


def _modulus(con, modulus: int | None) -> tuple[int, str]:
    """The key modulus of the loads still in the warehouse; --modulus must agree with it."""
    has_log = con.execute(
        "select count(*) from information_schema.tables where table_catalog = current_database() "
        "and table_schema = ? and table_name = ?", [RAW_SCHEMA, LOAD_LOG_TABLE]).fetchone()[0]
    loads = []
    if has_log:
        loads = con.execute(
            f"select l.table_name, l.modulus from {quote_identifier(RAW_SCHEMA)}.{quote_identifier(LOAD_LOG_TABLE)} as l "
            "where exists (select 1 from information_schema.tables as t where t.table_catalog = current_database() "
            "and t.table_schema = ? and t.table_name = l.table_name) order by l.table_name",
            [RAW_SCHEMA]).fetchall()
    moduli: dict[int, list[str]] = {}
    for table, m in loads:
        moduli.setdefault(int(m), []).append(f"{RAW_SCHEMA}.{table}")
    if len(moduli) > 1:
        listed = "; ".join(f"modulus {m}: {', '.join(tables)}" for m, tables in sorted(moduli.items()))
        raise SdcError(
            f"the loads in {RAW_SCHEMA}.{LOAD_LOG_TABLE} have different record-key moduli ({listed}); one set of "
            "SQL macros serves one modulus: reload the tables with one modulus"
        )
    if moduli:
        (recorded, tables), = moduli.items()
        if modulus is not None and modulus != recorded:
            raise SdcError(
                f"--modulus {modulus} differs from the modulus {recorded} that {tables[0]} was loaded with "
                f"({RAW_SCHEMA}.{LOAD_LOG_TABLE}); its cell keys need modulus {recorded}"
            )
        return recorded, f"as loaded: {', '.join(tables)}"
    if modulus is not None:
        return modulus, "--modulus; no load recorded"
    return DEFAULT_KEY_MODULUS, f"the default; no load recorded in {RAW_SCHEMA}.{LOAD_LOG_TABLE}"


# ------------------------------------------------------------------------------------------ rendering


@functools.lru_cache(maxsize=16)
def _render(ptable_sql: str, modulus: int, reuse_from: int | None) -> tuple[str, ...]:
    """The statements of the macro sdc_sql_macro_statements (what the dbt operation install_sql_macros
    logs), rendered in this process. Rendering depends on nothing but the arguments and the macros."""
    con = duckdb_connect()
    try:
        return tuple(render_macro(con, "sdc_sql_macro_statements", ptable_sql, modulus, reuse_from))
    finally:
        con.close()