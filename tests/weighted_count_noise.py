"""The second noise of a weighted count by the magnitude method (ckm_count weight=), computed here from a cell's
records, apart from the SQL: the count ptable's v for the cell's second key (the sum of k (k + A) over its
records' keys k, mod M, A = 0.618... M rounded down to tens, plus 1) in the row of ceil(Σ(w - w_min) / (w_max -
w_min)) records, plus the key's place within that interval less 1/2; 0 where all weights are equal. The weighted
count adds it times w_max - w_min."""

from __future__ import annotations

import math
from fractions import Fraction

from sdc.ptable.formats import read_ptable

DECIMALS = 8  # var sdc_interval_decimals: interval bounds in units of 10^-8


def spread_noise(keys, weights, ptable_path, modulus: int) -> float:
    """keys: the integer record keys of the cell's counted records; weights: their weights (exact: int, Decimal)."""
    weights = [Fraction(w) for w in weights]
    low, high = min(weights), max(weights)
    if low == high:
        return 0.0
    table = read_ptable(ptable_path)[0]
    row = min(math.ceil(sum(w - low for w in weights) / (high - low)), int(table.i.max()))
    a = int(modulus * 0.6180339887498949) // 10 * 10 + 1
    key = sum(k * (k + a) % modulus for k in keys) % modulus
    scale = 10**DECIMALS
    for i, v, lb, ub in zip(table.i, table.v, table.lb_units, table.ub_units):
        lb, ub = int(lb) * modulus, int(ub) * modulus
        if i == row and lb <= key * scale < ub:
            return float(v) + float(2 * key * scale + scale - 2 * lb) / float(2 * (ub - lb)) - 0.5
    raise AssertionError(f"no interval of row {row} holds the key {key}")
