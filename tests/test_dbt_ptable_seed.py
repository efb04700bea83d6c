"""The committed seed, the conventions shared by Python and dbt, and the seed's dbt data test."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import jinja2
import yaml

from dbt_project_helper import DEMO, ScratchProject, install_demo_packages
from sdc.conventions import DBT_SETTINGS, NUMS_PTABLE_SEED_COLUMN_TYPES, PTABLE_COLUMNS, PTABLE_SEED_COLUMN_TYPES
from sdc.ptable import PTableParams, create_ptable
from sdc.ptable.formats import render_ptable

REPO = Path(__file__).parent.parent
DBT = Path(sys.executable).parent / "dbt"


def demo_ptable_args() -> dict:
    """The demo's ptable parameters, as the Makefile passes them to `sdc ptable`."""
    line = next(l for l in (REPO / "Makefile").read_text().splitlines() if l.startswith("PTABLE_ARGS"))
    return dict(re.findall(r"--(\w+) (\S+)", line))


def test_committed_seed_is_what_the_demo_parameters_build():
    args = demo_ptable_args()
    assert args == {"D": "5", "V": "3", "js": "2", "pstay": "0.5"}
    params = PTableParams(D=int(args["D"]), V=float(args["V"]), js=int(args["js"]), pstay=float(args["pstay"]))
    expected = render_ptable(create_ptable(params).table)
    assert (DEMO / "seeds" / "sdc_ptable.csv").read_text() == expected


def test_committed_magnitude_seed_is_what_the_demo_parameters_build():
    """demo/seeds/sdc_nums_ptable.csv: the Makefile's NUMS_PTABLE_ARGS, with NUMS_SMALL_ARGS added to it."""
    from sdc.cli import main as sdc_main

    makefile = (REPO / "Makefile").read_text().splitlines()
    args = {name: next(l for l in makefile if l.startswith(name)).split(":=", 1)[1].split()
            for name in ("NUMS_PTABLE_ARGS", "NUMS_SMALL_ARGS")}
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"sdc_nums_seed_{os.getpid()}.csv"
    try:
        assert sdc_main(["ptable", *args["NUMS_PTABLE_ARGS"], "--out", str(out)]) == 0
        assert sdc_main(["ptable", *args["NUMS_SMALL_ARGS"], "--add-to", str(out), "--out", str(out)]) == 0
        assert (DEMO / "seeds" / "sdc_nums_ptable.csv").read_text() == out.read_text()
    finally:
        out.unlink(missing_ok=True)
    project = yaml.safe_load((DEMO / "dbt_project.yml").read_text())
    types = project["seeds"]["sdc_demo"]["sdc_nums_ptable"]["+column_types"]
    # text is string on Spark (its varchar needs a length): a Jinja expression of the target's type
    for engine, text in (("duckdb", "varchar"), ("postgres", "varchar"), ("spark", "string")):
        rendered = {c: jinja2.Template(t).render(target={"type": engine}) for c, t in types.items()}
        assert rendered == {**NUMS_PTABLE_SEED_COLUMN_TYPES, "type": text}, engine
    assert NUMS_PTABLE_SEED_COLUMN_TYPES["type"] == "varchar"


def test_seed_header_and_dbt_column_types_follow_the_python_conventions():
    header = (DEMO / "seeds" / "sdc_ptable.csv").read_text().splitlines()[0]
    assert tuple(header.split(",")) == PTABLE_COLUMNS
    project = yaml.safe_load((DEMO / "dbt_project.yml").read_text())
    assert project["seeds"]["sdc_demo"]["sdc_ptable"]["+column_types"] == PTABLE_SEED_COLUMN_TYPES


def test_package_needs_no_vars_and_its_defaults_are_the_python_conventions(tmp_path):
    """Every setting of the macros has its default inside the package (macros/setting.sql), equal to
    conventions.DBT_SETTINGS; the package's dbt_project.yml defines no vars a user would have to copy."""
    package = yaml.safe_load((REPO / "dbt_project.yml").read_text())
    assert "vars" not in package and "models" not in package and "seeds" not in package
    project = ScratchProject(tmp_path / "p")
    (project.root / "macros" / "show_settings.sql").write_text(
        "{% macro show_settings() %}{% for name in " + repr(sorted(DBT_SETTINGS)) + " %}"
        "{{ log('setting ' ~ name ~ '=' ~ tojson(sdc.setting(name)), info=true) }}{% endfor %}{% endmacro %}"
    )
    result = project.dbt("run-operation", "show_settings")
    assert result.returncode == 0, result.stdout[-2000:]
    shown = dict(line.split("setting ", 1)[1].split("=", 1) for line in result.stdout.splitlines() if "setting sdc_" in line)
    assert {name: json.loads(value) for name, value in shown.items()} == DBT_SETTINGS


def dbt_build(project: Path, tmp: Path, select: str = "sdc_ptable") -> subprocess.CompletedProcess:
    env = dict(os.environ, DBT_PROFILES_DIR=str(project), SDC_DUCKDB_PATH=str(tmp / "sdc.duckdb"),
               DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    return subprocess.run(
        [str(DBT), "build", "--select", select, "--indirect-selection", "cautious", "--store-failures", "--target-path", str(tmp / "target"), "--log-path", str(tmp / "logs")],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )


def copy_project(tmp: Path) -> Path:
    project = ScratchProject(tmp / "project")
    shutil.copy(DEMO / "seeds" / "_seeds.yml", project.root / "seeds" / "_seeds.yml")
    return project.root


@pytest.fixture(scope="module")
def dbt_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("dbt")


def test_dbt_build_loads_the_seed_exactly_and_its_data_test_passes(dbt_tmp):
    install_demo_packages()
    result = dbt_build(DEMO, dbt_tmp)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "PASS=3" in result.stdout  # the seed, its data test, the sdc package's on-run-start hook
    con = duckdb.connect(str(dbt_tmp / "sdc.duckdb"), read_only=True)
    rows = con.execute(
        "select i, j, v, cast(p_int_lb * 100000000 as bigint), cast(p_int_ub * 100000000 as bigint) "
        "from sdc_ptable order by i, p_int_lb"
    ).fetchall()
    table = create_ptable(PTableParams(D=5, V=3, js=2, pstay=0.5)).table
    expected = list(zip(table.i.tolist(), table.j.tolist(), table.v.tolist(), table.lb_units.tolist(), table.ub_units.tolist()))
    assert rows == expected


def test_dbt_data_test_reports_each_problem_of_a_broken_seed(tmp_path):
    project = copy_project(tmp_path)
    broken = (
        "i,j,p,v,p_int_lb,p_int_ub\n"
        "0,1,1.00000000,1,0.00000000,1.00000000\n"    # zero does not stay zero
        "2,0,0.50000000,-2,0.00000000,0.50000000\n"   # row 1 missing
        "2,3,0.40000000,1,0.60000000,1.00000000\n"    # gap at 0.5
        "3,2,1.00000000,-1,0.00000000,0.90000000\n"   # p disagrees, ends at 0.9
        "4,0,1.00000000,-5,0.00000000,1.00000000\n"   # j is not i + v, and i + v < 0
    )
    (project / "seeds" / "sdc_ptable.csv").write_text(broken)
    result = dbt_build(project, tmp_path)
    assert result.returncode == 1
    assert "FAIL 7" in result.stdout
    con = duckdb.connect(str(tmp_path / "sdc.duckdb"), read_only=True)
    schema, table = con.execute(
        "select table_schema, table_name from information_schema.tables where table_name like '%sdc_ptable_valid%'"
    ).fetchone()
    problems = con.execute(f'select i, problem from "{schema}"."{table}" order by i, problem').fetchall()
    assert problems == [
        (0, "zero cell does not stay zero"),
        (1, "row missing"),
        (2, "interval does not start where the previous one ends"),
        (3, "last interval does not end at 1"),
        (3, "p differs from p_int_ub - p_int_lb"),
        (4, "j is not i + v"),
        (4, "perturbed value below 0"),
    ]
