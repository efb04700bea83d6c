"""A randomised ONS-format ptable for the benchmarks, the same on every run (seeded).

ONS's shipped ptable_10_5_rule.csv gives every key of a row the same noise (one interval per row); in a table
whose keys draw their noise from the row's distribution, runs of one noise over consecutive keys are short
and the table has nearly as many intervals as lines (here 161 338 for 192 000). This one takes each row's
distribution from an sdc-built table (D = 5, V = 3, js = 2), gives every noise value its share of the keys
(largest remainders) and shuffles them over the keys of the row.

    .venv/bin/python bench/random_ons_ptable.py OUT.csv [KEYS [LAST_ROW]]    (default 256 keys, rows 1..750)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from sdc.ptable import PTableParams, create_ptable


def write_random_ons_ptable(path: Path, keys: int = 256, last_row: int = 750, seed: int = 26) -> None:
    table = create_ptable(PTableParams(D=5, V=3, js=2)).table
    rng = np.random.default_rng(seed)
    lines = ["pcv,ckey,pvalue"]
    for i in range(1, last_row + 1):
        row = table.i == min(i, table.max_i)
        share = table.p[row] * keys
        counts = np.floor(share).astype(int)
        counts[np.argsort(counts - share)[: keys - counts.sum()]] += 1
        noise = rng.permutation(np.repeat(table.v[row], counts))
        lines += [f"{i},{k},{v}" for k, v in enumerate(noise.tolist())]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    write_random_ons_ptable(Path(args[0]), *(int(a) for a in args[1:3]))
