"""The magnitude Cell Key Method for one cell, written out step by step (as τ-Argus and the R package cellKey define it).

This is the specification the SQL macro ckm_sum implements; the tests compare the two cell by cell. Exact
inputs (Fractions for the ptable lookup); the flex function in floats, as in the SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from sdc.conventions import INTERVAL_SCALE
from sdc.errors import SdcError
from sdc.ptable.nums import NumsPTableSet
from sdc.ckm.params import MagnitudeParams


@dataclass(frozen=True)
class Component:
    """One noise component of a cell: magnifier, noise scale δ, table used, ratio a, ptable noise V, added x̂."""

    j: int
    magnifier: float
    delta: float
    table: str
    ratio: float
    noise: float
    added: float


def version_key(record_key: int, contributions: list, modulus: int) -> int:
    """A record's key for the version of its contributions (ckm_sum with version_keys, macro ckm_version_key): the
    first 15 hex digits of the md5 of '<record key>|<c1>|<c2>...', each contribution as a decimal of 6 places
    (rounded half away from zero, as the engines cast a double), mod M. ``contributions``: the weight (with one),
    then each measure's contribution, in ckm_sum's order (value, weighted_value or weighted_count)."""
    import hashlib
    from decimal import ROUND_HALF_UP, Decimal

    places = Decimal("0.000001")
    text = "|".join([str(int(record_key))] + [
        str(Decimal(repr(float(c))).quantize(places, ROUND_HALF_UP) + Decimal(0)) for c in contributions])
    return int(hashlib.md5(text.encode("ascii")).hexdigest()[:15], 16) % modulus


def scramble(key: int, modulus: int, times: int) -> int:
    """Move the first decimal digit of the key 0.d1d2..dn to the end, ``times`` times (τ-Argus ShiftFirstDigit)."""
    digits = key_digits(modulus)
    top = 10 ** (digits - 1)
    for _ in range(times):
        key = (key % top) * 10 + key // top
    return key


def noise_direction(v: float, key: int, mu: float) -> int:
    """sign(V); where V = 0 and the cell gets mu_c (a sensitive cell), the sign is drawn from the component's
    scrambled key: +1 for an even key, -1 for an odd one (its last binary digit, which the ptable lookup, by the
    leading digits, does not use). So a sensitive cell always moves by at least mu_c δ (red team 7); τ-Argus and
    cellKey add nothing there."""
    if v != 0 or mu == 0:
        return (v > 0) - (v < 0)
    return 1 if key % 2 == 0 else -1


def key_digits(modulus: int) -> int:
    """n of a modulus 10^n; magnitude tables scramble decimal digits, so other moduli are refused."""
    digits = len(str(modulus)) - 1
    if modulus < 10 or 10**digits != modulus:
        raise SdcError(
            f"the magnitude Cell Key Method scrambles the decimal digits of the cell key, so the record keys' "
            f"modulus must be a power of 10 (10^8: 8-digit keys); got {modulus}. Such "
            f"keys of another modulus cannot be converted: load the microdata again with sdc load --modulus 100000000 into a new table (stored keys are never regenerated)"
        )
    return digits


def magnifiers(params: MagnitudeParams, x: float, contributions: list[float], weight_sum: float,
               values: list[float] | None = None) -> list[float]:
    """|x_j| for j = 1..K: the largest contributions, or one of mean, range, sum. Stops at the contributors.

    ``contributions`` holds one per record of the cell, zeros included. Weighted contributions (value x
    weight) are ranked as τ-Argus and cellKey rank them: by the record's unweighted |value| (``values``, one
    per contribution), a tie by the larger |contribution| (the larger weight); x_j is the j-th record's
    |contribution|. The range is that of the unweighted values over all records, zeros included (τ-Argus and
    cellKey; the preset says whether of their sizes). Without ``values`` the contributions stand for them."""
    ranks = values if values is not None else contributions
    if len(ranks) != len(contributions):
        raise SdcError(f"values rank the contributions, one each: got {len(ranks)} values for "
                       f"{len(contributions)} contributions")
    if params.magnifier == "top_contr":
        ranked = sorted(((abs(v), abs(c)) for v, c in zip(ranks, contributions) if c != 0), reverse=True)
        return [c for _, c in ranked[: params.top_k]]
    if all(c == 0 for c in contributions):
        return []
    if params.magnifier == "mean":
        return [abs(x / weight_sum)]
    if params.magnifier == "range":
        spread = [abs(v) for v in ranks] if params.preset.range_of_absolute_values else list(ranks)
        return [max(spread) - min(spread)]
    return [abs(x)]


def perturb_cell(
    params: MagnitudeParams,
    tables: NumsPTableSet,
    x: float,
    contributions: list[float],  # one per record of the cell, zeros included
    cell_key: int,
    modulus: int,
    *,
    weight_sum: float | None = None,  # sum of the weights of the cell's records (default: its record count)
    sensitive: bool = False,
    values: list[float] | None = None,  # unweighted values of the records: they rank them and give the range
) -> tuple[float, list[Component]]:
    """Perturbed value of a cell with value x (sum of its contributions) and integer cell key in [0, modulus)."""
    if x == 0:
        return 0.0, []
    preset, mult = params.preset, params.multiplier
    small_table = tables.small_cells
    if params.separation and small_table is None:
        raise SdcError("separation is on, but the magnitude ptable has no small_cells part")
    z_s = params.separation_point(small_table.variance_of_last_row() if small_table else None)
    # parity of the cell's records, zeros included, as τ-Argus (Freq) and cellKey (nrow) count them
    parity = "even" if len(contributions) % 2 == 0 else "odd"
    main = tables.tables["all"] if "all" in tables.tables else tables.tables[parity]
    sign = 1 if x > 0 else -1
    out = []
    for j, x_j in enumerate(magnifiers(params, x, contributions, weight_sum or len(contributions), values), start=1):
        eps = mult.epsilon[j - 1]
        small = z_s > 0 and x_j < z_s
        if not small:
            below_fp = mult.kind == "flex" and x_j < mult.fp
            delta = x_j * mult.m(x_j) * (eps if (preset.epsilon_below_fp or not below_fp) else 1)
            if abs(x) < abs(delta):
                delta = abs(x)
                small = z_s > 0 and abs(x) / (mult.p_small * eps) < z_s
        if small:
            if j > 1:
                out.append(Component(j, x_j, 0.0, "small_cells", 0.0, 0.0, 0.0))
                continue
            delta = 1.0
        table = small_table if small else main
        ratio = abs(x / delta)
        key = scramble(cell_key, modulus, params.key_shifts(j))
        v = float(table.lookup(Fraction(ratio), Fraction(key * INTERVAL_SCALE, modulus)))
        mu = params.mu_c if sensitive and (not preset.mu_c_first_only or j == 1) else 0.0
        direction = noise_direction(v, key, mu)
        added = sign * abs(delta) * direction * (mu + abs(v))
        if direction < 0 and (j == 1 or not preset.clamp_first_only):
            added = max(added, -x) if x > 0 else min(added, -x)
        x += added
        out.append(Component(j, x_j, delta, table.type, ratio, v, added))
    return x, out
