"""`sdc suppress` and `sdc audit`: cell suppression of one table from a microdata file.

The cell table, the primary rules and the additivity relations come from the dbt macros
(suppression_cells, suppression_primary, suppression_constraints), rendered in process and run on an
in-memory DuckDB: the same SQL as in the warehouse; secondary suppression and the audit run in Python (heuristic.py, optimal.py,
audit.py). A cell's cost is its value, its frequency or 1 (``cost``), and the methods minimise the total
cost of the secondary suppressions. ``prefer_low_levels`` multiplies each cost by 10^k, k = the number of
dimensions along which the cell is a total or subtotal, so that totals are kept where possible (seed 003:
the higher the level, the more valuable the information); the minimum is then one of those weighted costs,
not of the suppressed value or frequency.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sdc.conventions import SUPPRESSION_OWN_COLUMNS, TOTAL_LABEL
from sdc.warehouse.dimension_names import check_dimension_names
from sdc.warehouse.database import is_numeric_type
from sdc.errors import SdcError
from sdc.warehouse.hierarchy import create_hierarchy_table, hierarchy_rows, read_hierarchy
from sdc.warehouse.loader import column_list, quote
from sdc.warehouse.microdata_input import register_microdata
from sdc.files import check_not_an_input, check_output_file, csv_field, read_csv_rows, write_text_atomically
from sdc.warehouse.macro_renderer import Relation, private_connection, render_macro, run_sql
from sdc.suppression.a_priori import APrioriCells, a_priori_cells, rows_of_frame
from sdc.suppression.audit import (
    AUDIT_TOLERANCE,
    FLOAT_NOISE,
    AuditResult,
    a_priori_lower,
    audit_pattern,
    default_upper,
    public_intervals,
)
from sdc.suppression.optimal import time_limit_seconds
from sdc.suppression.problem import COSTS, SuppressionProblem, group_relations, is_integer_table
from sdc.suppression.secondary import (
    DEFAULT_METHOD,
    DEFAULT_TIME_LIMIT,
    METHODS,
    STATUSES,
    SuppressionPattern,
    secondary_suppression,
)

DOMINANCE_RULES = ("p", "nk", "pq")
# what secondary suppression adds to each cell (after the dimension columns, freq and value); lower/upper
# are the audit's interval (from the confidential a-priori bounds: never publish them), published_lower/
# published_upper the interval derived from published cells alone (publish_intervals)
PATTERN_COLUMNS = ("status", "rule", "published_text", "lower", "upper", "protection_lower", "protection_upper",
                   "published_lower", "published_upper")


def suppress_table(
    input_path,
    dims: list[str],
    rules: list[str],
    out,
    *,
    hierarchy_path=None,
    value: str | None = None,
    holding: str | None = None,
    preset: str = "handbook",
    method: str = DEFAULT_METHOD,
    cost: str = "value",
    mark: str = "x",
    publish_intervals: bool = False,
    prefer_low_levels: bool = False,
    time_limit: float = DEFAULT_TIME_LIMIT,
    audit: bool = False,
    a_priori=None,
) -> dict:
    """Write the protected cell table to ``out``; returns counts by status.

    ``out`` holds the publishable columns only (dimensions, published_value, published_text and, with
    ``publish_intervals``, published_lower/published_upper: not status or rule, which tell which cells are
    sensitive, as `sdc publish` refuses them); ``audit`` writes the audit layout
    instead (freq, value and the true value of every suppressed cell, protection levels, audit intervals),
    which `sdc audit` reads: never publish it.

    ``cost``: what the secondary suppressions minimise (value, freq or cells = their number);
    ``prefer_low_levels``: multiply each cell's cost by 10^(number of dimensions along which it is a total);
    ``time_limit``: seconds for method optimal (then the heuristic completes its pattern, with a warning);
    ``a_priori``: a CSV file of the last release's cells (`sdc release a-priori`; a_priori.py)."""
    check_options(rules, value, method, cost, time_limit, mark=mark)
    check_not_an_input(out, input_path, hierarchy_path, *([a_priori] if a_priori is not None else []))
    check_output_file(out, "sdc suppress")
    columns, rows, counts = _protected_rows(
        input_path, dims, rules, hierarchy_path, value, holding, preset, method, cost, mark, publish_intervals,
        prefer_low_levels, time_limit, audit, a_priori)
    lines = [",".join(csv_field(c) for c in columns)] + [",".join(csv_field(row[c]) for c in columns) for row in rows]
    write_text_atomically(Path(out), "\n".join(lines) + "\n", command="sdc suppress")
    return counts


def suppressed_table(data, dims: list[str], rules: list[str], *, hierarchy=None, value: str | None = None,
                     holding: str | None = None, preset: str = "handbook", method: str = DEFAULT_METHOD,
                     cost: str = "value", mark: str = "x", publish_intervals: bool = False,
                     prefer_low_levels: bool = False, time_limit: float = DEFAULT_TIME_LIMIT, audit: bool = False,
                     a_priori=None):
    """The table of ``suppress_table`` as a pandas DataFrame (numbers as numbers, NA for a suppressed cell), for
    pipelines and notebooks: ``data`` is a pandas DataFrame, an Arrow table, a DuckDB relation or a .csv/
    .parquet path; ``hierarchy`` a file path or a DataFrame (dimension, code, parent). The options are those
    of suppress_table, ``a_priori`` also a DataFrame.

    Students by subject and sex; under freq:3 Bau/w (3 is fine) stays, Med/w = 1 is primary and takes three
    more cells with it:

    >>> import pandas as pd
    >>> from sdc.suppression import suppressed_table
    >>> micro = pd.DataFrame({"fach": ["Bau"] * 7 + ["Med"] * 5, "geschlecht": list("mmmmwww") + list("mmmmw")})
    >>> table = suppressed_table(micro, ["fach", "geschlecht"], ["freq:3"])
    >>> [tuple(row) for row in table[["fach", "geschlecht", "published_text"]].itertuples(index=False)]
    [('Bau', 'Total', '7'), ('Bau', 'm', 'x'), ('Bau', 'w', 'x'), ('Med', 'Total', '5'), ('Med', 'm', 'x'), ('Med', 'w', 'x'), ('Total', 'Total', '12'), ('Total', 'm', '8'), ('Total', 'w', '4')]
    """
    check_options(rules, value, method, cost, time_limit, dims, mark=mark)
    columns, rows, _ = _protected_rows(data, dims, rules, hierarchy, value, holding, preset, method, cost, mark,
                                       publish_intervals, prefer_low_levels, time_limit, audit, a_priori)
    return table_frame(columns, rows, value)


def table_frame(columns: list[str], rows: list[dict], value: str | None):
    """A protected table as a pandas DataFrame: numbers as numbers, NA where the file has an empty field."""
    import pandas as pd

    table = pd.DataFrame([[row[c] for c in columns] for row in rows], columns=columns)
    counts = {"freq"} | (set() if value else {"published_value"})  # whole numbers: integers, NA where suppressed
    for column in _NUMERIC_COLUMNS.intersection(columns):  # numbers, and NA where the file has an empty field
        numbers = pd.to_numeric(table[column].replace("", None))
        table[column] = numbers.astype("Int64") if column in counts else numbers
    return table


# the columns of the protected table that hold numbers (published_text holds the text to print)
_NUMERIC_COLUMNS = {"freq", "value", "published_value", "lower", "upper", "protection_lower", "protection_upper",
                    "published_lower", "published_upper"}


def check_options(rules, value, method, cost, time_limit, dims=None, mark: str = "x") -> None:
    check_mark(mark)
    if dims is not None and (isinstance(dims, str) or not dims or not all(isinstance(d, str) for d in dims)):
        raise SdcError(f"dims must be a non-empty list of column names, got {dims!r}")
    if isinstance(rules, str) or not all(isinstance(r, str) for r in rules):
        raise SdcError(f"rules must be a list of rules such as ['freq:3', 'p:10'], got {rules!r}")
    if method not in METHODS:
        raise SdcError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if cost not in COSTS:
        raise SdcError(f"--cost must be one of {', '.join(COSTS)}, got {cost!r}")
    check_time_limit(time_limit)
    if not rules:
        raise SdcError("give at least one --rule (e.g. freq:3, p:10, nk:2,85, pq:25,50)")
    dominance = [r for r in rules if _rule_name(r) in DOMINANCE_RULES]
    if dominance and not value:
        raise SdcError(f"rule {dominance[0]!r} is a dominance rule: it needs --value, the column whose contributions "
                       "it judges (without --value the table holds counts)")


def check_mark(mark) -> None:
    """The published text of a suppressed cell may not read as a number: a reader, and sdc audit, would take the
    cell for a published one with that value (a mark of 0131 showed every suppressed cell as 131)."""
    if not isinstance(mark, str):
        raise SdcError(f"--mark must be text such as x or ., got {mark!r}")
    if _is_number(mark):
        raise SdcError(f"--mark {mark!r} reads as a number: every suppressed cell would look published with that "
                       "value; give a mark such as x or .")


def _protected_rows(data, dims, rules, hierarchy_path, value, holding, preset, method, cost, mark,
                    publish_intervals, prefer_low_levels, time_limit, audit, a_priori=None):
    """(columns, one dict of text fields per cell, counts by status) of the protected table."""
    cells, relations = _cells_and_relations(data, dims, rules, hierarchy_path, value, holding, preset)
    last = a_priori_cells(cells, dims, rows_of_frame(a_priori)) if a_priori is not None else None
    protected = protect_cells(cells, relations, magnitude=value is not None, method=method, cost=cost, mark=mark,
                              publish_intervals=publish_intervals, prefer_low_levels=prefer_low_levels,
                              time_limit=time_limit, a_priori=last, dims=dims, intervals="all" if audit else "none")
    return table_rows(cells, protected, dims, value=value, audit=audit, publish_intervals=publish_intervals)


def table_rows(cells: list[dict], protected: list[dict], dims: list[str], *, value: str | None, audit: bool,
               publish_intervals: bool):
    """(columns, one dict of text fields per cell, counts by status) of a protected table: the publishable
    columns, or with ``audit`` the audit layout."""
    intervals = ["published_lower", "published_upper"] if publish_intervals else []
    if audit:
        columns = dims + ["freq"] + (["value"] if value else []) + [c for c in PATTERN_COLUMNS if c not in
                                                                     ("published_lower", "published_upper")]
    else:
        # no status or rule: "primary" under freq:3 says the count is 1 or 2, narrower than any interval
        columns = dims + ["published_value", "published_text"]
    columns += intervals
    rows = []
    for c, p in zip(cells, protected):
        fields = {d: c[d] for d in dims} | {name: _number(p[name]) for name in ("lower", "upper", "protection_lower",
                                                                                "protection_upper", *intervals)}
        fields |= {"freq": str(c["freq"]), "value": _number(c["value"]), "status": p["status"],
                   "rule": p["rule"] or c.get("rule") or "", "published_text": p["published_text"],
                   "published_value": _number(c["value"]) if p["status"] in ("published", "empty") else ""}
        rows.append(fields)
    return columns, rows, {status: sum(p["status"] == status for p in protected) for status in STATUSES}


def protect_cells(cells: list[dict], relations, *, magnitude: bool, method: str = DEFAULT_METHOD, cost: str = "value",
                  mark: str = "x", publish_intervals: bool = False, prefer_low_levels: bool = False,
                  time_limit: float = DEFAULT_TIME_LIMIT, a_priori: APrioriCells | None = None,
                  dims: list[str] | None = None, intervals: str = "all", coordinates=None) -> list[dict]:
    """Secondary suppression and audit of a cell table from suppression_primary (rows as dicts with
    value, freq, contributors, status, rule, protection_lower/upper), one output dict per cell with
    PATTERN_COLUMNS. ``magnitude``: the values are sums of a value column (not counts). ``cost`` and
    ``prefer_low_levels``: see problem.cell_costs; ``time_limit``: seconds for method optimal; ``a_priori``:
    the last release's pattern (a_priori.py): its suppressed cells stay suppressed, its published cells of
    unchanged value are never chosen as secondary suppressions; ``dims``: to name cells in messages;
    ``intervals``: the audit intervals lower/upper of every suppressed cell ('all'), of the primary cells
    ('primary') or none ('none': the audit's verdict alone, the fastest; see secondary_suppression);
    ``coordinates``: each cell's codes (method hypercube), where ``dims`` does not give them."""
    if method not in METHODS:
        raise SdcError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    check_mark(mark)
    time_limit = check_time_limit(time_limit)
    problem = SuppressionProblem.from_cells(cells, relations, magnitude=magnitude, cost=cost,
                                            prefer_low_levels=prefer_low_levels, a_priori=a_priori, dims=dims,
                                            coordinates=coordinates)
    pattern = secondary_suppression(problem, method, time_limit=time_limit, intervals=intervals)
    shown = _published_intervals(problem, pattern) if publish_intervals else None
    return [_pattern_fields(problem, pattern, k, c["rule"], mark, shown) for k, c in enumerate(cells)]


def _published_intervals(problem: SuppressionProblem, pattern: SuppressionPattern):
    """What anyone derives from the published cells and public bounds only: the audit's bounds come from the
    true values (1.5 x the largest cell), and an interval ending there gives the largest cell away."""
    values = problem.values
    return public_intervals(np.where(pattern.suppressed, np.nan, values), pattern.suppressed, problem.relations,
                            lower=public_lower(values, problem.magnitude), integer=problem.integer)


def _pattern_fields(problem: SuppressionProblem, pattern: SuppressionPattern, k: int, rule, mark: str,
                    shown_intervals) -> dict:
    """The PATTERN_COLUMNS of cell ``k``: ``shown_intervals`` (lows, highs) when intervals are published."""
    status = pattern.status[k]
    interval = pattern.interval(k) if pattern.suppressed[k] else None
    shown_low = shown_high = None
    if status in ("published", "empty"):
        shown = _number(problem.values[k])
    elif shown_intervals is not None:
        shown_low, shown_high = float(shown_intervals[0][k]), float(shown_intervals[1][k])
        shown = interval_text(shown_low, shown_high, mark)
    else:
        shown = mark
    return {"status": status, "rule": rule, "published_text": shown,
            "lower": interval.feasible_lower if interval else None,
            "upper": interval.feasible_upper if interval else None,
            "protection_lower": float(problem.protection_lower[k]), "protection_upper": float(problem.protection_upper[k]),
            "published_lower": shown_low, "published_upper": shown_high}


def public_lower(values, magnitude: bool) -> np.ndarray:
    """The a-priori lower bound anyone knows of a suppressed cell: 1 in a count table (empty cells are always
    published, so a suppressed one is not empty), 0 in a magnitude table of a non-negative variable (its
    sign is taken as public: a turnover cannot be negative), none for a variable that can be negative."""
    values = np.asarray(values, dtype=float)
    if not magnitude:
        return np.ones(len(values))
    return np.full(len(values), 0.0 if values.min(initial=0.0) >= 0 else -np.inf)


def interval_text(low: float, high: float, mark: str) -> str:
    """A published interval: "3-8", ">=3" or "<=8" where one end is open, the mark where both are."""
    if np.isfinite(low) and np.isfinite(high):
        return f"{_number(low)}-{_number(high)}"
    if np.isfinite(low):
        return f">={_number(low)}"
    if np.isfinite(high):
        return f"<={_number(high)}"
    return mark


def check_time_limit(time_limit) -> float:
    """The optimal method's time limit in seconds, as sdc suppress's --time-limit (time_limit_seconds)."""
    return time_limit_seconds(time_limit, "--time-limit")


def _rule_name(rule) -> str:
    return str(rule).split(":")[0].strip().lower()


def _cells_and_relations(data, dims, rules, hierarchy_path, value, holding, preset):
    with private_connection("suppress") as con:
        hierarchy = registered_microdata(con, data, dims, rules, hierarchy_path, value, holding)
        return table_cells(con, dims, rules, hierarchy, value, holding, preset)


def registered_microdata(con, data, dims, rules, hierarchy_path, value, holding) -> Relation | None:
    """Register ``data`` as the table micro of ``con`` (its columns checked: the dimensions, a numeric value
    column, no negative contribution under a dominance rule) and the hierarchy; returns the hierarchy's relation."""
    for name in dims + [x for x in (value, holding) if x]:
        quote(name)
    check_dimension_names(dims, SUPPRESSION_OWN_COLUMNS, {value: "--value column", holding: "--holding column"},
                          top_contributions=True)
    needed = dims + [x for x in (value, holding) if x]
    label, all_columns = register_microdata(con, data, "micro", needed, numbers=[value])
    missing = [c for c in needed if c not in all_columns]
    if missing:
        raise SdcError(f"column {missing[0]!r} is not in {label} ({column_list(all_columns)})")
    types = dict(con.execute("select column_name, column_type from (describe micro)").fetchall())
    if value and not is_numeric_type(types[value]):
        raise SdcError(f"--value column {value!r} of {label} has type {types[value]}, not a number; "
                       "a magnitude table needs a numeric column")
    dominance = [r for r in rules if _rule_name(r) in DOMINANCE_RULES]
    if value and dominance:
        negative = con.execute(
            f"select {', '.join(quote(d) for d in dims)}, {quote(value)} from micro "
            f"where {quote(value)} < 0 limit 1").fetchone()
        if negative:
            cell = ", ".join(f"{d}={v}" for d, v in zip(dims, negative[:-1]))
            raise SdcError(
                f"negative contribution {negative[-1]:g} in column {value!r} (cell {cell}): the rules "
                f"{', '.join(dominance)} assume non-negative contributions; transform the variable first"
            )
    return _hierarchy_table(con, hierarchy_path)


def table_cells(con, dims, rules, hierarchy, value, holding, preset, prefix: str = ""):
    """(cells, relations) of the table ``dims`` of the registered microdata: the macros of the warehouse,
    rendered here (macro_renderer), each relation a table as dbt builds it (named with ``prefix``)."""
    cells_sql = render_macro(con, "suppression_cells", _relation("micro"), dims, value=value, holding=holding,
                             hierarchy=hierarchy)
    run_sql(con, f"create table {prefix}cells as {cells_sql}")
    primary_sql = render_macro(con, "suppression_primary", _relation(f"{prefix}cells"), list(rules), preset=preset)
    run_sql(con, f"create table {prefix}primary_cells as {primary_sql}")
    relations_sql = render_macro(con, "suppression_constraints", _relation(f"{prefix}cells"), dims,
                                 hierarchy=hierarchy)
    run_sql(con, f"create table {prefix}relations as {relations_sql}")
    order = ", ".join(quote(d) for d in dims)
    rows = con.execute(f"select * from {prefix}primary_cells order by {order}").fetchall()
    names = [d[0] for d in con.description]
    cells = [dict(zip(names, row)) for row in rows]
    members = con.execute(
        f"select constraint_id, {order}, coefficient from {prefix}relations order by constraint_id"
    ).fetchall()
    return cells, group_relations(members, [tuple(c[d] for d in dims) for c in cells], dims)


def _relation(name: str) -> Relation:
    return Relation("memory", "main", name)


def _hierarchy_table(con, hierarchy) -> Relation | None:
    """The hierarchy (a file or a DataFrame) as the table sdc_hierarchies, or None without one."""
    if hierarchy is None:
        return None
    create_hierarchy_table(con, "sdc_hierarchies", hierarchy_rows(hierarchy))
    return _relation("sdc_hierarchies")


def _number(x) -> str:
    if x is None:
        return ""
    x = float(x)
    if np.isinf(x):
        return "inf"
    # float sums and LP optima carry noise, but a cent of 47387443.45 is no noise: relative to the value only
    # as far as float64 noise goes
    if abs(x - round(x)) <= max(AUDIT_TOLERANCE, FLOAT_NOISE * abs(x)):
        return str(int(round(x)))
    return f"{x:.6f}".rstrip("0").rstrip(".")


def audit_cells_file(cells_path, hierarchy_path=None) -> tuple[bool, list[str]]:
    """Re-check a cell table written by `sdc suppress --audit` (or made elsewhere in that layout: dimension
    columns, then freq, optionally value, status, and optionally protection_lower/protection_upper). Count
    tables and magnitude tables of whole numbers get the integer check too.
    Returns (passed, report lines); passed is True with a skipped integer check (a warning in the last line)."""
    cells_path = Path(cells_path)
    rows, dims, value_column = _read_cells_file(cells_path)
    hierarchy = read_hierarchy(hierarchy_path) if hierarchy_path else []
    # without a hierarchy every code's total is Total: a table made with one needs it here too (trial D11)
    hint = "" if hierarchy_path else (
        "; a table with a hierarchy (as sdc suppress --hierarchy made it) is audited with the same file: "
        "give it as --hierarchy FILE")
    _check_totals(rows, dims, hierarchy, cells_path, hint)
    relations = _relations_for(rows, dims, hierarchy_path)
    values = _numbers(rows, value_column, dims, cells_path)
    _check_file_additive(rows, dims, values, relations, cells_path, hint)
    # the audit checks what is published: a suppressed cell whose published text is a number is published
    shown = np.array([r["status"] in ("primary", "secondary") and _is_number(r.get("published_text")) for r in rows])
    suppressed = np.array([r["status"] in ("primary", "secondary") for r in rows]) & ~shown
    sensitive = np.array([r["status"] == "primary" for r in rows])
    lpl, upl = _protection_levels(rows, dims, sensitive, cells_path)
    disclosed = [_where(rows[k], dims) for k in np.flatnonzero(shown & sensitive)]
    magnitude = value_column == "value"
    freq = _numbers(rows, "freq", dims, cells_path)
    result = audit_pattern(values, suppressed, relations, sensitive=sensitive & suppressed, protection_lower=lpl,
                           protection_upper=upl, lower=a_priori_lower(values, freq, magnitude=magnitude),
                           upper=default_upper(values), integer=is_integer_table(values, magnitude=magnitude))
    lines = [_interval_line(iv, rows, dims) for iv in result.intervals]
    lines += [f"{cell}: sensitive, but its published text shows a number  NOT PROTECTED" for cell in disclosed]
    passed = result.passed and not disclosed
    lines.append(_audit_verdict(result, passed, len(disclosed), int(sensitive.sum()), int(suppressed.sum())))
    return passed, lines


def _read_cells_file(cells_path: Path) -> tuple[list[dict], list[str], str]:
    """(rows, dimension columns, the value column) of a cells file in the audit layout, checked."""
    rows = read_csv_rows(cells_path, "cells file")
    if not rows:
        raise SdcError(f"{cells_path}: no cells")
    header = list(rows[0])
    if "freq" not in header and "published_text" in header:
        raise SdcError(f"{cells_path} holds the publishable columns only (no freq or value of the suppressed cells); "
                       "sdc audit needs the audit layout: run sdc suppress with --audit and audit that file")
    for required in ("freq", "status"):
        if required not in header:
            raise SdcError(f"{cells_path}: column {required!r} is missing")
    dims = header[: header.index("freq")]
    if not dims:
        raise SdcError(f"{cells_path}: the dimension columns must come before 'freq'")
    statuses = {r["status"] for r in rows} - set(STATUSES)
    if statuses:
        raise SdcError(f"{cells_path}: unknown status {sorted(statuses)[0]!r}")
    keys = [tuple(r[d] for d in dims) for r in rows]
    if len(set(keys)) != len(keys):
        duplicate = next(k for k in keys if keys.count(k) > 1)
        raise SdcError(f"{cells_path}: duplicate cell {dict(zip(dims, duplicate))}")
    return rows, dims, "value" if "value" in header else "freq"


def _where(row: dict, dims) -> str:
    return ", ".join(f"{d}={row[d]}" for d in dims)


def _check_file_additive(rows, dims, values, relations, cells_path, hint: str) -> None:
    """Name the cell whose total is not the sum of its children."""
    for relation in relations:
        residual = sum(coefficient * values[cell] for cell, coefficient in relation)
        if abs(residual) > 1e-6 * max(1.0, np.abs(values).max()):
            parent = next(cell for cell, coefficient in relation if coefficient > 0)
            raise SdcError(f"{cells_path}: cell {_where(rows[parent], dims)} is {_number(values[parent])} but its "
                           f"children sum to {_number(values[parent] - residual)}; the table is not additive{hint}")


def _protection_levels(rows, dims, sensitive, cells_path) -> tuple[np.ndarray, np.ndarray]:
    """protection_lower/upper of a cells file: its columns, or 1 for a sensitive cell where it has none."""
    default = np.where(sensitive, 1.0, 0.0)
    levels = [_numbers(rows, name, dims, cells_path) if name in rows[0] else default
              for name in ("protection_lower", "protection_upper")]
    for level, name in zip(levels, ("protection_lower", "protection_upper")):
        if (level < 0).any():
            k = int(np.argmax(level < 0))
            raise SdcError(f"{cells_path}: column {name!r} of cell {_where(rows[k], dims)} is {_number(level[k])}; "
                           "protection levels are distances, at least 0")
    return levels[0], levels[1]


def _interval_line(iv, rows, dims) -> str:
    """One line of the audit report: a suppressed cell, its feasible and required interval, the verdict."""
    verdict = "" if not iv.sensitive else ("  protected" if iv.protected else "  NOT PROTECTED")
    if iv.integer_failed:  # the LP interval covers the requirement, the integer values do not
        ends = [f"as a whole number at least {_number(iv.integer_lower)}"] if iv.integer_lower > iv.required_lower + \
            AUDIT_TOLERANCE else []
        ends += [f"as a whole number at most {_number(iv.integer_upper)}"] if iv.integer_upper < iv.required_upper - \
            AUDIT_TOLERANCE else []
        verdict = ", " + " and ".join(ends) + verdict
    elif iv.sensitive and iv.protected and iv.integer_skipped:
        verdict = f"  protected in the LP; integer check skipped: {iv.integer_skipped}"
    return (f"{_where(rows[iv.cell], dims)}: {_number(iv.value)} in [{_number(iv.feasible_lower)}, "
            f"{_number(iv.feasible_upper)}], required [{_number(iv.required_lower)}, {_number(iv.required_upper)}]{verdict}")


def _audit_verdict(result: AuditResult, passed: bool, disclosed: int, sensitive: int, suppressed: int) -> str:
    # a skipped integer check is a warning (exit 0), but never a plain "passed"
    verdict = "FAILED" if not passed else (f"passed the LP audit only (integer check skipped for "
                                           f"{len(result.unchecked)} cells)" if result.unchecked else "passed")
    return (f"audit {verdict}: {sensitive} sensitive cells, {suppressed} suppressed, "
            f"{len(result.failures) + disclosed} not protected")


def _is_number(text) -> bool:
    """Whether a published text shows a number (not a mark such as x, not an interval such as 3-8)."""
    try:
        return np.isfinite(float((text or "").strip()))
    except ValueError:
        return False


def _numbers(rows, column, dims, cells_path) -> np.ndarray:
    """A numeric column of a cells file; an empty or non-numeric field is an error naming the cell."""
    out = np.empty(len(rows))
    for k, r in enumerate(rows):
        text = (r[column] or "").strip()
        try:
            out[k] = float(text)
        except ValueError:
            out[k] = np.nan
        if not np.isfinite(out[k]):
            where = ", ".join(f"{d}={r[d]}" for d in dims)
            raise SdcError(f"{cells_path}: column {column!r} of cell {where} is {text!r}, not a number")
    return out


def _check_totals(rows, dims, hierarchy, cells_path, hint: str = "") -> None:
    """Every cell's parent along every dimension must be a row of the file (else the relations the
    audit relies on are incomplete): name the first missing one."""
    parents = {d: {code: parent for dim, code, parent in hierarchy if dim == d and parent} for d in dims}
    roots = {d: next((code for dim, code, parent in hierarchy if dim == d and not parent), TOTAL_LABEL) for d in dims}
    present = {tuple(r[d] for d in dims) for r in rows}
    for r in rows:
        for k, d in enumerate(dims):
            code = r[d]
            if code == roots[d]:
                continue
            key = tuple(r[x] for x in dims)
            parent_key = key[:k] + (parents[d].get(code, roots[d]),) + key[k + 1:]
            if parent_key not in present:
                raise SdcError(f"{cells_path}: cell {dict(zip(dims, parent_key))} is missing: it is the total of "
                               f"{dict(zip(dims, key))} along {d!r}, and every total must be a row of the table{hint}")


def _relations_for(rows, dims, hierarchy_path):
    """The additivity relations of a cell file, from the same macro as `sdc suppress`."""
    with private_connection("audit") as con:
        con.execute("create table cells (" + ", ".join(f"{quote(d)} varchar" for d in dims) + ")")
        con.executemany(f"insert into cells values ({', '.join('?' for _ in dims)})", [[r[d] for d in dims] for r in rows])
        hierarchy = _hierarchy_table(con, hierarchy_path)
        relations_sql = render_macro(con, "suppression_constraints", _relation("cells"), dims, hierarchy=hierarchy)
        order = ", ".join(quote(d) for d in dims)
        members = run_sql(con, f"select constraint_id, {order}, coefficient from ({relations_sql}) as relations "
                               "order by 1").fetchall()
    return group_relations(members, [tuple(r[d] for d in dims) for r in rows], dims)
