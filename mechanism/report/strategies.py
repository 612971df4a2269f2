"""Strategy-space files: the description table, shares per arm, labels and the three figures."""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_table
from mechanism.strategy_space import Placement, StrategySpace, fit_and_place  # noqa: F401  (re-exported here)


def place(space: StrategySpace, runs: pl.DataFrame, *, map_xy: bool = True) -> Placement:
    """:meth:`StrategySpace.place`: labels, coordinates and (with ``map_xy``) map positions of
    ``runs`` from one embedding of each row."""
    return space.place(runs, map_xy=map_xy)


def pooled_share_table(labels: pl.DataFrame) -> pl.DataFrame:
    """Share of each strategy among an arm's trajectories, pooled (``arm, strategy, n, share``),
    from a table with ``arm`` and ``strategy`` columns (e.g. an ``assign`` table).

    Every trajectory counts once, so a question with more samples weighs more: a description of
    one arm, not a comparison between arms. To compare arms (the design rule: questions weigh
    equally within an arm, with intervals), use :func:`mechanism.parallel.strategy_shares`,
    as :func:`write_strategies` does.
    """
    return (labels.group_by("arm", "strategy").agg(pl.len().cast(pl.Int64).alias("n"))
            .with_columns((pl.col("n") / pl.col("n").sum().over("arm")).alias("share"))
            .sort("arm", "strategy"))


def strategy_shares(labels: pl.DataFrame) -> pl.DataFrame:
    """Deprecated name of :func:`pooled_share_table`."""
    warnings.warn("`mechanism.report.strategy_shares` is deprecated; use `mechanism.report.pooled_share_table` "
                  "(pooled), or `mechanism.strategy_shares` to compare arms (questions weighted equally)",
                  DeprecationWarning, stacklevel=2)
    return pooled_share_table(labels)


def csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with list columns joined into "; "-separated text, since CSV holds no nesting."""
    return frame.with_columns([pl.col(c).cast(pl.List(pl.String)).list.join("; ")
                               for c, dtype in frame.schema.items() if isinstance(dtype, pl.List)])


def strategy_names(described: pl.DataFrame) -> dict[int, str]:
    """Display name of every strategy id (``S<id>: <typical moves>``), from ``describe()``;
    figures label points by the part before the colon and spell the rest out in a key."""
    from mechanism.plots.strategies import strategy_label

    member = "typical_member" if "typical_member" in described.columns else None
    out = {}
    for r in described.iter_rows(named=True):
        label = strategy_label(int(r["strategy"]), r.get("typical_moves"), r.get(member) if member else None,
                               name=r.get("name"))
        head, _, rest = label.partition(" ")
        out[int(r["strategy"])] = f"{head}: {rest}" if rest else head
    return out


def description_text(space, table: pl.DataFrame, arms: Sequence[str], *, title: str,  # noqa: ANN001
                     n_rows: int, top: int = 10, described: pl.DataFrame | None = None) -> str:
    """The description table as text: the ``top`` largest strategies, success, size and share per
    arm (``table``: ``arm, strategy, share``); ``described`` is ``space.describe()`` when the caller has it."""
    from mechanism.plots.strategies import strategy_label

    desc = described if described is not None else space.describe()
    lines = [f"{title}: {n_rows:,} trajectories, {space.n_strategies_} strategies "
             f"(embedder {space.embedding_model_}, method {space.method}, resolution {space.resolution})"]
    share = {(r["arm"], r["strategy"]): r["share"] for r in table.iter_rows(named=True)}
    for r in desc.head(top).iter_rows(named=True):
        per_arm = ", ".join(f"{a} {share.get((a, r['strategy']), 0.0):.1%}" for a in arms)
        lines.append(f"  {strategy_label(r['strategy'], r['typical_moves'], r['typical_member'], name=r.get('name')):<40} "
                     f"n={r['size']:>6,}  success {r['success_rate']:.2f}  shares: {per_arm}")
    if desc.height > top:
        lines.append(f"  ... and {desc.height - top} smaller strategies (strategies.csv)")
    return "\n".join(lines)


def write_strategies(space, runs: pl.DataFrame, out: str | Path, *,  # noqa: ANN001 - a fitted StrategySpace
                     arms: Sequence[str] | None = None, title: str = "strategies", figures: bool = True,
                     colors: Mapping[str, str] | None = None, placement: Placement | None = None,
                     described: pl.DataFrame | None = None, ci: float | None = 0.95, n_boot: int = 1000,
                     random_state: int = 0) -> Section:
    """Figures and tables of a fitted space on ``runs``.

    Writes the ``strategy_map`` and ``strategy_shares`` figures (PNG and
    PDF), ``strategies.csv`` (the description of every strategy), ``labels.parquet`` (the
    strategy of every row) and ``shares.csv`` (share of each strategy per arm, questions
    weighted equally within the arm, with bootstrap intervals over questions:
    :func:`mechanism.parallel.strategy_shares`) to ``out``.

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
    figures
        Write the figures.
    colors
        Arm -> colour shared by the report's figures.
    placement
        :func:`place` of ``runs``, when the caller has it already (nothing is embedded again).
    described
        ``space.describe()``, when the caller has it already.
    ci, n_boot, random_state
        Interval level (``None``: none), bootstrap replicates and seed of the shares' intervals.

    Returns
    -------
    Section
        ``text`` is the description table: the ten largest strategies with their success
        rate and share per arm; ``results`` holds the :class:`Placement`.
    """
    from mechanism.parallel import strategy_shares as question_weighted_shares
    from mechanism.plots.strategies import plot_strategy_shares, strategy_map

    out = Path(out)
    arms = list(arms) if arms is not None else sorted(runs["arm"].unique().to_list())
    out.mkdir(parents=True, exist_ok=True)
    if placement is None or (figures and placement.map_xy is None):
        placement = place(space, runs, map_xy=figures)
    assigned = placement.assigned.drop("rendering", "moves")
    section = Section(results=[placement])
    desc = described if described is not None else space.describe()
    write_table(section, csv_ready(desc), out / "strategies.csv")
    table = question_weighted_shares(assigned, ci=ci, n_boot=n_boot, random_state=random_state)
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
