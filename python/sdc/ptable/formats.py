"""Read and write perturbation tables in the formats statistical offices use.

========== =================================================== ==============================================
format     header                                              notes
========== =================================================== ==============================================
sdc        ``i,j,p,v,p_int_lb,p_int_ub``                       ours (conventions.PTABLE_COLUMNS), comma
sas        ``i;j;p;v;p_int_lb;p_int_ub``                       ptable's SAS export
tauargus   ``i;j;p;v;p_int_ub`` (legacy ``i;j;p_ij;v;p_ij_ub``) lower bound = previous upper bound
ons        ``pcv,ckey,pvalue``                                 integer cell keys 0..K-1 (K = max ckey + 1)
cantabular ``cell_value,cell_key,perturbation``                as ons; key ranges ``a-b`` allowed
overlay    corner ``i\\v`` or ``i\\j``, then one column per     cumulative matrix as printed in seed 000
           noise value v or target j                           (v columns) and seed 002 Table 11 (j columns);
                                                               ``-`` or empty = target not allowed
cum_zuf    ``i;cum_zuf;changeValue``                            seed 002 Table 12 (database-ready matrix)
========== =================================================== ==============================================

Integer-key tables become intervals ``[k/K, (k+1)/K)``, consecutive keys with the same noise merged,
bounds floored to 8 decimals: exact for cell keys that are integers mod K (K = 256 gives exact bounds).
ONS reuses rows 501..750 for counts above 750 (row ((n-1) mod 250) + 501). An imported ONS table with rows
up to 750 keeps that rule (``PTable.reuse_from = 501``), and so does its sdc file: a last column
``reuse_from`` (the same row number on every line), which ``ckm_count`` reads from the seed and the CLI and
the Python API from the file. An integer-key table also records the modulus its keys imply
(``PTable.key_modulus = K``), so that a CKM with record keys of another modulus can be refused.
"""

from __future__ import annotations

import csv
import io
import os
import re
import warnings
from dataclasses import replace
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from sdc.conventions import INTERVAL_DECIMALS, INTERVAL_SCALE, PTABLE_COLUMNS
from sdc.errors import SdcError
from sdc.files import read_text, write_text_atomically
from sdc.ptable.table import PTable, format_units
from sdc.ptable.validate import Entry, assemble, assemble_arrays

# ONS ptables have rows 1..750; larger counts reuse rows 501..750 (create_perturbed_table.py).
ONS_LAST_ROW = 750
ONS_REUSE_FROM = 501
REUSE_FROM_COLUMN = "reuse_from"
# the columns of an integer-key table (ons, cantabular) and their names in either format
_INTEGER_KEY_COLUMNS = {"i": ("pcv", "cell_value"), "key": ("ckey", "cell_key"), "v": ("pvalue", "perturbation")}
# the columns of an interval table (sdc, sas, tauargus) and their names
_INTERVAL_COLUMNS = {"i": ("i",), "j": ("j",), "v": ("v",), "p": ("p", "p_ij"), "ub": ("p_int_ub", "p_ij_ub")}

IMPORT_FORMATS = ("sdc", "sas", "tauargus", "ons", "cantabular", "overlay", "cum_zuf")
EXPORT_FORMATS = ("sdc", "tauargus", "sas")

_EXPORT_COLUMNS = {
    "sdc": (",", PTABLE_COLUMNS),
    "sas": (";", ("i", "j", "p", "v", "p_int_lb", "p_int_ub")),
    "tauargus": (";", ("i", "j", "p", "v", "p_int_ub")),
}
_OVERLAY_CORNER = re.compile(r"^i\s*\\\s*([vj])$", re.IGNORECASE)


# ----------------------------------------------------------------------------------------------- reading


def read_ptable(path: str | os.PathLike, fmt: str = "auto") -> tuple[PTable, str, list[str]]:
    r"""Read and validate a ptable file in one of IMPORT_FORMATS (sdc, sas, tauargus, ons, cantabular, overlay,
    cum_zuf; ``fmt="auto"``: detected from the header): (table, format, notes). The checks are those of
    ``parse_ptable``; the notes say what the import changed or found (e.g. a row that is not unbiased).

    >>> import pathlib, tempfile
    >>> from sdc.ptable import read_ptable
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "ons.csv"
    ...     _ = path.write_text("pcv,ckey,pvalue\n1,0,-1\n1,1,1\n2,0,0\n2,1,0\n")
    ...     table, fmt, notes = read_ptable(path)
    >>> fmt, table.max_i, table.key_modulus
    ('ons', 2, 2)
    >>> [(r["i"], r["v"], r["p_int_lb"], r["p_int_ub"]) for r in table.records()]
    [(0, 0, '0.00000000', '1.00000000'), (1, -1, '0.00000000', '0.50000000'), (1, 1, '0.50000000', '1.00000000'), (2, 0, '0.00000000', '1.00000000')]
    """
    path = Path(path)
    return parse_ptable(read_text(path, "ptable file"), fmt, source=str(path))


def parse_ptable(text: str, fmt: str = "auto", source: str = "<ptable>") -> tuple[PTable, str, list[str]]:
    r"""Parse and validate ptable text (a file's content, see ``read_ptable``): (table, format, notes).

    Each row must partition [0, 1) into intervals without gap or overlap, p must agree with the intervals and
    sum to 1, j = i + v, no j below 0, rows 1..max i without a gap; row 0 (0 stays 0) is added where absent.
    An error names the line and the rule it breaks.

    >>> from sdc.ptable import parse_ptable
    >>> text = ("i,j,p,v,p_int_lb,p_int_ub\n0,0,1,0,0,1\n"
    ...         "1,0,0.5,-1,0,0.5\n1,2,0.5,1,0.5,1\n")
    >>> table, fmt, notes = parse_ptable(text)
    >>> fmt, table.max_i, table.lookup(1, 0.25), notes
    ('sdc', 1, -1, [])
    >>> parse_ptable(text.replace("0.5,1\n", "0.6,1\n"))
    Traceback (most recent call last):
      ...
    sdc.errors.SdcError: <ptable>, line 4, row i=1: gap in the intervals: lower bound 0.6 but the previous interval ends at 0.5
    """
    header_line = next((line for line in io.StringIO(text) if line.strip()), None)
    if header_line is None:
        raise SdcError(f"{source}: the file is empty")
    sep = _separator(header_line.rstrip("\r\n"))
    header = _cells(header_line.rstrip("\r\n"), sep)
    if fmt == "auto":
        fmt = detect_format(header, sep, source)
    elif fmt not in IMPORT_FORMATS:
        raise SdcError(f"unknown ptable format {fmt!r}; known: {', '.join(IMPORT_FORMATS)}")
    read = _read_plain_numbers(fmt, header, text, sep, source) or _read_lines(fmt, header, text, sep, source)
    table, notes, more_notes = read
    if fmt in ("ons", "cantabular") and table.max_i == ONS_LAST_ROW:
        table = replace(table, reuse_from=ONS_REUSE_FROM)
        notes.append(
            f"counts above {ONS_LAST_ROW} reuse rows {ONS_REUSE_FROM}..{ONS_LAST_ROW} as in ONS "
            f"(row = ((n-1) mod 250) + 501); the sdc file keeps the rule in its column {REUSE_FROM_COLUMN}"
        )
    return table, fmt, notes + more_notes


def _read_lines(fmt, header, text, sep, source) -> tuple[PTable, list[str], list[str]]:
    """The file line by line, each value checked as it is read: (table, the reader's notes, assemble's)."""
    lines = [(n, line.rstrip("\r\n")) for n, line in enumerate(io.StringIO(text), start=1) if line.strip()]
    rows = [(n, _cells(line, sep)) for n, line in lines[1:]]
    reader = {
        "sdc": _read_interval_columns,
        "sas": _read_interval_columns,
        "tauargus": _read_interval_columns,
        "overlay": _read_overlay,
        "cum_zuf": _read_cum_zuf,
    }
    if fmt in ("ons", "cantabular"):
        entries, notes, key_modulus = _read_integer_keys(header, rows, sep, source)
    else:
        entries, notes = reader[fmt](header, rows, sep, source)
        key_modulus = None
    table, more_notes = assemble(entries, source)
    table = replace(table, key_modulus=key_modulus)
    if fmt in ("sdc", "sas"):
        table = replace(table, reuse_from=_reuse_from_column(header, rows, table.max_i, source))
    return table, notes, more_notes


def _reuse_from_column(header, rows, max_i: int, source: str) -> int | None:
    """The optional last column reuse_from of an sdc file: one row number, 1 <= r <= max i, on every line."""
    lower = [h.lower() for h in header]
    if REUSE_FROM_COLUMN not in lower:
        return None
    k = lower.index(REUSE_FROM_COLUMN)
    values = {_integer(_cell(cells, k, REUSE_FROM_COLUMN, line, source), REUSE_FROM_COLUMN, line, source)
              for line, cells in rows}
    if len(values) != 1:
        raise SdcError(f"{source}: column {REUSE_FROM_COLUMN} must hold one row number on every line, "
                       f"found {', '.join(str(v) for v in sorted(values))}")
    (value,) = values
    if not 1 <= value <= max_i:
        raise SdcError(f"{source}: {REUSE_FROM_COLUMN} {value} is not a row of the table (1..{max_i})")
    return value


def is_magnitude_ptable(path: str | os.PathLike) -> bool:
    """True for a file whose header is a magnitude ptable's (i, v, p_int_ub and type, as ``sdc ptable --table
    nums`` writes it): ``sdc ptable --import`` then reads and checks it as one."""
    header_line = next((line for line in io.StringIO(read_text(Path(path), "ptable file")) if line.strip()), "")
    header = {h.lower().strip('"') for h in _cells(header_line.rstrip("\r\n"), _separator(header_line.rstrip("\r\n")))}
    return {"i", "v", "p_int_ub", "type"} <= header


def detect_format(header: list[str], sep: str, source: str) -> str:
    names = {h.lower() for h in header}
    if {"i", "j", "v", "p_int_lb", "p_int_ub"} <= names:
        return "sdc" if sep == "," else "sas"
    if {"i", "j", "v"} <= names and ({"p_int_ub"} <= names or {"p_ij_ub"} <= names):
        return "tauargus"
    if {"pcv", "ckey", "pvalue"} <= names:
        return "ons"
    if {"cell_value", "cell_key", "perturbation"} <= names:
        return "cantabular"
    if {"i", "cum_zuf", "changevalue"} <= names:
        return "cum_zuf"
    if header and _OVERLAY_CORNER.match(header[0]):
        return "overlay"
    raise SdcError(
        f"{source}: unknown ptable format, header {sep.join(header)!r} matches none of: "
        "i,j,p,v,p_int_lb,p_int_ub (sdc) | i;j;p;v;p_int_lb;p_int_ub (sas) | i;j;p;v;p_int_ub or "
        "i;j;p_ij;v;p_ij_ub (tauargus) | pcv,ckey,pvalue (ons) | cell_value,cell_key,perturbation (cantabular) | "
        "i;cum_zuf;changeValue (cum_zuf) | i\\v or i\\j corner of a cumulative matrix (overlay)"
    )


def _cells(line: str, sep: str) -> list[str]:
    """The fields of one line, CSV-quoted or not (ONS ships its ptable with the header "pcv","ckey","pvalue")."""
    if '"' not in line:  # the common case, without the csv module's cost (ONS's table has 192 000 lines)
        return [cell.strip() for cell in line.split(sep)]
    return [cell.strip() for cell in next(csv.reader([line], delimiter=sep), [])]


def _separator(header_line: str) -> str:
    for sep in (";", "\t"):
        if sep in header_line:
            return sep
    return ","


def _columns(header: list[str], wanted: dict[str, tuple[str, ...]], source: str) -> dict[str, int]:
    """Index of each wanted column (first alias found, case-insensitive); missing ones are an error."""
    lower = [h.lower() for h in header]
    index = {}
    for name, aliases in wanted.items():
        found = [lower.index(a) for a in aliases if a in lower]
        if not found:
            raise SdcError(f"{source}: column {aliases[0]!r} is missing from the header {header}")
        index[name] = found[0]
    return index


def _cell(cells: list[str], k: int, what: str, line: int, source: str) -> str:
    if k >= len(cells) or cells[k] == "":
        raise SdcError(f"{source}, line {line}: no value in column {what!r}")
    return cells[k]


def _decimal(text: str, what: str, line: int, source: str, sep: str = ",") -> Decimal:
    raw = text.replace(",", ".") if sep != "," else text
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise SdcError(f"{source}, line {line}: {what} = {text!r} is not a number") from None
    if not value.is_finite():
        raise SdcError(f"{source}, line {line}: {what} = {text!r} is not a finite number")
    return value


def _integer(text: str, what: str, line: int, source: str, sep: str = ",") -> int:
    if text.isascii() and (text.isdigit() or (text[:1] == "-" and text[1:].isdigit())):
        value = int(text)
    else:
        number = _decimal(text, what, line, source, sep)
        if number != number.to_integral_value():
            raise SdcError(f"{source}, line {line}: {what} = {text!r} is not a whole number")
        value = int(number)
    if abs(value) >= _LARGEST_NUMBER:
        raise SdcError(f"{source}, line {line}: {what} = {text!r} is too large (at most 2^53 in absolute value)")
    return value


# counts, noise and integer cell keys beyond 2^53 are no ptable's: they would not survive a float column
_LARGEST_NUMBER = 2**53


def _read_interval_columns(header, rows, sep, source):
    """sdc, sas and tauargus: one interval per line with i, j, v, p and the bounds."""
    cols = _columns(header, _INTERVAL_COLUMNS, source)
    lower = [h.lower() for h in header]
    lb_col = lower.index("p_int_lb") if "p_int_lb" in lower else None
    type_col = lower.index("type") if "type" in lower else None
    entries = []
    for line, cells in rows:
        get = {name: _cell(cells, k, header[k], line, source) for name, k in cols.items()}
        if type_col is not None and type_col < len(cells) and cells[type_col] not in ("", "all"):
            raise SdcError(
                f"{source}, line {line}: type {cells[type_col]!r} is a magnitude ptable; only count ptables "
                "(type 'all') are supported"
            )
        i = _integer(get["i"], "i", line, source)
        j = _integer(get["j"], "j", line, source)
        v = _integer(get["v"], "v", line, source)
        if j != i + v:
            raise SdcError(f"{source}, line {line}, row i={i}: j={j} but i + v = {i + v}")
        lb = None
        if lb_col is not None:
            lb = _decimal(_cell(cells, lb_col, "p_int_lb", line, source), "p_int_lb", line, source)
        entries.append(
            Entry(
                i=i,
                v=v,
                ub=_decimal(get["ub"], "p_int_ub", line, source),
                lb=lb,
                p=_decimal(get["p"], "p", line, source),
                line=line,
            )
        )
    return entries, []


def _read_integer_keys(header, rows, sep, source):
    """ons / cantabular: one line per (value, integer cell key) with its noise."""
    cols = _columns(header, _INTEGER_KEY_COLUMNS, source)
    # per row, the key ranges as given (k0, k1, noise, line): checked and merged without one entry per key,
    # so a range such as 0-1000000000 costs no more than 0-255
    ranges: dict[int, list[tuple[int, int, int, int]]] = {}
    for line, cells in rows:
        i = _integer(_cell(cells, cols["i"], header[cols["i"]], line, source), "value", line, source)
        v = _integer(_cell(cells, cols["v"], header[cols["v"]], line, source), "perturbation", line, source)
        key_text = _cell(cells, cols["key"], header[cols["key"]], line, source)
        low, _, high = key_text.partition("-")
        k0 = _integer(low, "cell key", line, source)
        k1 = _integer(high, "cell key", line, source) if high else k0
        if k0 < 0 or k1 < k0:
            raise SdcError(f"{source}, line {line}: cell key range {key_text!r} is not k or a-b with 0 <= a <= b")
        ranges.setdefault(i, []).append((k0, k1, v, line))
    modulus = max(k1 for row in ranges.values() for _, k1, _, _ in row) + 1
    entries = []
    for i, row in sorted(ranges.items()):
        first_line = row[0][3]
        row.sort()
        covered, absent, first_absent = 0, 0, None  # keys 0..covered-1 seen so far
        for k0, k1, v, line in row:
            if k0 < covered:
                raise SdcError(f"{source}, line {line}, row i={i}: cell key {k0} appears twice")
            if k0 > covered:
                absent += k0 - covered
                first_absent = covered if first_absent is None else first_absent
            covered = k1 + 1
        if absent:
            raise SdcError(
                f"{source}, row i={i}: cell key {first_absent} has no perturbation "
                f"({absent} of the keys 0..{modulus - 1} are missing)"
            )
        if covered < modulus:
            raise SdcError(
                f"{source}, row i={i}: cell key {covered} has no perturbation "
                f"({modulus - covered} of the keys 0..{modulus - 1} are missing)"
            )
        for (_, _, v, _), (k_next, _, v_next, _) in zip(row, row[1:]):
            if v_next != v:
                entries.append(Entry(i=i, v=v, ub=_floor_bound(k_next, modulus), line=first_line))
        entries.append(Entry(i=i, v=row[-1][2], ub=_floor_bound(modulus, modulus), line=first_line))
    return entries, _integer_key_notes(modulus, max(ranges)), modulus


def _integer_key_notes(modulus: int, top: int) -> list[str]:
    notes = [f"integer cell keys 0..{modulus - 1}: key k maps to the interval [k/{modulus}, (k+1)/{modulus})"]
    if INTERVAL_SCALE % modulus:
        notes.append(
            f"bounds k/{modulus} floored to {INTERVAL_DECIMALS} decimals: exact for integer cell keys mod {modulus}"
        )
    if top != ONS_LAST_ROW:
        notes.append(f"counts above {top} use row {top} (ONS's reuse of rows 501..750 needs rows up to 750)")
    return notes




def _read_plain_numbers(fmt, header, text, sep, source) -> tuple[PTable, list[str], list[str]] | None:
    """A file of plain numbers read with numpy, a hundred times faster than line by line (ONS's tables have
    192 000 lines): what _read_lines gives, or None where _read_lines must read it (anything unusual in the
    text, a problem to name with its line)."""
    if fmt not in ("ons", "cantabular", "sdc", "sas", "tauargus") or any(h.lower() == "type" for h in header):
        return None  # a type column holds text (a magnitude ptable's)
    fields = _numeric_lines(len(header), text, sep)
    if fields is None:
        return None
    if fmt in ("ons", "cantabular"):
        return _plain_integer_keys(header, fields, source)
    return _plain_intervals(fmt, header, fields, source)


# ASCII bytes a plain number file may hold: digits, '-', '.', the separator (',' after replacing) and newlines
_PLAIN_BYTES = np.zeros(256, dtype=bool)
_PLAIN_BYTES[list(b"0123456789-.,\n")] = True


def _numeric_lines(columns: int, text: str, sep: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The lines after the header (lines x columns) where every field is a plain number: an optional '-', digits,
    at most one '.' and INTERVAL_DECIMALS decimals, 17 characters at most. Each field as its digits without the
    point, a whole number, and its decimal places: "-0.3625" is (-3625, 4), exact (numpy reads whole numbers
    ten times faster than decimals). None for anything else: a blank line, an empty field, a space, a quote,
    an exponent, a key range a-b, a decimal comma, a line of other length."""
    body = text.partition("\n")[2].replace("\r\n", "\n").rstrip("\n")
    if text[:1].isspace() or not body or (sep != "," and "," in body):
        return None
    body = body.replace(sep, ",") if sep != "," else body
    raw = np.frombuffer(body.encode(), dtype=np.uint8)
    separator = (raw == ord(",")) | (raw == ord("\n"))
    field_start = np.r_[True, separator[:-1]]
    if not _PLAIN_BYTES[raw].all() or ((raw == ord("-")) & ~field_start).any():
        return None
    separators = np.flatnonzero(separator)
    field_ends = np.r_[separators, len(raw)]
    line_ends = np.flatnonzero(np.r_[raw[separators] == ord("\n"), True])  # among the fields' ends
    # the same number of fields on every line: a line of 4 next to one of 2 would pass a count of the whole
    if (np.diff(np.r_[-1, line_ends]) != columns).any():
        return None
    dots = np.flatnonzero(raw == ord("."))
    field = np.searchsorted(field_ends, dots)  # the field of each point
    places = np.zeros(len(field_ends), dtype=np.int64)
    places[field] = field_ends[field] - dots - 1
    points = np.bincount(field, minlength=len(field_ends))
    signs = np.bincount(np.searchsorted(field_ends, np.flatnonzero(raw == ord("-"))), minlength=len(field_ends))
    length = np.diff(np.r_[-1, field_ends]) - 1
    if (length > 17).any() or (length - signs - points < 1).any() or (points > 1).any() \
            or (places > INTERVAL_DECIMALS).any():
        return None  # a field of more than 17 characters, without a digit, with two points or too many decimals
    with warnings.catch_warnings():  # numpy stops at a field that is no number: fewer values
        warnings.simplefilter("ignore")
        try:
            digits = np.fromstring(body.replace(".", "").replace("\n", ","), dtype=np.int64, sep=",")
        except ValueError:  # numpy 2 raises where older versions warned
            return None
    if len(digits) != len(places):
        return None
    return digits.reshape(-1, columns), places.reshape(-1, columns)


def _whole(digits: np.ndarray, places: np.ndarray) -> np.ndarray | None:
    """Fields without decimals below 2^53 (as the line reader takes them), else None."""
    if places.any() or (np.abs(digits) >= _LARGEST_NUMBER).any():
        return None
    return digits


def _units(digits: np.ndarray, places: np.ndarray) -> np.ndarray | None:
    """Fields of at most 8 decimals (_numeric_lines checked it) below 10^6 in exact 10^-8 units, else None."""
    if (np.abs(digits) >= 10**6 * 10**places).any():
        return None
    return digits * 10 ** (INTERVAL_DECIMALS - places)


def _plain_integer_keys(header, fields, source):
    """ONS and Cantabular files with every key of every row once, each on its own line (no ranges): consecutive
    keys with the same noise become one interval, as _read_integer_keys makes them."""
    numbers = _whole(*fields) if len(header) == 3 else None
    if numbers is None:
        return None
    cols = _columns(header, _INTEGER_KEY_COLUMNS, source)
    i, key, v = numbers[:, cols["i"]], numbers[:, cols["key"]], numbers[:, cols["v"]]
    if ((i[1:] < i[:-1]) | ((i[1:] == i[:-1]) & (key[1:] <= key[:-1]))).any():  # ONS's file is in order already
        order = np.lexsort((key, i))
        i, key, v = i[order], key[order], v[order]
    modulus = int(key.max()) + 1
    starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]])
    rows, counts = i[starts], np.diff(np.r_[starts, len(i)])
    if key.min() < 0 or (counts != modulus).any() or (key != np.tile(np.arange(modulus), len(rows))).any():
        return None
    # one interval per run of equal noise in a row: a run ends where the row ends or the noise changes. Its
    # upper bound (k + 1) / K floored to 10^-8 units, in integers as _floor_bound (K <= lines: no overflow)
    run_ends = np.ones(len(i), dtype=bool)
    run_ends[:-1] = (i[1:] != i[:-1]) | (v[1:] != v[:-1])
    assembled = assemble_arrays(i[run_ends], v[run_ends], (key[run_ends] + 1) * INTERVAL_SCALE // modulus)
    if assembled is None:
        return None
    table, more_notes = assembled
    return replace(table, key_modulus=modulus), _integer_key_notes(modulus, int(rows.max())), more_notes


def _plain_intervals(fmt, header, fields, source):
    """sdc, sas and tauargus files: one interval per line, as _read_interval_columns reads them."""
    lower = [h.lower() for h in header]
    try:
        cols = _columns(header, _INTERVAL_COLUMNS, source)
    except SdcError:
        return None
    digits, places = fields

    def column(k, convert):
        return convert(digits[:, k], places[:, k])

    i, j, v = (column(cols[c], _whole) for c in ("i", "j", "v"))
    ub, p = column(cols["ub"], _units), column(cols["p"], _units)
    lb = column(lower.index("p_int_lb"), _units) if "p_int_lb" in lower else None
    if any(x is None for x in (i, j, v, ub, p)) or ("p_int_lb" in lower and lb is None) or (j != i + v).any():
        return None
    assembled = assemble_arrays(i, v, ub, lb, p)
    if assembled is None:
        return None
    table, more_notes = assembled
    if fmt in ("sdc", "sas") and REUSE_FROM_COLUMN in lower:  # one row number on every line, else _read_lines names it
        reuse = column(lower.index(REUSE_FROM_COLUMN), _whole)
        if reuse is None or (reuse != reuse[0]).any() or not 1 <= reuse[0] <= table.max_i:
            return None
        table = replace(table, reuse_from=int(reuse[0]))
    return table, [], more_notes


def _floor_bound(k: int, modulus: int) -> Decimal:
    return (Decimal(k) / Decimal(modulus)).quantize(Decimal(1).scaleb(-INTERVAL_DECIMALS), rounding=ROUND_FLOOR)


def _read_overlay(header, rows, sep, source):
    """Cumulative matrix: corner i\\v (columns are noise values) or i\\j (columns are targets)."""
    kind = _OVERLAY_CORNER.match(header[0]).group(1).lower()
    labels = []
    for label in header[1:]:
        try:
            labels.append(int(label))
        except ValueError:
            raise SdcError(f"{source}, line 1: column label {label!r} is not a whole number ({kind} value)") from None
    entries = []
    for line, cells in rows:
        row_label = re.sub(r"^(≥|>=)\s*", "", cells[0])
        i = _integer(row_label, "row label i", line, source, sep)
        if len(cells) != len(header):
            raise SdcError(
                f"{source}, line {line}, row i={i}: {len(cells) - 1} entries but the header has {len(labels)} columns"
            )
        previous = None
        for label, cell in zip(labels, cells[1:]):
            if cell in ("", "-", "–"):
                continue
            ub = _decimal(cell, f"cumulative value ({kind}={label})", line, source, sep)
            if previous is not None and ub < previous:
                raise SdcError(
                    f"{source}, line {line}, row i={i}: cumulative value {cell} at {kind}={label} is below "
                    f"the value {previous} before it (negative probability)"
                )
            v = label if kind == "v" else label - i
            entries.append(Entry(i=i, v=v, ub=ub, line=line))
            previous = ub
    return entries, []


def _read_cum_zuf(header, rows, sep, source):
    """seed 002 Table 12: (i, cum_zuf, changeValue), cum_zuf = upper bound of the interval."""
    cols = _columns(header, {"i": ("i",), "ub": ("cum_zuf",), "v": ("changevalue",)}, source)
    entries = []
    for line, cells in rows:
        i = _integer(_cell(cells, cols["i"], "i", line, source), "i", line, source, sep)
        ub = _decimal(_cell(cells, cols["ub"], "cum_zuf", line, source), "cum_zuf", line, source, sep)
        v = _integer(_cell(cells, cols["v"], "changeValue", line, source), "changeValue", line, source, sep)
        entries.append(Entry(i=i, v=v, ub=ub, line=line))
    return entries, []


# ----------------------------------------------------------------------------------------------- writing


def render_ptable(table: PTable, fmt: str = "sdc") -> str:
    """The table as text in one of EXPORT_FORMATS."""
    if fmt not in _EXPORT_COLUMNS:
        raise SdcError(f"unknown export format {fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    sep, columns = _EXPORT_COLUMNS[fmt]
    tail = ""
    if table.reuse_from is not None and fmt in ("sdc", "sas"):
        columns, tail = columns + (REUSE_FROM_COLUMN,), f"{sep}{table.reuse_from}"
    lines = [sep.join(columns)]
    for record in table.records():
        lines.append(sep.join(str(record[c]) for c in columns if c != REUSE_FROM_COLUMN) + tail)
    return "\n".join(lines) + "\n"


def write_ptable(table: PTable, path: str | os.PathLike, fmt: str = "sdc") -> None:
    """Write ``table`` to ``path`` in one of EXPORT_FORMATS: sdc (``i,j,p,v,p_int_lb,p_int_ub``, what the dbt
    seed sdc_ptable holds), tauargus (``i;j;p;v;p_int_ub``) or sas (``;``-separated sdc columns). Written
    atomically: the file is replaced only when the whole table has been written.

    >>> import pathlib, tempfile
    >>> from sdc.ptable import PTableParams, create_ptable, read_ptable, write_ptable
    >>> table = create_ptable(PTableParams(D=3, V=1)).table
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "ptable.csv"
    ...     write_ptable(table, path)
    ...     lines = path.read_text().splitlines()
    ...     again = read_ptable(path)[0]
    >>> lines[:3]
    ['i,j,p,v,p_int_lb,p_int_ub', '0,0,1.00000000,0,0.00000000,1.00000000', '1,0,0.36988218,-1,0.00000000,0.36988218']
    >>> again.records() == table.records()
    True
    """
    text = render_ptable(table, fmt)
    write_text_atomically(Path(path), text, command="sdc ptable")


__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "detect_format",
    "format_units",
    "is_magnitude_ptable",
    "parse_ptable",
    "read_ptable",
    "render_ptable",
    "write_ptable",
]
