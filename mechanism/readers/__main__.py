"""A worker of :mod:`mechanism.readers._parts`: reads one part of a large JSONL file.

``python -m mechanism.readers`` receives one pickled job on stdin (from the reading process,
over a pipe, never from a file) and writes back the pickled part, or exits with status 1 when
the part could not be read (the caller then reads the file itself, in order, and raises or
skips as one read does).
"""
from __future__ import annotations

import pickle
import sys

from mechanism.core.workers import answer_stream, read_frame, write_frame
from mechanism.readers import read_part


def main() -> int:
    answers = answer_stream()
    data = read_frame(sys.stdin.buffer)
    if data is None:
        return 2
    try:
        part = read_part(**pickle.loads(data))
    except Exception:  # noqa: BLE001 - any failure: the caller reads this part again itself
        return 1
    write_frame(answers, pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
