"""``mechanism reweighting``: did the treated arm reweight the base arm's strategies?"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mechanism.commands._common import (
    add_bootstrap_arguments, add_input_arguments, add_output_argument, read_inputs, terminal_safe,
)

from mechanism.errors import InputError

HELP = ("split accuracy differences into strategy reweighting (composition) and execution (within), "
        "with shares, JS divergence, a permutation test, alignment and query overlap")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--labels", type=Path, metavar="LABELS",
                        help="parquet/CSV/JSONL table of arm, question_id, sample_id and a strategy column "
                             "(e.g. a simulation's truth/truth.parquet)")
    source.add_argument("--space", type=Path, metavar="SPACE",
                        help="folder of a saved StrategySpace: assign every trajectory to its strategies")
    source.add_argument("--by-rounds", action="store_true",
                        help="strata = number of search rounds (0, 1, ..., 5+): a structural baseline")
    parser.add_argument("--label-column", default="strategy", help="strategy column of --labels (default: strategy)")
    parser.add_argument("--base", required=True, help="reference arm")
    parser.add_argument("--treated", nargs="+", default=None,
                        help="arm(s) compared with --base (default: every other arm)")
    add_bootstrap_arguments(parser)
    parser.add_argument("--n-permutations", type=int, default=1000,
                        help="permutations of the within-question test (default 1000; 0 skips it)")


def run(args: argparse.Namespace) -> int:
    runs = read_inputs(args)
    coordinates = None
    if args.labels is not None:
        labels = read_labels(runs, args.labels, column=args.label_column)
        source = f"labels from {args.labels} (column `{args.label_column}`)"
    elif args.space is not None:
        labels, coordinates = labels_from_space(runs, args.space)
        source = f"strategies of the saved space {args.space}"
    else:
        labels = rounds_labels(runs)
        source = "number of search rounds (0..5+)"
    written, summary = write_outputs(runs, labels, args.out, base=args.base, treated=args.treated,
                                     ci=args.ci, n_boot=args.n_boot, n_permutations=args.n_permutations,
                                     random_state=args.seed, coordinates=coordinates,
                                     figures=not args.no_figures, label_source=source)
    print(terminal_safe(summary))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def read_labels(runs: pl.DataFrame, path: str | Path, *, column: str = "strategy") -> np.ndarray:
    """Strategy labels for the rows of ``runs`` from a parquet, CSV or JSONL table keyed by
    ``arm, question_id, sample_id``."""
    from mechanism.compare import labels_from_table

    path = Path(path)
    if not path.is_file():
        raise InputError("labels file not found", source=str(path))
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            table = pl.read_parquet(path)
        elif suffix == ".csv":
            table = pl.read_csv(path, schema_overrides={"question_id": pl.String})
        elif suffix in (".jsonl", ".ndjson"):
            table = pl.read_ndjson(path)
        else:
            raise InputError(f"unknown labels file type {suffix!r} (use .parquet, .csv or .jsonl)", source=str(path))
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"cannot read labels: {exc}", source=str(path)) from exc
    return labels_from_table(runs, table, column=column, source=str(path))


def labels_from_space(runs: pl.DataFrame, folder: str | Path) -> tuple[np.ndarray, np.ndarray | None]:
    """Labels (and coordinates, when the space offers them) from a saved StrategySpace."""
    from mechanism.strategy_space import StrategySpace

    space = StrategySpace.load(folder)
    labels = np.asarray(space.transform(runs))
    coords = np.asarray(space.coordinates(runs)) if hasattr(space, "coordinates") else None
    return labels, coords


def rounds_labels(runs: pl.DataFrame, *, cap: int = 5) -> np.ndarray:
    """A structural baseline stratum per trajectory: its number of search rounds, ``cap`` meaning cap or more."""
    rounds = np.minimum(runs["n_rounds"].to_numpy(), cap)
    return np.array([f"{r}+ rounds" if r == cap else f"{r} round{'s' if r != 1 else ''}" for r in rounds])


def write_outputs(runs: pl.DataFrame, labels: Any, out: str | Path, *, base: str,
                  treated: Sequence[str] | None = None, ci: float = 0.95, n_boot: int = 1000,
                  n_permutations: int = 1000, random_state: int = 0,
                  coordinates: np.ndarray | None = None, figures: bool = True,
                  label_source: str | None = None, title: str | None = None,
                  names: dict[Any, str] | None = None) -> tuple[list[Path], str]:
    """Write the reweighting tables and figures of every treated arm against ``base``.

    Writes ``reweighting_summary.csv`` (one long table), per treated arm a folder
    ``<treated>_vs_<base>/`` with ``strategies.csv``, ``query_sequences.csv``,
    ``neighbours.csv`` (with coordinates) and ``reweighting.json``, and the figures
    ``share_success`` and ``decomposition`` (PNG and PDF). ``names`` gives display names
    of strategy ids in the figures.

    Returns
    -------
    (paths written, plain-text summary)
    """
    from mechanism.plots.reweighting import plot_decomposition, plot_share_success
    from mechanism.plots.style import close, safe_filename, save_figure
    from mechanism.compare import reweighting

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    arms = runs["arm"].unique(maintain_order=True).to_list()
    if base not in arms:
        raise InputError(f"`--base` arm {base!r} is not in the input (arms: {sorted(arms)})", field="base")
    others = list(dict.fromkeys(treated)) if treated else [a for a in arms if a != base]
    # Arm names are untrusted and sanitised into folder names: two arms that sanitise alike
    # would silently overwrite each other's tables.
    folders = [f"{safe_filename(a)}_vs_{safe_filename(base)}" for a in others]
    if len(set(folders)) < len(folders):
        raise InputError(f"arms {sorted(set(others))} give clashing output folder names "
                         f"after sanitising; rename an arm", field="treated")
    results = []
    for arm in others:
        results.append(reweighting(runs, labels, base=base, treated=arm, ci=ci, n_boot=n_boot,
                                   random_state=random_state, n_permutations=n_permutations,
                                   coordinates=coordinates))
    written: list[Path] = []
    frames = [rw.summary().select(pl.lit(rw.base).alias("base"), pl.lit(rw.treated).alias("treated"), pl.all())
              for rw in results]
    path = out / "reweighting_summary.csv"
    pl.concat(frames).write_csv(path)
    written.append(path)
    lines = [f"Reweighting against `{base}`"
             + (f" (strata: {label_source})" if label_source else "")
             + (f"; {int(round(ci * 100))}% bootstrap intervals over questions ({n_boot} replicates)"
                if ci is not None and n_boot > 0 else "; no bootstrap intervals")
             + f", {n_permutations} permutations"]
    for rw in results:
        folder = out / f"{safe_filename(rw.treated)}_vs_{safe_filename(base)}"
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("strategies", "query_sequences", "neighbours"):
            table = getattr(rw, name)
            if table is not None:
                path = folder / f"{name}.csv"
                table.write_csv(path)
                written.append(path)
        path = folder / "reweighting.json"
        path.write_text(json.dumps(rw.to_dict(), indent=2) + "\n", encoding="utf-8")
        written.append(path)
        lines.append(describe(rw))
    if figures and results:
        for stem, fig in (("share_success", plot_share_success(results, title=title, names=names)),
                          ("decomposition", plot_decomposition(results, title=title, names=names))):
            written += save_figure(fig, out, stem)
            close(fig)
    text = "\n".join(lines)
    path = out / "summary.txt"
    path.write_text(text + "\n", encoding="utf-8")
    written.append(path)
    return written, text


def describe(rw: Any) -> str:
    """A few plain lines stating one comparison's numbers."""
    def iv(pair: tuple[float, float]) -> str:
        return f"[{pair[0]:+.3f}, {pair[1]:+.3f}]"

    weighting = rw.weighting
    detectable = rw.detectable
    lines = [f"  {rw.treated} vs {rw.base} ({rw.n_questions} questions, {rw.n_base} + {rw.n_treated} trajectories; "
             + ("questions weigh equally within each arm):" if weighting == "question"
                else "TRAJECTORY-POOLED on request: questions with more samples weigh more):"),
             f"    accuracy {rw.accuracy_base:.3f} -> {rw.accuracy_treated:.3f}; "
             f"difference {rw.total:+.3f} {iv(rw.total_ci)} = composition {rw.composition:+.3f} "
             f"{iv(rw.composition_ci)} + within {rw.within:+.3f} {iv(rw.within_ci)}"]
    if detectable:
        lines.append("    smallest effect this design detects (power 0.8): "
                     + ", ".join(f"{name} {detectable[name]:.3f}" for name in ("total", "composition", "within")
                                 if name in detectable)
                     + "; an interval containing 0 does not rule out a smaller effect")
    plugin = rw.js_divergence_plugin
    corrected = np.isfinite(rw.js_null_mean)
    lines += [f"    JS divergence {rw.js_divergence:.3f} bits "
             f"[{rw.js_divergence_ci[0]:.3f}, {rw.js_divergence_ci[1]:.3f}]"
             + (f" (bias-corrected: plug-in {plugin:.3f} minus {rw.js_null_mean:.3f} that identical policies "
                "give with this design)" if corrected else " (plug-in, not bias-corrected)")
             + (f"; within-question permutation p = {rw.permutation_p:.4f}" if rw.n_permutations else ""),
             "    alignment (share gain vs base success) "
             + (f"{rw.alignment:+.2f} {iv(rw.alignment_ci)}" if np.isfinite(rw.alignment)
                else "n/a (fewer than 3 strategies used by both arms)")
             + f"; treated mass in strategies base uses {rw.shared_mass:.3f} "
             f"[{rw.shared_mass_ci[0]:.3f}, {rw.shared_mass_ci[1]:.3f}]"]
    if rw.query_sequences is not None:
        q = {r["arm"]: r for r in rw.query_sequences.iter_rows(named=True)}
        t = q[rw.treated]
        lines.append(f"    unique query sequences per problem: {rw.base} {q[rw.base]['unique_per_problem']:.1f}, "
                     f"{rw.treated} {t['unique_per_problem']:.1f} (of {t['samples_per_problem']:.1f} samples"
                     + (f"; at a common n per problem {q[rw.base]['unique_at_common_n']:.1f} vs "
                        f"{t['unique_at_common_n']:.1f}" if q[rw.base]["samples_per_problem"] != t["samples_per_problem"]
                        else "") + "); "
                     f"{100 * t['overlap_with_base']:.1f}% of {rw.treated}'s trajectories repeat a base query "
                     f"sequence for the same problem"
                     + (f" ({100 * t['overlap_at_common_n']:.1f}% against a common n of base samples)"
                        if q[rw.base]["samples_per_problem"] != t["samples_per_problem"] else ""))
    if rw.neighbours is not None:
        nb = {r["quantity"]: r for r in rw.neighbours.iter_rows(named=True)}
        far = nb["far_share"]
        lines.append(f"    mean distance to the nearest base trajectory: {rw.treated} "
                     f"{nb['nn_distance_treated_to_base']['estimate']:.4g}, base (to another base) "
                     f"{nb['nn_distance_base_to_base']['estimate']:.4g}; {100 * far['estimate']:.1f}% "
                     f"[{100 * far['ci_low']:.1f}, {100 * far['ci_high']:.1f}] of {rw.treated} lies farther from "
                     "base than 95% of base lies from its nearest other base trajectory")
    lines += [f"    note: {n}" for n in rw.notes]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    from mechanism.cli import main
    sys.exit(main(["reweighting", *sys.argv[1:]]))
