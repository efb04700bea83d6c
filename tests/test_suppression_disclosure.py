"""Issue 17, part 2: published suppression output from which originals could be derived.

- --publish-intervals published the audit's a-priori upper bound, 1.5 x the largest cell: its end divided
  by 1.5 gave the suppressed grand total. Published intervals now come from the published cells alone.
- The audit was an LP relaxation; in a 3-D count table a suppressed 2 was "protected" within [1, 4] while
  its only integer values were 2 and 4. Integer tables now get a MILP check, and suppression avoids such
  patterns.
- sdc suppress wrote every suppressed cell's true value to its only output; that needs --audit now.
"""

import csv

import numpy as np
import pytest
from scipy.optimize import linprog

from sdc.cli import main
from sdc.errors import SdcError
from sdc.suppression.audit import audit_pattern, integer_failures, AuditTable, public_intervals
from sdc.suppression.heuristic import integer_safe_pattern
from sdc.suppression.problem import SuppressionProblem

from conftest import two_way_equations
from test_suppression_audit import grid_table
from conftest import cube_table


def read(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_published_intervals_do_not_end_at_the_audits_bound(tmp_path, capsys):
    # A = 600 and B = 50 (one contributor each) and their total are all primary under freq:3; the old
    # output published A and B as 0-975 and 975 / 1.5 = 650, the suppressed total
    data = tmp_path / "turnover.csv"
    data.write_text("region,umsatz\nA,600\nB,50\n")
    out = tmp_path / "cells.csv"
    assert main(["suppress", "--input", str(data), "--dims", "region", "--value", "umsatz", "--rule", "freq:3",
                 "--publish-intervals", "--out", str(out)]) == 0
    rows = read(out)
    assert [(r["region"], r["published_value"], r["published_text"]) for r in rows] == [
        ("A", "", ">=0"), ("B", "", ">=0"), ("Total", "", ">=0")]
    confidential = {600.0, 50.0, 650.0}
    for r in rows:
        for bound in (r["published_lower"], r["published_upper"]):
            for factor in (1.0, 1.5, 2.0, 3.0):
                assert float(bound) / factor not in confidential
    assert "600" not in out.read_text() and "650" not in out.read_text()


def independent_interval(published, suppressed, relations, lower, cell):
    """min and max of ``cell`` from dense equations over the suppressed cells only (scipy linprog)."""
    hidden = np.flatnonzero(suppressed)
    a = np.zeros((len(relations), len(hidden)))
    b = np.zeros(len(relations))
    for r, relation in enumerate(relations):
        for c, coefficient in relation:
            if suppressed[c]:
                a[r, list(hidden).index(c)] = coefficient
            else:
                b[r] -= coefficient * published[c]
    objective = (hidden == cell).astype(float)
    bounds = [(lower, None)] * len(hidden)
    ends = []
    for sign in (1.0, -1.0):
        lp = linprog(sign * objective, A_eq=a, b_eq=b, bounds=bounds, method="highs")
        ends.append(sign * lp.fun if lp.status == 0 else -sign * np.inf)
    return tuple(ends)


def test_published_intervals_are_the_lp_on_the_published_table_and_ignore_suppressed_values():
    values, relations, index = grid_table([[5, 1, 7], [3, 2, 9], [4, 6, 8]])
    suppressed = np.zeros(len(values), bool)
    suppressed[[index(0, 1), index(0, 2), index(1, 1), index(1, 2)]] = True
    low, high = public_intervals(np.where(suppressed, np.nan, values), suppressed, relations, lower=1.0)
    for cell in np.flatnonzero(suppressed):
        assert (low[cell], high[cell]) == pytest.approx(independent_interval(values, suppressed, relations, 1.0, cell))
    assert (low[index(0, 1)], high[index(0, 1)]) == pytest.approx((1, 2))  # column 1: 3 = 1 + 2, both >= 1
    # another additive table with the same published cells: the published intervals do not move
    other, _, _ = grid_table([[5, 2, 6], [3, 1, 10], [4, 6, 8]])
    assert np.array_equal(other[~suppressed], values[~suppressed])
    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(
        public_intervals(other, suppressed, relations, lower=1.0), (low, high)))
    # with the grand total suppressed too, nothing bounds the cells above: no end made from a true value
    suppressed[[index(3, 3), index(3, 1), index(1, 3)]] = True
    low, high = public_intervals(values, suppressed, relations, lower=0.0)
    assert np.isinf(high[index(3, 3)]) and low[index(3, 3)] == pytest.approx(independent_interval(
        values, suppressed, relations, 0.0, index(3, 3))[0])


# 3-D count table 2 x 2 x 3 with every margin (36 cells); a pattern of 17 suppressed cells that leaves the
# cell (0, 1, 1) = 2 the LP interval [1, 4], while its integer values are 2 and 4 only (found by search)
PARITY_INNER = [[[4, 3, 6], [2, 2, 7]], [[7, 2, 4], [7, 8, 1]]]
PARITY_PATTERN = [1, 2, 4, 5, 6, 8, 9, 13, 14, 16, 17, 20, 22, 29, 30, 33, 34]


def parity_case():
    values, relations, index = cube_table(PARITY_INNER)
    suppressed = np.zeros(len(values), bool)
    suppressed[PARITY_PATTERN] = True
    sensitive = np.zeros(len(values), bool)
    sensitive[index[0, 1, 1]] = True
    return values, relations, index, suppressed, sensitive


def test_integer_audit_sees_what_the_lp_misses():
    values, relations, index, suppressed, sensitive = parity_case()
    bounds = dict(sensitive=sensitive, protection_lower=sensitive * 1.0, protection_upper=sensitive * 1.0,
                  lower=np.ones(len(values)), upper=np.full(len(values), 1.5 * values.max()))
    lp = audit_pattern(values, suppressed, relations, **bounds)
    assert lp.passed  # the LP relaxation: 2 in [1, 4], required [1, 3]
    exact = audit_pattern(values, suppressed, relations, integer=True, **bounds)
    cell = next(iv for iv in exact.intervals if iv.sensitive)
    assert not exact.passed
    assert (cell.feasible_lower, cell.feasible_upper, cell.required_lower, cell.required_upper) == (1, 4, 1, 3)
    assert (cell.integer_lower, cell.integer_upper) == (2, 4)  # the attacker knows it is 2 or 4
    # a group larger than the limit is not checked, and says so
    skipped = audit_pattern(values, suppressed, relations, integer=True, integer_cells=10, **bounds)
    assert skipped.passed and [iv.integer_skipped for iv in skipped.unchecked] == ["group of 17 suppressed cells > 10"]


def test_sdc_audit_does_not_pass_the_parity_pattern(tmp_path, capsys):
    values, relations, index, suppressed, sensitive = parity_case()
    code = lambda k, n: "Total" if k == n - 1 else f"c{k}"  # noqa: E731
    lines = ["a,b,c,freq,status,published_text,protection_lower,protection_upper"]
    for (i, j, k), cell in np.ndenumerate(index):
        status = "primary" if sensitive[cell] else ("secondary" if suppressed[cell] else "published")
        level = 1 if sensitive[cell] else 0
        lines.append(f"{code(i, 3)},{code(j, 3)},{code(k, 4)},{int(values[cell])},{status},"
                     f"{'x' if suppressed[cell] else int(values[cell])},{level},{level}")
    cells = tmp_path / "cells.csv"
    cells.write_text("\n".join(lines) + "\n")
    assert main(["audit", "--cells", str(cells)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "a=c0, b=c1, c=c1: 2 in [1, 4], required [1, 3], as a whole number at least 2  NOT PROTECTED" in out
    assert out[-1] == "audit FAILED: 1 sensitive cells, 17 suppressed, 1 not protected"


def test_suppression_grows_a_pattern_until_it_passes_the_integer_audit():
    values, relations, index, suppressed, sensitive = parity_case()
    ones = sensitive * 1.0
    lower, upper = np.ones(len(values)), np.full(len(values), 1.5 * values.max())
    pattern, skipped = integer_safe_pattern(SuppressionProblem.from_arrays(values, relations, sensitive, ones, ones, values,
                                            lower=lower, upper=upper), suppressed)
    assert not skipped and (pattern >= suppressed).all() and pattern.sum() > suppressed.sum()
    result = audit_pattern(values, pattern, relations, sensitive=sensitive, protection_lower=ones,
                           protection_upper=ones, lower=lower, upper=upper, integer=True)
    assert result.passed
    table = AuditTable(values, relations, sensitive=sensitive, protection_lower=ones, protection_upper=ones,
                       lower=lower, upper=upper, integer=True)
    assert integer_failures(table, suppressed) == ([int(index[0, 1, 1])], [])


def test_suppress_publishes_no_original_without_audit(tmp_path, capsys):
    data = tmp_path / "students.csv"
    counts = {("Bau", "m"): 4, ("Bau", "w"): 3, ("Inf", "m"): 9, ("Inf", "w"): 12, ("Med", "m"): 4, ("Med", "w"): 1}
    data.write_text("fach,geschlecht\n" + "".join(f"{f},{g}\n" for (f, g), n in counts.items() for _ in range(n)))
    out = tmp_path / "cells.csv"
    assert main(["suppress", "--input", str(data), "--dims", "fach,geschlecht", "--rule", "freq:3",
                 "--out", str(out)]) == 0
    rows = read(out)
    # no status or rule either: "primary" under freq:3 would say Med/w holds 1 or 2 students
    assert list(rows[0]) == ["fach", "geschlecht", "published_value", "published_text"]
    hidden = [r for r in rows if r["published_text"] == "x"]
    assert len(hidden) == 4 and all(r["published_value"] == "" for r in hidden)
    med_w = next(r for r in rows if (r["fach"], r["geschlecht"]) == ("Med", "w"))
    assert med_w in hidden
    capsys.readouterr()
    assert main(["audit", "--cells", str(out)]) == 2
    assert "holds the publishable columns only" in capsys.readouterr().err
    audit = tmp_path / "cells_audit.csv"
    assert main(["suppress", "--input", str(data), "--dims", "fach,geschlecht", "--rule", "freq:3", "--audit",
                 "--out", str(audit)]) == 0
    assert "(audit layout with the true values: do not publish)" in capsys.readouterr().out
    assert next(r for r in read(audit) if (r["fach"], r["geschlecht"]) == ("Med", "w"))["freq"] == "1"
    assert main(["audit", "--cells", str(audit)]) == 0


def attack_published_file(rows, dims):
    """The attacker's derivation from a publishable 2-D file alone (independent of sdc: dense equations,
    scipy's linprog): every suppressed count at least 1, no upper bound. {cell: (min, max)}"""
    hidden = [k for k, r in enumerate(rows) if r["published_value"] == ""]
    column = {k: j for j, k in enumerate(hidden)}
    equations, rhs = two_way_equations(rows, dims, hidden, lambda k: float(rows[k]["published_value"]))
    out = {}
    for k in hidden:
        target = np.zeros(len(hidden))
        target[column[k]] = 1.0
        ends = []
        for sign in (1.0, -1.0):
            lp = linprog(sign * target, A_eq=equations, b_eq=rhs, bounds=[(1, None)] * len(hidden))
            ends.append(sign * lp.fun if lp.status == 0 else -sign * np.inf)
        out[tuple(rows[k][d] for d in dims)] = tuple(ends)
    return out


def test_sdc_suppress_intervals_are_the_attackers_from_the_published_file_and_ignore_suppressed_values(tmp_path):
    # the same published cells, two sets of true values of the suppressed ones (A/w 1 or 2, moved around
    # the rectangle A/m, B/m, B/w): the published intervals must not change, and must be the LP of the
    # published file alone
    published_texts = []
    for t in (0, 1):
        counts = {("A", "m"): 10 - t, ("A", "w"): 1 + t, ("B", "m"): 10 + t, ("B", "w"): 10 - t,
                  ("C", "m"): 20, ("C", "w"): 20}
        data = tmp_path / f"micro{t}.csv"
        data.write_text("fach,sex\n" + "".join(f"{f},{s}\n" for (f, s), n in counts.items() for _ in range(n)))
        out = tmp_path / f"cells{t}.csv"
        assert main(["suppress", "--input", str(data), "--dims", "fach,sex", "--rule", "freq:3", "--publish-intervals",
                     "--out", str(out)]) == 0
        rows = read(out)
        hidden = {(r["fach"], r["sex"]): (float(r["published_lower"]), float(r["published_upper"]))
                  for r in rows if r["published_value"] == ""}
        assert sorted(hidden) == [("A", "m"), ("A", "w"), ("B", "m"), ("B", "w")]
        attacker = attack_published_file(rows, ["fach", "sex"])
        assert sorted(attacker) == sorted(hidden)
        assert all(hidden[cell] == pytest.approx(attacker[cell]) for cell in hidden)
        published_texts.append([(r["fach"], r["sex"], r["published_value"], r["published_text"]) for r in rows])
    assert published_texts[0] == published_texts[1]
    assert ("A", "w", "", "1-10") in published_texts[0]  # A/w + B/w = 11 (column w), B/w >= 1


@pytest.mark.parametrize("intervals", ["primary", "none"])
def test_the_entry_point_refuses_the_parity_pattern_with_and_without_intervals(monkeypatch, intervals):
    """A method that returned the parity pattern (and no integer repair) is refused by secondary_suppression's
    audit, also by its verdict without intervals (the fast check of sdc suppress's publishable output)."""
    from sdc.suppression import secondary
    from sdc.suppression.secondary import secondary_suppression

    values, relations, index, suppressed, sensitive = parity_case()
    ones = sensitive * 1.0
    problem = SuppressionProblem.from_arrays(values, relations, sensitive, ones, ones, values,
                                             lower=np.ones(len(values)), upper=np.full(len(values), 1.5 * values.max()),
                                             magnitude=False)
    monkeypatch.setattr(secondary, "heuristic_pattern", lambda problem: suppressed.copy())
    monkeypatch.setattr(secondary, "integer_safe_pattern", lambda problem, pattern: (pattern, []))
    with pytest.raises(SdcError, match=rf"the heuristic pattern fails the audit for cell {index[0, 1, 1]}"):
        secondary_suppression(problem, "heuristic", intervals=intervals)


def test_a_second_integer_check_of_the_same_program_answers_alike_with_fewer_milps(monkeypatch):
    """The verdict after a method's integer check solves the same integer programs: what the first check learnt of
    each (integer tables found, ends that have none) answers the second, which comes to the same cells; a
    different program (one more cell published) learns nothing from it."""
    from sdc.suppression import audit

    values, relations, index, suppressed, sensitive = parity_case()
    runs = []
    solve = audit.ComponentMILP._run
    monkeypatch.setattr(audit.ComponentMILP, "_run", lambda self: runs.append(1) or solve(self))
    monkeypatch.setattr(audit.MilpMemo, "_kept", audit.OrderedDict())

    def check(pattern):
        table = AuditTable(values, relations, sensitive=sensitive, protection_lower=sensitive * 1.0,
                           protection_upper=sensitive * 1.0, lower=np.ones(len(values)),
                           upper=np.full(len(values), 1.5 * values.max()), integer=True)
        runs.clear()
        return integer_failures(table, pattern), len(runs)

    first, solved = check(suppressed)
    again, solved_again = check(suppressed)
    assert first == again == ([index[0, 1, 1]], []) and solved > 0 and solved_again < solved
    wider = suppressed.copy()
    wider[np.flatnonzero(~suppressed & (values > 0))[0]] = True
    assert check(wider)[1] > 0  # another program: solved afresh
