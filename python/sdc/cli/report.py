"""sdc report: the release report of a publication, one self-contained HTML file."""

from __future__ import annotations

import argparse

from sdc.errors import SdcError

from sdc.cli._common import add_profile_options, add_publication_schema_option, postgres_target, profile


def add_parser(commands) -> None:
    rep = commands.add_parser(
        "report", help="write the release report of a publication: one self-contained HTML file",
        description="Writes one HTML file with no script and no link outside it. The office report (the default) "
        "reads the publication's tables and, from the ledger of releases, the release audit: each table's cells "
        "(suppressed cells marked), its quality (deviations, stay share, Hellinger distance, false zeros, a histogram "
        "of the relative deviations), the risk figures (averaging standard errors, linked suppression), the changes "
        "since the last release and the ptable's transition matrix; these are computed from the original values, "
        "so its first line says it is internal. --public writes the readers' report from the publication alone: "
        "its tables, the checks passed and the public parameters.",
    )
    source = rep.add_mutually_exclusive_group(required=True)
    source.add_argument("--publication", help="publication DuckDB file (sdc publish --out)")
    source.add_argument("--target", help="or the PostgreSQL or Spark warehouse of this dbt target: the release sdc "
                        "publish --target audited there (its publication schema or database, release audit and "
                        "ledger)")
    rep.add_argument("--out", required=True, help="HTML file to write (new, or an earlier sdc report)")
    rep.add_argument("--ledger", metavar="FILE", help="with --publication: the ledger of releases of that publication "
                     "(sdc publish --ledger; default sdc_ledger.duckdb beside the warehouse), which the office report "
                     "reads the audit from")
    rep.add_argument("--release", type=int, metavar="N", help="the office report of release N of the ledger (default: "
                     "the release the publication holds)")
    rep.add_argument("--public", action="store_true", help="the readers' report, from the publication alone")
    on_target = rep.add_argument_group("with --target")
    add_profile_options(on_target, "")
    add_publication_schema_option(on_target)
    rep.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sdc.release.report import write_report, write_target_report

    if args.target is None:
        given = [f for f, v in (("--profile", args.profile), ("--profiles-dir", args.profiles_dir),
                                ("--project-dir", args.project_dir), ("--publication-schema", args.publication_schema))
                 if v]
        if given:
            raise SdcError(f"{', '.join(given)} belong to --target (a PostgreSQL or Spark warehouse)")
        summary = write_report(args.publication, args.out, ledger=args.ledger, release=args.release,
                               public=args.public)
    else:
        from sdc.release.publish_target import publication_schema_of

        if args.ledger is not None:
            raise SdcError("--ledger names the ledger file of a DuckDB publication; on PostgreSQL the ledger of "
                           "releases is a schema of the build database, which --target reads")

        def refusal(kind: str) -> str:
            return (f"sdc report --target reads a PostgreSQL or Spark warehouse, and target {args.target} is of type {kind}: "
                    "give --publication <the file of sdc publish --out>")

        from sdc.warehouse.profiles import read_target

        profiles_dir, name = profile(args)
        output = read_target(profiles_dir, name, args.target)
        if output["type"] == "spark":
            return _spark_report(args, output, publication_schema_of(args.publication_schema, args.project_dir))
        with postgres_target(args, refusal) as where:
            summary = write_target_report(where.connection, publication_schema_of(args.publication_schema,
                                                                                  args.project_dir), args.out,
                                          release=args.release, public=args.public)
    _print_written(summary)
    return 0


def _spark_report(args: argparse.Namespace, output: dict, schema: str) -> int:
    """sdc report --target on Spark: the publication database and the ledger that sdc publish --target keeps."""
    from sdc.release.report import write_spark_report
    from sdc.warehouse.spark_target import SparkWarehouse

    shown = f"target {args.target}"
    wh = SparkWarehouse(output, shown)
    try:
        _print_written(write_spark_report(wh, shown, schema, args.out, release=args.release, public=args.public))
    finally:
        wh.close()
    return 0


def _print_written(summary: dict) -> None:
    kind = "office report (internal: never give it to readers)" if summary["office"] else "public report"
    print(f"wrote the {kind} of release {summary['release']}, {summary['tables']} tables ({summary['cells']} cells), "
          f"to {summary['out']}")
