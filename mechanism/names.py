"""Names made from untrusted text (arm and strategy names) that end up as file names."""
from __future__ import annotations

import re


def safe_filename(name: str, *, max_length: int = 80) -> str:
    """A file-name-safe rendering of an arm or strategy name (untrusted text).

    >>> safe_filename("../../etc/passwd")
    'etc_passwd'
    """
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("._")
    return (cleaned or "unnamed")[:max_length]
