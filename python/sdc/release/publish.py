"""Copy the relations marked for publication into a separate DuckDB file (and Parquet files) for BI tools.

DuckDB has no GRANT: a BI tool that opens the warehouse file could read the microdata. ``sdc publish``
writes a separate file that holds copies of exactly the relations a dbt project tags ``sdc_publish``
(conventions.PUBLISH_TAG): models, views, seeds and snapshots, found through the project's
``target/manifest.json``; views are materialised, so nothing in the publication reaches back into the
warehouse. It refuses

* a tagged relation whose lineage (the manifest's ``depends_on.nodes``) reaches a dbt source or an audit
  relation (conventions.AUDIT_MACROS: it holds the originals) without passing a protection step, a node
  that calls conventions.PROTECTION_MACROS on exactly one parent relation;
* a tagged relation with a column that undoes the protection (conventions.UNPUBLISHABLE_COLUMNS, key
  facts ``rk_*``, ``top_<n>``, ``feasible_*``, ``required_*``), or with the true value of a suppressed cell
  (a row whose ``published_text`` is a mark or an interval, while a value column is not NULL);
* a tagged relation that holds one cell (one combination of its dimension columns) twice;
* a publication mixed from two builds: tagged relations built from different loads of a source table (the
  record that macros/build_record.sql commits with each relation), a tagged table without such a record, or a
  ``*__dbt_backup`` / ``*__dbt_tmp`` relation beside a tagged one (dbt was interrupted).

It never deletes or overwrites what it did not write: ``--out`` is replaced only when it is a publication
(it holds the table ``sdc_publication.relations``); in the Parquet folder only the files its marker file
(conventions.PARQUET_MARKER_FILE) lists are replaced or removed. Everything is written under temporary
names beside the targets and renamed at the end, so a failed run leaves the previous publication as it
was. The file is written in DuckDB storage format ``v1.0.0`` (conventions.PUBLICATION_STORAGE_VERSION),
which DuckDB clients from 1.0.0 on read.

On PostgreSQL the dbt hook grant_published publishes, and ``sdc publish --target`` runs these checks, the
verification and the release audit on a replica of the release (python/sdc/release/publish_target.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from sdc.warehouse.build_record import build_record_of_comment
from sdc.conventions import (
    AUDIT_MACROS,
    CKM_SUM_AUDIT_PATTERNS,
    DBT_LEFTOVER_SUFFIXES,
    KEY_FACT_PREFIX,
    LOAD_LOG_TABLE,
    MIN_STANDARD_ERROR,
    PARQUET_MARKER_FILE,
    PROTECTION_MACROS,
    PUBLICATION_INDEX_TABLE,
    PUBLICATION_SCHEMA,
    PUBLICATION_STORAGE_VERSION,
    RELEASE_AUDIT_TABLE,
    PUBLISH_TAG,
    PUBLISHED_MEASURES,
    PUBLISHED_TEXT_COLUMN,
    RAW_SCHEMA,
    SUPPRESSION_AUDIT_PREFIXES,
    SUPPRESSION_COLUMNS_ALSO_DIMENSIONS,
    SUPPRESSION_LAYER_COLUMNS,
    TOP_CONTRIBUTION_PREFIX,
    UNPUBLISHABLE_COLUMNS,
)
from sdc.warehouse.database import connect, duckdb_connect, first_line, is_numeric_type
from sdc.warehouse.dimension_names import dimension_column
from sdc.errors import SdcError
from sdc.files import check_not_an_input, check_output_file, disk_full, same_file, stage_text
from sdc.quoting import quote_identifier, quote_literal
from sdc.release.audit import audit_release
from sdc.release.averaging import check_floor
from sdc.release.averaging_releases import audit_over_releases
from sdc.release.differencing import MIN_CHANGED_RECORDS, check_differencing, check_minimum
from sdc.release.ledger import (
    check_against_last,
    check_ledger_path,
    check_publication_release,
    default_ledger,
    last_release,
    ledger_id,
    loaded_roots,
    new_ledger_id,
    open_ledger,
    record_release,
    release_cells,
    release_loads,
    withdrawn_relations,
)
from sdc.release.public_audit import public_release_audit
from sdc.release.quality import release_ptables, release_quality
from sdc.release.verify import Verifier
from sdc.release.gate import Gate, Warehouse

PUBLISHABLE_RESOURCES = ("model", "seed", "snapshot")
INDEX_COLUMNS = ("name", "relation", "dbt_node", "kind")
TEMP_PREFIX = ".sdc-publish-"
MARKER_WRITER = "sdc publish"
AUDIT_JSON_WRITER = "sdc publish --audit-json"  # the mark of the audit file (files.written_by)
# a relation's file name in the Parquet folder: letters, digits, _ - . ; not starting with a dot
MAX_FILE_NAME = 200

@dataclass(frozen=True)
class Marked:
    """A relation tagged for publication: its dbt node and where it lies in the warehouse."""

    node_id: str
    database: str | None
    schema: str
    name: str

    @property
    def relation(self) -> str:
        return f"{self.schema}.{self.name}"


# ------------------------------------------------------------------------------------------ the command
def publish(
    db: str | Path,
    out: str | Path,
    parquet_dir: str | Path | None = None,
    *,
    project_dir: str | Path | None = None,
    manifest: str | Path | None = None,
    report: dict | None = None,
    min_standard_error: float = MIN_STANDARD_ERROR,
    audit_json: str | Path | None = None,
    ledger: str | Path | None = None,
    accept_parameter_change: bool = False,
    min_changed_records: int = MIN_CHANGED_RECORDS,
) -> list[str]:
    """Copy every relation the dbt manifest tags ``sdc_publish`` from ``db`` into ``out`` (schema main) and,
    with ``parquet_dir``, into one Parquet file each; returns the published names.

    The manifest is ``manifest``, else ``<project_dir>/target/manifest.json``, else that of the working
    directory. Every relation is verified against sdc's own recomputation and the release audited as a whole
    (python/sdc/release/); the audit's figures go into the publication (table sdc_publication.release_audit,
    JSON) and, given ``report``, into that dict. ``min_standard_error``: the floor under the standard error of
    any count with records that a reader estimates from all CKM count tables of the release (averaging their
    noise, python/sdc/release/averaging.py). With ``audit_json``, the audit is also written to that file (JSON),
    checked before the work and written before the publication is renamed into place, so a refused path or a
    failed write leaves the earlier publication as it was. Each release is recorded in the ``ledger`` (default
    sdc_ledger.duckdb beside the warehouse) and checked against the last one there first (release/ledger.py): a
    cell whose records did not change is not published with another value, unless its table's parameters changed
    and ``accept_parameter_change``; a release after which some but fewer than ``min_changed_records`` records of
    a loaded table changed is refused (release/differencing.py: the changed cells would show their codes).

    Readers get sdc's protection steps and seeds only (a relation of one's own is refused: its SQL can carry numbers
    no step computed). A warehouse with one seed (its table compared with its file), published twice: the second
    release changes a cell the ledger knows, which the diff names.

    >>> import json, pathlib, shutil, tempfile
    >>> import duckdb
    >>> from sdc.release import publish
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
    >>> with duckdb.connect(str(folder / "publication.duckdb")) as con:
    ...     con.execute("select * from main.cells order by region").fetchall()
    [('N', 3), ('S', 4)]
    >>> report = {}
    >>> build(folder, "select * from (values ('N', 3), ('S', 5)) t(region, count)")
    >>> publish(folder / "warehouse.duckdb", folder / "publication.duckdb", manifest=folder / "manifest.json",
    ...         report=report)
    ['cells']
    >>> report["release"], report["published"], report["ledger"] == str(folder / "sdc_ledger.duckdb")
    (2, ['protected.cells'], True)
    >>> shutil.rmtree(folder)
    """
    check_minimum(min_changed_records)
    paths = _checked_paths(db, out, parquet_dir, project_dir, manifest, audit_json, ledger, min_standard_error)
    con = _open_warehouse(paths.db)
    staged = _Staged(paths.out)
    try:
        release = check_release(con, paths.manifest_data, paths.marked, str(paths.db), paths.manifest)
        alias, new_db = _attach_publication(con, staged, paths.out)
        copy_release(con, alias, release)
        _write_index(con, alias, paths.marked, release.kinds)
        audit = audit_checked_release(release, min_standard_error)
        cells, loads, accepted = _check_ledger(con, release, alias, audit, paths, accept_parameter_change,
                                               min_changed_records)
        _write_audit(con, alias, public_release_audit(audit))
        if report is not None:
            report.update(audit)
        if paths.audit_file is not None:  # complete before anything is renamed into place
            staged.writing = paths.audit_file
            staged.audit = stage_text(paths.audit_file, json.dumps(audit, indent=2, sort_keys=True) + "\n",
                                      AUDIT_JSON_WRITER)
        parquet_tmp = _stage_parquet(con, staged, alias, paths) if paths.folder is not None else None
        staged.writing = paths.out
        _execute(con, f"detach {quote_identifier(alias)}", f"cannot write {paths.out}")
        con.close()
        _stage_ledger(staged, paths.ledger, paths.out, cells, loads, audit, accepted)
        # everything is written: rename into place
        os.replace(new_db, paths.out)
        if paths.folder is not None:
            _replace_parquet(paths.folder, parquet_tmp, paths.previous, [f"{m.name}.parquet" for m in paths.marked])
        if staged.audit is not None:
            staged.audit.commit()
        os.replace(staged.ledger, paths.ledger)
    except BaseException as exc:
        con.close()
        staged.discard()
        error = _write_error(exc, staged.writing)
        if error is not None:
            raise error from None
        raise
    staged.remove_temporary()
    return [m.name for m in paths.marked]


@dataclass
class _PublishPaths:
    """The paths of one sdc publish, checked before any work (a refused path leaves everything as it was)."""

    db: Path
    out: Path
    folder: Path | None  # --parquet
    previous: object  # what --parquet held before (_check_parquet_folder)
    manifest: Path
    manifest_data: dict
    marked: list
    audit_file: Path | None
    ledger: Path


def _checked_paths(db, out, parquet_dir, project_dir, manifest, audit_json, ledger, min_standard_error) -> _PublishPaths:
    db, out = Path(db), Path(out)
    if not db.is_file():
        raise SdcError(f"warehouse database not found: {db}")
    check_floor(min_standard_error)
    _check_out(out, db)
    folder = Path(parquet_dir) if parquet_dir is not None else None
    previous = _check_parquet_folder(folder) if folder is not None else None
    manifest_path = manifest_location(project_dir, manifest)
    audit_file = _check_audit_json(Path(audit_json), db, out, folder, manifest_path) if audit_json is not None else None
    ledger_path = Path(ledger) if ledger is not None else default_ledger(db)
    check_ledger_path(ledger_path, db, out, manifest_path, audit_file, folder)
    manifest_path, manifest_data, marked = read_manifest(project_dir, manifest)
    if folder is not None:
        _check_file_names(marked, folder, previous, out)
    return _PublishPaths(db, out, folder, previous, manifest_path, manifest_data, marked, audit_file, ledger_path)


@dataclass
class _Staged:
    """What a publication has written under temporary names before it is renamed into place: discard() removes
    all of it, so a failed publish leaves the earlier publication, Parquet files, audit and ledger as they were.
    ``writing`` is what a full disk stops, named in the message."""

    writing: Path
    tmp_dirs: list = field(default_factory=list)
    audit: object = None  # files.StagedText
    ledger: Path | None = None
    ledger_con: object = None
    created_folder: Path | None = None

    def discard(self) -> None:
        if self.ledger_con is not None:
            self.ledger_con.close()
        if self.ledger is not None:  # the publication did not get into place: neither does its release
            for leftover in (self.ledger, Path(f"{self.ledger}.wal")):
                leftover.unlink(missing_ok=True)
        if self.audit is not None:
            self.audit.discard()
        self.remove_temporary()
        if self.created_folder is not None:
            try:
                self.created_folder.rmdir()  # only if still empty
            except OSError:
                pass

    def remove_temporary(self) -> None:
        for tmp in self.tmp_dirs:
            shutil.rmtree(tmp, ignore_errors=True)


def _write_error(exc: BaseException, writing: Path) -> SdcError | None:
    """The one-line error for a failed write (a full disk names what it stopped), or None to raise ``exc``."""
    full = disk_full(exc, writing)
    if full is not None:
        return full
    if isinstance(exc, OSError):  # e.g. no permission to write beside --out or into --parquet
        return SdcError(f"cannot write the publication: {exc}")
    return None


def _attach_publication(con, staged: _Staged, out: Path) -> tuple[str, Path]:
    """A new publication database in a temporary folder beside ``out``, attached to ``con``: (alias, file)."""
    staged.tmp_dirs.append(Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=out.parent)))
    new_db = staged.tmp_dirs[0] / "publication.duckdb"
    alias = f"sdc_publication_{uuid.uuid4().hex}"
    _execute(con, f"attach {quote_literal(new_db)} as {quote_identifier(alias)} "
                  f"(read_write, storage_version {quote_literal(PUBLICATION_STORAGE_VERSION)})", f"cannot write {out}")
    return alias, new_db


def _check_ledger(con, release, alias: str, audit: dict, paths: _PublishPaths, accept_parameter_change: bool,
                  min_changed_records: int = MIN_CHANGED_RECORDS):
    """This release against the last one in the ledger, before anything is written (release/ledger.py), and the
    publication it replaces against the ledger (a release the ledger did not record is refused); fills the audit's
    published, withdrawn, release, ledger and ledger_id entries. Returns (cells, loads, accepted changes)."""
    ledger_path = paths.ledger
    cells = release_cells(release.verifier, list(release.verifier.verified.values()),
                          {release.rels[m].label: f"{quote_identifier(alias)}.main.{quote_identifier(m.name)}"
                           for m in release.marked})
    loads = release_loads(con)
    accepted, last = [], None
    audit["published"] = sorted(release.rels[m].label for m in release.marked)
    audit["withdrawn"] = []
    held = held_release(paths.out)
    audit["ledger_id"] = new_ledger_id()
    if ledger_path.exists():  # read only: the ledger is written once the release is complete
        reading = open_ledger(ledger_path, create=False, read_only=True)
        try:
            check_publication_release(reading, held, f"the publication {paths.out}", f"the ledger {ledger_path}")
            accepted = check_against_last(reading, cells, loads, accept_parameter_change,
                                          loaded_roots(release.verifier))
            over = audit_over_releases(release.verifier, reading, loads, cells, audit["averaging"]["min_standard_error"])
            check_differencing(release.verifier, reading, last_release(reading), audit, min_changed_records)
            last = last_release(reading)
            audit["ledger_id"] = ledger_id(reading) or audit["ledger_id"]
            # what the last release published and this one does not: gone from the publication (new-user N2)
            audit["withdrawn"] = withdrawn_relations(reading, audit["published"])
        finally:
            reading.close()
    else:
        check_publication_release(None, held, f"the publication {paths.out}", f"the ledger {ledger_path}")
        over = audit_over_releases(release.verifier, None, loads, cells, audit["averaging"]["min_standard_error"])
        check_differencing(release.verifier, None, None, audit, min_changed_records)
    audit["averaging"]["over_releases"] = over
    audit["release"] = (last or 0) + 1
    audit["ledger"] = str(ledger_path)
    return cells, loads, accepted


def _stage_parquet(con, staged: _Staged, alias: str, paths: _PublishPaths) -> Path:
    """One Parquet file per published relation, in a temporary folder inside --parquet (made if need be)."""
    folder = paths.folder
    if not folder.exists():
        _mkdir(folder)
        staged.created_folder = folder
    staged.writing = folder
    parquet_tmp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=folder))
    staged.tmp_dirs.append(parquet_tmp)
    for m in paths.marked:
        target = parquet_tmp / f"{m.name}.parquet"
        _execute(con, f"copy {quote_identifier(alias)}.main.{quote_identifier(m.name)} "
                      f"to {quote_literal(target)} (format parquet)", f"cannot write {folder / target.name}")
    return parquet_tmp


def _stage_ledger(staged: _Staged, ledger_path: Path, out: Path, cells, loads, audit: dict, accepted) -> None:
    """The ledger with this release, staged beside it (a copy of the last one plus this release) and renamed
    into place after the publication."""
    staged.writing = ledger_path
    staged.ledger = ledger_path.with_name(f".{ledger_path.name}.{uuid.uuid4().hex}.tmp")
    if ledger_path.exists():
        shutil.copyfile(ledger_path, staged.ledger)
        os.chmod(staged.ledger, 0o600)
    staged.ledger_con = open_ledger(staged.ledger, create=True)
    record_release(staged.ledger_con, cells, loads, audit, str(out), accepted)
    staged.ledger_con.close()
    staged.ledger_con = None
    staged.writing = out


# ------------------------------------------------------------------------------------------ the release
@dataclass
class CheckedRelease:
    """The tagged relations of one release as the checks of the warehouse found them (check_release): their kind
    (table, view), the relation and path of each, the SQL that gives what is published of each (the relation, or
    for a table of one's own its SQL) and its columns, and the verifier that checks their content."""

    marked: list[Marked]
    kinds: dict
    verifier: Verifier
    rels: dict
    paths: dict
    contents: dict
    columns: dict


def check_release(con, manifest: dict, marked: list[Marked], where: str, manifest_path: Path) -> CheckedRelease:
    """The checks of the warehouse ``con`` (``where`` names it in the messages) before anything is copied: the
    manifest is its own, every tagged relation is there, no build was interrupted or mixed two loads, each reads
    protected relations only (release_gate.py) and publishes no column that undoes the protection."""
    _check_catalog(con, marked, where, manifest_path)
    kinds = {m: _find_relation(con, m, where) for m in marked}
    _check_leftovers(con, marked)
    _check_one_build(con, manifest, marked, kinds)
    verifier, rels = _check_what_each_reads(con, manifest, marked)
    paths = {m: [f"{rels[m].label} ({m.node_id})"] for m in marked}
    contents = {m: verifier.content(rels[m], paths[m]) for m in marked}
    columns = {m: _publishable_columns(con, m) for m in marked}
    return CheckedRelease(marked, kinds, verifier, rels, paths, contents, columns)


def copy_release(con, alias: str, release: CheckedRelease) -> None:
    """What is published of each tagged relation copied into the database ``alias`` (schema main), each copy
    checked: no true value of a suppressed cell, no cell twice."""
    for m in release.marked:
        _copy(con, alias, m, release.columns[m], release.contents[m])
        values = _check_published_text(con, alias, m)
        _check_unique_cells(con, alias, m, values)


def audit_checked_release(release: CheckedRelease, min_standard_error: float) -> dict:
    """Every tagged relation verified against sdc's recomputation from the microdata, then the release audited
    as a whole (python/sdc/release/); returns the audit's figures with the verified relations."""
    verifier = release.verifier
    verifier.plan([release.rels[m] for m in release.marked])  # the tables of one source are recomputed from one pass
    for m in release.marked:  # last: the other checks name the simpler mistakes first
        verifier.verify(release.rels[m], release.paths[m])
    # the table builder's cubes: analysts read every cell of them, so they are part of the release audit
    for database, schema, name in builder_cubes(verifier.manifest):
        cube = verifier.wh.find(database, schema, name)
        if cube is not None:
            verifier.verify(cube, [f"{cube.label} (the table builder's cube)"])
    audit = audit_release(verifier, list(verifier.verified.values()), min_standard_error)
    audit["verified"] = sorted(v.rel.label for v in verifier.verified.values())
    audit["kinds"] = {release.rels[m].label: verifier.verified[release.rels[m].key].kind for m in release.marked}
    audit["described"] = {release.rels[m].label: described(verifier.manifest, m.node_id) for m in release.marked}
    audit["published_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # the release's quality and its count ptables, for its record and report (release/quality.py)
    audit["quality"] = release_quality(verifier, list(verifier.verified.values()))
    audit["ptables"] = release_ptables(verifier, list(verifier.verified.values()))
    return audit


def described(manifest: dict, node_id: str) -> dict:
    """A published relation's title (the first line of its dbt description) and unit (its meta ``unit``), as the
    project gives them, for the report (new user D8)."""
    node = (manifest.get("nodes") or {}).get(node_id) or {}
    meta = {**(node.get("meta") or {}), **((node.get("config") or {}).get("meta") or {})}
    title = str(node.get("description") or "").strip().splitlines()
    unit = meta.get("unit")
    return {"title": title[0] if title else None, "unit": str(unit) if unit is not None else None}


def builder_cubes(manifest: dict) -> list[tuple[str, str, str]]:
    """(database, schema, name) of every model that is the table builder's cube (a call of ckm_finest_cells)."""
    return sorted((str(node.get("database") or ""), str(node.get("schema")), str(node.get("alias") or node.get("name")))
                  for node in (manifest.get("nodes") or {}).values()
                  if node.get("resource_type") == "model"
                  and "macro.sdc.ckm_finest_cells" in ((node.get("depends_on") or {}).get("macros") or []))


def manifest_location(project_dir: str | Path | None, manifest: str | Path | None) -> Path:
    """The manifest: ``manifest``, else ``<project_dir>/target/manifest.json``, else the working directory's."""
    return Path(manifest) if manifest is not None else Path(project_dir or ".") / "target" / "manifest.json"


def read_manifest(project_dir: str | Path | None, manifest: str | Path | None) -> tuple[Path, dict, list[Marked]]:
    """The manifest (manifest_location), its content and the relations it tags for publication; refuses after a
    dbt run that did not succeed."""
    manifest_path = manifest_location(project_dir, manifest)
    manifest_data = _read_manifest(manifest_path, given=manifest is not None)
    marked = _marked_relations(manifest_data, manifest_path)
    _check_last_run(manifest_path.with_name("run_results.json"))
    return manifest_path, manifest_data, marked


# ------------------------------------------------------------------------------------------ outputs
def _check_out(out: Path, db: Path) -> None:
    """``out`` may be written: its folder exists, and it is new or a publication sdc wrote (never the warehouse)."""
    parent = out.parent
    if not parent.is_dir():
        raise SdcError(f"output folder {parent} does not exist (--out {out})")
    if out.exists() and os.path.samefile(out, db):
        raise SdcError(f"--out {out} is the warehouse database {db} itself; give a separate file")
    if out.is_symlink():
        raise SdcError(f"--out {out} is a symbolic link; give the path of a separate file")
    if out.exists():
        if not out.is_file():
            raise SdcError(f"--out {out} exists and is not a file")
        if not _is_publication(out):
            raise SdcError(f"--out {out} exists and is not a publication written by sdc publish; "
                           "refusing to overwrite it (give a new file name)")
    wal = out.with_name(out.name + ".wal")
    if wal.exists():
        raise SdcError(f"{wal} exists: the publication was opened for writing since sdc wrote it; "
                       "refusing to replace it (remove both files or give a new --out)")


def _check_audit_json(path: Path, db: Path, out: Path, folder: Path | None, manifest: Path) -> Path:
    """``--audit-json`` may be written: a file of its own, not a symbolic link (as --out), none of the files sdc
    publish reads (warehouse, manifest, run results) or writes (the publication, the Parquet folder's files), and
    new or an earlier audit file of sdc publish."""
    if path.is_symlink():
        raise SdcError(f"--audit-json {path} is a symbolic link (to {os.readlink(path)}); give the path of a file of "
                       "its own")
    check_not_an_input(path, db, manifest, manifest.with_name("run_results.json"), flag="--audit-json")
    if same_file(path, out):
        raise SdcError(f"--audit-json {path} is the publication (--out {out}): give two files")
    if folder is not None and (same_file(path, folder) or (same_file(path.parent, folder) and (
            path.name == PARQUET_MARKER_FILE or path.name.endswith(".parquet")))):
        raise SdcError(f"--audit-json {path} is the Parquet folder --parquet {folder} or a file sdc publish writes "
                       "there: give another file")
    return check_output_file(path, AUDIT_JSON_WRITER)


def held_release(path: Path) -> dict | None:
    """The public release audit of the publication file ``path`` (None: no file, or none in it)."""
    if not path.is_file():
        return None
    con = duckdb_connect(path, read_only=True)
    try:
        row = con.execute(f"select report from {quote_identifier(PUBLICATION_SCHEMA)}."
                          f"{quote_identifier(RELEASE_AUDIT_TABLE)}").fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    found = json.loads(row[0]) if row and row[0] else None
    return found if isinstance(found, dict) else None


def _is_publication(path: Path) -> bool:
    """True for a DuckDB file that holds the index table of sdc publish."""
    try:
        with path.open("rb") as handle:
            if handle.read(12)[8:12] != b"DUCK":
                return False
    except OSError:
        return False
    try:
        con = duckdb_connect(path, read_only=True)
    except duckdb.Error as exc:  # locked by a writer, or written by a newer DuckDB
        raise SdcError(f"cannot read --out {path} to check that sdc publish wrote it: {first_line(exc)}") from None
    try:
        names = [r[0] for r in con.execute(
            "select column_name from duckdb_columns() where database_name = current_database() "
            "and schema_name = ? and table_name = ? order by column_index",
            [PUBLICATION_SCHEMA, PUBLICATION_INDEX_TABLE]).fetchall()]
    except duckdb.Error:
        return False
    finally:
        con.close()
    return tuple(names) == INDEX_COLUMNS


def _check_parquet_folder(folder: Path) -> list[str]:
    """The files sdc wrote into ``folder`` before (its marker); refuses a folder with other files and no marker."""
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir():
            raise SdcError(f"--parquet {folder} is not a folder")
        marker = folder / PARQUET_MARKER_FILE
        if marker.is_file():
            return _read_marker(marker)
        entries = sorted(p.name for p in folder.iterdir())
        if entries:
            shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
            raise SdcError(f"--parquet {folder} is not empty and has no {PARQUET_MARKER_FILE} of sdc publish "
                           f"(it holds {shown}); refusing to write there: give a new or empty folder")
        return []
    if not folder.parent.is_dir():
        raise SdcError(f"--parquet {folder}: folder {folder.parent} does not exist")
    return []


def _read_marker(marker: Path) -> list[str]:
    try:
        content = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SdcError(f"{marker} is not a marker file of sdc publish ({exc}); refusing to write there") from None
    files = content.get("files") if isinstance(content, dict) else None
    if not isinstance(content, dict) or content.get("written_by") != MARKER_WRITER or not isinstance(files, list):
        raise SdcError(f"{marker} is not a marker file of sdc publish; refusing to write there")
    for name in files:
        if not (isinstance(name, str) and name.endswith(".parquet") and _safe_file_name(name[: -len(".parquet")])):
            raise SdcError(f"{marker} lists {name!r}, which is no file sdc publish writes; refusing to write there")
    return list(files)


def _check_file_names(marked: list[Marked], folder: Path, previous: list[str] | None, out: Path) -> None:
    for m in marked:
        if not _safe_file_name(m.name):
            raise SdcError(f"relation {m.relation!r} cannot be a Parquet file name (allowed: letters, digits, _ - . "
                           f"not starting with a dot); rename it (dbt alias) or publish without --parquet")
    if folder.is_dir():
        for m in marked:
            path = folder / f"{m.name}.parquet"
            if (path.exists() or path.is_symlink()) and path.name not in (previous or []):
                raise SdcError(f"--parquet {folder} already holds {path.name}, which sdc publish did not write; "
                               "refusing to overwrite it")
    targets = {os.path.normcase(os.path.abspath(folder / f"{m.name}.parquet")) for m in marked}
    targets.add(os.path.normcase(os.path.abspath(folder / PARQUET_MARKER_FILE)))
    if os.path.normcase(os.path.abspath(out)) in targets:
        raise SdcError(f"--out {out} is a file of the Parquet folder {folder}; give another name")


def _safe_file_name(name: str) -> bool:
    return (0 < len(name) <= MAX_FILE_NAME and not name.startswith(".") and ".." not in name
            and all(c.isalnum() or c in "_-." for c in name))


def _mkdir(folder: Path) -> None:
    try:
        folder.mkdir()
    except OSError as exc:
        raise SdcError(f"cannot create --parquet {folder}: {exc.strerror}") from None


def _replace_parquet(folder: Path, tmp: Path, previous: list[str], files: list[str]) -> None:
    """Rename the new files into ``folder``; remove the files of the previous run no longer published. The
    marker lists every file sdc may have written at each step, so an interrupted run can be cleaned up."""
    marker = folder / PARQUET_MARKER_FILE
    _write_marker(marker, tmp, sorted(set(previous) | set(files)))
    for name in files:
        os.replace(tmp / name, folder / name)
    for name in sorted(set(previous) - set(files)):
        path = folder / name
        if path.is_file() and not path.is_symlink():
            path.unlink()
    _write_marker(marker, tmp, sorted(files))


def _write_marker(marker: Path, tmp: Path, files: list[str]) -> None:
    staged = tmp / PARQUET_MARKER_FILE
    staged.write_text(json.dumps({"written_by": MARKER_WRITER, "files": files}, indent=2) + "\n", encoding="utf-8")
    os.replace(staged, marker)


# ------------------------------------------------------------------------------------------ the manifest
def _read_manifest(path: Path, given: bool) -> dict:
    if not path.is_file():
        hint = "" if given else "run dbt build (or dbt parse) in the dbt project, give --project-dir, or give --manifest"
        raise SdcError(f"dbt manifest not found: {path}" + (f"; {hint}" if hint else ""))
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SdcError(f"{path} is not a dbt manifest ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("nodes"), dict):
        raise SdcError(f"{path} is not a dbt manifest (no nodes)")
    return manifest


FAILED_STATUSES = ("error", "fail", "runtime error", "skipped")


def _check_last_run(path: Path) -> None:
    """dbt's run results beside the manifest: after a build with errors, the warehouse holds old relations next
    to new ones (the same cell with two values across tables), so nothing is published."""
    if not path.is_file():
        return
    try:
        results = json.loads(path.read_text(encoding="utf-8")).get("results") or []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise SdcError(f"{path} is not a dbt run result ({exc})") from None
    failed = [r.get("unique_id", "?") for r in results if str(r.get("status", "")).lower() in FAILED_STATUSES]
    if failed:
        raise SdcError(f"the last dbt run ({path}) did not succeed: {len(failed)} node(s) failed or were skipped, "
                       f"first {failed[0]}; fix it and run dbt build before publishing")


def _tags(node: dict) -> set[str]:
    tags: set[str] = set()
    for value in (node.get("tags"), (node.get("config") or {}).get("tags")):
        if isinstance(value, str):
            tags.add(value)
        elif isinstance(value, list):
            tags.update(t for t in value if isinstance(t, str))
    return tags


def _marked_relations(manifest: dict, path: Path) -> list[Marked]:
    sources = manifest.get("sources") or {}
    tagged_sources = sorted(k for k, s in sources.items() if PUBLISH_TAG in _tags(s))
    if tagged_sources:
        raise SdcError(f"{path}: source {tagged_sources[0]} is tagged {PUBLISH_TAG}: a source is raw data; "
                       "tag the protected model built on it")
    marked = []
    for node_id, node in sorted(manifest["nodes"].items()):
        if node.get("resource_type") not in PUBLISHABLE_RESOURCES or PUBLISH_TAG not in _tags(node):
            continue
        name = node.get("alias") or node.get("name")
        if (node.get("config") or {}).get("materialized") == "ephemeral":
            raise SdcError(f"{node_id} is tagged {PUBLISH_TAG} but ephemeral: dbt builds no relation for it; "
                           "materialise it as a table or view")
        if not isinstance(name, str) or not isinstance(node.get("schema"), str):
            raise SdcError(f"{path}: node {node_id} names no relation")
        marked.append(Marked(node_id, node.get("database"), node["schema"], name))
    if not marked:
        raise SdcError(f"no relation in {path} is tagged {PUBLISH_TAG}: tag the protected models in dbt "
                       f"(e.g. +tags: [\"{PUBLISH_TAG}\"] in dbt_project.yml) and run dbt build")
    seen: dict[str, Marked] = {}
    for m in marked:
        other = seen.setdefault(m.name.lower(), m)
        if other is not m:
            raise SdcError(f"{other.relation} and {m.relation} would both be published as {m.name!r}; "
                           "give one of them another dbt alias")
    for m in marked:
        _check_lineage(manifest, m)
    _check_exposures(manifest, marked, path)
    return marked


def _check_exposures(manifest: dict, marked: list[Marked], path: Path) -> None:
    """A dbt exposure is what a BI tool reads: it may depend on relations of the release only (a dashboard on an
    audit or raw relation would show what the release protects)."""
    published = {m.node_id for m in marked}
    for exposure_id, exposure in sorted((manifest.get("exposures") or {}).items()):
        for node in (exposure.get("depends_on") or {}).get("nodes") or []:
            if node not in published:
                raise SdcError(f"{path}: exposure {exposure_id} ({exposure.get('type') or 'exposure'} "
                               f"{exposure.get('label') or exposure.get('name')!r}) depends on {node}, which is not "
                               f"tagged {PUBLISH_TAG}: a BI tool may read published relations only; point the "
                               "exposure at the published relation (ref('<protected model>')) or tag it")


def _check_lineage(manifest: dict, marked: Marked) -> None:
    """Refuses a path from the marked node up to a dbt source, or to an audit relation (it holds the original
    values), that passes no protection step: a node that calls sdc.ckm_published or sdc.suppression_published
    on exactly one parent relation (a second parent, e.g. a union with raw data, would bypass it)."""
    nodes, sources = manifest["nodes"], manifest.get("sources") or {}
    steps_named = ", ".join(m.split(".", 1)[1] for m in PROTECTION_MACROS)
    seen: set[str] = set()
    stack = [(marked.node_id, [marked.node_id])]
    while stack:
        node_id, path = stack.pop()
        route = " <- ".join(nodes[n].get("name", n) if n in nodes else n for n in path[:-1])
        if node_id in sources:
            source = sources[node_id]
            name = f"{source.get('source_name', '?')}.{source.get('name', '?')}"
            raise SdcError(f"relation {marked.relation} ({marked.node_id}) reaches raw microdata, source {name}, "
                           f"without a protection step ({steps_named}): {route} <- source {name}")
        if node_id in seen or node_id not in nodes:
            continue
        seen.add(node_id)
        depends = nodes[node_id].get("depends_on") or {}
        macros, parents = depends.get("macros") or [], depends.get("nodes") or []
        if _calls(manifest, macros, PROTECTION_MACROS) and len(parents) == 1 and parents[0] not in sources:
            continue
        if _calls(manifest, macros, AUDIT_MACROS) and node_id == marked.node_id:
            raise SdcError(f"relation {marked.relation} ({marked.node_id}) is an audit relation: it is built by "
                           f"{_audit_macros_called(manifest, macros)}, whose relations can hold the original values (in "
                           f"their audit columns); publish a model that calls {steps_named} on it instead")
        if _calls(manifest, macros, AUDIT_MACROS):
            name = nodes[node_id].get("name", node_id)
            raise SdcError(f"relation {marked.relation} ({marked.node_id}) reads the audit relation {name}, which holds "
                           f"the original values, without a protection step ({steps_named}): "
                           + " <- ".join(nodes[n].get("name", n) for n in path))
        for parent in parents:
            stack.append((parent, path + [parent]))


def _audit_macros_called(manifest: dict, macros: list[str]) -> str:
    """The audit macros a node calls itself (ckm_count calls ckm_sum and suppression_primary in turn)."""
    named = [m.split(".", 1)[1] for m in macros if m in AUDIT_MACROS]
    return ", ".join(named) or "an audit macro"


def _calls(manifest: dict, macros: list[str], targets: tuple[str, ...]) -> bool:
    """True if any of ``macros`` is, or calls (through the manifest's macro dependencies), one of ``targets``."""
    known = manifest.get("macros") or {}
    stack, seen = list(macros), set()
    while stack:
        macro = stack.pop()
        if macro in targets:
            return True
        if macro in seen:
            continue
        seen.add(macro)
        stack.extend(((known.get(macro) or {}).get("depends_on") or {}).get("macros") or [])
    return False


# ------------------------------------------------------------------------------------------ the warehouse
def _open_warehouse(db: Path) -> duckdb.DuckDBPyConnection:
    return connect(db, read_only=True, what="the warehouse")


def _check_catalog(con, marked: list[Marked], db: str, manifest_path: Path) -> None:
    catalog = con.execute("select current_database()").fetchone()[0]
    for m in marked:
        if m.database is not None and m.database.lower() != catalog.lower():
            raise SdcError(f"the manifest {manifest_path} belongs to warehouse {m.database!r} (database of "
                           f"{m.node_id}), but {db} is warehouse {catalog!r}: run dbt build against {db} or give its manifest")


def _find_relation(con, m: Marked, db: str) -> str:
    rows = con.execute(
        "select table_type from information_schema.tables where table_catalog = current_database() "
        "and lower(table_schema) = lower(?) and lower(table_name) = lower(?)", [m.schema, m.name]).fetchall()
    if not rows:
        raise SdcError(f"relation {m.relation} ({m.node_id}, tagged {PUBLISH_TAG}) is not in the warehouse {db}: "
                       "run dbt build")
    return "table" if rows[0][0] == "BASE TABLE" else "view"


def _check_leftovers(con, marked: list[Marked]) -> None:
    """dbt-duckdb keeps a model's old relation as <name>__dbt_backup, and the new one as <name>__dbt_tmp, until the
    model's commit: one beside a tagged relation is a build that was killed half-way."""
    schemas = sorted({m.schema.lower() for m in marked})
    found = con.execute(
        "select schema_name || '.' || table_name, table_name from duckdb_tables() "
        "where database_name = current_database() and list_contains(?, lower(schema_name)) "
        "union all select schema_name || '.' || view_name, view_name from duckdb_views() "
        "where database_name = current_database() and not internal and list_contains(?, lower(schema_name)) "
        "order by 1", [schemas, schemas]).fetchall()
    left = [relation for relation, name in found if name.lower().endswith(DBT_LEFTOVER_SUFFIXES)]
    if left:
        raise SdcError(f"{', '.join(left)} lie beside the tagged relations: a dbt build was interrupted and the "
                       "warehouse may hold tables of two builds; run dbt build to the end before publishing")


BUILD_RECORD_HINT = ('the sdc macros (ckm_count, ckm_published, suppression_*) record it: run dbt build (persist_docs for '
                     'relations writes over the record); a table of your own is not published, with a record or without '
                     '(its SQL can carry numbers no step computed): tag the protection steps')


def _check_one_build(con, manifest: dict, marked: list[Marked], kinds: dict) -> None:
    """The tagged relations come from one load of each source table: the record build_record committed with each
    table (a view reads its parents live, so its loads are theirs). A build killed half-way, or one run on part of
    the project after sdc load, leaves tables of the new load next to tables of the old one."""
    log = _load_log(con)
    loads, missing = {}, []
    for m in marked:
        resource = manifest["nodes"][m.node_id].get("resource_type")
        if resource == "seed":  # a seed comes from the project's CSV file, not from a load
            loads[m] = {}
        elif kinds[m] == "view":
            loads[m] = _parent_loads(con, manifest, m.node_id, log)
        else:
            loads[m] = _build_record(con, m.schema, m.name)
            if loads[m] is None:
                missing.append(m.relation)
    if missing:
        raise SdcError(f"no build record on {', '.join(missing)} (which load of the source tables it was built from), "
                       f"so a publication mixed from two builds cannot be told apart: {BUILD_RECORD_HINT}")
    versions: dict[str, dict[str, list[str]]] = {}
    for m in marked:
        for table, loaded in loads[m].items():
            for at in loaded:
                versions.setdefault(table, {}).setdefault(at, []).append(m.relation)
    for table, built in sorted(versions.items()):
        if len(built) > 1:
            shown = "; ".join(f"load of {at}: {', '.join(relations)}" for at, relations in sorted(built.items()))
            raise SdcError(f"the tagged relations were built from different loads of {table} ({shown}): a dbt build "
                           "was interrupted or ran on part of the project; run dbt build after the last sdc load")
    for table, built in sorted(versions.items()):  # one load, but not the last one: a stale release
        (at, relations), = built.items()
        last = log.get(table.split(".", 1)[1] if table.startswith(f"{RAW_SCHEMA}.") else table)
        if last is not None and at != last:
            raise SdcError(f"{', '.join(relations)} {'was' if len(relations) == 1 else 'were'} built from the load of "
                           f"{table} of {at}, but its last sdc load is of {last}: run dbt build (and sdc suppress "
                           "--target again for a suppression pattern) after the last sdc load")


def _check_what_each_reads(con, manifest: dict, marked: list[Marked]) -> tuple[Verifier, dict]:
    """What each tagged relation reads in the warehouse, and one value per cell across them
    (python/sdc/release/gate.py: the earlier, clearer messages). Returns the verifier of their content
    (python/sdc/release/verify.py) and the relation of each."""
    warehouse = Warehouse(con, manifest)
    gate = Gate(warehouse)
    rels = {m: warehouse.find(m.database, m.schema, m.name) for m in marked}
    for m in marked:
        gate.check(rels[m], m.node_id)
    gate.check_release()
    return Verifier(con, warehouse, manifest), rels


def _load_log(con) -> dict[str, str]:
    """The load log of sdc load: table name (lower case) -> loaded_at, as text (as build_record writes it)."""
    present = con.execute("select count(*) from duckdb_tables() where database_name = current_database() "
                          "and schema_name = ? and table_name = ?", [RAW_SCHEMA, LOAD_LOG_TABLE]).fetchone()[0]
    if not present:
        return {}
    return {t.lower(): at for t, at in con.execute(
        f"select table_name, cast(loaded_at as varchar) from {quote_identifier(RAW_SCHEMA)}.{quote_identifier(LOAD_LOG_TABLE)}"
    ).fetchall()}


def _build_record(con, schema: str, name: str) -> dict[str, list[str]] | None:
    """The loads in the build record (the comment) of a table, or None when it has none."""
    row = con.execute("select comment from duckdb_tables() where database_name = current_database() "
                      "and lower(schema_name) = lower(?) and lower(table_name) = lower(?)", [schema, name]).fetchone()
    loads = (build_record_of_comment(row[0]) or {}).get("loads") if row else None
    if not isinstance(loads, dict) or not all(isinstance(v, list) for v in loads.values()):
        return None
    return {str(table): [str(at) for at in loaded] for table, loaded in loads.items()}


def _parent_loads(con, manifest: dict, node_id: str, log: dict[str, str]) -> dict[str, list[str]]:
    """The loads behind a node's parents, by the rule of build_record: a loaded source its logged load, a table its
    record, a view (or a table without a record) the loads of its own parents."""
    nodes, sources = manifest["nodes"], manifest.get("sources") or {}
    loads: dict[str, set[str]] = {}
    for parent in (nodes[node_id].get("depends_on") or {}).get("nodes") or []:
        found: dict[str, list[str]] = {}
        if parent in sources:
            source = sources[parent]
            table = str(source.get("identifier") or source.get("name") or "").lower()
            if str(source.get("schema") or "").lower() == RAW_SCHEMA and table in log:
                found = {f"{RAW_SCHEMA}.{table}": [log[table]]}
        elif parent in nodes and nodes[parent].get("resource_type") in ("model", "snapshot"):
            node = nodes[parent]
            recorded = None
            if (node.get("config") or {}).get("materialized") not in ("view", "ephemeral"):
                recorded = _build_record(con, str(node.get("schema")), str(node.get("alias") or node.get("name")))
            found = recorded if recorded is not None else _parent_loads(con, manifest, parent, log)
        for table, loaded in found.items():
            loads.setdefault(table, set()).update(loaded)
    return {table: sorted(loaded) for table, loaded in loads.items()}


def unpublishable(column: str, columns: list[str] | None = None) -> bool:
    """True for a column name that undoes the protection (conventions.UNPUBLISHABLE_COLUMNS and families) in a
    relation with ``columns``: status, rule, lower and upper only beside a suppression column."""
    name = column.lower()
    if name in SUPPRESSION_COLUMNS_ALSO_DIMENSIONS and columns is not None:
        others = {c.lower() for c in columns} - {name}
        return any(o in SUPPRESSION_LAYER_COLUMNS or (o not in SUPPRESSION_COLUMNS_ALSO_DIMENSIONS and unpublishable(o))
                   for o in others)
    if name in UNPUBLISHABLE_COLUMNS or name.startswith(KEY_FACT_PREFIX) or name.startswith(SUPPRESSION_AUDIT_PREFIXES):
        return True
    if any(re.fullmatch(pattern, name) for pattern in CKM_SUM_AUDIT_PATTERNS):
        return True
    return name.startswith(TOP_CONTRIBUTION_PREFIX) and name[len(TOP_CONTRIBUTION_PREFIX):].isdigit()


def _publishable_columns(con, m: Marked) -> list[str]:
    columns = [r[0] for r in con.execute(
        "select column_name from information_schema.columns where table_catalog = current_database() "
        "and lower(table_schema) = lower(?) and lower(table_name) = lower(?) order by ordinal_position",
        [m.schema, m.name]).fetchall()]
    refused = [c for c in columns if unpublishable(c, columns)]
    if refused:
        raise SdcError(f"relation {m.relation} ({m.node_id}) carries column {refused[0]!r}, which undoes the protection "
                       f"(record keys, CKM audit columns and suppression internals are never published); "
                       "publish the result of sdc.ckm_published / sdc.suppression_published instead")
    return columns


def _copy(con, alias: str, m: Marked, columns: list[str], content: str) -> None:
    """The verified content of ``m`` (its relation, or the SQL sdc runs for a table of one's own) into the
    publication."""
    select = ", ".join(quote_identifier(c) for c in columns)
    _execute(con, f"create table {quote_identifier(alias)}.main.{quote_identifier(m.name)} as select {select} "
                  f"from {content} as verified", f"cannot copy {m.relation}")


def _check_published_text(con, alias: str, m: Marked) -> list[str]:
    """In a relation with published_text, a row that shows a mark or interval must have NULL in every value
    column (a column that equals published_text in every row that shows a number). Returns published_text and
    the value columns: the measures of the relation."""
    table = f"{quote_identifier(alias)}.main.{quote_identifier(m.name)}"
    columns = con.execute(
        "select column_name, data_type from duckdb_columns() where database_name = ? and schema_name = 'main' "
        "and table_name = ? order by column_index", [alias, m.name]).fetchall()
    text = next((c for c, _ in columns if c.lower() == PUBLISHED_TEXT_COLUMN), None)
    if text is None:
        return []
    measures = [text]
    shown = f"try_cast({quote_identifier(text)} as double)"
    published = f"({shown} is not null)"
    any_published = con.execute(f"select count(*) from {table} where {published}").fetchone()[0] > 0
    for column, kind in columns:
        if column == text or dimension_column(column):
            continue
        c = quote_identifier(column)
        if is_numeric_type(kind):
            differs = f"({c} is null or abs(cast({c} as double) - {shown}) > 1e-6 * greatest(1, abs(cast({c} as double))))"
        elif any_published and kind.upper() == "VARCHAR":
            differs = f"({c} is distinct from {quote_identifier(text)})"
        else:
            continue
        value_column, leaks, example = con.execute(
            f"select count(*) filter (where {published} and {differs}) = 0, "
            f"count(*) filter (where not coalesce({published}, false) and {c} is not null), "
            f"min({quote_identifier(text)}) filter (where not coalesce({published}, false) and {c} is not null) "
            f"from {table}").fetchone()
        if value_column and leaks:
            raise SdcError(f"relation {m.relation} ({m.node_id}) shows the true value of {leaks} suppressed cell(s) in "
                           f"column {column!r} (published_text {example!r}); publish it through "
                           "sdc.suppression_published, which sets the value of a suppressed cell to NULL")
        if value_column:
            measures.append(column)
    return measures


def _check_unique_cells(con, alias: str, m: Marked, measures: list[str]) -> None:
    """Each cell (combination of the dimension columns: all but the measures conventions.PUBLISHED_MEASURES and
    the value columns beside published_text) is published once. A ptable seed with overlapping intervals once published every cell twice,
    perturbed and original; ckm_count now stops on that, and this is the second guard."""
    table = f"{quote_identifier(alias)}.main.{quote_identifier(m.name)}"
    columns = [c for (c,) in con.execute(
        "select column_name from duckdb_columns() where database_name = ? and schema_name = 'main' "
        "and table_name = ? order by column_index", [alias, m.name]).fetchall()]
    skip = {c.lower() for c in measures} | set(PUBLISHED_MEASURES)
    dims = [c for c in columns if c.lower() not in skip and not dimension_column(c)]
    if not dims:  # one value, no dimensions: nothing to tell cells apart by
        return
    listed = ", ".join(quote_identifier(c) for c in dims)
    twice = con.execute(f"select {listed}, count(*) from {table} group by all having count(*) > 1 "
                        f"order by count(*) desc, {', '.join(str(i + 1) for i in range(len(dims)))} limit 1").fetchone()
    if twice:
        cell = ", ".join(f"{d}={v!r}" for d, v in zip(dims, twice[:-1]))
        raise SdcError(f"relation {m.relation} ({m.node_id}) holds the cell ({cell}) {twice[-1]} times: every cell is "
                       "published once (a perturbation table with overlapping intervals, or a join that repeats "
                       "rows, publishes a cell twice); fix the model and run dbt build")


def _write_index(con, alias: str, marked: list[Marked], kinds: dict) -> None:
    a = quote_identifier(alias)
    schema = f"{a}.{quote_identifier(PUBLICATION_SCHEMA)}"
    con.execute(f"create schema {schema}")
    con.execute(f"create table {schema}.{quote_identifier(PUBLICATION_INDEX_TABLE)} "
                f"({', '.join(quote_identifier(c) + ' varchar' for c in INDEX_COLUMNS)})")
    catalog = con.execute("select current_database()").fetchone()[0]
    con.executemany(f"insert into {schema}.{quote_identifier(PUBLICATION_INDEX_TABLE)} values (?, ?, ?, ?)",
                    [[m.name, f"{catalog}.{m.schema}.{m.name}", m.node_id, kinds[m]] for m in marked])


def _write_audit(con, alias: str, audit: dict) -> None:
    table = f"{quote_identifier(alias)}.{quote_identifier(PUBLICATION_SCHEMA)}.{quote_identifier(RELEASE_AUDIT_TABLE)}"
    con.execute(f"create table {table} (report json)")
    con.execute(f"insert into {table} values (?)", [json.dumps(audit, sort_keys=True)])


def _execute(con, sql: str, what: str) -> None:
    try:
        con.execute(sql)
    except duckdb.Error as exc:
        raise SdcError(f"{what}: {first_line(exc)}") from None


