"""Reweighting vs new behaviour: figures and tables for the built-in simulated default and for
the FireAct HotpotQA agents.

Strategy labels come from a stated source (``--labels``):

- ``planted``: the simulator's ground-truth strategy of every trajectory (simulated data only);
- ``space``: ``StrategySpace(random_state=0).fit_transform(runs)``, what a user without ground
  truth gets (also gives the coordinates for nearest-base-neighbour distances);
- ``rounds``: the number of search rounds (0, 1, ..., 5+), a structural baseline;
- ``all`` (default): each source that applies, into its own folder, so the split under
  discovered strategies can be checked against the split under the planted ones.

Writes ``figures/reweighting/simulated_<source>/`` and ``figures/reweighting/fireact_<source>/``
(CSV/JSON tables, ``share_success`` and ``decomposition`` PNG/PDF, ``summary.txt``).

Run: ``python analyses/reweighting.py [--out figures/reweighting] [--labels all] [--n-boot 1000]``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from _common import analysis_parser, run_both

from mechanism.analysis.compare import labels_from_table
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.core.names import write_csv
from mechanism.datasets.simulation import simulate
from mechanism.readers import read
from mechanism.report import csv_ready, rounds_labels
from mechanism.report import write_reweighting as write_outputs

MOVE_NAMES = {"first_lookup": "look", "bridge_lookup": "bridge", "parallel_lookup": "parallel",
              "reformulation": "reform", "repeat": "repeat", "new_lookup": "new", "verification": "verify",
              "answer_with_evidence": "answer", "answer_without_evidence": "answer w/o evidence"}


def space_labels(runs: pl.DataFrame, seed: int, out: Path) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Strategies found without ground truth, each row's position in the strategy space, and
    a display name per strategy (``S<id>: <its typical move sequence>``); writes the space's
    description to ``out/strategies_described.csv`` so every id can be looked up."""
    space = StrategySpace(random_state=seed, progress=None).fit(runs)
    described = space.describe()
    out.mkdir(parents=True, exist_ok=True)
    write_csv(csv_ready(described), out / "strategies_described.csv")
    names = {}
    for row in described.iter_rows(named=True):
        moves = [MOVE_NAMES.get(m.strip(), m.strip()) for m in (row["typical_moves"] or "").split(">")]
        names[row["strategy"]] = f"S{row['strategy']}: " + "-".join(m for m in moves if m)
    return np.asarray(space.labels_), np.asarray(space.coordinates(runs)), names


def simulated(out: Path, *, sources: list[str], n_boot: int, n_permutations: int, seed: int) -> str:
    """base / rl / sft from the simulator (100 questions x 64 samples, the study's n)."""
    sim = simulate(n_questions=100, n_samples=64, random_state=seed, progress=None)
    texts = []
    for source in sources:
        coords, names = None, None
        folder = out / f"simulated_{source}"
        if source == "planted":
            labels, note = labels_from_table(sim.runs, sim.truth), "planted strategies (simulator ground truth)"
        elif source == "space":
            labels, coords, names = space_labels(sim.runs, seed, folder)
            note = f"StrategySpace(random_state={seed}) fitted on all arms"
        else:
            labels, note = rounds_labels(sim.runs), "number of search rounds (0..5+)"
        _, text = write_outputs(sim.runs, labels, folder, base="base", treated=["rl", "sft"], n_boot=n_boot,
                                n_permutations=n_permutations, random_state=seed, coordinates=coords,
                                label_source=note, title=f"Simulated default; strata: {note}", names=names)
        texts.append(text)
    return "\n\n".join(texts)


def fireact(out: Path, path: Path, *, sources: list[str], n_boot: int, n_permutations: int, seed: int) -> str:
    """The three FireAct agents (one sample per question): Llama-2-7B as the reference."""
    runs = read(path / "trajs", format="fireact")
    arms = sorted(runs["arm"].unique().to_list())
    base = "llama-2-7b" if "llama-2-7b" in arms else arms[0]
    treated = [a for a in ("llama-2-13b", "gpt-3.5-turbo") if a in arms] or [a for a in arms if a != base]
    texts = []
    for source in sources:
        if source == "planted":
            continue  # real data: no ground truth
        coords, names = None, None
        folder = out / f"fireact_{source}"
        if source == "space":
            labels, coords, names = space_labels(runs, seed, folder)
            note = f"StrategySpace(random_state={seed}) fitted on the three agents"
        else:
            labels, note = rounds_labels(runs), "number of search rounds (0..5+)"
        _, text = write_outputs(runs, labels, folder, base=base, treated=treated,
                                n_boot=n_boot, n_permutations=n_permutations, random_state=seed,
                                coordinates=coords, label_source=note,
                                title=f"FireAct HotpotQA; strata: {note}", names=names)
        texts.append(text + "\n  (FireAct agents are separately fine-tuned models, not base vs RL of one model; "
                     "one sample per question, so unique query sequences per problem are 1 by construction)")
    return "\n\n".join(texts)


def main() -> None:
    parser = analysis_parser(__doc__, "reweighting")
    parser.add_argument("--labels", choices=["all", "planted", "space", "rounds"], default="all",
                        help="label source (default: all that apply)")
    parser.add_argument("--n-permutations", type=int, default=1000)
    args = parser.parse_args()
    sources = ["planted", "space", "rounds"] if args.labels == "all" else [args.labels]
    options = dict(sources=sources, n_boot=args.n_boot, n_permutations=args.n_permutations, seed=args.seed)
    run_both(args.fireact, lambda: simulated(args.out, **options),
             lambda: fireact(args.out, args.fireact, **options))


if __name__ == "__main__":
    main()
