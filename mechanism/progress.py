"""Progress bars for long work, off when asked (``progress=False``) or when not a terminal."""
from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T], *, enabled: bool | None = True, desc: str | None = None,
             total: int | None = None) -> Iterable[T]:
    """Wrap ``iterable`` in a progress bar on stderr.

    ``enabled=None`` shows it only when stderr is a terminal; ``False`` never shows it.
    """
    show = sys.stderr.isatty() if enabled is None else enabled
    return tqdm(iterable, desc=desc, total=total, disable=not show, leave=False, file=sys.stderr)
