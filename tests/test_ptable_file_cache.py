"""Ptable files read once per content, also across processes (sdc.ptable.file_cache): the checked table is
kept in the user's cache folder (XDG_CACHE_HOME/sdc/ptables, 0700). These tests read tables with the cache
and without it and compare them entry for entry with the reader's table; they spoil the cache (cut short,
another file's bytes, a bound moved, a negative count, another table's sound file) and check that each
spoiled entry is read from the file again; and they run ``sdc ckm`` twice to see that the second process finds
the table and publishes the same counts."""

import subprocess
import sys

import numpy as np
import pytest

from sdc.errors import SdcError
from sdc.ptable import file_cache
from sdc.ptable.formats import read_ptable

from conftest import DATA, ons_10_5_rule
from test_ptable_relation import random_ons_ptable

ONS_PTABLE = DATA / "ons" / "ptable_10_5_rule.csv"


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """An empty cache home of the test's own; the process's tables forgotten before and after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    file_cache._read.clear()
    file_cache._last_read.clear()
    yield tmp_path / "cache"
    file_cache._read.clear()
    file_cache._last_read.clear()


def cached_files(home):
    return sorted((home / "sdc" / file_cache.CACHE_FOLDER).glob("*.npz"))


def assert_same_table(table, expected):
    for name in ("i", "j", "lb_units", "ub_units"):
        assert np.array_equal(getattr(table, name), getattr(expected, name)), name
    assert (table.reuse_from, table.key_modulus) == (expected.reuse_from, expected.key_modulus)


def read_again(path):
    """The table as a new process finds it: nothing kept in this one."""
    file_cache._read.clear()
    return file_cache.read_ptable_file(path)


def refuse_to_parse(monkeypatch):
    def parse(*args, **kwargs):
        raise AssertionError("the file was read again")
    monkeypatch.setattr(file_cache, "parse_ptable", parse)


def test_a_ptable_file_is_read_once_and_then_taken_from_the_users_cache(cache_home, monkeypatch, tmp_path):
    random = tmp_path / "random_ons.csv"
    random.write_text(random_ons_ptable(rows=60, keys=256))
    for path in (ONS_PTABLE, random):
        assert_same_table(file_cache.read_ptable_file(path), read_ptable(path)[0])
    folder = cache_home / "sdc" / file_cache.CACHE_FOLDER
    assert len(cached_files(cache_home)) == 2 and folder.stat().st_mode & 0o777 == 0o700
    expected = read_ptable(random)[0]
    assert len(expected) > 10_000  # short runs of one noise: about as many intervals as lines
    refuse_to_parse(monkeypatch)
    assert_same_table(read_again(random), expected)
    table = read_again(ONS_PTABLE)
    assert (table.reuse_from, table.key_modulus, table.max_i) == (501, 256, 750)  # ONS's rule, kept
    assert table.lookup(12, 0.5) == {0: 0, 1: -1, 2: -2, 3: 2, 4: 1}[12 % 5]  # the noise


def test_a_changed_file_is_read_again_and_a_copy_elsewhere_is_found(cache_home, tmp_path, monkeypatch):
    path = tmp_path / "ptable.csv"
    path.write_text(ons_10_5_rule(20))
    before = file_cache.read_ptable_file(path)
    path.write_text(ons_10_5_rule(20).replace("\n12,7,-2\n", "\n12,7,1\n"))  # one key of row 12 changed
    after = read_again(path)
    assert (before.lookup(12, 7.5 / 256), after.lookup(12, 7.5 / 256)) == (-2, 1)
    assert_same_table(after, read_ptable(path)[0])
    copy = tmp_path / "elsewhere" / "same.csv"
    copy.parent.mkdir()
    copy.write_text(path.read_text())
    refuse_to_parse(monkeypatch)
    assert_same_table(read_again(copy), after)  # named by its content, not by its path
    assert len(cached_files(cache_home)) == 2


def test_a_file_read_again_with_the_same_bytes_is_not_hashed_again(cache_home, tmp_path, monkeypatch):
    """The bytes of a file's last read are kept with their digest: the same bytes again are compared, not hashed;
    a change of the same size, made at once (no file time could tell), is hashed and read again."""
    path = tmp_path / "ptable.csv"
    path.write_text(ons_10_5_rule(20))
    first = file_cache.read_ptable_file(path)
    hashed = []
    real_sha256 = file_cache.hashlib.sha256
    monkeypatch.setattr(file_cache.hashlib, "sha256", lambda *a: hashed.append(1) or real_sha256(*a))
    assert file_cache.read_ptable_file(path) is first and not hashed
    changed = ons_10_5_rule(20).replace("\n12,7,-2\n", "\n12,7,+1\n")  # the same number of bytes
    assert len(changed) == len(ons_10_5_rule(20))
    path.write_text(changed)
    after = file_cache.read_ptable_file(path)
    assert hashed == [1] and (first.lookup(12, 7.5 / 256), after.lookup(12, 7.5 / 256)) == (-2, 1)
    path.write_text(ons_10_5_rule(20))  # back as it was: hashed again, the first table
    assert file_cache.read_ptable_file(path) is first and hashed == [1, 1]


def spoil(file, **arrays):
    """Rewrite a cache file with some of its arrays replaced."""
    with np.load(file) as stored:
        content = {name: stored[name] for name in stored.files}
    content.update(arrays)
    np.savez(file, **content)


@pytest.mark.parametrize("spoiled", ["cut short", "another file's bytes", "a bound moved", "a negative count",
                                     "a reuse row beyond the table", "unequal lengths", "another table's file"])
def test_a_spoiled_cache_file_is_not_used_the_file_is_read_again(cache_home, tmp_path, spoiled):
    path = tmp_path / "ptable.csv"
    path.write_text(ons_10_5_rule(20))
    expected = read_ptable(path)[0]
    file_cache.read_ptable_file(path)
    (file,) = cached_files(cache_home)
    with np.load(file) as stored:
        i, j, ub, rules = (stored[name].astype(np.int64) for name in ("i", "j", "ub_units", "rules"))
    if spoiled == "cut short":
        file.write_bytes(file.read_bytes()[:200])
    elif spoiled == "another file's bytes":
        file.write_text(ons_10_5_rule(20))
    elif spoiled == "a bound moved":
        ub[np.flatnonzero(i == 12)[0]] -= 1  # row 12's interval ends short of 1
        spoil(file, ub_units=ub)
    elif spoiled == "a negative count":
        j[np.flatnonzero(i == 3)[0]] = -1  # 3 -> -1
        spoil(file, j=j)
    elif spoiled == "a reuse row beyond the table":
        spoil(file, rules=np.array([21, 256]))
    elif spoiled == "unequal lengths":
        spoil(file, j=j[:-1])
    else:  # a sound cache file of another table (row 12 changed), copied under this one's name
        other = tmp_path / "other.csv"
        other.write_text(ons_10_5_rule(20).replace("\n12,7,-2\n", "\n12,7,1\n"))
        file_cache.read_ptable_file(other)
        (other_file,) = set(cached_files(cache_home)) - {file}
        file.write_bytes(other_file.read_bytes())
    assert_same_table(read_again(path), expected)
    (file,) = [f for f in cached_files(cache_home) if f.name.startswith(file.name[:64])]  # stored anew, sound
    assert_same_table(file_cache._load(file), expected)


def test_without_a_cache_folder_of_its_own_every_process_reads_the_file(tmp_path, monkeypatch):
    blocked = tmp_path / "not_a_folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    file_cache._read.clear()
    assert_same_table(file_cache.read_ptable_file(ONS_PTABLE), read_ptable(ONS_PTABLE)[0])
    shared = tmp_path / "shared"
    (shared / "sdc" / file_cache.CACHE_FOLDER).mkdir(parents=True, mode=0o777)
    (shared / "sdc" / file_cache.CACHE_FOLDER).chmod(0o777)  # others may write there: not used
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    assert_same_table(read_again(ONS_PTABLE), read_ptable(ONS_PTABLE)[0])
    assert cached_files(shared) == []
    file_cache._read.clear()


def test_the_cache_keeps_the_most_recently_used_tables(cache_home, tmp_path, monkeypatch):
    monkeypatch.setattr(file_cache, "KEPT_FILES", 2)
    paths = []
    for rows in (20, 21, 22):
        paths.append(tmp_path / f"ptable_{rows}.csv")
        paths[-1].write_text(ons_10_5_rule(rows))
    first = read_again(paths[0])
    read_again(paths[1])
    read_again(paths[0])  # used again: newer than the second
    read_again(paths[2])
    kept = {file_cache._load(file).max_i for file in cached_files(cache_home)}
    assert kept == {first.max_i, 22}


def test_a_file_that_cannot_be_read_is_named_as_before(cache_home, tmp_path):
    with pytest.raises(SdcError, match=r"ptable file not found: .*missing\.csv"):
        file_cache.read_ptable_file(tmp_path / "missing.csv")
    broken = tmp_path / "broken.csv"
    broken.write_text("pcv,ckey,pvalue\n1,0,-1\n1,1,x\n")
    with pytest.raises(SdcError) as caught:
        file_cache.read_ptable_file(broken)
    with pytest.raises(SdcError) as reference:
        read_ptable(broken)
    assert str(caught.value) == str(reference.value) and "line 3" in str(caught.value)
    assert cached_files(cache_home) == []


def test_sdc_ckm_in_a_second_process_takes_the_table_from_the_cache(tmp_path):
    """Two processes with one cache home: the first stores the table, the second publishes the same counts
    from it (its reader is made to fail, so a table read from the file would stop it)."""
    import os

    data = tmp_path / "micro.csv"
    data.write_text("rkey,region\n" + "".join(f"{(k * 37) % 256},{'N' if k % 3 else 'S'}\n" for k in range(300)))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    run = [sys.executable, "-c", "import sys; from sdc.cli import main; sys.exit(main())"]
    arguments = ["ckm", "--input", str(data), "--dims", "region", "--record-key", "rkey", "--modulus", "256",
                 "--ptable", str(ONS_PTABLE), "--totals", "cube"]
    first = subprocess.run(run + arguments + ["--out", str(tmp_path / "first.csv")], capture_output=True,
                           text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    no_reader = [sys.executable, "-c", "import sys; import sdc.ptable.file_cache as c\n"
                 "def parse(*a, **k): raise SystemExit('the ptable file was read again')\n"
                 "c.parse_ptable = parse\nfrom sdc.cli import main; sys.exit(main())"]
    second = subprocess.run(no_reader + arguments + ["--out", str(tmp_path / "second.csv")], capture_output=True,
                            text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stderr
    published = (tmp_path / "first.csv").read_text()
    assert (tmp_path / "second.csv").read_text() == published
    assert published.splitlines()[0] == "region,count" and len(published.splitlines()) == 4
