"""sdc report: the release report of a publication, one self-contained HTML file."""

from __future__ import annotations

import argparse

from sdc.errors import SdcError

from sdc.cli._common import add_profile_options, add_publication_schema_option, postgres_target


def add_parser(commands) -> None:
    rep = commands.add_parser(
        "report", help="write the release report of a publication: one self-contained HTML file",
        description="Reads a publication file of sdc publish (its tables and its release audit) and writes one HTML "
        "file with no script and no link outside it: each table's cells (suppressed cells marked), its quality "
        "(deviations, stay share, Hellinger distance, false zeros, a histogram of the relative deviations), the "
        "release audit's risk figures (averaging standard errors, linked suppression) and the ptable's transition "
        "matrix.",
    )
    source = rep.add_mutually_exclusive_group(required=True)
    source.add_argument("--publication", help="publication DuckDB file (sdc publish --out)")
    source.add_argument("--target", help="or the PostgreSQL warehouse of this dbt target: the release sdc publish "
                        "--target audited there (its publication schema, release audit and ledger)")
    rep.add_argument("--out", required=True, help="HTML file to write (new, or an earlier sdc report)")
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
            raise SdcError(f"{', '.join(given)} belong to --target (a PostgreSQL warehouse)")
        summary = write_report(args.publication, args.out)
    else:
        from sdc.release.publish_target import publication_schema_of

        def refusal(kind: str) -> str:
            return (f"sdc report --target reads a PostgreSQL warehouse, and target {args.target} is of type {kind}: "
                    "give --publication <the file of sdc publish --out>")

        with postgres_target(args, refusal) as where:
            summary = write_target_report(where.connection, publication_schema_of(args.publication_schema,
                                                                                  args.project_dir), args.out)
    print(f"wrote the release report of {summary['tables']} tables ({summary['cells']} cells) to {summary['out']}")
    return 0
