"""Secondary suppression and its audit inside `dbt build` (dbt-duckdb Python models).

A model of the warehouse calls one of these with the DuckDB session dbt hands it:

    def model(dbt, session):
        from sdc.suppression.warehouse import suppression_pattern
        return suppression_pattern(session, dbt.ref("supp_x_primary"), dbt.ref("supp_x_relations"),
                                   dims=["fach", "geschlecht"], method="heuristic", cost="freq",
                                   prefer_low_levels=True)

The cells come from the SQL macros suppression_cells + suppression_primary, the relations from
suppression_constraints; the pattern is the same as `sdc suppress` computes from a file (protect_cells, which
solves and audits it through secondary.secondary_suppression).
``suppression_audit`` re-audits a finished pattern from its published status alone, so a generic data
test (sdc_suppression_audit) can fail the build when any sensitive cell can be narrowed.
"""

from __future__ import annotations

import numpy as np

from sdc.conventions import TOTAL_LABEL
from sdc.errors import SdcError
from sdc.quoting import quote_identifier
from sdc.suppression.a_priori import a_priori_cells, rows_of_frame
from sdc.suppression.audit import a_priori_lower, audit_pattern, default_upper
from sdc.suppression.linked_tables import keyed_link, protect_linked
from sdc.suppression.pipeline import PATTERN_COLUMNS, protect_cells
from sdc.suppression.problem import group_relations, is_integer_table
from sdc.suppression.secondary import DEFAULT_METHOD, DEFAULT_TIME_LIMIT


def suppression_pattern(session, cells, relations, *, dims: list[str], magnitude: bool = False,
                        method: str = DEFAULT_METHOD, cost: str = "value", mark: str = "x",
                        publish_intervals: bool = False, prefer_low_levels: bool = False,
                        time_limit: float = DEFAULT_TIME_LIMIT, a_priori=None):
    """The pattern of a suppression_primary relation: its columns plus PATTERN_COLUMNS (status now
    includes 'secondary'; lower/upper are the audit interval of each suppressed cell).

    ``cost``: what the secondary suppressions minimise (value, freq, cells); ``prefer_low_levels``: each
    cell's cost times 10^(number of dimensions along which it is a total), so totals are kept where
    possible; ``time_limit``: seconds for method optimal; ``a_priori``: the last release's cells (a relation, e.g.
    a dbt seed that `sdc release a-priori` wrote): what it suppressed stays suppressed, what it published with
    today's value is never a secondary suppression (a_priori.py).

    A total of three counts, the 2 primary (as suppression_primary and suppression_constraints give them):

    >>> import duckdb
    >>> from sdc.suppression import suppression_pattern
    >>> session = duckdb.connect()
    >>> cells = session.sql("select * from (values ('Total', 12, 12, 'published', null, 0, 0), "
    ...     "('a', 2, 2, 'primary', 'freq:3', 1, 1), ('b', 4, 4, 'published', null, 0, 0), "
    ...     "('c', 6, 6, 'published', null, 0, 0)) "
    ...     "as t(region, value, freq, status, rule, protection_lower, protection_upper)")
    >>> relations = session.sql("select 'r1' as constraint_id, region, case when region = 'Total' then 1 else -1 "
    ...     "end as coefficient from (values ('Total'), ('a'), ('b'), ('c')) as t(region)")
    >>> pattern = suppression_pattern(session, cells, relations, dims=["region"], cost="freq")
    >>> pattern.select("region, status, published_text, lower, upper").order("region").fetchall()
    [('Total', 'published', '12', None, None), ('a', 'primary', 'x', 1.0, 5.0), ('b', 'secondary', 'x', 1.0, 5.0), ('c', 'published', '6', None, None)]
    """
    rows = _rows(cells, dims)
    last = a_priori_cells(rows, dims, rows_of_frame(a_priori)) if a_priori is not None else None
    columns = pattern_columns(rows, _columns(cells), _members(relations, dims), dims, magnitude=magnitude,
                              method=method, cost=cost, mark=mark, publish_intervals=publish_intervals,
                              prefer_low_levels=prefer_low_levels, time_limit=time_limit, a_priori=last)
    return _relation(session, {name: _array(values) for name, values in columns.items()})


def linked_suppression_pattern(session, table: str, tables: dict, records, *, hierarchy=None, magnitude: bool = False,
                               method: str = DEFAULT_METHOD, cost: str = "value", mark: str = "x",
                               publish_intervals: bool = False, prefer_low_levels: bool = False,
                               time_limit: float = DEFAULT_TIME_LIMIT, a_priori: dict | None = None,
                               total: str = TOTAL_LABEL):
    """The pattern of the table ``table`` of linked tables, solved with all of them as one problem: ``tables``
    maps each table's name to (its suppression_primary relation, its suppression_constraints relation, its
    dimensions); ``records``: the relation their suppression_cells read (a cell is keyed by the records it
    holds), ``hierarchy``: the hierarchy they were made with; ``a_priori``: table name -> the last release's
    cells of that table. Each table's pattern model calls this with its own name: every model solves the same
    problem and gets the same pattern, so a cell the tables share has one status in all. The other options are
    suppression_pattern's.

    Persons by sex x region and by sex x age share the sex margins, which have one status in both:

    >>> import duckdb
    >>> from sdc.suppression import linked_suppression_pattern
    >>> from sdc.warehouse.macro_renderer import Relation, render_macro
    >>> session = duckdb.connect()
    >>> _ = session.execute("create table persons as select * from (values ('m','a','o'), ('m','a','o'), "
    ...     "('m','a','o'), ('m','a','o'), ('m','b','y'), ('m','b','o'), ('f','a','o'), ('f','a','y'), "
    ...     "('f','b','y'), ('f','b','o'), ('f','b','y'), ('f','b','y')) as t(sex, region, age)")
    >>> def table(dims):
    ...     name = "_".join(dims)
    ...     cells = render_macro(session, "suppression_cells", Relation("memory", "main", "persons"), dims)
    ...     _ = session.execute(f"create table {name}_cells as {cells}")
    ...     primary = render_macro(session, "suppression_primary", Relation("memory", "main", f"{name}_cells"),
    ...                            ["freq:3"])
    ...     relations = render_macro(session, "suppression_constraints",
    ...                              Relation("memory", "main", f"{name}_cells"), dims)
    ...     return session.sql(primary), session.sql(relations), dims
    >>> tables = {"by_region": table(["sex", "region"]), "by_age": table(["sex", "age"])}
    >>> pattern = linked_suppression_pattern(session, "by_age", tables, session.table("persons"), cost="freq")
    >>> pattern.select("sex, age, status").order("sex, age").fetchall()
    [('Total', 'Total', 'published'), ('Total', 'o', 'secondary'), ('Total', 'y', 'secondary'), ('f', 'Total', 'published'), ('f', 'o', 'primary'), ('f', 'y', 'secondary'), ('m', 'Total', 'published'), ('m', 'o', 'secondary'), ('m', 'y', 'primary')]
    >>> other = linked_suppression_pattern(session, "by_region", tables, session.table("persons"), cost="freq")
    >>> other.filter("region = 'Total'").select("sex, status").order("sex").fetchall()  # the same sex margins
    [('Total', 'published'), ('f', 'published'), ('m', 'published')]
    """
    if table not in tables:
        raise SdcError(f"linked_suppression_pattern: table {table!r} is none of the tables ({', '.join(tables)})")
    names = list(tables)
    dims_of = [list(dims) for _, _, dims in tables.values()]
    per_table = []
    for (primary, relations, _), dims in zip(tables.values(), dims_of):
        rows = _rows(primary, dims)
        per_table.append((rows, group_relations(_members(relations, dims), [tuple(r[d] for d in dims) for r in rows],
                                                dims)))
    records.create_view("sdc_linked_records", replace=True)
    if hierarchy is not None:
        hierarchy.create_view("sdc_linked_hierarchy", replace=True)
    linked = keyed_link(session, "sdc_linked_records", per_table, dims_of, names,
                        hierarchy="sdc_linked_hierarchy" if hierarchy is not None else None, total=total)
    protected = protect_linked(per_table, linked, dims_of, names, magnitude=magnitude, a_priori=a_priori,
                               method=method, cost=cost, mark=mark, publish_intervals=publish_intervals,
                               prefer_low_levels=prefer_low_levels, time_limit=time_limit)
    t = names.index(table)
    columns = _with_pattern(per_table[t][0], _columns(tables[table][0]), protected[t])
    return _relation(session, {name: _array(values) for name, values in columns.items()})


def pattern_columns(rows: list[dict], names: list[str], members: list[tuple], dims: list[str], **options) -> dict:
    """The pattern as columns (name -> values, in the cell table's order): the cell table's columns ``names``
    and PATTERN_COLUMNS; ``members`` are the relations' rows (constraint_id, *dims, coefficient)."""
    relation_list = group_relations(members, [tuple(r[d] for d in dims) for r in rows], dims)
    return _with_pattern(rows, names, protect_cells(rows, relation_list, dims=dims, **options))


def _with_pattern(rows: list[dict], names: list[str], protected: list[dict]) -> dict:
    """The cell table's columns ``names`` (its own PATTERN_COLUMNS replaced) and the pattern's, as columns."""
    columns = {name: [r[name] for r in rows] for name in names if name not in PATTERN_COLUMNS}
    for name in PATTERN_COLUMNS:
        columns[name] = [p[name] for p in protected]
    return columns


def suppression_audit(session, pattern, relations, *, dims: list[str], magnitude: bool = False):
    """One row per suppressed cell of a pattern: its feasible interval (what an attacker who knows every
    published cell and the relations can derive), the interval it needs and whether it is protected (in
    integers too for count tables and whole-number magnitudes; integer_skipped says where that was not
    checked).

    The pattern of suppression_pattern's example, stored as dbt stores a model:

    >>> import duckdb
    >>> from sdc.suppression import suppression_audit
    >>> session = duckdb.connect()
    >>> pattern = session.sql("select * from (values ('Total', 12, 12, 'published', 0, 0), "
    ...     "('a', 2, 2, 'primary', 1, 1), ('b', 4, 4, 'secondary', 0, 0), ('c', 6, 6, 'published', 0, 0)) "
    ...     "as t(region, value, freq, status, protection_lower, protection_upper)")
    >>> relations = session.sql("select 'r1' as constraint_id, region, case when region = 'Total' then 1 else -1 "
    ...     "end as coefficient from (values ('Total'), ('a'), ('b'), ('c')) as t(region)")
    >>> audit = suppression_audit(session, pattern, relations, dims=["region"])
    >>> audit.select("region, feasible_lower, feasible_upper, required_lower, required_upper, protected").fetchall()
    [('a', 1.0, 5.0, 1.0, 3.0, True), ('b', 1.0, 5.0, 4.0, 4.0, True)]
    """
    columns = audit_columns(_rows(pattern, dims), _members(relations, dims), dims, magnitude=magnitude)
    kinds = {d: str for d in [*dims, "status", "integer_skipped"]}
    return _relation(session, {name: _array(values, kinds.get(name)) if name in kinds else
                               np.array(values, dtype=bool if name in ("protected", "exactly_disclosed") else float)
                               for name, values in columns.items()})


def audit_columns(rows: list[dict], members: list[tuple], dims: list[str], *, magnitude: bool) -> dict:
    """The LP audit of a pattern as columns: one row per suppressed cell (see suppression_audit)."""
    for name in ("value", "freq", "status", "protection_lower", "protection_upper"):
        if name not in rows[0]:
            raise SdcError(f"suppression_audit: the pattern has no column {name!r}")
    relation_list = group_relations(members, [tuple(r[d] for d in dims) for r in rows], dims)
    values = np.array([r["value"] for r in rows], dtype=float)
    freq = np.array([r["freq"] for r in rows], dtype=float)
    suppressed = np.array([r["status"] in ("primary", "secondary") for r in rows])
    sensitive = np.array([r["status"] == "primary" for r in rows])
    lower = a_priori_lower(values, freq, magnitude=magnitude)
    result = audit_pattern(values, suppressed, relation_list, sensitive=sensitive,
                           protection_lower=[float(r["protection_lower"] or 0) for r in rows],
                           protection_upper=[float(r["protection_upper"] or 0) for r in rows],
                           lower=lower, upper=default_upper(values), integer=is_integer_table(values, magnitude))
    cells = [iv.cell for iv in result.intervals]
    columns = {d: [None if rows[k][d] is None else str(rows[k][d]) for k in cells] for d in dims}
    columns["status"] = [rows[k]["status"] for k in cells]
    columns["value"] = [float(iv.value) for iv in result.intervals]
    for name in ("feasible_lower", "feasible_upper", "required_lower", "required_upper"):
        columns[name] = [float(getattr(iv, name)) for iv in result.intervals]
    columns["protected"] = [bool(iv.protected or not iv.sensitive) for iv in result.intervals]
    columns["exactly_disclosed"] = [bool(iv.exactly_disclosed) for iv in result.intervals]
    # why a sensitive cell the LP protects was not checked in integers (NULL: checked, or not needed)
    columns["integer_skipped"] = [iv.integer_skipped for iv in result.intervals]
    return columns


def _columns(relation) -> list[str]:
    return list(relation.columns)


def _rows(relation, dims) -> list[dict]:
    names = _columns(relation)
    missing = [d for d in dims if d not in names]
    if missing:
        raise SdcError(f"column {missing[0]!r} is not in the cell table (columns: {', '.join(names)})")
    order = ", ".join(quote_identifier(d) for d in dims)
    rows = [dict(zip(names, row)) for row in relation.order(order).fetchall()]
    if not rows:
        raise SdcError("the cell table is empty")
    return rows


def _members(relations, dims) -> list[tuple]:
    names = _columns(relations)
    for name in ["constraint_id", *dims, "coefficient"]:
        if name not in names:
            raise SdcError(f"the relations table has no column {name!r} (made by suppression_constraints?)")
    return relations.select(", ".join(["constraint_id", *map(quote_identifier, dims), "coefficient"])) \
        .order("constraint_id").fetchall()


def _array(values, kind=None):
    """A column for DuckDB: text as object arrays (None = NULL), numbers as float/int arrays with NaN for
    NULL (turned back into NULL by _relation)."""
    if kind is str or any(isinstance(v, str) for v in values):
        return np.array([None if v is None else str(v) for v in values], dtype=object)
    if any(v is None for v in values):
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    return np.array(values)


def _relation(session, columns: dict):
    name = "sdc_python_model_result"
    session.register(name, columns)
    select = ", ".join(
        f"nullif({quote_identifier(c)}, 'NaN'::double) as {quote_identifier(c)}" if a.dtype.kind == "f" else quote_identifier(c)
        for c, a in columns.items()
    )
    return session.sql(f"select {select} from {name}")

