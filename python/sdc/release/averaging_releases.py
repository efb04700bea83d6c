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
from sdc.release.ledger import LEDGER_SCHEMA, key_series, same_noise


def earlier_epochs(con, loads: dict, cells: list, designs: list) -> dict[str, dict[tuple, tuple[int, set]]]:
    """Per count table of this release's designs (averaging.py): {epoch: (its last release, the relations there)}
    of the other noise epochs in the ledger on ``con`` that published a count table of the same loaded tables and
    dimensions, under any relation name (a renamed table publishes the same cells). An epoch is the series of
    record keys of those tables (ledger.key_series) with the noise part of its parameters digest (ptables and
    magnitude parameters: ledger.same_noise); ``loads`` and ``cells`` are
    this release's (its load log, ledger.release_cells)."""
    series, now = key_series(con, loads)
    parameters = {c.relation: c.parameters for c in cells}
    roots_of = _relation_roots(con)
    earlier: dict[tuple, tuple] = {}  # (release, relation) -> (parameters, dims)
    for release, relation, digest, cell in con.execute(
            f"select release_id, relation, any_value(parameters), any_value(cell) from {LEDGER_SCHEMA}.cells "
            "where original is not null group by 1, 2").fetchall():
        earlier[(release, relation)] = (digest, frozenset(k.lower() for k in json.loads(cell)))
    found: dict[str, dict[tuple, tuple[int, set]]] = {}
    for population in designs:
        for table, item in zip(population.tables, population.items):
            tables = sorted(r.split(".", 1)[-1] for r in item.roots)
            dims = frozenset(_own_names(table, item).values())
            current = (tuple(now.get(t) for t in tables), parameters.get(table.label))
            by_epoch: dict[tuple, dict[int, set]] = {}
            for (release, relation), (digest, cell_dims) in earlier.items():
                behind = roots_of.get((release, relation), tables if relation == table.label else None)
                if behind is None or sorted(behind) != tables or cell_dims != dims:
                    continue
                keys = tuple(series.get(release, {}).get(t) for t in tables)
                noise = "now" if same_noise(digest, current[1]) else (digest or "").split(":")[-1]
                if (keys, noise) != (current[0], "now"):
                    by_epoch.setdefault((keys, noise), {}).setdefault(release, set()).add(relation)
            found[table.label] = {epoch: (max(releases), releases[max(releases)])
                                  for epoch, releases in by_epoch.items()}
    return found


def _relation_roots(con) -> dict[tuple, list[str]]:
    """(release, relation) -> the loaded tables behind it (load-log names), from each release's audit (an sdc
    before issue 48 did not keep them: its relations are matched by name)."""
    found = {}
    for release, audit in con.execute(f"select release_id, audit from {LEDGER_SCHEMA}.releases").fetchall():
        for table in json.loads(audit or "{}").get("tables") or []:
            if table.get("roots") is not None:
                found[(release, table["table"])] = [r.split(".", 1)[-1] for r in table["roots"]]
    return found


def _own_names(table, item) -> dict[str, str]:
    """The table's dimensions (as the design names them) -> its own names (a table read as another population's)."""
    own = {d.lower(): d.lower() for d in table.dims}
    for dim, (name, _) in (item.read_as or {}).items():
        own[dim] = name.lower()
    return own


def audit_over_releases(verifier, con, loads: dict, cells: list, floor: float, fetch=None) -> dict:
    """The averaging audit over the releases in the ledger on ``con`` (the module's text), on the designs this
    release's audit made (verifier.averaging_designs); ``cells``: this release's (ledger.release_cells);
    ``fetch(releases)`` loads the cells of those releases into ``con`` where it holds only some (a PostgreSQL
    ledger's copy). Refuses below ``floor``; returns the figures."""
    designs = getattr(verifier, "averaging_designs", [])
    if fetch is not None and con is not None:  # the cells of every release: a table may have been renamed
        fetch([r for (r,) in con.execute(f"select release_id from {LEDGER_SCHEMA}.releases").fetchall()])
    epochs = earlier_epochs(con, loads, cells, designs) if designs and con is not None else {}
    wanted = sorted({last for found in epochs.values() for last, _ in found.values()})
    figures = {"noise_epochs": 1 + max((len(found) for found in epochs.values()), default=0),
               "earlier_releases": wanted, "smallest_standard_error": None, "method": None, "cell": None}
    if not wanted:
        return _allowed(figures, designs, floor)
    smallest_variances = _smallest_variances(con, wanted)
    worst = None
    for population in designs:
        extra = _earlier_rows(con, population, epochs, smallest_variances)
        if not extra:
            continue
        design = population.design
        rows, variances = zip(*extra)
        matrix = sp.vstack([design.matrix, design.matrix[list(rows)]]).tocsr()
        found = blue_variances(matrix, np.concatenate([design.variances, variances]), AVERAGING_EXACT_CELLS,
                               design.dimension_numbers())
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
    own = [float(values[np.isfinite(values)].min()) for p in designs
           for values in (p.found.finest, p.found.rows) if np.isfinite(values).any()]
    if not own or floor <= 0:
        figures["more_epochs_allowed"] = None
        return figures
    smallest = math.sqrt(min(own))
    figures["more_epochs_allowed"] = max(0, math.floor(smallest ** 2 / floor ** 2 + 1e-9) - figures["noise_epochs"])
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


def _earlier_rows(con, population, epochs: dict, variances: dict) -> list[tuple[int, float]]:
    """(row of this release's design, variance) for every earlier draw of one of its cells: one per epoch and
    record set (within an epoch, cells of the same records carry one noise, in whichever table)."""
    drawn: dict[tuple, float] = {}
    for table, item in zip(population.tables, population.items):
        own = _own_names(table, item)
        back = {dim: {b: a for a, b in codes.items()} for dim, (_, codes) in (item.read_as or {}).items()}
        for epoch, (release, relations) in (epochs.get(table.label) or {}).items():
            ptable = variances.get(release) or {}
            for cell, original in con.execute(
                    f"select cell, original from {LEDGER_SCHEMA}.cells where release_id = ? and original is not null "
                    f"and relation in ({', '.join('?' * len(relations))})", [release, *sorted(relations)]).fetchall():
                codes = {k.lower(): str(v) for k, v in json.loads(cell).items()}
                try:
                    key = tuple((back.get(d) or {}).get(codes[own[d]], codes[own[d]]) for d in table.dims)
                except KeyError:
                    continue
                row = population.design.cell_rows.get((table.label, key))
                k = table.index.get(key)
                if row is None or k is None or table.cells[k].original != int(original):
                    continue
                i = min(int(original), max(ptable)) if ptable else None
                variance = min(population.design.variances[row], ptable.get(i, math.inf)) if i is not None else \
                    population.design.variances[row]
                if variance > 0:
                    drawn[(epoch, row)] = min(variance, drawn.get((epoch, row), math.inf))
    return [(row, variance) for (_, row), variance in drawn.items()]
