"""The canonical trajectory table: one row per trajectory (its columns: docs/reading.md).

Stages meet only through this table, so it is defined once here, with a validator that
says exactly what is wrong.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl

from mechanism.core.errors import ComparisonWarning, InputError

# `user`: what the user (real or simulated) said since the previous call, in conversations;
# null where the source has no user turns there. Tables written before it existed still read
# (a step struct without `user` is accepted; readers fill it with null).
# Two optional step fields beside these, each Boolean and present only where a read set one:
# `failed`, the failure verdict of a read given an `error_pattern` (mechanism.readers), which the
# move grammar counts as a failed call; and `parallel` (:data:`PARALLEL`), true for a call the
# agent issued in the same message as the call before it (parallel function calling: several
# `tool_calls` in one assistant message, several `tool_use` blocks in one turn).
STEP_FIELDS = ("thought", "tool", "arguments", "query", "observation", "user")
#: How a step's ``user`` text joins the user's several messages since the previous call (a blank
#: line): the segmentation counts the turns by it (a message that holds a blank line itself
#: counts as more than one).
USER_TURNS_JOIN = "\n\n"

STEP_DTYPE = pl.Struct(dict.fromkeys(STEP_FIELDS, pl.String))
#: The optional step field that marks a call issued in the same message as the call before it.
PARALLEL = "parallel"

REQUIRED_COLUMNS: dict[str, pl.DataType] = {
    "arm": pl.String,
    "question_id": pl.String,
    "sample_id": pl.Int64,
    "question": pl.String,
    "gold": pl.List(pl.String),
    "answer": pl.String,
    "correct": pl.Boolean,
    "n_rounds": pl.Int64,
    "steps": pl.List(STEP_DTYPE),
}

OPTIONAL_COLUMNS: dict[str, pl.DataType] = {
    "t_cap": pl.Int64,
    "category": pl.String,
    "score": pl.Float64,
    "meta": pl.String,  # JSON text of whatever else the source held
}

KEY_COLUMNS = ("arm", "question_id", "sample_id")


def make_step(thought: str | None = None, tool: str | None = None, arguments: str | None = None,
              query: str | None = None, observation: str | None = None,
              user: str | None = None, parallel: bool = False) -> dict[str, Any]:
    """One tool call as the canonical ``steps`` struct expects it.

    ``user`` is what the user said since the previous call (the user turns of a
    conversation after its first message, which is the ``question``), or ``None``;
    ``parallel``: the call was issued in the same message as the call before it (the optional
    field :data:`PARALLEL`, written only when true).
    """
    step: dict[str, Any] = {"thought": thought, "tool": tool, "arguments": arguments, "query": query,
                            "observation": observation, "user": user}
    if parallel:
        step[PARALLEL] = True
    return step


#: The optional Boolean fields a step may carry beside :data:`STEP_FIELDS` (comment above).
STEP_FLAGS = ("failed", PARALLEL)


def step_dtype(flags: Iterable[str] = ()) -> pl.Struct:
    """The ``steps`` struct with the optional Boolean ``flags`` (:data:`STEP_FLAGS`) some step holds."""
    return pl.Struct({**dict(STEP_DTYPE.to_schema()), **dict.fromkeys(flags, pl.Boolean)})


def from_records(records: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """Build a canonical table from dicts holding the canonical columns.

    Optional columns are kept when any record has them; the result is validated.
    """
    records = list(records)
    schema = dict(REQUIRED_COLUMNS)
    flags = [f for f in STEP_FLAGS if any(isinstance(st, Mapping) and st.get(f) is not None
                                          for r in records for st in (r.get("steps") or ()))]
    if flags:  # a step's optional flags are kept where any step holds one
        schema["steps"] = pl.List(step_dtype(flags))
    for name, dtype in OPTIONAL_COLUMNS.items():
        if any(name in r for r in records):
            schema[name] = dtype
    frame = pl.DataFrame(
        [{name: r.get(name) for name in schema} for r in records], schema=schema, orient="row"
    ) if records else pl.DataFrame(schema=schema)
    validate(frame)
    return frame


def empty() -> pl.DataFrame:
    """An empty canonical table with the required columns."""
    return pl.DataFrame(schema=REQUIRED_COLUMNS)


def validate(runs: pl.DataFrame, *, source: str = "table", required: Iterable[str] | None = None,
             check_keys: bool = True) -> pl.DataFrame:
    """Check that ``runs`` is a canonical trajectory table; return it unchanged.

    Parameters
    ----------
    runs
        The table to check.
    source
        Named in error messages.
    required
        The columns this caller needs (default: all required columns).
    check_keys
        Check that ``(arm, question_id, sample_id)`` is unique when all three columns are
        present. A caller that groups the table by ``(arm, question_id)`` anyway passes
        ``False`` and calls :func:`check_unique_keys` with the group count it got, which
        makes the check nearly free (see there).

    Raises
    ------
    InputError
        Naming the first missing column, wrong type, null key, null ``correct`` or
        ``n_rounds``, negative round count or
        duplicate ``(arm, question_id, sample_id)``.
    """
    if not isinstance(runs, pl.DataFrame):
        raise InputError(f"expected a polars DataFrame, got {type(runs).__name__}", source=source)
    needed = list(REQUIRED_COLUMNS) if required is None else list(required)
    for name in needed:
        if name not in runs.columns:
            raise InputError(f"missing required column `{name}`", source=source, field=name)
        want = REQUIRED_COLUMNS.get(name) or OPTIONAL_COLUMNS.get(name)
        have = runs.schema[name]
        if want is not None and not _compatible(have, want):
            raise InputError(f"column `{name}` has type {have}, expected {want}", source=source, field=name)
    if "steps" in needed:
        inner = runs.schema["steps"].inner if isinstance(runs.schema["steps"], pl.List) else None
        if isinstance(inner, pl.Struct):
            for f in inner.fields:  # a step field of the canonical set holds text (or nothing)
                if f.name in STEP_FIELDS and f.dtype not in (pl.String, pl.Null):
                    raise InputError(f"step field `steps.{f.name}` has type {f.dtype}, expected String",
                                     source=source, field=f"steps.{f.name}")
    for name in ("arm", "question_id", "sample_id"):
        if name in needed and runs[name].null_count():
            row = int(runs[name].is_null().arg_max())
            raise InputError(f"null value in key column `{name}`", source=source, line=row + 1, field=name)
    if "correct" in needed and runs["correct"].null_count():
        row = int(runs["correct"].is_null().arg_max())
        raise InputError("null value in column `correct`", source=source, line=row + 1, field="correct")
    if "n_rounds" in needed and runs["n_rounds"].null_count():
        # a null round count would silently fail every depth of PASS@(k,T)
        row = int(runs["n_rounds"].is_null().arg_max())
        raise InputError("null value in column `n_rounds`", source=source, line=row + 1, field="n_rounds")
    if "n_rounds" in needed and runs.height and (runs["n_rounds"] < 0).any():
        row = int((runs["n_rounds"] < 0).arg_max())
        raise InputError("negative value in column `n_rounds`", source=source, line=row + 1, field="n_rounds")
    if check_keys:
        check_unique_keys(runs, source=source)
    return runs


def check_unique_keys(runs: pl.DataFrame, *, n_groups: int | None = None, source: str = "table") -> None:
    """Raise when ``(arm, question_id, sample_id)`` repeats; nothing when a key column is absent.

    A cheap proof comes first, one vectorised pass comparing each row with the one before:
    when every ``(arm, question_id)`` forms one contiguous block of rows whose sample ids
    strictly increase, no key can repeat. The blocks are known to be one per pair when
    their number equals ``n_groups`` (the number of distinct ``(arm, question_id)``, which a
    caller that groups by them has for free) or, without it, when the blocks themselves come
    in strictly increasing ``(arm, question_id)`` order. Tables written in sample order pass
    in a fraction of a group-by's time; any other table gets the exact check (a hash of every
    key), which names the first repeated key and its line.

    Raises
    ------
    InputError
        Naming the duplicate ``(arm, question_id, sample_id)`` and the line of its later copy.
    """
    if not all(k in runs.columns for k in KEY_COLUMNS) or runs.height < 2:
        return
    arm, qid, sid = (pl.col(k) for k in KEY_COLUMNS)
    same = ((arm == arm.shift()) & (qid == qid.shift())).fill_null(False)
    checks = [(~same).sum().alias("blocks"),
              (same & (sid <= sid.shift())).any().alias("unordered")]
    if n_groups is None:  # blocks in increasing key order: each pair is then one block
        after = ((arm > arm.shift()) | ((arm == arm.shift()) & (qid > qid.shift()))).fill_null(True)
        checks.append((~same & ~after).any().alias("unsorted"))
    stats = runs.select(checks).row(0, named=True)
    proven = not stats["unordered"] and (stats["blocks"] == n_groups if n_groups is not None
                                         else not stats["unsorted"])
    if proven:
        return
    dup = ~runs.select(pl.struct(list(KEY_COLUMNS)).is_first_distinct()).to_series()  # blame the later copy
    if dup.any():
        row = int(dup.arg_max())
        key = runs.row(row, named=True)
        raise InputError(
            "duplicate (arm, question_id, sample_id) = "
            f"({key['arm']!r}, {key['question_id']!r}, {key['sample_id']!r})",
            source=source, line=row + 1, field="sample_id")


def shared_questions(runs: pl.DataFrame, arms: Iterable[str], *, what: str = "comparison",
                     compared: str | None = None, stacklevel: int = 3, allow_few: bool = True,
                     force: str = "allow_few_shared=True") -> tuple[int, int]:
    """How many questions every one of ``arms`` answered, of all the questions any of them did;
    warns (:class:`~mechanism.core.errors.ComparisonWarning`) when that is fewer than all.

    Comparisons call this first: an arm that answered other questions (ids that drifted, a
    run cut short) is compared on the shared questions only, and a reader must know on how
    many.

    Parameters
    ----------
    runs
        A table with ``arm`` and ``question_id``.
    arms
        The arms compared (absent arms count as answering nothing).
    what
        The comparison's name, used in the warning.
    compared
        What the comparison does with the unshared questions, when it is not simply
        "compared on those N" (the shared ones).
    allow_few
        ``False``: refuse (:func:`refuse_few_shared`) when the arms share some but fewer than
        half of their questions, instead of warning.
    force
        How the caller lets a user go ahead anyway, named in that refusal.

    Returns
    -------
    (int, int)
        Shared questions and all questions of these arms.

    Examples
    --------
    >>> import warnings
    >>> runs = pl.DataFrame({"arm": ["a", "a", "b"], "question_id": ["q1", "q2", "q1"]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     shared_questions(runs, ["a", "b"], what="reweighting")
    (1, 2)
    >>> str(caught[0].message)
    "reweighting: arms 'a', 'b' share 1 of 2 questions; compared on those 1"
    """
    arms = list(dict.fromkeys(arms))
    shared, total = count_shared(runs, arms)
    if not allow_few and shared > 0:  # none shared: the comparison itself refuses, with its own error
        refuse_few_shared(shared, total, arms, what=what, force=force)
    if 0 < shared < total:  # none shared: the comparison itself refuses, with its own error
        names = ", ".join(repr(a) for a in arms)
        how = compared if compared is not None else f"compared on those {shared}"
        warnings.warn(f"{what}: arms {names} share {shared} of {total} questions; {how}",
                      ComparisonWarning, stacklevel=stacklevel)
    return shared, total


def count_shared(runs: pl.DataFrame, arms: Sequence[str]) -> tuple[int, int]:
    """Questions every one of ``arms`` answered, and questions any of them answered.

    >>> count_shared(pl.DataFrame({"arm": ["a", "a", "b"], "question_id": ["q1", "q2", "q1"]}), ["a", "b"])
    (1, 2)
    """
    if not arms or "arm" not in runs.columns or "question_id" not in runs.columns:
        return 0, 0
    per = (runs.lazy().filter(pl.col("arm").is_in(list(arms))).group_by("question_id")
           .agg(pl.col("arm").n_unique().alias("n")).collect())
    return (int((per["n"] == len(set(arms))).sum()) if per.height else 0), per.height


def refuse_few_shared(shared: int, total: int, arms: Sequence[str], *, what: str = "comparison",
                      force: str = "allow_few_shared=True") -> None:
    """Refuse, with one line, a comparison of arms that share fewer than half of their questions.

    A split on the few shared questions would read as if it were the study; the usual cause is
    question ids that differ between arms (question text that changes between trials, e.g. a
    prefixed reflection, gives new ids), which ``question_key=`` or a ``question_id`` column
    fixes. One check for every comparison between arms (reweighting, integration, boundary,
    track).

    Parameters
    ----------
    shared, total
        Questions every arm answered, and questions any did (:func:`count_shared`).
    arms
        The arms compared, named in the message.
    what
        The comparison's name, first in the message.
    force
        How to go ahead anyway (a keyword, or a command-line flag), named in the message.

    Raises
    ------
    InputError
        When ``2 * shared < total``.

    Examples
    --------
    >>> refuse_few_shared(6, 10, ["a", "b"])
    >>> try:
    ...     refuse_few_shared(3, 16, ["a", "b"], what="reweighting")
    ... except InputError as e:
    ...     print(str(e).split(";")[0])
    reweighting: arms 'a', 'b' share 3 of 16 questions (below half)
    """
    if total and 2 * shared < total:
        names = ", ".join(repr(a) for a in dict.fromkeys(arms))
        raise InputError(f"{what}: arms {names} share {shared:,} of {total:,} questions (below half); question ids "
                         "differ between them (text that changes between trials?): key questions with "
                         "`question_key=` (`text` or a regular expression) or a `question_id` column, "
                         f"or pass `{force}`", field="question_id")


def _compatible(have: pl.DataType, want: pl.DataType) -> bool:
    if have == want:
        return True
    if want == pl.Int64:
        return have.is_integer()
    if want == pl.Float64:
        return have.is_numeric()
    if isinstance(want, pl.List) and isinstance(have, pl.List):
        return want.inner == STEP_DTYPE and isinstance(have.inner, pl.Struct) or have.inner == want.inner
    return have == pl.Null
