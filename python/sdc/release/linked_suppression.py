"""Linked suppression tables: the cell-suppression tables of one release that count (or sum) the same microdata
are audited together (reference linked-suppression.md §1, §9).

Each table's pattern passes its own audit (verify_suppression.py), but an attacker holds every table of the
release: a margin that two tables share is one number, so the equations of both tables meet in it. Protected one
table at a time, a pattern can suppress a cell in one table that the other publishes, or leave a primary cell that
the two tables' equations together pin (GaussSuppression's "local" protection in its linked-tables vignette).

Tables are grouped by population: the same microdata relation and the same variable (counts, or the sum of one
column). Within a group, cells of different tables that hold the same records are one unknown. Which records a cell
holds is computed, not read from its codes: the microdata's finest cells over every dimension of the group are
numbered, and a cell is the set of finest cells its codes take in (a total, or a dimension the table does not have,
takes in all; a hierarchy's code, its leaves). So (sex=m, region=Total) of sex x region and (sex=m) of sex x age are
one cell, and so are two codes that hold the same records (a region whose persons all live in one county). Then:

* a cell that one table suppresses and another publishes is refused at once (naming both);
* the tables' additivity equations are stacked over the union of cells and audited (LP, and in integers where the
  values are whole numbers): every primary cell of any table is sensitive, with its largest protection interval;
  a cell is suppressed where no table publishes it. A sensitive cell that the tables together narrow below its
  protection is refused, naming the tables and the cell.

This is the union of the tables' equations (GaussSuppression's "super-consistent" model), not the model over the
microdata's finest cells ("global"); the two agree for tables that share one set of dimensions (region x sex and
region x age), where any consistent margins have a non-negative table of all three variables behind them.
"""

from __future__ import annotations

import numpy as np

from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q
from sdc.release.populations import population_of
from sdc.release.verified import RELATIVE_TOLERANCE, Verified, variable_name
from sdc.release.verify import Verifier
from sdc.suppression.audit import (
    AUDIT_TOLERANCE,
    a_priori_lower,
    audit_pattern,
    default_upper,
)
from sdc.suppression.linked import group_cells
from sdc.suppression.problem import is_integer_table
from sdc.suppression.record_sets import KeyedTable, record_set_keys
from sdc.warehouse.macro_renderer import Relation, render_macro, sql_errors


def audit_linked_suppression(verifier: Verifier, verified: list[Verified]) -> dict:
    """Refuses suppression tables of one population that leak through each other (see the module's text); returns
    the figures for the release audit: per group of linked tables its cells and shared cells."""
    tables = sorted({v.rel.key: v for v in verified if v.kind == "suppression" and v.audit is not None}.values(),
                    key=lambda v: v.rel.key)
    groups: dict[tuple, list[Verified]] = {}
    for item in tables:
        groups.setdefault((population_of(item)[0], _variable(item)), []).append(item)
    for (_, variable), members in groups.items():
        _check_one_expression(members, variable)
    figures = [_audit_group(verifier, members, variable)
               for (_, variable), members in sorted(groups.items()) if len(members) > 1]
    return {"groups": figures, "shared_cells": sum(g["shared_cells"] for g in figures), "passed": True}


def _variable(item: Verified) -> str:
    """What a suppression table's cells hold: 'count', or the loaded columns its summed column reads."""
    column = item.call["cells"].get("value")
    return "count" if item.call["value"] == "freq" or not column else variable_name(item, column)


def _check_one_expression(members: list[Verified], variable: str) -> None:
    """Suppression tables of one population that sum the same loaded columns sum the same values: one table's
    published sums would give another's suppressed ones (income beside 2 x income under another name)."""
    if variable == "count":
        return
    found = {}
    for item in members:
        lineage = (item.lineage or {}).get(str(item.call["cells"]["value"]).lower())
        found.setdefault(lineage.expression if lineage is not None else variable, []).append(item.rel.label)
    if len(found) > 1:
        shown = "; ".join(f"{expression} in {', '.join(labels)}" for expression, labels in found.items())
        raise SdcError(f"suppression tables of one population sum {variable} in different forms ({shown}): the "
                       "published sums of one give the suppressed sums of another, which their joint audit cannot "
                       "follow. Publish one form of a variable per population")


class _Table:
    """One table of a group: its cells (codes as text, in the order of its audit table) and what it shows of them."""

    def __init__(self, verifier: Verifier, item: Verified):
        self.item, self.label = item, item.rel.label
        cells_call = item.call["cells"]
        self.dims = [str(d) for d in cells_call["dims"]]
        self.settings = cells_call.get("settings") or {}
        hierarchy = cells_call.get("hierarchy")
        self.hierarchy = verifier._named(hierarchy, [self.label], "hierarchy") if hierarchy else None
        self.value = item.call["value"]
        original = "freq" if self.value == "freq" else "value"
        on = " and ".join(f"cast(p.{q(d)} as varchar) is not distinct from cast(c.{q(d)} as varchar)"
                          for d in self.dims)
        self.rows = verifier.con.execute(
            f"select {', '.join(f'cast(c.{q(d)} as varchar)' for d in self.dims)}, c.{q(original)}, c.freq, "
            f"c.status, c.protection_lower, c.protection_upper, p.{q(self.value)} "
            f"from {item.audit} as c join {item.content} as p on {on} "
            f"order by {', '.join(str(k + 1) for k in range(len(self.dims)))}").fetchall()
        self.codes = [tuple(r[:len(self.dims)]) for r in self.rows]

    def shown(self, k: int) -> str:
        return ", ".join(f"{d}={c!r}" for d, c in zip(self.dims, self.codes[k]))

    def suppressed(self, k: int) -> bool:
        return self.rows[k][-1] is None

    def primary(self, k: int) -> bool:
        return self.rows[k][-4] == "primary"


def _audit_group(verifier: Verifier, members: list[Verified], variable: str) -> dict:
    tables = [_Table(verifier, item) for item in members]
    labels = [t.label for t in tables]
    named = " and ".join(labels) if len(labels) == 2 else ", ".join(labels[:-1]) + " and " + labels[-1]
    records = ", ".join(sorted(set().union(*(item.roots for item in members)))) or members[0].source

    # every cell of every table as the set of the microdata's finest cells it takes in: one unknown per set
    instances, cell_of = _unknowns(tables, _record_sets(verifier, tables, members[0].source), records, named)
    values, freq, suppressed, sensitive, protection_lower, protection_upper = _joint_cells(tables, instances, records)
    shared = [u for u, cells in enumerate(instances) if len({t for t, _ in cells}) > 1]
    figures = {"tables": labels, "population": records, "variable": variable, "cells": len(instances),
               "shared_cells": len(shared), "shared_suppressed": sum(bool(suppressed[u]) for u in shared),
               "sensitive": int(sensitive.sum()), "audited": False}
    # a primary cell published in the same table under other codes: its own audit stops that; never pass it here
    exposed = np.flatnonzero(sensitive & ~suppressed)
    if exposed.size:
        t, k = next(c for c in instances[exposed[0]] if tables[c[0]].primary(c[1]))
        raise SdcError(f"{tables[t].label} publishes the records of its primary cell ({tables[t].shown(k)}) "
                       f"under other codes; refusing to publish {named}")
    if not figures["shared_suppressed"]:
        # no suppressed cell in two tables: every group of suppressed cells lies in one table, whose audit passed
        return figures

    constraints = _stacked_relations(verifier, tables, cell_of)
    magnitude = variable != "count"
    result = audit_pattern(values, suppressed, constraints, sensitive=sensitive, protection_lower=protection_lower,
                           protection_upper=protection_upper, lower=a_priori_lower(values, freq, magnitude=magnitude),
                           upper=default_upper(values), only=np.flatnonzero(sensitive),
                           integer=is_integer_table(values, magnitude))
    if not result.passed:
        raise _linked_failure(tables, instances, result.failures[0], named, records)
    figures["audited"] = True
    return figures


def _unknowns(tables: list[_Table], keys_by_codes: list[dict], records: str, named: str):
    """One unknown per set of finest cells: (per unknown, the (table, row) of each cell that holds its records;
    per table, row -> unknown)."""
    keys = []
    for table, found in zip(tables, keys_by_codes):
        table_keys = []
        for k, codes in enumerate(table.codes):
            key = found.get(codes)
            if key is None:
                raise SdcError(f"{table.label}: the records of the cell ({table.shown(k)}) cannot be found in the "
                               f"microdata ({records}); refusing to publish it beside {named}")
            table_keys.append(key)
        keys.append(table_keys)
    return group_cells(keys)


def _joint_cells(tables: list[_Table], instances, records: str):
    """Per unknown: value, frequency, suppressed (in every table that holds it), sensitive (primary in one)
    and the largest protection levels asked for it; the tables must agree on its value and status."""
    n = len(instances)
    values, freq = np.zeros(n), np.zeros(n)
    suppressed, sensitive = np.ones(n, bool), np.zeros(n, bool)
    protection_lower, protection_upper = np.zeros(n), np.zeros(n)
    for u, cells in enumerate(instances):
        t0, k0 = cells[0]
        values[u], freq[u] = float(tables[t0].rows[k0][len(tables[t0].dims)] or 0), float(tables[t0].rows[k0][-5] or 0)
        for t, k in cells:
            table, row = tables[t], tables[t].rows[k]
            original = float(row[len(table.dims)] or 0)
            if abs(original - values[u]) > RELATIVE_TOLERANCE * max(1.0, abs(values[u])):
                raise SdcError(f"{tables[t0].label} and {table.label} differ in the cells ({tables[t0].shown(k0)}) "
                               f"and ({table.shown(k)}), which hold the same records of {records} "
                               f"({values[u]:.10g} and {original:.10g}); refusing to publish them together")
            suppressed[u] &= table.suppressed(k)
            if table.primary(k):
                sensitive[u] = True
                protection_lower[u] = max(protection_lower[u], float(row[-3] or 0))
                protection_upper[u] = max(protection_upper[u], float(row[-2] or 0))
        _check_one_status(tables, cells, records)
    return values, freq, suppressed, sensitive, protection_lower, protection_upper


def _linked_failure(tables: list[_Table], instances, failed, named: str, records: str) -> SdcError:
    """The error for a primary cell that the tables' patterns together do not protect."""
    cells = [c for c in instances[failed.cell] if tables[c[0]].primary(c[1])] or instances[failed.cell]
    t, k = cells[0]
    also = [f"({tables[o].shown(j)}) of {tables[o].label}" for o, j in instances[failed.cell] if o != t]
    integer = " in whole numbers" if failed.lp_protected else ""
    low, high = failed.feasible_lower, failed.feasible_upper
    if failed.lp_protected:  # the LP protects it, whole numbers do not
        low = low if failed.integer_lower is None else failed.integer_lower
        high = high if failed.integer_upper is None else failed.integer_upper
    return SdcError(
        f"{named}, cell-suppression tables of the same records ({records}), do not protect the primary cell "
        f"({tables[t].shown(k)}) of {tables[t].label}" + (f", also {', '.join(also)}," if also else "") +
        f" together: from the cells they publish and the additivity of each it lies within [{low:.6g}, "
        f"{high:.6g}]{integer}, closer than its protection interval, though each table alone protects it. "
        "Protect the tables with one pattern, or publish one of them")


def _check_one_status(tables: list[_Table], cells: list[tuple[int, int]], records: str) -> None:
    """A cell that one table suppresses and another publishes is published (tau-Argus: common cells have one
    status in all linked tables)."""
    hidden = [(t, k) for t, k in cells if tables[t].suppressed(k)]
    shown = [(t, k) for t, k in cells if not tables[t].suppressed(k)]
    for t, k in hidden:
        for o, j in shown:
            if o == t:
                continue  # one table's own cells: its own audit covers them
            raise SdcError(
                f"{tables[t].label} suppresses the cell ({tables[t].shown(k)}), and {tables[o].label} publishes "
                f"{tables[o].rows[j][-1]!r} for the cell ({tables[o].shown(j)}), which holds the same records of "
                f"{records}: published together, the suppression is undone. A cell that two tables share needs "
                "one status in both: protect the tables with one pattern, or publish one of them")


def _record_sets(verifier: Verifier, tables: list[_Table], source: str) -> list[dict]:
    """Per table: its cells' codes -> (the md5 of its finest cells' numbers, their count) (record_sets.py)."""
    keyed = [KeyedTable(table.dims, verifier.wh_name(table.hierarchy) if table.hierarchy is not None else None,
                        str(table.settings.get("sdc_total_label") or "Total")) for table in tables]
    with sql_errors():
        return record_set_keys(verifier.con, source, keyed, finest=verifier._temp("linked_finest"))


def _stacked_relations(verifier: Verifier, tables: list[_Table], cell_of: list[list[int]]) -> list:
    """Every table's additivity relations (suppression_constraints over its recomputed cells) over the unknowns."""
    relations = []
    for table, mapped in zip(tables, cell_of):
        index = {codes: k for k, codes in enumerate(table.codes)}
        hierarchy = verifier._relation(table.hierarchy) if table.hierarchy is not None else None
        with sql_errors():
            sql = render_macro(verifier.con, "suppression_constraints", Relation("temp", "main", table.item.audit),
                               table.dims, hierarchy=hierarchy, database=verifier.wh.database)
            members = verifier.con.execute(
                f"select constraint_id, {', '.join(f'cast({q(d)} as varchar)' for d in table.dims)}, coefficient "
                f"from ({sql}) order by constraint_id").fetchall()
        grouped: dict[str, dict[int, float]] = {}
        for constraint_id, *codes, coefficient in members:
            terms = grouped.setdefault(constraint_id, {})
            u = mapped[index[tuple(codes)]]
            terms[u] = terms.get(u, 0.0) + float(coefficient)  # two codes of one table that hold the same records
        relations += [[(u, c) for u, c in terms.items() if abs(c) > AUDIT_TOLERANCE] for terms in grouped.values()]
    return [r for r in relations if r]
