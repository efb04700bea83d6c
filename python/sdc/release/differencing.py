"""Differencing releases that differ by a handful of records (red team R4-4).

With stable record keys a cell whose records did not change keeps its published value, so the cells that change
between two releases are exactly those of the records added, removed or revised: when one person joined, the
changed cells of every table intersect in that person's combination of codes, and the changes of a magnitude
table estimate their values. The measure is the number of records that changed, and the protection a minimum of
them: a release is refused where, against an earlier release, some but fewer than ``minimum`` records changed, so
that the changed cells are those of at least ``minimum`` records (a reader who knows one of them cannot tell its
cells from the others'). What remains is said in SECURITY.md: with few but enough records, their cells can still
be told apart where they lie in different parts of the tables.

What is counted is what a reader can difference (red team, issue 48):

* **the populations the release publishes**: the rows of each microdata relation its tables read (a loaded table,
  or a staging view of some of its records), not the whole loaded table: a revision of a record no published
  table covers changes nothing a reader sees;
* **over the columns its tables read**: their dimensions, measures, facts and the record key, each named by the
  loaded columns it is computed from (record_wise.py), not every column of the load: a revised note that no table
  publishes is no change a reader sees, and a joiner beside ten such revisions is still one joiner;
* **against every earlier release in the ledger**, not the last one only: each population is compared with the
  closest population of the same loaded table, over the same columns, that each earlier release published (a
  release that skipped a table, or a second change that undoes most of the first, is compared with the release
  a reader holds beside it). Populations are matched by their records, not by names, so a renamed table or view
  is the same population.

Counting changed records needs an earlier release's records, which the ledger does not keep. It keeps a sketch of
them instead, an invertible Bloom lookup table: every record is an element x (60 bits of the md5 of its row over
the counted columns, so a revised value or a new key makes another element) put into 3 of 3 x SKETCH_CELLS cells
(one per part, by 20-bit slices of x), each cell holding the number of its elements, their sum and the sum of a
checksum of each. The difference of two sketches holds exactly the elements of the two releases' symmetric
difference; peeling its cells that hold one element (or several copies of one: records alike in every counted
column) decodes it whenever it is small (here: up to about 80 elements, a revision counting twice), and a
difference it cannot decode has more elements than that: many records changed. A few hundred numbers per
population and release, in the office's audit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sdc.conventions import KEY_FACT_PREFIX, RECORD_KEY_COLUMN
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q

SKETCH_CELLS = 64  # cells per part; 3 parts
PRIME = (1 << 61) - 1  # the checksum's modulus
CHECK = 0x5DEECE66D  # the checksum's multiplier: f(x) = (x mod PRIME) * CHECK mod PRIME
MIN_CHANGED_RECORDS = 10  # sdc publish --min-changed-records
SKETCHED_KINDS: tuple[str, ...] = ("ckm_count", "ckm_sum", "suppression")


def check_minimum(minimum) -> None:
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
        raise SdcError(f"the minimum of changed records (--min-changed-records) must be a whole number of at least 0, "
                       f"got {minimum!r}")


@dataclass
class Population:
    """One population the release publishes: the SQL of its microdata, its loaded table, and the columns its tables
    read, by the loaded columns each is computed from (lineage expression -> column of the microdata)."""

    source: str
    root: str
    columns: dict[str, str] = field(default_factory=dict)
    shown: str = ""


def release_populations(verifier) -> list[Population]:
    """The populations of the verified tables (verifier.verified), each with the columns its tables read."""
    found: dict[str, Population] = {}
    for item in sorted(verifier.verified.values(), key=lambda v: v.rel.key):
        if item.kind not in SKETCHED_KINDS or not item.source or len(item.roots) != 1:
            continue
        population = found.setdefault(item.source, Population(item.source, next(iter(item.roots)),
                                                              shown=_shown(verifier, item)))
        available = {c.lower(): c for c in verifier._columns(item.source)}
        for column in _read_columns(item):
            name = available.get(column.lower())
            if name is not None:
                lineage = (item.lineage or {}).get(name.lower())
                population.columns[lineage.expression if lineage is not None else name.lower()] = name
    return list(found.values())


def _read_columns(item) -> list[str]:
    """The columns of its microdata that a verified table reads: dimensions, measure, weight, fact, record keys."""
    call = item.call or {}
    cells = call.get("cells") if item.kind == "suppression" else call
    columns = [str(d) for d in cells.get("dims") or []]
    columns += [str(c) for c in (cells.get("value"), cells.get("weight"), cells.get("fact")) if c]
    if cells.get("fact"):
        columns.append(KEY_FACT_PREFIX + str(cells["fact"]))
    return columns + [RECORD_KEY_COLUMN]


def _shown(verifier, item) -> str:
    relation = next((r for r in verifier.inputs.values() if str(r) == item.source), None)
    name = f"{relation.schema}.{relation.identifier}" if relation is not None and relation.database != "temp" else None
    root = next(iter(item.roots))
    return root if name is None or name.lower() == root.lower() else f"{root} (as {name} reads it)"


def record_sketch(con, relation: str, columns: list[str] | None = None) -> list[list[int]]:
    """The sketch of the rows of ``relation`` (SQL) over ``columns`` (in this order; None: every column by name):
    [cell, count, sum of x, sum of f(x)] for each cell in use."""
    if columns is None:  # the sketch of an sdc before issue 48: the whole loaded table
        names = sorted(c for (c,) in con.execute(f"select column_name from (describe select * from {relation})").fetchall())
        row = "struct_pack(" + ", ".join(f"{q(c)} := r.{q(c)}" for c in names) + ")"
    else:
        row = "row(" + ", ".join(f"r.{q(c)}" for c in columns) + ")"
    x = f"cast('0x' || substr(md5(cast({row} as varchar)), 1, 15) as bigint)"  # below 2^60
    # each element into its 3 cells in one pass over the rows (unnest), its checksum once per row
    cells = ", ".join(f"{part * SKETCH_CELLS} + cast((x >> {20 * part}) % {SKETCH_CELLS} as integer)"
                      for part in range(3))
    return [[int(v) for v in found] for found in con.execute(
        f"with elements as (select x, {_checksum_sql('x')} as f from (select {x} as x from {relation} as r)), "
        f"placed as (select unnest([{cells}]) as cell, x, f from elements) "
        "select cell, count(*), sum(x), sum(f) from placed group by 1 order by 1").fetchall()]


def _checksum(x: int) -> int:
    """f(x), as _checksum_sql computes it in the sketch."""
    return (x % PRIME) * CHECK % PRIME


def _checksum_sql(x: str) -> str:
    """f(x) = (x mod PRIME) * CHECK mod PRIME for 0 <= x < 2^60 in bigint arithmetic (a hugeint product costs twice
    the whole sketch): x in three 20-bit parts, each part times CHECK below 2^55, times 2^(20 i) mod the Mersenne
    prime 2^61 - 1 a rotation of 61 bits."""
    def rotated(y: str, k: int) -> str:  # y * 2^k mod PRIME for 0 <= y < 2^61, as a sum below 2^62
        return y if k == 0 else f"((({y}) & {(1 << (61 - k)) - 1}) << {k}) + (({y}) >> {61 - k})"

    terms = [rotated(f"(({x} >> {20 * part}) & {(1 << 20) - 1}) * {CHECK}", 20 * part) for part in range(3)]
    return "((" + " + ".join(f"(({term}) % {PRIME})" for term in terms) + f") % {PRIME})"


def changed_records(before: list[list[int]], now: list[list[int]]) -> int | None:
    """The number of elements in which the rows of two sketches differ (a record added or removed: 1, a record
    revised or re-keyed: 2), or None where the difference is too large to decode (many records changed)."""
    cells: dict[int, list[int]] = {}
    for sign, sketch in ((1, now), (-1, before)):
        for cell, count, total, check in sketch:
            found = cells.setdefault(cell, [0, 0, 0])
            found[0] += sign * count
            found[1] += sign * total
            found[2] += sign * check
    decoded = 0
    progress = True
    bound = sum(abs(c[0]) for c in cells.values())  # no more elements than that can come out
    while progress and decoded <= bound:
        progress = False
        for cell, (count, total, check) in list(cells.items()):
            if count == 0 or total % count:
                continue
            x = total // count  # one element, or ``count`` copies of one (records alike in every column)
            places = [part * SKETCH_CELLS + (x >> (20 * part)) % SKETCH_CELLS for part in range(3)]
            if not 0 <= x < 1 << 60 or _checksum(x) * count != check or cell not in places:
                continue  # more than one element, which the others' removal may yet leave alone
            for place in places:
                other = cells.setdefault(place, [0, 0, 0])
                other[0] -= count
                other[1] -= count * x
                other[2] -= count * _checksum(x)
            decoded += abs(count)
            progress = True
    return decoded if all(c == [0, 0, 0] for c in cells.values()) else None


def check_differencing(verifier, con, last: int | None, audit: dict, minimum: int = MIN_CHANGED_RECORDS) -> dict:
    """The sketches of this release's populations into ``audit`` (record_sketches), and per population the records
    changed since the last release in the ledger on ``con`` that published one of its loaded table (``last``;
    None: the first release); refuses where, against any earlier release, some but fewer than ``minimum`` changed
    (the module's text). Returns {population: changed elements, or None for many}."""
    populations = release_populations(verifier)
    entries = []
    for population in populations:
        columns = sorted(population.columns)
        _check_copied(verifier, population, [population.columns[c] for c in columns])
        entries.append({"root": population.root, "columns": columns,
                        "sketch": record_sketch(verifier.con, population.source,
                                                [population.columns[c] for c in columns])})
    audit["record_sketches"] = entries
    earlier = _earlier_sketches(con) if con is not None and last is not None else []
    changed: dict[str, int | None] = {}
    for population, entry in zip(populations, entries):
        sketches: dict[tuple | None, list] = {tuple(entry["columns"]): entry["sketch"]}
        for release, held in earlier:  # the newest first
            closest, compared = None, False
            for old in held:
                if old["root"] != population.root:
                    continue
                now = _sketch_over(verifier, population, old.get("columns"), sketches)
                if now is None:
                    continue
                n = changed_records(old["sketch"], now)
                compared = True
                if n is not None and (closest is None or n < closest):
                    closest = n
            if not compared:
                continue
            changed.setdefault(population.shown, closest)
            if closest is not None and 0 < closest < minimum:
                raise SdcError(
                    f"{closest} record change(s) of {population.shown} since release {release} (a record added or "
                    f"removed counts 1, one revised 2, in the columns its tables read), fewer than {minimum} (sdc "
                    "publish --min-changed-records): the cells that change between the two releases are exactly "
                    "those of these records, so a reader who knows that one of them changed learns its codes from "
                    "which cells changed, and its values from how much (red team R4-4). Publish when more have "
                    "changed, or publish the last release's load again; nothing was published")
    audit["changed_records"] = {shown: ("many" if n is None else n) for shown, n in changed.items()}
    return changed


def _sketch_over(verifier, population: Population, columns: list[str] | None, sketches: dict) -> list | None:
    """This release's sketch of ``population`` over an earlier sketch's columns (lineage expressions; None: the
    loaded table's every column, as an sdc before issue 48 kept it), or None where it lacks one of them."""
    key = None if columns is None else tuple(columns)
    if key not in sketches and columns is not None:
        available = _available(verifier, population)
        _check_copied(verifier, population, [available[c] for c in columns if c in available])
    if key not in sketches:
        if columns is None:
            loaded = {f"{k[1]}.{k[2]}": relation for k, relation in verifier.inputs.items() if k[1] == "raw"}
            relation = loaded.get(population.root)
            sketches[key] = record_sketch(verifier.con, str(relation)) if relation is not None else None
        else:
            available = _available(verifier, population)
            sketches[key] = record_sketch(verifier.con, population.source, [available[c] for c in columns]) \
                if all(c in available for c in columns) else None
    return sketches[key]


def _check_copied(verifier, population: Population, columns: list[str]) -> None:
    """A sketch over a column that the replica of sdc publish --target holds as NULL would count every record
    as changed: refused, never sketched (replica.copied_columns keeps every column a sketch reads)."""
    missing = [c for c in columns if verifier.reads_not_copied(population.source, c)]
    if missing:
        raise SdcError(f"sdc's replica of the warehouse holds no values of the column(s) {', '.join(missing)} of "
                       f"{population.shown}, which the differencing check reads: a fault of sdc's copy, not of the "
                       "release; nothing was published")


def _available(verifier, population: Population) -> dict[str, str]:
    """Every column of the population's microdata by its lineage expression."""
    lineage = next((found for k, found in verifier.lineage.items() if str(verifier.inputs.get(k)) == population.source),
                   {})
    return {(lineage.get(c.lower()).expression if lineage.get(c.lower()) is not None else c.lower()): c
            for c in verifier._columns(population.source)}


def _earlier_sketches(con) -> list[tuple[int, list[dict]]]:
    """(release, its population sketches) of every release in the ledger on ``con``, the newest first; a release of
    an sdc before issue 48 kept one sketch per loaded table over all its columns (columns None)."""
    from sdc.release.ledger import LEDGER_SCHEMA

    return [(release, _held_sketches(audit)) for release, audit in con.execute(
        f"select release_id, audit from {LEDGER_SCHEMA}.releases order by release_id desc").fetchall()]


def _held_sketches(audit: str | None) -> list[dict]:
    """The population sketches a release's audit (JSON) holds: {root, columns, sketch}, columns None for a sketch
    over the loaded table's every column (an sdc before issue 48 kept one per loaded table)."""
    held = json.loads(audit or "{}").get("record_sketches") or []
    if isinstance(held, dict):
        held = [{"root": root, "columns": None, "sketch": sketch} for root, sketch in held.items()]
    return held


def sketched_columns(audits: list[str | None]) -> list[str] | None:
    """The loaded columns that the record sketches in these audits of earlier releases read, which this release's
    populations are sketched over again (check_differencing); None where one is over a loaded table's every column,
    or reads a column sdc cannot name (then every column is copied). A sketch's column is a lineage expression
    (record_wise.py): a loaded column as table.column (raw.people.age), or an expression over such names quoted
    ("raw.people.age" >= 65)."""
    import sqlglot
    from sqlglot import exp

    found = []
    for audit in audits:
        for held in _held_sketches(audit):
            if held.get("columns") is None:
                return None
            for expression in held["columns"]:
                names = [str(expression)] if str(expression).count(".") >= 2 and '"' not in str(expression) else None
                if names is None:
                    try:
                        names = [c.name for c in sqlglot.parse_one(str(expression), read="duckdb").find_all(exp.Column)]
                    except (sqlglot.errors.SqlglotError, ValueError):
                        return None
                for name in names:
                    parts = name.split(".", 2)
                    if len(parts) < 3:
                        return None
                    found.append(parts[2])
    return found