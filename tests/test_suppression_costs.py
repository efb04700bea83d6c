"""What the secondary suppression minimises: the plain cost (value, frequency or number of cells) by
default; the preference for low hierarchy levels (cost x 10^level) only when asked for (project issue 12)."""

import csv
from itertools import combinations, product

import numpy as np
import pytest

from sdc.cli import main
from sdc.suppression import SuppressionProblem, audit_pattern
from sdc.suppression.optimal import optimal_pattern
from sdc.suppression.pipeline import protect_cells
from sdc.suppression.problem import cell_costs

# A (total T -> groups g1, g2 -> codes a1 a2 | a3 a4) x B (total T -> b1, b2): 21 cells, a count table
# whose inner cells are these frequencies. Under freq:3 ten cells are primary, eleven open.
A = {"T": None, "g1": "T", "g2": "T", "a1": "g1", "a2": "g1", "a3": "g2", "a4": "g2"}
B = {"T": None, "b1": "T", "b2": "T"}
INNER = {("a1", "b1"): 2, ("a1", "b2"): 24, ("a2", "b1"): 2, ("a2", "b2"): 14,
         ("a3", "b1"): 1, ("a3", "b2"): 1, ("a4", "b1"): 1, ("a4", "b2"): 1}


def hierarchical_table():
    """(cell keys, values, relations): every cell with all its totals; one relation per parent cell and
    dimension, parent first with coefficient +1."""
    cells = list(product(A, B))
    index = {c: k for k, c in enumerate(cells)}

    def ancestors(parents, code):
        chain = [code]
        while parents[chain[-1]]:
            chain.append(parents[chain[-1]])
        return chain

    values = np.zeros(len(cells))
    for (a, b), n in INNER.items():
        for cell in product(ancestors(A, a), ancestors(B, b)):
            values[index[cell]] += n
    relations = []
    for d, parents in enumerate((A, B)):
        children = {}
        for child, parent in parents.items():
            if parent:
                children.setdefault(parent, []).append(child)
        for cell in cells:
            if cell[d] in children:
                relation = [(index[cell], 1.0)]
                for child in children[cell[d]]:
                    relation.append((index[cell[:d] + (child,) + cell[d + 1:]], -1.0))
                relations.append(relation)
    return cells, values, relations


def primary_cells(values):
    """The cells as suppression_primary gives them under freq:3 (protection 1 either side)."""
    primary = (values > 0) & (values < 3)
    rows = [{"value": v, "freq": v, "contributors": v, "status": "primary" if p else "published",
             "rule": "freq:3" if p else None, "protection_lower": float(p), "protection_upper": float(p)}
            for v, p in zip(values, primary)]
    return rows, primary


def suppressed_mask(protected):
    return np.array([p["status"] in ("primary", "secondary") for p in protected])


def brute_force_minimum(values, relations, primary):
    """The least suppressed frequency of any pattern that passes the LP audit, by trying the subsets of
    the open cells in order of frequency. A subset in which some relation holds exactly one suppressed
    cell is skipped: that cell is determined by the published rest, so the subset without it protects
    just as well for less, and the minimum never has such a cell."""
    protection = primary.astype(float)
    lower = np.where(values > 0, 1.0, 0.0)  # a non-empty count is at least 1
    upper = np.full(len(values), 1.5 * values.max())
    open_cells = np.flatnonzero(~primary)
    subsets = sorted((values[list(extra)].sum(), extra) for size in range(len(open_cells) + 1)
                     for extra in combinations(open_cells, size))
    for frequency, extra in subsets:
        candidate = primary.copy()
        candidate[list(extra)] = True
        if any(sum(candidate[c] for c, _ in relation) == 1 for relation in relations):
            continue
        if audit_pattern(values, candidate, relations, sensitive=primary, protection_lower=protection,
                         protection_upper=protection, lower=lower, upper=upper).passed:
            return frequency + values[primary].sum()
    raise AssertionError("no pattern passes the audit")


def test_cost_freq_minimises_the_suppressed_frequency():
    cells, values, relations = hierarchical_table()
    rows, primary = primary_cells(values)
    protected = protect_cells(rows, relations, magnitude=False, method="optimal", cost="freq")
    pattern = suppressed_mask(protected)
    minimum = brute_force_minimum(values, relations, primary)
    assert values[pattern].sum() == minimum == 150
    # the minimum keeps group g1 and suppresses the grand total: no level preference
    assert {cells[k] for k in np.flatnonzero(pattern & ~primary)} == {
        ("T", "T"), ("T", "b1"), ("T", "b2"), ("g2", "T"), ("a1", "b2"), ("a2", "b2")}


def test_prefer_low_levels_weights_each_cost_by_ten_to_the_level():
    cells, values, relations = hierarchical_table()
    rows, primary = primary_cells(values)
    protected = protect_cells(rows, relations, magnitude=False, method="optimal", cost="freq",
                              prefer_low_levels=True)
    pattern = suppressed_mask(protected)
    # the old behaviour: frequency x 10^(number of dimensions along which the cell is a total)
    level = np.array([(a in ("T", "g1", "g2")) + (b == "T") for a, b in cells], dtype=float)
    protection = primary.astype(float)
    weighted = optimal_pattern(SuppressionProblem.from_arrays(values, relations, primary, protection, protection, values * 10.0 ** level,
                               lower=np.where(values > 0, 1.0, 0.0))).suppressed
    assert (pattern == weighted).all()
    assert values[pattern].sum() == 158  # more frequency than the minimum, but the grand total is kept
    assert not pattern[cells.index(("T", "T"))]


def test_cell_costs():
    values = np.array([10.0, -4.0, 0.0, 6.0])
    freq = np.array([3.0, 2.0, 0.0, 1.0])
    relations = [[(0, 1.0), (1, -1.0), (2, -1.0), (3, -1.0)]]  # cell 0 is the total
    assert cell_costs(values, freq, relations, "freq").tolist() == [3, 2, 0, 1]
    assert cell_costs(values, freq, relations, "cells").tolist() == [1, 1, 1, 1]
    assert cell_costs(values, freq, relations, "value").tolist() == pytest.approx([10, 4, 1e-9, 6])
    assert cell_costs(values, freq, relations, "freq", prefer_low_levels=True).tolist() == [30, 2, 0, 1]


def test_cli_prefer_low_levels(tmp_path, capsys):
    micro = tmp_path / "micro.csv"
    micro.write_text("a,b\n" + "".join(f"{a},{b}\n" for (a, b), n in INNER.items() for _ in range(n)))
    hierarchy = tmp_path / "h.csv"
    hierarchy.write_text("dimension,code,parent\n" + "".join(f"a,{c},{p or ''}\n" for c, p in A.items()))
    suppressed = {}
    for flag in ([], ["--prefer-low-levels"]):
        out = tmp_path / "cells.csv"
        assert main(["suppress", "--input", str(micro), "--dims", "a,b", "--hierarchy", str(hierarchy),
                     "--rule", "freq:3", "--method", "optimal", "--cost", "freq", *flag, "--audit", "--out", str(out)]) == 0
        with open(out, newline="") as handle:
            suppressed[bool(flag)] = sum(int(r["freq"]) for r in csv.DictReader(handle)
                                         if r["status"] in ("primary", "secondary"))
        assert main(["audit", "--cells", str(out), "--hierarchy", str(hierarchy)]) == 0
    assert suppressed == {False: 150, True: 158}
