"""The suppression problem checks its input once, naming the cell or parameter; secondary_suppression always
returns an audited pattern (issue 35)."""

import numpy as np
import pytest

from sdc.errors import SdcError
from sdc.suppression import SuppressionPattern, SuppressionProblem, secondary_suppression
from sdc.suppression import secondary
from sdc.suppression.a_priori import APrioriCells
from sdc.suppression.heuristic import heuristic_pattern

from test_suppression_audit import grid_table

# total = a + b + c
ONE_RELATION = [[(0, 1.0), (1, -1.0), (2, -1.0), (3, -1.0)]]


def cells(overrides=None, values=(12, 2, 4, 6), primary=(1,)):
    rows = [{"region": code, "value": v, "freq": v, "contributors": v, "status": "published", "rule": None,
             "protection_lower": 0.0, "protection_upper": 0.0} for code, v in zip(["Total", "a", "b", "c"], values)]
    for k in primary:
        rows[k] |= {"status": "primary", "rule": "freq:3", "protection_lower": 1.0, "protection_upper": 1.0}
    for (k, name), value in (overrides or {}).items():
        rows[k][name] = value
    return rows


def test_from_cells_computes_bounds_costs_and_labels():
    problem = SuppressionProblem.from_cells(cells(), ONE_RELATION, magnitude=False, cost="freq",
                                            prefer_low_levels=True, dims=["region"])
    assert problem.primary.tolist() == [False, True, False, False]
    assert problem.cost.tolist() == [120.0, 2.0, 4.0, 6.0]  # the total's frequency x 10^1
    assert problem.lower.tolist() == [1.0] * 4  # a non-empty count is at least 1
    assert problem.upper.tolist() == [18.0] * 4  # 1.5 x the largest value
    assert problem.labels == ("cell region=Total", "cell region=a", "cell region=b", "cell region=c")
    assert problem.relations.toarray().tolist() == [[1.0, -1.0, -1.0, -1.0]]
    assert problem.integer and problem.contributors is None
    with pytest.raises(ValueError):
        problem.values[0] = 1.0  # shared by the methods and the audit: read-only


def test_a_priori_cells_of_an_earlier_release_are_forced():
    last = APrioriCells(suppressed=np.array([False, False, False, True]), known=np.array([False, False, True, False]),
                        unmatched=0)
    problem = SuppressionProblem.from_cells(cells(), ONE_RELATION, magnitude=False, a_priori=last)
    assert problem.forced_suppressed.tolist() == [False, False, False, True]
    assert problem.forced_published.tolist() == [False, False, True, False]
    pattern = secondary_suppression(problem)
    # c stays suppressed (and protects a), b may not be chosen
    assert pattern.status == ("published", "primary", "published", "secondary")


@pytest.mark.parametrize("relations, message", [
    ([[(0, 1.0), (7, -1.0)]], "relation 0 names cell 7, but the table has 4 cells"),
    ([[(0, 1.0), (1, -1.0)]], "relation 0 does not hold: cell region=Total is 12, its parts sum to 2"),
    ([[(0, 1.0), (1, float("nan"))]], "relation 0 gives cell 1 the coefficient nan"),
])
def test_bad_relations_are_named(relations, message):
    with pytest.raises(SdcError, match=message):
        SuppressionProblem.from_cells(cells(), relations, magnitude=False, dims=["region"])


@pytest.mark.parametrize("override, message", [
    ({(2, "freq"): -3}, "cell region=b has the negative frequency -3"),
    ({(1, "protection_lower"): -1}, "cell region=a has a negative protection level"),
    ({(3, "value"): float("nan")}, "values of cell region=c is nan, not a number"),
    ({(2, "status"): "secret"}, "cell region=b has status 'secret'"),
    ({(1, "protection_upper"): "wide"}, "protection_upper of cell region=a is 'wide', not a number"),
])
def test_bad_cells_are_named(override, message):
    with pytest.raises(SdcError, match=message):
        SuppressionProblem.from_cells(cells(override), ONE_RELATION, magnitude=False, dims=["region"])


def test_missing_columns_and_costs_are_named():
    rows = cells()
    del rows[3]["freq"]
    with pytest.raises(SdcError, match="cell 3 has no 'freq'"):
        SuppressionProblem.from_cells(rows, ONE_RELATION, magnitude=False)
    with pytest.raises(SdcError, match="cell 0 has no 'contributors'"):
        SuppressionProblem.from_cells([{k: v for k, v in r.items() if k != "contributors"} for r in cells()],
                                      ONE_RELATION, magnitude=True)
    with pytest.raises(SdcError, match="cost must be one of value, freq, cells, got 'money'"):
        SuppressionProblem.from_cells(cells(), ONE_RELATION, magnitude=False, cost="money")
    with pytest.raises(SdcError, match="no cells"):
        SuppressionProblem.from_cells([], [], magnitude=False)


def test_from_arrays_names_the_parameter_and_the_cell():
    values, ones = [12, 2, 4, 6], [0, 1, 0, 0]
    with pytest.raises(SdcError, match="primary cell 9 is not in the table of 4 cells"):
        SuppressionProblem.from_arrays(values, ONE_RELATION, [9], ones, ones, values)
    with pytest.raises(SdcError, match="protection_upper has 3 entries for 4 cells"):
        SuppressionProblem.from_arrays(values, ONE_RELATION, [1], ones, ones[:3], values)
    with pytest.raises(SdcError, match="cell 2 has the negative cost -4"):
        SuppressionProblem.from_arrays(values, ONE_RELATION, [1], ones, ones, [12, 2, -4, 6])
    with pytest.raises(SdcError, match=r"cell 3 has the value 6 outside its a-priori bounds \[0, 5\]"):
        SuppressionProblem.from_arrays(values, ONE_RELATION, [1], ones, ones, values, upper=[18, 18, 18, 5])
    with pytest.raises(SdcError, match="cell 1 is primary and forced to be published"):
        SuppressionProblem.from_arrays(values, ONE_RELATION, [1], ones, ones, values,
                                       forced_published=[False, True, False, False])


def test_the_entry_point_returns_the_audited_pattern_of_either_method():
    values, relations, index = grid_table([[18, 2], [14, 19], [12, 10], [11, 14]])  # TV-8 of sdcTable
    ones = np.ones(len(values))
    problem = SuppressionProblem.from_arrays(values, relations, [index(0, 1)], ones, ones, values, magnitude=False)
    optimal = secondary_suppression(problem, "optimal")
    # sdcTable's OPT: A/m, A/f, C/m, C/f; the heuristic's own pattern also takes row B (cost 67), which the
    # pruning of secondary_suppression drops again: the optimum
    assert optimal.secondary == [index(0, 0), index(2, 0), index(2, 1)]
    assert (optimal.cost, optimal.optimal, optimal.time_limited, optimal.lower_bound) == (42.0, True, False, 42.0)
    unpruned = heuristic_pattern(problem)
    assert np.flatnonzero(unpruned).tolist() == [index(0, 0), index(0, 1), index(2, 0), index(2, 1), index(3, 0),
                                                 index(3, 1)]
    heuristic = secondary_suppression(problem, "heuristic")
    assert heuristic.secondary == [index(0, 0), index(2, 0), index(2, 1)]
    assert (heuristic.method, heuristic.cost, heuristic.optimal, heuristic.lower_bound) == ("heuristic", 42.0, False, None)
    for pattern in (optimal, heuristic):
        assert isinstance(pattern, SuppressionPattern) and pattern.audit.passed
        # the primary cell's interval; a secondary cell's only where asked for (two LPs each)
        assert [iv.cell for iv in pattern.audit.intervals] == [index(0, 1)]
        full = secondary_suppression(problem, pattern.method, intervals="all")
        assert [iv.cell for iv in full.audit.intervals] == np.flatnonzero(pattern.suppressed).tolist()
        assert full.interval(index(0, 0)).feasible_upper > values[index(0, 0)]
        verdict = secondary_suppression(problem, pattern.method, intervals="none")  # the same pattern, no intervals
        assert verdict.status == pattern.status and verdict.audit.intervals == [] and verdict.audit.passed
        assert pattern.status[index(0, 1)] == "primary" and pattern.status[index(1, 0)] == "published"
    primary = optimal.interval(index(0, 1))
    assert (primary.feasible_lower, primary.feasible_upper, primary.required_lower, primary.required_upper) == (
        0.0, 12.0, 1.0, 3.0)
    assert optimal.interval(index(1, 0)) is None  # published
    with pytest.raises(SdcError, match="method must be one of heuristic, optimal, hypercube, gauss, auto, got 'greedy'"):
        secondary_suppression(problem, "greedy")


@pytest.mark.parametrize("intervals", ["primary", "all", "none"])
def test_an_unsafe_pattern_from_a_method_raises_naming_the_cell(monkeypatch, intervals):
    # a magnitude table of decimals (no integer step in between): the primaries alone leave a, the only
    # suppressed cell of its relation, exactly disclosed; the verdict without intervals ('none') sees it too
    values = [12.5, 2.5, 4.0, 6.0]
    problem = SuppressionProblem.from_arrays(values, ONE_RELATION, [1], [0, 1, 0, 0], [0, 1, 0, 0], values,
                                             labels=("total", "region a", "region b", "region c"))
    monkeypatch.setattr(secondary, "heuristic_pattern", lambda problem: problem.primary.copy())
    with pytest.raises(SdcError, match=r"the heuristic pattern fails the audit for region a \(cells \[1\]\)"):
        secondary_suppression(problem, intervals=intervals)
    monkeypatch.setattr(secondary, "heuristic_pattern", lambda problem: np.zeros(4, bool))
    with pytest.raises(SdcError, match="region a must be suppressed but is published"):
        secondary_suppression(problem)
