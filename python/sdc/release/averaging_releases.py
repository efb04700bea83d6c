"""Averaging CKM noise over the releases in the ledger (new user D4, red team R4-5).

A cell whose records did not change keeps its noise from release to release (the same record keys, the same
ptable), so publishing it again tells a reader nothing new. Two things give it a new, independent noise: a re-key of
a load behind it (`sdc load --rekey`, another key mode or secret: a new series of record keys) and an accepted change
of its table's parameters (`sdc publish --accept-parameter-change`: another ptable). A reader of both releases then
averages two draws of one count. The floor under the standard error (averaging.py) is held over every release in
the ledger, not per release:

* a **noise epoch** of a published table is its series of record keys (a keyed secret's fingerprint, or the run of
  loads between two re-keys) with its parameters; each other epoch in the ledger is represented by its last
  release (within an epoch an unchanged cell has one noise; going back to an earlier secret and ptable goes back
  to that epoch's noise);
* every count cell of such a release that this release publishes again, with the same codes in the same table and
  the same original count, is one more row of this release's design: the same finest cells, an independent noise
  with the smallest variance any count ptable of that release gives its count (the reader is assumed to know them);
* the reader's BLUE over the design with those rows must leave every finest cell with records and every published
  cell of this release a standard error of at least the floor, else the release is refused, naming the cell, the
  releases and the standard error.

Not counted: the draws of cells that this release does not publish again (a table withdrawn since), and of a cell
whose original count changed (another quantity). The figures go into the office's audit, with how many more such
changes the floor allows where every earlier draw repeats this release's tables (s² / floor² draws in all).
"""

from __future__ import annotations

import json
import math

import numpy as np
import scipy.sparse as sp

from sdc.conventions import AVERAGING_EXACT_CELLS
from sdc.errors import SdcError
from sdc.release.averaging import EXACT, LOWER_BOUND, _least, _rounded, blue_variances
from sdc.release.ledger import LEDGER_SCHEMA, rekeyed_tables


def earlier_epochs(con, loads: dict, parameters: dict[str, str | None], roots: dict[str, set]) -> dict[str, list[int]]:
    """Per published relation of this release (``roots``: relation -> the loaded tables behind it, as the load
    log names them; ``parameters``: relation -> its parameters digest now), the last release in the ledger on
    ``con`` of each other noise epoch: releases that published the relation under another series of record keys
    of a table behind it, or with other parameters. A series is a keyed secret's fingerprint (going back to the
    earlier secret goes back to its keys and noise), or for random and existing keys the run of loads between two
    re-keys; ``loads`` is this release's load log."""
    releases = [(r, json.loads(l or "{}")) for r, l in con.execute(
        f"select release_id, loads from {LEDGER_SCHEMA}.releases order by 1").fetchall()]
    published = {(r, relation): digest for r, relation, digest in con.execute(
        f"select release_id, relation, any_value(parameters) from {LEDGER_SCHEMA}.cells group by 1, 2").fetchall()}
    series: list[dict] = []
    counters: dict[str, int] = {}
    previous: dict = {}
    for _, load_log in [*releases, (None, loads)]:
        rekeyed = rekeyed_tables(previous, load_log)
        found = {}
        for table, load in load_log.items():
            if load.get("key_mode") == "keyed" and load.get("key_fingerprint"):
                found[table] = ("keyed", load.get("modulus"), load.get("key_fingerprint"))
            else:
                counters[table] = counters.get(table, 0) + (table in rekeyed)
                found[table] = (load.get("key_mode"), load.get("modulus"), counters[table])
        series.append(found)
        previous = load_log
    now = series[-1]
    found = {}
    for relation, tables in roots.items():
        current = (tuple(now.get(t) for t in sorted(tables)), parameters.get(relation))
        last: dict = {}
        for (release, _), keys in zip(releases, series):
            if (release, relation) in published:
                epoch = (tuple(keys.get(t) for t in sorted(tables)), published[(release, relation)])
                if epoch != current:
                    last[epoch] = release
        found[relation] = sorted(last.values())
    return found


def audit_over_releases(verifier, con, loads: dict, cells: list, floor: float, fetch=None) -> dict:
    """The averaging audit over the releases in the ledger on ``con`` (the module's text), on the designs this
    release's audit made (verifier.averaging_designs); ``cells``: this release's (ledger.release_cells);
    ``fetch(releases)`` loads the cells of those releases into ``con`` where it holds only some (a PostgreSQL
    ledger's copy). Refuses below ``floor``; returns the figures."""
    designs = getattr(verifier, "averaging_designs", [])
    roots = {table.label: {r.split(".", 1)[-1] for r in item.roots}
             for population in designs for table, item in zip(population.tables, population.items)}
    parameters = {c.relation: c.parameters for c in cells}
    epochs = earlier_epochs(con, loads, parameters, roots) if roots and con is not None else {}
    wanted = sorted({r for found in epochs.values() for r in found})
    figures = {"noise_epochs": 1 + max((len(found) for found in epochs.values()), default=0),
               "earlier_releases": wanted, "smallest_standard_error": None, "method": None, "cell": None}
    if not wanted:
        return _allowed(figures, designs, floor)
    if fetch is not None:
        fetch(wanted)
    smallest_variances = _smallest_variances(con, wanted)
    worst = None
    for population in designs:
        extra = _earlier_rows(con, population, epochs, smallest_variances)
        if not extra:
            continue
        design = population.design
        rows, variances = zip(*extra)
        matrix = sp.vstack([design.matrix, design.matrix[list(rows)]]).tocsr()
        found = blue_variances(matrix, np.concatenate([design.variances, variances]), AVERAGING_EXACT_CELLS)
        n = len(design.variances)
        current = type(found)(found.finest, found.rows[:n], found.finest_exact, found.rows_exact[:n])
        least = _least(design, current)
        if least is not None and (worst is None or least[0] < worst[0]):
            worst = (*least, population.shown, sorted({t.label for t in population.tables}), len(extra))
    if worst is not None:
        figures.update(smallest_standard_error=_rounded(worst[0]), method=EXACT if worst[1] else LOWER_BOUND,
                       cell=worst[2])
        if worst[0] < floor:
            error, exact, what, shown, tables, draws = worst
            raise SdcError(
                f"the releases in the ledger let a reader average the CKM noise: {what} is estimated from this "
                f"release and the earlier independent noises of {draws} unchanged count(s) of {shown} (releases "
                f"{', '.join(map(str, wanted))}, each the last under other record keys or parameters) with a "
                f"standard error of {error:.3g}, below the floor of {floor:g} (sdc publish --min-standard-error). Every re-key "
                "and parameter change hands readers another draw of every unchanged cell: publish under the earlier "
                "keys and parameters, or fewer tables of this population")
    return _allowed(figures, designs, floor)


def _allowed(figures: dict, designs: list, floor: float) -> dict:
    """How many more noise epochs (re-keys, parameter changes) the floor allows, where each repeats this
    release's tables: s² / floor² epochs in all, s this release's own smallest standard error."""
    own = [math.sqrt(v) for p in designs for v in np.concatenate([p.found.finest, p.found.rows]) if np.isfinite(v)]
    if not own or floor <= 0:
        figures["more_epochs_allowed"] = None
        return figures
    figures["more_epochs_allowed"] = max(0, math.floor(min(own) ** 2 / floor ** 2 + 1e-9) - figures["noise_epochs"])
    return figures


def _smallest_variances(con, releases: list[int]) -> dict[int, dict[int, float]]:
    """Per release, per original count i, the smallest noise variance any count ptable of its audit gives it."""
    found = {}
    for release, audit in con.execute(f"select release_id, audit from {LEDGER_SCHEMA}.releases where release_id in "
                                      f"({', '.join('?' * len(releases))})", releases).fetchall():
        ptables = (json.loads(audit or "{}").get("ptables") or {}).values()
        rows: dict[int, float] = {}
        for table in ptables:
            moments: dict[int, list[float]] = {}
            for i, _, p, v in table:
                m = moments.setdefault(int(i), [0.0, 0.0])
                m[0] += float(p) * float(v)
                m[1] += float(p) * float(v) ** 2
            for i, (mean, square) in moments.items():
                rows[i] = min(rows.get(i, math.inf), square - mean * mean)
        found[release] = rows
    return found


def _earlier_rows(con, population, epochs: dict[str, list[int]], variances: dict) -> list[tuple[int, float]]:
    """(row of this release's design, variance) for every earlier draw of one of its cells."""
    extra = []
    for table, item in zip(population.tables, population.items):
        releases = epochs.get(table.label) or []
        if not releases:
            continue
        own = {d.lower(): d.lower() for d in table.dims}
        back = {}  # the table's own names and codes, where it is read as another population's (populations.py)
        for dim, (name, codes) in (item.read_as or {}).items():
            own[dim] = name.lower()
            back[dim] = {b: a for a, b in codes.items()}
        for release, cell, original in con.execute(
                f"select release_id, cell, original from {LEDGER_SCHEMA}.cells where relation = ? and original is "
                f"not null and release_id in ({', '.join('?' * len(releases))})", [table.label, *releases]).fetchall():
            codes = {k.lower(): str(v) for k, v in json.loads(cell).items()}
            try:
                key = tuple((back.get(d) or {}).get(codes[own[d]], codes[own[d]]) for d in table.dims)
            except KeyError:
                continue
            row = population.design.cell_rows.get((table.label, key))
            k = table.index.get(key)
            if row is None or k is None or table.cells[k].original != int(original):
                continue
            ptable = variances.get(release) or {}
            i = min(int(original), max(ptable)) if ptable else None
            variance = min(population.design.variances[row], ptable.get(i, math.inf)) if i is not None else \
                population.design.variances[row]
            if variance > 0:
                extra.append((row, variance))
    return extra
