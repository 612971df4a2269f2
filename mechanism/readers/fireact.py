"""FireAct's HotpotQA trajectory files (anchen1011/FireAct), as published.

Each file is a JSON object keyed by the question's index into ``questions/dev.json`` (found
at ``../questions/dev.json`` from the file's folder); a value holds ``reward`` (exact
match, taken as ``correct``), ``em``, ``f1``, ``gt``, ``pred`` (the normalised final
answer, taken as ``answer``), ``prompt`` and ``traj``: a ReAct transcript string (Llama
agents) or a list of chat messages with ReAct lines in their contents (GPT-3.5 agent).
The arm is the model named in the file name (``gpt-3.5-turbo``, ``llama-2-13b``, ...).
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mechanism.core.errors import InputError
from mechanism.core.names import safe_filename
from mechanism.core.scoring import normalize_answer
from mechanism.readers._fields import FieldMap
from mechanism.readers._io import load_json
from mechanism.readers.react import messages_text, parse_text

FORMAT = "fireact"

_MODEL = re.compile(r"(gpt-\d+(?:\.\d+)?(?:-turbo)?|(?:code)?llama-\d+-\d+b|llama-\d+b|mistral-\d+b|mixtral-\d+x\d+b)",
                    re.I)


def detect_document(doc: Any) -> bool:
    if not isinstance(doc, Mapping) or not doc:
        return False
    first = next(iter(doc.values()))
    return isinstance(first, Mapping) and "traj" in first and ("reward" in first or "pred" in first)


def arm_from_name(path: Path) -> str:
    m = _MODEL.search(path.name)
    return m.group(1).lower() if m else safe_filename(path.stem)


def questions_file(path: Path) -> Path:
    return path.resolve().parent.parent / "questions" / "dev.json"


def records(path: Path, doc: Mapping[str, Any] | None = None) -> Iterator[tuple[int, Any]]:
    """(record index, record with ``question``, ``gold``, ``category`` filled in)."""
    source = str(path)
    if doc is None:
        doc = load_json(path)
    if not isinstance(doc, Mapping):
        raise InputError("a FireAct file is a JSON object keyed by question index", source=source, line=1)
    qpath = questions_file(path)
    if not qpath.is_file():
        raise InputError(f"FireAct questions file not found at {qpath}", source=source, field="question")
    questions = load_json(qpath)
    if not isinstance(questions, list):
        raise InputError("expected a JSON array of questions", source=str(qpath), line=1)
    arm = arm_from_name(path)
    for index, (key, value) in enumerate(doc.items(), 1):
        if not isinstance(value, Mapping):
            yield index, InputError(f"record `{key}` must be an object", source=source, line=index, field=str(key))
            continue
        record = dict(value)
        record["_key"] = key
        record["question_id"] = str(key)
        if "arm" not in record:
            record["arm"] = arm
            record["_arm_source"] = "the model in the file name"
        try:
            position = int(key)
            if position < 0:  # a negative key would silently pick a question from the end
                raise IndexError(position)
            q = questions[position]
        except (ValueError, IndexError):
            yield index, InputError(f"question index `{key}` not found in {qpath.name}", source=source,
                                    line=index, field="question_id")
            continue
        if isinstance(q, Mapping):
            record["question"] = q.get("question")
            gold = [q["answer"]] if isinstance(q.get("answer"), str) else []
            gt = value.get("gt")
            if isinstance(gt, str) and all(normalize_answer(gt) != normalize_answer(g) for g in gold):
                gold.append(gt)
            record["gold"] = gold
            if isinstance(q.get("type"), str):
                record["category"] = q["type"]
        yield index, record


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    traj = record.get("traj")
    if isinstance(traj, str):
        parsed = parse_text(traj, field="traj", multi_action=fields.multi_action)
    elif isinstance(traj, list):
        transcript, question = messages_text(traj, field="traj")
        parsed = parse_text(transcript, field="traj", multi_action=fields.multi_action)
        parsed["question"] = parsed["question"] or question
    else:
        raise InputError("missing `traj` (a transcript string or a message list)", field="traj")
    # the file records the outcome: `pred` is the answer that `reward` scored
    parsed["answer"] = record.get("pred") if isinstance(record.get("pred"), str) else parsed["answer"]
    parsed["final"] = True
    parsed["_consumed"] = {"traj", "traj_by_line", "prompt", "pred", "reward", "gt", "_key"}
    return parsed
