"""Information-integration files: per-arm rates, the retrieval/integration split, figures, findings."""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from mechanism.report._section import Section


def write_integration(runs: pl.DataFrame, out: str | Path, *, arms: Sequence[str] | None = None,
                      base: str | None = None, ci: float = 0.95, n_boot: int = 1000, random_state: int = 0,
                      logprobs_column: str | None = None, model_path: str | Path | None = None,
                      figures: bool = True, title: str | None = None, caption: bool = False,
                      colors: dict[str, str] | None = None) -> Section:
    """Write ``per_arm.csv``, ``split.csv``, ``per_trajectory.parquet``, ``integration.json``
    (and ``perplexity.csv``) plus the ``integration_grid`` and ``integration_split`` figures.

    Returns
    -------
    Section
        ``results`` holds the :class:`~mechanism.information.Integration`.
    """
    from mechanism.information import integration
    from mechanism.plots.integration import plot_integration_grid, plot_integration_split
    from mechanism.plots.style import close, save_figure

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    res = integration(runs, arms=arms, base=base, ci=ci, n_boot=n_boot, random_state=random_state,
                      logprobs_column=logprobs_column, model_path=model_path)
    section = Section(results=[res])
    for name, table in (("per_arm", res.per_arm), ("split", res.split), ("perplexity", res.perplexity)):
        if table is not None:
            path = out / f"{name}.csv"
            table.write_csv(path)
            section.written.append(path)
    path = out / "per_trajectory.parquet"
    res.per_trajectory.write_parquet(path)
    section.written.append(path)
    path = out / "integration.json"
    path.write_text(json.dumps(res.to_dict(), indent=2) + "\n", encoding="utf-8")
    section.written.append(path)
    if figures:
        shown = title if caption else None
        figs = [("integration_grid", plot_integration_grid(res, title=shown))]
        if res.split is not None:
            figs.append(("integration_split", plot_integration_split(res, title=shown, colors=colors,
                                                                     caption=caption)))
        for stem, fig in figs:
            section.add_figure(save_figure(fig, out, stem), stem)
            close(fig)
    section.text = describe_integration(res)
    path = out / "summary.txt"
    path.write_text(section.text + "\n", encoding="utf-8")
    section.written.append(path)
    return section


def describe_integration(res) -> str:  # noqa: ANN001 - an Integration result
    """Plain lines stating the per-arm rates and the splits."""
    return "\n".join([integration_title(res), *integration_lines(res, indent="  ")])


def integration_title(res) -> str:  # noqa: ANN001
    level = "" if res.ci is None else f"; {int(round(res.ci * 100))}% bootstrap intervals over questions"
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
            lines.append(indent + integration_verdict(res, treated))
    if res.perplexity is not None:
        for r in res.perplexity.iter_rows(named=True):
            lines.append(f"{indent}{r['arm']} base-model perplexity of {r['segment']} tokens: {r['perplexity']:.2f} "
                         f"[{r['perplexity_ci_low']:.2f}, {r['perplexity_ci_high']:.2f}] ({r['n_tokens']} tokens)")
    lines += [f"{indent}note: {n}" for n in res.notes]
    return lines


def integration_verdict(res, treated: str) -> str:  # noqa: ANN001
    """One line: the accuracy difference of ``treated`` split into retrieval, integration, parametric."""
    sub = {r["part"]: r for r in res.split.filter(pl.col("treated") == treated).iter_rows(named=True)}
    parts = ", ".join(f"{p} {sub[p]['estimate']:+.3f} [{sub[p]['ci_low']:+.3f}, {sub[p]['ci_high']:+.3f}]"
                      for p in ("retrieval", "integration", "parametric"))
    return (f"{treated} - {res.base} ({sub['total']['n_questions']} shared questions): "
            f"{sub['total']['estimate']:+.3f} [{sub['total']['ci_low']:+.3f}, "
            f"{sub['total']['ci_high']:+.3f}] = {parts}")
