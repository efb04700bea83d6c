"""The sdc dbt macros rendered in this process, for the CLI and the Python API.

The warehouse SQL is the one implementation: ``macros/**/*.sql``. dbt renders them with Jinja2 and a large
context; the macros use a small part of it (``ref``, ``var``, ``run_query``, ``adapter.dispatch``,
``adapter.get_relation``, ``adapter.get_columns_in_relation``, ``exceptions.raise_compiler_error``, ``return``,
``config``, ``modules``, ``target``, ``execute``). This module gives them that part, backed by a DuckDB
connection, so ``sdc ckm`` and ``sdc.ckm.count_table`` render the same SQL that ``dbt compile`` writes
(tests/test_macro_renderer.py compares the two) and run it directly: no dbt process, no copied project.

dbt itself is not imported here (``import sdc`` must stay light); Jinja2 comes with dbt-core anyway.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import jinja2

from sdc.errors import SdcError
from sdc.quoting import quote_literal
from sdc.warehouse.scratch import package_dir, scratch_folder
from sdc.user_cache import user_cache_folder
from sdc.warehouse.database import duckdb_connect

# one {% macro name(...) %} ... {% endmacro %} block; dbt, too, compiles each block as a template of its own
_MACRO_BLOCK = re.compile(r"\{%-?\s*macro\s+(\w+)\s*\(.*?\{%-?\s*endmacro\s*-?%\}", re.DOTALL)
_DISPATCH_PREFIXES = ("duckdb__", "default__")


class _MacroReturn(Exception):
    """``{{ return(value) }}``: ends the macro with a value, as in dbt."""

    def __init__(self, value):
        super().__init__()
        self.value = value


def _return(value):
    raise _MacroReturn(value)


@dataclass(frozen=True)
class Relation:
    """A table or view, written as dbt-duckdb writes one: "database"."schema"."identifier"."""

    database: str | None
    schema: str | None
    identifier: str

    def __str__(self) -> str:
        parts = [p for p in (self.database, self.schema, self.identifier) if p is not None]
        return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


class _Row(tuple):
    """A result row that answers row[0] and row['name'], as an agate row does in dbt."""

    names: tuple[str, ...] = ()

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names.index(key))
        return tuple.__getitem__(self, key)


@dataclass
class _Column:
    name: str
    data: list

    def values(self) -> tuple:
        return tuple(self.data)


@dataclass
class QueryResult:
    """What ``run_query`` returns: ``.rows`` and ``.columns`` with ``.values()``, as dbt's agate table."""

    column_names: tuple[str, ...]
    rows: list = field(default_factory=list)

    @property
    def columns(self) -> list[_Column]:
        return [_Column(name, [row[k] for row in self.rows]) for k, name in enumerate(self.column_names)]


@dataclass(frozen=True)
class _ColumnInfo:
    name: str
    dtype: str


class _Config:
    """``config(...)`` in a macro sets model options (the build-record post-hook): nothing to do here."""

    def __call__(self, *args, **kwargs) -> str:
        return ""

    def get(self, key, default=None):
        return default


class _Graph:
    """dbt's ``graph`` as far as the macros use it: run_check_query's dict, one per rendering (a dbt invocation
    has one)."""

    @staticmethod
    def setdefault(key, default=None):
        return _current().graph.setdefault(key, default)


class _Exceptions:
    @staticmethod
    def raise_compiler_error(message):
        raise SdcError(str(message))

    @staticmethod
    def warn(message):
        """dbt's exceptions.warn: a warning that does not stop the rendering (sdc.errors.SdcWarning)."""
        import warnings

        from sdc.errors import SdcWarning

        warnings.warn(str(message), SdcWarning, stacklevel=2)
        return ""


@dataclass
class RememberedQueries:
    """The results of a rendering's queries that read ``relation``, a table whose rows are those of one
    unchanging object (a checked ptable), kept for the next rendering over the same object: the ptable checks
    of ckm_count scan a 160,000-interval table in 10 ms on every call. A query that names any of ``others``
    (the call's other relations, which hold its data) is run every time."""

    relation: str
    others: tuple[str, ...]
    results: dict = field(default_factory=dict)

    def kept(self, sql: str) -> bool:
        return self.relation in sql and not any(other in sql for other in self.others)


@dataclass
class MacroSession:
    """What one rendering needs: the connection its queries run on, vars, and the relations ref() names."""

    connection: object
    vars: dict = field(default_factory=dict)
    refs: dict = field(default_factory=dict)
    database: str = "memory"
    remembered: RememberedQueries | None = None
    graph: dict = field(default_factory=dict)  # dbt's graph dict: run_check_query keeps a rendering's checks there


_session: contextvars.ContextVar[MacroSession] = contextvars.ContextVar("sdc_macro_session")


def _current() -> MacroSession:
    try:
        return _session.get()
    except LookupError:
        raise SdcError("an sdc macro was called outside a macro session") from None


def _run_query(sql):
    session, sql = _current(), str(sql)
    remembered = session.remembered if session.remembered and session.remembered.kept(sql) else None
    if remembered and sql in remembered.results:
        return remembered.results[sql]
    result = _query_result(session.connection.execute(sql))
    if remembered:
        remembered.results[sql] = result
    return result


def _query_result(cursor) -> QueryResult:
    names = tuple(d[0] for d in cursor.description)
    rows = []
    for values in cursor.fetchall():
        row = _Row(values)
        row.names = names
        rows.append(row)
    return QueryResult(names, rows)


def _var(name, default=None):
    return _current().vars.get(name, default)


def _ref(name, *more):
    refs = _current().refs
    key = more[-1] if more else name
    if key not in refs:
        raise SdcError(f"ref({key!r}): no such relation in this run (known: {', '.join(sorted(refs)) or 'none'})")
    return refs[key]


class _Adapter:
    """The parts of dbt's ``adapter`` the macros call, for DuckDB."""

    def __init__(self, library: "MacroLibrary"):
        self._library = library

    def dispatch(self, name, macro_namespace=None):
        for prefix in _DISPATCH_PREFIXES:
            macro = self._library.macros.get(prefix + name)
            if macro is not None:
                return macro
        raise SdcError(f"no implementation of macro {name} for DuckDB")

    @staticmethod
    def quote(identifier):
        return '"' + str(identifier) + '"'

    @staticmethod
    def get_relation(database=None, schema=None, identifier=None):
        session = _current()
        # a schema that does not exist (the raw schema in a command's own DuckDB) is answered at once; the first
        # call of duckdb_tables() costs 10 ms
        if not session.connection.execute("select 1 from duckdb_schemas() where lower(schema_name) = lower(?)",
                                          [schema]).fetchall():
            return None
        row = session.connection.execute(
            "select database_name, schema_name, name from ("
            "select database_name, schema_name, table_name as name from duckdb_tables() union all "
            "select database_name, schema_name, view_name from duckdb_views() where not internal) "
            "where lower(schema_name) = lower(?) and lower(name) = lower(?)"
            + (" and database_name = ?" if database else ""),
            [schema, identifier] + ([database] if database else []),
        ).fetchone()
        return Relation(*row) if row else None

    @staticmethod
    def get_columns_in_relation(relation):
        described = _current().connection.execute(f"describe select * from {relation}").fetchall()
        return [_ColumnInfo(name, dtype) for name, dtype, *_ in described]


class _Target:
    type = "duckdb"

    @property
    def database(self):
        return _current().database

    schema = "main"


class _Namespace:
    """``sdc.<macro>``: the package's macros by name."""

    def __init__(self, macros: dict):
        self._macros = macros

    def __getattr__(self, name):
        try:
            return self._macros[name]
        except KeyError:
            raise AttributeError(name) from None


class _Macro:
    """A compiled macro as a function: catches ``return(...)`` and gives its value, else the rendered text."""

    def __init__(self, name: str, env: jinja2.Environment):
        self.name = name
        self._env = env

    @functools.cached_property
    def _jinja_macro(self):
        # compiled on first use (a command renders a few of the package's macros, not all of them), and
        # then taken from Jinja's bytecode cache, keyed by the macro's source: a new process skips compiling
        return getattr(self._env.get_template(self.name).module, self.name)

    def __call__(self, *args, **kwargs):
        try:
            return str(self._jinja_macro(*args, **kwargs))
        except _MacroReturn as returned:
            return returned.value


class MacroLibrary:
    """Every macro of the package's ``macros/`` folder, compiled once."""

    def __init__(self, folder: Path):
        self.macros: dict[str, _Macro] = {}
        sources: dict[str, str] = {}
        env = jinja2.Environment(
            extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"],
            loader=jinja2.FunctionLoader(sources.get),
            bytecode_cache=_bytecode_cache(),
        )
        env.globals.update(
            {
                "return": _return,
                "run_query": _run_query,
                "var": _var,
                "ref": _ref,
                "adapter": _Adapter(self),
                "exceptions": _Exceptions(),
                "config": _Config(),
                "target": _Target(),
                "execute": True,
                "graph": _Graph(),
                "invocation_id": "sdc-macro-renderer",
                "modules": {"re": re},
                "tojson": json.dumps,
                "fromjson": json.loads,
                "local_md5": lambda text: hashlib.md5(str(text).encode("utf-8")).hexdigest(),
                "sdc": _Namespace(self.macros),
            }
        )
        for path in sorted(folder.rglob("*.sql")):
            for block in _MACRO_BLOCK.finditer(path.read_text()):
                name = block.group(1)
                if name in self.macros:
                    raise SdcError(f"macro {name} is defined twice in {folder}")
                sources[name] = block.group(0)
                self.macros[name] = _Macro(name, env)
        env.globals.update(self.macros)  # the package's macros call each other by bare name too

    def call(self, name: str, *args, **kwargs):
        if name not in self.macros:
            raise SdcError(f"no macro {name} in the sdc package")
        return self.macros[name](*args, **kwargs)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled macros kept between processes (a command then renders in milliseconds, not a tenth of a
    second), in the user's cache folder (user_cache: sdc/jinja), keyed by the macros' text. None where that
    folder cannot be made the user's own: then every process compiles what it renders."""
    folder = user_cache_folder("jinja")
    return jinja2.FileSystemBytecodeCache(str(folder)) if folder else None


@functools.cache
def macro_library() -> MacroLibrary:
    return MacroLibrary(package_dir() / "macros")


@contextmanager
def macro_session(connection, vars: dict | None = None, refs: dict | None = None,
                  database: str = "memory", remembered: RememberedQueries | None = None) -> Iterator[MacroLibrary]:
    """Render macros against ``connection`` (their run_query calls run there) with these vars and refs."""
    token = _session.set(MacroSession(connection, dict(vars or {}), dict(refs or {}), database, remembered))
    try:
        yield macro_library()
    finally:
        _session.reset(token)


def render_macro(connection, name: str, *args, vars: dict | None = None, refs: dict | None = None,
                 database: str = "memory", remembered: RememberedQueries | None = None, **kwargs):
    """The text (or the returned value) of ``sdc.<name>(*args, **kwargs)``."""
    with macro_session(connection, vars, refs, database, remembered) as library:
        return library.call(name, *args, **kwargs)


# ------------------------------------------------------------------------------------------ running the SQL


@contextmanager
def private_connection(kind: str) -> Iterator:
    """An in-memory DuckDB for one command: what it spills beyond the memory limit (microdata) goes to a
    private folder (0700) that is removed at the end, also on an error or a signal (scratch.scratch_folder)."""
    with private_workspace(kind) as (con, _):
        yield con


@contextmanager
def private_workspace(kind: str) -> Iterator[tuple]:
    """private_connection and its private folder, for a command that also writes files of its own there
    (copies of tables on their way to or from another engine): (connection, folder)."""
    with scratch_folder(kind) as folder:
        con = duckdb_connect()
        try:
            con.execute(f"set temp_directory = {quote_literal(str(folder))}")
            yield con, folder
        finally:
            con.close()


_ENGINE_PREFIXES = ("Invalid Input Error: ", "Conversion Error: ", "Binder Error: ", "Constraint Error: ")


@contextmanager
def sql_errors() -> Iterator[None]:
    """An error the SQL raises inside (the macros' checks stop a query with error(...); a rendering runs
    queries too) becomes an SdcError with the engine's first line, which for those checks is the macro's
    message."""
    try:
        yield
    except duckdb.Error as exc:
        message = str(exc).strip().splitlines()[0]
        for prefix in _ENGINE_PREFIXES:
            message = message.removeprefix(prefix)
        raise SdcError(message) from None


def run_sql(con, sql: str):
    """Execute ``sql``, with its errors as SdcErrors (sql_errors)."""
    with sql_errors():
        return con.execute(sql)
