"""Weighted counts by the Cell Key Method (ckm_count weight=, sdc.ckm.count_table(weight=), sdc ckm --weight):
the cellKey / τ-Argus method (count' · sum of weights / count) on cellKey's test data against an independent
computation, the magnitude method against sum_table, zero stays zero, the threshold, the dbt path against the
Python API, and bad weights."""

import csv
from decimal import Decimal

import duckdb
import numpy as np
import pandas as pd
import pytest

import sdc.ckm
from sdc.cli import main
from sdc.conventions import DIMENSION_COLUMN_SUFFIXES
from sdc.errors import SdcError
from sdc.warehouse.hierarchy import read_hierarchy
from sdc.warehouse.loader import load_microdata
from sdc.ptable.formats import read_ptable
from sdc.ptable.nums import NumsPTableParams, NumsPTableSet, create_num_ptable, write_nums_ptable

from conftest import DATA, REPO
from dbt_project_helper import ScratchProject
from weighted_count_noise import spread_noise

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
HIERARCHY = DATA / "cellkey_testdata_hierarchies.csv"
PTABLE = REPO / "demo" / "seeds" / "sdc_ptable.csv"
PARAMS = {"type": "top_contr", "top_k": 2,
          "multiplier": {"type": "flex", "fp": 100, "p": [0.3, 0.05], "epsilon": [1, 0.5], "q": 3}}


@pytest.fixture(scope="module")
def nums_ptable(tmp_path_factory):
    path = tmp_path_factory.mktemp("nums") / "nums.csv"
    write_nums_ptable(NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=10, V=1)).table}), path)
    return path


def independent_cells(dims, hierarchy=None):
    """Per cell: records, exact key sum and sum of weights; every record adds itself to each ancestor code."""
    parents = {(dim, code): parent for dim, code, parent in hierarchy or []}
    hierarchical = {dim for dim, _, _ in hierarchy or []}

    def codes(dim, code):
        if dim not in hierarchical:
            return [code, "Total"]
        out = [code]
        while parents.get((dim, out[-1])):
            out.append(parents[(dim, out[-1])])
        return out

    cells = {}
    with open(MICRODATA, newline="") as handle:
        for record in csv.DictReader(handle):
            combos = [()]
            for dim in dims:
                combos = [c + (a,) for c in combos for a in codes(dim, record[dim])]
            for combo in combos:
                n, keys, weights = cells.get(combo, (0, Decimal(0), 0))
                cells[combo] = (n + 1, keys + Decimal(record["rkeys"]), weights + int(record["sampling_weight"]))
    return cells


def test_mean_weight_reproduces_cellkey_on_its_test_data(tmp_path, capsys):
    """cellKey's and τ-Argus's weighted count, pwc = n' · wc / n (reference ckm.md §3.3), for sex × age with
    age's hierarchy, computed here from the records with exact key sums and the ptable's lookup."""
    out = tmp_path / "weighted.csv"
    assert main(["ckm", "--input", str(MICRODATA), "--dims", "sex,age", "--hierarchy", str(HIERARCHY),
                 "--record-key", "rkeys", "--key-digits", "7", "--ptable", str(PTABLE), "--weight", "sampling_weight",
                 "--weighted-count", "mean_weight", "--digits", "none", "--audit", "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith("wrote 27 cells")
    table, _, _ = read_ptable(PTABLE)
    expected = independent_cells(["sex", "age"], read_hierarchy(HIERARCHY))
    rows = list(csv.DictReader(open(out, newline="")))
    assert len(rows) == len(expected) == 27
    assert list(rows[0])[:4] == ["sex", "age", "count", "weighted_count"]
    perturbed = 0
    for row in rows:
        n, key_sum, weights = expected[(row["sex"], row["age"])]
        count = n + table.lookup(n, float(key_sum % 1))
        assert int(row["count"]) == count
        assert float(row["original_weighted_count"]) == weights
        assert float(row["weighted_count"]) == pytest.approx(count * weights / n, rel=1e-12)
        perturbed += count != n
    assert perturbed >= 5
    # the grand total: 4580 records, weights summing to 273170 (cellKey's test data), noise 0 at this cell key
    assert rows[0]["sex"] == rows[0]["age"] == "Total" and float(rows[0]["weighted_count"]) == 273170


def test_zero_stays_zero_and_a_count_perturbed_to_zero_has_no_weight(nums_ptable):
    df = pd.read_csv(MICRODATA)
    for method, options in [("mean_weight", {}), ("magnitude", {"params": PARAMS, "nums_ptable": nums_ptable})]:
        got = sdc.ckm.count_table(df, ["roof", "water", "urbrur"], digits=None, record_key="rkeys", modulus=10**7,
                                  ptable=PTABLE, weight="sampling_weight", weighted_count=method, audit=True,
                                  **options)
        empty = got["original"] == 0
        assert empty.sum() >= 10, method  # the frame has empty cells
        assert (got.loc[got["count"] == 0, "weighted_count"] == 0).all(), method
        assert (got.loc[got["count"] > 0, "weighted_count"] > 0).all(), method
        assert (got.loc[empty, "original_weighted_count"] == 0).all(), method


def cell_records(dims, hierarchy=None) -> dict:
    """Per cell (as independent_cells): the integer record keys and the weights of its records."""
    parents = {(dim, code): parent for dim, code, parent in hierarchy or []}
    out = {}
    with open(MICRODATA, newline="") as handle:
        for record in csv.DictReader(handle):
            combos = [()]
            for dim in dims:
                codes = [record[dim]]
                while parents.get((dim, codes[-1])):
                    codes.append(parents[(dim, codes[-1])])
                combos = [c + (a,) for c in combos for a in codes]
            for combo in combos:
                keys, weights = out.setdefault(combo, ([], []))
                keys.append(int(Decimal(record["rkeys"]) * 10**7))
                weights.append(int(record["sampling_weight"]))
    return out


def test_magnitude_weighted_count_is_the_perturbed_sum_of_weights_beside_unchanged_counts(nums_ptable):
    """weighted_count = the sum of the weights perturbed as sum_table perturbs it + the count's noise times the
    cell's smallest weight (red team 6: a constant weight must not give the count away) + the second noise times
    the cell's spread of weights, computed here from the records (red team 3: weighted_count - w_min count must
    not be the exact Σ(w - w_min) + the magnitude noise)."""
    df = pd.read_csv(MICRODATA)
    run = dict(record_key="rkeys", modulus=10**7, hierarchy=HIERARCHY)
    plain = sdc.ckm.count_table(df, ["sex", "age"], digits=None, ptable=PTABLE, **run)
    weighted = sdc.ckm.count_table(df, ["sex", "age"], digits=None, ptable=PTABLE, weight="sampling_weight", params=PARAMS,
                                   nums_ptable=nums_ptable, **run)
    assert list(weighted.columns) == ["sex", "age", "count", "weighted_count"]
    assert weighted["count"].tolist() == plain["count"].tolist()  # the weight changes no count
    sums = sdc.ckm.sum_table(df, ["sex", "age"], digits=None, weight="sampling_weight", params=PARAMS, ptable=nums_ptable,
                             **run)
    merged = weighted.merge(sums, on=["sex", "age"], suffixes=("", "_sum"))
    assert len(merged) == len(weighted) == 27
    cells = independent_cells(["sex", "age"], read_hierarchy(HIERARCHY))
    records = cell_records(["sex", "age"], read_hierarchy(HIERARCHY))
    count_noise = np.array([r.count - cells[(r.sex, r.age)][0] for r in merged.itertuples()])
    w_min = np.array([min(records[(r.sex, r.age)][1]) for r in merged.itertuples()])
    spread = np.array([max(records[(r.sex, r.age)][1]) for r in merged.itertuples()]) - w_min
    second = np.array([spread_noise(*records[(r.sex, r.age)], PTABLE, 10**7) for r in merged.itertuples()])
    assert (count_noise != 0).sum() >= 10 and len(set(w_min)) >= 2
    assert (spread > 0).all() and (np.abs(second) >= 0.5).sum() >= 10  # weights differ in every cell
    expected = np.maximum(merged["weighted_count_sum"] + count_noise * w_min + second * spread, w_min)
    assert np.allclose(merged["weighted_count"], expected, rtol=1e-12)
    truth = {k: v[2] for k, v in cells.items()}
    changed = sum(abs(r.weighted_count - truth[(r.sex, r.age)]) > 1e-6 for r in merged.itertuples())
    assert changed >= 20  # the weighted counts are perturbed, not copied


def test_threshold_hides_the_weighted_count_with_the_count(nums_ptable):
    df = pd.read_csv(MICRODATA)
    got = sdc.ckm.count_table(df, ["roof", "water"], digits=None, record_key="rkeys", modulus=10**7, ptable=PTABLE,
                              weight="sampling_weight", params=PARAMS, nums_ptable=nums_ptable, threshold=10)
    hidden = got["count"].isna()
    assert hidden.sum() >= 3 and (~hidden).sum() >= 3
    assert got.loc[hidden, "weighted_count"].isna().all()
    assert got.loc[~hidden, "weighted_count"].notna().all()


@pytest.mark.parametrize("bad, shown", [("0", "0"), ("-3", "-3"), ("nan", "nan"), ("inf", "inf"), ("", "NULL")])
def test_a_weight_that_is_not_positive_and_finite_is_named_and_nothing_is_written(tmp_path, capsys, bad, shown):
    lines = MICRODATA.read_text().splitlines()
    header = lines[0].split(",")
    record = lines[57].split(",")
    record[header.index("sampling_weight")] = bad
    lines[57] = ",".join(record)
    micro = tmp_path / "micro.csv"
    micro.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.csv"
    for method in ("mean_weight", "magnitude"):
        extra = ["--params", str(tmp_path / "p.yml")] if method == "magnitude" else []
        (tmp_path / "p.yml").write_text("type: sum\nmultiplier: {type: simple, p: 0.05}\nptable: nums.csv\n")
        write_nums_ptable(NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=10, V=1)).table}), tmp_path / "nums.csv")
        code = main(["ckm", "--input", str(micro), "--dims", "sex", "--record-key", "rkeys", "--key-digits", "7",
                     "--ptable", str(PTABLE), "--weight", "sampling_weight", "--weighted-count", method, *extra,
                     "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2, (method, err)
        assert "weight column sampling_weight must be positive and finite" in err
        # the weight as the column holds it, or as a double (the magnitude method's own check may come first)
        assert f"a record has {shown} (" in err or f"a record has {shown}.0 (" in err, err
        # the record is named by its cell, never by its record key (messages reach logs; keys undo the protection)
        assert f"(in the cell sex = {record[header.index('sex')]})" in err
        key = str(int(Decimal(record[header.index("rkeys")]) * 10**7))
        assert key not in err and record[header.index("rkeys")] not in err
        assert not out.exists()


def test_a_text_weight_column_is_refused(tmp_path, capsys):
    df = pd.read_csv(MICRODATA)
    df["w"] = df["sampling_weight"].astype(str) + "kg"
    with pytest.raises(SdcError, match="column 'w' must be numeric"):
        sdc.ckm.count_table(df, ["sex"], digits=None, record_key="rkeys", modulus=10**7, ptable=PTABLE, weight="w",
                            weighted_count="mean_weight")


@pytest.mark.parametrize("options, message", [
    ({"weighted_count": "magnitude"}, "needs its parameters: give params="),
    ({"weighted_count": "mean_weight", "params": PARAMS}, "takes no magnitude params"),
    ({"weighted_count": "average"}, "weighted_count must be one of magnitude, mean_weight"),
    ({"weighted_count": "mean_weight", "weight": "sex"}, "dimension 'sex' is also the weight column"),
])
def test_weighted_count_arguments_are_checked(options, message):
    df = pd.read_csv(MICRODATA)
    options = {"weight": "sampling_weight", **options}
    with pytest.raises(SdcError, match=message):
        sdc.ckm.count_table(df, ["sex"], digits=None, record_key="rkeys", modulus=10**7, ptable=PTABLE, **options)


@pytest.mark.parametrize("args, message", [
    (["--weight", "sampling_weight"], "give its parameters as --params"),
    (["--weight", "sampling_weight", "--weighted-count", "mean_weight", "--params", "p.yml"], "takes no --params"),
    (["--value", "income", "--weighted-count", "mean_weight", "--params", "p.yml"], "--weighted-count applies to"),
])
def test_cli_weighted_count_options_are_checked(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yml").write_text("type: sum\nmultiplier: {type: simple, p: 0.05}\nptable: nums.csv\n")
    write_nums_ptable(NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=10, V=1)).table}), tmp_path / "nums.csv")
    code = main(["ckm", "--input", str(MICRODATA), "--dims", "sex", "--record-key", "rkeys", "--key-digits", "7",
                 "--ptable", str(PTABLE), *args, "--out", "out.csv"])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()


# ------------------------------------------------------------------------------------------ the dbt path


def test_dbt_models_give_the_python_api_numbers_and_publish_no_originals(tmp_path, nums_ptable):
    """A dbt project with ckm_count(weight=) both ways and ckm_sum, built by dbt: the same cells as the Python
    API; ckm_published keeps dimensions and measures only, for counts and for sums."""
    p = ScratchProject(tmp_path / "project")
    load_microdata(p.db, MICRODATA, "survey", key_mode="existing", key_column="rkeys", modulus=10**7)
    p.sources(["survey"])
    p.seed("sdc_nums_ptable", nums_ptable.read_text())
    src = "source('raw', 'survey')"
    params = repr(PARAMS)
    p.model("weighted_mean", f"{{{{ sdc.ckm_count({src}, ['sex', 'roof'], modulus=10000000, "
            "weight='sampling_weight', weighted_count='mean_weight') }}")
    p.model("weighted_magnitude", f"{{{{ sdc.ckm_count({src}, ['sex', 'roof'], modulus=10000000, "
            f"weight='sampling_weight', params={params}) }}}}")
    p.model("income_audit", f"{{{{ sdc.ckm_sum({src}, ['sex', 'roof'], value='income', weight='sampling_weight', "
            f"modulus=10000000, params={params}, audit=true) }}}}")
    p.model("weighted_published", "{{ sdc.ckm_published(ref('weighted_magnitude')) }}")
    p.model("income_published", "{{ sdc.ckm_published(ref('income_audit')) }}")
    p.model("income_mean", "{{ sdc.ckm_mean(ref('income_published'), ref('weighted_published'), ['sex', 'roof']) }}")
    p.model("income_weighted_mean", "{{ sdc.ckm_mean(ref('income_published'), ref('weighted_published'), "
            "['sex', 'roof'], numerator='weighted_value', denominator='weighted_count') }}")
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]

    df = pd.read_csv(MICRODATA)
    run = dict(record_key="rkeys", modulus=10**7)
    expected = {
        "weighted_mean": sdc.ckm.count_table(df, ["sex", "roof"], digits=None, ptable=PTABLE, weight="sampling_weight",
                                             weighted_count="mean_weight", **run),
        "weighted_magnitude": sdc.ckm.count_table(df, ["sex", "roof"], digits=None, ptable=PTABLE, weight="sampling_weight",
                                                  params=PARAMS, nums_ptable=nums_ptable, **run),
        # published: rounded by ckm_published as by sum_table, to whole units by default
        "income_published": sdc.ckm.sum_table(df, ["sex", "roof"], value="income", weight="sampling_weight",
                                              params=PARAMS, ptable=nums_ptable, **run),
    }
    con = duckdb.connect(str(p.db), read_only=True)
    try:
        for model, frame in expected.items():
            built = con.execute(f"select * from main.{model}").df()
            merged = frame.merge(built, on=["sex", "roof"], suffixes=("", "_dbt"))
            assert len(merged) == len(frame) == len(built), model
            for column in [c for c in frame.columns if c not in ("sex", "roof")]:
                assert np.allclose(merged[column], merged[column + "_dbt"], rtol=1e-12), (model, column)
        published = {m: [r[0] for r in con.execute(f"describe main.{m}").fetchall()]
                     for m in ("weighted_published", "income_published")}
        means = con.execute("select s.sex, s.roof, s.value / c.count, s.weighted_value / c.weighted_count, "
                            "m.mean_value, w.mean_weighted_value from main.income_published s "
                            "join main.weighted_published c using (sex, roof) join main.income_mean m using (sex, roof) "
                            "join main.income_weighted_mean w using (sex, roof)").fetchall()
    finally:
        con.close()
    described = [d + suffix for d in ("sex", "roof") for suffix in DIMENSION_COLUMN_SUFFIXES.values()]
    assert published == {"weighted_published": ["sex", "roof", "count", "weighted_count", *described],
                         "income_published": ["sex", "roof", "value", "weighted_value", *described]}
    assert len(means) == len(expected["income_published"])
    for _, _, mean, weighted_mean, got, got_weighted in means:
        assert got == pytest.approx(mean, rel=1e-12) and got_weighted == pytest.approx(weighted_mean, rel=1e-12)


# ------------------------------------------------------------------------------------------ dbt: mistakes

MISTAKES = {
    # model: (sql, what the error must say)
    "keys_4096": ("{{ sdc.ckm_sum(source('raw', 'survey4096'), ['sex'], value='income', params=%s) }}",
                  "were loaded with modulus 4096, but the magnitude Cell Key Method scrambles the decimal digits"),
    "count_ptable": ("{{ sdc.ckm_sum(source('raw', 'survey'), ['sex'], value='income', modulus=10000000, params=%s, "
                     "ptable=ref('sdc_ptable')) }}", "has no column type, so it is not a magnitude ptable"),
    "ptable_in_params": ("{{ sdc.ckm_sum(source('raw', 'survey'), ['sex'], value='income', modulus=10000000, "
                         "params=dict(%s, ptable='nums.csv')) }}", "ckm_sum (params=): ptable names a file"),
    "holdings_rule": ("{{ sdc.ckm_sum(source('raw', 'survey'), ['sex'], value='income', modulus=10000000, "
                      "params=dict(%s, sensitive=['holdings:3'])) }}",
                      "ckm_sum (params=): cannot read the sensitivity rule 'holdings:3'"),
    "weighted_top_k": ("{{ sdc.ckm_count(source('raw', 'survey'), ['sex'], modulus=10000000, weight='sampling_weight', "
                       "params=dict(%s, top_k=7)) }}", "ckm_count (params=): top_k must be a whole number from 1 to 6"),
    "mean_dims": ("{{ sdc.ckm_mean(ref('good_sums'), ref('good_counts'), ['sex']) }}",
                  "ckm_mean: dims sex are not the dimensions of"),
    "dim_count": ("{{ sdc.ckm_sum(source('raw', 'survey_count'), ['count'], value='income', modulus=10000000, "
                  "params=%s) }}", "dimension 'count' has the name of a column the method adds"),
}


@pytest.fixture(scope="module")
def mistakes_project(tmp_path_factory, nums_ptable):
    root = tmp_path_factory.mktemp("mistakes")
    p = ScratchProject(root / "project")
    load_microdata(p.db, MICRODATA, "survey", key_mode="existing", key_column="rkeys", modulus=10**7)
    load_microdata(p.db, MICRODATA, "survey4096", id_column="row_id", key_mode="random", modulus=4096)
    renamed = root / "survey_count.csv"
    renamed.write_text(MICRODATA.read_text().replace("row_id,sex,", "row_id,count,", 1))
    load_microdata(p.db, renamed, "survey_count", key_mode="existing", key_column="rkeys", modulus=10**7)
    p.sources(["survey", "survey4096", "survey_count"])
    p.seed("sdc_nums_ptable", nums_ptable.read_text())
    params = repr(PARAMS)
    p.model("good_sums", "{{ sdc.ckm_published(ref('good_sums_audit')) }}")
    p.model("good_sums_audit", "{{ sdc.ckm_sum(source('raw', 'survey'), ['sex', 'roof'], value='income', "
            f"modulus=10000000, params={params}, audit=true) }}}}")
    p.model("good_counts", "{{ sdc.ckm_published(ref('good_counts_audit')) }}")
    p.model("good_counts_audit", "{{ sdc.ckm_count(source('raw', 'survey'), ['sex', 'roof'], modulus=10000000) }}")
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    return p


@pytest.mark.parametrize("model", MISTAKES)
def test_dbt_names_magnitude_mistakes(mistakes_project, model):
    """Each mistake in a model of its own (a compile error stops the whole parse), built alone."""
    sql = MISTAKES[model][0]
    mistakes_project.model(model, sql.replace("%s", repr(PARAMS)) if "%s" in sql else sql)
    try:
        result = mistakes_project.dbt("build", "--select", model)
    finally:
        (mistakes_project.root / "models" / f"{model}.sql").unlink()
    assert result.returncode != 0
    assert MISTAKES[model][1] in result.stdout, result.stdout[-3000:]
    con = duckdb.connect(str(mistakes_project.db), read_only=True)
    try:
        built = con.execute("select count(*) from duckdb_tables() where table_name = ?", [model]).fetchone()[0]
    finally:
        con.close()
    assert built == 0  # nothing written
