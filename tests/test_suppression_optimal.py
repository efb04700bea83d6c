"""Optimal secondary suppression (MILP) on the reference's vectors, confirmed by the LP audit."""

import numpy as np
import pytest

from sdc.errors import SdcError
from sdc.suppression import SuppressionProblem, audit_pattern
from sdc.suppression.optimal import TimeLimitWarning, optimal_pattern

from test_suppression_audit import grid_table


def test_tv7_sdctable_problem_needs_exactly_one_secondary():
    # TV-7 (sdcTable problemdata): 9 primaries, every relation holds >= 2 suppressions, yet (w,b) = 47
    # is exactly disclosed; the optimum with cost = value adds only (x,d) = 31, and (w,b) in [0, 78].
    inner = [[30, 47, 64, 89], [90, 124, 5, 31], [92, 100, 59, 85], [800, 991, 651, 685]]
    values, relations, index = grid_table(inner)
    primary = np.zeros(len(values), bool)
    for r, c in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 1), (2, 3), (3, 1), (3, 3)]:
        primary[index(r, c)] = True
    ones = np.ones(len(values))
    before = audit_pattern(values, primary, relations, sensitive=primary, protection_lower=ones,
                           protection_upper=ones, upper=np.full(len(values), 1.5 * values.max()))
    disclosed = [iv.cell for iv in before.failures]
    assert disclosed == [index(0, 1)]
    problem = SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost=values)
    pattern = optimal_pattern(problem).suppressed
    assert sorted(np.flatnonzero(pattern & ~primary)) == [index(1, 3)]
    after = audit_pattern(values, pattern, relations, sensitive=primary, protection_lower=ones,
                          protection_upper=ones, upper=np.full(len(values), 1.5 * values.max()))
    assert after.passed
    wb = next(iv for iv in after.intervals if iv.cell == index(0, 1))
    assert (wb.feasible_lower, wb.feasible_upper) == pytest.approx((0.0, 78.0))


def test_tv8_microdata1_region_by_gender():
    # TV-8 (sdcTable protectTable): A/female = 2 primary, cost = frequency: OPT suppresses
    # A/m, A/f, C/m, C/f (cells 5, 6, 11, 12 in sdcTable's order)
    values, relations, index = grid_table([[18, 2], [14, 19], [12, 10], [11, 14]])
    primary = np.zeros(len(values), bool)
    primary[index(0, 1)] = True
    ones = np.ones(len(values))
    problem = SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost=values)
    pattern = optimal_pattern(problem).suppressed
    assert sorted(np.flatnonzero(pattern)) == sorted([index(0, 0), index(0, 1), index(2, 0), index(2, 1)])
    assert audit_pattern(values, pattern, relations, sensitive=primary, protection_lower=ones,
                         protection_upper=ones).passed


def test_no_primaries_no_suppression_and_conflicts():
    values, relations, index = grid_table([[18, 2], [14, 19]])
    none = np.zeros(len(values), bool)
    ones = np.ones(len(values))
    problem = SuppressionProblem.from_arrays(values, relations, none, ones, ones, cost=values)
    assert not optimal_pattern(problem).suppressed.any()
    primary = none.copy()
    primary[index(0, 1)] = True
    with pytest.raises(SdcError, match=r"cell 1 is primary and forced to be published"):
        optimal_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost=values, forced_published=primary)).suppressed


def test_random_small_tables_every_optimal_pattern_passes_the_audit():
    rng = np.random.default_rng(11)
    for _ in range(15):
        inner = rng.integers(1, 30, size=(3, 3))
        values, relations, index = grid_table(inner)
        primary = np.zeros(len(values), bool)
        for r, c in zip(*np.nonzero(inner < 6)):
            primary[index(r, c)] = True
        if not primary.any():
            continue
        protection = np.where(primary, 1.0, 0.0)
        problem = SuppressionProblem.from_arrays(values, relations, primary, protection, protection, cost=values)
        pattern = optimal_pattern(problem).suppressed
        assert (pattern >= primary).all()
        result = audit_pattern(values, pattern, relations, sensitive=primary, protection_lower=protection,
                               protection_upper=protection, upper=np.full(len(values), 1.5 * values.max()))
        assert result.passed


@pytest.mark.parametrize("seed", range(6))
def test_optimum_equals_a_brute_force_search(seed):
    # 3 x 3 tables with totals (16 cells): every subset of the open cells audited, the cheapest safe one
    # must cost what optimal_pattern's pattern costs
    from itertools import combinations

    rng = np.random.default_rng(seed)
    values, relations, index = grid_table(rng.integers(1, 30, size=(3, 3)))
    primary = np.zeros(len(values), bool)
    for cell in rng.choice(9, size=2, replace=False):
        primary[index(cell // 3, cell % 3)] = True
    protection = np.where(primary, np.maximum(1.0, np.round(0.3 * values)), 0.0)
    cost = values + 1.0
    problem = SuppressionProblem.from_arrays(values, relations, primary, protection, protection, cost=cost)
    pattern = optimal_pattern(problem).suppressed
    upper = np.full(len(values), 1.5 * values.max())
    assert audit_pattern(values, pattern, relations, sensitive=primary, protection_lower=protection,
                         protection_upper=protection, upper=upper).passed
    open_cells = [c for c in range(len(values)) if not primary[c]]
    best = np.inf
    for size in range(0, len(open_cells) + 1):
        for extra in combinations(open_cells, size):
            candidate = primary.copy()
            candidate[list(extra)] = True
            if cost[candidate].sum() >= best:
                continue
            if audit_pattern(values, candidate, relations, sensitive=primary, protection_lower=protection,
                             protection_upper=protection, upper=upper).passed:
                best = cost[candidate].sum()
    assert cost[pattern].sum() == pytest.approx(best)


def test_time_limit_also_bounds_the_set_up(monkeypatch):
    # Before the first master solve every primary's interval is clipped to its a-priori interval (two LPs
    # over the whole table each; minutes at 10^5 cells). The time limit covers that too: past it, the
    # heuristic completes the primaries, with the time-limit warning.
    from sdc.suppression.audit import AuditTable
    from sdc.suppression.heuristic import heuristic_pattern

    clipped = []
    real_clip = AuditTable.clip_to_a_priori
    monkeypatch.setattr(AuditTable, "clip_to_a_priori", lambda self, cell: clipped.append(cell) or real_clip(self, cell))
    values, relations, index = grid_table([[20, 2, 30], [25, 31, 3], [40, 22, 27]])
    primary = np.zeros(len(values), bool)
    primary[[index(0, 1), index(1, 2)]] = True
    ones = primary.astype(float)
    with pytest.warns(TimeLimitWarning, match="stopped at its time limit of 0 s"):
        pattern = optimal_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, values, lower=np.ones(len(values))), time_limit=0).suppressed
    assert clipped == []  # the set-up stopped before its first LP, and the heuristic needed none
    assert audit_pattern(values, pattern, relations, sensitive=primary, protection_lower=ones,
                         protection_upper=ones, lower=np.ones(len(values))).passed
    assert (pattern == heuristic_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, values,
                                         lower=np.ones(len(values))))).all()


def test_time_limit_warning_gives_cost_and_lower_bound_and_bad_limits_are_refused():
    import warnings

    values, relations, index = grid_table([[20, 2, 30], [25, 31, 3], [40, 22, 27]])
    primary = np.zeros(len(values), bool)
    primary[[index(0, 1), index(1, 2)]] = True
    ones = primary.astype(float)
    with pytest.warns(TimeLimitWarning) as caught:
        pattern = optimal_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, values), time_limit=0).suppressed
    warning = caught[0].message
    assert issubclass(TimeLimitWarning, UserWarning)  # a library warns; the CLI prints it as one line
    assert (warning.time_limit, warning.cost) == (0, values[pattern].sum())
    assert warning.lower_bound == values[primary].sum() <= warning.cost  # nothing proven beyond the primaries
    assert str(warning).endswith("the heuristic completed the pattern, which passes the audit")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no limit: no warning
        problem = SuppressionProblem.from_arrays(values, relations, primary, ones, ones, values)
        best = optimal_pattern(problem, time_limit=float("inf")).suppressed
    assert values[best].sum() <= values[pattern].sum()
    for bad in (-1.0, float("nan"), "sechzig", None):
        with pytest.raises(SdcError, match="the time limit must be a number of seconds >= 0"):
            optimal_pattern(SuppressionProblem.from_arrays(values, relations, primary, ones, ones, values), time_limit=bad).suppressed


def test_a_proven_optimum_within_a_number_of_rounds_or_none():
    """proven_optimal_pattern (method 'auto'): the optimal method's pattern where the cut loop proves it within
    the rounds given, else None, with no warning and nothing completed by the heuristic; the time limit stops it
    too (0: before the set-up's first LP)."""
    import warnings

    from sdc.suppression.optimal import proven_optimal_pattern

    values, relations, index = grid_table([[20, 2, 30], [25, 31, 3], [40, 22, 27]])
    primary = np.zeros(len(values), bool)
    primary[[index(0, 1), index(1, 2)]] = True
    ones = primary.astype(float)
    problem = SuppressionProblem.from_arrays(values, relations, primary, ones, ones, values)
    full = optimal_pattern(problem)
    assert full.proven
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = proven_optimal_pattern(problem, rounds=60, time_limit=60)
        assert found.proven and (found.suppressed == full.suppressed).all() and found.lower_bound == full.lower_bound
        # here the cuts known in advance (each relation of a primary holds another suppressed cell) and one
        # round's cuts suffice; with no round nothing is proven (tests/test_suppression_hypercube.py: a table
        # that needs more rounds than it is given)
        assert proven_optimal_pattern(problem, rounds=1, time_limit=60).suppressed.tolist() == full.suppressed.tolist()
        assert proven_optimal_pattern(problem, rounds=0, time_limit=60) is None
        assert proven_optimal_pattern(problem, rounds=60, time_limit=0) is None
    with pytest.raises(SdcError, match="the time limit must be a number of seconds >= 0, got 'soon'"):
        proven_optimal_pattern(problem, rounds=60, time_limit="soon")
