"""``mechanism swap``: one arm's retrieval handed to another arm's model, through OpenAI-compatible
endpoints (vLLM, SGLang, llama.cpp, OpenAI, ``mechanism serve-sim``)."""
from __future__ import annotations

import argparse
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
    parser.add_argument("--no-control", action="store_true", help="leave out the no-retrieval control")
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
    result = swap(runs, reasoner=reasoners, retrieval_from=[args.base, args.treated], base=args.base,
                  treated=args.treated, template=args.template, step_template=args.step_template, n=args.n,
                  after_results=args.after_results, control=not args.no_control, max_tokens=args.max_tokens,
                  temperature=args.temperature, ci=args.ci, n_bootstrap=args.n_boot, random_state=args.seed,
                  progress=progress_flag(args))
    with atomic_output(args.out) as out:
        section = write_swap(result, out, figures=not args.no_figures)
    print(terminal_safe(section.text))
    print(f"wrote {len(section.written)} files to {args.out}")
    return 0


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


def report_sections(args: argparse.Namespace, runs: Any, out: Path) -> tuple[list[tuple[str, str]],
                                                                            list[tuple[str, str]]]:
    """``mechanism report --endpoint ...``: the swap test written under ``out/swap``, as the page's
    extra ``(heading, text)`` section and figure. Without ``--endpoint``: nothing."""
    if not getattr(args, "endpoint", None):
        return [], []
    from mechanism.analysis.swap import swap  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.report.swap import write_swap  # noqa: PLC0415 - loaded when the command runs, as above

    reasoners = endpoints_from_args(args)
    arms = runs["arm"].unique(maintain_order=True).to_list()
    sources = [a for a in reasoners if a in arms]
    base = args.base if args.base in reasoners else None
    treated = next((a for a in (args.treated or arms) if a != base and a in reasoners), None) if base else None
    result = swap(runs, reasoner=reasoners, retrieval_from=sources or None, base=base if treated else None,
                  treated=treated, ci=args.ci, n_bootstrap=args.n_boot, random_state=args.seed,
                  progress=progress_flag(args))
    figures = not getattr(args, "no_figures", False)
    section = write_swap(result, out / "swap", figures=figures)
    shown = [("Swap test: accuracy by retrieval source x reasoner", "swap/swap.png")] if figures else []
    return [("Swap test", section.text)], shown
