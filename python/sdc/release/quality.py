"""Quality figures of every verified table of a release, for the release record and its report.

After verification (release/verify.py) sdc holds, for each CKM table, its own recomputation with the original
beside the published value, and for each suppression table the cells with their status. The figures are those of
the package's quality macros (``ckm_quality`` for counts, ``ckm_sum_quality`` for magnitudes: one definition for
dbt models, the CLI and the report), rendered over that recomputation, plus the distribution of the relative
deviations |p - o| / o as a histogram (cells whose original is not 0). A suppression table gets the numbers of
its cells by status.
"""

from __future__ import annotations

from sdc.warehouse.macro_renderer import Relation, render_macro
from sdc.quoting import quote_identifier as q
from sdc.release.verified import Verified
from sdc.release.verify import Verifier

# upper bounds of the histogram's bins of relative deviations (the last bin is everything above 20 %)
DEVIATION_BINS: tuple[float, ...] = (0.0, 0.01, 0.02, 0.05, 0.10, 0.20)
# the magnitude measures ckm_sum may publish, each with its original_<measure> audit column
MAGNITUDE_MEASURES: tuple[str, ...] = ("value", "weighted_value", "weighted_count")


def release_quality(verifier: Verifier, verified: list[Verified]) -> dict:
    """{published relation: {method, measures: {measure: figures}}} for the CKM and suppression tables."""
    found = {}
    for item in sorted({v.rel.key: v for v in verified}.values(), key=lambda v: v.rel.key):
        if item.audit is None or item.kind not in ("ckm_count", "ckm_sum", "suppression"):
            continue
        if item.kind == "suppression":
            found[item.rel.label] = {"method": "cell suppression", "cells": _suppression_cells(verifier, item)}
            continue
        columns = [c.lower() for c in verifier._columns(item.audit)]
        measures = {}
        if item.kind == "ckm_count":
            measures["count"] = _figures(verifier, "ckm_quality", item, "original", "count")
        for measure in MAGNITUDE_MEASURES:
            if f"original_{measure}" in columns and measure in columns:
                measures[measure] = _figures(verifier, "ckm_sum_quality", item, f"original_{measure}", measure)
        found[item.rel.label] = {"method": "ckm counts" if item.kind == "ckm_count" else "ckm magnitudes",
                                 "measures": measures}
    return found


def release_ptables(verifier: Verifier, verified: list[Verified]) -> dict:
    """{ptable relation: [[i, j, p, v], ...]} of the count ptables behind the release's CKM count tables, for the
    report's transition plot (a ptable is no secret of the method: the record keys are)."""
    found = {}
    for item in verified:
        if item.kind != "ckm_count" or not (item.call or {}).get("ptable"):
            continue
        ptable = verifier._named(item.call["ptable"], [item.rel.label], "ptable")
        if ptable.label not in found:
            found[ptable.label] = [[int(i), int(j), float(pr), int(v)] for i, j, pr, v in verifier.con.execute(
                f"select i, j, p, v from {verifier.wh_name(ptable)} order by i, j").fetchall()]
    return found


def _figures(verifier: Verifier, macro: str, item: Verified, original: str, published: str) -> dict:
    relation = Relation("temp", "main", item.audit)
    extra = {} if macro == "ckm_quality" else {"measure": published}
    sql = render_macro(verifier.con, macro, relation, item.rel.label, database=verifier.wh.database, **extra)
    cursor = verifier.con.execute(sql)
    names = [d[0] for d in cursor.description]
    row = cursor.fetchone()
    figures = {n: _plain(v) for n, v in zip(names, row) if n not in ("table_name", "measure")}
    figures["relative_deviation_histogram"] = _histogram(verifier, item.audit, original, published)
    return figures


def _histogram(verifier: Verifier, table: str, original: str, published: str) -> list[dict]:
    """Cells by |p - o| / |o| in the bins of DEVIATION_BINS: [{upto, cells}], upto None for the last bin."""
    o, p = f"cast({q(original)} as double)", f"cast({q(published)} as double)"
    cases = " ".join(f"when abs({p} - {o}) / abs({o}) <= {bound} then {i}" for i, bound in enumerate(DEVIATION_BINS))
    rows = dict(verifier.con.execute(
        f"select case {cases} else {len(DEVIATION_BINS)} end as bin, count(*) from {table} "
        f"where {o} <> 0 and {p} is not null group by 1").fetchall())
    bounds = [*DEVIATION_BINS, None]
    return [{"upto": bound, "cells": int(rows.get(i, 0))} for i, bound in enumerate(bounds)]


def _suppression_cells(verifier: Verifier, item: Verified) -> dict:
    """The table's cells by status: published, primary (suppressed by a rule), secondary (to protect those)."""
    dims = item.call["cells"]["dims"]
    value = item.call["value"]
    on = " and ".join(f"cast(p.{q(d)} as varchar) is not distinct from cast(c.{q(d)} as varchar)" for d in dims)
    row = verifier.con.execute(
        f"select count(*), count(*) filter (where p.{q(value)} is null and c.status = 'primary'), "
        f"count(*) filter (where p.{q(value)} is null and c.status <> 'primary') "
        f"from {item.audit} as c join {item.content} as p on {on}").fetchone()
    return {"all": row[0], "primary": row[1], "secondary": row[2], "published": row[0] - row[1] - row[2]}


def _plain(value):
    """A figure as JSON carries it: integers as int, other numbers as float rounded to 6 significant digits."""
    if value is None or isinstance(value, int):
        return value
    return float(f"{float(value):.6g}")
