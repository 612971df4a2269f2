"""The canonical table written out: JSONL, JSON, parquet or CSV with the columns of
:mod:`mechanism.core.schema` (in CSV, ``gold`` and ``steps`` are JSON text). A step's optional
``failed`` (true/false: the failure verdict of the read that wrote the table) is kept.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mechanism.core.errors import InputError
from mechanism.core.schema import STEP_FIELDS, STEP_FLAGS
from mechanism.readers._fields import FieldMap, as_str

FORMAT = "canonical"


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    if "n_rounds" in record and ("correct" in record or "steps" in record):
        return True
    steps = fields.get(record, "steps")
    if isinstance(steps, str) and steps.strip().startswith("["):
        return True
    return (isinstance(steps, list) and (not steps or isinstance(steps[0], Mapping) and
                                         ("query" in steps[0] or "tool" in steps[0]))
            and "schema_version" not in record)


def _steps(value: Any, field: str) -> list[dict[str, str | None]]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise InputError(f"`{field}` is not valid JSON text", field=field) from None
    if hasattr(value, "to_list"):
        value = value.to_list()
    if not isinstance(value, list):
        raise InputError(f"`{field}` must be a list of step objects, got {type(value).__name__}", field=field)
    out = []
    for i, step in enumerate(value):
        if not isinstance(step, Mapping):
            raise InputError(f"`{field}[{i}]` must be an object, got {type(step).__name__}", field=f"{field}[{i}]")
        row: dict[str, str | None] = {}
        for name in STEP_FIELDS:
            v = step.get(name)
            if v is None:
                row[name] = None
            elif name == "arguments" and not isinstance(v, str):
                row[name] = json.dumps(v, ensure_ascii=False)
            else:
                row[name] = as_str(v, f"{field}[{i}].{name}")
        # a table an earlier read wrote with its failure verdicts (`error_pattern=`) keeps them, and
        # so with the calls it read as issued alongside the one before (`parallel`)
        for flag in STEP_FLAGS:
            given = step.get(flag)
            if given is not None:
                if not isinstance(given, bool):
                    raise InputError(f"`{field}[{i}].{flag}` must be true, false or null, got {type(given).__name__}",
                                     field=f"{field}[{i}].{flag}")
                row[flag] = given
        out.append(row)
    return out


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    name, value = fields.find(record, "steps")
    steps = _steps(value, name) if name is not None else []
    out: dict[str, Any] = {"steps": steps, "_consumed": {name} if name else set()}
    # the table states its own outcome; "final" only says whether an answer was given
    aname, answer = fields.find(record, "answer")
    out["final"] = answer is not None
    nname, n_rounds = fields.find(record, "n_rounds")
    if nname is not None:
        out["n_rounds"] = n_rounds
        out["_consumed"].add(nname)
    return out
