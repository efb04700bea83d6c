"""Issue 17, part 3: `--out` equal to an input (microdata, ptable, hierarchy) overwrote it; now each command
refuses, naming both, and the input stays byte for byte."""

import shutil

import pytest

from sdc.cli import main

from conftest import DATA, REPO


@pytest.fixture
def files(tmp_path):
    shutil.copy(DATA / "cellkey_testdata_with_rkeys.csv", tmp_path / "micro.csv")
    shutil.copy(REPO / "demo" / "seeds" / "sdc_ptable.csv", tmp_path / "ptable.csv")
    return tmp_path


CKM = ["ckm", "--input", "micro.csv", "--dims", "sex", "--record-key", "rkeys", "--key-digits", "7",
       "--ptable", "ptable.csv", "--out"]


@pytest.mark.parametrize("args, out", [
    (CKM, "micro.csv"),
    (CKM, "ptable.csv"),
    (CKM, "./sub/../micro.csv"),
    (["suppress", "--input", "micro.csv", "--dims", "sex", "--rule", "freq:3", "--out"], "micro.csv"),
    (["microaggregate", "--input", "micro.csv", "--column", "income", "--k", "3", "--out"], "micro.csv"),
])
def test_out_equal_to_an_input_is_refused_and_the_input_stays(files, monkeypatch, capsys, args, out):
    monkeypatch.chdir(files)
    (files / "sub").mkdir()
    before = {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()}
    assert main(args + [out]) == 2
    assert "is the input file" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()} == before
