"""Readable descriptions of strategies: a name from tools and moves, the typical sequence,
an unmasked example, success per arm with intervals (questions weighted equally within an
arm, percentile bootstrap over questions)."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

import numpy as np
import polars as pl

from mechanism.resample import (percentile_interval, question_bootstrap_weights, question_weighted, resolve_seed,
                                stream)

MAX_EXAMPLE_CHARS = 1200


def _collapse(items: list[str]) -> list[str]:
    """Runs of one item as ``item x3``."""
    out: list[str] = []
    for it in items:
        if out and (out[-1] == it or out[-1].startswith(it + " x")):
            n = int(out[-1].rsplit(" x", 1)[1]) + 1 if " x" in out[-1] and out[-1].startswith(it + " x") else 2
            out[-1] = f"{it} x{n}"
        else:
            out.append(it)
    return out


# what a relation adds to a tool's name when it is not the tool's first, plain use
_NOTE = {"repeat": "again", "return": "again", "revise": "revised", "switch": None, "new": "another",
         "first": None}
_SEARCH_NOTE = {"bridge_lookup": "bridge", "verification": "check", "reformulation": "reworded",
                "parallel_lookup": "parallel", "new_lookup": "new", "repeat": "repeat"}


def strategy_name(moves: Sequence[str], tools: Sequence[str]) -> str:
    """A name built from a typical sequence's tools and moves, e.g.
    ``get_order_details -> cancel_pending_order -> get_order_details (again)``.

    Examples
    --------
    >>> strategy_name(["first", "switch", "return", "answer"],
    ...               ["get_order_details", "cancel_pending_order", "get_order_details"])
    'get_order_details -> cancel_pending_order -> get_order_details (again)'
    >>> strategy_name(["first_lookup", "bridge_lookup", "answer"], ["search", "search"])
    'search -> search (bridge)'
    >>> strategy_name(["answer"], [])
    'answer without tools'
    """
    if not tools:
        return "answer without tools"
    return " -> ".join(_collapse(step_labels(moves, tools)))


def step_labels(moves: Sequence[str], tools: Sequence[str]) -> list[str]:
    """Each call as a name reads it: the tool, with what its move adds (``search (bridge)``,
    ``get_order_details (again)``, ``cancel (failed)`` where failures are kept apart)."""
    parts = []
    for move, tool in zip(moves, tools):
        note = _SEARCH_NOTE.get(move) if move in _SEARCH_NOTE else _NOTE.get(move)
        failed = tool.endswith("!")
        label = tool.rstrip("!") + (" (failed)" if failed else "")
        if note:
            label = label[:-1] + f", {note})" if failed else label + f" ({note})"
        parts.append(label)
    return parts


# A name states the steps that the members holding at least this share of a strategy's
# trajectories all take, in order (its core); the rest are optional steps of the family.
NAME_COVERAGE = 0.9


def _runs_of(labels: Sequence[str]) -> tuple[str, ...]:
    """A label sequence with runs of one label as one step (how often is not the plan)."""
    out: list[str] = []
    for lab in labels:
        if not out or out[-1] != lab:
            out.append(lab)
    return tuple(out)


def _contains(seq: tuple[str, ...], core: tuple[str, ...]) -> bool:
    """Whether ``core`` is an ordered subsequence of ``seq``."""
    it = iter(seq)
    return all(any(x == c for x in it) for c in core)


def shared_core(sequences: Sequence[tuple[str, ...]], weights: Sequence[float], *,
                coverage: float = NAME_COVERAGE) -> tuple[tuple[str, ...], float]:
    """The longest step sequence (found greedily) that members holding ``coverage`` of the
    weight contain in order, starting from the heaviest member's, and the weight share
    containing it.

    Examples
    --------
    >>> shared_core([("a", "b", "c"), ("a", "c"), ("a", "b", "c")], [5, 4, 1])
    (('a', 'c'), 1.0)
    """
    w = np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    if not len(sequences) or total <= 0:
        return (), 0.0
    core = tuple(sequences[int(np.argmax(w))])

    def share(c: tuple[str, ...]) -> float:
        return float(sum(wi for seq, wi in zip(sequences, w) if _contains(seq, c)) / total)

    held = share(core)
    while core and held < coverage - 1e-12:
        # drop the step whose removal keeps the most members (ties: the later step)
        options = [(share(core[:i] + core[i + 1:]), i) for i in range(len(core))]
        held, i = max(options)
        core = core[:i] + core[i + 1:]
    return core, held


def example_text(question: str | None, steps: list[dict] | None, answer: str | None) -> str:
    """One trajectory as text with its content (for a paper's example), bounded in length."""
    lines = [f"Q: {(question or '')[:200]}"]
    for i, st in enumerate(steps or [], start=1):
        st = st or {}
        args = st.get("arguments") or st.get("query") or ""
        obs = " ".join(str(st.get("observation") or "").split())
        lines.append(f"{i}. {st.get('tool')}({str(args)[:160]}) -> {obs[:120]}")
    lines.append(f"A: {answer}")
    return "\n".join(lines)[:MAX_EXAMPLE_CHARS]


def success_by_arm(frame: pl.DataFrame, strategies: Sequence[int], *, n_boot: int = 200, level: float = 0.95,
                   random_state: int | np.random.Generator | None = 0) -> pl.DataFrame:
    """Per strategy and arm: ``n``, question-weighted success rate and its bootstrap interval.

    ``frame`` has ``arm, question_id, strategy, correct``. Within an arm every question
    weighs 1 (each trajectory 1 / its question's samples in the arm); the bootstrap
    resamples questions. ``random_state`` (int, ``numpy.random.Generator`` or None: fresh
    entropy) is turned into one integer once (:func:`mechanism.resample.resolve_seed`); every
    arm's resamples come from its ``"strategy-success"`` stream, so arms answering the same
    questions draw the same resamples.
    """
    seed = resolve_seed(random_state)
    strategies = list(strategies)
    s_index = {s: i for i, s in enumerate(strategies)}
    rows = []
    for arm in sorted(frame["arm"].unique().to_list()):
        sub = frame.filter(pl.col("arm") == arm)
        qcodes, qinv = np.unique(sub["question_id"].to_numpy().astype(str), return_inverse=True)
        sidx = np.array([s_index[int(s)] for s in sub["strategy"].to_list()], dtype=np.int64)
        n = np.zeros((len(qcodes), len(strategies)))
        c = np.zeros_like(n)
        np.add.at(n, (qinv, sidx), 1.0)
        np.add.at(c, (qinv, sidx), sub["correct"].cast(pl.Float64).fill_null(0.0).to_numpy())
        wn, wc = question_weighted(n, c)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = wc.sum(0) / wn.sum(0)
            draws = question_bootstrap_weights(len(qcodes), n_boot, stream(seed, "strategy-success"))
            reps = (draws @ wc) / (draws @ wn)
        lo, hi = percentile_interval(reps, level)
        for s, i in s_index.items():
            rows.append((s, arm, int(n[:, i].sum()), float(rate[i]), float(lo[i]), float(hi[i])))
    return pl.DataFrame(rows, schema={"strategy": pl.Int64, "arm": pl.String, "n": pl.Int64,
                                      "success_rate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64},
                        orient="row")


def typical(values: Sequence[str]) -> str:
    """Most common value (ties: the smallest)."""
    counts = Counter(values)
    return min(counts, key=lambda v: (-counts[v], v)) if counts else ""


def dumps_names(names: dict[int, str]) -> str:
    return json.dumps({str(k): v for k, v in sorted(names.items())})


def _token_phrase(token: str) -> str:
    """A move token (:func:`mechanism.segmentation.move_tokens`) in words."""
    kind, _, body = token.partition(":")
    if kind == "E":
        return "ends without an answer" if "no_answer" in body else (
            "answers without a call" if body.startswith("no_calls") else "ends with an answer")
    if kind == "B":
        a, _, b = body.partition(">")
        return f"{a.replace('/', ' ')} then {b.replace('/', ' ')}".replace("start then ", "opens with ")
    if kind == "M":
        parts = body.split("/")
        tool, relation, sources, scope = (parts + ["", "", "", ""])[:4]
        tail = " after an error" if body.endswith("/after_error") else ""
        where = {"whole": ", whole question", "partial": ", part of question"}.get(scope, "")
        return f"{tool} {relation} from {sources.replace('+', ' and ')}{where}{tail}"
    return body.replace("/", " ")


def _calls(lo: int, hi: int) -> str:
    return f"{lo} call{'s' if lo != 1 else ''}" if lo == hi else f"{lo}-{hi} calls"


def strategy_names(frame: pl.DataFrame) -> pl.DataFrame:
    """Each strategy's name, built from what its members share, and its fidelity.

    ``frame`` has one row per member: ``strategy``, ``moves`` and ``tools`` (the attempt
    sequences of :func:`mechanism.segmentation.render`), ``tokens`` and ``n_rounds``.

    The rule (stated once, used for every name):

    1. A strategy whose members all answer without a tool call is ``answer without tools``;
       no other name says so.
    2. Otherwise the name is the core: the longest sequence of steps (runs of one step as
       one, :func:`step_labels`) that the members holding at least :data:`NAME_COVERAGE` of
       the strategy contain in order (:func:`shared_core`); steps outside it are the
       family's optional steps. Where no step is that widely shared the name is ``varied:``
       and the most common sequence. A strategy some of whose members answer without a call
       (and others not) is ``answer with no call, or`` and the core of the others.
    3. Where two strategies would read the same, each name says how its strategy differs:
       first by the members' call counts (10th to 90th percentile, where each strategy's
       range is its own; ranges may overlap, and fidelity counts the members within), then
       by the move token
       whose presence differs most between them (``with ...``/``without ...``). The
       strategy id is appended only if nothing tells them apart.

    A name *describes* a member when the member has every step of the core in order (for
    rule 1: no call), its calls lie in the stated range and it has (or lacks) the stated
    token; ``fidelity`` is the share of the strategy's members the name describes.

    Returns
    -------
    polars.DataFrame
        ``strategy, built_name, fidelity``.
    """
    groups = (frame.group_by("strategy", "moves", "tools", "tokens", "n_rounds").agg(pl.len().alias("n"))
              .sort(["strategy", "n", "moves", "tools", "tokens", "n_rounds"],
                    descending=[False, True, False, False, False, False]))
    members: dict[int, list[dict]] = {}
    for row in groups.iter_rows(named=True):
        tools = [t for t in (row["tools"] or "").split(" > ") if t]
        seq = _runs_of(step_labels((row["moves"] or "").split(" > "), tools))
        members.setdefault(int(row["strategy"]), []).append(
            {"seq": seq, "n": float(row["n"]), "rounds": int(row["n_rounds"] or 0),
             "tokens": frozenset((row["tokens"] or "").split()), "free": not tools})
    # test(member) -> bool for every part of a name, so that fidelity checks exactly what it says
    name: dict[int, str] = {}
    tests: dict[int, list] = {}
    for c, ms in members.items():
        if all(m["free"] for m in ms):
            name[c], tests[c] = "answer without tools", [lambda m: m["free"]]
            continue
        calling = [m for m in ms if not m["free"]]
        free = sum(m["n"] for m in ms) - sum(m["n"] for m in calling)
        core, _ = shared_core([m["seq"] for m in calling], [m["n"] for m in calling])
        if core:
            name[c] = " -> ".join(core)
            tests[c] = [lambda m, core=core: not m["free"] and _contains(m["seq"], core)]
        else:
            top = calling[0]["seq"]
            name[c] = "varied: " + " -> ".join(top)
            tests[c] = [lambda m, top=top: m["seq"] == top]
        if free > 0:  # some members answer without a call: the name says both
            name[c] = "answer with no call, or " + name[c]
            tests[c] = [lambda m, t=tests[c][0]: m["free"] or t(m)]

    def clashes() -> dict[str, list[int]]:
        by: dict[str, list[int]] = {}
        for c, n in name.items():
            by.setdefault(n, []).append(c)
        return {n: cs for n, cs in by.items() if len(cs) > 1}

    for n, cs in clashes().items():  # 3a: call counts, where their ranges do not overlap
        ranges = {}
        for c in cs:
            r = np.repeat([m["rounds"] for m in members[c]], [int(m["n"]) for m in members[c]])
            ranges[c] = (int(np.floor(np.quantile(r, 0.1))), int(np.ceil(np.quantile(r, 0.9))))
        if len(set(ranges.values())) == len(cs):
            for c in cs:
                lo, hi = ranges[c]
                name[c] = f"{n} ({_calls(lo, hi)})"
                tests[c].append(lambda m, lo=lo, hi=hi: lo <= m["rounds"] <= hi)
    for n, cs in clashes().items():  # 3b: the token whose presence differs most
        share = {c: _token_shares(members[c]) for c in cs}
        for c in cs:
            others = [share[o] for o in cs if o != c]
            best, gap = None, 0.0
            for t in sorted(set(share[c]) | set().union(*others)):
                mine = share[c].get(t, 0.0)
                other = max(o.get(t, 0.0) for o in others)
                if abs(mine - other) > abs(gap) + 1e-12:
                    best, gap = t, mine - other
            if best is not None and abs(gap) >= 0.5:
                has = gap > 0
                name[c] = f"{n} ({'with' if has else 'without'} {_token_phrase(best)})"
                tests[c].append(lambda m, t=best, has=has: (t in m["tokens"]) == has)
    for n, cs in clashes().items():
        for c in cs:
            name[c] = f"{n} [S{c}]"
    ids = sorted(members)
    fidelity = []
    for c in ids:
        ms = members[c]
        held = sum(m["n"] for m in ms if all(t(m) for t in tests[c]))
        fidelity.append(held / sum(m["n"] for m in ms))
    return pl.DataFrame({"strategy": ids, "built_name": [name[c] for c in ids], "fidelity": fidelity},
                        schema={"strategy": pl.Int64, "built_name": pl.String, "fidelity": pl.Float64})


def _token_shares(members: list[dict]) -> dict[str, float]:
    total = sum(m["n"] for m in members)
    out: Counter[str] = Counter()
    for m in members:
        for t in m["tokens"]:
            out[t] += m["n"]
    return {t: v / total for t, v in out.items()}


# ---------------------------------------------------------------------------- the explorer
def choose_members(members: pl.DataFrame, n: int, typical_moves: str | None) -> pl.DataFrame:
    """``n`` members of one strategy to read: typical ones (the typical move sequence) and
    atypical ones (the rarest other sequences first), alternating; each group is taken
    round-robin over (arm, outcome) and over questions not yet shown, so a reader sees the
    family and its edges in every arm. Deterministic: ties broken by arm, question and sample.

    ``members`` has ``arm, question_id, sample_id, correct, moves``; a ``kind`` column
    (``typical``/``atypical``) is added.

    >>> m = pl.DataFrame({"arm": ["a"] * 4, "question_id": ["q1", "q1", "q2", "q3"], "sample_id": [0, 1, 0, 0],
    ...                   "correct": [True, True, False, True], "moves": ["x", "x", "x", "y"]})
    >>> choose_members(m, 3, "x").select("question_id", "kind").rows()
    [('q1', 'typical'), ('q3', 'atypical'), ('q2', 'typical')]
    """
    frame = members.with_row_index("_i")
    if frame.height == 0 or n <= 0:
        return members.head(0).with_columns(pl.lit("typical").alias("kind"))
    rarity = Counter(frame["moves"].to_list())

    def ordered(rows: list[dict], *, rare_first: bool) -> list[int]:
        rows = sorted(rows, key=lambda r: ((rarity[r["moves"]] if rare_first else 0), r["arm"],
                                           str(r["question_id"]), r["sample_id"]))
        buckets: dict[tuple, list[dict]] = {}
        for r in rows:
            buckets.setdefault((r["arm"], not bool(r["correct"])), []).append(r)
        order, shown = [], set()
        while any(buckets.values()):
            for key in sorted(buckets):
                queue = buckets[key]
                if queue:
                    fresh = next((j for j, r in enumerate(queue) if r["question_id"] not in shown), 0)
                    r = queue.pop(fresh)
                    shown.add(r["question_id"])
                    order.append(r["_i"])
        return order

    rows = frame.select("_i", "arm", "question_id", "sample_id", "correct", "moves").to_dicts()
    a = ordered([r for r in rows if r["moves"] == (typical_moves or "")], rare_first=False)
    b = ordered([r for r in rows if r["moves"] != (typical_moves or "")], rare_first=True)
    picked: list[tuple[str, int]] = []
    while len(picked) < n and (a or b):
        if a:
            picked.append(("typical", a.pop(0)))
        if b and len(picked) < n:
            picked.append(("atypical", b.pop(0)))
    kinds = pl.DataFrame({"_i": [i for _, i in picked], "kind": [k for k, _ in picked]},
                         schema={"_i": pl.UInt32, "kind": pl.String})
    return kinds.join(frame, on="_i", how="left", maintain_order="left").select(*members.columns, "kind")


def value_sources(question: str | None, steps: list[dict] | None) -> list[list[tuple[str, str]]]:
    """For every call, each argument value with where it came from: ``user`` (the question),
    ``call`` (an earlier call's arguments), ``result`` (first seen in an earlier observation)
    or ``new``, by the precedence :mod:`mechanism.segmentation` counts atoms with; a value of
    several atoms takes its atoms' sources joined by ``+``.
    """
    from mechanism.segmentation import SOURCES, argument_values, atoms

    user = set(atoms(question))
    calls: set[str] = set()
    results: set[str] = set()
    out = []
    for step in steps or ():
        step = step or {}
        values = argument_values(step.get("arguments"), step.get("query"))
        shown = []
        for v in values:
            found = set()
            for a in atoms(v):
                found.add("user" if a in user else "call" if a in calls else "result" if a in results else "new")
            shown.append((v, "+".join(s for s in SOURCES if s in found) or "none"))
        out.append(shown)
        for v in values:
            calls.update(atoms(v))
        results.update(atoms(step.get("observation")))
    return out


MAX_SHOWN_CHARS = 600  # an observation or argument shown in a transcript (the full text stays in the data)


def transcripts(rows: pl.DataFrame, moves: pl.DataFrame) -> list[dict]:
    """Member transcripts as plain data for a page: per row of ``rows`` (canonical columns plus
    ``strategy`` and ``kind``) its question, answer, outcome and every call with its tool,
    arguments, where each value came from, its relation to earlier calls, its move and whether
    it failed or followed a failure; ``moves`` is :func:`mechanism.segment` of ``rows``.
    Text is unmasked and cut to :data:`MAX_SHOWN_CHARS`, never escaped here (the renderer does)."""
    by_key: dict[tuple, list[dict]] = {}
    for m in moves.iter_rows(named=True):
        by_key.setdefault((m["arm"], str(m["question_id"]), int(m["sample_id"])), []).append(m)

    def cut(text: object) -> str:
        text = "" if text is None else str(text)
        return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + f"... ({len(text):,} characters)"

    out = []
    for r in rows.iter_rows(named=True):
        key = (r["arm"], str(r["question_id"]), int(r["sample_id"]))
        segs = [m for m in by_key.get(key, []) if m["tool"] != "answer"]
        steps = r.get("steps") or []
        calls = []
        for i, (st, values) in enumerate(zip(steps, value_sources(r.get("question"), steps))):
            st = st or {}
            seg = segs[i] if i < len(segs) else {}
            calls.append({"index": i + 1, "tool": cut(st.get("tool")), "arguments": cut(st.get("arguments") or st.get("query")),
                          "values": [(cut(v), s) for v, s in values], "relation": seg.get("relation", ""),
                          "move": seg.get("move", ""), "sources": seg.get("sources", ""),
                          "failed": bool(seg.get("failed", False)), "after_error": bool(seg.get("after_error", False)),
                          "thought": cut(st.get("thought")), "observation": cut(st.get("observation"))})
        out.append({"strategy": int(r["strategy"]), "kind": r.get("kind", ""), "arm": r["arm"],
                    "question_id": str(r["question_id"]), "sample_id": int(r["sample_id"]),
                    "correct": bool(r.get("correct")), "question": cut(r.get("question")),
                    "answer": cut(r.get("answer")) if r.get("answer") is not None else None,
                    "gold": [cut(g) for g in (r.get("gold") or [])], "moves": r.get("moves", ""), "calls": calls})
    return out


def pick_members(runs: pl.DataFrame, labels: np.ndarray, moves: Sequence[str], typical_moves: dict[int, str],
                 strategy: int, *, n: int = 5, arm: str | None = None) -> pl.DataFrame:
    """:func:`choose_members` of ``strategy`` from a canonical table, its labels and move
    sequences: the chosen rows of ``runs`` plus ``strategy``, ``moves`` and ``kind``."""
    keep = np.asarray(labels) == strategy
    if arm is not None:
        keep &= runs["arm"].to_numpy() == arm
    idx = np.flatnonzero(keep)
    members = runs[idx].with_columns(pl.Series("moves", [moves[i] for i in idx], dtype=pl.String),
                                     pl.lit(int(strategy), dtype=pl.Int64).alias("strategy"))
    return choose_members(members, n, typical_moves.get(int(strategy)))


def with_calls(chosen: pl.DataFrame) -> pl.DataFrame:
    """``chosen`` members with a ``calls`` column (per call: tool, arguments, each value with
    its source, relation, move, sources, failed, after_error, thought, observation), from
    :func:`mechanism.segment` of those rows only."""
    from mechanism.segmentation import segment

    if chosen.height == 0:
        return chosen.with_columns(pl.lit(None, dtype=pl.List(pl.Struct(_CALL_SCHEMA))).alias("calls"))
    shown = transcripts(chosen, segment(chosen))
    calls = [[{**c, "values": [{"value": v, "source": s} for v, s in c["values"]]} for c in t["calls"]] for t in shown]
    return chosen.with_columns(pl.Series("calls", calls, dtype=pl.List(pl.Struct(_CALL_SCHEMA))))


def member_examples(runs: pl.DataFrame, labels: np.ndarray, moves: Sequence[str], typical_moves: dict[int, str],
                    strategy: int, *, n: int = 5, arm: str | None = None) -> pl.DataFrame:
    """``n`` unmasked member transcripts of ``strategy``: :func:`pick_members` with
    :func:`with_calls`."""
    return with_calls(pick_members(runs, labels, moves, typical_moves, strategy, n=n, arm=arm))


_CALL_SCHEMA = {"index": pl.Int64, "tool": pl.String, "arguments": pl.String,
                "values": pl.List(pl.Struct({"value": pl.String, "source": pl.String})), "relation": pl.String,
                "move": pl.String, "sources": pl.String, "failed": pl.Boolean, "after_error": pl.Boolean,
                "thought": pl.String, "observation": pl.String}
