"""sdc release list | diff | a-priori: the ledger of releases that sdc publish keeps (a DuckDB file, or on
PostgreSQL a schema of the warehouse)."""

from __future__ import annotations

import argparse

from sdc.conventions import LEDGER_PG_SCHEMA
from sdc.errors import SdcError

from sdc.cli._common import postgres_target, profile

COMMANDS = (("list", "the releases in the ledger"), ("diff", "the cells release A and B differ in"),
            ("a-priori", "a suppression table's cells in a release, as a-priori cells for the next pattern"))
A_PRIORI_USE = (" The file (the table's dimensions, status suppressed or published, value) goes to sdc suppress "
                "--a-priori, or as a dbt seed to suppression_pattern(a_priori=ref(...)): what the release suppressed "
                "stays suppressed and what it published with the same value is never a secondary suppression.")


def add_parser(commands) -> None:
    rel = commands.add_parser(
        "release", help="the ledger of releases that sdc publish keeps: list them, or the cells two of them differ in",
        description="sdc publish records each release in a ledger (a DuckDB file beside the warehouse; on "
        f"PostgreSQL, schema {LEDGER_PG_SCHEMA} of the warehouse, read with --target): its time, "
        "loads, audit and every published cell with a digest of its records and of its table's parameters. "
        "list: the releases; diff A B: every cell that changed, appeared or disappeared from release A to B, with "
        "its reason (microdata change, parameter change, re-key).",
    )
    rel_commands = rel.add_subparsers(dest="release_command", required=True)
    for name, text in COMMANDS:
        one = rel_commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + "."
                                      + (A_PRIORI_USE if name == "a-priori" else ""))
        if name == "diff":
            one.add_argument("a", type=int, help="the earlier release's number")
            one.add_argument("b", type=int, help="the later release's number")
        if name == "a-priori":
            one.add_argument("relation", help="the published suppression table (its name in the publication)")
            one.add_argument("--release", type=int, help="the release to read (default the last one)")
            one.add_argument("--out", required=True, help="the CSV file to write")
        _add_ledger_options(one)
        one.set_defaults(run=run)


def _add_ledger_options(one) -> None:
    where = one.add_mutually_exclusive_group(required=True)
    where.add_argument("--ledger", help="the ledger file")
    where.add_argument("--db", help="or the warehouse DuckDB file, whose ledger lies beside it (sdc_ledger.duckdb)")
    where.add_argument("--target", help="or the PostgreSQL or Spark warehouse of this dbt target, whose ledger is its "
                       f"schema (on Spark: database) {LEDGER_PG_SCHEMA}")
    one.add_argument("--profile", help="with --target: the dbt profile (default: profile: in dbt_project.yml)")
    one.add_argument("--profiles-dir", help="with --target: folder of profiles.yml (default as dbt)")
    one.add_argument("--project-dir", metavar="DIR", help="with --target: the dbt project (default: working "
                     "directory)")


def run(args: argparse.Namespace) -> int:
    from sdc.release.ledger import default_ledger, diff_releases, list_releases

    if args.target is None and (args.profile or args.profiles_dir or args.project_dir):
        raise SdcError("--profile, --profiles-dir and --project-dir belong to --target (a PostgreSQL or Spark warehouse)")
    if args.target is not None:
        return _run_target(args)
    ledger = args.ledger or default_ledger(args.db)
    if args.release_command == "a-priori":
        from sdc.release.a_priori import a_priori_rows

        _write_a_priori(args, a_priori_rows(ledger, args.relation, args.release))
    elif args.release_command == "list":
        _print_releases(list_releases(ledger), str(ledger))
    else:
        _print_diff(args, diff_releases(ledger, args.a, args.b))
    return 0


def _run_target(args: argparse.Namespace) -> int:
    """sdc release ... --target: the ledger in the PostgreSQL (release/ledger_postgres.py) or Spark warehouse."""
    from sdc.release.ledger_postgres import diff_target_releases, list_target_releases

    def refusal(kind: str) -> str:
        return (f"sdc release --target reads the ledger of a PostgreSQL or Spark warehouse, and target {args.target} is of "
                f"type {kind}" + (": give --db <warehouse file> or --ledger <file>" if kind == "duckdb" else ""))

    from sdc.warehouse.profiles import read_target

    profiles_dir, name = profile(args)
    output = read_target(profiles_dir, name, args.target)
    if output["type"] == "spark":
        return _run_spark(args, output)
    with postgres_target(args, refusal) as where:
        if args.release_command == "a-priori":
            from sdc.release.a_priori import target_a_priori_rows

            _write_a_priori(args, target_a_priori_rows(where.connection, args.relation, args.release))
        elif args.release_command == "list":
            _print_releases(list_target_releases(where.connection), f"schema {LEDGER_PG_SCHEMA} of target {args.target}")
        else:
            _print_diff(args, diff_target_releases(where.connection, args.a, args.b))
    return 0


def _run_spark(args: argparse.Namespace, output: dict) -> int:
    """sdc release list / diff --target on Spark: the ledger database sdc publish --target keeps there."""
    from sdc.release.ledger import diff_in, releases_in
    from sdc.release.publish_spark import read_spark_ledger
    from sdc.warehouse.spark_target import SparkWarehouse

    if args.release_command == "a-priori":
        raise SdcError("sdc release a-priori reads the ledger of a DuckDB or PostgreSQL warehouse; on Spark cell "
                       "suppression's a-priori cells are not available yet")
    shown = f"target {args.target}"
    wh = SparkWarehouse(output, shown)
    try:
        wanted = "all" if args.release_command == "list" else (args.a, args.b)
        ledger = read_spark_ledger(wh, shown, wanted)
        try:
            if args.release_command == "list":
                _print_releases(releases_in(ledger.con), ledger.where)
            else:
                _print_diff(args, diff_in(ledger.con, args.a, args.b, ledger.where))
        finally:
            ledger.close()
    finally:
        wh.close()
    return 0


def _write_a_priori(args: argparse.Namespace, found: tuple) -> None:
    from sdc.release.a_priori import write_a_priori

    done = write_a_priori(args.out, found)
    print(f"wrote the a-priori cells of {args.relation} in release {done['release']} to {args.out}: "
          f"{done['suppressed']} suppressed, {done['published']} published")


def _print_releases(releases: list[dict], ledger: str) -> None:
    for r in releases:
        print(f"release {r['release']}: {r['published_at']}, {r['tables']} tables, {r['cells']} cells, "
              f"{r['publication']}" + (f", {r['accepted_parameter_changes']} cells changed by accepted parameter "
                                      "changes" if r["accepted_parameter_changes"] else "")
              + (f"; noise epochs {r['noise_epochs']} (re-keys and parameter changes give readers another draw of "
                 f"every unchanged cell: the floor allows {r['more_epochs_allowed']} more)"
                 if r.get("more_epochs_allowed") is not None else ""))
    if not releases:
        print(f"no release in the ledger {ledger}")


def _print_diff(args: argparse.Namespace, changes: list[dict]) -> None:
    from sdc.release.ledger import diff_summary, shown_values

    for c in changes:
        shown = ", ".join(f"{k}={v}" for k, v in c["cell"].items())
        print(f"{c['relation']} ({shown}): {c['change']} ({c['reason']}): {shown_values(c['before'])} -> "
              f"{shown_values(c['now'])}")
    print(f"release {args.a} -> {args.b}: " + (diff_summary(changes) if changes else "no cell changed"))
