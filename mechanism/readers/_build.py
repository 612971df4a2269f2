"""From one parsed record to one canonical row, and from rows to the canonical table.

Shared by every format: resolving arm / question id / sample id, scoring ``correct`` (or
checking a given one against the answer), the final-answer rule, ``meta``, and the
duplicate-key check across all files.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from mechanism.errors import InputError
from mechanism.readers._fields import FieldMap, as_bool, as_float, as_gold, as_int, as_str
from mechanism.schema import OPTIONAL_COLUMNS, REQUIRED_COLUMNS, STEP_DTYPE, STEP_FIELDS
from mechanism.scoring import _f1, cover_match, normalize_answer

# canonical fields the driver resolves itself (the format parsers give steps and answer)
_RECORD_FIELDS = ("arm", "question_id", "sample_id", "question", "gold", "correct", "category",
                  "t_cap", "score", "meta")


def question_hash(question: str) -> str:
    """A stable id from the question text (same text, same id, on every machine)."""
    return "q" + hashlib.sha1(question.strip().encode("utf-8")).hexdigest()[:12]


@dataclass
class Tally:
    """Counts for the notes of a read (so the report says what was derived or doubted)."""

    hashed_qid: int = 0
    arm_from_stem: dict[str, str] = field(default_factory=dict)
    arm_overridden: int = 0
    kept_without_answer: int = 0
    disagreements: int = 0
    disagreement_examples: list[str] = field(default_factory=list)
    scored: int = 0
    given: int = 0

    _norm: dict[str, str] = field(default_factory=dict)
    _f1_cache: dict[tuple[str, str], float] = field(default_factory=dict)

    def _normalized(self, text: str) -> str:
        # gold answers repeat across samples and arms: normalise each text once
        norm = self._norm.get(text)
        if norm is None:
            norm = normalize_answer(text)
            if len(self._norm) < 1_000_000:
                self._norm[text] = norm
        return norm

    def exact(self, answer: str | None, gold: list[str]) -> bool:
        """Same as :func:`mechanism.scoring.exact_match`, with normalisation cached."""
        if answer is None:
            return False
        a = self._normalized(answer)
        return any(a == self._normalized(g) for g in gold)

    def f1(self, answer: str, gold: list[str]) -> float:
        """Same as :func:`mechanism.scoring.f1_score`, with normalisation and pairs cached."""
        a = self._normalized(answer)
        best = 0.0
        for g in gold:
            n = self._normalized(g)
            score = self._f1_cache.get((a, n))
            if score is None:
                score = 1.0 if a == n else _f1(a.split(), n.split())
                if len(self._f1_cache) < 1_000_000:
                    self._f1_cache[(a, n)] = score
            best = max(best, score)
        return best

    def notes(self) -> list[str]:
        out = []
        if self.hashed_qid:
            out.append(f"{self.hashed_qid} rows had no `question_id`: derived a stable id from the question text")
        for source, arm in self.arm_from_stem.items():
            out.append(f"{source}: no `arm` field and no `arm=`: arm named {arm!r} after the file")
        if self.arm_overridden:
            out.append(f"{self.arm_overridden} rows had an `arm` field that `arm=` replaced")
        if self.kept_without_answer:
            out.append(f"{self.kept_without_answer} rows have no final answer but the source records their "
                       "outcome: kept with `answer` = null")
        if self.given:
            out.append(f"`correct` taken from the input for {self.given} rows")
        if self.scored:
            out.append(f"`correct` scored by exact match against `gold` for {self.scored} rows")
        if self.disagreements:
            out.append(f"{self.disagreements} rows: the given `correct` disagrees with exact/cover match of "
                       "`answer` against `gold` (kept as given); e.g. " + "; ".join(self.disagreement_examples))
        return out


def build_row(record: Mapping[str, Any], parsed: Mapping[str, Any], fields: FieldMap, *,
              fmt: str, source: str, line: int, arm: str | None, stem_arm: str,
              tally: Tally) -> dict[str, Any]:
    """One canonical row (plus ``_source``/``_line``) from a record and what its format parser
    found. Raises :class:`InputError` (without file and line; the caller adds them)."""
    extra = parsed.get("extra_fields") or {}
    consumed = set(parsed.get("_consumed", ()))
    found = fields.find_all(record, _RECORD_FIELDS)
    for name, (key, value) in found.items():
        if key is None and extra:
            key, value = fields.find(extra, name)
            key = f"extra.{key}" if key is not None else None
            found[name] = (key, value)
        if key is not None:
            consumed.add(key.split(".", 1)[0])

    row: dict[str, Any] = {}
    # every check that can reject the record comes first; the tally only counts kept rows
    overridden = from_stem = hashed = False
    # arm: `arm=` beats the record, which beats the format's default, which beats the file name
    key, value = found["arm"]
    if arm is not None:
        overridden = key is not None and value != arm
        row["arm"] = arm
    elif key is not None:
        row["arm"] = as_str(value, key)
    elif parsed.get("arm_default"):
        row["arm"] = parsed["arm_default"]
    else:
        from_stem = True
        row["arm"] = stem_arm

    key, value = found["question"]
    question = as_str(value, key) if key is not None else parsed.get("question")
    if question is None:
        raise InputError(f"missing `{fields.paths('question')[0]}` (the question text)",
                         field=fields.paths("question")[0])
    row["question"] = question

    key, value = found["question_id"]
    if key is not None:
        row["question_id"] = as_str(value, key)
    elif "_key" in record:
        row["question_id"] = str(record["_key"])
    else:
        row["question_id"] = question_hash(question)
        hashed = True

    key, value = found["sample_id"]
    row["sample_id"] = as_int(value, key) if key is not None else None

    key, value = found["gold"]
    gold = as_gold(value, key) if key is not None else []
    row["gold"] = gold

    steps = parsed.get("steps") or []
    row["steps"] = steps
    n_rounds = len(steps)
    if parsed.get("n_rounds") is not None:
        given = as_int(parsed["n_rounds"], "n_rounds")
        if given < 0:
            raise InputError("`n_rounds` must be >= 0", field="n_rounds")
        if steps and given != len(steps):
            raise InputError(f"`n_rounds` = {given} but `steps` holds {len(steps)} tool calls", field="n_rounds")
        n_rounds = given
    row["n_rounds"] = n_rounds

    # answer: what the transcript ended with; a bare record field only where the format is a
    # table (canonical) or the user mapped it, since many datasets call the gold "answer"
    answer = parsed.get("answer")
    final = bool(parsed.get("final"))
    if fmt == "canonical" or "answer" in fields.columns:
        akey, avalue = fields.find(record, "answer")
        if akey is not None:
            answer, final = as_str(avalue, akey), True
            consumed.add(akey.split(".", 1)[0])
    answer = answer if final else None
    row["answer"] = answer

    key, value = found["category"]
    row["category"] = as_str(value, key) if key is not None else None
    key, value = found["t_cap"]
    row["t_cap"] = as_int(value, key) if key is not None else None
    skey, svalue = found["score"]
    given_score = as_float(svalue, skey) if skey is not None else None

    ckey, cvalue = found["correct"]
    try:
        given_correct = as_bool(cvalue, ckey) if ckey is not None else None
    except InputError as exc:
        if "correct" in fields.columns:
            raise
        # a graded reward (F1, partial credit) found under a default alias is not a label
        raise InputError(f"{exc.reason}; name the success label with `columns={{'correct': ...}}`",
                         field=ckey) from None
    if not final and given_correct is None:
        raise InputError("no final answer in the trajectory and no `correct` field to say how it ended",
                         field=fields.paths("text")[0] if fmt == "searchr1" else "answer")
    if given_correct is None and not gold:
        raise InputError("cannot score: no `correct` field and no gold answers (`gold`)", field="gold")

    key, value = found["meta"]
    # null fields say nothing (and a null canonical field was not used): not meta
    leftovers = {k: v for k, v in record.items() if v is not None and k not in consumed and k[:1] != "_"}
    if key is not None:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        leftovers = {**leftovers, **value} if isinstance(value, Mapping) else {**leftovers, "meta": value}
    row["meta"] = json.dumps(leftovers, ensure_ascii=False, default=str, sort_keys=True) if leftovers else None

    # the record is kept: score it and count what was derived
    if given_correct is not None:
        row["correct"] = given_correct
        tally.given += 1
        if answer is not None and gold:
            em = tally.exact(answer, gold)
            # a strict grader may reject a covering answer, but never an exact match
            agrees = (em or cover_match(answer, gold)) if given_correct else not em
            if not agrees:
                tally.disagreements += 1
                if len(tally.disagreement_examples) < 3:
                    tally.disagreement_examples.append(f"{source} line {line}")
    else:
        row["correct"] = tally.exact(answer, gold)
        tally.scored += 1
    row["score"] = tally.f1(answer, gold) if answer is not None and gold else given_score
    if not final:
        tally.kept_without_answer += 1
    if overridden:
        tally.arm_overridden += 1
    if from_stem:
        tally.arm_from_stem.setdefault(source, stem_arm)
    if hashed:
        tally.hashed_qid += 1
    return row


class Columns:
    """Rows collected straight into flat columns.

    Keeping a dict per row and a dict per step alive until the end makes Python's cyclic
    garbage collector walk millions of containers again and again; flat lists of strings
    hold nothing it tracks.
    """

    _SCALARS = ("arm", "question_id", "sample_id", "question", "answer", "correct", "n_rounds",
                "t_cap", "category", "score", "meta", "_source", "_line")

    def __init__(self) -> None:
        self.scalars: dict[str, list[Any]] = {name: [] for name in self._SCALARS}
        self.gold: list[str] = []
        self.gold_len: list[int] = []
        self.steps: dict[str, list[str | None]] = {f: [] for f in STEP_FIELDS}
        self.steps_len: list[int] = []

    def __len__(self) -> int:
        return len(self.steps_len)

    def append(self, row: Mapping[str, Any]) -> None:
        for name, values in self.scalars.items():
            values.append(row.get(name))
        self.gold.extend(row["gold"])
        self.gold_len.append(len(row["gold"]))
        steps = row["steps"]
        for f, values in self.steps.items():
            values.extend([st[f] for st in steps])
        self.steps_len.append(len(steps))

    def frame(self, *, origin: bool = False) -> pl.DataFrame:
        """The canonical table (with ``origin``, also ``_source`` and ``_line``)."""
        schema: dict[str, pl.DataType] = dict(REQUIRED_COLUMNS)
        for name, dtype in OPTIONAL_COLUMNS.items():
            if any(v is not None for v in self.scalars[name]):
                schema[name] = dtype
        if origin:
            schema["_source"], schema["_line"] = pl.String, pl.Int64
        columns = []
        for name, dtype in schema.items():
            if name == "steps":
                columns.append(_list_series(name, pl.DataFrame(
                    [pl.Series(f, v, dtype=pl.String) for f, v in self.steps.items()]
                ).select(pl.struct(STEP_FIELDS)).to_series(), self.steps_len).cast(pl.List(STEP_DTYPE)))
            elif name == "gold":
                columns.append(_list_series(name, pl.Series(self.gold, dtype=pl.String), self.gold_len)
                               .cast(pl.List(pl.String)))
            else:
                columns.append(pl.Series(name, self.scalars[name], dtype=dtype))
        return pl.DataFrame(columns)


    def keys_frame(self) -> pl.DataFrame:
        """Only the key and origin columns (cheap: for checks before the table is built)."""
        return pl.DataFrame([pl.Series(name, self.scalars[name], dtype=dtype) for name, dtype in
                             (("arm", pl.String), ("question_id", pl.String), ("sample_id", pl.Int64),
                              ("_source", pl.String), ("_line", pl.Int64))])


def _list_series(name: str, flat: pl.Series, lengths: list[int]) -> pl.Series:
    """A list column from its flat values and per-row lengths, through Arrow offsets."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
    arr = pa.LargeListArray.from_arrays(pa.array(offsets), flat.to_arrow())
    return pl.Series(name, pl.from_arrow(arr))
