"""``mechanism strategies fit|apply``: find strategies, save the space, apply it to new runs.

- ``mechanism strategies fit INPUT... --out SPACE`` fits a strategy space and writes it
  (plus ``strategies.csv``, ``labels.parquet`` and ``shares.csv``) to the folder SPACE.
- ``mechanism strategies apply SPACE INPUT... --out DIR`` assigns new trajectories to the
  saved strategies without refitting and writes ``labels.parquet`` and ``shares.csv``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from mechanism.commands._common import add_input_arguments, read_inputs
from mechanism.errors import InputError

HELP = "find tool-use strategies (fit a strategy space) or assign new runs to saved ones (apply)"


def _input_args(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--cache-dir", type=Path, default=None, help="embedding cache folder")
    parser.add_argument("--quiet", action="store_true", help="print nothing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    fit = sub.add_parser("fit", help="fit a strategy space on trajectories and save it")
    fit.add_argument("--out", required=True, type=Path, help="folder to save the space in")
    fit.add_argument("--seed", type=int, default=0, help="random_state (default 0)")
    fit.add_argument("--embedder", default=None,
                     help="sentence-transformers model name or path, or hashing-<n> (default all-MiniLM-L6-v2)")
    fit.add_argument("--method", default="agglomerative", choices=("agglomerative", "kmeans", "hdbscan"))
    fit.add_argument("--resolution", type=float, default=0.75,
                     help="largest distance between two members of a strategy (agglomerative)")
    _input_args(fit)
    apply = sub.add_parser("apply", help="assign trajectories to a saved space's strategies")
    apply.add_argument("space", type=Path, metavar="SPACE", help="folder written by `strategies fit`")
    apply.add_argument("--out", required=True, type=Path, help="folder for labels.parquet and shares.csv")
    _input_args(apply)


def _read(args: argparse.Namespace) -> pl.DataFrame:
    runs = read_inputs(args)
    if runs.height == 0:
        raise InputError("no trajectories in the input", source=", ".join(map(str, args.inputs)))
    return runs


def shares(labels: pl.DataFrame) -> pl.DataFrame:
    """Share of each strategy per arm (``arm, strategy, n, share``), from an ``assign`` table."""
    return (labels.group_by("arm", "strategy").agg(pl.len().cast(pl.Int64).alias("n"))
            .with_columns((pl.col("n") / pl.col("n").sum().over("arm")).alias("share"))
            .sort("arm", "strategy"))


def csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with list columns joined into "; "-separated text, since CSV holds no nesting."""
    return frame.with_columns([pl.col(c).cast(pl.List(pl.String)).list.join("; ")
                               for c, dtype in frame.schema.items() if isinstance(dtype, pl.List)])


def write_outputs(space, runs: pl.DataFrame, out: Path, *, arms: list[str] | None = None,
                  title: str = "strategies") -> str:
    """Figures and tables of a fitted space on ``runs``, as the analyses and the demo write them.

    Writes the ``strategy_map``, ``strategy_shares`` and ``strategy_table`` figures (PNG and
    PDF), ``strategies.csv`` (the description of every strategy) and ``shares.csv`` (share of
    each strategy per arm) to ``out``.

    Parameters
    ----------
    space
        A fitted :class:`~mechanism.strategy_space.StrategySpace`.
    runs
        Canonical table, assigned to the space's strategies without refitting.
    out
        Output folder (created).
    arms
        Arms to show, in order (default: every arm, sorted).
    title
        First words of the summary.

    Returns
    -------
    str
        A text summary: the ten largest strategies with their success rate and share per arm.
    """
    from mechanism.plots.strategies import strategy_label, strategy_map, strategy_shares, strategy_table
    from mechanism.plots.style import close, save_figure

    arms = arms if arms is not None else sorted(runs["arm"].unique().to_list())
    out.mkdir(parents=True, exist_ok=True)
    for stem, fig in (("strategy_map", strategy_map(space, runs, arms=arms)),
                      ("strategy_shares", strategy_shares(space, runs, arms=arms)),
                      ("strategy_table", strategy_table(space))):
        save_figure(fig, out, stem)
        close(fig)
    desc = space.describe()
    csv_ready(desc).write_csv(out / "strategies.csv")
    table = shares(space.assign(runs).drop("rendering", "moves"))
    table.write_csv(out / "shares.csv")
    lines = [f"{title}: {runs.height:,} trajectories, {space.n_strategies_} strategies "
             f"(embedder {space.embedding_model_}, method {space.method}, resolution {space.resolution})"]
    for r in desc.head(10).iter_rows(named=True):
        per_arm = ", ".join(f"{a} {table.filter((pl.col('arm') == a) & (pl.col('strategy') == r['strategy']))['share'].sum():.1%}"
                            for a in arms)
        lines.append(f"  {strategy_label(r['strategy'], r['typical_moves'], r['typical_member'], name=r.get('name')):<40} n={r['size']:>6,}  "
                     f"success {r['success_rate']:.2f}  shares: {per_arm}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from mechanism.strategy_space import StrategySpace

    progress = not args.no_progress and None
    if args.action == "fit":
        runs = _read(args)
        space = StrategySpace(embedder=args.embedder, method=args.method, resolution=args.resolution,
                              random_state=args.seed, cache_dir=args.cache_dir, progress=progress).fit(runs)
        space.save(args.out)
        labels = runs.select("arm", "question_id", "sample_id").with_columns(
            pl.Series("strategy", space.labels_, dtype=pl.Int64))
        csv_ready(space.describe()).write_csv(args.out / "strategies.csv")
        labels.write_parquet(args.out / "labels.parquet")
        shares(labels).write_csv(args.out / "shares.csv")
        if not args.quiet:
            print(f"{space.n_strategies_} strategies from {runs.height} trajectories; "
                  f"space saved to {args.out}", file=sys.stderr)
        return 0
    space = StrategySpace.load(args.space, cache_dir=args.cache_dir, progress=progress)
    runs = _read(args)
    labels = space.assign(runs).drop("rendering", "moves")
    args.out.mkdir(parents=True, exist_ok=True)
    labels.write_parquet(args.out / "labels.parquet")
    shares(labels).write_csv(args.out / "shares.csv")
    if not args.quiet:
        n_out = int(labels["outlier"].sum())
        print(f"{runs.height} trajectories assigned to {space.n_strategies_} saved strategies "
              f"({n_out} outliers); written to {args.out}", file=sys.stderr)
    return 0
