"""Secondary suppression on generated hierarchical tables (prints figures; no assertions).

Tables: 2 dimensions (A with 3 levels: total -> groups -> codes; B flat) or 3 dimensions, inner counts
drawn at random (5 % below the frequency threshold 3: the primaries). For each size it prints the number of cells,
primaries, the time and the suppressed count/value of the heuristic and of the MILP (60 s limit; ">60*"
marks a pattern the heuristic completed from the last master solution; skipped above MILP_CELLS).

Cost: value x 10^level, level = the number of dimensions along which a cell is a total, i.e.
``cost="value"`` with ``prefer_low_levels=True`` (problem.cell_costs), not the plain default: the figures
in the README were measured with it. Both methods minimise that weighted cost; the printed "value" columns
are the plain suppressed value.

Usage: .venv/bin/python bench/suppression_bench.py [cells ...]     (default 1e3 1e4 1e5)
"""

import sys
import time
import warnings
from itertools import product

import numpy as np

from sdc.suppression.heuristic import heuristic_pattern
from sdc.suppression.optimal import optimal_pattern
from sdc.suppression.problem import SuppressionProblem, cell_costs

MILP_CELLS = 20_000


def table(target_cells: int, dims: int, rng):
    """A hierarchical count table as (values, relations, primary)."""
    groups = 4
    per_dim = max(3, round(target_cells ** (1 / dims)))
    codes_a = per_dim - 1 - groups if per_dim > groups + 2 else per_dim - 1
    # dimension A: total (0), groups 1..G, leaves; dimension B (and C): total, leaves
    a_nodes = ["T"] + [f"g{g}" for g in range(groups)] + [f"a{i}" for i in range(max(codes_a, groups))]
    a_parent = {f"g{g}": "T" for g in range(groups)} | {f"a{i}": f"g{i % groups}" for i in range(max(codes_a, groups))}
    other = ["T"] + [f"b{i}" for i in range(per_dim - 1)]
    other_parent = {f"b{i}": "T" for i in range(per_dim - 1)}
    spaces = [a_nodes] + [other] * (dims - 1)
    parents = [a_parent] + [other_parent] * (dims - 1)
    cells = list(product(*spaces))
    index = {c: k for k, c in enumerate(cells)}
    leaves = [c for c in cells if all(x != "T" and not x.startswith("g") for x in c)]
    values = np.zeros(len(cells))
    for leaf in leaves:
        count = rng.integers(1, 3) if rng.random() < 0.05 else rng.integers(3, 60)  # 5 % primaries
        ancestors = []
        for d, code in enumerate(leaf):
            chain = [code]
            while chain[-1] in parents[d]:
                chain.append(parents[d][chain[-1]])
            ancestors.append(chain)
        for combo in product(*ancestors):
            values[index[combo]] += count
    relations = []
    for d in range(dims):
        children = {}
        for child, parent in parents[d].items():
            children.setdefault(parent, []).append(child)
        for cell in cells:
            if cell[d] in children:
                rel = [(index[cell], 1.0)]
                for child in children[cell[d]]:
                    rel.append((index[cell[:d] + (child,) + cell[d + 1:]], -1.0))
                relations.append(rel)
    primary = (values > 0) & (values < 3)
    return values, relations, primary


def main(sizes):
    rng = np.random.default_rng(2024)
    print(f"{'dims':>4} {'cells':>7} {'primary':>8} {'heur s':>8} {'heur n':>7} {'heur value':>11} "
          f"{'milp s':>8} {'milp n':>7} {'milp value':>11}")
    for dims in (2, 3):
        for target in sizes:
            values, relations, primary = table(int(target), dims, rng)
            cost = cell_costs(values, values, relations, "value", prefer_low_levels=True)  # value x 10^level
            ones = np.where(primary, 1.0, 0.0)
            lower = np.where(values > 0, 1.0, 0.0)
            start = time.perf_counter()
            problem = SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost, lower=lower)
            h = heuristic_pattern(problem)
            t_h = time.perf_counter() - start
            print(f"{dims:>4} {len(values):>7} {int(primary.sum()):>8} {t_h:>8.2f} {int((h & ~primary).sum()):>7} "
                  f"{values[h & ~primary].sum():>11.0f}", end="", flush=True)
            if len(values) <= MILP_CELLS:
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    problem = SuppressionProblem.from_arrays(values, relations, primary, ones, ones, cost, lower=lower)
                    o = optimal_pattern(problem, time_limit=60).suppressed
                t_o = time.perf_counter() - start
                # at the time limit the last master pattern is completed by the heuristic: marked with *
                shown = f"{t_o:.2f}" if not caught else ">60*"
                print(f" {shown:>8} {int((o & ~primary).sum()):>7} {values[o & ~primary].sum():>11.0f}", flush=True)
            else:
                print(f" {'-':>8} {'-':>7} {'-':>11}", flush=True)


if __name__ == "__main__":
    main([float(x) for x in sys.argv[1:]] or [1e3, 1e4, 1e5])
