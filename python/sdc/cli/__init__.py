"""Command line: a thin shell over the Python API, one module per command (its ``add_parser`` and ``run``).
Errors become one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import warnings

from sdc import __version__
from sdc.errors import SdcError, SdcWarning
from sdc.warehouse.scratch import own_scratch_folders, remove_scratch_folders_made_since

from sdc.cli import audit, ckm, demo, load, microaggregate, ptable, publish, release, report, sas_anon, sql, suppress

# in the order of sdc --help
COMMANDS = (ptable, load, ckm, sql, suppress, sas_anon, microaggregate, audit, publish, release, report, demo)
# Commands that read or write confidential data (microdata, record keys, original values): the files and
# folders they create are for their owner only.
CONFIDENTIAL_COMMANDS = ("load", "ckm", "sql", "suppress", "sas-anon", "microaggregate", "audit")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

__all__ = ["build_parser", "main"]


class Stopped(Exception):
    """SIGTERM or SIGHUP: raised in the main thread so that temporary files are removed and dbt is ended."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of sdc with every command and sub-command (the reference in docs/ is generated from it)."""
    parser = argparse.ArgumentParser(prog="sdc", description="Statistical disclosure control in the data warehouse.")
    parser.add_argument("--version", action="version", version=f"sdc {__version__}", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    umask = os.umask(0o077) if args.command in CONFIDENTIAL_COMMANDS else None
    in_main_thread = threading.current_thread() is threading.main_thread()  # only there can signals be handled
    previous = {sig: signal.signal(sig, _stop) for sig in STOP_SIGNALS} if in_main_thread else {}
    scratch_before = own_scratch_folders()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SdcWarning)
            code = args.run(args)
        for w in caught:  # other warnings as Python shows them
            if not issubclass(w.category, SdcWarning):
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        for message in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, SdcWarning)):
            print(f"sdc {args.command}: warning: {message}", file=sys.stderr)
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
        if in_main_thread:  # a second signal must not interrupt the clean-up
            signal.pthread_sigmask(signal.SIG_BLOCK, (*STOP_SIGNALS, signal.SIGINT))
        try:
            remove_scratch_folders_made_since(scratch_before)
        finally:
            if in_main_thread:
                try:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, (*STOP_SIGNALS, signal.SIGINT))
                except (Stopped, KeyboardInterrupt):
                    pass  # a second signal during the clean-up: this one already stops the command
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
