"""The strategy space: figures and tables for the built-in simulated default and for the
FireAct HotpotQA agents.

Writes ``figures/strategies/simulated/`` and ``figures/strategies/fireact/``: the strategy
map (``strategy_map.png/.pdf``), shares per arm (``strategy_shares``), the strategy table
(``strategies.csv``; the report shows it as an HTML and LaTeX table), ``shares.csv``, and ``summary.txt``. On
simulated data the summary also gives the adjusted Rand index against the planted
strategies, and the space is applied, without refitting, to a fresh simulated sample.

Run: ``python analyses/strategies.py [--out figures/strategies] [--embedder NAME]``.
"""
from __future__ import annotations

from pathlib import Path

import polars as pl
from _common import analysis_parser, run_both
from sklearn.metrics import adjusted_rand_score

from mechanism.analysis.parallel import strategy_shares
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.datasets.simulation import simulate
from mechanism.readers import read
from mechanism.report import analyse_strategies, write_strategies


def simulated(out: Path, *, embedder: str | None, seed: int) -> str:
    """base / rl / sft from the simulator (100 questions x 64 samples)."""
    sim = simulate(n_questions=100, n_samples=64, random_state=seed, progress=None)
    space = StrategySpace(embedder=embedder, random_state=seed, progress=None).fit(sim.runs)
    found = analyse_strategies(space, sim.runs, random_state=seed)
    text = write_strategies(found, sim.runs, out, arms=["base", "rl", "sft"], title="Simulated default").text
    truth = sim.labels_for()
    fresh = simulate(n_questions=100, n_samples=16, random_state=seed + 1, progress=None)
    fresh_truth = fresh.labels_for()
    applied = space.transform(fresh.runs)
    text += (f"\n  adjusted Rand index vs planted strategies: {adjusted_rand_score(truth, space.labels_):.3f}"
             f"\n  saved space applied to a fresh sample (seed {seed + 1}), no refit: ARI "
             f"{adjusted_rand_score(fresh_truth, applied):.3f}, outliers {(applied == -1).mean():.2%}")
    space.save(out / "space")
    (out / "summary.txt").write_text(text + "\n", encoding="utf-8")
    return text


def fireact(out: Path, path: Path, *, embedder: str | None, seed: int) -> str:
    """The three FireAct agents in one space."""
    runs = read(path / "trajs", format="fireact")
    arms = [a for a in ("llama-2-7b", "llama-2-13b", "gpt-3.5-turbo") if a in runs["arm"].to_list()]
    arms += sorted(set(runs["arm"].to_list()) - set(arms))
    space = StrategySpace(embedder=embedder, random_state=seed, progress=None).fit(runs)
    found = analyse_strategies(space, runs, random_state=seed)
    described = found.described
    text = write_strategies(found, runs, out, arms=arms, title="FireAct HotpotQA agents").text
    no_search = described.filter(pl.col("no_search_share") == 1.0)["strategy"].to_list()
    # compared between agents, so questions weigh equally within each (FireAct has one sample per question)
    shares = strategy_shares(runs.select("arm", "question_id").with_columns(strategy=pl.Series(space.labels_)),
                             ci=None)
    share = dict.fromkeys(sorted(arms), 0.0)
    for r in shares.filter(pl.col("strategy").is_in(no_search)).iter_rows(named=True):
        share[r["arm"]] += r["share"]
    text += "\n  share in no-search strategies: " + ", ".join(
        f"{arm} {s:.1%}" for arm, s in share.items())
    (out / "summary.txt").write_text(text + "\n", encoding="utf-8")
    return text


def main() -> None:
    parser = analysis_parser(__doc__, "strategies", bootstrap=False)
    parser.add_argument("--embedder", default=None, help="embedding model (default all-MiniLM-L6-v2)")
    args = parser.parse_args()
    run_both(args.fireact,
             lambda: simulated(args.out / "simulated", embedder=args.embedder, seed=args.seed),
             lambda: fireact(args.out / "fireact", args.fireact, embedder=args.embedder, seed=args.seed))


if __name__ == "__main__":
    main()
