"""Averaging CKM noise over the tables of a release (issue 33): how well a reader of every published CKM count
of one population can estimate each count, and a floor under it.

The model. A population is the microdata one or more ``ckm_count`` calls read with the same fact. Its finest
cells are the cross product of every dimension the release's CKM count tables of it use, at their leaves; a
published cell covers the finest cells under its codes (a table covers every code of a dimension it does not
use), and its count is their sum plus one noise. The noise depends on the cell's records only (its cell key),
so cells with the same records carry the same noise and count once; the noises of different record sets are
pairwise independent (a cell key is the sum of its record keys modulo M, uniform given any other cell's key),
so they are uncorrelated, each with the variance of its ptable row. The reader's best linear unbiased estimate
(BLUE) of the finest counts x from the published counts y = A x + e, Var e = diag(V_i), has the covariance
(Aᵀ W A)⁺, W = diag(1 / V_i), for every count it identifies at all (a combination a with a in the row space of
A); a finest cell outside it has no unbiased estimate (infinite variance).

What the reader is assumed to know, so that the figures are the smallest a linear attack reaches:

* which finest cells are empty (a structural zero, a published zero that is one: sdc does not rely on it being
  secret). Knowing some cells exactly only removes unknowns, which lowers every other variance; an empty cell
  carries no noise (zero stays zero) and is left out;
* each published cell's noise variance (the variance of its own ptable row, which depends on its original
  count): the BLUE with the true variances has the smallest variance of all linear unbiased estimates.

Not modelled: estimates that are not linear (the ptable's shape: a count never published in 1..js, the bounds
of the noise, a perturbed count never below 0), and relations between populations (a fact that is the sum of
two others, a view that filters the records of a loaded table: audited as separate populations).

Exact where a connected set of finest cells (cells linked through the published cells that cover them) holds
at most AVERAGING_EXACT_CELLS cells: the pseudo-inverse from a pivoted Cholesky factor of F. Beyond it a lower
bound, proven by Cauchy-Schwarz (for a combination a in the range of F = Aᵀ W A,
(aᵀ F⁺ a)(aᵀ F a) >= (aᵀ a)²):

* a finest cell j:     Var >= 1 / Σ_i a_ij² / V_i  (its variance if every other finest cell were known);
* a published cell a:  Var >= (aᵀ a)² / Σ_i (a_iᵀ a)² / V_i.

The floor (sdc publish --min-standard-error, conventions.MIN_STANDARD_ERROR) is held by every finest cell with
records that the release identifies and every published cell with records; a lower bound below the floor
refuses as well (it is said to be one).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve, lapack
from scipy.sparse.csgraph import connected_components

from sdc.conventions import AVERAGING_EXACT_CELLS, MIN_STANDARD_ERROR, TOTAL_LABEL
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q
from sdc.quoting import quote_literal
from sdc.release.populations import population_of

EXACT, LOWER_BOUND = "exact", "lower bound"
# the pivoted Cholesky factor of F stops where the remaining information is below this share of the largest
RANK_TOLERANCE = 1e-10
# a finest cell whose unit vector keeps this much of its squared length off the range of F is not identified
NOT_IDENTIFIED = 1e-8
# rows of A multiplied at once (bounds the dense blocks to a few million numbers)
BLOCK_NUMBERS = 4_000_000


# ------------------------------------------------------------------------------------------ the linear algebra
@dataclass(frozen=True)
class BlueVariances:
    """The variance of the reader's BLUE of each finest cell (``finest``; inf where no combination of published
    cells identifies it) and of each row's own count (``rows``), and whether each is exact (else a lower bound)."""

    finest: np.ndarray
    rows: np.ndarray
    finest_exact: np.ndarray
    rows_exact: np.ndarray


def blue_variances(design, noise_variances, exact_limit: int = AVERAGING_EXACT_CELLS) -> BlueVariances:
    """``design``: one row per published record set, one column per finest cell (its coefficients: 1 where the
    cell covers the finest cell); ``noise_variances``: one per row, > 0. See the module's text."""
    a = sp.csr_matrix(design, dtype=float)
    v = np.asarray(noise_variances, dtype=float)
    n_rows, n = a.shape
    if v.shape != (n_rows,) or not np.all(v > 0) or not np.all(np.isfinite(v)):
        raise ValueError("one positive, finite noise variance per row")
    finest, rows = np.full(n, np.inf), np.zeros(n_rows)
    finest_exact, rows_exact = np.ones(n, dtype=bool), np.ones(n_rows, dtype=bool)
    # connected parts: rows and finest cells linked by the coefficients; F is block diagonal over them
    graph = sp.bmat([[None, a], [a.T, None]], format="csr") if n_rows and n else None
    parts, labels = connected_components(graph, directed=False) if graph is not None else (0, np.zeros(0, int))
    row_part, cell_part = labels[:n_rows], labels[n_rows:]
    order_rows, order_cells = np.argsort(row_part, kind="stable"), np.argsort(cell_part, kind="stable")
    row_starts = np.searchsorted(row_part[order_rows], np.arange(parts + 1))
    cell_starts = np.searchsorted(cell_part[order_cells], np.arange(parts + 1))
    for part in range(parts):
        i = order_rows[row_starts[part]:row_starts[part + 1]]
        j = order_cells[cell_starts[part]:cell_starts[part + 1]]
        if not len(j):  # a row without finest cells: its count is 0, known
            continue
        block = a[i][:, j]
        if len(j) <= exact_limit:
            finest[j], rows[i] = _exact(block, v[i])
        else:
            finest[j], rows[i] = _lower_bounds(block, v[i])
            finest_exact[j] = rows_exact[i] = False
    return BlueVariances(finest, rows, finest_exact, rows_exact)


def _exact(a: sp.csr_matrix, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F⁺)_jj for the identified finest cells (else inf) and a_iᵀ F⁺ a_i for the rows, F = Aᵀ W A. A pivoted
    Cholesky factor F = R Rᵀ (R of full column rank: a direction whose remaining information is below
    RANK_TOLERANCE of the largest is none) gives F⁺ = S Sᵀ with S = R (Rᵀ R)⁻¹, and the projection onto the
    range of F, R (Rᵀ R)⁻¹ Rᵀ, whose diagonal is 1 where a finest cell is identified."""
    information = (a.T @ sp.diags(1.0 / v) @ a).toarray()
    factor, pivots, rank, _ = lapack.dpstrf(information, lower=1, tol=RANK_TOLERANCE * information.diagonal().max())
    r = np.zeros((len(information), rank))
    r[pivots - 1] = np.tril(factor)[:, :rank]
    s = cho_solve(cho_factor(r.T @ r), r.T).T
    finest = (s ** 2).sum(axis=1)
    finest[1 - (s * r).sum(axis=1) > NOT_IDENTIFIED] = np.inf
    rows = np.empty(a.shape[0])
    step = max(1, BLOCK_NUMBERS // max(1, rank))
    for start in range(0, a.shape[0], step):
        rows[start:start + step] = ((a[start:start + step] @ s) ** 2).sum(axis=1)
    return finest, rows


def _lower_bounds(a: sp.csr_matrix, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1 / Σ_i a_ij² / V_i per finest cell and (aᵀa)² / Σ_i (a_iᵀ a)² / V_i per row (the module's text)."""
    weights = 1.0 / v
    diagonal = np.asarray(a.multiply(a).T @ weights).ravel()
    with np.errstate(divide="ignore"):
        finest = np.where(diagonal > 0, 1.0 / np.where(diagonal > 0, diagonal, 1.0), np.inf)
    length = np.asarray(a.multiply(a).sum(axis=1)).ravel()
    rows = np.empty(a.shape[0])
    step = max(1, BLOCK_NUMBERS // max(1, a.shape[0]))
    for start in range(0, a.shape[0], step):
        overlaps = (a[start:start + step] @ a.T).tocsr()
        rows[start:start + step] = length[start:start + step] ** 2 / (overlaps.multiply(overlaps) @ weights)
    return finest, rows


# ------------------------------------------------------------------------------------------ one population
@dataclass
class CountCell:
    codes: tuple  # text, one per dimension of its table
    original: int
    variance: float | None  # of its noise; None where nothing is published (a threshold's NULL)


@dataclass
class CountTable:
    """A verified CKM count table as the averaging audit reads it: its dimensions (lower case), for each the
    codes over a leaf code (``over``), and its cells."""

    label: str
    dims: list[str]
    totals: dict[str, str]  # dimension -> code of its total
    parents: dict[str, dict[str, str | None]]  # hierarchical dimension -> code -> parent code
    cells: list[CountCell]
    index: dict = field(default_factory=dict)

    def __post_init__(self):
        self.index = {cell.codes: k for k, cell in enumerate(self.cells)}

    def over(self, dim: str, leaf: str) -> list[str]:
        """The codes of this table's cells over a finest cell's code: itself and its total, or in a hierarchy
        the code and every ancestor up to the root."""
        parents = self.parents.get(dim)
        if parents is None:
            return [leaf, self.totals[dim]]
        found, code = [], leaf
        while code is not None and code not in found:
            found.append(code)
            code = parents.get(code)
        return found


@dataclass
class Design:
    """A population's published record sets over its finest cells with records."""

    dims: list[str]
    finest: list[tuple]  # codes of each finest cell with records
    records: np.ndarray
    matrix: sp.csr_matrix  # rows: distinct record sets; columns: finest cells
    variances: np.ndarray
    names: list[list[tuple[str, str]]]  # per row: (table, cell as shown) that publish it
    cell_rows: dict = field(default_factory=dict)  # (table, cell codes) -> row


def population_design(dims: list[str], finest: list[tuple], records, tables: list[CountTable]) -> Design:
    """The design of one population: every published cell with records as the set of finest cells it covers,
    cells with the same set (the same records, so the same noise) once. Each cell's finest cells must add up to
    its original count (a check of the mapping against sdc's recomputation)."""
    records = np.asarray(records, dtype=np.int64)
    rows: dict[tuple, int] = {}
    variances: list[float] = []
    names: list[list[tuple[str, str]]] = []
    cell_rows: dict[tuple, int] = {}
    for table in tables:
        where = [dims.index(d) for d in table.dims]
        members: list[list[int]] = [[] for _ in table.cells]
        for j, codes in enumerate(finest):
            for combination in itertools.product(*(table.over(d, codes[p]) for d, p in zip(table.dims, where))):
                k = table.index.get(combination)
                if k is not None:
                    members[k].append(j)
        for cell, covered in zip(table.cells, members):
            shown = ", ".join(f"{d}={c!r}" for d, c in zip(table.dims, cell.codes))
            if int(records[covered].sum()) != cell.original:
                raise SdcError(f"the averaging audit cannot place the cell ({shown}) of {table.label} among the "
                               f"finest cells of its population: they hold {int(records[covered].sum())} records, "
                               f"the cell {cell.original}; refusing to publish")
            if cell.variance is None or not covered:
                continue
            row = rows.setdefault(tuple(covered), len(rows))
            if row == len(variances):
                variances.append(cell.variance)
                names.append([])
            # the same records give the same cell key: one noise (the smaller variance if two ptables differ)
            variances[row] = min(variances[row], cell.variance)
            names[row].append((table.label, shown))
            cell_rows[(table.label, cell.codes)] = row
    columns = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64)
    starts = np.cumsum([0] + [len(k) for k in rows])
    matrix = sp.csr_matrix((np.ones(len(columns)), columns, starts), shape=(len(rows), len(finest)))
    return Design(dims, finest, records, matrix, np.array(variances, dtype=float), names, cell_rows)


@dataclass
class PopulationDesign:
    """A population of the release as the averaging audit found it: its design, tables, verified items and BLUE."""

    shown: str
    design: Design
    tables: list
    items: list
    found: BlueVariances


# ------------------------------------------------------------------------------------------ the release
def audit_averaging(verifier, verified: list, floor: float = MIN_STANDARD_ERROR,
                    exact_limit: int = AVERAGING_EXACT_CELLS) -> dict:
    """The standard errors of the reader's BLUE per population of the release's CKM count tables (the module's
    text); refuses the release where one with records is below ``floor``. Returns the figures for the audit."""
    check_floor(floor)
    verifier.averaging_designs = []
    populations: dict[tuple, list] = {}
    for item in sorted({v.rel.key: v for v in verified}.values(), key=lambda v: v.rel.key):
        if item.kind == "ckm_count" and item.audit is not None:
            populations.setdefault(population_of(item), []).append(item)
    figures, table_figures, worst = [], {}, None
    for (source, fact), items in sorted(populations.items(), key=lambda p: (p[0][0], str(p[0][1]))):
        tables = [_count_table(verifier, item) for item in items]
        dims = sorted({d for t in tables for d in t.dims})
        finest, records = _finest_cells(verifier, source, fact, dims)
        design = population_design(dims, finest, records, tables)
        found = blue_variances(design.matrix, design.variances, exact_limit)
        shown = _population_shown(verifier, items[0], fact)
        # for the audit over the releases in the ledger (averaging_releases.py), once the ledger is read
        verifier.averaging_designs = getattr(verifier, "averaging_designs", []) + [
            PopulationDesign(shown, design, tables, items, found)]
        for r, published in enumerate(design.names):
            error, exact = math.sqrt(found.rows[r]), bool(found.rows_exact[r])
            for label, cell in published:
                table = table_figures.setdefault(label, {"table": label, "smallest_standard_error": None})
                if table["smallest_standard_error"] is None or error < table["smallest_standard_error"]:
                    table.update(smallest_standard_error=error, method=EXACT if exact else LOWER_BOUND, cell=cell)
        least = _least(design, found)
        figures.append({
            "population": shown, "tables": [t.label for t in tables], "dimensions": dims,
            "finest_cells_with_records": len(finest), "record_sets": len(design.names),
            "not_identified": int(np.sum(~np.isfinite(found.finest))),
            "method": EXACT if bool(np.all(found.finest_exact)) else LOWER_BOUND,
            "smallest_standard_error": None if least is None else _rounded(least[0]),
            "cell": None if least is None else least[2]})
        if least is not None and (worst is None or least[0] < worst[0]):
            worst = (*least, shown, [t.label for t in tables])
    report = {"min_standard_error": floor, "populations": figures,
              "tables": [{**t, "smallest_standard_error": _rounded(t["smallest_standard_error"])}
                         for _, t in sorted(table_figures.items())],
              "smallest_standard_error": None if worst is None else _rounded(worst[0]),
              "method": None if worst is None else EXACT if worst[1] else LOWER_BOUND,
              "cell": None if worst is None else worst[2]}
    if worst is not None and worst[0] < floor:
        error, exact, what, shown, tables = worst
        size = ("" if exact else f" (a lower bound: a connected set of more than {exact_limit} finest cells is not "
                                 "computed exactly, and sdc refuses on the bound)")
        raise SdcError(
            f"the release lets a reader average the CKM noise: {what} is estimated from the CKM count tables of "
            f"{shown} ({', '.join(tables)}) with a standard error of {error:.3g}{size}, below the floor of {floor:g} "
            "(sdc publish --min-standard-error): publish fewer tables or margins of this population, or a ptable "
            "with a larger variance V")
    return report


def check_floor(floor) -> None:
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not (math.isfinite(floor) and floor >= 0):
        raise SdcError(f"the minimum standard error (--min-standard-error) must be a number of at least 0, "
                       f"got {floor!r}")


def _least(design: Design, found: BlueVariances) -> tuple | None:
    """The smallest standard error of a population, over its identified finest cells and its published record
    sets: (standard error, exact, the cell as shown)."""
    finest = found.finest
    j = int(np.argmin(finest)) if len(finest) else None
    r = int(np.argmin(found.rows)) if len(found.rows) else None
    if r is not None and (j is None or not math.isfinite(finest[j]) or found.rows[r] <= finest[j]):
        (table, cell), *others = design.names[r]
        also = sorted({t for t, _ in others} - {table})
        return (math.sqrt(found.rows[r]), bool(found.rows_exact[r]),
                f"the cell ({cell}) of {table}" + (f" (the same records in {', '.join(also)})" if also else ""))
    if j is None or not math.isfinite(finest[j]):
        return None
    codes = ", ".join(f"{d}={c!r}" for d, c in zip(design.dims, design.finest[j]))
    return math.sqrt(finest[j]), bool(found.finest_exact[j]), f"the finest cell ({codes})"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _count_table(verifier, item) -> CountTable:
    """A verified ckm_count table: its recomputed cells, totals, hierarchies and noise variances."""
    con, call = verifier.con, item.call
    dims = [str(d) for d in call["dims"]]
    total = str((call.get("settings") or {}).get("sdc_total_label") or TOTAL_LABEL)
    parents: dict[str, dict] = {}
    if call.get("hierarchy"):
        relation = verifier.wh_name(verifier._named(call["hierarchy"], [item.rel.label], "hierarchy"))
        for dim in dims:
            found = con.execute(f"select cast(code as varchar), nullif(cast(parent as varchar), '') from {relation} "
                                f"where dimension = {quote_literal(dim)}").fetchall()
            if found:
                parents[dim.lower()] = dict(found)
    ptable = verifier.wh_name(verifier._named(call["ptable"], [item.rel.label], "ptable"))
    # the variance of each row's noise, with the probabilities the CKM applies (the widths of the key intervals)
    variances = dict(con.execute(
        f"select i, sum(cast(p_int_ub - p_int_lb as double) * v * v) - power(sum(cast(p_int_ub - p_int_lb as "
        f"double) * v), 2) from {ptable} group by i").fetchall())
    cells = []
    # in the order of their codes: the audit's figures (which cell of equal standard errors it names) do not
    # depend on the order in which the engine returns the rows
    for *codes, original, row, count in con.execute(
            f"select {', '.join(f'cast({q(d)} as varchar)' for d in dims)}, original, ptable_row, count "
            f"from {item.audit} order by all").fetchall():
        variance = None
        if count is not None and original:
            variance = variances.get(row)
            if variance is None or not variance > 0:
                raise SdcError(f"{item.rel.label}: ptable row {row} gives no noise to a cell of {original} records; "
                               "refusing to publish")
        cells.append(CountCell(tuple(codes), int(original), variance))
    return CountTable(item.rel.label, [d.lower() for d in dims], {d.lower(): total for d in dims},
                      parents, cells)


def _finest_cells(verifier, source: str, fact, dims: list[str]) -> tuple[list[tuple], list[int]]:
    """The finest cells with records of a population: the codes of every dimension its tables use, and counts."""
    counted = "count(*)" if fact is None else f"sum({q(str(fact))})"
    found = verifier.con.execute(
        f"select {', '.join(f'cast({q(d)} as varchar)' for d in dims)}, {counted} from {source} "
        f"group by all having {counted} > 0 order by all").fetchall()
    return [tuple(row[:-1]) for row in found], [int(row[-1]) for row in found]


def _population_shown(verifier, item, fact) -> str:
    relation = next((r for r in verifier.inputs.values() if str(r) == population_of(item)[0]), None)
    name = (f"{relation.schema}.{relation.identifier}" if relation is not None and relation.database != "temp"
            else "the microdata of " + ", ".join(sorted(item.roots)))
    return name + (f" (fact {fact})" if fact is not None else "")
