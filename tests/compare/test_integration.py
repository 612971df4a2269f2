"""Information integration: retrieval flags, conditional rates, the exact split, follow-up
queries and perplexity."""
from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.analysis.information import (
    LOGPROBS_DTYPE,
    content_tokens,
    followup_entity_flags,
    integration,
    retrieval_flags,
)
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step


def _row(arm: str, q: str, sid: int, *, correct: bool, observations: list[str] | None = None,
         queries: list[str] | None = None, gold: list[str] | None = None, question: str = "what?") -> dict:
    observations = observations or []
    queries = queries or [f"query {i}" for i in range(len(observations))]
    return {"arm": arm, "question_id": q, "sample_id": sid, "question": question,
            "gold": ["Paris"] if gold is None else gold, "answer": "x", "correct": correct,
            "n_rounds": len(queries),
            "steps": [make_step(query=qq, observation=o) for qq, o in zip(queries, observations)]}


def _random_runs(rng: np.random.Generator, arms=("base", "rl"), n_q=20, n=4,
                 p_ret=(0.4, 0.7), p_int=(0.6, 0.8), p_par=(0.2, 0.1)) -> pl.DataFrame:
    records = []
    for a, arm in enumerate(arms):
        for q in range(n_q):
            for s in range(n):
                ret = rng.random() < p_ret[a]
                ok = rng.random() < (p_int[a] if ret else p_par[a])
                obs = ["the capital is Paris"] if ret else ["nothing useful here"]
                records.append(_row(arm, f"q{q}", s, correct=bool(ok), observations=obs))
    return from_records(records)


def test_retrieval_is_a_whole_word_gold_match_in_any_observation():
    runs = from_records([
        _row("base", "q1", 0, correct=True, observations=["Parisian cafes", "it is paris."]),
        _row("base", "q1", 1, correct=False, observations=["Parisian cafes"]),
        _row("base", "q1", 2, correct=False, observations=[]),
        _row("base", "q1", 3, correct=False, observations=["Paris"], gold=[]),
        _row("base", "q1", 4, correct=False, observations=["The Eiffel-Tower!"], gold=["eiffel tower", "x"]),
    ])
    # punctuation reads as a space: "Eiffel-Tower" holds "eiffel tower" (SQuAD's reading made it one word)
    assert retrieval_flags(runs).tolist() == [True, False, False, False, True]
    runs2 = from_records([_row("base", "q1", 0, correct=True, observations=["The Eiffel Tower!"],
                               gold=["eiffel tower"])])
    assert retrieval_flags(runs2).tolist() == [True]


def test_rates_match_a_hand_count_and_recompose_accuracy():
    records = [
        _row("base", "q1", 0, correct=True, observations=["Paris"]),
        _row("base", "q1", 1, correct=False, observations=["Paris"]),
        _row("base", "q2", 0, correct=True, observations=["no"]),
        _row("base", "q2", 1, correct=False, observations=["no"]),
        _row("base", "q2", 2, correct=False, observations=["no"]),
    ]
    # pooled over trajectories (on request): ratios of counts
    res = integration(from_records(records), n_boot=100, weighting="trajectory")
    row = res.per_arm.row(0, named=True)
    assert row["retrieval_rate"] == pytest.approx(2 / 5)
    assert row["integration_rate"] == pytest.approx(1 / 2)
    assert row["parametric_rate"] == pytest.approx(1 / 3)
    assert row["accuracy"] == pytest.approx(2 / 5)
    assert any("pooled over trajectories" in n for n in res.notes)
    # the default: questions weigh equally (q1's two samples weigh 1/2 each, q2's three 1/3)
    res = integration(from_records(records), n_boot=100)
    row = res.per_arm.row(0, named=True)
    assert row["retrieval_rate"] == pytest.approx(1 / 2)  # (1 + 0) / 2
    assert row["integration_rate"] == pytest.approx(1 / 2)  # (1/2) / 1
    assert row["parametric_rate"] == pytest.approx(1 / 3)  # (1/3) / 1
    assert row["accuracy"] == pytest.approx((1 / 2 + 1 / 3) / 2)
    r, i, p = row["retrieval_rate"], row["integration_rate"], row["parametric_rate"]
    assert r * i + (1 - r) * p == pytest.approx(row["accuracy"], abs=1e-15)
    assert row["retrieval_rate_ci_low"] <= row["retrieval_rate"] <= row["retrieval_rate_ci_high"]
    assert res.split is None  # one arm, nothing to split


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 8), st.integers(1, 5))
def test_split_is_exact_on_random_tables(seed, n_q, n):
    rng = np.random.default_rng(seed)
    runs = _random_runs(rng, n_q=n_q, n=n, p_ret=(rng.random(), rng.random()),
                        p_int=(rng.random(), rng.random()), p_par=(rng.random(), rng.random()))
    res = integration(runs, n_boot=20, random_state=seed)
    parts = {r["part"]: r["estimate"] for r in res.split.iter_rows(named=True)}
    assert abs(parts["retrieval"] + parts["integration"] + parts["parametric"] + parts["not_retrievable"]
               - parts["total"]) <= 1e-12
    assert parts["not_retrievable"] == 0.0  # every gold here is a name
    acc = {r["arm"]: r["accuracy"] for r in res.per_arm.iter_rows(named=True)}
    assert parts["total"] == pytest.approx(acc["rl"] - acc["base"], abs=1e-12)


def test_split_matches_the_closed_form():
    rng = np.random.default_rng(3)
    runs = _random_runs(rng, n_q=40, n=5)
    res = integration(runs, n_boot=200, strata="pooled")  # the closed form pools over questions
    a = {r["arm"]: r for r in res.per_arm.iter_rows(named=True)}
    rb, rt = a["base"]["retrieval_rate"], a["rl"]["retrieval_rate"]
    ib, it = a["base"]["integration_rate"], a["rl"]["integration_rate"]
    pb, pt = a["base"]["parametric_rate"], a["rl"]["parametric_rate"]
    parts = {r["part"]: r for r in res.split.iter_rows(named=True)}
    assert parts["retrieval"]["estimate"] == pytest.approx((rt - rb) * ((it + ib) / 2 - (pt + pb) / 2), abs=1e-12)
    assert parts["integration"]["estimate"] == pytest.approx((it - ib) * (rt + rb) / 2, abs=1e-12)
    assert parts["parametric"]["estimate"] == pytest.approx((pt - pb) * (2 - rt - rb) / 2, abs=1e-12)
    for r in parts.values():
        assert r["ci_low"] <= r["estimate"] <= r["ci_high"]


def test_planted_retrieval_gain_lands_in_the_retrieval_part():
    rng = np.random.default_rng(4)
    runs = _random_runs(rng, n_q=150, n=6, p_ret=(0.3, 0.8), p_int=(0.7, 0.7), p_par=(0.1, 0.1))
    parts = {r["part"]: r for r in integration(runs, n_boot=300).split.iter_rows(named=True)}
    assert parts["retrieval"]["ci_low"] > 0.2
    assert parts["integration"]["ci_low"] <= 0.0 <= parts["integration"]["ci_high"]
    assert parts["parametric"]["ci_low"] <= 0.0 <= parts["parametric"]["ci_high"]
    runs = _random_runs(rng, n_q=150, n=6, p_ret=(0.5, 0.5), p_int=(0.5, 0.8), p_par=(0.1, 0.1))
    parts = {r["part"]: r for r in integration(runs, n_boot=300).split.iter_rows(named=True)}
    assert parts["integration"]["ci_low"] > 0.0
    assert parts["retrieval"]["ci_low"] <= 0.0 <= parts["retrieval"]["ci_high"]


def test_followup_queries_carrying_words_from_observations():
    runs = from_records([
        # round 2 asks about "Nolan", first seen in the round-1 observation: a bridge step
        _row("base", "q1", 0, correct=True, question="Who directed Inception and where was he born?",
             queries=["Inception director", "Christopher Nolan birthplace", "Nolan London"],
             observations=["Inception was directed by Christopher Nolan.", "Nolan was born in London.", "ok"]),
        # round 2 only re-words the question: no new word from an observation
        _row("base", "q1", 1, correct=False, question="Who directed Inception?",
             queries=["Inception director", "director of Inception film"],
             observations=["Inception was directed by Christopher Nolan.", "film film"]),
        # one round only: no follow-up
        _row("base", "q1", 2, correct=False, queries=["x"], observations=["y"]),
    ])
    n_follow, hits = followup_entity_flags(runs)
    # sample 0 round 3 re-uses "nolan" (already queried) and "london" (new, seen in round 2): a hit
    assert n_follow.tolist() == [2, 1, 0]
    assert hits.tolist() == [2, 0, 0]
    res = integration(runs, n_boot=50)
    assert res.per_arm["followup_from_observation"][0] == pytest.approx(2 / 3)
    assert content_tokens("The  a of") == set()


def test_perplexity_from_a_logprob_column():
    records = [_row("base", "q1", 0, correct=True, observations=["Paris"]),
               _row("base", "q2", 0, correct=False, observations=["no"])]
    runs = from_records(records).with_columns(pl.Series("logprobs", [
        [{"segment": "query", "logprob": -1.0}, {"segment": "reasoning", "logprob": -2.0},
         {"segment": "reasoning", "logprob": -0.5}],
        [{"segment": "query", "logprob": -0.5}],
    ], dtype=LOGPROBS_DTYPE))
    res = integration(runs, n_boot=200, logprobs_column="logprobs")
    ppl = {r["segment"]: r for r in res.perplexity.iter_rows(named=True)}
    assert ppl["query"]["perplexity"] == pytest.approx(math.exp(0.75))
    assert ppl["reasoning"]["perplexity"] == pytest.approx(math.exp(1.25))
    assert ppl["query"]["n_tokens"] == 2
    assert ppl["query"]["perplexity_ci_low"] <= ppl["query"]["perplexity"] <= ppl["query"]["perplexity_ci_high"]
    with pytest.raises(InputError, match="`logprobs`"):
        integration(runs.with_columns(pl.lit(1.0).alias("logprobs")), logprobs_column="logprobs")
    with pytest.raises(InputError, match="`lp`"):
        integration(runs, logprobs_column="lp")
    bad = runs.with_columns(pl.Series("logprobs", [[{"segment": "query", "logprob": 0.5}], []],
                                      dtype=LOGPROBS_DTYPE))
    with pytest.raises(InputError, match="positive"):
        integration(bad, logprobs_column="logprobs")


def test_deterministic_per_seed_and_json_ready():
    runs = _random_runs(np.random.default_rng(5), arms=("base", "rl", "sft"), p_ret=(0.4, 0.7, 0.5),
                        p_int=(0.6, 0.8, 0.5), p_par=(0.2, 0.1, 0.3))
    a = integration(runs, n_boot=100, random_state=1)
    b = integration(runs, n_boot=100, random_state=1)
    c = integration(runs, n_boot=100, random_state=2)
    assert a.per_arm.equals(b.per_arm) and a.split.equals(b.split)
    assert not a.split.equals(c.split)
    assert a.split["treated"].unique().sort().to_list() == ["rl", "sft"]
    assert set(a.to_frame()["arm"].drop_nulls().to_list()) == {"base", "rl", "sft"}
    split = a.to_frame().filter((pl.col("quantity") == "split") & (pl.col("part") == "total"))
    assert split["base"].to_list() == ["base", "base"] and split["detectable"].is_not_null().all()
    assert split["treated"].to_list() == ["rl", "sft"] and split["arm"].null_count() == 2
    json.dumps(a.to_dict())
    other = integration(runs, arms=["rl", "base"], n_boot=10)
    assert other.base == "rl" and other.per_arm["arm"].to_list() == ["rl", "base"]
    with pytest.raises(InputError, match="`arms`"):
        integration(runs, arms=["nope"])


def test_split_uses_common_questions_and_says_so():
    records = [_row("base", "q1", 0, correct=True, observations=["Paris"]),
               _row("base", "q2", 0, correct=True, observations=["no"]),
               _row("rl", "q1", 0, correct=False, observations=["Paris"])]
    res = integration(from_records(records), n_boot=10)
    assert res.split["n_questions"][0] == 1
    assert any("left out" in n for n in res.notes)
    total = res.split.filter(pl.col("part") == "total")["estimate"][0]
    assert total == pytest.approx(-1.0)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 1-layer GPT-2 with a word-level tokenizer, built here from a config: no download."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ("question thought search observation who directed inception christopher nolan born london "
             "find the director then his birthplace : ? . film was by in").split()
    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(dict.fromkeys(words))}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = __import__("tokenizers").normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = tmp_path_factory.mktemp("tiny-lm")
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=16, n_layer=1, n_head=2)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_base_model_log_probabilities_from_a_local_model(tiny_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mechanism.analysis.information import render_segments, token_logprobs

    runs = from_records([
        {**_row("base", "q1", 0, correct=True, question="Who directed Inception?",
                queries=["Inception director", "Christopher Nolan born"],
                observations=["Inception was directed by Christopher Nolan.", "Nolan was born in London."]),
         "steps": [make_step(thought="find the director", query="Inception director",
                             observation="Inception was directed by Christopher Nolan."),
                   make_step(thought="then his birthplace", query="Christopher Nolan born",
                             observation="Nolan was born in London.")]},
        _row("rl", "q1", 0, correct=False, question="Who?", queries=["nolan"], observations=["film"]),
    ])
    col = token_logprobs(runs, tiny_model)
    first = col[0].to_list()
    segments = [e["segment"] for e in first]
    # word-level tokenizer: one token per word of the thoughts and queries, in order
    assert segments == ["reasoning"] * 3 + ["query"] * 2 + ["reasoning"] * 3 + ["query"] * 3
    assert all(e["logprob"] <= 0 for e in first)
    # brute force: score each token from its own prefix, one forward pass per token
    tok = AutoTokenizer.from_pretrained(tiny_model, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(tiny_model, local_files_only=True).eval()
    text, spans = render_segments(runs.row(0, named=True))
    enc = tok(text, return_offsets_mapping=True)
    ids = enc["input_ids"]
    brute = []
    with torch.no_grad():
        for i in range(1, len(ids)):
            start = enc["offset_mapping"][i][0]
            if any(a <= start < b for a, b, _ in spans):
                logits = model(torch.tensor([ids[:i]])).logits[0, -1]
                brute.append(float(torch.log_softmax(logits, -1)[ids[i]]))
    assert [e["logprob"] for e in first] == pytest.approx(brute, abs=1e-5)
    res = integration(runs, model_path=tiny_model, n_boot=20, labels=[3, 4])
    ppl = {(r["arm"], r["segment"]): r for r in res.perplexity.iter_rows(named=True)}
    by = {(r["strategy"], r["segment"]): r for r in res.perplexity_by_strategy.iter_rows(named=True)}
    assert by[3, "query"]["perplexity"] == pytest.approx(ppl[("base", "query")]["perplexity"], rel=1e-12)
    q = [e["logprob"] for e in first if e["segment"] == "query"]
    assert ppl[("base", "query")]["perplexity"] == pytest.approx(math.exp(-np.mean(q)), rel=1e-9)
    assert ppl[("rl", "query")]["n_tokens"] == 1
    with pytest.raises(InputError, match="model folder not found"):
        integration(runs, model_path=tiny_model / "nope")
    with pytest.raises(InputError, match="not both"):
        integration(runs, model_path=tiny_model, logprobs_column="x")


@pytest.mark.slow
def test_cli_scores_perplexity_with_a_local_model(tiny_model, tmp_path, capsys):
    from mechanism._cli.main import main

    runs = from_records([
        _row("base", "q1", 0, correct=True, question="Who directed Inception?", queries=["Inception director"],
             observations=["Inception was directed by Christopher Nolan."]),
        _row("rl", "q1", 0, correct=False, question="Who?", queries=["nolan"], observations=["film"]),
    ])
    path = tmp_path / "runs.parquet"
    runs.write_parquet(path)
    rc = main(["integration", str(path), "--format", "canonical", "--model-path", str(tiny_model),
               "--out", str(tmp_path / "out"), "--no-figures", "--n-boot", "10"])
    assert rc == 0
    table = pl.read_csv(tmp_path / "out" / "perplexity.csv")
    assert set(table["segment"]) >= {"query"} and (table["perplexity"] >= 1).all()
    rc = main(["integration", str(path), "--format", "canonical", "--model-path", str(tmp_path / "nope"),
               "--out", str(tmp_path / "out2"), "--no-figures"])
    assert rc == 2 and "model folder not found" in capsys.readouterr().err
