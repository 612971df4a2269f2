"""Random streams keyed on the whole purpose, and the simultaneous bands of mechanism.core.resample."""
from __future__ import annotations

import numpy as np

from mechanism.core.resample import purpose_key, stream


def test_purposes_sharing_their_first_bytes_draw_different_numbers():
    # the old key read the first four bytes only: "shares:base" and "shares:rl" drew the same
    for a, b in (("shares:base", "shares:rl"), ("bootstrap", "bootstrap-2"), ("abcd", "abcde")):
        assert purpose_key(a) != purpose_key(b)
        assert not np.array_equal(stream(0, a).random(8), stream(0, b).random(8))
    assert np.array_equal(stream(3, "shares:rl").random(8), stream(3, "shares:rl").random(8))
    assert len(purpose_key("x")) == 4 and all(0 <= v < 2**32 for v in purpose_key("x"))
