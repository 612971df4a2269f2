"""A training run, checkpoint by checkpoint: figures and tables for a simulated run whose five
checkpoints move from the base mixture toward RL's (60 questions x 16 samples each).

Writes ``figures/track/simulated_space/`` (strategies from a space fitted on the first and last
checkpoints, what a user without ground truth gets) and ``figures/track/simulated_planted/``
(the simulator's planted strategies, the truth to check the first against): per-checkpoint
shares with intervals, PASS@(k,T), the composition/within split and JS divergence against the
first checkpoint (CSV, ``track.json``), the figures over training (PNG/PDF) and ``summary.txt``.

Run: ``python analyses/track.py [--out figures/track] [--n-boot 1000]``.
"""
from __future__ import annotations

from pathlib import Path

from _common import analysis_parser

from mechanism.analysis.checkpoints import track
from mechanism.datasets.simulation import training_run
from mechanism.report import write_track


def simulated(out: Path, *, n_boot: int, seed: int) -> str:
    """Five checkpoints (steps 0..400) of a simulated training run."""
    sim = training_run(steps=(0, 100, 200, 300, 400), n_questions=60, n_samples=16, random_state=seed,
                       progress=None)
    texts = []
    for source in ("space", "planted"):
        labels = sim.truth["strategy"] if source == "planted" else None
        result = track(sim.runs, labels=labels, n_boot=n_boot, random_state=seed, progress=None)
        section = write_track(result, out / f"simulated_{source}")
        texts.append(f"[{source}] " + section.text)
    return "\n\n".join(texts)


def main() -> None:
    parser = analysis_parser(__doc__, "track")
    args = parser.parse_args()
    print(simulated(args.out, n_boot=args.n_boot, seed=args.seed))


if __name__ == "__main__":
    main()
