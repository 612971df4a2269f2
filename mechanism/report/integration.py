"""Information-integration files: per-arm rates, the retrieval/integration split, figures, findings."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_json, write_table, write_tables, write_text


def write_integration(result: Any, out: str | Path, *, names: Mapping[Any, str] | None = None,
                      figures: bool = True, title: str | None = None, caption: bool = False,
                      colors: dict[str, str] | None = None, **analysis: Any) -> Section:
    """Write an :class:`~mechanism.information.Integration`'s tables, figures and findings.

    ``per_arm.csv``, ``split.csv``, ``per_trajectory.parquet``, ``integration.json``
    (and ``perplexity.csv``) plus the ``integration_grid`` and ``integration_split`` figures;
    with strategy labels behind the result also ``by_strategy.csv``, ``shift.csv``,
    ``strategy_shift.csv`` (and ``perplexity_by_strategy.csv``), the ``integration_shift``
    figure and one verdict line per treated arm.

    Parameters
    ----------
    result
        :func:`mechanism.integration` of the runs. (Given the canonical table instead, with the
        analysis options as keywords, it computes it first: deprecated.)
    out
        Output folder (created).
    names
        Display names of strategy ids in the figures.
    figures, title, caption
        Write the figures; ``title`` is drawn only with ``caption=True``.
    colors
        Arm -> colour shared by the report's figures.

    Returns
    -------
    Section
        ``results`` holds the :class:`~mechanism.information.Integration`.
    """
    from mechanism.plots.integration import plot_integration_grid, plot_integration_shift, plot_integration_split

    if isinstance(result, pl.DataFrame):
        from mechanism.information import integration
        from mechanism.report._deprecated import deprecated

        deprecated("`write_integration(runs, out, ...)`", "pass `mechanism.integration(runs, ...)` "
                   "(or use `write_report`)")
        result = integration(result, **analysis)
    elif analysis:
        raise TypeError(f"write_integration() got analysis options {sorted(analysis)} with a computed result")
    res = result
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    section = Section(results=[res])
    write_tables(section, out, [(name, table) for name, table in res.tables().items() if name != "per_trajectory"])
    write_table(section, res.per_trajectory, out / "per_trajectory.parquet")
    write_json(section, out / "integration.json", res.to_dict())
    if figures:
        shown = title if caption else None
        figs = [("integration_grid", plot_integration_grid(res, title=shown))]
        if res.split is not None:
            figs.append(("integration_split", plot_integration_split(res, title=shown, colors=colors,
                                                                     caption=caption)))
        if res.shift is not None:
            figs.append(("integration_shift", plot_integration_shift(res, names=names, title=shown)))
        write_figures(section, out, figs)
    section.text = describe_integration(res)
    write_text(section, out / "summary.txt", section.text)
    return section


def describe_integration(res) -> str:  # noqa: ANN001 - an Integration result
    """Plain lines stating the per-arm rates and the splits."""
    return "\n".join([integration_title(res), *integration_lines(res, indent="  ")])


def integration_title(res) -> str:  # noqa: ANN001
    level = "" if res.ci is None else f"; {int(round(res.ci * 100))}% bootstrap intervals over questions"
    level += ("; questions weigh equally within an arm" if res.weighting == "question"
              else "; pooled over trajectories")
    return f"Information integration (gold answer retrieved = it appears in an observation){level}"


def integration_lines(res, *, indent: str = "") -> list[str]:  # noqa: ANN001
    """The findings of one :class:`~mechanism.information.Integration`, one statement per line."""
    def iv(r: dict, name: str) -> str:
        v, lo, hi = r[name], r[f"{name}_ci_low"], r[f"{name}_ci_high"]
        if v is None:
            return "n/a"
        return f"{v:.3f}" + ("" if lo is None else f" [{lo:.3f}, {hi:.3f}]")

    lines = []
    for r in res.per_arm.iter_rows(named=True):
        lines.append(f"{indent}{r['arm']} ({r['n']} trajectories): accuracy {iv(r, 'accuracy')}, retrieval "
                     f"{iv(r, 'retrieval_rate')}, integration P(correct|retrieved) {iv(r, 'integration_rate')}, "
                     f"parametric P(correct|not retrieved) {iv(r, 'parametric_rate')}; follow-up queries "
                     f"carrying a word first seen in an observation {iv(r, 'followup_from_observation')} "
                     f"of {r['n_followup']}")
    if res.split is not None:
        for treated in dict.fromkeys(res.split["treated"].to_list()):
            lines.append(indent + split_line(res, treated))
    if res.perplexity is not None:
        for r in res.perplexity.iter_rows(named=True):
            lines.append(f"{indent}{r['arm']} base-model perplexity of {r['segment']} tokens: {r['perplexity']:.2f} "
                         f"[{r['perplexity_ci_low']:.2f}, {r['perplexity_ci_high']:.2f}] ({r['n_tokens']} tokens)")
    if res.shift is not None:
        lines.append(f"{indent}Did the treated arm move toward strategies that use what they retrieve? "
                     "(tables: by_strategy.csv, shift.csv, strategy_shift.csv)")
        lines += [f"{indent}verdict: {res.verdict(arm)}" for arm in res.treated]
    lines += [f"{indent}note: {n}" for n in res.notes]
    return lines


def split_line(res, treated: str) -> str:  # noqa: ANN001
    """One line: the accuracy difference of ``treated`` split into retrieval, integration, parametric."""
    sub = {r["part"]: r for r in res.split.filter(pl.col("treated") == treated).iter_rows(named=True)}
    parts = ", ".join(f"{p.replace('_', ' ')} {_signed(sub[p])}" for p in
                      ("retrieval", "integration", "parametric", "not_retrievable") if p in sub)
    return f"{treated} - {res.base} ({sub['total']['n_questions']} shared questions): {_signed(sub['total'])} = {parts}"


def _signed(row: dict) -> str:
    """``+0.123 [+0.045, +0.201]``, or the estimate alone when there is no interval."""
    text = f"{row['estimate']:+.3f}"
    if row["ci_low"] is not None and row["ci_high"] is not None:
        text += f" [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
    return text
