"""Finding a canonical field in a source record: ``columns=`` overrides, default aliases,
dotted paths, and coercion of the values to the canonical types.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from mechanism.core.errors import InputError

# canonical name -> the names sources commonly use for it, tried in order
ALIASES: dict[str, tuple[str, ...]] = {
    "arm": ("arm", "model", "policy", "checkpoint"),
    "question_id": ("question_id", "qid", "problem_id", "instance_id", "id", "_id"),
    "sample_id": ("sample_id", "sample", "sample_idx", "sample_index"),
    "question": ("question", "problem"),
    "gold": ("gold", "golden_answers", "answers", "gt", "gold_answers", "ground_truth",
             "reward_model.ground_truth.target"),
    "answer": ("answer", "pred", "prediction", "final_answer"),
    "correct": ("correct", "is_correct", "success", "reward"),
    "n_rounds": ("n_rounds",),
    "steps": ("steps",),
    "category": ("category", "type", "level"),
    "t_cap": ("t_cap", "max_turns", "max_rounds"),
    "score": ("score", "f1"),
    "text": ("response", "text", "output", "completion", "transcript", "trajectory"),
    "messages": ("messages", "conversation", "traj", "contents", "conversations"),
    "meta": ("meta",),
}

MISSING = object()


def _is_nan(value: Any) -> bool:
    """A float NaN (JSON's ``NaN``, pandas' missing value) says nothing: read as missing."""
    return isinstance(value, float) and value != value


FIELD_PATH_MAX = 1000  # characters of a field name or dotted path given by the user
_INDEX_MAX_DIGITS = 18  # a list index of more digits than this exceeds any list


def _is_index(part: str) -> bool:
    """An ASCII list index (``"²"`` and other Unicode digits pass ``str.isdigit`` but are no
    index ``int`` takes, and 5,000 digits pass Python's integer-parsing limit)."""
    return part.isascii() and part.isdigit() and len(part) <= _INDEX_MAX_DIGITS


def get_path(record: Mapping[str, Any], path: str) -> Any:
    if path in record:  # a literal key with dots wins over a nested path
        return record[path]
    node: Any = record
    for part in path.split(".", 64):  # at most 64 levels: no record nests deeper by design
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and _is_index(part) and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


class FieldMap:
    """Resolve canonical names in a record through ``columns=`` and the default aliases.

    Parameters
    ----------
    columns
        Canonical name -> the source's field name (dotted paths reach into nested
        objects). A mapped name replaces the aliases for that field.
    """

    def __init__(self, columns: Mapping[str, str] | None = None) -> None:
        columns = dict(columns or {})
        self.answer_pattern: Any = None  # a compiled `answer_pattern=`, set by the reader
        self.multi_action = "first"  # `multi_action=`: which action of a ReAct turn ran, set by the reader
        # `correct="status:CORRECT|PASS"`: the label is true when the field holds one of these
        self.true_values: frozenset[str] | None = None
        label = columns.get("correct")
        if isinstance(label, str) and ":" in label:
            path, _, values = label.rpartition(":")
            wanted = frozenset(v.strip() for v in values.split("|") if v.strip())
            if not path or not wanted:
                raise InputError(f"`columns['correct']` = {label!r}: expected field:VALUE (or field:A|B)",
                                 field="columns")
            columns["correct"] = path
            self.true_values = wanted
        unknown = sorted(set(columns) - set(ALIASES))
        if unknown:
            raise InputError(f"unknown canonical name `{unknown[0]}` in `columns`; known: "
                             + ", ".join(sorted(ALIASES)), field="columns")
        for key, value in columns.items():
            if not isinstance(value, str) or not value:
                raise InputError(f"`columns[{key!r}]` must be a non-empty field name", field="columns")
            if len(value) > FIELD_PATH_MAX or value.count(".") > 64:
                raise InputError(f"`columns[{key!r}]` is a field path of {len(value)} characters and "
                                 f"{value.count('.') + 1} parts: at most {FIELD_PATH_MAX} and 65",
                                 field="columns")
        self.columns = columns
        # a field the user mapped to one canonical name is never taken for another by default
        claimed = set(columns.values())
        self._paths = {name: (columns[name],) if name in columns
                       else tuple(a for a in aliases if a not in claimed) or aliases
                       for name, aliases in ALIASES.items()}
        # record key tuple -> canonical name -> candidate top-level keys present, in alias order;
        # files repeat one key layout, so the alias search runs once per layout
        self._plans: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}
        # the mapped names some record held (a path that matches nothing is the reader's error)
        self.present: set[str] = set()

    def paths(self, name: str) -> tuple[str, ...]:
        return self._paths[name]

    def _plan(self, record: Mapping[str, Any]) -> dict[str, tuple[str, ...]] | None:
        if not isinstance(record, dict):
            return None
        layout = tuple(record)
        plan = self._plans.get(layout)
        if plan is None:
            if len(self._plans) > 256:  # a file with ever-changing layouts: stop caching
                return None
            keys = set(layout)
            plan = {}
            for name, paths in self._paths.items():
                # a dotted path that is not a literal key needs the slow walk: no plan for it
                if any("." in p and p not in keys for p in paths):
                    plan[name] = None  # type: ignore[assignment]
                else:
                    plan[name] = tuple(p for p in paths if p in keys)
                    if plan[name] and name in self.columns:
                        self.present.add(name)
            self._plans[layout] = plan
        return plan

    def find(self, record: Mapping[str, Any], name: str) -> tuple[str | None, Any]:
        """The (source field, value) for ``name``: the first of its paths that holds a
        non-null value; ``(None, None)`` when none does."""
        plan = self._plan(record)
        candidates = plan.get(name) if plan is not None else None
        if candidates is not None:
            for path in candidates:
                value = record[path]
                if value is not None and not _is_nan(value):
                    return path, value
            return None, None
        for path in self._paths[name]:
            value = get_path(record, path)
            if value is not MISSING and name in self.columns:
                self.present.add(name)
            if value is not MISSING and value is not None and not _is_nan(value):
                return path, value
        return None, None

    def unmatched(self) -> list[str]:
        """The canonical names ``columns`` maps to a path that no record looked at held."""
        return [name for name in self.columns if name not in self.present]

    def find_all(self, record: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, tuple[str | None, Any]]:
        """:meth:`find` for several names at once (one plan lookup per record)."""
        plan = self._plan(record)
        out: dict[str, tuple[str | None, Any]] = {}
        for name in names:
            candidates = plan.get(name) if plan is not None else None
            if candidates is None:
                out[name] = self.find(record, name) if plan is None or name in plan else (None, None)
                continue
            out[name] = (None, None)
            for path in candidates:
                value = record[path]
                if value is not None and not _is_nan(value):
                    out[name] = (path, value)
                    break
        return out

    def get(self, record: Mapping[str, Any], name: str) -> Any:
        return self.find(record, name)[1]


# ---------------------------------------------------------------- coercions
# each raises InputError(field=...) naming the source field; the caller adds file and line

def as_str(value: Any, field: str, *, allow_number: bool = True) -> str:
    if isinstance(value, str):
        return value
    if allow_number and isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"`{field}` must be a string, got {value!r}", field=field)
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)
    raise InputError(f"`{field}` must be a string, got {type(value).__name__}", field=field)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def as_int(value: Any, field: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"`{field}` must be an integer, got a boolean", field=field)
    out: int | None = None
    if isinstance(value, int):
        out = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        out = int(value)
    elif isinstance(value, str):
        try:
            out = int(value.strip())
        except ValueError:
            pass
    if out is None:
        raise InputError(f"`{field}` must be an integer, got {_show(value)}", field=field)
    if not _INT64_MIN <= out <= _INT64_MAX:  # the canonical columns are Int64
        raise InputError(f"`{field}` is out of the 64-bit integer range, got {_show(value)}", field=field)
    return out


def as_float(value: Any, field: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer beyond the float range
            raise InputError(f"`{field}` is out of the floating-point range", field=field) from None
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise InputError(f"`{field}` must be a number, got {_show(value)}", field=field)


_TRUE = {"true", "1", "yes", "1.0"}
_FALSE = {"false", "0", "no", "0.0"}


def as_bool(value: Any, field: str, true_values: frozenset[str] | None = None) -> bool:
    """Booleans, 0/1 numbers (a reward) and the strings true/false/1/0/yes/no; with
    ``true_values``, true exactly when the value (as text) is one of them."""
    if true_values is not None:
        if isinstance(value, (dict, list)):
            raise InputError(f"`{field}` must be a label value, got {_show(value)}", field=field)
        text = str(value).strip() if not isinstance(value, bool) else str(value).lower()
        return text in true_values
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise InputError(f"`{field}` must be a boolean (or 0/1), got {_show(value)}", field=field)


def as_gold(value: Any, field: str) -> list[str]:
    """A list of answers; a single string is one answer, a JSON array in text is parsed."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                return [value]
            if isinstance(parsed, list):
                value = parsed
            else:
                return [value]
        else:
            return [value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [as_str(value, field)]
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if item is None or _is_nan(item):
                continue
            if isinstance(item, (list, tuple)):  # nested answer groups: flatten
                out.extend(as_gold(item, field))
            else:
                out.append(as_str(item, field))
        return out
    if hasattr(value, "to_list"):  # a polars Series from a parquet list column
        return as_gold(value.to_list(), field)
    raise InputError(f"`{field}` must be a list of strings, got {_show(value)}", field=field)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
