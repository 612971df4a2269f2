"""``mechanism read INPUT... --out FILE.parquet``: convert trajectories to the canonical table."""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import polars as pl

from mechanism.commands._common import parse_columns, terminal_safe  # noqa: F401  (parse_columns: re-exported)
from mechanism.errors import InputError, ReadReport
from mechanism.readers import FORMATS, read

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
    parser.add_argument("--columns", action="append", default=[], metavar="CANONICAL=FIELD[,...]",
                        help="map canonical names to the file's fields (repeatable, or comma-separated), "
                             "e.g. --columns text=response,gold=golden_answers")
    parser.add_argument("--out", required=True, type=Path, help="the parquet file to write")
    parser.add_argument("--quiet", action="store_true", help="print nothing")


def summary(runs: pl.DataFrame, rep: ReadReport) -> str:
    """What a read found, as lines of text."""
    lines = []
    for source, fmt in rep.formats.items():
        lines.append(f"{source}: format {fmt}")
    lines.append(f"rows read {rep.rows_in}, kept {rep.rows_kept}, skipped {len(rep.skipped)}")
    if runs.height:
        per_arm = (runs.group_by("arm", maintain_order=True)
                   .agg(pl.len().alias("rows"), pl.col("question_id").n_unique().alias("questions"),
                        pl.col("n_rounds").mean().alias("mean_rounds"), pl.col("correct").mean().alias("correct"))
                   .sort("arm"))
        width = max(3, *(len(a) for a in per_arm["arm"]))
        lines.append(f"{'arm':<{width}}  {'rows':>7}  {'questions':>9}  {'mean rounds':>11}  {'correct':>7}")
        for r in per_arm.iter_rows(named=True):
            lines.append(f"{r['arm']:<{width}}  {r['rows']:>7}  {r['questions']:>9}  {r['mean_rounds']:>11.2f}  "
                         f"{r['correct']:>7.1%}")
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
        lines.append(f"note: {note}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    columns = parse_columns(args.columns)
    if args.out.suffix.lower() not in (".parquet", ".pq"):
        raise InputError(f"`--out` must name a .parquet file, got {str(args.out)!r}", field="out")
    runs, rep = read(args.inputs, format=args.format, arm=args.arm, columns=columns or None,
                     errors=args.errors, report=True, progress=None)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    runs.write_parquet(args.out)
    if not args.quiet:
        print(terminal_safe(summary(runs, rep)))
        print(f"wrote {runs.height} rows to {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run as: mechanism read ...")
