"""Issue 17, part 4: faults and rough edges are one line and exit 2, and change nothing: a full disk (no
temporary file left behind, the previous output as it was), a rollback that fails after a failed commit,
files that are not UTF-8, an output path that is a folder or in a missing folder, sas-anon input that is no
number, and a ptable whose i is huge."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from test_publish import made_audit_parent

import sdc.warehouse.database
import sdc.demo
import sdc.files
import sdc.microaggregation.tables
from sdc.cli import main

from conftest import DATA, REPO

MICRO = DATA / "cellkey_testdata_with_rkeys.csv"
PTABLE = REPO / "demo" / "seeds" / "sdc_ptable.csv"
KREISE = "Kreis,Quartier,Wert\n0,0,28\n1,0,9\n1,1,2\n1,2,7\n2,0,19\n2,1,19\n"


def one_line(err: str, command: str) -> str:
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith(f"sdc {command}: error: "), err
    return err.removeprefix(f"sdc {command}: error: ").rstrip("\n")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (temporary ones too: their names start with a dot) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def publication_inputs(tmp: Path) -> tuple[Path, Path]:
    """A warehouse with one protected table and a manifest that tags it sdc_publish."""
    db = tmp / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema protected")
    sql = "select a, 'x' || a as b from (select unnest(range(20000)) as a) as numbers"
    con.execute(f"create table protected.counts as {sql}")
    # a seed of the dbt project (readers get sdc's steps and seeds), whose table sdc compares with its file
    seeds = tmp / "seeds"
    seeds.mkdir(exist_ok=True)
    con.execute(f"copy ({sql}) to '{seeds / 'counts.csv'}' (header)")
    made_audit_parent(con)
    con.close()
    node = {"resource_type": "seed", "name": "counts", "alias": "counts", "schema": "protected", "database": "wh",
            "tags": ["sdc_publish"], "config": {"materialized": "seed", "tags": ["sdc_publish"]},
            "depends_on": {"macros": [], "nodes": []}, "root_path": str(seeds), "original_file_path": "counts.csv"}
    manifest = tmp / "manifest.json"
    manifest.write_text(json.dumps({"metadata": {}, "nodes": {"seed.p.counts": node}, "sources": {}, "macros": {}}))
    return db, manifest


@pytest.fixture
def inputs(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(MICRO, folder / "micro.csv")
    shutil.copy(PTABLE, folder / "ptable.csv")
    (folder / "kreise.csv").write_text(KREISE)
    db, manifest = publication_inputs(folder)
    return {"micro": folder / "micro.csv", "ptable": folder / "ptable.csv", "kreise": folder / "kreise.csv",
            "db": db, "manifest": manifest}


# Each command that writes a file: (command, arguments before the output path, how the output is written).
# "python": sdc writes it (os.write); "duckdb": a DuckDB COPY or database; "matplotlib": savefig.
WRITERS = {
    "ptable --out": ("ptable", lambda i: ["--D", "2", "--V", "0.5", "--out"], "python"),
    "ptable --plot": ("ptable", lambda i: ["--D", "2", "--V", "0.5", "--plot"], "matplotlib"),
    "ckm": ("ckm", lambda i: ["--input", str(i["micro"]), "--dims", "sex", "--record-key", "rkeys", "--key-digits", "7",
                              "--ptable", str(i["ptable"]), "--out"], "python"),
    "suppress": ("suppress", lambda i: ["--input", str(i["micro"]), "--dims", "sex", "--rule", "freq:3", "--out"], "python"),
    "sas-anon": ("sas-anon", lambda i: ["--input", str(i["kreise"]), "--levels", "Quartier,Kreis", "--value", "Wert",
                                        "--out"], "python"),
    "microaggregate --out": ("microaggregate", lambda i: ["--input", str(i["micro"]), "--column", "income", "--k", "3",
                                                          "--out"], "duckdb"),
    "microaggregate --report": ("microaggregate", lambda i: ["--input", str(i["micro"]), "--column", "income", "--k", "3",
                                                             "--out", str(i["micro"].with_name("m.csv")), "--report"],
                                "python"),
    "demo generate": ("demo", lambda i: ["generate", "--rows", "2000", "--out"], "duckdb"),
    "publish": ("publish", lambda i: ["--db", str(i["db"]), "--manifest", str(i["manifest"]), "--out"], "duckdb"),
}
OUTPUT_NAME = {"ptable --plot": "out.png", "microaggregate --report": "out.json", "publish": "out.duckdb",
               "demo generate": "out.parquet"}


def output_name(writer: str) -> str:
    return OUTPUT_NAME.get(writer, "out.csv")


def previous_output(writer: str, inputs, out: Path, capsys) -> None:
    """An earlier output of the command at ``out``: the one it may replace, and must leave as it was."""
    command, arguments, _ = WRITERS[writer]
    assert main([command, *arguments(inputs), str(out)]) == 0
    capsys.readouterr()


# ------------------------------------------------------------------------------------------ a full disk
class _Os:
    """sdc.files' view of os, whose write fails as on a full disk."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def write(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")


class _FullDiskConnection:
    """A DuckDB connection whose writes of files fail as DuckDB's do on a full disk (its messages verbatim)."""

    def __init__(self, con):
        self._con = con

    def __getattr__(self, name):
        return getattr(self._con, name)

    def execute(self, sql, *args):
        words = sql.lstrip().lower()
        if words.startswith("copy") and " to " in words:
            target = sql.rsplit(" to ", 1)[1].split("'")[1]
            Path(target).write_bytes(b"PAR1 half a file")  # DuckDB had begun writing
            raise duckdb.IOException('IO Error: Async write failed for range [offset=0, size=111]: {"exception_type":'
                                     f'"IO","exception_message":"Could not write file \\"{target}\\": No space left on '
                                     'device","errno":"28"}')
        if words.startswith("detach"):
            raise duckdb.TransactionException('TransactionContext Error: Failed to commit: Could not write file '
                                              '"publication.duckdb.wal": No space left on device')
        return self._con.execute(sql, *args)


def _fill_the_disk(monkeypatch, how: str) -> None:
    monkeypatch.setattr(sdc.files, "os", _Os())
    if how == "matplotlib":
        import matplotlib.figure

        def savefig(self, path, **kwargs):
            Path(path).write_bytes(b"\x89PNG half a file")
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    if how == "duckdb":
        real_connect = duckdb.connect

        class FullDiskDuckdb:
            def __getattr__(self, name):
                return getattr(duckdb, name)

            @staticmethod
            def connect(*args, **kwargs):
                return _FullDiskConnection(real_connect(*args, **kwargs))

        # every DuckDB database sdc opens, it opens through sdc.warehouse.database.duckdb_connect
        monkeypatch.setattr(sdc.warehouse.database, "duckdb", FullDiskDuckdb())


@pytest.mark.parametrize("writer", WRITERS)
def test_a_full_disk_is_one_line_and_leaves_the_previous_output_and_no_temporary_file(
        writer, inputs, tmp_path, monkeypatch, capsys):
    command, arguments, how = WRITERS[writer]
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / output_name(writer)
    if writer != "publish":  # a publication is replaced only when sdc wrote it; there is none yet
        previous_output(writer, inputs, out, capsys)
    before, inputs_before = snapshot(folder), snapshot(inputs["micro"].parent)
    monkeypatch.chdir(folder)
    _fill_the_disk(monkeypatch, how)
    assert main([command, *arguments(inputs), str(out)]) == 2
    # here every file sdc writes fails, the mark of a DuckDB copy too: microaggregate stops at its copy (m.csv),
    # before the report (a report alone on a full disk: test_a_real_full_disk_where_a_tmpfs_can_be_mounted)
    failed = inputs["micro"].with_name("m.csv") if writer == "microaggregate --report" else out
    assert one_line(capsys.readouterr().err, command.split()[0]) == f"cannot write {failed}: no space left on device"
    assert snapshot(folder) == before and snapshot(inputs["micro"].parent) == inputs_before


def test_a_full_disk_under_the_parquet_folder_is_named_and_cleaned_up(inputs, tmp_path, monkeypatch, capsys):
    _fill_the_disk(monkeypatch, "duckdb")
    parquet = tmp_path / "parquet"
    out = tmp_path / "pub.duckdb"
    assert main(["publish", "--db", str(inputs["db"]), "--manifest", str(inputs["manifest"]), "--out", str(out),
                 "--parquet", str(parquet)]) == 2
    assert one_line(capsys.readouterr().err, "publish") == f"cannot write {parquet}: no space left on device"
    assert not out.exists() and not parquet.exists()  # the folder the run created is gone again


def _mount_tmpfs(folder: Path) -> bool:
    folder.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True)
    except OSError:
        return False
    return done.returncode == 0


@pytest.mark.parametrize("writer", WRITERS)
def test_a_real_full_disk_where_a_tmpfs_can_be_mounted(writer, inputs, tmp_path, monkeypatch, capsys):
    """The same on a real full file system (a 64 KB tmpfs; needs the right to mount, e.g. root)."""
    command, arguments, _ = WRITERS[writer]
    folder = tmp_path / "full"
    if not _mount_tmpfs(folder):
        pytest.skip("cannot mount a tmpfs here")
    try:
        out = folder / output_name(writer)
        if writer != "publish":  # an earlier output, written elsewhere and copied in if it fits
            earlier = tmp_path / output_name(writer)
            previous_output(writer, inputs, earlier, capsys)
            if earlier.stat().st_size > 32 * 1024:
                pytest.skip(f"an earlier output of {writer} does not fit the 64 KB tmpfs")
            shutil.copy(earlier, out)
            shutil.copy(sdc.files.mark_path(earlier), sdc.files.mark_path(out))  # the mark that makes it sdc's
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill it to the last byte
            while os.write(fd, b"\0" * 512):
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        before = snapshot(folder)
        monkeypatch.chdir(tmp_path)
        assert main([command, *arguments(inputs), str(out)]) == 2
        assert one_line(capsys.readouterr().err, command) == f"cannot write {out}: no space left on device"
        assert snapshot(folder) == before
    finally:
        subprocess.run(["umount", str(folder)], check=True)


# ------------------------------------------------------------------------------------------ a failed rollback
class _CommitFails:
    """A connection whose commit fails for a full disk; DuckDB has then rolled back already, so a rollback
    fails too (both messages as DuckDB words them)."""

    def __init__(self, con):
        self._con = con

    def __getattr__(self, name):
        return getattr(self._con, name)

    def execute(self, sql, *args):
        if sql.strip().lower() == "commit":
            raise duckdb.TransactionException('TransactionContext Error: Failed to commit: Could not write file '
                                              '"warehouse.duckdb.wal": No space left on device')
        if sql.strip().lower() == "rollback":
            raise duckdb.TransactionException("TransactionContext Error: cannot rollback - no transaction is active")
        return self._con.execute(sql, *args)


def _warehouse(tmp_path: Path) -> Path:
    db = tmp_path / "warehouse.duckdb"
    assert main(["load", "--db", str(db), "--input", str(MICRO), "--table", "t", "--key-mode", "existing",
                 "--key-column", "rkeys", "--modulus", "10000000"]) == 0
    return db


ROLLBACKS = {
    "load": ("sdc.warehouse.loader", lambda db: ["load", "--db", str(db), "--input", str(MICRO), "--table", "t2", "--key-mode",
                                       "existing", "--key-column", "rkeys", "--modulus", "10000000"]),
    "microaggregate": ("sdc.microaggregation.tables", lambda db: ["microaggregate", "--db", str(db), "--table", "raw.t",
                                                                  "--column", "income", "--k", "3", "--out-table",
                                                                  "safe.t"]),
    "sql install": ("sdc.warehouse.sql_install", lambda db: ["sql", "install", "--db", str(db), "--ptable", str(PTABLE)]),
}


@pytest.mark.parametrize("command", ROLLBACKS)
def test_a_failed_rollback_does_not_hide_the_full_disk_that_stopped_the_commit(command, tmp_path, monkeypatch, capsys):
    import importlib

    db = _warehouse(tmp_path)
    capsys.readouterr()
    module_name, arguments = ROLLBACKS[command]
    module = importlib.import_module(module_name)
    real = module.connect
    monkeypatch.setattr(module, "connect", lambda *a, **k: _CommitFails(real(*a, **k)))
    before = duckdb.connect(str(db), read_only=True)
    tables = before.execute("select schema_name, table_name from duckdb_tables() order by all").fetchall()
    macros = before.execute("select count(*) from duckdb_functions() where function_name like 'sdc_%'").fetchone()
    before.close()
    assert main(arguments(db)) == 2
    message = one_line(capsys.readouterr().err, command.split()[0])
    assert message.endswith(f"cannot write {db}: no space left on device") and "cannot rollback" not in message
    after = duckdb.connect(str(db), read_only=True)
    assert after.execute("select schema_name, table_name from duckdb_tables() order by all").fetchall() == tables
    assert after.execute("select count(*) from duckdb_functions() where function_name like 'sdc_%'").fetchone() == macros
    after.close()


# ------------------------------------------------------------------------------------------ not UTF-8
LATIN1_CSV = "sex,rkeys,income\nm\xe4nnlich,0.1,5\n".encode("latin-1")


def _not_utf8_cases(tmp: Path) -> dict[str, tuple[list[str], Path]]:
    """(arguments, the file that is not UTF-8) per kind of input."""
    bad = tmp / "bad"
    bad.mkdir()
    config = bad / "facts.yml"
    config.write_bytes('facts:\n  f_man: "sex = \'m\xe4nnlich\'"\n'.encode("latin-1"))
    hierarchy = bad / "hierarchy.csv"
    hierarchy.write_bytes("dimension,code,parent\nsex,Gesamt,\nsex,m\xe4nnlich,Gesamt\n".encode("latin-1"))
    cells = bad / "cells.csv"
    cells.write_bytes("sex,freq,status\nTotal,10,published\nm\xe4nnlich,10,published\n".encode("latin-1"))
    ptable = bad / "ptable.csv"
    ptable.write_bytes(PTABLE.read_bytes().replace(b"i,j,p", b"\xefi,j,p", 1))
    micro = bad / "micro.csv"
    micro.write_bytes(LATIN1_CSV)
    duckdb.connect(str(tmp / "w.duckdb")).close()  # an existing warehouse
    out = ["--out", str(tmp / "out.csv")]
    ckm = ["ckm", "--dims", "sex", "--record-key", "rkeys", "--key-digits", "7"]
    return {
        "load --config": (["load", "--db", str(tmp / "w.duckdb"), "--input", str(MICRO), "--table", "t", "--key-mode",
                           "existing", "--key-column", "rkeys", "--modulus", "10000000", "--config", str(config)],
                          config),
        "ckm --hierarchy": (ckm + ["--input", str(MICRO), "--ptable", str(PTABLE), "--hierarchy", str(hierarchy)] + out,
                            hierarchy),
        "ckm --ptable": (ckm + ["--input", str(MICRO), "--ptable", str(ptable)] + out, ptable),
        "ptable --import": (["ptable", "--import", str(ptable)], ptable),
        "ckm --input": (ckm + ["--input", str(micro), "--ptable", str(PTABLE)] + out, micro),
        "suppress --input": (["suppress", "--input", str(micro), "--dims", "sex", "--rule", "freq:3"] + out, micro),
        "microaggregate --input": (["microaggregate", "--input", str(micro), "--column", "income", "--k", "3"] + out,
                                   micro),
        "load --input": (["load", "--db", str(tmp / "w.duckdb"), "--input", str(micro), "--table", "t", "--key-mode",
                          "existing", "--key-column", "rkeys", "--modulus", "10"], micro),
        "suppress --hierarchy": (["suppress", "--input", str(MICRO), "--dims", "sex", "--rule", "freq:3", "--hierarchy",
                                  str(hierarchy)] + out, hierarchy),
        "audit --cells": (["audit", "--cells", str(cells)], cells),
    }


NOT_UTF8 = [
    "load --config", "ckm --hierarchy", "ckm --ptable", "ptable --import", "ckm --input", "suppress --input",
    "microaggregate --input", "load --input", "suppress --hierarchy", "audit --cells"]


@pytest.mark.parametrize("case", NOT_UTF8)
def test_a_file_that_is_not_utf8_is_named_with_the_offset_of_its_first_bad_byte(case, tmp_path, capsys):
    arguments, path = _not_utf8_cases(tmp_path)[case]
    data = path.read_bytes()
    with pytest.raises(UnicodeDecodeError) as bad:
        data.decode("utf-8")
    offset, byte = bad.value.start, data[bad.value.start]
    before = snapshot(tmp_path)
    assert main(arguments) == 2
    message = one_line(capsys.readouterr().err, arguments[0])
    assert message.endswith(f"{path} is not valid UTF-8 (byte 0x{byte:02x} at offset {offset}); save it as UTF-8")
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------ output paths
OUTPUTS = {
    **{name: (command, arguments) for name, (command, arguments, _) in WRITERS.items()},
    "demo generate --enterprises": ("demo", lambda i: ["generate", "--rows", "10", "--out",
                                                       str(i["micro"].with_name("students.csv")), "--enterprises"]),
}


@pytest.mark.parametrize("where", ["a folder", "in a missing folder"])
@pytest.mark.parametrize("option", OUTPUTS)
def test_an_output_path_that_is_a_folder_or_in_a_missing_folder_is_refused_before_any_work(
        option, where, inputs, tmp_path, capsys):
    command, arguments = OUTPUTS[option]
    out = tmp_path / "target" if where == "a folder" else tmp_path / "missing" / "out.csv"
    if where == "a folder":
        out.mkdir()
        (out / "kept.txt").write_text("kept\n")
    before = snapshot(tmp_path)
    assert main([command, *arguments(inputs), str(out)]) == 2
    message = one_line(capsys.readouterr().err, command)
    if option == "publish":  # sdc publish words it its own way (tests/test_publish.py)
        expected = (f"--out {out} exists and is not a file" if where == "a folder"
                    else f"output folder {out.parent} does not exist (--out {out})")
    else:
        expected = (f"cannot write {out}: it is a folder; give a file name" if where == "a folder"
                    else f"cannot write {out}: folder {out.parent} does not exist")
    assert message == expected
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------ sas-anon
@pytest.mark.parametrize("text, message", [
    ("Kreis,Quartier,Wert\n0,0,28\n1,0,viel\n", "{file}, row 2 below the header: value column 'Wert' holds 'viel', "
                                                 "not a number"),
    ("Kreis,Quartier,Wert\n0,0,28\neins,0,9\n", "{file}, row 2 below the header: level column 'Kreis' holds 'eins', "
                                                 "not a whole-number code (0 for the total)"),
    ("Kreis,Quartier,Wert\n0,0,28\n1,0,\n", "{file}, row 2 below the header: column 'Wert' is missing or empty"),
    ("Kreis,Quartier,Wert\n", "{file}: no rows below the header"),
    ("Kreis,Quartier,Betrag\n0,0,28\n", "{file}: column 'Wert' is not in the header (Kreis, Quartier, Betrag)"),
])
def test_sas_anon_input_that_is_no_number_names_the_file_the_row_and_the_column(text, message, tmp_path, capsys):
    source = tmp_path / "kreise.csv"
    source.write_text(text)
    out = tmp_path / "out.csv"
    assert main(["sas-anon", "--input", str(source), "--levels", "Quartier,Kreis", "--value", "Wert",
                 "--out", str(out)]) == 2
    assert one_line(capsys.readouterr().err, "sas-anon") == message.format(file=source)
    assert not out.exists()


# ------------------------------------------------------------------------------------------ a huge i
HUGE = {
    "sdc, i = 10^9": ("i,j,p,v,p_int_lb,p_int_ub\n1,1,1,0,0,1\n2,2,1,0,0,1\n1000000000,1000000000,1,0,0,1\n",
                      "{path}: row i=3 is missing; rows must run 1..1000000000 without gaps (the last row stands for every "
                      "larger value); 999999997 rows are missing"),
    "sdc, i = 10^8": ("i,j,p,v,p_int_lb,p_int_ub\n1,1,1,0,0,1\n100000000,100000000,1,0,0,1\n",
                      "{path}: row i=2 is missing; rows must run 1..100000000 without gaps (the last row stands for every "
                      "larger value); 99999998 rows are missing"),
    "ons, cell key 10^9": ("pcv,ckey,pvalue\n1,0-1000000000,0\n2,0,0\n",
                           "{path}, row i=2: cell key 1 has no perturbation (1000000000 of the keys 0..1000000000 are missing)"),
}
# at most 1 GB of address space: a list of 10^8 missing rows alone would take 4 GB
LIMITED = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from sdc.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("case", HUGE)
def test_a_ptable_with_a_huge_i_fails_at_once_naming_the_first_missing_row_and_the_count(case, tmp_path):
    text, message = HUGE[case]
    path = tmp_path / "ptable.csv"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-c", LIMITED, "ptable", "--import", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"sdc ptable: error: {message.format(path=path)}\n"


# ------------------------------------------------------------------------------------------ no permission
def _run_quietly(*command: str) -> bool:
    try:
        return subprocess.run(list(command), capture_output=True).returncode == 0
    except OSError:
        return False


def _lock(path: Path):
    """Make ``path`` (a folder or a file) unwritable, for root too: immutable (chattr +i), else a read-only bind
    mount of it, else (not root) its mode; returns the function that undoes it. Fails, never skips, where
    none of these is available."""
    if _run_quietly("chattr", "+i", str(path)):
        return lambda: _run_quietly("chattr", "-i", str(path))
    if _run_quietly("mount", "--bind", str(path), str(path)):
        if _run_quietly("mount", "-o", "remount,bind,ro", str(path)):
            return lambda: _run_quietly("umount", str(path))
        _run_quietly("umount", str(path))
    if os.geteuid() != 0:
        target = path if path.is_dir() else path.parent  # as a user, a read-only file can still be renamed over
        mode = target.stat().st_mode
        os.chmod(target, 0o555)
        return lambda: os.chmod(target, mode)
    pytest.fail(f"cannot make {path} unwritable here: no chattr +i, no read-only bind mount, and running as root")


@pytest.mark.parametrize("what", ["folder", "file"])
@pytest.mark.parametrize("writer", WRITERS)
def test_a_folder_or_file_sdc_cannot_write_is_one_line_before_any_work_and_nothing_changes(
        writer, what, inputs, tmp_path, monkeypatch, capsys):
    """Red team 14: a folder that cannot be written (or an output that cannot be replaced) gave a traceback
    after the whole computation, and microaggregate --report left its --out written."""
    command, arguments, _ = WRITERS[writer]
    folder = tmp_path / "locked"
    folder.mkdir()
    out = folder / output_name(writer)
    previous_output(writer, inputs, out, capsys)
    if writer == "microaggregate --report":
        inputs["micro"].with_name("m.csv").unlink()  # the --out beside the report: must not be written either
    before, inputs_before = snapshot(folder), snapshot(inputs["micro"].parent)
    monkeypatch.chdir(tmp_path)
    unlock = _lock(folder if what == "folder" else out)
    try:
        assert main([command, *arguments(inputs), str(out)]) == 2
        printed = capsys.readouterr()
        message = one_line(printed.err, command)
        if writer != "publish":  # sdc publish words its own checks (tests/test_publish.py)
            assert printed.out == ""  # checked before the work: nothing computed, nothing printed
            assert message.startswith(f"cannot write {out}: "
                                      + ("folder " if what == "folder" else "the file there cannot be replaced")), message
        assert snapshot(folder) == before and snapshot(inputs["micro"].parent) == inputs_before
    finally:
        unlock()
