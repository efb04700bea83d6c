"""A representative set of the CKM models on a local Spark session (dbt-spark, method session): the same published
cells as on DuckDB. Spark starts slowly (a JVM per process, ~30 s per dbt build here), so this module builds one
small project once: counts with cube totals over three dimensions, and weighted counts.

The microdata are loaded with record keys once (sdc load into DuckDB) and written to Spark's warehouse as they
are, by a PySpark process in the project folder (its Derby metastore is the one dbt's session uses)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import sdc.ckm
from conftest import DATA
from dbt_project_helper import DEMO_PTABLE, ScratchProject
from sdc.hierarchy import read_hierarchy
from sdc.loader import load_microdata

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
MODELS = {
    "cube": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'roof', 'urbrur'], modulus=10000000) }}",
    "weighted": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'roof'], modulus=10000000, "
                "weight='sampling_weight', weighted_count='mean_weight') }}",
    # a hierarchy (a recursive query, and a seed whose root has an empty parent) and a threshold
    "hierarchy": "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'age'], modulus=10000000, "
                 "hierarchy=ref('sdc_hierarchies'), threshold=10) }}",
}
HIERARCHY = DATA / "cellkey_testdata_hierarchies.csv"
SESSION = ("from pyspark.sql import SparkSession\n"
           "spark = (SparkSession.builder.master('local[2]').config('spark.driver.bindAddress', '127.0.0.1')"
           ".config('spark.driver.host', '127.0.0.1').config('spark.ui.enabled', 'false')"
           ".enableHiveSupport().getOrCreate())\n")


def pyspark(folder: Path, code: str) -> str:
    """Run ``code`` with a Spark session in ``folder`` (its metastore); returns the last line it prints."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    result = subprocess.run([sys.executable, "-c", SESSION + code], cwd=folder, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.fail("the Spark tests need Java 17 on PATH")
    root = tmp_path_factory.mktemp("spark")
    staging = root / "staging.duckdb"
    load_microdata(staging, MICRODATA, "survey", key_mode="existing", key_column="rkeys", modulus=10**7)
    con = duckdb.connect(str(staging))
    for table in ("survey", "sdc_loads"):
        con.execute(f"copy raw.{table} to '{root / (table + '.parquet')}' (format parquet)")
    con.close()
    p = ScratchProject(root / "project", spark=True)
    p.sources(["survey"])
    rows = read_hierarchy(HIERARCHY)
    p.seed("sdc_hierarchies", "dimension,code,parent\n" + "".join(f"{d},{c},{pa or ''}\n" for d, c, pa in rows))
    for name, sql in MODELS.items():
        p.model(f"{name}_audit", sql)
        p.model(name, f"{{{{ sdc.ckm_published(ref('{name}_audit')) }}}}")
    pyspark(p.root, "spark.sql('create database if not exists raw')\n" + "".join(
        f"spark.read.parquet('{root / (t + '.parquet')}').write.mode('overwrite').saveAsTable('raw.{t}')\n"
        for t in ("survey", "sdc_loads")))
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    return p


def published(p: ScratchProject, model: str) -> list[list]:
    return json.loads(pyspark(p.root, f"import json\nprint(json.dumps([list(r) for r in "
                                      f"spark.sql('select * from main.{model}').collect()], default=str))"))


def test_counts_on_spark_are_those_of_duckdb(built):
    expected = sdc.ckm.count_table(str(MICRODATA), ["sex", "roof", "urbrur"], record_key="rkeys", modulus=10**7,
                                   ptable=DEMO_PTABLE)
    ours = {(r.sex, r.roof, str(r.urbrur)): r.count for r in expected.itertuples()}
    theirs = {(s, r, str(u)): c for s, r, u, c in published(built, "cube")}
    assert len(theirs) == len(ours) > 50 and theirs == ours


def test_weighted_counts_on_spark_are_those_of_duckdb(built):
    expected = sdc.ckm.count_table(str(MICRODATA), ["sex", "roof"], record_key="rkeys", modulus=10**7,
                                   ptable=DEMO_PTABLE, weight="sampling_weight", weighted_count="mean_weight")
    ours = {(r.sex, r.roof): (r.count, r.weighted_count) for r in expected.itertuples()}
    theirs = {(s, r): (c, float(w)) for s, r, c, w in published(built, "weighted")}
    assert set(theirs) == set(ours)
    for cell, (count, weighted) in ours.items():
        assert theirs[cell][0] == count and theirs[cell][1] == pytest.approx(weighted, rel=1e-12), cell


def test_a_hierarchy_and_a_threshold_on_spark_are_those_of_duckdb(built):
    expected = sdc.ckm.count_table(str(MICRODATA), ["sex", "age"], record_key="rkeys", modulus=10**7,
                                   ptable=DEMO_PTABLE, hierarchy=HIERARCHY, threshold=10)
    import pandas as pd

    ours = {(r.sex, r.age): (None if pd.isna(r.count) else int(r.count), None if pd.isna(r.count_reason) else r.count_reason)
            for r in expected.itertuples()}
    theirs = {(s, a): (c, reason) for s, a, c, reason in published(built, "hierarchy")}
    assert theirs == ours and any(c is None for c, _ in ours.values())
