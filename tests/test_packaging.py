"""The Python package as a user installs it: a wheel that carries the dbt macros, works from any directory
without a checkout, pins the dbt versions that install here, and documents every command and option."""

import argparse
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import sdc
from sdc.cli import build_parser

from conftest import DATA, REPO

SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "dbt_project.yml", "macros", "python")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built from a copy of the sources (the build writes nothing into the checkout)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in SOURCES:
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(REPO / name, source / name)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                             "-w", str(tmp / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    (built,) = (tmp / "dist").glob("sdc_warehouse-*.whl")
    return built


def test_wheel_carries_the_dbt_package_and_the_demo_config(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    macros = {str(p.relative_to(REPO)) for p in (REPO / "macros").rglob("*.sql")}
    assert {f"sdc/dbt_package/{m}" for m in macros} <= names
    assert {"sdc/dbt_package/dbt_project.yml", "sdc/demo/facts.yml", "sdc/cli/__main__.py"} <= names
    # every command module of the CLI
    assert {f"sdc/cli/{p.name}" for p in (REPO / "python" / "sdc" / "cli").glob("*.py")} <= names


def test_installed_wheel_runs_sdc_ckm_from_another_folder_with_relative_paths(wheel, tmp_path):
    """No checkout: the package is unpacked alone, the command runs in an unrelated working directory
    with relative paths, and gives the same cells as the checkout's own installation."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(DATA / "cellkey_testdata_with_rkeys.csv", work / "micro.csv")
    shutil.copy(REPO / "demo" / "seeds" / "sdc_ptable.csv", work / "ptable.csv")
    env = dict(os.environ, PYTHONPATH=str(site))
    where = subprocess.run([sys.executable, "-c", "import sdc.warehouse.scratch as s; print(s.package_dir())"],
                           cwd=work, env=env, capture_output=True, text=True)
    assert Path(where.stdout.strip()) == site / "sdc" / "dbt_package"
    args = ["ckm", "--input", "micro.csv", "--dims", "sex,age", "--record-key", "rkeys", "--key-digits", "7",
            "--ptable", "ptable.csv", "--out", "cells.csv"]
    result = subprocess.run([sys.executable, "-m", "sdc.cli", *args], cwd=work, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote 21 cells to cells.csv")
    checkout = subprocess.run([sys.executable, "-m", "sdc.cli", *args[:-1], "checkout.csv"], cwd=work,
                              capture_output=True, text=True)
    assert checkout.returncode == 0, checkout.stderr
    assert (work / "cells.csv").read_text() == (work / "checkout.csv").read_text()


def test_the_distribution_has_a_name_of_its_own(wheel):
    # "sdc" on the public package index is an unrelated project: pip install sdc would install its code
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "sdc-warehouse"
    (metadata,) = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA")]
    assert "\nName: sdc-warehouse\n" in zipfile.ZipFile(wheel).read(metadata).decode()


def test_pyproject_pins_the_dbt_versions_that_install_here():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    dependencies = set(project["dependencies"])
    # unpinned dbt-core (and ~=1.11) resolves to 1.12.x, whose install downloads a binary and fails
    assert {"dbt-core~=1.11.0", "dbt-duckdb~=1.11.0"} <= dependencies
    assert project["version"] == sdc.__version__
    assert project["license"] == {"text": "MIT"}
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"sdc {sdc.__version__}"


def _commands(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), helps.get(name), sub
                yield from _commands(sub, path + (name,))


def test_every_command_and_option_has_help():
    missing = []
    for path, help_text, sub in _commands(build_parser()):
        if not help_text:
            missing.append(" ".join(path))
        for action in sub._actions:
            if action.option_strings and action.dest != "help" and not action.help:
                missing.append(f"{' '.join(path)} {action.option_strings[0]}")
    assert missing == []
