"""Arguments and input handling that every analysis command shares."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT..., ``--format``, ``--arm``, ``--errors`` and ``--columns``, as ``mechanism read`` takes them."""
    from mechanism.readers import FORMATS

    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="trajectory files or folders")
    parser.add_argument("--format", default="auto", choices=("auto", *FORMATS),
                        help="input format (default: detect per file)")
    parser.add_argument("--arm", default=None, help="arm name for files that have none")
    parser.add_argument("--errors", default="raise", choices=("raise", "skip"),
                        help="stop at the first bad record (raise, default) or skip and report bad records")
    parser.add_argument("--columns", action="append", default=[], metavar="CANONICAL=FIELD[,...]",
                        help="map canonical names to the file's fields (repeatable, or comma-separated), "
                             "e.g. --columns text=response,gold=golden_answers")


def add_embedding_arguments(parser: argparse.ArgumentParser) -> None:
    """``--cache-dir`` and ``--no-progress``, for every command that embeds trajectories."""
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="embedding and segmentation cache folder (reused across calls)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def progress_flag(args: argparse.Namespace) -> bool | None:
    """``False`` under ``--no-progress``, else ``None`` (bars only when stderr is a terminal)."""
    return False if getattr(args, "no_progress", False) else None


def parse_columns(items: list[str]) -> dict[str, str]:
    """``--columns`` entries (``canonical=field``, repeatable or comma-separated) as a dict."""
    from mechanism.errors import InputError

    out = {}
    for item in (part for entry in items for part in entry.split(",") if part.strip()):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"`--columns` entries look like canonical=field, got {item!r}", field="columns")
        out[key.strip()] = value.strip()
    return out


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="output folder (created if missing)")


def add_bootstrap_arguments(parser: argparse.ArgumentParser) -> None:
    """``--ci``, ``--n-boot``, ``--seed`` and ``--no-figures``."""
    parser.add_argument("--ci", type=float, default=0.95, help="bootstrap interval level (default 0.95)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates over questions (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every resampling (default 0)")
    parser.add_argument("--no-figures", action="store_true", help="write tables only")


def read_inputs(args: argparse.Namespace) -> pl.DataFrame:
    """Read the command's inputs; under ``--errors skip`` say on stderr what was left out."""
    from mechanism.readers import read

    columns = parse_columns(getattr(args, "columns", None) or []) or None
    runs, report = read(args.inputs, format=args.format, arm=args.arm, columns=columns, errors=args.errors,
                        report=True, progress=progress_flag(args))
    if report.skipped:
        print(f"skipped {len(report.skipped)} of {report.rows_in} records:", file=sys.stderr)
        for record in report.skipped[:10]:
            print(f"  {record}", file=sys.stderr)
        if len(report.skipped) > 10:
            print(f"  ... and {len(report.skipped) - 10} more", file=sys.stderr)
    return runs


def terminal_safe(text: str) -> str:
    """``text`` with control characters escaped: arm names, answers and queries come from the
    input, and an escape sequence planted there must not reach the terminal."""
    return "".join(ch if ch in "\n\t" or ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)
