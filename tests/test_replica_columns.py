"""The columns of loaded microdata whose values `sdc publish --target` copies into its replica (issue 49 §2): those
the release audit may read by name, not every confidential column of the microdata (python/sdc/release/replica.py,
copied_columns; the others are NULL there). A query that reads rows as a whole keeps every column, and so does a
ledger whose record sketch is over a loaded table's every column. On PostgreSQL: tests/test_release_audit_postgres.py."""

from __future__ import annotations

import json

import duckdb
import pytest

from sdc.release.differencing import sketched_columns
from sdc.release.replica import (
    audited_names,
    copied_columns,
    is_loaded_microdata,
    names_in,
    passed_on_whole,
    reads_whole_rows,
    record_texts,
)

LOADED = ["id", "sex", "region", "income", "diagnosis", "rk", "rk_f_employed", "f_employed"]
RECORD = json.dumps({"sdc_build": {"step": "ckm_count", "call": {"dims": ["sex", "Land Code"], "fact": "f_employed"}}})


@pytest.mark.parametrize("sql, dialect", [
    ("select * from raw.persons where income > 0", "postgres"),
    ("select p.* from raw.persons as p", "postgres"),
    ("select count(*) as n, region from raw.persons group by region", "postgres"),
    ("with kept as (select * from raw.persons) select * from kept", "duckdb"),
    ("select region as land, sex from raw.persons where sex = 'm'", "spark"),
])
def test_a_query_that_names_its_columns_or_passes_rows_on_reads_no_whole_rows(sql, dialect):
    assert not reads_whole_rows(sql, dialect)


@pytest.mark.parametrize("sql, dialect", [
    ("select md5(p::text) as person, region from raw.persons as p", "postgres"),  # a row as a value
    ("select row_to_json(p) from raw.persons p", "postgres"),
    ("select to_jsonb(p.*) from raw.persons p", "postgres"),
    ("select hash(*) as h, region from raw.persons", "duckdb"),  # a star inside a function
    ("select to_json(struct(*)) from raw.persons", "spark"),
    ("select distinct * from raw.persons", "postgres"),  # rows compared as a whole
    ("select *, count(*) from raw.persons group by all", "duckdb"),
    ("select * from raw.persons union select * from raw.others", "postgres"),
    ("select from where (", "postgres"),  # what sqlglot cannot read
])
def test_a_query_whose_result_depends_on_columns_it_never_names_reads_whole_rows(sql, dialect):
    assert reads_whole_rows(sql, dialect)


def test_the_names_of_a_text_are_its_identifiers_and_what_its_quotes_hold():
    assert names_in('select "Land ""x"" Code", `größe` from t where Einkommen_2 > 1 -- 2abc') == \
        {"select", 'land "x" code', "größe", "from", "t", "where", "einkommen_2", "abc"}


def test_only_the_columns_the_audit_names_are_copied_and_the_record_key_with_its_key_facts_always():
    """A confidential column that no build record, view or model names (diagnosis) is left out; a name spelled
    with other case or quoted in a record is kept; the record key and its key facts are kept though no text names
    them."""
    names = audited_names([RECORD, '{"table_name": "persons"}'],
                          [("select * from raw.persons where id <> 2", "postgres")])  # a star passes columns on
    columns = LOADED + ["Land Code"]
    assert copied_columns(columns, names) == ["id", "sex", "rk", "rk_f_employed", "f_employed", "Land Code"]
    # the audit that reads only these columns gives the figures of the whole table, the others NULL
    con = duckdb.connect()
    con.execute("create table persons as select * from (values (1, 'm', 'R1', 10.0, 'D1', 5, 5, 1, 'L1'), "
                "(2, 'w', 'R2', 20.0, 'D2', 7, 0, 0, 'L1')) t(" + ", ".join(f'"{c}"' for c in columns) + ")")
    kept = copied_columns(columns, names)
    con.execute("create table replica as select " + ", ".join(f'"{c}"' if c in kept else f'null as "{c}"'
                                                                for c in columns) + " from persons")
    query = 'select sex, "Land Code", count(*), sum(rk), sum(rk_f_employed) from {} group by all order by all'
    assert con.execute(query.format("replica")).fetchall() == con.execute(query.format("persons")).fetchall()
    assert con.execute("select count(diagnosis), count(income) from replica").fetchall() == [(0, 0)]


def test_a_column_a_view_passes_on_is_copied_only_where_something_reads_it_by_that_name():
    """PostgreSQL keeps a view's star as every column of its time (diagnosis too): a projection is read where the
    audit reads its output name, then with the names it reads, through views over views; what a view filters or
    joins on is read in any case, and so is every projection under DISTINCT or GROUP BY and one that makes rows."""
    view = ("SELECT p.id, p.sex, p.region, p.diagnosis, p.rk FROM raw.persons p "
            "WHERE p.sex = 'm'::text AND p.income > 0")
    over = "SELECT s.sex AS gender, s.region AS land FROM main.staged s"
    names = audited_names(['{"dims": ["gender"]}'], [(view, "postgres"), (over, "postgres")])
    assert copied_columns(LOADED, names) == ["sex", "income", "rk", "rk_f_employed", "f_employed"]
    names = audited_names(['{"dims": ["gender", "land"]}'], [(view, "postgres"), (over, "postgres")])
    assert copied_columns(LOADED, names) == ["sex", "region", "income", "rk", "rk_f_employed", "f_employed"]
    for query in ("select distinct p.sex, p.diagnosis from raw.persons p",
                  "select p.sex, p.diagnosis, count(*) as n from raw.persons p group by p.sex, p.diagnosis",
                  "select p.sex, unnest(string_to_array(p.diagnosis, ',')) as code from raw.persons p"):
        assert "diagnosis" in copied_columns(LOADED, audited_names(['"sex"'], [(query, "postgres")])), query


def test_the_published_relations_and_those_a_call_names_are_read_whole():
    """A published relation's SQL and a hierarchy's or ptable's count as texts: every name in them is read."""
    comments = [json.dumps({"sdc_build": {"step": "ckm_count", "call": {
        "hierarchy": {"database": "db", "schema": "main", "name": "Region_Codes"}, "ptable": "main.sdc_ptable"}}}),
        None, "a comment of one's own"]
    assert passed_on_whole(comments, [("main", "Published")]) == {"published", "region_codes", "sdc_ptable"}


def test_a_query_reading_whole_rows_or_a_sketch_of_every_column_keeps_every_column():
    assert audited_names([RECORD], [("select md5(p::text) as person, sex from raw.persons as p", "postgres")]) is None
    assert copied_columns(LOADED, None) == LOADED
    # the ledger's sketches: the loaded columns of their lineage expressions are read again; one over every
    # column (an sdc before issue 48), or one whose column sdc cannot name, keeps every column
    new = json.dumps({"record_sketches": [{"root": "raw.persons", "columns": [
        "raw.persons.diagnosis", "raw.persons.net income",
        'CASE WHEN "raw.persons.age" >= 65 THEN \'old\' ELSE \'young\' END'], "sketch": []}]})
    old = json.dumps({"record_sketches": {"raw.persons": [[0, 1, 2, 3]]}})
    plain = json.dumps({"record_sketches": [{"root": "raw.persons", "columns": ["sex"], "sketch": []}]})
    assert sketched_columns([new, None]) == ["diagnosis", "net income", "age"]
    assert sketched_columns([new, old]) is None and sketched_columns([plain]) is None
    kept = copied_columns(LOADED + ["net income", "age"], audited_names([RECORD], [], sketched_columns([new])))
    assert {"diagnosis", "net income", "age"} <= set(kept)


def test_only_the_loaded_tables_are_cut_to_their_audited_columns():
    assert is_loaded_microdata("raw", "persons") and is_loaded_microdata("RAW", "Persons")
    assert not is_loaded_microdata("raw", "sdc_loads") and not is_loaded_microdata("raw", "persons__record_keys")
    assert not is_loaded_microdata("main", "persons")


def test_a_name_json_escapes_in_a_build_record_is_read_as_the_column_s():
    """dbt writes a build record as ASCII JSON (région as r\\u00e9gion): the record is read decoded too, so that
    the column's values are copied (else a false refusal)."""
    comment = json.dumps({"sdc_build": {"step": "ckm_count", "call": {"dims": ["région"]}}})
    assert "\\u00e9" in comment
    assert copied_columns(["région", "rk", "note"], audited_names(record_texts([comment, None]), [])) == ["région", "rk"]


def test_a_fact_is_copied_beside_its_key_fact():
    assert copied_columns(["sex", "f_employed", "rk_f_employed", "f_other"], {"sex"}) == [
        "sex", "f_employed", "rk_f_employed"]


def test_the_search_for_a_renamed_dimension_never_takes_a_column_the_replica_holds_as_null():
    """Red-team review of the replica: a view that renames survey_year (one code) to year is read as the loaded
    table's column that cuts its records alike. On the replica a column left out (address: NULL, marked
    NOT_COPIED) cuts them into one set too and sorts first; it must not be taken, or the two tables would no
    longer share their cells in the release audit. The loaded table with every column gives survey_year, and so
    does the replica."""
    import itertools
    from types import SimpleNamespace

    from sdc.release import populations
    from sdc.release.record_wise import loaded_lineage, record_wise_lineage
    from sdc.conventions import NOT_COPIED
    from sdc.release.verify import Verifier

    def aliased(cut: bool):
        con = duckdb.connect()
        con.execute("create table people as select i as rk, " + ("null::varchar" if cut else "'a' || i") +
                    " as address, 'S' || (i % 3) as state, 2024 as survey_year from range(1, 31) t(i)")
        if cut:
            con.execute(f"comment on column people.address is '{NOT_COPIED}'")
        con.execute("create view v as select rk, state, survey_year as year from people")
        count = itertools.count()
        loaded = loaded_lineage("raw.people", ["rk", "address", "state", "survey_year"])
        verifier = SimpleNamespace(
            con=con, _temp=lambda s: f"t_{s}_{next(count)}", inputs={("people",): "people", ("v",): "v"},
            lineage={("people",): loaded, ("v",): record_wise_lineage(
                "select rk, state, survey_year as year from people", lambda t: loaded, lambda n: True, set(),
                lambda n: False)},
            _columns=lambda r: [c for (c,) in con.execute(f"select column_name from (describe {r})").fetchall()],
            not_copied={("raw.people", c) for (c,) in con.execute(
                "select column_name from duckdb_columns() where table_name = 'people' and comment = ?",
                [NOT_COPIED]).fetchall()})
        verifier.reads_not_copied = lambda relation, column: Verifier.reads_not_copied(verifier, relation, column)
        item = SimpleNamespace(call={"dims": ["year", "state"]}, kind="ckm_count", source="v", audit="v", content="v",
                               roots=frozenset(["raw.people"]), population=None)
        reference = SimpleNamespace(call={"dims": ["survey_year", "state"]}, kind="ckm_count", source="people",
                                    roots=frozenset(["raw.people"]))
        mine, theirs = (populations._population(verifier, i, (i.source, None)) for i in (item, reference))
        replace = populations.dataclasses.replace
        populations.dataclasses.replace = lambda _, **changed: changed
        try:
            return populations._aliased(verifier, item, mine, theirs)["call"]["dims"]
        finally:
            populations.dataclasses.replace = replace

    assert aliased(cut=False) == ["survey_year", "state"]
    assert aliased(cut=True) == ["survey_year", "state"]
