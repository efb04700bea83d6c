"""Issue 17, part 3: `--out` equal to an input (microdata, ptable, hierarchy) overwrote it; now each command
refuses, naming both, and the input stays byte for byte. Issue 25 (red team 11-13): a file that exists is
replaced only when sdc's mark says that the same command wrote exactly its bytes, never because it looks like
an output."""

import shutil

import duckdb
import pytest

from sdc.cli import main
from sdc.files import mark_path, written_by
from sdc.quoting import quote_literal

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


PARAMS = ("preset: cellkey\ntype: top_contr\ntop_k: 3\nmultiplier: {type: flex, fp: 1000, p: [0.3, 0.03], "
          "epsilon: [1, 0.5, 0.2], q: 3}\nmu_c: 2\nsensitive: ['freq:40']\nseparation: true\nptable: nums.csv\n")


def _parquet(path) -> bytes:
    """Someone's Parquet microdata (written by DuckDB, not by sdc)."""
    con = duckdb.connect()
    con.execute(f"copy (select range as id, 'f' as sex from range(50)) to {quote_literal(path)} (format parquet)")
    con.close()
    return path.read_bytes()


# Files sdc did not write that look like what a command writes: each was replaced before (red team 11-13: the
# test was the columns, a header word or the first bytes); the mark of sdc's own outputs tells them apart.
LOOK_ALIKES = {
    "last year's microdata as the microaggregated copy (red team 11)": (
        ["microaggregate", "--input", "micro.csv", "--column", "income", "--k", "3", "--out"], "micro_2023.csv",
        lambda files: (files / "micro.csv").read_bytes().replace(b"\n1,", b"\n9,", 1)),
    "a survey with a column value as a magnitude table (red team 12)": (
        CKM[:-3] + ["--value", "income", "--params", "params.yml", "--out"], "survey_values.csv",
        lambda files: b"region,value,respondent\nN,3,7\n"),
    "a table with a column count as a count table": (CKM, "counts.csv", lambda files: b"sex,count\nm,4\n"),
    "a table with a column published_text as a suppressed table": (
        ["suppress", "--input", "micro.csv", "--dims", "sex", "--rule", "freq:3", "--out"], "cells.csv",
        lambda files: b"sex,published_text\nm,4\n"),
    "a table with the column that sas-anon appends": (
        ["sas-anon", "--input", SAS_ANON, "--levels", "Quartier,Kreis", "--value", "Wert", "--out"], "anon.csv",
        lambda files: b"Kreis,Wert,Wert_fall\n1,4,A\n"),
    "a JSON list of objects with a column as a report": (
        ["microaggregate", "--input", "micro.csv", "--column", "income", "--k", "3", "--out", "copy.csv", "--report"],
        "report.json", lambda files: b'[{"column": "wages", "notes": "kept"}]\n'),
    "the office's ptable as a new ptable": (["ptable", "--D", "3", "--V", "1", "--out"], "office_ptable.csv",
                                            lambda files: (files / "ptable.csv").read_bytes()),
    "someone's PNG as the heatmap": (["ptable", "--D", "3", "--V", "1", "--plot"], "figure.png",
                                     lambda files: b"\x89PNG\r\n\x1a\n" + b"\0" * 64),
    "real Parquet microdata as the synthetic students (red team 13)": (
        ["demo", "generate", "--rows", "200", "--out"], "real_microdata.parquet",
        lambda files: _parquet(files / "real_microdata.parquet")),
}


@pytest.mark.parametrize("case", LOOK_ALIKES)
def test_a_file_that_only_looks_like_an_output_is_not_replaced(files, monkeypatch, capsys, case):
    args, out, content = LOOK_ALIKES[case]
    monkeypatch.chdir(files)
    _inputs_of_every_command(files)
    kept = content(files)
    (files / out).write_bytes(kept)
    before = {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()}
    assert main(args + [out]) == 2
    assert f"{out} exists and is not an earlier output of sdc " in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()} == before


def _inputs_of_every_command(files):
    (files / SAS_ANON).write_text("Kreis,Quartier,Wert\n0,0,28\n1,0,9\n1,1,4\n1,2,5\n2,0,19\n2,1,10\n2,2,9\n")
    (files / "params.yml").write_text(PARAMS)
    assert main(["ptable", "--table", "nums", "--D", "10", "--V", "1", "--out", str(files / "nums.csv")]) == 0


@pytest.mark.parametrize("args, out", [
    (CKM, "cells.csv"),
    (["suppress", "--input", "micro.csv", "--dims", "sex", "--rule", "freq:3", "--out"], "cells.csv"),
    (["microaggregate", "--input", "micro.csv", "--column", "income", "--k", "3", "--out"], "copy.csv"),
    (["ptable", "--D", "3", "--V", "1", "--out"], "ptable_new.csv"),
    (["demo", "generate", "--rows", "200", "--out"], "students.csv"),
])
def test_an_output_changed_since_sdc_wrote_it_is_not_replaced(files, monkeypatch, capsys, args, out):
    """The mark holds the hash of the bytes written: a file edited since (or another file moved to its name)
    is not an earlier output any more."""
    monkeypatch.chdir(files)
    assert main(args + [out]) == 0
    assert written_by(files / out) == "sdc " + args[0] + (" generate" if args[0] == "demo" else "")
    with (files / out).open("a") as handle:
        handle.write("edited,by,hand\n")
    edited = (files / out).read_bytes()
    capsys.readouterr()
    assert main(args + [out]) == 2
    assert "exists and is not an earlier output of" in capsys.readouterr().err
    assert (files / out).read_bytes() == edited


def test_the_output_of_another_command_is_not_replaced(files, monkeypatch, capsys):
    """A ckm table given as suppress --out, a ptable as a heatmap: same folder, other command."""
    monkeypatch.chdir(files)
    assert main(CKM + ["cells.csv"]) == 0
    assert main(["ptable", "--D", "3", "--V", "1", "--out", "new.csv"]) == 0
    cells, ptable = (files / "cells.csv").read_bytes(), (files / "new.csv").read_bytes()
    capsys.readouterr()
    assert main(["suppress", "--input", "micro.csv", "--dims", "sex", "--rule", "freq:3", "--out", "cells.csv"]) == 2
    assert "cells.csv exists and is not an earlier output of sdc suppress" in capsys.readouterr().err
    assert main(["ptable", "--D", "3", "--V", "1", "--plot", "new.csv"]) == 2
    assert (files / "cells.csv").read_bytes() == cells and (files / "new.csv").read_bytes() == ptable


@pytest.mark.parametrize("args", [
    ["ptable", "--import", "ptable.csv", "--format", "tauargus", "--out", "ptable.csv"],  # red team 13
    ["ptable", "--import", "mine.csv", "--out", "mine.csv"],  # sdc's own ptable is an input here too
    ["sas-anon", "--input", SAS_ANON, "--levels", "Quartier,Kreis", "--value", "Wert", "--out", SAS_ANON],
    ["microaggregate", "--input", "micro.csv", "--column", "income", "--k", "3", "--out", "copy.csv",
     "--report", "micro.csv"],
    ["microaggregate", "--input", "micro.csv", "--column", "income", "--k", "3", "--out", "copy.csv",
     "--report", "copy.csv"],
])
def test_no_output_is_an_input_of_the_command_ptable_import_included(files, monkeypatch, capsys, args):
    monkeypatch.chdir(files)
    _inputs_of_every_command(files)
    assert main(["ptable", "--import", "ptable.csv", "--out", "mine.csv"]) == 0
    before = {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()}
    capsys.readouterr()
    assert main(args) == 2
    assert "is the input file" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()} == before


def test_add_to_extends_the_ptable_that_out_names(files, monkeypatch, capsys):
    """--add-to FILE --out FILE (as make demo): the one case where an output is read first, by design."""
    monkeypatch.chdir(files)
    assert main(["ptable", "--table", "nums", "--D", "5", "--V", "1", "--out", "nums.csv"]) == 0
    assert main(["ptable", "--table", "nums", "--D", "5", "--V", "1", "--step", "5", "--icat", "1,3,5", "--optim",
                 "4,1,1", "--type", "small_cells", "--add-to", "nums.csv", "--out", "nums.csv"]) == 0
    assert {line.split(",")[-1] for line in (files / "nums.csv").read_text().splitlines()[1:]} == {"all", "small_cells"}
    assert written_by(files / "nums.csv") == "sdc ptable"


@pytest.mark.parametrize("seed", ["sdc_ptable.csv", "sdc_nums_ptable.csv"])
def test_the_committed_demo_ptables_carry_the_mark_that_lets_make_demo_rewrite_them(seed):
    """make demo writes demo/seeds/*ptable.csv with sdc ptable: the committed files carry its mark (the same
    bytes, so the rewrite leaves the checkout clean)."""
    assert written_by(REPO / "demo" / "seeds" / seed) == "sdc ptable"


@pytest.mark.parametrize("mark", [
    b"not json", b"[1, 2]", b'{"written_by": 7}', b'{"written_by": "sdc ptable", "bytes": 3, "sha256": "00"}',
    b'{"written_by": "sdc ptable; rm -rf ..", "bytes": 0, "sha256": ""}', b"\xff\xfe",
])
def test_a_mark_that_does_not_match_the_file_makes_no_output_of_it(files, monkeypatch, capsys, mark):
    """Hostile or stale marks (not JSON, another shape, another file's hash, a command that is no command)."""
    monkeypatch.chdir(files)
    (files / "office.csv").write_bytes((files / "ptable.csv").read_bytes())
    mark_path(files / "office.csv").write_bytes(mark)
    assert written_by(files / "office.csv") is None
    assert main(["ptable", "--D", "3", "--V", "1", "--out", "office.csv"]) == 2
    assert "office.csv exists and is not an earlier output of sdc ptable" in capsys.readouterr().err
    assert (files / "office.csv").read_bytes() == (files / "ptable.csv").read_bytes()


def test_a_mark_that_is_a_link_or_a_folder_writes_nothing_through_it(files, monkeypatch, capsys):
    monkeypatch.chdir(files)
    (files / "elsewhere.txt").write_text("kept\n")
    mark_path(files / "new.csv").symlink_to(files / "elsewhere.txt")
    assert main(["ptable", "--D", "3", "--V", "1", "--out", "new.csv"]) == 0
    assert (files / "elsewhere.txt").read_text() == "kept\n"  # the link was replaced, not what it points to
    assert not mark_path(files / "new.csv").is_symlink() and written_by(files / "new.csv") == "sdc ptable"
    mark_path(files / "other.csv").mkdir()
    capsys.readouterr()
    assert main(["ptable", "--D", "3", "--V", "1", "--out", "other.csv"]) == 2
    assert capsys.readouterr().err == (f"sdc ptable: error: cannot write other.csv: {mark_path('other.csv')}, where "
                                       "sdc marks its output, is a folder\n")
    assert not (files / "other.csv").exists()
