"""The demo warehouse built from scratch: generate -> load -> dbt build -> publish, as `make demo` does."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from sdc.cli import main
from sdc.conventions import DIMENSION_COLUMN_DOCS, DIMENSION_COLUMN_SUFFIXES, PUBLISHED_COLUMN_DOCS
from sdc.demo import FACTS_CONFIG, write_enterprises, write_students
from sdc.errors import SdcError
from sdc.warehouse.loader import load_microdata, read_facts_config
from sdc.release.publish import publish
from sdc.suppression.pipeline import interval_text

from conftest import query
from dbt_project_helper import DEMO, install_demo_packages

REPO = Path(__file__).parent.parent
DBT = Path(sys.executable).parent / "dbt"
PROTECTED = [
    "beurlaubte_nach_hochschulart",
    "beurlaubte_nach_hochschulart_geschlecht",
    "beurlaubte_nach_hochschule",
    "studienanfaenger_nach_fach_geschlecht",
    "studierende_nach_fach_geschlecht_hochschule",
    "umsatz_ckm_nach_wz_region",
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo")
    db = tmp / "sdc.duckdb"
    write_students(tmp / "students.parquet")
    load_microdata(db, tmp / "students.parquet", "students", id_column="id", key_mode="keyed",
                   secret=b"test secret of the demo suite", facts=read_facts_config(FACTS_CONFIG))
    write_enterprises(tmp / "enterprises.parquet")
    load_microdata(db, tmp / "enterprises.parquet", "enterprises", id_column="id", key_mode="keyed",
                   secret=b"test secret of the demo suite")
    env = dict(os.environ, DBT_PROFILES_DIR=str(DEMO), SDC_DUCKDB_PATH=str(db), DBT_SEND_ANONYMOUS_USAGE_STATS="False")
    install_demo_packages()
    result = subprocess.run(
        [str(DBT), "build", "--target-path", str(tmp / "target"), "--log-path", str(tmp / "logs")],
        cwd=DEMO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:]
    publish(db, tmp / "publication.duckdb", tmp / "publication", manifest=tmp / "target" / "manifest.json")
    return tmp, db, result.stdout



def test_demo_builds_and_every_data_test_passes(demo):
    _, _, stdout = demo
    assert "ERROR=0" in stdout and "WARN=0" in stdout
    # CKM: 2 seeds + 5 audit + 5 protected + 1 quality models; invariants on 5 audit models, ptable test,
    # the cross-table consistency test, and the unit test of ckm_count.
    # Suppression: 1 view + 2 x (cells, primary, relations, pattern, audit, protected) + 2 audit tests.
    # Magnitude CKM: the nums ptable seed, audit, protected, quality, and the side-by-side with suppression.
    # The sdc package's on-run-start hook (engine_setup: nothing on DuckDB).
    assert "PASS=42" in stdout


def test_publication_file_holds_only_the_protected_tables(demo):
    tmp, _, _ = demo
    con = duckdb.connect(str(tmp / "publication.duckdb"), read_only=True)
    try:
        databases = [r[0] for r in con.execute("select database_name from duckdb_databases() where not internal").fetchall()]
        tables = con.execute("select schema_name, table_name from duckdb_tables() order by all").fetchall()
        views = con.execute("select view_name from duckdb_views() where not internal").fetchall()
        columns = con.execute("select distinct column_name from duckdb_columns() "
                              "where not internal and schema_name = 'main'").fetchall()
        index = con.execute("select * from sdc_publication.relations order by name").fetchall()
    finally:
        con.close()
    assert databases == ["publication"]
    # the relations tagged sdc_publish (demo/dbt_project.yml: the protected folder), and the index that
    # lists them and marks the file as written by sdc publish
    assert tables == [("main", name) for name in PROTECTED] + [("sdc_publication", "relations"),
                                                                ("sdc_publication", "release_audit")]
    assert index == [(name, f"sdc.protected.{name}", f"model.sdc_demo.{name}", "table") for name in PROTECTED]
    assert views == []
    names = {c for (c,) in columns}
    dims = {"hochschule", "hochschulart", "geschlecht", "fach", "wz", "region"}
    # each dimension with the columns a BI tool filters and sorts on
    assert names == dims | {"count", "freq", "value", "published_text"} | {
        d + s for d in dims for s in DIMENSION_COLUMN_SUFFIXES.values()}
    assert not names & {"rk", "original", "noise", "cell_key", "cell_key_int", "key_sum", "ptable_row", "id",
                        "status", "rule", "top_1", "lower", "upper", "protection_lower"}


def test_dbt_docs_describe_every_published_column_and_the_dashboard_reads_published_tables_only(demo):
    """What a BI author reads in dbt docs (issue 34): every column of every published relation described (the
    measures and the per-dimension columns by the package's docs blocks), the dashboard an exposure on them."""
    tmp, _, _ = demo
    manifest = json.loads((tmp / "target" / "manifest.json").read_text())
    con = duckdb.connect(str(tmp / "publication.duckdb"), read_only=True)
    try:
        published = {name: [c for (c,) in con.execute(f"select column_name from (describe main.{name})").fetchall()]
                     for name in PROTECTED}
    finally:
        con.close()
    for name, columns in published.items():
        node = manifest["nodes"][f"model.sdc_demo.{name}"]
        undescribed = [c for c in columns if not (node["columns"].get(c) or {}).get("description", "").strip()]
        assert not undescribed, (name, undescribed)
    described = manifest["nodes"]["model.sdc_demo.beurlaubte_nach_hochschule"]["columns"]
    assert described["hochschule__level"]["description"] == DIMENSION_COLUMN_DOCS["level"]
    assert described["count"]["description"] == PUBLISHED_COLUMN_DOCS["count"]
    (exposure,) = manifest["exposures"].values()
    assert sorted(exposure["depends_on"]["nodes"]) == [f"model.sdc_demo.{name}" for name in PROTECTED]


def test_publication_equals_the_protected_schema_and_parquet(demo):
    tmp, db, _ = demo
    assert sorted(p.name for p in (tmp / "publication").iterdir()) == ["_sdc_publication.json"] + [
        f"{n}.parquet" for n in PROTECTED]
    for name in PROTECTED:
        warehouse = query(db, f"select * from protected.{name} order by all")
        published = query(tmp / "publication.duckdb", f"select * from main.{name} order by all")
        parquet = query(db, f"select * from read_parquet('{tmp / 'publication' / (name + '.parquet')}') order by all")
        assert warehouse == published == parquet and len(warehouse) > 0


def test_every_protected_relation_records_the_load_it_was_built_from(demo):
    """The record sdc publish checks for one consistent build (macros/build_record.sql): the suppression tables are
    built through Python models, which carry none and are looked through to the macro models before them."""
    _, db, _ = demo
    loads = dict(query(db, "select table_name, cast(loaded_at as varchar) from raw.sdc_loads"))
    records = dict(query(db, "select table_name, comment from duckdb_tables() where schema_name = 'protected'"))
    assert sorted(records) == PROTECTED
    for name, comment in records.items():
        source = "enterprises" if name.startswith("umsatz") else "students"
        assert json.loads(comment)["sdc_build"]["loads"] == {f"raw.{source}": [loads[source]]}, name


def test_originals_match_a_plain_count_of_the_microdata(demo):
    _, db, _ = demo
    audit = query(db, "select hochschulart, geschlecht, original from audit.ckm_beurlaubte_nach_hochschulart_geschlecht "
                      "where hochschulart <> 'Total' and geschlecht <> 'Total' order by 1, 2")
    plain = query(db, "select hochschulart, geschlecht, count(*) from raw.students where ef28 = 4 group by all order by 1, 2")
    assert audit == plain
    total = query(db, "select original from audit.ckm_beurlaubte_nach_hochschule where hochschule = 'Total'")
    assert total == query(db, "select count(*) from raw.students where ef28 = 4")


def test_consistency_and_non_additivity_in_the_demo(demo):
    _, db, _ = demo
    table_2a = dict(query(db, "select hochschulart, count from protected.beurlaubte_nach_hochschulart"))
    table_2b = {(a, g): c for a, g, c in query(db, "select hochschulart, geschlecht, count "
                                                   "from protected.beurlaubte_nach_hochschulart_geschlecht")}
    table_9 = dict(query(db, "select hochschule, count from protected.beurlaubte_nach_hochschule"))
    for kind, count in table_2a.items():
        assert table_2b[(kind, "Total")] == count == table_9[kind]  # same cell, same value
    kinds = [k for k in table_2a if k != "Total"]
    differences = [table_2b[(k, "Total")] - table_2b[(k, "m")] - table_2b[(k, "w")] for k in kinds]
    differences.append(table_2a["Total"] - sum(table_2a[k] for k in kinds))
    assert any(d != 0 for d in differences)  # totals are perturbed on their own
    assert all(abs(d) <= 3 * 5 for d in differences)  # at most 3 perturbations of at most D = 5


def test_quality_figures_are_those_of_the_audit_table(demo):
    _, db, _ = demo
    figures = query(db, "select cells, mean_absolute_deviation, stay_share, max_abs_noise, false_zeros "
                        "from audit.ckm_quality where table_name = 'studierende_nach_fach_geschlecht'")[0]
    cells = query(db, "select original, count from audit.ckm_studierende_nach_fach_geschlecht where original > 0")
    assert figures[0] == len(cells)
    assert figures[1] == pytest.approx(sum(abs(c - o) for o, c in cells) / len(cells))
    assert figures[2] == pytest.approx(sum(c == o for o, c in cells) / len(cells))
    assert figures[3] == max(abs(c - o) for o, c in cells) <= 5
    assert figures[4] == sum(c == 0 for o, c in cells)


def test_suppression_demo_tables(demo):
    _, db, _ = demo
    # frequencies of the students table are plain counts of the enrolled students
    leaves = query(db, "select fach, geschlecht, hochschule, freq from audit.supp_studierende_pattern "
                       "where fach <> 'Total' and geschlecht <> 'Total' and hochschule in "
                       "(select hochschule from raw.students) and freq > 0 order by all")
    plain = query(db, "select fach, geschlecht, hochschule, count(*) from raw.students where ef28 < 4 "
                      "group by all order by all")
    assert leaves == plain
    statuses = dict(query(db, "select status, count(*) from audit.supp_studierende_pattern group by 1"))
    assert statuses["primary"] == query(db, "select count(*) from audit.supp_studierende_pattern "
                                            "where freq between 1 and 2")[0][0] > 0
    assert statuses["secondary"] > 0
    # every suppressed cell is hidden in the protected table; every other cell shows its count
    shown = query(db, "select count(*) filter (where freq is null and published_text = 'x'), "
                      "count(*) filter (where freq is not null and published_text = cast(freq as varchar)), count(*) "
                      "from protected.studierende_nach_fach_geschlecht_hochschule")[0]
    assert shown == (statuses["primary"] + statuses["secondary"], statuses["published"] + statuses.get("empty", 0),
                     sum(statuses.values()))
    # the audit models cover every suppressed cell and find each sensitive one protected
    for table, pattern in (("supp_studierende_audit", "supp_studierende_pattern"), ("supp_umsatz_audit", "supp_umsatz_pattern")):
        assert query(db, f"select count(*), bool_and(protected) from audit.{table}") == [
            (query(db, f"select count(*) from audit.{pattern} where status in ('primary', 'secondary')")[0][0], True)]
    # turnover: dominance rules fired and suppressed cells publish the interval the published cells give
    # (issue 17: not the audit's, whose a-priori bound 1.5 x the largest cell gave that cell away)
    rules = {r for (r,) in query(db, "select rule from audit.supp_umsatz_pattern where status = 'primary'")}
    assert any("p:10" in r for r in rules)
    intervals = query(db, "select p.published_text, a.published_lower, a.published_upper from compared.umsatz_nach_wz_region p "
                          "join audit.supp_umsatz_pattern a using (wz, region) where a.status in ('primary', 'secondary')")
    assert intervals and all(text == interval_text(low, high, "x") for text, low, high in intervals)
    largest = query(db, "select max(abs(value)) from audit.supp_umsatz_pattern")[0][0]
    assert all(high != 1.5 * largest for _, _, high in intervals)


def test_report_prints_table_2b(demo, capsys):
    _, db, _ = demo
    assert main(["demo", "report", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "Students on leave by Hochschulart and sex, CKM-protected (seed 002, Table 2b):" in out
    universities = query(db, "select count from protected.beurlaubte_nach_hochschulart_geschlecht "
                             "where hochschulart = 'Universitäten' and geschlecht = 'Total'")[0][0]
    assert f"{universities:,}".replace(",", " ") in out
    assert "The same turnover table by the magnitude Cell Key Method" in out and "0 sign changes" in out


def test_demo_income_microaggregation(demo, capsys):
    # as `make demo` does: a protected copy of the students with income microaggregated (optimal, k = 3)
    _, db, _ = demo
    assert main(["microaggregate", "--db", str(db), "--table", "raw.students", "--column", "einkommen", "--k", "3",
                 "--method", "optimal", "--id", "id", "--out-table", "microdata.students"]) == 0
    assert "einkommen: optimal k=3, 500000 records (0 NULL)" in capsys.readouterr().out
    same = query(db, "select count(*), count(*) filter (where r.einkommen = m.einkommen), "
                     "count(*) filter (where r.hochschule = m.hochschule and r.ef28 = m.ef28), "
                     "abs(sum(r.einkommen) - sum(m.einkommen)) from raw.students r join microdata.students m using (id)")[0]
    assert same[0] == 500_000 and same[2] == 500_000  # every record, other columns unchanged
    assert same[3] < 1e-3 * 500_000  # group means keep the total
    # every released income value is shared by at least 3 records
    assert query(db, "select min(n) from (select count(*) n from microdata.students group by einkommen)")[0][0] >= 3


def test_turnover_by_the_magnitude_ckm_beside_its_suppression(demo):
    """The demo's turnover table by ckm_sum: the dbt model gives the Python API's numbers on the same records
    with the demo's parameters and seed; the CKM's sensitive cells are the suppression's primary cells (the
    same rules, p:10 and nk:2,85); every cell is published, zero stays zero, no sign changes; the quality
    figures are those of the audit table."""
    import numpy as np
    import yaml

    import sdc.ckm
    from sdc.warehouse.hierarchy import hierarchy_rows

    tmp, db, _ = demo
    params = yaml.safe_load((DEMO / "dbt_project.yml").read_text())["vars"]["sdc_magnitude_params"]
    con = duckdb.connect(str(db), read_only=True)
    try:
        records = con.execute("select wz, region, umsatz, rk from raw.enterprises").df()
        hierarchy = con.execute("select dimension, code, parent from main.sdc_hierarchies").df()
        audit = con.execute("select * from audit.ckm_umsatz_nach_wz_region").df()
        published = con.execute("select * from protected.umsatz_ckm_nach_wz_region").df()
        side = con.execute("select * from audit.umsatz_ckm_vs_suppression").df()
        quality = con.execute("select * from audit.ckm_umsatz_quality").df().iloc[0]
        primary = {tuple(r) for r in con.execute(
            "select cast(wz as varchar), cast(region as varchar) from audit.supp_umsatz_pattern where status = 'primary'"
        ).fetchall()}
    finally:
        con.close()
    expected = sdc.ckm.sum_table(records, ["wz", "region"], value="umsatz", record_key="rk", modulus=10**8,
                                 params=params, ptable=DEMO / "seeds" / "sdc_nums_ptable.csv",
                                 hierarchy=hierarchy, check_keys=False)
    merged = expected.merge(published, on=["wz", "region"], suffixes=("", "_dbt"))
    assert len(merged) == len(expected) == len(published) == len(audit) == len(side)
    assert np.allclose(merged["value"], merged["value_dbt"], rtol=1e-12)
    assert list(published.columns) == ["wz", "region", "value"] + [
        d + s for d in ("wz", "region") for s in DIMENSION_COLUMN_SUFFIXES.values()]
    sensitive = {(w, r) for w, r, s in zip(audit["wz"], audit["region"], audit["sensitive"]) if s}
    assert sensitive == primary and len(primary) >= 3
    original = audit["original_value"].astype(float)
    assert ((audit["value"] == 0) == (original == 0)).all() and (np.sign(audit["value"]) == np.sign(original)).all()
    rad = (audit["value"] - original).abs()[original != 0] / original[original != 0].abs()
    assert quality["cells"] == len(rad) and quality["max_relative_noise"] == pytest.approx(rad.max())
    assert quality["rad_median"] == pytest.approx(rad.median()) and quality["changed_share"] > 0.9
    # side by side: a suppressed cell is hidden there but published (perturbed) by the CKM
    suppressed = side[side["suppression_status"].isin(["primary", "secondary"])]
    assert len(suppressed) >= 5 and suppressed["ckm_value"].notna().all()
    assert (suppressed["suppression_published"] != suppressed["original"].map(lambda v: f"{v:.0f}")).all()


@pytest.mark.parametrize("compared, published", [
    # the turnover by suppression beside the same turnover by the magnitude CKM (new-user trial D3)
    ("umsatz_nach_wz_region", "protected.umsatz_ckm_nach_wz_region (Cell Key Method) and "
                              "compared.umsatz_nach_wz_region (cell suppression) both publish the cell (wz="),
    # the students by the CKM beside the same students by suppression (the margins of its hochschule total)
    ("studierende_nach_fach_geschlecht", "compared.studierende_nach_fach_geschlecht (Cell Key Method) and "
                                         "protected.studierende_nach_fach_geschlecht_hochschule (cell suppression) "
                                         "both publish the cell (fach="),
])
def test_the_demo_publishes_each_population_by_one_method_and_refuses_both(demo, tmp_path, compared, published):
    """The release audit's check of two methods (python/sdc/release/audit.py) names both published tables."""
    tmp, db, _ = demo
    manifest = json.loads((tmp / "target" / "manifest.json").read_text())
    node = manifest["nodes"][f"model.sdc_demo.{compared}"]
    node["tags"] = node["config"]["tags"] = ["sdc_publish"]
    edited = tmp_path / "manifest.json"
    edited.write_text(json.dumps(manifest))
    with pytest.raises(SdcError, match="^" + re.escape(published)):
        publish(db, tmp_path / "pub.duckdb", manifest=edited)
    assert not (tmp_path / "pub.duckdb").exists()


READ_SOME = """
import json, sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
tables = con.execute("select schema_name, table_name from duckdb_tables() order by all").fetchall()
views = con.execute("select schema_name, view_name from duckdb_views() where not internal order by all").fetchall()
data = {f"{s}.{t}": [con.execute(f'select count(*) from "{s}"."{t}"').fetchone()[0]]
        + [[repr(v) for v in row] for row in con.execute(f'select * from "{s}"."{t}" order by all limit 3').fetchall()]
        for s, t in tables}
print(json.dumps({"version": duckdb.__version__, "tables": data, "views": views}))
"""


def test_the_demo_warehouse_opens_in_the_duckdb_1_x_client(demo, tmp_path):
    """New-user trial D12: the warehouse sdc load created, after dbt build, is read by DuckDB 1.5 (the newest
    DuckDB CLI on PyPI is 1.5.6), table for table as DuckDB 2.0 reads it."""
    from test_publish import old_client_python

    _, db, _ = demo
    script = tmp_path / "read_some.py"
    script.write_text(READ_SOME)
    results = []
    for python in (old_client_python("1.5.6"), Path(sys.executable)):
        copy = tmp_path / f"copy-{len(results)}.duckdb"  # each client on its own copy: nothing written back
        shutil.copy(db, copy)
        result = subprocess.run([str(python), str(script), str(copy)], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        results.append(json.loads(result.stdout))
    old, new = results
    assert old["version"] == "1.5.6" and new["version"] == duckdb.__version__
    assert "raw.students" in old["tables"] and "raw.students__record_keys" not in old["tables"]  # keyed: no store
    assert old["tables"]["raw.students"][0] == new["tables"]["raw.students"][0] > 0
    assert old == dict(new, version="1.5.6")


# ------------------------------------------------------------------------------------------ the release report
@pytest.fixture(scope="module")
def release_report(demo):
    tmp, _, _ = demo
    out = tmp / "release_report.html"
    assert main(["report", "--publication", str(tmp / "publication.duckdb"), "--ledger", str(tmp / "sdc_ledger.duckdb"),
                 "--out", str(out)]) == 0
    return out


def test_the_release_audit_holds_the_quality_figures_of_the_demo_s_quality_model(demo):
    """The release record's quality figures (the office's, in the ledger) come from sdc's recomputation of each
    published table; the demo's dbt model audit.ckm_quality computes them from the tables dbt built. They agree
    figure by figure."""
    from sdc.release.ledger import release_audit

    tmp, db, _ = demo
    quality = release_audit(tmp / "sdc_ledger.duckdb")["quality"]
    model = {row[0]: row for row in query(db, "select table_name, cells, mean_absolute_deviation, stay_share, "
                                              "max_abs_noise, hellinger_distribution, false_zeros from audit.ckm_quality")}
    compared = 0
    for table in PROTECTED:
        figures = quality.get(f"protected.{table}", {}).get("measures", {}).get("count")
        if figures is None or table not in model:
            continue
        _, cells, mad, stay, largest, hellinger, zeros = model[table]
        assert (figures["cells"], figures["max_abs_noise"], figures["false_zeros"]) == (cells, largest, zeros)
        assert figures["mean_absolute_deviation"] == pytest.approx(mad, rel=1e-5)
        assert figures["stay_share"] == pytest.approx(stay, rel=1e-5)
        assert figures["hellinger_distribution"] == pytest.approx(hellinger, rel=1e-5, abs=1e-9)
        assert sum(b["cells"] for b in figures["relative_deviation_histogram"]) == cells
        compared += 1
    assert compared >= 3
    # suppression: the cells by status are those of the pattern
    counts = quality["protected.studierende_nach_fach_geschlecht_hochschule"]["cells"]
    statuses = dict(query(db, "select status, count(*) from audit.supp_studierende_pattern group by 1"))
    assert (counts["primary"], counts["secondary"]) == (statuses["primary"], statuses["secondary"])


def test_the_release_report_is_one_file_with_every_table_and_nothing_from_outside(demo, release_report):
    text = release_report.read_text(encoding="utf-8")
    for table in PROTECTED:
        assert f'<section id="t-{table}">' in text, table
    assert "<script" not in text.lower() and "<iframe" not in text.lower()
    # no link or source outside the file (SVG's namespace names are no requests)
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//|file:)", text, re.I)
    assert text.count("<svg") >= 1 + 4  # the ptable and a histogram per CKM table
    # a suppressed cell is marked and shows what is published in its place
    assert '<tr class="suppressed">' in text and '<td class="suppressed">x</td>' in text
    # an earlier report is replaced, any other file is not
    other = release_report.parent / "notes.html"
    other.write_text("mine")
    ledger = ["--ledger", str(demo[0] / "sdc_ledger.duckdb")]
    assert main(["report", "--publication", str(demo[0] / "publication.duckdb"), *ledger, "--out", str(other)]) == 2
    assert other.read_text() == "mine"
    assert main(["report", "--publication", str(demo[0] / "publication.duckdb"), *ledger,
                 "--out", str(release_report)]) == 0


def test_the_office_report_says_it_is_internal_and_the_public_one_holds_nothing_of_the_originals(demo, release_report,
                                                                                                  capsys):
    """The office report carries the audit's figures (computed from the originals) and says so on its first line;
    the readers' report (--public) is made from the publication alone: its cells, the checks passed and the public
    parameters, none of the quality or averaging figures (red team R4-1, new user D2). Without the ledger the
    office report is refused, naming both ways."""
    tmp = demo[0]
    first = release_report.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("<!-- INTERNAL: the office report of an sdc release.") and "never give it to readers" in first
    office = release_report.read_text(encoding="utf-8")
    assert "largest absolute noise" in office and "Averaging CKM noise" in office and "transition probabilities" in office
    public = tmp / "public_report.html"
    assert main(["report", "--publication", str(tmp / "publication.duckdb"), "--public", "--out", str(public)]) == 0
    assert capsys.readouterr().out.startswith("wrote the public report of release 1, 6 tables")
    text = public.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "INTERNAL" not in text
    for label in ("largest absolute noise", "Hellinger", "share of cells unchanged", "relative deviation",
                  "standard error of", "transition probabilities", "cells with records published as 0"):
        assert label not in text, label
    for table in PROTECTED:
        assert f'<section id="t-{table}">' in text, table
    assert "<td>averaging</td><td class=\"passed\">passed</td>" in text
    assert re.search(r"<td>[\w.]*sdc_ptable</td><td class=\"number\">5</td><td class=\"number\">3.0</td>"
                     r"<td class=\"number\">2</td>", text)
    assert main(["report", "--publication", str(tmp / "publication.duckdb"), "--out", str(tmp / "r.html")]) == 2
    assert "needs its ledger of releases (--ledger" in capsys.readouterr().err and not (tmp / "r.html").exists()


def test_the_release_report_escapes_what_the_data_say(tmp_path):
    """Codes are data: a code that is HTML is shown as text, never as markup."""
    from sdc.release.report import render

    release = {"file": "p.duckdb", "audit": {"checks": {"zeros": "passed"}, "tables": []},
               "tables": [{"name": "t", "label": "protected.t", "columns": ["region", "count"],
                           "rows": [("<script>alert(1)</script>", 3), ('" onmouseover="x', 0)]}]}
    text = render(release)
    assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert '" onmouseover="x' not in text and "&quot; onmouseover=&quot;x" in text


def test_the_release_report_renders_in_headless_chromium(demo, release_report, chromium):
    """The report as a browser shows it: Debian's Chromium, headless, parses it into the tables and cells of
    the publication (its DOM) and draws it (a screenshot that is not blank)."""
    tmp, db, _ = demo
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          release_report.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    universities = query(db, "select count from protected.beurlaubte_nach_hochschulart "
                             "where hochschulart = 'Universitäten'")[0][0]
    # a code indented by its level, numbers as published: whole, thousands separated (new user D8)
    shown = f"{universities:,}".replace(",", "\u202f")
    assert re.search(rf"<td class=\"\" style=\"padding-left: 1.7em\">Universitäten</td><td class=\"number\">{shown}</td>",
                     dom.stdout), dom.stdout[:3000]
    assert "<h2>Risk: the release audit</h2>" in dom.stdout
    # each table under its title, the relation's description in the dbt project, with its unit where it has one
    assert "<h2>Published. Students by subject x sex x institution (Hochschulart subtotals); cell suppression, " \
           "x = suppressed.</h2>" in dom.stdout
    assert re.search(r"ckm magnitudes; \d+ cells \(protected.umsatz_ckm_nach_wz_region\); unit: EUR.", dom.stdout)
    assert not re.search(r"<td class=\"number\">\d+\.0</td>", dom.stdout)  # no whole number shown with a decimal
    shot = tmp / "release_report.png"
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          f"--screenshot={shot}", "--window-size=1280,1600", release_report.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (1600, 1280) and pixels.std() > 0.05  # drawn: not one colour
