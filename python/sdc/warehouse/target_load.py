"""`sdc load --target`: load microdata with record keys into the warehouse of a dbt profile's target.

The load itself is sdc.warehouse.loader's, run on a private in-memory DuckDB: the target's key store
(raw.<table>__record_keys) and load log (raw.sdc_loads) are read into it first, so a random-mode reload keeps
the stored keys and keyed mode gives the same key for the same id on every engine. The loaded table, the key
store and the load log then replace theirs in the target: on PostgreSQL in one transaction (on any error the
target keeps what it had), a table of the same columns by its rows only, so that views over it (a dbt staging
model over the source) and its grants stay; on Spark (a session target) through Parquet files, written in full
under staging names before they replace the old tables (sdc.warehouse.spark_target).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from sdc.conventions import KEY_STORE_SUFFIX, LOAD_LOG_TABLE, RAW_SCHEMA
from sdc.errors import SdcError
from sdc.warehouse.loader import LOAD_LOG_ADDED_LATER, LOAD_LOG_COLUMNS, LoadReport, create_key_store, load_microdata
from sdc.warehouse.profiles import connect_target, read_target
from sdc.quoting import quote_identifier, quote_literal

# PostgreSQL's types for DuckDB's, and back (information_schema's data_type names, numeric as numeric(p, s))
_TO_POSTGRES = {"VARCHAR": "text", "BIGINT": "bigint", "INTEGER": "integer", "SMALLINT": "smallint",
                "TINYINT": "smallint", "DOUBLE": "double precision", "FLOAT": "real", "BOOLEAN": "boolean",
                "UBIGINT": "numeric(20, 0)", "HUGEINT": "numeric(38, 0)", "UINTEGER": "bigint", "USMALLINT": "integer",
                "UTINYINT": "smallint", "DATE": "date", "TIMESTAMP": "timestamp without time zone",
                "TIMESTAMP WITH TIME ZONE": "timestamp with time zone"}
_FROM_POSTGRES = {"text": "VARCHAR", "character varying": "VARCHAR", "bigint": "BIGINT", "integer": "INTEGER",
                  "smallint": "SMALLINT", "double precision": "DOUBLE", "real": "FLOAT", "boolean": "BOOLEAN",
                  "date": "DATE", "timestamp without time zone": "TIMESTAMP",
                  "timestamp with time zone": "TIMESTAMP WITH TIME ZONE"}


def postgres_type(duckdb_type: str) -> str:
    decimal = re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", duckdb_type)
    if decimal:
        return f"numeric({decimal.group(1)}, {decimal.group(2)})"
    if duckdb_type not in _TO_POSTGRES:
        raise SdcError(f"a column of type {duckdb_type} cannot be loaded into PostgreSQL by sdc load; cast it in the input")
    return _TO_POSTGRES[duckdb_type]


def load_into_target(profiles_dir, profile: str, target: str | None, input_path, table: str, **options) -> LoadReport:
    r"""``sdc load --target``: ``load_microdata`` into the warehouse of ``target`` of ``profile`` in
    profiles_dir/profiles.yml (see the module docstring): a DuckDB target's file directly; PostgreSQL and Spark
    through an in-memory DuckDB that holds the table's stored keys and load log for the load; ``options`` are
    load_microdata's.

    >>> import pathlib, tempfile
    >>> from sdc.warehouse import load_into_target
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     folder = pathlib.Path(folder)
    ...     _ = (folder / "micro.csv").write_text("id,region\n1,N\n2,N\n3,S\n")
    ...     _ = (folder / "profiles.yml").write_text(
    ...         f"census:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
    ...         f"      path: {folder / 'warehouse.duckdb'}\n")
    ...     report = load_into_target(folder, "census", None, folder / "micro.csv", "people", id_column="id")
    >>> report.lines()
    ['loaded 3 rows into raw.people (3 rows written)', 'record keys: random, modulus 100000000, 0 kept, 3 new']
    """
    from sdc.warehouse.macro_renderer import private_workspace

    output = read_target(profiles_dir, profile, target)
    if output["type"] == "duckdb":  # its file: the load as it is
        return load_microdata(output["path"], input_path, table, **options)
    with connect_target(profiles_dir, profile, target) as where:
        # Spark through Parquet files and its session; PostgreSQL through CSV and COPY on its connection
        pull, push, through = ((_pull_spark, _push_spark, where) if where.type == "spark"
                               else (_pull, _push, where.connection))
        with private_workspace("load") as (con, folder):
            con.execute(f"create schema {RAW_SCHEMA}")
            kept = [f"{table}{KEY_STORE_SUFFIX}", LOAD_LOG_TABLE]
            for name in kept:
                pull(through, con, name, folder)
            report = load_microdata(con, input_path, table, **options)
            present = {r[0] for r in con.execute(
                "select table_name from duckdb_tables() where schema_name = ?", [RAW_SCHEMA]).fetchall()}
            push(con, through, [n for n in [table, *kept] if n in present], folder)
        return report


# key store and load log columns that those of earlier versions lack (the loader adds them)
_ADDED_LATER = ("id_type", *(column for column, _ in LOAD_LOG_ADDED_LATER))


def _create_kept_table(con, name: str) -> str:
    """The loader's own definition of a key store or the load log, keys included (its inserts rely on them)."""
    relation = f"{RAW_SCHEMA}.{quote_identifier(name)}"
    if name == LOAD_LOG_TABLE:
        con.execute(f"create table {relation} {LOAD_LOG_COLUMNS}")
    else:
        create_key_store(con, relation)
    return relation


def _fill_kept_table(con, name: str, columns: list[str], source: str | None) -> None:
    """The target's raw.<name> (its ``columns``, its rows by ``source``) into the loader's own table of that name
    in ``con``; a table of another shape (not written by sdc load) is one line naming it, before the target is
    changed."""
    import duckdb

    relation = _create_kept_table(con, name)
    own = [d[0] for d in con.execute(f"select * from {relation} limit 0").description]
    what = "the load log" if name == LOAD_LOG_TABLE else "the key store"
    missing = [c for c in own if c not in columns and c not in _ADDED_LATER]
    extra = [c for c in columns if c not in own]
    if missing or extra:
        raise SdcError(f"{RAW_SCHEMA}.{name} in the target is not {what} of sdc load: it has columns "
                       f"{', '.join(columns)}; sdc load's are {', '.join(own)}. Rename or drop that table first")
    if source is None:
        return
    try:
        con.execute(f"insert into {relation} by name {source}")
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0]
        raise SdcError(f"{RAW_SCHEMA}.{name} in the target is not {what} of sdc load: cannot read it ({first}). "
                       "Rename or drop that table first") from None


def _pull_spark(spark, con, name: str, folder: Path) -> None:
    """raw.<name> from Spark into the DuckDB ``con``, when the target has it (through Parquet)."""
    if not spark.has_table(RAW_SCHEMA, name):
        return
    path = spark.export_parquet(RAW_SCHEMA, name, folder)
    try:
        columns = spark.column_names(f"{spark.quote(RAW_SCHEMA)}.{spark.quote(name)}")
        source = (f"select * from read_parquet({quote_literal(str(path / '*.parquet'))})"
                  if any(path.glob("*.parquet")) else None)
        _fill_kept_table(con, name, columns, source)
    finally:
        shutil.rmtree(path)


def _push_spark(con, spark, names: list[str], folder: Path) -> None:
    """raw.<name> for each name from DuckDB into Spark, replacing them (all written before any is replaced)."""
    paths = {}
    for name in names:
        paths[name] = folder / f"push_{name}.parquet"
        con.execute(f"copy {RAW_SCHEMA}.{quote_identifier(name)} to {quote_literal(str(paths[name]))} (format parquet)")
    try:
        spark.replace_from_parquet(RAW_SCHEMA, paths)
    finally:
        for path in paths.values():
            path.unlink(missing_ok=True)


def _pull(pg, con, name: str, folder: Path) -> None:
    """raw.<name> from PostgreSQL into the DuckDB ``con``, when the target has it."""
    with pg.cursor() as cur:
        cur.execute("select column_name, data_type, numeric_precision, numeric_scale from information_schema.columns "
                    "where table_schema = %s and table_name = %s order by ordinal_position", (RAW_SCHEMA, name))
        columns = cur.fetchall()
        if not columns:
            return
        types = {}
        for column, kind, precision, scale in columns:
            types[column] = f"DECIMAL({precision}, {scale})" if kind == "numeric" and precision else \
                _FROM_POSTGRES.get(kind, "VARCHAR")
        path = folder / f"pull_{name}.csv"
        with path.open("w", encoding="utf-8") as handle:
            cur.copy_expert(f"copy {RAW_SCHEMA}.{quote_identifier(name)} to stdout with (format csv, header true)", handle)
    spec = "{" + ", ".join(f"{quote_literal(c)}: {quote_literal(t)}" for c, t in types.items()) + "}"
    try:
        _fill_kept_table(con, name, list(types), f"select * from read_csv({quote_literal(str(path))}, header = true, "
                         f"columns = {spec}, quote = '\"', escape = '\"', nullstr = '', allow_quoted_nulls = false)")
    finally:
        path.unlink()


def _push(con, pg, names: list[str], folder: Path) -> None:
    """raw.<name> for each name from DuckDB into PostgreSQL, replacing them, in one transaction."""
    try:
        with pg.cursor() as cur:
            cur.execute(f"create schema if not exists {RAW_SCHEMA}")
            for name in names:
                relation = f"{RAW_SCHEMA}.{quote_identifier(name)}"
                columns = [(c[0], postgres_type(c[1])) for c in con.execute(f"describe {relation}").fetchall()]
                path = folder / f"push_{name}.csv"
                con.execute(f"copy {relation} to {quote_literal(str(path))} (header, delimiter ',', quote '\"')")
                _empty_table(cur, name, columns)
                with path.open(encoding="utf-8") as handle:
                    cur.copy_expert(f"copy {relation} from stdin with (format csv, header true)", handle)
                path.unlink()
        pg.commit()
    except Exception:
        pg.rollback()
        raise


def _empty_table(cur, name: str, columns: list[tuple[str, str]]) -> None:
    """raw.<name> in PostgreSQL empty, with ``columns`` (name, type), for the new rows. A table of those columns
    keeps its definition and loses its rows only, so views over it stay (and show the new rows once the load
    commits) and so do its grants; one of other columns is dropped and made anew, which objects that depend on it
    (views) prevent: one line naming them (the caller rolls back, so nothing changes)."""
    relation = f"{RAW_SCHEMA}.{quote_identifier(name)}"
    present = _postgres_columns(cur, name)
    if present == columns:
        cur.execute(f"delete from {relation}")  # not truncate: readers keep seeing the old rows until commit
        return
    if present:
        dependents = _dependents(cur, relation)
        if dependents:
            typed = [c for c, _ in present] == [c for c, _ in columns]  # the same names: the types changed
            raise SdcError(f"{RAW_SCHEMA}.{name} in the target changes its columns ({_columns_text(present, typed)} "
                           f"-> {_columns_text(columns, typed)}), and these depend on it: {', '.join(dependents)}. "
                           "Drop them first (dbt build makes dbt's views again) or load under another --table; "
                           "nothing was changed")
        cur.execute(f"drop table {relation}")
    cur.execute(f"create table {relation} ("
                + ", ".join(f"{quote_identifier(c)} {kind}" for c, kind in columns) + ")")


def _columns_text(columns: list[tuple[str, str]], typed: bool) -> str:
    return ", ".join(f"{column} {kind}" if typed else column for column, kind in columns)


def _postgres_columns(cur, name: str) -> list[tuple[str, str]]:
    """(column, type as postgres_type spells it) of raw.<name> in PostgreSQL, in order; [] when there is none."""
    cur.execute("select column_name, data_type, numeric_precision, numeric_scale from information_schema.columns "
                "where table_schema = %s and table_name = %s order by ordinal_position", (RAW_SCHEMA, name))
    return [(column, f"numeric({precision}, {scale})" if kind == "numeric" and precision is not None else kind)
            for column, kind, precision, scale in cur.fetchall()]


def _dependents(cur, relation: str) -> list[str]:
    """What keeps PostgreSQL from dropping ``relation``: views (by name) and other objects (as PostgreSQL
    describes them) that depend on it."""
    cur.execute("""
        select distinct coalesce(
            (select format('%%s %%I.%%I', case v.relkind when 'm' then 'materialized view' else 'view' end,
                           n.nspname, v.relname)
             from pg_rewrite r join pg_class v on v.oid = r.ev_class join pg_namespace n on n.oid = v.relnamespace
             where d.classid = 'pg_rewrite'::regclass and r.oid = d.objid),
            pg_describe_object(d.classid, d.objid, d.objsubid))
        from pg_depend d
        where d.refclassid = 'pg_class'::regclass and d.refobjid = %s::regclass and d.deptype = 'n'
        order by 1""", (relation,))
    return [row[0] for row in cur.fetchall()]
