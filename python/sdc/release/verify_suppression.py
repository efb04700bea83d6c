"""A published suppression table checked against sdc's own recomputation (release/verify.py for the CKM).

``suppression_published`` reads a pattern (a dbt Python model's ``suppression_pattern``, or ``sdc suppress
--target``); neither the pattern nor its status column is trusted. The pattern's primary table
(``suppression_primary`` over ``suppression_cells``, whose calls those macros write into their step header)
is computed again from the microdata, and the published relation must:

* hold exactly the recomputed cells;
* show each published value equal to the cell's original (counts exactly, magnitudes to 1e-9 relative);
* suppress every cell the recomputed primary rules flag;
* pass the audit (LP, and in integers where the values are whole numbers) of what it publishes: no suppressed
  sensitive cell can be narrowed below its protection interval from the published cells and the table's
  additivity;
* describe each dimension's codes (d__level, d__is_total, d__parent, d__sort) as sdc's macro does from the
  hierarchy of the suppression_cells call.
"""

from __future__ import annotations

import numpy as np

from sdc.warehouse.dimension_names import dimension_column
from sdc.warehouse.macro_renderer import Relation, render_macro, sql_errors
from sdc.quoting import quote_identifier as q
from sdc.release.gate import Rel
from sdc.suppression.audit import a_priori_lower, audit_pattern, default_upper
from sdc.suppression.problem import group_relations, is_integer_table
from sdc.release.verified import RELATIVE_TOLERANCE, Verified, refuse


def verify_suppression_published(verifier, rel: Rel, record: dict, path: list[str]) -> Verified:
    call = record.get("call")
    if not isinstance(call, dict) or not isinstance(call.get("dims"), list):
        raise refuse(path, "is the output of suppression_published, but its build record holds no call that sdc can "
                           "check: run dbt build (with this sdc)")
    dims, value = [str(d) for d in call["dims"]], str(call.get("value") or "value")
    (pattern,) = verifier._reads(rel, record, path, 1)
    primary = _primary_of(verifier, pattern, path + [pattern.label], dims)
    primary_record = verifier.wh.record(primary) or {}
    (cells,) = verifier._reads(primary, primary_record, path + [pattern.label, primary.label], 1)
    cells_record = verifier.wh.record(cells) or {}
    cells_call = cells_record.get("call")
    here = path + [pattern.label, primary.label, cells.label]
    if cells_record.get("step") != "suppression_cells" or not isinstance(cells_call, dict):
        raise refuse(here, "is read by suppression_primary, but its build record names no suppression_cells call "
                           "that sdc can compute again: run dbt build (with this sdc)")
    (records,) = verifier._reads(cells, cells_record, here, 1)
    microdata = verifier.microdata(records, here + [records.label])
    hierarchy = cells_call.get("hierarchy")
    hierarchy = verifier._relation(verifier.reference(hierarchy, here, "hierarchy")) if hierarchy else None
    rules_call = primary_record.get("call") or {}
    con = verifier.con
    with sql_errors():
        cells_sql = render_macro(con, "suppression_cells", microdata, cells_call["dims"], value=cells_call.get("value"),
                                 holding=cells_call.get("holding"), hierarchy=hierarchy,
                                 totals=cells_call.get("totals", "cube"), top_n=cells_call.get("top_n", 3),
                                 vars=cells_call.get("settings") or {}, database=verifier.wh.database)
        recomputed_cells = verifier._temp("cells")
        con.execute(f"create temp table {recomputed_cells} as {cells_sql}")
        cells_relation = Relation("temp", "main", recomputed_cells)
        primary_sql = render_macro(con, "suppression_primary", cells_relation, rules_call.get("rules") or [],
                                   preset=rules_call.get("preset", "handbook"), database=verifier.wh.database)
        recomputed = verifier._temp("primary")
        con.execute(f"create temp table {recomputed} as {primary_sql}")
        relations_sql = render_macro(con, "suppression_constraints", cells_relation, cells_call["dims"],
                                     hierarchy=hierarchy, database=verifier.wh.database)
        members = con.execute(f"select constraint_id, {', '.join(q(d) for d in cells_call['dims'])}, coefficient "
                              f"from ({relations_sql}) order by constraint_id").fetchall()
    if [d.lower() for d in dims] != [str(d).lower() for d in cells_call["dims"]]:
        raise refuse(path, f"publishes the dimensions {', '.join(dims)}, but its cells were made over "
                           f"{', '.join(cells_call['dims'])}")
    rows = _joined(verifier, rel, recomputed, dims, value, path)
    _audit_published(rows, dims, value, members, path)
    # the published cells are now those sdc computes: with the columns that describe their codes, computed from
    # the hierarchy of the cells' call, they must be the relation, column by column
    published = f"select {', '.join(q(c) for c in dims + [value, 'published_text'])} from {verifier.wh_name(rel)}"
    verifier._compare(rel, verifier.with_dimension_columns(published, call, cells_call, here), path,
                      f"suppression_published of {', '.join(dims)} (its dimension columns computed by sdc)")
    return Verified(rel, "suppression", verifier.wh_name(rel), audit=recomputed, source=str(microdata),
                    call={"cells": cells_call, "rules": rules_call, "value": value}, step_of=primary,
                    roots=verifier.roots[records.key], lineage=verifier.lineage.get(records.key))


def _audit_published(rows: list[dict], dims: list[str], value: str, members, path: list[str]) -> None:
    """The LP (and integer) audit of the pattern as published, over the cells sdc computed again: refused unless
    every primary cell keeps its protection interval."""
    _check_cells(rows, dims, value, path)
    magnitude = value != "freq"
    values = np.array([float(r["original"]) for r in rows])
    freq = np.array([float(r["freq"]) for r in rows])
    suppressed = np.array([r["published"] is None for r in rows])
    sensitive = np.array([r["status"] == "primary" for r in rows])
    keys = [tuple(r[d] for d in dims) for r in rows]
    result = audit_pattern(values, suppressed, group_relations(members, keys, dims), sensitive=sensitive,
                           protection_lower=[float(r["protection_lower"] or 0) for r in rows],
                           protection_upper=[float(r["protection_upper"] or 0) for r in rows],
                           lower=a_priori_lower(values, freq, magnitude=magnitude), upper=default_upper(values),
                           integer=is_integer_table(values, magnitude))
    if not result.passed:
        failed = result.failures[0]
        cell = ", ".join(f"{d}={v!r}" for d, v in zip(dims, keys[failed.cell]))
        raise refuse(path, f"does not protect the cell ({cell}): from the published cells and the table's additivity "
                           f"it lies within [{failed.feasible_lower:.6g}, {failed.feasible_upper:.6g}], closer than its "
                           "protection interval; the pattern is not the one sdc's secondary suppression made, or the "
                           "table was changed after it")


def _primary_of(verifier, pattern: Rel, path: list[str], dims: list[str]) -> Rel:
    """The suppression_primary relation a pattern was solved from: named in the record sdc suppress --target
    writes, else the dbt parent whose build record names that step; a pattern of linked tables reads every
    table's, and is solved from the one over the published dimensions."""
    record = verifier.wh.record(pattern) or {}
    candidates = []
    if isinstance(record.get("cells"), str):
        candidates.append(verifier._named(record["cells"], path, "cell table"))
    candidates += _parents(verifier, pattern)
    primaries = [rel for rel in candidates if (verifier.wh.record(rel) or {}).get("step") == "suppression_primary"]
    if len(primaries) > 1:
        primaries = [rel for rel in primaries if _cells_dims(verifier, rel) == [d.lower() for d in dims]] or primaries
    if primaries:
        return primaries[0]
    raise refuse(path, "is read by suppression_published, but no suppression_primary table that it was solved from "
                       "can be found (a pattern of one's own is no suppression step): solve it with sdc's "
                       "suppression_pattern or sdc suppress --target")


def _cells_dims(verifier, primary: Rel) -> list[str]:
    """The dimensions of the suppression_cells call a suppression_primary relation reads (lower case)."""
    for rel in _parents(verifier, primary):
        call = (verifier.wh.record(rel) or {}).get("call")
        if isinstance(call, dict) and isinstance(call.get("dims"), list):
            return [str(d).lower() for d in call["dims"]]
    return []


def _parents(verifier, rel: Rel) -> list[Rel]:
    """The warehouse relations of the dbt parents of ``rel``."""
    node = verifier.wh.node(rel) or {}
    nodes = verifier.manifest.get("nodes") or {}
    found = []
    for parent in (node.get("depends_on") or {}).get("nodes") or []:
        parent_node = nodes.get(parent) or {}
        name = str(parent_node.get("alias") or parent_node.get("name"))
        relation = verifier.wh.find(parent_node.get("database"), parent_node.get("schema"), name)
        if relation is not None:
            found.append(relation)
    return found


def _joined(verifier, rel: Rel, recomputed: str, dims: list[str], value: str, path: list[str]) -> list[dict]:
    """Every recomputed cell beside what ``rel`` publishes of it; a cell on one side only is refused."""
    have = {c.lower(): c for c in verifier._columns(verifier.wh_name(rel)) if not dimension_column(c)}
    want = [d.lower() for d in dims] + [value.lower(), "published_text"]
    if sorted(have) != sorted(want):
        raise refuse(path, f"has the columns {', '.join(have.values())}, but suppression_published of "
                           f"{', '.join(dims)} gives {', '.join(dims + [value, 'published_text'])}")
    on = " and ".join(f"cast(p.{q(d)} as varchar) is not distinct from cast(c.{q(d)} as varchar)" for d in dims)
    original = "freq" if value == "freq" else "value"
    cursor = verifier.con.execute(
        f"select {', '.join(f'coalesce(cast(c.{q(d)} as varchar), cast(p.{q(d)} as varchar)) as {q(d)}' for d in dims)}, "
        f"p.sdc_present is not null as in_published, c.sdc_present is not null as in_recomputed, "
        f"p.{q(value)} as published, c.{q(original)} as original, c.freq, c.status, c.protection_lower, "
        f"c.protection_upper from (select *, true as sdc_present from {verifier.wh_name(rel)}) as p "
        f"full join (select *, true as sdc_present from {recomputed}) as c on {on} "
        f"order by {', '.join(str(k + 1) for k in range(len(dims)))}")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def _check_cells(rows: list[dict], dims: list[str], value: str, path: list[str]) -> None:
    for r in rows:
        cell = ", ".join(f"{d}={r[d]!r}" for d in dims)
        if not r["in_published"]:
            raise refuse(path, f"lacks the cell ({cell}) that sdc's recomputation of its cells gives")
        if not r["in_recomputed"]:
            raise refuse(path, f"holds the cell ({cell}), which sdc's recomputation of its cells does not give")
        if r["status"] == "primary" and r["published"] is not None:
            raise refuse(path, f"publishes {r['published']!r} in the cell ({cell}), which the primary rules "
                               "flag as unsafe: it must be suppressed")
        if r["published"] is not None:
            published, original = float(r["published"]), float(r["original"])
            if abs(published - original) > RELATIVE_TOLERANCE * max(1.0, abs(original)):
                raise refuse(path, f"publishes {r['published']!r} in the cell ({cell}), where sdc's recomputation "
                                   f"from the microdata gives {r['original']!r} (column {value})")

