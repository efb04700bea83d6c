"""A dimension named like a column the method adds (count, noise, freq, status, top_1, ...), listed twice,
named like a hierarchy level column, or the record key itself would be overwritten, make the output
ambiguous or publish nonsense; the CLI, the Python API and the macros refuse it by name."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dbt_project_helper import ScratchProject
from sdc.conventions import CKM_OWN_COLUMNS, DBT_SETTINGS, SUPPRESSION_OWN_COLUMNS
from sdc.warehouse.dimension_names import check_dimension_names
from sdc.errors import SdcError

SDC = Path(sys.executable).parent / "sdc"
DEMO_PTABLE = Path(__file__).parent.parent / "demo" / "seeds" / "sdc_ptable.csv"


@pytest.mark.parametrize("name", list(CKM_OWN_COLUMNS) + ["COUNT", "Noise", "Cell_Key"])
def test_ckm_refuses_its_own_columns_in_any_case(name):
    with pytest.raises(SdcError, match=f"dimension '{name}' has the name of a column the method adds"):
        check_dimension_names(["region", name], CKM_OWN_COLUMNS)


@pytest.mark.parametrize("name", list(SUPPRESSION_OWN_COLUMNS) + ["FREQ", "Status", "top_1", "TOP_12"])
def test_suppression_refuses_its_own_columns_and_top_contributions(name):
    with pytest.raises(SdcError, match=f"dimension '{name}' has the name of a column the method adds"):
        check_dimension_names([name], SUPPRESSION_OWN_COLUMNS, top_contributions=True)


@pytest.mark.parametrize("dims, message", [
    (["region", "Region"], "dimension 'Region' is listed twice"),
    (["sex", "region__level_1"], "ends like the level columns of a hierarchical dimension"),
    (["region__leaf"], "ends like the level columns"),
    (["  "], "a dimension name is empty"),
    (["Key"], "dimension 'Key' is also the --record-key column"),
])
def test_repeated_level_like_empty_and_role_names_are_refused(dims, message):
    with pytest.raises(SdcError, match=message):
        check_dimension_names(dims, CKM_OWN_COLUMNS, {"key": "--record-key column", None: "unused"})


def test_ordinary_names_pass_including_names_of_the_other_methods_columns():
    # a census "status" is an ordinary CKM dimension; "count_2", "top_x", quotes and spaces are names like any
    check_dimension_names(["status", "freq", "count_2", "top_x", "o'kreis", 'a "b"', "Gebiet Nr"], CKM_OWN_COLUMNS)
    check_dimension_names(["noise", "original", "top"], SUPPRESSION_OWN_COLUMNS, top_contributions=True)


def test_the_macros_default_lists_are_the_python_ones():
    assert DBT_SETTINGS["sdc_ckm_own_columns"] == list(CKM_OWN_COLUMNS)
    assert DBT_SETTINGS["sdc_suppression_own_columns"] == list(SUPPRESSION_OWN_COLUMNS)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dimension_names")
    rng = np.random.default_rng(7)
    lines = ["Count,noise,sex,key,FREQ,top_1,Status"]
    for _ in range(200):
        lines.append(f"{rng.integers(3)},{rng.integers(2)},{'mf'[rng.integers(2)]},{rng.integers(10**8)},"
                     f"{rng.integers(4)},{rng.integers(3)},{rng.integers(2)}")
    (tmp / "micro.csv").write_text("\n".join(lines) + "\n")
    return tmp


@pytest.mark.parametrize("command, message", [
    (["ckm", "--dims", "sex,Count"], "dimension 'Count' has the name of a column the method adds"),
    (["ckm", "--dims", "noise"], "dimension 'noise' has the name of a column the method adds"),
    (["ckm", "--dims", "sex,key"], "dimension 'key' is also the --record-key column"),
    (["ckm", "--dims", "sex,SEX"], "dimension 'SEX' is listed twice"),
    (["suppress", "--dims", "sex,FREQ"], "dimension 'FREQ' has the name of a column the method adds"),
    (["suppress", "--dims", "top_1"], "dimension 'top_1' has the name of a column the method adds"),
    (["suppress", "--dims", "Status,sex"], "dimension 'Status' has the name of a column the method adds"),
])
def test_cli_refuses_reserved_dimension_names_and_writes_nothing(files, command, message):
    out = files / "out.csv"
    extra = (["--record-key", "key", "--key-digits", "8", "--ptable", str(DEMO_PTABLE)] if command[0] == "ckm"
             else ["--rule", "freq:3"])
    result = subprocess.run([str(SDC), *command, "--input", str(files / "micro.csv"), *extra, "--out", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not out.exists()


def test_the_cli_protects_a_table_whose_dimension_is_the_other_methods_column(files):
    # "Status" is a suppression column, not a CKM one: sdc ckm protects by it
    out = files / "status.csv"
    result = subprocess.run([str(SDC), "ckm", "--input", str(files / "micro.csv"), "--dims", "Status",
                             "--record-key", "key", "--key-digits", "8", "--ptable", str(DEMO_PTABLE),
                             "--out", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert out.read_text().splitlines()[0] == "Status,count"


@pytest.mark.parametrize("call, message", [
    ("sdc.ckm_count(source('raw', 'micro'), dims=['sex', 'Noise'])",
     "ckm_count: dimension 'Noise' has the name of a column the method adds"),
    ("sdc.ckm_count(source('raw', 'micro'), dims=['RK'])", "ckm_count: dimension 'RK' is also the record key column"),
    ("sdc.suppression_cells(source('raw', 'micro'), dims=['sex', 'freq'])",
     "suppression_cells: dimension 'freq' has the name of a column the method adds"),
    ("sdc.suppression_cells(source('raw', 'micro'), dims=['sex'], value='income', holding='Sex')",
     "suppression_cells: dimension 'sex' is also the holding column"),
    ("sdc.suppression_cells_from_aggregate(source('raw', 'micro'), dims=['sex', 'Top_2'], freq='n')",
     "suppression_cells_from_aggregate: dimension 'Top_2' has the name of a column the method adds"),
    ("sdc.ckm_count(source('raw', 'micro'), dims=['sex', 'Region__Level'])",
     "ckm_count: dimension 'Region__Level' ends like the columns published tables add per dimension"),
])
def test_macros_refuse_reserved_dimension_names_by_name(tmp_path, call, message):
    project = ScratchProject(tmp_path / "project")
    project.sources(["micro"])
    project.model("cells", "{{ " + call + " }}")
    result = project.dbt("parse")
    assert result.returncode != 0
    assert message in " ".join(result.stdout.split()), result.stdout[-2000:]


def test_ckm_published_drops_the_audit_columns_in_any_letter_case(tmp_path):
    import duckdb
    project = ScratchProject(tmp_path / "project")
    # a hand-made ckm_count output: ckm_published reads only relations whose build record names a CKM step
    record = '{"sdc_build": {"invocation_id": "hand-made", "loads": {}, "step": "ckm_count", "reads": []}}'
    hook = f"comment on table {{{{ this }}}} is '{record}'".replace('"', '\\"')
    project.model("cells", f"""{{{{ config(post_hook="{hook}") }}}}
select 'm' as sex, 3 as "count", 1 as "Noise", 2 as "ORIGINAL", 5 as "Cell_Key" """)
    project.model("published", "{{ sdc.ckm_published(ref('cells')) }}")
    result = project.dbt("build")
    assert result.returncode == 0, result.stdout[-2000:]
    con = duckdb.connect(str(project.db), read_only=True)
    try:
        assert [c[0] for c in con.execute("describe main.published").fetchall()] == ["sex", "count"]
    finally:
        con.close()
