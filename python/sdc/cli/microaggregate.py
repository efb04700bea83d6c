"""sdc microaggregate: a protected copy of numeric columns of a DuckDB table or a CSV/Parquet file."""

from __future__ import annotations

import argparse
import sys

from sdc.errors import SdcError


def add_parser(commands) -> None:
    micro = commands.add_parser(
        "microaggregate",
        help="microaggregate numeric columns of a DuckDB table or a CSV/Parquet file into a protected copy",
        description="Sorts the records by each --column, forms groups of at least --k records (optimal, Hoehne's "
        "or fixed groups) and replaces the values by their group's mean (or variance-preserving values); writes a "
        "protected copy (--out-table, or --out for a file) and prints the information loss. The input is never "
        "changed.",
    )
    micro.add_argument("--db", help="DuckDB database file (with --table)")
    micro.add_argument("--table", help="table to protect, name or schema.name")
    micro.add_argument("--out-table", help="protected copy (default: <table>_microaggregated)")
    micro.add_argument("--input", help="CSV or Parquet file (with --out)")
    micro.add_argument("--out", help="protected copy of --input (.csv or .parquet)")
    micro.add_argument("--column", action="append", required=True, help="numeric column (repeat for more)")
    micro.add_argument("--k", type=int, required=True, help="minimum group size (at least 2)")
    micro.add_argument("--method", default="optimal", choices=("optimal", "hoehne", "fixed"),
                       help="optimal: least within-group sum of squares (default); hoehne: seed 004; fixed: groups of k")
    micro.add_argument("--replacement", choices=("mean", "hoehne"),
                       help="group mean (default) or variance-preserving values (always for --method hoehne)")
    micro.add_argument("--id", dest="id_column", help="record id column that breaks ties (default: row order)")
    micro.add_argument("--record-key", help="a record-key column of the input: not copied, as rk and rk_* are not")
    micro.add_argument("--shuffle-rows", action="store_true",
                       help="write the rows in random order (whole rows; a column is never shuffled on its own)")
    micro.add_argument("--report", help="also write the figures as JSON to this file")
    micro.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sdc.microaggregation.tables import microaggregate_file, microaggregate_table

    if bool(args.db) == bool(args.input) or (args.db and not args.table) or (args.input and not args.out):
        raise SdcError("give either --db FILE --table T [--out-table T2] or --input FILE --out FILE")
    options = dict(id_column=args.id_column, replacement=args.replacement, shuffle_rows=args.shuffle_rows,
                   record_key=args.record_key, report=args.report)
    if args.db:
        reports = microaggregate_table(args.db, args.table, args.column, args.k, args.method,
                                       out_table=args.out_table, **options)
        target = args.out_table or f"{args.table}_microaggregated"
    else:
        reports = microaggregate_file(args.input, args.out, args.column, args.k, args.method, **options)
        target = args.out
    for r in reports:
        _print_column_report(r)
    print(f"wrote {target}")
    return 0


def _print_column_report(r: dict) -> None:
    print(f"{r['column']}: {r['method']} k={r['k']}" + (f" (m={r['group_size']})" if r["group_size"] else "")
          + f", {r['records']} records ({r['nulls']} NULL), {r['groups']} groups of {r['min_group_size']}.."
          f"{r['max_group_size']}, effective k {r['k_effective']}")
    print(f"  IL {r['il_percent']:.4f} %, IL1s (mean) {r['il1s_mean']:.5f}, r(x, x') {r['correlation']:.6f}, "
          f"mean {r['mean_original']:.6g} -> {r['mean_protected']:.6g}, "
          f"variance {r['variance_original']:.6g} -> {r['variance_protected']:.6g}, "
          f"interval disclosure {100 * r['interval_disclosure_share']:.2f} %")
    for warning in r["warnings"]:
        print(f"  warning: {warning}", file=sys.stderr)
