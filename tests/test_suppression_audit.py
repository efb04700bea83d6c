"""The LP audit of suppression patterns (reference §2.7, TV-13)."""

import itertools

import numpy as np
import pytest

from sdc.errors import SdcError
from sdc.suppression import audit_pattern


def grid_table(inner):
    """Cells of an r x c table with row, column and grand totals, and its relations.

    Cell index (i, j) = i * (c + 1) + j for i <= r, j <= c; row r and column c hold the totals.
    """
    inner = np.asarray(inner, dtype=float)
    r, c = inner.shape
    full = np.zeros((r + 1, c + 1))
    full[:r, :c] = inner
    full[:r, c] = inner.sum(axis=1)
    full[r, :c] = inner.sum(axis=0)
    full[r, c] = inner.sum()
    index = lambda i, j: i * (c + 1) + j  # noqa: E731
    relations = []
    for i in range(r + 1):
        relations.append([(index(i, c), 1.0)] + [(index(i, j), -1.0) for j in range(c)])
    for j in range(c + 1):
        relations.append([(index(r, j), 1.0)] + [(index(i, j), -1.0) for i in range(r)])
    return full.ravel(), relations, index


def test_tv13_geurts_example_x11_lies_in_3_to_6():
    # Handbook ch. 4 Example 3 (Geurts 1992): R1: X11 X12 | 7; R2: X21 X22 | 3; R3: 3 3 | 6;
    # column totals 9, 7, 16; with X11 = 4, X12 = 3, X21 = 2, X22 = 1.
    values, relations, index = grid_table([[4, 3], [2, 1], [3, 3]])
    suppressed = np.zeros(len(values), bool)
    for i, j in itertools.product([0, 1], [0, 1]):
        suppressed[index(i, j)] = True
    result = audit_pattern(values, suppressed, relations)
    got = {(iv.cell, iv.feasible_lower, iv.feasible_upper) for iv in result.intervals}
    assert got == {(index(0, 0), 3.0, 6.0), (index(0, 1), 1.0, 4.0), (index(1, 0), 0.0, 3.0), (index(1, 1), 0.0, 3.0)}
    assert result.passed  # nothing was declared sensitive


def test_sensitive_cell_needs_its_protection_interval():
    values, relations, index = grid_table([[4, 3], [2, 1], [3, 3]])
    suppressed = np.zeros(len(values), bool)
    for i, j in itertools.product([0, 1], [0, 1]):
        suppressed[index(i, j)] = True
    sensitive = np.zeros(len(values), bool)
    sensitive[index(1, 1)] = True  # X22 = 1, feasible [0, 3]
    for upl, passes in [(2.0, True), (2.5, False)]:
        protection = np.zeros(len(values))
        protection[index(1, 1)] = upl
        result = audit_pattern(values, suppressed, relations, sensitive=sensitive,
                               protection_lower=np.where(sensitive, 1.0, 0.0), protection_upper=protection)
        assert result.passed is passes
    assert [f.cell for f in result.failures] == [index(1, 1)]


def test_a_lone_suppressed_cell_in_a_row_is_disclosed_exactly():
    # seed 001: suppressing only Medizin/weiblich (1) in the Studienfach x Geschlecht table discloses it
    values, relations, index = grid_table([[4, 3], [9, 12], [4, 1], [10, 10]])
    suppressed = np.zeros(len(values), bool)
    suppressed[index(2, 1)] = True
    sensitive = suppressed.copy()
    result = audit_pattern(values, suppressed, relations, sensitive=sensitive,
                           protection_lower=np.ones(len(values)), protection_upper=np.ones(len(values)))
    assert not result.passed and result.failures[0].exactly_disclosed
    assert (result.failures[0].feasible_lower, result.failures[0].feasible_upper) == (1.0, 1.0)


def test_seed001_secondary_pattern_protects_medizin_weiblich():
    # seed 001, "Sekundärsperrung": Bauingenieurwesen m/w and Medizin m/w suppressed
    values, relations, index = grid_table([[4, 3], [9, 12], [4, 1], [10, 10]])
    suppressed = np.zeros(len(values), bool)
    for i, j in itertools.product([0, 2], [0, 1]):
        suppressed[index(i, j)] = True
    sensitive = np.zeros(len(values), bool)
    sensitive[index(2, 1)] = True
    # non-empty frequency cells are at least 1, so a count of 1 can only be protected upwards:
    # Bau w + Med w = 26 - 12 - 10 = 4 with Bau w >= 1 gives Medizin/weiblich in [1, 3]
    result = audit_pattern(values, suppressed, relations, sensitive=sensitive,
                           protection_upper=np.ones(len(values)), lower=np.ones(len(values)))
    interval = next(iv for iv in result.intervals if iv.cell == index(2, 1))
    assert (interval.feasible_lower, interval.feasible_upper) == (1.0, 3.0)
    assert result.passed
    # a lower protection level of 1 is clipped to the a-priori bound: nobody can be kept from knowing
    # that a non-empty count is at least 1
    strict = audit_pattern(values, suppressed, relations, sensitive=sensitive, protection_lower=np.ones(len(values)),
                           protection_upper=np.ones(len(values)), lower=np.ones(len(values)))
    medizin = next(iv for iv in strict.intervals if iv.cell == index(2, 1))
    assert strict.passed and (medizin.required_lower, medizin.required_upper) == (1.0, 2.0)


def test_unbounded_cells_and_bad_input():
    values, relations, index = grid_table([[4, 3], [2, 1]])
    suppressed = np.zeros(len(values), bool)
    for cell in (index(0, 0), index(0, 1), index(0, 2), index(2, 0), index(2, 1), index(2, 2)):
        suppressed[cell] = True
    result = audit_pattern(values, suppressed, relations)
    assert any(np.isinf(iv.feasible_upper) for iv in result.intervals)
    with pytest.raises(SdcError, match=r"the cell values break relation 0"):
        broken = values.copy()
        broken[index(0, 2)] += 1
        audit_pattern(broken, suppressed, relations)
    with pytest.raises(SdcError, match=r"sensitive cell 0 is published, not suppressed"):
        audit_pattern(values, np.zeros(len(values), bool), relations, sensitive=np.eye(1, len(values), 0, dtype=bool)[0])
    with pytest.raises(SdcError, match=r"relation 0 names cell 99"):
        audit_pattern(values, suppressed, [[(99, 1.0)]])


def test_a_kept_trial_column_gives_the_lp_of_the_grown_group():
    # free + keep turns a component's LP into the one of the component grown by a cell, warm: every
    # cell's min and max must equal those of an LP built afresh for the grown component
    from sdc.suppression.audit import AuditTable

    values, relations, index = grid_table([[7, 3, 9], [2, 8, 4], [6, 5, 1]])
    suppressed = np.zeros(len(values), bool)
    suppressed[[index(0, 0), index(0, 1), index(1, 0), index(1, 1), index(1, 2)]] = True
    table = AuditTable(values, relations, upper=np.full(len(values), 100.0))
    group = table.components(suppressed)[0]
    lp = table.component_lp(group, suppressed)
    x12 = lp.position_of[index(1, 2)]
    assert [lp.extreme(x12, sign)[0] for sign in (1.0, -1.0)] == pytest.approx([4, 4])  # alone in column 2
    assert lp.free(index(0, 2))
    lp.keep()
    grown = suppressed.copy()
    grown[index(0, 2)] = True
    fresh = table.component_lp(table.components(grown)[0], grown)
    for cell in fresh.cells:
        for sign in (1.0, -1.0):
            assert lp.extreme(lp.position_of[cell], sign)[0] == pytest.approx(
                fresh.extreme(fresh.position_of[cell], sign)[0]), (cell, sign)
    # x02 + x12 = 13 with x02 >= 0, and row 1 and the rectangle above allow either end
    assert [lp.extreme(x12, sign)[0] for sign in (1.0, -1.0)] == pytest.approx([0, 13])


def test_prices_tell_which_published_cell_can_widen_an_interval():
    # 10 = 2 + 3 + 5 with 2 and 3 suppressed (bounds 0..100): x1 + x2 = 5. At min x1 = 0 the
    # published 5 cannot help (price 0); at max x1 = 5 lowering it would raise x1 one for one (price +1:
    # decreasing the new column improves). A cell of a relation outside the LP cannot be priced (NaN).
    from sdc.suppression.audit import AuditTable

    values = np.array([10.0, 2, 3, 5, 12, 2])
    relations = [[(0, 1.0), (1, -1.0), (2, -1.0), (3, -1.0)], [(4, 1.0), (0, -1.0), (5, -1.0)]]
    table = AuditTable(values, relations, upper=np.full(6, 100.0))
    suppressed = np.array([False, True, True, False, False, False])
    lp = table.component_lp(table.components(suppressed)[0], suppressed)
    assert lp.extreme(lp.position_of[1], 1.0)[0] == pytest.approx(0)
    assert lp.prices([3])[0] == pytest.approx(0)
    assert lp.extreme(lp.position_of[1], -1.0)[0] == pytest.approx(5)
    assert lp.prices([3])[0] == pytest.approx(1)
    assert np.isnan(lp.prices([0, 4])).all()  # relation 1 holds no suppressed cell: not in this LP


def test_an_lp_that_fails_on_its_warm_start_is_solved_again_from_scratch():
    """HiGHS can end a warm-started re-solve of a large LP in 'Solve error' (a 4-D table of 10,000 turnover cells
    did, after hundreds of re-solves): the audit solves it again without the basis instead of failing."""
    import highspy

    from sdc.suppression.audit import AuditTable, ComponentLP

    class FailsOnce:
        """The solver, whose first run reports a solve error."""

        def __init__(self, highs):
            self.highs, self.failed = highs, False

        def __getattr__(self, name):
            return getattr(self.highs, name)

        def getModelStatus(self):
            if not self.failed:
                self.failed = True
                return highspy.HighsModelStatus.kSolveError
            return self.highs.getModelStatus()

    table = AuditTable([12, 2, 4, 6], [[(0, 1), (1, -1), (2, -1), (3, -1)]])
    lp = ComponentLP(table, np.array([1, 2]), np.array([False, True, True, False]))
    lp._highs = FailsOnce(lp._highs)
    assert lp.extreme(0, 1.0)[0] == 0.0 and lp._highs.failed
    assert lp.extreme(0, -1.0)[0] == 6.0


def test_clipping_to_the_a_priori_interval_skips_the_lps_an_earlier_solution_answers():
    """Each cell's a-priori interval (every cell free within its bounds, the relations holding) as an independent
    LP gives it; the table's clipping reaches the same requirements with fewer LPs over the whole table, as a
    table an earlier LP found already shows where a side reaches past the requirement."""
    from scipy.optimize import linprog

    from sdc.suppression.audit import AuditTable

    values, relations, index = grid_table([[4, 3, 9], [2, 1, 5], [3, 3, 1]])
    n = len(values)
    wide = np.full(n, 6.0)  # each cell asks for 6 either side: beyond its a-priori interval in most directions
    lower, upper = np.ones(n), np.full(n, 1.5 * values.max())
    table = AuditTable(values, relations, sensitive=np.ones(n, bool), protection_lower=wide, protection_upper=wide,
                       lower=lower, upper=upper, integer=True)
    solved = []
    for cell in range(n):
        table.clip_to_a_priori(cell)
        if cell == 0:
            lp = table._a_priori_lp
            extreme = lp.extreme
            lp.extreme = lambda position, sign: solved.append(position) or extreme(position, sign)
    matrix = np.zeros((len(relations), n))
    for r, relation in enumerate(relations):
        for k, a in relation:
            matrix[r, k] = a
    for cell in range(n):
        objective = np.zeros(n)
        objective[cell] = 1.0
        ends = [linprog(sign * objective, A_eq=matrix, b_eq=np.zeros(len(relations)),
                        bounds=list(zip(lower, upper))).fun * sign for sign in (1.0, -1.0)]
        expected = (max(values[cell] - 6, np.ceil(ends[0] - 1e-9)), min(values[cell] + 6, np.floor(ends[1] + 1e-9)))
        assert (table.required_lower[cell], table.required_upper[cell]) == expected, cell
    assert len(solved) < 2 * (n - 1)


def test_a_magnitude_tables_a_priori_interval_needs_no_lp_where_a_scaled_table_shows_it():
    """The zero table and the table times 1.5 (sdcTable's default upper bound) keep every relation and bound: a
    requirement of 10 % either side lies within them, so clipping solves no LP over the whole table."""
    from sdc.suppression.audit import AuditTable, default_upper

    values, relations, index = grid_table([[40, 30, 90], [20, 10, 50], [30, 30, 10]])
    n = len(values)
    table = AuditTable(values, relations, sensitive=np.ones(n, bool), protection_lower=0.1 * values,
                       protection_upper=0.1 * values, lower=np.zeros(n), upper=default_upper(values))
    before = (table.required_lower.copy(), table.required_upper.copy())
    assert not any(table.clip_to_a_priori(cell) for cell in range(n))
    assert table._a_priori_lp._highs.getInfo().simplex_iteration_count == -1  # never run
    assert (table.required_lower == before[0]).all() and (table.required_upper == before[1]).all()


def test_pushing_a_large_group_towards_its_bounds_keeps_the_verdict_with_fewer_lps(monkeypatch):
    """A 30 x 30 table with 70 % of its cells suppressed (one group of more than PUSH_CELLS) and a protection
    interval that some cells miss: the LPs that push many cells at once (_push_towards_bounds) settle half the
    sides at the first go (fewer LPs in all; in the 4-D tables of bench/suppression_scale_bench.py a fifth), and
    the cells named unprotected are exactly those found with one LP per cell and side, and those of an
    independent LP per cell (scipy's linprog) for a sample."""
    from scipy.optimize import linprog

    from sdc.suppression import audit
    from sdc.suppression.audit import AuditTable, unprotected_cells

    rng = np.random.default_rng(7)
    values, relations, _ = grid_table(rng.integers(1, 60, (30, 30)))
    n = len(values)
    suppressed = rng.random(n) < 0.7
    sensitive = suppressed & (rng.random(n) < 0.5)
    # most ask for 5-30 % of their value, one in ten for more than the pattern gives some of them
    level = np.round(np.where(rng.random(n) < 0.2, rng.uniform(0.3, 1.6, n), rng.uniform(0.05, 0.3, n)) * values)
    solves = []

    def judged(push_cells):
        monkeypatch.setattr(audit, "PUSH_CELLS", push_cells)
        table = AuditTable(values, relations, sensitive=sensitive, protection_lower=level, protection_upper=level,
                           upper=np.full(n, 1.5 * values.max()))
        counted = audit.ComponentLP.extreme

        def extreme(lp, position, sign):
            solves.append(push_cells)
            return counted(lp, position, sign)

        pushing = audit.ComponentLP.push

        def push(lp, positions, weights):
            solves.append(push_cells)
            return pushing(lp, positions, weights)

        monkeypatch.setattr(audit.ComponentLP, "extreme", extreme)
        monkeypatch.setattr(audit.ComponentLP, "push", push)
        failing = unprotected_cells(table, suppressed, clip=False)
        monkeypatch.setattr(audit.ComponentLP, "extreme", counted)
        monkeypatch.setattr(audit.ComponentLP, "push", pushing)
        return failing, table

    push_cells = audit.PUSH_CELLS
    assert max(len(g) for g in AuditTable(values, relations).components(suppressed)) > push_cells
    pushed, table = judged(push_cells)
    one_by_one, _ = judged(10**9)
    assert pushed == one_by_one and 0 < len(pushed) < sensitive.sum()
    assert solves.count(push_cells) < 0.95 * solves.count(10**9)  # LPs in all, the pushes counted
    matrix = np.zeros((len(relations), n))
    for r, relation in enumerate(relations):
        for k, a in relation:
            matrix[r, k] = a
    published = ~suppressed
    bounds = [(v, v) if p else (0, 1.5 * values.max()) for v, p in zip(values, published)]
    # an LP each way per cell: those named and 40 others
    sample = np.union1d(pushed, rng.choice(np.flatnonzero(sensitive), 40, replace=False))
    expected = []
    for cell in sample:
        objective = np.zeros(n)
        objective[cell] = 1.0
        low = linprog(objective, A_eq=matrix, b_eq=np.zeros(len(relations)), bounds=bounds).fun
        high = -linprog(-objective, A_eq=matrix, b_eq=np.zeros(len(relations)), bounds=bounds).fun
        if low > table.required_lower[cell] + 1e-6 or high < table.required_upper[cell] - 1e-6:
            expected.append(int(cell))
    assert pushed == sorted(expected)


def exact_a_priori(values, relations, lower, upper):
    """Each cell's least and greatest value over every table within the bounds that keeps the relations: two LPs
    per cell over the whole table (scipy's linprog, independent of the audit's HiGHS models)."""
    from scipy.optimize import linprog

    n = len(values)
    matrix = np.zeros((len(relations), n))
    for r, relation in enumerate(relations):
        for k, a in relation:
            matrix[r, k] = a
    ends = np.zeros((2, n))
    for cell in range(n):
        objective = np.zeros(n)
        objective[cell] = 1.0
        for side, sign in enumerate((1.0, -1.0)):
            ends[side, cell] = sign * linprog(sign * objective, A_eq=matrix, b_eq=np.zeros(len(relations)),
                                              bounds=list(zip(lower, upper))).fun
    return ends


@pytest.mark.parametrize("seed", range(6))
def test_implied_bounds_hold_in_every_table_the_bounds_and_relations_allow(seed):
    """Issue 50: interval propagation through the relations (implied_bounds) narrows requirements without an LP;
    it must never claim more than the exact a-priori interval (an LP per cell) shows, and in a grid table of
    counts with lower bound 1 it finds the totals of cells of 1 exactly."""
    from sdc.suppression.audit import implied_bounds, relation_matrix

    rng = np.random.default_rng(seed)
    inner = np.where(rng.random((3, 4)) < 0.3, 0, rng.integers(1, 4, (3, 4)))
    values, relations, index = grid_table(inner)
    lower, upper = np.where(values > 0, 1.0, 0.0), np.where(values > 0, 1.5 * values.max(), 0.0)
    low, high = implied_bounds(relation_matrix(relations, len(values)), lower, upper)
    exact = exact_a_priori(values, relations, lower, upper)
    assert (low <= exact[0] + 1e-7).all() and (high >= exact[1] - 1e-7).all()
    assert (low >= lower).all() and (high <= upper).all()
    # a row total is at least its number of non-empty cells: found here as by the LP
    for i in range(3):
        assert low[index(i, 4)] == exact[0][index(i, 4)] == max(1.0, (inner[i] > 0).sum()) or inner[i].sum() == 0


def test_implied_bounds_are_the_exact_interval_along_a_one_dimensional_hierarchy():
    """Total -> 2 groups -> 5 leaves: a tree of relations, where propagation reaches the exact interval."""
    from sdc.suppression.audit import implied_bounds, relation_matrix

    leaves = np.array([1.0, 1.0, 4.0, 2.0, 1.0])
    values = np.concatenate([[leaves.sum(), leaves[:3].sum(), leaves[3:].sum()], leaves])
    relations = [[(0, 1.0), (1, -1.0), (2, -1.0)], [(1, 1.0), (3, -1.0), (4, -1.0), (5, -1.0)],
                 [(2, 1.0), (6, -1.0), (7, -1.0)]]
    lower, upper = np.ones(8), np.full(8, 12.0)
    low, high = implied_bounds(relation_matrix(relations, 8), lower, upper)
    exact = exact_a_priori(values, relations, lower, upper)
    np.testing.assert_allclose(low, exact[0])
    np.testing.assert_allclose(high, exact[1])
    assert low.tolist() == [5, 3, 2, 1, 1, 1, 1, 1] and high.tolist() == [12, 10, 9, 8, 8, 8, 8, 8]


def test_implied_bounds_of_weighted_relations_and_whole_numbers():
    """A relation with other coefficients (y0 = 2 y1 + y2, y1 in [1, 3], y2 in [0, 10]) bounds y0 to [2, 16];
    a cell y3 = y0 / 4 (4 y3 = y0) then lies in [0.5, 4]; in whole numbers in [1, 4], so y0 is at least 4."""
    from sdc.suppression.audit import implied_bounds, relation_matrix

    matrix = relation_matrix([[(0, 1.0), (1, -2.0), (2, -1.0)], [(3, 4.0), (0, -1.0)]], 4)
    lower, upper = np.array([0.0, 1.0, 0.0, 0.0]), np.array([100.0, 3.0, 10.0, 100.0])
    low, high = implied_bounds(matrix, lower, upper)
    assert low.tolist() == [2.0, 1.0, 0.0, 0.5] and high.tolist() == [16.0, 3.0, 10.0, 4.0]
    low, high = implied_bounds(matrix, lower, upper, integer=True)
    assert low.tolist() == [4.0, 1.0, 0.0, 1.0] and high.tolist() == [16.0, 3.0, 10.0, 4.0]


def test_a_total_of_two_counts_of_one_needs_no_protection_below_two_and_no_lp_to_know_it():
    """freq:3 asks a count of 2 to reach 1 and 3; a row total of two non-empty cells of 1 is at least 2 in every
    table the attacker's bounds allow, so its requirement is [2, 3] from the start, with no LP over the table."""
    from sdc.suppression.audit import AuditTable

    values, relations, index = grid_table([[1, 1, 0], [5, 4, 6], [3, 3, 8]])
    n = len(values)
    total = index(0, 3)
    assert values[total] == 2
    level = np.where(np.arange(n) == total, 1.0, 0.0)
    table = AuditTable(values, relations, sensitive=np.arange(n) == total, protection_lower=level,
                       protection_upper=level, lower=np.where(values > 0, 1.0, 0.0),
                       upper=np.full(n, 1.5 * values.max()), integer=True)
    assert (table.required_lower[total], table.required_upper[total]) == (2.0, 3.0)
    assert table._a_priori_lp is None


def test_a_requirement_inside_the_a_priori_interval_is_confirmed_by_one_table_not_by_the_extreme(monkeypatch):
    """Clipping asks first whether any table the bounds allow reaches the requirement (an LP without objective,
    which stops at the first such table); only where none does is the extreme solved. On three linked 4-D tables
    the extremes of cells of 1 asked to reach 2 took up to 50 s each: the cell's a-priori maximum lay near
    230,000."""
    from sdc.suppression.audit import AuditTable, ComponentLP

    values, relations, index = grid_table([[1, 4, 9], [2, 5, 5], [3, 3, 8]])
    n = len(values)
    one = index(0, 0)
    level = np.where(np.arange(n) == one, 1.0, 0.0)
    table = AuditTable(values, relations, sensitive=np.arange(n) == one, protection_lower=level,
                       protection_upper=level, lower=np.where(values > 0, 1.0, 0.0),
                       upper=np.full(n, 1.5 * values.max()), integer=True)
    assert (table.required_lower[one], table.required_upper[one]) == (1.0, 2.0)

    def no_extreme(self, position, sign):
        raise AssertionError("the extreme was solved")

    monkeypatch.setattr(ComponentLP, "extreme", no_extreme)
    assert not table.clip_to_a_priori(one)  # 1.5 x the table does not show 2; one LP's table does
    assert table._a_priori_seen[1][one] >= 2.0
    # a requirement beyond every table ends where the exact a-priori interval does
    monkeypatch.undo()
    wide = AuditTable(values, relations, sensitive=np.arange(n) == one, protection_lower=level * 5,
                      protection_upper=level * 500, lower=np.where(values > 0, 1.0, 0.0),
                      upper=np.full(n, 1.5 * values.max()), integer=True)
    wide.clip_to_a_priori(one)
    exact = exact_a_priori(values, relations, wide.lower, wide.upper)
    assert (wide.required_lower[one], wide.required_upper[one]) == (exact[0][one], exact[1][one]) == (1.0, 52.0)


@pytest.mark.parametrize("relation", [[(0, 1), (1, -1), (2, -1), (3, 0)], [(0, 1), (1, -1), (2, -1), (2, 1), (2, -1)]],
                         ids=["a zero coefficient", "a cell listed three times"])
def test_implied_bounds_read_a_relation_as_its_terms(relation):
    """A zero coefficient is no term (0 x an unbounded cell is no bound) and a cell listed several times is one term
    with the sum of its coefficients: the requirement stays a number, and the pattern passes as it did before."""
    audit = audit_pattern([10.0, 4.0, 6.0, 5.0], [True, True, True, False], [relation],
                          sensitive=[True, False, False, False], protection_lower=[2, 0, 0, 0],
                          protection_upper=[2, 0, 0, 0])
    assert audit.passed and audit.intervals[0].required_lower == 8.0


def test_implied_bounds_allow_for_rounding_beside_large_bounds():
    """a = b + c with a and b near 10^12: the sum of the others less a cell's own term loses about 10^-4 to
    rounding, and the bound of c must not rise above its exact least value 0 (linprog)."""
    from scipy.sparse import csr_matrix

    from sdc.suppression.audit import implied_bounds

    low, high = implied_bounds(csr_matrix(np.array([[-1.0, 1.0, -1.0]])), np.array([0.0, 1e12, 1e12 - 0.1]),
                               np.array([0.1, 1e12, 1e12]))
    assert low[0] <= 0.0 and high[0] >= 0.1


def test_an_integer_table_clips_to_the_whole_number_the_lp_bound_rounds_to():
    """Whole-number cells: a requirement of 1.75 whose LP a-priori bound is 1.5 reaches only 2 in integers, so it is
    clipped to 2 as the extreme says, not left at 1.75 because a fractional table reaches it."""
    values = [1.0, 11.0, 11.0, 11.0, 3.0]
    rows = [[(0, 2.0), (1, 3.0), (2, -3.0), (3, -1.0), (4, 3.0)], [(0, 2.0), (1, -1.0), (2, 2.0), (3, -2.0), (4, 3.0)]]
    audit = audit_pattern(values, [True] * 5, rows, sensitive=[False, False, True, False, False],
                          protection_lower=[0, 0, 9.25, 0, 0], protection_upper=[0] * 5, lower=[1.0] * 5,
                          upper=[12.0] * 5, integer=True)
    cell = audit.intervals[2]
    assert audit.passed and (cell.required_lower, cell.feasible_lower, cell.integer_lower) == (2.0, 1.5, 2.0)
