"""The swap test's statistics against planted closed forms, through small fake endpoints.

A planted world of two arms whose episodes make two searches: the gold answer is in the first
observation, the second, or neither (``where``), and a third call after the last result carries
the gold in its query (the retrieval part stops at the last result, so no reasoner sees it). The
base reasoner answers only from the first observation, the rl reasoner from either (a planted
integration difference); the rl arm's plans put the gold in the first observation more often
(a planted retrieval difference). Every cell's value is then a closed form of ``where``.
"""
from __future__ import annotations

import hashlib
import json
import math
import re

import numpy as np
import polars as pl
import pytest
from scipy.stats import t as student

import mechanism as mx
from mechanism.analysis.swap import split_parts

FILLER = "nothing useful here"


class FakeStats:
    def __init__(self) -> None:
        self.requests = self.cached = self.retries = self.failed = 0
        self.prompt_tokens = self.completion_tokens = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class Fake:
    """A reasoner whose answer follows a planted rule on the prompt: ``p(model, where_seen,
    question) -> probability of the gold``, drawn from a hash of (salt, prompt, seed)."""

    def __init__(self, model: str, p, *, salt: str | None = None) -> None:
        self.model, self.p, self.salt = model, p, salt or model
        self.stats = FakeStats()
        self.calls: list[dict] = []

    def complete(self, prompts, *, max_tokens=64, temperature=0.0, n=1, seed=0, stop=None):
        self.calls.append({"n_prompts": len(prompts), "seed": seed, "stop": stop, "max_tokens": max_tokens})
        self.stats.requests += len(prompts)
        out = []
        for prompt in prompts:
            question = re.search(r"^Question: (.*)$", prompt, re.M).group(1)
            gold = question.replace("what is ", "ans-")
            observations = re.findall(r"^Observation: (.*)$", prompt, re.M)
            where = next((i for i, o in enumerate(observations) if gold in o), None)
            if where is None and gold in prompt.split("\n", 1)[1]:
                where = "elsewhere"  # the gold seen outside an observation (a query)
            u = int(hashlib.sha256(f"{self.salt}|{prompt}|{seed}".encode()).hexdigest()[:12], 16) / 16**12
            correct = u < self.p(where, question, bool(observations))
            self.stats.prompt_tokens += len(prompt.split())
            self.stats.completion_tokens += 1
            out.append([f" {gold if correct else 'wrong'}\nmore text"] * n)
        return out


def det_base(where, question, has_obs):
    """Deterministic base reasoner: the gold only from the first observation; from memory on
    every third question when it sees no observation."""
    if where == "elsewhere":
        return 1.0
    if not has_obs:
        return 1.0 if int(question.split("q")[-1]) % 3 == 0 else 0.0
    return 1.0 if where == 0 else 0.0


def det_rl(where, question, has_obs):
    """Deterministic rl reasoner: the gold from any observation (it integrates the bridge)."""
    if where == "elsewhere":
        return 1.0
    return 1.0 if where in (0, 1) else 0.0


def planted_world(n_q: int, seed: int, *, shift: float = 0.3):
    """Runs and each episode's ``where`` (0, 1 or -1: not retrieved). Unbalanced: base has 2
    samples on even questions and 5 on odd ones, rl 3 everywhere; odd questions are harder for
    base (the gold is retrieved less often there), so pooling trajectories would bias base's cells."""
    rng = np.random.default_rng(seed)
    rows, where_of = [], {}
    for q in range(n_q):
        ease = rng.uniform(0.2, 0.8)
        for arm in ("base", "rl"):
            k = (2 if q % 2 == 0 else 5) if arm == "base" else 3
            p_first = min(0.95, ease * (0.5 if arm == "base" and q % 2 else 1.0) + (shift if arm == "rl" else 0.0))
            for s in range(k):
                u = rng.uniform()
                where = 0 if u < p_first else (1 if u < p_first + (1 - p_first) / 2 else -1)
                gold = f"ans-q{q}"
                obs = [gold + " is the answer" if where == i else FILLER for i in (0, 1)]
                steps = [mx.make_step(query=f"search {i}", observation=obs[i]) for i in (0, 1)]
                steps.append(mx.make_step(query=f"check {gold}", observation=None))  # after the last result
                rows.append({"arm": arm, "question_id": f"q{q}", "sample_id": s, "question": f"what is q{q}",
                             "gold": [gold], "answer": None, "correct": bool(where == 0), "n_rounds": 3,
                             "steps": steps})
                where_of[(arm, f"q{q}", s)] = where
    return pl.DataFrame(rows), where_of


def closed_form(runs, where_of, rule, source, *, truncate: int | None = None) -> np.ndarray:
    """Per question: the mean over ``source``'s episodes of the rule's probability of the gold."""
    out = []
    for q in sorted(runs["question_id"].unique().to_list()):
        keys = [k for k in where_of if k[0] == source and k[1] == q]
        vals = []
        for key in keys:
            w = where_of[key]
            seen = None if w == -1 or (truncate is not None and w >= truncate) else w
            vals.append(rule(seen, f"what is {q}", True))
        out.append(np.mean(vals))
    return np.array(out)


@pytest.fixture(scope="module")
def world():
    return planted_world(40, seed=1)


@pytest.fixture(scope="module")
def deterministic(world):
    runs, _ = world
    eps = {"base": Fake("base", det_base), "rl": Fake("rl", det_rl)}
    return mx.swap(runs, reasoner=eps, base="base", treated="rl", n_bootstrap=20000, random_state=3), eps


def test_cells_are_question_weighted_closed_forms(world, deterministic):
    runs, where_of = world
    res, _ = deterministic
    rules = {"base": det_base, "rl": det_rl}
    for source in ("base", "rl"):
        for name, rule in rules.items():
            want = closed_form(runs, where_of, rule, source).mean()
            assert res.accuracy(source, name) == pytest.approx(want, abs=1e-12), (source, name)
    # the control: the question alone, base answers every third question from memory, rl none
    assert res.accuracy("none", "base") == pytest.approx(np.mean([q % 3 == 0 for q in range(40)]))
    assert res.accuracy("none", "rl") == 0.0
    table = res.table
    assert table["n_questions"].to_list() == [40] * 6
    n_ep = {(r["retrieval_from"], r["reasoner"]): r["n_episodes"] for r in table.iter_rows(named=True)}
    assert n_ep[("base", "rl")] == 20 * 2 + 20 * 5 and n_ep[("rl", "base")] == 120 and n_ep[("none", "rl")] == 40
    # the design is informative: pooling base's trajectories would move its own cell by > 0.05
    base_eps = [w for k, w in where_of.items() if k[0] == "base"]
    assert abs(np.mean([w == 0 for w in base_eps]) - res.accuracy("base", "base")) > 0.05


def test_split_parts_and_intervals_match_the_paired_t_closed_form(world, deterministic):
    runs, where_of = world
    res, _ = deterministic
    x = {(s, m): closed_form(runs, where_of, rule, s) for s in ("base", "rl")
         for m, rule in (("base", det_base), ("rl", det_rl))}
    parts = split_parts(x, "base", "rl")
    q = 40
    for part, d in parts.items():
        est, lo, hi = res.part(part)
        assert est == pytest.approx(d.mean(), abs=1e-12), part
        # estimate +- t_{Q-1} sqrt(Q/(Q-1)) bootstrap sd = the paired t interval over questions
        half = student.ppf(0.975, q - 1) * d.std(ddof=1) / math.sqrt(q)
        assert (hi - lo) / 2 == pytest.approx(half, rel=0.03), part
        assert (lo + hi) / 2 == pytest.approx(est, abs=1e-12)
    total, retrieval, reasoning, interaction = (res.part(p)[0] for p in ("total", "retrieval", "reasoning",
                                                                          "interaction"))
    assert retrieval + reasoning + interaction == pytest.approx(total, abs=1e-12)
    assert reasoning > 0.1 and retrieval > 0.1  # both planted differences are there
    shares = res.split.filter(pl.col("part") != "total")
    assert shares["share"].sum() == pytest.approx(1.0)
    assert shares.filter(pl.col("part") == "reasoning")["share"][0] == pytest.approx(reasoning / total)
    for r in shares.iter_rows(named=True):
        assert r["share_ci_low"] <= r["share"] <= r["share_ci_high"]


def test_the_retrieval_part_stops_at_the_last_result_and_truncates(world):
    runs, where_of = world
    seen = []

    def spy(where, question, has_obs):
        seen.append(where)
        return det_rl(where, question, has_obs)
    res = mx.swap(runs, reasoner={"rl": Fake("rl", spy)}, retrieval_from=["base", "rl"], control=False,
                  n_bootstrap=0)
    assert "elsewhere" not in seen  # the trailing call's query (it holds the gold) is not handed over
    cut = mx.swap(runs, reasoner={"rl": Fake("rl", det_rl)}, retrieval_from="rl", after_results=1,
                  control=False, n_bootstrap=0)
    assert cut.accuracy("rl", "rl") == pytest.approx(closed_form(runs, where_of, det_rl, "rl", truncate=1).mean())
    assert cut.accuracy("rl", "rl") < res.accuracy("rl", "rl") - 0.1
    assert any("truncated after the first 1 result" in n for n in cut.notes)
    assert res.split is None and cut.table.height == 1


def test_within_one_strategy(world):
    runs, where_of = world
    labels = np.array([int(s >= 2) for s in runs["sample_id"].to_list()])  # strategy 1: samples 2, 3, 4
    res = mx.swap(runs, reasoner={"base": Fake("base", det_base), "rl": Fake("rl", det_rl)}, strategy=1,
                  labels=labels, control=False, n_bootstrap=0)
    # base has samples 2-4 only on odd questions (5 samples), so 20 shared questions are kept
    odd = {k: w for k, w in where_of.items() if k[2] >= 2 and int(k[1][1:]) % 2 == 1}
    sub = runs.filter(pl.col("question_id").is_in([f"q{q}" for q in range(1, 40, 2)]))
    assert res.n_questions == 20
    assert res.accuracy("rl", "rl") == pytest.approx(closed_form(sub, odd, det_rl, "rl").mean())
    assert any("20 question(s) not answered by every retrieval source" in n for n in res.notes)


def test_identical_reasoners_hold_zero_and_planted_values_are_covered():
    """Two reasoners with the same planted rule but their own draws: the reasoning part's
    interval holds 0, and the retrieval part's holds the planted expectation, in 95 % of worlds
    (unbalanced designs: 2 or 5 base samples per question)."""
    def p(where, question, has_obs):
        return 0.15 if not has_obs else {0: 0.8, 1: 0.45, None: 0.1, "elsewhere": 1.0}[where]
    hold_zero = cover = 0
    n_worlds = 40
    for seed in range(n_worlds):
        runs, where_of = planted_world(30, seed=100 + seed, shift=0.2)
        res = mx.swap(runs, reasoner={"base": Fake("base", p), "rl": Fake("rl", p, salt=f"other{seed}")},
                      base="base", treated="rl", n=2, control=False, n_bootstrap=500, random_state=seed)
        _, lo, hi = res.part("reasoning")
        hold_zero += lo <= 0 <= hi
        planted = (closed_form(runs, where_of, p, "rl") - closed_form(runs, where_of, p, "base")).mean()
        _, lo, hi = res.part("retrieval")
        cover += lo <= planted <= hi
    # expected about 38 of 40; fewer than 34 has probability < 1 % at a true 95 %
    assert hold_zero >= 34 and cover >= 34, (hold_zero, cover)


def test_result_protocol_notes_and_request_counts(deterministic):
    res, eps = deterministic
    frame = res.to_frame()
    assert frame.columns[-5:] == ["detectable", "quantity", "estimate", "ci_low", "ci_high"]
    assert set(frame["quantity"]) == {"accuracy", "split", "share"}
    assert frame.filter(pl.col("quantity") == "split")["base"].to_list() == ["base"] * 4
    assert set(res.tables()) == {"estimates", "swap", "split", "per_episode", "endpoints"}
    json.dumps(res.to_dict())
    verdict = res.verdict()
    assert "\n" not in verdict and "reasoning +" in verdict and "retrieval +" in verdict
    # every distinct prompt once per seed: 2 x 3 episodes x 40 ... in base and rl, plus 40 controls
    n_prompts = runs_prompts = res.per_episode.filter(pl.col("reasoner") == "rl").height
    assert runs_prompts == 20 * 2 + 20 * 5 + 120 + 40
    counts = res.endpoints.filter(pl.col("model") == "rl").row(0, named=True)
    assert counts["requests"] == eps["rl"].stats.requests <= n_prompts
    assert eps["rl"].calls[0]["stop"] == ["\n"] and eps["rl"].calls[0]["max_tokens"] == 32
    assert any(f"{counts['requests']} requests, 0 cached" in n for n in res.notes)
    assert "Swap test" in str(res.summary()) and "rl on base's retrieval" in str(res.summary())
    assert repr(res) == "<Swap: 6 cells over 40 questions>"


def test_n_samples_use_seeds_and_per_episode_answers(world):
    runs, _ = world
    ep = Fake("rl", lambda w, q, o: 0.5)
    res = mx.swap(runs.filter(pl.col("question_id").is_in(["q0", "q1"])), reasoner=ep, n=3, control=False,
                  retrieval_from="rl", n_bootstrap=0, ci=None)
    assert [c["seed"] for c in ep.calls] == [0, 1, 2]
    per = res.per_episode
    assert per["n_samples"].to_list() == [3] * per.height
    assert all(a in ("wrong", "ans-q0", "ans-q1") for row in per["answers"].to_list() for a in row)
    # each episode's count is its answers that are its gold (the first line of each completion)
    gold = {"q0": "ans-q0", "q1": "ans-q1"}
    assert per["n_correct"].to_list() == [sum(a == gold[q] for a in row) for q, row in
                                          zip(per["question_id"].to_list(), per["answers"].to_list())]
    assert 0 < per["n_correct"].sum() < 3 * per.height  # p = 0.5: some right, some wrong
    assert res.table["ci_low"].is_nan().all() or res.table["ci_low"].is_null().all()


def test_input_errors_are_one_line():
    runs, _ = planted_world(4, seed=0)
    ep = {"base": Fake("base", det_base), "rl": Fake("rl", det_rl)}
    cases = [
        (dict(reasoner=ep, base="base"), "give both `base` and `treated`"),
        (dict(reasoner=ep, retrieval_from="sft"), "arm 'sft' given as `retrieval_from`"),
        (dict(reasoner={"sft": ep["rl"]}), "no reasoner names an arm"),
        (dict(reasoner=ep, template="Q: {question} {context}"), "unknown field(s) ['context']"),
        (dict(reasoner=ep, template="nothing"), "must hold {question}"),
        (dict(reasoner=ep, n=0), "`n` must be an integer >= 1"),
        (dict(reasoner=ep, strategy=1), "`strategy` needs `labels`"),
        (dict(reasoner=ep, strategy=7, labels=np.zeros(runs.height, dtype=int)), "no row of `runs` has strategy 7"),
        (dict(reasoner=object()), "`reasoner` must be an endpoint"),
        (dict(reasoner={"base": ep["base"]}, base="base", treated="rl", retrieval_from=["base", "rl"]),
         "arm 'rl' given as `treated` has no endpoint"),
    ]
    for kwargs, message in cases:
        with pytest.raises(mx.InputError) as info:
            mx.swap(runs, **kwargs)
        assert message in str(info.value) and "\n" not in str(info.value), (kwargs, str(info.value))


def test_a_user_template_and_step_template(world):
    runs, _ = world
    seen = []

    class Echo(Fake):
        def complete(self, prompts, **kw):
            seen.extend(prompts)
            return [["<think>hm</think><answer> ans-q0 </answer>"] for _ in prompts]
    res = mx.swap(runs.filter(pl.col("question_id") == "q0"), reasoner=Echo("rl", None), retrieval_from="rl",
                  template="Answer this.\nQuestion: {question}\n{retrieval}",
                  step_template="<search> {query} </search>\n\n<information>{observation}</information>\n",
                  control=False, n_bootstrap=0)
    assert seen[0].startswith("Answer this.\nQuestion: what is q0\n<search> search 0 </search>\n\n<information>")
    assert "check ans-q0" not in seen[0]
    assert res.accuracy("rl", "rl") == 1.0  # read from the <answer> tags, scored by exact match


def test_the_figure_keeps_long_arm_names_whole_and_apart(world):
    """Checkpoint names of 24 and 33 characters: each label is the whole name, wrapped, and no
    two texts of the figure overlap as drawn (before any decluttering)."""
    pytest.importorskip("matplotlib")
    from mechanism.plots.style import text_overlaps
    from mechanism.plots.swap import plot_swap

    runs, _ = world
    b, t = "Qwen2.5-7B-Instruct-base", "Qwen2.5-7B-Search-R1-PPO-step-400"
    runs = runs.with_columns(pl.col("arm").replace({"base": b, "rl": t}))
    res = mx.swap(runs, reasoner={b: Fake(b, det_base), t: Fake(t, det_rl)}, base=b, treated=t, n_bootstrap=50)
    fig = plot_swap(res, title="Swap test")
    ax = fig.axes[0]
    assert [x.get_text().replace("\n", "") for x in ax.get_xticklabels()] == [b, t]
    assert [y.get_text().replace("\n", "") for y in ax.get_yticklabels()] == [b, t, "none(question only)"]
    assert text_overlaps(fig) == []
    cell = {x.get_text() for x in ax.texts}
    assert f"{res.accuracy(t, t):.2f}\n[" in "".join(cell)
