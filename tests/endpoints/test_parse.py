"""Reading prompt log-probabilities out of the answer shapes servers give, on planted answers:
vLLM's ``prompt_logprobs`` (with and without a beginning-of-sequence token, with alternatives
besides the prompt's own token) and the legacy ``echo`` shape."""
from __future__ import annotations

import subprocess
import sys

import pytest

from mechanism.endpoints._parse import MalformedAnswer, from_echo, from_prompt_logprobs


def _vllm(entries, ids=None):
    choice = {"index": 0, "text": "x", "prompt_logprobs": entries}
    if ids is not None:
        choice["prompt_token_ids"] = ids
    return {"choices": [choice]}


def test_prompt_logprobs_without_a_start_token():
    answer = _vllm([None, {"7": {"logprob": -1.5, "rank": 3, "decoded_token": " cat"}},
                    {"9": {"logprob": -0.25, "rank": 1, "decoded_token": " sat"}}])
    got = from_prompt_logprobs("The cat sat", answer)
    assert got.tokens == ("The", " cat", " sat") and got.offsets == (0, 3, 7)
    assert got.logprobs == (None, -1.5, -0.25)


def test_prompt_logprobs_after_a_start_token_and_with_alternatives():
    # the first entry is the start token's (not in the text); the prompt's own token is picked by
    # its id where the answer gives the ids, else it is the first of each dict
    entries = [None, {"5": {"logprob": -2.0, "decoded_token": "The"}},
               {"1": {"logprob": -0.1, "decoded_token": " dog"}, "7": {"logprob": -3.0, "decoded_token": " cat"}}]
    got = from_prompt_logprobs("The cat", _vllm(entries, ids=[0, 5, 7]))
    assert got.tokens == ("The", " cat") and got.offsets == (0, 3) and got.logprobs == (-2.0, -3.0)
    by_order = from_prompt_logprobs("The dog", _vllm(entries))
    assert by_order.tokens == ("The", " dog") and by_order.logprobs == (-2.0, -0.1)


def test_trailing_white_space_left_out_by_the_tokenizer():
    got = from_prompt_logprobs("a b  ", _vllm([None, {"2": {"logprob": -1.0, "decoded_token": " b"}}]))
    assert got.tokens == ("a", " b") and got.offsets == (0, 1)


def test_echo_with_and_without_text_offset():
    block = {"tokens": ["<s>", "Hi", " there", "!"], "token_logprobs": [None, -1.0, -2.0, -0.5],
             "text_offset": [0, 3, 5, 11]}
    got = from_echo("Hi there", {"choices": [{"logprobs": block}]})  # the start token, and one generated token
    assert got.tokens == ("Hi", " there") and got.offsets == (0, 2) and got.logprobs == (-1.0, -2.0)
    plain = {"tokens": ["Hi", " there"], "token_logprobs": [None, -2.0]}
    got = from_echo("Hi there", {"choices": [{"logprobs": plain}]})
    assert got.offsets == (0, 2) and got.logprobs == (None, -2.0)


def test_absent_and_malformed_answers():
    assert from_prompt_logprobs("a", {"choices": [{"text": ""}]}) is None
    assert from_echo("a", {"choices": [{"text": "", "logprobs": None}]}) is None
    with pytest.raises(MalformedAnswer, match="not a number"):
        from_prompt_logprobs("a b", _vllm([None, {"1": {"logprob": "high", "decoded_token": " b"}}]))
    with pytest.raises(MalformedAnswer, match="does not match"):
        from_echo("a", {"choices": [{"logprobs": {"tokens": ["a"], "token_logprobs": []}}]})


def test_importing_the_endpoints_stays_light():
    code = ("import sys, mechanism as mx, mechanism.endpoints; mx.EndpointError; "
            "print(sorted(m for m in ('openai', 'torch', 'transformers', 'fastapi', 'uvicorn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
