"""Segment trajectories into moves and render each one with the question's content masked.

A strategy is how an agent uses its tools, not what it asks about (DESIGN.md section 5):
raw transcripts cluster by entity names. So every query's content words are replaced by
where they came from:

``[Q]``
    the word is in the question;
``[PREV]``
    the word was in an earlier query (reuse, even if a result also showed it);
``[OBS]``
    the word is a name or number first met in an earlier result (the mark of a bridge);
``[NEW]``
    none of these.

Each tool call becomes a *move* (``first_lookup``, ``bridge_lookup``, ``parallel_lookup``,
``new_lookup``, ``reformulation``, ``repeat``, ``verification``) and the episode ends in
``answer_with_evidence``, ``answer_without_evidence`` or ``no_answer``. A trajectory is
rendered as its sequence of masked moves, each with the query's scope (whole, most or part of
the question, or none of it) and the other sources of its words, e.g.
``1. search first_lookup: most of question [Q] | 2. search bridge_lookup: no question +
[OBS] [NEW] | answer``; it is summarised by strategy descriptors
(:data:`STRATEGY_FEATURES`) and descriptive columns (move counts, provenance shares,
question coverage, whether the answer was retrieved).
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from mechanism.schema import validate

LOOKUP_MOVES = ("first_lookup", "bridge_lookup", "parallel_lookup", "new_lookup",
                "reformulation", "repeat", "verification")
FINAL_MOVES = ("answer_with_evidence", "answer_without_evidence", "no_answer")
MOVES = LOOKUP_MOVES + FINAL_MOVES

PROVENANCE_TAGS = ("[Q]", "[OBS]", "[PREV]", "[NEW]")

# Strategy descriptors, and the weight each carries in the distance between trajectories.
# They are indicators and a log count, so they share a scale without standardising (which
# would inflate rare moves). What they encode: did the agent search; how long it went on;
# did it restate its query verbatim or reworded; did it carry a name from a result into a
# query (bridge, verification); did it branch to a sibling lookup (parallel, new target);
# and, for a plan that went beyond restating, did it open by asking the whole question
# (ask-then-check) or a part of it (decompose). One-lookup episodes are not told apart by
# their query's scope: "search once and answer" is one strategy however it was worded.
STRATEGY_FEATURES: dict[str, float] = {
    "searched": 2.0,
    "log_rounds": 0.5,
    "restates_verbatim": 1.0,
    "rewords": 0.5,
    "carries_over": 1.0,
    "branches": 1.0,
    "opens_whole": 1.0,
    "gives_answer": 1.0,
}
FEATURE_COLUMNS = tuple(STRATEGY_FEATURES)
# Descriptive columns: reported per trajectory, not used to define strategies. Evidence flags
# are outcomes: a strategy defined by its outcome would fold within-strategy success into
# composition (mechanism.compare).
DESCRIPTIVE_COLUMNS = (
    "n_rounds", "n_first_lookup", "n_bridge_lookup", "n_parallel_lookup", "n_new_lookup",
    "n_reformulation", "n_repeat", "n_verification", "share_question", "share_observation",
    "share_previous", "share_new", "first_query_coverage", "max_query_coverage",
    "n_distinct_queries", "answer_in_query", "answer_in_retrieved", "answer_from_question",
)

# A query keeping at least this share of an earlier query's content words is a
# reformulation of it rather than a new lookup.
REFORMULATION_KEEP = 0.6
# Rendering bounds: untrusted fields can be arbitrarily long; these keep memory and the
# embedder's input bounded.
# Query scope: all of the question's content words ("whole"), at least this share ("most",
# e.g. a reworded question or a question minus its target), or fewer ("part", e.g. one entity).
MOST_QUESTION_COVERAGE = 0.5
MAX_STEPS_RENDERED = 16
MAX_FIELD_CHARS = 20_000

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NAME = re.compile(r"\b(?:[^\W\d_a-z][^\W_]*|\d[^\W_]*)", re.UNICODE)
_TOOL_NAME = re.compile(r"[^a-z0-9_]+")


@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    # Imported on first use: scikit-learn costs ~0.3 s to import, and a fit whose
    # segmentations all come from the cache never tokenizes anything.
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def content_tokens(text: str | None) -> list[str]:
    """Lowercase content words of ``text`` (stop words dropped), in order, each kept once.

    Examples
    --------
    >>> content_tokens("Where was the director of Jaws born?")
    ['director', 'jaws', 'born']
    """
    if not text:
        return []
    stop = _stop_words()
    seen: dict[str, None] = {}
    for word in _WORD.findall(text[:MAX_FIELD_CHARS].lower()):
        if word not in stop and word not in seen:
            seen[word] = None
    return list(seen)


def _mask(tool: str, move: str, coverage: float, counts: dict[str, int]) -> str:
    """A query as placeholders: how much of the question it restates and which other sources
    its words came from (the order and number of words vary with entity names, so only the
    presence of each source is kept)."""
    if counts["[Q]"] == 0:
        scope = "no question"
    elif coverage >= 1.0:
        scope = "whole question [Q]"
    elif coverage >= MOST_QUESTION_COVERAGE:
        scope = "most of question [Q]"
    else:
        scope = "part of question [Q]"
    sources = " ".join(tag for tag in ("[OBS]", "[PREV]", "[NEW]") if counts[tag])
    return f"{tool} {move}: {scope}" + (f" + {sources}" if sources else "")


def _names(text: str | None) -> set[str]:
    """Lowercased capitalised words and numbers of ``text``: the entities a result names.

    A generic word a result happens to contain ("birthplace") is not carried-over
    information; a name or a year is."""
    if not text:
        return set()
    text = text[:MAX_FIELD_CHARS]
    if text == text.lower():
        # A lowercased corpus shows no capitals to tell names by: every content word counts.
        return set(content_tokens(text))
    return {w.lower() for w in _NAME.findall(text)} - _stop_words()


def _tool_label(tool: str | None) -> str:
    label = _TOOL_NAME.sub("_", (tool or "tool").lower()).strip("_")[:24]
    return label or "tool"


@dataclass
class _Step:
    move: str
    tool: str
    n_tokens: int
    share_question: float
    share_observation: float
    share_previous: float
    share_new: float
    question_coverage: float
    answer_in_query: bool
    answer_in_observation: bool
    masked: str


class _Memo:
    """Tokenisations of the texts met in one segmentation pass, each computed once.

    A table repeats its texts heavily (one question for every sample of it, one retrieved
    passage for many queries; 36,275 observations but 323 distinct ones in 20,016 simulated
    trajectories), and tokenising is most of the work. The memo lives for one call, so
    memory stays bounded by the table being segmented.
    """

    def __init__(self) -> None:
        self._tokens: dict[str | None, tuple[tuple[str, ...], frozenset[str]]] = {}
        self._names: dict[str | None, frozenset[str]] = {}
        self._tools: dict[str | None, str] = {}

    def tokens(self, text: str | None) -> tuple[tuple[str, ...], frozenset[str]]:
        """:func:`content_tokens` of ``text``, in order and as a set."""
        hit = self._tokens.get(text)
        if hit is None:
            toks = tuple(content_tokens(text))
            hit = self._tokens[text] = (toks, frozenset(toks))
        return hit

    def names(self, text: str | None) -> frozenset[str]:
        """:func:`_names` of ``text``."""
        hit = self._names.get(text)
        if hit is None:
            hit = self._names[text] = frozenset(_names(text))
        return hit

    def tool(self, tool: str | None) -> str:
        """:func:`_tool_label` of ``tool``."""
        hit = self._tools.get(tool)
        if hit is None:
            hit = self._tools[tool] = _tool_label(tool)
        return hit


def _segment_one(question: str | None, answer: str | None, steps: Sequence[dict] | None,
                 memo: _Memo | None = None) -> tuple[list[_Step], _Step, dict[str, float], str]:
    """Moves, final move, structural features and rendering of one trajectory."""
    memo = memo or _Memo()
    qset = memo.tokens(question)[1]
    atoks, aset = memo.tokens(answer)
    obs_seen: set[str] = set()
    obs_names: set[str] = set()  # names and numbers met in results: what a bridge carries over
    prev_words: set[str] = set()
    prev_queries: list[set[str]] = []
    prev_norm: set[str] = set()
    moves: list[_Step] = []
    for i, step in enumerate(steps or ()):
        step = step or {}  # a null step is a call with nothing recorded
        query = step.get("query")
        if query is None:
            query = step.get("arguments")
        toks, tset = memo.tokens(query)
        tags = []
        counts = {"[Q]": 0, "[OBS]": 0, "[PREV]": 0, "[NEW]": 0}
        for tok in toks:
            # An earlier query's word is reuse even when a result also showed it: only words
            # first met in a result mark information carried over (a bridge).
            if tok in qset:
                tag = "[Q]"
            elif tok in prev_words:
                tag = "[PREV]"
            elif tok in obs_names:
                tag = "[OBS]"
            else:
                tag = "[NEW]"
            counts[tag] += 1
            tags.append(tag)
        n = len(toks)
        norm = " ".join(sorted(tset))
        repeat = bool(norm) and norm in prev_norm
        # A reformulation keeps most of an earlier query's words (rewording swaps a few).
        near = (not repeat and bool(tset)
                and any(p and len(tset & p) / len(p) >= REFORMULATION_KEEP for p in prev_queries))
        answer_in_query = bool(aset) and aset <= tset
        # Checking an answer already retrieved: the query names it, and it came from retrieval
        # rather than from the question (in comparison questions the answer is in the question).
        verifying = i > 0 and answer_in_query and not aset <= qset and aset <= obs_seen
        if i == 0:
            move = "first_lookup"
        elif repeat:
            move = "repeat"
        elif verifying:
            move = "verification"
        elif counts["[OBS]"]:
            move = "bridge_lookup"
        elif near:
            move = "reformulation"
        elif n and counts["[Q]"] * 2 >= n:
            move = "parallel_lookup"
        else:
            move = "new_lookup"
        observation = step.get("observation")
        obs_toks = memo.tokens(observation)[1]
        tool = memo.tool(step.get("tool"))
        coverage = len(tset & qset) / len(qset) if qset else 0.0
        moves.append(_Step(
            move=move, tool=tool, n_tokens=n,
            share_question=counts["[Q]"] / n if n else 0.0,
            share_observation=counts["[OBS]"] / n if n else 0.0,
            share_previous=counts["[PREV]"] / n if n else 0.0,
            share_new=counts["[NEW]"] / n if n else 0.0,
            question_coverage=coverage,
            answer_in_query=answer_in_query,
            answer_in_observation=bool(aset) and aset <= obs_toks,
            masked=_mask(tool, move, coverage, counts),
        ))
        obs_seen |= obs_toks
        obs_names |= memo.names(observation)
        prev_words |= tset
        prev_queries.append(tset)
        if norm:
            prev_norm.add(norm)
    if answer is None:
        final_move = "no_answer"
    elif aset and aset <= obs_seen:
        final_move = "answer_with_evidence"
    else:
        final_move = "answer_without_evidence"
    atags = ["[Q]" if t in qset else "[OBS]" if t in obs_seen else "[NEW]" for t in atoks]
    final = _Step(
        move=final_move, tool="answer", n_tokens=len(atoks),
        share_question=atags.count("[Q]") / len(atoks) if atoks else 0.0,
        share_observation=atags.count("[OBS]") / len(atoks) if atoks else 0.0,
        share_previous=0.0,
        share_new=atags.count("[NEW]") / len(atoks) if atoks else 0.0,
        question_coverage=len(aset & qset) / len(qset) if qset else 0.0,
        answer_in_query=any(m.answer_in_query for m in moves),
        answer_in_observation=bool(aset) and aset <= obs_seen,
        masked=final_move,
    )
    queries = [m for m in moves if m.n_tokens]
    feats: dict[str, float] = {f"n_{m}": 0.0 for m in LOOKUP_MOVES}
    for m in moves:
        feats[f"n_{m.move}"] += 1.0
    for key in ("share_question", "share_observation", "share_previous", "share_new"):
        feats[key] = sum(getattr(m, key) for m in queries) / len(queries) if queries else 0.0
    feats["first_query_coverage"] = moves[0].question_coverage if moves else 0.0
    feats["max_query_coverage"] = max((m.question_coverage for m in moves), default=0.0)
    feats["n_distinct_queries"] = float(len(prev_norm) + any(not m.n_tokens for m in moves))
    searched = bool(moves)
    carries = feats["n_bridge_lookup"] + feats["n_verification"] > 0
    branches = feats["n_parallel_lookup"] + feats["n_new_lookup"] > 0
    feats["searched"] = float(searched)
    feats["log_rounds"] = float(np.log1p(len(moves)))
    feats["restates_verbatim"] = float(feats["n_repeat"] > 0)
    feats["rewords"] = float(feats["n_reformulation"] > 0)
    feats["carries_over"] = float(carries)
    feats["branches"] = float(branches)
    feats["opens_whole"] = float(searched and (carries or branches) and moves[0].question_coverage >= 1.0)
    feats["gives_answer"] = float(answer is not None)
    feats["answer_in_retrieved"] = float(final.answer_in_observation)
    feats["answer_in_query"] = float(final.answer_in_query)
    feats["answer_from_question"] = float(bool(aset) and aset <= qset)
    parts = [f"{i + 1}. {m.masked}" for i, m in enumerate(moves[:MAX_STEPS_RENDERED])]
    if len(moves) > MAX_STEPS_RENDERED:
        parts.append(f"... {len(moves) - MAX_STEPS_RENDERED} more lookups")
    # The rendering ends in "answer", not in whether it was supported: evidence is an
    # outcome, and a strategy defined by its outcome would fold within-strategy success into
    # composition (mechanism.compare). The evidence flags stay in the move table.
    parts.append("answer" if answer is not None else "no answer")
    rendering = " | ".join(parts)
    return moves, final, feats, rendering


_MOVE_SCHEMA = {
    "arm": pl.String, "question_id": pl.String, "sample_id": pl.Int64, "step": pl.Int64,
    "tool": pl.String, "move": pl.String, "n_tokens": pl.Int64, "share_question": pl.Float64,
    "share_observation": pl.Float64, "share_previous": pl.Float64, "share_new": pl.Float64,
    "question_coverage": pl.Float64, "answer_in_query": pl.Boolean,
    "answer_in_observation": pl.Boolean, "masked": pl.String,
}


_SEGMENT_COLUMNS = ("rendering", "moves", *(c for c in FEATURE_COLUMNS + DESCRIPTIVE_COLUMNS if c != "n_rounds"))
# What a row's segmentation reads: the question, the answer and every step. Not `gold` (the
# segmentation never looks at it, and keying on it would only split identical episodes) nor
# the arm or ids (the same episode in two arms is segmented alike).
_KEY_COLUMNS = ("question", "answer", "steps")
_REQUIRED = ("arm", "question_id", "sample_id", "question", "answer", "n_rounds", "steps")


def row_keys(runs: pl.DataFrame) -> pl.Series:
    """Content key of each row: BLAKE2b-128 (hex) of its question, answer and steps.

    The serialisation is polars' JSON encoding of the row's fields, which tells a null
    from an empty string and keeps every step field, so two rows share a key only when
    their segmentation inputs are identical.
    """
    encoded = runs.select(pl.struct(*_KEY_COLUMNS).struct.json_encode())["question"].to_list()
    return pl.Series("key", [hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
                             for t in encoded], dtype=pl.String)


def _segment_distinct(runs: pl.DataFrame, keys: pl.Series, *,
                      with_moves: bool) -> tuple[pl.DataFrame, list[list[_Step]] | None]:
    """Segment each distinct row of ``runs`` once.

    Returns one row per distinct key (``key`` and :data:`_SEGMENT_COLUMNS`, in order of first
    appearance) and, when ``with_moves``, each distinct row's moves (final answer last).
    """
    first = keys.is_first_distinct().to_numpy()
    idx = np.flatnonzero(first)
    sub = runs[idx] if len(idx) < runs.height else runs
    memo = _Memo()
    feats: dict[str, list[float]] = {name: [] for name in _SEGMENT_COLUMNS[2:]}
    renderings: list[str] = []
    sequences: list[str] = []
    all_moves: list[list[_Step]] | None = [] if with_moves else None
    for question, answer, steps in zip(sub["question"].to_list(), sub["answer"].to_list(),
                                       sub["steps"].to_list()):
        moves, final, f, rendering = _segment_one(question, answer, steps, memo)
        for name, values in feats.items():
            values.append(f[name])
        renderings.append(rendering)
        sequences.append(" > ".join([m.move for m in moves] + [final.move]))
        if all_moves is not None:
            all_moves.append([*moves, final])
    table = pl.DataFrame({"key": keys.gather(idx), "rendering": renderings, "moves": sequences,
                          **feats},
                         schema={"key": pl.String, "rendering": pl.String, "moves": pl.String,
                                 **{name: pl.Float64 for name in feats}})
    return table, all_moves


def _trajectories(runs: pl.DataFrame, keys: pl.Series, table: pl.DataFrame) -> pl.DataFrame:
    """Per-row output of :func:`render` from per-key segmentations."""
    traj = (runs.select("arm", "question_id", "sample_id").with_columns(keys)
            .join(table, on="key", how="left", maintain_order="left"))
    return traj.with_columns(runs["n_rounds"].cast(pl.Float64).alias("n_rounds")).select(
        "arm", "question_id", "sample_id", "rendering", "moves", *FEATURE_COLUMNS, *DESCRIPTIVE_COLUMNS)


def segment_all(runs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Moves (one row per tool call plus the final answer) and per-trajectory renderings.

    Identical rows (same question, answer and steps, see :func:`row_keys`) are segmented
    once.

    Parameters
    ----------
    runs
        A canonical trajectory table (needs ``arm``, ``question_id``, ``sample_id``,
        ``question``, ``answer``, ``n_rounds``, ``steps``).

    Returns
    -------
    moves, trajectories
        See :func:`segment` and :func:`render`.
    """
    validate(runs, source="runs", required=_REQUIRED)
    keys = row_keys(runs)
    table, distinct_moves = _segment_distinct(runs, keys, with_moves=True)
    assert distinct_moves is not None
    # Moves of each distinct row, laid out once, then gathered for every row in table order.
    lengths = np.array([len(m) for m in distinct_moves], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    flat = [m for moves in distinct_moves for m in moves]
    position = {k: i for i, k in enumerate(table["key"].to_list())}
    inverse = np.array([position[k] for k in keys.to_list()], dtype=np.int64)
    row_len = lengths[inverse]
    total = int(row_len.sum())
    within = np.arange(total) - np.repeat(np.cumsum(row_len) - row_len, row_len)
    gather = np.repeat(offsets[inverse], row_len) + within
    names = ("tool", "move", "n_tokens", "share_question", "share_observation", "share_previous",
             "share_new", "question_coverage", "answer_in_query", "answer_in_observation", "masked")
    distinct = pl.DataFrame({name: [getattr(m, name) for m in flat] for name in names},
                            schema={name: _MOVE_SCHEMA[name] for name in names})
    row = np.repeat(np.arange(runs.height), row_len)
    ids = runs.select("arm", "question_id", "sample_id")[row]
    moves_df = pl.concat([ids, pl.DataFrame({"step": within}, schema={"step": pl.Int64}), distinct[gather]],
                         how="horizontal").select(list(_MOVE_SCHEMA))
    return moves_df, _trajectories(runs, keys, table)


def segment(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per move: every tool call, then the final answer.

    Columns: ``arm, question_id, sample_id, step`` (0-based; the final answer is the last),
    ``tool``, ``move`` (one of :data:`MOVES`), ``n_tokens`` (content words in the query),
    the provenance shares of the query's words (``share_question``, ``share_observation``,
    ``share_previous``, ``share_new``), ``question_coverage``, ``answer_in_query``,
    ``answer_in_observation`` and ``masked`` (the move with names replaced by placeholders).

    Examples
    --------
    >>> from mechanism.schema import from_records, make_step
    >>> runs = from_records([{"arm": "a", "question_id": "q", "sample_id": 0,
    ...     "question": "Where was the director of Jaws born?", "gold": ["Cincinnati"],
    ...     "answer": "Cincinnati", "correct": True, "n_rounds": 2, "steps": [
    ...     make_step(tool="search", query="director of Jaws",
    ...               observation="Jaws was directed by Steven Spielberg."),
    ...     make_step(tool="search", query="Steven Spielberg birthplace",
    ...               observation="Spielberg was born in Cincinnati, Ohio.")]}])
    >>> segment(runs)["move"].to_list()
    ['first_lookup', 'bridge_lookup', 'answer_with_evidence']
    """
    return segment_all(runs)[0]


def render(runs: pl.DataFrame, *, cache_dir: str | os.PathLike | None = None) -> pl.DataFrame:
    """One row per trajectory: its masked rendering, move sequence and structural features.

    Columns: ``arm, question_id, sample_id``, ``rendering`` (text for the embedder, no
    names), ``moves`` (e.g. ``"first_lookup > bridge_lookup > answer_with_evidence"``), the
    strategy descriptors :data:`FEATURE_COLUMNS` and the :data:`DESCRIPTIVE_COLUMNS`.

    Parameters
    ----------
    runs
        A canonical trajectory table.
    cache_dir
        Folder of the segmentation cache (:class:`SegmentCache`); ``None`` keeps nothing.
        Each distinct row (:func:`row_keys`) is segmented once, and with a cache only the
        rows it does not yet hold.
    """
    validate(runs, source="runs", required=_REQUIRED)
    keys = row_keys(runs)
    if cache_dir is None:
        return _trajectories(runs, keys, _segment_distinct(runs, keys, with_moves=False)[0])
    cache = SegmentCache(cache_dir)
    wanted = keys.unique(maintain_order=True)
    found = cache.load(wanted)
    missing = ~keys.is_in(found["key"].implode())
    if missing.any():
        rows = runs.filter(missing)
        computed = _segment_distinct(rows, keys.filter(missing), with_moves=False)[0]
        cache.store(computed)
        found = pl.concat([found, computed])
    return _trajectories(runs, keys, found)


class SegmentCache:
    """Per-trajectory segmentations on disk, keyed by :func:`row_keys` and by this module's code.

    Layout: ``folder/<segmenter id>/<shard>.parquet`` plus a ``.json`` sidecar per shard
    (:mod:`mechanism.cachefile`: atomic writes, digests checked on read, a corrupt shard is
    deleted and its rows segmented again). The segmenter id is a digest of this source file,
    so editing the segmentation never serves results of the old code. Parquet and JSON only.

    Parameters
    ----------
    folder
        Cache root.
    """

    FORMAT = 1

    def __init__(self, folder: str | os.PathLike) -> None:
        self.root = Path(folder) / segmenter_id()
        self.rebuilt: list[str] = []  # shards found corrupt and removed, for reports and tests

    def load(self, keys: pl.Series) -> pl.DataFrame:
        """Cached segmentations of ``keys`` (``key`` and the segment columns; misses absent)."""
        from mechanism.cachefile import read_checked

        frames = []
        if self.root.is_dir():
            wanted = keys.implode()
            for path in sorted(self.root.glob("*.parquet")):
                data = read_checked(path, {"format": self.FORMAT})
                if data is None:
                    if not path.exists():  # it was corrupt and is gone now
                        self.rebuilt.append(path.stem)
                    continue
                try:
                    shard = pl.read_parquet(io.BytesIO(data))
                    shard = shard.select(self._schema().keys()).cast(self._schema())
                except Exception:  # noqa: BLE001 - any unreadable shard is rebuilt, whatever polars raises
                    from mechanism.cachefile import discard

                    discard(path)
                    self.rebuilt.append(path.stem)
                    continue
                frames.append(shard.filter(pl.col("key").is_in(wanted)))
        if not frames:
            return pl.DataFrame(schema=self._schema())
        return pl.concat(frames).unique("key", keep="first", maintain_order=True)

    def store(self, table: pl.DataFrame) -> None:
        """Write one shard of segmentations (``key`` plus the segment columns)."""
        from mechanism.cachefile import digest, write_checked

        if table.height == 0:
            return
        buf = io.BytesIO()
        table.select(self._schema().keys()).write_parquet(buf, statistics=False)
        data = buf.getvalue()
        write_checked(self.root / f"{digest(data)[:24]}.parquet", data,
                      {"format": self.FORMAT, "rows": table.height})

    @staticmethod
    def _schema() -> dict[str, pl.DataType]:
        return {"key": pl.String, "rendering": pl.String, "moves": pl.String,
                **{name: pl.Float64 for name in _SEGMENT_COLUMNS[2:]}}


@functools.lru_cache(maxsize=1)
def segmenter_id() -> str:
    """Digest of this module's source: cached segmentations are valid only for the code that
    made them."""
    return hashlib.blake2b(Path(__file__).read_bytes(), digest_size=8).hexdigest()
