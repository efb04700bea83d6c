"""The ledger of releases: what each release published, so that the next one can be checked against it.

An office publishes month after month from one warehouse. Each release that `sdc publish` makes is recorded in
a ledger (a DuckDB file of sdc's own beside the warehouse, sdc_ledger.duckdb by default; on PostgreSQL a schema
of the warehouse, whose rows release/ledger_postgres.py runs these functions on): its number, time,
the loads it was built from (key mode, modulus, key fingerprint, whether a load re-keyed), the audit's result,
and every published cell with

* its **published** values (the measures, as published);
* a **records** digest: an md5 of what the cell's records alone determine (the original count or sum, the
  record-key sum or cell key, the contributors and top contributions), from sdc's own recomputation; equal
  digests mean the same records (with the same keys);
* a **parameters** digest of its table: the step's recorded call (every default resolved), the md5 of its
  ptables and magnitude parameters.

A new release is compared with the last one before anything is written: a cell whose records digest is unchanged
but whose published value changed is a change no microdata explains, and a reader who holds both releases learns
from it (two noises of one cell, a suppressed cell published, a published one suppressed). It is refused naming
the cells, unless the table's parameters changed and the caller accepts that (`accept_parameter_change`, which
the ledger records), or the loads were re-keyed on purpose (`sdc load --rekey`: every cell changes). `diff`
gives, for two releases, every cell that changed, appeared or disappeared with its reason: microdata change,
parameter change, re-key.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from sdc.conventions import LOAD_LOG_TABLE, PUBLISHED_MEASURES, RAW_SCHEMA
from sdc.warehouse.dimension_names import dimension_column
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q
from sdc.quoting import quote_literal
from sdc.release.verified import Verified
from sdc.release.verify import Verifier

LEDGER_FILE_NAME = "sdc_ledger.duckdb"
LEDGER_SCHEMA = "main"  # of the ledger's own file (a schema named as the file's catalog would be ambiguous)
# columns of sdc's recomputation that the cell's records alone determine (no noise, no ptable)
RECORD_COLUMNS: tuple[str, ...] = ("original", "key_sum", "records", "cell_key_int", "weight_sum", "weight_min",
                                   "weight_max", "spread_key_sum", "freq", "contributors")
RECORD_PREFIXES: tuple[str, ...] = ("original_", "contributors_", "top_")
SHOWN_CELLS = 5  # cells a refusal names
LEDGER_ID_LENGTH = 16  # hex digits of a ledger's identity (ledger_id)


@dataclass(frozen=True)
class LedgerCell:
    relation: str
    cell: str  # JSON of {dimension: code}
    published: str  # JSON of {measure: value}
    records: str | None  # md5; None for a relation without sdc's recomputation (a relation of one's own)
    parameters: str | None
    original: float | None = None  # a CKM count's original, for the averaging audit over releases (the office's)


def default_ledger(db: str | Path) -> Path:
    return Path(db).parent / LEDGER_FILE_NAME


# ------------------------------------------------------------------------------------------ the release's cells
def release_cells(verifier: Verifier, verified: list[Verified], published: dict[str, str]) -> list[LedgerCell]:
    """The cells of every published relation: ``published`` maps a relation's label to SQL that reads what is
    published of it (on ``verifier.con``). The JSON and digests are made by the database in one query per relation
    (per cell in Python they took 15 s for the 71,300 cells of 20 tables)."""
    cells = []
    by_label = {v.rel.label: v for v in verified}
    for label, content in sorted(published.items()):
        item = by_label.get(label)
        columns = [d[0] for d in verifier.con.execute(f"select * from {content} limit 0").description]
        measures = [c for c in columns if c.lower() in PUBLISHED_MEASURES or c.lower().startswith("mean_")]
        # the columns that describe a dimension's codes (d__level, ...) follow from the codes: no part of a cell
        dims = [c for c in columns if c not in measures and not dimension_column(c)]
        records = _records(verifier, item, dims) if item is not None else None
        parameters = _parameters(verifier, item) if item is not None else None
        shown = f"select {_json_sql(dims, 'p')} as cell, {_json_sql(measures, 'p')} as published from {content} as p"
        query = (f"select cell, published, null, null from ({shown})" if records is None else
                 f"select s.cell, s.published, r.digest, r.original from ({shown}) as s left join ({records}) as r "
                 "using (cell)")
        cells += [LedgerCell(label, cell, values, digest, parameters, original)
                  for cell, values, digest, original in verifier.con.execute(query).fetchall()]
    return cells


def _records(verifier: Verifier, item: Verified, dims: list[str]) -> str | None:
    """SQL of (cell JSON, records digest) from sdc's recomputation of the step (CKM and suppression tables)."""
    if item.audit is None or item.kind not in ("ckm_count", "ckm_sum", "suppression"):
        return None
    columns = [d[0] for d in verifier.con.execute(f"select * from {item.audit} limit 0").description]
    if not all(d in columns for d in dims):
        return None
    kept = [c for c in columns if c.lower() in RECORD_COLUMNS or c.lower().startswith(RECORD_PREFIXES)
            or (item.kind == "suppression" and c.lower() == "value")]
    original = "cast(a.original as double)" if item.kind == "ckm_count" and "original" in columns else "null"
    return (f"select {_json_sql(dims, 'a')} as cell, md5({_json_sql(kept, 'a')}) as digest, {original} as original "
            f"from {item.audit} as a")


def _json_sql(names: list[str], alias: str) -> str:
    """A JSON object of the columns ``names`` of ``alias`` (keys sorted), as text."""
    if not names:
        return "'{}'"
    fields = ", ".join(f"{quote_literal(n)}: {alias}.{q(n)}" for n in sorted(names))
    return f"cast(to_json({{{fields}}}) as varchar)"


def _parameters(verifier: Verifier, item: Verified) -> str | None:
    """``<md5 of the call, ptables and parameters>:<md5 of the ptables and parameters>``: the table's parameters,
    and the part that decides its noise (same_call, same_noise)."""
    if item.kind not in ("ckm_count", "ckm_sum", "suppression"):
        return None
    record = (verifier.wh.record(item.step_of) or {}) if item.step_of is not None else {}
    noise = {"ptables": record.get("ptables"), "params": record.get("params_md5")}
    return f"{_md5(_json({'call': item.call, **noise}))}:{_md5(_json(noise))}"


def same_call(a: str | None, b: str | None) -> bool:
    """Two parameters digests of the same call, ptables and parameters."""
    return (a or "").split(":")[0] == (b or "").split(":")[0]


def same_noise(a: str | None, b: str | None) -> bool:
    """Two parameters digests whose ptables and parameters are the same (the same noise for the same records); a
    digest of an sdc before issue 48 holds no such part: then the whole digests are compared."""
    x, y = (a or "").split(":"), (b or "").split(":")
    return x[1] == y[1] if len(x) > 1 and len(y) > 1 else x[0] == y[0]


def release_loads(con) -> dict:
    """The load log as the release saw it: {table: {loaded_at, key_mode, modulus, key_fingerprint, rekeyed}}."""
    columns = [c for (c,) in con.execute("select column_name from information_schema.columns where table_schema = ? "
                                         "and table_name = ?", [RAW_SCHEMA, LOAD_LOG_TABLE]).fetchall()]
    if not columns:
        return {}
    wanted = [c for c in ("loaded_at", "key_mode", "modulus", "key_fingerprint", "rekeyed") if c in columns]
    rows = con.execute(f"select table_name, {', '.join(f'cast({q(c)} as varchar)' for c in wanted)} "
                       f"from {RAW_SCHEMA}.{LOAD_LOG_TABLE} order by 1").fetchall()
    return {row[0]: dict(zip(wanted, row[1:])) for row in rows}


# ------------------------------------------------------------------------------------------ the ledger file
def check_ledger_path(path: Path, *inputs) -> None:
    """The ledger is no file the command reads or writes otherwise, and no other DuckDB file than a ledger."""
    from sdc.files import check_not_an_input

    check_not_an_input(path, *inputs, flag="--ledger")
    if path.is_dir():
        raise SdcError(f"--ledger {path} is a folder; give the ledger's file (e.g. {LEDGER_FILE_NAME})")
    if not path.parent.is_dir():
        raise SdcError(f"cannot write the ledger {path}: folder {path.parent} does not exist")
    if path.is_file():
        import duckdb

        from sdc.warehouse.database import duckdb_connect

        try:
            con = duckdb_connect(path, read_only=True)
        except duckdb.Error as exc:
            raise SdcError(f"--ledger {path} is no ledger of sdc publish (not a DuckDB file it can open: "
                           f"{str(exc).splitlines()[0]})") from None
        try:
            tables = {t for (t,) in con.execute("select table_name from duckdb_tables() where schema_name = ?",
                                                [LEDGER_SCHEMA]).fetchall()}
            others = con.execute("select count(*) from duckdb_tables() where schema_name <> ?",
                                 [LEDGER_SCHEMA]).fetchone()[0]
        finally:
            con.close()
        if tables != {"releases", "cells"} or others:
            raise SdcError(f"--ledger {path} is no ledger of sdc publish (it holds other tables); give another file")


def open_ledger(path: str | Path, *, create: bool, read_only: bool = False):
    """The ledger's DuckDB connection; ``create``: made with its tables when missing."""
    from sdc.warehouse.database import connect

    path = Path(path)
    if not create and not path.is_file():
        raise SdcError(f"no ledger of releases at {path}: sdc publish writes it with the first release")
    con = connect(path, must_exist=not create, read_only=read_only, what="the ledger")
    if not read_only:
        create_ledger_tables(con)
    return con


def create_ledger_tables(con) -> None:
    """The ledger's two tables on the DuckDB connection ``con`` (schema main), where missing."""
    con.execute(f"create table if not exists {LEDGER_SCHEMA}.releases (release_id integer primary key, "
                "published_at varchar, publication varchar, loads json, audit json, accepted varchar)")
    con.execute(f"create table if not exists {LEDGER_SCHEMA}.cells (release_id integer, relation varchar, "
                "cell varchar, published varchar, records varchar, parameters varchar, original double)")
    # a ledger of an sdc before the averaging audit over releases: its cells without originals
    con.execute(f"alter table {LEDGER_SCHEMA}.cells add column if not exists original double")


def withdrawn_relations(con, published: list[str]) -> list[str]:
    """The relations the last release published that ``published`` (this release's) does not hold."""
    last = last_release(con)
    if last is None:
        return []
    (audit,) = con.execute(f"select audit from {LEDGER_SCHEMA}.releases where release_id = ?", [last]).fetchone()
    return sorted(set(json.loads(audit or "{}").get("published") or []) - set(published))


def last_release(con) -> int | None:
    return con.execute(f"select max(release_id) from {LEDGER_SCHEMA}.releases").fetchone()[0]


def ledger_id(con) -> str | None:
    """The ledger's identity, which each publication names beside its release number (no path: readers read it):
    the id its first release recorded, or for a ledger of an sdc that recorded none the md5 of its first
    release's time and publication; None for a ledger without releases."""
    row = con.execute(f"select audit, published_at, publication from {LEDGER_SCHEMA}.releases "
                      "order by release_id limit 1").fetchone()
    if row is None:
        return None
    recorded = json.loads(row[0] or "{}").get("ledger_id")
    return recorded if isinstance(recorded, str) else _md5(f"{row[1]}|{row[2]}")[:LEDGER_ID_LENGTH]


def new_ledger_id() -> str:
    import uuid

    return uuid.uuid4().hex[:LEDGER_ID_LENGTH]


def check_publication_release(con, held: dict | None, publication: str, ledger: str) -> None:
    """Refuses to replace the publication ``publication`` whose public release audit ``held`` (None: no release
    there yet) names a release that the ledger on ``con`` (None: no ledger yet; ``ledger`` names it) did not record
    (red team R4-7: a rebuilt warehouse beside a fresh ledger started at release 1 and checked nothing against what
    the readers hold)."""
    if not held or not isinstance(held.get("release"), int):
        return
    release, named = held["release"], held.get("ledger")
    named = named if isinstance(named, str) and re.fullmatch(f"[0-9a-f]{{{LEDGER_ID_LENGTH}}}", named) else None
    known = set() if con is None else {r for (r,) in con.execute(f"select release_id from {LEDGER_SCHEMA}.releases")
                                           .fetchall()}
    mine = None if con is None else ledger_id(con)
    if release in known and (named is None or named == mine):
        return
    why = ("has no release" if not known else f"is another ledger (its releases: {_ranges(sorted(known))})"
           if named is not None and named != mine else f"has no release {release}")
    raise SdcError(f"{publication} holds release {release} of the ledger {named or '(unnamed)'}, and {ledger} {why}: a "
                   "release recorded there would not be checked against what the readers of the publication hold "
                   "(cells whose records did not change published with new noise). Give the ledger of that "
                   "publication (sdc publish --ledger; on PostgreSQL the build database that published it); "
                   "nothing was published")


def _ranges(numbers: list[int]) -> str:
    return f"{numbers[0]} to {numbers[-1]}" if len(numbers) > 1 else str(numbers[0])


def check_against_last(con, cells: list[LedgerCell], loads: dict, accept_parameter_change: bool,
                       roots: dict[str, set] | None = None, fetch=None) -> list[dict]:
    """Refuses a release with a cell whose records are those of a cell an earlier release published, but whose
    published values are not (see the module's text); returns the changes it accepts (parameter changes) for the
    record. Each cell is compared with the newest release that published it: under its relation and codes, or,
    where none did, under any name with the same records (a renamed table publishes the same cells); and only
    where no load behind it (``roots``: relation -> the loaded tables behind it; None: every load) was given new
    keys since. ``fetch(releases)`` loads the cells of those releases into ``con`` where it holds only some (a
    PostgreSQL ledger's copy)."""
    last = last_release(con)
    if last is None:
        return []
    if fetch is not None:
        fetch([r for (r,) in con.execute(f"select release_id from {LEDGER_SCHEMA}.releases").fetchall()])
    newest = f"select release_id, relation, cell, published, records, parameters from {LEDGER_SCHEMA}.cells " \
             "where records is not null qualify row_number() over (partition by {} order by release_id desc) = 1"
    by_cell = {(r[1], r[2]): r for r in con.execute(newest.format("relation, cell")).fetchall()}
    by_records = {r[4]: r for r in con.execute(newest.format("records")).fetchall()}
    series, now_series = key_series(con, loads)
    unexplained, parameter_changes = [], []
    for cell in cells:
        if cell.records is None:
            continue
        old = by_cell.get((cell.relation, cell.cell))
        if old is None or old[4] != cell.records:
            old = by_records.get(cell.records)
            # the same records under another name: the same call must publish the same values, other ptables
            # another noise; another call with the same noise (a threshold, other totals) is another table
            if old is not None and not same_call(old[5], cell.parameters) and same_noise(old[5], cell.parameters):
                continue
        if old is None or old[3] == cell.published:
            continue
        release = old[0]
        tables = (roots or {}).get(cell.relation) or set(now_series) | set(series.get(release, {}))
        if any(series.get(release, {}).get(t) != now_series.get(t) for t in tables):
            continue  # a new series of keys on purpose (sdc load --rekey): every cell's noise changes
        change = {"relation": cell.relation, "cell": cell.cell, "before": old[3], "now": cell.published,
                  "release": release, "as": old[1]}
        (unexplained if same_call(old[5], cell.parameters) else parameter_changes).append(change)
    if unexplained:
        raise SdcError(
            f"{len(unexplained)} cell(s) would be published with other values than in an earlier release although "
            "their records did not change and neither did their tables' parameters: "
            + "; ".join(f"{c['relation']} {_shown(c['cell'])}: {_shown(c['before'])} in release {c['release']}"
                        + (f" (as {c['as']})" if c["as"] != c["relation"] else "") + f", {_shown(c['now'])} now"
                        for c in unexplained[:SHOWN_CELLS])
            + ("; ..." if len(unexplained) > SHOWN_CELLS else "")
            + ". A reader of both releases learns from the difference (a suppressed cell published, two noises of "
            "one cell). For a suppression table, feed the last release's pattern to the suppression (sdc release "
            f"a-priori <table> --out <seed.csv>, then suppression_pattern(..., a_priori=...)) so that unchanged "
            "cells keep it; else find what changed the table; nothing was published")
    if parameter_changes and not accept_parameter_change:
        tables = sorted({c["relation"] for c in parameter_changes})
        releases = sorted({c["release"] for c in parameter_changes})
        raise SdcError(
            f"{len(parameter_changes)} cell(s) whose records did not change would be published with other values than "
            f"in release {', '.join(map(str, releases))}, because the parameters of {', '.join(tables)} changed "
            "(ptable, magnitude parameters or the step's call): a reader of both releases sees two noises of one "
            "cell. If the change is meant, publish with --accept-parameter-change (the ledger records it); nothing "
            "was published")
    return [{k: c[k] for k in ("relation", "cell", "before", "now")} for c in parameter_changes]


def loaded_roots(verifier: Verifier) -> dict[str, set]:
    """Per verified relation, the loaded tables behind it, as the load log names them (check_against_last)."""
    return {v.rel.label: {r.split(".", 1)[-1] for r in v.roots} for v in verifier.verified.values()}


def key_series(con, loads: dict) -> tuple[dict[int, dict], dict]:
    """Per release in the ledger on ``con``, and for this release's load log ``loads``: per loaded table the series
    of record keys it was published under: a keyed secret's fingerprint (going back to an earlier secret goes back
    to its keys), or for random and existing keys the run of loads between two re-keys."""
    releases = [(r, json.loads(log or "{}")) for r, log in con.execute(
        f"select release_id, loads from {LEDGER_SCHEMA}.releases order by 1").fetchall()]
    found: dict = {}
    counters: dict[str, int] = {}
    previous: dict = {}
    for release, log in [*releases, (None, loads)]:
        rekeyed = rekeyed_tables(previous, log)
        series = {}
        for table, load in log.items():
            if load.get("key_mode") == "keyed" and load.get("key_fingerprint"):
                series[table] = ("keyed", load.get("modulus"), load.get("key_fingerprint"))
            else:
                counters[table] = counters.get(table, 0) + (table in rekeyed)
                series[table] = (load.get("key_mode"), load.get("modulus"), counters[table])
        found[release] = series
        previous = log
    return {r: s for r, s in found.items() if r is not None}, found[None]


def rekeyed_tables(before: dict, now: dict) -> set[str]:
    """The loaded tables (as the load log names them) that a load between the load logs ``before`` and ``now``
    gave new record keys: a re-key, or another key mode, modulus or secret."""
    found = set()
    for table, load in now.items():
        old = before.get(table)
        if old is None or old.get("loaded_at") == load.get("loaded_at"):
            continue
        if str(load.get("rekeyed")).lower() == "true" or any(
                old.get(k) != load.get(k) for k in ("key_mode", "modulus", "key_fingerprint") if k in old and k in load):
            found.add(table)
    return found


def record_release(con, cells: list[LedgerCell], loads: dict, audit: dict, publication: str,
                   accepted: list[dict]) -> int:
    """Appends the release to the ledger in one transaction; returns its number."""
    con.execute("begin transaction")
    try:
        release = (last_release(con) or 0) + 1
        con.execute(f"insert into {LEDGER_SCHEMA}.releases values (?, ?, ?, ?, ?, ?)",
                    [release, audit.get("published_at"), publication, _json(loads), _json(audit),
                     _json(accepted) if accepted else None])
        # one insert of all cells (executemany costs a round trip per row: 20 s for 10^4 cells)
        import pandas as pd

        frame = pd.DataFrame({"release_id": [release] * len(cells), "relation": [c.relation for c in cells],
                              "cell": [c.cell for c in cells], "published": [c.published for c in cells],
                              "records": [c.records for c in cells], "parameters": [c.parameters for c in cells],
                              "original": pd.array([c.original for c in cells], dtype="Float64")})
        con.register("sdc_ledger_new_cells", frame)
        con.execute(f"insert into {LEDGER_SCHEMA}.cells select release_id, relation, cell, published, records, "
                    "parameters, original from sdc_ledger_new_cells")
        con.unregister("sdc_ledger_new_cells")
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return release


# ------------------------------------------------------------------------------------------ reading the ledger
def list_releases(path: str | Path) -> list[dict]:
    r"""``sdc release list``: the releases of the ledger file ``path`` (sdc publish writes it, by default
    sdc_ledger.duckdb beside the warehouse), one dict each: number, time, publication, cells, tables and the
    cells changed by accepted parameter changes.

    >>> import json, pathlib, shutil, tempfile
    >>> import duckdb
    >>> from sdc.release import list_releases, publish
    >>> def build(folder, sql):  # what dbt seed leaves: a seed's file and table, the manifest that tags it
    ...     with duckdb.connect(str(folder / "warehouse.duckdb")) as con:
    ...         _ = con.execute(f"create schema if not exists protected; create or replace table protected.cells as {sql}")
    ...         _ = con.execute(f"copy protected.cells to '{folder / 'cells.csv'}' (header)")
    ...     node = {"resource_type": "seed", "name": "cells", "alias": "cells", "schema": "protected",
    ...             "database": "warehouse", "tags": ["sdc_publish"], "config": {"materialized": "seed"},
    ...             "depends_on": {"macros": [], "nodes": []}, "root_path": str(folder), "original_file_path": "cells.csv"}
    ...     _ = (folder / "manifest.json").write_text(json.dumps({"nodes": {"seed.census.cells": node}}))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> build(folder, "select * from (values ('N', 3), ('S', 4)) t(region, count)")
    >>> publish(folder / "warehouse.duckdb", folder / "publication.duckdb", manifest=folder / "manifest.json")
    ['cells']
    >>> releases = list_releases(folder / "sdc_ledger.duckdb")
    >>> [(r["release"], r["tables"], r["cells"], r["accepted_parameter_changes"]) for r in releases]
    [(1, 1, 2, 0)]
    >>> shutil.rmtree(folder)
    """
    con = open_ledger(path, create=False, read_only=True)
    try:
        return releases_in(con)
    finally:
        con.close()


def release_audit(path: str | Path, release: int | None = None) -> dict:
    """The full release audit of ``release`` (default: the last) in the ledger file ``path``: the office's record
    of it, with the figures computed from the original values that no reader gets (release/public_audit.py)."""
    con = open_ledger(path, create=False, read_only=True)
    try:
        return audit_in(con, release, f"the ledger {path}")
    finally:
        con.close()


def audit_in(con, release: int | None, where: str) -> dict:
    """release_audit on the DuckDB connection ``con`` (as releases_in)."""
    number = last_release(con) if release is None else release
    row = con.execute(f"select audit from {LEDGER_SCHEMA}.releases where release_id = ?", [number]).fetchone()
    if row is None:
        known = [r for (r,) in con.execute(f"select release_id from {LEDGER_SCHEMA}.releases order by 1").fetchall()]
        raise SdcError(f"{where} has no release {number} (releases: {', '.join(map(str, known)) or 'none'})")
    return json.loads(row[0] or "{}")


def releases_in(con) -> list[dict]:
    """The releases of the ledger on the DuckDB connection ``con`` (a ledger file, or a copy of a ledger kept in
    a PostgreSQL warehouse: release/ledger_postgres.py)."""
    rows = con.execute(
        f"select r.release_id, r.published_at, r.publication, r.accepted, count(c.cell), count(distinct c.relation), "
        f"any_value(r.audit) from {LEDGER_SCHEMA}.releases r left join {LEDGER_SCHEMA}.cells c using (release_id) "
        "group by r.release_id, r.published_at, r.publication, r.accepted order by 1").fetchall()
    found = []
    for r in rows:
        over = ((json.loads(r[6] or "{}").get("averaging") or {}).get("over_releases") or {})
        found.append({"release": r[0], "published_at": r[1], "publication": r[2], "cells": r[4], "tables": r[5],
                      "accepted_parameter_changes": len(json.loads(r[3])) if r[3] else 0,
                      "noise_epochs": over.get("noise_epochs"), "more_epochs_allowed": over.get("more_epochs_allowed")})
    return found


def diff_releases(path: str | Path, a: int, b: int) -> list[dict]:
    r"""``sdc release diff``: every cell that changed, appeared or disappeared from release ``a`` to ``b`` in the
    ledger file ``path``, with its reason: microdata change (the cell's records changed), parameter change (its
    table's parameters did), re-key (a load began a new series of record keys) or unexplained (none of these:
    also a table of one's own, whose records sdc does not recompute); the cells of a table that one of the two
    releases does not publish at all appeared as "table added" or disappeared as "table withdrawn".

    >>> import json, pathlib, shutil, tempfile
    >>> import duckdb
    >>> from sdc.release import diff_releases, publish
    >>> def build(folder, sql):  # what dbt seed leaves: a seed's file and table, the manifest that tags it
    ...     with duckdb.connect(str(folder / "warehouse.duckdb")) as con:
    ...         _ = con.execute(f"create schema if not exists protected; create or replace table protected.cells as {sql}")
    ...         _ = con.execute(f"copy protected.cells to '{folder / 'cells.csv'}' (header)")
    ...     node = {"resource_type": "seed", "name": "cells", "alias": "cells", "schema": "protected",
    ...             "database": "warehouse", "tags": ["sdc_publish"], "config": {"materialized": "seed"},
    ...             "depends_on": {"macros": [], "nodes": []}, "root_path": str(folder), "original_file_path": "cells.csv"}
    ...     _ = (folder / "manifest.json").write_text(json.dumps({"nodes": {"seed.census.cells": node}}))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> build(folder, "select * from (values ('N', 3), ('S', 4)) t(region, count)")
    >>> publish(folder / "warehouse.duckdb", folder / "publication.duckdb", manifest=folder / "manifest.json")
    ['cells']
    >>> build(folder, "select * from (values ('N', 3), ('S', 5)) t(region, count)")
    >>> publish(folder / "warehouse.duckdb", folder / "publication.duckdb", manifest=folder / "manifest.json")
    ['cells']
    >>> diff_releases(folder / "sdc_ledger.duckdb", 1, 2)  # doctest: +NORMALIZE_WHITESPACE
    [{'relation': 'protected.cells', 'cell': {'region': 'S'}, 'change': 'changed', 'reason': 'unexplained',
      'before': {'count': 4}, 'now': {'count': 5}}]
    >>> shutil.rmtree(folder)
    """
    con = open_ledger(path, create=False, read_only=True)
    try:
        return diff_in(con, a, b, f"the ledger {path}")
    finally:
        con.close()


def diff_in(con, a: int, b: int, where: str) -> list[dict]:
    """diff_releases on the DuckDB connection ``con`` (as releases_in); ``where`` names the ledger in messages."""
    known = {r for (r,) in con.execute(f"select release_id from {LEDGER_SCHEMA}.releases").fetchall()}
    for release in (a, b):
        if release not in known:
            raise SdcError(f"{where} has no release {release} (releases: "
                           f"{', '.join(map(str, sorted(known))) or 'none'})")
    loads = {r: json.loads(x or "{}") for r, x in con.execute(
        f"select release_id, loads from {LEDGER_SCHEMA}.releases where release_id in (?, ?)", [a, b]).fetchall()}
    rows = con.execute(
        f"select coalesce(x.relation, y.relation), coalesce(x.cell, y.cell), x.published, y.published, "
        f"x.records, y.records, x.parameters, y.parameters "
        f"from (select * from {LEDGER_SCHEMA}.cells where release_id = ?) x "
        f"full join (select * from {LEDGER_SCHEMA}.cells where release_id = ?) y "
        "on x.relation = y.relation and x.cell = y.cell "
        "where x.published is distinct from y.published order by 1, 2", [a, b]).fetchall()
    rekeyed = bool(rekeyed_tables(loads[a], loads[b]))
    tables = {r: {t for (t,) in con.execute(f"select distinct relation from {LEDGER_SCHEMA}.cells where release_id = ?",
                                           [r]).fetchall()} for r in (a, b)}
    found = []
    for relation, cell, before, now, rec_a, rec_b, par_a, par_b in rows:
        change = "appeared" if before is None else "disappeared" if now is None else "changed"
        if change == "appeared" and relation not in tables[a]:
            reason = "table added"  # a table published anew, not microdata (new user D5)
        elif change == "disappeared" and relation not in tables[b]:
            reason = "table withdrawn"
        elif rekeyed:
            reason = "re-key"
        elif change != "changed" or rec_a != rec_b:
            reason = "microdata change"
        elif not same_call(par_a, par_b):
            reason = "parameter change"
        else:
            reason = "unexplained"
        found.append({"relation": relation, "cell": json.loads(cell), "change": change, "reason": reason,
                      "before": json.loads(before) if before else None, "now": json.loads(now) if now else None})
    return found


def diff_summary(changes: list[dict]) -> str:
    """The changes of diff_releases counted by change and reason, e.g. "6 changed (microdata change)"."""
    counts: dict = {}
    for c in changes:
        counts[(c["change"], c["reason"])] = counts.get((c["change"], c["reason"]), 0) + 1
    return "; ".join(f"{n} {change} ({reason})" for (change, reason), n in sorted(counts.items()))


def shown_values(values: dict | None) -> str:
    """A cell's published values as the diff shows them ("count 41"), "-" where it had none."""
    return "-" if values is None else ", ".join(f"{k} {v}" for k, v in values.items())


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def _shown(text: str) -> str:
    return ", ".join(f"{k}={v}" for k, v in json.loads(text).items())
