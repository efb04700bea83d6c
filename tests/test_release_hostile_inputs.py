"""Hostile inputs to the release: bad input gets a clear error that names the problem (the option, argument,
file or relation and its value) and changes nothing (no half-written publication, audit file or table).

* ``sdc publish --audit-json FILE`` where FILE is no file of its own: a folder, in a missing folder, the
  publication, the warehouse, the manifest, a symbolic link, a file of the Parquet folder, a folder that cannot be
  written, a disk that fills while the audit is written. Each is refused with exit 2 and one line naming FILE,
  and the earlier publication stays byte for byte (and inode) as it was;
* ``ckm_sum(zero_with_counts=...)`` given no relation, a relation that is no ptable, the magnitude ptable, or a
  count ptable other than the one ckm_count uses in the same release;
* ``verify_published`` on DuckDB, and relation names with a quote, a space and capitals through sdc publish and
  verify_published.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import sdc.files
from sdc.cli import main
from sdc.conventions import PARQUET_MARKER_FILE, PTABLE_SEED_COLUMN_TYPES
from sdc.errors import SdcError
from sdc.release.publish import publish
from test_faults import _lock, _Os, one_line, publication_inputs
from test_publication_gate import BASE, MAGNITUDE_VARS, NUMS_SEED_TYPES, dbt_result, make
from test_publish import REPO, dbt, edited_manifest, rows
from test_release_verification import LONE


# ------------------------------------------------------------------------------------------ sdc publish --audit-json
def state(folder: Path) -> dict:
    """Everything under ``folder``: a file's bytes and inode, a link's target, a folder as such."""
    found = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            found[key] = ("link", os.readlink(path))
        elif path.is_dir():
            found[key] = ("folder",)
        else:
            found[key] = (path.read_bytes(), path.stat().st_ino)
    return found


@pytest.fixture
def release(tmp_path, capsys):
    """A warehouse with one table to publish, and its publication pub.duckdb, written by sdc publish."""
    db, manifest = publication_inputs(tmp_path)
    out = tmp_path / "pub.duckdb"
    args = ["publish", "--db", str(db), "--manifest", str(manifest), "--out", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    return {"db": db, "manifest": manifest, "out": out, "args": args}


# each: (tmp, release) -> (the --audit-json path, more arguments, the error line it must give), its files made
AUDIT_JSON_CASES = {}


def case(name):
    def register(make):
        AUDIT_JSON_CASES[name] = make
        return make
    return register


def _link(tmp: Path, target: Path) -> Path:
    (tmp / "audit.json").symlink_to(target)
    return tmp / "audit.json"


def _link_refused(tmp: Path, target: Path) -> tuple:
    return (_link(tmp, target), [], f"--audit-json {tmp / 'audit.json'} is a symbolic link (to {target}); give the "
                                    "path of a file of its own")


def _in_parquet(tmp: Path, name: str | None) -> tuple:
    folder = tmp / "parquet"
    if name is not None:  # a folder sdc publish wrote before
        folder.mkdir()
    audit = folder / name if name is not None else folder
    return (audit, ["--parquet", str(folder)],
            f"--audit-json {audit} is the Parquet folder --parquet {folder} or a file sdc publish writes there: "
            "give another file")


@case("a folder")
def _(tmp, r):
    (tmp / "audit.json").mkdir()
    (tmp / "audit.json" / "kept.txt").write_text("kept\n")
    return tmp / "audit.json", [], f"cannot write {tmp / 'audit.json'}: it is a folder; give a file name"


@case("in a missing folder")
def _(tmp, r):
    audit = tmp / "missing" / "audit.json"
    return audit, [], f"cannot write {audit}: folder {audit.parent} does not exist"


@case("the publication")
def _(tmp, r):
    return r["out"], [], f"--audit-json {r['out']} is the publication (--out {r['out']}): give two files"


@case("the publication by another path")
def _(tmp, r):
    (tmp / "sub").mkdir()
    audit = tmp / "sub" / ".." / "pub.duckdb"
    return audit, [], f"--audit-json {audit} is the publication (--out {r['out']}): give two files"


@case("the warehouse")
def _(tmp, r):
    return r["db"], [], (f"--audit-json {r['db']} is the input file {r['db']}: give another file (sdc never writes "
                         "over what it reads)")


@case("the manifest")
def _(tmp, r):
    return r["manifest"], [], (f"--audit-json {r['manifest']} is the input file {r['manifest']}: give another file "
                               "(sdc never writes over what it reads)")


@case("a link to a file of one's own")
def _(tmp, r):
    (tmp / "notes.txt").write_text("mine\n")
    return _link_refused(tmp, tmp / "notes.txt")


@case("a link to an empty file of one's own")
def _(tmp, r):
    (tmp / "notes.txt").write_text("")
    return _link_refused(tmp, tmp / "notes.txt")


@case("a link to nowhere")
def _(tmp, r):
    return _link_refused(tmp, tmp / "gone.json")


@case("a link to the warehouse")
def _(tmp, r):
    return _link_refused(tmp, r["db"])


@case("the new Parquet folder")
def _(tmp, r):
    return _in_parquet(tmp, None)


@case("a table's file in the Parquet folder")
def _(tmp, r):
    return _in_parquet(tmp, "counts.parquet")


@case("the Parquet folder's marker")
def _(tmp, r):
    return _in_parquet(tmp, PARQUET_MARKER_FILE)


@pytest.mark.parametrize("case", AUDIT_JSON_CASES)
def test_an_audit_json_that_is_no_file_of_its_own_is_refused_and_nothing_is_written(case, release, tmp_path, capsys):
    """Before any work: exit 2, one line naming the file and what is wrong with it, and the earlier publication,
    the files given and every other file as they were (no Parquet folder made, no audit written)."""
    audit, more, message = AUDIT_JSON_CASES[case](tmp_path, release)
    before = state(tmp_path)
    assert main(release["args"] + more + ["--audit-json", str(audit)]) == 2
    printed = capsys.readouterr()
    assert one_line(printed.err, "publish") == message
    assert printed.out == ""  # nothing published, nothing printed
    assert state(tmp_path) == before


def test_an_audit_json_in_a_folder_that_cannot_be_written_is_refused_and_nothing_is_written(release, tmp_path, capsys):
    folder = tmp_path / "locked"
    folder.mkdir()
    before = state(tmp_path)
    unlock = _lock(folder)
    try:
        assert main(release["args"] + ["--audit-json", str(folder / "audit.json")]) == 2
        printed = capsys.readouterr()
        assert one_line(printed.err, "publish").startswith(
            f"cannot write {folder / 'audit.json'}: folder {folder} cannot be written (")
        assert printed.out == ""
    finally:
        unlock()
    assert state(tmp_path) == before


def test_a_full_disk_while_the_audit_json_is_written_leaves_the_earlier_publication_and_audit(
        release, tmp_path, monkeypatch, capsys):
    """The audit file is written before the publication is renamed into place: a write that fails leaves the
    earlier publication and the earlier audit file (same bytes, same inode) and no temporary file."""
    audit = tmp_path / "audit.json"
    assert main(release["args"] + ["--audit-json", str(audit)]) == 0
    assert json.loads(audit.read_text())["verified"] == ["protected.counts"]
    capsys.readouterr()
    before = state(tmp_path)
    monkeypatch.setattr(sdc.files, "os", _Os())
    assert main(release["args"] + ["--audit-json", str(audit)]) == 2
    printed = capsys.readouterr()
    assert one_line(printed.err, "publish") == f"cannot write {audit}: no space left on device"
    assert printed.out == ""
    assert state(tmp_path) == before


# ------------------------------------------------------------------------------------------ ckm_sum(zero_with_counts=)
ZERO_WITH_OTHER_PTABLE = {
    **BASE,
    "audit/ckm_income.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['sex', 'region'], value='income', "
                            "zero_with_counts=ref('sdc_ptable_other')) }}\n",
    "protected/income.sql": "{{ sdc.ckm_published(ref('ckm_income')) }}\n",
}


@pytest.fixture(scope="module")
def zeros(tmp_path_factory):
    """raw.persons with eight one-person regions (false zeros), the count table over the demo ptable and a
    magnitude table whose zero_with_counts= names another count ptable (D = 4, V = 2, js = 1); both built."""
    root = tmp_path_factory.mktemp("zeros")
    other = root / "sdc_ptable_other.csv"
    assert main(["ptable", "--D", "4", "--V", "2", "--js", "1", "--pstay", "0.5", "--out", str(other)]) == 0
    built = make(root, ZERO_WITH_OTHER_PTABLE, persons=LONE, build=False,
                 seeds={"sdc_nums_ptable.csv": REPO / "demo" / "seeds" / "sdc_nums_ptable.csv",
                        "sdc_ptable_other.csv": other})
    types = ", ".join(f"{k}: {v!r}" for k, v in PTABLE_SEED_COLUMN_TYPES.items())
    project_file = built.project / "dbt_project.yml"
    project_file.write_text(project_file.read_text().replace(
        "seeds:\n  pubtest:\n", f"seeds:\n  pubtest:\n{NUMS_SEED_TYPES}    sdc_ptable_other:\n      +column_types: "
                               f"{{{types}}}\n") + MAGNITUDE_VARS)
    dbt(built, "build")
    return built


def dbt_output(built, *args) -> tuple[int, str]:
    result = dbt_result(built, *args)
    return result.returncode, re.sub(r"\s+", " ", result.stdout)


@pytest.mark.parametrize("given, message", [
    ("source('raw', 'persons')", r"ckm_sum: zero_with_counts=\S*persons\S* is not a count ptable: it has no column i, "
                                 r"v, p_int_lb, p_int_ub \(a count ptable has i, v, p_int_lb and p_int_ub\); give the "
                                 r"count ptable that ckm_count uses, e.g. zero_with_counts=ref\('sdc_ptable'\)"),
    ("ref('ckm_persons')", r"ckm_sum: zero_with_counts=\S*ckm_persons\S* is not a count ptable: it has no column i, v, "
                           r"p_int_lb, p_int_ub"),
    ("ref('sdc_nums_ptable')", r"ckm_sum: zero_with_counts=\S*sdc_nums_ptable\S* is a magnitude ptable \(it has the "
                               r"column type\); give the count ptable that ckm_count uses"),
    ("'sdc_ptable'", r"ckm_sum: zero_with_counts= takes the count ptable as a relation, e.g. "
                     r"zero_with_counts=ref\('sdc_ptable'\), so that dbt builds it first; got the text 'sdc_ptable'"),
    ("true", r"ckm_sum: zero_with_counts= takes the count ptable as a relation, e.g. zero_with_counts=ref\('sdc_ptable'\), "
             r"so that dbt builds it first; got True"),
])
def test_zero_with_counts_that_is_no_count_ptable_stops_naming_the_argument_and_the_value(zeros, given, message):
    returncode, out = dbt_output(zeros, "compile", "--inline", "{{ sdc.ckm_sum(source('raw', 'persons'), "
                                 f"dims=['sex', 'region'], value='income', zero_with_counts={given}) }}}}")
    assert returncode != 0 and re.search(message, out), out[-3000:]


def test_a_model_with_zero_with_counts_that_is_no_count_ptable_builds_no_table(zeros):
    """dbt build stops at the model, before its table: the table built before stays as it was."""
    model = zeros.project / "models" / "audit" / "ckm_income.sql"
    good = model.read_text()
    before = rows(zeros.db, "select * from main_audit.ckm_income order by all")
    model.write_text(good.replace("ref('sdc_ptable_other')", "ref('sdc_nums_ptable')"))
    try:
        returncode, out = dbt_output(zeros, "build", "--select", "ckm_income")
    finally:
        model.write_text(good)
    assert returncode != 0 and "ckm_sum: zero_with_counts=" in out and "is a magnitude ptable" in out, out[-3000:]
    assert rows(zeros.db, "select * from main_audit.ckm_income order by all") == before


def test_zero_with_counts_over_another_ptable_than_ckm_counts_is_refused_naming_both(zeros, tmp_path):
    """The magnitudes are 0 where the other ptable's count is 0, not where the published count table's is: the
    release's zeros disagree. sdc publish refuses it before any work, naming both tables and both ptables; each
    table alone is published."""
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match=r"main_audit.ckm_income was built with ckm_sum\(zero_with_counts="
                                       r"main.sdc_ptable_other\), but main_audit.ckm_persons counts with the ptable "
                                       r"main.sdc_ptable, whose rows differ: the magnitudes published as 0 are not "
                                       r"those of the cells whose count is published as 0"):
        publish(zeros.db, out, manifest=edited_manifest(zeros, tmp_path))
    assert not out.exists()
    assert publish(zeros.db, out, manifest=edited_manifest(zeros, tmp_path, untag=("persons",))) == ["income"]


# ------------------------------------------------------------------------------------------ names, verify_published
def tagged_by_var(name: str, extra: str = "") -> str:
    """A model's config: tagged sdc_publish when the dbt var publish_<name> is true (its folder tags nothing)."""
    return f"{{{{ config(tags=(['sdc_publish'] if var('publish_{name}', false) else []){extra}) }}}}\n"


ODD_NAMES = {
    **BASE,
    "audit/ckm_odd.sql": "{{ config(alias=\"CKM O'Brien\", schema='Audit Hara') }}\n"
                         "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region']) }}\n",
    "other/odd.sql": tagged_by_var("odd", ", alias=\"Persons O'Brien\", schema='Pub Lic'")
                     + "{{ sdc.ckm_published(ref('ckm_odd')) }}\n",
    "other/odd_view.sql": tagged_by_var("odd_view", ", alias=\"View O'Brien\", schema='protected', materialized='view'")
                          + "select * from {{ ref('odd') }} where sex = 'm'\n",
    # a protection step whose table a post-hook sets to the originals
    "other/rewritten.sql": tagged_by_var("rewritten", ", alias=\"Rewritten O'Brien\", schema='protected', post_hook=\"update {{ this }} as p "
                                         "set count = a.original from {{ ref('ckm_odd') }} as a where a.region = "
                                         "p.region and a.sex = p.sex\"")
                           + "{{ sdc.ckm_published(ref('ckm_odd')) }}\n",
}
ODD = ("odd", "odd_view", "rewritten")


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    """Relations whose names hold a quote, a space and capitals (dbt-duckdb itself stops at a quote in a schema
    name), none of them tagged unless a dbt var says so."""
    return make(tmp_path_factory.mktemp("odd"), ODD_NAMES)


def tagging(*names: str) -> list[str]:
    return ["--vars", json.dumps({f"publish_{n}": True for n in names})]


def test_names_with_a_quote_a_space_and_capitals_are_published_verified_and_audited(odd, tmp_path, capsys):
    out, audit = tmp_path / "pub.duckdb", tmp_path / "audit.json"
    manifest = edited_manifest(odd, tmp_path, tag=("odd",), untag=("persons",))
    assert main(["publish", "--db", str(odd.db), "--manifest", str(manifest), "--out", str(out),
                 "--audit-json", str(audit)]) == 0
    printed = capsys.readouterr().out
    assert "  main_Pub Lic.Persons O'Brien (ckm counts): 18 cells, " in printed, printed
    assert rows(out, "select name, relation from sdc_publication.relations order by 1") == [
        ("Persons O'Brien", "warehouse.main_Pub Lic.Persons O'Brien")]
    assert rows(out, 'select * from "Persons O\'Brien" order by all') == \
        rows(odd.db, 'select * from "main_Pub Lic"."Persons O\'Brien" order by all')
    assert json.loads(audit.read_text())["verified"] == ["main_Pub Lic.Persons O'Brien"]
    # a view of one's own over it, with such a name, is refused naming it (red team R4-2)
    manifest = edited_manifest(odd, tmp_path, tag=("odd", "odd_view"), untag=("persons",))
    assert main(["publish", "--db", str(odd.db), "--manifest", str(manifest), "--out", str(out)]) == 2
    assert one_line(capsys.readouterr().err, "publish").startswith(
        "main_protected.View O'Brien (model.pubtest.odd_view) is a relation of one's own")


def test_a_rewritten_relation_with_such_a_name_is_refused_naming_it_and_the_cell(odd, tmp_path, capsys):
    out = tmp_path / "pub.duckdb"
    manifest = edited_manifest(odd, tmp_path, tag=("rewritten",), untag=("persons",))
    assert main(["publish", "--db", str(odd.db), "--manifest", str(manifest), "--out", str(out)]) == 2
    assert re.fullmatch(r"main_protected.Rewritten O'Brien \(model.pubtest.rewritten\) differs from ckm_count over "
                        r"raw.persons \(recomputed from the microdata\) in the cell \(sex='\w+', region='\w+'\): count is "
                        r"\d+ there and \d+ in sdc's recomputation; .*; refusing to publish main_protected.Rewritten "
                        r"O'Brien \(model.pubtest.rewritten\)(\s\(path: .*\))?",
                        one_line(capsys.readouterr().err, "publish"))
    assert not out.exists()


def test_verify_published_on_duckdb_with_such_names_refuses_naming_them_and_grants_nothing(odd):
    code, out = dbt_output(odd, "run-operation", "verify_published", *tagging(*ODD))
    assert code != 0
    assert re.search(r"verify_published: \"warehouse\".\"main_protected\".\"Rewritten O'Brien\" differs from ckm_count "
                     r"over \"warehouse\".\"raw\".\"persons\" \(recomputed from the microdata\) in the cell "
                     r"\(sex=\w+, region=\w+\): count \d+ there, \d+ in sdc's recomputation; .*; refusing "
                     r"\"warehouse\".\"main_protected\".\"Rewritten O'Brien\"", out), out[-3000:]
    assert "refusing to grant" not in out
    code, out = dbt_output(odd, "run-operation", "verify_published", *tagging("odd_view"))
    assert code != 0
    assert re.search(r"verify_published: \"warehouse\".\"main_protected\".\"View O'Brien\" is no protection step \(.*\); "
                     r"readers get protection steps only \(a relation of one's own publishes what its SQL says, red "
                     r"team R4-2\); refusing \"warehouse\".\"main_protected\".\"View O'Brien\"",
                     out), out[-3000:]


def test_verify_published_on_duckdb_says_what_it_verified_what_it_found_no_relation_of_and_what_it_leaves_out(odd):
    """Not silent where there is nothing to verify, and on DuckDB not taken for sdc publish's check of the release."""
    unbuilt = odd.project / "models" / "other" / "unbuilt.sql"
    unbuilt.write_text(tagged_by_var("unbuilt") + "{{ sdc.ckm_published(ref('ckm_odd')) }}\n")
    try:
        code, out = dbt_output(odd, "run-operation", "verify_published", *tagging("odd", "unbuilt"))
    finally:
        unbuilt.unlink()
    assert code == 0, out[-3000:]
    found = re.search(r"verify_published: 2 relation\(s\) hold what sdc computes from the microdata for their steps: "
                      r"(.*); 1 tagged node\(s\) have no relation in the database \(not built, nothing verified\): "
                      r"model.pubtest.unbuilt", out)
    assert found and sorted(found.group(1).split(", ")) == [
        "\"warehouse\".\"main_Pub Lic\".\"Persons O'Brien\"", "\"warehouse\".\"main_protected\".\"persons\""], out[-3000:]
    assert ("verify_published: on DuckDB publish with sdc publish, which audits the release as a whole (published "
            "zeros, two methods over one population, linked suppression, averaging CKM noise); this operation does "
            "not") in out
    project = odd.project / "dbt_project.yml"
    text = project.read_text()
    project.write_text(text.replace('+tags: ["sdc_publish"]', "+tags: []"))
    try:
        code, out = dbt_output(odd, "run-operation", "verify_published")
    finally:
        project.write_text(text)
    assert code == 0 and "verify_published: no node of the project is tagged sdc_publish; nothing verified" in out, \
        out[-3000:]
