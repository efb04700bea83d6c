"""What a published relation really reads, decided from the warehouse, and one value per cell across a release.

``sdc publish`` (python/sdc/release/publish.py) asks this module about every relation a dbt project tags for
publication. dbt's declared lineage is not enough: a model can name a table directly (``from raw.persons``),
join a protection step back to its audit relation, or wrap ``ckm_published`` around a plain ``count(*)``.
So a relation is judged by what it is and what it reads in the warehouse:

* a **protection step**: its build record (macros/build_record.sql, the relation's comment) names the step
  (conventions.PROTECTION_STEPS) that is its model's whole SQL (the markers of ``sdc.step``); what it reads is
  then what the step reads, and that must be of the right kind: an audit relation built by ckm_count /
  ckm_sum for ckm_published, a suppression pattern for suppression_published, protected relations for
  ckm_mean. A view's SQL in the warehouse must read exactly that (a view replaced after the build reads more);
* a relation of one's own (a BI view, a join of protected tables) is never published (red team R4-2: its SQL can
  carry numbers no step computed, e.g. literals a compile-time query wrote from the raw data). What it reads is
  parsed first (sqlglot: a view's SQL from the warehouse, a table's from the dbt manifest, tied to the table by the
  md5 of that SQL in its build record), so that a path to raw or audit data is named;
* anything else (raw microdata, an audit relation, a file or table function, a relation sdc cannot tie to
  its SQL) is refused, naming the relation and the path to it.

Across the release: every CKM table was built with one ptable of each kind (counts, magnitudes) and one set
of magnitude parameters (a second ptable gives a cell a second noisy value: averaging them narrows the
original; the count ptable of a ckm_sum is its zero_with_counts=, whose zeros must be those of the count
tables). That no population and variable is published both by the CKM and by cell suppression is the release
audit's (python/sdc/release/audit.py), which compares the verified cells themselves; the earlier comparison of
grand totals here is gone (macros/grant_published.sql keeps it for PostgreSQL, where there is no audit).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from sdc.warehouse.build_record import build_record_of_comment
from sdc.conventions import (
    AUDIT_STEPS,
    CKM_AUDIT_STEPS,
    NOT_COPIED,
    PROTECTION_STEPS,
    RAW_SCHEMA,
    SUPPRESSION_PATTERN_COLUMNS,
)
from sdc.errors import SdcError


# Readers get only what sdc computes itself (red team R4-2): a relation of one's own publishes what its SQL says, and
# SQL can carry numbers that no step computed (literals a Jinja run_query wrote from the raw data at compile time,
# names, the shape of the query), which no recomputation can tell from protected ones.
OWN_RELATION = ("is a relation of one's own (a view or table that no sdc step built): what it publishes is what its "
                "SQL says, and SQL can carry numbers that sdc does not compute (literals a query wrote from the raw "
                "data when dbt compiled it, names, the shape of the query; red team R4-2). Readers get sdc's steps "
                "only (ckm_published, suppression_published, ckm_mean) and seeds: tag those, and filter, join or "
                "label them in the BI tool (a seed of labels can be published beside them)")


@dataclass(frozen=True)
class Rel:
    """A relation of the warehouse: database, schema and name as the catalog spells them."""

    database: str
    schema: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.database.lower(), self.schema.lower(), self.name.lower())


@dataclass
class Verdict:
    """A relation found publishable, and the CKM audit relations behind it."""

    ckm_audits: set = field(default_factory=set)


class Warehouse:
    """The DuckDB catalog as the gate needs it: relations, their kind, build record and (views) SQL."""

    def __init__(self, con, manifest: dict):
        self.con = con
        self.database = con.execute("select current_database()").fetchone()[0]
        self.relations: dict[tuple, tuple[Rel, str, str | None, str | None]] = {}
        for database, schema, name, kind, comment, sql in con.execute(
            "select database_name, schema_name, table_name, 'table', comment, null from duckdb_tables() "
            "union all select database_name, schema_name, view_name, 'view', comment, sql from duckdb_views() "
            "where not internal").fetchall():
            rel = Rel(database, schema, name)
            self.relations[rel.key] = (rel, kind, comment, sql)
        self.nodes: dict[tuple, dict] = {}
        for node in (manifest.get("nodes") or {}).values():
            if node.get("resource_type") in ("model", "seed", "snapshot"):
                key = (str(node.get("database") or self.database).lower(), str(node.get("schema", "")).lower(),
                       str(node.get("alias") or node.get("name", "")).lower())
                self.nodes[key] = node

    def find(self, database: str | None, schema: str | None, name: str, near: Rel | None = None) -> Rel | None:
        """The relation a name in SQL means: unqualified names in the schema of ``near``, then in main."""
        database = database or self.database
        schemas = [schema] if schema else [s for s in ((near.schema if near else None), "main") if s]
        for candidate in schemas:
            found = self.relations.get((database.lower(), candidate.lower(), name.lower()))
            if found:
                return found[0]
        return None

    def kind(self, rel: Rel) -> str:
        return self.relations[rel.key][1]

    def record(self, rel: Rel) -> dict | None:
        return build_record_of_comment(self.relations[rel.key][2])

    def view_sql(self, rel: Rel) -> str | None:
        return self.relations[rel.key][3]

    def node(self, rel: Rel) -> dict | None:
        return self.nodes.get(rel.key)

    def columns(self, rel: Rel) -> list[str]:
        return [c for (c,) in self.con.execute(
            "select column_name from duckdb_columns() where database_name = ? and schema_name = ? and table_name = ? "
            "order by column_index", [rel.database, rel.schema, rel.name]).fetchall()]

    def not_copied(self, rel: Rel) -> list[str]:
        """The columns that a replica of sdc publish --target holds as NULL (conventions.NOT_COPIED); none
        elsewhere."""
        return [c for (c,) in self.con.execute(
            "select column_name from duckdb_columns() where database_name = ? and schema_name = ? and table_name = ? "
            "and comment = ?", [rel.database, rel.schema, rel.name, NOT_COPIED]).fetchall()]


def sql_reads(sql: str, dialect: str = "duckdb") -> list[tuple[str | None, str | None, str]]:
    """The relations a query reads (catalog, schema, name), CTE names left out; a table function or a file read
    directly is refused, since it reads what no catalog holds."""
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise SdcError(f"cannot parse its SQL to see what it reads ({str(exc).splitlines()[0]})") from None
    found = []
    for tree in trees:
        if isinstance(tree, exp.Create):  # a view's SQL in DuckDB's catalog: create view <name> as <query>
            tree = tree.expression
            if tree is None:
                continue
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                raise SdcError(f"it reads the table function {table.this.sql(dialect=dialect)[:80]!r}, which no "
                               "protection step is")
            if not table.db and not table.catalog and table.name.lower() in ctes:
                continue
            found.append((table.catalog or None, table.db or None, table.name))
    return found


def resolve_reads(warehouse: Warehouse, rel: Rel, sql: str) -> list[Rel]:
    """The relations of the warehouse that ``sql``, the SQL of ``rel``, reads (each once, as first named; unqualified
    names in the schema of ``rel``, then in main). SdcError (the reason, for the caller to name the path) where the
    SQL cannot be parsed, reads a table function or file, or names no relation of the warehouse."""
    found: dict[tuple, Rel] = {}
    for catalog, schema, name in sql_reads(sql):
        parent = warehouse.find(catalog, schema, name, rel)
        if parent is None:
            shown = ".".join(p for p in (catalog, schema, name) if p)
            raise SdcError(f"reads {shown!r}, which is no relation of the warehouse (a file, or a relation of another "
                           "database)")
        found.setdefault(parent.key, parent)
    return list(found.values())


class Gate:
    """Judges the relations of one release (see the module's text)."""

    def __init__(self, warehouse: Warehouse):
        self.wh = warehouse
        self.verdicts: dict[tuple, Verdict] = {}

    # ------------------------------------------------------------------ one relation
    def check(self, rel: Rel, node_id: str) -> Verdict:
        return self._verify(rel, [f"{rel.label} ({node_id})"], set())

    def _verify(self, rel: Rel, path: list[str], visiting: set) -> Verdict:
        if rel.key in self.verdicts:
            return self.verdicts[rel.key]
        if rel.key in visiting:
            raise self._refuse(path, "reads itself")
        visiting = visiting | {rel.key}
        if rel.schema.lower() == RAW_SCHEMA:
            raise self._refuse(path, "is raw microdata")
        node = self.wh.node(rel)
        if node is not None and node.get("resource_type") == "seed":
            verdict = Verdict()  # a CSV file of the dbt project (labels, hierarchies), not microdata
        else:
            record = self.wh.record(rel)
            step = (record or {}).get("step")
            if step in PROTECTION_STEPS:
                verdict = self._protection_step(rel, record, path, visiting)
            elif step in AUDIT_STEPS:
                raise self._refuse(path, f"is an audit relation: {step} built it, and its audit columns hold the "
                                         "original values; publish the output of ckm_published on it instead")
            else:
                verdict = self._own_relation(rel, record, path, visiting)
        self.verdicts[rel.key] = verdict
        return verdict

    def _protection_step(self, rel: Rel, record: dict, path: list[str], visiting: set) -> Verdict:
        step = record["step"]
        reads = []
        for item in record.get("reads") or []:
            found = self.wh.find(item.get("database"), item.get("schema"), str(item.get("name")), rel) \
                if isinstance(item, dict) else None
            if found is None:
                raise self._refuse(path, f"is the output of {step}, but the relation it read ({item!r}) is not in "
                                         "the warehouse any more; run dbt build")
            reads.append(found)
        if self.wh.kind(rel) == "view":
            live = set(self._resolved_reads(rel, self.wh.view_sql(rel) or "", path))
            # beside its input a publishing step reads the hierarchy of its dimension columns (d__level, ...)
            hierarchy = record.get("hierarchy")
            described = self.wh.find(hierarchy.get("database"), hierarchy.get("schema"), str(hierarchy.get("name")),
                                     rel) if isinstance(hierarchy, dict) else None
            if live - {described.key if described is not None else None} != {r.key for r in reads}:
                extra = sorted(k[1] + "." + k[2] for k in live - {r.key for r in reads})
                raise self._refuse(path, f"is a view whose SQL in the warehouse reads {', '.join(extra) or 'other relations'}"
                                         f" beside what its step {step} read: the view was replaced after dbt built it")
        verdict = Verdict()
        for parent in reads:
            here = path + [parent.label]
            if step == "ckm_published":
                parent_step = (self.wh.record(parent) or {}).get("step")
                if parent_step not in CKM_AUDIT_STEPS:
                    raise self._refuse(here, "is read by ckm_published but is not the output of ckm_count or "
                                             "ckm_sum, so its numbers are not protected")
                verdict.ckm_audits.add(parent)
            elif step == "suppression_published":
                missing = [c for c in SUPPRESSION_PATTERN_COLUMNS if c not in {x.lower() for x in self.wh.columns(parent)}]
                if missing or parent.schema.lower() == RAW_SCHEMA:
                    raise self._refuse(here, "is read by suppression_published but is no suppression pattern "
                                             f"(no column {missing[0] if missing else 'status'})")
            else:  # ckm_mean: a quotient of two protected relations
                found = self._verify(parent, here, visiting)
                verdict.ckm_audits |= found.ckm_audits
        return verdict

    def _own_relation(self, rel: Rel, record: dict | None, path: list[str], visiting: set) -> Verdict:
        if self.wh.kind(rel) == "view":
            sql = self.wh.view_sql(rel) or ""
        else:
            node = self.wh.node(rel)
            sql = (node or {}).get("compiled_code")
            if record is None:
                raise self._refuse(path, "is a table without a build record, so what it reads cannot be told: "
                                         "build it from protected relations only, with the post-hook "
                                         "{{ sdc.build_record() }}, or make it a view")
            if not isinstance(sql, str) or hashlib.md5(sql.encode("utf-8")).hexdigest() != record.get("sql_md5"):
                raise self._refuse(path, "is a table whose SQL in the dbt manifest is not the SQL it was built "
                                         "from (or the manifest has none): run dbt build")
        for parent in self._reads_in_warehouse(rel, sql, path):  # what it reads first: raw or audit data named
            self._verify(parent, path + [parent.label], visiting)
        raise self._refuse(path, OWN_RELATION)

    def _reads_in_warehouse(self, rel: Rel, sql: str, path: list[str]) -> list[Rel]:
        keys = self._resolved_reads(rel, sql, path)
        return [self.wh.relations[k][0] for k in sorted(keys)]

    def _resolved_reads(self, rel: Rel, sql: str, path: list[str]) -> list[tuple]:
        try:
            return [found.key for found in resolve_reads(self.wh, rel, sql)]
        except SdcError as exc:
            raise self._refuse(path, str(exc)) from None

    @staticmethod
    def _refuse(path: list[str], why: str) -> SdcError:
        route = " <- ".join(path)
        return SdcError(f"{path[-1]} {why}; refusing to publish {path[0]}" + (f" (path: {route})" if len(path) > 1 else ""))

    # ------------------------------------------------------------------ the release
    def check_release(self) -> None:
        """One ptable per kind and one set of magnitude parameters behind every CKM table. (A population and
        variable published by both the CKM and cell suppression is refused by the release audit,
        release/audit.py _check_two_methods, cell by cell after verification.)"""
        audits = sorted({a for v in self.verdicts.values() for a in v.ckm_audits}, key=lambda r: r.key)
        used: dict[tuple[str, str], list[tuple[str, Rel]]] = {}
        for audit in audits:
            record = self.wh.record(audit) or {}
            for kind, digest in sorted((record.get("ptables") or {}).items()):
                used.setdefault(("ptable", kind), []).append((digest, audit))
            if record.get("params_md5"):
                used.setdefault(("params", "magnitude"), []).append((record["params_md5"], audit))
        for (what, kind), seen in sorted(used.items()):
            first: dict[str, Rel] = {}
            for d, audit in seen:
                first.setdefault(d, audit)
            if len(first) > 1:
                if what == "ptable" and kind == "count":
                    self._check_zero_with_counts(seen)
                a, b = (audit.label for audit in list(first.values())[:2])
                thing = f"{kind} ptable" if what == "ptable" else "magnitude parameters"
                raise SdcError(f"the release mixes two {thing}: {a} and {b} were built with different ones, so a "
                               "cell can be published with two noisy values (averaging them narrows the original); "
                               f"build every CKM table with one {thing} (dbt build after changing it)")

    def _check_zero_with_counts(self, seen: list[tuple[str, Rel]]) -> None:
        """Count ptables (md5 of their rows, audit relation) that differ where one is a ckm_sum's zero_with_counts=
        and the other a count table's: the magnitudes are 0 where another count table than the release's publishes
        a count of 0, so the release's zeros do not agree."""
        records = {audit: self.wh.record(audit) or {} for _, audit in seen}

        def ptable(audit: Rel, argument: str) -> str:
            named = (records[audit].get("call") or {}).get(argument)
            if isinstance(named, dict):
                return ".".join(str(named[k]) for k in ("schema", "name") if named.get(k))
            return str(named)

        for digest, magnitude in seen:
            if records[magnitude].get("step") != "ckm_sum":
                continue
            for other, count in seen:
                if other != digest and records[count].get("step") != "ckm_sum":
                    raise SdcError(
                        f"{magnitude.label} was built with ckm_sum(zero_with_counts={ptable(magnitude, 'zero_with_counts')}), "
                        f"but {count.label} counts with the ptable {ptable(count, 'ptable')}, whose rows differ: the "
                        "magnitudes published as 0 are not those of the cells whose count is published as 0, so the "
                        "release tells a false zero from an empty cell; give zero_with_counts= the count ptable of "
                        "ckm_count (dbt build after changing it)")
