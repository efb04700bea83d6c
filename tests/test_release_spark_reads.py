"""What sdc publish --target on Spark reads into its replica (python/sdc/release/publish_spark.py): the relations a
view's SQL names (Spark keeps a view's SQL, not its dependencies), without the names of its own CTEs, and the
relations a build record names (release/replica.py, shared with PostgreSQL). The release itself on Spark: tests/test_engine_spark.py."""

from __future__ import annotations

import pytest

from sdc.errors import SdcError
from sdc.release.publish_spark import CATALOG, Found, _view_reads
from sdc.release.replica import record_names


def view(sql: str, schema: str = "main") -> Found:
    return Found(schema, "v", "view", None, sql)


def test_a_views_reads_are_the_relations_its_sql_names_not_its_ctes():
    sql = ("with kept as (select * from raw.persons where income is not null), `raw` as (select 1 as x) "
           "select k.*, r.x from kept as k cross join `raw` as r join staging_codes as c on c.code = k.region "
           "where k.id in (select id from main_audit.chosen)")
    assert sorted(_view_reads(view(sql, "main_staging"))) == [("main_audit", "chosen"), ("main_staging", "staging_codes"),
                                                               ("raw", "persons")]


def test_a_view_whose_sql_cannot_be_read_is_named():
    with pytest.raises(SdcError, match=r"main\.v is a view whose SQL sdc cannot read"):
        _view_reads(view("select from where ((("))


def test_a_build_records_relations_are_its_reads_its_calls_and_its_cells():
    record = {"reads": [{"database": None, "schema": "raw", "name": "persons"}],
              "call": {"ptable": "main.sdc_ptable", "hierarchy": {"schema": "main", "name": "sdc_hierarchies"},
                       "dims": ["sex"]},
              "cells": "main_audit.supp_cells", "hierarchy": {"schema": "main_protected", "name": "dims"}}
    assert record_names(record, CATALOG) == [("raw", "persons"), ("main", "sdc_hierarchies"), ("main", "sdc_ptable"),
                                     ("main_audit", "supp_cells"), ("main_protected", "dims")]


def test_a_spark_release_names_its_publication_database_by_the_publication_schema(tmp_path, capsys):
    """--publication-database and --publication-target name PostgreSQL databases: on a Spark target they stop the
    command before it connects."""
    from sdc.cli import main

    (tmp_path / "profiles.yml").write_text("census:\n  target: spark\n  outputs:\n    spark:\n      type: spark\n"
                                           "      method: session\n      host: NA\n      schema: main\n")
    for flag in ("--publication-database", "--publication-target"):
        assert main(["publish", "--target", "spark", "--profile", "census", "--profiles-dir", str(tmp_path), flag,
                     "census_public"]) == 2
        assert capsys.readouterr().err == (
            "sdc publish: error: --publication-database and --publication-target name a PostgreSQL database; on "
            "Spark the release is published into the database var sdc_publication_schema (or --publication-schema) "
            "names\n")
