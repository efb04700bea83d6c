"""Command line: a thin shell over the Python API. Errors become one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from sdc import __version__
from sdc.conventions import (
    DEFAULT_KEY_MODULUS,
    LEDGER_PG_SCHEMA,
    MIN_STANDARD_ERROR,
    NUMS_PTABLE_TYPES,
    RELEASE_AUDIT_TABLE,
    WEIGHTED_COUNT_METHODS,
)
from sdc.errors import SdcError
from sdc.ptable.params import PTableParams
from sdc.ptable.formats import EXPORT_FORMATS, IMPORT_FORMATS, is_magnitude_ptable, read_ptable, write_ptable
from sdc.ptable.table import PTable


# Commands that read or write confidential data (microdata, record keys, original values): the files and
# folders they create are for their owner only.
CONFIDENTIAL_COMMANDS = ("load", "ckm", "sql", "suppress", "sas-anon", "microaggregate", "audit")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """SIGTERM or SIGHUP: raised in the main thread so that temporary files are removed and dbt is ended."""


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    umask = os.umask(0o077) if args.command in CONFIDENTIAL_COMMANDS else None
    in_main_thread = threading.current_thread() is threading.main_thread()  # only there can signals be handled
    previous = {sig: signal.signal(sig, _stop) for sig in STOP_SIGNALS} if in_main_thread else {}
    try:
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handling below, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # the reader of the output went away (`sdc load ... | head -1`): the work is done; no traceback, and no
        # second error when Python flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except SdcError as exc:
        print(f"sdc {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (Stopped, KeyboardInterrupt) as exc:
        sig = exc.args[0] if isinstance(exc, Stopped) else signal.SIGINT
        print(f"sdc {args.command}: stopped by {signal.Signals(sig).name} before it finished; its temporary files "
              "are removed", file=sys.stderr)
        return 128 + sig
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if umask is not None:
            os.umask(umask)


def _stop(sig, frame) -> None:
    raise Stopped(sig)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sdc", description="Statistical disclosure control in the data warehouse.")
    parser.add_argument("--version", action="version", version=f"sdc {__version__}", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True)

    pt = commands.add_parser(
        "ptable",
        help="build, import, check or export a perturbation table for the Cell Key Method",
        description=(
            "Build a count perturbation table by maximum entropy (--D, --V, ...), or import and check one "
            "made elsewhere (--import). Prints mean, variance, stay probability and sum per row."
        ),
    )
    build = pt.add_argument_group("build (as ptable::create_cnt_ptable)")
    build.add_argument("--D", type=int, help="maximum absolute noise")
    build.add_argument("--V", type=float, help="noise variance")
    build.add_argument("--js", type=int, default=0, help="no perturbed value in 1..js (default 0)")
    build.add_argument(
        "--pstay", type=_floats, default=[0.0], help="lower bound of the stay probability; one value or one per row"
    )
    build.add_argument("--mono", type=_booleans, default=[True], help="true|false, or one per row (default true)")
    build.add_argument("--optim", type=_ints, default=[1], help="1: variance <= V (default); 4: variance = V")
    build.add_argument(
        "--allow-lower-variance",
        action="store_true",
        help="lower the stay bound in 0.05 steps (up to 20 solves) and accept rows that miss V, with a warning",
    )
    nums = pt.add_argument_group("magnitude tables (as ptable::create_num_ptable)")
    nums.add_argument("--table", choices=("cnts", "nums"), default="cnts",
                      help="cnts: a count table (default); nums: a magnitude table (column type; noise in steps of 1/step)")
    nums.add_argument("--step", type=int, default=2, help="nums: noise values are multiples of 1/step (default 2)")
    nums.add_argument("--icat", type=_ints, help="nums: the rows besides 0; must hold 1 and D (default: 1,D)")
    nums.add_argument("--type", dest="nums_type", default="all", choices=NUMS_PTABLE_TYPES,
                      help="nums: which cells the table serves: all (default), even/odd (parity), small_cells "
                      "(below the separation point)")
    nums.add_argument("--add-to", metavar="FILE",
                      help="nums: a magnitude ptable file of other types (e.g. all) that --out gets too, so that one "
                      "file holds all and small_cells")
    pt.add_argument("--import", dest="import_file", metavar="FILE", help="read a ptable made elsewhere")
    pt.add_argument(
        "--import-format", default="auto", choices=("auto",) + IMPORT_FORMATS, help="format of --import (default: from the header)"
    )
    pt.add_argument("--out", metavar="FILE", help="write the table here (replaced only on success)")
    pt.add_argument("--format", default="sdc", help=f"format of --out: {', '.join(EXPORT_FORMATS)} (default sdc)")
    pt.add_argument("--plot", metavar="FILE.png", help="write a heatmap of the transition matrix")
    pt.set_defaults(run=_run_ptable)

    load = commands.add_parser(
        "load",
        help="load microdata with record keys and fact columns into a DuckDB file or a dbt target (PostgreSQL, Spark)",
        description="Read CSV or Parquet microdata into raw.<table> with an integer record key rk in [0, M), "
        "0/1 fact columns from a YAML config and their key facts rk_<fact>. Atomic: on error nothing changes.",
    )
    where = load.add_mutually_exclusive_group(required=True)
    where.add_argument("--db", help="DuckDB database file")
    where.add_argument("--target", help="or the warehouse of this dbt target (postgres, duckdb or spark of method session; run in the folder dbt runs in)")
    _add_profile_options(load, "with --target: ")
    load.add_argument("--input", required=True, help="microdata file (.csv or .parquet)")
    load.add_argument("--table", required=True, help="target table name in schema raw")
    load.add_argument("--id", dest="id_column", help="record id column (needed by key modes random and keyed)")
    load.add_argument("--key-mode", default="random", choices=("random", "keyed", "existing"),
                      help="random: fresh secure keys, stored by id (default); keyed: HMAC of the id under a secret; "
                      "existing: a column of the file")
    load.add_argument("--modulus", type=int, default=DEFAULT_KEY_MODULUS, help="record keys lie in [0, M); default 10^8")
    load.add_argument("--secret-env", default="SDC_KEY_SECRET",
                      help="environment variable holding the keyed-mode secret (at least 16 bytes)")
    load.add_argument("--allow-demo-secret", action="store_true",
                      help="accept the demo's published secret (the demo only: anyone can recompute its keys)")
    load.add_argument("--allow-all-new-keys", action="store_true",
                      help="accept a random-mode reload in which no record keeps its stored key (every published "
                      "number changes; refused by default, as it usually means the ids changed)")
    load.add_argument("--rekey", action="store_true",
                      help="accept a reload with another key mode, modulus or secret than the table's last load: "
                      "every record gets a new key and every published number may change; the load log records "
                      "the break (refused by default)")
    load.add_argument("--key-column", help="column with existing record keys (key mode existing); keys that cannot "
                      "be uniform random (all equal, few distinct values, bunched) are refused")
    load.add_argument("--config", help="YAML file with 'facts: {f_name: condition}'")
    load.set_defaults(run=_run_load)

    ckm = commands.add_parser(
        "ckm",
        help="protect one frequency table straight from a microdata file (same SQL as the warehouse)",
        description="Counts per cell of --dims with every subtotal, perturbed by the Cell Key Method. "
        "One row per cell; totals carry the root code (Total, or the hierarchy's root).",
    )
    ckm.add_argument("--input", required=True, help="microdata (.csv or .parquet)")
    ckm.add_argument("--dims", required=True, help="comma-separated dimension columns")
    ckm.add_argument("--hierarchy", help="hierarchy CSV: dimension,code,parent (or dim,level,name with @ levels)")
    ckm.add_argument("--count-var", help="0/1 column to count (default: every record)")
    ckm.add_argument("--record-key", required=True, help="column with the record keys")
    keys = ckm.add_mutually_exclusive_group(required=True)
    keys.add_argument("--key-digits", type=int, help="decimals of the record keys: M = 10^digits")
    keys.add_argument("--modulus", type=int, help="integer record keys 0..M-1 with this M (ONS: 256 or 4096)")
    ckm.add_argument("--ptable", help="perturbation table file (any format sdc ptable imports); with --value: the "
                     "magnitude ptable (default: the one --params names)")
    ckm.add_argument("--value", metavar="COL", help="a magnitude table: perturbed sums of this numeric column "
                     "(magnitude CKM, needs --params)")
    ckm.add_argument("--weight", metavar="COL", help="positive weights: with --value also weighted_value; alone, "
                     "count and weighted_count (see --weighted-count)")
    ckm.add_argument("--weighted-count", choices=WEIGHTED_COUNT_METHODS, default=WEIGHTED_COUNT_METHODS[0],
                     help="with --weight alone: magnitude (default), the sum of weights perturbed by the magnitude "
                     "method of --params; mean_weight, count' x sum of weights / count as cellKey and tau-Argus "
                     "(reveals the exact mean weight, whose denominator is the original count)")
    ckm.add_argument("--params", metavar="FILE.yml", help="magnitude parameters (preset, type, top_k, multiplier, "
                     "mu_c, sensitive, same_key, use_zero_rkeys, separation, ptable)")
    ckm.add_argument("--totals", default="cube", choices=("cube", "rollup", "none"),
                     help="cube: every margin and subtotal (default); rollup: SQL ROLLUP order; none: inner cells only")
    ckm.add_argument("--threshold", type=int, metavar="T",
                     help="as ONS: a perturbed count below T is published empty, column count_reason says why")
    ckm.add_argument("--reuse-from", type=int, metavar="ROW",
                     help="counts above the ptable's last row cycle through rows ROW..last (ONS: 501; default: "
                     "the table's own rule, which an ONS file and its sdc conversion carry)")
    ckm.add_argument("--no-empty-cells", action="store_true",
                     help="publish only cells with records (default: every cell of the table's frame, empty "
                     "ones as 0, as ONS and cellKey)")
    ckm.add_argument("--digits", type=_digits, metavar="N", default="default",
                     help="round the published magnitudes (value, weighted_value, weighted_count) to N decimals, "
                     "negative N to tens, hundreds, ... (after the noise; default 0: whole units, as the dbt macro "
                     "ckm_published; 'none': unrounded)")
    ckm.add_argument("--out", required=True, help="CSV file to write")
    ckm.add_argument("--audit", action="store_true", help="also write original, cell_key and noise (never publish these)")
    ckm.set_defaults(run=_run_ckm)

    sql = commands.add_parser("sql", help="CKM macros for ad-hoc SQL in a DuckDB database",
                              description="CKM macros for ad-hoc SQL in a DuckDB database (sdc sql install).")
    sql_commands = sql.add_subparsers(dest="sql_command", required=True)
    install = sql_commands.add_parser(
        "install",
        help="install the macros sdc_ckm, sdc_noise, sdc_cell_key into a warehouse (idempotent)",
        description="After this, an analyst protects an ad-hoc query in plain SQL, e.g. "
        "select a, b, sdc_ckm(sum(f), sum(rk_f)) from raw.t group by rollup (a, b). The macros use the "
        "warehouse's own ptable (the relation sdc_ptable that dbt seeded) and the modulus the keys were loaded with.",
    )
    install.add_argument("--db", required=True, help="existing DuckDB warehouse file")
    install.add_argument("--ptable", help="perturbation table file (any format sdc ptable imports); refused if the "
                         "warehouse's sdc_ptable has other intervals (default: the warehouse's sdc_ptable)")
    install.add_argument("--ptable-relation", metavar="SCHEMA.NAME",
                         help="the warehouse's ptable when it has several relations named sdc_ptable")
    install.add_argument("--modulus", type=int, help="record-key modulus M (default: the one raw.sdc_loads records, "
                         "else 10^8); must agree with the loads")
    install.add_argument("--reuse-from", type=int, metavar="ROW",
                         help="counts above the last ptable row cycle through rows ROW..last, as the dbt var "
                         "sdc_ptable_reuse_from (ONS: 501; default: an imported ONS file's rule, else the last row)")
    install.set_defaults(run=_run_sql_install)

    supp = commands.add_parser(
        "suppress",
        help="cell suppression of one table from a microdata file: primary rules, secondary suppression, audit; "
        "or, with --target, the secondary step of a warehouse's cell table (engines without dbt Python models)",
        description="Counts (or sums of --value) per cell of --dims with every subtotal; the cells the primary "
        "rules (--rule) find sensitive and the secondary suppressions that protect them are published as --mark "
        "(or as intervals); the pattern is audited by linear programming before anything is written.",
    )
    supp.add_argument("--input", help="microdata (.csv or .parquet)")
    supp.add_argument("--dims", required=True, help="comma-separated dimension columns")
    supp.add_argument("--hierarchy", help="hierarchy CSV: dimension,code,parent (or dim,level,name)")
    supp.add_argument("--value", help="numeric column of a magnitude table (default: a frequency table)")
    supp.add_argument("--holding", help="column of the holding / enterprise group of each contributor")
    supp.add_argument("--rule", action="append", default=[],
                      help="primary rule, repeatable: freq:n, holdings:n, zero, manual:col; the dominance rules "
                      "p:p, nk:n,k, pq:p,q need --value")
    supp.add_argument("--preset", default="handbook", choices=("handbook", "tauargus", "sdctable", "acro", "sas_anon"),
                      help="how the rules treat their boundaries (f < n or f <= n, > or >=), as the named tool does "
                      "(default handbook)")
    supp.add_argument("--method", default="heuristic", choices=("heuristic", "optimal"),
                      help="secondary suppression: heuristic (fast, default) or optimal (least total cost by "
                      "mixed-integer programming, up to --time-limit)")
    supp.add_argument("--cost", default="value", choices=("value", "freq", "cells"),
                      help="what the secondary suppressions minimise: their total value (default), total frequency "
                      "or number of cells")
    supp.add_argument("--prefer-low-levels", action="store_true",
                      help="multiply each cell's cost by 10^k, k = the number of dimensions along which it is a "
                      "total, so that totals are kept where possible (the minimum is then of that weighted cost)")
    supp.add_argument("--time-limit", metavar="SECONDS",
                      help="seconds for --method optimal (default 60; 0: the heuristic's pattern at once; inf: no "
                      "limit); at the limit the heuristic completes the pattern, with a warning")
    supp.add_argument("--mark", default="x", help="published text of a suppressed cell (e.g. x or .)")
    supp.add_argument("--publish-intervals", action="store_true",
                      help="publish suppressed cells as the interval anyone can derive from the published cells "
                      "(lower-upper, >=lower where unbounded) instead of --mark")
    supp.add_argument("--audit", action="store_true",
                      help="write the audit layout instead: freq, value (the true value of every suppressed cell), "
                      "protection levels and audit intervals, as sdc audit reads it (never publish it)")
    supp.add_argument("--a-priori", metavar="CSV",
                      help="the last release's cells (sdc release a-priori writes them: the dimensions, status, value): "
                      "what it suppressed stays suppressed, what it published with today's value is never a "
                      "secondary suppression, so that a reader of both releases learns nothing from their difference")
    supp.add_argument("--out", help="CSV file to write (the publishable columns unless --audit)")
    warehouse = supp.add_argument_group(
        "in the warehouse (--target)", "between two dbt selections: read the cell table of suppression_primary and "
        "the relations of suppression_constraints through the dbt profile, write the pattern (and its LP audit) "
        "back in one transaction")
    warehouse.add_argument("--target", help="the dbt target to connect to (postgres, duckdb or spark of method session)")
    _add_profile_options(warehouse, "")
    warehouse.add_argument("--cells", metavar="SCHEMA.TABLE", help="the cell table (suppression_primary)")
    warehouse.add_argument("--relations", metavar="SCHEMA.TABLE", help="the relations (suppression_constraints)")
    warehouse.add_argument("--pattern", metavar="SCHEMA.TABLE", help="the pattern table to write (replaced)")
    warehouse.add_argument("--audit-table", metavar="SCHEMA.TABLE", help="the LP audit table to write (replaced)")
    warehouse.add_argument("--magnitude", action="store_true", help="the cells' values are sums of a value column")
    supp.set_defaults(run=_run_suppress)

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
    anon.set_defaults(run=_run_sas_anon)

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
    micro.set_defaults(run=_run_microaggregate)

    audit = commands.add_parser(
        "audit", help="re-check a suppression pattern with the LP audit (exit 1 if it fails)",
        description="Reads a cell table in the audit layout of sdc suppress --audit (dimensions, freq, value, "
        "status, protection levels) and computes by linear programming the interval an intruder can derive for "
        "every suppressed cell from the published ones; exit 1 if a sensitive cell's interval is too narrow. A "
        "table with a hierarchy needs the same --hierarchy as sdc suppress had.",
    )
    audit.add_argument("--cells", required=True, help="cells CSV (as written by sdc suppress --audit)")
    audit.add_argument("--hierarchy", help="hierarchy CSV")
    audit.set_defaults(run=_run_audit)

    pub = commands.add_parser(
        "publish",
        help="copy the relations tagged sdc_publish in dbt into a separate database (and Parquet files) for BI tools",
        description="Copies every model, view, seed and snapshot the dbt manifest tags sdc_publish (views as tables) "
        "into a new DuckDB file that clients from DuckDB 1.0.0 on read. Refuses raw microdata (a path to a dbt source "
        "without sdc.ckm_count, sdc.ckm_published or sdc.suppression_published), record keys, audit columns and "
        "the values of suppressed cells. Replaces only what an earlier sdc publish wrote; a failed run changes nothing. "
        "With --target (PostgreSQL, where grant_published publishes) it runs the same verification and release audit "
        "on the release grant_published published, and writes the audit there or withdraws the release.",
    )
    warehouse = pub.add_mutually_exclusive_group(required=True)
    warehouse.add_argument("--db", help="warehouse DuckDB file (opened read-only)")
    warehouse.add_argument("--target", help="or the PostgreSQL warehouse of this dbt target: audit the release that "
                           "grant_published published there (run after dbt build); the audit is written into the "
                           "publication schema, a refused release is withdrawn (that schema dropped)")
    pub.add_argument("--out", help="publication DuckDB file (with --db): new, or one sdc publish wrote (then replaced)")
    pub.add_argument("--parquet", metavar="DIR",
                     help="folder for one Parquet file per relation: new, empty, or one sdc publish wrote to "
                     "(only its own files, listed in _sdc_publication.json, are replaced)")
    manifest = pub.add_mutually_exclusive_group()
    manifest.add_argument("--project-dir", metavar="DIR",
                          help="dbt project whose target/manifest.json lists the relations (default: working directory)")
    manifest.add_argument("--manifest", metavar="FILE", help="dbt manifest.json to read instead")
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
    pub.add_argument("--accept-parameter-change", action="store_true",
                     help="publish cells whose records did not change with other values than the last release "
                     "because their tables' ptable or parameters changed (refused by default; the ledger records it)")
    on_target = pub.add_argument_group("with --target")
    on_target.add_argument("--profile", help="the dbt profile (the name in profiles.yml; default: profile: in the dbt "
                           "project's dbt_project.yml, the project of --project-dir or found as dbt finds it)")
    on_target.add_argument("--profiles-dir", help="folder of profiles.yml (default as dbt: $DBT_PROFILES_DIR, else the "
                           "working directory if it holds profiles.yml, else ~/.dbt)")
    _add_publication_schema_option(on_target)
    on_target.add_argument("--publication-database", metavar="NAME",
                           help="copy the verified release into this PostgreSQL database of its own (created where "
                           "missing; its readers see nothing of the build database); default: var "
                           "sdc_publication_database of the project's dbt_project.yml, else none")
    pub.set_defaults(run=_run_publish)

    rel = commands.add_parser(
        "release", help="the ledger of releases that sdc publish keeps: list them, or the cells two of them differ in",
        description="sdc publish records each release in a ledger (a DuckDB file beside the warehouse; on "
        f"PostgreSQL, schema {LEDGER_PG_SCHEMA} of the warehouse, read with --target): its time, "
        "loads, audit and every published cell with a digest of its records and of its table's parameters. "
        "list: the releases; diff A B: every cell that changed, appeared or disappeared from release A to B, with "
        "its reason (microdata change, parameter change, re-key).",
    )
    rel_commands = rel.add_subparsers(dest="release_command", required=True)
    for name, text in (("list", "the releases in the ledger"), ("diff", "the cells release A and B differ in"),
                       ("a-priori", "a suppression table's cells in a release, as a-priori cells for the next pattern")):
        one = rel_commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + "." + (
            " The file (the table's dimensions, status suppressed or published, value) goes to sdc suppress "
            "--a-priori, or as a dbt seed to suppression_pattern(a_priori=ref(...)): what the release suppressed "
            "stays suppressed and what it published with the same value is never a secondary suppression."
            if name == "a-priori" else ""))
        if name == "diff":
            one.add_argument("a", type=int, help="the earlier release's number")
            one.add_argument("b", type=int, help="the later release's number")
        if name == "a-priori":
            one.add_argument("relation", help="the published suppression table (its name in the publication)")
            one.add_argument("--release", type=int, help="the release to read (default the last one)")
            one.add_argument("--out", required=True, help="the CSV file to write")
        where = one.add_mutually_exclusive_group(required=True)
        where.add_argument("--ledger", help="the ledger file")
        where.add_argument("--db", help="or the warehouse DuckDB file, whose ledger lies beside it (sdc_ledger.duckdb)")
        where.add_argument("--target", help="or the PostgreSQL warehouse of this dbt target, whose ledger is its "
                           f"schema {LEDGER_PG_SCHEMA}")
        one.add_argument("--profile", help="with --target: the dbt profile (default: profile: in dbt_project.yml)")
        one.add_argument("--profiles-dir", help="with --target: folder of profiles.yml (default as dbt)")
        one.add_argument("--project-dir", metavar="DIR", help="with --target: the dbt project (default: working "
                         "directory)")
        one.set_defaults(run=_run_release)

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
    _add_profile_options(on_target, "")
    _add_publication_schema_option(on_target)
    rep.set_defaults(run=_run_report)

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
    generate.set_defaults(run=_run_demo_generate)
    report = demo_commands.add_parser(
        "report", help="print protected Table 2b and the quality figures",
        description="Prints the demo warehouse's protected Table 2b (seed 002) and the quality figures of its CKM "
        "tables, after make demo (or dbt build of the demo project).")
    report.add_argument("--db", required=True, help="warehouse DuckDB file (after dbt build)")
    report.set_defaults(run=_run_demo_report)
    return parser


def _add_publication_schema_option(group) -> None:
    group.add_argument("--publication-schema", metavar="SCHEMA",
                       help="the schema grant_published publishes to (default: var sdc_publication_schema of the "
                       "project's dbt_project.yml, else sdc_publication)")


def _add_profile_options(group, prefix: str) -> None:
    """--profile, --project-dir and --profiles-dir of a command with --target; unset, they are found as dbt finds
    them (sdc.warehouse.profiles.find_profile)."""
    group.add_argument("--profile", help=f"{prefix}the dbt profile (the name in profiles.yml; default: profile: in "
                       "the dbt project's dbt_project.yml)")
    group.add_argument("--project-dir", metavar="DIR",
                       help=f"{prefix}the dbt project whose dbt_project.yml names the profile (default as dbt: "
                       "$DBT_PROJECT_DIR, else the working directory or its nearest parent with dbt_project.yml)")
    group.add_argument("--profiles-dir", help=f"{prefix}folder of profiles.yml (default as dbt: $DBT_PROFILES_DIR, "
                       "else the working directory if it holds profiles.yml, else ~/.dbt)")


def _profile(args: argparse.Namespace) -> tuple:
    from sdc.warehouse.profiles import find_profile

    return find_profile(args.profile, args.project_dir, args.profiles_dir)


def _run_load(args: argparse.Namespace) -> int:
    from sdc.warehouse.loader import load_microdata, read_facts_config

    secret = None
    if args.key_mode == "keyed":
        value = os.environ.get(args.secret_env)
        if not value:
            raise SdcError(f"key mode keyed: the environment variable {args.secret_env} holding the secret is not set")
        secret = value.encode("utf-8")
    facts = read_facts_config(args.config) if args.config else {}
    if args.target:  # the same load, into the warehouse of a dbt target
        from sdc.warehouse.target_load import load_into_target

        profiles_dir, profile = _profile(args)

        def load(_, *rest, **options):
            return load_into_target(profiles_dir, profile, args.target, *rest, **options)
    else:
        load = load_microdata
    report = load(
        args.db,
        args.input,
        args.table,
        id_column=args.id_column,
        key_mode=args.key_mode,
        modulus=args.modulus,
        secret=secret,
        key_column=args.key_column,
        facts=facts,
        allow_demo_secret=args.allow_demo_secret,
        allow_all_new_keys=args.allow_all_new_keys,
        rekey=args.rekey,
    )
    for line in report.lines():
        print(line)
    return 0


def _run_ckm(args: argparse.Namespace) -> int:
    if args.value or (args.params and not args.weight):
        return _run_ckm_magnitude(args)
    if not args.ptable:
        raise SdcError("--ptable is required (the count perturbation table)")
    if args.weight and args.weighted_count == "magnitude" and not args.params:
        raise SdcError("--weight gives weighted_count, the sum of the weights perturbed by the magnitude method: "
                       "give its parameters as --params FILE.yml (or --weighted-count mean_weight)")
    if args.weight and args.weighted_count == "mean_weight" and args.params:
        raise SdcError("--weighted-count mean_weight scales the perturbed count: it takes no --params")
    from sdc.ckm.counts import protect_table

    cells = protect_table(
        args.input,
        _split(args.dims),
        args.record_key,
        args.key_digits,
        args.ptable,
        args.out,
        hierarchy_path=args.hierarchy,
        count_var=args.count_var,
        audit=args.audit,
        totals=args.totals,
        modulus=args.modulus,
        threshold=args.threshold,
        complete=not args.no_empty_cells,
        reuse_from=args.reuse_from,
        weight=args.weight,
        weighted_count=args.weighted_count,
        params=args.params if args.weight else None,
        digits=args.digits,
    )
    print(f"wrote {cells} cells to {args.out}" + (" (with audit columns: do not publish)" if args.audit else ""))
    return 0


def _run_ckm_magnitude(args: argparse.Namespace) -> int:
    from sdc.files import check_not_an_input, check_output_file
    from sdc.ckm.params import magnitude_params
    from sdc.ckm.magnitudes import protect_sum_table

    if not args.value:
        raise SdcError("--params are the magnitude Cell Key Method's: give --value COL (a magnitude table) or "
                       "--weight COL (a weighted count)")
    if not args.params:
        raise SdcError("--value uses the magnitude Cell Key Method: give its parameters as --params FILE.yml")
    counting = [flag for flag, given in (("--count-var", args.count_var), ("--threshold", args.threshold is not None),
                                         ("--reuse-from", args.reuse_from is not None)) if given]
    if counting:
        raise SdcError(f"{', '.join(counting)} {'applies' if len(counting) == 1 else 'apply'} to count tables, "
                       "not to --value")
    if args.weighted_count != WEIGHTED_COUNT_METHODS[0]:
        raise SdcError("--weighted-count applies to a weighted count (--weight without --value)")
    modulus = args.modulus if args.modulus is not None else 10**args.key_digits
    params = magnitude_params(args.params)
    check_not_an_input(args.out, args.input, args.ptable, args.hierarchy, args.params, params.ptable)
    check_output_file(args.out, "sdc ckm")
    common = dict(record_key=args.record_key, modulus=modulus, hierarchy=args.hierarchy, totals=args.totals,
                  audit=args.audit, complete=not args.no_empty_cells, digits=args.digits)
    cells = protect_sum_table(args.input, _split(args.dims), args.out, value=args.value, weight=args.weight,
                              params=params, ptable=args.ptable, **common)
    print(f"wrote {cells} cells to {args.out}" + (" (with audit columns: do not publish)" if args.audit else ""))
    return 0


def _run_sql_install(args: argparse.Namespace) -> int:
    from sdc.warehouse.sql_install import install

    print(install(args.db, args.ptable, args.modulus, ptable_relation=args.ptable_relation, reuse_from=args.reuse_from))
    return 0


def _run_suppress(args: argparse.Namespace) -> int:
    import warnings

    from sdc.suppression.optimal import TimeLimitWarning
    from sdc.suppression.pipeline import DEFAULT_TIME_LIMIT, IntegerCheckWarning, check_time_limit, suppress_table

    if args.time_limit is not None and args.method != "optimal":
        raise SdcError("--time-limit applies to --method optimal only")
    time_limit = DEFAULT_TIME_LIMIT if args.time_limit is None else check_time_limit(args.time_limit)
    if args.target:
        return _run_suppress_in_warehouse(args, time_limit)
    missing = [flag for flag, given in (("--input", args.input), ("--out", args.out)) if not given]
    if missing:
        raise SdcError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required (or --target for "
                       "a warehouse's cell table)")
    # the library warns (warnings.warn); here a warning is one line on stderr, without file and line
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TimeLimitWarning)
        warnings.simplefilter("always", IntegerCheckWarning)
        try:
            counts = suppress_table(
                args.input, _split(args.dims), args.rule, args.out, hierarchy_path=args.hierarchy, value=args.value,
                holding=args.holding, preset=args.preset, method=args.method, cost=args.cost, mark=args.mark,
                publish_intervals=args.publish_intervals, prefer_low_levels=args.prefer_low_levels,
                time_limit=time_limit, audit=args.audit, a_priori=args.a_priori,
            )
        finally:
            for warning in caught:
                print(f"sdc suppress: warning: {str(warning.message).splitlines()[0]}", file=sys.stderr)
    print(f"wrote {sum(counts.values())} cells to {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items())
          + (" (audit layout with the true values: do not publish)" if args.audit else ""))
    return 0


def _run_suppress_in_warehouse(args: argparse.Namespace, time_limit: float) -> int:
    from sdc.warehouse.profiles import connect_target
    from sdc.suppression.database import suppress_tables

    given = [flag for flag, value in (("--input", args.input), ("--out", args.out), ("--rule", args.rule),
                                      ("--hierarchy", args.hierarchy), ("--value", args.value),
                                      ("--holding", args.holding), ("--audit", args.audit)) if value]
    if given:
        raise SdcError(f"{', '.join(given)}: the warehouse's cell table has its rules and values already "
                       "(suppression_cells, suppression_primary); with --target give --cells, --relations, --pattern")
    missing = [flag for flag, value in (("--cells", args.cells), ("--relations", args.relations),
                                        ("--pattern", args.pattern)) if not value]
    if missing:
        raise SdcError(f"--target needs {', '.join(missing)}")
    with connect_target(*_profile(args), args.target) as target:
        result = suppress_tables(target, cells=args.cells, relations=args.relations, pattern=args.pattern,
                                 audit=args.audit_table, dims=_split(args.dims), magnitude=args.magnitude,
                                 method=args.method, cost=args.cost, mark=args.mark,
                                 publish_intervals=args.publish_intervals, prefer_low_levels=args.prefer_low_levels,
                                 time_limit=time_limit, a_priori=args.a_priori)
    print(f"wrote {sum(result['statuses'].values())} cells to {args.pattern}: "
          + ", ".join(f"{v} {k}" for k, v in sorted(result["statuses"].items()))
          + (f"; audit in {args.audit_table}: {result['unprotected']} sensitive cells unprotected" if args.audit_table else ""))
    return 1 if result["unprotected"] else 0


def _run_sas_anon(args: argparse.Namespace) -> int:
    from sdc.files import check_not_an_input, check_output_file, csv_field, read_csv_rows, write_text_atomically
    from sdc.suppression.sas_anon import anonymise, text_of

    if args.out:
        check_not_an_input(args.out, args.input)
        check_output_file(args.out, "sdc sas-anon")
    rows = read_csv_rows(args.input, "input file")
    result = anonymise(rows, levels=_split(args.levels), value=args.value, function=args.function,
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


def _run_microaggregate(args: argparse.Namespace) -> int:
    from sdc.files import check_not_an_input, check_output_file, write_text_atomically
    from sdc.microaggregation.tables import microaggregate_file, microaggregate_table

    if bool(args.db) == bool(args.input) or (args.db and not args.table) or (args.input and not args.out):
        raise SdcError("give either --db FILE --table T [--out-table T2] or --input FILE --out FILE")
    if args.report:  # checked before the work, as --out is (in microaggregate_file)
        check_not_an_input(args.report, args.input, args.out, args.db, flag="--report")
        check_output_file(args.report, "sdc microaggregate --report")
    options = dict(id_column=args.id_column, replacement=args.replacement, shuffle_rows=args.shuffle_rows,
                   record_key=args.record_key)
    if args.db:
        reports = microaggregate_table(args.db, args.table, args.column, args.k, args.method,
                                       out_table=args.out_table, **options)
        target = args.out_table or f"{args.table}_microaggregated"
    else:
        reports = microaggregate_file(args.input, args.out, args.column, args.k, args.method, **options)
        target = args.out
    for r in reports:
        print(f"{r['column']}: {r['method']} k={r['k']}" + (f" (m={r['group_size']})" if r["group_size"] else "")
              + f", {r['records']} records ({r['nulls']} NULL), {r['groups']} groups of {r['min_group_size']}.."
              f"{r['max_group_size']}, effective k {r['k_effective']}")
        print(f"  IL {r['il_percent']:.4f} %, IL1s (mean) {r['il1s_mean']:.5f}, r(x, x') {r['correlation']:.6f}, "
              f"mean {r['mean_original']:.6g} -> {r['mean_protected']:.6g}, "
              f"variance {r['variance_original']:.6g} -> {r['variance_protected']:.6g}, "
              f"interval disclosure {100 * r['interval_disclosure_share']:.2f} %")
        for warning in r["warnings"]:
            print(f"  warning: {warning}", file=sys.stderr)
    if args.report:
        import json

        write_text_atomically(Path(args.report), json.dumps(reports, indent=2) + "\n",
                              command="sdc microaggregate --report")
    print(f"wrote {target}")
    return 0


def _run_audit(args: argparse.Namespace) -> int:
    from sdc.suppression.pipeline import audit_cells_file

    passed, lines = audit_cells_file(args.cells, args.hierarchy)
    for line in lines:
        print(line)
    return 0 if passed else 1


def _run_report(args: argparse.Namespace) -> int:
    from sdc.release.report import write_report, write_target_report

    if args.target is None:
        given = [f for f, v in (("--profile", args.profile), ("--profiles-dir", args.profiles_dir),
                                ("--project-dir", args.project_dir), ("--publication-schema", args.publication_schema))
                 if v]
        if given:
            raise SdcError(f"{', '.join(given)} belong to --target (a PostgreSQL warehouse)")
        summary = write_report(args.publication, args.out)
    else:
        from sdc.warehouse.profiles import connect_target, find_profile, read_target
        from sdc.release.publish_target import publication_schema_of

        profiles_dir, profile = find_profile(args.profile, args.project_dir, args.profiles_dir)
        kind = read_target(profiles_dir, profile, args.target)["type"]
        if kind != "postgres":
            raise SdcError(f"sdc report --target reads a PostgreSQL warehouse, and target {args.target} is of type "
                           f"{kind}: give --publication <the file of sdc publish --out>")
        with connect_target(profiles_dir, profile, args.target) as where:
            summary = write_target_report(where.connection, publication_schema_of(args.publication_schema,
                                                                                  args.project_dir), args.out)
    print(f"wrote the release report of {summary['tables']} tables ({summary['cells']} cells) to {summary['out']}")
    return 0


def _run_publish(args: argparse.Namespace) -> int:
    from sdc.release.publish import publish

    if args.target is not None:
        return _run_publish_target(args)
    if args.out is None:
        raise SdcError("--out is required with --db (the publication DuckDB file to write)")
    for name in ("profile", "profiles_dir", "publication_schema", "publication_database"):
        if getattr(args, name, None) is not None:
            raise SdcError(f"--{name.replace('_', '-')} belongs to --target (a PostgreSQL warehouse); --db publishes "
                           "a DuckDB warehouse into --out")
    report: dict = {}
    tables = publish(args.db, args.out, args.parquet, project_dir=args.project_dir, manifest=args.manifest,
                     report=report, min_standard_error=args.min_standard_error, audit_json=args.audit_json,
                     ledger=args.ledger, accept_parameter_change=args.accept_parameter_change)
    print(f"published {len(tables)} relations to {args.out}" + (f" and {args.parquet}" if args.parquet else ""))
    _print_release_audit(report)
    print(f"recorded as release {report['release']} in the ledger {report['ledger']}")
    if report.get("withdrawn"):
        print(f"withdrawn: {', '.join(report['withdrawn'])} (published in release {report['release'] - 1}, not in "
              "this one: not in the new publication)")
    if args.audit_json:  # written by publish() with the publication
        print(f"wrote the release audit to {args.audit_json}")
    return 0


def _run_release(args: argparse.Namespace) -> int:
    from sdc.release.ledger import default_ledger, diff_releases, list_releases

    if args.target is None and (args.profile or args.profiles_dir or args.project_dir):
        raise SdcError("--profile, --profiles-dir and --project-dir belong to --target (a PostgreSQL warehouse)")
    if args.target is not None:
        return _run_release_target(args)
    ledger = args.ledger or default_ledger(args.db)
    if args.release_command == "a-priori":
        from sdc.release.a_priori import a_priori_rows

        _write_a_priori(args, a_priori_rows(ledger, args.relation, args.release))
        return 0
    if args.release_command == "list":
        _print_releases(list_releases(ledger), str(ledger))
        return 0
    _print_diff(args, diff_releases(ledger, args.a, args.b))
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
                                      "changes" if r["accepted_parameter_changes"] else ""))
    if not releases:
        print(f"no release in the ledger {ledger}")


def _run_release_target(args: argparse.Namespace) -> int:
    """sdc release list|diff --target: the ledger in the PostgreSQL warehouse (release/ledger_postgres.py)."""
    from sdc.warehouse.profiles import connect_target, find_profile, read_target
    from sdc.release.ledger_postgres import diff_target_releases, list_target_releases

    profiles_dir, profile = find_profile(args.profile, args.project_dir, args.profiles_dir)
    kind = read_target(profiles_dir, profile, args.target)["type"]
    if kind != "postgres":
        raise SdcError(f"sdc release --target reads the ledger of a PostgreSQL warehouse, and target {args.target} is "
                       f"of type {kind}" + (": give --db <warehouse file> or --ledger <file>" if kind == "duckdb" else ""))
    with connect_target(profiles_dir, profile, args.target) as where:
        if args.release_command == "a-priori":
            from sdc.release.a_priori import a_priori_rows_in
            from sdc.release.ledger_postgres import read_existing_ledger

            # the cells of the one release asked for (default the last), not of every release
            ledger = read_existing_ledger(where.connection, "last" if args.release is None else (args.release,))
            try:
                _write_a_priori(args, a_priori_rows_in(ledger.con, args.relation, args.release, ledger.where))
            finally:
                ledger.close()
        elif args.release_command == "list":
            _print_releases(list_target_releases(where.connection), f"schema {LEDGER_PG_SCHEMA} of target {args.target}")
        else:
            _print_diff(args, diff_target_releases(where.connection, args.a, args.b))
    return 0


def _print_diff(args: argparse.Namespace, changes: list[dict]) -> None:
    from sdc.release.ledger import diff_summary, shown_values

    for c in changes:
        shown = ", ".join(f"{k}={v}" for k, v in c["cell"].items())
        print(f"{c['relation']} ({shown}): {c['change']} ({c['reason']}): {shown_values(c['before'])} -> "
              f"{shown_values(c['now'])}")
    print(f"release {args.a} -> {args.b}: " + (diff_summary(changes) if changes else "no cell changed"))


def _run_publish_target(args: argparse.Namespace) -> int:
    """sdc publish --target: the release audit on a PostgreSQL warehouse (python/sdc/release/publish_target.py)."""
    from sdc.files import check_not_an_input, check_output_file
    from sdc.warehouse.profiles import find_profile
    from sdc.release.publish_target import publish_target

    if args.out is not None or args.parquet is not None:
        raise SdcError("--out and --parquet write the publication file of sdc publish --db (a DuckDB warehouse); on "
                       "PostgreSQL grant_published publishes the release and --target audits it")
    if args.ledger is not None:
        raise SdcError(f"--ledger names the ledger file of sdc publish --db; on PostgreSQL the ledger of releases is "
                       f"schema {LEDGER_PG_SCHEMA} of the build database")
    if args.audit_json:  # checked before the work: a file of its own, none that sdc publish reads
        from sdc.release.publish import AUDIT_JSON_WRITER, manifest_location

        if Path(args.audit_json).is_symlink():
            raise SdcError(f"--audit-json {args.audit_json} is a symbolic link: give the path of a file of its own")
        manifest = manifest_location(args.project_dir, args.manifest)
        check_not_an_input(args.audit_json, manifest, manifest.with_name("run_results.json"), flag="--audit-json")
        check_output_file(args.audit_json, AUDIT_JSON_WRITER)
    profiles_dir, profile = find_profile(args.profile, args.project_dir, args.profiles_dir)
    report: dict = {}
    done = publish_target(profiles_dir, profile, args.target, project_dir=args.project_dir, manifest=args.manifest,
                          report=report, min_standard_error=args.min_standard_error,
                          publication_schema=args.publication_schema, publication_database=args.publication_database,
                          accept_parameter_change=args.accept_parameter_change)
    print(f"audited the {len(done.names)} relations tagged sdc_publish in {done.target} ({', '.join(done.names)})"
          + (f", as grant_published published them in schema {done.schema}" if done.published else ""))
    _print_release_audit(report)
    readers = f" (read by {', '.join(done.readers)})" if done.readers else ""
    if done.written:
        print(f"wrote the release audit to {done.schema}.{RELEASE_AUDIT_TABLE}{readers}")
        print(f"recorded as release {done.release} in {done.ledger}")
        if report.get("withdrawn"):
            print(f"withdrawn: {', '.join(report['withdrawn'])} (published in release {done.release - 1}, not in this "
                  "one)")
        if done.database is not None:
            print(f"published {len(done.names)} relations and the release audit to database {done.database}, schema "
                  f"{done.schema}{readers}" + (f"; dropped there: {', '.join(done.withdrawn)}" if done.withdrawn else ""))
    else:
        print(f"the release audit is not written to the database: {done.why_not}")
    if args.audit_json:
        _write_audit_json(args.audit_json, report)
    return 0


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


def _write_audit_json(path, report: dict) -> None:
    import json

    from sdc.files import write_text_atomically
    from sdc.release.publish import AUDIT_JSON_WRITER

    write_text_atomically(Path(path), json.dumps(report, indent=2, sort_keys=True) + "\n", command=AUDIT_JSON_WRITER)
    print(f"wrote the release audit to {path}")


def _run_demo_generate(args: argparse.Namespace) -> int:
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


def _run_demo_report(args: argparse.Namespace) -> int:
    from sdc.demo.report import print_report

    print_report(args.db)
    return 0


def _run_ptable(args: argparse.Namespace) -> int:
    from sdc.files import check_not_an_input, check_output_file

    # --add-to may be --out: that is how one file gets a second table type
    if args.out:
        check_not_an_input(args.out, args.import_file)
        check_output_file(args.out, "sdc ptable")
    if args.plot:
        check_not_an_input(args.plot, args.import_file, args.add_to, args.out, flag="--plot")
        check_output_file(args.plot, "sdc ptable --plot")
    if args.format not in EXPORT_FORMATS:
        raise SdcError(f"unknown --format {args.format!r}; known: {', '.join(EXPORT_FORMATS)}")
    if args.plot and not args.plot.lower().endswith(".png"):
        raise SdcError(f"--plot writes a PNG file; {args.plot!r} does not end in .png")
    if (args.import_file and args.import_format == "auto" and args.table == "cnts"
            and is_magnitude_ptable(args.import_file)):
        args.table = "nums"  # what sdc ptable --table nums writes, read as it (its header has the column type)
    if args.table == "nums":
        return _run_nums_ptable(args)
    if args.add_to or args.icat:
        raise SdcError(f"{'--add-to' if args.add_to else '--icat'} is for magnitude tables: add --table nums")
    if args.import_file:
        given = [flag for flag, value in (("--D", args.D), ("--V", args.V)) if value is not None]
        if given:
            raise SdcError(f"--import reads a finished table; {', '.join(given)} cannot be combined with it")
        table, fmt, notes = read_ptable(args.import_file, args.import_format)
        print(f"imported {args.import_file} (format {fmt}): {len(table)} intervals, rows 0..{table.max_i}")
        for note in notes:
            print(f"note: {note}")
        outcomes, title = None, Path(args.import_file).name
    else:
        missing = [flag for flag, value in (("--D", args.D), ("--V", args.V)) if value is None]
        if missing:
            raise SdcError(f"{' and '.join(missing)} required to build a ptable (or give --import FILE)")
        params = PTableParams(
            D=args.D, V=args.V, js=args.js, pstay=_scalar(args.pstay), mono=_scalar(args.mono), optim=_scalar(args.optim)
        )
        from sdc.ptable.build import create_ptable  # scipy: half a second to import, for this command only

        built = create_ptable(params, allow_lower_variance=args.allow_lower_variance)
        table, outcomes = built.table, {o.i: o for o in built.rows}
        title = f"ptable D={params.D} V={params.V} js={params.js}"
        print(f"{title}: {len(table)} intervals, rows 0..{table.max_i}")
        for warning in built.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    _print_check_table(table, outcomes)
    if args.out:
        write_ptable(table, args.out, args.format)
        print(f"wrote {args.out} ({args.format})")
    if args.plot:
        from sdc.ptable.plot import plot_transition_matrix

        plot_transition_matrix(table, args.plot, title=f"{title}: P(j | i) in %")
        print(f"wrote {args.plot}")
    return 0


def _run_nums_ptable(args: argparse.Namespace) -> int:
    from sdc.ptable.nums import NumsPTableParams, NumsPTableSet, read_nums_ptable, write_nums_ptable

    if args.format not in ("sdc", "tauargus"):
        raise SdcError(f"a magnitude ptable is written as sdc or tauargus, not --format {args.format}")
    if args.plot:
        raise SdcError("--plot draws count tables only")
    if args.import_file:
        given = [flag for flag, value in (("--D", args.D), ("--V", args.V), ("--add-to", args.add_to),
                                          ("--icat", args.icat)) if value is not None]
        if given:
            raise SdcError(f"--import reads a finished table; {', '.join(given)} cannot be combined with it")
        tables = read_nums_ptable(args.import_file)
        print(f"imported {args.import_file}: magnitude ptable of types {', '.join(tables.tables)}")
    else:
        missing = [flag for flag, value in (("--D", args.D), ("--V", args.V)) if value is None]
        if missing:
            raise SdcError(f"{' and '.join(missing)} required to build a ptable (or give --import FILE)")
        if args.js or args.pstay != [0.0]:
            raise SdcError("--js and --pstay do not apply to magnitude tables (ptable ignores them): leave them out")
        params = NumsPTableParams(
            D=args.D, V=args.V, step=args.step, icat=args.icat, type=args.nums_type,
            mono=_scalar(args.mono), optim=_scalar(args.optim),
        )
        from sdc.ptable.nums import create_num_ptable  # scipy: half a second to import, for this command only

        built = create_num_ptable(params, allow_lower_variance=args.allow_lower_variance)
        for warning in built.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        others = dict(read_nums_ptable(args.add_to).tables) if args.add_to else {}
        if params.type in others:
            raise SdcError(f"{args.add_to} already has a table of type {params.type}: choose another --type")
        if args.add_to and params.type != "small_cells" and "small_cells" not in others:
            raise SdcError(f"--add-to combines a table with a small_cells table; {args.add_to} has types "
                           f"{', '.join(others)} and this one is {params.type}")
        tables = NumsPTableSet({**others, params.type: built.table}) if args.add_to else None
        if tables is None:
            tables = NumsPTableSet({params.type: built.table}) if params.type != "small_cells" else None
        if tables is None:
            raise SdcError("a small_cells table serves beside a table of type all (or even and odd): build that "
                           "first and give it as --add-to FILE")
        print(f"magnitude ptable D={params.D} V={params.V} step={params.step} icat={','.join(map(str, params.rows))} "
              f"type={params.type}: {len(built.table.i)} intervals")
    print(f"{'type':>11} {'i':>4} {'mean':>11} {'variance':>10} {'sum':>10}")
    for kind, table in tables.tables.items():
        for i, mean, variance, total in table.row_stats():
            print(f"{kind:>11} {i:>4} {round(mean, 8) + 0.0:11.8f} {variance:10.6f} {total:10.8f}")
    if args.out:
        write_nums_ptable(tables, args.out, args.format)
        print(f"wrote {args.out} ({args.format})")
    return 0


def _print_check_table(table: PTable, outcomes: dict | None) -> None:
    header = f"{'i':>5} {'mean':>11} {'variance':>10} {'p_stay':>10} {'sum':>10}"
    print(header + ("  solves" if outcomes else ""))
    for s in table.row_stats():
        label = f">={s.i}" if s.i == table.max_i and s.i > 0 else str(s.i)
        mean = round(s.mean, 8) + 0.0  # no "-0.00000000"
        line = f"{label:>5} {mean:11.8f} {s.variance:10.6f} {s.p_stay:10.6f} {s.p_sum:10.8f}"
        if outcomes and s.i in outcomes:
            line += f"  {outcomes[s.i].solves:>6}"
        print(line)


def _scalar(values: list):
    return values[0] if len(values) == 1 else tuple(values)


def _digits(text: str) -> int | None:
    """--digits: a whole number, or 'none' (unrounded); not given, 'default' (the rule of sdc.ckm._inputs.rounded)."""
    if text.strip().lower() == "none":
        return None
    if text == "default":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number or 'none', got {text!r}") from None


def _split(text: str) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in _split(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or comma-separated numbers, got {text!r}") from None


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in _split(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or comma-separated ones, got {text!r}") from None


def _booleans(text: str) -> list[bool]:
    words = {"true": True, "t": True, "1": True, "false": False, "f": False, "0": False}
    try:
        return [words[x.lower()] for x in _split(text)]
    except KeyError:
        raise argparse.ArgumentTypeError(f"expected true or false (or a comma-separated list), got {text!r}") from None

