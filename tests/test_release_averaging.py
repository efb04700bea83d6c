"""Averaging CKM noise (issue 33): the standard error of a reader's best linear unbiased estimate (BLUE) of every
count from all CKM count cells of a release, and sdc publish's floor under it (python/sdc/release/averaging.py).

Exact figures are checked against closed forms and against an independent computation: the smallest variance
Σ c_i² V_i of an unbiased combination cᵀy, found as the least-norm solution of the whitened constraint by the
pseudo-inverse (an SVD of the design, no information matrix)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import scipy.sparse as sparse

from sdc.cli import main
from sdc.errors import SdcError
from sdc.release.publish import publish
from sdc.release.averaging import CountCell, CountTable, blue_variances, population_design
from test_publication_gate import BASE, make
from test_publish import edited_manifest, office_audit, rows

V = 3.0  # the demo ptable's variance, every row


def reference_variance(design: np.ndarray, variances: np.ndarray, target: np.ndarray) -> float:
    """min Σ c_i² V_i over c with designᵀ c = target (inf where no c exists): with c_i = u_i / σ_i, the least-norm
    u of (design / σ)ᵀ u = target."""
    whitened = design / np.sqrt(variances)[:, None]
    u = np.linalg.pinv(whitened.T) @ target
    if not np.allclose(whitened.T @ u, target, atol=1e-8):
        return np.inf
    return float(u @ u)


def cube(sizes: tuple, dims: tuple | None = None) -> tuple[list, list[tuple]]:
    """The finest cells of a flat cube (every code combination) and the record sets of a table over ``dims``
    with every margin and total: each a tuple of finest cell indices."""
    finest = list(itertools.product(*(range(n) for n in sizes)))
    dims = tuple(range(len(sizes))) if dims is None else dims
    sets = []
    for combination in itertools.product(*(list(range(sizes[d])) + [None] for d in dims)):
        sets.append(tuple(j for j, cell in enumerate(finest)
                          if all(c is None or cell[d] == c for d, c in zip(dims, combination))))
    return finest, sets


def matrix(sets: list[tuple], n: int) -> np.ndarray:
    a = np.zeros((len(sets), n))
    for i, members in enumerate(sets):
        a[i, list(members)] = 1
    return a


# ------------------------------------------------------------------------------------------ closed forms
@pytest.mark.parametrize("m", [1, 2, 3, 6])
def test_a_margin_beside_its_m_cells_gives_v_m_over_m_plus_1(m):
    """SECURITY.md's example: m cells and their total, each with its own noise. F = (I + J) / V, so
    F⁻¹ = V (I - J / (m + 1)): every cell, and the total, V m / (m + 1)."""
    a = np.vstack([np.eye(m), np.ones((1, m))])
    found = blue_variances(a, np.full(m + 1, V))
    assert np.allclose(found.finest, V * m / (m + 1)) and np.allclose(found.rows, V * m / (m + 1))
    assert found.finest_exact.all() and found.rows_exact.all()
    assert np.isclose(found.finest[0], reference_variance(a, np.full(m + 1, V), np.eye(m)[0]))


@pytest.mark.parametrize("sizes", [(2, 2), (3, 4), (2, 5), (2, 2, 2), (2, 5, 8)])
def test_a_flat_cube_with_every_margin_gives_v_times_the_product_of_n_over_n_plus_1(sizes):
    """A = ⊗_k [I; 1ᵀ], so F = ⊗_k (I + J) / V and F⁻¹ = V ⊗_k (I - J / (n_k + 1)): a finest cell
    V Π n_k / (n_k + 1); a dimension summed over gives 1ᵀ (I - J / (n + 1)) 1 = n / (n + 1), the same factor, so
    every cell has that variance. 2 × 2: 4V/9 (standard error 1.155 at V = 3); 2 × 5 × 8: 1.4815 (the table
    builder's bound)."""
    finest, sets = cube(sizes)
    closed = V * np.prod([n / (n + 1) for n in sizes])
    found = blue_variances(matrix(sets, len(finest)), np.full(len(sets), V))
    assert np.allclose(found.finest, closed) and np.allclose(found.rows, closed)
    if sizes == (2, 2):
        assert np.isclose(np.sqrt(found.finest[0]), 1.1547, atol=1e-4)
    if sizes == (2, 5, 8):
        assert np.isclose(found.finest[0], 1.4815, atol=1e-4)


def test_a_cell_no_combination_identifies_has_no_unbiased_estimate():
    """Two margins of a 2 × 2 table without its cells: the margins are known, no cell is (infinite variance);
    the reference finds no unbiased combination either."""
    finest, sets = cube((2, 2), dims=(0,))
    sets += cube((2, 2), dims=(1,))[1]
    a = matrix(sorted(set(sets)), 4)
    found = blue_variances(a, np.full(len(a), V))
    assert np.isinf(found.finest).all()
    assert all(reference_variance(a, np.full(len(a), V), np.eye(4)[j]) == np.inf for j in range(4))
    # the grand total: directly (V) and as the sum of either margin (2V each): 1 / (1/V + 1/2V + 1/2V) = V/2
    total = [i for i, row in enumerate(a) if row.sum() == 4]
    assert np.isclose(found.rows[total[0]], V / 2)


# ------------------------------------------------------------------------------------------ random designs
def random_design(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """0/1 record sets over up to 9 finest cells, some cells under no set or only under sets with others, and
    noise variances between 0.5 and 4."""
    rng = np.random.default_rng(seed)
    n, r = rng.integers(3, 10), rng.integers(2, 14)
    a = (rng.random((r, n)) < rng.uniform(0.2, 0.7)).astype(float)
    a = a[a.sum(axis=1) > 0]
    if not len(a):
        a = np.ones((1, n))
    return a, rng.uniform(0.5, 4.0, len(a))


@pytest.mark.parametrize("seed", range(40))
def test_exact_variances_agree_with_the_independent_computation(seed):
    a, variances = random_design(seed)
    found = blue_variances(a, variances)
    for j in range(a.shape[1]):
        expected = reference_variance(a, variances, np.eye(a.shape[1])[j])
        assert (np.isinf(expected) and np.isinf(found.finest[j])) or np.isclose(found.finest[j], expected, rtol=1e-7)
    for i in range(len(a)):
        assert np.isclose(found.rows[i], reference_variance(a, variances, a[i]), rtol=1e-7)
        assert found.rows[i] <= variances[i] * (1 + 1e-9)  # never worse than the cell's own noise


@pytest.mark.parametrize("seed", range(40))
def test_the_lower_bound_is_never_above_the_exact_variance(seed):
    a, variances = random_design(seed)
    exact = blue_variances(a, variances)
    bound = blue_variances(a, variances, exact_limit=0)
    covered = a.sum(axis=0) > 0  # a finest cell under no row is exactly not identified
    assert not bound.finest_exact[covered].any() and not bound.rows_exact.any()
    assert np.isinf(bound.finest[~covered]).all()
    assert (bound.finest <= exact.finest * (1 + 1e-9)).all() and (bound.rows <= exact.rows * (1 + 1e-9)).all()
    assert (bound.rows > 0).all()
    # the finest cell's bound is its variance were every other finest cell known: 1 / Σ_i a_ij / V_i
    assert np.allclose(bound.finest[covered], 1 / (a[:, covered] / variances[:, None]).sum(axis=0))


def test_the_lower_bound_is_the_exact_variance_where_cells_share_no_noise():
    """Every finest cell published alone, twice with different variances, and nothing else: nothing to average
    but its own two noises, so the bound is exact: 1 / (1/2 + 1/3) = 1.2."""
    a = np.vstack([np.eye(5), np.eye(5)])
    variances = np.array([2.0] * 5 + [3.0] * 5)
    for limit in (0, 10):
        assert np.allclose(blue_variances(a, variances, exact_limit=limit).finest, 1.2)


def test_only_connected_parts_above_the_limit_are_bounded():
    """Two tables over disjoint finest cells: a 2 × 2 cube (4 cells) is computed exactly and a 3 × 4 cube
    (12 cells) bounded when the limit lies between."""
    small, big = matrix(cube((2, 2))[1], 4), matrix(cube((3, 4))[1], 12)
    a = np.block([[small, np.zeros((len(small), 12))], [np.zeros((len(big), 4)), big]])
    found = blue_variances(a, np.full(len(a), V), exact_limit=5)
    assert found.finest_exact.tolist() == [True] * 4 + [False] * 12
    assert np.allclose(found.finest[:4], 4 * V / 9)
    assert (found.finest[4:] < V * 12 / 20).all()  # below the exact 3/4 · 4/5 · V


# ------------------------------------------------------------------------------------------ one population
def flat_table(label: str, dims: list[str], finest: list[tuple], all_dims: list[str], records,
               sizes: dict) -> CountTable:
    """A complete CKM count table over ``dims`` with every total: the originals from the finest cells."""
    made = []
    for codes in itertools.product(*([*sizes[d], "Total"] for d in dims)):
        original = sum(n for cell, n in zip(finest, records)
                       if all(c == "Total" or cell[all_dims.index(d)] == c for d, c in zip(dims, codes)))
        made.append(CountCell(codes, original, V))
    return CountTable(label, dims, {d: "Total" for d in dims}, {}, made)


def two_ways():
    sizes = {"sex": ["m", "w"], "region": [f"R{k}" for k in range(5)], "age": ["A0", "A1", "A2"]}
    dims = sorted(sizes)  # age, region, sex
    finest = list(itertools.product(*(sizes[d] for d in dims)))
    records = [7 + k % 4 for k in range(len(finest))]
    return sizes, dims, finest, records


def test_two_tables_cutting_one_population_two_ways_give_smaller_errors_than_one_alone():
    """sex × region and sex × age over one population: the sex margins and the total are the same records in
    both (one noise each), but each is now also the sum of either table's cells. Alone: V · 2/3 · 5/6 (1.2910)
    and V · 2/3 · 3/4 (1.2247); together the margins fall to 1.1421, no cell rises, and no finest cell of
    sex × region × age is identified."""
    sizes, dims, finest, records = two_ways()
    by_region = flat_table("by_region", ["sex", "region"], finest, dims, records, sizes)
    by_age = flat_table("by_age", ["sex", "age"], finest, dims, records, sizes)
    alone = {t.label: population_design(dims, finest, records, [t]) for t in (by_region, by_age)}
    both = population_design(dims, finest, records, [by_region, by_age])
    assert len(both.names) == 18 + 12 - 3  # (m, Total), (w, Total), (Total, Total) once
    assert sorted(len(n) for n in both.names).count(2) == 3
    errors = np.sqrt(blue_variances(both.matrix, both.variances).rows)
    dense = both.matrix.toarray()
    for r in range(len(errors)):
        assert np.isclose(errors[r] ** 2, reference_variance(dense, both.variances, dense[r]), rtol=1e-7)
    for label, design in alone.items():
        own_errors = np.sqrt(blue_variances(design.matrix, design.variances).rows)
        own = dict(zip(map(tuple, design.matrix.toarray()), own_errors))
        closed = np.sqrt(V * 2 / 3 * (5 / 6 if label == "by_region" else 3 / 4))
        assert np.allclose(list(own.values()), closed)
        together = {tuple(row): e for row, e in zip(dense, errors)}
        assert all(together[key] <= e + 1e-12 for key, e in own.items())
        assert min(together[key] for key in own) < closed - 0.08
    assert np.isclose(errors.min(), 1.1421, atol=1e-4)
    assert np.isinf(blue_variances(both.matrix, both.variances).finest).all()


def test_cells_with_the_same_records_carry_one_noise_and_empty_cells_none():
    """A hierarchy North {R1, R2}, South {R3}: South and R3 are the same records (one noise); the flat table by
    region repeats R1..R3 and the total (the same noises again); R2 has no records: its cells, with original 0,
    publish no noise, and the design has no column for it. Cells whose originals do not add up are refused."""
    finest, records = [("R1",), ("R3",)], [5, 4]
    parents = {"Total": None, "North": "Total", "South": "Total", "R1": "North", "R2": "North", "R3": "South"}
    originals = {"Total": 9, "North": 5, "South": 4, "R1": 5, "R2": 0, "R3": 4}
    tree = CountTable("tree", ["region"], {"region": "Total"}, {"region": parents},
                      [CountCell((code,), n, V if n else None) for code, n in originals.items()])
    flat = CountTable("flat", ["region"], {"region": "Total"}, {},
                      [CountCell((code,), originals[code], V if originals[code] else None)
                       for code in ("Total", "R1", "R2", "R3")])
    design = population_design(["region"], finest, records, [tree, flat])
    # record sets: {R1, R3} (Total), {R1} (North, R1), {R3} (South, R3)
    assert sorted(map(tuple, design.matrix.toarray().astype(int).tolist())) == [(0, 1), (1, 0), (1, 1)]
    assert sorted(len(n) for n in design.names) == [2, 3, 3]
    found = blue_variances(design.matrix, design.variances)
    assert np.allclose(found.finest, V * 2 / 3)  # two cells and their total: V m / (m + 1)
    wrong = CountTable("wrong", ["region"], {"region": "Total"}, {}, [CountCell(("R1",), 6, V)])
    with pytest.raises(SdcError, match=r"cannot place the cell \(region='R1'\) of wrong among the finest cells of its "
                                       r"population: they hold 5 records, the cell 6"):
        population_design(["region"], finest, records, [wrong])


# ------------------------------------------------------------------------------------------ sdc publish
AGES = "id,sex,region,age,income\n" + "".join(
    f"{i},{'mw'[i % 2]},R{i % 5},A{i % 3},{1000 + (i * 7919) % 5000}\n" for i in range(400))
TWO_WAYS = {
    **BASE,
    "audit/ckm_by_age.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'age']) }}\n",
    "protected/by_age.sql": "{{ sdc.ckm_published(ref('ckm_by_age')) }}\n",
}


@pytest.fixture(scope="module")
def two_tables(tmp_path_factory):
    return make(tmp_path_factory.mktemp("averaging"), TWO_WAYS, persons=AGES)


def audit_report(built):
    return office_audit(built.db)["averaging"]


def test_publish_refuses_a_release_whose_averaged_noise_is_below_the_floor(two_tables, tmp_path, capsys):
    """Every code combination of sex (2) × region (5) × age (3) holds records (400 persons, i mod 30). Each
    table alone keeps its closed form (1.2910, 1.2247); both together take the sex margins and the total to
    1.1421: published under the default floor 1.0, refused under 1.2, where each table alone passes."""
    out = tmp_path / "pub.duckdb"
    assert main(["publish", "--db", str(two_tables.db), "--project-dir", str(two_tables.project), "--out", str(out),
                 "--min-standard-error", "1.2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sdc publish: error: the release lets a reader average the CKM noise: the cell (sex='")
    assert ("of main_protected.by_age (the same records in main_protected.persons) is estimated from the CKM count "
            "tables of raw.persons (main_protected.by_age, main_protected.persons) with a standard error of 1.14, "
            "below the floor of 1.2 (sdc publish --min-standard-error)") in err
    assert not out.exists()

    assert main(["publish", "--db", str(two_tables.db), "--project-dir", str(two_tables.project),
                 "--out", str(out)]) == 0
    assert ("\naveraging CKM noise: the smallest standard error of a count with records is 1.14 (exact), "
            "the cell (sex=") in capsys.readouterr().out
    report = audit_report(two_tables)
    assert report["min_standard_error"] == 1.0 and report["method"] == "exact"
    assert report["smallest_standard_error"] == pytest.approx(1.1421, abs=1e-4)
    (population,) = report["populations"]
    assert population["population"] == "raw.persons" and population["dimensions"] == ["age", "region", "sex"]
    assert population["finest_cells_with_records"] == 30 and population["not_identified"] == 30
    assert population["record_sets"] == 27 and population["method"] == "exact"
    assert [(t["table"], t["smallest_standard_error"]) for t in report["tables"]] == \
        [("main_protected.by_age", pytest.approx(1.1421, abs=1e-4)),
         ("main_protected.persons", pytest.approx(1.1421, abs=1e-4))]

    for alone, error in (("persons", np.sqrt(V * 2 / 3 * 5 / 6)), ("by_age", np.sqrt(V * 2 / 3 * 3 / 4))):
        other = "by_age" if alone == "persons" else "persons"
        manifest = edited_manifest(two_tables, tmp_path, untag=(other,))
        assert publish(two_tables.db, out, manifest=manifest, min_standard_error=1.2) == [alone]
        report = audit_report(two_tables)
        assert report["smallest_standard_error"] == pytest.approx(error, abs=1e-4) and report["method"] == "exact"
        # one table over two of the three dimensions: its own cells are the finest cells
        assert report["populations"][0]["not_identified"] == 0
    with pytest.raises(SdcError, match=r"the cell \(sex='\w+', region='\w+'\) of main_protected.persons is estimated "
                                       r"from the CKM count tables of raw.persons \(main_protected.persons\) with a "
                                       r"standard error of 1.29, below the floor of 1.3"):
        publish(two_tables.db, out, manifest=edited_manifest(two_tables, tmp_path, untag=("by_age",)),
                min_standard_error=1.3)


@pytest.mark.parametrize("floor", [-1.0, float("nan"), float("inf")])
def test_a_floor_that_is_no_standard_error_is_refused_before_any_work(two_tables, tmp_path, floor):
    with pytest.raises(SdcError, match="the minimum standard error .* must be a number of at least 0"):
        publish(two_tables.db, tmp_path / "pub.duckdb", project_dir=two_tables.project, min_standard_error=floor)


def test_a_re_key_gives_every_unchanged_count_a_second_noise_counted_over_the_releases(tmp_path, capsys):
    """New user D4, red team R4-5: a re-key hands readers a second, independent noise of every unchanged cell, and
    the per-release floor let it pass. Over the releases in the ledger, one flat table (sex x region, every margin)
    published under two series of keys has the closed form of one release halved in variance: V · (2/3) · (5/6) / 2,
    a standard error of 1.2910 / √2 = 0.9129; refused under the default floor, published under 0.9, and sdc
    release list says the floor allows no further draw."""
    from sdc.warehouse.loader import load_microdata

    built = make(tmp_path, BASE)
    out = tmp_path / "pub.duckdb"
    assert publish(built.db, out, manifest=built.manifest) == ["persons"]
    one = office_audit(built.db)["averaging"]
    assert one["smallest_standard_error"] == pytest.approx(np.sqrt(V * 2 / 3 * 5 / 6), abs=1e-4)
    assert one["over_releases"]["noise_epochs"] == 1
    micro = tmp_path / "persons.csv"
    load_microdata(built.db, micro, "persons", id_column="id", key_mode="random", rekey=True)
    from test_publication_gate import dbt

    dbt(built, "build")
    with pytest.raises(SdcError, match=r"estimated from this release and the earlier independent noises of 18 "
                                       r"unchanged count\(s\) of raw.persons \(releases 1, each the last under other "
                                       r"record keys or parameters\) with a standard error of 0.913, below the "
                                       r"floor of 1"):
        publish(built.db, out, manifest=built.manifest)
    capsys.readouterr()
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out),
                 "--min-standard-error", "0.9"]) == 0
    printed = capsys.readouterr().out
    over = office_audit(built.db)["averaging"]["over_releases"]
    assert over["noise_epochs"] == 2 and over["earlier_releases"] == [1]
    assert over["smallest_standard_error"] == pytest.approx(np.sqrt(V * 2 / 3 * 5 / 6 / 2), abs=1e-4)
    assert over["more_epochs_allowed"] == 0
    # the office sees the figures over the releases in the command's summary and in its report
    assert ("\n  over the releases in the ledger (2 noise epochs, earlier releases 1): 0.913 (exact), the cell ("
            in printed), printed
    assert "\n  the floor allows 0 more re-key(s) or accepted parameter change(s) of these tables\n" in printed
    report = tmp_path / "office.html"
    assert main(["report", "--publication", str(out), "--ledger", str(built.db.parent / "sdc_ledger.duckdb"),
                 "--out", str(report)]) == 0
    text = report.read_text()
    assert ("Over the releases in the ledger: 2 independent noise(s) of every unchanged count (this release and "
            "releases 1, each the last under other record keys or parameters); the smallest standard error of a "
            f"count averaged over them is {over['smallest_standard_error']} (exact)") in text
    assert "The floor allows 0 more re-key(s) or accepted parameter change(s) of these tables" in text


def naive_design(dims, finest, records, tables):
    """The design by its definition, one finest cell, table and code combination at a time: (record sets in the
    order they first appear, each with its variance and the (table, codes) that publish it)."""
    sets: dict[tuple, list] = {}
    for table in tables:
        where = [dims.index(d) for d in table.dims]
        for cell in table.cells:
            covered = tuple(j for j, codes in enumerate(finest)
                            if cell.codes in set(itertools.product(*(table.over(d, codes[p])
                                                                     for d, p in zip(table.dims, where)))))
            assert sum(records[j] for j in covered) == cell.original
            if cell.variance is None or not covered:
                continue
            entry = sets.setdefault(covered, [cell.variance, []])
            entry[0] = min(entry[0], cell.variance)
            entry[1].append((table.label, cell.codes))
    return sets


def random_population(seed: int):
    """Up to four dimensions, one of them under an unbalanced hierarchy (leaves at depths 1 to 3), tables over one
    to three of them with every total, records in about half the finest cells, cells of no records and withheld
    cells (no variance) among them."""
    rng = np.random.default_rng(seed)
    dims = ["a", "b", "c", "region"][:rng.integers(2, 5)]
    codes = {d: [f"{d}{k}" for k in range(rng.integers(2, 5))] for d in dims if d != "region"}
    parents = {"Total": None, "N": "Total", "S": "Total", "N1": "N", "N2": "N", "N1a": "N1", "N1b": "N1",
               "N2a": "N2", "S1": "S", "E": "Total"}  # leaves N1a, N1b, N2a, S1 (depth 3), E (depth 1)
    if "region" in dims:
        codes["region"] = ["N1a", "N1b", "N2a", "S1", "E"]
    finest = [cell for cell in itertools.product(*(codes[d] for d in dims)) if rng.random() < 0.5]
    records = [int(rng.integers(1, 6)) for _ in finest]
    tables = []
    for t in range(rng.integers(1, 5)):
        used = sorted(rng.choice(dims, size=rng.integers(1, min(3, len(dims)) + 1), replace=False).tolist(),
                      key=dims.index)
        hierarchy = {"region": parents} if "region" in used and rng.random() < 0.7 else {}
        table = CountTable(f"t{t}", used, {d: "Total" for d in used}, hierarchy, [])
        options = [list(parents) if d in hierarchy else codes[d] + ["Total"] for d in used]
        for combination in itertools.product(*options):
            original = sum(n for cell, n in zip(finest, records)
                           if all(c in table.over(d, cell[dims.index(d)]) for d, c in zip(used, combination)))
            withheld = original and rng.random() < 0.1
            table.cells.append(CountCell(combination, original, None if withheld or not original
                                         else float(rng.choice([1.0, 2.0, 3.0]))))
        table.__post_init__()
        tables.append(table)
    return dims, finest, records, tables


@pytest.mark.parametrize("lookup", ["dense", "sorted"])
@pytest.mark.parametrize("seed", range(30))
def test_the_design_is_the_record_sets_its_definition_gives(seed, lookup, monkeypatch):
    """The vectorised design against the definition, cell by cell: the same record sets in the same order, the
    smallest variance of the cells that publish each, and every cell's row; a table's cells found by a dense
    array of its code combinations and by sorting them."""
    import sdc.release.averaging as averaging

    if lookup == "sorted":
        monkeypatch.setattr(averaging, "DENSE_LOOKUP_KEYS", 0)
    dims, finest, records, tables = random_population(seed)
    design = population_design(dims, finest, records, tables)
    expected = naive_design(dims, finest, records, tables)
    got = [tuple(np.flatnonzero(row)) for row in design.matrix.toarray()]
    assert got == list(expected)
    assert design.variances.tolist() == [v for v, _ in expected.values()]
    for row, (_, cells) in enumerate(expected.values()):
        assert [design.cell_rows[cell] for cell in cells] == [row] * len(cells)
        assert [label for label, _ in design.names[row]] == [label for label, _ in cells]


# ------------------------------------------------------------------------------------------ record sets' space
@pytest.mark.parametrize("seed", range(40))
def test_the_record_sets_computation_agrees_with_the_finest_cells_one(seed):
    """Both exact computations on the random designs, called directly: the rows' variances, which finest cells
    are identified and their variances, to 1e-9."""
    import scipy.sparse as sparse
    from sdc.release.averaging import _exact, _exact_by_record_sets
    a, variances = random_design(seed)
    by_finest = _exact(sparse.csr_matrix(a), variances)
    by_sets = _exact_by_record_sets(sparse.csr_matrix(a), variances)
    assert np.allclose(by_sets[1], by_finest[1], rtol=1e-9, atol=0)
    assert (np.isinf(by_sets[0]) == np.isinf(by_finest[0])).all()
    finite = np.isfinite(by_finest[0])
    assert np.allclose(by_sets[0][finite], by_finest[0][finite], rtol=1e-9, atol=0)


def six_two_way_tables(records: int = 3000, seed: int = 7):
    """Six two-way count tables with every total over five dimensions drawn independently (sizes 12, 10, 8, 6, 5,
    log-normal code weights): about 2,000 finest cells with records, a few hundred record sets."""
    rng = np.random.default_rng(seed)
    sizes = {"a": 12, "b": 10, "c": 8, "d": 6, "e": 5}
    dims = sorted(sizes)
    drawn = np.stack([rng.choice(n, records, p=(w := rng.lognormal(0, 1, n)) / w.sum()) for n in sizes.values()], 1)
    cells, counts = np.unique(drawn, axis=0, return_counts=True)
    finest = [tuple(f"{d}{c}" for d, c in zip(dims, cell)) for cell in cells]
    codes = {d: [f"{d}{k}" for k in range(n)] for d, n in sizes.items()}
    tables = []
    for pair in [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("d", "e"), ("a", "e")]:
        made = []
        for combination in itertools.product(*(codes[d] + ["Total"] for d in pair)):
            original = int(sum(n for cell, n in zip(finest, counts)
                               if all(c == "Total" or cell[dims.index(d)] == c for d, c in zip(pair, combination))))
            made.append(CountCell(combination, original, V if original else None))
        tables.append(CountTable("x".join(pair), list(pair), {d: "Total" for d in pair}, {}, made))
    return dims, finest, counts.tolist(), tables


def test_a_part_with_many_finest_cells_and_few_record_sets_is_exact():
    """Six two-way tables over about 2,000 finest cells (beyond the finest cells' limit set here): computed on
    the record sets, exact, and equal to the computation on the finest cells to 1e-9; the identified finest
    cells are the same."""
    dims, finest, records, tables = six_two_way_tables()
    design = population_design(dims, finest, records, tables)
    n_sets, n_finest = design.matrix.shape
    assert n_finest > 1500 and n_sets < 600
    on_sets = blue_variances(design.matrix, design.variances, exact_limit=n_sets)
    on_finest = blue_variances(design.matrix, design.variances, exact_limit=n_finest)
    assert on_sets.rows_exact.all() and on_sets.finest_exact.all()
    assert np.allclose(on_sets.rows, on_finest.rows, rtol=1e-9, atol=0)
    assert (np.isinf(on_sets.finest) == np.isinf(on_finest.finest)).all()
    finite = np.isfinite(on_finest.finest)
    assert np.allclose(on_sets.finest[finite], on_finest.finest[finite], rtol=1e-9, atol=0)
    # the bound the part had before (every other finest cell known) is far below it
    bound = blue_variances(design.matrix, design.variances, exact_limit=0)
    assert np.sqrt(bound.rows.min()) < 0.6 < 1.0 < np.sqrt(on_sets.rows.min())


# six two-way tables over five dimensions drawn independently (20,000 persons): more finest cells than the exact
# computation on finest cells takes, a few hundred record sets
SIX_DIMS = {"a": 12, "b": 10, "c": 8, "d": 6, "e": 5}
SIX_PAIRS = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("d", "e"), ("a", "e")]


def six_persons(records: int = 20000, seed: int = 11) -> str:
    rng = np.random.default_rng(seed)
    drawn = {d: rng.choice(n, records, p=(w := rng.lognormal(0, 0.5, n)) / w.sum()) for d, n in SIX_DIMS.items()}
    return "id,sex,region,income," + ",".join(SIX_DIMS) + "\n" + "".join(
        f"{i},{'mw'[i % 2]},R{i % 5},{1000 + i % 700}," + ",".join(f"{d}{drawn[d][i]}" for d in SIX_DIMS) + "\n"
        for i in range(records))


@pytest.fixture(scope="module")
def six_tables(tmp_path_factory):
    models = {"sources.yml": BASE["sources.yml"]}
    for pair in SIX_PAIRS:
        name = "".join(pair)
        models[f"audit/ckm_{name}.sql"] = (f"{{{{ sdc.ckm_count(source('raw', 'persons'), dims={list(pair)!r}) }}}}"
                                           "\n")
        models[f"protected/{name}.sql"] = f"{{{{ sdc.ckm_published(ref('ckm_{name}')) }}}}\n"
    return make(tmp_path_factory.mktemp("six_tables"), models, persons=six_persons())


def test_a_release_with_many_finest_cells_passes_the_floor_its_exact_error_keeps_and_no_more(six_tables, tmp_path):
    """Issue 49: six two-way tables over more finest cells with records than the exact computation on finest
    cells takes (AVERAGING_EXACT_CELLS) and a few hundred record sets. The audit computes on the record sets: the
    smallest standard error is exact (the bound it gave before, every other finest cell known, is below 1 and
    refused at the default floor), the release passes a floor just below it and is refused just above, naming
    the same figure."""
    from sdc.conventions import AVERAGING_EXACT_CELLS

    out = tmp_path / "pub.duckdb"
    assert sorted(publish(six_tables.db, out, manifest=six_tables.manifest, min_standard_error=1.0)) == \
        sorted("".join(p) for p in SIX_PAIRS)
    report = audit_report(six_tables)
    (population,) = report["populations"]
    assert population["finest_cells_with_records"] > AVERAGING_EXACT_CELLS and population["record_sets"] < 700
    assert population["method"] == "exact" and report["method"] == "exact"
    exact = report["smallest_standard_error"]
    assert 1.1 < exact < 1.4
    # the same figure from the design alone, through the finest cells' computation (no limit)
    design = verifier_design(six_tables)
    found = blue_variances(design.matrix, design.variances, exact_limit=design.matrix.shape[1])
    assert np.sqrt(min(found.rows.min(), found.finest.min())) == pytest.approx(exact, abs=1e-4)
    assert np.sqrt(blue_variances(design.matrix, design.variances, exact_limit=0).rows.min()) < 1.0
    assert publish(six_tables.db, out, manifest=six_tables.manifest, min_standard_error=exact - 0.001)
    with pytest.raises(SdcError, match=rf"with a standard error of {exact:.3g}, below the floor of {exact + 0.001:g} "
                                       r"\(sdc publish --min-standard-error\)"):
        publish(six_tables.db, out, manifest=six_tables.manifest, min_standard_error=exact + 0.001)


def verifier_design(built):
    """The design the audit made of the built project's one population (captured from a publish to a scratch
    file)."""
    import sdc.release.averaging as averaging

    captured = []
    original = averaging.population_design

    def capture(*args):
        captured.append(original(*args))
        return captured[-1]

    averaging.population_design = capture
    try:
        publish(built.db, built.db.parent / "scratch_pub.duckdb", manifest=built.manifest, min_standard_error=0.0)
    finally:
        averaging.population_design = original
    return captured[-1]


@pytest.mark.parametrize("cells, pairs", [(100_000, 2000), (3000, 200)])
def test_a_total_with_a_small_variance_leaves_each_cell_its_own_direction(cells, pairs):
    """A total over every finest cell with a small variance (0.1) beside a cell published alone and pairs of that
    cell with one other each (variance 10): the cell alone is identified with variance 10, each paired cell with
    20 (its pair less the cell), the rest not at all; each row keeps its own variance. The rank was once decided
    against the largest diagonal entry, which the total makes large: the cells' directions were dropped (identified
    cells reported as not identified, a row's variance 0.005 for 10). 100,000 cells: on the record sets;
    3,000: on the finest cells."""
    import scipy.sparse as sparse

    rows = [np.arange(cells), [0]] + [[0, k] for k in range(1, pairs + 1)]
    indices = np.concatenate([np.asarray(r) for r in rows])
    a = sparse.csr_matrix((np.ones(len(indices)), indices, np.concatenate([[0], np.cumsum([len(r) for r in rows])])),
                          shape=(len(rows), cells))
    found = blue_variances(a, np.array([0.1] + [10.0] * (pairs + 1)))
    assert found.rows_exact.all() and found.finest_exact.all()
    assert np.allclose(found.rows, [0.1] + [10.0] * (pairs + 1), rtol=1e-9)
    assert np.allclose(found.finest[:pairs + 1], [10.0] + [20.0] * pairs, rtol=1e-9)
    assert np.isinf(found.finest[pairs + 1:]).all()


def test_an_empty_row_beside_a_grand_total_is_a_known_zero_in_the_bound_too():
    """A row over no finest cell (its count is 0, known) beside a grand total: a part of its own, variance 0, in
    the exact computation and in the lower bound alike (the bound once divided 0 by 0 there)."""
    import warnings

    a = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 1], [1, 0, 0, 0]], dtype=float)
    for limit in (0, 10):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            found = blue_variances(a, np.full(len(a), V), exact_limit=limit)
        assert found.rows[2] == 0 and np.isfinite(found.rows).all()
    assert (blue_variances(a, np.full(len(a), V), exact_limit=0).rows
            <= blue_variances(a, np.full(len(a), V)).rows * (1 + 1e-9)).all()


# ------------------------------------------------------------------------------------------ dissection (issue 49)
MARGINAL_TABLES = [(0,), (1,), (2,), (3,), (1, 2), (0, 1), (0, 2), (3, 1), (4, 1), (0, 1, 2), (3, 1, 2), (4, 5, 1), (0, 4)]


def marginal_population(records: int, seed: int, sizes=(40, 2, 10, 5, 12, 3), tables=MARGINAL_TABLES):
    """Persons over independently drawn dimensions (log-normal code weights) and tables of some of them (by
    default 13 tables of one to three), each with every margin: the design (one row per record set, int8 as
    population_design makes it), mixed noise variances, and each finest cell's code per dimension."""
    rng = np.random.default_rng(seed)
    drawn = np.stack([rng.choice(n, records, p=(w := rng.lognormal(0, 1, n)) / w.sum()) for n in sizes], 1)
    finest = np.unique(drawn, axis=0)
    margins = sorted({sub for t in tables for k in range(len(t) + 1) for sub in itertools.combinations(t, k)})
    sets = {}
    for sub in margins:
        key = np.zeros(len(finest), np.int64)
        for d in sub:
            key = key * sizes[d] + finest[:, d]
        _, cell = np.unique(key, return_inverse=True)
        for c in range(cell.max() + 1):
            sets.setdefault(tuple(np.flatnonzero(cell == c)), None)
    rows = list(sets)
    a = sparse.csr_matrix((np.ones(sum(map(len, rows)), np.int8), np.concatenate([np.array(r) for r in rows]),
                           np.concatenate([[0], np.cumsum([len(r) for r in rows])])), shape=(len(rows), len(finest)))
    return a, rng.choice([1.5, 2.0, 3.0], len(rows)), [finest[:, d] for d in range(len(sizes))]


@pytest.mark.parametrize("records, seed", [(300, 1), (2000, 2), (2000, 3), (20000, 4), (60000, 5)])
def test_the_dissection_gives_the_exact_figures_of_the_whole_gram_matrix(records, seed):
    """Issue 49: a part beyond the exact limits, computed block by block along the dimension that splits its
    record sets: every row's variance and every identified finest cell's equal the computation on the whole
    record sets' Gram matrix to 1e-9, from thin data (more record sets than finest cells, many cells identified)
    to dense."""
    a, variances, dimensions = marginal_population(records, seed)
    whole = blue_variances(a, variances, exact_limit=a.shape[0])
    split = blue_variances(a, variances, exact_limit=10, dimensions=dimensions)
    assert split.rows_exact.all() and split.finest_exact.all()
    assert np.allclose(split.rows, whole.rows, rtol=1e-9, atol=0)
    assert (np.isfinite(split.finest) == np.isfinite(whole.finest)).all()
    finite = np.isfinite(whole.finest)
    assert np.allclose(split.finest[finite], whole.finest[finite], rtol=1e-9, atol=0)
    if records <= 2000:
        assert finite.sum() > 50  # thin data: finest cells a reader identifies
    # and the bound such a part had before is below the exact figures, far below at the smallest
    bound = blue_variances(a, variances, exact_limit=10)
    assert (bound.rows <= whole.rows * (1 + 1e-9)).all() and bound.rows.min() < 0.6 * whole.rows.min()


@pytest.mark.parametrize("seed", range(6))
def test_a_separator_of_margins_only_leaves_the_schur_complement_zero_and_the_figures_exact(seed):
    """Region × age and region × sex with their margins, split along region: every separator record set (age,
    sex, the total) is a sum of the groups' record sets, so the Schur complement is 0 up to rounding. LAPACK's
    pivoted Cholesky compares only the pivots after the first with its tolerance: taken as rank 1, a pivot of
    rounding noise made rows' variances up to 83 % off (found in review). The figures are the whole Gram
    matrix's."""
    a, variances, dimensions = marginal_population(3000, seed, sizes=(12, 6, 2), tables=[(0, 1), (0, 2)])
    variances = np.random.default_rng(seed).uniform(0.5, 2.0, a.shape[0])
    whole = blue_variances(a, variances, exact_limit=a.shape[0])
    split = blue_variances(a, variances, exact_limit=10, dimensions=dimensions)
    assert split.rows_exact.all()
    assert np.allclose(split.rows, whole.rows, rtol=1e-9, atol=0)
    assert (np.isfinite(split.finest) == np.isfinite(whole.finest)).all()
    finite = np.isfinite(whole.finest)
    assert np.allclose(split.finest[finite], whole.finest[finite], rtol=1e-9, atol=0)


def test_a_design_with_other_coefficients_than_1_is_not_dissected_but_bounded():
    """The dissection counts finest cells in common: a design whose coefficients are not all 1 (blue_variances
    takes any) gets the lower bound instead, never figures that read its coefficients as 1 (found in review)."""
    a, variances, dimensions = marginal_population(2000, 2)
    weighted = a.astype(float)
    weighted.data[::7] = 2.0
    found = blue_variances(weighted, variances, exact_limit=10, dimensions=dimensions)
    assert not found.rows_exact.any()
    assert (found.rows <= blue_variances(weighted, variances, exact_limit=a.shape[0]).rows * (1 + 1e-9)).all()


def test_the_dissection_picks_the_dimension_with_the_fewest_record_sets_over_several_codes():
    """The separator is the record sets over more than one code of the chosen dimension: here the first (40
    codes), whose tables leave fewer sets outside its codes than any other's; rows of different groups share no
    finest cell."""
    from sdc.release.averaging_dissection import separator_groups

    a, _, dimensions = marginal_population(20000, 4)
    groups, chosen = separator_groups(a, dimensions)
    assert chosen == 0
    for k, codes in enumerate(dimensions):
        if k != chosen:
            other, _ = separator_groups(a, [codes, codes])
            assert (other < 0).sum() >= (groups < 0).sum()
    member = a[groups >= 0].tocoo()
    owner = groups[groups >= 0][member.row]
    per_cell = np.full(a.shape[1], -1)
    per_cell[member.col] = owner
    assert (per_cell[member.col] == owner).all()  # each finest cell under rows of one group only


def test_beyond_the_separator_limit_the_part_is_bounded_and_said_to_be():
    a, variances, dimensions = marginal_population(20000, 4)
    found = blue_variances(a, variances, exact_limit=10, dimensions=dimensions, separator_limit=50)
    assert not found.rows_exact.any() and not found.finest_exact.any()
    assert (found.rows <= blue_variances(a, variances, exact_limit=a.shape[0]).rows * (1 + 1e-9)).all()


def test_a_release_beyond_the_exact_limits_passes_its_exact_error_and_no_more(six_tables, tmp_path, monkeypatch):
    """Issue 49, end to end: the six tables' release with the exact limits set below its finest cells and its
    record sets, so that the audit factors it by dissection. The smallest standard error is exact and the same
    as the whole Gram matrix gives; the release passes a floor just below it and is refused just above."""
    import sdc.release.averaging as averaging

    original = averaging.blue_variances

    def small_limits(design, variances, exact_limit=0, dimensions=None, **kwargs):
        return original(design, variances, 50, dimensions, **kwargs)

    monkeypatch.setattr(averaging, "blue_variances", small_limits)
    out = tmp_path / "pub.duckdb"
    publish(six_tables.db, out, manifest=six_tables.manifest, min_standard_error=0.0)
    report = audit_report(six_tables)
    (population,) = report["populations"]
    assert population["finest_cells_with_records"] > 50 and population["record_sets"] > 50
    assert population["method"] == "exact" and report["method"] == "exact"
    exact = report["smallest_standard_error"]
    monkeypatch.setattr(averaging, "blue_variances", original)
    design = verifier_design(six_tables)
    found = blue_variances(design.matrix, design.variances, exact_limit=design.matrix.shape[0])
    assert np.sqrt(min(found.rows.min(), found.finest.min())) == pytest.approx(exact, abs=1e-4)
    monkeypatch.setattr(averaging, "blue_variances", small_limits)
    assert publish(six_tables.db, out, manifest=six_tables.manifest, min_standard_error=exact - 0.001)
    with pytest.raises(SdcError, match=rf"with a standard error of {exact:.3g}, below the floor of {exact + 0.001:g} "
                                       r"\(sdc publish --min-standard-error\)"):
        publish(six_tables.db, out, manifest=six_tables.manifest, min_standard_error=exact + 0.001)


# the census release of the bench (bench/release_verification_bench.py), smaller: 18 count tables of one population
# over seven dimensions drawn independently, two of them with a region hierarchy
CENSUS_DIMS = {"region": 40, "age": 10, "sex": 2, "nation": 8, "occupation": 12, "education": 5, "sector": 6}
CENSUS_TABLES = [["region"], ["sex"], ["age"], ["nation"], ["sex", "age"], ["region", "sex"], ["region", "age"],
                 ["nation", "sex"], ["occupation", "sex"], ["education", "age"], ["sector", "region"],
                 ["region", "sex", "age"], ["nation", "sex", "age"], ["occupation", "education", "sex"],
                 ["sector", "sex", "education"], ["sector", "education"]]
CENSUS_HIERARCHY_TABLES = [["region", "sex"], ["region", "sector"]]


@pytest.fixture(scope="module")
def census_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("census_tables")
    rng = np.random.default_rng(49)
    records = 20000
    drawn = {d: rng.choice(n, records, p=(w := rng.lognormal(0, 1, n)) / w.sum()) for d, n in CENSUS_DIMS.items()}
    persons = "id,income," + ",".join(CENSUS_DIMS) + "\n" + "".join(
        f"{i},{1000 + i % 700}," + ",".join(f"{d[0].upper()}{drawn[d][i]:02d}" for d in CENSUS_DIMS) + "\n"
        for i in range(records))
    hierarchy = root / "sdc_hierarchies.csv"
    hierarchy.write_text("dimension,code,parent\nregion,Total,\n" + "".join(f"region,S{s},Total\n" for s in range(4))
                         + "".join(f"region,R{r:02d},S{r % 4}\n" for r in range(CENSUS_DIMS["region"])))
    models = {"sources.yml": BASE["sources.yml"]}
    for number, dims in enumerate(CENSUS_TABLES + CENSUS_HIERARCHY_TABLES):
        hierarchy_argument = ", hierarchy=ref('sdc_hierarchies')" if number >= len(CENSUS_TABLES) else ""
        models[f"audit/ckm_t{number:02d}.sql"] = (
            f"{{{{ sdc.ckm_count(source('raw', 'persons'), dims={dims!r}{hierarchy_argument}) }}}}\n")
        models[f"protected/t{number:02d}.sql"] = f"{{{{ sdc.ckm_published(ref('ckm_t{number:02d}')) }}}}\n"
    return make(root, models, persons=persons, seeds={"sdc_hierarchies.csv": hierarchy})


def test_a_census_release_passes_the_floor_its_exact_error_keeps_and_is_refused_above(census_tables, tmp_path,
                                                                                      monkeypatch):
    """Issue 49: 18 count tables of one population (seven dimensions drawn independently, every margin, a region
    hierarchy in two), the bench's census release made smaller (20,000 persons). Its smallest standard error is
    exact, the same whether the audit factors the whole record sets' Gram matrix or dissects it (the limits set
    below its size); the release passes a floor just below it and is refused just above and at the default floor
    (its figure is below 1), naming the figure; the bound the audit gave before for a release beyond its limits is
    far below it. (The bench's release of the same shape over 10^5 to 10^7 persons keeps the default floor: 1.23.)"""
    import sdc.release.averaging as averaging

    out = tmp_path / "pub.duckdb"
    publish(census_tables.db, out, manifest=census_tables.manifest, min_standard_error=0.0)
    whole = audit_report(census_tables)
    (population,) = whole["populations"]
    assert len(population["tables"]) == 18 and population["method"] == "exact"
    assert population["record_sets"] > 1000 and population["finest_cells_with_records"] > 5000
    exact = whole["smallest_standard_error"]
    assert 0.9 < exact < 1.0  # small cells, small variances: below the default floor (the bench's 10^5 release: 1.23)
    original = averaging.blue_variances

    def small_limits(design, variances, exact_limit=0, dimensions=None, **kwargs):
        return original(design, variances, 500, dimensions, **kwargs)

    monkeypatch.setattr(averaging, "blue_variances", small_limits)
    publish(census_tables.db, out, manifest=census_tables.manifest, min_standard_error=0.0)
    dissected = audit_report(census_tables)
    assert dissected["method"] == "exact" and dissected["smallest_standard_error"] == exact
    assert [t["smallest_standard_error"] for t in dissected["tables"]] == \
        [t["smallest_standard_error"] for t in whole["tables"]]
    assert publish(census_tables.db, out, manifest=census_tables.manifest, min_standard_error=exact - 0.001)
    for floor in (exact + 0.001, 1.0):  # just above, and the default floor
        with pytest.raises(SdcError, match=rf"with a standard error of {exact:.3g}, below the floor of {floor:g} "
                                           r"\(sdc publish --min-standard-error\)"):
            publish(census_tables.db, out, manifest=census_tables.manifest, min_standard_error=floor)
    monkeypatch.setattr(averaging, "blue_variances", original)
    design = verifier_design(census_tables)
    bound = blue_variances(design.matrix, design.variances, exact_limit=0)
    assert np.sqrt(min(bound.rows.min(), bound.finest.min())) < 0.6 * exact
