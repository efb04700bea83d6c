"""sdc suppress: cell suppression of one table from a microdata file, or the secondary step of a warehouse's
cell table (--target)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
import warnings

from sdc.cli._common import add_profile_options, profile, split
from sdc.errors import SdcError
from sdc.suppression.secondary import (
    AUTO_HYPERCUBE_CELLS,
    AUTO_OPTIMAL_CELLS,
    AUTO_OPTIMAL_PLANE_CELLS,
    DEFAULT_METHOD,
    METHODS,
)


def add_parser(commands) -> None:
    supp = commands.add_parser(
        "suppress",
        help="cell suppression of one table from a microdata file: primary rules, secondary suppression, audit; "
        "or, with --target, the secondary step of a warehouse's cell table (engines without dbt Python models)",
        description="Counts (or sums of --value) per cell of --dims with every subtotal; the cells the primary "
        "rules (--rule) find sensitive and the secondary suppressions that protect them are published as --mark "
        "(or as intervals); the pattern is audited by linear programming before anything is written.",
    )
    supp.add_argument("--input", help="microdata (.csv, .tsv, .txt or .parquet)")
    supp.add_argument("--dims", required=True, action="append",
                      help="comma-separated dimension columns; repeat it for several tables of --input that share "
                      "cells (linked tables): they are protected by one pattern, audited over all their equations "
                      "together, and --out is a folder of one <dims joined by _>.csv per table")
    supp.add_argument("--hierarchy", help="hierarchy CSV: dimension,code,parent (or dim,level,name)")
    supp.add_argument("--value", help="numeric column of a magnitude table (default: a frequency table)")
    supp.add_argument("--holding", help="column of the holding / enterprise group of each contributor")
    supp.add_argument("--rule", action="append", default=[],
                      help="primary rule, repeatable: freq:n, holdings:n, zero, manual:col; the dominance rules "
                      "p:p, nk:n,k, pq:p,q need --value; range:w asks every primary's interval to be at least w wide")
    supp.add_argument("--preset", default="handbook", choices=("handbook", "tauargus", "sdctable", "acro", "sas_anon"),
                      help="how the rules treat their boundaries (f < n or f <= n, > or >=), as the named tool does "
                      "(default handbook)")
    _add_pattern_options(supp)
    supp.add_argument("--audit", action="store_true",
                      help="write the audit layout instead: freq, value (the true value of every suppressed cell), "
                      "protection levels and audit intervals, as sdc audit reads it (never publish it)")
    supp.add_argument("--a-priori", metavar="CSV",
                      help="the last release's cells (sdc release a-priori writes them: the dimensions, status, value; "
                      "with several --dims a folder of one <table>.csv per table): "
                      "what it suppressed stays suppressed, what it published with today's value is never a "
                      "secondary suppression, so that a reader of both releases learns nothing from their difference")
    supp.add_argument("--out", help="CSV file to write (the publishable columns unless --audit); with several --dims "
                      "a folder")
    _add_warehouse_options(supp)
    supp.set_defaults(run=run)


def _add_pattern_options(supp) -> None:
    """How the secondary suppressions are chosen and published."""
    supp.add_argument("--method", default=DEFAULT_METHOD, choices=METHODS,
                      help="secondary suppression: heuristic (LPs over the groups of suppressed cells, then "
                      "pruned), optimal (least total cost by mixed-integer programming, up to --time-limit), "
                      "hypercube (a hypercube of cells around every primary cell, then pruned: the fastest, the "
                      "fewest cells on most tables, and it scales to tables of 10^5 cells and more) or gauss "
                      "(GaussSuppression's elimination, completed for the protection intervals, then pruned; its "
                      "time grows with the square of the cells, for tables up to about 10^4 cells) or auto (the "
                      f"default: hypercube from {AUTO_HYPERCUBE_CELLS:,} cells, heuristic below; count tables of "
                      f"up to {AUTO_OPTIMAL_CELLS:,} cells, or {AUTO_OPTIMAL_PLANE_CELLS:,} in two dimensions, "
                      "by the optimal method where it proves its optimum in a fixed number of rounds)")
    supp.add_argument("--cost", default="value", choices=("value", "freq", "cells"),
                      help="what the secondary suppressions minimise: their total value (default), total frequency "
                      "or number of cells")
    supp.add_argument("--prefer-low-levels", action="store_true",
                      help="multiply each cell's cost by 10^k, k = the number of dimensions along which it is a "
                      "total, so that totals are kept where possible (the minimum is then of that weighted cost)")
    supp.add_argument("--time-limit", metavar="SECONDS",
                      help="CPU seconds for --method optimal (default 60; 0: the heuristic's pattern at once; inf: no "
                      "limit); at the limit the heuristic completes the pattern, with a warning")
    supp.add_argument("--mark", default="x", help="published text of a suppressed cell (e.g. x or .; "
                      "not a number, which would read as a published value)")
    supp.add_argument("--publish-intervals", action="store_true",
                      help="publish suppressed cells as the interval anyone can derive from the published cells "
                      "(lower-upper, >=lower where unbounded) instead of --mark")


def _add_warehouse_options(supp) -> None:
    warehouse = supp.add_argument_group(
        "in the warehouse (--target)", "between two dbt selections: read the cell table of suppression_primary and "
        "the relations of suppression_constraints through the dbt profile, write the pattern (and its LP audit) "
        "back in one transaction")
    warehouse.add_argument("--target", help="the dbt target to connect to (postgres, duckdb or spark of method session)")
    add_profile_options(warehouse, "")
    warehouse.add_argument("--cells", metavar="SCHEMA.TABLE", help="the cell table (suppression_primary)")
    warehouse.add_argument("--relations", metavar="SCHEMA.TABLE", help="the relations (suppression_constraints)")
    warehouse.add_argument("--pattern", metavar="SCHEMA.TABLE", help="the pattern table to write (replaced)")
    warehouse.add_argument("--audit-table", metavar="SCHEMA.TABLE", help="the LP audit table to write (replaced)")
    warehouse.add_argument("--magnitude", action="store_true", help="the cells' values are sums of a value column")


def run(args: argparse.Namespace) -> int:
    from sdc.suppression.pipeline import (
        DEFAULT_TIME_LIMIT,
        check_mark,
        check_time_limit,
        suppress_table,
    )

    if args.time_limit is not None and args.method != "optimal":
        raise SdcError("--time-limit applies to --method optimal only")
    check_mark(args.mark)  # before a warehouse is opened
    time_limit = DEFAULT_TIME_LIMIT if args.time_limit is None else check_time_limit(args.time_limit)
    if args.target:
        return _run_in_warehouse(args, time_limit)
    missing = [flag for flag, given in (("--input", args.input), ("--out", args.out)) if not given]
    if missing:
        raise SdcError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required (or --target for "
                       "a warehouse's cell table)")
    if len(args.dims) > 1:
        return _run_linked(args, time_limit)
    # the library warns (warnings.warn); here a warning is one line on stderr, without file and line
    with _warnings_on_stderr():
        counts = suppress_table(
            args.input, split(args.dims[0]), args.rule, args.out, hierarchy_path=args.hierarchy, value=args.value,
            holding=args.holding, preset=args.preset, method=args.method, cost=args.cost, mark=args.mark,
            publish_intervals=args.publish_intervals, prefer_low_levels=args.prefer_low_levels,
            time_limit=time_limit, audit=args.audit, a_priori=args.a_priori,
        )
    print(f"wrote {sum(counts.values())} cells to {args.out}: " + _counts(counts) + _AUDIT_NOTE * args.audit)
    return 0


_AUDIT_NOTE = " (audit layout with the true values: do not publish)"


def _counts(counts: dict) -> str:
    return ", ".join(f"{v} {k}" for k, v in counts.items())


def _run_linked(args: argparse.Namespace, time_limit: float) -> int:
    from sdc.suppression.linked_tables import suppress_linked_tables

    tables = [split(dims) for dims in args.dims]
    with _warnings_on_stderr():
        written = suppress_linked_tables(
            args.input, tables, args.rule, args.out, hierarchy_path=args.hierarchy, value=args.value,
            holding=args.holding, preset=args.preset, method=args.method, cost=args.cost, mark=args.mark,
            publish_intervals=args.publish_intervals, prefer_low_levels=args.prefer_low_levels,
            time_limit=time_limit, audit=args.audit, a_priori=args.a_priori)
    print(f"wrote {len(written)} tables to {args.out}, protected by one pattern" + _AUDIT_NOTE * args.audit + ":")
    for name, counts in written.items():
        print(f"  {name}.csv: {sum(counts.values())} cells: {_counts(counts)}")
    return 0


class _Progress(logging.Handler):
    """The progress of the secondary suppression (log records of sdc.suppression): on a terminal one line that
    is rewritten (a bar where the record says how far it is), in a log plain lines with the seconds so far,
    from EVERY seconds on and at most one per EVERY seconds."""

    EVERY = 5.0  # seconds: a solve shorter than that prints nothing, a longer one a line at most this often

    def __init__(self, stream):
        super().__init__(logging.INFO)
        self.stream, self.started, self.shown = stream, time.monotonic(), False
        self.terminal = stream.isatty()
        self.next_line = self.started + self.EVERY

    def emit(self, record: logging.LogRecord) -> None:
        now = time.monotonic()
        seconds, message = now - self.started, record.getMessage()
        if not self.terminal:
            if now >= self.next_line:
                print(f"sdc suppress: {seconds:6.1f} s {message}", file=self.stream, flush=True)
                self.next_line = now + self.EVERY
            return
        done, total = getattr(record, "done", None), getattr(record, "total", None)
        bar = ""
        if done is not None and total:
            filled = int(20 * min(1.0, done / total))
            bar = f"[{'#' * filled}{'.' * (20 - filled)}] "
        self.stream.write(f"\r\033[K{bar}{message} ({seconds:.0f} s)")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
        super().close()


@contextlib.contextmanager
def _progress():
    logger = logging.getLogger("sdc.suppression")
    handler, level = _Progress(sys.stderr), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()


@contextlib.contextmanager
def _warnings_on_stderr():
    """The library's warnings (time limit, skipped integer checks) as one line each on stderr."""
    from sdc.suppression.optimal import TimeLimitWarning
    from sdc.suppression.secondary import IntegerCheckWarning

    with warnings.catch_warnings(record=True) as caught, _progress():
        warnings.simplefilter("always", TimeLimitWarning)
        warnings.simplefilter("always", IntegerCheckWarning)
        try:
            yield
        finally:
            for warning in caught:
                print(f"sdc suppress: warning: {str(warning.message).splitlines()[0]}", file=sys.stderr)


def _run_in_warehouse(args: argparse.Namespace, time_limit: float) -> int:
    from sdc.suppression.database import suppress_tables
    from sdc.warehouse.profiles import connect_target

    given = [flag for flag, value in (("--input", args.input), ("--out", args.out), ("--rule", args.rule),
                                      ("--hierarchy", args.hierarchy), ("--value", args.value),
                                      ("--holding", args.holding), ("--audit", args.audit)) if value]
    if given:
        raise SdcError(f"{', '.join(given)}: the warehouse's cell table has its rules and values already "
                       "(suppression_cells, suppression_primary); with --target give --cells, --relations, --pattern")
    if len(args.dims) > 1:
        raise SdcError("--target protects one cell table (one --dims); several --dims (linked tables) work on "
                       "--input")
    missing = [flag for flag, value in (("--cells", args.cells), ("--relations", args.relations),
                                        ("--pattern", args.pattern)) if not value]
    if missing:
        raise SdcError(f"--target needs {', '.join(missing)}")
    with connect_target(*profile(args), args.target) as target:
        result = suppress_tables(target, cells=args.cells, relations=args.relations, pattern=args.pattern,
                                 audit=args.audit_table, dims=split(args.dims[0]), magnitude=args.magnitude,
                                 method=args.method, cost=args.cost, mark=args.mark,
                                 publish_intervals=args.publish_intervals, prefer_low_levels=args.prefer_low_levels,
                                 time_limit=time_limit, a_priori=args.a_priori)
    print(f"wrote {sum(result['statuses'].values())} cells to {args.pattern}: "
          + ", ".join(f"{v} {k}" for k, v in sorted(result["statuses"].items()))
          + (f"; audit in {args.audit_table}: {result['unprotected']} sensitive cells unprotected" if args.audit_table else ""))
    return 1 if result["unprotected"] else 0
