"""What the readers of a release learn about its audit: the public part of the release audit.

The release audit (release/audit.py) is the office's: its quality figures (deviations, stay share, Hellinger
distances, histograms), its averaging standard errors, its counts of cells with records, of false zeros and of
finest cells with records are all computed from the original values, and each can give an original back (red team
R4-1: the grand total from two Hellinger figures, every cell of a small table; new user D2: a respondent's income
from the largest relative deviation). It goes into the ledger, the ``--audit-json`` file and the office report,
never to a reader. What every reader gets (the publication's sdc_publication.release_audit, on DuckDB and
PostgreSQL, and the public report) is made here, from names and parameters only:

* the release: its number, the ledger's identity (no path), when it was published, the tables it publishes (each
  with its method, and the title and unit the dbt project gives it: the model's description and meta ``unit``)
  and those it withdrew;
* which checks it passed (a refused release is never published, so each says "passed");
* the method's public parameters: the floor under the averaging standard error, and per count ptable its largest
  noise D, its noise variance V (of its last row, the counts at or above its largest i) and js (no count
  1..js is published). These follow from the ptable's design, not from the data; the ptable's rows and the
  magnitude parameters stay with the office (SECURITY.md, "What a reader can read").
"""

from __future__ import annotations

# every key of the public audit: one list, for the writers, the report and the tests
PUBLIC_AUDIT_KEYS: tuple[str, ...] = ("release", "ledger", "published_at", "published", "withdrawn", "checks",
                                      "tables", "parameters")
# what a published relation is, in the public audit and the reports (the tables' own: audit.py's methods)
PUBLISHED_KINDS: dict[str, str] = {"ckm_mean": "ckm means", "seed": "reference data (a seed)"}
# the checks a release passes before anything is published (the reader learns that each passed, nothing more)
PUBLIC_CHECKS: tuple[str, ...] = ("verification", "zeros", "two_methods", "linked_suppression", "averaging",
                                  "ledger")


def public_release_audit(audit: dict) -> dict:
    """The part of the release audit ``audit`` (audit_checked_release's, with release, ledger_id and published)
    that readers read; see the module's text."""
    methods = {**{label: PUBLISHED_KINDS.get(kind, kind) for label, kind in (audit.get("kinds") or {}).items()},
               **{t["table"]: t["method"] for t in audit.get("tables") or []}}
    public = {
        "release": audit.get("release"),
        "ledger": audit.get("ledger_id"),
        "published_at": audit.get("published_at"),
        "published": sorted(audit.get("published") or []),
        "withdrawn": sorted(audit.get("withdrawn") or []),
        "checks": {check: "passed" for check in PUBLIC_CHECKS},
        "tables": [{"table": label, "method": methods.get(label, "a relation of one's own"),
                    **{k: v for k, v in (audit.get("described") or {}).get(label, {}).items() if v}}
                   for label in sorted(audit.get("published") or [])],
        "parameters": {
            "min_standard_error": (audit.get("averaging") or {}).get("min_standard_error"),
            "ptables": {name: ptable_parameters(rows) for name, rows in sorted((audit.get("ptables") or {}).items())},
        },
    }
    assert tuple(public) == PUBLIC_AUDIT_KEYS
    return public


def ptable_parameters(rows: list[list]) -> dict:
    """D, V and js of a count ptable given as rows [i, j, p, v]: the largest |v|; the noise variance of the last
    row (i the largest: the row of every larger count); the largest js with no published count in 1..js."""
    largest = max(int(i) for i, _, _, _ in rows)
    last = [(float(p), float(v)) for i, _, p, v in rows if int(i) == largest]
    mean = sum(p * v for p, v in last)
    positive = [int(j) for i, j, p, _ in rows if int(j) > 0 and float(p) > 0]
    return {"D": max(abs(int(v)) for _, _, _, v in rows),
            "V": round(sum(p * v * v for p, v in last) - mean * mean, 6),
            "js": (min(positive) - 1) if positive else 0}
