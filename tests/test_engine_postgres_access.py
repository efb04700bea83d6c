"""Access control on PostgreSQL: a BI role reads the protected relations and nothing else (macro grant_published
in the project's on-run-end hook), and a tagged relation that would publish originals stops the grants."""

from __future__ import annotations

import json
import re

import pandas as pd
import psycopg2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import DATA
from dbt_project_helper import DEMO_PTABLE, ScratchProject
from sdc.warehouse.loader import load_microdata
from sdc.warehouse.scratch import project_yaml
from test_engine_postgres import copy_raw_tables, pg_rows
from test_hostile_inputs import hostile_text

pytestmark = pytest.mark.postgres

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
READER, READER_PASSWORD = "bi_reader", "bi"
ANALYST = "analyst"
RULED = ("analyst_b", "analyst_c")  # the analysts of a builder with a hierarchy, a budget and a population rule
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
vars: {sdc_publication_schema: acl_publication}
on-run-start: ["{{ sdc.engine_setup() }}"]
on-run-end:
  - "{{ sdc.grant_published(['bi_reader']) }}"
  - "{{ sdc.ckm_table_builder(ref('persons_finest'), ['sex', 'roof', 'water'], ['analyst'], ref('sdc_ptable'),
                              modulus=10000000, hierarchy=ref('sdc_hierarchies')) }}"
"""


def code_list(codes: dict[str, set[str]]) -> str:
    """A hierarchy seed that declares flat dimensions: each its total (Total) and its codes below it."""
    return "dimension,code,parent\n" + "".join(
        f"{d},Total,\n" + "".join(f"{d},{c},Total\n" for c in sorted(cs)) for d, cs in codes.items())


# the builder's code lists (red team R3-11): the codes of the data; the same with a code no record has; roof only
CODE_LISTS = {"sdc_hierarchies": code_list(KNOWN_CODES),
              "codes_more": code_list({**KNOWN_CODES, "water": KNOWN_CODES["water"] | {"w8"}}),
              "roof_codes": code_list({"roof": KNOWN_CODES["roof"]})}


def write_project(p: ScratchProject, tagged_audit: bool = False) -> None:
    (p.root / "dbt_project.yml").write_text(project_yaml() + PROJECT_EXTRA)
    (p.root / "models" / "audit").mkdir(exist_ok=True)
    (p.root / "models" / "protected").mkdir(exist_ok=True)
    p.sources(["acl_survey"])
    for name, text in CODE_LISTS.items():
        p.seed(name, text)
    (p.root / "models" / "audit" / "ckm_persons.sql").write_text(
        "{{ sdc.ckm_count(source('raw', 'acl_survey'), ['sex', 'roof'], modulus=10000000) }}")
    (p.root / "models" / "protected" / "persons.sql").write_text("{{ sdc.ckm_published(ref('ckm_persons')) }}")
    (p.root / "models" / "protected" / "persons_view.sql").write_text(
        "{{ config(materialized='view') }}{{ sdc.ckm_published(ref('ckm_persons')) }}")
    (p.root / "models" / "audit" / "persons_finest.sql").write_text(
        "{{ sdc.ckm_finest_cells(source('raw', 'acl_survey'), ['sex', 'roof', 'water'], "
        "hierarchy=ref('sdc_hierarchies'), modulus=10000000) }}")
    if tagged_audit:  # a mistake: the audit relation itself, tagged for publication
        (p.root / "models" / "protected" / "persons_audit_copy.sql").write_text("select * from {{ ref('ckm_persons') }}")
    else:  # the builder's cells over codes that break a table (red team 18), built one by one by the tests
        p.sources(["acl_survey", "acl_survey_null", "acl_survey_total"])
        for broken in ("null", "total"):
            p.model(f"finest_{broken}", "{{ sdc.ckm_finest_cells(source('raw', 'acl_survey_" + broken
                    + "'), ['sex', 'roof'], modulus=10000000) }}", tags=["broken"])


@pytest.fixture(scope="module")
def granted(tmp_path_factory, postgres):
    root = tmp_path_factory.mktemp("access")
    staging = ScratchProject(root / "staging")
    load_microdata(staging.db, MICRODATA, "acl_survey", key_mode="existing", key_column="rkeys", modulus=10**7)
    copy_raw_tables(staging.db, postgres, ["acl_survey"])
    admin = postgres.connect()
    with admin.cursor() as cur:
        cur.execute("drop table if exists raw.acl_survey_null, raw.acl_survey_total")
        cur.execute("create table raw.acl_survey_null as select * from raw.acl_survey")
        cur.execute("update raw.acl_survey_null set sex = null where row_id = 1")
        cur.execute("create table raw.acl_survey_total as select * from raw.acl_survey")
        cur.execute("update raw.acl_survey_total set sex = 'Total' where row_id = 2")
        for role in (READER, ANALYST, *RULED):
            cur.execute(f"drop owned by {role} cascade" if _role_exists(cur, role) else "select 1")
            cur.execute(f"drop role if exists {role}")
            cur.execute(f"create role {role} login password '{READER_PASSWORD}'")
    admin.commit()
    admin.close()
    p = ScratchProject(root / "project", postgres=postgres, schema="acl")
    write_project(p)
    result = p.dbt("build", "--exclude", "tag:broken")
    assert result.returncode == 0, result.stdout[-4000:]
    return p


def _role_exists(cur, role):
    cur.execute("select 1 from pg_roles where rolname = %s", (role,))
    return cur.fetchone() is not None


def as_reader(server, sql, role=READER):
    return pg_rows(server, sql, user=role, password=READER_PASSWORD)


def test_the_reader_reads_every_protected_relation(granted):
    rows = as_reader(granted.postgres, "select sex, roof, count from acl_publication.persons")
    assert len(rows) == 3 * 6 and all(r[2] >= 0 for r in rows)
    columns = as_reader(granted.postgres, "select column_name from information_schema.columns where "
                                          "table_schema = 'acl_publication' and table_name = 'persons' order by ordinal_position")
    assert [c for (c,) in columns] == ["sex", "roof", "count"] + [
        f"{d}__{c}" for d in ("sex", "roof") for c in ("level", "is_total", "parent", "sort")]
    # the protected view is published as a copy of its cells: the reader reads no view definition, and no relation
    # that reads the audit relation with its owner's rights
    assert sorted(as_reader(granted.postgres, "select sex, roof, count from acl_publication.persons_view")) == sorted(rows)
    assert as_reader(granted.postgres, "select count(*) from pg_views where schemaname = 'acl_publication'") == [(0,)]
    assert as_reader(granted.postgres, "select table_name from information_schema.tables where table_schema in "
                                       "('acl_publication', 'acl_protected') order by 1") == [("persons",), ("persons_view",)]


@pytest.mark.parametrize("relation", ["raw.acl_survey", "raw.sdc_loads", "acl_audit.ckm_persons", "acl.sdc_ptable",
                                      "acl_protected.persons", "acl_protected.persons_view"])
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


def cube_oracle(levels: dict[str, dict[str, list[str]]]) -> dict[tuple, tuple[int, int]]:
    """Every cell of the builder's cube, computed here from the microdata (the test's independent CKM):
    {codes in the order of ``levels``: (original, published count)}. ``levels`` maps each dimension to its
    codes (each with the leaf codes it covers; its total covers all)."""
    from decimal import Decimal
    from itertools import product

    from sdc.ptable.formats import read_ptable

    table, _, _ = read_ptable(DEMO_PTABLE)
    df = pd.read_csv(MICRODATA, dtype={"rkeys": str})
    df["key"] = [int(Decimal(k) * 10**7) for k in df["rkeys"]]
    cells = {}
    for codes in product(*[list(levels[d]) for d in levels]):
        part = df
        for d, code in zip(levels, codes):
            part = part[part[d].isin(levels[d][code])]
        n = len(part)
        cells[codes] = (n, n + table.lookup(n, (int(part["key"].sum()) % 10**7) / 10**7))
    return cells


def flat_levels(dims: list[str]) -> dict[str, dict[str, list[str]]]:
    return {d: {**{c: [c] for c in sorted(KNOWN_CODES[d])}, "Total": sorted(KNOWN_CODES[d])} for d in dims}


def test_an_analyst_builds_a_table_with_the_numbers_of_the_dbt_models(granted):
    """Every cell of the dbt model, its empty cells (0) included, and nothing else (red team 2: the builder
    returned only cells with records, so a cell published 0 but present revealed records)."""
    cells = as_reader(granted.postgres, "select codes, count from acl_audit.sdc_ckm_table(array['sex', 'roof'])",
                      role=ANALYST)
    published = {(s, r): c for s, r, c in as_reader(granted.postgres, "select sex, roof, count from acl_publication.persons")}
    assert len(published) == 3 * 6
    assert {tuple(codes): count for codes, count in cells} == published and len(cells) == len(published)


def test_the_complete_frame_comes_back_through_the_ptable(granted):
    """All 3 x 6 x 9 cells of the cube over the three dimensions, each its records' count plus the noise of the
    ptable for their cell key (computed here from the microdata): 32 of the 80 finest cells are empty, and an
    empty cell is 0 like a small one perturbed to 0."""
    rows = as_reader(granted.postgres, "select codes, count from acl_audit.sdc_ckm_table(array['sex', 'roof', 'water'])",
                     role=ANALYST)
    oracle = cube_oracle(flat_levels(PUBLISHED_DIMS))
    assert len(rows) == len(oracle) == 162
    assert {tuple(codes): count for codes, count in rows} == {codes: count for codes, (_, count) in oracle.items()}
    empty = [codes for codes, (n, _) in oracle.items() if n == 0 and "Total" not in codes]
    assert len(empty) == 32 and any(n > 0 and count == 0 for n, count in oracle.values())


def test_the_catalog_row_count_of_the_cells_is_the_frame_size(granted):
    """pg_stat_user_tables and pg_class show every role a table's row count (red team 17): for the builder's
    cells that is the size of the frame (162, public), not the number of non-empty cells (48)."""
    conn = granted.postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("select count(*) from acl_audit.persons_finest")
            assert cur.fetchone()[0] == 3 * 6 * 9
    finally:
        conn.close()


def test_a_filter_chooses_rows_of_the_cube_and_a_filter_on_a_dimension_not_asked_for_is_refused(granted):
    cells = dict((tuple(c), n) for c, n in as_reader(
        granted.postgres, "select codes, count from acl_audit.sdc_ckm_table(array['sex', 'roof'], "
                          "'{\"roof\": [\"r2\", \"r4\"], \"sex\": [\"male\", \"Total\"]}')", role=ANALYST))
    oracle = cube_oracle(flat_levels(["sex", "roof"]))
    assert cells == {(s, r): oracle[(s, r)][1] for s in ("male", "Total") for r in ("r2", "r4")}
    # the records of roof r2 or r4 summed over sex would be a cell of no table: refused
    with pytest.raises(psycopg2.errors.RaiseException, match='filter on "roof", which is not asked for'):
        as_reader(granted.postgres, "select * from acl_audit.sdc_ckm_table(array['sex'], '{\"roof\": [\"r2\", \"r4\"]}')",
                  role=ANALYST)


def test_least_squares_over_many_random_requests_recovers_no_more_than_the_cube_allows(granted):
    """Red team 1's attack: 1,500 requests with random dimensions and random code filters (as many on
    dimensions not asked for as on those asked for), every answered cell an equation over the 80 finest cells,
    solved by least squares. Before: 2,897 distinct record sets and every finest cell exact. Now every answered
    cell is one of the cube's 162 cells with the cube's count, so the attack knows what the cube publishes and
    nothing more: its least squares are those of the whole cube, whose error per finest cell has a variance of
    V * (2/3) * (5/6) * (8/9) = 1.48 for independent noise of variance V = 3 (the demo ptable), a standard
    error of 1.22. Found: 15 of the 48 non-empty finest cells exact after rounding, root mean square error 1.21
    over them (before: 48 of 48, error 0)."""
    import random

    import numpy

    oracle = cube_oracle(flat_levels(PUBLISHED_DIMS))
    finest = [c for c in oracle if "Total" not in c]
    rng = random.Random(25)
    codes = {d: sorted(KNOWN_CODES[d]) for d in PUBLISHED_DIMS}
    seen: dict[frozenset, int] = {}
    refused = 0
    conn = granted.postgres.connect(user=ANALYST, password=READER_PASSWORD)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for _ in range(1500):
                dims = rng.sample(PUBLISHED_DIMS, rng.randint(1, 3))
                filters = {d: rng.sample(codes[d], rng.randint(1, len(codes[d]) - 1))
                           for d in PUBLISHED_DIMS if rng.random() < .7}
                try:
                    cur.execute("select codes, count from acl_audit.sdc_ckm_table(%s, %s::jsonb)",
                                (dims, json.dumps(filters)))
                except psycopg2.errors.RaiseException:
                    refused += 1
                    continue
                for cell, count in cur.fetchall():
                    covered = dict(zip(dims, cell))
                    members = frozenset(f for f in finest if all(
                        covered.get(d, "Total") in ("Total", f[k]) and (d not in filters or f[k] in filters[d])
                        for k, d in enumerate(PUBLISHED_DIMS)))
                    assert seen.setdefault(members, count) == count  # the same records, the same count
    finally:
        conn.close()
    cube_sets = {frozenset(f for f in finest if all(c in ("Total", f[k]) for k, c in enumerate(cell))): count
                 for cell, (_, count) in oracle.items()}
    assert all(cube_sets.get(members) == count for members, count in seen.items())
    assert len(seen) <= len(cube_sets) == 162 and refused > 0
    a = numpy.array([[1.0 if f in members else 0.0 for f in finest] for members in seen])
    x = numpy.linalg.lstsq(a, numpy.array([float(c) for c in seen.values()]), rcond=None)[0]
    truth = numpy.array([oracle[f][0] for f in finest])
    filled = truth > 0
    exact = int((numpy.round(x) == truth)[filled].sum())
    rmse = float(numpy.sqrt(((x - truth)[filled] ** 2).mean()))
    assert (len(seen), int(filled.sum()), exact, round(rmse, 2)) == (162, 48, 15, 1.21)
    assert rmse > 0.8 * (3 * 2 / 3 * 5 / 6 * 8 / 9) ** 0.5


def test_log_and_error_lines_carry_analyst_text_as_json(granted):
    """Red team 21: a newline in a dimension wrote a line that read like another analyst's request. The error
    and the server log's line (sent to the client too, at client_min_messages = log) are one line each."""
    forged = "x\n2026-11-24 14:11:00.000 UTC [1] LOG:  sdc_ckm_table request by bob: dims {state}"
    conn = granted.postgres.connect(user=ANALYST, password=READER_PASSWORD)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("set client_min_messages = log")
            with pytest.raises(psycopg2.errors.RaiseException) as refused:
                cur.execute("select * from acl_audit.sdc_ckm_table(%s)", ([forged],))
            with pytest.raises(psycopg2.errors.RaiseException) as unknown:  # a code the table does not have
                cur.execute("select count(*) from acl_audit.sdc_ckm_table(array['sex'], %s::jsonb)",
                            (json.dumps({"sex": [forged]}),))
        for error in (refused, unknown):
            message = error.value.diag.message_primary
            assert "\n" not in message and json.dumps(forged) in message
        lines = [n for n in conn.notices if "sdc_ckm_table request" in n]
        assert len(lines) == 2 and all(n.count("\n") == 1 and n.endswith("\n") for n in lines)
        assert json.dumps([forged]) in lines[0] and json.dumps({"sex": [forged]}) in lines[1]
    finally:
        conn.close()


def test_cells_from_another_load_than_the_last_are_refused(granted):
    """Red team 20: raw.acl_survey reloaded after the cells were built (a partial dbt build that left them
    behind the published relations): the function refuses until they are rebuilt."""
    owner = granted.postgres.connect()
    owner.autocommit = True
    sql = "select count(*) from acl_audit.sdc_ckm_table(array['sex'])"
    try:
        with owner.cursor() as cur:
            cur.execute("update raw.sdc_loads set loaded_at = loaded_at + interval '1 second' where table_name = 'acl_survey'")
        with pytest.raises(psycopg2.errors.RaiseException, match="built from another load of raw.acl_survey than its last"):
            as_reader(granted.postgres, sql, role=ANALYST)
        result = try_builder(granted, [ANALYST], 5)  # and the hook that would make a builder over them stops
        assert result.returncode != 0 and "was built from another load of raw.acl_survey" in result.stdout, result.stdout[-2000:]
    finally:
        with owner.cursor() as cur:
            cur.execute("update raw.sdc_loads set loaded_at = loaded_at - interval '1 second' where table_name = 'acl_survey'")
        owner.close()
    assert as_reader(granted.postgres, sql, role=ANALYST) == [(3,)]


@pytest.mark.parametrize("relation", ["acl_audit.persons_finest", "acl_audit.sdc_ckm_table_requests",
                                      "acl_audit.ckm_persons", "raw.acl_survey"])
def test_the_analyst_reads_no_finest_cells_no_log_no_microdata(granted, relation):
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
        as_reader(granted.postgres, f"select * from {relation} limit 1", role=ANALYST)


@pytest.mark.parametrize("request_sql, message", [
    ("array['sex; drop table acl_audit.persons_finest; --']", "is not a published dimension"),
    ("array['age']", '"age" is not a published dimension (published: ["sex", "roof", "water"])'),
    ("array[NULL]", "NULL is not a published dimension"),
    ("array[array['sex'], array['roof']]", "give the dimensions as a one-dimensional list"),
    ("array['sex', 'sex']", "a dimension is asked for twice"),
    ("array['sex'], '{\"rk\": [\"1\"]}'", 'filter on "rk", which is not a published dimension'),
    ("array['roof'], '{\"roof\": \"r2\"}'", 'the filter on "roof" must be a list of codes'),
    # a code, compared as a value: named as a code the table does not have
    ("array['roof'], '{\"roof\": [\"x'') or true; --\"]}'", 'unknown code "x\') or true; --" of "roof"'),
])
def test_hostile_or_wrong_requests_are_refused_or_harmless(granted, request_sql, message):
    sql = f"select codes, count from acl_audit.sdc_ckm_table({request_sql})"
    if message is None:  # no cell has that code
        assert as_reader(granted.postgres, sql, role=ANALYST) == []
    else:
        with pytest.raises(psycopg2.errors.RaiseException, match=re.escape(message)):
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
                          "dimension", "which is not asked for", "must be a list of codes", "must be a JSON object",
                          "not a code of the published table")


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
                assert all(len(codes) == len(dims) and count >= 0 for codes, count in rows)
                assert rows or filters  # without filters, at least the total
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
    """The column rule of grant_published is python/sdc/release/publish.py's unpublishable, on the same conventions:
    compared name by name, with and without a suppression column beside it."""
    from sdc.conventions import UNPUBLISHABLE_COLUMNS
    from sdc.release.publish import unpublishable

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


@pytest.mark.parametrize("model, message", [
    ("finest_null", "dimension sex is NULL in some records"),
    ("finest_total", "dimension sex has a category Total, the code of its total"),
])
def test_the_cells_stop_on_null_codes_and_the_totals_code_as_ckm_count_does(granted, model, message):
    """Red team 18: ckm_finest_cells built over a NULL code and a category Total, and the builder then
    answered two {Total, Total} cells. It is ckm_count's cube now: the same checks, the same messages."""
    result = granted.dbt("build", "--select", model)
    assert result.returncode != 0 and message in result.stdout, result.stdout[-3000:]


# ------------------------------------------------------------------- a builder with a hierarchy and its rules

ROOF_HIERARCHY = code_list({"sex": KNOWN_CODES["sex"]}) + "roof,All,\nroof,rA,All\nroof,rB,All\n" + "".join(
    f"roof,{leaf},{group}\n" for leaf, group in [("r2", "rA"), ("r4", "rA"), ("r5", "rB"), ("r6", "rB"), ("r9", "rB")])
RULED_BUDGET, RULED_POPULATION = 6, 50


@pytest.fixture(scope="module")
def ruled(granted, tmp_path_factory):
    """The cells over sex and roof with roof's hierarchy (All > rA, rB > leaves; sex's code list) and a
    threshold of 10 (a count below it is NULL), a budget of 6 requests per role and a minimum population of 50,
    for analyst_b and analyst_c; a dbt model over the same hierarchy and threshold."""
    p = ScratchProject(tmp_path_factory.mktemp("ruled") / "project", postgres=granted.postgres, schema="acl_ruled")
    (p.root / "dbt_project.yml").write_text(project_yaml() + PROJECT_EXTRA.split("on-run-start")[0] + (
        'on-run-start: ["{{ sdc.engine_setup() }}"]\non-run-end:\n'
        "  - \"{{ sdc.ckm_table_builder(ref('persons_cube'), ['sex', 'roof'], " + repr(list(RULED))
        + f", hierarchy=ref('sdc_hierarchies'), budget={RULED_BUDGET}, min_population={RULED_POPULATION}) }}}}\"\n"))
    p.seed("sdc_hierarchies", ROOF_HIERARCHY)
    p.sources(["acl_survey"])
    for folder in ("audit", "protected"):
        (p.root / "models" / folder).mkdir()
    (p.root / "models" / "audit" / "ckm_persons.sql").write_text(
        "{{ sdc.ckm_count(source('raw', 'acl_survey'), ['sex', 'roof'], hierarchy=ref('sdc_hierarchies'), modulus=10000000, "
        "threshold=10) }}")
    (p.root / "models" / "protected" / "persons.sql").write_text("{{ sdc.ckm_published(ref('ckm_persons')) }}")
    (p.root / "models" / "audit" / "persons_cube.sql").write_text(
        "{{ sdc.ckm_finest_cells(source('raw', 'acl_survey'), ['sex', 'roof'], hierarchy=ref('sdc_hierarchies'), "
        "modulus=10000000, threshold=10) }}")
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    return p


def ruled_request(ruled, role, dims, filters=None):
    return as_reader(ruled.postgres, "select codes, count from acl_ruled_audit.sdc_ckm_table(array[" + ", ".join(
        f"'{d}'" for d in dims) + "], '" + json.dumps(filters or {}) + "')", role=role)


def test_hierarchy_levels_and_totals_carry_the_codes_of_the_dbt_model(ruled):
    """D18: the builder labelled the total of a hierarchical dimension Total (the dbt model: its root, All) and
    had no subtotals. Its cells are now those of ckm_count over the same hierarchy, code for code."""
    cells = {tuple(c): n for c, n in ruled_request(ruled, "analyst_c", ["sex", "roof"])}
    owner = ruled.postgres.connect()
    try:
        with owner.cursor() as cur:
            cur.execute("select sex, roof, count from acl_ruled_protected.persons")
            published = {(s, r): n for s, r, n in cur.fetchall()}
    finally:
        owner.close()
    assert cells == published
    assert {r for _, r in cells} == {"All", "rA", "rB", "r2", "r4", "r5", "r6", "r9"} and len(cells) == 3 * 8
    hidden = {codes for codes, n in cells.items() if n is None}  # below the threshold, as in the dbt model
    assert hidden and all(codes[1] in ("r5", "r6", "r9") for codes in hidden)


def test_a_request_whose_population_is_below_the_minimum_is_refused(ruled):
    """The population of a request: the cube cell with each dimension at its filter's code when the filter
    keeps one code, else at its total. Roof r9 holds 16 records (below 50); rB (r5, r6, r9) 69."""
    with pytest.raises(psycopg2.errors.RaiseException, match="the table's population is below the minimum of 50"):
        ruled_request(ruled, "analyst_c", ["roof"], {"roof": ["r9"]})
    # new-user N7: a code the table does not have was answered as a population below the minimum
    with pytest.raises(psycopg2.errors.RaiseException, match='unknown code "r99" of "roof": not a code of the published table'):
        ruled_request(ruled, "analyst_c", ["roof"], {"roof": ["r99"]})
    oracle = cube_oracle({"roof": {"rB": ["r5", "r6", "r9"]}})
    assert ruled_request(ruled, "analyst_c", ["roof"], {"roof": ["rB"]}) == [(["rB"], oracle[("rB",)][1])]
    assert oracle[("rB",)][0] == 69


def test_each_role_has_a_budget_of_requests_that_a_rollback_does_not_restore(ruled):
    """Six requests for analyst_b, one of them rolled back (its log row goes, its count stays: the budget is a
    sequence), then a refusal; analyst_c's budget is its own."""
    import hashlib

    sql = "select count(*) from acl_ruled_audit.sdc_ckm_table(array['sex'])"
    for _ in range(4):
        assert as_reader(ruled.postgres, sql, role="analyst_b") == [(3,)]
    conn = ruled.postgres.connect(user="analyst_b", password=READER_PASSWORD)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            assert cur.fetchall() == [(3,)]
        conn.rollback()
    finally:
        conn.close()
    assert as_reader(ruled.postgres, sql, role="analyst_b") == [(3,)]
    with pytest.raises(psycopg2.errors.RaiseException, match='role "analyst_b" has spent its budget of 6 requests'):
        as_reader(ruled.postgres, sql, role="analyst_b")
    assert as_reader(ruled.postgres, sql, role="analyst_c") == [(3,)]
    owner = ruled.postgres.connect()
    try:
        with owner.cursor() as cur:
            sequence = "sdc_ckm_table_requests_budget_" + hashlib.md5(b"analyst_b").hexdigest()[:12]
            cur.execute(f'select last_value from acl_ruled_audit."{sequence}"')
            assert cur.fetchone()[0] == 7
            cur.execute("select count(*) from acl_ruled_audit.sdc_ckm_table_requests where requested_by = 'analyst_b'")
            assert cur.fetchone()[0] == 5
    finally:
        owner.close()


# ------------------------------------------------------------------ hostile settings of the builder's hook

HOSTILE_ROLE = "an'a\"lyst; drop table raw.acl_survey; --\n$sdc"
HOSTILE_FUNCTION = "try'\"; --%"
TRY_BUILDER = ("{% macro try_builder(roles, budget, min_population) %}{% do run_query(sdc.ckm_table_builder("
               "ref('persons_finest'), ['sex', 'roof', 'water'], roles, budget=budget, min_population=min_population, "
               "function_name=" + repr(HOSTILE_FUNCTION) + ", log_table='try_requests', "
               "hierarchy=ref('sdc_hierarchies'))) %}"
               "{% do run_query('commit') %}{% endmacro %}")


def try_builder(granted, roles, budget, min_population=None):
    (granted.root / "macros" / "try_builder.sql").write_text(TRY_BUILDER)
    return granted.dbt("run-operation", "try_builder", "--args", json.dumps(
        {"roles": roles, "budget": budget, "min_population": min_population}))


@pytest.mark.parametrize("budget, min_population, message", [
    ("1; drop table raw.acl_survey", None, "budget must be a whole number of requests of at least 1, got 1; drop table raw.acl_survey"),
    (0, None, "budget must be a whole number of requests of at least 1, got 0"),
    (2.5, None, "budget must be a whole number of requests of at least 1, got 2.5"),
    (5, "x'); --", "min_population must be a whole number of at least 0, got x'); --"),
    (5, -1, "min_population must be a whole number of at least 0, got -1"),
])
def test_a_hostile_budget_or_population_stops_the_hook(granted, budget, min_population, message):
    result = try_builder(granted, [ANALYST], budget, min_population)
    assert result.returncode != 0 and "ckm_table_builder: " + message in result.stdout, result.stdout[-2000:]
    assert owner_rows(granted) == (3 * 6 * 9, len(_SURVEY))


def test_a_hostile_role_and_function_name_reach_sql_quoted_and_the_role_gets_its_budget(granted):
    from psycopg2 import sql as pgsql

    admin = granted.postgres.connect()
    admin.autocommit = True
    with admin.cursor() as cur:
        if _role_exists(cur, HOSTILE_ROLE):
            cur.execute(pgsql.SQL("drop owned by {} cascade").format(pgsql.Identifier(HOSTILE_ROLE)))
            cur.execute(pgsql.SQL("drop role {}").format(pgsql.Identifier(HOSTILE_ROLE)))
        cur.execute(pgsql.SQL("create role {} login password 'bi'").format(pgsql.Identifier(HOSTILE_ROLE)))
    admin.close()
    result = try_builder(granted, ["x$sdc$; drop table raw.acl_survey; $sdc$"], 2)  # would end the function's body
    assert result.returncode != 0 and "contains $sdc$, which would end the function's body" in result.stdout
    result = try_builder(granted, [HOSTILE_ROLE], 2)
    assert result.returncode == 0, result.stdout[-3000:]
    request = 'select count(*) from acl_audit."try\'""; --%"(array[\'sex\'])'
    assert as_reader(granted.postgres, request, role=HOSTILE_ROLE) == [(3,)]
    assert as_reader(granted.postgres, request, role=HOSTILE_ROLE) == [(3,)]
    with pytest.raises(psycopg2.errors.RaiseException, match=re.escape(f"role {json.dumps(HOSTILE_ROLE)} has spent its budget of 2")):
        as_reader(granted.postgres, request, role=HOSTILE_ROLE)
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):  # the analyst was not granted this one
        as_reader(granted.postgres, request, role=ANALYST)
    assert owner_rows(granted) == (3 * 6 * 9, len(_SURVEY))


# ------------------------------------------------------------- what the builder's cube must share with the release

BUILDER_OP = ("{% macro builder_op(cube, function_name, hierarchy) %}{% do run_query(sdc.ckm_table_builder("
              "ref(cube), ['sex', 'roof', 'water'], ['analyst'], function_name=function_name, "
              "log_table=function_name ~ '_requests', hierarchy=ref(hierarchy) if hierarchy else none)) %}"
              "{% do run_query('commit') %}{% endmacro %}")


def builder_op(granted, cube, function_name, hierarchy):
    """The builder's hook over ``cube`` as its own operation, creating ``function_name``."""
    (granted.root / "macros" / "builder_op.sql").write_text(BUILDER_OP)
    result = granted.dbt("run-operation", "builder_op", "--args", json.dumps(
        {"cube": cube, "function_name": function_name, "hierarchy": hierarchy}))
    result.stdout = result.stdout.replace("\n  ", " ")
    return result


def function_exists(granted, name) -> bool:
    owner = granted.postgres.connect()
    try:
        with owner.cursor() as cur:
            cur.execute("select count(*) from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace "
                        "where n.nspname = 'acl_audit' and p.proname = %s", (name,))
            return cur.fetchone()[0] > 0
    finally:
        owner.close()


@pytest.mark.parametrize("hierarchy, message", [
    (None, "no code list (hierarchy=) declares the codes of sex, roof, water"),
    ("roof_codes", "no code list (hierarchy=) declares the codes of sex, water"),
    ("codes_more", "are not those its code list declares (water w8: declared, not in the cells)"),
])
def test_a_builder_needs_every_dimension_s_codes_declared(granted, hierarchy, message):
    """Red team R3-11: without a code list a dimension's codes in the cube are those of the records, so a code
    whose every cell is 0 still says that a record has it (and a reload without that record drops it). The hook
    needs hierarchy= with every dimension, and a cube built over those codes."""
    result = builder_op(granted, "persons_finest", "sdc_ckm_undeclared", hierarchy)
    assert result.returncode != 0 and "ckm_table_builder: " in result.stdout and message in result.stdout, \
        result.stdout[-3000:]
    assert not function_exists(granted, "sdc_ckm_undeclared")


def test_a_builder_over_a_code_list_not_built_yet_says_so(granted):
    """New-user N7: the builder's hook over a hierarchy seed that was not built yet stopped with PostgreSQL's
    `relation "main.age_groups" does not exist`."""
    seed = granted.root / "seeds" / "codes_unbuilt.csv"
    seed.write_text(code_list(KNOWN_CODES))
    try:
        result = builder_op(granted, "persons_finest", "sdc_ckm_unbuilt", "codes_unbuilt")
    finally:
        seed.unlink()
    assert result.returncode != 0, result.stdout[-3000:]
    assert re.search(r"ckm_table_builder: the hierarchy \S*codes_unbuilt\"? does not exist in the database yet: "
                     r"build them first \(dbt build\)", result.stdout), result.stdout[-3000:]
    assert not function_exists(granted, "sdc_ckm_unbuilt")


def test_a_cube_built_with_another_ptable_than_the_release_gets_no_builder(granted):
    """Red team R3-10: a second cube with a ptable of its own and its builder beside the granted tables of the
    first ptable: the same cell came back with two noisy values (595 and 596). The hook applies the release's
    rule of one ptable to its cube, naming both relations."""
    from sdc.cli import main
    from sdc.conventions import PTABLE_SEED_COLUMN_TYPES

    files = [granted.root / "seeds" / "sdc_ptable_b.csv", granted.root / "seeds" / "sdc_ptable_b.yml",
             granted.root / "models" / "audit" / "persons_finest_b.sql"]
    assert main(["ptable", "--D", "3", "--V", "2", "--js", "1", "--out", str(files[0])]) == 0
    files[1].write_text("version: 2\nseeds:\n  - name: sdc_ptable_b\n    config:\n      column_types: "
                        + json.dumps(PTABLE_SEED_COLUMN_TYPES) + "\n")
    files[2].write_text("{{ sdc.ckm_finest_cells(source('raw', 'acl_survey'), ['sex', 'roof', 'water'], "
                        "hierarchy=ref('sdc_hierarchies'), ptable=ref('sdc_ptable_b'), modulus=10000000) }}")
    try:
        result = granted.dbt("build", "--select", "sdc_ptable_b", "persons_finest_b")
        assert result.returncode == 0, result.stdout[-3000:]
        result = builder_op(granted, "persons_finest_b", "sdc_ckm_b_table", "sdc_hierarchies")
        out = result.stdout
        assert result.returncode != 0 and "ckm_table_builder: the release mixes two count ptable: " in out, out[-3000:]
        assert '"acl_audit"."ckm_persons"' in out and '"acl_audit"."persons_finest_b"' in out, out[-3000:]
        assert not function_exists(granted, "sdc_ckm_b_table")
    finally:
        for file in files:
            file.unlink(missing_ok=True)
        owner = granted.postgres.connect()
        with owner.cursor() as cur:
            cur.execute("drop table if exists acl_audit.persons_finest_b, acl.sdc_ptable_b")
        owner.commit()
        owner.close()


def test_a_cube_a_hook_rewrote_gets_no_builder(granted):
    """Red team R3-1 (PG3): a cube whose post-hook set count = original was served by its builder (every finest
    cell exact). The hook compares the cube with sdc's own recomputation of its ckm_finest_cells call."""
    model = granted.root / "models" / "audit" / "persons_finest_z.sql"
    model.write_text("{{ config(post_hook=\"update {{ this }} set count = original\") }}"
                     "{{ sdc.ckm_finest_cells(source('raw', 'acl_survey'), ['sex', 'roof', 'water'], "
                     "hierarchy=ref('sdc_hierarchies'), modulus=10000000) }}")
    try:
        result = granted.dbt("run", "--select", "persons_finest_z")
        assert result.returncode == 0, result.stdout[-3000:]
        result = builder_op(granted, "persons_finest_z", "sdc_ckm_z_table", "sdc_hierarchies")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0 and re.search(
            r"ckm_table_builder: \S+persons_finest_z\"? differs from ckm_finest_cells over \S+acl_survey\"? \(recomputed "
            r"from the microdata\) in the cell \(.*\): count \d+ there, \d+ in sdc's recomputation", out), out[-3000:]
        assert not function_exists(granted, "sdc_ckm_z_table")
    finally:
        model.unlink()
        owner = granted.postgres.connect()
        with owner.cursor() as cur:
            cur.execute("drop table if exists acl_audit.persons_finest_z")
        owner.commit()
        owner.close()


FORGED = 'x\n2026-11-26 20:13:00.000 UTC [999] LOG:  sdc_ckm_table request 77 by "bob": dims ["state"], filters {}'


def test_a_refused_request_s_raw_text_stays_out_of_the_server_log_where_the_owner_may_keep_it_out(granted):
    """Red team R3-9: PostgreSQL logs a statement's text (log_min_error_statement = error) after an error or a LOG
    line, so the analyst's raw text reached the server log, its second line looking like another request. The
    function turns that off for its own lines where its owner may set the parameter (a superuser, or GRANT SET
    ON PARAMETER on PostgreSQL 15); otherwise the hook says so, and docs/guides/analyst.md says how to read the log."""
    server = granted.postgres

    def refused_request() -> str:
        """The log the server writes while the analyst's request with a forged line is refused."""
        start = server.log.stat().st_size
        conn = server.connect(user=ANALYST, password=READER_PASSWORD)
        conn.autocommit = True
        try:
            with conn.cursor() as cur, pytest.raises(psycopg2.errors.RaiseException):
                cur.execute("select * from acl_audit.sdc_log_try(%s)", ([FORGED],))
        finally:
            conn.close()
        with server.log.open(encoding="utf-8") as log:
            log.seek(start)
            return log.read()

    raw = "\n\t" + FORGED.split("\n")[1]  # a further line of a STATEMENT: the server indents it with a tab
    superuser = server.connect(user="postgres")
    superuser.autocommit = True
    try:
        result = builder_op(granted, "persons_finest", "sdc_log_try", "sdc_hierarchies")
        assert result.returncode == 0, result.stdout[-3000:]
        assert "ckm_table_builder: the role sdc_dbt may not set log_min_error_statement" in result.stdout
        written = refused_request()
        assert json.dumps(FORGED) in written and raw in written  # as docs/guides/analyst.md describes

        with superuser.cursor() as cur:
            cur.execute("grant set on parameter log_min_error_statement to sdc_dbt")
        result = builder_op(granted, "persons_finest", "sdc_log_try", "sdc_hierarchies")
        assert result.returncode == 0 and "may not set" not in result.stdout, result.stdout[-3000:]
        written = refused_request()
        assert json.dumps(FORGED) in written and "STATEMENT" not in written and FORGED.split("\n")[1] not in written
    finally:
        with superuser.cursor() as cur:
            cur.execute("revoke set on parameter log_min_error_statement from sdc_dbt")
            cur.execute("drop function if exists acl_audit.sdc_log_try(text[], jsonb)")
        superuser.close()
