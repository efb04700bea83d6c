"""What verification leaves: a relation whose content sdc has checked (Verified), the tolerance of the
comparison, and the error that refuses a release. Apart from verify.py so that the verifier of a step
(verify_suppression.py) need not import the Verifier that calls it (no import circle)."""

from __future__ import annotations

from dataclasses import dataclass

from sdc.errors import SdcError
from sdc.release.gate import Rel

# magnitudes agree to this relative difference (counts exactly)
RELATIVE_TOLERANCE: float = 1e-9


def variable_name(item: "Verified", column: str) -> str:
    """A measure column of a table's microdata named by the loaded columns it reads (record_wise.py): the same
    variable under another column name, or scaled, has one name; a constant is "a constant"."""
    lineage = (item.lineage or {}).get(str(column).lower())
    if lineage is None:
        return str(column).lower()
    if not lineage.roots:
        return "a constant"
    return " + ".join(sorted(f"{table}.{name}" for table, name in lineage.roots))


@dataclass
class Verified:
    """A relation whose content sdc has checked: ``content`` is SQL that gives it (a relation of the warehouse
    equal to sdc's recomputation, or the SQL sdc runs for it); for a CKM table ``audit`` names the temp table of
    sdc's recomputation with its audit columns (originals, key sums), ``source`` the microdata it read and
    ``call`` the recomputed call."""

    rel: Rel
    kind: str  # ckm_count, ckm_sum, ckm_mean, suppression, own, seed
    content: str
    audit: str | None = None
    source: str | None = None
    call: dict | None = None
    step_of: Rel | None = None  # the audit relation whose call was recomputed
    roots: frozenset = frozenset()  # the loaded tables (raw schema) behind the microdata it read
    # a table read as one of another population of the same records (populations.py): per dimension (lower case)
    # of that population, the table's own dimension and its codes by that population's codes, for the messages
    read_as: dict | None = None
    # the population (microdata, fact) such a table is read as; its ``source`` stays its own microdata, with the
    # dimensions under that population's names and codes, so that its measures are its own
    population: tuple | None = None
    lineage: dict | None = None  # per column (lower case) of its microdata, what it reads (record_wise.Lineage)


def refuse(path: list[str], why: str) -> SdcError:
    route = " <- ".join(path)
    return SdcError(f"{path[-1]} {why}; refusing to publish {path[0]}" + (f" (path: {route})" if len(path) > 1 else ""))
