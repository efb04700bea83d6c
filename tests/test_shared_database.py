"""The table functions of a notebook (count_table, sum_table, mean_table) share one in-memory DuckDB per process
(sdc.warehouse.shared_database): a connection per call, the call's relations in DuckDB's temp catalog. These tests check
that calls leave nothing behind (also after an error), that calls from several threads at once give the tables
of calls one after another, that the spill folder is private and removed at exit, that a forked child works,
and that the ptable checks remembered per table object (macro_renderer.RememberedQueries) never carry one
table's answer to another table, nor an answer about the call's data to another call."""

from __future__ import annotations

import multiprocessing
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import sdc.ckm.counts as ckm
from sdc.warehouse import shared_database
from sdc.ckm import count_table
from sdc.ckm import mean_table, sum_table
from sdc.errors import SdcError
from sdc.warehouse.macro_renderer import RememberedQueries, macro_session, _run_query
from sdc.ptable.formats import parse_ptable
from sdc.ptable.nums import NumsPTableParams, combine, create_num_ptable

from conftest import ons_10_5_rule

ONS = Path(__file__).parent / "data" / "ons"
PTABLE = ONS / "ptable_10_5_rule.csv"
DATA = ONS / "ons_testdata_1000.csv"
COUNT = dict(record_key="record_key", modulus=256, ptable=PTABLE, totals="none")


def relations_left():
    """Every table and view of the shared database, but the ptables kept for later calls (each checked to be one
    of those). A new connection does not see another's temporary relations: that each call's connection is
    closed, with them, is test_a_calls_connection_is_closed_with_its_temporary_relations."""
    con = shared_database._database().cursor()
    try:
        tables = con.execute("select database_name, schema_name, table_name from duckdb_tables()").fetchall()
        views = con.execute("select database_name, schema_name, view_name from duckdb_views() "
                            "where not internal").fetchall()
    finally:
        con.close()
    kept = {("memory", "main", entry.name) for entry in shared_database._kept.values()}
    assert kept <= set(tables) and len(kept) <= shared_database.KEPT
    return sorted(set(tables + views) - kept)


def magnitude_data(n=400):
    """Records with 8-digit keys (the magnitude method scrambles decimal digits) and a value."""
    con = duckdb.connect()
    try:
        return con.execute(f"""
            select 'r' || (range % 4) as region, 'g' || (range % 3) as grp,
                   cast(hash(range * 7 + 1) % 100000000 as bigint) as rk,
                   100 + cast(hash(range * 3 + 2) % 5000 as double) as income
            from range({n})""").df()
    finally:
        con.close()


MAGNITUDE_PARAMS = {"type": "top_contr", "top_k": 2, "multiplier": {"type": "simple", "p": 0.05, "epsilon": [1, 0.5]}}


def magnitude_ptable():
    return combine(create_num_ptable(NumsPTableParams(D=5, V=1, icat=[1, 5])).table)


def test_a_calls_connection_is_closed_with_its_temporary_relations():
    with pytest.raises(SdcError, match="stopped"):
        with shared_database.shared_connection() as con:
            con.execute("create temp table sdc_input as select 1 as x")
            assert con.execute("select count(*) from duckdb_tables() where temporary").fetchone() == (1,)
            raise SdcError("stopped")
    with pytest.raises(duckdb.ConnectionException, match="closed"):
        con.execute("select 1")


def test_calls_leave_nothing_in_the_shared_database_also_after_an_error():
    count_table(DATA, ["var1", "var8"], **COUNT)
    count_table(pd.read_csv(DATA), ["var1"], audit=True, **COUNT)
    with pytest.raises(SdcError, match="column 'nope' is not in"):
        count_table(DATA, ["nope"], **COUNT)
    with pytest.raises(SdcError, match="record keys in column 'record_key' of the data are not uniform"):
        count_table(pd.read_csv(DATA).assign(record_key=7), ["var8"], **COUNT)  # refused after its relations exist
    assert relations_left() == []


def test_magnitude_and_mean_tables_leave_nothing_either():
    data = magnitude_data()
    sums = sum_table(data, ["region"], value="income", record_key="rk", modulus=10**8, params=MAGNITUDE_PARAMS,
                     ptable=magnitude_ptable())
    counts = count_table(data.assign(rk=data.rk % 256), ["region"], record_key="rk", modulus=256, ptable=PTABLE)
    means = mean_table(sums, counts, ["region"])
    expected = sums.set_index("region")["value"] / counts.set_index("region")["count"]
    assert means.set_index("region")["mean_value"].to_dict() == pytest.approx(expected.to_dict())
    assert len(means) == 5
    assert relations_left() == []


def test_calls_from_several_threads_at_once_give_the_tables_of_calls_one_after_another():
    frame = pd.read_csv(DATA)
    jobs = [(["var1", "var8"], None), (["var5"], 10), (["var1", "var5"], 5), (["var8"], None)] * 3

    def run(job):
        dims, threshold = job
        return count_table(frame, dims, threshold=threshold, audit=True, **COUNT)

    alone = [run(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(run, jobs))
    for (dims, _), one, other in zip(jobs, alone, together):
        assert one.shape[0] > 1 and one.equals(other), dims
    assert relations_left() == []


def test_the_spill_folder_is_the_processes_own_and_removed_at_exit(tmp_path):
    script = (
        "import os, stat, sys\n"
        "from sdc.ckm import count_table\n"
        "from sdc.warehouse import shared_database\n"
        f"count_table({str(DATA)!r}, ['var1'], record_key='record_key', modulus=256, ptable={str(PTABLE)!r})\n"
        "con = shared_database._database().cursor()\n"
        "folder = con.execute(\"select current_setting('temp_directory')\").fetchone()[0]\n"
        "print(folder, oct(stat.S_IMODE(os.stat(folder).st_mode)), os.getpid())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    folder, mode, pid = result.stdout.split()
    assert Path(folder).parent == tmp_path and f"-session-{pid}-" in Path(folder).name
    assert mode == "0o700"
    assert not Path(folder).exists()


def _count_in_child(queue):
    queue.put(count_table(DATA, ["var1", "var8"], **COUNT).to_dict("records"))


def test_a_forked_child_opens_a_database_of_its_own():
    parent = count_table(DATA, ["var1", "var8"], **COUNT).to_dict("records")
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_count_in_child, args=(queue,))
    child.start()
    records = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0 and records == parent
    assert count_table(DATA, ["var1", "var8"], **COUNT).to_dict("records") == parent  # the parent's still works


FORKED_WORKER = """
import multiprocessing, os, sys
from sdc.warehouse import shared_database
from sdc.ckm import count_table

def work(queue):
    count_table({data!r}, ["var1"], record_key="record_key", modulus=256, ptable={ptable!r})
    queue.put(shared_database._open.folder.name)

if __name__ == "__main__":
    context = multiprocessing.get_context("fork")
    manager = context.Manager()
    queue = manager.Queue()
    pool = context.Pool(2)
    pool.map(work, [queue] * 4)
    pool.close()
    pool.join()  # the workers end with os._exit: no atexit
    names = set()
    while not queue.empty():
        names.add(queue.get())
    print(" ".join(sorted(names)))
"""


def test_the_spill_folders_of_multiprocessing_workers_are_removed_when_they_end(tmp_path):
    import shutil
    import tempfile

    script = tmp_path / "workers.py"
    script.write_text(FORKED_WORKER.format(data=str(DATA), ptable=str(PTABLE)))
    # a short TMPDIR: the manager's socket lives there, and a socket's path may hold at most 107 bytes (pytest's
    # own folders grow past that as its run counter grows)
    tmp = Path(tempfile.mkdtemp(prefix="sdc-t-", dir="/tmp"))
    try:
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                env=dict(os.environ, TMPDIR=str(tmp)))
        assert result.returncode == 0, result.stderr
        names = result.stdout.split()
        assert names and all(name.startswith("sdc-scratch-session-") for name in names)
        assert sorted(p.name for p in tmp.iterdir() if p.name.startswith("sdc-")) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_child_forked_while_another_thread_holds_the_lock_works():
    import threading

    parent = count_table(DATA, ["var8"], **COUNT).to_dict("records")
    inside, leave = threading.Event(), threading.Event()

    def hold():
        with shared_database._lock:
            inside.set()
            leave.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    inside.wait(10)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_count_var8_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) == parent
    finally:
        leave.set()
        holder.join()
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0


def _count_var8_in_child(queue):
    queue.put(count_table(DATA, ["var8"], **COUNT).to_dict("records"))


def test_remembered_ptable_checks_answer_for_their_own_table_only(monkeypatch):
    """Two ptables of different last rows (20: noise 0, 23: noise +2, each for every larger count), used in
    turn, each with its checks remembered: every call publishes what a call that remembers nothing publishes."""
    short = parse_ptable(ons_10_5_rule(20), source="short")[0]
    full = parse_ptable(ons_10_5_rule(23), source="longer")[0]
    options = dict(COUNT, audit=True)
    remembered = [count_table(DATA, ["var1"], **dict(options, ptable=t)) for t in (short, full, short, full)]
    kept = [entry for (key, _), (_, entry) in ckm._PTABLE_QUERIES.items() if key == id(short)]
    assert kept and all(len(entry.results) >= 1 for entry in kept)  # the checks were kept ...
    monkeypatch.setattr(ckm, "_ptable_queries", lambda *_: RememberedQueries("none", ()))  # ... now none is
    fresh = [count_table(DATA, ["var1"], **dict(options, ptable=t)) for t in (short, full)]
    assert remembered[0].equals(fresh[0]) and remembered[2].equals(fresh[0])
    assert remembered[1].equals(fresh[1]) and remembered[3].equals(fresh[1])
    assert not fresh[0].equals(fresh[1])  # rows above 20 differ: the test sees a mixed-up table
    assert (fresh[0]["original"] > 23).all() and set(fresh[0]["noise"]) == {0} and set(fresh[1]["noise"]) == {2}


def test_a_query_that_names_the_calls_data_is_never_remembered():
    con = duckdb.connect()
    con.execute("create table ptable as select 1 as i")
    con.execute("create table micro as select 5 as x")
    remembered = RememberedQueries('"ptable"', ('micro',))
    both = 'select (select max(i) from "ptable") + (select max(x) from micro) as s'
    alone = 'select max(i) as s from "ptable"'
    with macro_session(con, remembered=remembered):
        assert _run_query(alone).rows[0]["s"] == 1 and _run_query(both).rows[0]["s"] == 6
        con.execute("update micro set x = 7")
        assert _run_query(both).rows[0]["s"] == 8  # run again: it reads the call's data
        con.execute("update ptable set i = 2")  # (a ptable never changes; this shows what is kept)
        assert _run_query(alone).rows[0]["s"] == 1
    assert list(remembered.results) == [alone]
    con.close()


def ptables_of_last_rows(rows):
    """ONS's 10/5 rule cut at each of ``rows``: a count above the last row takes its noise, pcv mod 5 of it."""
    return [parse_ptable(ons_10_5_rule(last), source=f"rule to {last}")[0] for last in rows]


def test_more_ptables_than_are_kept_from_several_threads_each_give_their_own_table(monkeypatch):
    """Twelve ptables (last rows 20..31: noise 0, -1, -2, +2, +1, ...) in three rounds from four threads at once,
    two kept: tables are made, kept and dropped meanwhile, also while more calls use them than are kept; every
    call publishes its own table's noise."""
    monkeypatch.setattr(shared_database, "KEPT", 2)
    tables = ptables_of_last_rows(range(20, 32))
    frame = pd.read_csv(DATA)

    def noise(table):
        return set(count_table(frame, ["var1"], **dict(COUNT, ptable=table, audit=True))["noise"])

    expected = [{ {0: 0, 1: -1, 2: -2, 3: 2, 4: 1}[t.max_i % 5] } for t in tables]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            assert list(pool.map(noise, tables)) == expected
    assert len(shared_database._kept) == shared_database.KEPT
    assert relations_left() == []


def test_the_kept_table_of_a_ptable_no_longer_used_is_dropped():
    first, second = ptables_of_last_rows([20, 21])
    count_table(DATA, ["var1"], **dict(COUNT, ptable=first))
    name = shared_database._kept[id(first)].name
    del first
    count_table(DATA, ["var1"], **dict(COUNT, ptable=second))
    con = shared_database._database().cursor()
    assert con.execute("select count(*) from duckdb_tables() where table_name = ?", [name]).fetchone() == (0,)
    con.close()
    assert relations_left() == []
