"""Set-ups that would publish unprotected numbers stop the build with a message that names the problem:
keys loaded with another modulus, a category that carries the total's code, NULL in a dimension."""

import duckdb
import pytest

from conftest import query
from dbt_project_helper import ScratchProject
from sdc.warehouse.loader import load_microdata


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safety")
    p = ScratchProject(tmp / "project")
    micro = tmp / "persons.csv"
    micro.write_text("id,sex,state\n" + "".join(f"{k},{'mf'[k % 2]},s{k % 3}\n" for k in range(300)))
    load_microdata(p.db, micro, "persons256", id_column="id", modulus=256)      # ONS-style keys
    load_microdata(p.db, micro, "persons", id_column="id")                     # default 10^8
    con = duckdb.connect(str(p.db))
    # tables made without sdc load: keys drawn for 10^8; categories that break the table's labels
    con.execute("create table raw.unlogged as select id, sex, rk from raw.persons")
    con.execute("create table raw.total_category as select id, case when id < 5 then 'Total' else sex end as sex, state, rk "
                "from raw.persons")
    con.execute("create table raw.null_category as select id, case when id < 5 then null else sex end as sex, rk "
                "from raw.persons")
    # names and codes with quotes: a dimension column o'kreis, a hierarchy whose root code is Ge'samt
    con.execute("""create table raw.quoted as select id, case when id % 2 = 0 then 'A''1' else 'B' end as "o'kreis", rk
                   from raw.persons""")
    con.close()
    p.seed("quoted_hierarchy", "dimension,code,parent\no'kreis,Ge'samt,\no'kreis,A'1,Ge'samt\no'kreis,B,Ge'samt\n")
    p.sources(["persons256", "persons", "unlogged", "total_category", "null_category", "quoted"])
    models = {
        "ok_persons": "source('raw', 'persons'), dims=['sex', 'state']",
        "ok_persons256": "source('raw', 'persons256'), dims=['sex'], modulus=256",
        "fails_modulus_default": "source('raw', 'persons256'), dims=['sex']",
        "fails_modulus_given": "source('raw', 'persons'), dims=['sex'], modulus=256",
        "fails_keys_above_modulus": "source('raw', 'unlogged'), dims=['sex'], modulus=1000",
        "fails_total_category": "source('raw', 'total_category'), dims=['sex', 'state']",
        "fails_null_category": "source('raw', 'null_category'), dims=['sex']",
        "fails_hierarchy_case": "source('raw', 'quoted'), dims=[\"O'Kreis\"], hierarchy=ref('quoted_hierarchy')",
        "fails_hierarchy_other_dims": "source('raw', 'persons'), dims=['sex'], hierarchy=ref('quoted_hierarchy')",
        "ok_quoted": "source('raw', 'quoted'), dims=[\"o'kreis\"], hierarchy=ref('quoted_hierarchy')",
    }
    # the SQL's own guards (key sums, keys >= M) stand behind the record-key check, which stops these first
    models["fails_modulus_derived"] = "ref('stg_persons256'), dims=['sex'], check_keys=false"
    models["fails_keys_above_modulus"] += ", check_keys=false"
    models["fails_modulus_derived_checked"] = "ref('stg_persons256'), dims=['sex']"
    models["fails_keys_above_modulus_checked"] = "source('raw', 'unlogged'), dims=['sex'], modulus=1000"
    p.model("stg_persons256", "select * from {{ source('raw', 'persons256') }} where sex is not null")
    for name, arguments in models.items():
        p.model(name, f"{{{{ sdc.ckm_count({arguments}) }}}}", tags=["broken"] if name.startswith("fails") else [])
    result = p.dbt("build", "--exclude", "tag:broken")
    assert result.returncode == 0, result.stdout[-3000:]
    return p


def build(project, model):
    result = project.dbt("build", "--select", model)
    assert result.returncode != 0, f"{model} was built"
    return " ".join(result.stdout.split())


def test_keys_loaded_with_256_and_a_ckm_with_the_default_modulus_is_refused_naming_both(project):
    # before: 249 of 258 cells got the same noise -4, so original = published + 4
    out = build(project, "fails_modulus_default")
    assert "ckm_count: the keys of" in out and "persons256" in out
    assert "were loaded with modulus 256, but the CKM uses modulus 100000000" in out


def test_modulus_argument_that_disagrees_with_the_load_is_refused(project):
    out = build(project, "fails_modulus_given")
    assert "were loaded with modulus 100000000, but the CKM uses modulus 256" in out


def test_keys_of_another_modulus_behind_a_staging_model_stop_the_query(project):
    """The load log cannot say which load a staging model comes from (two moduli are logged); the key sums
    can: 150 keys below 256 cannot be the keys of 150 records under M = 10^8 (ckm_key_sum_implausible)."""
    out = build(project, "fails_modulus_derived")
    assert "records cannot come from record keys uniform on [0, 100000000): the keys were loaded with another modulus" in out


def test_keys_at_or_above_the_modulus_stop_the_query(project):
    # raw.unlogged was not loaded by sdc load (no log entry): the SQL itself sees keys >= M
    out = build(project, "fails_keys_above_modulus")
    assert "a record key of column rk in the cell " in out and "is not below the modulus 1000 the CKM uses" in out


def test_the_record_key_check_stops_both_first(project):
    out = build(project, "fails_modulus_derived_checked")
    assert 'ckm_count: record keys in column rk of "warehouse"."main"."stg_persons256" are not uniform random on ' \
           "[0, 100000000): Kolmogorov-Smirnov distance" in out
    out = build(project, "fails_keys_above_modulus_checked")
    assert 'record keys in column rk of "warehouse"."raw"."unlogged" are not uniform random on [0, 1000): ' in out
    assert "of 300 keys are not whole numbers in [0, 1000)" in out


def test_matching_moduli_build(project):
    (cells,) = query(project.db, "select count(*), max(cell_key_int) from ok_persons256")
    assert cells[0] == 3 and cells[1] < 256


def test_category_that_carries_the_code_of_the_total_is_refused_naming_the_dimension(project):
    # before: two cells (Total, s0) - the category and the margin - in one table
    out = build(project, "fails_total_category")
    assert "dimension sex has a category Total, the code of its total" in out


def test_null_in_a_dimension_is_refused_naming_it(project):
    out = build(project, "fails_null_category")
    assert "dimension sex is NULL in some records" in out


def test_modulus_that_is_not_a_number_is_a_compile_error(tmp_path):
    p = ScratchProject(tmp_path / "project")
    p.model("cells", "{{ sdc.ckm_count(ref('sdc_ptable'), dims=['i'], modulus='10; drop table sdc_ptable') }}")
    result = p.dbt("build")
    assert result.returncode != 0
    assert "ckm_count: modulus must be a whole number of at least 2, got 10; drop table sdc_ptable" in result.stdout
    assert not p.db.exists()  # stopped while parsing: nothing ran


def test_names_and_codes_with_quotes_reach_sql_quoted(project):
    """A dimension o'kreis with a hierarchy whose root code is Ge'samt: before, both were formatted into SQL
    between single quotes unescaped, and the build failed (or ran what the text said)."""
    cells = query(project.db, 'select "o\'kreis", original from ok_quoted order by 1')
    assert cells == [("A'1", 150), ("B", 150), ("Ge'samt", 300)]


def test_a_hierarchy_for_none_of_the_dimensions_or_spelt_otherwise_is_refused(project):
    """Found by a new user: dims=['State'] with a hierarchy of 'state' built a flat table labelled Total."""
    out = build(project, "fails_hierarchy_other_dims")
    assert "has none of the dimensions sex (it has: o'kreis); leave hierarchy= out for flat dimensions" in out
    out = build(project, "fails_hierarchy_case")
    assert "has dimension 'o'kreis', not 'O'Kreis': spell the dimension the same way in both" in out
