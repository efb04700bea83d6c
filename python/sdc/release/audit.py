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
* **a count in disguise** (R4-8): a ckm_sum of a column with at most two values other than 0 (a constant, an
  indicator, a constant but for some records), or whose values other than 0 lie within a factor 1 + 1/(js + 1);
* **codes that records reveal**: a code of a flat dimension that fewer records hold than the count ptable ever
  publishes (1..js; in a magnitude table one record too): the frame lists it because records hold it;
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
from sdc.release.verified import Verified, variable_name
from sdc.release.verify import Verifier

# a magnitude published by CKM and by suppression is "the same" within this relative difference of the originals
MAGNITUDE_NEAR: float = 0.01
# a ckm_sum of a column with at most this many values other than 0 sums counts (_check_counts_in_disguise)
COUNT_VALUES: int = 2


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
    _check_published_seeds(verifier, verified)
    hidden = _hidden_counts(verifier)  # js of the release's count ptables
    # in each table's own microdata, before it is read as another's
    _check_counts_in_disguise(verifier, verified, hidden)
    _check_codes(verifier, verified, hidden)
    populations = read_by_records(verifier, verified)
    verified = populations.items
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
                       "suppressed": sum(c.published is None for c in found), "roots": sorted(item.roots)})
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
        variable = variable_name(item, item.call.get("value") or item.call.get("weight"))
        return _ckm_cells(verifier, item, "magnitude", variable, f"original_{measure}", measure)
    dims = item.call["cells"]["dims"]
    value = item.call["value"]
    original = "freq" if value == "freq" else "value"
    on = " and ".join(f"cast(p.{q(d)} as varchar) is not distinct from cast(c.{q(d)} as varchar)" for d in dims)
    rows = verifier.con.execute(
        f"select {', '.join(f'cast(c.{q(d)} as varchar)' for d in dims)}, c.{q(original)}, p.{q(value)} "
        f"from {item.audit} as c join {item.content} as p on {on}").fetchall()
    column = item.call["cells"].get("value")
    variable = "count" if value == "freq" or not column else variable_name(item, column)
    return _as_cells(verifier, item, dims, rows, "suppression", population_of(item), variable,
                     item.call["cells"].get("settings") or {}, item.call["cells"].get("hierarchy"))


def _weighted_counts(verifier: Verifier, item: Verified) -> list[Cell]:
    """The weighted counts of a ckm_count(weight=) as magnitude cells of its weight column: a suppression table of
    that column's sums beside them would publish their originals. Not for the zeros (a count the threshold hides
    hides its weighted count too, as an empty cell's)."""
    weight = (item.call or {}).get("weight") if item.kind == "ckm_count" and item.audit is not None else None
    if not weight:
        return []
    return _ckm_cells(verifier, item, "magnitude", variable_name(item, weight), "original_weighted_count",
                      "weighted_count")


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


def _check_published_seeds(verifier: Verifier, verified: list[Verified]) -> None:
    """A perturbation table is internal (SECURITY.md: readers get D, V and js from the release audit): a seed that a
    CKM step of the release uses as its ptable is not published (red team, issue 48)."""
    seeds = {v.rel.key: v for v in verified if v.kind == "seed"}
    if not seeds:
        return
    for item in verified:
        for argument in ("ptable", "nums_ptable"):
            name = (item.call or {}).get(argument) if item.kind in ("ckm_count", "ckm_sum") else None
            if not name:
                continue
            rel = verifier._named(name, [item.rel.label], argument)
            if rel.key in seeds:
                raise SdcError(f"{rel.label} is the perturbation table of {item.rel.label} ({argument}=) and is tagged "
                               "sdc_publish: its rows are internal (readers get its D, V and js in the release audit); "
                               "take it out of the tag")


def _check_counts_in_disguise(verifier: Verifier, verified: list[Verified], hidden: int) -> None:
    """A ckm_sum of a column with at most two values other than 0 over its records (a constant, an indicator,
    a constant but for a few records), or whose values other than 0 are all within a factor 1 + 1/(js + 1) of
    each other (ones plus a millionth of the id), sums counts: a cell's sum tells how many records it holds, at
    least up to js + 1, and the magnitude method's noise, scaled to the cell's largest contribution, is a second
    noise of counts the count tables perturb (red team R4-8, and its variants of issue 48): refused. Read in the
    table's own microdata, whatever population it is read as."""
    spread = 1 + 1 / (hidden + 1)
    for item in verified:
        if item.kind != "ckm_sum" or item.audit is None:
            continue
        column = item.call.get("value") or item.call.get("weight")
        if not column:
            continue
        fact = item.call.get("fact")
        nonzero = f"from {item.source} where {q(column)} <> 0" + (f" and {q(fact)} <> 0" if fact else "")
        values = [v for (v,) in verifier.con.execute(
            f"select distinct cast({q(column)} as double) as v {nonzero} order by 1 limit {COUNT_VALUES + 1}"
        ).fetchall()]
        low, high = verifier.con.execute(
            f"select min(abs(cast({q(column)} as double))), max(abs(cast({q(column)} as double))) {nonzero}").fetchone()
        if values and len(values) <= COUNT_VALUES:
            shown = f"{' and '.join(f'{v:g}' for v in values)} (or 0) in every record"
        elif low and high < spread * low:
            shown = f"between {low:.10g} and {high:.10g} (or 0) in every record, within a factor {spread:.3g},"
        else:
            continue
        raise SdcError(
            f"{item.rel.label} is a ckm_sum of {column}, which is {shown} of its microdata: its sums are counts "
            "(times those values), perturbed by the magnitude method's noise, which is scaled to the cell's largest "
            "contribution: beside the count tables' noise a second one. Publish counts with ckm_count (fact= for an "
            "indicator, weight= for weighted counts)")


def _check_codes(verifier: Verifier, verified: list[Verified], hidden: int) -> None:
    """A CKM table's frame holds the codes of a flat dimension that its records hold (ckm_count: the values
    observed in the data), so a code tells that records hold it. A code that 1 to js records hold tells what the
    count ptable never publishes (counts 1..js), and a code computed per record (an id with an income) publishes
    the record (red team, issue 48): refused in count tables, and in magnitude tables a code of one record too.
    A dimension with a hierarchy takes its codes from the hierarchy's leaves, whatever records hold them. ``hidden``:
    js of the release's count ptables (_hidden_counts)."""
    for item in verified:
        if item.kind not in ("ckm_count", "ckm_sum") or item.audit is None:
            continue
        least = hidden + 1 if item.kind == "ckm_count" else max(hidden + 1, 2)
        if least <= 1:
            continue
        hierarchical = _hierarchy_dimensions(verifier, item.call.get("hierarchy"))
        for dim in (str(d) for d in item.call["dims"] if str(d).lower() not in hierarchical):
            rare = [(code, n) for code, n in _code_counts(verifier, item.source, dim) if n < least][:3]
            if rare:
                shown = ", ".join(f"{code!r} ({n} record{'s' if n > 1 else ''})" for code, n in rare)
                raise SdcError(
                    f"{item.rel.label} lists codes of its dimension {dim} that fewer than {least} records of its "
                    f"microdata hold: {shown}. The table's frame holds a flat dimension's codes because records hold "
                    f"them, so such a code tells what the count ptable never publishes (counts 1 to {least - 1}), and "
                    "a code made per record publishes the record. Group rare codes together, or give the dimension "
                    "a code list (hierarchy=, whose leaves are the frame whatever records hold them); nothing was "
                    "published")


def _code_counts(verifier: Verifier, source: str, dim: str) -> list[tuple]:
    """(code, records) of the rarest codes of ``dim`` in ``source``, fewest first (once per microdata and
    dimension: the tables of one source share them)."""
    cache = verifier.__dict__.setdefault("_code_counts", {})
    if (source, dim.lower()) not in cache:
        cache[(source, dim.lower())] = verifier.con.execute(
            f"select cast({q(dim)} as varchar), count(*) from {source} group by 1 order by 2, 1 limit 3").fetchall()
    return cache[(source, dim.lower())]


def _hidden_counts(verifier: Verifier) -> int:
    """js of the release's count ptables: the largest count that none of them publishes as such (1..js)."""
    return max((int(least or 1) - 1 for least in _over_count_ptables(
        verifier, "select min(i + v) from {} where i + v > 0 and p_int_ub > p_int_lb")), default=0)


def _over_count_ptables(verifier: Verifier, sql: str) -> list:
    """``sql`` (its ``{}`` the ptable) over each count ptable the release's CKM tables were recomputed with."""
    found = []
    for item in verifier.verified.values():
        ptable = (item.call or {}).get("ptable") if item.kind == "ckm_count" else None
        if ptable:
            rel = verifier._named(ptable, ["ptable"], "ptable")
            found.append(verifier.con.execute(sql.format(verifier.wh_name(rel))).fetchone()[0])
    return found


def _hierarchy_dimensions(verifier: Verifier, hierarchy) -> set[str]:
    if not hierarchy:
        return set()
    rel = verifier._named(hierarchy, ["hierarchy"], "hierarchy")
    return {str(d).lower() for (d,) in verifier.con.execute(
        f"select distinct dimension from {verifier.wh_name(rel)}").fetchall()}


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
    return max((float(found or 0) for found in _over_count_ptables(verifier, "select max(abs(v)) from {}")),
               default=0.0)
