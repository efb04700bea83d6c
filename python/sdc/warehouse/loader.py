"""Load microdata into DuckDB with integer record keys and fact columns (seed 002, Tables 4 and 7).

``load_microdata`` reads a CSV or Parquet file into ``raw.<table>``: every input row, plus

* ``rk``: an integer record key in [0, M) (conventions.RECORD_KEY_COLUMN, default M = 10^8);
* one 0/1 column per fact (rules from a YAML config, e.g. ``f_studierende: "ef28 < 4"``);
* for each fact f its key fact ``rk_f = rk * f``.

Key modes:

``random``   fresh keys from a cryptographically secure source: HMAC-SHA256 under a 256-bit secret drawn
             with ``secrets`` for this load and then discarded. Keys are stored in
             ``raw.<table>__record_keys`` by record id; a reload keeps the stored key of every known id
             and draws keys only for new ids.
``keyed``    ``rk = HMAC-SHA256(secret, id)`` (first 8 bytes, mod M): nothing stored, the same id always
             gets the same key, so keys survive rebuilds. The secret comes from the caller (CLI: an
             environment variable), never from the command line or the database.
``existing`` a column of the input: integers in [0, M), or doubles in [0, 1) with at most log10(M)
             decimals (k / M exactly). Keys that cannot be uniform random (all equal, few distinct values,
             bunched) are refused (record_keys.py; ``check_keys=False`` for hand-picked teaching keys only).

Ids match across loads by value: whole numbers compare as integers whatever their column type (1, 1.0 and
'1' are one id), so a file whose id column changed from INTEGER to DOUBLE keeps its keys. A random-mode
reload that would keep none of the stored keys is refused unless ``allow_all_new_keys``.

The load log (raw.sdc_loads) records each table's key mode, modulus and, in keyed mode, a fingerprint of the
secret (an HMAC under it, never the secret). A reload that would give every record another key (another key
mode, modulus or secret) is refused naming both, unless ``rekey`` asks for a new series of keys on purpose: then
the stored keys of random mode are dropped, every record gets a new key, and the load log marks the load as a
break in consistency (every published number may change for unchanged microdata).

The modulo reduction of a 64-bit HMAC value biases keys by at most M / 2^64 (5e-12 for M = 10^8).
A load is one transaction: on any error nothing in the database changes.
"""

from __future__ import annotations

import re
import secrets as secrets_module
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from sdc.conventions import (
    DEFAULT_KEY_MODULUS,
    DEMO_KEY_SECRET,
    KEY_FACT_PREFIX,
    KEY_STORE_SUFFIX,
    LOAD_LOG_TABLE,
    MIN_SECRET_BYTES,
    RAW_SCHEMA,
    RECORD_KEY_COLUMN,
    WAREHOUSE_STORAGE_VERSION,
)
from sdc.warehouse.database import connect, duckdb_connect, first_line, is_numeric_type, transaction
from sdc.errors import SdcError
from sdc.warehouse.macro_renderer import private_connection
from sdc.files import disk_full, read_failure, read_text
from sdc.quoting import quote_identifier, quote_literal, quote_path
from sdc.warehouse.record_keys import check_record_keys

KEY_MODES = ("random", "keyed", "existing")
# the load log and a key store: their columns and keys (a load elsewhere recreates them so: sdc.warehouse.target_load)
LOAD_LOG_COLUMNS = ("(table_name varchar primary key, key_mode varchar, modulus bigint, rows bigint, loaded_at timestamp, "
                    "key_fingerprint varchar, rekeyed boolean)")
# columns of the load log that logs written by earlier versions lack (added on the next load)
LOAD_LOG_ADDED_LATER: tuple[tuple[str, str], ...] = (("key_fingerprint", "varchar"), ("rekeyed", "boolean"))
# the message whose HMAC under the keyed-mode secret identifies the secret in the load log (never the secret)
_FINGERPRINT_MESSAGE = b"sdc record key secret fingerprint"


def create_key_store(con, store: str) -> None:
    """The key store of a random-mode table, if it does not exist yet (raw.<table>__record_keys)."""
    con.execute(f"create table if not exists {store} (id varchar primary key, rk bigint not null, modulus bigint not null)")
    # the id's type when its key was drawn, to name it when a later load's ids do not match (older stores lack it)
    con.execute(f"alter table {store} add column if not exists id_type varchar")
DATA_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class LoadReport:
    r"""What ``load_microdata`` (and ``load_into_target``) did: the table, rows read and written, key mode and
    modulus, in random mode the stored keys kept and the new ones, the records of each fact, and whether the
    load began a new series of keys (``rekey``); ``lines()`` as ``sdc load`` prints them.

    >>> from sdc.warehouse import LoadReport
    >>> report = LoadReport("raw.students", rows_in=6, rows_out=6, key_mode="random", modulus=10**8,
    ...                     keys_kept=4, keys_new=2, facts={"f_first": 2})
    >>> print("\n".join(report.lines()))
    loaded 6 rows into raw.students (6 rows written)
    record keys: random, modulus 100000000, 4 kept, 2 new
    fact f_first: 2 records
    """

    table: str
    rows_in: int
    rows_out: int
    key_mode: str
    modulus: int
    keys_kept: int = 0
    keys_new: int = 0
    facts: dict[str, int] = field(default_factory=dict)  # fact -> number of records with fact = 1
    rekeyed: bool = False  # --rekey: a new series of keys, a break in consistency

    def lines(self) -> list[str]:
        out = [
            f"loaded {self.rows_in} rows into {self.table} ({self.rows_out} rows written)",
            f"record keys: {self.key_mode}, modulus {self.modulus}"
            + (f", {self.keys_kept} kept, {self.keys_new} new" if self.key_mode == "random" else ""),
        ]
        out += [f"fact {name}: {count} records" for name, count in self.facts.items()]
        if self.rekeyed:
            out.append("a new series of record keys (--rekey): published numbers change for unchanged records; "
                       "the load log records the break")
        return out


def quote(identifier: str) -> str:
    """An identifier checked against a plain-name pattern and double-quoted for SQL."""
    if not _IDENTIFIER.match(identifier):
        raise SdcError(f"{identifier!r} is not a plain name (letters, digits, underscore; not starting with a digit)")
    return f'"{identifier}"'


def read_facts_config(path: str | Path) -> dict[str, str]:
    r"""Fact rules from a YAML file: ``facts: {f_name: "sql condition" | column}``, as ``load_microdata`` takes
    them (``facts=``); anything else in the file is refused.

    >>> import pathlib, tempfile
    >>> from sdc.warehouse import read_facts_config
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "facts.yml"
    ...     _ = path.write_text("facts:\n  f_first: ef28 = 1\n  f_student: ef28 < 4\n")
    ...     read_facts_config(path)
    {'f_first': 'ef28 = 1', 'f_student': 'ef28 < 4'}
    """
    import yaml

    try:
        config = yaml.safe_load(read_text(path, "config file"))
    except yaml.YAMLError as exc:
        raise SdcError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(config, dict) or not isinstance(config.get("facts"), dict):
        raise SdcError(f"{path}: expected a mapping 'facts:' of fact name -> rule")
    unknown = set(config) - {"facts"}
    if unknown:
        raise SdcError(f"{path}: unknown setting(s) {sorted(unknown)}; the config holds 'facts'")
    return {str(k): str(v) for k, v in config["facts"].items()}


def load_microdata(
    db: str | Path | duckdb.DuckDBPyConnection,
    input_path: str | Path,
    table: str,
    *,
    id_column: str | None = None,
    key_mode: str = "random",
    modulus: int = DEFAULT_KEY_MODULUS,
    secret: bytes | None = None,
    key_column: str | None = None,
    facts: dict[str, str] | None = None,
    allow_demo_secret: bool = False,
    allow_all_new_keys: bool = False,
    check_keys: bool = True,
    rekey: bool = False,
) -> LoadReport:
    r"""Load ``input_path`` into ``raw.<table>`` with record keys and facts; see the module docstring.
    ``allow_demo_secret``: accept the demo's published keyed-mode secret (the demo only).
    ``allow_all_new_keys``: accept a random-mode reload in which no record keeps its stored key.
    ``check_keys``: refuse existing keys that cannot be uniform (False only for hand-picked teaching keys).
    ``rekey``: accept a reload with another key mode, modulus or keyed-mode secret than the table's last load
    (every record gets a new key; the load log records the break).

    ``db`` is a DuckDB file (created if missing) or an open DuckDB connection. In keyed mode a record's key is
    HMAC-SHA256(secret, id) mod M, the same on every load:

    >>> import pathlib, tempfile
    >>> import duckdb
    >>> from sdc.warehouse import load_microdata
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     folder = pathlib.Path(folder)
    ...     _ = (folder / "micro.csv").write_text("id,region,ef28\n1,N,1\n2,N,3\n3,N,3\n4,S,4\n5,S,1\n6,S,3\n")
    ...     report = load_microdata(folder / "warehouse.duckdb", folder / "micro.csv", "students", id_column="id",
    ...                             key_mode="keyed", secret=b"a secret of 16 bytes or more",
    ...                             facts={"f_first": "ef28 = 1"})
    ...     with duckdb.connect(str(folder / "warehouse.duckdb")) as con:
    ...         rows = con.execute("select id, rk, f_first, rk_f_first from raw.students order by id").fetchall()
    >>> print("\n".join(report.lines()))
    loaded 6 rows into raw.students (6 rows written)
    record keys: keyed, modulus 100000000
    fact f_first: 2 records
    >>> rows[:2]
    [(1, 88236890, 1, 88236890), (2, 47637787, 0, 0)]
    """
    facts = facts or {}
    _check_arguments(table, id_column, key_mode, modulus, secret, key_column, facts)
    if key_mode == "keyed":
        _check_secret(secret, allow_demo_secret)
    source = source_sql(Path(input_path), [c for c in (id_column, key_column) if c], plain_numbers=True)
    if not isinstance(db, duckdb.DuckDBPyConnection) and Path(db).suffix.lower() in DATA_FILE_SUFFIXES:
        raise SdcError(f"--db {db} looks like a data file; the warehouse is a DuckDB file (e.g. warehouse.duckdb), "
                       "and the microdata go to --input")
    created = not isinstance(db, duckdb.DuckDBPyConnection) and not Path(db).exists()
    con = db if isinstance(db, duckdb.DuckDBPyConnection) else connect(db, storage_version=WAREHOUSE_STORAGE_VERSION)
    try:
        with transaction(con):
            report = _load(con, source, table, id_column, key_mode, modulus, secret, key_column, facts,
                           allow_all_new_keys, check_keys, input_path, rekey)
    except duckdb.Error as exc:
        raise SdcError(f"loading {input_path} failed: {_load_failure(exc, db, input_path)}") from None
    finally:
        if con is not db:
            con.close()
        if created and sys.exc_info()[0] is not None:
            # a failed first load leaves no empty warehouse behind, so a corrected rerun starts as new
            for leftover in (Path(db), Path(f"{db}.wal")):
                leftover.unlink(missing_ok=True)
    return report


def _load_failure(exc: duckdb.Error, db, input_path) -> str:
    """A full disk or an input that is not UTF-8 in words (DuckDB buries both); else DuckDB's first line."""
    full = disk_full(exc, "the database" if isinstance(db, duckdb.DuckDBPyConnection) else db)
    if full:
        return str(full)
    if "not utf-8" in str(exc).lower():
        return str(read_failure(exc, input_path))
    return first_line(exc)


def _check_secret(secret: bytes, allow_demo_secret: bool) -> None:
    """Keyed-mode keys are only as secret as the secret: anyone who knows it recomputes every record's key."""
    if len(secret) < MIN_SECRET_BYTES:
        raise SdcError(f"the keyed-mode secret has {len(secret)} bytes; give one of at least {MIN_SECRET_BYTES} "
                       "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    if secret == DEMO_KEY_SECRET.encode() and not allow_demo_secret:
        raise SdcError("the keyed-mode secret is the demo's, which is published: anyone can recompute the keys; "
                       "give a secret of your own (--allow-demo-secret is for the demo only)")


def _check_arguments(table, id_column, key_mode, modulus, secret, key_column, facts) -> None:
    quote(table)
    if table.lower().endswith(KEY_STORE_SUFFIX) or table.lower() == LOAD_LOG_TABLE:
        raise SdcError(f"table name {table!r} is taken by sdc load itself (the key store <table>{KEY_STORE_SUFFIX}, "
                       f"the load log {LOAD_LOG_TABLE}); give another --table")
    if key_mode not in KEY_MODES:
        raise SdcError(f"unknown key mode {key_mode!r}; known: {', '.join(KEY_MODES)}")
    if isinstance(modulus, bool) or not isinstance(modulus, int) or not 2 <= modulus <= 2**62:
        raise SdcError(f"key modulus must be a whole number in [2, 2^62], got {modulus!r}")
    if key_mode in ("random", "keyed") and not id_column:
        raise SdcError(f"key mode {key_mode} needs a record id column (--id) to keep keys across loads")
    if key_mode == "keyed" and not secret:
        raise SdcError("key mode keyed needs a secret (set it in the environment variable named by --secret-env)")
    if key_mode == "existing" and not key_column:
        raise SdcError("key mode existing needs the column that holds the keys (--key-column)")
    for name in facts:
        quote(name)
        if name == RECORD_KEY_COLUMN or name.startswith(KEY_FACT_PREFIX):
            raise SdcError(f"fact name {name!r} clashes with the record key columns ({RECORD_KEY_COLUMN}, {KEY_FACT_PREFIX}*)")


# a number as written plainly: optional minus, no leading zero, optional decimals and exponent
PLAIN_NUMBER = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?"


def source_sql(path: Path, numbers: Iterable[str] = (), *, plain_numbers: bool = False, con=None) -> str:
    """SQL that reads the data file ``path``. A Parquet file has its own types. A text file (.csv, .tsv, .txt)
    is read as text, every value exactly as delivered (no BOOLEAN, date or time sniffing: ``yes``, ``T``,
    ``2024-01-01``, ``01`` and `` a `` stay as they are), except numbers: the columns in ``numbers`` that DuckDB
    reads as numbers, and with ``plain_numbers`` every column DuckDB reads as numbers whose every value is
    written plainly (PLAIN_NUMBER: not `` 5``, ``+5``, ``.5``, ``0x10`` or ``nan``), keep that type. The file's
    types are sniffed on ``con`` where given (a connection costs a command 10 ms), else on one of their own."""
    if not path.is_file():
        raise SdcError(f"input file not found: {path}")
    literal = quote_path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return f"read_parquet({literal})"
    # the dialect of .csv and .tsv is given, not sniffed: a value or name full of ';' or "'" made the sniffer
    # read a comma-separated file as one column
    if suffix == ".csv":
        options = "header = true, auto_detect = true, delim = ',', quote = '\"', escape = '\"'"
    elif suffix == ".tsv":
        options = "header = true, auto_detect = true, delim = '\t', quote = '\"', escape = '\"'"
    elif suffix == ".txt":
        options = "header = true, auto_detect = true"
    else:
        raise SdcError(f"{path}: unknown input type {suffix!r}; give a .csv or .parquet file")
    text = f"read_csv({literal}, {options}, all_varchar = true"
    numbers = set(numbers)
    kept = {}
    if numbers or plain_numbers:
        sniffed = text_file_numbers(f"read_csv({literal}, {options})", con)
        kept = {c: t for c, t in sniffed.items() if c in numbers}
        if plain_numbers:
            kept.update(_plainly_written({c: t for c, t in sniffed.items() if c not in numbers}, text + ")"))
    types = ", ".join(f"{quote_literal(c)}: {quote_literal(t)}" for c, t in kept.items())
    return text + (f", types = {{{types}}})" if kept else ")")


def text_file_numbers(sniffed_source: str, con=None) -> dict[str, str]:
    """The columns DuckDB's sniffer reads as numbers in ``sniffed_source``, with their types (on ``con``, else a
    connection of its own); none where the file cannot be read (the command's own read then names the problem)."""
    own = duckdb_connect() if con is None else None
    try:
        described = (own or con).execute(f"describe select * from {sniffed_source}").fetchall()
    except duckdb.Error:
        return {}
    finally:
        if own is not None:
            own.close()
    return {row[0]: row[1] for row in described if is_numeric_type(row[1])}


def _plainly_written(candidates: dict[str, str], text_source: str) -> dict[str, str]:
    """Those of the candidate columns (name -> type) whose every value in the text read is a PLAIN_NUMBER."""
    if not candidates:
        return {}
    checks = ", ".join(f"bool_and({quote_identifier(c)} is null or regexp_full_match({quote_identifier(c)}, "
                       f"{quote_literal(PLAIN_NUMBER)}))" for c in candidates)
    con = duckdb_connect()
    try:
        plain = con.execute(f"select {checks} from {text_source}").fetchone()
    except duckdb.Error:
        return {}
    finally:
        con.close()
    return {c: t for (c, t), ok in zip(candidates.items(), plain) if ok is not False}


def column_list(columns: list[str]) -> str:
    """"columns: a, b, c" for messages; a .csv read as one column whose name holds ';' or a tab was written
    with another separator, and the message says so."""
    text = f"columns: {', '.join(columns)}"
    if len(columns) == 1 and (";" in columns[0] or "\t" in columns[0]):
        separator = "';'" if ";" in columns[0] else "a tab"
        text += (f"; the file looks separated by {separator}, but a .csv is read comma-separated: save it with "
                 "commas, as .tsv (tabs), as .txt (separator detected) or as Parquet")
    return text


def _load(con, source, table, id_column, key_mode, modulus, secret, key_column, facts,
          allow_all_new_keys, check_keys, input_path, rekey=False) -> LoadReport:
    con.execute(f"create schema if not exists {RAW_SCHEMA}")
    fingerprint = key_fingerprint(secret) if key_mode == "keyed" else None
    if rekey:
        _forget_stored_keys(con, table)
    con.execute(f"create or replace temp table sdc_input as select * from {source}")
    columns = [row[0] for row in con.execute("select name from pragma_table_info('sdc_input')").fetchall()]
    rows_in = con.execute("select count(*) from sdc_input").fetchone()[0]
    # existing keys may already be called rk (ONS's files): that column becomes the integer record key
    replaced = RECORD_KEY_COLUMN if key_mode == "existing" and key_column == RECORD_KEY_COLUMN else None
    clash = [c for c in columns if c != replaced and (c == RECORD_KEY_COLUMN or c.startswith(KEY_FACT_PREFIX) or c in facts)]
    if clash:
        raise SdcError(f"input column {clash[0]!r} clashes with a column the load adds (record key, key fact or fact)")
    id_text = None
    if id_column:
        _check_id(con, columns, id_column)
        id_text = _id_text(con, table, id_column)
    key_sql, kept, new = _record_keys(con, table, columns, id_column, id_text, key_mode, modulus, secret, key_column)
    if not rekey:
        _check_same_keys(con, table, key_mode, modulus, fingerprint)
    if key_mode == "random" and kept == 0 and not allow_all_new_keys and not rekey:
        _refuse_all_new_keys(con, table, id_column, rows_in)
    if facts:
        _compute_facts_apart(con, columns, facts)
    target = f"{RAW_SCHEMA}.{quote(table)}"
    select_facts = "".join(f", sdc_facts.{quote(name)}" for name in facts)
    select_key_facts = "".join(
        f",\n    cast({RECORD_KEY_COLUMN} as bigint) * {quote(name)} as {quote(KEY_FACT_PREFIX + name)}" for name in facts
    )
    row = ", sdc_input.rowid as sdc_row" if facts else ""
    con.execute(
        f"""
        create or replace table {target} as
        with keyed as (select sdc_input.*{f" exclude ({RECORD_KEY_COLUMN})" if replaced else ""}, {key_sql} as {RECORD_KEY_COLUMN}{row}
                       from sdc_input {_key_join(id_text, id_column, key_mode, table)}),
        with_facts as (select keyed.*{" exclude (sdc_row)" if facts else ""}{select_facts} from keyed
                       {"join sdc_facts on sdc_facts.sdc_row = keyed.sdc_row" if facts else ""})
        select with_facts.*{select_key_facts} from with_facts
        """
    )
    rows_out = con.execute(f"select count(*) from {target}").fetchone()[0]
    if rows_out != rows_in:
        raise SdcError(f"{rows_in} rows read but {rows_out} written; nothing was loaded")
    _check_keys_in_range(con, target, modulus)
    if key_mode == "existing" and check_keys:
        check_record_keys(con, target, RECORD_KEY_COLUMN, modulus, f"in column {key_column!r} of {input_path}")
    counts = {}
    for name in facts:
        counts[name] = con.execute(f"select coalesce(sum({quote(name)}), 0) from {target}").fetchone()[0]
    if key_mode == "random":
        _store_random_keys(con, table, id_column, id_text, target, modulus)
    _log_load(con, table, key_mode, modulus, rows_out, fingerprint, rekey)
    con.execute("drop table sdc_input")
    con.execute("drop table if exists sdc_facts")
    return LoadReport(f"{RAW_SCHEMA}.{table}", rows_in, rows_out, key_mode, modulus, kept, new, counts, bool(rekey))


def _log_load(con, table: str, key_mode: str, modulus: int, rows: int, fingerprint: str | None, rekey) -> None:
    """The load's line in the load log: key mode, modulus and key fingerprint (a later load is checked against them)."""
    _create_load_log(con)
    con.execute(
        f"insert or replace into {RAW_SCHEMA}.{LOAD_LOG_TABLE} (table_name, key_mode, modulus, rows, loaded_at, "
        "key_fingerprint, rekeyed) values (?, ?, ?, ?, current_timestamp, ?, ?)",
        [table, key_mode, modulus, rows, fingerprint, bool(rekey)],
    )


def key_fingerprint(secret: bytes) -> str:
    """What the load log keeps of a keyed-mode secret: 16 hex digits of an HMAC under it (one-way)."""
    import hashlib
    import hmac

    return hmac.new(secret, _FINGERPRINT_MESSAGE, hashlib.sha256).hexdigest()[:16]


def _create_load_log(con) -> None:
    """The load log, with the columns that logs of earlier versions lack added."""
    con.execute(f"create table if not exists {RAW_SCHEMA}.{LOAD_LOG_TABLE} {LOAD_LOG_COLUMNS}")
    for column, kind in LOAD_LOG_ADDED_LATER:
        con.execute(f"alter table {RAW_SCHEMA}.{LOAD_LOG_TABLE} add column if not exists {column} {kind}")


def _forget_stored_keys(con, table) -> None:
    """--rekey: none of the old series is kept. The store is emptied, not dropped, so that a load into another
    engine (sdc.warehouse.target_load) replaces that engine's store with the empty one."""
    if con.execute("select count(*) from duckdb_tables() where schema_name = ? and table_name = ?",
                   [RAW_SCHEMA, table + KEY_STORE_SUFFIX]).fetchone()[0]:
        con.execute(f"delete from {RAW_SCHEMA}.{quote(table + KEY_STORE_SUFFIX)}")


def _check_same_keys(con, table, key_mode, modulus, fingerprint) -> None:
    """A reload keeps the table's key series (mode, modulus, keyed-mode secret), else every record would get
    another key and every published number change for unchanged microdata (new-user N1): refused naming both
    (--rekey asks for a new series)."""
    _create_load_log(con)
    last = con.execute(f"select key_mode, modulus, key_fingerprint, cast(loaded_at as varchar) "
                       f"from {RAW_SCHEMA}.{LOAD_LOG_TABLE} where table_name = ?", [table]).fetchone()
    if last is None:
        return
    old_mode, old_modulus, old_fingerprint, loaded_at = last
    changed = []
    if old_mode != key_mode:
        changed.append(f"key mode {old_mode} -> {key_mode}")
    if old_modulus != modulus:
        changed.append(f"modulus {old_modulus} -> {modulus}")
    if key_mode == "keyed" and old_mode == "keyed" and old_fingerprint and old_fingerprint != fingerprint:
        changed.append(f"secret fingerprint {old_fingerprint} -> {fingerprint}")
    if changed:
        raise SdcError(
            f"raw.{table} was last loaded on {loaded_at} with key mode {old_mode}, modulus {old_modulus}"
            + (f", secret fingerprint {old_fingerprint}" if old_fingerprint else "")
            + f"; this load would change its record keys ({', '.join(changed)}): every record would get a new key and "
            "every published number would change for unchanged microdata. Load with the same key mode, modulus and "
            "secret, or give --rekey to start a new series of keys on purpose (the load log records the break); "
            "nothing was loaded")


def _check_id(con, columns, id_column) -> None:
    if id_column not in columns:
        raise SdcError(f"id column {id_column!r} is not in the input ({column_list(columns)})")
    col = quote(id_column)
    nulls = con.execute(f"select count(*) from sdc_input where {col} is null").fetchone()[0]
    if nulls:
        raise SdcError(f"id column {id_column!r} is NULL in {nulls} rows; every record needs an id")
    dup = con.execute(f"select {col}, count(*) from sdc_input group by all having count(*) > 1 limit 1").fetchone()
    if dup:
        raise SdcError(f"id column {id_column!r} is not unique: {dup[0]!r} appears {dup[1]} times")


_FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL")


def _id_text(con, table, id_column):
    """A function from a reference to the id column to SQL for the id as text that does not depend on the
    column's type.

    Whole numbers are written as integers (1, 1.0 and '1' are one id); a fraction, or a float beyond 2^53
    (where doubles skip whole numbers), cannot be matched without loss and is refused."""
    col = quote(id_column)
    kind = con.execute(f"select typeof({col}) from sdc_input limit 1").fetchone()
    kind = kind[0] if kind else "VARCHAR"
    if kind in _FLOAT_TYPES or kind.startswith("DECIMAL"):
        limit = f" or abs({col}) > {2**53}" if kind in _FLOAT_TYPES else ""
        bad = con.execute(f"select {col} from sdc_input where {col} <> floor({col}){limit} limit 1").fetchone()
        if bad:
            stored = _stored_id_types(con, table)
            raise SdcError(
                f"id column {id_column!r} is {kind} and holds {bad[0]!r}, which is not a whole number"
                + (" up to 2^53" if limit else "") + ": it cannot be matched to the same id in another load without "
                "loss" + (f" (the stored ids of {table} were {', '.join(stored)})" if stored else "")
                + "; give ids as integers or text"
            )
        return lambda ref: f"cast(cast({ref} as hugeint) as varchar)"
    return lambda ref: f"cast({ref} as varchar)"


def _stored_id_types(con, table) -> list[str]:
    """The types the stored ids of ``table`` had when their keys were drawn (none for stores before id_type)."""
    has_types = con.execute(
        "select count(*) from information_schema.columns where table_schema = ? and table_name = ? "
        "and column_name = 'id_type'", [RAW_SCHEMA, table + KEY_STORE_SUFFIX],
    ).fetchone()[0]
    if not has_types:
        return []
    store = f"{RAW_SCHEMA}.{quote(table + KEY_STORE_SUFFIX)}"
    return [r[0] for r in con.execute(f"select distinct id_type from {store} where id_type is not null order by 1").fetchall()]


def _refuse_all_new_keys(con, table, id_column, rows_in) -> None:
    """Every record new although keys are stored: most likely the ids changed, and every published number would."""
    store = f"{RAW_SCHEMA}.{quote(table + KEY_STORE_SUFFIX)}"
    stored = con.execute(f"select count(*) from {store}").fetchone()[0]
    if stored and rows_in:
        types = _stored_id_types(con, table)
        kind = con.execute(f"select typeof({quote(id_column)}) from sdc_input limit 1").fetchone()[0]
        raise SdcError(
            f"none of the {rows_in} ids in column {id_column!r} ({kind}) matches one of the {stored} ids stored for "
            f"{table}" + (f" ({', '.join(types)})" if types else "") + ": every record would get a new key and every "
            "published number would change; if these really are new records, load with --allow-all-new-keys"
        )


def _hmac_sql(secret: bytes, message_sql: str, modulus: int) -> str:
    """HMAC-SHA256(secret, message) in DuckDB SQL, first 8 bytes as an unsigned integer, mod M."""
    block = secret if len(secret) <= 64 else __import__("hashlib").sha256(secret).digest()
    block = block.ljust(64, b"\0")
    ipad = bytes(b ^ 0x36 for b in block).hex()
    opad = bytes(b ^ 0x5C for b in block).hex()
    inner = f"unhex(sha256(unhex('{ipad}') || encode(cast({message_sql} as varchar))))"
    digest = f"sha256(unhex('{opad}') || {inner})"
    return f"cast(cast('0x' || substr({digest}, 1, 16) as ubigint) % {modulus} as bigint)"


def _key_join(id_text, id_column, key_mode, table) -> str:
    if key_mode != "random":
        return ""
    store = f"{RAW_SCHEMA}.{quote(table + KEY_STORE_SUFFIX)}"
    return f"left join {store} as stored on stored.id = {id_text('sdc_input.' + quote(id_column))}"


def _record_keys(con, table, columns, id_column, id_text, key_mode, modulus, secret, key_column):
    """SQL expression for rk, and (keys kept, keys new) for random mode."""
    if key_mode == "keyed":
        return _hmac_sql(secret, id_text(f"sdc_input.{quote(id_column)}"), modulus), 0, 0
    if key_mode == "existing":
        return existing_key_sql(con, columns, key_column, modulus), 0, 0
    store = f"{RAW_SCHEMA}.{quote(table + KEY_STORE_SUFFIX)}"
    create_key_store(con, store)
    other = con.execute(f"select distinct modulus from {store} where modulus <> ?", [modulus]).fetchone()
    if other:
        raise SdcError(
            f"stored record keys of {table} were drawn for modulus {other[0]}, not {modulus}; "
            "load with the same modulus, or give --rekey to start a new series of keys on purpose"
        )
    kept = con.execute(
        f"select count(*) from sdc_input join {store} as s on s.id = {id_text('sdc_input.' + quote(id_column))}"
    ).fetchone()[0]
    load_secret = secrets_module.token_bytes(32)  # used for this load only, never stored
    fresh = _hmac_sql(load_secret, f"sdc_input.{quote(id_column)}", modulus)
    return f"coalesce(stored.rk, {fresh})", kept, con.execute("select count(*) from sdc_input").fetchone()[0] - kept


def _store_random_keys(con, table, id_column, id_text, target, modulus) -> None:
    """Add the keys of ids seen for the first time; stored keys are never changed or dropped."""
    store = f"{RAW_SCHEMA}.{quote(table + KEY_STORE_SUFFIX)}"
    ident = id_text(quote(id_column))
    con.execute(
        f"insert into {store} (id, rk, modulus, id_type) select {ident}, {RECORD_KEY_COLUMN}, {modulus}, "
        f"typeof({quote(id_column)}) from {target} where {ident} not in (select id from {store})"
    )


# integer types that cast to BIGINT without a conversion error: the record key checks see their NULLs and range
_BIGINT_KEY_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")


def existing_key_sql(con, columns, key_column, modulus, relation: str = "sdc_input",
                     checked_later: bool = False) -> str:
    """SQL for the integer record key from the input column key_column (integers in [0, M), or decimals k / M
    in [0, 1)), after checking it: NULLs (with their count), values outside the range, other types.

    ``checked_later``: the record key checks will see every one of these keys (count NULLs and keys outside
    [0, M)); for integer keys the scan here is then left to them (one pass over the microdata fewer: 25-45 ms
    at 10^7 records), and the caller calls this again, without it, when they refuse the keys, for the message
    that names NULLs and the first key outside the range (record_keys.check_record_keys)."""
    if key_column not in columns:
        raise SdcError(f"record key column {key_column!r} is not in the input ({column_list(columns)})")
    col = f"{relation}.{quote(key_column)}"
    key = quote(key_column)
    kind = con.execute(f"select typeof({key}) from {relation} limit 1").fetchone()
    kind = kind[0] if kind else "INTEGER"
    if checked_later and kind in _BIGINT_KEY_TYPES:
        return f"cast({col} as bigint)"
    decimals = kind in ("DOUBLE", "FLOAT", "REAL") or kind.startswith("DECIMAL")
    integers = kind in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "HUGEINT")
    if decimals:
        bad = f"not ({key} >= 0 and {key} < 1) or abs({key} * {modulus} - round({key} * {modulus})) > 1e-6"
    else:
        bad = f"{key} < 0 or {key} >= {modulus}" if integers else "false"
    # one pass for both checks; the first bad key, to name it, only where there is one
    nulls, any_bad = con.execute(f"select count(*) - count({key}), coalesce(bool_or({bad}), false) from {relation}").fetchone()
    if nulls:
        raise SdcError(f"record key column {key_column!r} is NULL in {nulls} rows")
    if not (decimals or integers):
        raise SdcError(f"record key column {key_column!r} has type {kind}; expected integers or decimals in [0, 1)")
    if any_bad:
        value = con.execute(f"select {key} from {relation} where {bad} limit 1").fetchone()[0]
        if decimals:
            raise SdcError(f"record key column {key_column!r}: {value!r} is not in [0, 1) with at most the "
                           f"{len(str(modulus)) - 1} decimals of modulus {modulus} (keys must be k / {modulus})")
        raise SdcError(f"record key column {key_column!r}: {value} is outside [0, {modulus})")
    return f"cast(round({col} * {modulus}) as bigint)" if decimals else f"cast({col} as bigint)"


def _compute_facts_apart(con, columns, facts) -> None:
    """The facts' 0/1 values by row of sdc_input, as the temp table sdc_facts (sdc_row = sdc_input's rowid).

    They are computed on a connection of their own that holds only the columns the rules read and cannot
    read files (enable_external_access off, configuration locked): a second wall behind the rule check."""
    read = {}
    for name, rule in facts.items():
        for column in ([rule] if rule in columns else parse_fact_rule(name, rule, columns)[1]):
            read[column] = None
    chosen = "".join(f", {quote_identifier(c)}" for c in read)
    data = _arrow(con, f"select rowid as sdc_row{chosen} from sdc_input")
    with private_connection("facts") as apart:  # what it spills goes to a 0700 folder, removed at the end
        apart.register("sdc_input_data", data)
        apart.execute("create table sdc_input as select * from sdc_input_data")
        apart.unregister("sdc_input_data")
        apart.execute("set enable_external_access = false")
        apart.execute("set lock_configuration = true")
        sqls = [fact_sql(apart, columns, name, rule) for name, rule in facts.items()]
        selected = "".join(f", {sql} as {quote(name)}" for name, sql in zip(facts, sqls))
        values = _arrow(apart, f"select sdc_row{selected} from sdc_input")
    con.register("sdc_facts_data", values)
    try:
        con.execute("create or replace temp table sdc_facts as select * from sdc_facts_data")
    finally:
        con.unregister("sdc_facts_data")


def _arrow(con, sql: str):
    """The result of ``sql`` as an Arrow table (DuckDB warns that a DB-API result is copied once: the copy
    holds the few columns the rules read; con.sql cannot run while an earlier result of con is open)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Arrow output on a DB-API result", category=UserWarning)
        return con.execute(sql).to_arrow_table()


def parse_fact_rule(name: str, rule: str, columns: list[str]) -> tuple[str, list[str]]:
    """sdc.warehouse.fact_rules.parse_fact_rule, imported on the first rule: it needs sqlglot, a tenth of a second to
    import that a command without fact rules (sdc ckm) should not pay."""
    from sdc.warehouse.fact_rules import parse_fact_rule as parse

    return parse(name, rule, columns)


def fact_sql(con, columns, name, rule, relation: str = "sdc_input") -> str:
    """A 0/1 expression for the fact: a column that already is 0/1, or a condition on the input's columns
    (sdc.warehouse.fact_rules). A condition that is NULL for a record (a NULL in a column it reads) is refused, naming
    the fact, the column and the number of records: a missing value is not a no, and the rule must say so."""
    if rule in columns:
        col = quote(rule)
        bad = con.execute(f"select {col} from {relation} where {col} is null or {col} not in (0, 1) limit 1").fetchone()
        if bad:
            raise SdcError(f"fact {name}: column {rule!r} must hold 0 or 1, found {bad[0]!r}")
        return f"cast({col} as tinyint)"
    condition, read = parse_fact_rule(name, rule, columns)
    expression = f"cast(case when ({condition}) then 1 else 0 end as tinyint)"
    try:
        con.execute(f"select {expression} from {relation} limit 0")
        _check_rule_not_null(con, relation, name, rule, condition, read)
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0]
        raise SdcError(f"fact {name}: the rule {rule!r} does not work on the input: {message}") from None
    return expression


def _check_rule_not_null(con, relation, name, rule, condition, read) -> None:
    counts = con.execute(
        f"select count(*) filter (where ({condition}) is null)"
        + "".join(f", count(*) filter (where ({condition}) is null and {quote_identifier(c)} is null)" for c in read)
        + f" from {relation}"
    ).fetchone()
    if not counts[0]:
        return
    nulls = [f"column {c!r} is NULL in {n}" for c, n in zip(read, counts[1:]) if n]
    example = next((c for c, n in zip(read, counts[1:]) if n), None)
    hint = (f"; say what a missing value means, e.g. '({rule}) and {example} is not null' to count it as 0"
            if example else "")
    raise SdcError(f"fact {name}: the rule {rule!r} is neither true nor false for {counts[0]} records"
                   + (f" ({', '.join(nulls)})" if nulls else "") + hint)


def _check_keys_in_range(con, target, modulus) -> None:
    bad = con.execute(
        f"select count(*) from {target} where {RECORD_KEY_COLUMN} is null or {RECORD_KEY_COLUMN} < 0 "
        f"or {RECORD_KEY_COLUMN} >= {modulus}"
    ).fetchone()[0]
    if bad:
        raise SdcError(f"{bad} record keys outside [0, {modulus}); nothing was loaded")
