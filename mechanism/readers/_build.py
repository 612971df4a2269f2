"""From one parsed record to one canonical row, and from rows to the canonical table.

Shared by every format: resolving arm / question id / sample id, scoring ``correct`` (or
checking a given one against the answer), the final-answer rule, ``meta``, and the
duplicate-key check across all files.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from mechanism.core.errors import InputError
from mechanism.core.failures import compile_error_pattern, failure_kind
from mechanism.core.names import display_name, escape_control
from mechanism.core.patterns import compile_linear
from mechanism.core.schema import OPTIONAL_COLUMNS, PARALLEL, REQUIRED_COLUMNS, STEP_FIELDS, STEP_FLAGS, step_dtype
from mechanism.core.scoring import contains_answer, normalize_answer, token_f1
from mechanism.readers._fields import FieldMap, as_bool, as_float, as_gold, as_int, as_str
from mechanism.readers._repeats import RepeatedReplies

SCORERS = ("em", "f1", "cover-em", "contains")
F1_THRESHOLD = 0.5  # `scorer="f1"`: correct when token F1 reaches this (the usual partial-credit cut)
EXAMPLES = 3  # locations kept per note (parser notes, leaks, disagreements)
_SELF_TOOLS = frozenset({"reflect", "think", "plan", "note", "scratchpad"})
# a logger's gold-answer line; in agent-visible text it is a leak (flagged, see Tally.leak)
_LEAK_BODY = r"[ \t]*(?:correct answer|gold(?: answer)?|ground[ _-]?truth)[ \t]*:[ \t]*([^\n]*)"
_LEAK_LINE = re.compile("^" + _LEAK_BODY, re.I | re.M)
# the same line after a line break: a pattern that opens with a literal character lets the
# engine jump from one line break to the next, where `^` (or a case-insensitive word) makes it
# try the pattern at every character of a long passage (see _has_leak_line)
_LEAK_AFTER_BREAK = re.compile("\n" + _LEAK_BODY, re.I)
FIELD_VALUES = 100_000  # distinct values kept per candidate grouping field (bounded memory)
NOTHING_FORMS = 16  # distinct "nothing" answers counted as written (bounded memory)
LONG_ANSWER = 2_000  # characters: longer is a whole message or a runaway generation, not an answer
_WARN_MIN_ANSWERS = 5  # fewer answers, all wrong, is no sign of a misread


def _has_leak_line(text: str) -> bool:
    """Whether :data:`_LEAK_LINE` matches in ``text``: at its start or after a line break (the
    lines `^` matches under ``re.M``), about four times faster than ``_LEAK_LINE.search``."""
    return _LEAK_LINE.match(text) is not None or _LEAK_AFTER_BREAK.search(text) is not None


@dataclass(frozen=True)
class ReadOptions:
    """How records become rows, beyond where their fields are (:class:`FieldMap`).

    Parameters
    ----------
    scorer
        ``"em"``, ``"f1"``, ``"contains"`` (whole words, :func:`mechanism.core.scoring.contains_answer`;
        ``"cover-em"`` is the same test) or a function ``(answer, gold) -> bool``; scores
        rows whose source gives no ``correct``.
    unanswered
        ``"fail"``: an episode with no final answer and no label is kept as a failure;
        ``"error"``: it is a bad record.
    round_tools
        Tool names that count as rounds (``None``: every tool but a finishing one).
    skip_tools
        Tool names that never count as rounds (their calls fold into the next step's thought).
    """

    scorer: str | Callable[[str, list[str]], bool] = "em"
    unanswered: str = "fail"
    round_tools: frozenset[str] | None = None
    skip_tools: frozenset[str] = frozenset()
    question_key: QuestionKey | None = None
    error_pattern: Any = None  # compiled by RE2 (mechanism.core.patterns), or the caller's own re.Pattern

    @classmethod
    def make(cls, *, scorer: Any = "em", unanswered: str = "fail",
             round_tools: str | Collection[str] | None = None, question_key: Any = None,
             error_pattern: Any = None) -> ReadOptions:
        """Options checked, with one-line errors naming the option."""
        if not callable(scorer) and scorer not in SCORERS:
            raise InputError(f"`scorer` must be one of {', '.join(SCORERS)} or a function (answer, gold) -> bool, "
                             f"got {scorer!r}", field="scorer")
        if unanswered not in ("fail", "error"):
            raise InputError(f"`unanswered` must be 'fail' or 'error', got {unanswered!r}", field="unanswered")
        include: set[str] = set()
        exclude: set[str] = set()
        if round_tools is not None:
            items = round_tools.split(",") if isinstance(round_tools, str) else list(round_tools)
            for item in items:
                if not isinstance(item, str):
                    raise InputError(f"`round_tools` holds tool names, got {type(item).__name__}", field="round_tools")
                name = item.strip().lower()
                if name[:1] in ("-", "!"):
                    if name[1:].strip():
                        exclude.add(name[1:].strip())
                elif name:
                    include.add(name)
            if not include and not exclude:
                raise InputError("`round_tools` names no tool", field="round_tools")
        return cls(scorer=scorer, unanswered=unanswered, round_tools=frozenset(include) or None,
                   skip_tools=frozenset(exclude), question_key=QuestionKey.make(question_key),
                   error_pattern=compile_error_pattern(error_pattern))

    def counts(self, tool: str | None) -> bool:
        """Whether a call of ``tool`` is a round."""
        name = (tool or "").lower()
        if name in self.skip_tools:
            return False
        return self.round_tools is None or name in self.round_tools

    @property
    def scorer_name(self) -> str:
        return self.scorer if isinstance(self.scorer, str) else getattr(self.scorer, "__name__", "a user function")

# canonical fields the driver resolves itself (the format parsers give steps and answer)
_RECORD_FIELDS = ("arm", "question_id", "sample_id", "question", "gold", "correct", "category",
                  "t_cap", "score", "meta")


def question_hash(question: str) -> str:
    """A stable id from the question text (same text, same id, on every machine)."""
    return "q" + hashlib.sha1(question.strip().encode("utf-8")).hexdigest()[:12]


class QuestionKey:
    """``question_key=``: question ids from a normalised form of the question text, or from a
    regular expression's capture, for logs whose question text carries a prefix that changes
    (a reflection, a trial header) while the question stays the same. A pattern given as text
    is compiled by RE2 (:func:`mechanism.core.patterns.compile_linear`, ``.`` matching newlines):
    its time is linear in the question whatever the pattern.

    ``"text"``: the text after SQuAD normalisation (lower case, punctuation, articles and
    runs of space removed); a regular expression (text or compiled): its first match in the
    question, group 1 when it has a group, normalised the same way. A question it does not
    match is a bad record naming `question`.
    """

    def __init__(self, pattern: Any, label: str) -> None:
        self.pattern = pattern
        self.label = label

    @classmethod
    def make(cls, spec: Any) -> QuestionKey | None:
        if spec is None:
            return None
        if isinstance(spec, re.Pattern):
            return cls(spec, f"the capture of {spec.pattern!r}")
        if not isinstance(spec, str) or not spec.strip():
            raise InputError("`question_key` must be 'text' or a regular expression", field="question_key")
        if spec.strip() in ("text", "normalized", "normalised"):
            return cls(None, "the normalised question text")
        return cls(compile_linear(spec, option="question_key", dot_all=True), f"the capture of {spec!r}")

    def key(self, question: str) -> str:
        text = question
        if self.pattern is not None:
            m = self.pattern.search(question)
            if m is None:
                raise InputError(f"`question_key` {self.pattern.pattern!r} does not match the question "
                                 f"{_short(question)}", field="question")
            text = m.group(1) if self.pattern.groups and m.group(1) is not None else m.group(0)
        return question_hash(normalize_answer(text))


@dataclass
class Tally:
    """Counts for the notes of a read (so the report says what was derived or doubted)."""

    hashed_qid: int = 0
    arm_from_stem: dict[str, str] = field(default_factory=dict)
    arm_fields: Counter = field(default_factory=Counter)  # (source, field that named the arm) -> rows
    keyed_questions: int = 0
    question_key_label: str = ""
    calls_by_tool: Counter = field(default_factory=Counter)
    failed_by_tool: Counter = field(default_factory=Counter)
    parallel_calls: int = 0  # calls issued in the same message as the call before them
    error_pattern: bool = False
    failure_kinds: Counter = field(default_factory=Counter)  # mechanism.core.failures.FAILURE_KINDS -> calls
    nothing_forms: Counter = field(default_factory=Counter)  # "nothing" answers as written ('None', '') -> calls
    replies: RepeatedReplies = field(default_factory=RepeatedReplies)
    arm_overridden: int = 0
    kept_without_answer: int = 0
    unanswered: int = 0
    disagreements: int = 0
    disagreement_examples: list[str] = field(default_factory=list)
    scored: int = 0
    given: int = 0
    scorer_name: str = "em"
    answer_rules: Counter = field(default_factory=Counter)
    folded_calls: Counter = field(default_factory=Counter)
    folded_trailing: int = 0
    long_answers: int = 0
    self_calls: Counter = field(default_factory=Counter)
    escaped_arms: dict[str, str] = field(default_factory=dict)
    parser_notes: dict[str, list[Any]] = field(default_factory=dict)  # kind -> [count, examples]
    # arm -> [rows scored here, of them with an answer, of them correct]
    arm_scoring: dict[str, list[int]] = field(default_factory=dict)
    arm_examples: dict[str, tuple[str, str]] = field(default_factory=dict)
    arm_mapped: bool = False  # the user named the arm field (`columns={'arm': ...}`): no advice to do so
    gold_leaks: int = 0
    gold_leak_examples: list[str] = field(default_factory=list)
    # record fields of rows whose question id came from the text: name -> distinct values
    field_values: dict[str, set] = field(default_factory=dict)
    hashed_groups: Counter = field(default_factory=Counter)  # (arm, question id from text) -> rows

    _norm: dict[str, str] = field(default_factory=dict)
    _f1_cache: dict[tuple[str, str], float] = field(default_factory=dict)

    def without_caches(self) -> Tally:
        """This tally with its look-up caches emptied (they are not counts: not worth sending)."""
        self._norm, self._f1_cache = {}, {}
        return self

    def _normalized(self, text: str) -> str:
        # gold answers repeat across samples and arms: normalise each text once
        norm = self._norm.get(text)
        if norm is None:
            norm = normalize_answer(text)
            if len(self._norm) < 1_000_000:
                self._norm[text] = norm
        return norm

    def exact(self, answer: str | None, gold: list[str]) -> bool:
        """Same as :func:`mechanism.core.scoring.exact_match`, with normalisation cached."""
        if answer is None:
            return False
        a = self._normalized(answer)
        return any(a == self._normalized(g) for g in gold)

    def f1(self, answer: str, gold: list[str]) -> float:
        """Same as :func:`mechanism.core.scoring.f1_score`, with normalisation and pairs cached."""
        a = self._normalized(answer)
        best = 0.0
        for g in gold:
            n = self._normalized(g)
            score = self._f1_cache.get((a, n))
            if score is None:
                score = 1.0 if a == n else token_f1(a.split(), n.split())
                if len(self._f1_cache) < 1_000_000:
                    self._f1_cache[(a, n)] = score
            best = max(best, score)
        return best

    def note(self, kind: str, where: str) -> None:
        """Count one parser note (a repaired or dropped action) and keep a few locations."""
        entry = self.parser_notes.setdefault(kind, [0, []])
        entry[0] += 1
        if len(entry[1]) < EXAMPLES and where not in entry[1]:  # one location once
            entry[1].append(where)

    def leak(self, gold: list[str], question: str, steps: list[dict[str, Any]], where: str) -> None:
        """Flag an episode whose agent-visible text (question, thoughts, observations, user
        turns) holds a gold answer on a bookkeeping-shaped line (``Correct answer:``,
        ``Gold:``, ``Ground truth:``): a logger's line read as part of the transcript."""
        if not gold:
            return
        # only the texts that hold such a line, in reading order; most episodes have none, so
        # their names are made (and the gold normalised) only for the few that do
        texts = [("question", question)] if isinstance(question, str) and _has_leak_line(question) else []
        for i, st in enumerate(steps, start=1):
            for name in ("thought", "observation", "user"):
                text = st.get(name)
                if isinstance(text, str) and _has_leak_line(text):
                    texts.append((f"step {i} {name}", text))
        if not texts:
            return
        golds = [g for g in (self._normalized(g) for g in gold) if g]
        for name, text in texts:
            for m in _LEAK_LINE.finditer(text):
                said = self._normalized(m.group(1))
                if said and any(f" {g} " in f" {said} " for g in golds):
                    self.gold_leaks += 1
                    if len(self.gold_leak_examples) < EXAMPLES:
                        self.gold_leak_examples.append(f"{where}, {name}: {_short(m.group(0).strip())}")
                    return

    def score(self, answer: str | None, gold: list[str], options: ReadOptions) -> bool:
        """``correct`` of an answer by the chosen scorer."""
        if answer is None:
            return False
        scorer = options.scorer
        if scorer == "em":
            return self.exact(answer, gold)
        if scorer == "f1":
            return self.f1(answer, gold) >= F1_THRESHOLD
        if scorer in ("contains", "cover-em"):  # one test under two names: whole words
            return contains_answer(answer, gold)
        result = scorer(answer, list(gold))
        if not isinstance(result, (bool, np.bool_)):
            raise InputError(f"the `scorer` function must return a bool, got {type(result).__name__}", field="scorer")
        return bool(result)

    def warnings(self) -> list[str]:
        """Loud notes: arms whose every found answer failed the scorer (a sign that the answer
        was taken from the wrong place, not that the agent is always wrong), and episodes whose
        agent-visible text shows the gold on a bookkeeping line (:meth:`leak`)."""
        out = []
        grouping = self.grouping_warning()
        if grouping and grouping[1]:
            out.append(grouping[0])
        if self.gold_leaks:
            out.append(f"{self.gold_leaks} episodes show a gold answer on a bookkeeping line in what the agent saw "
                       "(a logger's line read as transcript: retrieval and failures would be miscounted); e.g. "
                       + "; ".join(self.gold_leak_examples))
        for arm, (_scored, answered, correct) in self.arm_scoring.items():
            if answered >= _WARN_MIN_ANSWERS and not correct:
                example = self.arm_examples.get(arm)
                shown = (f"; e.g. answer {_short(example[0])} vs gold {_short(example[1])}" if example else "")
                out.append(f"arm {arm!r} scores 0 % by `{self.scorer_name}`: none of its {answered} answers "
                           f"matches a gold answer{shown}; check where the answer is taken from "
                           "(`answer_pattern=`, `columns={'answer': ...}`) or pick another `scorer=`")
        return out

    def grouping_warning(self) -> tuple[str, bool] | None:
        """When question ids came from the text and most (arm, question) groups hold one
        sample: the message naming the record fields with an id-like name and fewer distinct
        values that might group them, and whether any was found (a warning then, else a note:
        one sample per question is also a design)."""
        groups = self.hashed_groups
        singles = sum(1 for n in groups.values() if n == 1)
        if len(groups) < 4 or singles * 2 <= len(groups):
            return None
        n_ids = len({q for _, q in groups})
        idlike = re.compile(r"(?:^|[_.\-])(?:id|ids|idx|index|key|uid|qid|task|question|problem|item)(?:$|[_.\-])|"
                            r"(?:id|idx|key)$", re.I)
        found = [(name, len(values)) for name, values in self.field_values.items()
                 if 1 < len(values) < n_ids and idlike.search(name) is not None]
        found.sort(key=lambda nv: (idlike.search(nv[0]) is None, -nv[1], nv[0]))
        if found:
            name = found[0][0]
            shown = ", ".join(f"`{n}` ({v:,} values)" for n, v in found[:3])
            hint = (f"record fields with fewer distinct values that may name the question: {shown}; e.g. "
                    f"`columns={{'question_id': {name!r}}}` (CLI `--columns question_id={name}`), or `question_key=`")
        else:
            hint = "name the question's id field with `columns={'question_id': ...}`, or pass `question_key=`"
        return (f"question ids come from the question text, and {singles:,} of {len(groups):,} (arm, question) groups "
                f"hold one sample ({n_ids:,} \"questions\"): if the text changes between samples of one question "
                f"(a rewritten first message, a prefixed reflection), they are not grouped; {hint}", bool(found))

    def failure_notes(self) -> list[str]:
        """What the failure reading decided beyond error messages: calls the environment
        answered with nothing, HTTP errors, calls the input marked failed, and texts repeated
        after many different calls, proposed as an ``error_pattern``."""
        out = []
        nothing = self.failure_kinds.get("nothing", 0)
        if nothing:
            forms = ", ".join(f"{'empty' if not t else repr(t)} {n}" for t, n in
                              sorted(self.nothing_forms.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
            out.append(f"{nothing} calls answered with nothing ({forms}) counted as failed calls (the default "
                       "reading: an empty observation, `None`, `null`, `Nothing happens.`; not the empty output "
                       "of a command or a write)")
        if self.failure_kinds.get("http"):
            out.append(f"{self.failure_kinds['http']} calls answered with an HTTP error (a 4xx/5xx status line or "
                       "error body) counted as failed calls")
        if self.failure_kinds.get("given"):
            out.append(f"{self.failure_kinds['given']} calls marked failed in the input (`steps.failed`) kept so")
        for p in self.replies.proposals():
            tools = ", ".join(f"`{t}`" for t in p.tools[:3]) + (" and more" if len(p.tools) > 3 else "")
            shown = _short(p.text, 80)
            out.append(f"observation {shown} follows {p.actions}{'+' if p.actions >= 256 else ''} distinct calls "
                       f"of {tools} ({p.calls} calls, {p.share:.0%}): if it is the environment's fixed answer to an "
                       f"action that did nothing, pass `error_pattern={p.pattern!r}` (CLI `--error-pattern "
                       f"{_shell_quote(p.pattern)}`) to count it as failed")
        return out

    def notes(self) -> list[str]:
        out = []
        grouping = self.grouping_warning()
        if grouping and not grouping[1]:
            out.append(grouping[0])
        if self.hashed_qid:
            out.append(f"{self.hashed_qid} rows had no `question_id`: derived a stable id from the question text")
        for source, arm in self.arm_from_stem.items():
            out.append(f"{source}: no `arm` field and no `arm=`: arm named {arm!r} after the file")
        for (source, key), n in self.arm_fields.items():
            if key == "arm" or key.startswith("`") or " " in key or self.arm_mapped:
                how = f"the field `{key}`" if key == "arm" else key
                out.append(f"{source}: arms named by {how} ({n} rows)")
            else:  # a model or checkpoint field: two runs of one model would merge into one arm
                out.append(f"{source}: arms named by the field `{key}` ({n} rows): runs that share its value "
                           "share an arm (name each run with `arm=` or `columns={'arm': ...}` to keep them apart)")
        if self.keyed_questions:
            out.append(f"`question_key`: {self.keyed_questions} rows keyed by {self.question_key_label}")
        if self.calls_by_tool:
            how = "the default failure reading" + (" and `error_pattern`" if self.error_pattern else "")
            shown = ", ".join(f"`{t}` {self.failed_by_tool[t]} of {n}" for t, n in
                              sorted(self.calls_by_tool.items(), key=lambda kv: (-kv[1], kv[0]))[:12])
            more = len(self.calls_by_tool) - 12
            out.append(f"failed calls by tool ({how}): {shown}" + (f", and {more} more tools" if more > 0 else ""))
            out.extend(self.failure_notes())
        if self.parallel_calls:
            out.append(f"{self.parallel_calls} calls issued in the same message as the call before them (parallel "
                       "function calling), marked `steps.parallel`: a strategy that fans calls out differs from one "
                       "that chains them")
        for escaped in self.escaped_arms:
            out.append("arm name with control characters (newlines, escape sequences) kept escaped: "
                       f"{display_name(escaped, max_length=60, mathtext=False)!r}")
        if self.arm_overridden:
            out.append(f"{self.arm_overridden} rows had an `arm` field that `arm=` replaced")
        if self.kept_without_answer:
            out.append(f"{self.kept_without_answer} rows have no final answer but the source records their "
                       "outcome: kept with `answer` = null")
        if self.unanswered:
            out.append(f"{self.unanswered} episodes ended without a final answer and without a label: kept as "
                       "failures (`answer` = null, `correct` = false)")
        # only answers cut out of free text are worth a note; tags and finish calls are explicit
        rules = {k: v for k, v in self.answer_rules.items() if k not in ("answer_tag", "finish", "finish_tool")}
        if rules:
            shown = ", ".join(f"{n} by {_RULE_NAMES.get(k, k)}" for k, v in sorted(rules.items()) for n in [v])
            out.append(f"final answers found in the last message: {shown}")
        for tool, n in sorted(self.folded_calls.items()):
            out.append(f"{n} calls of `{tool}` not counted as rounds (`round_tools`): their text joins the next "
                       "step's thought")
        if self.folded_trailing:
            out.append(f"{self.folded_trailing} of those calls came after an episode's last round and are left "
                       "out of `steps`")
        for tool, n in sorted(self.self_calls.items()):
            out.append(f"{n} calls of `{tool}` counted as rounds; if it is not a tool the environment answers, "
                       f"pass `round_tools='-{tool}'`")
        if self.long_answers:
            out.append(f"{self.long_answers} answers are longer than {LONG_ANSWER:,} characters (kept whole): a "
                       "message taken as the answer where no convention marked one? see `answer_pattern=`")
        for kind, (n, examples) in self.parser_notes.items():
            out.append(f"{n} {kind}; e.g. " + "; ".join(examples))
        if self.given:
            out.append(f"`correct` taken from the input for {self.given} rows")
        if self.scored:
            how = {"em": "exact match", "f1": f"token F1 >= {F1_THRESHOLD}",
                   "cover-em": "cover exact match (gold contained as whole words)",
                   "contains": "gold contained as whole words in the answer"}.get(self.scorer_name,
                                                                                  f"`{self.scorer_name}`")
            out.append(f"`correct` scored by {how} against `gold` for {self.scored} rows")
        if self.disagreements:
            out.append(f"{self.disagreements} rows: the given `correct` disagrees with exact/cover match of "
                       "`answer` against `gold` (kept as given); e.g. " + "; ".join(self.disagreement_examples))
        return out


_RULE_NAMES = {"pattern": "`answer_pattern`", "boxed": "\\boxed{}", "final_answer": "'Final answer:'",
               "answer_line": "'Answer:'", "answer_is": "'the answer is'", "finish": "Finish[...]",
               "whole_message": "the whole message",
               "finish_tool": "a finishing tool call",
               "message_tool": "the last message to the user through a message tool (`send_message`)"}


def _shell_quote(text: str) -> str:
    """``text`` as one shell word (POSIX single quotes)."""
    return "'" + text.replace("'", "'\\''") + "'"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _fold_steps(steps: list[dict[str, Any]], options: ReadOptions, tally: Tally) -> list[dict[str, Any]]:
    """Keep only the calls that are rounds; a call that is not one (``reflect``, ``think``)
    joins the next kept step's thought, so nothing the agent wrote is lost."""
    kept: list[dict[str, Any]] = []
    carried: list[str] = []
    for step in steps:
        if options.counts(step.get("tool")):
            if carried:
                step = {**step, "thought": "\n".join([*carried, step["thought"]] if step.get("thought") else carried)}
                carried = []
            kept.append(step)
            continue
        tally.folded_calls[str(step.get("tool"))] += 1
        if step.get("thought"):
            carried.append(step["thought"])
        carried.append(f"{step.get('tool')}[{step.get('query') or ''}]")
    for step in reversed(steps):  # calls after the last round have no step to join
        if options.counts(step.get("tool")):
            break
        tally.folded_trailing += 1
    return kept


def build_row(record: Mapping[str, Any], parsed: Mapping[str, Any], fields: FieldMap, *,
              fmt: str, source: str, line: int, arm: str | None, stem_arm: str,
              tally: Tally, options: ReadOptions | None = None) -> dict[str, Any]:
    """One canonical row (plus ``_source``/``_line``) from a record and what its format parser
    found. Raises :class:`InputError` (without file and line; the caller adds them)."""
    options = options or ReadOptions()
    found, consumed = _locate(record, parsed, fields)
    row: dict[str, Any] = {}
    # every check that can reject the record comes first; the tally only counts kept rows
    overridden, from_stem, arm_field = _set_arm(row, record, parsed, found, arm, stem_arm, tally)
    hashed = _set_question(row, record, parsed, found, fields, options)
    key, value = found["sample_id"]
    row["sample_id"] = as_int(value, key) if key is not None else None
    key, value = found["gold"]
    gold = as_gold(value, key) if key is not None else []
    row["gold"] = gold
    steps = _set_steps(row, parsed, options, tally)
    answer, final = _set_answer(row, record, parsed, fields, fmt, consumed, tally)
    key, value = found["category"]
    row["category"] = as_str(value, key) if key is not None else None
    key, value = found["t_cap"]
    row["t_cap"] = as_int(value, key) if key is not None else None
    skey, svalue = found["score"]
    given_score = as_float(svalue, skey) if skey is not None else None
    given_correct, unanswered = _check_label(found, fields, fmt, options, final=final, gold=gold)
    row["meta"] = _meta(record, parsed, found, consumed)

    # the record is kept: score it and count what was derived
    where = f"{source} line {line}"
    _score(row, tally, options, given_correct, unanswered, answer, gold, where)
    row["score"] = tally.f1(answer, gold) if answer is not None and gold else given_score
    _count_kept(tally, parsed, where, unanswered=unanswered, final=final, overridden=overridden)
    if arm_field is not None:
        tally.arm_fields[(source, arm_field)] += 1
    if options.question_key is not None:
        tally.keyed_questions += 1
        tally.question_key_label = options.question_key.label
    _count_calls(steps, tally, options)
    if from_stem:
        tally.arm_from_stem.setdefault(source, stem_arm)
    if hashed:
        _count_hashed(row, record, consumed, tally)
    tally.arm_mapped = "arm" in fields.columns
    tally.leak(gold, row["question"], steps, where)
    return row


def _locate(record: Mapping[str, Any], parsed: Mapping[str, Any],
            fields: FieldMap) -> tuple[dict[str, tuple[str | None, Any]], set[str]]:
    """Each record field's key and value (looked up in the parser's ``extra_fields`` too), and the
    top-level keys used, which are therefore not meta."""
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
    return found, consumed


def _set_arm(row: dict[str, Any], record: Mapping[str, Any], parsed: Mapping[str, Any],
             found: Mapping[str, tuple[str | None, Any]], arm: str | None, stem_arm: str,
             tally: Tally) -> tuple[bool, bool, str | None]:
    """``row["arm"]``; returns whether ``arm=`` overrode the record's, whether it is the file
    name's, and the field it came from."""
    overridden = from_stem = False
    # arm: `arm=` beats the record, which beats the format's default, which beats the file name
    key, value = found["arm"]
    if arm is not None:
        overridden = key is not None and value != arm
        row["arm"] = arm
        arm_field = "`arm=`"
    elif key is not None:
        row["arm"] = as_str(value, key)
        arm_field = record.get("_arm_source") if isinstance(record.get("_arm_source"), str) else key
    elif parsed.get("arm_default"):
        row["arm"] = parsed["arm_default"]
        arm_field = parsed.get("arm_source") or "the format's agent name"
    else:
        from_stem = True
        row["arm"] = stem_arm
        arm_field = None

    # an arm name is a label printed on terminals and drawn in figures: a newline or an
    # escape sequence in it would forge output lines
    escaped = escape_control(row["arm"])
    if escaped != row["arm"]:
        tally.escaped_arms.setdefault(escaped, row["arm"])
        row["arm"] = escaped
    return overridden, from_stem, arm_field


def _set_question(row: dict[str, Any], record: Mapping[str, Any], parsed: Mapping[str, Any],
                  found: Mapping[str, tuple[str | None, Any]], fields: FieldMap, options: ReadOptions) -> bool:
    """``row["question"]`` and ``row["question_id"]``; True when the id is a hash of the text."""
    key, value = found["question"]
    question = as_str(value, key) if key is not None else parsed.get("question")
    if question is None:
        raise InputError(f"missing `{fields.paths('question')[0]}` (the question text)",
                         field=fields.paths("question")[0])
    row["question"] = question

    key, value = found["question_id"]
    if options.question_key is not None:
        row["question_id"] = options.question_key.key(question)
    elif key is not None:
        row["question_id"] = as_str(value, key)
    elif "_key" in record:
        row["question_id"] = str(record["_key"])
    else:
        row["question_id"] = question_hash(question)
        return True
    return False


def _set_steps(row: dict[str, Any], parsed: Mapping[str, Any], options: ReadOptions,
               tally: Tally) -> list[dict[str, Any]]:
    """``row["steps"]`` (folded where the options say which tools count) and ``row["n_rounds"]``."""
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
    if steps and (options.round_tools is not None or options.skip_tools):
        steps = _fold_steps(steps, options, tally)
        row["steps"] = steps
        n_rounds = len(steps)
    elif steps:
        for step in steps:  # calls that query nothing outside the model: say they count, once
            if (step.get("tool") or "").lower() in _SELF_TOOLS:
                tally.self_calls[step["tool"].lower()] += 1
    row["n_rounds"] = n_rounds
    return steps


def _set_answer(row: dict[str, Any], record: Mapping[str, Any], parsed: Mapping[str, Any], fields: FieldMap,
                fmt: str, consumed: set[str], tally: Tally) -> tuple[str | None, bool]:
    """``row["answer"]``; returns it and whether the episode ended with a final answer."""
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
    if answer is not None and len(answer) > LONG_ANSWER:
        tally.long_answers += 1
    return answer, final


def _check_label(found: Mapping[str, tuple[str | None, Any]], fields: FieldMap, fmt: str, options: ReadOptions, *,
                 final: bool, gold: list[str]) -> tuple[bool | None, bool]:
    """The record's success label (None when it has none) and whether the episode is unanswered:
    no final answer and no label. Refuses a record that can be neither read nor scored."""
    ckey, cvalue = found["correct"]
    try:
        given_correct = as_bool(cvalue, ckey, fields.true_values) if ckey is not None else None
    except InputError as exc:
        if "correct" in fields.columns:
            raise
        # a graded reward (F1, partial credit) found under a default alias is not a label
        raise InputError(f"{exc.reason}; name the success label with `columns={{'correct': ...}}`",
                         field=ckey) from None
    unanswered = not final and given_correct is None
    if unanswered and options.unanswered == "error":
        raise InputError("no final answer in the trajectory and no `correct` field to say how it ended "
                         "(`unanswered='error'`)", field=fields.paths("text")[0] if fmt == "searchr1" else "answer")
    if given_correct is None and not gold and not unanswered:
        raise InputError("cannot score: no `correct` field and no gold answers (`gold`)", field="gold")
    return given_correct, unanswered


def _meta(record: Mapping[str, Any], parsed: Mapping[str, Any], found: Mapping[str, tuple[str | None, Any]],
          consumed: set[str]) -> str | None:
    """Every field not read into a column (and the ``meta`` field's own content), as JSON text."""
    key, value = found["meta"]
    # null fields say nothing (and a null canonical field was not used): not meta
    leftovers = {k: v for k, v in record.items() if v is not None and k not in consumed and k[:1] != "_"}
    for name, extra in (parsed.get("meta_extra") or {}).items():  # what the parser kept beside the steps
        leftovers.setdefault(name, extra)
    if key is not None:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        leftovers = {**leftovers, **value} if isinstance(value, Mapping) else {**leftovers, "meta": value}
    return json.dumps(leftovers, ensure_ascii=False, default=str, sort_keys=True) if leftovers else None


def _score(row: dict[str, Any], tally: Tally, options: ReadOptions, given_correct: bool | None, unanswered: bool,
           answer: str | None, gold: list[str], where: str) -> None:
    """``row["correct"]``: the given label (checked against the gold), else false when unanswered, else scored."""
    if given_correct is not None:
        row["correct"] = given_correct
        tally.given += 1
        if answer is not None and gold:
            em = tally.exact(answer, gold)
            # a strict grader may reject a covering answer, but never an exact match
            agrees = (em or contains_answer(answer, gold)) if given_correct else not em
            if not agrees:
                tally.disagreements += 1
                if len(tally.disagreement_examples) < EXAMPLES:
                    tally.disagreement_examples.append(where)
    elif unanswered:
        row["correct"] = False
    else:
        row["correct"] = tally.score(answer, gold, options)
        tally.scored += 1
        stats = tally.arm_scoring.setdefault(row["arm"], [0, 0, 0])
        stats[0] += 1
        if answer is not None:
            stats[1] += 1
            stats[2] += row["correct"]
            if row["arm"] not in tally.arm_examples and gold:
                tally.arm_examples[row["arm"]] = (answer, gold[0])


def _count_kept(tally: Tally, parsed: Mapping[str, Any], where: str, *,
                unanswered: bool, final: bool, overridden: bool) -> None:
    """How a kept record ended and what its parser noted."""
    if unanswered:
        tally.unanswered += 1
    elif not final:
        tally.kept_without_answer += 1
    if final and parsed.get("answer_rule"):
        tally.answer_rules[parsed["answer_rule"]] += 1
    for kind in parsed.get("notes", ()):
        tally.note(kind, where)
    if overridden:
        tally.arm_overridden += 1


def _count_calls(steps: list[dict[str, Any]], tally: Tally, options: ReadOptions) -> None:
    """Failed calls as the environment said them, per tool; each step marked with the read's verdict."""
    tally.error_pattern = options.error_pattern is not None
    mark = options.error_pattern is not None
    for step in steps:
        tool = step.get("tool") or "tool"
        tally.calls_by_tool[tool] += 1
        tally.parallel_calls += step.get(PARALLEL) is True
        observation = step.get("observation")
        kind = failure_kind(observation, options.error_pattern, tool=step.get("tool"))
        given = step.get("failed")
        if kind is None and given is True:
            kind = "given"
        if kind is not None:
            tally.failed_by_tool[tool] += 1
            tally.failure_kinds[kind] += 1
            if kind == "nothing":
                form = observation.strip()[:40]
                if form in tally.nothing_forms or len(tally.nothing_forms) < NOTHING_FORMS:
                    tally.nothing_forms[form] += 1
        else:
            tally.replies.add(observation, tool, step.get("arguments") or step.get("query"))
        if mark or given is not None:
            # the read's verdict travels with the step (and through parquet), so the strategy fit
            # reads the calls the way this read did, `error_pattern` included
            step["failed"] = kind is not None


def _count_hashed(row: dict[str, Any], record: Mapping[str, Any], consumed: set[str], tally: Tally) -> None:
    """A question id hashed from the text: the fields that might group these rows by question."""
    tally.hashed_qid += 1
    for name, value in record.items():
        if name in consumed or name[:1] == "_" or isinstance(value, bool) or not isinstance(value, (str, int)):
            continue
        seen = tally.field_values.setdefault(name, set())
        if len(seen) < FIELD_VALUES:
            seen.add(value)
    tally.hashed_groups[(row["arm"], row["question_id"])] += 1


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
        # `failed`: the read's verdict per call, kept when the read marked any (error_pattern=);
        # `parallel`: a call issued in the same message as the one before, kept when any was
        self.flags: dict[str, list[bool | None]] = {flag: [] for flag in STEP_FLAGS}
        self.any_flag: dict[str, bool] = dict.fromkeys(self.flags, False)

    def __len__(self) -> int:
        return len(self.steps_len)

    def append(self, row: Mapping[str, Any]) -> None:
        for name, values in self.scalars.items():
            values.append(row.get(name))
        self.gold.extend(row["gold"])
        self.gold_len.append(len(row["gold"]))
        steps = row["steps"]
        for f, values in self.steps.items():
            values.extend([st.get(f) for st in steps])
        for flag, values in self.flags.items():
            given = [st.get(flag) for st in steps]
            values.extend(given)
            if not self.any_flag[flag] and any(f is not None for f in given):
                self.any_flag[flag] = True
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
                fields = [pl.Series(f, v, dtype=pl.String) for f, v in self.steps.items()]
                kept = [flag for flag, any_ in self.any_flag.items() if any_]
                fields += [pl.Series(flag, self.flags[flag], dtype=pl.Boolean) for flag in kept]
                columns.append(_list_series(name, pl.DataFrame(fields).select(pl.struct([f.name for f in fields]))
                                            .to_series(), self.steps_len).cast(pl.List(step_dtype(kept))))
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
    # the newest Arrow layout is polars' own (string views): handed over and back without a copy,
    # where the default (large strings) copies every observation's text twice
    arr = pa.LargeListArray.from_arrays(pa.array(offsets), flat.to_arrow(compat_level=pl.CompatLevel.newest()))
    return pl.Series(name, pl.from_arrow(arr))
