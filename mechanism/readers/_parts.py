"""One large JSONL file read in parts by worker processes, put together as one read of the whole.

Why: reading is one Python loop per record (decode, parse, score, count), on one core, while
the others sit idle; 100,000 Search-R1 trajectories took 6-7 s on two cores. A file of at least
:data:`MIN_BYTES` is cut at line starts into one part per core: this process reads the first
part while each other part is read by ``python -m mechanism.readers``
(:mod:`mechanism.core.workers`: a fresh interpreter that never runs the caller's script again).
A job and its part travel pickled over the worker's pipes, in memory, between this package's
own processes; nothing pickled is ever written to disk.

The parts are then put together in file order, and the table and the report are those of
one read of the whole file: rows, skipped records, blank lines and every count of the
read's notes. Where that cannot be proven from what the parts hold, the file is read again
in this process, the slow way, so no result ever depends on the number of cores:

- a worker that failed (under ``errors="raise"`` a bad record stops the read: read again,
  the first bad record in file order is the one raised, as always);
- records that do not all have the same canonical fields (which record is "lacking" fields
  depends on the records before it);
- a bounded count that filled up in a part (what it dropped depends on what came before);
- a file that changed size while it was read (one read refuses it).

A ``where=`` filter, a ``scorer`` function (the caller's code, run only in the caller) and a
pipe are read in one process from the start.

``MECHANISM_READ_WORKERS`` sets the number of parts (0 or 1: always one process); a read in
a worker process never starts workers of its own.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path

from mechanism.core.errors import ReadReport
from mechanism.core.workers import read_frame, start_worker, usable_cores, workers_setting, write_frame
from mechanism.readers._build import EXAMPLES, FIELD_VALUES, NOTHING_FORMS, Columns, Tally
from mechanism.readers._repeats import MAX_TEXTS, MAX_TOOLS

MIN_BYTES = 64 << 20  # below this a worker's start (about 0.4 s) is not won back
PART_BYTES = 32 << 20  # at least this much of the file per part
FIRST_WEIGHT = 1.4  # the first part's size, in workers' parts
_WORKER_ENV = "MECHANISM_READ_WORKER"  # set in a worker: its own reads stay in one process


def default_workers() -> int:
    """Parts a large file is read in: ``MECHANISM_READ_WORKERS`` where set, else one per core the
    process may use, at most 8; 1 inside a read's own worker or any multiprocessing worker."""
    if os.environ.get(_WORKER_ENV) or multiprocessing.parent_process() is not None:
        return 1  # already one of several processes (a read's part, a shard's worker): no more
    setting = workers_setting("MECHANISM_READ_WORKERS")
    return max(1, setting) if setting is not None else max(1, min(8, usable_cores()))


def spans(path: Path, workers: int, *, min_bytes: int | None = None) -> list[tuple[int, int]]:
    """Byte ranges ``(start, stop)`` of ``path``, cut at line starts, one per part; a single
    range when the file is small or one worker is asked for."""
    size = path.stat().st_size
    n = min(workers, size // PART_BYTES)
    if size < (MIN_BYTES if min_bytes is None else min_bytes) or n < 2:
        return [(0, size)]
    # this process's part is the larger: a worker also starts, counts the lines before its part
    # and sends its rows back, which take this process a while to take in (benchmarks/bench_read.py)
    share = size / (n - 1 + FIRST_WEIGHT)
    cuts = [0]
    with open(path, "rb") as fh:
        for k in range(1, n):
            fh.seek(max(int(share * (FIRST_WEIGHT + k - 1)) - 1, cuts[-1]))
            fh.readline()  # to the start of the next line (a cut inside a line moves past it)
            at = fh.tell()
            if cuts[-1] < at < size:
                cuts.append(at)
    cuts.append(size)
    return list(zip(cuts[:-1], cuts[1:]))


def first_line(path: Path, start: int) -> int:
    """The number of the line that starts at byte ``start``."""
    count, left = 1, start
    with open(path, "rb") as fh:
        while left:
            block = fh.read(min(left, 16 << 20))
            if not block:
                break
            count += block.count(b"\n")
            left -= len(block)
    return count


@dataclass
class Part:
    """What reading one part found: its rows and the report, counts and field state of its read."""

    rows: Columns
    report: ReadReport
    tally: Tally
    blank: list[int]
    present: set[str]  # canonical fields some record of the part matched (FieldMap.present)
    groups: tuple[frozenset[int], frozenset[int]] | None  # (common, union) of the kept records' canonical fields
    lacking: int = 0  # records refused for lacking the fields of the records before them in the part


class Workers:
    """Worker processes reading the parts after the first, started at once."""

    def __init__(self, jobs: list[bytes]) -> None:
        env = {_WORKER_ENV: "1", "POLARS_MAX_THREADS": "1"}
        self.procs: list[subprocess.Popen | None] = []
        for job in jobs:  # each a pickled mechanism.readers.read_part call
            proc = start_worker("mechanism.readers", env)
            self.procs.append(proc)
            if proc is None:
                continue
            try:
                write_frame(proc.stdin, job)  # type: ignore[arg-type]
                proc.stdin.close()  # type: ignore[union-attr]
            except OSError:  # a worker that died at start: its part is read again here
                pass

    def results(self) -> list[Part | None]:
        """Each worker's part, in order; None for one that failed."""
        out: list[Part | None] = []
        for proc in self.procs:
            part = None
            if proc is not None:
                try:
                    data = read_frame(proc.stdout)  # type: ignore[arg-type]
                    part = pickle.loads(data) if data is not None else None
                except (OSError, EOFError, ValueError, pickle.UnpicklingError):
                    part = None
                proc.wait()
            out.append(part if isinstance(part, Part) and proc is not None and proc.returncode == 0 else None)
        return out

    def stop(self) -> None:
        for proc in self.procs:
            if proc is None:
                continue
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()


@contextlib.contextmanager
def started(jobs: list[bytes]) -> Iterator[Workers]:
    """Workers for ``jobs``, stopped on leaving the block whatever happened in it."""
    workers = Workers(jobs)
    try:
        yield workers
    finally:
        workers.stop()


# ---------------------------------------------------------------------------------------------
# putting the parts together


def uniform(parts: list[Part]) -> bool:
    """Every kept record of every part has the same canonical fields, and no part after the
    first refused a record for lacking some (its message counts the records before it in the
    file): then each part refused what one read of the whole file refuses."""
    seen = {p.groups for p in parts if p.groups is not None}
    return (len(seen) <= 1 and all(common == union for common, union in seen)
            and not any(p.lacking for p in parts[1:]))


def mergeable(tally: Tally, parts: list[Part]) -> bool:
    """Whether counting the parts one after another into ``tally`` gives what one pass over the
    whole file would: no bounded count filled up or dropped anything along the way."""
    forms = set(tally.nothing_forms)
    tools = tally.replies.tools_by_text()
    for part in parts:
        t = part.tally
        if len(t.nothing_forms) >= NOTHING_FORMS or t.replies.pruned:
            return False
        forms |= set(t.nothing_forms)
        for text, names in t.replies.tools_by_text().items():
            if len(names) >= MAX_TOOLS:
                return False
            tools.setdefault(text, set()).update(names)
    return (len(forms) <= NOTHING_FORMS and len(tools) <= MAX_TEXTS
            and all(len(names) <= MAX_TOOLS for names in tools.values()))


# How each count of a Tally is put together with the next part's (test_read_parts checks that
# every field has a rule): sums, first seen wins, lists kept to their bound, sets to their bound.
_SUMS = frozenset({"hashed_qid", "keyed_questions", "arm_overridden", "kept_without_answer", "unanswered",
                   "disagreements", "scored", "given", "folded_trailing", "long_answers", "gold_leaks",
                   "parallel_calls"})
_COUNTERS = frozenset({"arm_fields", "calls_by_tool", "failed_by_tool", "failure_kinds", "answer_rules",
                       "folded_calls", "self_calls", "hashed_groups", "nothing_forms"})
_FIRST = frozenset({"arm_from_stem", "escaped_arms", "arm_examples"})
_LISTS = {"disagreement_examples": EXAMPLES, "gold_leak_examples": EXAMPLES}
_SAME = frozenset({"error_pattern", "scorer_name", "arm_mapped"})  # set from the options on every row
_OWN = frozenset({"question_key_label", "parser_notes", "arm_scoring", "field_values", "replies"})
_CACHES = frozenset({"_norm", "_f1_cache"})
RULES = _SUMS | _COUNTERS | _FIRST | frozenset(_LISTS) | _SAME | _OWN | _CACHES


def add_tally(into: Tally, part: Tally) -> None:
    """Count ``part`` (read after everything ``into`` holds) into ``into``; see :func:`mergeable`."""
    for name in _SUMS:
        setattr(into, name, getattr(into, name) + getattr(part, name))
    for name in _COUNTERS:
        counts: Counter = getattr(into, name)
        for key, n in getattr(part, name).items():
            counts[key] += n
    for name in _FIRST:
        first: dict = getattr(into, name)
        for key, value in getattr(part, name).items():
            first.setdefault(key, value)
    for name, bound in _LISTS.items():
        kept: list = getattr(into, name)
        kept.extend(getattr(part, name)[: max(0, bound - len(kept))])
    for name in _SAME:
        setattr(into, name, getattr(part, name))
    into.question_key_label = part.question_key_label or into.question_key_label
    for kind, (count, where) in part.parser_notes.items():
        entry = into.parser_notes.setdefault(kind, [0, []])
        entry[0] += count
        entry[1].extend([w for w in where if w not in entry[1]][: max(0, EXAMPLES - len(entry[1]))])
    for arm, stats in part.arm_scoring.items():
        mine = into.arm_scoring.setdefault(arm, [0, 0, 0])
        for i, n in enumerate(stats):
            mine[i] += n
    for name, values in part.field_values.items():
        # only how many distinct values (up to the bound) is ever read
        seen = into.field_values.setdefault(name, set())
        for value in values:
            if len(seen) >= FIELD_VALUES:
                break
            seen.add(value)
    into.replies.absorb(part.replies)


def add_rows(into: Columns, part: Columns) -> None:
    """``part``'s rows after ``into``'s."""
    for name, values in part.scalars.items():
        into.scalars[name].extend(values)
    into.gold.extend(part.gold)
    into.gold_len.extend(part.gold_len)
    for name, values in part.steps.items():
        into.steps[name].extend(values)
    into.steps_len.extend(part.steps_len)
    for flag, values in part.flags.items():
        into.flags[flag].extend(values)
        into.any_flag[flag] = into.any_flag[flag] or part.any_flag[flag]


def tally_fields() -> set[str]:
    """The names of a :class:`~mechanism.readers._build.Tally`'s counts."""
    return {f.name for f in fields(Tally)}
