"""The demo warehouse on all three engines: the same demo project, loaded with `sdc load --target <t>` and built
with `dbt build --target <t>` on PostgreSQL and on a local Spark session, the secondary suppression by `sdc
suppress --target` between two dbt selections (no dbt Python models on either), publishes every cell exactly as
the DuckDB build (`make demo`'s way) does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from dbt_project_helper import DEMO, install_demo_packages
from engine_models import assert_same_cells, plain_cells
from sdc.demo import FACTS_CONFIG, write_enterprises, write_students
from sdc.warehouse.loader import load_microdata, read_facts_config

REPO = Path(__file__).parent.parent
BIN = Path(sys.executable).parent
SECRET = "test secret of the demo suite on two engines"
SUPPRESSION = {  # pattern model -> (its Python audit model, dims, magnitude, options of its Python model)
    "supp_studierende_pattern": ("supp_studierende_audit", "fach,geschlecht,hochschule", False,
                                 ["--cost", "freq", "--prefer-low-levels"]),
    "supp_umsatz_pattern": ("supp_umsatz_audit", "wz,region", True,
                            ["--cost", "value", "--publish-intervals", "--prefer-low-levels"]),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo_engines")
    write_students(tmp / "students.parquet", 60_000)
    write_enterprises(tmp / "enterprises.parquet")
    return tmp


def runner(env: dict):
    def run(*args, check=True):
        result = subprocess.run(list(args), cwd=DEMO, env=env, capture_output=True, text=True, timeout=900)
        assert not check or result.returncode == 0, (args, result.stdout[-3000:], result.stderr[-3000:])
        return result
    return run


def base_env(tmp: Path) -> dict:
    return dict(os.environ, DBT_PROFILES_DIR=str(DEMO), SDC_KEY_SECRET=SECRET, DBT_SEND_ANONYMOUS_USAGE_STATS="False")


@pytest.fixture(scope="module")
def on_duckdb(inputs):
    """As make demo: the loads, then one dbt build (its Python models do the secondary step)."""
    db = inputs / "sdc.duckdb"
    run = runner(dict(base_env(inputs), SDC_DUCKDB_PATH=str(db)))
    load_microdata(db, inputs / "students.parquet", "students", id_column="id", key_mode="keyed",
                   secret=SECRET.encode(), facts=read_facts_config(FACTS_CONFIG))
    load_microdata(db, inputs / "enterprises.parquet", "enterprises", id_column="id", key_mode="keyed",
                   secret=SECRET.encode())
    install_demo_packages()
    run(str(BIN / "dbt"), "build", "--target-path", str(inputs / "target"), "--log-path", str(inputs / "logs"))
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("select table_name from duckdb_tables() where schema_name = 'protected' "
                                           "order by 1").fetchall()]
        tables = {}
        for name in names:
            result = con.execute(f"select * from protected.{name}")
            tables[name] = ([d[0] for d in result.description], result.fetchall())
        return tables
    finally:
        con.close()


def build_demo_on(target: str, env: dict, tmp: Path) -> None:
    """The same loads into the target, the SQL models, the secondary step outside dbt, then what depends on it."""
    run = runner(env)
    # the profile as dbt finds it: demo/dbt_project.yml's profile: (the working directory), profiles.yml from
    # $DBT_PROFILES_DIR
    profile = ["--target", target]
    for table, extra in (("students", ["--config", str(FACTS_CONFIG)]), ("enterprises", [])):
        run(str(BIN / "sdc"), "load", *profile, "--input", str(tmp / f"{table}.parquet"), "--table", table,
            "--id", "id", "--key-mode", "keyed", *extra)
    paths = ["--target", target, "--target-path", str(tmp / f"target_{target}"), "--log-path", str(tmp / f"logs_{target}")]
    patterns = list(SUPPRESSION)
    install_demo_packages()
    run(str(BIN / "dbt"), "build", *paths, "--exclude", *[p + "+" for p in patterns])
    for pattern, (audit, dims, magnitude, options) in SUPPRESSION.items():
        cells, relations = pattern.replace("_pattern", "_primary"), pattern.replace("_pattern", "_relations")
        run(str(BIN / "sdc"), "suppress", *profile, "--cells", f"audit.{cells}", "--relations", f"audit.{relations}",
            "--pattern", f"audit.{pattern}", "--audit-table", f"audit.{audit}", "--dims", dims,
            *(["--magnitude"] if magnitude else []), *options)
    run(str(BIN / "dbt"), "build", *paths, "--select", *[p + "+" for p in patterns],
        "--exclude", *patterns, *[a for a, *_ in SUPPRESSION.values()])


@pytest.fixture(scope="module")
def on_postgres(inputs, postgres):
    env = dict(base_env(inputs), SDC_PG_HOST=postgres.host, SDC_PG_PORT=str(postgres.port), SDC_PG_USER=postgres.user,
               SDC_PG_PASSWORD=postgres.password, SDC_PG_DBNAME=postgres.dbname)
    build_demo_on("pg", env, inputs)
    conn = postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("select table_name from information_schema.tables where table_schema = 'protected'")
            tables = {}
            for (name,) in cur.fetchall():
                cur.execute(f"select * from protected.{name}")
                tables[name] = ([d[0] for d in cur.description], cur.fetchall())
        return tables
    finally:
        conn.close()


def demo_spark_server_profile(folder: Path, spark_dir: Path) -> dict:
    """The demo profile's spark target split for a Spark Connect server: returns the settings its local session
    starts with (the server's: master, warehouse and metastore under ``spark_dir``, its SDC_SPARK_DIR) and writes
    a copy of demo/profiles.yml into ``folder`` whose spark output keeps only what a session sets for itself."""
    import yaml

    from spark_server import session_parameters

    text = (DEMO / "profiles.yml").read_text()
    parameters = yaml.safe_load(text)["sdc_demo"]["outputs"]["spark"]["server_side_parameters"]
    started = {k: v.replace("{{ env_var('SDC_SPARK_DIR', '../warehouse/spark') }}", str(spark_dir))
               for k, v in parameters.items()}
    assert not any("{{" in v for v in started.values()), started
    kept = session_parameters(parameters)
    # the file as it is (its env_var templates), less the lines of the settings the server fixes
    lines = [line for line in text.splitlines(keepends=True)
             if line.strip().split(":", 1)[0] not in set(parameters) - set(kept)]
    (folder / "profiles.yml").write_text("".join(lines))
    return started


@pytest.fixture(scope="module")
def on_spark(inputs):
    """The demo profile's spark target, its dbt and sdc runs on one Spark Connect server (tests/spark_server.py)
    started with that target's settings: catalog and tables under SDC_SPARK_DIR. (The profile's own local
    session: test_the_demo_profile_starts_a_local_spark_session_of_its_own.)"""
    from spark_server import spark_connect_server

    folder = inputs / "spark_connect"
    folder.mkdir()
    with spark_connect_server(folder, demo_spark_server_profile(folder, inputs / "spark")) as remote:
        env = dict(base_env(inputs), DBT_PROFILES_DIR=str(folder), SPARK_LOCAL_IP="127.0.0.1", SPARK_REMOTE=remote)
        build_demo_on("spark", env, inputs)
        # the release as an office publishes it on Spark (test_the_demo_release_on_spark_is_audited_as_on_duckdb)
        released = runner(env)(str(BIN / "sdc"), "publish", "--target", "spark", "--manifest",
                               str(inputs / "target_spark" / "manifest.json"), "--audit-json",
                               str(inputs / "spark_release.json"), check=False)
        (inputs / "spark_release.out").write_text(json.dumps([released.returncode, released.stdout, released.stderr]))
        # read through sdc's own connection to the target (one session for all tables)
        code = ("import json, decimal\nfrom sdc.warehouse.profiles import connect_target\n"
                f"with connect_target({str(folder)!r}, 'sdc_demo', 'spark') as spark:\n"
                "    _, names = spark.query('show tables in protected')\n"
                "    out = {}\n"
                "    for _, name, _ in names:\n"
                "        columns, rows = spark.query(f'select * from protected.{name}')\n"
                "        out[name] = [columns, [[float(v) if isinstance(v, decimal.Decimal) else v for v in r] "
                "for r in rows]]\n"
                "print(json.dumps(out, default=str))")
        result = subprocess.run([sys.executable, "-c", code], cwd=inputs, env=env, capture_output=True, text=True,
                                timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    tables = json.loads(result.stdout.strip().splitlines()[-1])
    return {name: (columns, [tuple(r) for r in rows]) for name, (columns, rows) in tables.items()}


@pytest.mark.spark
def test_the_demo_profile_starts_a_local_spark_session_of_its_own(tmp_path):
    """The demo's spark target as a user runs it, no server: `sdc load --target spark` starts a local session
    whose catalog (metastore_db) and tables lie under SDC_SPARK_DIR, where dbt's session finds them."""
    write_enterprises(tmp_path / "enterprises.parquet")
    env = dict(base_env(tmp_path), SDC_SPARK_DIR=str(tmp_path / "spark"), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARK_REMOTE", None)
    runner(env)(str(BIN / "sdc"), "load", "--target", "spark", "--input", str(tmp_path / "enterprises.parquet"),
                "--table", "enterprises", "--id", "id", "--key-mode", "keyed")
    assert (tmp_path / "spark" / "metastore_db").is_dir()
    written = tmp_path / "spark" / "tables" / "raw.db" / "enterprises"
    assert written.is_dir() and any(written.glob("*.parquet"))
    rows = duckdb.execute(f"select count(*), count(distinct rk) from '{written}/*.parquet'").fetchone()
    assert rows[0] == duckdb.execute(f"select count(*) from '{tmp_path / 'enterprises.parquet'}'").fetchone()[0]
    assert rows[1] > 0.99 * rows[0]


@pytest.mark.parametrize("engine", [pytest.param("on_postgres", marks=pytest.mark.postgres),
                                    pytest.param("on_spark", marks=pytest.mark.spark)])
def test_every_protected_relation_is_the_same_on_every_engine(on_duckdb, engine, request):
    theirs = request.getfixturevalue(engine)
    # the demo publishes 6 relations (students by suppression, turnover by the CKM; the other two are in compared)
    assert len(on_duckdb) == 6 and sorted(theirs) == sorted(on_duckdb)
    for name, (columns, rows) in on_duckdb.items():
        their_columns, their_rows = theirs[name]
        assert their_columns == columns, name
        assert len(rows) > 0, name
        assert_same_cells(plain_cells(rows), plain_cells(their_rows), name)


@pytest.mark.spark
def test_the_demo_release_on_spark_is_audited_as_on_duckdb(on_duckdb, on_spark, inputs, tmp_path):
    """`sdc publish --target spark` publishes the demo's release on Spark after the release audit that `sdc publish`
    runs on DuckDB: the same tables verified, the same checks passed, the same averaging figure, release 1 of the
    ledger database on Spark."""
    code, out, err = json.loads((inputs / "spark_release.out").read_text())
    assert code == 0, (out[-3000:], err[-3000:])
    assert "recorded as release 1 in the ledger database sdc_ledger of target spark" in out
    assert "published 6 relations and the release audit to database sdc_publication" in out
    spark = json.loads((inputs / "spark_release.json").read_text())
    env = dict(base_env(inputs), SDC_DUCKDB_PATH=str(inputs / "sdc.duckdb"))
    runner(env)(str(BIN / "sdc"), "publish", "--db", str(inputs / "sdc.duckdb"), "--manifest",
                str(inputs / "target" / "manifest.json"), "--out", str(tmp_path / "pub.duckdb"), "--ledger",
                str(tmp_path / "ledger.duckdb"), "--audit-json", str(tmp_path / "duck.json"))
    duck = json.loads((tmp_path / "duck.json").read_text())
    assert spark["published"] == duck["published"] and spark["verified"] == duck["verified"]
    assert spark["checks"] == duck["checks"] and spark["release"] == duck["release"] == 1
    assert spark["averaging"]["smallest_standard_error"] == pytest.approx(duck["averaging"]["smallest_standard_error"])
    assert spark["averaging"]["method"] == duck["averaging"]["method"]
