"""Strategy-space files: the description table, shares per arm, labels and the three figures."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from mechanism.analysis.shares import strategy_shares as question_weighted_shares
from mechanism.analysis.strategy_space import Placement, strategy_label
from mechanism.analysis.strategy_space import display_names as strategy_names  # noqa: F401 - the name analyses/example.ipynb uses
from mechanism.core.options import RandomState, check_ci
from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_table


def pooled_share_table(labels: pl.DataFrame) -> pl.DataFrame:
    """Share of each strategy among an arm's trajectories, pooled (``arm, strategy, n, share``),
    from a table with ``arm`` and ``strategy`` columns (e.g. an ``assign`` table).

    Every trajectory counts once, so a question with more samples weighs more: a description of
    one arm, not a comparison between arms. To compare arms (the design rule: questions weigh
    equally within an arm, with intervals), use :func:`mechanism.analysis.shares.strategy_shares`,
    as :func:`write_strategies` does.
    """
    return (labels.group_by("arm", "strategy").agg(pl.len().cast(pl.Int64).alias("n"))
            .with_columns((pl.col("n") / pl.col("n").sum().over("arm")).alias("share"))
            .sort("arm", "strategy"))


def csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with list columns joined into "; "-separated text, since CSV holds no nesting."""
    return frame.with_columns([pl.col(c).cast(pl.List(pl.String)).list.join("; ")
                               for c, dtype in frame.schema.items() if isinstance(dtype, pl.List)])


def description_text(space, table: pl.DataFrame, arms: Sequence[str], *, title: str,
                     n_rows: int, top: int = 10, described: pl.DataFrame | None = None) -> str:
    """The description table as text: the ``top`` largest strategies, success, size and share per
    arm (``table``: ``arm, strategy, share``); ``described`` is ``space.describe()`` when the caller has it."""
    desc = described if described is not None else space.describe()
    lines = [f"{title}: {n_rows:,} trajectories, {space.n_strategies_} strategies "
             f"(embedder {space.embedding_model_}, method {space.method}, resolution {space.resolution})"]
    share = {(r["arm"], r["strategy"]): r["share"] for r in table.iter_rows(named=True)}
    for r in desc.head(top).iter_rows(named=True):
        per_arm = ", ".join(f"{a} {share.get((a, r['strategy']), 0.0):.1%}" for a in arms)
        label = strategy_label(r["strategy"], r["typical_moves"], r["typical_member"], name=r.get("name"))
        lines.append(f"  {label:<40} "
                     f"n={r['size']:>6,}  success {r['success_rate']:.2f}  shares: {per_arm}")
    if desc.height > top:
        lines.append(f"  ... and {desc.height - top} smaller strategies (strategies.csv)")
    return "\n".join(lines)


@dataclass
class StrategyResults:
    """What the strategies section shows, computed once (:func:`analyse_strategies`): the fitted
    ``space``, the :class:`Placement` of the runs, ``described`` (``space.describe()``) and
    ``shares`` (each strategy's share per arm, questions weighted equally within the arm, with
    bootstrap intervals over questions: :func:`mechanism.strategy_shares`)."""

    space: Any
    placement: Placement
    described: pl.DataFrame
    shares: pl.DataFrame


def analyse_strategies(space, runs: pl.DataFrame, *, placement: Placement | None = None,
                       map_xy: bool = True, ci: float | None = 0.95, n_boot: int = 1000,
                       random_state: RandomState = 0) -> StrategyResults:
    """Place ``runs`` in a fitted space (unless ``placement`` is given), describe the space once
    and compute the question-weighted shares per arm, with intervals (``ci=None``: none)."""
    if placement is None or (map_xy and placement.map_xy is None):
        placement = space.place(runs, map_xy=map_xy)
    assigned = placement.assigned.drop("rendering", "moves")
    shares = question_weighted_shares(assigned, ci=check_ci(ci), n_boot=n_boot, random_state=random_state)
    return StrategyResults(space=space, placement=placement, described=space.describe(), shares=shares)


def write_strategies(results: StrategyResults, runs: pl.DataFrame, out: str | Path, *,
                     arms: Sequence[str] | None = None, title: str = "strategies", figures: bool = True,
                     colors: Mapping[str, str] | None = None) -> Section:
    """Figures and tables of a fitted space on ``runs``.

    Writes the ``strategy_map`` and ``strategy_shares`` figures (PNG and
    PDF), ``strategies.csv`` (the description of every strategy), ``labels.parquet`` (the
    strategy of every row) and ``shares.csv`` (share of each strategy per arm, questions
    weighted equally within the arm, with bootstrap intervals over questions) to ``out``.

    Parameters
    ----------
    results
        :func:`analyse_strategies` of ``runs``.
    runs
        Canonical table the results were computed on (the figures draw its rows).
    out
        Output folder (created).
    arms
        Arms to show, in order (default: every arm, sorted).
    title
        First words of the summary.
    figures
        Write the figures.
    colors
        Arm -> colour shared by the report's figures.

    Returns
    -------
    Section
        ``text`` is the description table: the ten largest strategies with their success
        rate and share per arm; ``results`` holds the :class:`Placement`; ``frames["shares"]`` the shares.
    """
    from mechanism.plots.strategies import plot_strategy_shares, strategy_map  # noqa: PLC0415 - matplotlib: only when a figure is drawn

    space, placement, desc, table = results.space, results.placement, results.described, results.shares
    out = Path(out)
    arms = list(arms) if arms is not None else sorted(runs["arm"].unique().to_list())
    out.mkdir(parents=True, exist_ok=True)
    assigned = placement.assigned.drop("rendering", "moves")
    section = Section(results=[placement])
    write_table(section, csv_ready(desc), out / "strategies.csv")
    write_table(section, table, out / "shares.csv")
    section.frames["shares"] = table
    write_table(section, assigned.select("arm", "question_id", "sample_id", "strategy", "distance", "outlier"),
                out / "labels.parquet")
    if figures:
        write_figures(section, out, [
            ("strategy_map", strategy_map(space, runs, arms=arms, assigned=placement.assigned, xy=placement.map_xy,
                                          described=desc)),
            ("strategy_shares", plot_strategy_shares(space, runs, arms=arms, assigned=placement.assigned,
                                                     shares=table, described=desc, colors=colors))])
        # the strategy table itself is a table of the page and of tables.tex (report.tables), not a picture
    section.text = description_text(space, table, arms, title=title, n_rows=runs.height, described=desc)
    return section
