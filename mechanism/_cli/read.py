"""``mechanism read INPUT... --out FILE.parquet``: convert trajectories to the canonical table."""
from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path

import polars as pl

from mechanism._cli._common import add_reading_options, atomic_file, read_quietly, reading_kwargs, terminal_safe
from mechanism.core.errors import InputError, ReadReport
from mechanism.core.names import display_name, escape_control, visible_name
from mechanism.readers import FORMATS, input_paths

HELP = "read trajectory files (any supported format) into the canonical parquet table"

_SHOW_REASONS = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="trajectory files or folders")
    parser.add_argument("--format", default="auto", choices=("auto", *FORMATS),
                        help="input format (default: detect per file)")
    parser.add_argument("--arm", default=None, help="arm name for every row (default: the file's arm field, "
                        "else the file name)")
    parser.add_argument("--errors", default="raise", choices=("raise", "skip"),
                        help="stop at the first bad record (raise) or leave bad records out and list them (skip)")
    add_reading_options(parser)
    parser.add_argument("--out", required=True, type=Path, help="the parquet file to write")
    parser.add_argument("--quiet", action="store_true", help="print nothing")


def summary(runs: pl.DataFrame, rep: ReadReport) -> str:
    """What a read found, as lines of text."""
    lines = []
    for source, fmt in rep.formats.items():
        lines.append(f"{escape_control(source)}: format {fmt}")  # a newline in a file name forges no line
    filtered = f", left out by --where {rep.rows_filtered}" if rep.rows_filtered else ""
    lines.append(f"rows read {rep.rows_in}, kept {rep.rows_kept}, skipped {len(rep.skipped)}{filtered}")
    if runs.height:
        per_arm = (runs.group_by("arm", maintain_order=True)
                   .agg(pl.len().alias("rows"), pl.col("question_id").n_unique().alias("questions"),
                        pl.col("n_rounds").mean().alias("mean_rounds"), pl.col("correct").mean().alias("correct"))
                   .sort("arm"))
        # arm names come from the input: escaped (a newline must not forge a line) and cut short
        shown = [display_name(visible_name(a), max_length=60, mathtext=False) for a in per_arm["arm"]]
        width = max(3, *(len(a) for a in shown))
        lines.append(f"{'arm':<{width}}  {'rows':>7}  {'questions':>9}  {'mean rounds':>11}  {'correct':>7}")
        for name, r in zip(shown, per_arm.iter_rows(named=True)):
            lines.append(f"{name:<{width}}  {r['rows']:>7}  {r['questions']:>9}  {r['mean_rounds']:>11.2f}  "
                         f"{r['correct']:>7.1%}")
    if rep.skipped_files:
        lines.append(f"skipped {len(rep.skipped_files)} input(s) with no records to read:")
        for s in rep.skipped_files[:_SHOW_REASONS]:
            lines.append(f"  {s}")
        if len(rep.skipped_files) > _SHOW_REASONS:
            lines.append(f"  ... and {len(rep.skipped_files) - _SHOW_REASONS} more")
    if rep.skipped:
        reasons = Counter(s.reason.split(", first seen")[0] if s.reason.startswith("duplicate") else s.reason
                          for s in rep.skipped)
        lines.append("skipped, by reason:")
        for reason, count in reasons.most_common(_SHOW_REASONS):
            lines.append(f"  {count} x {reason}")
        if len(reasons) > _SHOW_REASONS:
            lines.append(f"  ... and {len(reasons) - _SHOW_REASONS} more reasons")
        lines.append("first skipped records:")
        for s in rep.skipped[:_SHOW_REASONS]:
            lines.append(f"  {s}")
    for note in rep.notes:
        lines.append(f"note: {' '.join(note.split())}")
    for warning in rep.warnings:
        lines.append(f"warning: {' '.join(warning.split())}")
    return "\n".join(lines)


def _refuse_an_input_as_out(inputs: list[str], out: Path) -> None:
    """``--out`` naming one of the inputs (a folder's file included) would replace what is read,
    and with a filter that keeps nothing, lose it."""
    if not os.path.lexists(out):
        return
    target = os.path.realpath(out)
    for path in input_paths(inputs, skipped=[]):  # entries that are no files are the read's to report
        if os.path.realpath(path) == target:
            raise InputError(f"`--out` {str(out)!r} is one of the inputs: write the table to another file",
                             field="out")


def run(args: argparse.Namespace) -> int:
    if args.out.suffix.lower() not in (".parquet", ".pq"):
        raise InputError(f"`--out` must name a .parquet file, got {str(args.out)!r}", field="out")
    _refuse_an_input_as_out(args.inputs, args.out)
    runs, rep = read_quietly(args.inputs, format=args.format, arm=args.arm, errors=args.errors, progress=None,
                             **reading_kwargs(args))
    with atomic_file(args.out) as tmp:  # a killed or failed run leaves no partial parquet at --out
        runs.write_parquet(tmp)
    if not args.quiet:
        print(terminal_safe(summary(runs, rep)))
        print(terminal_safe(f"wrote {runs.height} rows to {args.out}"))
    return 0
