"""Finding N9 (new user, Superset): the dbt tables published magnitudes with false precision (884808208.0966316).
ckm_published rounds weighted_count, value and weighted_value to digits= (default var sdc_published_digits, 0:
whole units, as τ-Argus writes a CKM table), after the noise; the audit relation stays exact. The digits are in
the step's build record, and sdc publish (and the dbt gate) compare the published numbers with sdc's
recomputation rounded alike: a number moved by one unit of its last digit is refused. sdc.ckm and sdc ckm give
the same numbers by default."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path

import duckdb
import pytest

import sdc.ckm
from sdc.cli import main
from sdc.errors import SdcError
from sdc.release.publish import publish
from test_publication_gate import BASE, MAGNITUDE_VARS, REPO, dbt_result
from test_publish import rows
from test_release_verification import magnitude_project

MODELS = {
    **BASE,
    "audit/ckm_income.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['sex', 'region'], value='income') }}\n",
    "protected/income.sql": "{{ sdc.ckm_published(ref('ckm_income')) }}\n",
    "protected/income_cents.sql": "{{ sdc.ckm_published(ref('ckm_income'), digits=2) }}\n",
    "protected/income_hundreds.sql": "{{ sdc.ckm_published(ref('ckm_income'), digits=-2) }}\n",
    "protected/income_exact.sql": "{{ sdc.ckm_published(ref('ckm_income'), digits=none) }}\n",
}
CELLS = "select sex, region, value from {} order by sex, region"


def half_away(x: float, digits: int) -> float:
    """The oracle: x rounded to `digits` decimals, half away from zero."""
    scaled = math.floor(abs(x) * 10**digits + 0.5) if digits >= 0 else math.floor(abs(x) / 10**-digits + 0.5)
    back = scaled / 10**digits if digits >= 0 else scaled * 10**-digits
    return math.copysign(back, x) if back else 0.0


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return magnitude_project(tmp_path_factory.mktemp("digits"), MODELS, None)


def test_ckm_published_rounds_the_magnitudes_to_its_digits(built):
    exact = rows(built.db, CELLS.format("main_audit.ckm_income"))
    assert rows(built.db, CELLS.format("main_protected.income_exact")) == exact
    assert any(v != round(v) for _, _, v in exact)  # the noise gives the sums many decimals
    for table, digits in (("income", 0), ("income_cents", 2), ("income_hundreds", -2)):
        got = rows(built.db, CELLS.format(f"main_protected.{table}"))
        assert got == [(s, r, half_away(v, digits)) for s, r, v in exact], table
    # the numbers as the BI sees them (the default: whole units)
    assert exact[:2] == [("Total", "R0", 280649.34649018897), ("Total", "R1", 278557.4984147051)]
    assert rows(built.db, CELLS.format("main_protected.income"))[:2] == [("Total", "R0", 280649.0),
                                                                         ("Total", "R1", 278557.0)]
    assert rows(built.db, CELLS.format("main_protected.income_cents"))[:2] == [("Total", "R0", 280649.35),
                                                                               ("Total", "R1", 278557.5)]
    assert rows(built.db, CELLS.format("main_protected.income_hundreds"))[:2] == [("Total", "R0", 280600.0),
                                                                                  ("Total", "R1", 278600.0)]
    record = json.loads(rows(built.db, "select comment from duckdb_tables() where table_name = 'income'")[0][0])
    assert record["sdc_build"]["step"] == "ckm_published" and record["sdc_build"]["call"] == {"digits": 0}


def test_the_rounded_tables_are_published_and_a_number_moved_by_one_unit_is_refused(built, tmp_path):
    out = tmp_path / "pub.duckdb"
    published = publish(built.db, out, project_dir=built.project)
    assert {"income", "income_cents", "income_hundreds", "income_exact"} <= set(published)
    assert rows(out, CELLS.format("income_cents")) == rows(built.db, CELLS.format("main_protected.income_cents"))

    # one cent more in a cell whose unrounded value is not near a half cent
    tampered = tmp_path / "copy" / built.db.name  # the warehouse's name is its file's
    tampered.parent.mkdir()
    shutil.copy(built.db, tampered)
    con = duckdb.connect(str(tampered))
    sex, region, value = con.execute(
        "select sex, region, value from main_audit.ckm_income "
        "where abs(value * 100 - floor(value * 100) - 0.5) > 0.1 order by sex, region limit 1").fetchone()
    con.execute("update main_protected.income_cents set value = value + 0.01 where sex = ? and region = ?",
                [sex, region])
    con.close()
    with pytest.raises(SdcError, match=rf"income_cents \(model\.pubtest\.income_cents\) differs from ckm_sum over raw\.persons \(recomputed from the "
                                       rf"microdata\) in the cell \(sex='{sex}', region='{region}'\): value is "
                                       + re.escape(f"{half_away(value, 2) + 0.01!r} there and {half_away(value, 2)!r} in "
                                                   "sdc's recomputation")):
        publish(tampered, tmp_path / "no.duckdb", project_dir=built.project)


def test_the_dbt_gate_refuses_a_number_moved_by_one_unit(built):
    result = dbt_result(built, "run-operation", "verify_published")
    assert result.returncode == 0, result.stdout[-3000:]
    con = duckdb.connect(str(built.db))
    con.execute("update main_protected.income set value = value + 1 where sex = 'Total' and region = 'R0'")
    con.close()
    try:
        result = dbt_result(built, "run-operation", "verify_published")
        out = result.stdout.replace("\n  ", " ")
        assert result.returncode != 0, out[-3000:]
        assert "value 280650.0 there, 280649.0 in sdc's recomputation" in out, out[-3000:]
    finally:
        con = duckdb.connect(str(built.db))
        con.execute("update main_protected.income set value = value - 1 where sex = 'Total' and region = 'R0'")
        con.close()


@pytest.mark.parametrize("digits, shown", [("1.5", "1.5"), ("'2'", '"2"'), ("16", "16"), ("true", "True")])
def test_digits_that_are_no_small_whole_number_stop_the_build_naming_them(built, digits, shown):
    model = built.project / "models" / "protected" / "income_bad.sql"
    model.write_text(f"{{{{ sdc.ckm_published(ref('ckm_income'), digits={digits}) }}}}\n")
    try:
        result = dbt_result(built, "run", "--select", "income_bad")
    finally:
        model.unlink()
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0
    assert ("ckm_published: digits (of the published magnitudes) must be a whole number from -15 to 15, got "
            f"{shown}; none publishes them unrounded") in out, out[-3000:]


def test_sdc_ckm_and_the_python_api_publish_the_numbers_of_dbt(built, tmp_path):
    """The same records, keys, parameters and ptable: the same published numbers, by default and with digits."""
    micro = tmp_path / "persons.csv"
    con = duckdb.connect(str(built.db), read_only=True)
    con.execute(f"copy (select sex, region, income, rk from raw.persons) to '{micro}' (header)")
    con.close()
    params = {**_magnitude_params(), "ptable": str(REPO / "demo" / "seeds" / "sdc_nums_ptable.csv")}
    options = dict(value="income", record_key="rk", modulus=10**8, params=params)
    for digits, table in (("default", "income"), (-2, "income_hundreds"), (None, "income_exact")):
        api = sdc.ckm.sum_table(micro, ["sex", "region"], **options, digits=digits)
        got = sorted((s, r, float(v)) for s, r, v in api[["sex", "region", "value"]].itertuples(index=False))
        assert got == sorted(rows(built.db, CELLS.format(f"main_protected.{table}"))), table
    (tmp_path / "mag.yml").write_text(json.dumps(params))
    assert main(["ckm", "--input", str(micro), "--dims", "sex,region", "--record-key", "rk", "--modulus",
                 str(10**8), "--value", "income", "--params", str(tmp_path / "mag.yml"),
                 "--out", str(tmp_path / "out.csv")]) == 0
    written = sorted((r["sex"], r["region"], float(r["value"])) for r in csv.DictReader((tmp_path / "out.csv").open()))
    assert written == sorted(rows(built.db, CELLS.format("main_protected.income")))
    assert all(r["value"].lstrip("-").isdigit() for r in csv.DictReader((tmp_path / "out.csv").open()))


def _magnitude_params() -> dict:
    import yaml

    return yaml.safe_load(MAGNITUDE_VARS)["vars"]["sdc_magnitude_params"]
