"""Method hypercube: every sensitive cell gets a hypercube of suppressed cells and a witness table that proves its
protection; the pattern must pass the LP audit (and the integer audit) computed independently, and a witness
that is wrong in any way must not be accepted."""

from __future__ import annotations

import itertools
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sdc.errors import SdcError
from sdc.suppression import SuppressionProblem, audit_pattern, secondary_suppression
from sdc.suppression.audit import AuditTable
from sdc.suppression.hypercube import (
    CellGrid,
    Witness,
    hypercube_pattern,
    prune_hypercubes,
    verified_witnesses,
)


def hierarchical_table(leaf_values: np.ndarray, groups: list[list[int]]):
    """All cells of a table whose every dimension is total -> groups -> leaves (``groups``: the leaves of each
    group, the same per dimension), from the inner cells ``leaf_values``; (codes per cell, values, relations)."""
    leaves = sorted(c for g in groups for c in g)
    codes = ["T"] + [f"g{i}" for i in range(len(groups))] + [f"l{c}" for c in leaves]
    members = {"T": [f"g{i}" for i in range(len(groups))], **{f"g{i}": [f"l{c}" for c in g] for i, g in enumerate(groups)}}

    def leaves_of(code):
        return [int(code[1:])] if code.startswith("l") else [leaf for part in members[code] for leaf in leaves_of(part)]

    width = leaf_values.ndim
    cells = list(itertools.product(codes, repeat=width))
    index = {c: k for k, c in enumerate(cells)}
    values = [float(leaf_values[np.ix_(*(leaves_of(code) for code in c))].sum()) for c in cells]
    relations = []
    for c in cells:
        for k, code in enumerate(c):
            if code in members:
                parts = [index[c[:k] + (p,) + c[k + 1:]] for p in members[code]]
                relations.append([(index[c], 1.0)] + [(p, -1.0) for p in parts])
    return cells, np.array(values), relations


def problem_of(cells, values, relations, primary, share=0.2, **fields):
    primary = np.asarray(primary, bool)
    level = np.where(primary, np.ceil(share * values), 0.0)
    return SuppressionProblem.from_arrays(values, relations, primary=primary, protection_lower=level,
                                          protection_upper=level, cost=np.maximum(values, 1.0),
                                          coordinates=cells, **fields)


def independent_audit(problem, pattern, integer: bool):
    return audit_pattern(problem.values, pattern.suppressed, problem.constraint_lists(), sensitive=problem.primary,
                         protection_lower=problem.protection_lower, protection_upper=problem.protection_upper,
                         lower=problem.lower, upper=problem.upper, integer=integer)


def test_two_by_two_table_gets_the_four_cells_and_its_interval():
    keys = ["a,x", "a,y", "a,T", "b,x", "b,y", "b,T", "T,x", "T,y", "T,T"]
    values = [2, 7, 9, 6, 8, 14, 8, 15, 23]
    relations = [[(2, 1), (0, -1), (1, -1)], [(5, 1), (3, -1), (4, -1)], [(8, 1), (6, -1), (7, -1)],
                 [(6, 1), (0, -1), (3, -1)], [(7, 1), (1, -1), (4, -1)], [(8, 1), (2, -1), (5, -1)]]
    problem = SuppressionProblem.from_arrays(values, relations, primary=[0], protection_lower=[1] + [0] * 8,
                                             protection_upper=[1] + [0] * 8, cost=values, lower=[1] * 9, freq=values,
                                             magnitude=False, labels=keys,
                                             coordinates=[tuple(k.split(",")) for k in keys])
    pattern = secondary_suppression(problem, "hypercube", intervals="primary")
    assert [keys[k] for k in pattern.secondary] == ["a,y", "b,x", "b,y"]
    cell = pattern.interval(0)
    assert (cell.feasible_lower, cell.feasible_upper) == (1.0, 7.0) and cell.protected


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("width", [2, 3])
def test_random_hierarchical_tables_pass_the_independent_audit(seed, width):
    rng = np.random.default_rng(seed)
    groups = [[0, 1, 2], [3, 4]] if width == 3 else [[0, 1, 2], [3, 4, 5], [6]]
    shape = (5,) * width if width == 3 else (7, 7)
    leaf = np.where(rng.random(shape) < 0.2, 0, np.round(rng.lognormal(3, 1.2, shape)))
    cells, values, relations = hierarchical_table(leaf, groups)
    small = (values > 0) & (values < np.quantile(values[values > 0], 0.25))
    empty = values == 0
    problem = problem_of(cells, values, relations, small, forced_published=empty, magnitude=False,
                         freq=values, lower=np.where(values > 0, 1.0, 0.0))
    pattern = secondary_suppression(problem, "hypercube")
    audit = independent_audit(problem, pattern, integer=True)
    assert audit.passed and not audit.unchecked
    assert small.sum() > 0 and not (pattern.suppressed & empty).any()
    # every suppressed cell is needed (the pruning publishes the others): none of them can be recomputed
    everything = audit_pattern(problem.values, pattern.suppressed, problem.constraint_lists(),
                               lower=problem.lower, upper=problem.upper)
    assert not any(iv.exactly_disclosed for iv in everything.intervals)


def test_cents_table_passes_the_audit():
    rng = np.random.default_rng(3)
    leaf = np.round(rng.lognormal(4, 1, (6, 6)), 2)
    cells, values, relations = hierarchical_table(leaf, [[0, 1, 2], [3, 4, 5]])
    primary = values < np.quantile(values, 0.15)
    problem = problem_of(cells, values, relations, primary, magnitude=True)
    assert not problem.integer
    pattern = secondary_suppression(problem, "hypercube", intervals="primary")
    assert all(pattern.interval(int(k)).protected for k in np.flatnonzero(primary))
    assert independent_audit(problem, pattern, integer=False).passed


def witnesses_of(problem):
    table = problem.method_table()
    suppressed, witnesses, failed = hypercube_pattern(problem, table)
    judged = AuditTable(problem.values, problem.relations, sensitive=problem.primary,
                        protection_lower=problem.protection_lower, protection_upper=problem.protection_upper,
                        lower=problem.lower, upper=problem.upper, integer=problem.integer)
    return suppressed, witnesses, failed, judged


def small_problem(**fields):
    rng = np.random.default_rng(11)
    cells, values, relations = hierarchical_table(np.round(rng.lognormal(3, 1, (5, 5))), [[0, 1, 2], [3, 4]])
    primary = np.zeros(len(values), bool)
    primary[[cells.index(("l0", "l3")), cells.index(("g0", "l4"))]] = True
    return problem_of(cells, values, relations, primary, magnitude=True, **fields)


def test_every_witness_is_verified_and_a_wrong_one_is_refused():
    problem = small_problem()
    suppressed, witnesses, failed, judged = witnesses_of(problem)
    assert not failed and verified_witnesses(problem, judged, suppressed, witnesses)[problem.primary].all()
    w = witnesses[0]
    x = w.target
    other = int(w.cells[w.cells != x][0])
    published = np.flatnonzero(~suppressed)[0]
    wrong = {
        "a cell left out": Witness(x, w.cells[w.cells != other], w.signs[w.cells != other], w.up, w.down),
        "a sign flipped": Witness(x, w.cells, np.where(w.cells == other, -w.signs, w.signs), w.up, w.down),
        "too little": Witness(x, w.cells, w.signs, w.up * 0.5, w.down),
        "beyond a bound": Witness(x, w.cells, w.signs, w.up, problem.values[w.cells].max() * 10),
        "a published cell changed": Witness(x, np.append(w.cells, published), np.append(w.signs, 1), w.up, w.down),
        "x moved the other way": Witness(x, w.cells, -w.signs, w.up, w.down),
        "a cell listed twice": Witness(x, np.append(w.cells, other), np.append(w.signs, w.signs[w.cells == other]),
                                       w.up, w.down),
    }
    for what, bad in wrong.items():
        assert not verified_witnesses(problem, judged, suppressed, [bad])[x], what
        # and a wrong witness does not spoil the others
        others = verified_witnesses(problem, judged, suppressed, [bad] + witnesses[1:])
        assert not others[x] and others[[v.target for v in witnesses[1:]]].all(), what


def test_whole_numbers_are_required_of_an_integer_table_witness():
    problem = small_problem()
    suppressed, witnesses, _, judged = witnesses_of(problem)
    w = witnesses[0]
    assert problem.integer and float(w.up).is_integer()
    half = Witness(w.target, w.cells, w.signs, w.up + 0.5, w.down)
    assert not verified_witnesses(problem, judged, suppressed, [half])[w.target]


def test_a_stranger_single_contributor_cell_is_never_changed():
    # l0 x l3 is primary; its cheapest partners along dimension 1 would be l1 x l3, a single contributor's cell
    problem = small_problem()
    contributors = np.full(len(problem.values), 5.0)
    cells = problem.coordinates
    stranger = cells.index(("l1", "l3"))
    contributors[stranger] = 1
    values = problem.values.copy()
    with_stranger = SuppressionProblem.from_arrays(values, problem.relations, primary=problem.primary,
                                                   protection_lower=problem.protection_lower,
                                                   protection_upper=problem.protection_upper,
                                                   cost=np.where(np.arange(len(values)) == stranger, 0.0, values),
                                                   contributors=contributors, coordinates=cells)
    suppressed, witnesses, failed, judged = witnesses_of(with_stranger)
    assert not failed and all(stranger not in w.cells for w in witnesses)
    # the same hypercube through the stranger's cell is refused by the verification
    w = next(w for w in witnesses if w.target == cells.index(("l0", "l3")))
    partner = next(c for c in w.cells if cells[c][1] == "l3" and c != w.target)
    moved = Witness(w.target, np.where(w.cells == partner, stranger, w.cells), w.signs, w.up, w.down)
    suppressed[stranger] = True
    assert not verified_witnesses(with_stranger, judged, suppressed, [moved])[w.target]


def test_a_cell_the_table_leaves_out_is_a_known_zero():
    """A combination of codes without a cell (an empty cell left out) is zero in every relation: no hypercube
    may run through it (a witness that did would break a relation)."""
    rng = np.random.default_rng(5)
    cells, values, relations = hierarchical_table(np.round(rng.lognormal(3, 1, (5, 5))), [[0, 1, 2], [3, 4]])
    leaf = np.round(rng.lognormal(3, 1, (5, 5)))
    leaf[1, 3] = 0
    cells, values, relations = hierarchical_table(leaf, [[0, 1, 2], [3, 4]])
    gone = cells.index(("l1", "l3"))
    keep = [k for k in range(len(cells)) if k != gone]
    renumber = {old: new for new, old in enumerate(keep)}
    relations = [[(renumber[c], a) for c, a in r if c != gone] for r in relations]
    cells, values = [cells[k] for k in keep], values[keep]
    primary = np.zeros(len(values), bool)
    primary[cells.index(("l0", "l3"))] = True
    problem = problem_of(cells, values, relations, primary, magnitude=True)
    suppressed, witnesses, failed, judged = witnesses_of(problem)
    assert not failed and verified_witnesses(problem, judged, suppressed, witnesses)[primary].all()
    assert CellGrid(problem.coordinates, problem.relations).known_zero.sum() == 1


def test_a_cell_kept_from_an_earlier_release_cannot_be_recomputed():
    problem = small_problem()
    kept = np.zeros(len(problem.values), bool)
    kept[problem.coordinates.index(("l2", "l0"))] = True
    again = SuppressionProblem.from_arrays(problem.values, problem.relations, primary=problem.primary,
                                           protection_lower=problem.protection_lower,
                                           protection_upper=problem.protection_upper, cost=problem.cost,
                                           forced_suppressed=kept, coordinates=problem.coordinates)
    pattern = secondary_suppression(again, "hypercube")
    everything = audit_pattern(again.values, pattern.suppressed, again.constraint_lists(), lower=again.lower,
                               upper=again.upper)
    assert pattern.suppressed[kept].all()
    assert not any(iv.exactly_disclosed for iv in everything.intervals)


def test_a_cell_without_a_hypercube_is_completed_by_the_heuristic_and_audited():
    """l0 x l3 = 100 must move by 70 either way; its siblings l1 x l3 and l2 x l3 (40 each) can take that only
    together, not one alone, and the total of its group g0 x l3 is published: no hypercube fits, the LP
    heuristic completes the pattern and the audit checks it."""
    leaf = np.full((5, 5), 100.0)
    leaf[1, 3] = leaf[2, 3] = 40
    cells, values, relations = hierarchical_table(leaf, [[0, 1, 2], [3, 4]])
    x = cells.index(("l0", "l3"))
    primary = np.arange(len(values)) == x
    level = np.where(primary, 70.0, 0.0)
    hard = SuppressionProblem.from_arrays(values, relations, primary=primary, protection_lower=level,
                                          protection_upper=level, cost=values, coordinates=cells,
                                          forced_published=[c == ("g0", "l3") for c in cells])
    _, witnesses, failed, _ = witnesses_of(hard)
    assert failed == [x] and not witnesses
    pattern = secondary_suppression(hard, "hypercube", intervals="primary")
    assert pattern.interval(x).protected and independent_audit(hard, pattern, integer=True).passed
    assert {cells[k] for k in np.flatnonzero(pattern.suppressed)} >= {("l1", "l3"), ("l2", "l3")}


def test_the_heuristic_that_completes_a_hypercube_pattern_attacks_only_the_cells_without_a_witness(monkeypatch):
    """Issue 50: on dense count tables the completion attacked every sensitive cell in each of its rounds, those
    the hypercubes' witnesses had proven too (10,053 of 10,819 in the study's 4-D table), and that decided the
    time. A verified witness stays one as more cells are suppressed: the completion now attacks only the cells
    without one, and the pattern still passes the independent audit."""
    from sdc.suppression import heuristic

    leaf = np.full((5, 5), 100.0)
    leaf[1, 3] = leaf[2, 3] = 40
    cells, values, relations = hierarchical_table(leaf, [[0, 1, 2], [3, 4]])
    hard, easy = cells.index(("l0", "l3")), cells.index(("l3", "l0"))
    level = np.where(np.arange(len(values)) == hard, 70.0, np.where(np.arange(len(values)) == easy, 20.0, 0.0))
    problem = SuppressionProblem.from_arrays(values, relations, primary=[hard, easy], protection_lower=level,
                                             protection_upper=level, cost=values, coordinates=cells,
                                             forced_published=[c == ("g0", "l3") for c in cells])
    _, witnesses, failed, _ = witnesses_of(problem)
    assert failed == [hard] and [w.target for w in witnesses] == [easy]
    attacked = []
    real = heuristic.unprotected_cells

    def recording(table, suppressed, *, only=None, **options):
        attacked.append(set(np.asarray(only).tolist()))
        return real(table, suppressed, only=only, **options)

    monkeypatch.setattr(heuristic, "unprotected_cells", recording)
    pattern = secondary_suppression(problem, "hypercube", intervals="primary")
    assert attacked and all(easy not in cells_attacked for cells_attacked in attacked) and hard in attacked[0]
    assert independent_audit(problem, pattern, integer=True).passed


def test_the_cells_left_to_the_lp_audit_get_their_integer_check_in_larger_groups(monkeypatch):
    """The few cells no hypercube fits are checked in integers in groups REMAINDER_INTEGER_FACTOR times larger
    than the audit's limit (here the limit is made 3 cells, smaller than the pattern's group)."""
    import warnings

    from sdc.suppression import secondary

    leaf = np.full((5, 5), 100.0)
    leaf[1, 3] = leaf[2, 3] = 40
    cells, values, relations = hierarchical_table(leaf, [[0, 1, 2], [3, 4]])
    x = cells.index(("l0", "l3"))
    level = np.where(np.arange(len(values)) == x, 70.0, 0.0)
    hard = SuppressionProblem.from_arrays(values, relations, primary=[x], protection_lower=level,
                                          protection_upper=level, cost=values, coordinates=cells,
                                          forced_published=[c == ("g0", "l3") for c in cells])
    monkeypatch.setattr(secondary, "INTEGER_CHECK_CELLS", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", secondary.IntegerCheckWarning)
        for intervals in ("none", "primary"):
            pattern = secondary_suppression(hard, "hypercube", intervals=intervals)
            assert 3 < pattern.suppressed.sum() <= 30
    monkeypatch.setattr(secondary, "REMAINDER_INTEGER_FACTOR", 1)
    for intervals in ("none", "primary"):
        with pytest.warns(secondary.IntegerCheckWarning, match="integer check skipped for 1 sensitive cells"):
            secondary_suppression(hard, "hypercube", intervals=intervals)


def test_a_witness_that_does_not_hold_leaves_its_cell_to_the_heuristic_and_the_audit(monkeypatch):
    from sdc.suppression import hypercube

    problem = small_problem()
    monkeypatch.setattr(hypercube, "verified_witnesses", lambda problem, *_: np.zeros(len(problem.values), bool))
    _, witnesses, failed, _ = witnesses_of(problem)
    assert not witnesses and failed == np.flatnonzero(problem.primary).tolist()
    pattern = secondary_suppression(problem, "hypercube")
    assert independent_audit(problem, pattern, integer=True).passed


def count_problem(leaf: np.ndarray, groups) -> tuple[SuppressionProblem, list]:
    """A count table under freq:3: counts of 1 and 2 primary with protection 1 either way, non-empty cells at
    least 1, empty cells known zeros."""
    cells, values, relations = hierarchical_table(leaf, groups)
    primary = (values > 0) & (values < 3)
    level = np.where(primary, 1.0, 0.0)
    return SuppressionProblem.from_arrays(values, relations, primary=primary, protection_lower=level,
                                          protection_upper=level, cost=np.maximum(values, 1.0), coordinates=cells,
                                          lower=np.where(values > 0, 1.0, 0.0), freq=values, magnitude=False,
                                          forced_published=values == 0), cells


def test_a_total_of_two_counts_of_one_gets_a_hypercube_for_the_side_it_can_reach(monkeypatch):
    """Issue 50, the dense 4-D count table: g0 x l3 = 2 is the sum of l0 x l3 = 1 and l1 x l3 = 1. Every table
    the attacker's bounds allow has it at least 2, so no hypercube could take it down to 1, and every such cell
    (766 in the study's table) went to the LP heuristic, whose completion over one group of half the table ran
    for hours. Its requirement is [2, 3] from the start (implied_bounds): a hypercube that moves it up proves it,
    and the method needs no completion."""
    from sdc.suppression import secondary

    leaf = np.full((5, 5), 6.0)
    leaf[0, 3] = leaf[1, 3] = 1
    leaf[2, 3] = 0
    problem, cells = count_problem(leaf, [[0, 1, 2], [3, 4]])
    total = cells.index(("g0", "l3"))
    assert problem.primary[total] and problem.values[total] == 2
    suppressed, witnesses, failed, judged = witnesses_of(problem)
    assert not failed and verified_witnesses(problem, judged, suppressed, witnesses)[problem.primary].all()
    assert {w.target: w.down for w in witnesses}[total] == 0.0
    monkeypatch.setattr(secondary, "heuristic_pattern", None)  # no completion: it would fail here
    pattern = secondary_suppression(problem, "hypercube", intervals="primary")
    assert independent_audit(problem, pattern, integer=True).passed
    assert (pattern.interval(total).feasible_lower, pattern.interval(total).required_lower) == (2.0, 2.0)


@pytest.mark.parametrize("seed", range(3))
def test_pruning_by_hypercubes_keeps_a_verified_witness_for_every_sensitive_cell(seed):
    """Dense 3-D count tables (Poisson counts, a third of the cells primary): the pruning that asks other
    hypercubes for each secondary cell publishes some, and every sensitive cell keeps a witness that holds on its
    own; the pattern passes the independent LP and integer audit."""
    leaf = np.random.default_rng(seed).poisson(2.5, (6, 6, 6)).astype(float)
    problem, _ = count_problem(leaf, [[0, 1, 2], [3, 4, 5]])
    table = problem.method_table()
    suppressed, witnesses, failed = hypercube_pattern(problem, table)
    assert not failed
    pruned, kept = prune_hypercubes(problem, table, suppressed, witnesses)
    assert not (pruned & ~suppressed).any() and pruned.sum() < suppressed.sum() - 5
    assert verified_witnesses(problem, table, pruned, kept)[problem.sensitive].all()
    assert len(kept) == int(problem.sensitive.sum())
    pattern = SimpleNamespace(suppressed=pruned)
    assert independent_audit(problem, pattern, integer=True).passed
    # groups of at most larger_than cells are left to prune_pattern
    same, _ = prune_hypercubes(problem, table, suppressed, witnesses, larger_than=len(problem.values))
    assert (same == suppressed).all()


def test_pruning_by_hypercubes_takes_only_witnesses_that_hold_on_their_own():
    """A wrong witness listed beside a right one for the same cell (in either order) must not drive the pruning."""
    leaf = np.random.default_rng(0).poisson(2.5, (6, 6, 6)).astype(float)
    problem, _ = count_problem(leaf, [[0, 1, 2], [3, 4, 5]])
    table = problem.method_table()
    suppressed, witnesses, _ = hypercube_pattern(problem, table)
    wrong = [Witness(w.target, w.cells[:1], w.signs[:1], 0.0, 0.0) for w in witnesses]
    alone, _ = prune_hypercubes(problem, table, suppressed, witnesses)
    for listed in (witnesses + wrong, wrong + witnesses):
        pruned, kept = prune_hypercubes(problem, table, suppressed, listed)
        assert (pruned == alone).all() and verified_witnesses(problem, table, pruned, kept)[problem.sensitive].all()
        assert independent_audit(problem, SimpleNamespace(suppressed=pruned), integer=True).passed


def test_pruning_by_hypercubes_leaves_the_group_of_a_cell_without_a_witness_as_it_is():
    leaf = np.random.default_rng(0).poisson(2.5, (6, 6, 6)).astype(float)
    problem, _ = count_problem(leaf, [[0, 1, 2], [3, 4, 5]])
    table = problem.method_table()
    suppressed, witnesses, _ = hypercube_pattern(problem, table)
    lost = witnesses[0].target
    groups = table.components(suppressed)
    group = next(g for g in groups if lost in g)
    pruned, kept = prune_hypercubes(problem, table, suppressed, witnesses[1:])
    assert pruned[group].all() and lost not in {w.target for w in kept}
    assert (pruned != suppressed).any()


def test_auto_runs_the_hypercube_from_its_size_where_the_cells_have_codes_and_the_heuristic_otherwise(monkeypatch):
    """Issue 50: the default method 'auto' takes the hypercube from AUTO_HYPERCUBE_CELLS cells (here made 500, below
    the table's 729), the heuristic below, and the heuristic at any size where the problem has no codes or the
    relations are not one hierarchy per dimension; the pattern says which ran."""
    from sdc.suppression import secondary

    leaf = np.random.default_rng(0).poisson(2.5, (6, 6, 6)).astype(float)
    problem, cells = count_problem(leaf, [[0, 1, 2], [3, 4, 5]])
    assert secondary.DEFAULT_METHOD == "auto" and len(problem.values) < secondary.AUTO_HYPERCUBE_CELLS
    small = secondary_suppression(problem)
    assert small.method == "heuristic"
    assert (small.suppressed == secondary_suppression(problem, "heuristic").suppressed).all()
    monkeypatch.setattr(secondary, "AUTO_HYPERCUBE_CELLS", 500)
    auto = secondary_suppression(problem)
    assert auto.method == "hypercube" and (auto.suppressed == secondary_suppression(problem, "hypercube").suppressed).all()
    assert independent_audit(problem, auto, integer=True).passed
    fields = dict(primary=problem.primary, protection_lower=problem.protection_lower,
                  protection_upper=problem.protection_upper, cost=problem.cost, lower=problem.lower,
                  freq=problem.freq, magnitude=False, forced_published=problem.forced_published)
    bare = SuppressionProblem.from_arrays(problem.values, problem.relations, **fields)
    assert secondary_suppression(bare).method == "heuristic"
    swapped = list(cells)  # two cells' codes exchanged: the relations no longer sum along one dimension
    swapped[0], swapped[1] = swapped[1], swapped[0]
    odd = SuppressionProblem.from_arrays(problem.values, problem.relations, coordinates=swapped, **fields)
    with pytest.raises(SdcError, match="differ from their total in more than one dimension"):
        secondary_suppression(odd, "hypercube")
    assert secondary_suppression(odd).method == "heuristic"


def test_auto_takes_the_milp_s_proven_optimum_on_small_count_tables_and_the_heuristic_otherwise(monkeypatch):
    """Issue 50: on a count table of up to AUTO_OPTIMAL_CELLS cells (AUTO_OPTIMAL_PLANE_CELLS in two dimensions)
    'auto' takes the optimal method's pattern where the MILP proves it within AUTO_OPTIMAL_ROUNDS master problems:
    here a 2-D table of 225 cells, 65 cells at cost 139 where the heuristic hides 70 at 151. Where the rounds run
    out it takes the heuristic's own pattern (not the MILP's incumbent completed, and no time-limit warning), and a
    magnitude table (the heuristic's singleton rule) keeps the heuristic."""
    import warnings

    from sdc.suppression import secondary

    leaf = np.random.default_rng(0).poisson(3.0, (12, 12)).astype(float)
    problem, _ = count_problem(leaf, [list(range(6)), list(range(6, 12))])
    assert secondary.AUTO_OPTIMAL_CELLS < len(problem.values) <= secondary.AUTO_OPTIMAL_PLANE_CELLS
    heuristic = secondary_suppression(problem, "heuristic")
    auto = secondary_suppression(problem)
    assert (auto.method, auto.optimal, auto.time_limited) == ("optimal", True, False)
    assert (auto.suppressed == secondary_suppression(problem, "optimal").suppressed).all()
    assert (int(auto.suppressed.sum()), auto.cost) == (65, 139.0)
    assert (int(heuristic.suppressed.sum()), heuristic.cost) == (70, 151.0)
    assert independent_audit(problem, auto, integer=True).passed
    monkeypatch.setattr(secondary, "AUTO_OPTIMAL_ROUNDS", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fallen_back = secondary_suppression(problem)
    assert fallen_back.method == "heuristic" and (fallen_back.suppressed == heuristic.suppressed).all()
    monkeypatch.undo()
    fields = dict(primary=problem.primary, protection_lower=problem.protection_lower,
                  protection_upper=problem.protection_upper, cost=problem.cost, lower=problem.lower,
                  coordinates=problem.coordinates, forced_published=problem.forced_published)
    magnitude = SuppressionProblem.from_arrays(problem.values, problem.relations, magnitude=True,
                                               contributors=problem.values, **fields)
    assert secondary_suppression(magnitude).method == "heuristic"


def test_a_table_without_relations():
    problem = SuppressionProblem.from_arrays([5.0, 7.0], [], primary=[0], protection_lower=[2, 0],
                                             protection_upper=[2, 0], cost=[5.0, 7.0], coordinates=[("a",), ("b",)])
    pattern = secondary_suppression(problem, "hypercube", intervals="none")
    assert pattern.status == ("primary", "published")


def test_coordinates_must_be_tuples_of_codes():
    with pytest.raises(SdcError, match="coordinates of cell 0 must be a tuple of codes"):
        SuppressionProblem.from_arrays([5.0, 7.0], [], primary=[0], protection_lower=[2, 0], protection_upper=[2, 0],
                                       cost=[5.0, 7.0], coordinates=[["a", "x"], ("b", "x")])


def test_relations_that_are_not_one_hierarchy_per_dimension_are_refused():
    problem = small_problem()
    with pytest.raises(SdcError, match="method hypercube needs the cells' codes"):
        secondary_suppression(SuppressionProblem.from_arrays(
            problem.values, problem.relations, primary=problem.primary, protection_lower=problem.protection_lower,
            protection_upper=problem.protection_upper, cost=problem.cost), "hypercube")
    doubled = problem.relations.copy()
    doubled.data[0] = 2.0
    doubled.data[1:3] = -1.0
    with pytest.raises(SdcError, match="relation 0 is not a total and its parts"):
        CellGrid(problem.coordinates, doubled)
    swapped = list(problem.coordinates)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    with pytest.raises(SdcError, match="differ from their total in more than one dimension"):
        CellGrid(swapped, problem.relations)


def hierarchy_frame(dims, groups):
    rows = []
    for d in dims:
        rows += [(d, "T", "")] + [(d, f"{d}g{i}", "T") for i in range(len(groups))]
        rows += [(d, f"{d}{leaf}", f"{d}g{i}") for i, g in enumerate(groups) for leaf in g]
    return pd.DataFrame(rows, columns=["dimension", "code", "parent"])


def enterprises(dims, seed=2, n=400):
    rng = np.random.default_rng(seed)
    leaves = list(range(6))
    weights = rng.lognormal(0, 1, len(leaves))
    frame = {d: [f"{d}{c}" for c in rng.choice(leaves, n, p=weights / weights.sum())] for d in dims}
    return pd.DataFrame({**frame, "turnover": np.round(rng.lognormal(7, 1.5, n))})


@pytest.mark.parametrize("seed", [0, 2])
def test_linked_tables_share_one_pattern_that_passes_the_audit_over_all(seed):
    """Three tables of one microdata set (a x b, a x c, b x c): their margins are shared cells. Seed 2 leaves
    16 of 47 sensitive cells without a hypercube (aliased cells, single contributors), which the heuristic
    completes; the audit (LPs over the equations of all three tables) must pass either way."""
    from sdc.suppression import suppressed_linked_tables

    micro = enterprises(["a", "b", "c"], seed=seed)
    hierarchy = hierarchy_frame(["a", "b", "c"], [[0, 1, 2], [3, 4, 5]])
    tables = suppressed_linked_tables(micro, [["a", "b"], ["a", "c"], ["b", "c"]], ["p:10", "nk:2,85"],
                                      hierarchy=hierarchy, value="turnover", method="hypercube", audit=True)
    ab, ac = tables["a_b"], tables["a_c"]
    assert all((t.status == "primary").any() for t in tables.values())
    # the shared cells (the margins of a) have one status in both tables
    margin_ab = ab[ab.b == "T"].set_index("a").status
    margin_ac = ac[ac.c == "T"].set_index("a").status
    assert margin_ab.sort_index().tolist() == margin_ac.sort_index().tolist()
    for t in tables.values():  # the audit layout's intervals (LPs over all tables' equations) protect
        sensitive = t[t.status == "primary"]
        assert (sensitive.lower <= sensitive.value - sensitive.protection_lower + 1e-6).all()
        assert (sensitive.upper >= sensitive.value + sensitive.protection_upper - 1e-6).all()
        assert (t.status[t.freq == 0] == "empty").all()


def test_cli_suppress_with_method_hypercube_writes_a_table_that_sdc_audit_passes(tmp_path):
    micro = enterprises(["a", "b"], n=300)
    micro.to_csv(tmp_path / "micro.csv", index=False)
    hierarchy_frame(["a", "b"], [[0, 1, 2], [3, 4, 5]]).to_csv(tmp_path / "h.csv", index=False)
    out = tmp_path / "cells.csv"
    run = subprocess.run([sys.executable, "-m", "sdc.cli", "suppress", "--input", str(tmp_path / "micro.csv"),
                          "--dims", "a,b", "--value", "turnover", "--rule", "p:10", "--hierarchy",
                          str(tmp_path / "h.csv"), "--method", "hypercube", "--audit", "--out", str(out)],
                         check=False, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    audit = subprocess.run([sys.executable, "-m", "sdc.cli", "audit", "--cells", str(out), "--hierarchy",
                            str(tmp_path / "h.csv")],
                           check=False, capture_output=True, text=True)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "pass" in audit.stdout.lower()
