"""suppression_cells over a count table (no value, no holding) aggregates the records to the finest cells
first (new-user trial D17: ranking every record as a contributor cost 9.9 s and 3.5 GB at 2.2 million records,
against 0.19 s for ckm_count): the same cells as the per-record path gives with a value of 1 per record, and
no per-record window in the plan. The timings: bench/suppression_cells_bench.py."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pytest

from sdc.warehouse.macro_renderer import render_macro


@pytest.fixture(scope="module")
def con():
    rng = np.random.default_rng(17)
    n = 5000
    c = duckdb.connect()
    c.register("drawn", {"fach": rng.choice(["bio", "chem", "math", "phys", "rare"], n, p=[0.4, 0.3, 0.2, 0.0996, 0.0004]),
                         "geschlecht": rng.choice(["m", "w"], n), "hs": rng.choice(["u1", "u2", "f1"], n)})
    c.execute("create table students as select *, 1 as one from drawn")
    return c


@pytest.mark.parametrize("dims, totals", [(["fach", "geschlecht"], "cube"), (["fach", "geschlecht", "hs"], "cube"),
                                          (["hs", "fach"], "rollup"), (["fach"], "none")])
def test_a_count_table_has_the_cells_of_the_per_record_path(con, dims, totals):
    counted = render_macro(con, "suppression_cells", "students", dims, totals=totals, top_n=3)
    per_record = render_macro(con, "suppression_cells", "students", dims, value="one", totals=totals, top_n=3)
    got = con.execute(f"select * from ({counted}) order by all").fetchall()
    expected = con.execute(f"select * from ({per_record}) order by all").fetchall()
    assert len(got) >= 5 and got == expected
    columns = [d[0] for d in con.execute(f"select * from ({counted}) limit 0").description]
    assert columns == dims + ["freq", "contributors", "value", "top_1", "top_2", "top_3"]
    # the rare subject has 1 or 2 records in a cell of two dimensions: top_2 or top_3 are 0 there
    assert len(dims) == 1 or any(row[len(dims) + 3:] in [(1.0, 0.0, 0.0), (1.0, 1.0, 0.0)] for row in got)


def test_a_count_table_ranks_no_record(con):
    counted = render_macro(con, "suppression_cells", "students", ["fach", "geschlecht"])
    per_record = render_macro(con, "suppression_cells", "students", ["fach", "geschlecht"], value="one")
    def operators(sql):
        return set(re.findall(r"─ ([A-Z][A-Za-z ]+?) ─", "\n".join(row[1] for row in con.execute(f"explain {sql}").fetchall())))

    assert "Window" in operators(per_record)  # a rank per record of every cell
    assert "Window" not in operators(counted) and "row_number" not in counted.lower()


@pytest.mark.parametrize("dims, totals", [(["fach", "geschlecht"], "cube"), (["fach", "geschlecht", "hs"], "cube"),
                                          (["hs", "fach"], "rollup")])
def test_a_magnitude_table_without_holdings_has_the_cells_of_one_holding_per_record(con, dims, totals):
    """Without holdings a cell's largest contributions are found among its finest cells' (only those are ranked
    above the finest cells); with every record a holding of its own the same table ranks every record in every
    cell. Incomes with ties (whole hundreds), a subject with one record per cell: the same cells, to the cent."""
    con.execute("create or replace table earners as select *, row_number() over () as person, "
                "round(random() * 50) * 100 as income from students")
    ranked = render_macro(con, "suppression_cells", "earners", dims, value="income", totals=totals, top_n=3)
    per_holding = render_macro(con, "suppression_cells", "earners", dims, value="income", holding="person",
                               totals=totals, top_n=3)
    got = con.execute(f"select * from ({ranked}) order by all").fetchall()
    expected = con.execute(f"select * from ({per_holding}) order by all").fetchall()
    assert len(got) >= 5 and got == expected
    assert any(row[len(dims)] == 1 and row[len(dims) + 4] == 0 for row in got)  # one record: top_2 is 0
