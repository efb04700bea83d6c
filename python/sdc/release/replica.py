"""What `sdc publish --target` needs from a warehouse it does not run in, engine by engine alike: the relations a
release reaches (dbt's lineage and the build records), the SQL of the tables and views of one's own translated to
DuckDB's, and the views created on the replica. The reading of each engine's catalog and rows is its own
(release/publish_target.py: PostgreSQL, release/publish_spark.py: Spark); the audit on the replica is sdc
publish's (release/publish.py)."""

from __future__ import annotations

import copy
import re
import uuid
from dataclasses import dataclass
from typing import Callable

import duckdb

from sdc.conventions import (
    KEY_FACT_PREFIX,
    KEY_STORE_SUFFIX,
    LOAD_LOG_TABLE,
    NOT_COPIED,
    RAW_SCHEMA,
    RECORD_KEY_COLUMN,
)
from sdc.errors import SdcError
from sdc.warehouse.build_record import build_record_of_comment

# the arguments of a recorded call that name relations (as release/verify.py reads them)
CALL_RELATIONS: tuple[str, ...] = ("hierarchy", "ptable", "nums_ptable", "zero_with_counts")


def named(item, database: str) -> tuple[str | None, str] | None:
    """(schema, name) of a relation as a build record names it ({database, schema, name} or 'schema.name');
    None for one of another database (a record of dbt-spark names none)."""
    if isinstance(item, str):
        parts = [p.strip().strip('"').strip("`") for p in item.split(".")]
        item = {"database": parts[-3] if len(parts) > 2 else None, "schema": parts[-2] if len(parts) > 1 else None,
                "name": parts[-1]}
    if not isinstance(item, dict) or not item.get("name"):
        return None
    if item.get("database") and str(item["database"]).lower() != database.lower():
        return None
    return (str(item["schema"]) if item.get("schema") else None, str(item["name"]))


def record_names(record: dict, database: str) -> list:
    """The relations a build record names: what its step read, the relations of its call (ptables, hierarchies),
    the cell table of a pattern sdc suppress --target wrote, and a publishing step's dimension columns."""
    items = list(record.get("reads") or [])
    call = record.get("call") if isinstance(record.get("call"), dict) else {}
    items += [call[name] for name in CALL_RELATIONS if call.get(name) is not None]
    if isinstance(record.get("cells"), str):
        items.append(record["cells"])
    if isinstance(record.get("hierarchy"), dict):  # a publishing step's dimension columns
        items.append(record["hierarchy"])
    return [found for found in (named(item, database) for item in items) if found is not None]


def lineage_parents(manifest: dict) -> Callable[[str, str], list]:
    """(schema, name) -> the relations dbt's lineage says it reads: its sources and its parents that dbt builds
    (not ephemeral ones, which have no relation)."""
    nodes, sources = manifest.get("nodes") or {}, manifest.get("sources") or {}
    by_name = {(str(n.get("schema", "")).lower(), str(n.get("alias") or n.get("name")).lower()): n
               for n in nodes.values() if n.get("resource_type") in ("model", "seed", "snapshot")}

    def parents(schema: str, name: str) -> list:
        found = []
        node = by_name.get((schema.lower(), name.lower()))
        for parent in ((node or {}).get("depends_on") or {}).get("nodes") or []:
            if parent in sources:
                source = sources[parent]
                found.append((str(source.get("schema")), str(source.get("identifier") or source.get("name"))))
            elif parent in nodes and nodes[parent].get("resource_type") in ("model", "seed", "snapshot"):
                other = nodes[parent]
                if (other.get("config") or {}).get("materialized") != "ephemeral":
                    found.append((str(other.get("schema")), str(other.get("alias") or other.get("name"))))
        return found

    return parents


def node_of(manifest: dict, schema: str, name: str) -> dict | None:
    for node in (manifest.get("nodes") or {}).values():
        if str(node.get("schema", "")).lower() == schema.lower() and \
                str(node.get("alias") or node.get("name")).lower() == name.lower():
            return node
    return None


def translated_sql(manifest: dict, schema: str, name: str, comment: str | None, dialect: str) -> tuple[str, str] | None:
    """For a table of one's own (no step in its build record) whose model is SQL: (its SQL in the manifest, that SQL
    translated from ``dialect`` to DuckDB's), which sdc runs again on the replica where a step reads the table as
    microdata; None where sqlglot cannot translate it (the SQL is then run as it is). A table of one's own with a
    build record that ties it to its SQL (md5) no longer matches the translation and is refused, as the gates
    refuse a published table that is no protection step."""
    import sqlglot

    record = build_record_of_comment(comment) or {}
    node = node_of(manifest, schema, name)
    code = (node or {}).get("compiled_code")
    if record.get("step") or not isinstance(code, str) or node.get("resource_type") != "model" \
            or node.get("language", "sql") != "sql":
        return None
    try:
        return code, ";\n".join(sqlglot.transpile(code, read=dialect, write="duckdb"))
    except (sqlglot.errors.SqlglotError, ValueError):
        return None


def adapted_manifest(manifest: dict, translated: dict) -> dict:
    """The manifest as the replica needs it: the SQL of the tables of one's own translated (translated_sql); the
    rest as dbt wrote it (the database of every node is the replica's catalog)."""
    adapted = copy.deepcopy(manifest)
    for (schema, name), (_, sql) in translated.items():
        node_of(adapted, schema, name)["compiled_code"] = sql
    return adapted


def view_sql(label: str, definition: str, dialect: str) -> str:
    """A view's SQL translated from ``dialect`` to DuckDB's; ``label`` names the view in the message."""
    import sqlglot

    try:
        (sql,) = sqlglot.transpile(definition.strip().rstrip(";"), read=dialect, write="duckdb")
    except (sqlglot.errors.SqlglotError, ValueError) as exc:
        raise SdcError(f"{label} is a view whose SQL sdc cannot read ({str(exc).splitlines()[0]})") from None
    return sql


def create_views(con, views: list[tuple[str, str, str]], hint: str) -> None:
    """The views (label, qualified name on ``con``, DuckDB SQL) created, a view over another after it; one that
    never runs stops it, naming the view, with ``hint``."""
    pending = list(views)
    while pending:
        failed = []
        for label, where, sql in pending:
            try:
                con.execute(f"create view {where} as {sql}")
            except duckdb.Error as exc:
                failed.append((label, where, sql, str(exc).strip().splitlines()[0]))
        if len(failed) == len(pending):
            label, _, _, error = failed[0]
            raise SdcError(f"{label} is a view whose SQL sdc cannot run in its audit ({error}): {hint}")
        pending = [(label, where, sql) for label, where, sql, _ in failed]


# ------------------------------------------------------------------------------------------ the columns copied
# a name in a text: an identifier (letters, digits, _ and $, not first a digit), or what double or back quotes hold
NAME_IN_TEXT = re.compile(r'[^\W\d][\w$]*|"((?:[^"]|"")*)"|`((?:[^`]|``)*)`')


def names_in(text: str) -> set[str]:
    """Every name ``text`` may spell a column by, lower case: its identifiers and what its quotes hold."""
    found = set()
    for match in NAME_IN_TEXT.finditer(text or ""):
        quoted = match.group(1) if match.group(1) is not None else match.group(2)
        found.add((match.group(0) if quoted is None else quoted.replace('""', '"').replace("``", "`")).lower())
    return found


def reads_whole_rows(sql: str, dialect: str) -> bool:
    """Whether a query reads rows as a whole, so that its result depends on columns it never names: a row as a
    value (PostgreSQL's ``t::text``, ``row_to_json(t)``), a star inside a function (``hash(*)``, ``struct(*)``; not
    ``count(*)``), or rows compared as a whole (a star under DISTINCT, GROUP BY or a set operation). SQL that sqlglot
    cannot read counts as such."""
    trees = _parsed(sql, dialect)
    return trees is None or _whole_rows(trees)


def _parsed(sql: str, dialect: str) -> list | None:
    """sqlglot's trees of ``sql``; None where it cannot read it."""
    import sqlglot

    try:
        return [tree for tree in sqlglot.parse(sql, read=dialect) if tree is not None]
    except (sqlglot.errors.SqlglotError, ValueError):
        return None


def _whole_rows(trees: list) -> bool:
    """reads_whole_rows on parsed trees."""
    from sqlglot import exp

    for tree in trees:
        relations = {t.alias_or_name.lower() for t in tree.find_all(exp.Table)}
        relations |= {node.alias.lower() for node in tree.find_all(exp.Subquery, exp.CTE) if node.alias}
        for column in tree.find_all(exp.Column):
            if not column.table and not isinstance(column.this, exp.Star) and column.name.lower() in relations:
                return True
        for star in tree.find_all(exp.Star):
            node = star.parent.parent if isinstance(star.parent, exp.Column) else star.parent
            if isinstance(node, exp.Count):
                continue
            if not isinstance(node, exp.Select):
                return True
            if node.args.get("distinct") or node.args.get("group") or isinstance(node.parent, exp.SetOperation):
                return True
    return False


def audited_names(texts, queries, columns=()) -> set[str] | None:
    """The names by which the audit on a replica may read a column of loaded microdata: those in ``texts`` (build
    records, the load log, the ledger's record sketches, the SQL of the published relations and of those a call
    names), the record key's, and those ``queries`` ((SQL, dialect): the other views and models that run on the
    replica) read for a name the audit reads (_query_names); None (every column) where a query reads whole rows
    (reads_whole_rows); ``columns``: names as they are (the columns of the ledger's record sketches)."""
    names, projections = {RECORD_KEY_COLUMN.lower()} | {str(c).lower() for c in columns}, []
    for sql, dialect in queries:
        found = _query_names(sql, dialect)
        if found is None:
            return None
        names |= found[0]
        projections += found[1]
    for text in texts:
        names |= names_in(text)
    grown = True
    while grown:  # a projection read by its name reads its own names (a view over a view: one more round)
        grown = False
        for output, read in projections:
            if output in names and not read <= names:
                names |= read
                grown = True
    return names


def _query_names(sql: str, dialect: str) -> tuple[set[str], list[tuple[str, set[str]]]] | None:
    """(the names a query reads outside the projections it passes on, [(a projection's output name, the names it
    reads)]); None where it reads whole rows. PostgreSQL writes a view's star out as every column: a projection
    nothing reads by its output name reads nothing. Passed on are the projections of the query itself, of its
    CTEs and of its subqueries in FROM, without DISTINCT or GROUP BY (which make the rows depend on them) and
    without a function that makes rows (unnest, explode, generate_series)."""
    from sqlglot import exp

    trees = _parsed(sql, dialect)
    if trees is None or _whole_rows(trees):
        return None
    passed_on: dict[int, tuple[str, set[str]]] = {}
    always: set[str] = set()
    for tree in trees:  # parsed once: the whole-row test only reads the trees
        for select in tree.find_all(exp.Select):
            for projection in _passed_on(select):
                passed_on[id(projection)] = (projection.alias_or_name.lower(), set())
        for identifier in tree.find_all(exp.Identifier):
            node, owner = identifier, None
            while node.parent is not None:  # the innermost projection passed on that holds it, if any
                if id(node) in passed_on and node.arg_key == "expressions" and isinstance(node.parent, exp.Select):
                    owner = passed_on[id(node)]
                    break
                node = node.parent
            (owner[1] if owner is not None else always).add(identifier.name.lower())
    return always, list(passed_on.values())


def _passed_on(select) -> list:
    """The projections of a SELECT that it passes on by name alone (_query_names): of the query itself, a CTE or a
    subquery in FROM, without DISTINCT or GROUP BY, none a star or a function that makes rows."""
    from sqlglot import exp

    parent = select.parent
    if not (parent is None or isinstance(parent, exp.CTE) or
            (isinstance(parent, exp.Subquery) and isinstance(parent.parent, (exp.From, exp.Join)))) \
            or select.args.get("distinct") or select.args.get("group"):
        return []
    return [p for p in select.expressions if not isinstance(p, exp.Star) and not isinstance(p.this, exp.Star)
            and not p.find(exp.Unnest, exp.Explode, exp.Posexplode, exp.GenerateSeries)]


def passed_on_whole(comments: list, marked: list) -> set[str]:
    """The names (lower case) of the relations whose every column counts, so that their SQL is a text of
    audited_names and not a query: the published ones (``marked``: (schema, name)) and those a step's call names
    (a hierarchy, a ptable: the macros read their columns by sdc's names, which no text spells)."""
    found = {str(name).lower() for _, name in marked}
    for comment in comments:
        call = (build_record_of_comment(comment) or {}).get("call")
        for argument in CALL_RELATIONS:
            item = call.get(argument) if isinstance(call, dict) else None
            name = item.get("name") if isinstance(item, dict) else item.split(".")[-1] if isinstance(item, str) else None
            if name:
                found.add(str(name).strip().strip('"').strip("`").lower())
    return found


def copied_columns(columns: list[str], names: set[str] | None) -> list[str]:
    """The columns of loaded microdata whose values the replica holds (issue 49: what the audit reads, not every
    confidential column of the microdata): those ``names`` holds, the record key's, its key facts'
    (KEY_FACT_PREFIX) and their facts'; every column where ``names`` is None. The others are there as NULL with
    the comment NOT_COPIED, so that the views that name them still run: nothing the audit runs reads them by name,
    what reads rows whole keeps them all (audited_names), and the audit's own searches over columns (populations.py,
    differencing.py) leave them out."""
    if names is None:
        return list(columns)
    facts = {c.lower()[len(KEY_FACT_PREFIX):] for c in columns if c.lower().startswith(KEY_FACT_PREFIX.lower())}
    return [c for c in columns if c.lower() in names or c.lower().startswith(KEY_FACT_PREFIX.lower())
            or c.lower() in facts]


def mark_not_copied(con, table: str, columns: list[str], kept: list[str]) -> None:
    """The comment NOT_COPIED on each column of ``table`` (qualified, on ``con``) that is not in ``kept``."""
    from sdc.quoting import quote_identifier, quote_literal

    for column in columns:
        if column not in kept:
            con.execute(f"comment on column {table}.{quote_identifier(column)} is {quote_literal(NOT_COPIED)}")


def record_texts(comments) -> list[str]:
    """The texts of build records for audited_names: each comment as it is and its record decoded (JSON writes a
    name such as région as r\\u00e9gion)."""
    import json

    found = []
    for comment in comments:
        found.append(comment or "")
        record = build_record_of_comment(comment)
        if record:
            found.append(json.dumps(record, ensure_ascii=False))
    return found


def is_loaded_microdata(schema: str, name: str) -> bool:
    """A table of the raw schema other than the load log and the key stores: what sdc load loaded."""
    return schema.lower() == RAW_SCHEMA and name.lower() != LOAD_LOG_TABLE.lower() \
        and not name.lower().endswith(KEY_STORE_SUFFIX.lower())


# ------------------------------------------------------------------------------------------ the audit on a replica
@dataclass
class AuditedRelease:
    """What the audit on a replica gives: the audit's figures, the release's cells and loads for the ledger (as
    sdc publish --db records them), the in-memory database holding the audited copies, and the verifier."""

    audit: dict
    cells: list
    loads: dict
    alias: str
    verifier: object


def audit_replica(con, manifest: dict, marked: list, where: str, manifest_path, min_standard_error: float,
                  check_copies: Callable[[str], None] | None = None) -> AuditedRelease:
    """sdc publish's checks, verification and release audit on the replica ``con``; ``check_copies(alias)`` runs
    after the tagged relations are copied into ``alias`` (PostgreSQL: its publication schema must hold them)."""
    from sdc.quoting import quote_identifier as q
    from sdc.release.ledger import release_cells, release_loads
    from sdc.release.publish import audit_checked_release, check_release, copy_release

    release = check_release(con, manifest, marked, where, manifest_path)
    alias = f"sdc_release_{uuid.uuid4().hex}"
    con.execute(f"attach ':memory:' as {q(alias)}")
    copy_release(con, alias, release)
    if check_copies is not None:
        check_copies(alias)
    audit = audit_checked_release(release, min_standard_error)
    published = {release.rels[m].label: f"{q(alias)}.main.{q(m.name)}" for m in release.marked}
    cells = release_cells(release.verifier, list(release.verifier.verified.values()), published)
    audit["published"] = sorted(published)
    audit["withdrawn"] = []
    return AuditedRelease(audit, cells, release_loads(con), alias, release.verifier)


def check_against_ledger(ledger, held: tuple[str, dict | None], release: AuditedRelease,
                         accept_parameter_change: bool, min_changed_records: int, fetch) -> list:
    """The audited release against a warehouse's ledger (``ledger``: its DuckDB copy ``con``, ``last`` and
    ``where``; None where nothing is recorded): the release the publication holds (``held``: its name and public
    audit) recorded there, the cells against the last release (ledger.check_against_last), the averaging audit
    over releases and the differencing check; the release's number and the ledger's identity into the audit.
    ``fetch(releases)`` reads the cells of earlier releases into the copy. Returns the changes accepted."""
    from sdc.release.averaging_releases import audit_over_releases
    from sdc.release.differencing import check_differencing
    from sdc.release.ledger import (
        check_against_last,
        check_publication_release,
        ledger_id,
        loaded_roots,
        new_ledger_id,
        withdrawn_relations,
    )

    audit, accepted = release.audit, []
    if ledger is not None:
        check_publication_release(ledger.con, held[1], f"the publication database {held[0]}", ledger.where)
        accepted = check_against_last(ledger.con, release.cells, release.loads, accept_parameter_change,
                                      loaded_roots(release.verifier), fetch=fetch)
        audit["ledger_id"] = ledger_id(ledger.con) or new_ledger_id()
        audit["withdrawn"] = withdrawn_relations(ledger.con, audit["published"])
        audit["release"] = (ledger.last or 0) + 1
        audit["ledger"] = ledger.where
    con = ledger.con if ledger is not None else None
    audit["averaging"]["over_releases"] = audit_over_releases(
        release.verifier, con, release.loads, release.cells, audit["averaging"]["min_standard_error"],
        fetch=fetch if ledger is not None else None)
    check_differencing(release.verifier, con, ledger.last if ledger is not None else None, audit,
                       min_changed_records)
    return accepted
