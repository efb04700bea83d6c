"""The secondary suppression heuristic: always passes the audit; never cheaper than the MILP optimum."""

import numpy as np
import pytest

from sdc.errors import SdcError
from sdc.suppression import SuppressionProblem, audit_pattern
from sdc.suppression.heuristic import heuristic_pattern
from sdc.suppression.optimal import optimal_pattern

from conftest import cube_table
from test_suppression_audit import grid_table

TV7 = [[30, 47, 64, 89], [90, 124, 5, 31], [92, 100, 59, 85], [800, 991, 651, 685]]


def test_tv7_heuristic_protects_the_cell_the_old_heuristic_left_disclosed():
    values, relations, index = grid_table(TV7)
    primary = np.zeros(len(values), bool)
    for r, c in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 1), (2, 3), (3, 1), (3, 3)]:
        primary[index(r, c)] = True
    ones = np.ones(len(values))
    pattern = heuristic_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost=values))
    # like sdcTable's SIMPLEHEURISTIC: exactly one secondary, the cheapest that protects (w,b): (x,d) = 31
    assert sorted(np.flatnonzero(pattern & ~primary)) == [index(1, 3)]


def test_seed001_minimum_frequency_example():
    # Studienfach x Geschlecht, Medizin/weiblich = 1 primary. Cost = value x level weight keeps totals.
    values, relations, index = grid_table([[4, 3], [9, 12], [4, 1], [10, 10]])
    primary = np.zeros(len(values), bool)
    primary[index(2, 1)] = True
    level = np.array([1 + (i % 3 == 2) + (i // 3 == 4) for i in range(len(values))], dtype=float)
    pattern = heuristic_pattern(SuppressionProblem.from_arrays(values, relations, primary, np.zeros(len(values)), np.ones(len(values)),
                                cost=values * 10**level, lower=np.ones(len(values))))
    hidden = {(int(i) // 3, int(i) % 3) for i in np.flatnonzero(pattern)}
    # seed 001 suppresses Bauingenieurwesen m/w and Medizin m/w: the same four inner cells, no total
    assert hidden == {(0, 0), (0, 1), (2, 0), (2, 1)}


@pytest.mark.parametrize("seed", range(12))
def test_heuristic_passes_the_audit_and_costs_at_least_the_optimum(seed):
    rng = np.random.default_rng(seed)
    inner = rng.integers(1, 40, size=(rng.integers(2, 5), rng.integers(2, 5)))
    values, relations, index = grid_table(inner)
    primary = np.zeros(len(values), bool)
    for r, c in zip(*np.nonzero(inner < 8)):
        primary[index(r, c)] = True
    if not primary.any():
        primary[index(0, 0)] = True
    protection = np.where(primary, np.maximum(1.0, 0.2 * values), 0.0)
    bounds = np.full(len(values), 1.5 * values.max())
    problem = SuppressionProblem.from_arrays(values, relations, primary, protection, protection, cost=values, upper=bounds)
    heuristic = heuristic_pattern(problem)
    assert audit_pattern(values, heuristic, relations, sensitive=primary, protection_lower=protection,
                         protection_upper=protection, upper=bounds).passed
    problem = SuppressionProblem.from_arrays(values, relations, primary, protection, protection, cost=values, upper=bounds)
    optimum = optimal_pattern(problem).suppressed
    assert values[heuristic].sum() >= values[optimum].sum() - 1e-9


@pytest.mark.parametrize("seed", range(8))
def test_three_dimensional_patterns_pass_the_audit_and_cost_at_least_the_optimum(seed):
    # in three dimensions protection often needs a whole cube of suppressions (the protection LP decides);
    # protection = the value: each primary must be able to double or drop to its a-priori bound 1
    rng = np.random.default_rng(100 + seed)
    inner = rng.integers(1, 30, size=tuple(rng.integers(2, 5, size=3)))
    values, relations, index = cube_table(inner)
    primary = np.zeros(len(values), bool)
    primary[index[tuple(np.nonzero(inner < 5))]] = True
    if not primary.any():
        primary[index[0, 0, 0]] = True
    protection = np.where(primary, np.maximum(1.0, values), 0.0)
    lower = np.ones(len(values))  # a non-empty count is at least 1
    level = (np.indices(index.shape) == (np.array(index.shape) - 1)[:, None, None, None]).sum(axis=0).ravel()
    cost = values * 10.0**level
    problem = SuppressionProblem.from_arrays(values, relations, primary, protection, protection, cost, lower=lower)
    heuristic = heuristic_pattern(problem)
    audit = audit_pattern(values, heuristic, relations, sensitive=primary, protection_lower=protection,
                          protection_upper=protection, lower=lower, upper=np.full(len(values), 1.5 * values.max()))
    assert audit.passed
    problem = SuppressionProblem.from_arrays(values, relations, primary, protection, protection, cost, lower=lower)
    optimum = optimal_pattern(problem).suppressed
    assert cost[heuristic].sum() >= cost[optimum].sum() - 1e-6
    assert not heuristic[index[-1, -1, -1]]  # the grand total is never worth suppressing here


def test_unprotectable_cell_is_reported():
    # a 1 x 1 table: the only cell equals its total, which is forced to be published
    values, relations, index = grid_table([[5]])
    primary = np.zeros(len(values), bool)
    primary[index(0, 0)] = True
    forced = ~primary
    with pytest.raises(SdcError, match=r"cannot reach their protection intervals even with every publishable cell suppressed"):
        heuristic_pattern(SuppressionProblem.from_arrays(values, relations, primary, np.ones(len(values)), np.ones(len(values)),
                          cost=values, forced_published=forced))


def test_tv9_singletons_in_a_one_dimensional_table():
    # sdcTable: records a, b, b, c; tot -> a, b, c, d: a = 1, b = 2, c = 1, d = 0, tot = 4; maxN = 1 makes a
    # and c primary. Without singleton detection no secondary is needed (a + c = 2 with both >= 0); with it,
    # either singleton would recompute the other from the published total, so b is suppressed too.
    values = np.array([4.0, 1.0, 2.0, 1.0, 0.0])  # tot, a, b, c, d
    relations = [[(0, 1.0), (1, -1.0), (2, -1.0), (3, -1.0), (4, -1.0)]]
    primary = np.array([False, True, False, True, False])
    ones = np.where(primary, 1.0, 0.0)
    plain = heuristic_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost=values))
    assert list(np.flatnonzero(plain)) == [1, 3]
    # d is empty (sdcTable status z): never a secondary
    singletons = heuristic_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost=values, contributors=values,
                                   forced_published=values == 0))
    assert list(np.flatnonzero(singletons & ~primary)) == [2]


def test_tv14_singleton_and_a_second_primary_in_one_row_force_a_third_suppression():
    # tau-Argus manual §2.10: row A = 52, 15, 62, 17; c12 = 15 is a singleton, c14 = 17 is p%-unsafe.
    # Row A's total is published, so c12's respondent would get c14 = 32 - 15 exactly from c12 + c14:
    # a third cell of row A must be suppressed.
    values, relations, index = grid_table([[52, 15, 62, 17], [24, 18, 31, 8]])
    primary = np.zeros(len(values), bool)
    primary[[index(0, 1), index(0, 3)]] = True
    freq = np.full(len(values), 5.0)
    freq[index(0, 1)] = 1
    protection = np.where(primary, 2.0, 0.0)
    problem = SuppressionProblem.from_arrays(values, relations, primary, protection, protection, cost=values, contributors=freq)
    pattern = heuristic_pattern(problem)
    row_a = [index(0, j) for j in range(4)]
    assert pattern[row_a].sum() >= 3
    assert audit_pattern(values, pattern, relations, sensitive=primary, protection_lower=protection,
                         protection_upper=protection, upper=np.full(len(values), 1.5 * values.max())).passed


def test_two_small_primaries_of_one_relation_get_a_third_cell_before_any_lp(monkeypatch):
    # total 12 = 1 + 1 + 5 + 5, both ones primary (protection 1, non-empty counts are >= 1): with only
    # the two ones suppressed their sum 2 is known and each is exactly 1. The relation check of the
    # constraint pass sees that and suppresses the cheapest other child, so the first audit passes.
    from sdc.suppression import heuristic

    values = np.array([12.0, 1, 1, 5, 5])
    relations = [[(0, 1.0), (1, -1.0), (2, -1.0), (3, -1.0), (4, -1.0)]]
    primary = np.array([False, True, True, False, False])
    ones = primary.astype(float)
    audits = []
    real_audit = heuristic.unprotected_cells

    def recording_audit(*args, **kwargs):
        audits.append(real_audit(*args, **kwargs))
        return audits[-1]

    monkeypatch.setattr(heuristic, "unprotected_cells", recording_audit)
    pattern = heuristic_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost=values * [10, 1, 1, 1, 1],
                                lower=np.ones(5)))
    assert audits == [[]]
    assert list(np.flatnonzero(pattern)) == [1, 2, 3]
    result = audit_pattern(values, pattern, relations, sensitive=primary, protection_lower=ones,
                           protection_upper=ones, lower=np.ones(5), upper=np.full(5, 18.0))
    assert result.passed
    assert [(c.feasible_lower, c.feasible_upper) for c in result.intervals] == [(1, 5), (1, 5), (1, 5)]


@pytest.mark.parametrize("ipm_columns", [10**9, 0])
def test_protection_lp_outside_the_neighbourhood_takes_the_whole_table(monkeypatch, ipm_columns):
    # a lone primary of a 3 x 3 x 3 table: its neighbourhood is its three lines, but a perturbation that
    # keeps every relation moves a whole 2 x 2 x 2 cube, whose far corners lie outside: the protection LP
    # over the neighbourhood is infeasible and the whole table is searched (by simplex, and by interior
    # point with crossover when the column limit is 0).
    from sdc.suppression import heuristic
    from sdc.suppression.audit import AuditTable

    monkeypatch.setattr(heuristic, "FLOW_IPM_COLUMNS", ipm_columns)
    inner = np.arange(27).reshape(3, 3, 3) % 7 + 4.0
    inner[1, 1, 1] = 2
    values, relations, index = cube_table(inner)
    primary = np.zeros(len(values), bool)
    primary[index[1, 1, 1]] = True
    ones = primary.astype(float)
    lower = np.ones(len(values))
    table = AuditTable(values, relations, sensitive=primary, protection_lower=ones, protection_upper=ones,
                       lower=lower)
    lines = [index[:, 1, 1], index[1, :, 1], index[1, 1, :]]
    around = np.unique(np.concatenate(lines))
    flow = heuristic.ProtectionFlow(table, values, np.ones(len(values), bool))
    cells = flow.cells_to_suppress(int(index[1, 1, 1]), primary, around)
    assert not set(cells) <= set(around.tolist())
    pattern = primary.copy()
    pattern[cells] = True
    assert audit_pattern(values, pattern, relations, sensitive=primary, protection_lower=ones,
                         protection_upper=ones, lower=lower).passed
    # with every margin in the table, a perturbation that moves one cell moves a 2 x 2 x 2 cube at least
    assert len(cells) >= 7
