"""A local Hugging Face causal language model as an :class:`~mechanism.endpoints.Endpoint`.

Log-probabilities come from batched forward passes: texts padded on the right, with an
attention mask, so each real token sees exactly the tokens before it (the padding comes after
and is masked), which makes a batch give the numbers an unpadded pass gives. Token offsets come
from the fast tokenizer's ``offset_mapping``, never from re-tokenizing; a special token the
tokenizer adds (beginning of sequence) conditions the text but is not listed. Completions come
from ``generate``, one prompt at a time: greedy at temperature 0, sampled from a seeded
generator otherwise. torch and transformers are imported only when the class is used.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from mechanism.core.errors import InputError
from mechanism.core.progress import progress
from mechanism.endpoints._base import Endpoint, EndpointError, EndpointStats, Message, TokenLogprobs


def _cut(text: str, stop: Sequence[str] | None) -> str:
    ends = [text.find(s) for s in (stop or ()) if s and s in text]
    return text[:min(ends)] if ends else text


class Transformers(Endpoint):
    """A causal language model loaded from a local folder (or the local Hugging Face cache).

    Parameters
    ----------
    path_or_name
        The model's folder (``save_pretrained``'s) or a name already in the local cache; nothing
        is downloaded.
    device
        The torch device to run on.
    batch_size
        Texts per forward pass in :meth:`logprobs`.
    max_length
        Tokens of a text scored at most (longer texts are cut, their tail left unscored);
        ``None``: all of them.
    progress
        Show a progress bar (``None``: only when stderr is a terminal).
    """

    def __init__(self, path_or_name: str | os.PathLike, *, device: str = "cpu", batch_size: int = 8,
                 max_length: int | None = None, progress: bool | None = None) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415 - transformers: optional, only for a local model

        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"`batch_size` must be an integer >= 1, got {batch_size!r}")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)
                                       or max_length < 1):
            raise InputError(f"`max_length` must be an integer >= 1 or None, got {max_length!r}")
        self.path = str(path_or_name)
        self.model = os.path.basename(self.path.rstrip("/\\")) or self.path
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self.progress = progress
        self.stats = EndpointStats()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True, use_fast=True)
            self._model = AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True).to(device).eval()
        except (OSError, ValueError) as exc:
            said = " ".join(str(exc).split())[:200]
            raise self._fail(f"cannot load the model ({type(exc).__name__}: {said})") from None
        if not getattr(self._tokenizer, "is_fast", False):
            raise self._fail("needs a fast tokenizer (its offsets place each token in the text)")

    def __repr__(self) -> str:
        return f"Transformers({self.path!r}, device={self.device!r})"

    def _fail(self, what: str) -> EndpointError:
        return EndpointError(what, base_url=self.path, model=self.model)

    def _encode(self, text: str) -> Any:
        truncate = self.max_length is not None
        return self._tokenizer(text, return_offsets_mapping=True, truncation=truncate, max_length=self.max_length)

    def logprobs(self, texts: Sequence[str]) -> list[TokenLogprobs]:
        """As :meth:`Endpoint.logprobs`."""
        import torch  # noqa: PLC0415 - torch: optional, only for a local model

        texts = [str(t) for t in texts]
        encoded = [self._encode(t) for t in texts]
        out: list[TokenLogprobs | None] = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]["input_ids"]))  # little padding per batch
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        pad = self._tokenizer.pad_token_id if self._tokenizer.pad_token_id is not None else 0
        for batch in progress(batches, enabled=self.progress, desc=f"{self.model}: log-probabilities"):
            width = max(1, max(len(encoded[i]["input_ids"]) for i in batch))
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                seq = encoded[i]["input_ids"]
                ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
                mask[row, :len(seq)] = 1
            with torch.no_grad():
                logits = self._model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
            scores = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None].to(self.device))
            scores = scores[..., 0].cpu().tolist()
            self.stats.add(requests=1, prompt_tokens=int(mask.sum()))
            for row, i in enumerate(batch):
                out[i] = self._assemble(texts[i], encoded[i], [None, *scores[row]])
        return [o for o in out if o is not None]

    def _assemble(self, text: str, enc: Any, scores: list[float | None]) -> TokenLogprobs:
        special = set(self._tokenizer.all_special_ids)
        tokens, offsets, logprobs = [], [], []
        for position, (token_id, (start, end)) in enumerate(zip(enc["input_ids"], enc["offset_mapping"])):
            if token_id in special and start == end:
                continue
            tokens.append(self._tokenizer.decode([token_id]))
            offsets.append(int(start))
            logprobs.append(scores[position])
        return TokenLogprobs(text, tuple(tokens), tuple(offsets), tuple(logprobs))

    def _generate(self, prompt: str, *, max_tokens: int, temperature: float, n: int, seed: int | None,
                  stop: Sequence[str] | None) -> list[str]:
        import torch  # noqa: PLC0415 - torch: optional, only for a local model

        if max_tokens == 0:
            return [""] * n
        enc = self._tokenizer(prompt, return_tensors="pt").to(self.device)
        pad = self._tokenizer.pad_token_id if self._tokenizer.pad_token_id is not None else self._tokenizer.eos_token_id
        sample = temperature > 0
        if sample:
            torch.manual_seed(0 if seed is None else int(seed))  # generate() draws from torch's global generator
        options = {"do_sample": True, "temperature": float(temperature), "top_k": 0, "num_return_sequences": n} \
            if sample else {"do_sample": False}
        with torch.no_grad():
            output = self._model.generate(**enc, max_new_tokens=max_tokens, pad_token_id=pad, **options)
        new = output[:, enc["input_ids"].shape[1]:]
        self.stats.add(requests=1, prompt_tokens=int(enc["input_ids"].numel()), completion_tokens=int(new.numel()))
        texts = [_cut(t, stop) for t in self._tokenizer.batch_decode(new, skip_special_tokens=True)]
        return texts if sample else texts * n  # greedy: the n completions are the same one

    def complete(self, prompts: Sequence[str], *, max_tokens: int = 64, temperature: float = 0.0, n: int = 1,
                 seed: int | None = 0, stop: Sequence[str] | None = None) -> list[list[str]]:
        """As :meth:`Endpoint.complete`."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"`n` must be an integer >= 1, got {n!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise InputError(f"`max_tokens` must be an integer >= 0, got {max_tokens!r}")
        return [self._generate(str(p), max_tokens=max_tokens, temperature=float(temperature), n=n, seed=seed,
                               stop=stop)
                for p in progress(list(prompts), enabled=self.progress, desc=f"{self.model}: completions")]

    def chat(self, conversations: Sequence[Sequence[Message]], *, max_tokens: int = 64, temperature: float = 0.0,
             n: int = 1, seed: int | None = 0, stop: Sequence[str] | None = None) -> list[list[str]]:
        """As :meth:`Endpoint.chat`."""
        return self.complete([self._render_chat(c) for c in conversations], max_tokens=max_tokens,
                             temperature=temperature, n=n, seed=seed, stop=stop)

    def _render_chat(self, messages: Sequence[Message]) -> str:
        listed = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
        if getattr(self._tokenizer, "chat_template", None):
            return self._tokenizer.apply_chat_template(listed, tokenize=False, add_generation_prompt=True)
        return "".join(f"{m['role']}: {m['content']}\n" for m in listed) + "assistant:"
