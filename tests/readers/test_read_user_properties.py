"""Property tests on the fields of real agents' logs: every user turn kept (``steps[].user``), tool
results matched to their calls with or without ids, multi-action turns, the canonical format
with and without ``user``, and provenance naming the user for values typed in any turn."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism.analysis.segmentation import segment
from mechanism.core.schema import STEP_FIELDS, from_records, make_step
from mechanism.readers import openai, react, read

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
text = st.text(alphabet="abcdefgh xyz", min_size=1, max_size=12).filter(str.strip)

# a segment of a conversation: user turns, then one assistant message with calls (each with an
# id or not), then their results (those with ids in any order, the others in call order)
segment_spec = st.tuples(st.lists(text, max_size=3), st.lists(st.booleans(), min_size=1, max_size=3),
                         st.randoms(use_true_random=False))


@FAST
@given(text, st.lists(segment_spec, max_size=5), st.lists(text, max_size=2))
def test_openai_user_turns_and_results(question, segments, trailing):
    messages = [{"role": "user", "content": question}]
    want_obs, want_user, turns_all = [], [], []
    n = 0
    for turns, has_ids, rng in segments:
        messages += [{"role": "user", "content": t} for t in turns]
        turns_all += [t.strip() for t in turns]
        calls, results_with_id, results_without = [], [], []
        for j, has_id in enumerate(has_ids):
            cid = f"c{n}"
            call = {"function": {"name": "lookup", "arguments": json.dumps({"key": f"k{n}"})}}
            if has_id:
                call["id"] = cid
                results_with_id.append({"role": "tool", "tool_call_id": cid, "content": f"r{n}"})
            else:
                results_without.append({"role": "tool", "content": f"r{n}"})
            calls.append(call)
            want_obs.append(f"r{n}")
            want_user.append("\n\n".join(t.strip() for t in turns) if j == 0 and turns else None)
            n += 1
        rng.shuffle(results_with_id)
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += results_with_id + results_without
    messages += [{"role": "user", "content": t} for t in trailing]
    out = openai.parse_messages(messages)
    assert out["question"] == question.strip()
    assert [s["observation"] for s in out["steps"]] == want_obs
    assert [s["user"] for s in out["steps"]] == want_user
    # each message apart (a blank line between two: USER_TURNS_JOIN)
    kept = [u for s in out["steps"] if s["user"] for u in s["user"].split("\n\n")]
    after = out.get("meta_extra", {}).get("user_after_last_call")
    if after:
        kept += after.split("\n\n")
    # nothing the user said is lost: the turns before calls, then those after the last one
    expected = turns_all + [t.strip() for t in trailing] if n else []
    if n:
        assert kept == expected


@FAST
@given(st.lists(st.lists(st.sampled_from(["search", "lookup", "click"]), min_size=1, max_size=3), max_size=5),
       st.sampled_from(["first", "last"]))
def test_react_multi_action_turns(turns, mode):
    lines, want, extra = [], [], 0
    for i, tools in enumerate(turns):
        lines.append(f"Thought: turn {i}")
        for j, tool in enumerate(tools):
            lines.append(f"Action: {tool}[q{i}_{j}]")
        lines.append(f"Observation: o{i}")
        chosen = 0 if mode == "first" else len(tools) - 1
        want.append((tools[chosen], f"q{i}_{chosen}", f"o{i}"))
        extra += len(tools) - 1
    out = react.parse_text("\n".join(lines), multi_action=mode)
    assert [(s["tool"], s["query"], s["observation"]) for s in out["steps"]] == want
    assert out["notes"].count(react.EXTRA) == extra
    # nothing the agent wrote is lost: every action not run is in a thought
    thoughts = "\n".join(s["thought"] or "" for s in out["steps"])
    for i, tools in enumerate(turns):
        for j, tool in enumerate(tools):
            if (tool, f"q{i}_{j}", f"o{i}") not in want:
                assert f"Action: {tool}[q{i}_{j}]" in thoughts


step_values = st.fixed_dictionaries({k: st.one_of(st.none(), text) for k in STEP_FIELDS})


@FAST
@given(st.lists(st.lists(step_values, max_size=3), min_size=1, max_size=4), st.booleans())
def test_canonical_with_and_without_user(all_steps, old):
    rows = []
    for i, steps in enumerate(all_steps):
        if old:  # written before `user` existed
            steps = [{k: v for k, v in s.items() if k != "user"} for s in steps]
        rows.append({"arm": "a", "question_id": f"q{i}", "sample_id": 0, "question": "q", "gold": ["x"],
                     "answer": None, "correct": False, "n_rounds": len(steps), "steps": steps})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in rows))
        runs = read(path, format="canonical")
        for got, want in zip(runs["steps"].to_list(), rows):
            assert [{k: s.get(k) for k in STEP_FIELDS} for s in want["steps"]] == got
        runs.write_parquet(Path(tmp) / "c.parquet")
        assert read(Path(tmp) / "c.parquet").equals(runs)


@FAST
@given(st.integers(min_value=0, max_value=3), st.integers(min_value=1, max_value=4))
def test_user_typed_value_is_attributed_to_the_user(turn, n_calls):
    """A code typed in any user turn up to a call is the user's, whichever turn it was."""
    turn = min(turn, n_calls - 1)
    steps = []
    for i in range(n_calls):
        said = "my code is zq7731" if i == turn else None
        args = {"code": "zq7731"} if i == n_calls - 1 else {"page": f"p{i}"}
        steps.append(make_step(tool=f"tool{i}", arguments=json.dumps(args), observation=f"page p{i} shown",
                               user=said))
    runs = from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": "Help me please.",
                          "gold": [], "answer": "done", "correct": True, "n_rounds": n_calls, "steps": steps}])
    moves = segment(runs).filter(pl.col("tool") == f"tool{n_calls - 1}")
    assert "user" in moves["sources"][0].split("+")
    without = runs.with_columns(pl.col("steps").list.eval(pl.element().struct.with_fields(
        pl.lit(None, dtype=pl.String).alias("user"))))
    assert "user" not in segment(without).filter(pl.col("tool") == f"tool{n_calls - 1}")["sources"][0].split("+")


def test_validate_carries_user_and_accepts_old_tables():
    from mechanism.core.errors import InputError
    from mechanism.core.schema import validate
    new = from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": "q", "gold": [], "answer": None,
                         "correct": False, "n_rounds": 1, "steps": [make_step(tool="t", user="my id is x1")]}])
    assert new["steps"][0][0]["user"] == "my id is x1"
    # the steps without `user`, fields picked by name (polars 2.2 no longer drops a struct's
    # extra fields in a cast)
    old = new.with_columns(pl.col("steps").list.eval(
        pl.struct([pl.element().struct.field(k) for k in STEP_FIELDS if k != "user"])))
    assert "user" not in [f.name for f in old.schema["steps"].inner.fields]
    validate(old)  # a table written before `user` existed is still canonical
    assert segment(old)["tool"].to_list() == ["t", "answer"]
    bad = new.with_columns(pl.col("steps").list.eval(pl.element().struct.with_fields(pl.lit(3).alias("user"))))
    try:
        validate(bad)
    except InputError as exc:
        assert "`steps.user`" in str(exc)
    else:
        raise AssertionError("a non-text `user` must be refused")
