"""Cell suppression of a magnitude with decimals (incomes in cents, red team R3-8). Float sums of cents miss their
exact decimal sums by noise (CA,Total 47387443.449999884), so a total differs from the sum of its children by
1e-8 and the attacker's equations over suppressed cells that close a cycle contradicted each other: the LP was
infeasible. The audit works in units of the values' decimals, where the relations hold exactly."""

import csv
import random
from decimal import Decimal

import duckdb
import numpy as np
import pytest

from dbt_project_helper import ScratchProject
from sdc.cli import main
from sdc.suppression import audit_pattern
from sdc.suppression.pipeline import suppressed_table

STATES = ["CA", "NY", "TX", "FL", "WA", "OR", "NV", "AZ"]
RULES = ["--rule", "p:10", "--rule", "nk:2,85"]


def cents_persons(seed: int = 7) -> list[tuple]:
    """4,000 persons (id, state, sex, age_group, w, wf, income) in 8 states of very different sizes, lognormal
    incomes with cents, and one income of 5,000,000 in the smallest state (its cell AZ,m is dominated)."""
    rng = random.Random(seed)
    rows = []
    for i in range(1, 4001):
        state = rng.choices(STATES, weights=[30, 25, 20, 10, 8, 4, 2, 1])[0]
        income = f"{rng.lognormvariate(10, 0.8):.2f}"
        if i == 17:
            state, income = "AZ", "5000000.00"
        rows.append((i, state, rng.choice("mw"), rng.choice(["0-17", "18-64", "65+"]), "1.0", "1", income))
    return rows


def write_persons(path) -> None:
    path.write_text("id,state,sex,age_group,w,wf,income\n" + "".join(",".join(map(str, r)) + "\n"
                                                                      for r in cents_persons()))


def exact_sum(state: str, sex: str) -> Decimal:
    """The exact income of a cell (Total for a margin), summed in decimal."""
    return sum((Decimal(r[6]) for r in cents_persons() if state in (r[1], "Total") and sex in (r[2], "Total")),
               Decimal(0))


def read(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def covers_its_protection(row) -> bool:
    """An audit row's interval reaches value - protection_lower and value + protection_upper."""
    value, lower, upper = float(row["value"]), float(row["lower"]), float(row["upper"])
    return (lower <= value - float(row["protection_lower"]) + 1e-6
            and upper >= value + float(row["protection_upper"]) - 1e-6)


@pytest.mark.parametrize("method", ["heuristic", "optimal"])
def test_sdc_suppress_and_audit_with_cents(tmp_path, capsys, method):
    data, out = tmp_path / "persons.csv", tmp_path / "cells.csv"
    write_persons(data)
    assert main(["suppress", "--input", str(data), "--dims", "state,sex", "--value", "income", *RULES,
                 "--method", method, "--audit", "--out", str(out)]) == 0, capsys.readouterr().err
    rows = read(out)
    az_m = next(r for r in rows if (r["state"], r["sex"]) == ("AZ", "m"))
    assert (az_m["status"], az_m["value"]) == ("primary", str(exact_sum("AZ", "m")))
    suppressed = [r for r in rows if r["status"] in ("primary", "secondary")]
    assert len(suppressed) >= 4 and all(covers_its_protection(r) for r in suppressed if r["status"] == "primary")
    capsys.readouterr()
    assert main(["audit", "--cells", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        f"audit passed: 1 sensitive cells, {len(suppressed)} suppressed, 0 not protected"


def test_published_intervals_with_cents_hold_the_true_values(tmp_path, capsys):
    """The report's command: the intervals from the published cells alone are LPs over the published values."""
    data, out = tmp_path / "persons.csv", tmp_path / "inc.csv"
    write_persons(data)
    assert main(["suppress", "--input", str(data), "--dims", "state,sex", "--value", "income", *RULES,
                 "--publish-intervals", "--out", str(out)]) == 0, capsys.readouterr().err
    hidden = [r for r in read(out) if r["published_value"] == ""]
    assert len(hidden) >= 4
    for r in hidden:
        true = float(exact_sum(r["state"], r["sex"]))
        assert float(r["published_lower"]) <= true <= float(r["published_upper"]), r
        assert r["published_text"] == f"{r['published_lower']}-{r['published_upper']}"
    az_m = next(r for r in hidden if (r["state"], r["sex"]) == ("AZ", "m"))
    # AZ,m and AZ,w are both hidden: AZ,m is at most AZ's published total
    assert float(az_m["published_upper"]) <= float(exact_sum("AZ", "Total")) + 1e-6


def test_suppressed_table_of_a_dataframe_with_cents():
    import pandas as pd

    frame = pd.DataFrame(cents_persons(), columns=["id", "state", "sex", "age_group", "w", "wf", "income"])
    frame["income"] = frame["income"].astype(float)
    table = suppressed_table(frame, ["state", "sex"], ["p:10", "nk:2,85"], value="income", audit=True)
    primary = table[table["status"] == "primary"]
    assert list(zip(primary["state"], primary["sex"])) == [("AZ", "m")]
    az_m = primary.iloc[0]
    assert az_m["value"] == float(exact_sum("AZ", "m"))
    assert az_m["lower"] <= az_m["value"] - az_m["protection_lower"] + 1e-6
    assert az_m["upper"] >= az_m["value"] + az_m["protection_upper"] - 1e-6
    assert (table["status"] == "secondary").sum() >= 3


def noisy_two_by_two():
    """AZ and CA by m and w with their margins, each cell the float sum of its records' cents as a database sums
    them (totals over all their records, in the records' order, not the sum of their children), and the exact
    decimal sums. Cell index i * 3 + j (row 2 and column 2: the totals)."""
    persons = [r for r in cents_persons() if r[1] in ("AZ", "CA")]
    states, sexes = ["AZ", "CA", "Total"], ["m", "w", "Total"]
    values, exact = [], []
    for state in states:
        for sex in sexes:
            cell = [r[6] for r in persons if state in (r[1], "Total") and sex in (r[2], "Total")]
            values.append(sum(float(x) for x in cell))
            exact.append(sum((Decimal(x) for x in cell), Decimal(0)))
    relations = [[(i * 3 + 2, 1.0), (i * 3, -1.0), (i * 3 + 1, -1.0)] for i in range(3)]
    relations += [[(6 + j, 1.0), (j, -1.0), (3 + j, -1.0)] for j in range(3)]
    return np.array(values), exact, relations


def test_the_audit_of_cents_still_refuses_a_pattern_that_leaks():
    values, exact, relations = noisy_two_by_two()
    assert any(abs(sum(c * values[k] for k, c in r)) > 0 for r in relations)  # float noise: not additive
    rectangle = np.zeros(9, bool)
    rectangle[[0, 1, 3, 4]] = True  # AZ,m AZ,w CA,m CA,w
    sensitive = np.zeros(9, bool)
    sensitive[0] = True  # AZ,m
    # AZ,m = Total,m - CA,m with CA,m in [0, CA,Total]: at least Total,m - CA,Total, at most min(AZ,Total, Total,m)
    low, high = max(exact[6] - exact[5], Decimal(0)), min(exact[2], exact[6])
    reach_low, reach_high = exact[0] - low, high - exact[0]
    for margin, passes in ((Decimal("-0.01"), True), (Decimal("0.01"), False)):
        protection_lower = np.where(sensitive, float(reach_low + margin), 0.0)
        protection_upper = np.where(sensitive, float(reach_high + margin), 0.0)
        result = audit_pattern(values, rectangle, relations, sensitive=sensitive, protection_lower=protection_lower,
                               protection_upper=protection_upper, upper=np.full(9, 1e12))
        assert result.passed is passes
        az_m = result.intervals[0]
        assert abs(az_m.feasible_lower - float(low)) < 1e-6 and abs(az_m.feasible_upper - float(high)) < 1e-6
    # AZ,m and AZ,w alone: the column totals give both away to the cent
    row = np.zeros(9, bool)
    row[[0, 1]] = True
    result = audit_pattern(values, row, relations, sensitive=sensitive, protection_lower=np.where(sensitive, 0.01, 0),
                           protection_upper=np.where(sensitive, 0.01, 0))
    assert not result.passed and result.failures[0].exactly_disclosed
    assert abs(result.failures[0].feasible_lower - float(exact[0])) < 1e-6


def test_secondary_suppression_in_dbt_with_cents(tmp_path):
    dims = "['state', 'sex']"
    p = ScratchProject(tmp_path / "project")
    con = duckdb.connect(str(p.db))
    con.execute("create schema raw")
    con.execute("create table raw.persons (id integer, state varchar, sex varchar, age_group varchar, w double, "
                "wf integer, income double)")
    con.executemany("insert into raw.persons values (?, ?, ?, ?, ?, ?, ?)", cents_persons())
    con.close()
    p.sources(["persons"])
    p.model("cells", f"{{{{ sdc.suppression_cells(source('raw', 'persons'), dims={dims}, value='income') }}}}")
    p.model("primary_cells", "{{ sdc.suppression_primary(ref('cells'), ['p:10', 'nk:2,85']) }}")
    p.model("relations", f"{{{{ sdc.suppression_constraints(ref('cells'), {dims}) }}}}")
    (p.root / "models" / "pattern.py").write_text(
        "def model(dbt, session):\n"
        "    from sdc.suppression.warehouse import suppression_pattern\n"
        "    return suppression_pattern(session, dbt.ref('primary_cells'), dbt.ref('relations'),\n"
        f"                                 dims={dims}, magnitude=True, publish_intervals=True)\n")
    (p.root / "models" / "pattern_audit.py").write_text(
        "def model(dbt, session):\n"
        "    from sdc.suppression.warehouse import suppression_audit\n"
        f"    return suppression_audit(session, dbt.ref('pattern'), dbt.ref('relations'), dims={dims},\n"
        "                             magnitude=True)\n")
    (p.root / "models" / "schema.yml").write_text(
        "version: 2\nmodels:\n  - name: pattern_audit\n    data_tests: [sdc_suppression_audit]\n")
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-3000:]
    con = duckdb.connect(str(p.db), read_only=True)
    try:
        audit = con.execute("select state, sex, status, protected from pattern_audit order by 1, 2").fetchall()
        az_m = con.execute("select value, published_lower, published_upper from pattern "
                           "where state = 'AZ' and sex = 'm'").fetchone()
    finally:
        con.close()
    assert ("AZ", "m", "primary", True) in audit and len(audit) >= 4 and all(row[3] for row in audit)
    assert az_m[1] <= float(exact_sum("AZ", "m")) <= az_m[2] and abs(az_m[0] - float(exact_sum("AZ", "m"))) < 1e-6
