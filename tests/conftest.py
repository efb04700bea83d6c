from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent


@pytest.fixture
def data_dir() -> Path:
    return DATA


def ons_10_5_rule(max_count: int) -> str:
    """ONS's dummy ptable (reference T11): pvalue = -pcv below 10, else by pcv mod 5: 0, -1, -2, +2, +1."""
    lines = ["pcv,ckey,pvalue"]
    for pcv in range(1, max_count + 1):
        noise = -pcv if pcv < 10 else {0: 0, 1: -1, 2: -2, 3: 2, 4: 1}[pcv % 5]
        lines += [f"{pcv},{key},{noise}" for key in range(256)]
    return "\n".join(lines) + "\n"


def query(db, sql, params=None):
    """The rows of one query on the DuckDB file ``db``, opened read-only and closed again."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params).fetchall() if params else con.execute(sql).fetchall()
    finally:
        con.close()
