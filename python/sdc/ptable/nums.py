"""Perturbation tables for magnitude tables (R package ptable's ``create_num_ptable``).

A magnitude ptable has a row for 0 (fixed: 0 stays 0) and one row for each entry of ``icat`` (which holds 1
and D). Row i may move to j = max(i - D, 0), ..., i + D in steps of 1/step; each row is the same
maximum-entropy problem as a count row (solver.py): mean 0, variance V (optim 1: at most V, 4: exactly),
left tail non-decreasing towards 0 (mono). The lookup interpolates between rows (τ-Argus and cellKey):
for a ratio a = |x / δ| between two rows a0 < a1, the noise is (1 - λ) v(a0, ck) + λ v(a1, ck) with
λ = (a - a0) / (a1 - a0); a ratio at or beyond the last row uses the last row.

A file may hold several tables told apart by the column ``type``: ``all`` (one table for every cell) or
``even`` and ``odd`` (parity: cells with an even or odd number of contributors), and ``small_cells`` (the
table for cells below the separation point).
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Sequence

import numpy as np

from sdc.conventions import INTERVAL_SCALE, NUMS_PTABLE_COLUMNS, NUMS_PTABLE_TYPES, NUMS_V_DECIMALS
from sdc.errors import SdcError
from sdc.files import read_text, write_text_atomically
from sdc.ptable.table import format_units, read_only_copies

V_SCALE = 10**NUMS_V_DECIMALS
# ptable refuses D * step >= 50 (pt_create_pParams.R): rows would have 100 and more entries
MAX_D_TIMES_STEP = 50


@dataclass(frozen=True)
class NumsPTableParams:
    """Parameters of ``create_num_ptable`` (R package ptable), same names and defaults.

    D      maximum absolute noise (in units of δ, the cell's noise scale)
    V      noise variance
    step   noise values are multiples of 1/step
    icat   rows besides 0; must hold 1 and D, none above D (default: 1 and D)
    type   label of the table: all, even, odd or small_cells
    optim  1: variance <= V; 4: variance = V. Scalar or one value per icat row.
    mono   left tail non-decreasing towards v = 0. Scalar or one value per icat row.

    >>> from sdc.ptable import NumsPTableParams
    >>> params = NumsPTableParams(D=2, V=0.5, step=2)
    >>> params.rows, (params.support(1) / 10_000).tolist()
    ((1, 2), [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
    >>> NumsPTableParams(D=5, V=1, step=10).validate()
    Traceback (most recent call last):
      ...
    sdc.errors.SdcError: D * step = 50 is too large (at most 49, as in ptable): reduce D or step
    """

    D: int
    V: float
    step: int = 2
    icat: Sequence[int] | None = None
    type: str = "all"
    optim: int | Sequence[int] = 1
    mono: bool | Sequence[bool] = True

    js = 0  # no blocked values in magnitude tables (ptable ignores js for them)

    @property
    def rows(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.icat))) if self.icat is not None else tuple(sorted({1, self.D}))

    def per_row(self, name: str) -> tuple:
        value = getattr(self, name)
        if isinstance(value, (list, tuple)):
            return tuple(value)
        return (value,) * len(self.rows)

    def support(self, i: int) -> np.ndarray:
        """Targets j of row i in units of 10^-4: max(i - D, 0) .. i + D in steps of 1/step."""
        first = max(i - self.D, 0)
        count = round((i + self.D - first) * self.step) + 1
        return np.array([round((first + k / self.step) * V_SCALE) for k in range(count)], dtype=np.int64)

    def validate(self) -> None:
        if isinstance(self.D, bool) or not isinstance(self.D, int) or self.D < 1:
            raise SdcError(f"D must be a whole number >= 1, got {self.D!r}")
        if not (isinstance(self.V, (int, float)) and not isinstance(self.V, bool) and math.isfinite(self.V) and self.V > 0):
            raise SdcError(f"V must be a positive number, got {self.V!r}")
        if isinstance(self.step, bool) or not isinstance(self.step, int) or self.step < 1:
            raise SdcError(f"step must be a whole number >= 1, got {self.step!r}")
        if self.D * self.step >= MAX_D_TIMES_STEP:
            raise SdcError(
                f"D * step = {self.D * self.step} is too large (at most {MAX_D_TIMES_STEP - 1}, as in ptable): "
                f"reduce D or step"
            )
        if self.type not in NUMS_PTABLE_TYPES:
            raise SdcError(f"type must be one of {', '.join(NUMS_PTABLE_TYPES)}, got {self.type!r}")
        if self.icat is not None:
            bad = [c for c in self.icat if isinstance(c, bool) or not isinstance(c, int) or c < 1]
            if bad:
                raise SdcError(f"icat must hold whole numbers >= 1, got {bad[0]!r}")
            if 1 not in self.icat or self.D not in self.icat:
                raise SdcError(f"icat must hold 1 and D={self.D} (e.g. icat=[1, {self.D}]), got {list(self.icat)}")
            if max(self.icat) > self.D:
                raise SdcError(f"icat may not go above D={self.D}, got {max(self.icat)}")
        n = len(self.rows)
        for name in ("optim", "mono"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)) and len(value) != n:
                raise SdcError(f"{name} has {len(value)} values but the table has {n} rows besides 0 (icat {list(self.rows)})")
        for row, optim in zip(self.rows, self.per_row("optim")):
            if optim not in (1, 4):
                raise SdcError(f"optim for row i={row} must be 1 (variance <= V) or 4 (variance = V), got {optim!r}")
        for row, mono in zip(self.rows, self.per_row("mono")):
            if not isinstance(mono, bool):
                raise SdcError(f"mono for row i={row} must be true or false, got {mono!r}")


@dataclass(frozen=True)
class NumsPTable:
    """One magnitude ptable: entries (i, v) with exact interval bounds.

    ``i`` are whole numbers, ``v_units`` the noise in units of 10^-4 (ptable rounds j and v to 4 decimals),
    bounds in units of 10^-8 as for counts. Entries of one i are ordered by their lower bound and partition [0, 1).
    """

    type: str
    i: np.ndarray
    v_units: np.ndarray
    lb_units: np.ndarray
    ub_units: np.ndarray

    def __post_init__(self):
        read_only_copies(self, ("i", "v_units", "lb_units", "ub_units"))  # as PTable's: columns stay true

    @cached_property
    def columns(self) -> dict[str, np.ndarray]:
        """The columns of conventions.NUMS_PTABLE_COLUMNS as numbers: j and v in 10^-4 units, p and the bounds
        in 10^-8 units (the exact decimals of the relation, sdc.ptable.relation), type as text."""
        return {"i": self.i, "j": self.i * V_SCALE + self.v_units, "p": self.ub_units - self.lb_units,
                "v": self.v_units, "p_int_lb": self.lb_units, "p_int_ub": self.ub_units,
                "type": np.full(len(self.i), self.type, dtype=object)}

    @property
    def v(self) -> np.ndarray:
        return self.v_units / V_SCALE

    @property
    def j(self) -> np.ndarray:
        return self.i + self.v

    @property
    def p(self) -> np.ndarray:
        return (self.ub_units - self.lb_units) / INTERVAL_SCALE

    @property
    def rows(self) -> list[int]:
        return sorted(set(int(x) for x in self.i))

    @property
    def max_i(self) -> int:
        return int(self.i.max())

    def noise(self, row: int, key_units: Fraction) -> Fraction:
        """v of the entry of ``row`` whose interval [lb, ub) holds the cell key (in 10^-8 units), exactly."""
        for i, v, lb, ub in zip(self.i, self.v_units, self.lb_units, self.ub_units):
            if i == row and lb <= key_units < ub:
                return Fraction(int(v), V_SCALE)
        raise SdcError(f"the {self.type} magnitude ptable has no interval of row i={row} for the cell key")

    def lookup(self, ratio: Fraction, key_units: Fraction) -> Fraction:
        """Noise for a ratio a = |x/δ| >= 0: row max i beyond the last row, else interpolated between rows."""
        rows = [0] + [r for r in self.rows if r > 0]
        if ratio >= rows[-1]:
            return self.noise(rows[-1], key_units)
        upper = next(k for k, r in enumerate(rows) if r > ratio)
        a0, a1 = rows[upper - 1], rows[upper]
        weight = (Fraction(ratio) - a0) / (a1 - a0)
        return (1 - weight) * self.noise(a0, key_units) + weight * self.noise(a1, key_units)

    def variance_of_last_row(self) -> float:
        """m1² of τ-Argus and cellKey: Σ v² p on the last row (the separation point uses it)."""
        mask = self.i == self.max_i
        return float(self.p[mask] @ self.v[mask] ** 2)

    def row_stats(self) -> list[tuple[int, float, float, float]]:
        """(i, mean, variance, sum of p) of each row."""
        out = []
        for row in self.rows:
            mask = self.i == row
            p, v = self.p[mask], self.v[mask]
            out.append((row, float(p @ v), float(p @ v**2), float(p.sum())))
        return out

    def records(self) -> list[dict]:
        return [
            {
                "i": int(i),
                "j": format_v(int(i) * V_SCALE + int(v)),
                "p": format_units(int(ub - lb)),
                "v": format_v(int(v)),
                "p_int_lb": format_units(int(lb)),
                "p_int_ub": format_units(int(ub)),
                "type": self.type,
            }
            for i, v, lb, ub in zip(self.i, self.v_units, self.lb_units, self.ub_units)
        ]


@dataclass(frozen=True)
class NumsPTableSet:
    """The magnitude ptables of one file, by type: ``all`` or ``even`` + ``odd``, optionally ``small_cells``;
    what ``sdc.ckm.sum_table`` takes as ``ptable`` and ``write_nums_ptable`` writes.

    >>> from sdc.ptable import NumsPTableParams, NumsPTableSet, create_num_ptable
    >>> table = create_num_ptable(NumsPTableParams(D=2, V=0.5)).table
    >>> tables = NumsPTableSet({"all": table})
    >>> tables.parity, tables.small_cells, len(tables.records())
    (False, None, 17)
    >>> NumsPTableSet({"small_cells": table})
    Traceback (most recent call last):
      ...
    sdc.errors.SdcError: a magnitude ptable needs the rows of type 'all', or of both types 'even' and 'odd' (parity); found types: small_cells
    """

    tables: dict[str, NumsPTable]

    def __post_init__(self):
        kinds = set(self.tables)
        main = kinds - {"small_cells"}
        if main not in ({"all"}, {"even", "odd"}):
            raise SdcError(
                "a magnitude ptable needs the rows of type 'all', or of both types 'even' and 'odd' (parity); "
                f"found types: {', '.join(sorted(kinds)) or 'none'}"
            )

    @property
    def parity(self) -> bool:
        return "even" in self.tables

    @property
    def small_cells(self) -> NumsPTable | None:
        return self.tables.get("small_cells")

    def records(self) -> list[dict]:
        return [r for kind in NUMS_PTABLE_TYPES if kind in self.tables for r in self.tables[kind].records()]

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The tables' columns one after the other, in the order of ``records``."""
        parts = [self.tables[kind].columns for kind in NUMS_PTABLE_TYPES if kind in self.tables]
        return {c: np.concatenate([part[c] for part in parts]) for c in NUMS_PTABLE_COLUMNS}


@dataclass(frozen=True)
class NumsPTableBuild:
    params: NumsPTableParams
    table: NumsPTable
    warnings: list[str] = field(default_factory=list)


def create_num_ptable(params: NumsPTableParams, allow_lower_variance: bool = False) -> NumsPTableBuild:
    """Build a magnitude ptable as ``ptable::create_num_ptable`` (R package ptable):
    row 0 fixed (0 stays 0), one maximum-entropy row per icat entry, each with mean 0 and variance V (at most V
    with optim 1, exactly V with optim 4) over the noise values max(i - D, 0) - i .. D in steps of 1/step.
    Returns a NumsPTableBuild: ``table`` (a NumsPTable of the params' type) and ``warnings``.

    >>> from sdc.ptable import NumsPTableParams, create_num_ptable
    >>> built = create_num_ptable(NumsPTableParams(D=2, V=0.5))
    >>> built.table.type, sorted(set(built.table.i.tolist())), built.warnings
    ('all', [0, 1, 2], [])
    >>> built.table.records()[0]
    {'i': 0, 'j': '0', 'p': '1.00000000', 'v': '0', 'p_int_lb': '0.00000000', 'p_int_ub': '1.00000000', 'type': 'all'}
    """
    from sdc.ptable.build import _rounded_cumulative, _solve_row  # scipy, loaded only to build

    params.validate()
    i_col, v_col, lb_col, ub_col = [0], [0], [0], [INTERVAL_SCALE]
    warnings = []
    for i, optim, mono in zip(params.rows, params.per_row("optim"), params.per_row("mono")):
        v_units = params.support(i) - i * V_SCALE
        probabilities, outcome = _solve_row(
            params, i, v_units / V_SCALE, 0.0, bool(mono), int(optim), allow_lower_variance
        )
        if not outcome.reached:
            warnings.append(f"row i={i} misses V={params.V}: variance {outcome.variance:.5f}")
        upper = _rounded_cumulative(probabilities, i)
        i_col += [i] * len(v_units)
        v_col += v_units.tolist()
        lb_col += [0] + upper[:-1]
        ub_col += upper
    table = NumsPTable(params.type, np.array(i_col), np.array(v_col), np.array(lb_col), np.array(ub_col))
    return NumsPTableBuild(params, table, warnings)


def combine(*tables: NumsPTable) -> NumsPTableSet:
    """One set from tables of different types (e.g. all + small_cells); two of one type are an error."""
    by_type: dict[str, NumsPTable] = {}
    for table in tables:
        if table.type in by_type:
            raise SdcError(f"two magnitude ptables of type {table.type!r}: give each type once")
        by_type[table.type] = table
    return NumsPTableSet(by_type)


def with_other_types(table: NumsPTable, kind: str, add_to: str | os.PathLike | None = None) -> NumsPTableSet:
    """The set ``sdc ptable --table nums`` writes: ``table`` as type ``kind``, with the tables of the file
    ``add_to`` (other types); a small_cells table serves only beside one of type all (or even and odd)."""
    others = dict(read_nums_ptable(add_to).tables) if add_to else {}
    if kind in others:
        raise SdcError(f"{add_to} already has a table of type {kind}: choose another --type")
    if add_to and kind != "small_cells" and "small_cells" not in others:
        raise SdcError(f"--add-to combines a table with a small_cells table; {add_to} has types "
                       f"{', '.join(others)} and this one is {kind}")
    if add_to:
        return NumsPTableSet({**others, kind: table})
    if kind == "small_cells":
        raise SdcError("a small_cells table serves beside a table of type all (or even and odd): build that "
                       "first and give it as --add-to FILE")
    return NumsPTableSet({kind: table})


# ------------------------------------------------------------------------------------------------ files


def render_nums_ptable(tables: NumsPTableSet, fmt: str = "sdc") -> str:
    """sdc: ``i,j,p,v,p_int_lb,p_int_ub,type``; tauargus: ``i;j;p;v;p_int_ub;type`` (τ-Argus <PFILE_CONT>)."""
    if fmt == "sdc":
        sep, columns = ",", NUMS_PTABLE_COLUMNS
    elif fmt == "tauargus":
        sep, columns = ";", ("i", "j", "p", "v", "p_int_ub", "type")
    else:
        raise SdcError(f"magnitude ptables are written as sdc or tauargus, not {fmt!r}")
    out = io.StringIO()
    out.write(sep.join(columns) + "\n")
    for record in tables.records():
        out.write(sep.join(str(record[c]) for c in columns) + "\n")
    return out.getvalue()


def write_nums_ptable(tables: NumsPTableSet, path: str | os.PathLike, fmt: str = "sdc") -> None:
    """Write the magnitude ptables ``tables`` to ``path`` (atomically) as sdc (``i,j,p,v,p_int_lb,p_int_ub,type``,
    the dbt seed sdc_nums_ptable) or tauargus (``i;j;p;v;p_int_ub;type``, τ-Argus <PFILE_CONT>).

    >>> import pathlib, tempfile
    >>> from sdc.ptable import NumsPTableParams, NumsPTableSet, create_num_ptable, write_nums_ptable
    >>> tables = NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=2, V=0.5)).table})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "nums_ptable.csv"
    ...     write_nums_ptable(tables, path)
    ...     lines = path.read_text().splitlines()
    >>> lines[0], len(lines)
    ('i,j,p,v,p_int_lb,p_int_ub,type', 18)
    """
    write_text_atomically(Path(path), render_nums_ptable(tables, fmt), command="sdc ptable")


def read_nums_ptable(path: str | os.PathLike) -> NumsPTableSet:
    """Read and check a magnitude ptable file (sdc, SAS or τ-Argus columns; the checks of parse_nums_ptable:
    each row of each type partitions [0, 1), has mean 0, row 0 is 0 -> 0).

    >>> import pathlib, tempfile
    >>> from sdc.ptable import NumsPTableParams, NumsPTableSet, create_num_ptable, read_nums_ptable, write_nums_ptable
    >>> tables = NumsPTableSet({"all": create_num_ptable(NumsPTableParams(D=2, V=0.5)).table})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "nums_ptable.csv"
    ...     write_nums_ptable(tables, path)
    ...     again = read_nums_ptable(path)
    >>> sorted(again.tables), again.records() == tables.records()
    (['all'], True)
    """
    return parse_nums_ptable(read_text(Path(path), "magnitude ptable file"), str(path))


def parse_nums_ptable(text: str, source: str = "<magnitude ptable>") -> NumsPTableSet:
    """Read a magnitude ptable (sdc, SAS or τ-Argus columns, ``,`` or ``;``) and check every row.

    Each row of each type must partition [0, 1) with no gap or overlap (else a cell key would find no
    noise or two), have mean 0 (to 10^-6), and row 0 must be the single entry 0 -> 0.
    """
    lines = [(n, line.strip()) for n, line in enumerate(io.StringIO(text), start=1) if line.strip()]
    if not lines:
        raise SdcError(f"{source}: the file is empty")
    sep = ";" if ";" in lines[0][1] else ","
    header = [h.strip().strip('"').lower() for h in lines[0][1].split(sep)]
    needed = ("i", "v", "p_int_ub", "type")
    missing = [c for c in needed if c not in header]
    if missing:
        raise SdcError(
            f"{source}: a magnitude ptable needs the columns {', '.join(needed)} (and p_int_lb or rows in order); "
            f"missing: {', '.join(missing)} (header: {lines[0][1]})"
        )
    col = {name: header.index(name) for name in header}
    entries: dict[str, list[tuple[int, int, int | None, int, int]]] = {}
    for n, line in lines[1:]:
        cells = [c.strip().strip('"') for c in line.split(sep)]
        if len(cells) != len(header):
            raise SdcError(f"{source}, line {n}: {len(cells)} fields, the header has {len(header)}")
        kind = cells[col["type"]]
        if kind not in NUMS_PTABLE_TYPES:
            raise SdcError(f"{source}, line {n}: type {kind!r} is not one of {', '.join(NUMS_PTABLE_TYPES)}")
        i = _number(cells[col["i"]], "i", n, source)
        if i != int(i) or i < 0:
            raise SdcError(f"{source}, line {n}: i must be a whole number >= 0, got {cells[col['i']]}")
        v = _number(cells[col["v"]], "v", n, source)
        v_units = v * V_SCALE
        if v_units != int(v_units):
            raise SdcError(f"{source}, line {n}: v={cells[col['v']]} has more than {NUMS_V_DECIMALS} decimals")
        ub = _bound(cells[col["p_int_ub"]], "p_int_ub", n, source)
        lb = _bound(cells[col["p_int_lb"]], "p_int_lb", n, source) if "p_int_lb" in col else None
        entries.setdefault(kind, []).append((int(i), int(v_units), lb, ub, n))
    return NumsPTableSet({kind: _assemble(kind, rows, source) for kind, rows in entries.items()})


def _number(text: str, what: str, line: int, source: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise SdcError(f"{source}, line {line}: {what} is not a number: {text!r}") from None
    if not value.is_finite():
        raise SdcError(f"{source}, line {line}: {what} is not a finite number: {text!r}")
    return value


def _bound(text: str, what: str, line: int, source: str) -> int:
    value = _number(text, what, line, source) * INTERVAL_SCALE
    if value != int(value) or not 0 <= value <= INTERVAL_SCALE:
        raise SdcError(f"{source}, line {line}: {what}={text} must lie in [0, 1] with at most 8 decimals")
    return int(value)


def _assemble(kind: str, rows: list, source: str) -> NumsPTable:
    i_col, v_col, lb_col, ub_col = [], [], [], []
    for i in sorted({r[0] for r in rows}):
        row = [r for r in rows if r[0] == i]
        if all(r[2] is None for r in row):  # τ-Argus: lower bound = previous upper bound, rows in key order
            row = [(r[0], r[1], prev, r[3], r[4]) for r, prev in zip(row, [0] + [r[3] for r in row[:-1]])]
        row.sort(key=lambda r: (r[2], r[3]))
        position = 0
        for _, v, lb, ub, line in row:
            if lb != position:
                gap = "overlaps the previous one" if lb < position else "leaves a gap before it"
                raise SdcError(f"{source}, line {line}: the interval of type {kind}, i={i} {gap} (starts at {format_units(lb)}, previous ends at {format_units(position)})")
            if ub <= lb:
                raise SdcError(f"{source}, line {line}: empty or reversed interval [{format_units(lb)}, {format_units(ub)})")
            position = ub
        if position != INTERVAL_SCALE:
            raise SdcError(f"{source}: the intervals of type {kind}, i={i} end at {format_units(position)}, not at 1")
        mean = sum(Fraction(ub - lb, INTERVAL_SCALE) * Fraction(v, V_SCALE) for _, v, lb, ub, _ in row)
        if abs(mean) > Fraction(1, 10**6):
            raise SdcError(f"{source}: row i={i} of type {kind} has mean noise {float(mean):.3g}, not 0: the noise would be biased")
        for _, v, lb, ub, _ in row:
            i_col.append(i), v_col.append(v), lb_col.append(lb), ub_col.append(ub)
    table = NumsPTable(kind, np.array(i_col), np.array(v_col, dtype=np.int64), np.array(lb_col), np.array(ub_col))
    zero = table.i == 0
    if zero.any() and not (zero.sum() == 1 and table.v_units[zero][0] == 0):
        raise SdcError(f"{source}: row i=0 of type {kind} must be the single entry 0 -> 0 (zero stays zero)")
    if 1 not in table.rows:
        raise SdcError(f"{source}: the magnitude ptable of type {kind} has no row i=1 (ptable's icat always holds 1)")
    return table


def format_v(units: int) -> str:
    """10^-4 units as the shortest decimal: 5000 -> '0.5', -10000 -> '-1'."""
    text = str(Decimal(units).scaleb(-NUMS_V_DECIMALS).normalize())
    return "0" if text in ("0", "-0") else text if "E" not in text else f"{Decimal(units) / V_SCALE:f}"
