"""The mini-swe-agent world (mechanism.datasets.worlds.swebash, SWE-bench-like): trajectories in
mini-swe-agent's own format read back with `mechanism.read` (format found by itself) as a user's
files are, the truth it carries, and the planted design (records shaped as mini-swe-agent writes
them, with exactly one bash command in every turn the harness ran; each strategy's shape of
commands; failures followed at once by the corrected command, at the planted rate in every
strategy; refused turns, timeouts and the step limit at fixed rates; optional steps at fixed
rates in every strategy; execution details varying inside strategies; arms differing only in
their mixture). Strategy discovery is not evaluated here."""
from __future__ import annotations

import difflib
import re

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds.swebash import (
    _P_FAIL,
    _P_LIMIT,
    _P_ORIENT,
    _P_REFUSE,
    _P_REVIEW,
    _P_TIMEOUT,
    _SUCCESS,
    ARMS,
    INSTRUCTIONS,
    REPOS,
    STRATEGIES,
    SUBMIT,
    SYSTEM,
    swebash,
)

#: the regex mini-swe-agent finds an action with
FENCE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
OBSERVATION = re.compile(
    r"<returncode>(-?\d+)</returncode>\n(?:<output>\n(?P<out>.*)\n</output>|<warning>\n.*?\n</warning>"
    r"<output_head>\n(?P<head>.*)\n</output_head>\n<elided_chars>\n(?P<k>\d+) characters elided\n</elided_chars>\n"
    r"<output_tail>\n(?P<tail>.*)\n</output_tail>)", re.DOTALL)
REFUSED = re.compile(r"Please always provide EXACTLY ONE action in triple backticks, found (\d+) actions\.")
TIMED_OUT = re.compile(r"The last command <command>(.*)</command> timed out and has been killed\.\n"
                       r"The output of the command was:\n <output>\n\n</output>\n"
                       r"Please try another command and make sure to avoid those requiring interactive input\.",
                       re.DOTALL)
#: what a planted failure prints (never a failing test, a reproduced bug, or a search with no hit)
PLANTED = {"typo": r"bash: \S+: command not found", "git": r"is not a git command", "path": r"No such file or "
           r"directory|fatal: no such path|fatal: bad object", "script": r"SyntaxError|NameError|"
           r"ModuleNotFoundError|No module named", "sed": r"sed: -e expression"}
# each strategy's commands once the failed and timed-out ones are left out, one letter a command:
# o orientation, s search, w window (40 lines or fewer), c read (a whole file or a long chunk),
# e edit, p reproduction script written, r script run (or written and run), t test run,
# n new test written, h git history, x script removed, v review
SHAPES = {"reproduce_first": r"o?p?rwerr{0,4}t?x?v?", "grep_to_edit": r"o?s{1,5}w{1,5}ev?",
          "follow_failing_test": r"o?tw{2,6}ett?v?", "read_whole_files": r"o?c{2,6}ev?",
          "git_history": r"o?h{2,7}et?v?", "test_first": r"o?w?ntw{1,5}ett?v?", "blind_patch": r"o?ee?v?"}


@pytest.fixture(scope="module")
def world():
    return swebash(n_questions=30, n_samples=2, random_state=0)


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("swebash")), report=True)  # the format found by itself


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [swebash(n_questions=60, n_samples=4, random_state=seed) for seed in (1, 2)]


def _rows(ws):
    return [(row, rec) for w in ws for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _turns(record):
    """Every assistant turn after the task, with the harness's reply: (kind, command or the
    commands found, returncode, output, thought); kind refused, run, timeout or submit."""
    msgs = record["messages"][2:]
    assert len(msgs) % 2 == 0
    out = []
    for a, u in zip(msgs[::2], msgs[1::2]):
        assert (a["role"], u["role"]) == ("assistant", "user")
        found = FENCE.findall(a["content"])
        thought = a["content"].split("\n\n```", 1)[0]
        if REFUSED.match(u["content"]):
            out.append(("refused", found, None, u["content"], thought))
        elif m := TIMED_OUT.fullmatch(u["content"]):
            assert found == [m.group(1)]
            out.append(("timeout", found[0], None, "", thought))
        elif found == [SUBMIT]:
            out.append(("submit", SUBMIT, None, u["content"], thought))
        else:
            m = OBSERVATION.fullmatch(u["content"])
            assert m and len(found) == 1, u["content"][:200]
            text = m.group("out") if m.group("out") is not None else m.group("head") + m.group("tail")
            out.append(("run", found[0], int(m.group(1)), text, thought))
    return out


def _planted(turn) -> str | None:
    """The form of a planted failure (timeout included), or None."""
    if turn[0] == "timeout":
        return "timeout"
    if turn[0] != "run" or turn[2] == 0:
        return None
    return next((form for form, pattern in PLANTED.items() if re.search(pattern, turn[3])), None)


def _ok(record):
    """The commands run that are not planted failures."""
    return [t for t in _turns(record) if t[0] == "run" and _planted(t) is None]


def _span(cmd: str) -> int | None:
    """How many lines a view prints (None: the whole file)."""
    if m := re.search(r"sed -n '?(\d+),(\d+)p'?|NR>=(\d+) && NR<=(\d+)", cmd):
        a, b = (int(x) for x in m.groups() if x is not None)
        return b - a + 1
    if m := re.search(r"\| tail -n (\d+)$", cmd):
        return int(m.group(1))
    if m := re.match(r"head -n (\d+) \S+$", cmd):
        return int(m.group(1))
    return None


def _expand(shape: str) -> set[str]:
    """Every string a shape matches (letters, each optional with ``?`` or repeated ``{a,b}``)."""
    out = {""}
    for letter, optional, lo, hi in re.findall(r"([a-z])(\?)?(?:\{(\d),(\d)\})?", shape):
        counts = range(int(lo), int(hi) + 1) if lo else (0, 1) if optional else (1,)
        out = {x + letter * k for x in out for k in counts}
    return out


def _letter(cmd: str) -> str:
    c = cmd.removeprefix("cd /testbed && ")
    first, _, rest = c.partition("\n")
    if c in ("ls", "ls -la", "pwd"):
        return "o"
    if c in ("git diff", "git status", "git diff --stat", "git status && git diff"):
        return "v"
    if c.startswith("rm "):
        return "x"
    if c.startswith(("grep ", "git grep ", "find ")):
        return "s"
    if c.startswith(("git log", "git show", "git blame")):
        return "h"
    if re.match(r"(python -m )?pytest ", c):
        return "t"
    if c.startswith("python ") and not rest:
        return "r"
    if c.startswith(("sed -i", "python - <<")):
        return "e"
    if m := re.match(r"cat <<'EOF' (>>?) (\S+)", first):
        if not c.endswith("\nEOF"):
            return "r"  # written, then run
        path = m.group(2)
        if m.group(1) == ">>" or re.search(r"(^|/)test_\w+\.py$", path):
            return "n"
        return "p" if re.search(r"(^|/)repro\w*\.py$", path) else "e"
    assert c.startswith(("sed -n", "nl -ba", "cat ", "awk ", "head ")), c
    span = _span(c)
    return "w" if span is not None and span <= 45 else "c"


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "swe" and world.name == "swebash"
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "n_calls", "n_failures",
                                   "n_refused", "submitted", "correct"]
    assert world.truth.height == len(world.records) == 2 * 30 * 2
    assert set(world.truth["arm"]) == set(ARMS) and set(world.truth["strategy"]) <= set(STRATEGIES)
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])
    assert world.planted["success"] == pytest.approx(_SUCCESS)
    issues = {}
    for row, rec in _rows([world]):  # the record carries its question, outcome and sample
        assert rec["instance_id"] == row["question_id"] and re.fullmatch(r"[\w-]+__[\w-]+-\d+", row["question_id"])
        assert (rec["arm"], rec["sample_id"], rec["correct"]) == (row["arm"], row["sample_id"], row["correct"])
        issues.setdefault(rec["instance_id"], set()).add(rec["messages"][1]["content"])
    assert len(issues) == 30 and all(len(v) == 1 for v in issues.values())  # one issue text per question
    assert len({next(iter(v)) for v in issues.values()}) == 30
    assert {q.split("__")[0] for q in issues} == {r[0] for r in REPOS}


def test_reads_back_as_swe_with_the_commands_as_rounds(world, read):
    runs, report = read
    assert set(report.formats.values()) == {"swe"}, report.formats
    assert report.skipped == [] and runs.height == len(world.records) == world.truth.height
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert runs["correct"].to_list() == t["correct"].to_list()
    assert world.runs["n_rounds"].to_list() == world.truth["n_calls"].to_list()


def test_the_answer_read_is_the_submission(world, read):
    runs, _ = read
    by_key = {(r["arm"], r["instance_id"], r["sample_id"]): r for r in world.records}
    got = [(row["answer"], by_key[(row["arm"], row["question_id"], row["sample_id"])]["info"]["submission"])
           for row in runs.iter_rows(named=True)]
    assert any(sub is None for _, sub in got) and any(sub is not None for _, sub in got)
    wrong = [(a, s) for a, s in got if a != s]
    assert not wrong, f"{len(wrong)} of {len(got)} answers differ, e.g. {wrong[0]!r}"


def test_records_are_mini_swe_agent_trajectories(big):
    elided = 0
    for row, rec in _rows(big):
        assert list(rec) == ["trajectory_format", "instance_id", "arm", "sample_id", "correct", "info", "messages"]
        info = rec["info"]
        assert rec["trajectory_format"] == "mini-swe-agent-1" and info["mini_version"] == "1.9.1"
        assert set(info) == {"exit_status", "submission", "model_stats", "mini_version", "config"}
        assert isinstance(info["config"]["model"]["model_name"], str)
        msgs = rec["messages"]
        assert [m["role"] for m in msgs[:2]] == ["system", "user"] and msgs[0]["content"] == SYSTEM
        assert msgs[1]["content"].startswith("<pr_description>\nConsider the following PR description:\n")
        assert msgs[1]["content"].endswith(f"\n</pr_description>\n\n{INSTRUCTIONS}")
        assert info["model_stats"]["api_calls"] == sum(m["role"] == "assistant" for m in msgs)
        assert info["model_stats"]["instance_cost"] > 0
        turns = _turns(rec)
        for kind, found, _, reply, thought in turns:
            assert thought.startswith("THOUGHT: ")
            if kind == "refused":  # two fenced commands or none, and the harness says how many
                assert len(found) in (0, 2) and REFUSED.match(reply).group(1) == str(len(found))
        elided += sum("<elided_chars>" in m["content"] for m in msgs if m["role"] == "user")
        if row["submitted"]:
            assert turns[-1][0] == "submit" and info["exit_status"] == "Submitted"
            assert msgs[-1]["content"] == info["submission"] and info["submission"].startswith("diff --git a/")
            assert SUBMIT not in [t[1] for t in turns[:-1]]
        else:
            assert turns[-1][0] == "run" and info["exit_status"] == "LimitsExceeded"
            assert info["submission"] is None and rec["correct"] is False
        for m in msgs:
            for head, tail in re.findall(r"<output_head>\n(.*)\n</output_head>.*<output_tail>\n(.*)\n</output_tail>",
                                         m["content"], re.DOTALL):
                assert len(head) == len(tail) == 5000
    assert elided > 20


def test_the_submission_is_a_well_formed_diff(big):
    for _, rec in _rows(big):
        sub = rec["info"]["submission"]
        if sub is None:
            continue
        assert sub.endswith("\n")
        for part in re.split(r"(?m)^(?=diff --git )", sub)[1:]:
            lines = part.rstrip("\n").split("\n")
            a = re.fullmatch(r"diff --git a/(\S+) b/(\S+)", lines[0])
            assert a and a.group(1) == a.group(2)
            hunks = [i for i, x in enumerate(lines) if x.startswith("@@")]
            for i, j in zip(hunks, [*hunks[1:], len(lines)]):
                m = re.match(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@", lines[i])
                body = lines[i + 1:j]
                old, new = (int(x) if x is not None else 1 for x in m.groups())
                assert sum(not x.startswith("+") for x in body) == old
                assert sum(not x.startswith("-") for x in body) == new


def test_counts_match_the_records_and_failures_are_corrected(big):
    forms = {}
    for row, rec in _rows(big):
        turns = _turns(rec)
        runs = [t for t in turns if t[0] in ("run", "timeout")]
        assert len(runs) == row["n_calls"]
        assert sum(t[0] == "refused" for t in turns) == row["n_refused"]
        assert (turns[-1][0] == "submit") == row["submitted"]
        failed = [i for i, t in enumerate(turns) if _planted(t)]
        assert len(failed) == row["n_failures"]
        for i in failed:  # at once the corrected command, which does not fail
            form, bad, nxt = _planted(turns[i]), turns[i][1], turns[i + 1]
            forms[form] = forms.get(form, 0) + 1
            assert nxt[0] == "run" and _planted(nxt) is None and nxt[1] != bad
            if form != "timeout":  # the same command with its program, path, script or expression put right
                similar = difflib.SequenceMatcher(None, bad, nxt[1]).ratio() > 0.6 or sorted(bad) == sorted(nxt[1])
                assert similar or (form == "path" and bad.split()[0] == nxt[1].split()[0]), (bad, nxt[1])
    assert set(forms) == {*PLANTED, "timeout"}, forms
    share = forms["timeout"] / sum(forms.values())
    assert abs(share - _P_TIMEOUT / (_P_FAIL + _P_TIMEOUT)) < 0.07, forms


def test_each_strategy_has_its_shape(big):
    seen = {s: set() for s in STRATEGIES}
    prefixes = {s: {x[:i] for x in _expand(p) for i in range(len(x) + 1)} for s, p in SHAPES.items()}
    for row, rec in _rows(big):
        shape = "".join(_letter(t[1]) for t in _ok(rec))
        if row["submitted"]:
            assert re.fullmatch(SHAPES[row["strategy"]], shape), (row["strategy"], shape)
        else:  # stopped by the step limit: the first part of the shape
            assert shape and shape in prefixes[row["strategy"]], (row["strategy"], shape)
        seen[row["strategy"]].add(shape)
    assert all(len(v) >= 4 for v in seen.values()), {s: len(v) for s, v in seen.items()}
    # command counts overlap between strategies, with the optional steps and failures
    t = pl.concat([w.truth for w in big])
    spans = {s: (sub["n_calls"].min(), sub["n_calls"].max()) for (s,), sub in t.group_by("strategy")}
    for s, (lo, hi) in spans.items():
        assert len([o for o, (lo2, hi2) in spans.items() if o != s and lo2 <= hi and lo <= hi2]) >= 4, spans
    assert min(lo for lo, _ in spans.values()) <= 2 and max(hi for _, hi in spans.values()) >= 12, spans


def test_every_strategy_on_many_questions(big):
    t = pl.concat([w.truth.with_columns(seed=pl.lit(i)) for i, w in enumerate(big)])
    t = t.with_columns(repo=pl.col("question_id").str.extract(r"^([\w-]+)__"))
    for s in STRATEGIES:
        sub = t.filter(pl.col("strategy") == s)
        assert sub.select("seed", "question_id").unique().height >= 40, s
        assert set(sub["arm"]) == set(ARMS) and set(sub["repo"]) == {r[0] for r in REPOS}, s


def test_failures_at_the_planted_rate_in_every_strategy(big):
    t = pl.concat([w.truth for w in big])
    p = _P_FAIL + _P_TIMEOUT
    for (s, arm), sub in t.group_by("strategy", "arm"):
        first = sub["n_calls"].sum() - sub["n_failures"].sum()  # first attempts
        rate = sub["n_failures"].sum() / first
        assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / first), (s, arm, rate, first)


def test_refusals_and_the_step_limit_at_fixed_rates(big):
    t = pl.concat([w.truth for w in big])
    two = none = 0
    for _, rec in _rows(big):
        for kind, found, *_ in _turns(rec):
            if kind == "refused":
                two, none = two + (len(found) == 2), none + (len(found) == 0)
    assert two > 10 and none > 10
    for (s,), sub in t.group_by("strategy"):
        turns = sub["n_calls"].sum() - sub["n_failures"].sum() + sub["submitted"].sum()
        rate = sub["n_refused"].sum() / turns
        assert abs(rate - _P_REFUSE) < 4 * np.sqrt(_P_REFUSE * (1 - _P_REFUSE) / turns), (s, rate)
        limited = 1 - sub["submitted"].mean()
        assert abs(limited - _P_LIMIT) < 4.5 * np.sqrt(_P_LIMIT * (1 - _P_LIMIT) / sub.height), (s, limited)
        assert not sub.filter(~pl.col("submitted"))["correct"].any()


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.05 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big]).with_columns(failed=pl.col("n_failures") > 0)
    for arm, mixture in ARMS.items():
        sub = t.filter(pl.col("arm") == arm)
        got = dict(sub["strategy"].value_counts(normalize=True).iter_rows())
        for s, p in mixture.items():
            assert abs(got.get(s, 0.0) - p) < 4 * np.sqrt(p * (1 - p) / sub.height), (arm, s, got)
    for (s,), sub in t.group_by("strategy"):
        base, rl = (sub.filter(pl.col("arm") == a) for a in ("base", "rl"))
        for col in ("n_calls", "n_failures", "n_refused"):  # the same execution in both arms
            sd = np.sqrt(sub[col].var() * (1 / base.height + 1 / rl.height))  # pooled: rare counts too
            assert abs(base[col].mean() - rl[col].mean()) < 4 * sd + 1e-9, (s, col)
        p = _SUCCESS[s]
        assert abs(sub["correct"].mean() - p) < 4 * np.sqrt(p * (1 - p) / sub.height), s
        for by in ("arm", "failed"):  # nothing but the strategy (and the step limit) moves it
            for _, n, rate in sub.filter(pl.col("submitted")).group_by(by).agg(pl.len(), pl.col("correct").mean()
                                                                                ).iter_rows():
                q = p / (1 - _P_LIMIT)
                assert abs(rate - q) < 4.5 * np.sqrt(q * (1 - q) / n), (s, by, rate, n)


def test_optional_steps_at_fixed_rates_in_every_strategy(big):
    rows = []
    for row, rec in _rows(big):
        if row["submitted"]:
            letters = [_letter(t[1]) for t in _ok(rec)]
            rows.append((row["strategy"], row["arm"], letters[0] == "o", letters[-1] == "v"))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "orient", "review"], orient="row")
    for col, p in (("orient", _P_ORIENT), ("review", _P_REVIEW)):
        assert abs(d[col].mean() - p) < 3.5 * np.sqrt(p * (1 - p) / d.height), (col, d[col].mean())
        for by in ("strategy", "arm"):
            for _, n, rate in d.group_by(by).agg(pl.len(), pl.col(col).mean()).iter_rows():
                assert abs(rate - p) < 4.5 * np.sqrt(p * (1 - p) / n), (col, by, rate, p)


def test_execution_details_and_wording_vary_inside_strategies(big):
    for s in STRATEGIES:
        thoughts, commands, edits, runners, views, cd = set(), set(), set(), set(), set(), set()
        for row, rec in _rows(big):
            if row["strategy"] != s:
                continue
            for t in _ok(rec):
                c = t[1].removeprefix("cd /testbed && ")
                cd.add(t[1].startswith("cd /testbed && ") and c != "ls")
                thoughts.add(t[4])
                commands.add(t[1])
                if _letter(t[1]) == "e":
                    edits.add(c.split()[0] + (" heredoc" if "<<" in c else ""))
                if _letter(t[1]) == "t":
                    runners.add(re.sub(r"\S*(tests?|testing)/\S*( -k \S+)?", "SEL", c))
                if _letter(t[1]) == "w":
                    views.add(re.sub(r"[\w./]+\.py|\d+", "", c))
        assert len(thoughts) >= 40 and len(commands) >= 60, s
        assert edits == {"sed", "python heredoc", "cat heredoc"}, (s, edits)
        assert cd == {True, False}, s
        assert s in ("grep_to_edit", "read_whole_files", "blind_patch") or len(runners) >= 5 or (
            s == "git_history" and len(runners) >= 3), (s, runners)
        assert s in ("read_whole_files", "blind_patch", "git_history") or len(views) >= 5, (s, views)


def test_random_state(tmp_path):
    a, b, c = (swebash(n_questions=6, random_state=3), swebash(n_questions=6, random_state=3),
               swebash(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert swebash(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert len(swebash(n_questions=3, random_state=None).records) == 2 * 3 * 4
