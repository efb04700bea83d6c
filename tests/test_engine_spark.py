"""The models of tests/engine_models.py on local Spark (dbt-spark, method session) publish the same
cells as on DuckDB: counts (cube, hierarchy and threshold, fact, weighted both ways), the magnitude table, means,
quality, cell suppression's SQL steps and microaggregation. Spark starts slowly (a JVM per process), so this
module builds one project once, and its dbt and sdc runs go to one Spark Connect server (tests/spark_server.py)
that keeps the project's catalog; test_sdc_spark_sessions_do_not_substitute_variables starts a session of its own.

The microdata are loaded with record keys once (sdc load into DuckDB, the reference build) and written to Spark's
warehouse as they are, by a PySpark session on the same server."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dbt_project_helper import SPARK_SESSION, spark_parameters
from engine_models import DERIVED, MODELS, PARAMS, assert_same_cells, keyed_survey_on_duckdb, plain_cells, project
from sdc.warehouse.build_record import build_record_of_comment
from sdc.quoting import quote_spark_identifier
from sdc.warehouse.spark_target import NO_SUBSTITUTION
from spark_server import spark_connect_server
from test_ckm_mistakes import SPARK_SEED_MESSAGE
from test_hostile_inputs import PAYLOADS, names

pytestmark = pytest.mark.spark

SESSION = ("from pyspark.sql import SparkSession\n"
           "spark = SparkSession.builder.config('spark.sql.variable.substitute', 'false').getOrCreate()\n")


def pyspark(p, code: str) -> str:
    """Run ``code`` with a session on the server of the project ``p``; returns the last line it prints."""
    result = subprocess.run([sys.executable, "-c", SESSION + code], cwd=p.root, env=p.env(), capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


@pytest.fixture(scope="module")
def built(tmp_path_factory, engine_reference):
    if shutil.which("java") is None:
        pytest.fail("the Spark tests need Java 17 on PATH")
    root = tmp_path_factory.mktemp("spark")
    con = duckdb.connect(str(engine_reference.db), read_only=True)
    for table in ("survey", "sdc_loads"):
        con.execute(f"copy raw.{table} to '{root / (table + '.parquet')}' (format parquet)")
    con.close()
    with spark_connect_server(root / "project") as remote:
        p = project(root / "project", spark=True, spark_remote=remote)
        pyspark(p, "spark.sql('create database if not exists raw')\n" + "".join(
            f"spark.read.parquet('{root / (t + '.parquet')}').write.mode('overwrite').saveAsTable('raw.{t}')\n"
            for t in ("survey", "sdc_loads")))
        result = p.dbt("build")
        # dbt's output without the JVM's stack traces, which would push the error itself out of the message
        assert result.returncode == 0, "\n".join(
            line for line in result.stdout.splitlines() if not line.strip().startswith("at "))[-6000:]
        yield engine_reference, p


def spark_tables(p, database: str | None) -> list[str]:
    """The tables of ``database`` (sorted), or with None the databases; [] for a database that does not exist."""
    code = ("import json\n"
            f"database = {database!r}\n"
            "names = [r[0] for r in spark.sql('show databases').collect()]\n"
            "if database is not None:\n"
            "    names = [r.tableName for r in spark.sql(f'show tables in {database}').collect()] if database in names else []\n"
            "print(json.dumps(sorted(names)))")
    return json.loads(pyspark(p, code))


def read_spark(p, queries: dict[str, str]) -> dict[str, tuple[list[str], list[tuple]]]:
    """Each query's columns and rows, all read by one PySpark process (a JVM start each would cost ~15 s).
    Decimals travel as floats, as plain_cells makes them on DuckDB."""
    code = ("import json, decimal\nout = {}\n"
            f"for name, sql in {queries!r}.items():\n"
            "    df = spark.sql(sql)\n"
            "    out[name] = [df.columns, [[float(v) if isinstance(v, decimal.Decimal) else v for v in r] "
            "for r in df.collect()]]\n"
            "print(json.dumps(out, default=str))")
    return {name: (columns, [tuple(r) for r in rows]) for name, (columns, rows) in json.loads(pyspark(p, code)).items()}


@pytest.fixture(scope="module")
def spark_cells(built):
    _, spark = built
    return read_spark(spark, {model: f"select * from main.{model}" for model in [*MODELS, *DERIVED]})


def duckdb_cells(p, sql: str) -> tuple[list[str], list[tuple]]:
    con = duckdb.connect(str(p.db), read_only=True)
    try:
        rows = con.execute(sql).fetchall()
        return [d[0] for d in con.description], rows
    finally:
        con.close()


@pytest.mark.parametrize("model", [*MODELS, *DERIVED])
def test_every_published_cell_is_the_same_on_duckdb_and_spark(built, spark_cells, model):
    duck, _ = built
    columns_duck, cells_duck = duckdb_cells(duck, f"select * from main.{model}")
    columns_spark, cells_spark = spark_cells[model]
    assert columns_duck == columns_spark
    assert len(cells_duck) > (0 if model in DERIVED else 10)
    assert_same_cells(plain_cells(cells_duck), plain_cells(cells_spark), model)


def sdc_cli(p, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The sdc CLI in the project ``p``'s folder, on its Spark, as a user runs it beside dbt."""
    return subprocess.run([str(Path(sys.executable).parent / "sdc"), *args], cwd=p.root, capture_output=True,
                          text=True, timeout=600, env=p.env(**env))


def test_secondary_suppression_on_spark_between_two_dbt_selections(built):
    """No dbt Python models on Spark outside Databricks: `sdc suppress --target` reads the cell table and the
    relations through the session, writes the pattern and its audit, and a second dbt selection publishes it.
    The pattern is the one DuckDB's Python model made."""
    duck, spark = built
    run = sdc_cli(spark, "suppress", "--target", "spark", "--profile", "sdc_scratch", "--profiles-dir",
                  str(spark.root), "--cells", "main.supp_primary", "--relations", "main.supp_relations",
                  "--pattern", "main.supp_pattern", "--audit-table", "main.supp_audit", "--dims", "roof,water",
                  "--magnitude", "--publish-intervals")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "0 sensitive cells unprotected" in run.stdout and "secondary" in run.stdout
    spark.model("supp_published", "{{ sdc.suppression_published('main.supp_pattern', ['roof', 'water'], value='value') }}")
    result = spark.dbt("build", "--select", "supp_published")
    assert result.returncode == 0, result.stdout[-3000:]
    pick = "select roof, water, status, published_text from main.supp_pattern"
    theirs = read_spark(spark, {
        "pattern": pick, "audit": "select count(*), bool_and(protected) from main.supp_audit",
        "published": "select count_if(value is null), count_if(published_text = cast(value as string) or "
                     "published_text = cast(cast(value as bigint) as string)) from main.supp_published"})
    ours = sorted(duckdb_cells(duck, pick)[1])
    assert sorted(theirs["pattern"][1]) == ours and any(r[2] == "secondary" for r in ours)
    hidden, shown = theirs["published"][1][0]
    assert tuple(theirs["audit"][1][0]) == (sum(r[2] in ("primary", "secondary") for r in ours), True)
    assert hidden == theirs["audit"][1][0][0] and shown == len(ours) - hidden


def test_sdc_load_into_spark_gives_the_keys_of_duckdb_and_keeps_stored_keys(built, tmp_path):
    from engine_models import MICRODATA

    _, spark = built
    secret = "a test secret of at least thirty-two bytes, not the demo's"
    common = ["--profile", "sdc_scratch", "--profiles-dir", str(spark.root), "--target", "spark",
              "--input", str(MICRODATA), "--id", "row_id"]
    keyed = sdc_cli(spark, "load", *common, "--table", "keyed_survey", "--key-mode", "keyed",
                    SDC_KEY_SECRET=secret)
    assert keyed.returncode == 0, keyed.stderr[-3000:]
    for run in (1, 2):
        random = sdc_cli(spark, "load", *common, "--table", "random_survey", "--key-mode", "random")
        assert random.returncode == 0, (run, random.stderr[-3000:])
        if run == 1:
            first = read_spark(spark, {"keys": "select row_id, rk from raw.random_survey"})["keys"][1]
    theirs = read_spark(spark, {
        "keyed": "select row_id, rk, sex from raw.keyed_survey",
        "random": "select row_id, rk from raw.random_survey",
        "log": "select table_name, key_mode, modulus from raw.sdc_loads where table_name like '%_survey'",
        "tables": "show tables in raw"})
    on_duckdb = keyed_survey_on_duckdb(tmp_path / "duck.duckdb", secret)
    assert sorted(theirs["keyed"][1]) == on_duckdb and len(on_duckdb) == 4580
    assert dict(first) == dict(theirs["random"][1]) and len({k for _, k in first}) > 4500  # stored keys kept
    assert sorted(theirs["log"][1]) == [("keyed_survey", "keyed", 100000000), ("random_survey", "random", 100000000)]
    # the survey of the module's build is still there; no staging table is left behind
    names = {row[1] for row in theirs["tables"][1]}
    assert {"survey", "sdc_loads", "keyed_survey", "random_survey"} <= names and not any("staging" in n for n in names)


QUOTING_MODEL = """
-- depends_on: {{ ref('hostile_values') }}
{%- set rows = run_query('select n, v from ' ~ ref('hostile_values')).rows if execute else [] -%}
{%- for n, v in rows %}
select {{ n }} as n, {{ sdc.sql_string(v) }} as v
from (select 1 as {{ sdc.sql_identifier(v) }}) as t where t.{{ sdc.sql_identifier(v) }} = 1
{{ 'union all' if not loop.last }}
{%- else %}
select 0 as n, 'none' as v
{%- endfor %}
"""


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.generate])
@given(values=st.lists(names.filter(lambda s: "\r" not in s and "${" not in s), min_size=60, max_size=60))
def test_spark_quoting_round_trips_hostile_text_as_literals_and_names(built, values):
    """sql_string and sql_identifier on Spark (backslash escapes, backquotes), and the Python package's
    quote_spark_identifier: every hostile text, the payloads
    included, comes back as itself as a value and works as a column name; the seed loader (typed literals)
    carries it in. One dbt run for all of them (a Spark run costs ~30 s). A text with "${" is refused instead
    (test_spark_variable_substitution_never_reaches_a_table)."""
    _, spark = built
    values = list(dict.fromkeys([*PAYLOADS, *values]))
    with (spark.root / "seeds" / "hostile_values.csv").open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerows([["n", "v"], *[[i, v] for i, v in enumerate(values)]])
    (spark.root / "models" / "hostile_quoting.sql").write_text(QUOTING_MODEL)
    try:
        result = spark.dbt("build", "--select", "hostile_values hostile_quoting")
    finally:
        (spark.root / "models" / "hostile_quoting.sql").unlink()
    assert result.returncode == 0, result.stdout[-3000:]
    back = read_spark(spark, {"values": "select n, v from main.hostile_quoting",
                                   "survey": "select count(*) from raw.survey",
                                   # the Python side's quoting (sdc load/suppress --target on Spark)
                                   "names": "select " + ", ".join(f"{i} as {quote_spark_identifier(v)}"
                                                                  for i, v in enumerate(values))})
    assert sorted(back["values"][1]) == [(i, v) for i, v in enumerate(values)]
    assert back["names"][0] == values and back["names"][1] == [tuple(range(len(values)))]
    assert back["survey"][1] == [(4580,)]  # no payload dropped or emptied a table


def test_a_cell_too_large_for_an_exact_bigint_key_sum_stops_the_build(built):
    """Spark sums record keys as bigint (a decimal sum costs as much as the rest of the query): exact while a
    cell has at most (2^63 - 1) / M records. Keys for M = 4 * 10^17 allow 23; the survey's cells have more."""
    _, spark = built
    modulus = 4 * 10**17
    pyspark(spark, "spark.sql('create table raw.bigkeys as select sex, rk * 40000000000 as rk from raw.survey')\n"
                        "spark.sql(\"insert into raw.sdc_loads select 'bigkeys', 'existing', "
                        f"{modulus}, 4580, current_timestamp(), cast(null as string), false\")\n")
    spark.sources(["survey", "bigkeys"])
    spark.model("bigkeys_counts", f"{{{{ sdc.ckm_count(source('raw', 'bigkeys'), ['sex'], modulus={modulus}) }}}}")
    try:
        result = spark.dbt("build", "--select", "bigkeys_counts")
    finally:
        (spark.root / "models" / "bigkeys_counts.sql").unlink()
    assert result.returncode != 0
    assert ("a cell of more than 23 records: its key sum could pass the range of bigint for record keys below "
            f"{modulus}") in result.stdout, result.stdout[-3000:]


def test_a_failing_check_stops_the_spark_build_with_its_message(built):
    """raise_error in Spark SQL: a ptable with a gap in an interval, and a weight of 0, each stop their model
    naming the problem, as on DuckDB and PostgreSQL; a hierarchy as dbt-spark's own seed loader writes it (the
    root's parent the text 'None') names the dispatch step of docs/quickstart/spark.md (issue 26). One dbt run for all three."""
    _, spark = built
    pyspark(spark, "spark.sql('create table raw.survey_weights as select *, case when row_id = 17 then 0d "
                        "else 1d end as bad_weight from raw.survey')\n"
                        "spark.sql(\"create table raw.none_hierarchy as select dimension, code, "
                        "coalesce(parent, 'None') as parent from main.sdc_hierarchies\")\n")
    spark.sources(["survey", "survey_weights", "none_hierarchy"])
    ptable = (spark.root / "seeds" / "sdc_ptable.csv").read_text().splitlines()
    gap = next(line for line in ptable if line.startswith("8,8,"))  # the stay interval of the last row
    spark.seed("pt_gap", "\n".join(line for line in ptable if line != gap) + "\n")
    models = {"gap": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex'], modulus=10000000, ptable=ref('pt_gap')) }}",
              "bad_weight": "{{ sdc.ckm_count(source('raw', 'survey_weights'), ['sex', 'roof'], modulus=10000000, "
                            "weight='bad_weight', weighted_count='mean_weight') }}",
              "none_root": "{{ sdc.ckm_count(source('raw', 'survey'), ['age'], modulus=10000000, "
                           "hierarchy=source('raw', 'none_hierarchy')) }}"}
    for name, sql in models.items():
        spark.model(name, "{{ config(materialized='table') }}" + sql)
    try:
        result = spark.dbt("build", "--select", "pt_gap gap bad_weight none_root")
    finally:
        for name in models:
            (spark.root / "models" / f"{name}.sql").unlink()
    assert result.returncode != 0
    assert "the perturbation table has no interval for i = " in result.stdout, result.stdout[-4000:]
    # Spark writes the double 0 as 0.0
    assert "weight column bad_weight must be positive and finite; a record has 0.0 (in the cell sex = " \
        in result.stdout, result.stdout[-4000:]
    assert SPARK_SEED_MESSAGE in " ".join(result.stdout.split()), result.stdout[-4000:]  # dbt wraps long lines


SUBSTITUTING_PROFILE = """    substituting:
      type: spark
      method: session
      host: NA
      schema: main
      threads: 1
      server_side_parameters:
{parameters}"""
RT3_SECRET = "rt3-secret-of-at-least-thirty-two-bytes-0123456789"


def test_spark_variable_substitution_never_reaches_a_table(built):
    """red team 3: Spark replaces ${env:VAR} in SQL text by the variable, inside literals and names; a hierarchy
    seed with ${env:SDC_KEY_SECRET} published the keyed-mode secret. On a profile without
    spark.sql.variable.substitute=false: the seed (loaded by sdc's seed loader),
    a hierarchy table with such codes (its root code reaches ckm_count's SQL as a literal) and a dimension
    named so each stop the build naming the text; the secret is in no table and no output."""
    _, spark = built
    profiles = spark.root / "profiles.yml"
    original = profiles.read_text()
    pyspark(spark, "spark.sql(\"create table raw.rt3_hierarchy as select 'sex' as dimension, "
                        "'${env:SDC_KEY_SECRET}' as code, cast(null as string) as parent union all "
                        "select 'sex', 'male', '${env:SDC_KEY_SECRET}' union all "
                        "select 'sex', 'female', '${env:SDC_KEY_SECRET}'\")\n"
                        "spark.sql(\"create table raw.rt3_survey as select sex as `${env:SDC_KEY_SECRET}`, rk "
                        "from raw.survey\")\n")
    spark.sources(["survey", "rt3_hierarchy", "rt3_survey"])
    spark.seed("rt3_hierarchies", "dimension,code,parent\nsex,${env:SDC_KEY_SECRET},\n"
                                  "sex,male,${env:SDC_KEY_SECRET}\nsex,female,${env:SDC_KEY_SECRET}\n")
    # Spark's own default: substitution on (the server leaves it so; each session of the other target turns it off)
    parameters = {k: v for k, v in SPARK_SESSION.items() if k != NO_SUBSTITUTION}
    profiles.write_text(original + SUBSTITUTING_PROFILE.format(
        parameters=spark_parameters(parameters, spark.spark_remote) or "        {}\n"))
    env = spark.env(SDC_KEY_SECRET=RT3_SECRET)
    # the dimension's name reaches SQL while dbt parses the project (a parse error stops every node): a run of its own
    runs = [("rt3_counts", "{{ sdc.ckm_count(source('raw', 'survey'), ['sex'], modulus=10000000, "
                           "hierarchy=source('raw', 'rt3_hierarchy')) }}", "rt3_hierarchies rt3_counts"),
            ("rt3_named", "{{ sdc.ckm_count(source('raw', 'rt3_survey'), ['${env:SDC_KEY_SECRET}'], "
                          "modulus=10000000) }}", "rt3_named")]
    results = []
    try:
        for name, sql, select in runs:
            spark.model(name, sql)
            try:
                results.append(subprocess.run([str(Path(sys.executable).parent / "dbt"), "build", "--target",
                                               "substituting", "--select", select], cwd=spark.root, env=env,
                                              capture_output=True, text=True, timeout=600))
            finally:
                (spark.root / "models" / f"{name}.sql").unlink()
    finally:
        profiles.write_text(original)
        (spark.root / "seeds" / "rt3_hierarchies.csv").unlink()
    refusal = "the text '${env:SDC_KEY_SECRET}' holds '${', which Spark SQL replaces by the value of a variable"
    seed_and_hierarchy, named = results
    assert seed_and_hierarchy.returncode != 0 and named.returncode != 0
    # the seed (sdc's seed loader) and the hierarchy's root code in ckm_count
    for node in ("seed rt3_hierarchies", "model rt3_counts"):
        message = seed_and_hierarchy.stdout.split(f"Error in {node}", 1)[-1][:600]
        assert refusal in message, (node, seed_and_hierarchy.stdout[-4000:])
    assert refusal in named.stdout and "model rt3_named" in named.stdout, named.stdout[-4000:]
    assert not any(RT3_SECRET in r.stdout + r.stderr for r in results)
    tables = read_spark(spark, {"tables": "show tables in main"})["tables"][1]
    made = sorted(row[1] for row in tables if row[1].startswith("rt3_"))
    assert "rt3_counts" not in made and "rt3_named" not in made
    for table in made:  # dbt may leave the seed's table, empty or with its rows as text
        rows = read_spark(spark, {"rows": f"select * from main.{table}"})["rows"][1]
        assert RT3_SECRET not in json.dumps(rows), table


def test_sdc_spark_sessions_do_not_substitute_variables(tmp_path):
    """sdc load/suppress --target open their own session (sdc.warehouse.spark_target.SparkWarehouse): it turns Spark's
    variable substitution off even where the profile turns it on, so ${env:VAR} stays text; and the Python side
    refuses to send ${ in a name or literal at all."""
    code = ("from sdc.warehouse.spark_target import SparkWarehouse\n"
            "w = SparkWarehouse({'method': 'session', 'schema': 'main', 'server_side_parameters': {"
            "'spark.master': 'local[1]', 'spark.driver.bindAddress': '127.0.0.1', 'spark.driver.host': '127.0.0.1', "
            "'spark.ui.enabled': 'false', 'spark.sql.variable.substitute': 'true'}}, 't')\n"
            "print(w.query(\"select '${env:SDC_KEY_SECRET}' as v\")[1][0][0])\nw.close()\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, SDC_KEY_SECRET=RT3_SECRET, SPARK_LOCAL_IP="127.0.0.1"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "${env:SDC_KEY_SECRET}"

    from sdc.errors import SdcError
    from sdc.quoting import quote_spark_literal

    for quote in (quote_spark_identifier, quote_spark_literal):
        with pytest.raises(SdcError, match=r"holds '\$\{', which Spark SQL replaces by the value of a variable"):
            quote("a${env:SDC_KEY_SECRET}")


def test_sdc_suppress_on_spark_writes_no_table_it_did_not_write_and_nothing_into_raw(built):
    """red team 4 on Spark: --pattern / --audit-table in raw, or naming a table that sdc suppress did not write,
    are refused with one line before anything is dropped; its own earlier output (a table comment marks it) is
    replaced."""
    _, spark = built
    base = ["suppress", "--target", "spark", "--profile", "sdc_scratch", "--profiles-dir", str(spark.root),
            "--cells", "main.supp_primary", "--relations", "main.supp_relations", "--dims", "roof,water", "--magnitude"]
    counts = {"survey": "select count(*), sum(rk) from raw.survey", "loads": "select count(*) from raw.sdc_loads",
              "cube": "select count(*), sum(count) from main.cube"}
    before = read_spark(spark, counts)
    refused = [(["--pattern", "raw.survey", "--audit-table", "raw.sdc_loads"], "--pattern raw.survey: schema raw holds"),
               (["--pattern", "main.rt4_pattern", "--audit-table", "main.cube"],
                "--audit-table main.cube: a table of that name exists that sdc suppress did not write")]
    for extra, message in refused:
        run = sdc_cli(spark, *base, *extra)
        assert run.returncode == 2 and "Traceback" not in run.stderr, (extra, run.stderr[-3000:])
        assert message in run.stderr.strip().splitlines()[-1], (extra, run.stderr[-3000:])
    for attempt in (1, 2):  # the second replaces what the first wrote
        run = sdc_cli(spark, *base, "--pattern", "main.rt4_pattern", "--audit-table", "main.rt4_audit")
        assert run.returncode == 0, (attempt, run.stderr[-3000:])
    after = read_spark(spark, {**counts, "mark": "describe table extended main.rt4_pattern"})
    assert {k: after[k] for k in counts} == before and before["survey"][1][0][0] == 4580
    comment, = [row[1] for row in after["mark"][1] if row[0] == "Comment"]
    assert build_record_of_comment(comment)["written_by"] == "written by sdc suppress"


def test_verify_published_refuses_a_step_a_hook_rewrote_on_spark(built):
    """Red team R3-1 where sdc neither copies nor grants (Spark on a governed cluster grants by its catalog): the
    operation verify_published compares each tagged step with sdc's recomputation from the microdata, so a
    ckm_published table that a post-hook overwrote with the originals is refused naming the cell."""
    import re

    _, p = built
    ok, bad = p.root / "models" / "verify_ok.sql", p.root / "models" / "verify_rewritten.sql"
    ok.write_text("{{ config(materialized='table', tags=['sdc_publish']) }}{{ sdc.ckm_published(ref('cube_audit')) }}")
    # the originals beside the codes' descriptions of the three flat dimensions, as ckm_published gives them
    described = ", ".join(
        f"case when {d} = 'Total' then 0 else 1 end, {d} = 'Total', case when {d} = 'Total' then null else 'Total' end, "
        f"case when {d} = 'Total' then 0 else cast(dense_rank() over (partition by {d} = 'Total' order by {d}) as int) "
        "end" for d in ("sex", "roof", "urbrur"))
    bad.write_text("{{ config(materialized='table', tags=['sdc_publish'], post_hook=\"insert overwrite table {{ this }} "
                   f"select sex, roof, urbrur, original, {described} from {{{{ ref('cube_audit') }}}}\") }}}}"
                   "{{ sdc.ckm_published(ref('cube_audit')) }}")
    try:
        # one at a time: two CKM tables of one source are refused on Spark before anything is verified (R4-6)
        ok.unlink()
        result = p.dbt("run", "--select", "verify_rewritten")
        assert result.returncode == 0, result.stdout[-3000:]
        result = p.dbt("run-operation", "verify_published")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0 and re.search(
            r"verify_published: \S*verify_rewritten`? differs from ckm_count over \S+survey`? \(recomputed from the "
            r"microdata\) in the cell \(sex=\w+, roof=\w+, urbrur=\w+\): count \d+ there, \d+ in sdc's recomputation",
            out), out[-3000:]
        assert "verify_rewritten" not in spark_tables(p, "sdc_publication")  # nothing published
        bad.unlink()
        ok.write_text("{{ config(materialized='table', tags=['sdc_publish']) }}{{ sdc.ckm_published(ref('cube_audit')) }}")
        result = p.dbt("run", "--select", "verify_ok")
        assert result.returncode == 0, result.stdout[-3000:]
        result = p.dbt("run-operation", "verify_published")
        assert result.returncode == 0, result.stdout[-3000:]
        assert "verify_published: 1 relation(s) hold what sdc computes from the microdata" in result.stdout
        assert "copied into the publication database sdc_publication" in result.stdout
        # the catalog's readers read the verified copy, made by sdc; the staging database is gone. What a reader of
        # the publication database can read, enumerated (SECURITY.md, "What a reader can read"): the tagged steps'
        # copies, no view, no function of the project's
        assert spark_tables(p, "sdc_publication") == ["verify_ok"]
        assert "sdc_publication__staging" not in spark_tables(p, None)
        code = ("import json\nprint(json.dumps([[r[0] for r in spark.sql('show views in sdc_publication').collect()], "
                "[r[0] for r in spark.sql('show user functions in sdc_publication').collect()]]))")
        assert json.loads(pyspark(p, code)) == [[], []]
    finally:
        ok.unlink(missing_ok=True)
        bad.unlink(missing_ok=True)


def test_verify_published_refuses_two_ckm_tables_of_one_source_on_spark(built):
    """Red team R4-6: on Spark nothing audits the release as a whole, and a count beside a magnitude of the same
    cells told which published zeros hold records (12 of 20). verify_published refuses two tagged relations whose
    CKM steps read one microdata source, naming both and the source, before it copies anything; one of them alone
    is published."""
    _, p = built
    counts, income = p.root / "models" / "r46_counts.sql", p.root / "models" / "r46_income.sql"
    counts.write_text("{{ config(materialized='table', tags=['sdc_publish']) }}{{ sdc.ckm_published(ref('cube_audit')) }}")
    income.write_text("{{ config(materialized='table', tags=['sdc_publish']) }}"
                      "{{ sdc.ckm_published(ref('income_audit')) }}")
    try:
        result = p.dbt("run", "--select", "r46_counts", "r46_income")
        assert result.returncode == 0, result.stdout[-3000:]
        before = spark_tables(p, "sdc_publication")
        result = p.dbt("run-operation", "verify_published")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0, out[-3000:]
        assert "are CKM tables of one microdata source" in out and "r46_counts" in out and "r46_income" in out, out[-3000:]
        assert "survey" in out.split("are CKM tables of one microdata source", 1)[1][:200], out[-3000:]
        assert "red team R4-6" in out and "nothing was copied" in out
        assert spark_tables(p, "sdc_publication") == before  # nothing copied, nothing withdrawn
        income.unlink()
        result = p.dbt("run-operation", "verify_published")
        assert result.returncode == 0, result.stdout[-3000:]
        assert "r46_counts" in spark_tables(p, "sdc_publication")
    finally:
        counts.unlink(missing_ok=True)
        income.unlink(missing_ok=True)


# eight regions of three persons each (one or two per sex): a count of 1 or 2 is published as 0 or 3 and more (js = 2),
# as tests/test_release_audit_postgres.py LONE
R46_PERSONS = "id,sex,region,age,income\n" + "".join(
    f"{i},{'mw'[i % 2]},{f'L{i // 3}' if i < 24 else f'R{i % 5}'},A{i % 3},{1000 + (i * 7919) % 5000}.25\n"
    for i in range(400))
R46_SECRET = "a secret of the R4-6 release on Spark, 32 bytes or more"


def test_sdc_publish_target_audits_a_spark_release_records_it_and_refuses_r4_6(built, tmp_path):
    """Red team R4-6 closed on Spark: `sdc publish --target` runs the release audit of DuckDB and PostgreSQL on a
    replica of what the release reads, records the release in the ledger database sdc_ledger and only then makes the
    publication database anew from the cells it audited. A count table beside a magnitude table of the same cells
    (R3-3: which published zeros hold records) is refused, and the publication that verify_published had made
    (verified table by table) is withdrawn; with the remedy (zero_with_counts) the release is published with its
    public audit and recorded, a second run is release 2 of the same ledger, and a refused release after it leaves
    the last one to the readers. On 7027dcb `sdc publish --target` refused every Spark target."""
    _, p = built
    models, sources = p.root / "models", p.root / "models" / "sources.yml"
    saved = sources.read_text()
    files = {name: models / f"{name}.sql" for name in ("r46_ckm_persons", "r46_ckm_income", "r46_persons_pub",
                                                        "r46_income_pub")}
    params = repr(PARAMS)

    def income(remedy: str) -> None:
        files["r46_ckm_income"].write_text(
            "{{ config(materialized='table') }}{{ sdc.ckm_sum(source('raw', 'r46_persons'), dims=['sex', 'region'], "
            f"value='income', {remedy}params={params}) }}}}")

    def publish(*extra: str) -> subprocess.CompletedProcess:
        return sdc_cli(p, "publish", "--target", "spark", "--profile", "sdc_scratch", "--profiles-dir", str(p.root),
                       *extra)

    try:
        p.sources(["survey", "r46_persons"])
        (tmp_path / "persons.csv").write_text(R46_PERSONS)
        loaded = sdc_cli(p, "load", "--target", "spark", "--profile", "sdc_scratch", "--profiles-dir", str(p.root),
                         "--input", str(tmp_path / "persons.csv"), "--table", "r46_persons", "--id", "id",
                         "--key-mode", "keyed", SDC_KEY_SECRET=R46_SECRET)
        assert loaded.returncode == 0, loaded.stderr[-3000:]
        files["r46_ckm_persons"].write_text("{{ config(materialized='table') }}{{ sdc.ckm_count(source('raw', "
                                            "'r46_persons'), dims=['sex', 'region']) }}")
        files["r46_persons_pub"].write_text("{{ config(materialized='table', tags=['sdc_publish']) }}"
                                            "{{ sdc.ckm_published(ref('r46_ckm_persons')) }}")
        # the count table alone, published by verify_published: verified table by table, no release audit
        result = p.dbt("run", "--select", "r46_ckm_persons", "r46_persons_pub")
        assert result.returncode == 0, result.stdout[-3000:]
        result = p.dbt("run-operation", "verify_published")
        assert result.returncode == 0 and spark_tables(p, "sdc_publication") == ["r46_persons_pub"], result.stdout[-3000:]
        # R3-3: the magnitudes of the same cells beside it
        income("")
        files["r46_income_pub"].write_text("{{ config(materialized='table', tags=['sdc_publish']) }}"
                                           "{{ sdc.ckm_published(ref('r46_ckm_income')) }}")
        result = p.dbt("run", "--select", "r46_ckm_income", "r46_income_pub")
        assert result.returncode == 0, result.stdout[-3000:]
        leak = read_spark(p, {"leak": "select count(*) from main.r46_ckm_persons as c join main.r46_income_pub as i "
                                      "on c.sex = i.sex and c.region = i.region where c.`count` = 0 and c.original > 0 "
                                      "and i.value <> 0"})["leak"][1][0][0]
        assert leak > 0  # the leak is there to find
        refused = publish()
        err = refused.stderr.replace("\n", " ")
        assert refused.returncode == 2, refused.stdout[-3000:] + refused.stderr[-3000:]
        assert "sdc publish: error: the release tells a published zero from an empty cell: main.r46_persons_pub " \
               "publishes the count 0 for the cell (sex=" in err, err[-3000:]
        assert "the publication database sdc_publication that verify_published made (tables verified one by one, " \
               "never audited as a release) is dropped" in err, err[-3000:]
        databases = spark_tables(p, None)
        assert "sdc_publication" not in databases and "sdc_ledger" not in databases  # withdrawn, nothing recorded
        # the remedy: a magnitude of a cell whose count is 0 published as 0
        income("zero_with_counts=ref('sdc_ptable'), ")
        result = p.dbt("run", "--select", "r46_ckm_income", "r46_income_pub")
        assert result.returncode == 0, result.stdout[-3000:]
        audit_json = tmp_path / "audit.json"
        first = publish("--audit-json", str(audit_json))
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        assert "recorded as release 1 in the ledger database sdc_ledger of target spark" in first.stdout
        assert "published 2 relations and the release audit to database sdc_publication" in first.stdout
        assert "as grant_published published" not in first.stdout
        audit = json.loads(audit_json.read_text())
        assert audit["published"] == ["main.r46_income_pub", "main.r46_persons_pub"] and audit["release"] == 1
        assert audit["averaging"]["method"] == "exact" and audit["averaging"]["smallest_standard_error"] > 1
        assert spark_tables(p, "sdc_publication") == ["r46_income_pub", "r46_persons_pub", "release_audit"]
        assert spark_tables(p, "sdc_ledger") == ["cells", "releases"]
        seen = read_spark(p, {
            "report": "select report from sdc_publication.release_audit",
            "releases": "select release_id, publication from sdc_ledger.releases",
            "cells": "select relation, count(*) from sdc_ledger.cells group by relation",
            "published": "select sex, region, `count` from sdc_publication.r46_persons_pub",
            "built": "select sex, region, `count` from main.r46_persons_pub"})
        from sdc.release.public_audit import public_release_audit

        assert json.loads(seen["report"][1][0][0]) == public_release_audit(audit)  # the readers' part only
        assert seen["releases"][1] == [(1, "sdc_publication of target spark")]
        # every published cell recorded (2 x 8 + 2 x 5 codes and their totals, both tables)
        assert sorted(seen["cells"][1]) == [("main.r46_income_pub", 42), ("main.r46_persons_pub", 42)]
        assert sorted(seen["published"][1]) == sorted(seen["built"][1]) and len(seen["built"][1]) == 42
        # a second run: release 2 of the same ledger. Cells that a failed run left for release 2 (written before
        # its release row, which failed) are not release 2's
        pyspark(p, "spark.sql(\"insert into sdc_ledger.cells values (2, 'main.r46_persons_pub', 'x', '1', null, null, "
                   "null, 'a failed run')\")\nprint('ok')")
        second = publish("--audit-json", str(audit_json))
        assert second.returncode == 0 and "recorded as release 2 in the ledger database" in second.stdout, \
            second.stderr[-3000:]
        assert json.loads(audit_json.read_text())["ledger_id"] == audit["ledger_id"]
        # the office reads its ledger on Spark as on the other engines
        listed = sdc_cli(p, "release", "list", "--target", "spark", "--profile", "sdc_scratch", "--profiles-dir",
                         str(p.root))
        assert listed.returncode == 0, listed.stderr[-3000:]
        assert [line.split(":")[0] for line in listed.stdout.splitlines()] == ["release 1", "release 2"]
        assert listed.stdout.count("2 tables, 84 cells, sdc_publication of target spark") == 2
        diff = sdc_cli(p, "release", "diff", "1", "2", "--target", "spark", "--profile", "sdc_scratch",
                       "--profiles-dir", str(p.root))
        assert diff.returncode == 0 and diff.stdout.strip() == "release 1 -> 2: no cell changed", diff.stderr[-3000:]
        # and its release report: the office's from the ledger, the readers' from the publication database alone
        for flags, kind in (((), "office report (internal: never give it to readers)"), (("--public",), "public report")):
            out = tmp_path / f"{kind.split()[0]}.html"
            written = sdc_cli(p, "report", "--target", "spark", "--profile", "sdc_scratch", "--profiles-dir",
                              str(p.root), "--out", str(out), *flags)
            assert written.returncode == 0, written.stderr[-3000:]
            assert written.stdout.strip() == f"wrote the {kind} of release 2, 2 tables (84 cells), to {out}"
            html = out.read_text()
            assert html.startswith("<!-- INTERNAL") == (not flags) and "database sdc_publication of target spark" in html
        # the leak again: refused, the readers keep release 2
        income("")
        result = p.dbt("run", "--select", "r46_ckm_income", "r46_income_pub")
        assert result.returncode == 0, result.stdout[-3000:]
        again = publish()
        assert again.returncode == 2 and "nothing was written: the publication database sdc_publication keeps the " \
            "last release that passed the release audit" in again.stderr.replace("\n", " "), again.stderr[-3000:]
        kept = read_spark(p, {"report": "select report from sdc_publication.release_audit",
                              "releases": "select max(release_id) from sdc_ledger.releases"})
        assert json.loads(kept["report"][1][0][0])["release"] == 2 and kept["releases"][1] == [(2,)]
        # one run at a time: a second one stops at the first one's lock
        pyspark(p, "spark.sql('create database sdc_publication__sdc_lock')\nprint('ok')")
        locked = publish()
        assert locked.returncode == 2 and "the database sdc_publication__sdc_lock exists" in locked.stderr \
            and "another sdc publish --target is writing a release of sdc_publication" in locked.stderr, \
            locked.stderr[-3000:]
        pyspark(p, "spark.sql('drop database sdc_publication__sdc_lock')\nprint('ok')")
        assert "sdc_publication__sdc_lock" not in spark_tables(p, None)
        # a database of the publication's name that sdc did not make is never written
        pyspark(p, "spark.sql('create database if not exists r46_own'); "
                   "spark.sql('create table if not exists r46_own.mine as select 1 as x')\nprint('ok')")
        foreign = publish("--publication-schema", "r46_own")
        assert foreign.returncode == 2 and "the database r46_own exists and was not made by sdc" in foreign.stderr
        assert spark_tables(p, "r46_own") == ["mine"]
        # a hostile publication name is a name, quoted, never SQL: one line (the metastore refuses such a name)
        # or a database of exactly that name; nothing else happens
        hostile = "pub`; drop database raw cascade; --\n.."
        odd = publish("--publication-schema", hostile)
        assert odd.returncode in (0, 2) and "Traceback" not in odd.stderr, odd.stderr[-3000:]
        assert odd.returncode == 0 or odd.stderr.startswith("sdc publish: error: "), odd.stderr[-3000:]
        assert "r46_persons" in spark_tables(p, "raw")
        assert (hostile.lower() in spark_tables(p, None)) == (odd.returncode == 0)
        # last (its failed run stops sdc publish until the next dbt run): verify_published does not replace a
        # release that sdc publish --target audited with tables it checks alone
        files["r46_income_pub"].unlink()
        result = p.dbt("run-operation", "verify_published")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0 and "verify_published: the publication database sdc_publication holds a " \
            "release that sdc publish --target audited as a whole" in out, out[-3000:]
        assert spark_tables(p, "sdc_publication") == ["r46_income_pub", "r46_persons_pub", "release_audit"]
    finally:
        sources.write_text(saved)
        for path in files.values():
            path.unlink(missing_ok=True)
