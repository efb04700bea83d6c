"""suppression_cells_from_aggregate: the cell table from an aggregate of the finest cells equals the one
suppression_cells builds from the microdata; bad aggregates stop the build naming the cell."""

import duckdb
import pytest

from dbt_project_helper import ScratchProject

# turnover microdata: (wz, region, enterprise turnover); no enterprise in two cells
RECORDS = [("C", "Nord", 600), ("C", "Nord", 50), ("C", "Nord", 250), ("C", "Sued", 70), ("C", "Sued", 30),
           ("G", "Nord", 500), ("G", "Sued", 90), ("G", "Sued", 80), ("G", "Sued", 10), ("G", "Sued", 5),
           ("F", "Nord", 40), ("F", "Sued", 41), ("F", "Sued", 39)]
HIERARCHY = "dimension,code,parent\nwz,Total,\nwz,Industrie,Total\nwz,Dienste,Total\nwz,C,Industrie\nwz,F,Industrie\nwz,G,Dienste\n"
DIMS = "['wz', 'region']"


def aggregate_rows():
    cells = {}
    for wz, region, x in RECORDS:
        cells.setdefault((wz, region), []).append(x)
    rows = []
    for (wz, region), xs in sorted(cells.items()):
        top = sorted(xs, reverse=True) + [0, 0, 0]
        rows.append((wz, region, len(xs), float(sum(xs)), top[0], top[1], top[2] or None))  # NULL = no third
    return rows


def project(root, aggregate_rows):
    p = ScratchProject(root)
    con = duckdb.connect(str(p.db))
    con.execute("create schema raw")
    con.execute("create table raw.micro (wz varchar, region varchar, umsatz double)")
    con.executemany("insert into raw.micro values (?, ?, ?)", RECORDS)
    con.execute("create table raw.agg (wz varchar, region varchar, n integer, umsatz double, "
                "x1 double, x2 double, x3 double)")
    con.executemany("insert into raw.agg values (?, ?, ?, ?, ?, ?, ?)", aggregate_rows)
    con.close()
    p.sources(["micro", "agg"])
    p.seed("sdc_hierarchies", HIERARCHY)
    p.model("from_micro", f"{{{{ sdc.suppression_cells(source('raw', 'micro'), dims={DIMS}, value='umsatz', "
                          "hierarchy=ref('sdc_hierarchies')) }}")
    p.model("from_aggregate", f"{{{{ sdc.suppression_cells_from_aggregate(source('raw', 'agg'), dims={DIMS}, "
                              "freq='n', value='umsatz', top=['x1', 'x2', 'x3'], hierarchy=ref('sdc_hierarchies')) }}")
    return p


def test_aggregate_input_gives_the_cells_of_the_microdata(tmp_path):
    p = project(tmp_path / "project", aggregate_rows())
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-3000:]
    con = duckdb.connect(str(p.db), read_only=True)
    try:
        micro = con.execute("select * from from_micro order by all").fetchall()
        aggregate = con.execute("select * from from_aggregate order by all").fetchall()
        industry = con.execute("select freq, value, top_1, top_2, top_3 from from_aggregate "
                               "where wz = 'Industrie' and region = 'Total'").fetchone()
    finally:
        con.close()
    assert aggregate == micro and len(micro) == 6 * 3
    # Industrie = C and F over both regions: 8 enterprises, top three 600, 250, 70
    assert industry == (8, 1120.0, 600.0, 250.0, 70.0)


@pytest.mark.parametrize("bad_row, message", [
    (("C", "Nord", 1, 5.0, 5.0, None, None), "duplicate cell wz=C, region=Nord in the aggregate table"),
    (("Industrie", "Nord", 3, 900.0, 600.0, 250.0, 50.0), "value Industrie of dimension wz is not a leaf"),
    (("C", "Total", 5, 1000.0, 600.0, 250.0, 70.0), "row wz=C, region=Total is a total"),
])
def test_bad_aggregates_stop_the_build_naming_the_cell(tmp_path, bad_row, message):
    p = project(tmp_path / "project", aggregate_rows() + [bad_row])
    result = p.dbt("build", "--select", "sdc_hierarchies", "from_aggregate")
    assert result.returncode != 0
    assert message in result.stdout
