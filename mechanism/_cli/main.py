"""The ``mechanism`` command. Each subcommand lives in ``mechanism/_cli/<name>.py``, is imported
here by name (so the import graph can be traced) and
exposes ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.

Every input error becomes one line on stderr and exit status 2, never a traceback; a failing
command prints that line alone (its warnings and notes are printed only when it succeeds).
"""
from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from mechanism._cli import (
    demo,
    integration,
    passkt,
    read,
    report,
    reweighting,
    serve_sim,
    simulate,
    strategies,
    swap,
    track,
)
from mechanism._cli._common import cli_message, option_flags, terminal_safe
from mechanism.core.errors import MechanismError, one_line

# in the order `mechanism --help` lists them
COMMANDS = {"demo": demo, "report": report, "read": read, "simulate": simulate, "passkt": passkt,
            "strategies": strategies, "reweighting": reweighting, "integration": integration, "track": track,
            "serve-sim": serve_sim, "swap": swap}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mechanism",
        description="What did reinforcement learning do to an LLM agent? "
                    "PASS@(k,T), strategy spaces and reweighting from trajectories.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run, _flags=option_flags(command))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    # lines for stderr held until the command succeeds: a failing command prints one line, its error
    args._pending = []
    with warnings.catch_warnings():  # restored on return: a notebook calling main() keeps its own hook
        # a warning from the library is one line on the terminal, not a file name and source line
        warnings.showwarning = lambda message, category, *_args, **_kw: args._pending.append(
            terminal_safe(one_line(f"mechanism {args.command}: warning: {message}")))
        status = _run(args)
    if status == 0:
        for line in args._pending:
            print(line, file=sys.stderr)
    return status


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args._run(args) or 0)
    except MechanismError as exc:
        # the library names its parameters; the command line names the flags they came from
        print(terminal_safe(one_line(f"mechanism {args.command}: error: {cli_message(exc, args)}")), file=sys.stderr)
        return 2
    except MemoryError:  # one line, not a traceback from wherever the allocation failed
        print(f"mechanism {args.command}: error: out of memory (split the input, or read it with "
              "mechanism.analysis.parallel.read_shards)", file=sys.stderr)
        return 2
    except OSError as exc:  # an output path that cannot be written (not a folder, no permission, disk full)
        where = f": {' '.join(str(exc.filename).split())}" if exc.filename is not None else ""
        text = " ".join(str(exc.strerror or exc).split())
        print(terminal_safe(one_line(f"mechanism {args.command}: error: {text}{where}")), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mechanism: interrupted", file=sys.stderr)
        return 130
    except BaseException as exc:  # a library's panic (polars, pyo3) derives from BaseException
        if type(exc).__name__ != "PanicException":
            raise
        print(terminal_safe(one_line(f"mechanism {args.command}: error: a library failed on this input "
                                     f"(polars panic: {exc})", limit=500)), file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
