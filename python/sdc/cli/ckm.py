"""sdc ckm: one frequency (or magnitude) table straight from a microdata file, by the warehouse's SQL."""

from __future__ import annotations

import argparse

from sdc.conventions import WEIGHTED_COUNT_METHODS
from sdc.errors import SdcError

from sdc.cli._common import digits, split


def add_parser(commands) -> None:
    ckm = commands.add_parser(
        "ckm",
        help="protect one frequency table straight from a microdata file (same SQL as the warehouse)",
        description="Counts per cell of --dims with every subtotal, perturbed by the Cell Key Method. "
        "One row per cell; totals carry the root code (Total, or the hierarchy's root).",
    )
    ckm.add_argument("--input", required=True, help="microdata (.csv, .tsv, .txt or .parquet)")
    ckm.add_argument("--dims", required=True, help="comma-separated dimension columns")
    ckm.add_argument("--hierarchy", help="hierarchy CSV: dimension,code,parent (or dim,level,name with @ levels)")
    ckm.add_argument("--count-var", help="0/1 column to count (default: every record)")
    ckm.add_argument("--record-key", required=True, help="column with the record keys")
    keys = ckm.add_mutually_exclusive_group(required=True)
    keys.add_argument("--key-digits", type=int, help="decimals of the record keys: M = 10^digits")
    keys.add_argument("--modulus", type=int, help="integer record keys 0..M-1 with this M (ONS: 256 or 4096)")
    ckm.add_argument("--ptable", help="perturbation table file (any format sdc ptable imports); with --value: the "
                     "magnitude ptable (default: the one --params names)")
    _add_magnitude_options(ckm)
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
    ckm.add_argument("--digits", type=digits, metavar="N", default="default",
                     help="round the published magnitudes (value, weighted_value, weighted_count) to N decimals, "
                     "negative N to tens, hundreds, ... (after the noise; default 0: whole units, as the dbt macro "
                     "ckm_published; 'none': unrounded)")
    ckm.add_argument("--out", required=True, help="CSV file to write")
    ckm.add_argument("--audit", action="store_true", help="also write original, cell_key and noise (never publish these)")
    ckm.set_defaults(run=run)


def _add_magnitude_options(ckm) -> None:
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


def run(args: argparse.Namespace) -> int:
    if args.value or (args.params and not args.weight):
        return _run_magnitude(args)
    if not args.ptable:
        raise SdcError("--ptable is required (the count perturbation table)")
    if args.weight and args.weighted_count == "magnitude" and not args.params:
        raise SdcError("--weight gives weighted_count, the sum of the weights perturbed by the magnitude method: "
                       "give its parameters as --params FILE.yml (or --weighted-count mean_weight)")
    if args.weight and args.weighted_count == "mean_weight" and args.params:
        raise SdcError("--weighted-count mean_weight scales the perturbed count: it takes no --params")
    from sdc.ckm.counts import protect_table

    cells = protect_table(
        args.input, split(args.dims), args.record_key, args.key_digits, args.ptable, args.out,
        hierarchy_path=args.hierarchy, count_var=args.count_var, audit=args.audit, totals=args.totals,
        modulus=args.modulus, threshold=args.threshold, complete=not args.no_empty_cells, reuse_from=args.reuse_from,
        weight=args.weight, weighted_count=args.weighted_count, params=args.params if args.weight else None,
        digits=args.digits,
    )
    _print_written(args, cells)
    return 0


def _run_magnitude(args: argparse.Namespace) -> int:
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
    cells = protect_sum_table(args.input, split(args.dims), args.out, value=args.value, weight=args.weight,
                              params=args.params, ptable=args.ptable, record_key=args.record_key, modulus=modulus,
                              hierarchy=args.hierarchy, totals=args.totals, audit=args.audit,
                              complete=not args.no_empty_cells, digits=args.digits)
    _print_written(args, cells)
    return 0


def _print_written(args: argparse.Namespace, cells: int) -> None:
    print(f"wrote {cells} cells to {args.out}" + (" (with audit columns: do not publish)" if args.audit else ""))
