"""One input gives one image: the strategy map drawn in two fresh processes is the same file,
byte for byte (markers overlap, so the drawing order shows in anti-aliased pixels)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

_SCRIPT = """
import sys
import matplotlib
matplotlib.use("Agg")
import mechanism as mx
from mechanism.plots.style import save_figure
from mechanism.datasets.simulation import simulate
sim = simulate(n_questions=30, n_samples=4, random_state=0, progress=False)
space = mx.StrategySpace(embedder="hashing-256", random_state=0, progress=False).fit(sim.runs)
save_figure(mx.plots.strategy_map(space, sim.runs), sys.argv[1], "map", formats=("png",))
"""


@pytest.mark.slow
def test_strategy_map_is_the_same_file_in_two_processes(tmp_path):
    digests = []
    for i, hash_seed in enumerate(("1", "2")):
        out = tmp_path / f"map{i}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "MPLBACKEND": "Agg"}
        subprocess.run([sys.executable, "-c", _SCRIPT, str(out)], check=True, env=env, timeout=300)
        digests.append(hashlib.sha256((out / "map.png").read_bytes()).hexdigest())
    assert digests[0] == digests[1]
