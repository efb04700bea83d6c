"""sdc as a dbt package in somebody else's project, as a statistical office would add it: its own
microdata (a census-like extract), its own perturbation table and geography hierarchy, dbt's default schema
naming, no vars copied. The package builds nothing of its own there, and the published numbers equal those
of `sdc ckm` on the same input."""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from sdc.cli import main
from sdc.warehouse.loader import load_microdata

from conftest import query

REPO = Path(__file__).parent.parent
DBT = Path(sys.executable).parent / "dbt"

# state -> division -> region -> US: a balanced hierarchy of three levels below the root
GEOGRAPHY = {
    "Northeast": {"New England": ["CT", "MA", "ME"], "Middle Atlantic": ["NJ", "NY", "PA"]},
    "South": {"South Atlantic": ["FL", "GA"], "West South Central": ["OK", "TX"]},
    "West": {"Pacific": ["CA", "OR", "WA"]},
}

PROJECT_FILES = {
    "dbt_project.yml": """\
name: census
version: "1.0.0"
config-version: 2
profile: census
models:
  census:
    audit:
      +schema: audit
      +materialized: table
    protected:
      +schema: protected
      +materialized: view
      +tags: ["sdc_publish"]
""",
    "profiles.yml": """\
census:
  target: dev
  outputs:
    dev:
      type: duckdb
      path: "{{ env_var('CENSUS_DB') }}"
      threads: 2
""",
    "models/sources.yml": """\
version: 2
sources:
  - name: raw
    schema: raw
    tables:
      - name: persons
""",
    "models/audit/ckm_persons_by_state_sex.sql":
        "{{ sdc.ckm_count(source('raw', 'persons'), dims=['state', 'sex'], hierarchy=ref('geography')) }}\n",
    "models/protected/persons_by_state_sex.sql": "{{ sdc.ckm_published(ref('ckm_persons_by_state_sex')) }}\n",
    "models/schema.yml": """\
version: 2
models:
  - name: ckm_persons_by_state_sex
    data_tests: [sdc.sdc_ckm_invariants]
""",
    "seeds/schema.yml": """\
version: 2
seeds:
  - name: sdc_ptable
    data_tests: [sdc.sdc_ptable_valid]
""",
}


def write_project(root: Path, repo: Path = REPO) -> None:
    for name, text in PROJECT_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "packages.yml").write_text(f"packages:\n  - local: {repo}\n")
    rows = ["dimension,code,parent", "state,US,"]
    for region, divisions in GEOGRAPHY.items():
        rows.append(f"state,{region},US")
        for division, states in divisions.items():
            rows.append(f"state,{division},{region}")
            rows += [f"state,{s},{division}" for s in states]
    (root / "seeds" / "geography.csv").write_text("\n".join(rows) + "\n")


def dbt(root: Path, db: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DBT_PROFILES_DIR=str(root), CENSUS_DB=str(db), DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    return subprocess.run([str(DBT), *args], cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def census(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("census")
    root = tmp / "census"
    write_project(root)
    # the office's own perturbation table, made with the CLI (D = 3, V = 2, no ones)
    assert main(["ptable", "--D", "3", "--V", "2", "--js", "1", "--out", str(root / "seeds" / "sdc_ptable.csv")]) == 0
    rng = np.random.default_rng(1)
    states = [s for divisions in GEOGRAPHY.values() for d in divisions.values() for s in d]
    weights = rng.dirichlet(np.ones(len(states)) * 0.7)
    persons = tmp / "persons.csv"
    with persons.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["person_id", "state", "sex", "age"])
        for k, (state, sex) in enumerate(zip(rng.choice(states, 29_501, p=weights), rng.choice(["1", "2"], 29_501))):
            writer.writerow([100_000 + k, state, sex, int(rng.integers(0, 95))])
    db = tmp / "census.duckdb"
    load_microdata(db, persons, "persons", id_column="person_id")
    deps = dbt(root, db, "deps")
    assert deps.returncode == 0, deps.stdout[-2000:]
    build = dbt(root, db, "build")
    assert build.returncode == 0, build.stdout[-4000:]
    return tmp, root, db, build.stdout



def test_the_package_builds_nothing_of_its_own(census):
    _, root, db, stdout = census
    listed = dbt(root, db, "ls", "--resource-type", "model", "seed", "test", "unit_test", "--quiet")
    assert listed.returncode == 0, listed.stdout[-2000:]
    nodes = listed.stdout.split()
    assert len(nodes) == 6 and all(node.startswith("census.") for node in nodes), nodes
    assert "PASS=7" in stdout  # 2 seeds, 2 models, the package's two data tests and its on-run-start hook: nothing of sdc's demo


def test_default_schema_naming(census):
    """The project sets no vars (PROJECT_FILES): that it built at all shows the package needs none."""
    _, _, db, _ = census
    schemas = {s for (s,) in query(db, "select distinct table_schema from information_schema.tables")}
    assert {"main_audit", "main_protected", "raw"} <= schemas
    kinds = dict(query(db, "select table_name, table_type from information_schema.tables where table_schema = 'main_protected'"))
    assert kinds == {"persons_by_state_sex": "VIEW"}


def test_published_numbers_equal_sdc_ckm_on_the_same_input(census, tmp_path):
    tmp, root, db, _ = census
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute(f"copy (select person_id, state, sex, rk as rkey from raw.persons) to '{tmp_path / 'keyed.csv'}' (header)")
    finally:
        con.close()
    assert main(["ckm", "--input", str(tmp_path / "keyed.csv"), "--dims", "state,sex",
                 "--hierarchy", str(root / "seeds" / "geography.csv"), "--record-key", "rkey", "--key-digits", "8",
                 "--ptable", str(root / "seeds" / "sdc_ptable.csv"), "--out", str(tmp_path / "cells.csv")]) == 0
    with (tmp_path / "cells.csv").open(newline="") as handle:
        cli = sorted((r["state"], r["sex"], int(r["count"])) for r in csv.DictReader(handle))
    published = sorted(query(db, 'select state, sex, "count" from main_protected.persons_by_state_sex'))
    # 3 regions + 5 divisions + 13 states + US, by 2 sexes and the total
    assert len(published) == 22 * 3
    assert published == cli
    audit = dict(((s, x), (o, c)) for s, x, o, c in query(db, 'select state, sex, original, "count" from main_audit.ckm_persons_by_state_sex'))
    assert audit[("US", "Total")][0] == 29_501
    assert sum(o != c for o, c in audit.values()) > 0  # the ptable perturbs


def test_without_its_own_ptable_the_project_does_not_build(census, tmp_path):
    """The package ships no ptable that could stand in for the office's own."""
    _, root, db, _ = census
    other = tmp_path / "census"
    shutil.copytree(root, other, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    (other / "seeds" / "sdc_ptable.csv").unlink()
    (other / "seeds" / "schema.yml").unlink()
    assert dbt(other, tmp_path / "x.duckdb", "deps").returncode == 0
    result = dbt(other, tmp_path / "x.duckdb", "build")
    assert result.returncode != 0
    assert "depends on a node named 'sdc_ptable' which was not found" in " ".join(result.stdout.split())
