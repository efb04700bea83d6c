"""sdc audit: re-check a suppression pattern with the LP audit."""

from __future__ import annotations

import argparse


def add_parser(commands) -> None:
    audit = commands.add_parser(
        "audit", help="re-check a suppression pattern with the LP audit (exit 1 if it fails)",
        description="Reads a cell table in the audit layout of sdc suppress --audit (dimensions, freq, value, "
        "status, protection levels) and computes by linear programming the interval an intruder can derive for "
        "every suppressed cell from the published ones; exit 1 if a sensitive cell's interval is too narrow. A "
        "table with a hierarchy needs the same --hierarchy as sdc suppress had.",
    )
    audit.add_argument("--cells", required=True, help="cells CSV (as written by sdc suppress --audit)")
    audit.add_argument("--hierarchy", help="hierarchy CSV")
    audit.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sdc.suppression.pipeline import audit_cells_file

    passed, lines = audit_cells_file(args.cells, args.hierarchy)
    for line in lines:
        print(line)
    return 0 if passed else 1
