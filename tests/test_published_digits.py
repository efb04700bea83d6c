"""New-user trial D16: published magnitudes can be rounded (digits=, sdc ckm --digits) after the noise, which
stays the method's; suppressed_table gives counts as integers."""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest

import sdc.ckm
from sdc.cli import main
from sdc.errors import SdcError
from sdc.suppression.pipeline import suppress_table, suppressed_table

from conftest import DATA, REPO

MICRO = DATA / "cellkey_testdata_with_rkeys.csv"
PTABLE = REPO / "demo" / "seeds" / "sdc_ptable.csv"
NUMS = REPO / "demo" / "seeds" / "sdc_nums_ptable.csv"
PARAMS = {"preset": "cellkey", "type": "top_contr", "top_k": 3,
          "multiplier": {"type": "flex", "fp": 1000, "p": [0.3, 0.03], "epsilon": [1, 0.5, 0.2], "q": 3},
          "mu_c": 2, "sensitive": ["freq:40"], "separation": True, "ptable": str(NUMS)}
SUM = dict(value="income", weight="sampling_weight", record_key="rkeys", modulus=10**7, params=PARAMS)


@pytest.mark.parametrize("digits", [2, 0, -3])
def test_sum_table_rounds_value_and_weighted_value_after_the_noise(digits):
    exact = sdc.ckm.sum_table(MICRO, ["sex", "roof"], **SUM, digits=None)
    rounded = sdc.ckm.sum_table(MICRO, ["sex", "roof"], **SUM, digits=digits)
    assert list(rounded.columns) == list(exact.columns) == ["sex", "roof", "value", "weighted_value"]
    assert (rounded[["sex", "roof"]] == exact[["sex", "roof"]]).all().all()
    unit = 10.0 ** -digits
    for measure in ("value", "weighted_value"):
        got, noisy = rounded[measure].to_numpy(float), exact[measure].to_numpy(float)
        assert np.abs(got - noisy).max() <= unit / 2 * (1 + 1e-9)  # the nearest multiple of the unit
        if digits > 0:  # the double nearest to a number of `digits` decimals: its shortest repr has no more
            assert max(len(repr(float(x)).split(".")[1]) for x in got) == digits
        else:
            assert all(x.is_integer() and int(x) % int(unit) == 0 for x in got)
        assert np.abs(got - noisy).max() > 0  # the noisy sums had more digits: rounding changed them


def test_count_table_rounds_the_weighted_count_and_leaves_the_count():
    options = dict(record_key="rkeys", modulus=10**7, ptable=PTABLE, weight="sampling_weight",
                   weighted_count="mean_weight")
    exact = sdc.ckm.count_table(MICRO, ["sex", "age"], **options, digits=None)
    rounded = sdc.ckm.count_table(MICRO, ["sex", "age"], **options, digits=-1)
    assert rounded["count"].tolist() == exact["count"].tolist()
    assert rounded["weighted_count"].tolist() == [int(10 * np.floor(w / 10 + 0.5)) for w in exact["weighted_count"]]


def test_sdc_ckm_digits_writes_the_rounded_numbers(tmp_path, capsys):
    shutil.copy(MICRO, tmp_path / "micro.csv")
    (tmp_path / "mag.yml").write_text("\n".join(f"{k}: {v!r}" if isinstance(v, str) else f"{k}: {v}"
                                                for k, v in PARAMS.items()).replace("True", "true") + "\n")
    base = ["ckm", "--input", str(tmp_path / "micro.csv"), "--dims", "sex,roof", "--record-key", "rkeys",
            "--key-digits", "7", "--value", "income", "--params", str(tmp_path / "mag.yml")]
    assert main(base + ["--digits", "none", "--out", str(tmp_path / "exact.csv")]) == 0
    assert main(base + ["--digits", "-2", "--out", str(tmp_path / "hundreds.csv")]) == 0
    exact = list(csv.DictReader((tmp_path / "exact.csv").open()))
    hundreds = list(csv.DictReader((tmp_path / "hundreds.csv").open()))
    assert [(r["sex"], r["roof"]) for r in hundreds] == [(r["sex"], r["roof"]) for r in exact]
    for r, e in zip(hundreds, exact):
        assert r["value"].lstrip("-").isdigit() and int(r["value"]) % 100 == 0  # printed as a whole number
        assert abs(int(r["value"]) - float(e["value"])) <= 50


@pytest.mark.parametrize("digits, message", [
    (1.5, "digits (of the published magnitudes) must be a whole number from -15 to 15, got 1.5"),
    (True, "must be a whole number from -15 to 15, got True"),
    (16, "got 16"),
    ("2); drop table x; --", "got '2); drop table x; --'"),
])
def test_digits_that_are_no_small_whole_number_are_refused(digits, message):
    with pytest.raises(SdcError, match=None) as error:
        sdc.ckm.sum_table(MICRO, ["sex"], **SUM, digits=digits)
    assert message in str(error.value)


def test_digits_of_a_count_table_without_weight_are_refused(tmp_path, capsys):
    with pytest.raises(SdcError, match="this table has none"):
        sdc.ckm.count_table(MICRO, ["sex"], record_key="rkeys", modulus=10**7, ptable=PTABLE, digits=0)


def test_suppressed_table_gives_counts_as_integers(tmp_path):
    table = suppressed_table(MICRO, ["sex", "age"], ["freq:10"])
    assert str(table["published_value"].dtype) == "Int64"
    suppress_table(MICRO, ["sex", "age"], ["freq:10"], tmp_path / "cells.csv")
    written = list(csv.DictReader((tmp_path / "cells.csv").open()))
    assert [None if v is None or v is pd_na() else int(v) for v in table["published_value"].astype(object)] == [
        int(r["published_value"]) if r["published_value"] else None for r in written]
    assert table["published_value"].isna().sum() == 4  # 2 primary and 2 secondary suppressions
    audit = suppressed_table(MICRO, ["sex", "age"], ["freq:10"], audit=True)
    assert str(audit["freq"].dtype) == "Int64" and audit["freq"].iloc[0] == 4580  # the grand total, all records


def pd_na():
    import pandas as pd

    return pd.NA
