"""The one small harness every benchmark shares: print a Markdown table and write the same rows
as JSON beside the script (``benchmarks/results/<script>.json``), so ``benchmarks/RESULTS.md``'s
tables are generated from what was run, never typed by hand.

>>> rows = [{"size": 10, "seconds": 0.5}]
>>> print(markdown_table(rows))
| size | seconds |
|---:|---:|
| 10 | 0.5 |
"""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "load_1min": None if load is None else round(load, 2)}


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` (dicts with the same keys) as a Markdown table; numbers right-aligned."""
    if not rows:
        return "(no rows)"
    keys = list(rows[0])
    numeric = [all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool) for r in rows) for k in keys]
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(_cell(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def report(script: str, rows: Sequence[Mapping[str, Any]], *, title: str, notes: str = "",
           params: Mapping[str, Any] | None = None, out: Path | None = None, part: str | None = None) -> Path:
    """Print ``rows`` as a table and write them, with the machine and the parameters, to
    ``benchmarks/results/<script stem>.json``. Returns the JSON path.

    ``script`` is the benchmark's ``__file__``; ``params`` its command-line arguments, so a
    reader can rerun exactly what produced the numbers. A script that writes several tables
    names each with ``part`` (``results/<script stem>.<part>.json``).
    """
    name = Path(script).stem + (f".{part}" if part else "")
    # BENCH_RESULTS_DIR: a smoke run with small arguments writes elsewhere, so it never
    # replaces the recorded full-size results
    folder = Path(os.environ["BENCH_RESULTS_DIR"]) if os.environ.get("BENCH_RESULTS_DIR") else RESULTS
    out = out or folder / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": Path(script).stem, "part": part, "title": title, "notes": notes,
              "params": dict(params or {}), "machine": machine(), "date": time.strftime("%Y-%m-%d"),
              "argv": sys.argv[1:], "rows": [dict(r) for r in rows]}
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    tmp.replace(out)
    print(f"## {title}\n\n{markdown_table(rows)}\n")
    if notes:
        print(notes)
    print(f"(written to {out})")
    return out
