"""Verify content, not lineage: every relation of a release is compared, cell by cell, with what sdc's own SQL
computes from the microdata for the step that the relation declares.

What a relation *says* it reads (its SQL, its build record, dbt's lineage) can be made to lie: a DuckDB macro or
variable filled by a hook reads the microdata where no parser sees it, a post-hook rewrites a step's table after
the step, a model calls ``sdc.step`` around SQL of its own. So the gate no longer trusts any of it for the
numbers. For each relation it publishes:

* a **protection step** (its build record names ``ckm_published``, ``ckm_mean`` or ``suppression_published``):
  the step's input is looked up in the same way, down to the CKM call that made it (``ckm_count`` /
  ``ckm_sum``: the call with every default resolved, which those macros write into their step header), and
  sdc renders that call again with its own macros, over the microdata, with every record key check on (the
  queries of those checks, which read the microdata only, run once for all the calls over one relation: the
  warehouse is open read-only, so a second run could only give the same rows; each call judges them), and
  compares every cell (counts exactly, magnitudes to 1e-9 relative; a missing or extra cell, or another
  column, is a difference). Magnitudes that ckm_published rounded (its build record's call.digits) are
  compared with sdc's recomputation rounded alike: equal, or one unit of the last digit apart where the
  unrounded recomputation lies within 1e-9 relative of the half-way point between the two (two engines, or
  two summation orders, may put it on either side; rounded). A forged record or step marker only chooses which call is recomputed; the
  published numbers must still be what that call gives. The ckm_count tables of one source are recomputed
  from one pass over it per largest set of their dimensions, not one pass each (plan, _shared_cells: each
  cell's count and key sum, which ckm_count's leaf_cells sums to the call's own cells: sums over records are
  the same in any grouping);
* a **seed**: its table must hold the rows of its CSV file in the project;
* a **relation of one's own** (a BI view, a join of protected relations) is never published (red team R4-2: what
  it publishes is what its SQL says, and SQL can carry numbers that no step computed; the gate refuses it first).

The microdata a step reads must be a table that ``sdc load`` loaded (the raw schema, in the load log), or a view
or table of one's own over such tables only: its SQL (a view's from the warehouse, a table's from the dbt manifest)
may read such relations only and call DuckDB's built-in functions only (no macro of the warehouse, no
``getvariable``); a table of one's own is recomputed from its SQL, not read.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot
from sqlglot.tokens import TokenType

from sdc.conventions import (
    CKM_AUDIT_COLUMNS,
    CKM_SUM_AUDIT_COLUMNS,
    CKM_SUM_AUDIT_PATTERNS,
    CKM_SUM_MEASURES,
    LOAD_LOG_TABLE,
    PUBLISHED_MEASURES,
    RAW_SCHEMA,
    RECORD_KEY_COLUMN,
)
from sdc.warehouse.dimension_names import dimension_column
from sdc.errors import SdcError, SdcWarning
from sdc.warehouse.macro_renderer import Relation, RememberedQueries, render_macro, sql_errors
from sdc.quoting import quote_identifier as q
from sdc.quoting import quote_literal
from sdc.release.gate import Rel, Warehouse, resolve_reads
from sdc.release.record_wise import Lineage, NotRecordWise, key_columns, loaded_lineage, record_wise_lineage
from sdc.release.seed_files import seed_file_state
from sdc.release.verified import RELATIVE_TOLERANCE, Verified, refuse

# the largest mean noise of a count ptable's row, relative to its largest |v| (its p are rounded to 8 decimals)
PTABLE_BIAS: float = 1e-6
# the arguments of a step's call that name reference data (seeds only: reference())
REFERENCE_ARGUMENTS: tuple[str, ...] = ("hierarchy", "ptable", "nums_ptable", "zero_with_counts")
# built-in functions that read state outside the query's relations: refused in SQL that sdc runs
STATE_FUNCTIONS: tuple[str, ...] = ("getvariable", "current_setting", "getenv")
CKM_STEPS: tuple[str, ...] = ("ckm_count", "ckm_sum")
# the unrounded recomputation of a measure that ckm_published rounded, beside the rounded one (_rounded)
EXACT_PREFIX: str = "sdc_exact_"


class Verifier:
    """Verifies the relations of one release on the warehouse connection ``con`` (read-only; sdc's
    recomputations go to its temp catalog)."""

    def __init__(self, con, warehouse: Warehouse, manifest: dict):
        self.con, self.wh, self.manifest = con, warehouse, manifest
        self.verified: dict[tuple, Verified] = {}
        self.references: dict[tuple, Verified] = {}  # the seeds that steps' calls name (reference())
        self.user_functions = {name.lower() for (name,) in con.execute(
            "select distinct function_name from duckdb_functions() where not internal").fetchall()}
        self.loaded = self._loaded_tables()
        self.inputs: dict[tuple, Relation] = {}
        self.roots: dict[tuple, frozenset] = {}
        # per microdata relation: each column's lineage (record_wise.py)
        self.lineage: dict[tuple, dict[str, Lineage]] = {}
        self.loaded_relations: dict[str, Relation] = {}  # the loaded tables read so far, by their label (lower)
        self.key_roots: set[tuple] = set()  # the loaded record keys, key facts and facts (record_wise.key_columns)
        # (loaded table, column) that a replica of sdc publish --target holds as NULL (replica.copied_columns)
        self.not_copied: set[tuple] = set()
        # per microdata relation: the results of the rendering's queries that read it (the record key checks)
        self.microdata_queries: dict[str, RememberedQueries] = {}
        self.recomputed: dict[tuple, str] = {}  # CKM step (its audit relation) -> sdc's table for its call
        # the ckm_count calls the release reads, by their microdata (plan), and their leaf cells summed in one pass
        self.planned: dict[tuple, dict[str, dict]] = {}
        self.shared: dict[tuple, SharedCells] = {}
        self._count = 0

    # ------------------------------------------------------------------------------------------ one relation
    def content(self, rel: Rel, path: list[str] | None = None) -> str:
        """The SQL that gives what is published of ``rel`` (a protection step or a seed, which verify() checks):
        the relation itself."""
        return self.wh_name(rel)

    def verify(self, rel: Rel, path: list[str] | None = None) -> Verified:
        if rel.key in self.verified:
            return self.verified[rel.key]
        path = path or [rel.label]
        node = self.wh.node(rel)
        if node is not None and node.get("resource_type") == "seed":
            found = self._seed(rel, node, path)
        else:
            record = self.wh.record(rel) or {}
            step = record.get("step")
            if step == "ckm_published":
                found = self._ckm_published(rel, record, path)
            elif step == "ckm_mean":
                found = self._ckm_mean(rel, record, path)
            elif step == "ckm_finest_cells":
                found = self._ckm_finest_cells(rel, record, path)
            elif step == "suppression_published":
                from sdc.release.verify_suppression import verify_suppression_published

                found = verify_suppression_published(self, rel, record, path)
            else:
                found = self._own(rel, record, path)
        self.verified[rel.key] = found
        return found

    def _ckm_published(self, rel: Rel, record: dict, path: list[str]) -> Verified:
        (audit,) = self._reads(rel, record, path, 1)
        audit_record = self.wh.record(audit) or {}
        step, call = audit_record.get("step"), audit_record.get("call")
        if step not in CKM_STEPS or not isinstance(call, dict):
            raise refuse(path + [audit.label], "is read by ckm_published, but its build record names no ckm_count or "
                                               "ckm_sum call that sdc can compute again: run dbt build (with this sdc)")
        if "leaf_cells" in call:  # sdc's own argument: the cells it sums from the microdata itself (_shared_cells)
            raise refuse(path + [audit.label], "has a build record whose call names leaf_cells, which no model "
                                               "passes: the call is not one that ckm_count recorded")
        (source,) = self._reads(audit, audit_record, path + [audit.label], 1)
        # one recomputation per CKM step, however many published relations read it (a table and a view of it)
        table = self.recomputed.get(audit.key)
        if table is None:
            table = self.recomputed[audit.key] = self._recompute(step, source, call,
                                                                 path + [audit.label, source.label])
        digits = published_digits(record, path)
        columns = [c for c in self._columns(table) if not ckm_audit_column(c)]
        rounded = {c: digits for c in columns if digits is not None and c.lower() in CKM_SUM_MEASURES}
        if rounded:  # the table as published (rounded), for the comparison and for the release's figures
            table = self._rounded(table, rounded)
        cells = (f"select {', '.join(map(q, columns))}" + "".join(f", {q(EXACT_PREFIX + c)}" for c in rounded)
                 + f" from {table}")
        self._compare(rel, self.with_dimension_columns(cells, call, call, path + [audit.label]), path,
                      f"{step} over {source.label} (recomputed from the microdata)", rounded=rounded)
        return Verified(rel, step, self.wh_name(rel), audit=table, source=str(self.inputs[source.key]), call=call,
                        step_of=audit, roots=self.roots[source.key], lineage=self.lineage.get(source.key))

    def _rounded(self, table: str, rounded: dict[str, int]) -> str:
        """A copy of the recomputed ``table`` with its measures rounded as ckm_published rounds them (its macro),
        the unrounded ones beside them as sdc_exact_<measure>."""
        found = self._temp("rounded")
        with sql_errors():
            replaced = ", ".join(f"{render_macro(self.con, 'ckm_published_rounded', q(c), d)} as {q(c)}"
                                 for c, d in rounded.items())
            exact = "".join(f", {q(c)} as {q(EXACT_PREFIX + c)}" for c in rounded)
            self.con.execute(f"create temp table {found} as select * replace ({replaced}){exact} from {table}")
        return found

    def _ckm_mean(self, rel: Rel, record: dict, path: list[str]) -> Verified:
        sums, counts = self._reads(rel, record, path, 2)
        call = record.get("call")
        if not isinstance(call, dict):
            raise refuse(path, "is the output of ckm_mean, but its build record holds no call that sdc can compute "
                               "again: run dbt build (with this sdc)")
        for parent in (sums, counts):
            self.verify(parent, path + [parent.label])
        with sql_errors():
            sql = render_macro(self.con, "ckm_mean", self._relation(sums), self._relation(counts), call["dims"],
                               numerator=call.get("numerator", "value"),
                               denominator=call.get("denominator", "count"), database=self.wh.database)
        self._compare(rel, sql, path, "ckm_mean of the verified sums and counts")
        return Verified(rel, "ckm_mean", self.wh_name(rel))

    def _ckm_finest_cells(self, rel: Rel, record: dict, path: list[str]) -> Verified:
        """The table builder's cube (PostgreSQL serves every cell of it to analysts): ckm_count's cube of its
        recorded call, every cell of the frame, computed again from the microdata and compared cell by cell; in
        the release audit it is one more CKM count table of its population."""
        call = record.get("call")
        if not isinstance(call, dict) or "leaf_cells" in call:
            raise refuse(path, "is the table builder's cube (ckm_finest_cells), but its build record names no call "
                               "that sdc can compute again: run dbt build (with this sdc)")
        (source,) = self._reads(rel, record, path, 1)
        count_call = {**call, "totals": "cube", "complete": True}
        table = self.recomputed.get(rel.key)
        if table is None:
            table = self.recomputed[rel.key] = self._recompute("ckm_count", source, count_call, path + [source.label])
        dims = [q(d) for d in call["dims"]]
        self._compare(rel, f"select {', '.join(dims)}, original, key_sum, {q('count')} from {table}", path,
                      f"ckm_finest_cells over {source.label} (recomputed from the microdata)")
        return Verified(rel, "ckm_count", self.wh_name(rel), audit=table, source=str(self.inputs[source.key]),
                        call=count_call, step_of=rel, roots=self.roots[source.key],
                        lineage=self.lineage.get(source.key))

    def _own(self, rel: Rel, record: dict, path: list[str]) -> Verified:
        """A relation of one's own is never published (the gate refuses it first; this is the second guard)."""
        from sdc.release.gate import OWN_RELATION

        raise refuse(path, OWN_RELATION)

    def _seed(self, rel: Rel, node: dict, path: list[str]) -> Verified:
        root, file = node.get("root_path"), node.get("original_file_path")
        csv = Path(str(root)) / str(file) if root and file else None
        if csv is None or not csv.is_file():
            raise refuse(path, f"is a seed whose CSV file ({csv}) is not there to compare it with; run sdc publish "
                               "in the dbt project that built it")
        columns = self.con.execute(
            "select column_name, data_type from duckdb_columns() where database_name = ? and schema_name = ? "
            "and table_name = ? order by column_index", [rel.database, rel.schema, rel.name]).fetchall()
        read = f"read_csv({quote_literal(str(csv))}, all_varchar = true, header = true)"
        header = [c for (c,) in self.con.execute(f"select column_name from (describe select * from {read})").fetchall()]
        if [c.lower() for c in header] != [c.lower() for c, _ in columns]:
            raise refuse(path, f"is a seed whose columns ({', '.join(c for c, _ in columns)}) are not those of its "
                               f"file {csv} ({', '.join(header)}): run dbt seed")
        from_file = ", ".join(f"cast({q(h)} as {kind}) as {q(c)}" for h, (c, kind) in zip(header, columns))
        with sql_errors():
            differs = self.con.execute(
                f"select (select count(*) from ((select {from_file} from {read}) except all "
                f"(select * from {self.wh_name(rel)}))) + (select count(*) from ((select * from {self.wh_name(rel)}) "
                f"except all (select {from_file} from {read})))").fetchone()[0]
        if differs:
            raise refuse(path, f"is a seed whose table differs from its file {csv} in {differs} row(s): it was "
                               "changed after dbt seed; run dbt seed")
        state = seed_file_state(csv)
        if state is None:
            read_by = f" (read by {path[0]})" if not path[0].startswith(rel.label) else ""
            warnings.warn(SdcWarning(f"{rel.label}{read_by} is a seed whose file {csv} lies in no git repository: sdc "
                                     "cannot tell whether it is the reference data the office reviewed, or a file "
                                     "written from the microdata during the build"), stacklevel=2)
        elif state != "committed":
            raise refuse(path, f"is a seed whose file {csv} is {state} in the project's git repository: a seed that sdc "
                               "publishes or computes with is reference data the office reviewed and committed, not a "
                               "file written during the build (a hook or a model can write one from the microdata); "
                               "review and commit it (or take a published seed out of the sdc_publish tag)")
        return Verified(rel, "seed", self.wh_name(rel))

    # ------------------------------------------------------------------------------------------ recomputing
    def _recompute(self, step: str, source: Rel, call: dict, path: list[str]) -> str:
        """sdc's own table for ``call`` over the microdata ``source``, with its audit columns, as a temp table."""
        microdata = self.microdata(source, path)
        self.check_record_key(source, call, path)
        arguments = {k: v for k, v in call.items() if k not in ("dims", "settings")}
        for name in REFERENCE_ARGUMENTS:
            if arguments.get(name) is not None:
                arguments[name] = self._relation(self.reference(arguments[name], path, name))
        if arguments.get("ptable") is not None and step == "ckm_count":
            self._check_count_ptable(arguments["ptable"], path)
        settings = call.get("settings") if isinstance(call.get("settings"), dict) else {}
        extra = {"audit": True} if step == "ckm_sum" else {"check_cell_keys": True}
        # every record key check on, whatever the call said (check_keys=false is for teaching keys only); a query
        # that reads the microdata (the checks' statistics) runs once for every call over it, each call judging
        # its rows: the warehouse is open read-only and sdc's own temp tables are never written twice
        remembered = self.microdata_queries.setdefault(str(microdata), RememberedQueries(str(microdata), ()))
        # a ckm_count call of the plan sums its leaf cells from those of all the plan's calls over the microdata,
        # summed in one pass per largest set of dimensions (after this call's checks, which read the microdata)
        shared = self._shared_cells(source, microdata) if step == "ckm_count" else None
        leaf_cells = shared.leaf_cells.get(call_key(call)) if shared is not None else None
        if leaf_cells is not None:
            extra["leaf_cells"] = leaf_cells
        with sql_errors():
            try:
                sql = render_macro(self.con, step, microdata, call["dims"], check_keys=True, vars=settings,
                                   database=self.wh.database, remembered=remembered, **arguments, **extra)
            except TypeError as exc:
                raise SdcError(f"the recorded call does not fit {step}: {exc}") from None
            if leaf_cells is not None:
                shared.fill(self.con)
            table = self._temp("recomputed")
            self.con.execute(f"create temp table {table} as {sql}")
        return table

    def with_dimension_columns(self, cells_sql: str, dims_call: dict, step_call: dict, path: list[str]) -> str:
        """``cells_sql`` with the columns the publishing steps add per dimension (d__level, d__is_total, d__parent,
        d__sort), computed by sdc's macro from the dimensions of ``dims_call`` and the hierarchy and total label of
        ``step_call`` (the recorded call of the step that made the cells), never from the published relation."""
        hierarchy = step_call.get("hierarchy")
        settings = step_call.get("settings") if isinstance(step_call.get("settings"), dict) else {}
        with sql_errors():
            ctes = render_macro(
                self.con, "published_dimension_columns", "published_cells", list(dims_call.get("dims") or []),
                self._relation(self.reference(hierarchy, path, "hierarchy")) if hierarchy is not None else None,
                settings.get("sdc_total_label"), vars=settings, database=self.wh.database)
        return f"with published_cells as (\n{cells_sql}\n),\n{ctes}\nselect * from dimension_columns"

    # ------------------------------------------------------------------------------------------ one pass per source
    def plan(self, rels: list[Rel]) -> None:
        """Notes the ckm_count calls that ``rels`` read (through ckm_published, ckm_mean and relations of one's
        own), by their microdata: the first recomputation over a relation sums the leaf cells of them all
        (_shared_cells). Only a plan: a call it misses is recomputed from the microdata alone; verify() still checks
        every relation and refuses what is wrong."""
        stack, seen = list(rels), set()
        while stack:
            rel = stack.pop()
            if rel.key in seen or (self.wh.node(rel) or {}).get("resource_type") == "seed":
                continue
            seen.add(rel.key)
            record = self.wh.record(rel) or {}
            step = record.get("step")
            try:
                if step == "ckm_published":
                    (audit,) = self._reads(rel, record, [rel.label], 1)
                    audit_record = self.wh.record(audit) or {}
                    call = audit_record.get("call")
                    if audit_record.get("step") == "ckm_count" and shareable(call):
                        (source,) = self._reads(audit, audit_record, [audit.label], 1)
                        self.planned.setdefault(source.key, {}).setdefault(call_key(call), call)
                elif step == "ckm_mean":
                    stack += self._reads(rel, record, [rel.label], 2)
                elif not step:
                    stack += self._checked_reads(rel, self.own_sql(rel, record, [rel.label]), [rel.label])
            except SdcError:
                continue

    def _shared_cells(self, source: Rel, microdata: Relation) -> SharedCells:
        """The leaf cells of the planned ckm_count calls over ``source``: the calls grouped by the largest
        dimension sets of the plan (each call under the smallest such set that holds its dimensions), one GROUP BY
        over the microdata per set, with each call's count and key sum as ckm_count_counted and ckm_key_sum write
        them (a call whose columns are not all in the microdata is left out: its own rendering names what is
        missing). The queries run once, when a call first needs them (SharedCells.fill)."""
        if source.key in self.shared:
            return self.shared[source.key]
        found = self.shared[source.key] = SharedCells()
        columns = {c.lower() for c in self._columns(str(microdata))}
        sums: dict[str, tuple[str, str]] = {}
        for key, call in (self.planned.get(source.key) or {}).items():
            settings = call.get("settings") if isinstance(call.get("settings"), dict) else {}
            with sql_errors():
                counting = render_macro(self.con, "ckm_count_counted", call.get("fact"), vars=settings,
                                        database=self.wh.database)
                key_column = counting["key_column"]
                key_sum = render_macro(self.con, "ckm_key_sum", render_macro(self.con, "sql_identifier", key_column),
                                       call.get("modulus"), vars=settings, database=self.wh.database)
            read = [d.lower() for d in call["dims"]] + [str(key_column).lower()] \
                + ([call["fact"].lower()] if call.get("fact") is not None else [])
            if all(c in columns for c in read):
                sums[key] = (str(counting["original"]), str(key_sum))
        dimensions = {key: frozenset(d.lower() for d in self.planned[source.key][key]["dims"]) for key in sums}
        largest = sorted({d for d in dimensions.values() if not any(d < other for other in dimensions.values())},
                         key=lambda d: (len(d), sorted(d)))
        spelled = {d.lower(): d for key in reversed(list(sums)) for d in self.planned[source.key][key]["dims"]}
        groups: dict[frozenset, list[str]] = {}
        for key in sums:
            groups.setdefault(next(d for d in largest if dimensions[key] <= d), []).append(key)
        for dims, keys in groups.items():
            table = self._temp("cells")
            listed = ", ".join(q(spelled[d]) for d in sorted(dims))
            measures = list(dict.fromkeys(sums[key] for key in keys))
            found.queries.append(
                f"create temp table {table} as select {listed}, "
                + ", ".join(f"{original} as sdc_original_{k}, {key_sum} as sdc_key_sum_{k}"
                            for k, (original, key_sum) in enumerate(measures))
                + f" from {microdata} group by {listed}")
            for key in keys:
                k = measures.index(sums[key])
                view = self._temp("leaf_cells")
                found.queries.append(
                    f"create temp view {view} as select "
                    f"{', '.join(q(d) for d in self.planned[source.key][key]['dims'])}, "
                    f"sdc_original_{k} as original, sdc_key_sum_{k} as key_sum from {table}")
                found.leaf_cells[key] = Relation("temp", "main", view)
        return found

    def microdata(self, rel: Rel, path: list[str]) -> Relation:
        """The relation of microdata a step may read (see the module's text)."""
        if rel.key in self.inputs:
            return self.inputs[rel.key]
        if rel.schema.lower() == RAW_SCHEMA:
            if self.wh.kind(rel) != "table" or rel.name.lower() not in self.loaded:
                raise refuse(path, "is in the raw schema but is no table that sdc load loaded (its load log lists "
                                   f"{', '.join(sorted(self.loaded)) or 'none'})")
            found = self._relation(rel)
            self.loaded_relations[rel.label.lower()] = found
            self.roots[rel.key] = frozenset([rel.label.lower()])
            self.lineage[rel.key] = loaded_lineage(rel.label, self.wh.columns(rel))
            self.key_roots |= key_columns(self.lineage[rel.key])
            self.not_copied |= {(rel.label.lower(), c.lower()) for c in self.wh.not_copied(rel)}
        else:
            record = self.wh.record(rel) or {}
            if record.get("step"):
                raise refuse(path, f"is the output of {record['step']}, not microdata, but a step reads it as such")
            sql = self.own_sql(rel, record, path, tied=False)
            roots: set = set()
            for parent in self._checked_reads(rel, sql, path):
                self.microdata(parent, path + [parent.label])
                roots |= self.roots[parent.key]
            self.roots[rel.key] = frozenset(roots)
            self.lineage[rel.key] = self._record_wise(rel, sql, path)
            if self.wh.kind(rel) == "view":
                found = self._relation(rel)
            else:  # a table of one's own: its SQL again, not what a hook may have written into it
                name = self._temp("microdata")
                with sql_errors():
                    self.con.execute(f"create temp table {name} as select * from (\n{sql}\n) as own")
                found = Relation("temp", "main", name)
            self._check_passed_keys(rel, found, path)
        self.inputs[rel.key] = found
        return found

    def _check_passed_keys(self, rel: Rel, found: Relation, path: list[str]) -> None:
        """What the SQL's reading says of the record keys, checked against DuckDB's own result: every row's keys,
        key facts and facts are a row's of the loaded table (a column that the reading took for the loaded rk
        but that DuckDB computes, by a construct the reading misses, is refused)."""
        passed = sorted(name for name, lineage in self.lineage[rel.key].items()
                        if lineage.passed and lineage.root in self.key_roots)
        tables = {self.lineage[rel.key][name].root[0] for name in passed}
        loaded = {label: relation for label, relation in self.loaded_relations.items() if label in tables}
        if not passed or len(loaded) != 1:
            return
        (source,) = loaded.values()
        columns = ", ".join(q(name) for name in passed)
        with sql_errors():
            stray = self.con.execute(f"select count(*) from (select {columns} from {found} except all "
                                     f"select {columns} from {source})").fetchone()[0]
        if stray:
            raise refuse(path, f"is microdata of one's own whose columns {', '.join(passed)} hold, in {stray} row(s), "
                               f"values that no record of {next(iter(loaded))} has: they are not its record keys "
                               "and facts passed on unchanged")

    def _record_wise(self, rel: Rel, sql: str, path: list[str]) -> dict[str, Lineage]:
        """The lineage of the columns of microdata of one's own, which must be record-wise (record_wise.py)."""
        def resolve(table):
            parent = self.wh.find(table.catalog or None, table.db or None, table.name, rel)
            return self.lineage.get(parent.key) if parent is not None else None

        try:
            return record_wise_lineage(sql, resolve, self._scalar, self.key_roots, self._unstable)
        except NotRecordWise as exc:
            raise refuse(path, f"is microdata of one's own that a step reads, and it {exc}") from None

    def _scalar(self, name: str) -> bool:
        """DuckDB knows ``name`` as a built-in scalar function (or macro) whose every form gives the same result for
        the same arguments."""
        return bool(self.con.execute(
            "select count(*) > 0 and bool_and(coalesce(stability, 'CONSISTENT') = 'CONSISTENT') "
            "from duckdb_functions() where lower(function_name) = lower(?) and internal "
            "and function_type in ('scalar', 'macro')",
            [name]).fetchone()[0])

    def _unstable(self, name: str) -> bool:
        """DuckDB knows a function ``name`` whose result changes from one call or query to the next."""
        return bool(self.con.execute(
            "select count(*) from duckdb_functions() where lower(function_name) = lower(?) "
            "and stability <> 'CONSISTENT'", [name]).fetchone()[0])

    def check_record_key(self, source: Rel, call: dict, path: list[str]) -> None:
        """The record key column a CKM call reads is the loaded tables' record key, passed on unchanged."""
        settings = call.get("settings") if isinstance(call.get("settings"), dict) else {}
        column = str(settings.get("sdc_record_key_column") or RECORD_KEY_COLUMN).lower()
        lineage = self.lineage.get(source.key, {}).get(column)
        if lineage is None or not lineage.passed or lineage.root[1] != RECORD_KEY_COLUMN:
            raise refuse(path, f"is read by a CKM step with the record key column {column}, which is not the "
                               f"record key {RECORD_KEY_COLUMN} that sdc load gave its records: the cell keys would "
                               "give its records another noise than every other table's")

    # ------------------------------------------------------------------------------------------ SQL of one's own
    def own_sql(self, rel: Rel, record: dict, path: list[str], tied: bool = True) -> str:
        """The SQL of a relation of one's own: a view's from the warehouse, a table's from the manifest (tied to
        the table by the md5 in its build record, unless ``tied`` is false: microdata that sdc computes again
        from that SQL, never reads); checked for functions that read more than its relations."""
        if self.wh.kind(rel) == "view":
            sql = self.wh.view_sql(rel) or ""
        else:
            node = self.wh.node(rel) or {}
            if node.get("language") == "python":
                raise refuse(path, "is a dbt Python model: sdc cannot compute its content again")
            sql = node.get("compiled_code")
            if not isinstance(sql, str):
                raise refuse(path, "is a table whose SQL is not in the dbt manifest: run dbt build (or dbt compile) "
                                   "and give sdc publish that manifest")
            if tied and hashlib.md5(sql.encode("utf-8")).hexdigest() != record.get("sql_md5"):
                raise refuse(path, "is a table whose SQL in the dbt manifest is not the SQL it was built from (or "
                                   "it has no build record): run dbt build")
        self._check_functions(sql, path)
        return sql

    def _check_functions(self, sql: str, path: list[str]) -> None:
        try:
            tokens = sqlglot.tokenize(sql, read="duckdb")
        except sqlglot.errors.SqlglotError as exc:
            raise refuse(path, f"has SQL that cannot be read ({str(exc).splitlines()[0]})") from None
        for token, following in zip(tokens, tokens[1:]):
            if following.token_type != TokenType.L_PAREN or token.token_type == TokenType.STRING:
                continue
            name = token.text.lower()
            if name in self.user_functions:
                raise refuse(path, f"calls {token.text}, a function defined in the warehouse (a macro): what it "
                                   "reads cannot be told; use DuckDB's built-in functions only")
            if name in STATE_FUNCTIONS:
                raise refuse(path, f"calls {token.text}, which reads a value set outside the query; refused")

    def _checked_reads(self, rel: Rel, sql: str, path: list[str]) -> list[Rel]:
        try:
            return resolve_reads(self.wh, rel, sql)
        except SdcError as exc:
            raise refuse(path, str(exc)) from None

    # ------------------------------------------------------------------------------------------ comparing
    def _compare(self, rel: Rel, expected_sql: str, path: list[str], what: str,
                 rounded: dict[str, int] | None = None) -> None:
        """Refuses ``rel`` unless it holds exactly the cells of ``expected_sql``; ``rounded``: the measures
        rounded to those digits, whose unrounded values ``expected_sql`` gives as sdc_exact_<measure>."""
        rounded = rounded or {}
        expected = self._temp("expected")
        with sql_errors():
            self.con.execute(f"create temp table {expected} as {expected_sql}")
        want = [c for c in self._columns(expected) if not c.startswith(EXACT_PREFIX)]
        have = self._columns(self.wh_name(rel))
        if sorted(c.lower() for c in have) != sorted(c.lower() for c in want):
            raise refuse(path, f"has the columns {', '.join(have)}, but {what} gives {', '.join(want)}")
        kinds = dict(self.con.execute(f"select column_name, column_type from (describe {expected})").fetchall())
        # the measures and the columns that describe a dimension's codes (d__level, ...) are compared, the
        # dimensions tell the cells apart
        measures = [c for c in want if c.lower() in PUBLISHED_MEASURES or c.lower().startswith("mean_")
                    or dimension_column(c)]
        dims = [c for c in want if c not in measures]
        on = " and ".join(f"cast(p.{q(d)} as varchar) is not distinct from cast(e.{q(d)} as varchar)" for d in dims)
        differs = [f"({differ_rounded(f'p.{q(m)}', f'e.{q(m)}', f'e.{q(EXACT_PREFIX + m)}', rounded[m])})"
                   if m in rounded else f"({differ(f'p.{q(m)}', f'e.{q(m)}', kinds[m])})" for m in measures]
        shown = ", ".join([f"coalesce(p.{q(d)}, e.{q(d)})" for d in dims]
                          + [f"p.{q(m)}, e.{q(m)}" for m in measures])
        row = self.con.execute(
            f"select {shown}, p.sdc_present is not null, e.sdc_present is not null "
            f"from (select *, true as sdc_present from {self.wh_name(rel)}) as p "
            f"full join (select *, true as sdc_present from {expected}) as e on {on or 'true'} "
            f"where p.sdc_present is null or e.sdc_present is null"
            + (f" or {' or '.join(differs)}" if differs else "") + " limit 1").fetchone()
        if row is None:
            counts = self.con.execute(f"select (select count(*) from {self.wh_name(rel)}), "
                                      f"(select count(*) from {expected})").fetchone()
            if counts[0] == counts[1]:
                return
            raise refuse(path, f"holds {counts[0]} rows where {what} gives {counts[1]} (a cell twice)")
        cell = ", ".join(f"{d}={v!r}" for d, v in zip(dims, row))
        if not row[-2]:
            raise refuse(path, f"lacks the cell ({cell}) that {what} gives")
        if not row[-1]:
            raise refuse(path, f"holds the cell ({cell}), which {what} does not give")
        values = row[len(dims):-2]
        for k, m in enumerate(measures):
            published, recomputed = values[2 * k], values[2 * k + 1]
            if published != recomputed:
                raise refuse(path, f"differs from {what} in the cell ({cell}): {m} is {published!r} there and "
                                   f"{recomputed!r} in sdc's recomputation; the relation was changed after its step "
                                   "(a hook, an update) or its build record does not fit it")
        raise refuse(path, f"differs from {what} in the cell ({cell})")

    # ------------------------------------------------------------------------------------------ helpers
    def _reads(self, rel: Rel, record: dict, path: list[str], expected: int) -> list[Rel]:
        found = [self._named(item, path, "read") for item in record.get("reads") or []]
        if len(found) != expected:
            raise refuse(path, f"has a build record that names {len(found)} input(s) for its step, not {expected}")
        return found

    def reference(self, item, path: list[str], what: str) -> Rel:
        """The relation a step's call names as its ``what`` (a hierarchy, a ptable): a seed, checked as a published
        seed is (its table is its committed file). A model would write into a step's codes or noise what its SQL
        reads: a hierarchy whose codes are "R0 has 80 persons", a ptable that adds 1000 to every count (red team
        of issue 48). Checked once per relation; it is not published by that."""
        rel = self._named(item, path, what)
        if rel.key not in self.references:
            node = self.wh.node(rel)
            if node is None or node.get("resource_type") != "seed":
                raise refuse(path, f"is read by a step computed with the {what} {rel.label}, which is no seed: a "
                                   f"{what} is reference data the office committed (a seed of the dbt project), since "
                                   "a model's codes or numbers can carry what its SQL reads from the microdata; make "
                                   "it a seed")
            self.references[rel.key] = self._seed(rel, node, path + [f"{rel.label} (its {what})"])
        return rel

    def _named(self, item, path: list[str], what: str) -> Rel:
        if isinstance(item, str):
            parts = [p.strip().strip('"') for p in item.split(".")]
            item = {"database": parts[-3] if len(parts) > 2 else None,
                    "schema": parts[-2] if len(parts) > 1 else None, "name": parts[-1]}
        found = self.wh.find(item.get("database"), item.get("schema"), str(item.get("name")), None) \
            if isinstance(item, dict) and item.get("name") else None
        if found is None:
            raise refuse(path, f"names a {what} ({item!r}) that is not in the warehouse; run dbt build")
        return found

    def _relation(self, rel: Rel) -> Relation:
        return Relation(rel.database, rel.schema, rel.name)

    def _check_count_ptable(self, ptable: Relation, path: list[str]) -> None:
        """A ptable row that keeps every count of its size unchanged publishes those counts as they are; a row whose
        noise is biased shifts every count of its size by a known amount (v = +1000 or +2000: the original is the
        published count mod 1000)."""
        with sql_errors():
            rows = self.con.execute(
                f"select i from {ptable} where i >= 1 group by i "
                f"having coalesce(sum(case when v <> 0 then p_int_ub - p_int_lb end), 0) <= 0 order by i limit 3"
            ).fetchall()
            biased = self.con.execute(
                f"select i, sum((p_int_ub - p_int_lb) * v) from {ptable} group by i "
                f"having abs(sum((p_int_ub - p_int_lb) * v)) > {PTABLE_BIAS} * greatest(1, max(abs(v))) "
                "order by i limit 3").fetchall()
        if rows:
            raise refuse(path, f"is built with the ptable {ptable}, whose row i = {rows[0][0]} never changes a "
                               "count: such counts would be published as they are")
        if biased:
            i, mean = biased[0]
            raise refuse(path, f"is built with the ptable {ptable}, whose noise for i = {i} has the mean {mean:g}, not "
                               "0: a biased noise moves every count of that size by a known amount (sdc ptable makes "
                               "unbiased ones)")

    def _loaded_tables(self) -> set[str]:
        present = self.con.execute(
            "select count(*) from duckdb_tables() where database_name = current_database() and schema_name = ? "
            "and table_name = ?", [RAW_SCHEMA, LOAD_LOG_TABLE]).fetchone()[0]
        if not present:
            return set()
        return {t.lower() for (t,) in self.con.execute(
            f"select table_name from {q(RAW_SCHEMA)}.{q(LOAD_LOG_TABLE)}").fetchall()}

    def wh_name(self, rel: Rel) -> str:
        return f"{q(rel.database)}.{q(rel.schema)}.{q(rel.name)}"

    def _columns(self, relation: str) -> list[str]:
        return [c for (c,) in self.con.execute(f"select column_name from (describe select * from {relation})").fetchall()]

    def reads_not_copied(self, relation: str, column: str) -> bool:
        """Whether ``column`` of the microdata ``relation`` is, or is computed from, a loaded column that the
        replica holds as NULL (self.not_copied): its values are not the warehouse's."""
        if not self.not_copied:
            return False
        key = next((k for k, r in self.inputs.items() if str(r) == relation), None)
        lineage = self.lineage.get(key, {}).get(column.lower()) if key is not None else None
        return lineage is None or any(root in self.not_copied for root in lineage.roots)

    def _temp(self, what: str) -> str:
        self._count += 1
        return f"sdc_verify_{what}_{self._count}"

    def drop_temp(self) -> None:
        for (name,) in self.con.execute("select table_name from duckdb_tables() where database_name = 'temp' "
                                        "and table_name like 'sdc_verify_%'").fetchall():
            self.con.execute(f"drop table temp.main.{q(name)}")


@dataclass
class SharedCells:
    """The leaf cells of the ckm_count calls over one microdata relation (Verifier._shared_cells): a relation
    per call (by call_key), filled by ``queries``, run once."""

    leaf_cells: dict = field(default_factory=dict)
    queries: list = field(default_factory=list)

    def fill(self, con) -> None:
        while self.queries:
            con.execute(self.queries.pop(0))


def shareable(call) -> bool:
    """A recorded ckm_count call whose leaf cells can be summed with others': no weight (its magnitude part reads
    the records), dimensions named once and not as the summed cells' own columns."""
    return (isinstance(call, dict) and "leaf_cells" not in call and call.get("weight") is None
            and isinstance(call.get("fact"), (str, type(None))) and isinstance(call.get("dims"), list)
            and len(call["dims"]) > 0 and all(isinstance(d, str) and not d.lower().startswith("sdc_")
                                               and d.lower() not in ("original", "key_sum") for d in call["dims"])
            and len({d.lower() for d in call["dims"]}) == len(call["dims"]))


def call_key(call: dict) -> str:
    return json.dumps(call, sort_keys=True, default=str)


def differ(published: str, recomputed: str, kind: str) -> str:
    """SQL true where a published measure differs from sdc's: text exactly, numbers to RELATIVE_TOLERANCE."""
    if re.match(r"U?(BIGINT|INTEGER|HUGEINT|SMALLINT|TINYINT)", kind.upper()):
        return f"{published} is distinct from {recomputed}"
    if not re.match(r"(DECIMAL|DOUBLE|FLOAT|REAL)", kind.upper()):
        return f"cast({published} as varchar) is distinct from cast({recomputed} as varchar)"
    p, r = f"cast({published} as double)", f"cast({recomputed} as double)"
    return (f"({published} is null) <> ({recomputed} is null) or "
            f"abs({p} - {r}) > {RELATIVE_TOLERANCE} * greatest(1, abs({r}))")


def differ_rounded(published: str, expected: str, exact: str, digits: int) -> str:
    """SQL true where a published measure rounded to ``digits`` is not sdc's recomputation ``exact`` rounded
    alike (``expected``): not equal (to 1e-9 relative, at most a quarter of the last digit's unit), unless it is
    the other neighbour of a recomputation that lies within 1e-9 relative of their half-way point (the
    engines' last bits of a double sum may put it on either side)."""
    unit = f"cast(1e{-digits} as double)"
    p, e, x = (f"cast({v} as double)" for v in (published, expected, exact))
    tolerance = f"least({RELATIVE_TOLERANCE} * greatest(1, abs({e})), {unit} / 4)"
    halfway = f"abs(abs({p} - {x}) - {unit} / 2) <= {RELATIVE_TOLERANCE} * greatest(1, abs({x}))"
    return (f"({published} is null) <> ({expected} is null) or (abs({p} - {e}) > {tolerance} and not "
            f"(abs(abs({p} - {e}) - {unit}) <= {tolerance} and {halfway}))")


def published_digits(record: dict, path: list[str]) -> int | None:
    """The digits ckm_published rounded the magnitudes to (its build record's call; none in a record of an sdc
    that did not round)."""
    call = record.get("call")
    digits = call.get("digits") if isinstance(call, dict) else None
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int) or not -15 <= digits <= 15):
        raise refuse(path, f"has a build record whose digits ({digits!r}) ckm_published does not take: run dbt build")
    return digits


def ckm_audit_column(name: str) -> bool:
    """The columns ckm_published leaves behind (conventions: the CKM audit columns and families)."""
    lowered = name.lower()
    return (lowered in CKM_AUDIT_COLUMNS or lowered in CKM_SUM_AUDIT_COLUMNS
            or any(re.fullmatch(p, lowered) for p in CKM_SUM_AUDIT_PATTERNS))
