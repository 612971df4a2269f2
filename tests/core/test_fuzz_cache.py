"""Cache entries and saved strategy spaces are untrusted files: a corrupt or crafted one is
rebuilt (caches) or refused with a one-line error (saved spaces); nothing is allocated from a
size a file claims, and no model is loaded on a file's word."""
from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism.analysis.embed import Embedder, make_embedder
from mechanism.core.cachefile import load_json_small, load_npy, read_checked, sidecar, write_checked
from mechanism.core.errors import InputError, MechanismError

N = int(os.environ.get("MECHANISM_HYPOTHESIS_EXAMPLES", "40"))
FUZZ = settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])
json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=12),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=4), max_leaves=16)


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _huge_header(arr: np.ndarray, shape: tuple[int, ...]) -> bytes:
    """The bytes of ``arr`` under a header that claims ``shape``."""
    header = {"descr": np.lib.format.dtype_to_descr(arr.dtype), "fortran_order": False, "shape": shape}
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + arr.tobytes()  # the writer puts the magic string first


def test_npy_header_is_checked_before_allocation():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(load_npy(_npy(arr), dtype=np.float32, ndim=2), arr)
    with pytest.raises(ValueError, match="claims shape"):
        load_npy(_huge_header(arr, (10**12, 10**6)))
    with pytest.raises(ValueError, match="object arrays"):
        load_npy(_huge_header(np.zeros(0), (0,)).replace(b"'<f8'", b"'|O' "))
    with pytest.raises(ValueError):
        load_npy(b"\x93NUMPY garbage")


@FUZZ
@given(st.binary(max_size=200), st.integers(0, 200))
def test_npy_fuzz(noise, cut):
    data = _npy(np.arange(6, dtype=np.float64).reshape(2, 3))
    for candidate in (noise, data[:cut] + noise, data[:cut]):
        try:
            arr = load_npy(candidate)
        except ValueError:
            continue
        assert arr.nbytes <= len(candidate)  # never more than the file holds


@pytest.mark.parametrize("damage", ["list", "nested", "huge", "not-utf8", "scalar"])
def test_corrupt_sidecars_are_rebuilt(tmp_path, damage):
    path = tmp_path / "entry.parquet"
    write_checked(path, b"payload", {"format": 1})
    side = sidecar(path)
    side.write_bytes({"list": b"[1, 2, 3]", "nested": b"[" * 100_000 + b"]" * 100_000,
                      "huge": b" " * (65 * 2**20), "not-utf8": b"{\"a\": \"\xff\"}", "scalar": b"7"}[damage])
    assert read_checked(path, {"format": 1}) is None
    assert not path.exists() and not side.exists()  # deleted, so the caller rebuilds it
    write_checked(path, b"payload", {"format": 1})
    assert read_checked(path, {"format": 1}) == b"payload"


@FUZZ
@given(json_values, st.binary(max_size=40))
def test_cachefile_fuzz(meta, payload):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "e.bin"
        path.write_bytes(payload)
        sidecar(path).write_text(json.dumps(meta))
        assert read_checked(path) in (None, payload)


class _Fake(Embedder):
    def __init__(self, **kw):
        super().__init__("fake-model", **kw)

    def _encode(self, texts):
        out = np.array([[len(t) + 1.0, t.count("a") + 1.0] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.mark.parametrize("damage", ["list", "nested", "huge-header"])
def test_corrupt_embedding_shards_are_rebuilt(tmp_path, damage):
    texts = ["alpha", "beta"]
    good = _Fake(cache_dir=tmp_path, progress=False).embed(texts)
    npy = next(tmp_path.rglob("*.npy"))
    meta = npy.with_suffix(".json")
    if damage == "list":
        meta.write_text("[1, 2]")
    elif damage == "nested":
        meta.write_text("[" * 50_000 + "]" * 50_000)
    else:
        m = json.loads(meta.read_text())
        m["shape"] = [10**9, 10**6]
        meta.write_text(json.dumps(m))
        npy.write_bytes(_huge_header(np.zeros((2, 2), np.float32), (10**9, 10**6)))
    again = _Fake(cache_dir=tmp_path, progress=False)
    np.testing.assert_allclose(again.embed(texts), good)
    assert again.n_computed == 2  # rebuilt
    third = _Fake(cache_dir=tmp_path, progress=False)
    third.embed(texts)
    assert third.n_computed == 0


def test_hashing_sizes_are_checked():
    for bad in ("hashing-0", "hashing-99999999999", "hashing-70000"):
        with pytest.raises(MechanismError, match="1 to 65536"):
            make_embedder(bad)
    assert make_embedder("hashing-8").embed(["a b"]).shape == (1, 8)


@pytest.fixture(scope="module")
def saved(saved_small_space):
    return saved_small_space  # shared with tests/strategies/test_fuzz_spaces.py (tests/conftest.py)


def _copy(saved: Path, tmp: str) -> Path:
    out = Path(tmp) / "space"
    shutil.copytree(saved, out)
    return out


def _edit(folder: Path, **fields) -> None:
    cfg = json.loads((folder / "space.json").read_text())
    cfg.update(fields)
    (folder / "space.json").write_text(json.dumps(cfg))


def test_saved_space_model_names_come_from_an_allow_list(saved, tmp_path):
    from mechanism.analysis.strategy_space import StrategySpace

    StrategySpace.load(saved)  # the known model loads by itself
    for name in ("hashing-0", "hashing-99999999", str(tmp_path / "evil_model"), "some-org/some-model"):
        folder = _copy(saved, tempfile.mkdtemp(dir=tmp_path))
        _edit(folder, embedding_model=name)
        with pytest.raises(InputError) as info:
            StrategySpace.load(folder)
        assert info.value.field == "embedding_model" and "\n" not in str(info.value)
    # a folder named in the file is refused even when it holds a pickled model
    evil = tmp_path / "evil_model"
    evil.mkdir()
    (evil / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")
    folder = _copy(saved, tempfile.mkdtemp(dir=tmp_path))
    _edit(folder, embedding_model=str(evil))
    with pytest.raises(InputError, match="pass `embedder=`"):
        StrategySpace.load(folder)
    # the user may name it explicitly; a mismatch with the file is still refused
    with pytest.raises(InputError, match="fitted with embedding model"):
        StrategySpace.load(saved, embedder="hashing-32")


def test_saved_space_huge_npy_header_is_refused(saved, tmp_path):
    from mechanism.analysis.strategy_space import StrategySpace

    folder = _copy(saved, str(tmp_path))
    (folder / "train_labels.npy").write_bytes(_huge_header(np.zeros(3, np.int64), (10**12,)))
    with pytest.raises(InputError, match="claims shape") as info:
        StrategySpace.load(folder)
    assert "\n" not in str(info.value)


FIELDS = ["embedding_model", "embedding_dim", "feature_weights", "params", "threshold", "n_strategies", "arrays",
          "tables", "format_version", "feature_columns"]


@settings(max_examples=max(10, N // 2), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(FIELDS), json_values | st.sampled_from(["hashing-0", "hashing-64", 10**12]),
                       min_size=1, max_size=3))
def test_saved_space_fuzz(saved, fields):
    from mechanism.analysis.strategy_space import StrategySpace

    with tempfile.TemporaryDirectory() as tmp:
        folder = _copy(saved, tmp)
        _edit(folder, **fields)
        try:
            StrategySpace.load(folder)
        except MechanismError as exc:
            assert "\n" not in str(exc)


def test_sidecar_reader_limits(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        load_json_small(path)


# ---------------------------------------------------------------- crafted cache entries
# Caches are shared with workers through --cache-dir, so an entry may be crafted with a digest
# that matches it. Each case below is rebuilt (never a traceback, never a hang, never used).

def _alarm(seconds: int):
    """Fail instead of hanging forever (a FIFO opened for reading blocks until a writer comes)."""
    import signal

    def stop(*_):
        raise AssertionError("blocked: a FIFO or device was read")

    signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)


@pytest.fixture(scope="module")
def fit_runs():
    from mechanism.datasets.simulation import simulate

    return simulate(n_questions=12, n_samples=4, random_state=5, progress=False).runs


@pytest.fixture(scope="module")
def plain_fit(fit_runs):
    from mechanism.analysis.strategy_space import StrategySpace

    return StrategySpace(embedder="hashing-64", progress=False).fit(fit_runs)


CRAFTED_FITS = {
    "nested": lambda r: b"[" * 100_000 + b"]" * 100_000,
    "huge-int-labels": lambda r: json.dumps({**r, "labels": [10**400] * len(r["labels"])}).encode(),
    "float-labels": lambda r: json.dumps({**r, "labels": [0.5] * len(r["labels"])}).encode(),
    "labels-gap": lambda r: json.dumps({**r, "labels": [7] * len(r["labels"]),
                                        "summaries": [{**r["summaries"][0], "strategy": 7}]}).encode(),
    "nan-threshold": lambda r: json.dumps({**r, "threshold": float("nan")}).encode(),
    "string-threshold": lambda r: json.dumps({**r, "threshold": "1e999"}).encode(),
    "summaries-not-a-list": lambda r: json.dumps({**r, "summaries": 7}).encode(),
    "stability-not-a-mapping": lambda r: json.dumps({**r, "stability": [1, 2]}).encode(),
    "duplicate-key": lambda r: json.dumps(r).replace('"threshold":', '"threshold": 0, "threshold":', 1).encode(),
}


@pytest.mark.parametrize("case", sorted(CRAFTED_FITS))
def test_crafted_fit_entries_with_valid_digests_are_rebuilt(tmp_path, fit_runs, plain_fit, case):
    from mechanism.analysis.strategy_space import StrategySpace

    StrategySpace(embedder="hashing-64", cache_dir=tmp_path, progress=False).fit(fit_runs)
    (entry,) = [p for p in (tmp_path / "fits").iterdir() if sidecar(p).exists()]
    record = json.loads(read_checked(entry))
    write_checked(entry, CRAFTED_FITS[case](record), {"format": 1})  # a digest that matches
    space = StrategySpace(embedder="hashing-64", cache_dir=tmp_path, progress=False).fit(fit_runs)
    np.testing.assert_array_equal(space.labels_, plain_fit.labels_)
    assert space.threshold_ == plain_fit.threshold_
    assert json.loads(read_checked(entry))["labels"] == plain_fit.train_labels_.tolist()  # rewritten


def test_a_fifo_or_dev_zero_in_the_caches_is_refused_unread(tmp_path, fit_runs, plain_fit):
    from mechanism.analysis.strategy_space import StrategySpace

    StrategySpace(embedder="hashing-64", cache_dir=tmp_path, progress=False).fit(fit_runs)
    (entry,) = [p for p in (tmp_path / "fits").iterdir() if sidecar(p).exists()]
    entry.unlink()
    os.mkfifo(entry)
    shard = next((tmp_path / "segments").rglob("*.parquet"))
    shard.unlink()
    os.symlink("/dev/zero", shard)
    _alarm(60)
    try:
        space = StrategySpace(embedder="hashing-64", cache_dir=tmp_path, progress=False).fit(fit_runs)
    finally:
        import signal

        signal.alarm(0)
    np.testing.assert_array_equal(space.labels_, plain_fit.labels_)
    assert entry.is_file() and not entry.is_symlink()  # rebuilt as a regular file


def test_embedding_shard_keys_are_covered_by_the_checksum(tmp_path):
    texts = ["alpha", "beta", "gamma"]
    good = _Fake(cache_dir=tmp_path, progress=False).embed(texts)
    meta = next(tmp_path.rglob("*.json"))
    m = json.loads(meta.read_text())
    m["keys"] = m["keys"][::-1]  # rows now claim other texts; the vectors are untouched
    meta.write_text(json.dumps(m))
    again = _Fake(cache_dir=tmp_path, progress=False)
    np.testing.assert_allclose(again.embed(texts), good)
    assert again.n_computed == 3  # the shard was refused, not used with its keys reversed


@pytest.mark.parametrize("damage", ["fifo", "dev-zero", "nan", "symlink-out"])
def test_embedding_shards_that_are_not_ours_are_rebuilt_unread(tmp_path, damage):
    texts = ["alpha", "beta"]
    cache = tmp_path / "cache"
    good = _Fake(cache_dir=cache, progress=False).embed(texts)
    npy = next(cache.rglob("*.npy"))
    if damage == "nan":
        m = json.loads(npy.with_suffix(".json").read_text())
        arr = np.full((2, 2), np.nan, np.float32)
        npy.write_bytes(_npy(arr))
        from mechanism.analysis.embed import _shard_digest

        m["sha256"] = _shard_digest(m["keys"], arr)
        npy.with_suffix(".json").write_text(json.dumps(m))
    else:
        copy = tmp_path / "outside.npy"
        shutil.copy(npy, copy)
        npy.unlink()
        if damage == "fifo":
            os.mkfifo(npy)
        else:
            os.symlink("/dev/zero" if damage == "dev-zero" else copy, npy)
    _alarm(60)
    try:
        again = _Fake(cache_dir=cache, progress=False)
        np.testing.assert_allclose(again.embed(texts), good)
    finally:
        import signal

        signal.alarm(0)
    assert again.n_computed == 2


def test_model_names_are_parsed_by_a_bounded_grammar():
    from mechanism.analysis.embed import known_model

    for name in ("hashing-\u00b2", "hashing-\u0661\u0662", "composed:" * 3000, "composed:composed:hashing-8",
                 "x" * 10_000, "hashing-" + "9" * 5000):
        assert known_model(name) is False
        if not name.startswith("x"):  # a long plain name is a model path the user may give
            with pytest.raises(MechanismError) as info:
                make_embedder(name)
            assert "\n" not in str(info.value)
    assert known_model("composed:hashing-8") and known_model("hashing-8") and known_model("all-MiniLM-L6-v2")
