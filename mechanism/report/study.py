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

import numpy as np
import polars as pl

from mechanism.analysis.information import integration
from mechanism.analysis.labels import given_space
from mechanism.analysis.passkt import default_k
from mechanism.analysis.segmentation import segment
from mechanism.analysis.strategy_space import untested_reasons
from mechanism.core.actions import CONSULT_FIELD, CONSULT_VERB, HANDOFF_FIELD, HANDOFF_VERB, MARK_FIELDS, TEXT_FIELD
from mechanism.core.errors import InputError
from mechanism.core.names import pair_folders, visible_name
from mechanism.core.options import RandomState, check_ci, check_seed
from mechanism.core.progress import StageClock
from mechanism.core.resample import question_bootstrap_weights, question_mean, resolve_seed, stream
from mechanism.core.text import estimate_text
from mechanism.plots.background import saving_in_background
from mechanism.report import tables as rt
from mechanism.report._section import Section
from mechanism.report._write import write_table
from mechanism.report.explorer import explorer_section, write_member_pages
from mechanism.report.integration import write_integration
from mechanism.report.page import PAGE_STYLE, PageSection, as_section, write_page
from mechanism.report.reweighting import analyse_reweighting, reweighting_verdict, write_reweighting

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
    ("reweighting/share_success.png", "Share vs success per strategy, {base} to {treated}"),
    ("reweighting/decomposition.png", "Accuracy difference = composition + within, per strategy: {treated} vs {base}"),
    ("integration/integration_grid.png", "Retrieval and integration rates per arm"),
    ("integration/integration_split.png",
     "Accuracy difference: retrieval + integration + parametric + not retrievable, {treated} vs {base}"),
    ("integration/integration_shift.png",
     "Did {treated} move toward strategies that use what they retrieve? (against {base})"),
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
    page_sections: list[Any] = field(default_factory=list, repr=False)
    page_figures: list[tuple[str, str]] = field(default_factory=list, repr=False)
    title: str = ""
    numbers: dict[str, Any] = field(default_factory=dict, repr=False)
    lead: list[Any] = field(default_factory=list, repr=False)
    style: str = field(default="", repr=False)

    def write_page(self, *, title: str | None = None, intro: str | None = None,
                   extra_sections: Sequence[Any] = (), extra_figures: Sequence[tuple[str, str]] = (),
                   after: str = "Accuracy", lead: Sequence[Any] = ()) -> tuple[Path, Path]:
        """(Re)write ``summary.md`` and ``summary.html``: ``lead`` sections first, more
        sections after the one titled ``after``, more figures in a last section; ``intro``
        replaces the overview's first paragraph."""
        sections = [as_section(s) for s in self.page_sections]
        if intro is not None and sections:
            sections[0] = PageSection(**{**sections[0].__dict__, "paragraphs": [intro, *sections[0].paragraphs[1:]]})
        at = next((i + 1 for i, s in enumerate(sections) if s.title == after), len(sections))
        sections[at:at] = [as_section(s) for s in extra_sections]
        if extra_figures:
            sections.insert(len(sections) - 1, PageSection(key="more-figures", title="More figures",
                                                           figures=list(extra_figures)))
        self.title = title or self.title
        self.summary_markdown, self.summary_html = write_page(
            self.out, title=self.title, sections=[*(lead or self.lead), *sections], style=self.style)
        return self.summary_markdown, self.summary_html

    def figures(self) -> list[Path]:
        """Every PNG the report shows."""
        return [p for s in self.sections.values() for p in s.figures.values()]

    def __repr__(self) -> str:
        return f"<Report: {self.out}, {len(self.figures())} figures, {len(self.verdicts)} verdicts>"


def verdict(treated: str, base: str, *, boundary: Any = None, reweighting: Any = None,
            integration: Any = None) -> str:
    """One short sentence per treated arm, stated from the result objects (the details sit in
    the sections)."""
    from mechanism.report.passkt import boundary_verdict  # noqa: PLC0415 - scipy (boundaries): only when a report is written

    parts = []
    if reweighting is not None:
        parts.append(reweighting_verdict(reweighting))
    if boundary is not None:
        parts.append(boundary_verdict(boundary))
    return f"{treated} vs {base}: " + "; ".join(parts) + "."


def _figures(section: Section, captions: Mapping[str, str], out: Path, *, base: str | None = None,
             treated: Sequence[str] = ()) -> list[tuple[str, str]]:
    """``(caption, path relative to out)`` of a section's figures, in the order drawn; a caption
    names its comparison: the pair of its folder (``<treated>_vs_<base>/``), else every treated
    arm against ``base``."""
    pairs = {folder: arm for arm, folder in pair_folders(list(treated), base).items()} if treated and base else {}
    shown = []
    for stem, png in section.figures.items():
        caption = next((c for key, c in captions.items() if stem.endswith(key)), stem)
        folder = stem.split("/")[0] if "/" in stem else None
        which = pairs.get(folder) if folder is not None else None
        caption = caption.replace("{treated}", which or ", ".join(treated) or "each arm").replace(
            "{base}", base or "the reference")
        shown.append((caption, str(png.relative_to(out))))
    return shown


def write_report(runs: pl.DataFrame, out: str | Path, *, base: str | None = None,
                 treated: Sequence[str] | None = None,
                 space: Any = None, k: Sequence[int] | None = None, t: Sequence[int] = (0, 1, 2, 3, 5),
                 ci: float | None = 0.95, n_boot: int = 1000, n_permutations: int = 1000,
                 random_state: RandomState = 0, embedder: Any = None, cache_dir: str | Path | None = None,
                 progress: bool | None = None,
                 title: str | None = None, intro: str | None = None,
                 extra_sections: Sequence[Any] = (), extra_figures: Sequence[tuple[str, str]] = (),
                 colors: Mapping[str, str] | None = None, arm_names: Mapping[str, str] | None = None,
                 lead: Sequence[Any] = (), n_examples: int = 5, echo: Echo | None = None,
                 page: bool = True, figures: bool = True, members_per_page: int = 50,
                 allow_few_shared: bool = False) -> Report:
    """Run every analysis on ``runs`` and write the report: tables, figures, the strategy
    explorer and ``summary.html``/``summary.md``.

    Parameters
    ----------
    runs
        Canonical table.
    out
        Output folder (created): ``passkt/``, ``strategies/``, ``space/`` (when fitted here),
        ``reweighting/`` and ``integration/``, ``tables.tex``, ``summary.md``,
        ``summary.html``, ``numbers.json``.
    base
        Reference arm. ``None`` (or an input with one arm): the analyses that make sense for
        one agent, per arm: PASS@(k,T) and pass^k, per-task consistency, the strategy space
        and explorer, failures per tool, the integration rates.
    treated
        Arms compared with ``base`` (default: every other arm).
    space
        A fitted :class:`~mechanism.analysis.strategy_space.StrategySpace`, or the folder of a saved one;
        ``None`` fits one on ``runs`` (and saves it under ``out/space``).
    k, t, ci, n_boot, n_permutations, random_state
        Grids, interval level (``None``: no intervals), bootstrap replicates, permutations, and
        the seed of everything random (int, numpy Generator or None: turned into one int once,
        so every stage draws the same question resamples).
    embedder, cache_dir, progress
        Passed to the strategy space (``progress=None``: bars only on a terminal).
    title, intro
        Page title and the overview's first paragraph.
    extra_sections, extra_figures
        More sections (``(heading, text)`` or :class:`~mechanism.report.page.PageSection`)
        after the accuracy section, and ``(caption, relative PNG path)`` figures.
    colors
        Arm -> colour for every figure (default: :func:`mechanism.plots.style.arm_colors`);
        keyed by the names shown.
    arm_names
        ``{arm in the input: name shown}``: every table, figure and file uses the new names
        (``base`` and ``treated`` may name either).
    lead
        Sections shown first (objects with ``title`` and ``html`` and/or ``markdown``, e.g. a
        study table).
    n_examples
        Member transcripts shown per strategy.
    echo
        Called with one line per finished stage (default: silent).
    page
        Write ``summary.md``, ``summary.html`` and ``numbers.json`` now; ``False`` leaves that
        to :meth:`Report.write_page`, for a caller that adds sections first.
    figures
        Draw and save the figures (``False``: tables and the page only, no PNG or PDF).
    members_per_page
        Member transcripts per page of a strategy's member list (``strategies/members/``).
    allow_few_shared
        Compare arms that share fewer than half of their questions (refused by default, naming
        ``question_key=``), as :func:`mechanism.reweighting`.

    Returns
    -------
    Report
    """
    from mechanism.plots.style import arm_colors, arm_labels  # noqa: PLC0415 - matplotlib: only when a figure is drawn
    from mechanism.report.passkt import arm_order  # noqa: PLC0415 - scipy (boundaries): only when a report is written

    ci = check_ci(ci)
    check_seed(random_state)  # one-line error for anything but a seed; the draws come from one seed
    random_state = resolve_seed(random_state)  # once: every stage below derives its streams from it
    say = echo or (lambda line: None)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs, base, treated = rename_arms(runs, arm_names, base=base, treated=treated)
    # `rl` and `rl ` must not read alike on the page, in a table or in a figure
    runs, base, treated = rename_arms(runs, visible_arm_names(runs), base=base, treated=treated)
    arms = arm_order(sorted(runs["arm"].unique().to_list()))
    if base is not None and base not in arms:
        raise InputError(f"`base` arm {base!r} is not in the input (arms: {arms})", field="base")
    if base is not None:
        treated = list(dict.fromkeys(treated)) if treated else [a for a in arms if a != base]
        missing = [a for a in treated if a not in arms]
        if missing:
            raise InputError(f"`treated` arm {missing[0]!r} is not in the input (arms: {arms})", field="treated")
        shown = [base, *treated]
        runs = runs.filter(pl.col("arm").is_in(shown))
    else:
        treated, shown = [], arms
    single = not treated
    colors = {**arm_colors(arm_order(shown)), **(colors or {})}
    clock = StageClock(say)
    with arm_labels(shown):  # every figure labels an arm alike, uniquely even when names share a prefix
        return _write_report(runs, out, base=base, treated=treated, shown=shown, single=single, colors=colors,
                             clock=clock, space=space, k=k, t=t, ci=ci, n_boot=n_boot, n_permutations=n_permutations,
                             random_state=random_state, embedder=embedder, cache_dir=cache_dir, progress=progress,
                             title=title, intro=intro, extra_sections=extra_sections, extra_figures=extra_figures,
                             lead=lead, n_examples=n_examples, page=page, figures=figures,
                             members_per_page=members_per_page, allow_few_shared=allow_few_shared)


def _write_report(runs: pl.DataFrame, out: Path, *, base: str | None, treated: list[str], shown: list[str],
                  single: bool, colors: dict[str, str], clock: StageClock, space: Any, k: Sequence[int] | None,
                  t: Sequence[int], ci: float | None, n_boot: int, n_permutations: int, random_state: int,
                  embedder: Any,
                  cache_dir: str | Path | None, progress: bool | None, title: str | None, intro: str | None,
                  extra_sections: Sequence[Any], extra_figures: Sequence[tuple[str, str]], lead: Sequence[Any],
                  n_examples: int, page: bool, figures: bool = True, members_per_page: int = 50,
                  allow_few_shared: bool = False) -> Report:
    """The body of :func:`write_report`, on validated arms: every analysis computed once, then
    each section writer formats its results."""
    seconds = clock.seconds
    # figures are saved by worker processes while the analyses go on; all are on disk before the page
    with saving_in_background(None if figures else 0):
        found = _analyse(runs, out, base=base, treated=treated, shown=shown, single=single, colors=colors,
                         clock=clock, space=space, k=k, t=t, ci=ci, n_boot=n_boot, n_permutations=n_permutations,
                         random_state=random_state, embedder=embedder, cache_dir=cache_dir, progress=progress,
                         figures=figures, allow_few_shared=allow_few_shared)
        tabs = _tables(runs, out, found, base=base, treated=treated, shown=shown, single=single, ci=ci,
                       n_boot=n_boot, random_state=random_state, members_per_page=members_per_page)
        page_sections, css = _page_sections(runs, out, found, tabs, base=base, treated=treated, shown=shown,
                                            single=single, ci=ci, n_boot=n_boot, random_state=random_state,
                                            intro=intro, n_examples=n_examples)
    page_sections.append(("Time", ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items())))
    acc = tabs.acc
    numbers = {"arms": shown, "base": base, "verdicts": tabs.verdicts, "seconds": seconds,
               "accuracy": {a: acc[a]["accuracy"] for a in shown},
               "accuracy_interval": {a: [acc[a]["ci_low"], acc[a]["ci_high"]] for a in shown},
               "reweighting": {a: r.to_dict() for a, r in found.rws.items()}}
    report = Report(out=out, summary_markdown=out / "summary.md", summary_html=out / "summary.html",
                    sections=found.sections, verdicts=tabs.verdicts, seconds=seconds, page_sections=page_sections,
                    page_figures=[], numbers=numbers, lead=list(lead), style=css,
                    title=title or (f"What did training do? {', '.join(treated)} vs {base}" if not single
                                    else f"One agent at a time: {', '.join(shown)}"))
    if page:
        report.write_page(extra_sections=extra_sections, extra_figures=extra_figures)
        (out / "numbers.json").write_text(json.dumps(numbers, indent=2, default=float) + "\n", encoding="utf-8")
    return report


@dataclass
class _Analyses:
    """Every analysis of a report, computed once; the tables and the page only read these."""

    sections: dict[str, Section]
    passkt: Any
    reliability: Any
    space: Any
    placement: Any
    space_note: str
    described: pl.DataFrame
    shares: Any
    moves: pl.DataFrame
    rws: dict[str, Any]
    integ: Any


def _analyse(runs: pl.DataFrame, out: Path, *, base: str | None, treated: list[str], shown: list[str],
             single: bool, colors: dict[str, str], clock: StageClock, space: Any, k: Sequence[int] | None,
             t: Sequence[int], ci: float | None, n_boot: int, n_permutations: int, random_state: int,
             embedder: Any, cache_dir: str | Path | None, progress: bool | None, figures: bool,
             allow_few_shared: bool) -> _Analyses:
    """Each analysis in turn, its section written and its stage timed: PASS@(k,T), strategies,
    reweighting (between arms only), integration."""
    from mechanism.analysis.strategy_space import display_names  # noqa: PLC0415 - scikit-learn (strategy_space): only when strategies are shown
    from mechanism.report.passkt import analyse_passkt, write_passkt  # noqa: PLC0415 - scipy (boundaries): only when a report is written
    from mechanism.report.strategies import analyse_strategies, write_strategies  # noqa: PLC0415 - scikit-learn (strategy_space): only when strategies are shown

    lap = clock.lap
    sections: dict[str, Section] = {}
    # pass^k once, on the section's grid and the reliability table's own (every k up to n at the deepest T)
    passkt = analyse_passkt(runs, k=k, t=t, base=None if single else base, treated=treated or None, ci=ci,
                            n_boot=n_boot, random_state=random_state, hat_k=default_k(runs, [max(t)]),
                            allow_few_shared=allow_few_shared)
    sections["passkt"] = write_passkt(passkt, out / "passkt", colors=colors, figures=figures)
    reliability = _reliability(runs, passkt, sections["passkt"], out / "passkt", t=t, arms=shown)
    lap("pass@(k,T)")

    space, placement, space_note = _place_space(runs, out, space, embedder=embedder, random_state=random_state,
                                                progress=progress, cache_dir=cache_dir)
    found = analyse_strategies(space, runs, placement=placement, ci=ci, n_boot=n_boot, random_state=random_state)
    placement, described = found.placement, found.described  # one description for every table, figure and name below
    names = display_names(described)
    sections["strategies"] = write_strategies(found, runs, out / "strategies", arms=shown,
                                              title=f"Strategies ({space_note})", colors=colors, figures=figures)
    moves = segment(runs)
    lap("strategies")

    rws = {}
    if not single:
        results = analyse_reweighting(runs, placement.labels, base=base, treated=treated, ci=ci, n_boot=n_boot,
                                      n_permutations=n_permutations, random_state=random_state,
                                      coordinates=placement.coordinates, allow_few_shared=allow_few_shared)
        rws = {r.treated: r for r in results}
        sections["reweighting"] = write_reweighting(results, out / "reweighting", n_boot=n_boot,
                                                    label_source=f"strategies of the space {space_note}",
                                                    names=names, colors=colors, figures=figures)
        lap("reweighting")

    integ = integration(runs, arms=shown, base=base if not single else None, treated=treated if not single else None,
                        labels=placement.labels, n_boot=n_boot, random_state=random_state,
                        allow_few_shared=allow_few_shared)
    sections["integration"] = write_integration(integ, out / "integration", names=names, colors=colors,
                                                figures=figures)
    lap("integration")
    return _Analyses(sections=sections, passkt=passkt, reliability=reliability, space=space, placement=placement,
                     space_note=space_note, described=described, shares=found.shares, moves=moves, rws=rws,
                     integ=integ)


@dataclass
class _Tables:
    """The report's tables, its verdicts and accuracies, and the member pages the tables link to."""

    verdicts: list[str]
    acc: dict
    pass_table: Any
    pass_note: str
    member_pages: dict
    strategy_table: Any
    main_tables: list
    boundary_tab: Any
    split_tab: Any
    integ_tab: Any
    integ_split: Any
    failures: Any


def _tables(runs: pl.DataFrame, out: Path, found: _Analyses, *, base: str | None, treated: list[str],
            shown: list[str], single: bool, ci: float | None, n_boot: int, random_state: int,
            members_per_page: int) -> _Tables:
    """Verdicts, accuracies and every table of the page; writes the member pages and ``tables.tex``."""
    passkt, reliability, placement, integ = found.passkt, found.reliability, found.placement, found.integ
    boundaries = {b.treated: b for b in passkt.boundaries}
    verdicts = [verdict(a, base, boundary=boundaries.get(a), reweighting=found.rws.get(a)) for a in treated]
    acc = arm_accuracy(runs, ci=ci, n_boot=n_boot, random_state=random_state)
    pass_table, pass_note = rt.passkt_table(passkt.curves, arms=shown)
    member_pages = write_member_pages(runs, placement.labels, placement.assigned["moves"].to_list(), found.moves,
                                      arms=shown, folder=out / "strategies" / "members", root=out,
                                      per_page=members_per_page, style=PAGE_STYLE)
    for listed in member_pages.values():
        found.sections["strategies"].written += listed["written"]
    strategy_table = rt.strategy_table(found.described, found.shares, shown,
                                       member_pages={s_: v["pages"][0][1] for s_, v in member_pages.items()})
    main_tables = [rt.accuracy_table(acc, shown, ci=ci), pass_table]
    if reliability is not None:
        main_tables += [reliability[0], reliability[1]]
    boundary_tab = rt.boundary_table(list(boundaries.values())) if boundaries else None
    split_tab = rt.split_table(list(found.rws.values())) if found.rws else None
    integ_tab = rt.integration_table(integ)
    integ_split = rt.integration_split_table(integ) if not single else None
    failures = rt.failure_table(found.moves, shown)
    latex = [tab.latex() for tab in filter(None, [main_tables[1], *main_tables[2:], boundary_tab, split_tab,
                                                  strategy_table, main_tables[0], integ_tab, integ_split])]
    (out / "tables.tex").write_text("% mechanism report: main tables (needs \\usepackage{booktabs})\n"
                                    + "\n\n".join(latex) + "\n", encoding="utf-8")
    return _Tables(verdicts=verdicts, acc=acc, pass_table=pass_table, pass_note=pass_note, member_pages=member_pages,
                   strategy_table=strategy_table, main_tables=main_tables, boundary_tab=boundary_tab,
                   split_tab=split_tab, integ_tab=integ_tab, integ_split=integ_split, failures=failures)


def _page_sections(runs: pl.DataFrame, out: Path, found: _Analyses, tabs: _Tables, *, base: str | None,
                   treated: list[str], shown: list[str], single: bool, ci: float | None, n_boot: int,
                   random_state: int, intro: str | None, n_examples: int) -> tuple[list[Any], str]:
    """The page's sections in their order (overview, accuracy, PASS@(k,T), strategies, explorer,
    reweighting, integration, failures) and the explorer's style."""
    sections, reliability, integ = found.sections, found.reliability, found.integ
    n_questions = runs["question_id"].n_unique()
    what = intro or (f"{runs.height:,} trajectories of {len(shown)} arm(s) ({', '.join(shown)}) on "
                     f"{n_questions:,} questions; " + (f"reference arm {base}." if not single else
                                                        "one agent at a time: no comparison between arms."))
    overview = PageSection(key="overview", title="Overview", paragraphs=[what],
                           items=[*tabs.verdicts, *_single_lines(tabs.acc, reliability, shown, single),
                                  *task_lines(runs, shown, ci=ci, n_boot=n_boot, random_state=random_state)])
    captions = {stem.split("/")[-1].removesuffix(".png"): cap for stem, cap in FIGURES}
    passkt_section = PageSection(key="passkt", title="PASS@(k,T) and the capability boundary",
                                 paragraphs=_once([tabs.pass_note, *_notes(sections["passkt"].text)]),
                                 tables=[t_ for t_ in [tabs.pass_table, *(reliability or ())[:2], tabs.boundary_tab]
                                         if t_ is not None],
                                 figures=_figures(sections["passkt"], captions, out, base=base, treated=treated))
    placement = found.placement
    explorer, css = explorer_section(runs, placement.labels, placement.assigned["moves"].to_list(), found.described,
                                     found.shares, found.moves, arms=shown, n=n_examples, pages=tabs.member_pages)
    strategies_section = PageSection(key="strategies", title="Strategies",
                                     paragraphs=[f"{found.space.n_strategies_} strategies ({found.space_note}); a "
                                                 "strategy's id opens its entry in the explorer below, and its "
                                                 "members cell every one of its members (pages, with a CSV list).",
                                                 *[n for n in (_reading_note(found.space),) if n]],
                                     tables=[tabs.strategy_table],
                                     figures=_figures(sections["strategies"], captions, out))
    page_sections = [overview, PageSection(key="accuracy", title="Accuracy", tables=[tabs.main_tables[0]]),
                     passkt_section, strategies_section, explorer]
    if not single:
        page_sections.append(PageSection(key="reweighting", title="Reweighting", tables=[tabs.split_tab],
                                         paragraphs=["Accuracy change split exactly (Kitagawa) into composition "
                                                     "(strategy shares) and within-strategy execution, on question x "
                                                     "strategy strata."],
                                         items=_once(_notes(sections["reweighting"].text, all_lines=True)),
                                         figures=_figures(sections["reweighting"], captions, out, base=base,
                                                          treated=treated)))
    page_sections.append(PageSection(key="integration", title="Information integration",
                                     tables=[t_ for t_ in (tabs.integ_tab, tabs.integ_split) if t_ is not None],
                                     items=_once([*(f"{a}: {integ.verdict(a)}" for a in (
                                         integ.treated if not single and integ.shift is not None else ())),
                                         *integ.notes]),
                                     figures=_figures(sections["integration"], captions, out, base=base,
                                                      treated=treated)))
    page_sections.append(PageSection(key="failures", title="Failures per tool", tables=[tabs.failures]))
    return page_sections, css


def _place_space(runs: pl.DataFrame, out: Path, space: Any, *, embedder: Any, random_state: int,
                 progress: bool | None, cache_dir: str | Path | None) -> tuple[Any, Any, str]:
    """(space, placement of ``runs``, where the space came from): fitted on the runs and saved
    under ``out/space``, loaded from a folder, or the fitted space given."""
    from mechanism.analysis.strategy_space import fit_and_place  # noqa: PLC0415 - scikit-learn (strategy_space): only when strategies are shown

    if space is None:
        space, placement = fit_and_place(runs, runs, embedder=embedder, random_state=random_state,
                                         progress=progress, cache_dir=cache_dir)
        space.save(out / "space")
        return space, placement, f"fitted on these runs (random_state={random_state}), saved to space/"
    space, space_note = given_space(space, cache_dir=cache_dir, progress=progress)
    return space, space.place(runs), space_note


def _reading_note(space: Any) -> str:
    """What the page says of how the fit read the calls where it inferred a reading of its own:
    every call by its place (mechanism.analysis._strategies.places), tools used interchangeably
    as one and steps taken whatever the strategy left out (mechanism.analysis._strategies.alike),
    handoffs and consulted agents as one move each, generic tools and dispatchers by the field
    naming their action (mechanism.core.actions), request path segments the question decides as
    one mark, move tokens the question decides
    left out of the distances, or why what the question decides was not tested (a table too
    small, or a question's episodes one policy's habit on it); else nothing."""
    calls = getattr(space, "task_calls_", None)
    alike = [" / ".join(group) for group in getattr(calls, "alike", ())]
    optional = [tool for tool, _ in getattr(calls, "optional", ())]
    segments = sorted(getattr(calls, "segments", ()))
    said = ([f"Tools the agents use interchangeably, whatever the strategy, are read as one: {'; '.join(alike)} "
             "(each is called whatever else the episode does, at like rates in every arm)."] if alike else [])
    said += ([f"Steps the agents take or not whatever the strategy are left out where the rest of the episode is "
              f"met without them too: {', '.join(optional)} (each taken after every kind of approach, at like "
              "rates in every arm)."] if optional else [])
    read_as = getattr(space, "action_tools_", None) or {}
    for mark, reading in ((HANDOFF_FIELD, f"Handoffs between agents are read as one move, {HANDOFF_VERB}, whose "
                                          "object is the agent handed to"),
                          (CONSULT_FIELD, f"Agents consulted as tools are read as one move, {CONSULT_VERB}, whose "
                                          "object is the agent")):
        tools = sorted(t for t, f in read_as.items() if f == mark)
        said += [f"{reading}: {', '.join(tools[:6])}{' ...' if len(tools) > 6 else ''}."] if tools else []
    generic = sorted((t, f) for t, f in read_as.items() if f not in MARK_FIELDS)
    read_by = [f"{t} by its {'text' if f == TEXT_FIELD else f + ' field'}" for t, f in generic[:6]]
    said += ([f"Calls of a generic tool are read as the action each names: {'; '.join(read_by)}"
              f"{' ...' if len(generic) > 6 else ''} (action_field=None reads them by tool name)."] if generic else [])
    said += ([f"Which resource a request names is the question's: {', '.join(segments)} read as one mark, "
              "{task}, in the requests."] if segments else [])
    tokens = sorted(getattr(space, "task_tokens_", ()), key=lambda t: (not t.startswith("T:"), t))
    said += ([f"{len(tokens)} move token{'s' if len(tokens) > 1 else ''} that the question decides (e.g. "
              f"{', '.join(tokens[:3])}) {'are' if len(tokens) > 1 else 'is'} left out of the distances between "
              "episodes: they say which question an episode answered, not how."] if tokens else [])
    if getattr(space, "task_tested_", True) is False and space.task_calls != "keep":
        figures = getattr(space, "task_test_", None)
        why = ("; ".join(untested_reasons(figures)) if figures else
               "it needs at least 10 questions, two episodes a question on average, 30 beyond each question's "
               "first, and episodes of a question that are not one policy's habit on it")
        said.append("What the question decides (a booking's own step, the resource a request names) was not "
                    f"tested: {why}. Tools a kind of task decides may split one strategy in two.")
    if not getattr(calls, "by_place", False):
        return " ".join(said)
    test = getattr(space, "place_association_", None)
    measured = (f" (the strategies' association with the question: {test['by_name']:.2f} read by tool name, "
                f"{test['by_place']:.2f} by place)" if test else "")
    return " ".join([
        "Every call is read by its place (task_call_1 is the first tool an episode calls, task_call_2 the "
        f"next new one): the question picks the tools{measured}, so the strategies are the shapes of the "
        "calls; each name lists the tools its task calls stand for.", *said])


def visible_arm_names(runs: pl.DataFrame) -> dict[str, str]:
    """The arms whose whitespace would hide them, each to its visible form
    (:func:`mechanism.core.names.visible_name`: ``"rl "`` -> ``"rl␠"``); empty when none."""
    return {a: visible_name(a) for a in runs["arm"].unique().to_list() if visible_name(a) != a}


def rename_arms(runs: pl.DataFrame, arm_names: Mapping[str, str] | None, *, base: str | None,
                treated: Sequence[str] | None) -> tuple[pl.DataFrame, str | None, list[str] | None]:
    """``runs`` with arms renamed by ``arm_names`` (old -> new), and ``base``/``treated``
    given in either name mapped to the new; two arms given one name is an error."""
    if not arm_names:
        return runs, base, list(treated) if treated else None
    present = set(runs["arm"].unique().to_list())
    unknown = [a for a in arm_names if a not in present]
    if unknown:
        raise InputError(f"`arm_names` renames {unknown[0]!r}, which is not an arm of the input "
                         f"(arms: {sorted(present)})", field="arm_names")
    final = [arm_names.get(a, a) for a in sorted(present)]
    if len(set(final)) < len(final):
        raise InputError("`arm_names` gives two arms the same name", field="arm_names")
    mapping = {str(k): str(v) for k, v in arm_names.items()}
    runs = runs.with_columns(pl.col("arm").replace(mapping))
    base = mapping.get(base, base) if base is not None else None
    treated = [mapping.get(a, a) for a in treated] if treated else None
    return runs, base, treated


def _once(notes: Sequence[str]) -> list[str]:
    """Each note of a section once: repeats left out, and of several notes on the truncation
    reading of T only the fullest (the section's own) kept."""
    kept = list(dict.fromkeys(n for n in notes if n))
    trunc = [n for n in kept if "truncation" in n and ("not a budget" in n or "truncation counts" in n)]
    if len(trunc) > 1:
        fullest = max(trunc, key=len)
        kept = [n for n in kept if n not in trunc or n == fullest]
    return kept


def _notes(text: str, *, all_lines: bool = False) -> list[str]:
    """The findings of a section's plain text worth a line on the page: its notes (every line
    with ``all_lines``); the numbers are in the tables."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    return lines if all_lines else [line.removeprefix("note: ") for line in lines if line.startswith("note:")
                                    or "truncation counts" in line]


def _reliability(runs: pl.DataFrame, passkt: Any, section: Section, out: Path, *, t: Sequence[int],
                 arms: Sequence[str] | None = None):
    """pass^k at the deepest T (every k of the grid, and the default grid up to the smallest n
    there) and per-task consistency, from the section's results: their tables (written as CSV too)."""
    tmax = max(t)
    # every k asked for (and the default grid up to n): a requested k = 3 is never dropped
    hat = passkt.pass_hat.filter(pl.col("t") == tmax).sort("arm", "k")
    write_table(section, hat, out / "pass_hat_k.csv")
    cons = passkt.consistency
    write_table(section, cons.by_arm, out / "consistency.csv")
    write_table(section, cons.per_task, out / "consistency_per_task.csv")
    return rt.pass_hat_table(hat, t=tmax, arms=arms or passkt.arms), rt.consistency_table(cons.by_arm), hat, cons.by_arm


def _single_lines(acc: dict, reliability: Any, arms: Sequence[str], single: bool) -> list[str]:
    """One line per arm of a single-agent report: accuracy, pass^k at the largest k, consistency."""
    if not single or reliability is None:
        return []
    hat, cons = reliability[2], reliability[3]
    lines = []
    for a in arms:
        h = hat.filter(pl.col("arm") == a).sort("k")
        c = cons.filter(pl.col("arm") == a)
        text = f"{a}: accuracy {estimate_text(acc[a]['accuracy'], acc[a]['ci_low'], acc[a]['ci_high'])}"
        if h.height:
            r = h.row(-1, named=True)
            text += (f"; pass^{r['k']} = {estimate_text(r['pass_at_kt'], r['ci_low'], r['ci_high'])} "
                     f"(all {r['k']} trials succeed)")
        if c.height:
            r = c.row(0, named=True)
            solved_all = estimate_text(r["share_all"], r["share_all_low"], r["share_all_high"])
            text += (f"; tasks solved in every trial {solved_all}, "
                     f"in none {estimate_text(r['share_none'], r['share_none_low'], r['share_none_high'])}")
        lines.append(text)
    return lines


def task_lines(runs: pl.DataFrame, arms: Sequence[str], *, ci: float | None, n_boot: int,
               random_state: int) -> list[str]:
    """One line per task type (``category``): each arm's accuracy with its interval."""
    if "category" not in runs.columns:
        return []
    lines = []
    for cat in sorted(c for c in runs["category"].unique().to_list() if c is not None):
        sub = runs.filter(pl.col("category") == cat)
        acc = arm_accuracy(sub, ci=ci, n_boot=n_boot, random_state=random_state)
        lines.append(f"task type {cat} ({sub['question_id'].n_unique():,} questions): " + "; ".join(
            f"{a} {estimate_text(acc[a]['accuracy'], acc[a]['ci_low'], acc[a]['ci_high'])}" for a in arms if a in acc))
    return lines


def arm_accuracy(runs: pl.DataFrame, *, ci: float | None = 0.95, n_boot: int = 1000,
                 random_state: RandomState = 0) -> dict[str, dict[str, Any]]:
    """Each arm's accuracy with questions weighing equally (the design rule for anything set
    side by side between arms) and its bootstrap interval over questions (the ``"bootstrap"``
    stream, so the replicates are PASS@(k,T)'s): ``{arm: {accuracy, ci_low, ci_high, n,
    questions}}``."""
    random_state = resolve_seed(random_state)
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
