"""The whole study on a user's runs: every analysis, every figure, the verdicts, one page.

:func:`write_report` is what ``mechanism report`` runs and what the demo runs after simulating:
PASS@(k,T) and the capability boundary, the strategy space (a saved one applied, or one fitted
on the runs), reweighting, information integration, and ``summary.md``/``summary.html``.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from mechanism.errors import InputError
from mechanism.progress import StageClock
from mechanism.report._section import Section

Echo = Callable[[str], None]

#: figure stems of a report, in page order, with their captions (``{treated}`` and ``{base}`` filled in)
FIGURES = (
    ("passkt/pass_curves.png", "PASS@(k,T) against k, one panel per round budget T"),
    ("passkt/pass_over_t.png", "PASS@(1,T) against the round budget T"),
    ("passkt/pass_surfaces.png", "PASS@(k,T) surfaces"),
    ("passkt/{pair}/gap_surface.png", "PASS@(k,T) difference, {treated} - {base}"),
    ("passkt/{pair}/gap_over_t.png", "PASS@(1,T) difference, {treated} - {base}"),
    ("passkt/{pair}/boundary.png", "Capability boundary, {treated} vs {base}"),
    ("strategies/strategy_map.png", "Strategy map (marker area: share of the arm's trajectories)"),
    ("strategies/strategy_shares.png", "Strategy shares per arm"),
    ("strategies/strategy_table.png", "Strategies: size, share, success per arm"),
    ("reweighting/share_success.png", "Share vs success, base to treated"),
    ("reweighting/decomposition.png", "Accuracy difference = composition + within, per strategy"),
    ("integration/integration_grid.png", "Retrieval and integration rates per arm"),
    ("integration/integration_split.png", "Accuracy difference: retrieval + integration + parametric"),
    ("integration/integration_shift.png", "Did the treated arm move toward strategies that use what they retrieve?"),
)


@dataclass
class Report:
    """What :func:`write_report` wrote: the page, every section, the verdicts and timings."""

    out: Path
    summary_markdown: Path
    summary_html: Path
    sections: dict[str, Section] = field(default_factory=dict)
    verdicts: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    page_sections: list[tuple[str, str]] = field(default_factory=list, repr=False)
    page_figures: list[tuple[str, str]] = field(default_factory=list, repr=False)
    title: str = ""
    numbers: dict[str, Any] = field(default_factory=dict, repr=False)

    def write_page(self, *, title: str | None = None, intro: str | None = None,
                   extra_sections: Sequence[tuple[str, str]] = (), extra_figures: Sequence[tuple[str, str]] = (),
                   after: str = "Accuracy", lead: Sequence[tuple[str, str, str]] = ()) -> tuple[Path, Path]:
        """(Re)write ``summary.md`` and ``summary.html``, with more sections after the one
        headed ``after`` and more figures at the end; ``intro`` replaces the first paragraph;
        ``lead`` blocks (heading, Markdown, HTML) open the page."""
        from mechanism.report.page import write_page

        sections = list(self.page_sections)
        if intro is not None:
            sections[0] = (sections[0][0], intro)
        at = next((i + 1 for i, (h, _) in enumerate(sections) if h == after), len(sections))
        sections[at:at] = list(extra_sections)
        self.title = title or self.title
        self.summary_markdown, self.summary_html = write_page(
            self.out, title=self.title, sections=sections, figures=[*self.page_figures, *extra_figures],
            verdicts=self.verdicts, lead=lead)
        return self.summary_markdown, self.summary_html

    def figures(self) -> list[Path]:
        """Every PNG the report shows."""
        return [p for s in self.sections.values() for p in s.figures.values()]

    def __repr__(self) -> str:
        return f"<Report: {self.out}, {len(self.figures())} figures, {len(self.verdicts)} verdicts>"


def verdict(treated: str, base: str, *, boundary: Any = None, reweighting: Any = None,
            integration: Any = None) -> str:
    """One paragraph per treated arm, stated from the result objects."""
    from mechanism.report.integration import split_line
    from mechanism.report.passkt import boundary_verdict
    from mechanism.report.reweighting import reweighting_verdict

    parts = []
    if reweighting is not None:
        parts.append(reweighting_verdict(reweighting))
    if boundary is not None:
        parts.append(boundary_verdict(boundary))
    if integration is not None and integration.split is not None and treated in integration.split["treated"].to_list():
        parts.append("information: " + split_line(integration, treated).split(": ", 1)[1])
        if integration.shift is not None and treated in integration.treated:
            parts.append("strategies and integration: " + integration.verdict(treated))
    return f"{treated} vs {base}: " + "; ".join(parts) + "."


def write_report(runs: pl.DataFrame, out: str | Path, *, base: str, treated: Sequence[str] | None = None,
                 space: Any = None, k: Sequence[int] | None = None, t: Sequence[int] = (0, 1, 2, 3, 5),
                 ci: float = 0.95, n_boot: int = 1000, n_permutations: int = 1000, random_state: int = 0,
                 embedder: Any = None, cache_dir: str | Path | None = None, progress: bool | None = None,
                 title: str | None = None, intro: str | None = None,
                 extra_sections: Sequence[tuple[str, str]] = (), extra_figures: Sequence[tuple[str, str]] = (),
                 colors: Mapping[str, str] | None = None, echo: Echo | None = None, page: bool = True) -> Report:
    """Run every analysis on ``runs`` and write the one-page summary with every figure and the verdicts.

    Parameters
    ----------
    runs
        Canonical table with at least two arms.
    out
        Output folder (created): ``passkt/``, ``strategies/``, ``space/`` (when fitted here),
        ``reweighting/``, ``integration/``, ``summary.md``, ``summary.html``, ``numbers.json``.
    base
        Reference arm.
    treated
        Arms compared with ``base`` (default: every other arm).
    space
        A fitted :class:`~mechanism.strategy_space.StrategySpace`, or the folder of a saved one;
        ``None`` fits one on ``runs`` (and saves it under ``out/space``).
    k, t, ci, n_boot, n_permutations, random_state
        Grids, interval level, bootstrap replicates, permutations, seed of everything random.
    embedder, cache_dir, progress
        Passed to the strategy space (``progress=None``: bars only on a terminal).
    title, intro
        Page title and its first paragraph.
    extra_sections, extra_figures
        More ``(heading, text)`` sections and ``(caption, relative PNG path)`` figures.
    colors
        Arm -> colour for every figure (default: :func:`mechanism.plots.style.arm_colors`).
    echo
        Called with one line per finished stage (default: silent).
    page
        Write ``summary.md``, ``summary.html`` and ``numbers.json`` now; ``False`` leaves that
        to :meth:`Report.write_page`, for a caller that adds sections first.

    Returns
    -------
    Report
    """
    from mechanism.names import pair_folders
    from mechanism.plots.style import arm_colors
    from mechanism.report.integration import write_integration
    from mechanism.report.passkt import arm_order, write_passkt
    from mechanism.report.reweighting import write_reweighting
    from mechanism.report.strategies import fit_and_place, place, strategy_names, write_strategies
    from mechanism.strategy_space import StrategySpace

    say = echo or (lambda line: None)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    arms = arm_order(sorted(runs["arm"].unique().to_list()))
    if base not in arms:
        raise InputError(f"`base` arm {base!r} is not in the input (arms: {arms})", field="base")
    treated = list(dict.fromkeys(treated)) if treated else [a for a in arms if a != base]
    missing = [a for a in treated if a not in arms]
    if missing:
        raise InputError(f"`treated` arm {missing[0]!r} is not in the input (arms: {arms})", field="treated")
    if not treated:
        raise InputError("a report compares arms: the input has only the base arm", field="arm")
    shown = [base, *treated]
    runs = runs.filter(pl.col("arm").is_in(shown))
    colors = {**arm_colors(arm_order(shown)), **(colors or {})}
    clock = StageClock(say)
    seconds, lap = clock.seconds, clock.lap

    sections: dict[str, Section] = {}
    sections["passkt"] = write_passkt(runs, out / "passkt", k=k, t=t, base=base, treated=treated, ci=ci,
                                      n_boot=n_boot, random_state=random_state, colors=colors)
    lap("pass@(k,T)")

    if space is None:
        space, placement = fit_and_place(runs, runs, embedder=embedder, random_state=random_state,
                                         progress=progress, cache_dir=cache_dir)
        space.save(out / "space")
        space_note = f"fitted on these runs (random_state={random_state}), saved to space/"
    else:
        if isinstance(space, (str, Path)):
            where = space
            space = StrategySpace.load(where, cache_dir=cache_dir, progress=progress)
            space_note = f"the saved space {where}, applied without refitting"
        else:
            space_note = "the given fitted space, applied without refitting"
        placement = place(space, runs)
    described = space.describe()  # one description for every table, figure and name below
    names = strategy_names(described)
    sections["strategies"] = write_strategies(space, runs, out / "strategies", arms=shown,
                                              title=f"Strategies ({space_note})", colors=colors,
                                              placement=placement, described=described, ci=ci, n_boot=n_boot,
                                              random_state=random_state)
    lap("strategies")

    sections["reweighting"] = write_reweighting(
        runs, placement.labels, out / "reweighting", base=base, treated=treated, ci=ci, n_boot=n_boot,
        n_permutations=n_permutations, random_state=random_state, coordinates=placement.coordinates,
        label_source=f"strategies of the space {space_note}", names=names, colors=colors)
    lap("reweighting")

    sections["integration"] = write_integration(runs, out / "integration", arms=shown, base=base, ci=ci,
                                                labels=placement.labels, names=names,
                                                n_boot=n_boot, random_state=random_state, colors=colors)
    lap("integration")

    # the main tables as booktabs LaTeX, ready for a paper (\usepackage{booktabs})
    latex = [r.to_latex() for key in ("passkt", "reweighting", "integration") for r in sections[key].results]
    (out / "tables.tex").write_text("% mechanism report: main tables (needs \\usepackage{booktabs})\n"
                                    + "\n\n".join(latex) + "\n", encoding="utf-8")
    boundaries = {b.treated: b for b in sections["passkt"].results}
    rws = {r.treated: r for r in sections["reweighting"].results}
    integ = sections["integration"].results[0]
    verdicts = [verdict(a, base, boundary=boundaries.get(a), reweighting=rws.get(a), integration=integ)
                for a in treated]
    acc = arm_accuracy(runs, ci=ci, n_boot=n_boot, random_state=random_state)
    what = intro or (f"{runs.height:,} trajectories of arms {', '.join(shown)} "
                     f"({max(r['questions'] for r in acc.values())} questions); reference arm `{base}`.")
    accuracy_line = "; ".join(
        f"{a} {acc[a]['accuracy']:.3f}" + (f" [{acc[a]['ci_low']:.3f}, {acc[a]['ci_high']:.3f}]"
                                           if acc[a]["ci_low"] is not None else "")
        + f" (n = {acc[a]['n']:,}, {acc[a]['questions']:,} questions)" for a in shown)
    accuracy_line += (" (questions weigh equally within an arm"
                      + (f"; {ci:.0%} bootstrap intervals over questions)" if ci is not None else ")"))
    page_sections = [("What this is", what), ("Accuracy", accuracy_line),
                     ("PASS@(k,T) and the capability boundary", sections["passkt"].text),
                     ("Strategies", sections["strategies"].text),
                     ("Reweighting", sections["reweighting"].text),
                     ("Information integration", sections["integration"].text)]
    figures = []
    for rel, caption in FIGURES:
        if "{pair}" in rel:
            for a in treated:
                pair = pair_folders(treated, base)[a]
                figures.append((caption.format(treated=a, base=base), rel.format(pair=pair)))
        else:
            figures.append((caption, rel))
    page_sections.append(("Time", ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items())))
    numbers = {"arms": shown, "base": base, "verdicts": verdicts, "seconds": seconds,
               "accuracy": {a: acc[a]["accuracy"] for a in shown},
               "accuracy_interval": {a: [acc[a]["ci_low"], acc[a]["ci_high"]] for a in shown},
               "reweighting": {a: r.to_dict() for a, r in rws.items()}}
    report = Report(out=out, summary_markdown=out / "summary.md", summary_html=out / "summary.html",
                    sections=sections, verdicts=verdicts, seconds=seconds, page_sections=page_sections,
                    page_figures=figures, numbers=numbers,
                    title=title or f"What did training do? {', '.join(treated)} vs {base}")
    if page:
        report.write_page(extra_sections=extra_sections, extra_figures=extra_figures)
        (out / "numbers.json").write_text(json.dumps(numbers, indent=2, default=float) + "\n", encoding="utf-8")
    return report


def arm_accuracy(runs: pl.DataFrame, *, ci: float | None = 0.95, n_boot: int = 1000,
                 random_state: int = 0) -> dict[str, dict[str, Any]]:
    """Each arm's accuracy with questions weighing equally (the design rule for anything set
    side by side between arms) and its bootstrap interval over questions (the ``"bootstrap"``
    stream, so the replicates are PASS@(k,T)'s): ``{arm: {accuracy, ci_low, ci_high, n,
    questions}}``."""
    import numpy as np

    from mechanism.resample import question_bootstrap_weights, question_mean, stream

    questions, q_idx = np.unique(runs["question_id"].cast(pl.String).to_numpy().astype(str), return_inverse=True)
    weights = (question_bootstrap_weights(questions.size, n_boot, stream(random_state, "bootstrap")).astype(np.float64)
               if ci is not None else None)
    arms = runs["arm"].to_numpy()
    correct = runs["correct"].fill_null(False).cast(pl.Float64).to_numpy()
    out = {}
    for arm in sorted(set(arms.tolist())):
        rows = arms == arm
        mean, low, high, n_q = question_mean(q_idx[rows], correct[rows], questions.size, weights=weights, level=ci)
        out[arm] = {"accuracy": mean, "ci_low": low, "ci_high": high, "n": int(rows.sum()), "questions": n_q}
    return out
