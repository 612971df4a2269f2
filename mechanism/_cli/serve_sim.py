"""``mechanism serve-sim``: serve the simulator's arms as an OpenAI-compatible API on 127.0.0.1."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from mechanism.core.cachefile import atomic_path
from mechanism.core.errors import MechanismError

HELP = ("serve the simulated arms as an OpenAI-compatible API on 127.0.0.1 (completions, chat, "
        "prompt log-probabilities) until Ctrl-C; a known truth for `mechanism swap`")
WORLDS = ("default", "retrieval_only", "reasoning_only", "both")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--n-questions", type=int, default=60, help="questions in the world (default 60)")
    parser.add_argument("--n-samples", type=int, default=8, help="episodes per arm and question (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--world", default="default", choices=WORLDS,
                        help="default: the built-in arms; retrieval_only / reasoning_only: base and rl differ only "
                             "in their plans / their reasoner; both: in both")
    parser.add_argument("--delay-s", type=float, default=0.0, metavar="S",
                        help="every answer waits this long, as a model's generation would (default 0)")
    parser.add_argument("--write-runs", type=Path, default=None, metavar="FILE.jsonl",
                        help="also write the served world's trajectories (canonical JSONL) for `mechanism swap`")


def run(args: argparse.Namespace) -> int:
    from mechanism.datasets.served_model import policies_for  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.datasets.serving import serve  # noqa: PLC0415 - as above
    from mechanism.datasets.simulation import simulate  # noqa: PLC0415 - as above

    if args.seed < 0:
        raise MechanismError(f"`seed` must be a non-negative integer, got {args.seed}")
    if not 0 <= args.delay_s <= 600:
        raise MechanismError(f"`delay_s` must lie in [0, 600] seconds, got {args.delay_s}")
    policies = policies_for(args.world)
    arms = tuple(policies) if policies is not None else ("base", "rl", "sft")
    sim = simulate(n_questions=args.n_questions, n_samples=args.n_samples, arms=arms, random_state=args.seed,
                   policies=policies, progress=False)
    if args.write_runs is not None:
        with atomic_path(args.write_runs) as tmp:
            sim.runs.write_ndjson(tmp)
    stop = threading.Event()
    main_thread = threading.current_thread() is threading.main_thread()
    # SIGTERM stops as Ctrl-C does (the handler it replaces comes back on return)
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set()) if main_thread else None
    server = serve(sim, port=args.port, random_state=args.seed, delay_s=args.delay_s)
    try:
        wrote = f"; trajectories in {args.write_runs}" if args.write_runs is not None else ""
        print(f"serving {', '.join(server.models)} at {server.url} ({args.world} world, {sim.runs.height} "
              f"trajectories{wrote}); Ctrl-C stops", flush=True)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    print(f"stopped after {server.requests} requests", file=sys.stderr, flush=True)
    return 0
