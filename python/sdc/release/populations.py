"""Which records each verified table counts: the release audit groups tables by their records, not by the names of
the relations and columns they read (red team R4-13, R4-14).

A staging view that renames a dimension (``state as land``) or filters nothing away (``where income is not null``
over a column without NULLs) holds the records of the loaded table under another relation name; matched by names,
its tables escaped every check that compares tables of one population. sdc recomputes every table from its
microdata, so it can compare the records themselves:

* **a record set's fingerprint**: its number of records, the sum of their record keys and the sum of a 64-bit hash
  of each key (two different sets of records agree in all three with negligible probability: the keys are
  uniform and secret). Two populations (the microdata a step reads, with its fact) with one fingerprint over the
  same loaded tables hold the same records: they are **one population**, read as the first of them (a loaded
  table before a view of one's own);
* **a dimension under another name**: a dimension column of such a view is read as the column of that population
  that cuts its records into the same sets (each code's records have the fingerprint of one code there): a
  renamed column, or one whose codes were renamed (``case sex when 'm' then 'male' ...``). Its tables are then
  read with that population's names and codes, and every check of the release audit (published zeros, two
  methods, linked suppression, averaging) compares them with the other tables of the population. A dimension
  that is no such copy (a coarser grouping, a hierarchy of its own) leaves its table a population of its own;
* **one set inside another**: a population whose every record key is a record key of another over the same loaded
  table (a view that filters records away) lies inside it: a cell of it that holds records tells that the cell of
  the same codes in the larger one holds records too (audit.py's published zeros). Record keys are not unique
  (a modulus of 10^8), so this test can take a set for inside another only where every record outside shares its
  key with one inside: it then errs on the side of refusing.

A table read as another population's keeps its own microdata for its measures (a derived or constant value column
of the view is the view's, never the loaded table's column of that name). Its variable is named by the loaded
columns it reads (record_wise.py), not by its column's name. Not compared: populations over different loaded
tables.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

from sdc.conventions import RECORD_KEY_COLUMN
from sdc.quoting import quote_identifier as q
from sdc.quoting import quote_literal
from sdc.release.verified import Verified

# the verified kinds whose cells the release audit compares across tables
COMPARED_KINDS: tuple[str, ...] = ("ckm_count", "ckm_sum", "suppression")


@dataclass
class Population:
    """The records one or more tables read: their microdata (SQL), fact, loaded tables and record key column."""

    source: str
    fact: str | None
    roots: frozenset
    key_column: str | None
    fingerprint: tuple | None = None
    columns: dict = field(default_factory=dict)  # lower name -> name, of the microdata relation


@dataclass
class Populations:
    """The release's tables read by records: ``items`` (each verified table, a table of a population of the same
    records as another read as that one); ``lies_inside`` tells whether one population's records lie inside
    another's."""

    items: list[Verified]
    verifier: object = None
    populations: dict = field(default_factory=dict)  # (source, fact) -> Population
    same: dict = field(default_factory=dict)  # (source, fact) -> the populations of the same records
    merged: list[dict] = field(default_factory=list)  # for the audit's figures
    _inside: dict = field(default_factory=dict)

    def lies_inside(self, inner: tuple, outer: tuple) -> bool:
        """True where every record of the population ``inner`` is one of ``outer`` (the same records included),
        both over the same loaded tables (the module's text: by record keys, erring on the side of inside)."""
        if inner == outer or outer in self.same.get(inner, ()):
            return True
        a, b = self.populations.get(inner), self.populations.get(outer)
        if a is None or b is None or not (a.roots & b.roots) or a.fingerprint is None or b.fingerprint is None \
                or a.fingerprint[0] > b.fingerprint[0]:
            return False
        if (inner, outer) not in self._inside:
            outside = self.verifier.con.execute(
                f"select count(*) from (select {q(a.key_column)} as k from {a.source}{_where(a.fact)}) as a "
                f"where not exists (select 1 from (select {q(b.key_column)} as k from {b.source}{_where(b.fact)}) "
                "as b where b.k = a.k)").fetchone()[0]
            self._inside[(inner, outer)] = outside == 0
        return self._inside[(inner, outer)]


def population_of(item: Verified) -> tuple:
    """The (source, fact) of a verified table: the microdata it read and the fact it counts, or the population of
    the same records it is read as."""
    if item.population is not None:
        return item.population
    call = item.call or {}
    return (item.source, call.get("fact") if item.kind == "ckm_count" else None)


def read_by_records(verifier, verified: list[Verified]) -> Populations:
    """The verified tables, each population with the records of another read as that one (the module's text)."""
    items = sorted({v.rel.key: v for v in verified}.values(), key=lambda v: v.rel.key)
    compared = [v for v in items if v.kind in COMPARED_KINDS and v.audit is not None]
    populations: dict[tuple, Population] = {}
    for item in compared:
        key = population_of(item)
        if key not in populations:
            populations[key] = _population(verifier, item, key)
    classes: dict[tuple, list[tuple]] = {}
    for key, population in sorted(populations.items(), key=lambda p: _preference(verifier, p[0])):
        if population.fingerprint is not None:
            classes.setdefault((population.roots, population.fingerprint), []).append(key)
    replaced: dict[str, Verified] = {}
    merged = []
    for keys in classes.values():
        reference = populations[keys[0]]
        for key in keys[1:]:
            if key[1] != keys[0][1]:
                continue  # a fact under another name: not read as the other
            for item in (v for v in compared if population_of(v) == key):
                aliased = _aliased(verifier, item, populations[key], reference)
                if aliased is not None:
                    replaced[item.rel.label] = aliased
                    merged.append({"table": item.rel.label, "read_as": reference.source})
    same = {key: set(keys) for keys in classes.values() for key in keys}
    return Populations([replaced.get(v.rel.label, v) for v in items], verifier, populations, same, merged)


def _preference(verifier, key: tuple) -> tuple:
    """The order in which populations of the same records are tried as the one the others are read as: a loaded
    table first, then by name."""
    loaded = {str(r) for k, r in verifier.inputs.items() if k[1].lower() == "raw"}
    return (key[0] not in loaded, key[0], str(key[1]))


def _population(verifier, item: Verified, key: tuple) -> Population:
    source, fact = key
    con = verifier.con
    columns = {c.lower(): c for c in verifier._columns(source)}
    settings = ((item.call or {}).get("cells") or item.call or {}).get("settings") or {}
    key_column = columns.get(str(settings.get("sdc_record_key_column") or RECORD_KEY_COLUMN).lower())
    population = Population(source, fact, item.roots, key_column, columns=columns)
    if key_column is not None and (fact is None or fact.lower() in columns):
        rk = q(key_column)
        n, s1, s2 = con.execute(f"select count(*), sum(cast({rk} as hugeint)), sum(cast(hash({rk}) as hugeint)) "
                                f"from {source}{_where(fact)}").fetchone()
        population.fingerprint = (int(n), int(s1 or 0), int(s2 or 0))
    return population


def _where(fact: str | None) -> str:
    return "" if fact is None else f" where {q(fact)} <> 0"


def _partition(verifier, population: Population, column: str) -> dict:
    """Per code of ``column`` (as text) the fingerprint of its records."""
    rk = q(population.key_column)
    return {code: (int(n), int(s1), int(s2)) for code, n, s1, s2 in verifier.con.execute(
        f"select cast({q(column)} as varchar), count(*), sum(cast({rk} as hugeint)), sum(cast(hash({rk}) as hugeint)) "
        f"from {population.source}{_where(population.fact)} group by 1").fetchall()}


def _aliased(verifier, item: Verified, population: Population, reference: Population) -> Verified | None:
    """``item`` read as a table of ``reference`` (the same records): each dimension as the column of ``reference``
    that cuts the records into the same sets, its codes as that column's; None where a dimension has no such
    column or a hierarchy of its own."""
    call = item.call or {}
    cells_call = call.get("cells") if item.kind == "suppression" else call
    dims = [str(d) for d in cells_call["dims"]]
    partitions = getattr(verifier, "_record_partitions", None)
    if partitions is None:
        partitions = verifier._record_partitions = {}
    mapping: dict[str, tuple[str, dict]] = {}
    for dim in dims:
        mine = partitions.setdefault((population.source, population.fact, dim.lower()),
                                     _partition(verifier, population, dim))
        by_fingerprint = {f: code for code, f in mine.items()}
        if len(by_fingerprint) != len(mine):
            return None
        found = None
        candidates = sorted(reference.columns.values(), key=lambda c: (c.lower() != dim.lower(), c))
        for column in candidates:
            # a column the replica of sdc publish --target holds as NULL would cut the records as the real one
            # does not (into one set: a match for any dimension of one code)
            if column == reference.key_column or verifier.reads_not_copied(reference.source, column):
                continue
            theirs = partitions.setdefault((reference.source, reference.fact, column.lower()),
                                           _partition(verifier, reference, column))
            if len(theirs) == len(mine) and all(f in by_fingerprint for f in theirs.values()):
                found = (column, {by_fingerprint[f]: code for code, f in theirs.items()})
                break
        if found is None:
            return None
        mapping[dim] = found
    renamed = any(column != dim or any(a != b for a, b in codes.items()) for dim, (column, codes) in mapping.items())
    if renamed and cells_call.get("hierarchy"):
        return None  # the hierarchy's rows name the view's dimensions and codes: not read as the other's
    new_call = copy.deepcopy(call)
    new_dims = [mapping[d][0] for d in dims]
    if item.kind == "suppression":
        new_call["cells"]["dims"] = new_dims
    else:
        new_call["dims"] = new_dims
    read_as = {column.lower(): (dim, {b: a for a, b in codes.items()}) for dim, (column, codes) in mapping.items()}
    return dataclasses.replace(item, source=_recoded(verifier, item.source, mapping), call=new_call,
                               audit=_recoded(verifier, item.audit, mapping),
                               content=_recoded(verifier, item.content, mapping), read_as=read_as,
                               population=(reference.source, population_of(item)[1]))


def _recoded(verifier, relation: str, mapping: dict) -> str:
    """A temp view of ``relation`` with each mapped dimension under its new name and codes (a column of its own
    under such a name, no dimension of the table, left out)."""
    columns = verifier._columns(relation)
    by_lower = {d.lower(): (d, m) for d, m in mapping.items()}
    taken = {new.lower() for new, _ in mapping.values()}
    select = []
    for column in columns:
        if column.lower() not in by_lower:
            if column.lower() not in taken:
                select.append(q(column))
            continue
        _, (new, codes) = by_lower[column.lower()]
        cases = " ".join(f"when {quote_literal(a)} then {quote_literal(b)}" for a, b in codes.items() if a != b)
        text = f"cast({q(column)} as varchar)"
        select.append(f"{f'case {text} {cases} else {text} end' if cases else q(column)} as {q(new)}")
    view = verifier._temp("read_as")
    verifier.con.execute(f"create temp view {view} as select {', '.join(select)} from {relation}")
    return view
