"""sdc publish: the relations tagged sdc_publish into a publication of their own, after the release audit
(--db: a DuckDB warehouse; --target: the release grant_published published on PostgreSQL, or a Spark
warehouse's release, which sdc publishes itself)."""

from __future__ import annotations

import argparse

from sdc.conventions import LEDGER_PG_SCHEMA, MIN_STANDARD_ERROR, RELEASE_AUDIT_TABLE
from sdc.release.differencing import MIN_CHANGED_RECORDS
from sdc.errors import SdcError

from sdc.cli._common import add_publication_schema_option


def add_parser(commands) -> None:
    pub = commands.add_parser(
        "publish",
        help="copy the relations tagged sdc_publish in dbt into a separate database (and Parquet files) for BI tools",
        description="Copies every model, view, seed and snapshot the dbt manifest tags sdc_publish (views as tables) "
        "into a new DuckDB file that clients from DuckDB 1.0.0 on read. Refuses raw microdata (a path to a dbt source "
        "without sdc.ckm_count, sdc.ckm_published or sdc.suppression_published), record keys, audit columns and "
        "the values of suppressed cells. Replaces only what an earlier sdc publish wrote; a failed run changes nothing. "
        "With --target (PostgreSQL, where grant_published publishes) it runs the same verification and release audit "
        "on the release grant_published published, and writes the audit there or withdraws the release; on Spark "
        "it audits the release, records it and makes the publication database from the cells it audited.",
    )
    warehouse = pub.add_mutually_exclusive_group(required=True)
    warehouse.add_argument("--db", help="warehouse DuckDB file (opened read-only)")
    warehouse.add_argument("--target", help="or the PostgreSQL or Spark warehouse of this dbt target: on PostgreSQL "
                           "audit the release that grant_published published there (run after dbt build), the audit "
                           "written into the publication schema, a refused release withdrawn (that schema dropped); "
                           "on Spark (method session) audit, record and publish the release into the publication "
                           "database")
    pub.add_argument("--out", help="publication DuckDB file (with --db): new, or one sdc publish wrote (then replaced)")
    pub.add_argument("--parquet", metavar="DIR",
                     help="folder for one Parquet file per relation: new, empty, or one sdc publish wrote to "
                     "(only its own files, listed in _sdc_publication.json, are replaced)")
    manifest = pub.add_mutually_exclusive_group()
    manifest.add_argument("--project-dir", metavar="DIR",
                          help="dbt project whose target/manifest.json lists the relations (default: working directory)")
    manifest.add_argument("--manifest", metavar="FILE", help="dbt manifest.json to read instead")
    _add_release_options(pub)
    _add_target_options(pub)
    pub.set_defaults(run=run)


def _add_release_options(pub) -> None:
    pub.add_argument("--min-standard-error", type=float, default=MIN_STANDARD_ERROR, metavar="S",
                     help="refuse the release where a reader who averages the noise of all its CKM count tables "
                     "estimates a count with records to a standard error below S (default %(default)s: the rounded "
                     "estimate is the true count in at most about 38 %% of cells)")
    pub.add_argument("--audit-json", metavar="FILE",
                     help="also write the release audit (per table and release: verification, zeros, two methods, "
                     "linked suppression, averaging) as JSON to this file (new, or one sdc publish wrote)")
    pub.add_argument("--ledger", metavar="FILE",
                     help="the ledger of releases (a DuckDB file of sdc's own; default sdc_ledger.duckdb beside the "
                     "warehouse): this release is checked against the last one there and recorded")
    pub.add_argument("--min-changed-records", type=int, default=MIN_CHANGED_RECORDS, metavar="N",
                     help="refuse a release after which some but fewer than N records of a loaded table changed "
                     "since the last release (the cells that change would show their codes; default %(default)s; "
                     "0: no minimum)")
    pub.add_argument("--accept-parameter-change", action="store_true",
                     help="publish cells whose records did not change with other values than the last release "
                     "because their tables' ptable or parameters changed (refused by default; the ledger records it)")


def _add_target_options(pub) -> None:
    on_target = pub.add_argument_group("with --target")
    on_target.add_argument("--profile", help="the dbt profile (the name in profiles.yml; default: profile: in the dbt "
                           "project's dbt_project.yml, the project of --project-dir or found as dbt finds it)")
    on_target.add_argument("--profiles-dir", help="folder of profiles.yml (default as dbt: $DBT_PROFILES_DIR, else the "
                           "working directory if it holds profiles.yml, else ~/.dbt)")
    add_publication_schema_option(on_target)
    on_target.add_argument("--publication-database", metavar="NAME",
                           help="copy the verified release into this PostgreSQL database of its own (created where "
                           "missing; its readers see nothing of the build database's tables); default: var "
                           "sdc_publication_database of the project's dbt_project.yml, else none")
    on_target.add_argument("--publication-target", metavar="TARGET",
                           help="or copy it into the database of this other target of the profile: a PostgreSQL "
                           "server of its own, whose readers see nothing of the build in any catalog (on the build's "
                           "server pg_stat_database shows each load's row counts); the database must exist")


def run(args: argparse.Namespace) -> int:
    from sdc.release.publish import publish

    if args.target is not None:
        return _run_target(args)
    if args.out is None:
        raise SdcError("--out is required with --db (the publication DuckDB file to write)")
    for name in ("profile", "profiles_dir", "publication_schema", "publication_database", "publication_target"):
        if getattr(args, name, None) is not None:
            raise SdcError(f"--{name.replace('_', '-')} belongs to --target (a PostgreSQL warehouse); --db publishes "
                           "a DuckDB warehouse into --out")
    report: dict = {}
    tables = publish(args.db, args.out, args.parquet, project_dir=args.project_dir, manifest=args.manifest,
                     report=report, min_standard_error=args.min_standard_error, audit_json=args.audit_json,
                     ledger=args.ledger, accept_parameter_change=args.accept_parameter_change,
                     min_changed_records=args.min_changed_records)
    print(f"published {len(tables)} relations to {args.out}" + (f" and {args.parquet}" if args.parquet else ""))
    _print_release_audit(report)
    print(f"recorded as release {report['release']} in the ledger {report['ledger']}")
    if report.get("withdrawn"):
        print(f"withdrawn: {', '.join(report['withdrawn'])} (published in release {report['release'] - 1}, not in "
              "this one: not in the new publication)")
    if args.audit_json:  # written by publish() with the publication
        print(f"wrote the release audit to {args.audit_json}")
    return 0


def _run_target(args: argparse.Namespace) -> int:
    """sdc publish --target: the release audit on a PostgreSQL warehouse (python/sdc/release/publish_target.py)."""
    from sdc.warehouse.profiles import find_profile
    from sdc.release.publish_target import check_audit_json, publish_target

    if args.out is not None or args.parquet is not None:
        raise SdcError("--out and --parquet write the publication file of sdc publish --db (a DuckDB warehouse); on "
                       "PostgreSQL grant_published publishes the release and --target audits it")
    if args.ledger is not None:
        raise SdcError(f"--ledger names the ledger file of sdc publish --db; on PostgreSQL the ledger of releases is "
                       f"schema {LEDGER_PG_SCHEMA} of the build database, on Spark the database {LEDGER_PG_SCHEMA}")
    if args.audit_json:  # checked before the work: a file of its own, none that sdc publish reads
        check_audit_json(args.audit_json, args.project_dir, args.manifest)
    profiles_dir, profile = find_profile(args.profile, args.project_dir, args.profiles_dir)
    report: dict = {}
    done = publish_target(profiles_dir, profile, args.target, project_dir=args.project_dir, manifest=args.manifest,
                          report=report, min_standard_error=args.min_standard_error,
                          publication_schema=args.publication_schema, publication_database=args.publication_database,
                          publication_target=args.publication_target, min_changed_records=args.min_changed_records,
                          accept_parameter_change=args.accept_parameter_change, audit_json=args.audit_json)
    print(f"audited the {len(done.names)} relations tagged sdc_publish in {done.target} ({', '.join(done.names)})"
          + (f", as grant_published published them in schema {done.schema}" if done.published and not done.spark
             else ""))
    _print_release_audit(report)
    if not done.written:  # a scheduled job must not take this for a release (a new user's trial, issue 48)
        raise SdcError(f"the release audit passed, but nothing was published or recorded: {done.why_not}")
    _print_written(done, report)
    if done.elsewhere:
        import sys

        print(f"warning: release {done.release - 1} was published to {done.elsewhere}, this one to "
              f"{done.published_to}: the readers of {done.elsewhere} still read "
              f"release {done.release - 1}; give --publication-database (or var sdc_publication_database) to "
              "publish there", file=sys.stderr)
    if args.audit_json:  # written by publish_target() after the release
        print(f"wrote the release audit to {args.audit_json}")
    return 0


def _print_written(done, report: dict) -> None:
    """What sdc publish --target wrote into the warehouse (and the publication database)."""
    readers = f" (read by {', '.join(done.readers)})" if done.readers else ""
    print(f"wrote the release audit to {done.schema}.{RELEASE_AUDIT_TABLE}{readers}")
    print(f"recorded as release {done.release} in {done.ledger}")
    if report.get("withdrawn"):
        print(f"withdrawn: {', '.join(report['withdrawn'])} (published in release {done.release - 1}, not in this "
              "one)")
    if done.spark:  # sdc published the release itself
        print(f"published {len(done.names)} relations and the release audit to database {done.schema} (grant the "
              "catalog's readers that database only)")
    if done.database is not None:
        print(f"published {len(done.names)} relations and the release audit to database {done.database}, schema "
              f"{done.schema}{readers}" + (f"; dropped there: {', '.join(done.withdrawn)}" if done.withdrawn else ""))


def _print_release_audit(report: dict) -> None:
    """The summary of the release audit that sdc publish prints (--db and --target alike)."""
    linked = report.get("linked_suppression") or {}
    print(f"verified {len(report['verified'])} relations against sdc's recomputation from the microdata; release "
          f"audit passed (published zeros, two methods over one population: {report['cells_compared_across_methods']} "
          f"cell pairs compared; linked suppression tables: {len(linked.get('groups') or [])} group(s), "
          f"{linked.get('shared_cells', 0)} shared cells)")
    for table in report["tables"]:
        print(f"  {table['table']} ({table['method']}): {table['cells']} cells, {table['published_zeros']} published "
              f"as 0, {table['suppressed']} suppressed")
    averaging = report["averaging"]
    if averaging["smallest_standard_error"] is not None:
        print(f"averaging CKM noise: the smallest standard error of a count with records is "
              f"{averaging['smallest_standard_error']:.3g} ({averaging['method']}), {averaging['cell']}; floor "
              f"{averaging['min_standard_error']:g}")
    over = averaging.get("over_releases") or {}
    if over.get("smallest_standard_error") is not None:
        print(f"  over the releases in the ledger ({over['noise_epochs']} noise epochs, earlier releases "
              f"{', '.join(map(str, over['earlier_releases']))}): {over['smallest_standard_error']:.3g} "
              f"({over['method']}), {over['cell']}")
    if over.get("more_epochs_allowed") is not None:
        print(f"  the floor allows {over['more_epochs_allowed']} more re-key(s) or accepted parameter change(s) of "
              "these tables")
