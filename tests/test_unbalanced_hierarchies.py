"""Hierarchies whose leaves lie at different depths, as statistical classifications have them (NACE: a section
without divisions beside sections with them; issue 50). They were refused ("leaves lie at different depths");
now every code is one cell, and every method of secondary suppression protects the primaries of a table over
such a classification: checked by an LP attack built here from the classification itself (scipy's linprog, not
sdc's audit or relations)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from sdc.cli import main
from sdc.suppression.secondary import METHODS

# depth 1: B and D; depth 2: A01..A03, C11, C12; depth 3: C10.1..C10.3
NACE = {"Total": ["A", "B", "C", "D"], "A": ["A01", "A02", "A03"], "C": ["C10", "C11", "C12"],
        "C10": ["C10.1", "C10.2", "C10.3"]}
LEAVES = ["A01", "A02", "A03", "B", "C10.1", "C10.2", "C10.3", "C11", "C12", "D"]
REGIONS = ["r1", "r2", "r3", "r4"]


def microdata(path):
    """Records per (leaf, region) drawn from a fixed generator; B x r1 holds 1 record, C10.2 x r3 2: primaries at
    a leaf directly under the total and at the deepest level."""
    rng = np.random.default_rng(50)
    counts = rng.integers(3, 12, size=(len(LEAVES), len(REGIONS)))
    counts[rng.random(counts.shape) < 0.15] = 1
    counts[LEAVES.index("B"), 0] = 1
    counts[LEAVES.index("C10.2"), 2] = 2
    lines = ["id,nace,region"]
    for (i, leaf), (j, region) in ((a, b) for a in enumerate(LEAVES) for b in enumerate(REGIONS)):
        lines += [f"{len(lines)},{leaf},{region}"] * counts[i, j]
    path.write_text("\n".join(lines) + "\n")
    return counts


def attack(rows):
    """Each suppressed cell's (min, max) over every non-negative table (a non-empty cell at least 1) that has the
    published cells and adds up along the classification and over the regions."""
    value = {(r["nace"], r["region"]): float(r["freq"]) for r in rows}
    hidden = [c for c, r in zip(value, rows) if r["status"] in ("primary", "secondary")]
    column = {c: k for k, c in enumerate(hidden)}
    equations, rhs = [], []

    def add(total, parts):
        row, constant = np.zeros(len(hidden)), 0.0
        for cell, sign in [(total, 1.0)] + [(p, -1.0) for p in parts]:
            if cell in column:
                row[column[cell]] += sign
            else:
                constant -= sign * value[cell]
        if row.any():
            equations.append(row)
            rhs.append(constant)

    codes = ["Total"] + [c for children in NACE.values() for c in children]
    for region in REGIONS + ["Total"]:
        for parent, children in NACE.items():
            add((parent, region), [(child, region) for child in children])
    for code in codes:
        add((code, "Total"), [(code, region) for region in REGIONS])
    bounds = [(1.0 if value[c] > 0 else 0.0, None) for c in hidden]
    found = {}
    for cell in hidden:
        target = np.zeros(len(hidden))
        target[column[cell]] = 1.0
        low = linprog(target, A_eq=np.array(equations), b_eq=rhs, bounds=bounds)
        high = linprog(-target, A_eq=np.array(equations), b_eq=rhs, bounds=bounds)
        found[cell] = (low.fun, -high.fun if high.status == 0 else np.inf)
    return found


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("unbalanced")
    hierarchy = root / "nace.csv"
    hierarchy.write_text("dimension,code,parent\nnace,Total,\n" + "".join(
        f"nace,{child},{parent}\n" for parent, children in NACE.items() for child in children))
    counts = microdata(root / "micro.csv")
    return root, hierarchy, counts


@pytest.mark.parametrize("method", METHODS)
def test_every_method_protects_the_primaries_of_a_table_over_leaves_at_different_depths(files, method):
    root, hierarchy, counts = files
    out = root / f"{method}.csv"
    assert main(["suppress", "--input", str(root / "micro.csv"), "--dims", "nace,region", "--rule", "freq:3",
                 "--hierarchy", str(hierarchy), "--method", method, "--audit", "--out", str(out)]) == 0
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    # one row per code: 14 codes of the classification x 5 of the regions, none twice
    assert len(rows) == len({(r["nace"], r["region"]) for r in rows}) == 14 * 5
    freq = {(r["nace"], r["region"]): int(r["freq"]) for r in rows}
    assert freq[("B", "r1")] == 1 and freq[("C10.2", "r3")] == 2
    assert freq[("C10", "Total")] == counts[4:7].sum() and freq[("Total", "Total")] == counts.sum()
    primaries = {(r["nace"], r["region"]): r for r in rows if r["status"] == "primary"}
    assert {("B", "r1"), ("C10.2", "r3")} <= set(primaries)
    intervals = attack(rows)
    for cell, row in primaries.items():
        low, high = intervals[cell]
        lower, upper = float(row["protection_lower"]), float(row["protection_upper"])
        assert lower > 0 and upper > 0
        # a non-empty cell is at least 1 for the attacker, so its interval reaches down to 1 at most
        reach = max(freq[cell] - lower, 1.0)
        assert low <= reach + 1e-6 and high >= freq[cell] + upper - 1e-6, (cell, freq[cell], low, high)
    # the attack has teeth: with the secondary cells published it recomputes B x r1, the shallow leaf's primary
    alone = [dict(r, status="published" if r["status"] == "secondary" else r["status"]) for r in rows]
    assert attack(alone)[("B", "r1")] == pytest.approx((1.0, 1.0))


def test_the_ckm_publishes_each_code_of_leaves_at_different_depths_once(files):
    root, hierarchy, counts = files
    out = root / "ckm.csv"
    ptable = Path(__file__).parent.parent / "demo" / "seeds" / "sdc_ptable.csv"
    micro = root / "micro_keys.csv"
    lines = (root / "micro.csv").read_text().splitlines()
    keys = np.random.default_rng(7).integers(0, 10**8, size=len(lines))
    micro.write_text("".join(line + (",record_key\n" if k == 0 else f",{keys[k]}\n") for k, line in enumerate(lines)))
    assert main(["ckm", "--input", str(micro), "--dims", "nace,region", "--record-key", "record_key",
                 "--key-digits", "8", "--ptable", str(ptable), "--hierarchy", str(hierarchy), "--audit",
                 "--out", str(out)]) == 0
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len({(r["nace"], r["region"]) for r in rows}) == 14 * 5
    original = {(r["nace"], r["region"]): int(r["original"]) for r in rows}
    for parent, children in NACE.items():
        for region in REGIONS + ["Total"]:
            assert original[(parent, region)] == sum(original[(c, region)] for c in children)
    assert original[("B", "Total")] == counts[3].sum() and original[("D", "r4")] == counts[9, 3]
