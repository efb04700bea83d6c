"""sdc ptable: build, import, check or export a perturbation table (count or magnitude)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdc.conventions import NUMS_PTABLE_TYPES
from sdc.errors import SdcError
from sdc.ptable.formats import EXPORT_FORMATS, IMPORT_FORMATS, is_magnitude_ptable, read_ptable, write_ptable
from sdc.ptable.params import PTableParams
from sdc.ptable.table import PTable

from sdc.cli._common import booleans, floats, ints, scalar


def add_parser(commands) -> None:
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
        "--pstay", type=floats, default=[0.0], help="lower bound of the stay probability; one value or one per row"
    )
    build.add_argument("--mono", type=booleans, default=[True], help="true|false, or one per row (default true)")
    build.add_argument("--optim", type=ints, default=[1], help="1: variance <= V (default); 4: variance = V")
    build.add_argument(
        "--allow-lower-variance",
        action="store_true",
        help="lower the stay bound in 0.05 steps (up to 20 solves) and accept rows that miss V, with a warning",
    )
    _add_nums_options(pt)
    pt.add_argument("--import", dest="import_file", metavar="FILE", help="read a ptable made elsewhere")
    pt.add_argument(
        "--import-format", default="auto", choices=("auto",) + IMPORT_FORMATS, help="format of --import (default: from the header)"
    )
    pt.add_argument("--out", metavar="FILE", help="write the table here (replaced only on success)")
    pt.add_argument("--format", default="sdc", help=f"format of --out: {', '.join(EXPORT_FORMATS)} (default sdc)")
    pt.add_argument("--plot", metavar="FILE.png", help="write a heatmap of the transition matrix")
    pt.set_defaults(run=run)


def _add_nums_options(pt) -> None:
    nums = pt.add_argument_group("magnitude tables (as ptable::create_num_ptable)")
    nums.add_argument("--table", choices=("cnts", "nums"), default="cnts",
                      help="cnts: a count table (default); nums: a magnitude table (column type; noise in steps of 1/step)")
    nums.add_argument("--step", type=int, default=2, help="nums: noise values are multiples of 1/step (default 2)")
    nums.add_argument("--icat", type=ints, help="nums: the rows besides 0; must hold 1 and D (default: 1,D)")
    nums.add_argument("--type", dest="nums_type", default="all", choices=NUMS_PTABLE_TYPES,
                      help="nums: which cells the table serves: all (default), even/odd (parity), small_cells "
                      "(below the separation point)")
    nums.add_argument("--add-to", metavar="FILE",
                      help="nums: a magnitude ptable file of other types (e.g. all) that --out gets too, so that one "
                      "file holds all and small_cells")


def run(args: argparse.Namespace) -> int:
    _check_outputs(args)
    if (args.import_file and args.import_format == "auto" and args.table == "cnts"
            and is_magnitude_ptable(args.import_file)):
        args.table = "nums"  # what sdc ptable --table nums writes, read as it (its header has the column type)
    if args.table == "nums":
        return _run_nums(args)
    if args.add_to or args.icat:
        raise SdcError(f"{'--add-to' if args.add_to else '--icat'} is for magnitude tables: add --table nums")
    table, outcomes, title = _imported(args) if args.import_file else _built(args)
    _print_check_table(table, outcomes)
    if args.out:
        write_ptable(table, args.out, args.format)
        print(f"wrote {args.out} ({args.format})")
    if args.plot:
        from sdc.ptable.plot import plot_transition_matrix

        plot_transition_matrix(table, args.plot, title=f"{title}: P(j | i) in %")
        print(f"wrote {args.plot}")
    return 0


def _check_outputs(args: argparse.Namespace) -> None:
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


def _given(args: argparse.Namespace, *flags: str) -> list[str]:
    """Those of the flags (--D, --V, --add-to, --icat) that are set."""
    return [flag for flag in flags if getattr(args, flag.lstrip("-").replace("-", "_")) is not None]


def _missing_d_or_v(args: argparse.Namespace) -> None:
    missing = [flag for flag in ("--D", "--V") if flag not in _given(args, "--D", "--V")]
    if missing:
        raise SdcError(f"{' and '.join(missing)} required to build a ptable (or give --import FILE)")


def _refuse_with_import(given: list[str]) -> None:
    if given:
        raise SdcError(f"--import reads a finished table; {', '.join(given)} cannot be combined with it")


def _imported(args: argparse.Namespace) -> tuple[PTable, None, str]:
    _refuse_with_import(_given(args, "--D", "--V"))
    table, fmt, notes = read_ptable(args.import_file, args.import_format)
    print(f"imported {args.import_file} (format {fmt}): {len(table)} intervals, rows 0..{table.max_i}")
    for note in notes:
        print(f"note: {note}")
    return table, None, Path(args.import_file).name


def _built(args: argparse.Namespace) -> tuple[PTable, dict, str]:
    _missing_d_or_v(args)
    params = PTableParams(
        D=args.D, V=args.V, js=args.js, pstay=scalar(args.pstay), mono=scalar(args.mono), optim=scalar(args.optim)
    )
    from sdc.ptable.build import create_ptable  # scipy: half a second to import, for this command only

    built = create_ptable(params, allow_lower_variance=args.allow_lower_variance)
    title = f"ptable D={params.D} V={params.V} js={params.js}"
    print(f"{title}: {len(built.table)} intervals, rows 0..{built.table.max_i}")
    for warning in built.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return built.table, {o.i: o for o in built.rows}, title


def _run_nums(args: argparse.Namespace) -> int:
    from sdc.ptable.nums import read_nums_ptable, write_nums_ptable

    if args.format not in ("sdc", "tauargus"):
        raise SdcError(f"a magnitude ptable is written as sdc or tauargus, not --format {args.format}")
    if args.plot:
        raise SdcError("--plot draws count tables only")
    if args.import_file:
        _refuse_with_import(_given(args, "--D", "--V", "--add-to", "--icat"))
        tables = read_nums_ptable(args.import_file)
        print(f"imported {args.import_file}: magnitude ptable of types {', '.join(tables.tables)}")
    else:
        tables = _built_nums(args)
    print(f"{'type':>11} {'i':>4} {'mean':>11} {'variance':>10} {'sum':>10}")
    for kind, table in tables.tables.items():
        for i, mean, variance, total in table.row_stats():
            print(f"{kind:>11} {i:>4} {round(mean, 8) + 0.0:11.8f} {variance:10.6f} {total:10.8f}")
    if args.out:
        write_nums_ptable(tables, args.out, args.format)
        print(f"wrote {args.out} ({args.format})")
    return 0


def _built_nums(args: argparse.Namespace):
    from sdc.ptable.nums import NumsPTableParams, create_num_ptable, with_other_types

    _missing_d_or_v(args)
    if args.js or args.pstay != [0.0]:
        raise SdcError("--js and --pstay do not apply to magnitude tables (ptable ignores them): leave them out")
    params = NumsPTableParams(
        D=args.D, V=args.V, step=args.step, icat=args.icat, type=args.nums_type,
        mono=scalar(args.mono), optim=scalar(args.optim),
    )
    built = create_num_ptable(params, allow_lower_variance=args.allow_lower_variance)
    for warning in built.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    tables = with_other_types(built.table, params.type, args.add_to)
    print(f"magnitude ptable D={params.D} V={params.V} step={params.step} icat={','.join(map(str, params.rows))} "
          f"type={params.type}: {len(built.table.i)} intervals")
    return tables


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
