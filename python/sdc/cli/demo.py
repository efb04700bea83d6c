"""sdc demo generate | report: the demo warehouse's synthetic microdata and its report."""

from __future__ import annotations

import argparse
import os

from sdc.errors import SdcError


def add_parser(commands) -> None:
    demo = commands.add_parser("demo", help="the demo warehouse: synthetic microdata and its report",
                               description="The demo warehouse: synthetic microdata (generate) and its report.")
    demo_commands = demo.add_subparsers(dest="demo_command", required=True)
    generate = demo_commands.add_parser(
        "generate", help="write synthetic university-statistics microdata",
        description="Writes synthetic student records (as the Bavarian university statistics, seed 002) and, "
        "with --enterprises, synthetic enterprises for the suppression demo; the same seed gives the same file.")
    generate.add_argument("--out", required=True, help=".parquet or .csv file")
    generate.add_argument("--rows", type=int, default=500_000, help="number of student records (default 500000)")
    generate.add_argument("--seed", type=int, default=2018, help="random seed (default 2018)")
    generate.add_argument("--enterprises", help="also write synthetic enterprises (turnover by WZ x region, holdings) "
                          "for the suppression demo to this .parquet or .csv file")
    generate.set_defaults(run=run_generate)
    report = demo_commands.add_parser(
        "report", help="print protected Table 2b and the quality figures",
        description="Prints the demo warehouse's protected Table 2b (seed 002) and the quality figures of its CKM "
        "tables, after make demo (or dbt build of the demo project).")
    report.add_argument("--db", required=True, help="warehouse DuckDB file (after dbt build)")
    report.set_defaults(run=run_report)


def run_generate(args: argparse.Namespace) -> int:
    from sdc.demo import write_enterprises, write_students
    from sdc.files import check_output_file

    if args.enterprises and os.path.abspath(args.enterprises) == os.path.abspath(args.out):
        raise SdcError(f"--enterprises {args.enterprises} is --out too: give two files")
    for path in (args.out, args.enterprises):
        if path:
            check_output_file(path, "sdc demo generate")
    rows = write_students(args.out, args.rows, args.seed)
    print(f"wrote {rows} synthetic student records to {args.out}")
    if args.enterprises:
        rows = write_enterprises(args.enterprises)
        print(f"wrote {rows} synthetic enterprises to {args.enterprises}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from sdc.demo.report import print_report

    print_report(args.db)
    return 0
