"""Access control on PostgreSQL: a BI role reads the protected relations and nothing else (macro grant_published
in the project's on-run-end hook), and a tagged relation that would publish originals stops the grants."""

from __future__ import annotations

import json

import pandas as pd
import psycopg2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import DATA
from dbt_project_helper import ScratchProject
from sdc.loader import load_microdata
from sdc.scratch import project_yaml
from test_engine_postgres import copy_raw_tables
from test_hostile_inputs import hostile_text

pytestmark = pytest.mark.postgres

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
READER, READER_PASSWORD = "bi_reader", "bi"
ANALYST = "analyst"
# what PostgreSQL's text can carry (no NUL)
pg_text = hostile_text.filter(lambda s: "\x00" not in s)
_SURVEY = pd.read_csv(MICRODATA, usecols=["sex", "roof", "water"], dtype=str)
KNOWN_CODES = {d: set(_SURVEY[d]) for d in ["sex", "roof", "water"]}
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
on-run-end:
  - "{{ sdc.grant_published(['bi_reader']) }}"
  - "{{ sdc.ckm_table_builder(ref('persons_finest'), ['sex', 'roof', 'water'], ['analyst'], ref('sdc_ptable'), modulus=10000000) }}"
"""


def write_project(p: ScratchProject, tagged_audit: bool = False) -> None:
    (p.root / "dbt_project.yml").write_text(project_yaml() + PROJECT_EXTRA)
    (p.root / "models" / "audit").mkdir(exist_ok=True)
    (p.root / "models" / "protected").mkdir(exist_ok=True)
    p.sources(["acl_survey"])
    (p.root / "models" / "audit" / "ckm_persons.sql").write_text(
        "{{ sdc.ckm_count(source('raw', 'acl_survey'), ['sex', 'roof'], modulus=10000000) }}")
    (p.root / "models" / "protected" / "persons.sql").write_text("{{ sdc.ckm_published(ref('ckm_persons')) }}")
    (p.root / "models" / "protected" / "persons_view.sql").write_text(
        "{{ config(materialized='view') }}{{ sdc.ckm_published(ref('ckm_persons')) }}")
    (p.root / "models" / "audit" / "persons_finest.sql").write_text(
        "{{ sdc.ckm_finest_cells(source('raw', 'acl_survey'), ['sex', 'roof', 'water'], modulus=10000000) }}")
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
        for role in (READER, ANALYST):
            cur.execute(f"drop owned by {role} cascade" if _role_exists(cur, role) else "select 1")
            cur.execute(f"drop role if exists {role}")
            cur.execute(f"create role {role} login password '{READER_PASSWORD}'")
    admin.commit()
    admin.close()
    p = ScratchProject(root / "project", postgres=postgres, schema="acl")
    write_project(p)
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    return p


def _role_exists(cur, role):
    cur.execute("select 1 from pg_roles where rolname = %s", (role,))
    return cur.fetchone() is not None


def as_reader(server, sql, role=READER):
    conn = server.connect(user=role, password=READER_PASSWORD)
    conn.autocommit = True  # each statement commits, as a BI tool's or an analyst's client does by default
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
    # a protected view reads the audit relation with its owner's rights; its definition, which every role can
    # read, lists the published columns only
    assert sorted(as_reader(granted.postgres, "select sex, roof, count from acl_protected.persons_view")) == sorted(rows)
    (definition,) = as_reader(granted.postgres, "select definition from pg_views where schemaname = 'acl_protected' "
                                                "and viewname = 'persons_view'")[0]
    assert "count" in definition
    for secret in ("original", "noise", "cell_key", "key_sum", "ptable_row", "rk"):
        assert secret not in definition.replace("ckm_persons", ""), secret


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


# ------------------------------------------------------------------------------------------ table builder


def test_an_analyst_builds_a_table_with_the_numbers_of_the_dbt_models(granted):
    cells = as_reader(granted.postgres, "select codes, count from acl_audit.sdc_ckm_table(array['sex', 'roof'])",
                      role=ANALYST)
    published = {(s, r): c for s, r, c in as_reader(granted.postgres, "select sex, roof, count from acl_protected.persons")}
    assert len(cells) >= 10
    for codes, count in cells:  # the cells with records: the same count as the dbt model's
        assert published[tuple(codes)] == count, codes
    assert all(c == 0 for key, c in published.items() if key not in {tuple(codes) for codes, _ in cells})


def test_a_filtered_table_is_the_ckm_of_the_filtered_records(granted, tmp_path):
    """Filters keep the records whose codes are listed; each cell's count is its records' count plus the noise
    the ptable gives their cell key, computed here from the microdata."""
    from decimal import Decimal

    import pandas as pd

    from sdc.ptable.formats import read_ptable

    cells = dict((tuple(c), n) for c, n in as_reader(
        granted.postgres, "select codes, count from acl_audit.sdc_ckm_table(array['sex'], "
                          "'{\"roof\": [\"r2\", \"r4\"], \"water\": [\"w1\", \"w2\", \"w3\"]}')", role=ANALYST))
    df = pd.read_csv(MICRODATA, dtype={"rkeys": str})
    kept = df[df["roof"].isin(["r2", "r4"]) & df["water"].isin(["w1", "w2", "w3"])]
    table, _, _ = read_ptable(granted.root / "seeds" / "sdc_ptable.csv")
    for sex, part in [("male", kept[kept.sex == "male"]), ("female", kept[kept.sex == "female"]), ("Total", kept)]:
        key_sum = sum(int(Decimal(k) * 10**7) for k in part["rkeys"])
        n = len(part)
        assert cells[(sex,)] == n + table.lookup(n, (key_sum % 10**7) / 10**7), sex


@pytest.mark.parametrize("relation", ["acl_audit.persons_finest", "acl_audit.sdc_ckm_table_requests",
                                      "acl_audit.ckm_persons", "raw.acl_survey"])
def test_the_analyst_reads_no_finest_cells_no_log_no_microdata(granted, relation):
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
        as_reader(granted.postgres, f"select * from {relation} limit 1", role=ANALYST)


@pytest.mark.parametrize("request_sql, message", [
    ("array['sex; drop table acl_audit.persons_finest; --']", "is not a published dimension"),
    ("array['age']", "age is not a published dimension (published: sex, roof, water)"),
    ("array['sex', 'sex']", "a dimension is asked for twice"),
    ("array['sex'], '{\"rk\": [\"1\"]}'", "filter on rk, which is not a published dimension"),
    ("array['sex'], '{\"roof\": \"r2\"}'", "the filter on roof must be a list of codes"),
    ("array['sex'], '{\"roof\": [\"x'') or true; --\"]}'", None),  # a code, compared as a value: no cell
])
def test_hostile_or_wrong_requests_are_refused_or_harmless(granted, request_sql, message):
    sql = f"select codes, count from acl_audit.sdc_ckm_table({request_sql})"
    if message is None:  # no record has that code: only the empty grand total
        assert as_reader(granted.postgres, sql, role=ANALYST) == [(["Total"], 0)]
    else:
        with pytest.raises(psycopg2.errors.RaiseException, match=message.replace("(", r"\(").replace(")", r"\)")):
            as_reader(granted.postgres, sql, role=ANALYST)
    conn = granted.postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("select count(*) from acl_audit.persons_finest")
            assert cur.fetchone()[0] > 0
    finally:
        conn.close()


PUBLISHED_DIMS = ["sex", "roof", "water"]
TABLE_BUILDER_MESSAGES = ("is not a published dimension", "a dimension is asked for twice", "which is not a published "
                          "dimension", "must be a list of codes", "must be a JSON object")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(dims=st.lists(st.one_of(st.sampled_from(PUBLISHED_DIMS), pg_text), min_size=1, max_size=3),
       filters=st.dictionaries(st.one_of(st.sampled_from(PUBLISHED_DIMS), pg_text),
                               st.one_of(st.lists(st.one_of(st.sampled_from(["male", "r2", "w1"]), pg_text),
                                                  max_size=3), pg_text), max_size=2))
def test_generated_hostile_requests_are_refused_by_name_or_answered_with_published_codes(granted, dims, filters):
    """Dimensions and filters as an analyst's client sends them (bound parameters: any text reaches the
    function). The function either refuses with one of its messages or answers cells whose codes are codes of
    the asked dimensions; nothing the text says runs (the finest cells and the raw table keep their rows)."""
    kept = owner_rows(granted)
    conn = granted.postgres.connect(user=ANALYST, password=READER_PASSWORD)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            try:
                cur.execute("select codes, count from acl_audit.sdc_ckm_table(%s, %s::jsonb)",
                            (dims, json.dumps(filters)))
                rows = cur.fetchall()
            except psycopg2.errors.RaiseException as exc:
                assert any(m in str(exc) for m in TABLE_BUILDER_MESSAGES), str(exc)
            else:
                assert len(set(dims)) == len(dims) and set(dims) <= set(PUBLISHED_DIMS)
                assert rows and all(len(codes) == len(dims) and count >= 0 for codes, count in rows)
                assert all(c in KNOWN_CODES[d] | {"Total"} for codes, _ in rows for d, c in zip(dims, codes))
    finally:
        conn.close()
    assert owner_rows(granted) == kept == (kept[0], len(_SURVEY)) and kept[0] > 0


def owner_rows(granted) -> tuple:
    owner = granted.postgres.connect()
    try:
        with owner.cursor() as cur:
            cur.execute("select (select count(*) from acl_audit.persons_finest), (select count(*) from raw.acl_survey)")
            return cur.fetchone()
    finally:
        owner.close()


def test_every_request_is_logged_for_the_office(granted):
    as_reader(granted.postgres, "select * from acl_audit.sdc_ckm_table(array['water'])", role=ANALYST)
    conn = granted.postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("select requested_by, dims from acl_audit.sdc_ckm_table_requests where dims = array['water']")
            assert ("analyst", ["water"]) in cur.fetchall()
    finally:
        conn.close()


def test_grant_published_refuses_the_columns_sdc_publish_refuses(granted, tmp_path):
    """The column rule of grant_published is python/sdc/publish.py's unpublishable, on the same conventions:
    compared name by name, with and without a suppression column beside it."""
    from sdc.conventions import UNPUBLISHABLE_COLUMNS
    from sdc.publish import unpublishable

    names = sorted(set(UNPUBLISHABLE_COLUMNS) | {"rk_f_x", "top_1", "top_x", "feasible_lower", "required_upper",
                                                 "noise_value_2", "original_weighted_value", "value", "count",
                                                 "sex", "status", "rule", "lower", "upper", "region"})
    p = ScratchProject(tmp_path / "project", postgres=granted.postgres, schema="acl_rule")
    macro = ("{% macro show_rule(names) %}{% for context in [['region'], ['region', 'published_text']] %}"
             "{% for name in names %}{{ log('rule ' ~ context | length ~ ' ' ~ name ~ ' ' ~ "
             "sdc.unpublishable_column(name, context + [name]), info=true) }}{% endfor %}{% endfor %}{% endmacro %}")
    (p.root / "macros" / "show_rule.sql").write_text(macro)
    result = p.dbt("run-operation", "show_rule", "--args", "{names: " + repr(names) + "}")
    assert result.returncode == 0, result.stdout[-2000:]
    shown = [line.split("rule ", 1)[1].split() for line in result.stdout.splitlines() if " rule " in line]
    assert len(shown) == 2 * len(names)
    for size, name, verdict in shown:
        context = ["region"] if size == "1" else ["region", "published_text"]
        assert (verdict == "True") == unpublishable(name, context + [name]), (name, context, verdict)
