"""Hierarchical anonymisation of aggregate data with intervals, compatible with the SAS macro sas-anon
(Statistik Stadt Zürich; seed 003; specification: reference suppression.md §2.1).

Input: one row per cell of a hierarchy, a code column per level (code 0 = total over that level), and
a value. ``levels`` lists the level columns from the lowest to the highest (sas-anon's ``ebenen``).
Three stages:

1. primary: lowest-level cells with min_value <= v <= max_value are published as "min–max" (en dash);
2. secondary, bottom-up ("Blick nach oben"): a parent with one masked child masks a sibling (A?1) or
   itself (A?2); two or more masked children all at their lower or upper bounds likewise (B?1, B?2);
3. tertiary, top-down ("Blick nach unten"): a parent masked by A?1/B?1/C? passes its offsets to its
   largest (or smallest) child above 3 (C?).

The behaviour of the SAS code is kept, quirks included (§2.1.6: the literal 3 of the tertiary stage,
flagged cells re-chosen as secondaries, tertiary overwriting, B?1 flooring at 1, consistency errors
reported but not fatal). One of them is a disclosure: a C-interval is the child's value shifted by its
parent's offsets, so child − parent = C_min − P_min exactly, which reveals a second masked child of that
parent to anyone who knows the rule (quirk 9). ``fixed_c_intervals=True`` publishes a C-masked child
with the interval the constraints actually allow instead (see ``_tertiary``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sdc.errors import SdcError

PRIMARY_TEXT = "Kleine Werte werden auf der untersten Ebene maskiert"
SECONDARY_TEXT = "Anonymisiert, damit in {name} {code} keine Rückschlüsse gezogen werden können."
EN_DASH = "\u2013"


@dataclass
class Cell:
    codes: list[int]  # per level, lowest first, with the constant levels: [0 (Nuller)] + levels + [1 (Einer)]
    value: float
    korr: str = ""
    fall_lang: str = ""
    low: float | None = None
    high: float | None = None
    fall: str = ""


@dataclass
class SasAnonResult:
    rows: list[dict]
    columns: list[str]
    consistency_errors: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The output as the sas-anon README prints it: fields separated by one space, empty ones left out."""
        lines = [" ".join(self.columns)]
        for row in self.rows:
            lines.append(" ".join(text_of(row[c]) for c in self.columns if text_of(row[c]) != ""))
        return "\n".join(lines) + "\n"


def anonymise(
    rows: list[dict],
    levels: list[str],
    value: str,
    function: str = "min",
    min_value: float = 1,
    max_value: float = 3,
    fixed_c_intervals: bool = False,
    source: str | None = None,
) -> SasAnonResult:
    """Rows with the columns <value>_korr, _fallLang, _min, _max, _fall appended, in input order.
    ``source``: the file the rows come from, named in messages.

    One level q under its total (code 0); the small values 2 and 3 are published as intervals:

    >>> from sdc.suppression import anonymise
    >>> rows = [{"q": 0, "n": 10}, {"q": 1, "n": 2}, {"q": 2, "n": 3}, {"q": 3, "n": 5}]
    >>> result = anonymise(rows, levels=["q"], value="n")
    >>> [(row["q"], row["n_korr"], row["n_fall"]) for row in result.rows]
    [(0, '10', ''), (1, '1–3', 'primär'), (2, '1–3', 'primär'), (3, '5', '')]
    """
    if function not in ("min", "max"):
        raise SdcError(f"function must be min or max, got {function!r}")
    if not levels:
        raise SdcError("levels: give the hierarchy columns from the lowest to the highest level")
    for name, bound in (("min_value", min_value), ("max_value", max_value)):
        if not isinstance(bound, (int, float)) or not math.isfinite(bound):
            raise SdcError(f"{name} (--{name.replace('_', '-')}) must be a finite number, got {bound!r}")
    if min_value > max_value:
        raise SdcError(f"min_value (--min-value) {min_value:g} is larger than max_value (--max-value) {max_value:g}")
    if not rows:
        raise SdcError(f"{source or 'input'}: no rows below the header")
    if source is not None:
        absent = [c for c in levels + [value] if c not in rows[0]]
        if absent:
            raise SdcError(f"{source}: column {absent[0]!r} is not in the header ({', '.join(rows[0])})")
    where = [f"{source}, row {k + 1} below the header" if source is not None else f"row {k + 1}" for k in range(len(rows))]
    for k, row in enumerate(rows):
        for column in levels + [value]:
            if column not in row or row[column] is None or not str(row[column]).strip():
                raise SdcError(f"{where[k]}: column {column!r} is missing or empty")
    cells = [Cell([0] + [_code(row, l, where[k]) for l in levels] + [1], _value(row, value, where[k]))
             for k, row in enumerate(rows)]
    keys = [tuple(c.codes) for c in cells]
    if len(set(keys)) != len(keys):
        duplicate = next(k for k in keys if keys.count(k) > 1)
        raise SdcError(f"duplicate cell {dict(zip(levels, duplicate[1:-1]))}")
    names = ["Nuller"] + levels + ["Einer"]
    pick = max if function == "max" else min
    errors = _consistency(cells, names)
    _primary(cells, min_value, max_value)
    for i in range(1, len(names) - 1):
        _secondary(cells, names, i, pick, min_value, max_value)
    for i in range(len(names) - 3, 0, -1):
        _tertiary(cells, names, i, pick, fixed_c_intervals)
    out_columns = [f"{value}_korr", f"{value}_fallLang", f"{value}_min", f"{value}_max", f"{value}_fall"]
    result = []
    for row, cell in zip(rows, cells):
        extra = [cell.korr or _number(cell.value), cell.fall_lang, cell.low, cell.high, cell.fall]
        result.append({**row, **dict(zip(out_columns, extra))})
    columns = list(reversed(levels)) + [value] + out_columns
    return SasAnonResult(result, columns, errors)


def _code(row, column, where) -> int:
    text = str(row[column]).strip()
    try:
        return int(text)
    except ValueError:
        raise SdcError(f"{where}: level column {column!r} holds {text!r}, not a whole-number code "
                       "(0 for the total)") from None


def _value(row, column, where) -> float:
    text = str(row[column]).strip()
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise SdcError(f"{where}: value column {column!r} holds {text!r}, not a number")
    return number


def _children(cells, i, parent):
    """Rows below parent code p at level i+1: L(i+1) = p, L(i) != 0, L(i-1) = 0 (grouped by code only)."""
    return [c for c in cells if c.codes[i + 1] == parent and c.codes[i] != 0 and c.codes[i - 1] == 0]


def _parent_row(cells, i, parent):
    rows = [c for c in cells if c.codes[i + 1] == parent and c.codes[i] == 0 and c.codes[i - 1] == 0]
    return rows[0] if rows else None


def _parents(cells, i):
    return sorted({c.codes[i + 1] for c in cells if c.codes[i] != 0 and c.codes[i - 1] == 0})


def _consistency(cells, names):
    errors = []
    for i in range(1, len(names) - 1):
        for p in _parents(cells, i):
            parent = _parent_row(cells, i, p)
            total = sum(c.value for c in _children(cells, i, p))
            if parent is not None and parent.value != total:
                errors.append(f"ERROR: Inkonsistenz zwischen den Ebenen «{names[i + 1]}» und «{names[i]}» ({names[i + 1]} {p})")
    return errors


def _primary(cells, min_value, max_value):
    for c in cells:
        if c.codes[1] != 0 and min_value <= c.value <= max_value:
            c.korr = f"{_number(min_value)}{EN_DASH}{_number(max_value)}"
            c.low, c.high, c.fall, c.fall_lang = min_value, max_value, "primär", PRIMARY_TEXT


def _secondary(cells, names, i, pick, min_value, max_value):
    snapshot = {}
    for p in _parents(cells, i):
        children = _children(cells, i, p)
        flagged = [c for c in children if c.fall]
        big = [c for c in children if c.value > max_value]  # flagged or not (quirk 4)
        sek = None
        if big:
            best = pick(c.value for c in big)
            tied = [c for c in big if c.value == best]
            sek = next(c for c in tied if c.codes[i] == pick(t.codes[i] for t in tied))
        snapshot[p] = (
            len(flagged),
            sum(c.value for c in flagged),
            sum(c.low for c in flagged),
            sum(c.high for c in flagged),
            sek,
        )
    for p, (pri_anz, pri_sum, lo, hi, sek) in snapshot.items():
        if pri_anz == 0:
            continue
        parent = _parent_row(cells, i, p)
        if pri_anz == 1 or pri_sum in (lo, hi):
            kind = "A" if pri_anz == 1 else "B"
            if sek is not None:
                children = _children(cells, i, p)
                total = parent.value if parent is not None else 0.0
                rest = sum(c.value for c in children if not c.fall and c is not sek)
                flagged = [c for c in children if c.fall and c is not sek]
                low = total - rest - sum(c.high for c in flagged)
                high = total - rest - sum(c.low for c in flagged)
                if kind == "B":
                    low = max(1, low)  # quirk 12: only B?1 floors at 1
                name, code = (names[i], sek.codes[i]) if kind == "A" else (names[i + 1], p)
                _mask(sek, low, high, f"{kind}{i}1", SECONDARY_TEXT.format(name=name, code=code))
            elif parent is not None:
                low, high = (min_value, max_value) if kind == "A" else (lo, hi)
                _mask(parent, low, high, f"{kind}{i}2", SECONDARY_TEXT.format(name=names[i + 1], code=p))


def _tertiary(cells, names, i, pick, fixed):
    for parent in cells:
        if not (parent.codes[i] == 0 and parent.codes[i + 1] != 0 and parent.codes[i - 1] == 0):
            continue
        if not (parent.fall.startswith(("A", "B")) and parent.fall.endswith("1") or parent.fall.startswith("C")):
            continue
        p = parent.codes[i + 1]
        candidates = [c for c in _children(cells, i, p) if c.value > 3]  # quirk 1: literal 3
        if not candidates:
            continue
        best = pick(c.value for c in candidates)
        down, up = parent.value - parent.low, parent.high - parent.value
        for child in (c for c in candidates if c.value == best):  # all ties
            if fixed:
                # the child's interval as the constraints allow it: parent interval minus its siblings
                siblings = [s for s in _children(cells, i, p) if s is not child]
                low = parent.low - sum(s.high if s.fall else s.value for s in siblings)
                high = parent.high - sum(s.low if s.fall else s.value for s in siblings)
                low = max(low, 0.0)
            else:
                low, high = child.value - down, child.value + up
            _mask(child, low, high, f"C{i}", SECONDARY_TEXT.format(name=names[i + 1], code=p))


def _mask(cell, low, high, fall, text):
    cell.low, cell.high, cell.fall, cell.fall_lang = low, high, fall, text
    cell.korr = f"{_number(low)}-{_number(high)}"


def _number(x) -> str:
    """SAS BEST9.-like: whole numbers without decimals."""
    if x is None:
        return "."
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def text_of(value) -> str:
    """A field as sas-anon prints it (missing = '.', whole numbers without decimals)."""
    if value is None:
        return "."
    if isinstance(value, float):
        return _number(value)
    return str(value)
