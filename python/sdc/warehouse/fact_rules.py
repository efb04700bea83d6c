"""Fact rules (``sdc load --config``, seed 002 Table 4): one condition on the input's own columns.

A rule is parsed with sqlglot (DuckDB dialect) and may hold only the input's column names (unqualified),
literals, comparisons, boolean operators, arithmetic, IN (a list) / BETWEEN / IS [NOT] NULL / LIKE / ILIKE,
CASE and casts, and the scalar functions in ``FUNCTIONS``. Anything else (a subquery, a table function such as
read_text or duckdb_tables, another relation, a function not on the list, a parameter, a comment) is refused
with the rule and the part named. The SQL that runs is the parsed tree written back by sqlglot, so what was
checked is what runs. The loader computes facts on a connection of its own that holds the rule's columns only
and cannot read files (a second wall; ``sdc.warehouse.loader``).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from sdc.errors import SdcError

# harmless scalar functions: on text, on numbers, on NULLs
FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Abs, exp.Ceil, exp.Floor, exp.Round, exp.Sign, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least,
    exp.Length, exp.Lower, exp.Upper, exp.Trim, exp.Substring, exp.StartsWith,
)
_ALLOWED: tuple[type[exp.Expression], ...] = FUNCTIONS + (
    exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Tuple,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Is,
    exp.And, exp.Or, exp.Not,
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg, exp.DPipe,
    exp.In, exp.Between, exp.Like, exp.ILike, exp.Escape,
    exp.Case, exp.If, exp.Cast, exp.TryCast, exp.DataType, exp.DataTypeParam,
)
ALLOWED_TEXT = ("the input's column names, literals, comparisons, and/or/not, arithmetic, IN (a list), BETWEEN, "
                "IS NULL, LIKE, CASE, casts and the functions " + ", ".join(f.sql_names()[0].lower() for f in FUNCTIONS))


def parse_fact_rule(name: str, rule: str, columns: list[str]) -> tuple[str, list[str]]:
    """The rule as checked SQL (written back from the parsed tree) and the input columns it reads.

    Refused, naming the fact, the rule and the part: text that is not one SQL expression, any node outside
    the allowed set, a qualified column (``t.x``), a column the input does not have."""
    tree = _parse(name, rule)
    by_name = {c.lower(): c for c in columns}
    used: dict[str, None] = {}
    for node in tree.walk():
        if node.comments:
            raise SdcError(f"fact {name}: the rule {rule!r} must be one SQL condition without comments")
        if not isinstance(node, _ALLOWED):
            raise SdcError(f"fact {name}: the rule {rule!r} may only use {ALLOWED_TEXT}; refused: "
                           f"{_describe(node)}")
        if isinstance(node, exp.Column):
            if node.table or node.args.get("db") or node.args.get("catalog"):
                raise SdcError(f"fact {name}: the rule {rule!r} names {node.sql(dialect='duckdb')}; a rule is a "
                               "condition on the input's own columns, without a table name")
            column = by_name.get(node.name.lower())
            if column is None:
                shown = ", ".join(columns)
                raise SdcError(f"fact {name}: the rule {rule!r} does not work on the input: column "
                               f"{node.name!r} is not in the input (columns: {shown})")
            used[column] = None
    return tree.sql(dialect="duckdb", comments=False), list(used)


def _parse(name: str, rule: str) -> exp.Expression:
    try:
        statements = [s for s in sqlglot.parse(rule, dialect="duckdb") if s is not None]
    except (sqlglot.errors.SqlglotError, ValueError, RecursionError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SdcError(f"fact {name}: the rule {rule!r} must be one SQL condition; it does not parse ({first})") \
            from None
    if len(statements) != 1:
        raise SdcError(f"fact {name}: the rule {rule!r} must be one SQL condition (found {len(statements)} "
                       "statements)")
    return statements[0]


def _describe(node: exp.Expression) -> str:
    """The refused part in words: what it is and its SQL (shortened)."""
    if isinstance(node, (exp.Select, exp.Subquery, exp.Query)):
        kind = "a subquery"
    elif isinstance(node, (exp.Table, exp.From)):
        kind = "a relation"
    elif isinstance(node, exp.Func):
        kind = f"the function {node.sql_name().lower() if not isinstance(node, exp.Anonymous) else node.name}"
    else:
        kind = node.key
    text = node.sql(dialect="duckdb", comments=False)
    return f"{kind} ({text[:80] + '...' if len(text) > 80 else text})"
