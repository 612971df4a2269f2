"""``mechanism integration``: did the agent find the answer, and did it use what it found?"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mechanism.commands._common import (
    add_bootstrap_arguments, add_input_arguments, add_output_argument, read_inputs, terminal_safe,
)

HELP = ("retrieval, integration and parametric rates per arm, the exact split of accuracy differences "
        "into retrieval and integration parts, and follow-up queries built on observations; with strategy "
        "labels (--labels/--space) the same per strategy, and whether the treated arm moved toward "
        "strategies that use what they retrieve")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    parser.add_argument("--arms", nargs="+", default=None, help="arms to report, in order (default: all)")
    parser.add_argument("--base", default=None, help="arm the others are split against (default: first arm)")
    parser.add_argument("--treated", nargs="+", default=None,
                        help="arm(s) compared with --base (default: every other arm)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--labels", type=Path, metavar="LABELS",
                        help="parquet/CSV/JSONL table of arm, question_id, sample_id and a strategy column: "
                             "adds rates per strategy, the shift toward strategies that integrate well and "
                             "the nested split")
    source.add_argument("--space", type=Path, metavar="SPACE",
                        help="folder of a saved StrategySpace: its strategies (and names) as the labels")
    parser.add_argument("--label-column", default="strategy", help="strategy column of --labels (default: strategy)")
    parser.add_argument("--weighting", default="question", choices=("question", "trajectory"),
                        help="questions weigh equally within an arm (default) or pool trajectories")
    parser.add_argument("--logprobs-column", default=None,
                        help="column of base-model token log-probabilities, "
                             "list[struct{segment, logprob}] (adds query vs reasoning perplexity)")
    parser.add_argument("--model-path", type=Path, default=None,
                        help="local folder of the base model (transformers causal LM, fast tokenizer; never "
                             "downloaded): it scores every trajectory for query vs reasoning perplexity")
    add_bootstrap_arguments(parser)


def run(args: argparse.Namespace) -> int:
    runs = read_inputs(args)
    labels = names = None
    if args.labels is not None:
        from mechanism.commands.reweighting import read_labels

        labels = read_labels(runs, args.labels, column=args.label_column)
    elif args.space is not None:
        labels, names = labels_and_names_from_space(runs, args.space)
    written, summary = write_outputs(runs, args.out, arms=args.arms, base=args.base, treated=args.treated,
                                     labels=labels, names=names, weighting=args.weighting, ci=args.ci,
                                     n_boot=args.n_boot, random_state=args.seed,
                                     logprobs_column=args.logprobs_column, model_path=args.model_path,
                                     figures=not args.no_figures)
    print(terminal_safe(summary))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def labels_and_names_from_space(runs: pl.DataFrame, folder: str | Path) -> tuple[np.ndarray, dict[int, str]]:
    """Strategy labels of every row from a saved StrategySpace, and display names of its strategies."""
    from mechanism.plots.strategies import strategy_label
    from mechanism.strategy_space import StrategySpace

    space = StrategySpace.load(folder)
    labels = np.asarray(space.transform(runs))
    described = space.describe()
    moves = "typical_moves" if "typical_moves" in described.columns else None
    names = {int(r["strategy"]): strategy_label(int(r["strategy"]), r.get(moves) if moves else None)
             for r in described.iter_rows(named=True)}
    return labels, names


def write_outputs(runs: pl.DataFrame, out: str | Path, *, arms: Sequence[str] | None = None,
                  base: str | None = None, treated: Sequence[str] | None = None, labels: Any = None,
                  names: Mapping[Any, str] | None = None, weighting: str = "question", ci: float = 0.95,
                  n_boot: int = 1000, random_state: int = 0, logprobs_column: str | None = None,
                  model_path: str | Path | None = None, figures: bool = True,
                  title: str | None = None) -> tuple[list[Path], str]:
    """Write ``per_arm.csv``, ``split.csv``, ``per_trajectory.parquet``, ``integration.json``
    (and ``perplexity.csv``) plus the ``integration_grid`` and ``integration_split`` figures;
    with ``labels`` also ``by_strategy.csv``, ``shift.csv``, ``strategy_shift.csv`` (and
    ``perplexity_by_strategy.csv``), the ``integration_shift`` figure and one verdict line per
    treated arm in the summary. ``names`` gives display names of strategy ids.

    Returns
    -------
    (paths written, plain-text summary)
    """
    from mechanism.information import integration
    from mechanism.plots.integration import plot_integration_grid, plot_integration_shift, plot_integration_split
    from mechanism.plots.style import close, save_figure

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    res = integration(runs, arms=arms, base=base, treated=treated, labels=labels, weighting=weighting, ci=ci,
                      n_boot=n_boot, random_state=random_state, logprobs_column=logprobs_column,
                      model_path=model_path)
    written: list[Path] = []
    for name, table in (("per_arm", res.per_arm), ("split", res.split), ("perplexity", res.perplexity),
                        ("by_strategy", res.by_strategy), ("shift", res.shift),
                        ("strategy_shift", res.strategy_shift),
                        ("perplexity_by_strategy", res.perplexity_by_strategy)):
        if table is not None:
            path = out / f"{name}.csv"
            table.write_csv(path)
            written.append(path)
    path = out / "per_trajectory.parquet"
    res.per_trajectory.write_parquet(path)
    written.append(path)
    path = out / "integration.json"
    path.write_text(json.dumps(res.to_dict(), indent=2) + "\n", encoding="utf-8")
    written.append(path)
    if figures:
        figs = [("integration_grid", plot_integration_grid(res, title=title))]
        if res.split is not None:
            figs.append(("integration_split", plot_integration_split(res, title=title)))
        if res.shift is not None:
            figs.append(("integration_shift", plot_integration_shift(res, names=names, title=title)))
        for stem, fig in figs:
            written += save_figure(fig, out, stem)
            close(fig)
    text = describe(res)
    path = out / "summary.txt"
    path.write_text(text + "\n", encoding="utf-8")
    written.append(path)
    return written, text


def describe(res) -> str:  # noqa: ANN001 - an Integration result
    """Plain lines stating the per-arm rates and the splits."""
    level = "" if res.ci is None else f"; {int(round(res.ci * 100))}% bootstrap intervals over questions"
    level += ("; questions weigh equally within an arm" if res.weighting == "question"
              else "; pooled over trajectories")
    lines = [f"Information integration (gold answer retrieved = it appears in an observation){level}"]

    def iv(r: dict, name: str) -> str:
        v, lo, hi = r[name], r[f"{name}_ci_low"], r[f"{name}_ci_high"]
        if v is None:
            return "n/a"
        return f"{v:.3f}" + ("" if lo is None else f" [{lo:.3f}, {hi:.3f}]")

    for r in res.per_arm.iter_rows(named=True):
        lines.append(f"  {r['arm']} ({r['n']} trajectories): accuracy {iv(r, 'accuracy')}, retrieval "
                     f"{iv(r, 'retrieval_rate')}, integration P(correct|retrieved) {iv(r, 'integration_rate')}, "
                     f"parametric P(correct|not retrieved) {iv(r, 'parametric_rate')}; follow-up queries "
                     f"carrying a word first seen in an observation {iv(r, 'followup_from_observation')} "
                     f"of {r['n_followup']}")
    if res.split is not None:
        for treated in dict.fromkeys(res.split["treated"].to_list()):
            sub = {r["part"]: r for r in res.split.filter(pl.col("treated") == treated).iter_rows(named=True)}
            parts = ", ".join(f"{p} {_signed(sub[p])}" for p in ("retrieval", "integration", "parametric"))
            lines.append(f"  {treated} - {res.base} ({sub['total']['n_questions']} shared questions): "
                         f"{_signed(sub['total'])} = {parts}")
    if res.perplexity is not None:
        for r in res.perplexity.iter_rows(named=True):
            lines.append(f"  {r['arm']} base-model perplexity of {r['segment']} tokens: {r['perplexity']:.2f} "
                         f"[{r['perplexity_ci_low']:.2f}, {r['perplexity_ci_high']:.2f}] ({r['n_tokens']} tokens)")
    if res.shift is not None:
        lines.append("  Did the treated arm move toward strategies that use what they retrieve? "
                     "(tables: by_strategy.csv, shift.csv, strategy_shift.csv)")
        for arm in res.treated:
            lines.append(f"  verdict: {res.verdict(arm)}")
    lines += [f"  note: {n}" for n in res.notes]
    return "\n".join(lines)


def _signed(row: dict) -> str:
    """``+0.123 [+0.045, +0.201]``, or the estimate alone when there is no interval."""
    text = f"{row['estimate']:+.3f}"
    if row["ci_low"] is not None and row["ci_high"] is not None:
        text += f" [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
    return text


if __name__ == "__main__":  # pragma: no cover
    from mechanism.cli import main
    sys.exit(main(["integration", *sys.argv[1:]]))
