"""``mechanism swap``: one arm's retrieval handed to another arm's model, through OpenAI-compatible
endpoints (vLLM, SGLang, llama.cpp, OpenAI, ``mechanism serve-sim``)."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mechanism._cli._common import (
    add_bootstrap_arguments,
    add_input_arguments,
    add_output_argument,
    atomic_output,
    progress_flag,
    read_inputs,
    terminal_safe,
)
from mechanism.core.errors import InputError

HELP = ("the swap test: hand one arm's retrieval (its tool calls and results) to another arm's model "
        "behind an OpenAI-compatible endpoint, score its answers, and split the treated arm's gain into "
        "retrieval, reasoning and interaction parts with intervals over questions")


def add_endpoint_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--endpoint ARM=URL`` (repeatable), ``--model ARM=NAME`` and the client's options."""
    parser.add_argument("--endpoint", action="append", default=[], required=required, metavar="ARM=URL",
                        help="the OpenAI-compatible server of an arm's model, e.g. rl=http://localhost:8000/v1 "
                             "(repeatable)")
    parser.add_argument("--model", action="append", default=[], metavar="ARM=NAME",
                        help="the served model name of an arm (default: the arm's name; repeatable)")
    parser.add_argument("--endpoint-cache", type=Path, default=None, metavar="DIR",
                        help="cache of the endpoints' answers: a rerun sends no request twice")
    parser.add_argument("--max-concurrency", type=int, default=8, help="requests in flight per endpoint (default 8)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--max-retries", type=int, default=4,
                        help="retries of a request on 429, 5xx, timeouts and refused connections (default 4)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    parser.add_argument("--base", required=True, help="the base arm (its retrieval and its model)")
    parser.add_argument("--treated", required=True, help="the treated arm whose gain is split")
    add_endpoint_arguments(parser, required=True)
    parser.add_argument("--n", type=int, default=1, help="answers per episode (seeds 0..n-1; default 1)")
    parser.add_argument("--after-results", type=int, default=None, metavar="K",
                        help="hand over each episode's retrieval only up to its K-th result")
    parser.add_argument("--no-control", action="store_true",
                        help="leave out the no-retrieval control (the reasoner on the question alone)")
    parser.add_argument("--strategy", default=None, metavar="ID",
                        help="swap within one strategy: only the episodes with this id in --labels or --space")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--labels", type=Path, metavar="LABELS",
                        help="parquet/CSV/JSONL table of arm, question_id, sample_id and a strategy column "
                             "(with --strategy)")
    source.add_argument("--space", type=Path, metavar="SPACE",
                        help="folder of a saved StrategySpace: its strategies as the labels (with --strategy)")
    parser.add_argument("--label-column", default="strategy", help="strategy column of --labels (default: strategy)")
    parser.add_argument("--template", default=None,
                        help="the prompt, a format string over {question} and {retrieval}")
    parser.add_argument("--step-template", default=None,
                        help="one block of {retrieval} per step, over {query}, {observation} and {tool}")
    parser.add_argument("--max-tokens", type=int, default=32, help="tokens per answer (default 32)")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="cache of the endpoints' answers (the same as --endpoint-cache)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_bootstrap_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from mechanism.analysis.swap import swap  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.report.swap import write_swap  # noqa: PLC0415 - loaded when the command runs, as above

    reasoners = endpoints_from_args(args)
    runs = read_inputs(args)
    labels = strategy_labels(args, runs)
    result = swap(runs, reasoner=reasoners, retrieval_from=[args.base, args.treated], base=args.base,
                  treated=args.treated, template=args.template, step_template=args.step_template, n=args.n,
                  after_results=args.after_results, strategy=args.strategy, labels=labels,
                  scorer=answer_scorer(args.scorer), control=not args.no_control, max_tokens=args.max_tokens,
                  temperature=args.temperature, ci=args.ci, n_bootstrap=args.n_boot, random_state=args.seed,
                  progress=progress_flag(args))
    with atomic_output(args.out) as out:
        section = write_swap(result, out, figures=not args.no_figures)
    print(terminal_safe(section.text))
    print(f"wrote {len(section.written)} files to {args.out}")
    return 0


def answer_scorer(name: str) -> Callable[[str | None, list[str]], bool] | None:
    """The reasoners' answers scored as the inputs' answers were read (``--scorer``); ``None``
    for exact match, the swap's own default."""
    from mechanism.core.scoring import contains_answer, f1_score  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.readers import F1_THRESHOLD  # noqa: PLC0415 - as above

    if name == "f1":
        return lambda answer, golds: answer is not None and f1_score(answer, golds) >= F1_THRESHOLD
    if name in ("contains", "cover-em"):
        return lambda answer, golds: answer is not None and contains_answer(answer, golds)
    return None


def strategy_labels(args: argparse.Namespace, runs: Any) -> Any:
    """One strategy id per row of ``runs`` from ``--labels`` or ``--space`` (``None`` without
    ``--strategy``); either without the other is a one-line error."""
    from mechanism.analysis.labels import labels_from_space, read_labels  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    given = args.labels is not None or args.space is not None
    if args.strategy is None:
        if given:
            raise InputError("`--labels`/`--space` choose the episodes of one `--strategy`; give it too",
                             field="strategy")
        return None
    if not given:
        raise InputError("`--strategy` needs the strategy of each episode: give `--labels` or `--space`",
                         field="strategy")
    if args.labels is not None:
        return read_labels(runs, args.labels, column=args.label_column)
    # --cache-dir is the endpoints' cache here: the space's embeddings are not cached
    return labels_from_space(runs, args.space, progress=progress_flag(args))[0]


def parse_pairs(items: list[str], flag: str) -> dict[str, str]:
    """``["arm=value", ...]`` as a mapping; a pair without ``=`` (or given twice) is a one-line error."""
    out: dict[str, str] = {}
    for item in items:
        arm, sep, value = item.partition("=")
        if not sep or not arm or not value:
            raise InputError(f"`--{flag}` takes ARM=VALUE, got {item!r}", field=flag)
        if arm in out:
            raise InputError(f"`--{flag}` names arm {arm!r} twice", field=flag)
        out[arm] = value
    return out


def endpoints_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Arm -> :class:`~mechanism.endpoints.OpenAICompatible` from ``--endpoint`` and ``--model``."""
    from mechanism.endpoints import OpenAICompatible  # noqa: PLC0415 - openai: only when a command reaches a server

    urls = parse_pairs(args.endpoint, "endpoint")
    models = parse_pairs(args.model, "model")
    unknown = sorted(set(models) - set(urls))
    if unknown:
        raise InputError(f"`--model` names arm {unknown[0]!r}, which has no `--endpoint`", field="model")
    for arm, url in urls.items():
        if not url.startswith(("http://", "https://")):
            raise InputError(f"`--endpoint` of arm {arm!r} must be an http(s) URL, got {url!r}", field="endpoint")
    cache = getattr(args, "endpoint_cache", None) or getattr(args, "cache_dir", None)
    return {arm: OpenAICompatible(url, models.get(arm, arm), max_concurrency=args.max_concurrency,
                                  max_retries=args.max_retries, timeout_s=args.timeout, cache_dir=cache,
                                  progress=progress_flag(args))
            for arm, url in urls.items()}


def report_sections(args: argparse.Namespace, runs: Any, out: Path) -> tuple[list[Any], list[tuple[str, str]]]:
    """``mechanism report --endpoint ...``: the swap test written under ``out/swap``, as the page's
    extra section (its tables and figure in it) and no extra figure. Without ``--endpoint``: nothing."""
    if not getattr(args, "endpoint", None):
        return [], []
    from mechanism.analysis.swap import swap  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.report.swap import swap_page_section, write_swap  # noqa: PLC0415 - loaded when the command runs, as above

    reasoners = endpoints_from_args(args)
    arms = runs["arm"].unique(maintain_order=True).to_list()
    sources = [a for a in reasoners if a in arms]
    base = args.base if args.base in reasoners else None
    treated = next((a for a in (args.treated or arms) if a != base and a in reasoners), None) if base else None
    result = swap(runs, reasoner=reasoners, retrieval_from=sources or None, base=base if treated else None,
                  treated=treated, scorer=answer_scorer(getattr(args, "scorer", "em")), ci=args.ci,
                  n_bootstrap=args.n_boot, random_state=args.seed,
                  progress=progress_flag(args))
    figures = not getattr(args, "no_figures", False)
    write_swap(result, out / "swap", figures=figures)
    return [swap_page_section(result, figure="swap/swap.png" if figures else None)], []
