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

import errno
import json
import os
from pathlib import Path

import pytest

import sdc.files
from sdc.cli import main
from sdc.conventions import PARQUET_MARKER_FILE
from test_faults import _lock, one_line, publication_inputs


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


class _FullDisk:
    """sdc.files' view of os, whose write fails as on a full disk."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def write(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")


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
    monkeypatch.setattr(sdc.files, "os", _FullDisk())
    assert main(release["args"] + ["--audit-json", str(audit)]) == 2
    printed = capsys.readouterr()
    assert one_line(printed.err, "publish") == f"cannot write {audit}: no space left on device"
    assert printed.out == ""
    assert state(tmp_path) == before
