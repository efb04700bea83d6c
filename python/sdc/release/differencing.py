"""Differencing two releases that differ by a handful of records (red team R4-4).

With stable record keys a cell whose records did not change keeps its published value, so the cells that change
between two releases are exactly those of the records added, removed or revised: when one person joined, the
changed cells of every table intersect in that person's combination of codes, and the changes of a magnitude
table estimate their values. The measure is the number of records that changed since the last release, and the
protection a minimum of them: where fewer than ``minimum`` records of a loaded table changed (but some did), a
release that publishes cells of it is refused, so that the changed cells are those of at least ``minimum`` records
(a reader who knows one of them cannot tell its cells from the others'). What remains is said in SECURITY.md: with
few but enough records, their cells can still be told apart where they lie in different parts of the tables.

Counting changed records needs the last release's records, which the ledger does not keep. It keeps a sketch of
them instead, an invertible Bloom lookup table: every record of a loaded table is an element x (60 bits of the md5
of its row, every column by name, so a revised value or a new key makes another element) put into 3 of
3 x SKETCH_CELLS cells (one per part, by 20-bit slices of x), each cell holding the number of its elements, their
sum and the sum of a checksum of each. The difference of two sketches holds exactly the elements of the two
releases' symmetric difference; peeling its cells that hold one element decodes it whenever it is small (here:
up to about 80 elements, a revision counting twice), and a difference it cannot decode has more elements than
that: many records changed. A few hundred numbers per table and release, in the office's audit.
"""

from __future__ import annotations

from sdc.quoting import quote_identifier as q

SKETCH_CELLS = 64  # cells per part; 3 parts
PRIME = (1 << 61) - 1  # the checksum's modulus
CHECK = 0x5DEECE66D  # the checksum's multiplier: f(x) = (x mod PRIME) * CHECK mod PRIME
MIN_CHANGED_RECORDS = 10  # sdc publish --min-changed-records


def check_minimum(minimum) -> None:
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
        from sdc.errors import SdcError

        raise SdcError(f"the minimum of changed records (--min-changed-records) must be a whole number of at least 0, "
                       f"got {minimum!r}")


def record_sketch(con, relation: str) -> list[list[int]]:
    """The sketch of the rows of ``relation`` (SQL): [cell, count, sum of x, sum of f(x)] for each cell in use."""
    columns = sorted(c for (c,) in con.execute(f"select column_name from (describe select * from {relation})").fetchall())
    row = "struct_pack(" + ", ".join(f"{q(c)} := r.{q(c)}" for c in columns) + ")"
    x = f"cast(cast('0x' || substr(md5(cast({row} as varchar)), 1, 15) as ubigint) as hugeint)"
    parts = " union all ".join(
        f"select {part} * {SKETCH_CELLS} + cast((x >> {20 * part}) % {SKETCH_CELLS} as integer) as cell, x from elements"
        for part in range(3))
    return [[int(v) for v in found] for found in con.execute(
        f"with elements as (select {x} as x from {relation} as r), placed as ({parts}) "
        f"select cell, count(*), sum(x), sum(((x % {PRIME}) * {CHECK}) % {PRIME}) from placed group by 1 order by 1"
    ).fetchall()]


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
            if count not in (1, -1):
                continue
            x = total * count
            places = [part * SKETCH_CELLS + (x >> (20 * part)) % SKETCH_CELLS for part in range(3)]
            if not 0 <= x < 1 << 60 or (x % PRIME) * CHECK % PRIME != check * count or cell not in places:
                continue  # more than one element, which the others' removal may yet leave alone
            for place in places:
                other = cells.setdefault(place, [0, 0, 0])
                other[0] -= count
                other[1] -= count * x
                other[2] -= count * ((x % PRIME) * CHECK % PRIME)
            decoded += 1
            progress = True
    return decoded if all(c == [0, 0, 0] for c in cells.values()) else None


def check_differencing(verifier, con, last: int | None, audit: dict, minimum: int = MIN_CHANGED_RECORDS) -> dict:
    """The sketches of this release's loaded tables into ``audit`` (record_sketches), and per table the records
    changed since the last release in the ledger on ``con`` (``last``; None: the first); refuses where some but
    fewer than ``minimum`` changed (the module's text). Returns {table: changed elements, or None for many}."""
    from sdc.errors import SdcError
    from sdc.release.ledger import LEDGER_SCHEMA

    import json

    loaded = {f"{key[1]}.{key[2]}": relation for key, relation in verifier.inputs.items() if key[1] == "raw"}
    roots = sorted({r for item in verifier.verified.values() for r in item.roots if r in loaded})
    sketches = {root: record_sketch(verifier.con, str(loaded[root])) for root in roots}
    audit["record_sketches"] = sketches
    before = {}
    if con is not None and last is not None:
        row = con.execute(f"select audit from {LEDGER_SCHEMA}.releases where release_id = ?", [last]).fetchone()
        before = json.loads((row or [None])[0] or "{}").get("record_sketches") or {}
    changed = {root: changed_records(before[root], sketches[root]) for root in roots if root in before}
    audit["changed_records"] = {root: ("many" if n is None else n) for root, n in changed.items()}
    few = {root: n for root, n in changed.items() if n is not None and 0 < n < minimum}
    if few:
        root, n = sorted(few.items())[0]
        raise SdcError(
            f"{n} record change(s) of {root} since release {last} (a record added or removed counts 1, one revised "
            f"2), fewer than {minimum} (sdc publish --min-changed-records): the cells that change between the two "
            "releases are exactly those of these records, so a reader who knows that one of them changed learns its "
            "codes from which cells changed, and its values from how much (red team R4-4). Publish when more have "
            "changed, or publish the last release's load again; nothing was published")
    return changed
