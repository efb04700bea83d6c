"""A connection to the warehouse of a dbt profile's target, for the steps that run in Python between two dbt
selections (secondary suppression and its audit on engines without dbt Python models): the same profiles.yml
dbt reads, so the step reads and writes where the models are.

    with connect_target(profiles_dir="~/.dbt", profile="census", target="pg") as target:
        names, rows = target.query("select ...")
        target.replace_tables([("audit.pattern", {"column": [values...]})])   # all at once, or none

PostgreSQL and DuckDB: a DB-API connection (target.connection), one transaction. Spark (method session):
sdc.warehouse.spark_target.SparkWarehouse.

Which profile and profiles.yml, as dbt chooses them (dbt-core 1.11, dbt/cli/resolvers.py): the profile is
--profile, else the ``profile:`` of the project's dbt_project.yml (the project: --project-dir, else
$DBT_PROJECT_DIR, else the working directory or its nearest parent holding dbt_project.yml); profiles.yml lies
in --profiles-dir, else $DBT_PROFILES_DIR, else the working directory if it holds one, else ~/.dbt.

profiles.yml may use ``{{ env_var('NAME') }}`` and ``{{ env_var('NAME', 'default') }}`` and dbt's filters
(as_number, as_bool, as_text, as_native), rendered as dbt renders it: the YAML is read first, then each text
value is rendered in a sandboxed Jinja environment, so a template that reaches for Python's internals
(``env_var.__globals__``) is refused and runs nothing, and a value is text unless a filter makes it a number
or a bool.
"""

from __future__ import annotations

import ast
import contextlib
import datetime
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from sdc.errors import SdcError
from sdc.files import read_text
from sdc.warehouse.column_types import column_type, plain_value
from sdc.quoting import quote_identifier, quote_literal
from sdc.warehouse.database import duckdb_connect

ENGINES = ("postgres", "duckdb", "spark")


@dataclass
class Target:
    """A PostgreSQL or DuckDB target through its DB-API connection."""
    type: str
    connection: object
    schema: str
    placeholder: str  # the DB-API parameter marker: %s (psycopg2) or ? (duckdb)

    @property
    def text_type(self) -> str:
        return "text" if self.type == "postgres" else "varchar"

    @property
    def double_type(self) -> str:
        return "double precision" if self.type == "postgres" else "double"

    def quote(self, name: str) -> str:
        return quote_identifier(name)

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        cur = self.connection.cursor()
        try:
            cur.execute(sql)
            return [d[0] for d in cur.description], [tuple(row) for row in cur.fetchall()]
        finally:
            cur.close()

    def column_names(self, relation_sql: str) -> list[str]:
        return self.query(f"select * from {relation_sql} where 1 = 0")[0]

    def existing_relation(self, name: str) -> tuple[str, str, str | None] | None:
        """(schema, 'table' or 'view', its comment) of the relation ``name`` ('schema.table' or 'table', plain
        names, resolved as the engine resolves them in replace_tables), or None when there is none."""
        parts = name.split(".")
        if self.type == "postgres":  # to_regclass: the search path for a name without schema, as create table
            sql = ("select n.nspname, case when c.relkind in ('r', 'p') then 'table' else 'view' end, "
                   "obj_description(c.oid, 'pg_class') from pg_class c join pg_namespace n on n.oid = c.relnamespace "
                   f"where c.oid = to_regclass({self.placeholder})")
            found = self._fetch(sql, [".".join(quote_identifier(part) for part in parts)])
        else:  # DuckDB: names in any letter case; a name without schema is in the current schema
            schema = "lower(?)" if len(parts) == 2 else "current_schema()"
            found = self._fetch(
                "select schema_name, 'table', comment from duckdb_tables() where lower(schema_name) = "
                f"{schema} and lower(table_name) = lower(?) union all select schema_name, 'view', comment "
                f"from duckdb_views() where lower(schema_name) = {schema} and lower(view_name) = lower(?)",
                [*parts[:-1], parts[-1], *parts[:-1], parts[-1]])
        return tuple(found[0]) if found else None

    def _fetch(self, sql: str, parameters: list) -> list[tuple]:
        cur = self.connection.cursor()
        try:
            cur.execute(sql, parameters)
            return cur.fetchall()
        finally:
            cur.close()

    def replace_tables(self, tables: list[tuple[str, dict]], comment: str | None = None) -> None:
        """Drop and create each table ('schema.table' of plain names; columns: name -> list of Python values) in
        one transaction (PostgreSQL and DuckDB both roll DDL back with it, so a failure leaves the old tables);
        each new table carries ``comment`` (the mark of the command that wrote it)."""
        if self.type == "duckdb":  # a DuckDB connection commits each statement unless a transaction is begun
            cur = self.connection
            cur.begin()
        else:
            cur = self.connection.cursor()
        try:
            for name, columns in tables:
                parts = [self.quote(part) for part in name.split(".")]
                relation = ".".join(parts)
                definitions = ", ".join(f"{self.quote(c)} {column_type(self, v)}" for c, v in columns.items())
                cur.execute(f"drop table if exists {relation}")
                if len(parts) == 2:
                    cur.execute(f"create schema if not exists {parts[0]}")
                cur.execute(f"create table {relation} ({definitions})")
                if comment is not None:
                    cur.execute(f"comment on table {relation} is {quote_literal(comment)}")
                marker = ", ".join([self.placeholder] * len(columns))
                rows = [tuple(plain_value(v) for v in row) for row in zip(*columns.values())]
                if rows:  # an audit of a pattern without sensitive cells has none
                    cur.executemany(f"insert into {relation} ({', '.join(self.quote(c) for c in columns)}) "
                                    f"values ({marker})", rows)
            self.connection.commit()
        except Exception:
            self.connection.rollback()
            raise
        finally:
            if cur is not self.connection:
                cur.close()


def _render(text: str, path: Path, key: str = "", literal_if_invalid: bool = False):
    """The value ``text`` (at ``key``) of the file ``path`` rendered as dbt renders a profile's or project's
    values: in a sandbox (no attribute of Python's internals), with only env_var and dbt's filters. As in dbt,
    a value of several parts is text, a value of one expression keeps its type (env_var gives text), and
    as_number, as_bool and as_native read the text as a Python literal (a number, a bool: else an error naming
    the value). ``literal_if_invalid``: a text that is no valid template is the value as written."""
    import jinja2
    import jinja2.sandbox

    where = f"{path}: {key}: " if key else f"{path}: "

    def env_var(name, default=None):
        if name in os.environ:
            return os.environ[name]
        if default is None:
            raise SdcError(f"{where}env_var('{name}') is not set")
        return default

    environment = _profile_environment()(undefined=jinja2.StrictUndefined)
    environment.filters.update(as_text=_Text, as_native=_Native, as_number=_Number, as_bool=_Bool)
    try:
        template = environment.from_string(text)
    except jinja2.TemplateSyntaxError as exc:
        if literal_if_invalid:
            return text
        raise SdcError(f"{where}cannot read it ({exc})") from None
    try:
        return template.render(env_var=env_var)
    except jinja2.sandbox.SecurityError as exc:
        raise SdcError(f"{path}: refused, {exc} (a profile may use env_var() and dbt's filters, as dbt allows)") from None
    except jinja2.TemplateError as exc:
        raise SdcError(f"{where}cannot read it ({exc})") from None
    except _ConversionError as exc:
        raise SdcError(f"{where}{exc}") from None


class _ConversionError(ValueError):
    """A value that as_number or as_bool cannot make a number or a bool."""


class _Text(str):
    """as_text: the value stays text."""


class _Native(str):
    """as_native: the value is read as a Python literal where it is one."""


class _Number(_Native):
    pass


class _Bool(_Native):
    pass


def _native_concat(parts):
    """A value's rendered parts as dbt joins them: several parts are text; one part is itself, unless a filter
    marked it for reading as a literal."""
    parts = list(parts)
    if not parts:
        return ""
    if len(parts) > 1:
        return "".join(str(part) for part in parts)
    (part,) = parts
    if isinstance(part, _Text):
        return str(part)
    if not isinstance(part, _Native):
        return part
    try:
        value = ast.literal_eval(part)
    except (ValueError, SyntaxError, MemoryError):
        value = str(part)
    if isinstance(part, _Bool) and not isinstance(value, bool):
        raise _ConversionError(f"could not convert value '{part}' into type 'bool' (as_bool: True or False)")
    if isinstance(part, _Number) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise _ConversionError(f"could not convert value '{part}' into type 'number' (as_number)")
    return value


@functools.cache
def _profile_environment():
    """The class of the sandbox that renders to dbt's types (made on first use: jinja2 is imported lazily)."""
    import jinja2.nativetypes
    import jinja2.sandbox

    class ProfileEnvironment(jinja2.sandbox.SandboxedEnvironment):
        code_generator_class = jinja2.nativetypes.NativeCodeGenerator
        concat = staticmethod(_native_concat)

    return ProfileEnvironment


def _render_values(value, path: Path, key: str = ""):
    """Every text value of a parsed YAML file rendered (``_render``), as dbt renders profiles.yml: after the
    YAML is read, value by value, so the YAML's quoting is the YAML's. A password that is no valid template
    stays as written, as in dbt (passwords may hold '{%' or '{{'); one that is, and names an unset variable,
    is an error."""
    if isinstance(value, dict):
        return {k: _render_values(v, path, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_render_values(v, path, key) for v in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    if not isinstance(value, str):
        return value
    return _render(value, path, key, literal_if_invalid="password" in key)


def _read_yaml(path: Path, text: str) -> dict:
    import yaml

    try:
        content = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SdcError(f"{path}: cannot read it ({exc})") from None
    if not isinstance(content, dict):
        raise SdcError(f"{path}: cannot read it (not a mapping of names)")
    return content


def find_profile(profile: str | None, project_dir: str | Path | None,
                 profiles_dir: str | Path | None) -> tuple[Path, str]:
    r"""(the folder of profiles.yml, the profile's name), chosen as dbt chooses them (see the module docstring)
    from the options --profile, --project-dir and --profiles-dir (None where not given).

    >>> import pathlib, tempfile
    >>> from sdc.warehouse import find_profile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     project = pathlib.Path(folder)
    ...     _ = (project / "dbt_project.yml").write_text("name: census\nprofile: census_profile\n")
    ...     found = find_profile(None, project, project)
    ...     found == (project, "census_profile")
    True
    """
    cwd = Path.cwd()
    if profiles_dir is None:
        profiles_dir = os.environ.get("DBT_PROFILES_DIR") or (cwd if (cwd / "profiles.yml").is_file() else "~/.dbt")
    if profile is not None:
        return Path(profiles_dir).expanduser(), profile
    how = ("give --profile NAME, or run sdc in a dbt project (or name it with --project-dir) whose dbt_project.yml "
           "names the profile (profile: NAME)")
    if project_dir is None:
        project_dir = os.environ.get("DBT_PROJECT_DIR")
    if project_dir is not None:
        folder = Path(project_dir).expanduser()
        if not (folder / "dbt_project.yml").is_file():
            raise SdcError(f"no dbt_project.yml in {folder} (--project-dir); --target needs a dbt profile: {how}")
    else:  # dbt's default: the working directory or its nearest parent that is a dbt project
        folder = next((f for f in [cwd, *cwd.parents] if (f / "dbt_project.yml").is_file()), None)
        if folder is None:
            raise SdcError(f"--target needs a dbt profile: {how}; there is no dbt_project.yml in {cwd} or above it")
    path = folder / "dbt_project.yml"
    name = _read_yaml(path, read_text(path, "dbt project file")).get("profile")
    if isinstance(name, str):  # dbt renders the project's values, env_var() included
        name = _render_values(name, path, "profile")
        name = name.strip() if isinstance(name, str) else name
    if not isinstance(name, str) or not name:
        raise SdcError(f"--target needs a dbt profile: {how}; {path} names none")
    return Path(profiles_dir).expanduser(), name


def read_target(profiles_dir: str | Path, profile: str, target: str | None = None) -> dict:
    """The output ``target`` (default: the profile's own target) of ``profile`` in profiles_dir/profiles.yml,
    with env_var() rendered."""
    path = Path(profiles_dir).expanduser() / "profiles.yml"
    if not path.is_file():
        raise SdcError(f"no profiles.yml in {Path(profiles_dir).expanduser()} (--profiles-dir)")
    profiles = _read_yaml(path, read_text(path, "dbt profiles file"))
    if profile not in profiles:
        raise SdcError(f"{path} has no profile {profile!r} (profiles: {', '.join(map(str, profiles)) or 'none'})")
    # as dbt: only the chosen profile's target name and the chosen output are rendered, so another target's
    # unset variables (a production server's, on a developer's machine) stop nothing
    chosen = profiles[profile] if isinstance(profiles[profile], dict) else {}
    outputs = chosen.get("outputs") if isinstance(chosen.get("outputs"), dict) else {}
    name = target or _render_values(chosen.get("target"), path, f"{profile}.target")
    if name not in outputs:
        raise SdcError(f"profile {profile!r} has no target {name!r} (targets: {', '.join(map(str, outputs)) or 'none'})")
    if not isinstance(outputs[name], dict):
        raise SdcError(f"{path}: target {name!r} of profile {profile!r} is not a mapping of settings")
    output = _render_values(outputs[name], path, f"{profile}.outputs.{name}")
    if output.get("type") not in ENGINES:
        raise SdcError(f"target {name!r} is of type {output.get('type')!r}; sdc connects to {', '.join(ENGINES)}")
    return output


def connect_postgres(output: dict, dbname: str | None = None):
    """A psycopg2 connection with the settings of the PostgreSQL target ``output``, to its database or ``dbname``
    (another database of the same server, as the same role)."""
    import psycopg2

    try:
        return psycopg2.connect(host=output.get("host"), port=int(output.get("port", 5432)), user=output.get("user"),
                                password=output.get("password") or output.get("pass"),
                                dbname=dbname or output.get("dbname") or output.get("database"))
    except psycopg2.Error as exc:
        where = f"database {dbname} of " if dbname else ""
        raise SdcError(f"cannot connect to {where}the target's PostgreSQL server: {str(exc).strip()}") from None


@contextlib.contextmanager
def connect_target(profiles_dir: str | Path, profile: str, target: str | None = None):
    r"""A connection to the warehouse of ``target`` (default: the profile's own target) of ``profile`` in
    profiles_dir/profiles.yml, as a context manager that closes it: a ``Target`` (``query``,
    ``replace_tables``, ``connection``: the DB-API connection) for PostgreSQL and DuckDB, a
    ``sdc.warehouse.spark_target.SparkWarehouse`` for Spark (method session).

    >>> import pathlib, tempfile
    >>> import duckdb
    >>> from sdc.warehouse import connect_target
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     folder = pathlib.Path(folder)
    ...     duckdb.connect(str(folder / "warehouse.duckdb")).close()
    ...     _ = (folder / "profiles.yml").write_text(
    ...         f"census:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
    ...         f"      path: {folder / 'warehouse.duckdb'}\n")
    ...     with connect_target(folder, "census") as target:
    ...         target.replace_tables([("audit.cells", {"region": ["N", "S"], "count": [3, 3]})])
    ...         print(target.type, target.query("select * from audit.cells order by region"))
    duckdb (['region', 'count'], [('N', 3), ('S', 3)])
    """
    output = read_target(profiles_dir, profile, target)
    if output["type"] == "spark":
        from sdc.warehouse.spark_target import SparkWarehouse

        warehouse = SparkWarehouse(output, target or "(the profile's default)")
        try:
            yield warehouse
        finally:
            warehouse.close()
        return
    if output["type"] == "postgres":
        connection = connect_postgres(output)
        placeholder = "%s"
    else:
        connection = duckdb_connect(str(output.get("path")))
        placeholder = "?"
    try:
        yield Target(output["type"], connection, output.get("schema", "main"), placeholder)
    finally:
        connection.close()
