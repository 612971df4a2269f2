"""Progress bars for long work, off when asked (``progress=False``) or when not a terminal."""
from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def progress(iterable: Iterable[T], *, enabled: bool | None = True, desc: str | None = None,
             total: int | None = None) -> Iterable[T]:
    """Wrap ``iterable`` in a progress bar on stderr.

    ``enabled=None`` shows it only when stderr is a terminal; ``False`` never shows it.
    """
    show = sys.stderr.isatty() if enabled is None else enabled
    if not show:
        return iterable
    # tqdm's text bar, imported only when shown: tqdm.auto warns on import in a notebook without
    # ipywidgets, which would print unasked
    from tqdm import tqdm  # noqa: PLC0415 - tqdm: only when a bar is shown (tqdm.auto warns on import in some notebooks)

    return tqdm(iterable, desc=desc, total=total, leave=False, file=sys.stderr)


def import_tqdm_quietly() -> None:
    """Import ``tqdm.auto`` with its notebook warning silenced, locally.

    bm25s, umap-learn and sentence-transformers import ``tqdm.auto`` at import time; in a
    notebook without ipywidgets that prints a ``TqdmWarning`` to stderr, which the library must
    not do unasked. Importing it once here, inside a local filter, leaves nothing to warn later.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # imported for their side effect, under the filter: later imports find them loaded and do not warn
        import tqdm.auto  # noqa: PLC0415 - tqdm: imported here, under the warning filter, on purpose
        import tqdm.autonotebook  # noqa: F401, PLC0415 - as above; the name itself is unused



class StageClock:
    """Seconds spent in each stage of a long job, told to ``echo`` as each one ends.

    >>> clock = StageClock()
    >>> clock.lap("read")
    >>> list(clock.seconds)
    ['read']
    """

    def __init__(self, echo: Callable[[str], None] | None = None) -> None:
        self._now = time.perf_counter
        self._echo = echo or (lambda line: None)
        self.seconds: dict[str, float] = {}
        self._start = self._now()

    def lap(self, stage: str) -> None:
        """Close ``stage`` (timed from the previous lap or :meth:`restart`) and report it."""
        now = self._now()
        self.seconds[stage] = now - self._start
        self._start = now
        self._echo(f"{stage}: done in {self.seconds[stage]:.1f} s")

    def restart(self) -> None:
        """Time the next stage from now (after work timed elsewhere)."""
        self._start = self._now()
