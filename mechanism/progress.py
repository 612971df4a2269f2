"""Progress bars for long work, off when asked (``progress=False``) or when not a terminal."""
from __future__ import annotations

import sys
from collections.abc import Iterable
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
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, leave=False, file=sys.stderr)


def import_tqdm_quietly() -> None:
    """Import ``tqdm.auto`` with its notebook warning silenced, locally.

    bm25s, umap-learn and sentence-transformers import ``tqdm.auto`` at import time; in a
    notebook without ipywidgets that prints a ``TqdmWarning`` to stderr, which the library must
    not do unasked. Importing it once here, inside a local filter, leaves nothing to warn later.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import tqdm.auto  # noqa: F401
        import tqdm.autonotebook  # noqa: F401

