"""Greedy arms: when a question's episodes are one policy's habit, not draws.

The task test reads a tool as the question's when the question explains whether an episode
calls it. That holds where a question's episodes are draws. With one episode a question and
arm, as greedy decoding gives, two arms that keep a question's strategy make every strategy's
tools look like the question's doing, and the strategies are joined.

The fit guards against this in two ways (:func:`mechanism.analysis._strategies.features.episodes_are_draws`):

- more than :data:`~mechanism.analysis._strategies.features.TASK_MAX_REPEATS` of a question's
  pairs are the same episode (``repeats``);
- its pairs are the same more often than pairs of two questions by more than
  :data:`~mechanism.analysis._strategies.features.TASK_MAX_AGREEMENT`, Cohen's kappa style
  (``agreement``).

Where either holds, neither the task test nor the join of strategies that never share a
question runs.

**Part ``toy``.** A toy of five strategies and two kinds of task (the kind decides the last
tool), 120 questions, two arms, one episode each, seeds 0-2. It is the test suite's
``_greedy_arms``: rl keeps base's strategy on a question with probability ``agree``, and each
episode first reads the docs with probability ``optional`` (a step each arm takes at its own
rate). For each cell it prints:

- repeats and agreement;
- the ARI with no guard;
- the ARI with the repeats guard alone (the rule before the agreement guard);
- the ARI with both (the default).

**Part ``worlds``.** The agreement of every planted world at one and four episodes a question
and arm (60 questions, seeds 0-2, tools as rendered).

Run: ``python benchmarks/bench_strategies_greedy.py [--seeds 0 1 2]`` (about four minutes on two cores).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis._strategies import features
from mechanism.analysis.segmentation import render
from mechanism.core.progress import progress

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "strategies"))
import harness
from bench_strategies_floor import load_world, worlds
from test_strategy_tasks import _greedy_arms

AGREE = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9)
OPTIONAL = (0.0, 0.3, 0.5)


def _tools(runs) -> list[str]:
    return [" > ".join(s["tool"] for s in steps) for steps in runs["steps"].to_list()]


def _fit_ari(runs, truth, *, max_repeats: float, max_agreement: float) -> tuple[float, bool]:
    saved = features.TASK_MAX_REPEATS, features.TASK_MAX_AGREEMENT
    features.TASK_MAX_REPEATS, features.TASK_MAX_AGREEMENT = max_repeats, max_agreement
    try:
        space = mx.StrategySpace(embedder="hashing-64", n_bootstrap=0, progress=False, random_state=0).fit(runs)
    finally:
        features.TASK_MAX_REPEATS, features.TASK_MAX_AGREEMENT = saved
    return float(adjusted_rand_score(truth, space.labels_)), bool(space.task_tested_)


def _cell(values: list[float]) -> str:
    mean, least, most = (round(float(x), 2) + 0.0 for x in (np.mean(values), min(values), max(values)))  # no -0.00
    return f"{mean:.2f} ({least:.2f} to {most:.2f})"


def toy_rows(seeds: list[int], show: bool | None) -> list[dict]:
    """One row per (optional, agree): the guards' readings and the ARI with and without them."""
    rows = []
    for optional in progress(OPTIONAL, desc="optional rates", enabled=show):
        for agree in AGREE:
            cells: dict[str, list[float]] = {k: [] for k in ("repeats", "agreement", "none", "repeats only", "both")}
            tested = 0
            for seed in seeds:
                runs, truth = _greedy_arms(agree, seed, optional=optional)
                tools, questions = _tools(runs), runs["question_id"].to_numpy()
                cells["repeats"].append(features.repeated_share(tools, questions))
                cells["agreement"].append(features.question_agreement(tools, questions))
                cells["none"].append(_fit_ari(runs, truth, max_repeats=1.0, max_agreement=1.0)[0])
                cells["repeats only"].append(_fit_ari(runs, truth, max_repeats=features.TASK_MAX_REPEATS,
                                                      max_agreement=1.0)[0])
                ari, was_tested = _fit_ari(runs, truth, max_repeats=features.TASK_MAX_REPEATS,
                                           max_agreement=features.TASK_MAX_AGREEMENT)
                cells["both"].append(ari)
                tested += was_tested
            rows.append({"optional": optional, "agree": agree, "repeats": _cell(cells["repeats"]),
                         "agreement": _cell(cells["agreement"]), "tested (seeds)": f"{tested}/{len(seeds)}",
                         "ARI, no guard": _cell(cells["none"]), "ARI, repeats guard": _cell(cells["repeats only"]),
                         "ARI, both guards": _cell(cells["both"])})
    return rows


def world_rows(seeds: list[int], show: bool | None) -> list[dict]:
    """Each planted world's agreement at one and four episodes a question and arm."""
    rows = []
    for world in progress(worlds(), desc="worlds", enabled=show):
        row: dict = {"world": world}
        for samples in (1, 4):
            values = []
            for seed in seeds:
                runs, _ = load_world(world, seed, n=60, samples=samples)
                values.append(features.question_agreement(render(runs)["tools"].to_list(),
                                                          runs["question_id"].to_numpy()))
            row[f"agreement, {samples} a question and arm"] = _cell(values)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    show = False if args.no_progress else None
    harness.report(__file__, toy_rows(args.seeds, show), part="toy", params=vars(args),
                   title="Two greedy arms: the guards' readings and the ARI without and with them",
                   notes=(f"120 questions, two arms, one episode each; means over seeds {args.seeds} "
                          "(least to most). The guards are TASK_MAX_REPEATS "
                          f"{features.TASK_MAX_REPEATS} and TASK_MAX_AGREEMENT {features.TASK_MAX_AGREEMENT}. "
                          "'tested': seeds where the default fit ran the task test."))
    harness.report(__file__, world_rows(args.seeds, show), part="worlds", params=vars(args),
                   title="The planted worlds' question agreement (60 questions)",
                   notes=(f"Means over seeds {args.seeds} (least to most); tools as rendered "
                          f"(retries merged). The guard: above {features.TASK_MAX_AGREEMENT}."))


if __name__ == "__main__":
    main()
