"""Figures saved by worker processes while the caller goes on.

Why: saving (laying out every text, drawing the PNG, subsetting fonts into the PDF) was over half
of a report's time on a few hundred episodes, on one core, while the other sat idle. Inside
:func:`saving_in_background`, :func:`mechanism.plots.style.save_figure` hands each figure to a
worker and returns its paths at once; leaving the block waits for every file.

A worker is ``python -m mechanism.plots.background``: a fresh interpreter that imports only
matplotlib and the paper style. It never runs the caller's script again (as multiprocessing's
``spawn`` does for a script without a ``__main__`` guard) and never inherits a forked copy of the
caller's threads (torch, polars). A figure travels pickled over the worker's pipes, in memory,
between this package's own processes; nothing pickled is ever written to disk. The files are
byte-identical to saving in the caller. A figure that cannot be pickled is saved in the caller
at once, one whose worker is gone when the block ends (in the caller's thread: matplotlib is not
thread-safe); a worker's warnings are raised again in the caller.
"""
from __future__ import annotations

import contextlib
import contextvars
import pickle
import queue
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mechanism.core.errors import MechanismError
from mechanism.core.workers import (
    answer_stream,
    read_frame,
    start_worker,
    usable_cores,
    workers_setting,
    write_frame,
)
from mechanism.plots.handoff import HANDOFF

_NOT_SENT = frozenset({"backend", "backend_fallback", "interactive", "webagg.port", "webagg.address"})
_Job = tuple[bytes, str, str, tuple[str, ...], dict[str, Any]]
# a failure: an OSError's (errno, strerror, filename), another's one line, or None
_Error = tuple[int | None, str, str | None] | str | None
_HERE = "here"  # the active setting inside a block of 0 workers
_ACTIVE: contextvars.ContextVar[_Savers | str | None] = contextvars.ContextVar("figure_savers", default=None)


def default_workers() -> int:
    """Workers for a report: ``MECHANISM_FIGURE_WORKERS`` where set (0: figures saved in the
    caller), else one per core the process may use, at most 4 (a report has 10-20 figures)."""
    setting = workers_setting("MECHANISM_FIGURE_WORKERS")
    if setting is not None:
        return max(0, setting)
    return max(1, min(4, usable_cores()))


@contextlib.contextmanager
def saving_in_background(workers: int | None = None) -> Iterator[None]:
    """Within the block, :func:`~mechanism.plots.style.save_figure` saves in ``workers`` worker
    processes (default :func:`default_workers`; 0: in the caller, as outside the block).

    Leaving the block waits until every figure handed over in it is on disk, then raises the
    first failure (after an exception in the block, that exception stands). A block inside
    another uses the outer one's workers and, at its end, waits for what was handed over so far;
    inside a block of 0, one that names no number saves in the caller too.
    """
    outer = _ACTIVE.get()
    n = (0 if outer is _HERE else default_workers()) if workers is None else int(workers)
    if n <= 0:
        token, handoff = _ACTIVE.set(_HERE), HANDOFF.set(None)
        try:
            yield
        finally:
            HANDOFF.reset(handoff)
            _ACTIVE.reset(token)
        return
    savers = outer if isinstance(outer, _Savers) else _Savers(n)
    token, handoff = _ACTIVE.set(savers), HANDOFF.set(submit)
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        HANDOFF.reset(handoff)
        _ACTIVE.reset(token)
        savers.wait(raise_errors=not failed)
        if savers is not outer:
            savers.close()


def submit(fig: Any, out: Path, stem: str, formats: Sequence[str]) -> bool:
    """Hand ``fig`` to the active workers; ``False`` (the caller saves it) outside
    :func:`saving_in_background` or when the figure cannot be pickled."""
    savers = _ACTIVE.get()
    if not isinstance(savers, _Savers):
        return False
    try:
        blob = pickle.dumps(fig, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - any unpicklable artist (a lambda formatter, say): saved in the caller
        return False
    import matplotlib  # noqa: PLC0415 - matplotlib: loaded already, the figure is one of its

    # the caller's settings travel with the figure (a worker must draw as the caller would);
    # the backend stays the worker's own
    rc = {k: v for k, v in matplotlib.rcParams.items() if k not in _NOT_SENT}
    savers.put((blob, str(out), stem, tuple(formats), rc))
    return True


class _Savers:
    """Worker processes started on the first figure, each fed by one thread from a shared queue."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.jobs: queue.Queue[_Job | None] = queue.Queue()
        self.threads: list[threading.Thread] = []
        self.errors: list[_Error] = []
        self.caught: list[tuple[str, type[Warning]]] = []
        self.left: list[_Job] = []  # figures no worker saved
        self.pending = 0
        self.done = threading.Condition()

    def put(self, job: _Job) -> None:
        if not self.threads:
            self.threads = [threading.Thread(target=self._feed, name=f"figure-saver-{i}", daemon=True)
                            for i in range(self.n)]
            for thread in self.threads:
                thread.start()
        with self.done:
            self.pending += 1
        self.jobs.put(job)

    def _feed(self) -> None:
        worker = _start_worker()
        while (job := self.jobs.get()) is not None:
            outcome = _send(worker, job) if worker is not None else None
            with self.done:
                if outcome is None:  # no worker, or it died: the caller saves it (matplotlib is not thread-safe)
                    worker = _stop(worker)
                    self.left.append(job)
                else:
                    self.caught.extend(outcome[1])
                    if outcome[0]:
                        self.errors.append(outcome[0])
                self.pending -= 1
                self.done.notify_all()
        _stop(worker)

    def wait(self, *, raise_errors: bool = True) -> None:
        """Until every figure handed over is saved (those no worker took, here); then its
        warnings are raised again and, with ``raise_errors``, its first failure."""
        with self.done:
            self.done.wait_for(lambda: self.pending == 0)
            left, self.left = self.left, []
        for job in left:
            error, caught = _save_here(job)
            self.caught.extend(caught)
            if error:
                self.errors.append(error)
        caught, self.caught = self.caught, []
        errors, self.errors = self.errors, []
        for message, category in caught:
            warnings.warn(message, category, stacklevel=4)
        if errors and raise_errors:
            first = errors[0]
            if isinstance(first, tuple):  # raised as saving here would have, for the caller's handler
                raise OSError(*first)
            raise MechanismError(f"a figure could not be saved: {first}")

    def close(self) -> None:
        """Stop the workers (after :meth:`wait`)."""
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()


def _start_worker() -> subprocess.Popen | None:
    """A worker process, or ``None`` where none can start (the caller then saves every figure)."""
    return start_worker("mechanism.plots.background")


def _stop(worker: subprocess.Popen | None) -> None:
    """End a worker (its input closed, it exits) and close its pipes; always ``None``."""
    if worker is None:
        return None
    with contextlib.suppress(OSError):
        worker.stdin.close()  # type: ignore[union-attr]
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - a worker that hangs on exit
        worker.kill()
        worker.wait()
    with contextlib.suppress(OSError):
        worker.stdout.close()  # type: ignore[union-attr]
    return None


def _send(worker: subprocess.Popen, job: _Job
          ) -> tuple[_Error, list[tuple[str, type[Warning]]]] | None:
    """The worker's answer to one job, or ``None`` when it is gone."""
    try:
        write_frame(worker.stdin, pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL))  # type: ignore[arg-type]
        answer = read_frame(worker.stdout)  # type: ignore[arg-type]
        return None if answer is None else pickle.loads(answer)
    except (OSError, EOFError, ValueError, pickle.UnpicklingError):  # gone, or its answers unreadable
        worker.kill()
        return None


def _save_here(job: _Job) -> tuple[_Error, list[tuple[str, type[Warning]]]]:
    """Save one job in this process: ``(error, warnings)``, the error ``None`` when it was saved."""
    import matplotlib  # noqa: PLC0415 - matplotlib: only where a figure is saved

    from mechanism.plots.style import close, save_figure  # noqa: PLC0415 - matplotlib: as above

    blob, out, stem, formats, rc = job
    error: _Error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with matplotlib.rc_context(rc):
                fig = pickle.loads(blob)
                save_figure(fig, out, stem, formats=formats)
                close(fig)
        except OSError as exc:  # a full disk, a file-size limit: the caller's own OSError again
            error = (exc.errno, exc.strerror or str(exc), exc.filename)
        except Exception as exc:  # noqa: BLE001 - reported to the caller, who raises it
            error = f"{Path(out) / stem}: {' '.join(str(exc).split())[:300]}"
    return error, [(str(w.message), w.category) for w in caught]


def _serve() -> None:
    """The worker: jobs from standard input until it closes, each answered on standard output."""
    import matplotlib  # noqa: PLC0415 - matplotlib: the worker's own, before pyplot loads

    matplotlib.use("Agg")
    answers = answer_stream()
    stdin = sys.stdin.buffer
    while (data := read_frame(stdin)) is not None:
        write_frame(answers, pickle.dumps(_save_here(pickle.loads(data)), protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    _serve()
