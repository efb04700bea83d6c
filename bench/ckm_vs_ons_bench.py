"""sdc's CKM count table against ONS's cell-key-perturbation 3.1.0, side by side in one run (prints figures).

ONS's package is installed in a venv of its own (bench/.venv-ons: cell-key-perturbation 3.1.0 with the pandas 2
it was made for); that venv also gets duckdb and Jinja2 so that sdc.ckm.count_table runs there on the very same
DataFrame. For each N (microdata records: ONS's shape, integer keys 0..255, var1 5 codes x var5 10 x var8 4):

  process    the whole command, from CSV file to CSV file, as a user waits for it:
             `sdc ckm --modulus 256 --totals none --threshold 10` (this project's .venv) against a Python
             process that reads the CSV with pandas, calls create_perturbed_table and writes the CSV
  in memory  count_table(df, ...) against create_perturbed_table(df, ...) on the same DataFrame, in one
             process (best of R runs each)

Each N runs with two ptables: ONS's shipped ptable_10_5_rule.csv (tests/data/ons/: one noise per row, 751
intervals) and a randomised ONS table of the same size (bench/random_ons_ptable.py, made here: 256 keys, each
row's noise values shuffled over the keys: about 160 000 intervals, as in a table drawn key by key). The published
counts are compared cell by cell, so the figures are for the same table. Prints the times and the ratios
ONS / sdc.

Usage: .venv/bin/python bench/ckm_vs_ons_bench.py [N ...]      (default 1e5 1e6 1e7)
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from random_ons_ptable import write_random_ons_ptable

ROOT = Path(__file__).resolve().parent.parent
ONS_VENV = ROOT / "bench" / ".venv-ons"
PTABLE = ROOT / "tests" / "data" / "ons" / "ptable_10_5_rule.csv"
# ONS's package declares no dependencies: the pandas and numpy it is used with, and what count_table needs
ONS_PACKAGES = ["cell-key-perturbation==3.1.0", "pandas==2.3.3", "numpy==2.4.6", "duckdb==2.0.0", "Jinja2==3.1.6"]
DIMS = ["var1", "var5", "var8"]
REPEATS = 3

ONS_PROCESS = """
import sys
import pandas as pd
from cell_key_perturbation.create_perturbed_table import create_perturbed_table
data, ptable, out = sys.argv[1:4]
table = create_perturbed_table(data=pd.read_csv(data), ptable=pd.read_csv(ptable), geog=[],
                               tab_vars=["var1", "var5", "var8"], record_key="record_key", threshold=10)
table[["var1", "var5", "var8", "count"]].to_csv(out, index=False)
"""

IN_MEMORY = """
import contextlib, io, json, sys, time
import pandas as pd
from cell_key_perturbation.create_perturbed_table import create_perturbed_table
from sdc.ckm import count_table
data, ptable_path, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
df, ptable = pd.read_csv(data), pd.read_csv(ptable_path)
dims = ["var1", "var5", "var8"]
def ons():
    with contextlib.redirect_stdout(io.StringIO()):  # ONS prints a line per call
        return create_perturbed_table(data=df, ptable=ptable, geog=[], tab_vars=dims, record_key="record_key",
                                      threshold=10)
def ours():
    return count_table(df, dims, record_key="record_key", modulus=256, ptable=ptable_path, totals="none",
                       threshold=10)
times = {"ons": [], "sdc": []}
for _ in range(repeats):  # interleaved, so both see the same machine
    for name, run in (("ons", ons), ("sdc", ours)):
        start = time.perf_counter()
        result = run()
        times[name].append(time.perf_counter() - start)
a = {tuple(str(r[d]) for d in dims): (None if pd.isna(r["count"]) else int(r["count"])) for r in ons().to_dict("records")}
b = {tuple(str(r[d]) for d in dims): (None if pd.isna(r["count"]) else int(r["count"])) for r in ours().to_dict("records")}
print(json.dumps({"ons": min(times["ons"]), "sdc": min(times["sdc"]), "same": a == b, "cells": len(b)}))
"""


def ons_venv() -> Path:
    python = ONS_VENV / "bin" / "python"
    if not python.exists():
        print(f"installing {', '.join(ONS_PACKAGES)} into {ONS_VENV} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(ONS_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *ONS_PACKAGES],
                       check=True)
    return python


def generate(path: Path, n: int) -> None:
    con = duckdb.connect()
    con.execute(f"""
        copy (
            select cast(hash(range * 11 + 1) % 256 as integer) as record_key,
                   1 + cast(hash(range * 3 + 2) % 5 as integer) as var1,
                   1 + cast(hash(range * 5 + 3) % 10 as integer) as var5,
                   ['A', 'B', 'C', 'D'][1 + cast(hash(range * 7 + 4) % 4 as integer)] as var8
            from range({n})
        ) to '{path}' (header, delimiter ',')""")
    con.close()


def timed(command: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{command[0]} failed:\n{result.stdout}\n{result.stderr}")
    return elapsed


def published(path: Path) -> dict:
    with path.open(newline="") as handle:
        return {tuple(r[d] for d in DIMS): r["count"] for r in csv.DictReader(handle)}


def main(sizes: list[int]) -> None:
    python = ons_venv()
    sdc = ROOT / ".venv" / "bin" / "sdc"
    print(f"machine: {os.cpu_count()} cores; ONS cell-key-perturbation 3.1.0 (pandas 2.3.3) vs sdc "
          f"(duckdb {duckdb.__version__}); best of {REPEATS} each")
    print(f"{'records':>10}  {'ptable':<8} {'process sdc':>11}  {'process ONS':>11}  {'ONS/sdc':>7}  "
          f"{'in-memory sdc':>13}  {'in-memory ONS':>13}  {'ONS/sdc':>7}  same")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    with tempfile.TemporaryDirectory(prefix="sdc-bench-ons-") as tmp:
        ptables = {"shipped": PTABLE, "random": Path(tmp) / "ptable_random_256.csv"}
        write_random_ons_ptable(ptables["random"])
        for n in sizes:
            data = Path(tmp) / f"data_{n}.csv"
            generate(data, n)
            for label, ptable in ptables.items():
                compare(n, label, data, ptable, Path(tmp), python, sdc, env)
            data.unlink()


def compare(n: int, label: str, data: Path, ptable: Path, tmp: Path, python: Path, sdc: Path, env: dict) -> None:
    ours_out, ons_out = tmp / "sdc.csv", tmp / "ons.csv"
    process = {"sdc": [], "ons": []}
    for _ in range(REPEATS):
        ours_out.unlink(missing_ok=True)
        process["sdc"].append(timed([str(sdc), "ckm", "--input", str(data), "--dims", ",".join(DIMS),
                                     "--record-key", "record_key", "--modulus", "256", "--ptable", str(ptable),
                                     "--totals", "none", "--threshold", "10", "--out", str(ours_out)]))
        process["ons"].append(timed([str(python), "-c", ONS_PROCESS, str(data), str(ptable), str(ons_out)]))
    same_files = published(ours_out) == published(ons_out)
    result = subprocess.run([str(python), "-c", IN_MEMORY, str(data), str(ptable), str(REPEATS)],
                            capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    memory = json.loads(result.stdout.strip().splitlines()[-1])
    p_sdc, p_ons = min(process["sdc"]), min(process["ons"])
    print(f"{n:>10}  {label:<8} {p_sdc:>10.2f}s  {p_ons:>10.2f}s  {p_ons / p_sdc:>6.1f}x  "
          f"{memory['sdc']:>12.3f}s  {memory['ons']:>12.3f}s  {memory['ons'] / memory['sdc']:>6.1f}x  "
          f"{'yes' if same_files and memory['same'] else 'NO'}", flush=True)


if __name__ == "__main__":
    main([int(float(a)) for a in sys.argv[1:]] or [10**5, 10**6, 10**7])
