"""The demo warehouse on PostgreSQL: the same demo project, loaded with `sdc load --target pg` and built with
`dbt build --target pg`, the secondary suppression by `sdc suppress --target` between two dbt selections (no
Python models on PostgreSQL), publishes every cell exactly as the DuckDB build does."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from sdc.demo import FACTS_CONFIG, write_enterprises, write_students
from sdc.loader import load_microdata, read_facts_config

REPO = Path(__file__).parent.parent
DEMO = REPO / "demo"
BIN = Path(sys.executable).parent
SECRET = "test secret of the demo suite on two engines"
SUPPRESSION = {  # pattern model -> (its Python audit model, dims, magnitude, options of its Python model)
    "supp_studierende_pattern": ("supp_studierende_audit", "fach,geschlecht,hochschule", False,
                                 ["--cost", "freq", "--prefer-low-levels"]),
    "supp_umsatz_pattern": ("supp_umsatz_audit", "wz,region", True,
                            ["--cost", "value", "--publish-intervals", "--prefer-low-levels"]),
}


@pytest.fixture(scope="module")
def both(tmp_path_factory, postgres):
    tmp = tmp_path_factory.mktemp("demo_engines")
    write_students(tmp / "students.parquet", 60_000)
    write_enterprises(tmp / "enterprises.parquet")
    env = dict(os.environ, DBT_PROFILES_DIR=str(DEMO), SDC_DUCKDB_PATH=str(tmp / "sdc.duckdb"), SDC_KEY_SECRET=SECRET,
               DBT_SEND_ANONYMOUS_USAGE_STATS="False", SDC_PG_HOST=postgres.host, SDC_PG_PORT=str(postgres.port),
               SDC_PG_USER=postgres.user, SDC_PG_PASSWORD=postgres.password, SDC_PG_DBNAME=postgres.dbname)

    def run(*args, check=True):
        result = subprocess.run(list(args), cwd=DEMO, env=env, capture_output=True, text=True, timeout=900)
        assert not check or result.returncode == 0, (args, result.stdout[-3000:], result.stderr[-3000:])
        return result

    # DuckDB, as make demo
    load_microdata(tmp / "sdc.duckdb", tmp / "students.parquet", "students", id_column="id", key_mode="keyed",
                   secret=SECRET.encode(), facts=read_facts_config(FACTS_CONFIG))
    load_microdata(tmp / "sdc.duckdb", tmp / "enterprises.parquet", "enterprises", id_column="id",
                   key_mode="keyed", secret=SECRET.encode())
    run(str(BIN / "dbt"), "deps")
    target = ["--target-path", str(tmp / "target"), "--log-path", str(tmp / "logs")]
    run(str(BIN / "dbt"), "build", *target)
    # PostgreSQL: the same loads, the SQL models, the secondary step outside dbt, then what depends on it
    for table, extra in (("students", ["--config", str(FACTS_CONFIG)]), ("enterprises", [])):
        run(str(BIN / "sdc"), "load", "--target", "pg", "--profile", "sdc_demo", "--profiles-dir", str(DEMO),
            "--input", str(tmp / f"{table}.parquet"), "--table", table, "--id", "id", "--key-mode", "keyed", *extra)
    pg_target = ["--target", "pg", "--target-path", str(tmp / "target_pg"), "--log-path", str(tmp / "logs_pg")]
    patterns = list(SUPPRESSION)
    run(str(BIN / "dbt"), "build", *pg_target, "--exclude", *[p + "+" for p in patterns])
    for pattern, (audit, dims, magnitude, options) in SUPPRESSION.items():
        cells, relations = pattern.replace("_pattern", "_primary"), pattern.replace("_pattern", "_relations")
        run(str(BIN / "sdc"), "suppress", "--target", "pg", "--profile", "sdc_demo", "--profiles-dir", str(DEMO),
            "--cells", f"audit.{cells}", "--relations", f"audit.{relations}", "--pattern", f"audit.{pattern}",
            "--audit-table", f"audit.{audit}", "--dims", dims, *(["--magnitude"] if magnitude else []), *options)
    run(str(BIN / "dbt"), "build", *pg_target, "--select", *[p + "+" for p in patterns],
        "--exclude", *patterns, *[a for a, *_ in SUPPRESSION.values()])
    return tmp / "sdc.duckdb", postgres


def _cells(rows):
    def plain(v):
        return float(v) if isinstance(v, (float, Decimal)) else v
    return sorted((tuple(plain(v) for v in row) for row in rows), key=repr)


def test_every_protected_relation_is_the_same_on_duckdb_and_postgresql(both):
    db, server = both
    con = duckdb.connect(str(db), read_only=True)
    conn = server.connect()
    try:
        names = [r[0] for r in con.execute("select table_name from duckdb_tables() where schema_name = 'protected' "
                                           "order by 1").fetchall()]
        assert len(names) == 8
        for name in names:
            on_duckdb = con.execute(f"select * from protected.{name}")
            columns = [d[0] for d in on_duckdb.description]
            ours = _cells(on_duckdb.fetchall())
            with conn.cursor() as cur:
                cur.execute(f"select * from protected.{name}")
                assert [d[0] for d in cur.description] == columns, name
                theirs = _cells(cur.fetchall())
            assert len(ours) == len(theirs) > 0, name
            for a, b in zip(ours, theirs):
                assert [x for x in a if not isinstance(x, float)] == [x for x in b if not isinstance(x, float)], (name, a, b)
                assert [x for x in b if isinstance(x, float)] == pytest.approx(
                    [x for x in a if isinstance(x, float)], rel=1e-12), (name, a, b)
    finally:
        con.close()
        conn.close()
