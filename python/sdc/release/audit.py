"""The release audit: leaks between the verified tables of one release, which no table shows alone.

After verification (release/verify.py) every published cell is known with its original value and the microdata
it covers: the step's input (the population), the loaded tables behind it, and the cell's codes. Populations are
compared by their records, not by relation names (populations.py): a view of the same records (a dimension
renamed, a filter that drops nothing) is read as the population it copies, and a population whose records lie
inside another's is known as such. A cell is named by its population and its codes off the totals, so the cell
(sex=w, region=AK) of a 2-D table and the cell (sex=w, region=AK, age=Total) of a 3-D table over the same
population are one cell. Refused:

* **zeros** (red team R3-3, R4-10, R4-11, R4-13): a CKM count published as 0, or as NULL below a threshold, for a
  cell with records must not be told from an empty cell by another table whose population lies inside its own
  (the same records under any name, or some of them): a magnitude published not 0, a suppression mark, or a row
  of a count table that lists only cells with records (complete=false, whose own listed zeros are refused too);
* **two methods over (nearly) the same records** (R3-4): a CKM cell and a cell-suppression cell of the same
  loaded table, the same codes and the same variable (counts with frequencies, a magnitude with the
  suppression value of the same column, ckm_count's weighted count with the suppression value of its weight
  column) over the same or nearly the same records (_check_two_methods): the suppression table would publish the
  original the CKM perturbs, or the CKM a value for a cell suppression hides. Populations that differ by a few
  records (one record left out, a rounded variable) are caught, where the release gate's old check asked for
  equal grand totals (it is gone; macros/grant_published.sql keeps it for PostgreSQL);
* **a count in disguise** (R4-8): a ckm_sum of a column that is one number for every record;
* **linked suppression tables** (linked_suppression.py): suppression tables of one population that share cells,
  audited over the union of their equations;
* **averaging CKM noise** (averaging.py): a count with records that the reader's best linear unbiased estimate
  from all CKM count cells of its population knows to a standard error below the floor.

The result is a JSON-ready dict (per table and per release), kept in the ledger of releases (the office's; readers
get its public part, public_audit.py) and summed up in the command's output.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdc.conventions import MIN_STANDARD_ERROR
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q
from sdc.release.averaging import audit_averaging
from sdc.release.linked_suppression import audit_linked_suppression
from sdc.release.populations import Populations, population_of, read_by_records
from sdc.release.verified import Verified
from sdc.release.verify import Verifier

# a magnitude published by CKM and by suppression is "the same" within this relative difference of the originals
MAGNITUDE_NEAR: float = 0.01


@dataclass(frozen=True)
class Cell:
    table: str
    kind: str  # count, magnitude, suppression
    population: tuple  # (input relation, fact) of the step (populations.population_of)
    roots: frozenset
    variable: str  # "count" or the summed column
    codes: frozenset  # (dimension, code) off the totals
    shown: str  # the cell as the message shows it
    original: float
    published: float | None  # None: suppressed (or NULL)
    listed: bool = False  # a count table that lists only cells with records (complete=false): its rows tell


def audit_release(verifier: Verifier, verified: list[Verified],
                  min_standard_error: float = MIN_STANDARD_ERROR) -> dict:
    """Refuses a release that leaks between its tables (see the module's text); returns the audit's figures."""
    # tables read by their records: a population of the same records as another read as that one (populations.py)
    populations = read_by_records(verifier, verified)
    verified = populations.items
    _check_constant_sums(verifier, verified)
    cells: list[Cell] = []
    weighted: list[Cell] = []  # ckm_count's weighted counts: compared across methods only
    tables = []
    for item in sorted({v.rel.key: v for v in verified}.values(), key=lambda v: v.rel.key):
        found = _cells(verifier, item)
        if found is None:
            continue
        cells += found
        weighted += _weighted_counts(verifier, item)
        tables.append({"table": item.rel.label, "method": _method(item), "cells": len(found),
                       "published_zeros": sum(c.published == 0 for c in found),
                       "suppressed": sum(c.published is None for c in found)})
    # two methods first: for a CKM table beside a suppression table of its population the remedy is one table,
    # which also ends the zeros the suppression marks would tell
    near = _check_two_methods(cells + weighted, verifier)
    _check_listed_zeros(cells)
    _check_zeros(cells, populations)
    # suppression tables of one population, audited over the union of their equations (linked_suppression.py)
    linked = audit_linked_suppression(verifier, verified)
    averaging = audit_averaging(verifier, verified, min_standard_error)
    return {"tables": tables, "checks": {"zeros": "passed", "two_methods": "passed", "averaging": "passed"},
            "cells_compared_across_methods": near, "linked_suppression": linked, "averaging": averaging,
            "read_by_records": populations.merged}


def _method(item: Verified) -> str:
    return {"ckm_count": "ckm counts", "ckm_sum": "ckm magnitudes", "suppression": "cell suppression"}[item.kind]


def _cells(verifier: Verifier, item: Verified) -> list[Cell] | None:
    if item.kind not in ("ckm_count", "ckm_sum", "suppression") or item.audit is None:
        return None
    if item.kind == "ckm_count":
        return _ckm_cells(verifier, item, "count", "count", "original", "count")
    if item.kind == "ckm_sum":
        measure = "value" if item.call.get("value") else "weighted_count"
        return _ckm_cells(verifier, item, "magnitude", str(item.call.get("value") or item.call.get("weight")),
                          f"original_{measure}", measure)
    dims = item.call["cells"]["dims"]
    value = item.call["value"]
    original = "freq" if value == "freq" else "value"
    on = " and ".join(f"cast(p.{q(d)} as varchar) is not distinct from cast(c.{q(d)} as varchar)" for d in dims)
    rows = verifier.con.execute(
        f"select {', '.join(f'cast(c.{q(d)} as varchar)' for d in dims)}, c.{q(original)}, p.{q(value)} "
        f"from {item.audit} as c join {item.content} as p on {on}").fetchall()
    variable = "count" if value == "freq" else item.call["cells"].get("value") or "count"
    return _as_cells(verifier, item, dims, rows, "suppression", (item.source, None), variable,
                     item.call["cells"].get("settings") or {}, item.call["cells"].get("hierarchy"))


def _weighted_counts(verifier: Verifier, item: Verified) -> list[Cell]:
    """The weighted counts of a ckm_count(weight=) as magnitude cells of its weight column: a suppression table of
    that column's sums beside them would publish their originals. Not for the zeros (a count the threshold hides
    hides its weighted count too, as an empty cell's)."""
    weight = (item.call or {}).get("weight") if item.kind == "ckm_count" and item.audit is not None else None
    if not weight:
        return []
    return _ckm_cells(verifier, item, "magnitude", str(weight), "original_weighted_count", "weighted_count")


def _ckm_cells(verifier: Verifier, item: Verified, kind: str, variable: str, original: str, published: str) -> list[Cell]:
    dims = item.call["dims"]
    rows = verifier.con.execute(f"select {', '.join(f'cast({q(d)} as varchar)' for d in dims)}, {q(original)}, "
                                f"{q(published)} from {item.audit}").fetchall()
    listed = kind == "count" and item.call.get("complete") is False
    return _as_cells(verifier, item, dims, rows, kind, population_of(item), variable,
                     item.call.get("settings") or {}, item.call.get("hierarchy"), listed)


def _as_cells(verifier: Verifier, item: Verified, dims: list[str], rows: list[tuple], kind: str, population: tuple,
              variable: str, settings: dict, hierarchy, listed: bool = False) -> list[Cell]:
    """Rows (codes, original, published) as cells, named by their codes off the totals."""
    totals = _total_codes(verifier, settings, hierarchy)
    found = []
    for row in rows:
        codes = frozenset((d.lower(), c) for d, c in zip(dims, row) if c not in totals.get(d.lower(), totals["*"]))
        shown = ", ".join(f"{d}={c!r}" for d, c in (_own_names(item, d, c) for d, c in zip(dims, row)))
        found.append(Cell(item.rel.label, kind, population, item.roots, variable.lower(), codes, shown,
                          float(row[-2] or 0), None if row[-1] is None else float(row[-1]), listed))
    return found


def _own_names(item: Verified, dim: str, code):
    """A cell's dimension and code as its own table names them (a table read as another population's)."""
    own = (item.read_as or {}).get(dim.lower())
    return (dim, code) if own is None else (own[0], own[1].get(code, code))


def _total_codes(verifier: Verifier, settings: dict, hierarchy) -> dict:
    """The codes of totals per dimension: the flat total's label, and each hierarchy's roots."""
    totals = {"*": {str(settings.get("sdc_total_label") or "Total")}}
    if hierarchy:
        rel = verifier._named(hierarchy, ["hierarchy"], "hierarchy")
        for dimension, code in verifier.con.execute(
                f"select dimension, code from {verifier.wh_name(rel)} where parent is null or parent = ''").fetchall():
            totals.setdefault(str(dimension).lower(), set(totals["*"])).add(str(code))
    return totals


def _check_listed_zeros(cells: list[Cell]) -> None:
    """A count table that lists only the cells with records (ckm_count(complete=false)) tells of each listed cell
    that it holds records, so a listed 0 (or NULL below a threshold) is a false zero told apart (red team R4-11)."""
    for cell in cells:
        if cell.listed and cell.original > 0 and (cell.published is None or cell.published == 0):
            shown = "no count (NULL)" if cell.published is None else "the count 0"
            raise SdcError(
                f"the release tells a published zero from an empty cell: {cell.table} lists only cells with records "
                f"(ckm_count(complete=false)) and publishes {shown} for the cell ({cell.shown}), so the reader "
                "learns that the cell holds records. Publish the table with every cell of its frame (complete=true, "
                "the default), where an empty cell is published as 0 too")


def _hidden(cell: Cell) -> bool:
    """A count published as 0 or NULL (below a threshold) for a cell with records: it must look like an empty one."""
    return cell.kind == "count" and cell.original > 0 and (cell.published is None or cell.published == 0)


def _tells(cell: Cell) -> bool:
    """A cell that shows the reader its records exist: a magnitude or suppression table's value not 0, or NULL (a
    suppression mark), or any cell of a count table that lists only cells with records."""
    if cell.kind in ("magnitude", "suppression"):
        return cell.published is None or cell.published != 0
    return cell.listed


def _check_zeros(cells: list[Cell], populations: Populations) -> None:
    """A count published as 0 or NULL for a cell with records, beside a cell of the same codes in a table whose
    population lies inside its own (the same records under any relation name, or some of them) that tells its
    records exist (red team R3-3, R4-10, R4-13)."""
    tellers: dict[frozenset, list[Cell]] = {}
    for cell in cells:
        if _tells(cell):
            tellers.setdefault(cell.codes, []).append(cell)
    for cell in cells:
        if not _hidden(cell):
            continue
        for other in tellers.get(cell.codes, []):
            if other.table == cell.table or not populations.lies_inside(other.population, cell.population):
                continue
            what = "the count 0" if cell.published == 0 else "no count (NULL: below its threshold)"
            shown = ("suppressed" if other.published is None else "a listed cell" if other.listed
                     else f"{other.published:.10g}")
            raise SdcError(
                f"the release tells a published zero from an empty cell: {cell.table} publishes {what} for the cell "
                f"({cell.shown}), and {other.table} publishes {shown} for the same cell ({other.shown}) of "
                f"{'the same records' if other.population == cell.population else 'some of its records'}, which "
                "an empty cell would not have: the reader learns that the cell holds records. Publish the magnitude "
                "of a cell whose count is 0 as 0 (or leave one of the tables out of the release)")


def _check_constant_sums(verifier: Verifier, verified: list[Verified]) -> None:
    """A ckm_sum of a column that is one number over all its records is a count in disguise, perturbed by the
    magnitude method beside the count tables' noise (red team R4-8): refused."""
    for item in verified:
        if item.kind != "ckm_sum" or item.audit is None:
            continue
        column = item.call.get("value") or item.call.get("weight")
        if not column:
            continue
        fact = item.call.get("fact")
        low, high, records = verifier.con.execute(
            f"select min({q(column)}), max({q(column)}), count(*) from {item.source}"
            + (f" where {q(fact)} <> 0" if fact else "")).fetchone()
        if records > 1 and low is not None and low == high and low != 0:
            raise SdcError(
                f"{item.rel.label} is a ckm_sum of {column}, which is {low:g} for every record of its microdata: "
                "its sums are counts times a constant, perturbed by the magnitude method beside the count tables' "
                "noise (a second noise of every count). Publish counts with ckm_count (weight= for weighted counts)")


def _check_two_methods(cells: list[Cell], verifier: Verifier) -> int:
    """A CKM cell and a suppression cell of one loaded table, variable and codes are refused where their record
    sets are the same or nearly so: the whole populations are (their grand totals within the CKM's largest
    noise, or 1 % for magnitudes: one record left out, a rounded variable), or the cell's originals are equal
    (nested populations, e.g. first-year students within all students, have equal counts only where the cell's
    records are the same)."""
    ckm: dict[tuple, list[Cell]] = {}
    for cell in cells:
        if cell.kind in ("count", "magnitude"):
            for root in cell.roots:
                ckm.setdefault((root, cell.variable, cell.codes), []).append(cell)
    totals = {(c.table, c.population, c.variable): c.original for c in cells if not c.codes}
    largest_noise = _largest_count_noise(verifier)

    def near(a: float, b: float, count: bool) -> bool:
        gap = abs(a - b)
        return gap <= largest_noise if count else gap <= MAGNITUDE_NEAR * max(abs(a), abs(b), 1e-12)

    compared = 0
    for cell in cells:
        if cell.kind != "suppression":
            continue
        for root in cell.roots:
            for other in ckm.get((root, cell.variable, cell.codes), []):
                compared += 1
                a, b = (other.table, other.population, other.variable), (cell.table, cell.population, cell.variable)
                whole = a in totals and b in totals and near(totals[a], totals[b], other.kind == "count")
                if not whole and not (cell.original == other.original and cell.original != 0):
                    continue
                why = (f"their populations are nearly the same (grand totals {totals[a]:.10g} and {totals[b]:.10g})"
                       if whole else f"the cell holds the same records in both (original {cell.original:.10g})")
                raise SdcError(
                    f"{other.table} (Cell Key Method) and {cell.table} (cell suppression) both publish the cell "
                    f"({other.shown}) of {root}, and {why}: the suppression table shows the value the CKM perturbs "
                    "(its noise revealed) or the CKM a value for a cell suppression hides. One method per population "
                    "and variable in a release: take one of the tables out of the sdc_publish tag")
    return compared


def _largest_count_noise(verifier: Verifier) -> float:
    """The largest |noise| of the count ptables the release's CKM tables were recomputed with (D)."""
    largest = 0.0
    for item in verifier.verified.values():
        ptable = (item.call or {}).get("ptable") if item.kind == "ckm_count" else None
        if ptable:
            rel = verifier._named(ptable, ["ptable"], "ptable")
            found = verifier.con.execute(f"select max(abs(v)) from {verifier.wh_name(rel)}").fetchone()[0]
            largest = max(largest, float(found or 0))
    return largest
