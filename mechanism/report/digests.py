"""Digests of an output folder's files with the run's own timings taken out: two runs of one
analysis on one input then agree file for file, and any other difference is a changed output.

Used by the test that the fast paths change no output and by ``benchmarks/bench_small.py``,
which compares every output with another commit's.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

#: The file a finished command writes last into its output folder, listing what it wrote
#: (the command line's atomic outputs, ``mechanism._cli._common``); named here, the lower
#: layer, so the digests leave it out without importing the command line.
COMPLETE_MARKER = ".mechanism-complete"

# The page's line of phase times ("pass@(k,T) 1.2 s, strategies 3.4 s, ..."), in Markdown and HTML.
_TIMINGS_LINE = re.compile(rb"pass@\(k,T\) [0-9.]+ s, strategies [0-9.]+ s[^<\n]*")


def output_digests(folder: str | Path, *, ignore_arrays: Sequence[str] = ()) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` (relative path -> hex digest), timings removed.

    Parameters
    ----------
    folder
        An output folder (``mechanism report``'s, or any command's).
    ignore_arrays
        Arrays a saved space's ``space.json`` lists that are left out of its digest (to compare
        with a commit that did not save them).

    Returns
    -------
    dict of str to str
        The digests, by path relative to ``folder``, sorted; the completion marker is left out.
        ``numbers.json`` is hashed without its ``seconds`` and the pages without their line of
        phase times.

    Raises
    ------
    ValueError
        A ``numbers.json`` without ``seconds``, or a page with more than one line of phase
        times: what would be taken out is then not only the run's timings.
    """
    folder = Path(folder)
    out = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.name == COMPLETE_MARKER:
            continue
        data = path.read_bytes()
        if path.name == "numbers.json":
            numbers = json.loads(data)
            if "seconds" not in numbers:
                raise ValueError(f"{path}: numbers.json holds no `seconds`")
            numbers.pop("seconds")
            data = json.dumps(numbers, sort_keys=True).encode()
        elif path.name == "space.json" and ignore_arrays:
            config = json.loads(data)
            for name in ignore_arrays:
                config.get("arrays", {}).pop(name, None)
            data = json.dumps(config, sort_keys=True).encode()
        elif path.suffix in (".md", ".html"):
            data, found = _TIMINGS_LINE.subn(b"", data)
            if found > 1:
                raise ValueError(f"{path}: {found} lines of phase times, expected at most one")
        out[str(path.relative_to(folder))] = hashlib.sha256(data).hexdigest()
    return out
