"""Pruning (heuristic.prune_pattern), which every method but optimal ends with: it publishes again each secondary
suppression the pattern does not need. Its witnesses only save LPs, so it must publish exactly what a pruning
that audits the whole table after every trial publishes, and every method's pattern must leave no secondary
suppression that could be published alone (checked by the independent audit)."""

from __future__ import annotations

import numpy as np
import pytest
from sdc.suppression import SuppressionProblem, audit_pattern, secondary_suppression
from sdc.suppression.heuristic import heuristic_pattern, prune_pattern
from sdc.suppression.hypercube import hypercube_pattern

from test_suppression_hypercube import hierarchical_table


def magnitude_problem(seed: int, width: int = 3) -> SuppressionProblem:
    """A hierarchical magnitude table of non-integer values (no integer step after the pruning), its smallest
    8 % of cells primary, protection 20 % of the value."""
    rng = np.random.default_rng(seed)
    groups = [[0, 1], [2, 3]] if width == 3 else [[0, 1, 2], [3, 4, 5], [6]]
    shape = (4,) * width if width == 3 else (7, 7)
    leaf = np.where(rng.random(shape) < 0.15, 0.0, rng.lognormal(3, 1.2, shape) + 0.25)
    cells, values, relations = hierarchical_table(leaf, groups)
    primary = (values > 0) & (values < np.quantile(values[values > 0], 0.08))
    level = np.where(primary, 0.2 * values, 0.0)
    return SuppressionProblem.from_arrays(values, relations, primary=primary, protection_lower=level,
                                          protection_upper=level, cost=np.maximum(values, 1.0),
                                          forced_published=values == 0, coordinates=cells, magnitude=True)


def passes(problem: SuppressionProblem, suppressed) -> bool:
    return audit_pattern(problem.values, suppressed, problem.constraint_lists(), sensitive=problem.primary,
                         protection_lower=problem.protection_lower, protection_upper=problem.protection_upper,
                         lower=problem.lower, upper=problem.upper, only=np.flatnonzero(problem.primary)).passed


def audited_pruning(problem: SuppressionProblem, suppressed) -> np.ndarray:
    """The pruning written the plain way: each secondary suppression, the costliest first, published where the
    audit of the whole table still passes."""
    suppressed = np.asarray(suppressed, bool).copy()
    trial = np.flatnonzero(suppressed & ~problem.primary)
    for cell in trial[np.lexsort((trial, -problem.cost[trial]))]:
        suppressed[cell] = False
        if not passes(problem, suppressed):
            suppressed[cell] = True
    return suppressed


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("start", ["heuristic", "hypercube"])
def test_pruning_publishes_what_an_audit_of_every_trial_publishes(seed, start):
    problem = magnitude_problem(seed)
    if start == "heuristic":
        unpruned = heuristic_pattern(problem)
    else:
        unpruned, _, failed = hypercube_pattern(problem, problem.method_table())
        assert not failed
    assert passes(problem, unpruned)
    pruned = prune_pattern(problem, unpruned)
    assert (pruned == audited_pruning(problem, unpruned)).all()
    assert pruned.sum() < unpruned.sum()  # the test has something to prune
    assert passes(problem, pruned)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("method", ["heuristic", "gauss", "hypercube"])
def test_no_secondary_suppression_of_a_method_s_pattern_can_be_published_alone(seed, method):
    problem = magnitude_problem(seed)
    pattern = secondary_suppression(problem, method, intervals="none")
    assert passes(problem, pattern.suppressed)
    for cell in pattern.secondary:
        fewer = pattern.suppressed.copy()
        fewer[cell] = False
        assert not passes(problem, fewer), f"{method}: secondary {problem.labels[cell]} is not needed"


def test_hypercube_pattern_is_pruned_below_its_hypercubes():
    """The hypercubes overlap and each is chosen alone: on this 3-D table the pruning publishes 11 of the 115
    cells (figures of this table; the pruning is checked above against the whole table's audit)."""
    problem = magnitude_problem(0)
    cubes, _, _ = hypercube_pattern(problem, problem.method_table())
    pattern = secondary_suppression(problem, "hypercube", intervals="none")
    assert (int(cubes.sum()), int(pattern.suppressed.sum())) == (115, 104)


def test_pruning_leaves_a_group_whose_sensitive_cell_is_short_as_it_is():
    problem = magnitude_problem(1)
    pattern = secondary_suppression(problem, "heuristic", intervals="none")
    short = pattern.suppressed.copy()
    short[pattern.secondary[0]] = False  # every secondary is needed (above): a sensitive cell is now short
    assert not passes(problem, short)
    assert (prune_pattern(problem, short) == short).all()


def test_pruning_does_not_try_a_group_beyond_its_limit():
    problem = magnitude_problem(2)
    unpruned = heuristic_pattern(problem)
    largest = max(len(g) for g in problem.method_table().components(unpruned))
    assert (prune_pattern(problem, unpruned, max_group=largest - 1) != unpruned).sum() \
        < (prune_pattern(problem, unpruned) != unpruned).sum()
