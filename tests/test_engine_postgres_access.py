"""Access control on PostgreSQL: a BI role reads the protected relations and nothing else (macro grant_published
in the project's on-run-end hook), and a tagged relation that would publish originals stops the grants."""

from __future__ import annotations

import psycopg2
import pytest

from conftest import DATA
from dbt_project_helper import ScratchProject
from sdc.loader import load_microdata
from sdc.scratch import project_yaml
from test_engine_postgres import copy_raw_tables

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
READER, READER_PASSWORD = "bi_reader", "bi"
PROJECT_EXTRA = """
models:
  sdc:
    audit:
      +schema: audit
      +materialized: table
    protected:
      +schema: protected
      +materialized: table
      +tags: ["sdc_publish"]
on-run-start: ["{{ sdc.engine_setup() }}"]
on-run-end: ["{{ sdc.grant_published(['bi_reader']) }}"]
"""


def write_project(p: ScratchProject, tagged_audit: bool = False) -> None:
    (p.root / "dbt_project.yml").write_text(project_yaml() + PROJECT_EXTRA)
    (p.root / "models" / "audit").mkdir(exist_ok=True)
    (p.root / "models" / "protected").mkdir(exist_ok=True)
    p.sources(["acl_survey"])
    (p.root / "models" / "audit" / "ckm_persons.sql").write_text(
        "{{ sdc.ckm_count(source('raw', 'acl_survey'), ['sex', 'roof'], modulus=10000000) }}")
    (p.root / "models" / "protected" / "persons.sql").write_text("{{ sdc.ckm_published(ref('ckm_persons')) }}")
    if tagged_audit:  # a mistake: the audit relation itself, tagged for publication
        (p.root / "models" / "protected" / "persons_audit_copy.sql").write_text("select * from {{ ref('ckm_persons') }}")


@pytest.fixture(scope="module")
def granted(tmp_path_factory, postgres):
    root = tmp_path_factory.mktemp("access")
    staging = ScratchProject(root / "staging")
    load_microdata(staging.db, MICRODATA, "acl_survey", key_mode="existing", key_column="rkeys", modulus=10**7)
    copy_raw_tables(staging.db, postgres, ["acl_survey"])
    admin = postgres.connect()
    with admin.cursor() as cur:
        cur.execute(f"drop role if exists {READER}")
        cur.execute(f"create role {READER} login password '{READER_PASSWORD}'")
    admin.commit()
    admin.close()
    p = ScratchProject(root / "project", postgres=postgres, schema="acl")
    write_project(p)
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    return p


def as_reader(server, sql):
    conn = server.connect(user=READER, password=READER_PASSWORD)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    finally:
        conn.close()


def test_the_reader_reads_every_protected_relation(granted):
    rows = as_reader(granted.postgres, "select sex, roof, count from acl_protected.persons")
    assert len(rows) == 3 * 6 and all(r[2] >= 0 for r in rows)
    columns = as_reader(granted.postgres, "select column_name from information_schema.columns where "
                                          "table_schema = 'acl_protected' and table_name = 'persons' order by ordinal_position")
    assert [c for (c,) in columns] == ["sex", "roof", "count"]
    # a table, not a view: no definition that names the audit relation behind it
    assert as_reader(granted.postgres, "select count(*) from pg_views where schemaname = 'acl_protected'") == [(0,)]


@pytest.mark.parametrize("relation", ["raw.acl_survey", "raw.sdc_loads", "acl_audit.ckm_persons", "acl.sdc_ptable"])
def test_the_reader_is_refused_raw_data_keys_audit_and_ptable(granted, relation):
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
        as_reader(granted.postgres, f"select * from {relation} limit 1")


def test_a_tagged_audit_relation_stops_the_grants(granted, tmp_path):
    p = ScratchProject(tmp_path / "project", postgres=granted.postgres, schema="acl_wrong")
    write_project(p, tagged_audit=True)
    result = p.dbt("build")
    assert result.returncode != 0
    assert "grant_published:" in result.stdout and "is or reads the audit relation ckm_persons" in result.stdout
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):  # nothing granted: not even the protected table
        as_reader(granted.postgres, "select * from acl_wrong_protected.persons limit 1")
