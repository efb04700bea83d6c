"""The publication gate decides from the warehouse what a published relation reads (new-user trial D1, D2;
red team 5), and a release publishes one value per cell (D3, D5; red team 19). Each case published
unprotected or doubled numbers on main ba32997.

One dbt project holds every mistake as a tagged model; each test publishes with a manifest in which only its
own mistake (and a correct protected table) is tagged."""

from __future__ import annotations

import json

import os
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from sdc.cli import main
from sdc.errors import SdcError
from sdc.warehouse.loader import load_microdata
from sdc.release.publish import publish
from dbt_project_helper import dbt_in_process
from test_publish import PROFILES_YML, PROJECT_YML, REPO, Built, dbt, edited_manifest, rows

BASE = {
    "sources.yml": "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n      - name: persons\n",
    "audit/ckm_persons.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region']) }}\n",
    "protected/persons.sql": "{{ sdc.ckm_published(ref('ckm_persons')) }}\n",
}
# Each a way around the protection that a dbt user writes in good faith (D1, red team 5)
MISTAKES = {
    # a hard-coded name instead of source(): dbt sees no lineage (D1)
    "protected/raw_view.sql": "{{ config(materialized='view') }}\n"
                              "select region, count(*) as n from raw.persons group by region\n",
    # the originals of the audit relation, renamed, through a hard-coded name (D1)
    "protected/audit_view.sql": "{{ config(materialized='view') }}\n"
                                "select sex, region, original as n from main_audit.ckm_persons\n",
    # the error text's advice followed: the build record on a copy of the microdata (D1)
    "protected/raw_copy.sql": "{{ config(post_hook=\"{{ sdc.build_record() }}\") }}\n"
                              "select * exclude (rk) from raw.persons\n",
    # the protection step beside its own audit relation (red team 5)
    "protected/leak_join.sql": "with p as ({{ sdc.ckm_published(ref('ckm_persons')) }})\n"
                               "select p.sex, p.region, a.original as count\n"
                               "from p join {{ ref('ckm_persons') }} as a on p.sex = a.sex and p.region = a.region\n",
    # the step called for its side effect only (red team 5)
    "protected/set_only.sql": "{% set ignored = sdc.ckm_published(ref('ckm_persons')) %}\n"
                              "select sex, region, original as count from {{ ref('ckm_persons') }}\n",
    # a file read directly
    "protected/file_view.sql": "{{ config(materialized='view') }}\nselect * from read_csv('../persons.csv')\n",
}
# Allowed: what a BI team builds on protected relations only
ALLOWED = {
    "protected/persons_view.sql": "{{ config(materialized='view') }}\n{{ sdc.ckm_published(ref('ckm_persons')) }}\n",
    "protected/bi_view.sql": "{{ config(materialized='view') }}\n"
                             "select * from {{ ref('persons') }} where sex = 'm'\n",
    "protected/bi_table.sql": "{{ config(post_hook=\"{{ sdc.build_record() }}\") }}\n"
                              "-- the men's cells beside the women's\n"
                              "select m.region, m.count as men, w.count as women from {{ ref('persons') }} as m\n"
                              "join {{ ref('persons_view') }} as w on m.region = w.region and m.sex = 'm' and w.sex = 'w'\n",
}


def make(root: Path, models: dict[str, str], persons: str | None = None, seeds: dict[str, Path] | None = None,
         project_extra: str = "", build: bool = True) -> Built:
    """A dbt project using sdc as a package, on raw.persons (400 records: sex, region, income), built."""
    project = root / "project"
    (project / "seeds").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(PROJECT_YML + project_extra)
    (project / "profiles.yml").write_text(PROFILES_YML)
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    shutil.copy(REPO / "demo" / "seeds" / "sdc_ptable.csv", project / "seeds" / "sdc_ptable.csv")
    for name, path in (seeds or {}).items():
        shutil.copy(path, project / "seeds" / name)
    for name, text in models.items():
        (project / "models" / name).parent.mkdir(parents=True, exist_ok=True)
        (project / "models" / name).write_text(text)
    micro = root / "persons.csv"
    micro.write_text(persons or "id,sex,region,income\n" + "".join(
        f"{i},{'mw'[i % 2]},R{i % 5},{1000 + (i * 7919) % 5000}\n" for i in range(400)))
    db = root / "warehouse.duckdb"
    load_microdata(db, micro, "persons", id_column="id", key_mode="keyed", secret=b"gate test secret")
    built = Built(project, db, project / "target" / "manifest.json")
    dbt(built, "deps")
    if build:
        dbt(built, "build")
    return built


def dbt_result(built: Built, *args: str) -> subprocess.CompletedProcess:
    """A dbt command that may fail (dbt() asserts success)."""
    env = dict(os.environ, DBT_PROFILES_DIR=str(built.project), SDC_DUCKDB_PATH=str(built.db),
               DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    return dbt_in_process(list(args), built.project, env)


@pytest.fixture(scope="module")
def mistakes(tmp_path_factory) -> Built:
    built = make(tmp_path_factory.mktemp("gate"), {**BASE, **MISTAKES, **ALLOWED}, build=False)
    dbt(built, "build", "--exclude", "audit_view")  # dbt knows no order for a hard-coded name
    dbt(built, "build")
    return built


def only_tagged(built: Built, tmp: Path, names: list[str]) -> Path:
    every = [Path(p).stem for p in {**MISTAKES, **ALLOWED, "protected/persons.sql": ""}]
    return edited_manifest(built, tmp, untag=tuple(n for n in every if n not in names))


@pytest.mark.parametrize("model, message", [
    ("raw_view", "raw.persons is raw microdata; refusing to publish main_protected.raw_view "
                 r"\(model.pubtest.raw_view\) \(path: main_protected.raw_view \(model.pubtest.raw_view\) <- raw.persons\)"),
    ("audit_view", "main_audit.ckm_persons is an audit relation: ckm_count built it"),
    ("raw_copy", "raw.persons is raw microdata; refusing to publish main_protected.raw_copy"),
    ("leak_join", "main_audit.ckm_persons is an audit relation"),
    ("set_only", "main_audit.ckm_persons is an audit relation"),
    ("file_view", "reads the table function"),
])
def test_a_relation_that_reads_raw_or_audit_data_is_refused_whatever_dbt_declares(mistakes, tmp_path, model, message):
    manifest = only_tagged(mistakes, tmp_path, ["persons", model])
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match=message):
        publish(mistakes.db, out, manifest=manifest)
    assert not out.exists()


def test_protection_steps_are_published_and_relations_built_on_them_refused(mistakes, tmp_path):
    """The steps themselves (a table, a view) are published; a BI view or a join of protected tables of one's own is
    refused since red team R4-2 (what its SQL says is published, and SQL can carry numbers no step computed)."""
    manifest = only_tagged(mistakes, tmp_path, ["persons", "persons_view"])
    out = tmp_path / "pub.duckdb"
    assert publish(mistakes.db, out, manifest=manifest) == ["persons", "persons_view"]
    # the counts are the CKM's, not the originals
    assert rows(out, "select sum(count) from persons where sex = 'Total' and region = 'Total'") == \
        rows(mistakes.db, "select sum(count) from main_audit.ckm_persons where sex = 'Total' and region = 'Total'")
    for own in ("bi_view", "bi_table"):
        with pytest.raises(SdcError, match=rf"main_protected.{own} \(model.pubtest.{own}\) is a relation of one's own"):
            publish(mistakes.db, tmp_path / f"{own}.duckdb", manifest=only_tagged(mistakes, tmp_path, ["persons", own]))


def test_an_exposure_may_depend_on_published_relations_only(mistakes, tmp_path):
    """A dbt exposure is what a BI tool reads (issue 34): one on an audit relation is refused before anything is
    written; one on published relations is published as usual."""
    manifest_path = only_tagged(mistakes, tmp_path, ["persons"])
    manifest = json.loads(manifest_path.read_text())
    nodes = {n["name"]: k for k, n in manifest["nodes"].items()}
    dashboard = {"name": "persons_dashboard", "label": "Persons", "type": "dashboard", "resource_type": "exposure",
                 "depends_on": {"nodes": [nodes["persons"], nodes["ckm_persons"]], "macros": []}}
    manifest["exposures"] = {"exposure.pubtest.persons_dashboard": dashboard}
    manifest_path.write_text(json.dumps(manifest))
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match=r"exposure exposure.pubtest.persons_dashboard \(dashboard 'Persons'\) depends "
                                       r"on model.pubtest.ckm_persons, which is not tagged sdc_publish: a BI tool may "
                                       r"read published relations only"):
        publish(mistakes.db, out, manifest=manifest_path)
    assert not out.exists()
    dashboard["depends_on"]["nodes"] = [nodes["persons"]]
    manifest_path.write_text(json.dumps(manifest))
    assert publish(mistakes.db, out, manifest=manifest_path) == ["persons"]


def test_a_view_replaced_after_the_build_is_refused(mistakes, tmp_path):
    """A protection step's view whose SQL in the warehouse reads more than the step did."""
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(mistakes.db, copy)
    con = duckdb.connect(str(copy))
    comment = con.execute("select comment from duckdb_views() where view_name = 'persons_view'").fetchone()[0]
    con.execute("create or replace view main_protected.persons_view as select p.sex, p.region, a.original as count "
                "from main_protected.persons as p join main_audit.ckm_persons as a using (sex, region)")
    con.execute(f"comment on view main_protected.persons_view is '{comment}'")
    con.close()
    manifest = only_tagged(mistakes, tmp_path, ["persons", "persons_view"])
    with pytest.raises(SdcError, match="is a view whose SQL in the warehouse reads main_protected.persons beside what "
                                       "its step ckm_published read: the view was replaced after dbt built it"):
        publish(copy, tmp_path / "pub.duckdb", manifest=manifest)


# ------------------------------------------------------------------------------------------ ckm_published's input
def test_ckm_published_refuses_an_input_that_no_ckm_step_built(tmp_path):
    """D2 (ckm_published over a plain count(*)) and red team 5 (over a copy of the microdata): the build stops."""
    models = {
        **BASE,
        "audit/plain_counts.sql": "select sex, region, count(*) as count from {{ source('raw', 'persons') }} "
                                  "group by cube(sex, region)\n",
        "audit/persons_copy.sql": "select id, sex, region from {{ source('raw', 'persons') }}\n",
        "protected/plain.sql": "{{ sdc.ckm_published(ref('plain_counts')) }}\n",
        "protected/copy.sql": "{{ sdc.ckm_published(ref('persons_copy')) }}\n",
    }
    built = make(tmp_path, models, build=False)
    result = dbt_result(built, "build")
    assert result.returncode == 1
    for name in ("plain_counts", "persons_copy"):
        assert (f"ckm_published: \"warehouse\".\"main_audit\".\"{name}\" is not the output of ckm_count or ckm_sum "
                "(its build record names no sdc step" in result.stdout.replace("\n  ", " ")
                or f"\"main_audit\".\"{name}\" is not the output of ckm_count or ckm_sum (it has no build record)"
                in result.stdout.replace("\n  ", " ")), result.stdout[-3000:]
    con = duckdb.connect(str(built.db), read_only=True)
    made = {r[0] for r in con.execute("select table_name from duckdb_tables() where schema_name = 'main_protected'").fetchall()}
    con.close()
    assert made == {"persons"}  # neither wrong model was built


def test_ckm_published_refuses_a_ckm_table_changed_after_its_build(mistakes, tmp_path):
    copy_root = tmp_path / "copy"
    shutil.copytree(mistakes.project.parent, copy_root, ignore=shutil.ignore_patterns("dbt_packages", "target", "logs"))
    built = Built(copy_root / "project", copy_root / "warehouse.duckdb", copy_root / "project" / "target" / "manifest.json")
    con = duckdb.connect(str(built.db))
    changed = con.execute("update main_audit.ckm_persons set count = original where noise <> 0").fetchone()[0]
    con.close()
    assert changed > 0
    dbt(built, "deps")
    result = dbt_result(built, "run", "--select", "persons")
    assert result.returncode == 1
    assert f"{changed} cell(s) have a count other than original + noise" in result.stdout.replace("\n  ", " ")


# ------------------------------------------------------------------------------------------ one value per cell
TWO_TABLES = {
    **BASE,
    "audit/ckm_by_sex.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex']) }}\n",
    "protected/by_sex.sql": "{{ sdc.ckm_published(ref('ckm_by_sex')) }}\n",
}


def test_tables_built_with_two_ptables_are_refused(tmp_path, capsys):
    """D5: a new ptable seed and `dbt run` of one model: the margin sex = m is published with two noisy values."""
    built = make(tmp_path, TWO_TABLES)
    out = tmp_path / "pub.duckdb"
    assert publish(built.db, out, project_dir=built.project) == ["by_sex", "persons"]
    (built.project / "seeds" / "sdc_ptable.csv").unlink()  # the project's seed, which sdc ptable did not write
    assert main(["ptable", "--D", "3", "--V", "2", "--js", "1", "--out", str(built.project / "seeds" / "sdc_ptable.csv")]) == 0
    dbt(built, "seed")
    dbt(built, "run", "--select", "ckm_by_sex", "by_sex")
    two = rows(built.db, "select a.count, b.count from main_protected.by_sex as a join main_protected.persons as b "
                         "using (sex) where b.region = 'Total'")
    assert any(x != y for x, y in two)  # the case: one cell, two published values
    capsys.readouterr()
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sdc publish: error: the release mixes two count ptable: ")
    assert "main_audit.ckm_by_sex" in err and "main_audit.ckm_persons" in err
    dbt(built, "build")  # every table with the new ptable: one value per cell again
    # the new ptable changes cells whose records did not: meant here, and recorded in the ledger (a second draw of
    # every unchanged count, which the averaging audit over the releases counts: under a floor it allows)
    assert publish(built.db, out, project_dir=built.project, accept_parameter_change=True,
                   min_standard_error=0.5) == ["by_sex", "persons"]


def test_the_duplicate_cell_guard_covers_magnitude_measures(tmp_path):
    """Red team 19: a union of two magnitude tables of the same cells was published, value taken for a dimension."""
    from test_publish import hand_made

    for measure in ("value", "weighted_value", "weighted_count", "mean_value"):
        case = tmp_path / measure
        case.mkdir()
        db, manifest = hand_made(case, {"both": f"select * from (values ('WA', 'w', 9709177.35), ('WA', 'w', 9954808.81)) "
                                                f"t(state, sex, {measure})"})
        with pytest.raises(SdcError, match=r"holds the cell \(state='WA', sex='w'\) 2 times"):
            publish(db, case / "pub.duckdb", manifest=manifest)


SUPPRESSION_AND_CKM = {
    **BASE,
    "audit/supp_cells.sql": "{{ sdc.suppression_cells(source('raw', 'persons'), dims=['sex', 'region']) }}\n",
    "audit/supp_primary.sql": "{{ sdc.suppression_primary(ref('supp_cells'), ['freq:3']) }}\n",
    "audit/supp_relations.sql": "{{ sdc.suppression_constraints(ref('supp_cells'), ['sex', 'region']) }}\n",
    "audit/supp_pattern.py": (
        "def model(dbt, session):\n"
        "    from sdc.suppression.warehouse import suppression_pattern\n\n"
        "    return suppression_pattern(session, dbt.ref('supp_primary'), dbt.ref('supp_relations'),\n"
        "                                 dims=['sex', 'region'], method='heuristic', cost='freq')\n"),
    "protected/persons_suppressed.sql": "{{ sdc.suppression_published(ref('supp_pattern'), ['sex', 'region'], value='freq') }}\n",
}


def test_one_population_published_by_the_ckm_and_by_suppression_is_refused(tmp_path, capsys):
    """D3: the suppression table shows the true value of every cell the CKM table perturbs (and the CKM a value for
    the cells suppression hides)."""
    persons = "id,sex,region\n" + "".join(f"{i},{'mw'[i % 2]},R{9 if i in (0, 3, 200) else i % 5}\n" for i in range(400))
    built = make(tmp_path, SUPPRESSION_AND_CKM, persons=persons)
    suppressed = rows(built.db, "select count(*) from main_protected.persons_suppressed where freq is null")[0][0]
    assert suppressed > 0
    out = tmp_path / "pub.duckdb"
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    # the release audit's check, cell by cell (python/sdc/release/audit.py)
    assert re.fullmatch(
        r"sdc publish: error: main_protected.persons \(Cell Key Method\) and main_protected.persons_suppressed \(cell "
        r"suppression\) both publish the cell \(sex='\w+', region='\w+'\) of raw.persons, and their populations are "
        r"nearly the same \(grand totals 400 and 400\): the suppression table shows the value the CKM perturbs \(its "
        r"noise revealed\) or the CKM a value for a cell suppression hides. One method per population and variable in "
        r"a release: take one of the tables out of the sdc_publish tag\n", capsys.readouterr().err)
    assert not out.exists()
    # either one alone is published
    for keep, drop in (("persons", "persons_suppressed"), ("persons_suppressed", "persons")):
        manifest = edited_manifest(built, tmp_path, untag=(drop,))
        assert publish(built.db, out, manifest=manifest) == [keep]


MAGNITUDE_VARS = """
vars:
  sdc_magnitude_params:
    preset: tauargus
    type: top_contr
    top_k: 3
    multiplier: {type: flex, fp: 500, p: [0.25, 0.05], epsilon: [1, 0.5, 0.2], q: 3}
    mu_c: 1
    sensitive: ["p:10", "nk:2,85"]
    separation: true
"""
NUMS_SEED_TYPES = ("    sdc_nums_ptable:\n      +column_types: {i: integer, j: \"decimal(9,4)\", p: \"decimal(9,8)\", "
                   "v: \"decimal(9,4)\", p_int_lb: \"decimal(9,8)\", p_int_ub: \"decimal(9,8)\", type: varchar}\n")
MAGNITUDES = {
    **BASE,
    "audit/ckm_income.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['sex', 'region'], value='income') }}\n",
    "protected/income.sql": "{{ sdc.ckm_published(ref('ckm_income')) }}\n",
    "protected/mean_income.sql": "{{ sdc.ckm_mean(ref('income'), ref('persons'), ['sex', 'region']) }}\n",
    # the same sums with other parameters (red team 19): every cell a second noisy value
    "audit/ckm_income_b.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['sex', 'region'], value='income', "
                              "params={'preset': 'tauargus', 'top_k': 2, 'multiplier': {'type': 'simple', 'p': 0.1, 'epsilon': [1, 0.5]}}) }}\n",
    "protected/income_b.sql": "{{ sdc.ckm_published(ref('ckm_income_b')) }}\n",
}


def test_magnitude_tables_and_means_are_published_and_two_parameter_sets_are_refused(tmp_path):
    """ckm_mean over published sums and counts is a protection step; sums of one cell under two sets of magnitude
    parameters (red team 19) are refused, each set alone is published."""
    built = make(tmp_path, MAGNITUDES, seeds={"sdc_nums_ptable.csv": REPO / "demo" / "seeds" / "sdc_nums_ptable.csv"},
                 build=False)
    project_file = built.project / "dbt_project.yml"
    project_file.write_text(project_file.read_text().replace("seeds:\n  pubtest:\n", "seeds:\n  pubtest:\n" + NUMS_SEED_TYPES)
                            + MAGNITUDE_VARS)
    dbt(built, "build")
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match="^the release mixes two magnitude parameters: main_audit.ckm_income and "
                                       "main_audit.ckm_income_b were built with different ones"):
        publish(built.db, out, project_dir=built.project)
    manifest = edited_manifest(built, tmp_path, untag=("income_b",))
    assert publish(built.db, out, manifest=manifest) == ["income", "mean_income", "persons"]
    means = rows(out, "select m.mean_value, i.value / p.count from mean_income as m join income as i using (sex, region) "
                      "join persons as p using (sex, region) where p.count > 0")
    assert means and all(abs(a - b) < 1e-9 * abs(b) for a, b in means)


def test_grant_published_as_an_operation_on_duckdb_says_that_nothing_is_granted(tmp_path):
    """New-user N8 on DuckDB: `dbt run-operation grant_published` exited 0 having granted nothing. DuckDB has no
    GRANT: as an operation it stops with one line pointing to sdc publish (in a hook it stays a no-op)."""
    from dbt_project_helper import ScratchProject

    project = ScratchProject(tmp_path / "project")
    result = project.dbt("run-operation", "grant_published", "--args", "{roles: [bi_reader]}")
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0
    assert "grant_published: duckdb has no GRANT, so nothing is granted; publish with sdc publish instead" in out, \
        out[-2000:]
