"""Secondary suppression by Gaussian elimination (python/sdc/suppression/gauss.py, issue 50) against the test
vectors of GaussSuppression's specification (tests/data/linked_example1.csv; ../shared/reference/
linked-suppression.md §7): LT-4's candidate order, LT-1's global pattern (16 suppressed cells, GaussSuppression's
count) with the intervals an independent LP gives, LT-5's forced cells; and, on random tables, no primary in the
span of the published cells (an independent rank computation)."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from sdc.suppression.gauss import candidate_order, gauss_secondary

DATA = Path(__file__).parent / "data" / "linked_example1.csv"
# the global formula ~age*eu*year + geo*year: its terms in the reference tool's cell order (grand total, the
# margins of age, eu, geo and year, then the crossings); a term without eu or geo shows "Total" in that place
TERMS = [(), ("age",), ("eu",), ("geo",), ("year",), ("age", "eu"), ("age", "year"), ("eu", "year"),
         ("geo", "year"), ("age", "eu", "year")]
# LT-4: the reference order of the 41 cells (age/year/geo-or-eu = freq)
LT4 = """Total/Total/Total=44 Total/Total/EU=32 young/Total/Total=27 Total/Total/Spain=26 Total/2014/Total=24
old/Total/Total=17 old/Total/EU=17 Total/2014/EU=16 young/Total/EU=15 Total/2014/Spain=15 young/2014/Total=14
Total/Total/nonEU=12 Total/Total/Iceland=12 young/Total/nonEU=12 Total/2016/Total=11 young/2016/Total=11
old/2014/Total=10 old/2014/EU=10 Total/2015/Total=9 Total/2016/EU=9 young/2016/EU=9 Total/2014/nonEU=8
Total/2014/Iceland=8 young/2014/nonEU=8 old/2015/Total=7 Total/2015/EU=7 old/2015/EU=7 Total/2016/Spain=7
Total/Total/Portugal=6 young/2014/EU=6 Total/2015/Spain=4 Total/2015/Portugal=3 Total/2016/Portugal=2
Total/2016/nonEU=2 Total/2016/Iceland=2 young/2016/nonEU=2 young/2015/Total=2 Total/2015/nonEU=2
Total/2015/Iceland=2 young/2015/nonEU=2 Total/2014/Portugal=1""".split()


def lt1_cells():
    """(records, cell names, model matrix records × cells, frequencies) of LT-1 under the global formula."""
    with DATA.open(newline="") as handle:
        records = list(csv.DictReader(handle))
    names, columns = [], []
    for term in TERMS:
        codes = [list(dict.fromkeys(r[v] for r in records)) for v in term]
        for combination in itertools.product(*codes):
            code = dict(zip(term, combination))
            column = [int(r["freq"]) if all(r[v] == c for v, c in code.items()) else 0 for r in records]
            if any(column):
                third = code.get("eu", code.get("geo", "Total"))
                names.append(f"{code.get('age', 'Total')}/{code.get('year', 'Total')}/{third}")
                columns.append([1 if c else 0 for c in column])
    x = sp.csc_matrix(np.array(columns).T)
    freq = np.array([int(r["freq"]) for r in records]) @ x.toarray()
    return records, names, x, freq


def two_way_table(rng, most: int, largest: int):
    """(cells as 0/1 vectors over the inner cells, the model matrix, frequencies) of a rows x cols table with its
    margins and total, 3 <= rows, cols < ``most``, inner frequencies 0 .. ``largest`` - 1."""
    rows, cols = rng.integers(3, most, size=2)
    inner = rng.integers(0, largest, size=(rows, cols)).ravel()
    cells = [np.eye(rows * cols, dtype=int)[k] for k in range(rows * cols)]
    cells += [np.kron(np.eye(rows, dtype=int)[r], np.ones(cols, dtype=int)) for r in range(rows)]
    cells += [np.kron(np.ones(rows, dtype=int), np.eye(cols, dtype=int)[c]) for c in range(cols)]
    cells.append(np.ones(rows * cols, dtype=int))
    x = sp.csc_matrix(np.array(cells).T)
    return cells, x, inner @ x.toarray()


def test_the_candidate_order_is_the_reference_tool_s_for_lt4():
    _, names, x, freq = lt1_cells()
    assert len(names) == 41
    order = candidate_order(x, freq)
    assert [f"{names[j]}={freq[j]}" for j in order] == LT4


def test_lt1_global_suppresses_what_the_reference_tool_does_and_every_primary_keeps_its_interval():
    """Primaries: frequency ≤ 2 (maxN = 2). The elimination suppresses Total-2015, Total-2016 (both tables),
    young-2016 (≡ Total-2016) and Spain-2014, Spain-2016: 7 cells of the two tables beside the 9 primaries, 16 in
    all, as GaussSuppression. An LP over the ten records (y ≥ 0, the published cells fixed) gives the
    specification's intervals, every primary at least ±1 from its value."""
    records, names, x, freq = lt1_cells()
    primary = [j for j in range(len(names)) if 0 < freq[j] <= 2]
    pattern = gauss_secondary(x, candidate_order(x, freq), primary)
    assert sorted(names[j] for j in pattern.secondary) == sorted(
        ["Total/2015/Total", "Total/2016/Total", "young/2016/Total", "Total/2014/Spain", "Total/2016/Spain"])
    assert pattern.unsafe == []
    # cell instances of the two tables: T1 = age x eu x year with margins, T2 = geo x year with margins
    t1 = {n for n in names if n.split("/")[2] in ("Total", "EU", "nonEU")}
    t2 = {n for n in names if n.split("/")[0] == "Total" and n.split("/")[2] not in ("EU", "nonEU")}
    suppressed = {names[j] for j in pattern.secondary + primary}
    assert len(suppressed & t1) + len(suppressed & t2) == 16
    published = [j for j in range(len(names)) if names[j] not in suppressed]
    dense = x.toarray()
    truth = np.array([int(r["freq"]) for r in records])
    intervals = {}
    for j in sorted(primary + pattern.secondary):
        bounds = []
        for sign in (1, -1):
            found = linprog(sign * dense[:, j], A_eq=dense[:, published].T, b_eq=dense[:, published].T @ truth,
                            bounds=(0, None), method="highs")
            assert found.status == 0
            bounds.append(round(sign * found.fun, 6))
        intervals[names[j]] = tuple(bounds)
    assert intervals["Total/2014/Portugal"] == (0, 3) and intervals["Total/2016/Portugal"] == (0, 3)
    assert intervals["Total/2014/Spain"] == (13, 16) and intervals["Total/2016/Spain"] == (6, 9)
    assert intervals["Total/2015/Total"] == (7, 11) and intervals["Total/2016/Total"] == (9, 13)
    assert all(intervals[names[j]] == (0, 4) for j in primary if "Portugal" not in names[j])
    assert all(lo <= freq[j] - 1 and up >= freq[j] + 1 for j in primary for lo, up in [intervals[names[j]]])


def test_lt5_primaries_the_forced_cells_disclose_are_unsafe_even_when_every_candidate_is_forced():
    """One-way table: inner a = 1, b = 5, c = 6; cells a, b, c, T = a + b + c, ab = a + b. Primary a, forced b, c
    and T: a is disclosed by them (unsafe), and ab is published (already determined). Without ab every candidate
    is forced, and a is still reported. With T alone forced and the order (c, b): c is published, b suppressed."""
    x = sp.csc_matrix(np.array([[1, 0, 0, 1, 1], [0, 1, 0, 1, 1], [0, 0, 1, 1, 0]]))
    a, b, c, total, ab = range(5)
    pattern = gauss_secondary(x, [ab, c, b], [a], forced=[b, c, total])
    assert pattern.unsafe == [a] and pattern.secondary == []
    pattern = gauss_secondary(x[:, :4], [c, b], [a], forced=[b, c, total])
    assert pattern.unsafe == [a] and pattern.secondary == []
    pattern = gauss_secondary(x, [c, b], [a], forced=[total])
    assert pattern.unsafe == [] and pattern.secondary == [b]


@pytest.mark.parametrize("seed", range(6))
def test_no_primary_is_in_the_span_of_the_published_cells_of_a_random_table(seed):
    """Two-way tables with margins over random frequencies: rank(X_published + a primary) > rank(X_published) for
    every primary (numpy's rank, independent of the elimination), and every suppressed candidate was needed: each
    one published alone would disclose some primary, given the cells published before it in the order."""
    cells, x, freq = two_way_table(np.random.default_rng(seed), 7, 9)
    primary = [j for j in range(len(cells)) if 0 < freq[j] <= 2]
    order = candidate_order(x, freq)
    pattern = gauss_secondary(x, order, primary)
    dense = x.toarray().astype(float)
    suppressed = set(primary) | set(pattern.secondary)
    published = [j for j in range(len(cells)) if j not in suppressed]
    base = np.linalg.matrix_rank(dense[:, published]) if published else 0
    for i in primary:
        assert np.linalg.matrix_rank(np.column_stack([dense[:, published], dense[:, i]])) > base, i
    for j in pattern.secondary:
        before = [k for k in order[:list(order).index(j)] if k in published]
        span = np.linalg.matrix_rank(dense[:, before + [j]]) if before else 1
        assert any(np.linalg.matrix_rank(np.column_stack([dense[:, before + [j]], dense[:, i]])) == span
                   for i in primary), j


@pytest.mark.parametrize("seed", range(4))
def test_the_elimination_on_a_table_s_relations_decides_as_on_its_model_matrix(seed):
    """sdc's problems hold a table's additivity relations, not its model matrix: the elimination over the cells
    with the relations known from the outset takes every decision that the elimination over the inner cells does
    (the same span conditions), candidate by candidate."""
    cells, x, freq = two_way_table(np.random.default_rng(100 + seed), 6, 7)
    primary = [j for j in range(len(cells)) if 0 < freq[j] <= 2]
    order = candidate_order(x, freq)
    # the relations: each margin is the sum of its inner cells (total +1, parts -1), the grand total likewise
    n, relations = len(cells), []
    for j in range(n):
        if cells[j].sum() == 1:
            continue  # an inner cell
        row = np.zeros(n, dtype=int)
        row[j] = 1
        row[np.flatnonzero(cells[j])] = -1
        relations.append(row)
    on_relations = gauss_secondary(sp.identity(n, dtype=int, format="csc"), order, primary,
                                   known=sp.csr_matrix(np.array(relations)))
    assert on_relations.secondary == gauss_secondary(x, order, primary).secondary


def test_method_gauss_protects_lt1_with_the_cells_of_the_optimal_pattern():
    """sdc's method gauss on the two linked tables: the elimination, then the LP heuristic for what the protection
    intervals ask beyond exact disclosure (an attacker who knows each listed cell holds a record), then the
    pruning: the 18 cells of the MILP's optimum (hypercube and heuristic: 23), audited over both tables."""
    import pandas as pd

    from sdc.suppression import suppressed_linked_tables

    rows = pd.read_csv(DATA, dtype={"year": str})
    micro = rows.loc[rows.index.repeat(rows.freq)].drop(columns="freq").reset_index(drop=True)
    dims = [["age", "eu", "year"], ["geo", "year"]]
    found = {method: suppressed_linked_tables(micro, dims, ["freq:3"], method=method, audit=True)
             for method in ("gauss", "optimal", "heuristic")}

    def suppressed(tables):
        return {(name, tuple(row[d] for d in table_dims)) for (name, table), table_dims in zip(tables.items(), dims)
                for row in table.to_dict("records") if row["status"] in ("primary", "secondary")}
    assert len(suppressed(found["gauss"])) == 18 and suppressed(found["gauss"]) == suppressed(found["optimal"])
    assert len(suppressed(found["heuristic"])) == 23


def test_method_gauss_needs_relations_of_whole_numbers():
    from sdc.errors import SdcError
    from sdc.suppression import SuppressionProblem, secondary_suppression

    problem = SuppressionProblem.from_arrays([10, 5, 7.5], [[(0, 1), (1, -0.5), (2, -1)]], primary=[1],
                                             protection_lower=[0, 1, 0], protection_upper=[0, 1, 0],
                                             cost=[10, 5, 7.5])
    with pytest.raises(SdcError, match="gauss.*whole-number coefficients"):
        secondary_suppression(problem, "gauss")


def test_method_gauss_names_a_primary_that_the_published_cells_give_away():
    """A total and its three parts, the total and two parts forced published (an earlier release published them):
    the primary part is their difference. The elimination reports it unsafe (LT-5), and the method names it."""
    from sdc.errors import SdcError
    from sdc.suppression import SuppressionProblem, secondary_suppression

    problem = SuppressionProblem.from_arrays([12, 2, 4, 6], [[(0, 1), (1, -1), (2, -1), (3, -1)]], primary=[1],
                                             protection_lower=[0, 1, 0, 0], protection_upper=[0, 1, 0, 0],
                                             cost=[12, 2, 4, 6], forced_published=[True, False, True, True],
                                             labels=["total", "a", "b", "c"])
    with pytest.raises(SdcError, match=r"\(gauss\): a can be computed from cells that must be published"):
        secondary_suppression(problem, "gauss")


def lt1_intervals(suppressed: set[str]) -> dict[str, tuple[float, float]]:
    """Each suppressed cell's (min, max) over the ten records of LT-1 (y >= 0) with the published cells fixed and
    every suppressed non-empty cell at least 1 (sdc's attacker), by scipy's linprog: no code of sdc."""
    records, names, x, freq = lt1_cells()
    dense = x.toarray()
    truth = np.array([int(r["freq"]) for r in records])
    published = [j for j, n in enumerate(names) if n not in suppressed]
    hidden = [j for j, n in enumerate(names) if n in suppressed]
    found = {}
    for j in hidden:
        bounds = []
        for sign in (1, -1):
            result = linprog(sign * dense[:, j], A_eq=dense[:, published].T, b_eq=dense[:, published].T @ truth,
                             A_ub=-dense[:, hidden].T, b_ub=-np.ones(len(hidden)), bounds=(0, None), method="highs")
            assert result.status == 0
            bounds.append(round(sign * result.fun, 6))
        found[names[j]] = tuple(bounds)
    return found


@pytest.mark.parametrize("method", ["gauss", "heuristic", "hypercube", "optimal"])
def test_lt2_the_rule_range_gives_every_primary_an_interval_at_least_that_wide(method):
    """LT-2 (GaussSuppression's rangeMin = 4 on LT-1): the option range:4 of the primary rules asks every primary's
    interval to be at least 4 wide. Without it the 18 cells of gauss and the optimum leave Portugal-2014 in an
    interval 3 wide; with it every method's pattern gives each primary a width of at least 4 under an independent
    LP over the records, and takes more cells."""
    import pandas as pd

    from sdc.suppression import suppressed_linked_tables

    rows = pd.read_csv(DATA, dtype={"year": str})
    micro = rows.loc[rows.index.repeat(rows.freq)].drop(columns="freq").reset_index(drop=True)
    dims = [["age", "eu", "year"], ["geo", "year"]]

    def suppressed(rules, method):
        tables = suppressed_linked_tables(micro, dims, rules, method=method, audit=True)
        t1, t2 = tables.values()
        hidden = t1.status.isin(["primary", "secondary"]), t2.status.isin(["primary", "secondary"])
        cells = {f"{r.age}/{r.year}/{r.eu}" for r in t1[hidden[0]].itertuples()} | {
            f"Total/{r.year}/{r.geo}" for r in t2[hidden[1]].itertuples()}
        primaries = {f"{r.age}/{r.year}/{r.eu}" for r in t1[t1.status == "primary"].itertuples()} | {
            f"Total/{r.year}/{r.geo}" for r in t2[t2.status == "primary"].itertuples()}
        return cells, primaries, int(hidden[0].sum() + hidden[1].sum())

    plain, primaries, plain_count = suppressed(["freq:3"], "gauss")
    assert plain_count == 18
    lo, up = lt1_intervals(plain)["Total/2014/Portugal"]
    assert up - lo < 4
    wide, wide_primaries, count = suppressed(["freq:3", "range:4"], method)
    assert wide_primaries == primaries and len(primaries) == 9
    intervals = lt1_intervals(wide)
    assert all(intervals[p][1] - intervals[p][0] >= 4 - 1e-6 for p in primaries), intervals
    assert count > plain_count
