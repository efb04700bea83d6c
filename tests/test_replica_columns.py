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
    assert copied_columns(LOADED, names) == ["sex", "income", "rk", "rk_f_employed"]
    names = audited_names(['{"dims": ["gender", "land"]}'], [(view, "postgres"), (over, "postgres")])
    assert copied_columns(LOADED, names) == ["sex", "region", "income", "rk", "rk_f_employed"]
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
    # the ledger's sketches: their columns (lineage expressions) are read again; one over every column (an sdc
    # before issue 48) keeps every column
    new = json.dumps({"record_sketches": [{"root": "raw.persons", "columns": ["diagnosis", "sex"], "sketch": []}]})
    old = json.dumps({"record_sketches": {"raw.persons": [[0, 1, 2, 3]]}})
    assert sketched_columns([new, None]) == ["diagnosis", "sex"]
    assert sketched_columns([new, old]) is None
    assert "diagnosis" in copied_columns(LOADED, audited_names([RECORD] + sketched_columns([new]), []))


def test_only_the_loaded_tables_are_cut_to_their_audited_columns():
    assert is_loaded_microdata("raw", "persons") and is_loaded_microdata("RAW", "Persons")
    assert not is_loaded_microdata("raw", "sdc_loads") and not is_loaded_microdata("raw", "persons__record_keys")
    assert not is_loaded_microdata("main", "persons")
