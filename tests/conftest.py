from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
# numba (UMAP, pynndescent) compiles on first use in every fresh process, which without a cache
# takes most of the suite's time. A cache folder kept between processes (and between runs) compiles once;
# set before anything imports numba, inherited by the CLI subprocesses. Gitignored.
os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba-cache"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIREACT = ROOT.parent / "shared" / "data" / "fireact-hotpotqa"


@pytest.fixture(scope="session")
def load_benchmark():
    """A function loading the script ``benchmarks/<name>.py`` as a module."""
    return _load_benchmark


def _load_benchmark(name: str) -> ModuleType:
    """The script ``benchmarks/<name>.py`` as a module (it imports its harness and sibling
    benchmarks as top-level modules, so their folder is on the path while it loads)."""
    folder = ROOT / "benchmarks"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def fireact_dir() -> Path:
    if not (FIREACT / "trajs").is_dir():
        pytest.skip(f"FireAct data not found at {FIREACT} (it lives in ../shared beside the project)")
    return FIREACT


# Session fixtures for what many tests built again. Treat them as read-only: polars frames are
# immutable, and a test that needs a changed table derives a new one.
@pytest.fixture(scope="session")
def default_world():
    """``simulate(random_state=0)``: the paper-scale default (3 arms x 100 questions x 64 samples)."""
    from mechanism.datasets.simulation import simulate

    return simulate(random_state=0, progress=False)


@pytest.fixture(scope="session")
def small_pair():
    """``simulate(n_questions=8, n_samples=4, arms=("base", "rl"), random_state=0)``: a small base/rl pair."""
    from mechanism.datasets.simulation import simulate

    return simulate(n_questions=8, n_samples=4, arms=("base", "rl"), random_state=0, progress=False)


@pytest.fixture(scope="session")
def saved_small_space(tmp_path_factory) -> Path:
    """A small fitted space saved to disk (hashing-64 on ``simulate(n_questions=15, n_samples=4,
    random_state=0)``, map coordinates included), with its runs beside it as ``runs.parquet``.
    Tests that tamper with it copy the folder first."""
    from mechanism.analysis.strategy_space import StrategySpace
    from mechanism.datasets.simulation import simulate

    folder = tmp_path_factory.mktemp("small-space") / "space"
    sim = simulate(n_questions=15, n_samples=4, random_state=0, progress=False)
    space = StrategySpace(embedder="hashing-64", progress=False).fit(sim.runs)
    space.map_coordinates()
    space.save(folder)
    sim.runs.write_parquet(folder.parent / "runs.parquet")
    return folder
