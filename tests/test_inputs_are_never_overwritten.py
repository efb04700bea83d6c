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


KEPT = b"id,sex,income\n1,m,500\n2,f,700\n"   # someone's microdata, not an output of any sdc command
SAS_ANON = "kreise.csv"


@pytest.mark.parametrize("args, out", [
    (CKM, "cells.csv"),
    (["suppress", "--input", "micro.csv", "--dims", "sex", "--rule", "freq:3", "--out"], "cells.csv"),
    (["microaggregate", "--input", "micro.csv", "--column", "income", "--k", "3", "--out"], "copy.csv"),
    (["microaggregate", "--input", "micro.csv", "--column", "income", "--k", "3", "--out", "copy.csv",
      "--report"], "report.json"),
    (["ptable", "--D", "3", "--V", "1", "--out"], "ptable_new.csv"),
    (["ptable", "--D", "3", "--V", "1", "--plot"], "plot.png"),
    (["sas-anon", "--input", SAS_ANON, "--levels", "Quartier,Kreis", "--value", "Wert", "--out"], "anon.csv"),
    (["demo", "generate", "--rows", "200", "--out"], "students.parquet"),
])
def test_a_file_the_command_did_not_write_is_not_replaced_and_its_own_output_is(files, monkeypatch, capsys, args,
                                                                               out):
    """Issue 17: no command writes over a file it did not create unless told to (deleting it tells it to)."""
    monkeypatch.chdir(files)
    (files / SAS_ANON).write_text("Kreis,Quartier,Wert\n0,0,28\n1,0,9\n1,1,4\n1,2,5\n2,0,19\n2,1,10\n2,2,9\n")
    (files / out).write_bytes(KEPT)
    assert main(args + [out]) == 2
    assert "exists and is not an earlier output of" in capsys.readouterr().err
    assert (files / out).read_bytes() == KEPT
    (files / out).unlink()
    for _ in range(2):  # its own output it replaces
        assert main(args + [out]) == 0, capsys.readouterr().err
    assert (files / out).read_bytes() != KEPT
