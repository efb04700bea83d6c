"""An interrupted command leaves nothing confidential behind: SIGTERM, SIGHUP and Ctrl-C stop sdc ckm, which
writes nothing and removes its scratch folder (where DuckDB would spill microdata); after SIGKILL the next
command removes the orphaned folder. Files and folders with confidential content are their owner's only
(0600/0700)."""

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from sdc.warehouse.scratch import SCRATCH_PREFIX

SDC = Path(sys.executable).parent / "sdc"
DEMO_PTABLE = Path(__file__).parent.parent / "demo" / "seeds" / "sdc_ptable.csv"


@pytest.fixture
def run(tmp_path):
    """sdc ckm on 3 million records (a few seconds), with its own temp folder (TMPDIR) so that its scratch
    folder (DuckDB's spill folder) can be seen."""
    micro = tmp_path / "micro.csv"
    con = duckdb.connect()
    con.execute(f"""copy (select 'r' || (hash(range) % 20) as region, case when hash(range + 7) % 2 = 0 then 'm' else 'f' end as sex,
                                 hash(range * 3 + 1) % 100000000 as key from range(3000000))
                    to '{micro}' (header, delimiter ',')""")
    con.close()
    temp = tmp_path / "tmp"
    temp.mkdir()
    command = [str(SDC), "ckm", "--input", str(micro), "--dims", "region,sex", "--record-key", "key",
               "--key-digits", "8", "--ptable", str(DEMO_PTABLE), "--out", str(tmp_path / "out.csv"), "--audit"]
    env = dict(os.environ, TMPDIR=str(temp))
    # SIGINT as a terminal delivers it: a process started with SIGINT ignored (a background job of a shell
    # without job control, as a CI runner may start the suite) keeps ignoring it, and Python installs no
    # KeyboardInterrupt handler then
    return lambda: subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)), temp


def wait_for_scratch(process, temp: Path) -> Path:
    """The scratch folder of a running sdc ckm, once it exists (sdc reads the microdata from then on)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list(temp.glob(f"{SCRATCH_PREFIX}ckm-*"))
        if found:
            return found[0]
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    raise AssertionError("sdc ckm made no scratch folder")


def children_of(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (from /proc/<pid>/stat: state and parent follow the name in parentheses)."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat_file.parent.name))
    return found


def gone(pid: int, within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":  # ended, waiting for its (dead) parent's reaper
            return True
        time.sleep(0.05)
    return False


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stopped_ckm_writes_nothing_and_removes_its_scratch_folder(run, tmp_path, sig):
    start, temp = run
    process = start()
    scratch = wait_for_scratch(process, temp)
    assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + sig, stderr
    assert f"stopped by {signal.Signals(sig).name}" in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert list(temp.iterdir()) == []
    assert not (tmp_path / "out.csv").exists()


def test_after_sigkill_the_next_command_removes_the_orphaned_scratch_folder(run, tmp_path):
    start, temp = run
    process = start()
    wait_for_scratch(process, temp)
    process.kill()
    process.wait()
    orphaned = list(temp.glob(f"{SCRATCH_PREFIX}ckm-*"))
    assert len(orphaned) == 1 and stat.S_IMODE(orphaned[0].stat().st_mode) == 0o700
    assert not (tmp_path / "out.csv").exists()
    second = start()
    second.communicate(timeout=300)
    assert second.returncode == 0
    assert list(temp.iterdir()) == []
    assert stat.S_IMODE((tmp_path / "out.csv").stat().st_mode) == 0o600   # --audit: original counts


def test_a_new_warehouse_and_its_microdata_are_the_owners_only(tmp_path):
    micro = tmp_path / "micro.csv"
    micro.write_text("id,sex\n" + "".join(f"{k},{'mf'[k % 2]}\n" for k in range(50)))
    db = tmp_path / "warehouse.duckdb"
    result = subprocess.run([str(SDC), "load", "--db", str(db), "--input", str(micro), "--table", "persons",
                             "--id", "id", "--key-mode", "random"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_the_python_api_creates_the_warehouse_for_its_owner_only(tmp_path):
    from sdc.warehouse.loader import load_microdata
    micro = tmp_path / "micro.csv"
    micro.write_text("id,sex\n" + "".join(f"{k},{'mf'[k % 2]}\n" for k in range(50)))
    old = os.umask(0o022)
    try:
        load_microdata(tmp_path / "w.duckdb", micro, "persons", id_column="id")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "w.duckdb").stat().st_mode) == 0o600


def test_a_scratch_folder_of_an_older_sdc_is_removed_by_its_owner_file(tmp_path, monkeypatch):
    """Older versions named the folder sdc-scratch-<kind>-<random> and kept their pid in owner.pid (and a DuckDB
    copy of the microdata in it): such a folder whose process is gone is removed too, one of a live one kept."""
    import tempfile

    from sdc.warehouse.scratch import remove_orphaned_scratch_folders

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone_process = subprocess.Popen([sys.executable, "-c", "pass"])
    gone_process.wait()
    orphan = tmp_path / f"{SCRATCH_PREFIX}ckm-abc123"
    alive = tmp_path / f"{SCRATCH_PREFIX}suppress-def456"
    for folder, pid in ((orphan, gone_process.pid), (alive, os.getpid())):
        folder.mkdir()
        (folder / "owner.pid").write_text(str(pid))
        (folder / "ckm.duckdb").write_text("copy of the microdata")
    assert remove_orphaned_scratch_folders() == [orphan]
    assert not orphan.exists() and alive.exists()


def test_a_signal_the_instant_the_scratch_folder_is_made_leaves_no_folder(tmp_path, monkeypatch):
    """The signal lands between the folder's creation and the code that removes it (a loaded machine
    deschedules sdc right there; the CLI above once left the folder behind): the CLI removes the folders it
    made, and keeps the ones that were there before (a Python session's own)."""
    import tempfile

    from sdc.cli import main
    from sdc.warehouse import scratch

    micro = tmp_path / "micro.csv"
    micro.write_text("region,key\n" + "".join(f"r{k % 3},{k * 7919 % 10**8}\n" for k in range(30)))
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    earlier = temp / f"{SCRATCH_PREFIX}session-{os.getpid()}-earlier"
    earlier.mkdir()
    made = []
    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp_then_signal(*args, **kwargs):
        folder = real_mkdtemp(*args, **kwargs)
        made.append(Path(folder))
        os.kill(os.getpid(), signal.SIGTERM)
        return folder

    monkeypatch.setattr(scratch.tempfile, "mkdtemp", mkdtemp_then_signal)
    code = main(["ckm", "--input", str(micro), "--dims", "region", "--record-key", "key", "--key-digits", "8",
                 "--ptable", str(DEMO_PTABLE), "--out", str(tmp_path / "out.csv")])
    assert code == 128 + signal.SIGTERM
    assert len(made) == 1 and made[0].parent == temp
    assert list(temp.iterdir()) == [earlier]
    assert not (tmp_path / "out.csv").exists()
