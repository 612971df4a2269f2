"""The local transformers endpoint against a direct, unbatched forward pass of the same model.

The model is a tiny randomly initialised GPT-2 and its tokenizer a byte-level BPE trained here on
a few sentences, both saved to a temporary folder: nothing is downloaded.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the local endpoint needs torch")
transformers = pytest.importorskip("transformers", reason="the local endpoint needs transformers")
tokenizers = pytest.importorskip("tokenizers", reason="the test's tokenizer is built with tokenizers")

from mechanism.endpoints import Transformers  # noqa: E402 - after the skips: needs torch to run

SENTENCES = [
    "Question: who wrote the novel about the desert planet?",
    "Search: author of Dune\nObservation: Dune is a novel by Frank Herbert.",
    "The answer is Frank Herbert, who was born in Tacoma.",
    "Paris is the capital of France; Berlin is the capital of Germany.",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-gpt2")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(SENTENCES * 5, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=128, vocab_size=fast.vocab_size,
                        bos_token_id=fast.eos_token_id, eos_token_id=fast.eos_token_id)
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    return folder


def _direct(model_dir, text):
    """Log-probabilities of each token of ``text`` from one unpadded forward pass."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
    ids = tok(text)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return ids, [None] + [float(logp[i - 1, ids[i]]) for i in range(1, len(ids))]


def test_batched_logprobs_equal_a_direct_forward_pass(model_dir):
    texts = [SENTENCES[0], "Paris", SENTENCES[1], SENTENCES[3][:30], SENTENCES[2]]  # lengths differ within a batch
    endpoint = Transformers(model_dir, batch_size=4, progress=False)
    got = endpoint.logprobs(texts)
    assert [g.text for g in got] == texts
    for text, scored in zip(texts, got):
        ids, want = _direct(model_dir, text)
        assert len(scored.tokens) == len(ids) > 1
        assert scored.logprobs[0] is None
        assert max(abs(a - b) for a, b in zip(scored.logprobs[1:], want[1:])) < 1e-5
        # offsets place each token in the text: byte-level tokens decode to the text they cover
        assert "".join(scored.tokens) == text
        assert list(scored.offsets) == [sum(len(t) for t in scored.tokens[:i]) for i in range(len(ids))]
    # 5 texts in batches of 4: two forward passes, every token counted once
    assert endpoint.stats.requests == 2
    assert endpoint.stats.prompt_tokens == sum(len(g.tokens) for g in got)


def test_greedy_completion_follows_the_argmax(model_dir):
    endpoint = Transformers(model_dir, progress=False)
    prompt = SENTENCES[0]
    tok = endpoint._tokenizer
    ids = tok(prompt)["input_ids"]
    model = endpoint._model
    for _ in range(4):  # greedy decoding by hand: the most probable next token, four times
        with torch.no_grad():
            ids.append(int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
    want = tok.decode(ids[len(tok(prompt)["input_ids"]):])
    assert endpoint.complete([prompt], max_tokens=4, n=2) == [[want, want]]
    assert endpoint.stats.completion_tokens == 4
    # sampling is seeded: the same seed gives the same completions
    first = endpoint.complete([prompt], max_tokens=3, temperature=1.0, n=2, seed=5)
    assert first == endpoint.complete([prompt], max_tokens=3, temperature=1.0, n=2, seed=5)
    assert len(first[0]) == 2
    # chat without a template: "role: content" lines, then the assistant's turn
    chat = endpoint.chat([[{"role": "user", "content": "hi"}]], max_tokens=2)
    assert chat == endpoint.complete(["user: hi\nassistant:"], max_tokens=2)


def test_a_missing_model_is_one_line(tmp_path):
    from mechanism.endpoints import EndpointError

    with pytest.raises(EndpointError) as info:
        Transformers(tmp_path / "nowhere", progress=False)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith(f"endpoint {tmp_path / 'nowhere'} (model `nowhere`): cannot load the model")
