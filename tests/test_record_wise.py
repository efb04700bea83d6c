"""Microdata of one's own is record-wise with the loaded record keys (python/sdc/release/record_wise.py): the SQL
shapes a staging model takes are followed column by column, every shape that writes other records into a row, or
computes with the record keys, is refused naming it. The dbt-built cases (a view that shifts the keys, one that
writes counts into codes) are in tests/test_release_verification.py."""

from __future__ import annotations

import pytest

from sdc.release.record_wise import Lineage, NotRecordWise, key_columns, loaded_lineage, record_wise_lineage

COLUMNS = ["id", "sex", "region", "income", "tags", "address", "f_first", "rk", "rk_f_first"]
LOADED = loaded_lineage("raw.persons", COLUMNS)
KEYS = key_columns(LOADED)
SCALAR = {"upper", "strftime", "list_transform", "concat", "hash"}  # what DuckDB's catalog would call scalar
UNSTABLE = {"random", "now", "current_date", "nextval", "setseed", "uuid"}  # ... and volatile or per query


def lineage(sql: str) -> dict[str, Lineage]:
    def resolve(table):
        return LOADED if (table.db.lower(), table.name.lower()) == ("raw", "persons") else None

    return record_wise_lineage(sql, resolve, lambda name: name.lower() in SCALAR, KEYS,
                               lambda name: name.lower() in UNSTABLE)


def root(column: str) -> frozenset:
    return frozenset([("raw.persons", column)])


def test_the_loaded_keys_and_facts_are_known():
    assert KEYS == {("raw.persons", "rk"), ("raw.persons", "rk_f_first"), ("raw.persons", "f_first")}


def test_a_dbt_style_staging_model_is_followed_column_by_column():
    found = lineage("create view main.staged as (with source as (select * from raw.persons), renamed as ("
                    "select rk, sex as geschlecht, upper(region) as land, income / 1000.0 as income_k, "
                    "case when f_first = 1 then 'first' else 'later' end as cohort, address.city as city, "
                    "list_transform(tags, x -> x || '!') as loud, 7 as seven, f_first, rk_f_first "
                    "from source where income is not null and f_first in (0, 1)) select * from renamed)")
    assert found["rk"] == Lineage(root("rk"), True, "raw.persons.rk")
    assert found["geschlecht"] == Lineage(root("sex"), True, "raw.persons.sex")
    assert found["land"].roots == root("region") and not found["land"].passed
    assert found["income_k"].roots == root("income") and not found["income_k"].passed
    assert found["cohort"].roots == root("f_first")
    assert found["city"].roots == root("address")
    assert found["loud"].roots == root("tags")
    assert found["seven"].roots == frozenset() and not found["seven"].passed
    assert found["f_first"].passed and found["rk_f_first"].passed


def test_star_modifiers_and_subqueries_in_from_are_followed():
    found = lineage("select * exclude (address, tags) replace (income * 2 as income) rename (sex as s) "
                    "from (select * from raw.persons as p where p.region <> 'R0') as q")
    assert "address" not in found and "tags" not in found
    assert found["s"].passed and found["s"].root == ("raw.persons", "sex")
    assert found["income"].roots == root("income") and not found["income"].passed
    assert found["income"].expression != lineage("select income * 3 as income from raw.persons")["income"].expression
    assert found["rk"].passed


@pytest.mark.parametrize("sql, message", [
    ("select * from raw.persons union all select * from raw.persons", "is a set operation"),
    ("select region, min(rk) as rk from raw.persons group by region", "has GROUP BY"),
    ("select min(rk) as rk, 'all' as region from raw.persons", "computes MIN"),
    ("select distinct rk, region from raw.persons", "has DISTINCT"),
    ("select * from raw.persons limit 10", "has LIMIT"),
    ("select * from raw.persons using sample 10%", "has a sample"),
    ("select * from raw.persons tablesample 10%", "has a sample"),
    ("select rk, region, sum(income) over (partition by region) as s from raw.persons", "computes SUM"),
    ("select * from raw.persons where income > (select avg(income) from raw.persons)", "has a subquery"),
    ("select rk, (select count(*) from raw.persons) as n from raw.persons", "has a subquery"),
    ("select * from raw.persons where exists (select 1 from raw.persons as q where q.id = 1)", "has a subquery"),
    ("select rk, unnest(tags) as tag from raw.persons", "unnests"),
    ("select p.rk, q.region from raw.persons as p join raw.persons as q on q.id = p.id + 1", "has a join"),
    ("select p.rk, p.region from raw.persons as p, raw.persons as q", "has a join"),
    ("select rk, histogram(region) as h from raw.persons", "calls histogram, which is no scalar function"),
    ("select * from read_csv('persons.csv')", "reads the table function"),
    ("select 1 as rk", "reads no relation"),
    ("select * from main.elsewhere", "which is no microdata sdc can follow"),
    ("select rk, region from raw.persons qualify row_number() over (partition by region order by id) = 1",
     "has QUALIFY"),
    ("select rk, region, count(*) as n from raw.persons group by all", "has GROUP BY"),
    ("select * replace ((rk + 104729) % 100000000 as rk) from raw.persons", "computes its column rk from rk"),
    ("select id, region, hash(id) % 100000000 as rk from raw.persons", "has a column rk that is not the loaded"),
    ("select region, rk as key from raw.persons", "passes rk, a loaded record key or fact, on as key"),
    ("select region, rk, rk % 2 as parity from raw.persons", "computes its column parity from rk"),
    ("select * from raw.persons where rk % 2 = 0", "filters records by rk, the loaded record keys"),
    ("select * replace (1 as f_first) from raw.persons", "has a column f_first that is not the loaded"),
    ("select * exclude (f_first), f_first as f_other, 1 as f_first from raw.persons", "passes f_first"),
    ("select rk, region as rk_f_first from raw.persons", "has a column rk_f_first that is not the loaded"),
    ("select q.rk from raw.persons as p", "whose table it does not read"),
    ("select nothing from raw.persons", "reads the column 'nothing', which its relation does not have"),
    # the second red team of issue 48: columns renamed by position, read by position, parameter or pattern
    ("with c as (select id, rk, hash(id, 1) % 100000000 as k from raw.persons) select * from c as c(id, k, rk)",
     "renames columns by their position (c(id, k, rk))"),
    ("select * from raw.persons as p(id, sex, region, income, tags, address, f_first, k, rk)",
     "renames columns by their position"),
    ("select * from (select id, rk, hash(id) as k from raw.persons) as s(id, k, rk)", "renames columns by their position"),
    ("with c(id, k, rk) as (select id, rk, hash(id) from raw.persons) select * from c", "renames columns by their"),
    ("select * from raw.persons where #8 < 1000000", "reads #8, a column sdc cannot follow by its name"),
    ("select id, (#8 * 10)::int as grp from raw.persons", "reads #8"),
    ("select hash(id) % 100000000 as rk, rk from raw.persons", "has two columns named rk"),
    ("select *, $1 as x from raw.persons", "a column sdc cannot follow by its name (a position, a parameter"),
    ("select columns('rk.*') + 1 as x from raw.persons", "reads COLUMNS('rk.*')"),
    # results that change from one run to the next: sdc's recomputation would not be the table's
    ("select *, random() as draw from raw.persons", "calls RANDOM(), whose result changes"),
    ("select *, date_diff('year', current_date, current_date) as age from raw.persons", "calls CURRENT_DATE"),
    ("select *, now() as at from raw.persons", "calls now, which is no scalar function of DuckDB that gives"),
    ("select *, nextval('s') as n from raw.persons", "calls nextval, which is no scalar function"),
])
def test_what_writes_other_records_into_a_row_or_computes_with_the_keys_is_refused(sql, message):
    with pytest.raises(NotRecordWise, match=message.replace("(", r"\(").replace(")", r"\)")):
        lineage(sql)


def test_a_later_column_reads_an_earlier_alias_as_duckdb_does():
    """DuckDB lets a column read an alias defined before it in the same SELECT (and the relation's column of that
    name first); a filter may read one too. Refused before (the second red team of issue 48: a false refusal)."""
    found = lineage("select rk, sex, income / 1000 as income_k, case when income_k > 3 then 'high' else 'low' end "
                    "as band, upper(band) as loud from raw.persons where income_k > 1")
    assert found["band"].roots == root("income") and not found["band"].passed
    assert found["loud"].roots == root("income")
    assert found["sex"].root == ("raw.persons", "sex")
    assert lineage("select rk, region as sex, sex as g from raw.persons")["g"].root == ("raw.persons", "sex")
    with pytest.raises(NotRecordWise, match="computes its column k7 from rk"):
        lineage("select rk, rk % 7 as k7, k7 + 1 as band from raw.persons")
