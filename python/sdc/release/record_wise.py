"""Microdata of one's own is record-wise: one row per record of one loaded table, its record keys as loaded.

A step may read a view or table of one's own over the loaded tables (a staging model: a derived column, a filter,
renamed columns). Its SQL decides what the step counts, so it is held to what the step's protection assumes
(red team, issue 48):

* **one row per record of one loaded table**: a single SELECT (CTEs and subqueries in FROM alike) from one relation
  (a loaded table, or microdata of one's own that is record-wise itself), with a WHERE on that row. No join, no
  aggregate or window function, no subquery in an expression, no GROUP BY, HAVING, QUALIFY, DISTINCT, LIMIT,
  sample, set operation or unnest: each of those writes into a record's row what other records hold (a count over
  a partition put into a dimension's code publishes every original count as a code), or makes rows that are no
  record. A function that DuckDB does not list as a scalar function giving the same result every run is refused
  too (random, now, nextval: sdc's recomputation would not be the table's).
* **columns by name**: a column list on an alias (``as c(id, k, rk)`` renames by position, and put a hashed key
  under the name rk), a column by position (``#4``), a parameter (``$1``), a pattern (``COLUMNS(...)``) and two
  columns of one name are refused, since this reading follows names. A later column may read an earlier alias
  of the same SELECT, as in DuckDB (the relation's column of that name first).
* **the record keys as loaded**: the record key column (``rk``) and the key facts (``rk_<fact>``) and facts of the
  loaded table may only be passed on unchanged under their own names, never computed with: a key computed from the
  loaded one (``(rk + 104729) % M``) gives the same records another, independent noise in every cell (averaging
  thirty such tables gave 14 of 15 originals), and a key or fact under another name counts other records than its
  key says.

Each column of such a relation is described by its **lineage**: the loaded columns it reads, and whether it is one
of them unchanged. The release audit names a variable by it (a magnitude of ``income`` under another column name, or
scaled, is the same variable; a constant reads no column).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import sqlglot
from sqlglot import exp

from sdc.conventions import KEY_FACT_PREFIX, RECORD_KEY_COLUMN
from sdc.errors import SdcError

# what makes a row other than one record's: refused in a SELECT that a step reads as microdata
_NOT_RECORD_WISE: dict[str, str] = {
    "joins": "a join", "laterals": "a lateral join", "group": "GROUP BY", "having": "HAVING", "qualify": "QUALIFY",
    "distinct": "DISTINCT", "limit": "LIMIT", "offset": "OFFSET", "windows": "a WINDOW clause", "sample": "a sample",
    "connect": "CONNECT BY", "match": "MATCH_RECOGNIZE", "into": "SELECT INTO", "pivots": "PIVOT",
}


@dataclass(frozen=True)
class Lineage:
    """What one column of microdata is: the loaded columns it reads ((table, column), lower case), whether it is
    one of them unchanged (``passed``), and its expression over them (``expression``, for telling two derived
    columns apart)."""

    roots: frozenset
    passed: bool
    expression: str

    @property
    def root(self) -> tuple | None:
        return next(iter(self.roots)) if self.passed else None


def loaded_lineage(table: str, columns: list[str]) -> dict[str, Lineage]:
    """The lineage of a loaded table's columns: each is itself."""
    return {c.lower(): Lineage(frozenset([(table.lower(), c.lower())]), True, f"{table.lower()}.{c.lower()}")
            for c in columns}


def key_columns(lineage: dict[str, Lineage]) -> set[tuple]:
    """The loaded columns that are record keys, key facts or facts ((table, column)), among those ``lineage``
    reads: rk, rk_<fact> and <fact>."""
    found = set()
    roots = {root for item in lineage.values() for root in item.roots}
    for table, column in roots:
        if column == RECORD_KEY_COLUMN or column.startswith(KEY_FACT_PREFIX):
            found.add((table, column))
            if column.startswith(KEY_FACT_PREFIX):
                found.add((table, column[len(KEY_FACT_PREFIX):]))
    return found


class NotRecordWise(SdcError):
    """The reason, for the caller to name the relation and the path."""


def record_wise_lineage(sql: str, resolve: Callable[[exp.Table], dict[str, Lineage] | None],
                        scalar: Callable[[str], bool], keys: set[tuple],
                        unstable: Callable[[str], bool] = lambda name: False) -> dict[str, Lineage]:
    """The lineage of every column (lower case) of the relation whose SQL is ``sql`` (DuckDB; a view's ``create
    view ... as`` included). ``resolve(table)`` gives the lineage of a relation its FROM names (None: no relation
    of the warehouse); ``scalar(name)`` tells whether DuckDB knows a function as scalar and giving the same result
    for the same arguments, ``unstable(name)`` whether it knows one that does not (random, now, nextval);
    ``keys`` are the loaded key and fact columns (key_columns). Raises NotRecordWise naming what breaks the rule
    (the module's text)."""
    try:
        trees = [t for t in sqlglot.parse(sql, read="duckdb") if t is not None]
    except (sqlglot.errors.SqlglotError, ValueError, RecursionError) as exc:
        raise NotRecordWise(f"has SQL that cannot be read ({str(exc).splitlines()[0]})") from None
    if len(trees) != 1:
        raise NotRecordWise(f"has {len(trees)} statements, not one query")
    tree = trees[0]
    if isinstance(tree, exp.Create):
        tree = tree.expression
    return _Reader(resolve, scalar, keys, unstable).query(tree, {})


class _Reader:
    def __init__(self, resolve, scalar, keys: set[tuple], unstable):
        self.resolve, self.scalar, self.keys, self.unstable = resolve, scalar, keys, unstable

    def query(self, node, ctes: dict) -> dict[str, Lineage]:
        while isinstance(node, (exp.Subquery, exp.Paren)):
            node = node.this
        if isinstance(node, exp.SetOperation):
            raise NotRecordWise(f"is a set operation ({node.key.upper()}): its rows are not one per record of one "
                                "loaded table")
        if not isinstance(node, exp.Select):
            raise NotRecordWise(f"is no SELECT ({_shown(node)})")
        ctes = dict(ctes)
        for cte in (node.args.get("with_") or node.args.get("with") or exp.With()).expressions:
            _no_column_list(cte)
            ctes[cte.alias_or_name.lower()] = self.query(cte.this, ctes)
        for arg, what in _NOT_RECORD_WISE.items():
            if node.args.get(arg):
                raise NotRecordWise(f"has {what}: a row of microdata that a step reads must be one record of one "
                                    "loaded table")
        source = node.args.get("from_") or node.args.get("from")
        if source is None:
            raise NotRecordWise("reads no relation: its rows are no records of a loaded table")
        relation = source.this
        if isinstance(relation, exp.Table):
            for arg, what in _NOT_RECORD_WISE.items():
                if relation.args.get(arg):
                    raise NotRecordWise(f"has {what} on {relation.sql(dialect='duckdb')}: a row of microdata that a "
                                        "step reads must be one record of one loaded table")
            _no_column_list(relation)
            if not isinstance(relation.this, exp.Identifier):
                raise NotRecordWise(f"reads the table function {relation.this.sql(dialect='duckdb')[:80]!r}")
            parent = ctes.get(relation.name.lower()) if not relation.db and not relation.catalog else None
            if parent is None:
                parent = self.resolve(relation)
            if parent is None:
                raise NotRecordWise(f"reads {relation.sql(dialect='duckdb')}, which is no microdata sdc can follow")
            names = {relation.alias_or_name.lower(), relation.name.lower()}
        elif isinstance(relation, exp.Subquery):
            _no_column_list(relation)
            parent = self.query(relation.this, ctes)
            names = {relation.alias_or_name.lower()}
        else:
            raise NotRecordWise(f"reads {_shown(relation)}: a row of microdata that a step reads must be one record "
                                "of one loaded table")
        out: dict[str, Lineage] = {}
        for item in node.expressions:  # in order: DuckDB lets a later column read an earlier one's alias
            for name, lineage in self.projection(item, parent, names, out):
                if name in out:  # DuckDB would name the second one name_1 (a computed rk beside the loaded one)
                    raise NotRecordWise(f"has two columns named {name}: name each column once")
                out[name] = lineage
        where = node.args.get("where")
        if where is not None:  # a filter keeps or drops whole records; by their keys it would choose their noise
            keys = sorted(c for t, c in self.expression(where.this, parent, names, out).roots if _is_key(c))
            if keys:
                raise NotRecordWise(f"filters records by {', '.join(keys)}, the loaded record keys: records chosen by "
                                    "their keys make cell keys that are not uniform")
        self.check_keys(out)
        return out

    def projection(self, item, parent: dict, names: set, earlier: dict) -> list[tuple[str, Lineage]]:
        star = item.this if isinstance(item, exp.Column) and isinstance(item.this, exp.Star) else item
        if isinstance(star, exp.Star):
            if isinstance(item, exp.Column) and item.table and item.table.lower() not in names:
                raise NotRecordWise(f"selects {item.sql(dialect='duckdb')}, whose table it does not read")
            excluded = {c.name.lower() for c in (star.args.get("except_") or star.args.get("except") or [])}
            replaced = {a.alias.lower(): a.this for a in star.args.get("replace") or []}
            renamed = {a.this.name.lower(): a.alias.lower() for a in star.args.get("rename") or []}
            if star.args.get("ilike"):
                raise NotRecordWise("selects columns by a pattern (* ILIKE): name them")
            found = []
            for name, lineage in parent.items():
                if name in excluded:
                    continue
                if name in replaced:
                    lineage = self.expression(replaced[name], parent, names, {})
                found.append((renamed.get(name, name), lineage))
            return found
        name = item.alias_or_name.lower()
        if not name:
            raise NotRecordWise(f"has a column without a name ({_shown(item)})")
        return [(name, self.expression(item.this if isinstance(item, exp.Alias) else item, parent, names, earlier))]

    def expression(self, node, parent: dict, names: set, earlier: dict) -> Lineage:
        """The lineage of ``node`` over ``parent``'s columns, or an alias of ``earlier`` in the same SELECT."""
        roots: set = set()
        scope = {**earlier, **parent}  # a column of the relation before an alias of the same name (DuckDB's order)
        for part in node.walk():
            if isinstance(part, (exp.AggFunc, exp.Window)):
                raise NotRecordWise(f"computes {_shown(part)}, which reads other records: a row of microdata that a "
                                    "step reads must be one record's")
            if isinstance(part, (exp.Select, exp.Subquery, exp.Exists, exp.SetOperation, exp.Table)):
                raise NotRecordWise(f"has a subquery ({_shown(part)}), which reads other rows: a row of microdata "
                                    "that a step reads must be one record's")
            if isinstance(part, (exp.Unnest, exp.Explode)):
                raise NotRecordWise(f"unnests ({_shown(part)}): one record would become several rows")
            if isinstance(part, _UNFOLLOWED):
                raise NotRecordWise(f"reads {_shown(part)}, a column sdc cannot follow by its name (a position, a "
                                    "parameter or a pattern): name the columns")
            if isinstance(part, exp.Anonymous) and not self.scalar(part.name):
                raise NotRecordWise(f"calls {part.name}, which is no scalar function of DuckDB that gives the same "
                                    "result for the same arguments")
            if isinstance(part, _UNSTABLE) or (isinstance(part, exp.Func) and not isinstance(part, exp.Anonymous)
                                               and self.unstable(_function_name(part))):
                raise NotRecordWise(f"calls {_shown(part)}, whose result changes from one run to the next (random, "
                                    "the time, a sequence): sdc's recomputation would not be the table's; load such "
                                    "a value as a column, or write the date as a literal")
            if isinstance(part, exp.Column) and not isinstance(part.this, exp.Star):
                column = self.column(part, scope, names)
                roots |= scope[column].roots
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return scope[self.column(node, scope, names)]
        shown = node.transform(lambda n: exp.column(scope[self.column(n, scope, names)].expression, quoted=True)
                               if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star) else n)
        return Lineage(frozenset(roots), False, shown.sql(dialect="duckdb"))

    @staticmethod
    def column(node: exp.Column, parent: dict, names: set) -> str:
        name, table = node.name.lower(), (node.table or "").lower()
        if table and table not in names:
            if table in parent:  # DuckDB: a struct's field, s.f
                return table
            raise NotRecordWise(f"reads {node.sql(dialect='duckdb')}, whose table it does not read")
        if name not in parent:
            raise NotRecordWise(f"reads the column {node.name!r}, which its relation does not have")
        return name

    def check_keys(self, out: dict[str, Lineage]) -> None:
        """The loaded record keys, key facts and facts: passed on unchanged under their own names, or not at all."""
        names = {column for _, column in self.keys}
        for name, lineage in out.items():
            computed = sorted(c for _, c in lineage.roots if _is_key(c)) if not lineage.passed else []
            if computed:
                raise NotRecordWise(
                    f"computes its column {name} from {', '.join(computed)}, the loaded record keys: a view "
                    "that a step reads may pass them on unchanged under their own names, not compute with them (a "
                    "key computed from the loaded one gives the same records another noise in every cell)")
            if lineage.passed and lineage.root in self.keys and lineage.root[1] != name:
                raise NotRecordWise(f"passes {lineage.root[1]}, a loaded record key or fact, on as {name}: keep its "
                                    "name (a key or fact under another name counts other records than it says)")
            if name in names and not (lineage.passed and lineage.root[1] == name and lineage.root in self.keys):
                raise NotRecordWise(f"has a column {name} that is not the loaded table's {name}: the record keys and "
                                    "facts are the loader's, passed on unchanged")


# what names no column sdc can follow: a position (#5), a parameter ($1, ?), a pattern (COLUMNS('inc.*'))
_UNFOLLOWED = tuple(getattr(exp, name) for name in ("PositionalColumn", "Placeholder", "Parameter", "Columns")
                    if hasattr(exp, name))
# functions whose result changes from run to run, as sqlglot reads them (DuckDB's own names: ``unstable``)
_UNSTABLE = tuple(getattr(exp, name) for name in ("Rand", "Randn", "Uuid", "CurrentDate", "CurrentTime",
                                                   "CurrentTimestamp", "CurrentDatetime", "CurrentUser",
                                                   "CurrentSchema") if hasattr(exp, name))


def _no_column_list(node) -> None:
    """A column list on an alias (``t(a, b)``, ``with c(a, b)``) renames columns by position, which a reading by
    name would follow wrongly (a computed column named as the record key)."""
    alias = node.args.get("alias")
    if isinstance(alias, exp.TableAlias) and alias.columns:
        raise NotRecordWise(f"renames columns by their position ({_shown(alias)}): name each column in its SELECT")


def _function_name(node: exp.Func) -> str:
    """The name DuckDB gives the function ``node`` (its SQL's first word)."""
    found = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\s*(\(|$)", node.sql(dialect="duckdb"))
    return found.group(1).lower() if found else ""  # no call (AND, a comparison): no name


def _is_key(column: str) -> bool:
    return column == RECORD_KEY_COLUMN or column.startswith(KEY_FACT_PREFIX)


def _shown(node) -> str:
    text = node.sql(dialect="duckdb") if isinstance(node, exp.Expression) else str(node)
    return text[:80] + "..." if len(text) > 80 else text
