"""sdc sas-anon: interval publication of a hierarchical aggregate table, as the SAS macro sas-anon."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdc.cli._common import split


def add_parser(commands) -> None:
    anon = commands.add_parser(
        "sas-anon",
        help="interval publication of a hierarchical aggregate table, compatible with the SAS macro sas-anon (seed 003)",
        description="Reads an aggregate table (one row per cell: a code column per level, 0 for the total, and a "
        "value), masks the small values on the lowest level and their siblings up the hierarchy as the SAS macro "
        "sas-anon does, and prints or writes the result with its intervals.",
    )
    anon.add_argument("--input", required=True, help="CSV with one row per cell: a code column per level (0 = total), a value")
    anon.add_argument("--levels", required=True, help="level columns from the lowest to the highest, e.g. Quartier,Kreis")
    anon.add_argument("--value", required=True, help="value column")
    anon.add_argument("--function", default="min", choices=("min", "max"), help="which sibling takes a secondary (sas-anon: funktion)")
    anon.add_argument("--min-value", type=float, default=1, help="smallest value masked on the lowest level (minWert)")
    anon.add_argument("--max-value", type=float, default=3, help="largest value masked on the lowest level (maxWert)")
    anon.add_argument("--fixed-c-intervals", action="store_true",
                      help="publish C-masked cells with the interval the constraints allow (sas-anon's C-intervals leak)")
    anon.add_argument("--out", help="write the result as CSV (default: print it as sas-anon does)")
    anon.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # reading and writing the files stays here until python/sdc/suppression/sas_anon.py offers them (that
    # package is being reworked apart from the CLI)
    from sdc.files import check_not_an_input, check_output_file, csv_field, read_csv_rows, write_text_atomically
    from sdc.suppression.sas_anon import anonymise, text_of

    if args.out:
        check_not_an_input(args.out, args.input)
        check_output_file(args.out, "sdc sas-anon")
    rows = read_csv_rows(args.input, "input file")
    result = anonymise(rows, levels=split(args.levels), value=args.value, function=args.function,
                       min_value=args.min_value, max_value=args.max_value, fixed_c_intervals=args.fixed_c_intervals,
                       source=args.input)
    for error in result.consistency_errors:
        print(f"warning: {error}", file=sys.stderr)
    if args.out:
        columns = list(rows[0]) + [c for c in result.columns if c not in rows[0]]
        lines = [",".join(csv_field(c) for c in columns)]
        lines += [",".join(csv_field("" if r[c] is None else text_of(r[c])) for c in columns) for r in result.rows]
        write_text_atomically(Path(args.out), "\n".join(lines) + "\n", command="sdc sas-anon")
        print(f"wrote {len(result.rows)} cells to {args.out}")
    else:
        print(result.text(), end="")
    return 0
