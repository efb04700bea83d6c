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


def two_way_equations(rows, dims, hidden, value_of):
    """The additivity of a 2-D table with totals 'Total' (rows as dicts) as dense equations over the cells
    ``hidden`` (row indices): each total equals the sum of its cells, known cells (``value_of(k)``) moved to
    the right-hand side. Independent of sdc.suppression: for attacker LPs in tests. Returns (A, b)."""
    import numpy as np

    index = {tuple(r[d] for d in dims): k for k, r in enumerate(rows)}
    column = {k: j for j, k in enumerate(hidden)}
    equations, rhs = [], []
    for d, dim in enumerate(dims):
        other = dims[1 - d]
        for parent in {r[other] for r in rows}:
            members = [k for k, r in enumerate(rows) if r[other] == parent and r[dim] != "Total"]
            total = index[tuple("Total" if x == dim else parent for x in dims)]
            row, known = np.zeros(len(hidden)), 0.0
            for k, sign in [(total, 1.0)] + [(m, -1.0) for m in members]:
                if k in column:
                    row[column[k]] += sign
                else:
                    known -= sign * value_of(k)
            equations.append(row)
            rhs.append(known)
    return equations, rhs


def cube_table(inner):
    """Cells of an n-dimensional table with every margin (the last index along each axis is its total),
    its relations (one per line of cells along an axis: total = sum of the others) and the cell indices.
    Used by the suppression tests and bench/integer_audit_bench.py."""
    import numpy as np

    full = np.asarray(inner, dtype=float)
    for axis in range(full.ndim):
        full = np.concatenate([full, full.sum(axis=axis, keepdims=True)], axis=axis)
    index = np.arange(full.size).reshape(full.shape)
    relations = []
    for axis in range(full.ndim):
        for line in np.moveaxis(index, axis, -1).reshape(-1, full.shape[axis]):
            relations.append([(int(line[-1]), 1.0)] + [(int(c), -1.0) for c in line[:-1]])
    return full.ravel(), relations, index


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL cluster for the session (tests/postgres_server.py). The engine suites are part of
    `make test`: where no cluster can start, the tests fail naming why, they are not skipped."""
    from postgres_server import missing_reason, throwaway_postgres

    reason = missing_reason()
    if reason:
        pytest.fail(f"the PostgreSQL tests need a server: {reason}")
    with throwaway_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def engine_reference(tmp_path_factory):
    """The models of tests/engine_models.py built on DuckDB: what every other engine must publish."""
    from engine_models import MICRODATA, project
    from sdc.warehouse.loader import load_microdata

    duck = project(tmp_path_factory.mktemp("engine_reference") / "duckdb")
    load_microdata(duck.db, MICRODATA, "survey", key_mode="existing", key_column="rkeys", modulus=10**7,
                   facts={"f_high": "income > 6000"})
    result = duck.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    return duck


# The longest modules (minutes on 2 cores: JVM, servers, dbt builds), started first: `make test` gives each
# pytest-xdist worker a whole module at a time in collection order, and one of these left for last would run
# alone while the other worker idles.
LONGEST_MODULES = ("test_engine_spark.py", "test_demo_engines.py", "test_publication_gate_postgres.py",
                   "test_hostile_inputs.py", "test_publication_gate.py", "test_record_key_checks.py",
                   "test_engine_postgres_access.py", "test_suppression_primary.py", "test_ckm_weighted_counts.py",
                   "test_ckm_sql.py", "test_ckm_safety.py", "test_readme_examples.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: k for k, name in enumerate(LONGEST_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest in their own order


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium for the tests that look at sdc's HTML in a real browser (`make test` installs it);
    where there is none, those tests fail naming why, they are not skipped."""
    import shutil

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("the browser tests need Chromium: install the Debian package chromium (make test does as root)")
    return found
