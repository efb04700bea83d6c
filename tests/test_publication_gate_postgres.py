"""grant_published on PostgreSQL judges what a relation reads from the database, as `sdc publish` does on DuckDB
(new-user D1 on PostgreSQL, red team 5), and grants nothing from two loads of one source (red team 20). Each case
was granted to the BI role on main ba32997."""

from __future__ import annotations

import contextlib
import re

import psycopg2
import pytest

from conftest import DATA
from dbt_project_helper import ScratchProject
from sdc.warehouse.loader import load_microdata
from sdc.warehouse.scratch import project_yaml
from test_engine_postgres import copy_raw_tables, pg_rows
from test_engine_postgres_access import READER_PASSWORD
from test_engine_postgres_access import as_reader as access_reader

pytestmark = pytest.mark.postgres

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
TABLE = "gate_survey"
READER = "gate_reader"
PROJECT_EXTRA = """
models:
  sdc:
    audit: {+schema: audit, +materialized: table}
    protected: {+schema: protected, +materialized: table, +tags: ["sdc_publish"]}
vars: {sdc_publication_schema: gate_publication}
on-run-start: ["{{ sdc.engine_setup() }}"]
on-run-end: ["{{ sdc.grant_published(['gate_reader']) }}"]
"""
PUBLICATION = "gate_publication"  # the schema grant_published copies the verified relations into
MODELS = {
    "audit/ckm_persons.sql": f"{{{{ sdc.ckm_count(source('raw', '{TABLE}'), ['sex', 'roof'], modulus=10000000) }}}}",
    "audit/ckm_by_sex.sql": f"{{{{ sdc.ckm_count(source('raw', '{TABLE}'), ['sex'], modulus=10000000) }}}}",
    "protected/persons.sql": "{{ sdc.ckm_published(ref('ckm_persons')) }}",
    "protected/by_sex.sql": "{{ sdc.ckm_published(ref('ckm_by_sex')) }}",
    "protected/persons_view.sql": "{{ config(materialized='view') }}{{ sdc.ckm_published(ref('ckm_persons')) }}",
}


def load(staging: ScratchProject, server) -> None:
    """A new load of raw.gate_survey (sdc load into DuckDB), copied to PostgreSQL with its row of the load log."""
    load_microdata(staging.db, MICRODATA, TABLE, key_mode="existing", key_column="rkeys", modulus=10**7)
    copy_raw_tables(staging.db, server, [TABLE])


@pytest.fixture(scope="module")
def project(tmp_path_factory, postgres):
    root = tmp_path_factory.mktemp("gate_pg")
    staging = ScratchProject(root / "staging")
    load(staging, postgres)
    admin = postgres.connect()
    with admin.cursor() as cur:
        cur.execute("select 1 from pg_roles where rolname = %s", (READER,))
        if cur.fetchone() is None:
            cur.execute(f"create role {READER} login password '{READER_PASSWORD}'")
    admin.commit()
    admin.close()
    p = ScratchProject(root / "project", postgres=postgres, schema="gate")
    (p.root / "dbt_project.yml").write_text(project_yaml() + PROJECT_EXTRA)
    p.sources([TABLE])
    for name, text in MODELS.items():
        (p.root / "models" / name).parent.mkdir(parents=True, exist_ok=True)
        (p.root / "models" / name).write_text(text)
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    p.staging = staging
    return p


def as_reader(server, sql):
    return access_reader(server, sql, role=READER)


def assert_not_published(project, name: str) -> None:
    """The reader reads neither the relation ``name`` that dbt built nor a copy of it in the publication."""
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
        as_reader(project.postgres, f"select * from gate_protected.{name} limit 1")
    with pytest.raises(psycopg2.errors.UndefinedTable):
        as_reader(project.postgres, f"select * from {PUBLICATION}.{name} limit 1")


def test_protection_steps_are_granted_and_views_of_ones_own_over_them_are_not(project):
    """The steps are granted (a step built as a view too); a BI view of one's own over a published table is not
    since red team R4-2 (what its SQL says is published, and SQL can carry numbers no step computed: the red team's
    view held literals that a Jinja run_query wrote from the raw data)."""
    import re

    persons = as_reader(project.postgres, "select sex, roof, count from gate_publication.persons order by 1, 2")
    assert len(persons) == 3 * 6
    assert as_reader(project.postgres, "select sex, roof, count from gate_publication.persons_view order by 1, 2") \
        == persons
    views = {
        "men": "{{ config(materialized='view') }}select * from {{ ref('persons') }} where sex = 'male'",
        # the red team's R4-2: the originals written into the SQL as literals at compile time
        "r4litv": "{{ config(materialized='view') }}{%- if execute -%}{%- set rows = run_query(\"select sex, roof, "
                  f"count(*) from raw.{TABLE} group by 1, 2 order by 1, 2\") -%}}{{%- endif -%}}select p.sex, p.roof, "
                  "t.n as count from {{ ref('persons') }} as p join (values {%- if execute -%}{%- for r in rows %} "
                  "('{{ r[0] }}', '{{ r[1] }}', {{ r[2] }}){{ ',' if not loop.last }}{% endfor %}{%- else -%}"
                  "('male', 'r1', 0){%- endif %}) as t(sex, roof, n) on p.sex = t.sex and p.roof = t.roof",
    }
    for name, sql in views.items():
        out = refused_model(project, name, sql)
        assert re.search(rf"grant_published: \S+{name}\"? is a view of one's own \(no protection step\): what it "
                         r"publishes is what its SQL says", out), out[-3000:]
    assert project.dbt("build").returncode == 0


def refused_model(project, name: str, sql: str) -> str:
    """dbt run of the protected model ``name`` (``sql``, removed again): it fails and nothing is granted; its
    output, one line per message."""
    model = project.root / "models" / "protected" / f"{name}.sql"
    model.write_text(sql)
    try:
        result = project.dbt("run", "--select", name)
    finally:
        model.unlink()
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0 and "grant_published:" in out, out[-3000:]
    assert_not_published(project, name)  # nothing granted
    return out


@pytest.mark.parametrize("name, sql, message", [
    # a hard-coded name: dbt sees no source (D1 on PostgreSQL)
    ("raw_view", "{{ config(materialized='view') }}select sex, count(*) as n from raw.gate_survey group by sex",
     "is raw microdata; refusing to grant"),
    # originals of the audit relation through a hard-coded name, renamed
    ("audit_view", "{{ config(materialized='view') }}select sex, roof, original as n from gate_audit.ckm_persons",
     "gate_audit\"?.\"?ckm_persons\"? is an audit relation: ckm_count built it"),
    # the protection step joined back to its audit relation (red team 5)
    ("leak_join", "with p as ({{ sdc.ckm_published(ref('ckm_persons')) }})\nselect p.sex, p.roof, a.original as count "
                  "from p join {{ ref('ckm_persons') }} as a on p.sex = a.sex and p.roof = a.roof",
     "is no protection step"),
    # a copy of the microdata by a hard-coded name, with the build-record hook (D1: the old error text's advice)
    ("raw_copy", "{{ config(post_hook=\"{{ sdc.build_record() }}\") }}select sex, roof from raw.gate_survey",
     "is no protection step"),
])
def test_a_relation_that_reads_raw_or_audit_data_is_not_granted(project, name, sql, message):
    import re

    out = refused_model(project, name, sql)
    assert re.search(message, out), out[-3000:]


def test_relations_of_two_loads_are_not_granted(project):
    """Red team 20: after a reload, one protected table rebuilt alone; the other still shows the old load."""
    load(project.staging, project.postgres)
    result = project.dbt("run", "--select", "ckm_persons", "persons")
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0
    assert "grant_published: the tagged relations were built from different loads of raw.gate_survey" in out, out[-3000:]
    result = project.dbt("build")  # the whole project: one load again
    assert result.returncode == 0, result.stdout[-3000:]
    assert len(as_reader(project.postgres, "select * from gate_publication.by_sex")) == 3


def test_tables_of_two_ptables_are_not_granted(project):
    """New-user D5 on PostgreSQL: a new ptable seed and a run of one model give the margin two noisy values."""
    import re

    from sdc.cli import main

    seed = project.root / "seeds" / "sdc_ptable.csv"
    original = seed.read_text()
    try:
        seed.unlink()  # the project's seed, which sdc ptable did not write
        assert main(["ptable", "--D", "3", "--V", "2", "--js", "1", "--out", str(seed)]) == 0
        # a run that builds no tagged relation leaves the publication as it is: the release of the old rows, which
        # its readers keep (new user D3: the hook judged such runs and stopped the monthly job)
        result = project.dbt("seed")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode == 0, out[-3000:]
        assert "grant_published: this run built no relation tagged sdc_publish; the publication is left as it is" in out
        # the granted tables were built with the old rows, which sdc cannot compute them from any more: a run that
        # publishes again is refused
        result = project.dbt("run-operation", "grant_published", "--args", f"{{roles: [{READER}]}}",
                             "--target-path", str(project.root / "operation"))
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0
        assert re.search(r"grant_published: \S+ckm_by_sex\"? was built with other rows of the ptable \S+ than it holds "
                         r"now \(the seed changed since\): run dbt build", out), out[-3000:]
        result = project.dbt("run", "--select", "ckm_by_sex", "by_sex")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0
        assert "grant_published: the release mixes two count ptable: " in out, out[-3000:]
    finally:
        seed.write_text(original)
    assert project.dbt("build").returncode == 0


def drop_publication(project) -> None:
    """The publication schema gone, as before the first grant (a test then sees whether a run makes it)."""
    con = project.postgres.connect()
    with con.cursor() as cur:
        cur.execute(f"drop schema if exists {PUBLICATION} cascade")
    con.commit()
    con.close()


def assert_no_publication(project) -> None:
    assert pg_rows(project.postgres, f"select count(*) from pg_namespace where nspname = '{PUBLICATION}'") == [(0,)]


def test_a_failed_run_grants_nothing(project):
    """New-user N5: a build in which two models failed still granted the table that did build; sdc publish refuses
    after a failed run, and so does the hook now, with one line."""
    broken = {"audit/ckm_broken.sql": f"{{{{ sdc.ckm_count(source('raw', '{TABLE}'), ['no_such_column']) }}}}",
              "protected/broken.sql": "{{ sdc.ckm_published(ref('ckm_broken')) }}"}
    for name, text in broken.items():
        (project.root / "models" / name).write_text(text)
    drop_publication(project)
    try:
        result = project.dbt("build", "--select", "ckm_broken", "broken", "ckm_by_sex", "by_sex")
    finally:
        for name in broken:
            (project.root / "models" / name).unlink()
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0
    assert "grant_published: the dbt run did not succeed: 2 node(s) failed or were skipped, first " in out, out[-3000:]
    assert "nothing granted" in out
    assert_no_publication(project)  # by_sex was rebuilt in that run: published to no one
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
        as_reader(project.postgres, "select * from gate_protected.by_sex limit 1")
    assert project.dbt("build").returncode == 0
    assert len(as_reader(project.postgres, "select * from gate_publication.by_sex")) == 3


def test_grant_published_as_an_operation_grants_and_says_what(project):
    """New-user N8: `dbt run-operation grant_published` exited 0 and granted nothing (the macro returns SQL for the
    hook to run), also for a role that does not exist. Outside a hook it now runs its checks, publishes and names
    what it published; an unknown role is an error, and nothing is published to the other roles either."""
    drop_publication(project)
    result = project.dbt("run-operation", "grant_published", "--args", f"{{roles: [{READER}, gate_typo]}}")
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0 and "grant_published: no role gate_typo in the database" in out, out[-3000:]
    assert_no_publication(project)

    result = project.dbt("run-operation", "grant_published", "--args", f"{{roles: [{READER}]}}")
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode == 0, out[-3000:]
    assert (f"grant_published: copied 3 verified relation(s) into schema {PUBLICATION} (by_sex, persons, "
            f"persons_view) and granted it to {READER}") in out, out[-3000:]
    assert len(as_reader(project.postgres, "select * from gate_publication.by_sex")) == 3
    # copies: the reader reads none of the relations dbt built, and no view (a view is computed when read)
    assert as_reader(project.postgres, "select table_name, table_type from information_schema.tables where "
                                       f"table_schema = '{PUBLICATION}' order by 1") == [
        ("by_sex", "BASE TABLE"), ("persons", "BASE TABLE"), ("persons_view", "BASE TABLE")]
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
        as_reader(project.postgres, "select * from gate_protected.by_sex limit 1")


# New-user D6: cell suppression between two dbt selections (docs/quickstart/postgresql.md), over the men only, so that the
# CKM tables and the suppression table are not one population (that is refused on its own, D3)
SUPPRESSION_MODELS = {
    "audit/supp_men.sql": f"{{{{ config(materialized='view') }}}}select * from {{{{ source('raw', '{TABLE}') }}}} "
                          "where sex = 'male'",
    "audit/supp_cells.sql": "{{ sdc.suppression_cells(ref('supp_men'), dims=['roof'], value='income') }}",
    "audit/supp_primary.sql": "{{ sdc.suppression_primary(ref('supp_cells'), ['freq:6', 'p:10']) }}",
    "audit/supp_relations.sql": "{{ sdc.suppression_constraints(ref('supp_cells'), ['roof']) }}",
    "protected/men_suppressed.sql": "{{ sdc.suppression_published('gate_audit.supp_pattern', ['roof'], value='value') }}",
}


def suppress(project) -> None:
    """sdc suppress --target as docs/quickstart/postgresql.md runs it: the pattern solved from the cell table, written back."""
    from sdc.cli import main

    assert main(["suppress", "--target", "pg", "--profile", "sdc_scratch", "--profiles-dir", str(project.root),
                 "--cells", "gate_audit.supp_primary", "--relations", "gate_audit.supp_relations",
                 "--pattern", "gate_audit.supp_pattern", "--dims", "roof", "--magnitude"]) == 0


@contextlib.contextmanager
def suppression_table(project, models):
    """The three steps of docs/quickstart/postgresql.md with ``models``: the cell steps, sdc suppress --target, then the published table;
    yields the last dbt run. Afterwards the models and what they built are gone, so that the next test starts
    from the CKM project alone."""
    for name, text in models.items():
        (project.root / "models" / name).write_text(text)
    try:
        assert project.dbt("build", "--select", "supp_men", "supp_cells", "supp_primary", "supp_relations").returncode == 0
        suppress(project)
        yield project.dbt("build", "--select", "men_suppressed")
    finally:
        for name in models:
            (project.root / "models" / name).unlink()
        con = project.postgres.connect()
        with con.cursor() as cur:
            cur.execute("drop table if exists gate_protected.men_suppressed, gate_audit.supp_pattern, "
                        "gate_audit.supp_cells, gate_audit.supp_primary, gate_audit.supp_relations cascade")
            cur.execute("drop view if exists gate_audit.supp_men cascade")
        con.commit()
        con.close()


def test_a_suppression_pattern_older_than_the_load_is_not_granted(project):
    """New-user D6: after a reload and a whole dbt build, the suppression table was rebuilt from the pattern that
    sdc suppress had solved on the old load, and granted beside the CKM tables of the new load. The pattern now
    carries the loads of the cell table it was solved from; a release of two loads, or of one load that is not
    the last, is not granted."""
    with suppression_table(project, SUPPRESSION_MODELS) as result:
        assert result.returncode == 0, result.stdout[-3000:]
        granted = as_reader(project.postgres, "select roof, published_text from gate_publication.men_suppressed order by 1")
        assert len(granted) == 6 and "Total" in [roof for roof, _ in granted]  # 5 roof codes and the total

        load(project.staging, project.postgres)  # changed data arrive: the cells are rebuilt, the pattern is not
        result = project.dbt("build")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0
        assert "grant_published: the tagged relations were built from different loads of raw.gate_survey" in out, out[-3000:]
        assert "gate_protected\".\"men_suppressed" in out or "gate_protected.men_suppressed" in out, out[-3000:]
        # the rebuilt table is published to no one: the publication keeps the last verified release
        assert as_reader(project.postgres, "select roof, published_text from gate_publication.men_suppressed "
                                           "order by 1") == granted
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            as_reader(project.postgres, "select * from gate_protected.men_suppressed limit 1")

        suppress(project)  # the documented step after a reload: solve again, then build the publication
        result = project.dbt("build", "--select", "men_suppressed")
        assert result.returncode == 0, result.stdout[-3000:]
        assert len(as_reader(project.postgres, "select * from gate_publication.men_suppressed")) == 6

        load(project.staging, project.postgres)  # one load across the release, but not the last one
        result = project.dbt("run", "--select", "men_suppressed")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0
        assert "was built from the load of raw.gate_survey of " in out and "but its last sdc load is of" in out, \
            out[-3000:]
    assert project.dbt("build").returncode == 0  # the whole project after the last load: granted again
    assert len(as_reader(project.postgres, "select * from gate_publication.by_sex")) == 3


def test_one_population_by_both_methods_is_not_granted(project):
    """New-user D3 on PostgreSQL: the persons counted by the CKM and the same persons' table by cell suppression
    (the same grand total). The check stopped the hook with a Python type error (agate's Decimal against a float)
    instead of its message."""
    models = {**SUPPRESSION_MODELS, "audit/supp_men.sql": f"{{{{ config(materialized='view') }}}}select * from "
                                                         f"{{{{ source('raw', '{TABLE}') }}}}"}
    with suppression_table(project, models) as result:
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0
        assert "(cell suppression) hold the same population and variable (both have the grand total 4580" in out, \
            out[-3000:]
        assert_not_published(project, "men_suppressed")
    assert project.dbt("build").returncode == 0


# Red team round 3, R3-1 on PostgreSQL: what a relation says it reads (pg_depend, its build record) is not what it
# publishes. Granted on main f5fda9a; now each step's table is compared with sdc's own recomputation from the
# microdata, and a view may call built-in functions only (macros/_gate_verify.sql).
FUNCTION = ("create or replace function gate_protected.sdc_label(s text) returns bigint language sql security definer "
            "set search_path = pg_catalog as $fn$ select count(*) from raw.gate_survey as r where r.sex = s $fn$")


@pytest.mark.parametrize("files, name, message", [
    # PG1: a view calling a security-definer function that counts the raw records
    ({"protected/function_view.sql": f"{{{{ config(materialized='view', pre_hook=\"{FUNCTION}\") }}}}"
                                     "select sex, gate_protected.sdc_label(sex) as count from {{ ref('by_sex') }}"},
     "function_view", r"function_view\"? is a view that calls gate_protected.sdc_label, a function of the database's own"),
    # PG2: a protection step whose table a post-hook overwrites with the originals
    ({"protected/rewritten.sql": "{{ config(post_hook=\"update {{ this }} as p set count = a.original from "
                                 "gate_audit.ckm_persons as a where a.sex = p.sex and a.roof = p.roof\") }}"
                                 "{{ sdc.ckm_published(ref('ckm_persons')) }}"},
     "rewritten", r"rewritten\"? differs from ckm_count over .*gate_survey\"? \(recomputed from the microdata\) in the "
                  r"cell \(sex=\w+, roof=\w+\): count \d+ there, \d+ in sdc's recomputation"),
    # the CKM step's own table rewritten: count = original, noise 0 (ckm_published's own check passes)
    ({"audit/ckm_zeroed.sql": "{{ config(post_hook=\"update {{ this }} set count = original, noise = 0\") }}"
                              f"{{{{ sdc.ckm_count(source('raw', '{TABLE}'), ['sex', 'roof'], modulus=10000000) }}}}",
      "protected/zeroed.sql": "{{ sdc.ckm_published(ref('ckm_zeroed')) }}"},
     "zeroed", r"zeroed\"? differs from ckm_count over .* in the cell"),
    # R3-2: suppression_published over a "pattern" of one's own
    ({"audit/own_pattern.sql": "select coalesce(sex, 'Total') as sex, coalesce(roof, 'Total') as roof, count(*) as freq, "
                               "'published' as status, cast(count(*) as text) as published_text "
                               f"from {{{{ source('raw', '{TABLE}') }}}} where sex = 'male' group by cube(sex, roof)",
      "protected/own_pattern_published.sql": "{{ sdc.suppression_published(ref('own_pattern'), ['sex', 'roof'], value='freq') }}"},
     "own_pattern_published", "own_pattern\"? is read by suppression_published, but no suppression_primary table"),
])
def test_a_relation_whose_content_is_not_sdcs_recomputation_is_not_granted(project, files, name, message):
    import re

    for path, text in files.items():
        (project.root / "models" / path).write_text(text)
    try:
        result = project.dbt("run", "--select", *[p.rsplit("/", 1)[1][:-len(".sql")] for p in files])
    finally:
        for path in files:
            (project.root / "models" / path).unlink()
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0 and "grant_published:" in out and re.search(message, out), out[-3000:]
    assert_not_published(project, name)  # nothing granted


# ------------------------------------------------------------------- what the reader reads: copies sdc verified
def publication_tables(project) -> list[str]:
    return [name for (name,) in as_reader(project.postgres, "select table_name from information_schema.tables where "
                                                            f"table_schema = '{PUBLICATION}' order by 1")]


def test_a_step_view_that_shows_the_reader_the_originals_is_published_as_sdc_verified_it(project):
    """A view is computed whenever it is read, as whoever reads it: a ckm_published view that a post-hook replaced
    by one that shows the reader role the originals and everyone else the protected counts passed the old gate
    (verified as the dbt user, granted in place; the reader then read the originals). The reader now reads a copy
    made and verified in the grant's own session."""
    # the step's columns, as PostgreSQL replaces a view only with the same columns (the codes' descriptions of the
    # two flat dimensions computed here, from the step's input alone)
    described = ", ".join(
        f"case when a.{d} = 'Total' then 0 else 1 end as {d}__level, a.{d} = 'Total' as {d}__is_total, "
        f"cast(case when a.{d} = 'Total' then null else 'Total' end as varchar) as {d}__parent, "
        f"case when a.{d} = 'Total' then 0 else cast(dense_rank() over (partition by a.{d} = 'Total' order by a.{d}) "
        f"as integer) end as {d}__sort" for d in ("sex", "roof"))
    replaced = ("{{ config(materialized='view', post_hook=\"create or replace view {{ this }} as select a.sex, a.roof, "
                f"case when current_user = '{READER}' then a.original else a.count end as count, {described} "
                "from {{ ref('ckm_persons') }} as a\") }}{{ sdc.ckm_published(ref('ckm_persons')) }}")
    model = project.root / "models" / "protected" / "who_reads.sql"
    model.write_text(replaced)
    try:
        result = project.dbt("run", "--select", "who_reads")
        assert result.returncode == 0, result.stdout[-3000:]
        published = as_reader(project.postgres, "select sex, roof, count from gate_publication.who_reads order by 1, 2")
        assert published == as_reader(project.postgres, "select sex, roof, count from gate_publication.persons order by 1, 2")
        originals = pg_rows(project.postgres, "select sex, roof, original from gate_audit.ckm_persons order by 1, 2")
        assert published != originals  # the CKM changed some counts: the copy is not the originals
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            as_reader(project.postgres, "select * from gate_protected.who_reads limit 1")
    finally:
        model.unlink()
        drop_relation(project, "view", "gate_protected.who_reads")
    assert project.dbt("build").returncode == 0


def drop_relation(project, kind: str, name: str) -> None:
    con = project.postgres.connect()
    with con.cursor() as cur:
        cur.execute(f"drop {kind} if exists {name} cascade")
    con.commit()
    con.close()


def test_a_published_view_over_a_step_that_is_a_view_is_not_granted(project):
    """The same view read by a view of one's own: that view would compute it again after sdc verified it. A step
    that another published relation reads must be a table."""
    files = {"audit/persons_step_view.sql": "{{ config(materialized='view') }}{{ sdc.ckm_published(ref('ckm_persons')) }}",
             "protected/women.sql": "{{ config(materialized='view') }}select * from {{ ref('persons_step_view') }} "
                                    "where sex = 'female'"}
    for path, text in files.items():
        (project.root / "models" / path).write_text(text)
    try:
        result = project.dbt("run", "--select", "persons_step_view", "women")
    finally:
        for path in files:
            (project.root / "models" / path).unlink()
        drop_relation(project, "view", "gate_protected.women")
        drop_relation(project, "view", "gate_audit.persons_step_view")
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0
    assert re.search(r"grant_published: \S+persons_step_view\"? is a view of the protection step ckm_published that "
                     r"\S+women\"? reads: a view is computed again each time it is read", out), out[-3000:]
    assert "women" not in publication_tables(project)
    assert project.dbt("build").returncode == 0


def test_a_removed_model_leaves_the_publication(project):
    """The publication is exactly the release: a model removed from the project is not in the next publication
    (its old relation stays in the database, where no reader role reads it)."""
    model = project.root / "models" / "protected" / "by_sex.sql"
    text = model.read_text()
    model.unlink()
    try:
        result = project.dbt("build")
        assert result.returncode == 0, result.stdout[-3000:]
        assert publication_tables(project) == ["persons", "persons_view"]
    finally:
        model.write_text(text)
    assert project.dbt("build").returncode == 0
    assert publication_tables(project) == ["by_sex", "persons", "persons_view"]


@pytest.mark.parametrize("setup, vars_, message", [
    # a schema of the same name that grant_published did not make: never dropped
    ("create schema if not exists gate_own; create table if not exists gate_own.notes (x int)", "gate_own",
     "grant_published: the schema gate_own exists and was not made by grant_published"),
    # the raw schema
    ("select 1", "raw", "grant_published: var sdc_publication_schema is 'raw', which is not a schema name"),
    # the schema a tagged relation is built into
    ("select 1", "gate_protected", "is built into the publication schema gate_protected"),
])
def test_a_publication_schema_that_is_not_sdcs_own_is_not_replaced(project, setup, vars_, message):
    con = project.postgres.connect()
    with con.cursor() as cur:
        cur.execute(setup)
    con.commit()
    con.close()
    if vars_ == "gate_protected":  # as if grant_published had made it before
        con = project.postgres.connect()
        with con.cursor() as cur:
            cur.execute("select obj_description(oid, 'pg_namespace') from pg_namespace where nspname = %s", (PUBLICATION,))
            (marker,) = cur.fetchone()
            cur.execute("comment on schema gate_protected is %s", (marker,))
        con.commit()
        con.close()
    try:
        result = project.dbt("run-operation", "grant_published", "--args", f"{{roles: [{READER}]}}",
                             "--vars", f"{{sdc_publication_schema: {vars_}}}")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0 and message in out, out[-3000:]
        assert pg_rows(project.postgres, "select count(*) from information_schema.tables where table_schema = "
                                         "'gate_protected'")[0][0] >= 4  # nothing dropped
        if vars_ == "gate_own":
            assert pg_rows(project.postgres, "select count(*) from gate_own.notes") == [(0,)]
    finally:
        con = project.postgres.connect()
        with con.cursor() as cur:
            cur.execute("drop schema if exists gate_own cascade; comment on schema gate_protected is null")
        con.commit()
        con.close()
