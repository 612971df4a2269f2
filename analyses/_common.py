"""What every analysis script shares: where things are, its arguments, and running it on the
simulated default and on the FireAct agents (skipped with a reason when the data is absent)."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIREACT = ROOT.parent / "shared" / "data" / "fireact-hotpotqa"


def analysis_parser(doc: str | None, part: str, *, bootstrap: bool = True) -> argparse.ArgumentParser:
    """``--out`` (default ``figures/<part>``), ``--fireact``, ``--seed`` and, with ``bootstrap``, ``--n-boot``."""
    parser = argparse.ArgumentParser(description=(doc or part).splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "figures" / part)
    parser.add_argument("--fireact", type=Path, default=FIREACT, help="FireAct data folder (read in place)")
    parser.add_argument("--seed", type=int, default=0)
    if bootstrap:
        parser.add_argument("--n-boot", type=int, default=1000)
    return parser


def run_both(fireact_dir: Path, simulated: Callable[[], str], fireact: Callable[[], str]) -> None:
    """Print the simulated default's summary, then FireAct's (or why it was skipped)."""
    print(simulated())
    print()
    if (fireact_dir / "trajs").is_dir():
        print(fireact())
    else:
        print(f"FireAct data not found at {fireact_dir}: skipped")
