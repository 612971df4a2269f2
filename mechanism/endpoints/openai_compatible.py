"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp's server, TGI, OpenAI itself) as an
:class:`~mechanism.endpoints.Endpoint`, on the official ``openai`` client.

Requests go out from a thread pool of at most ``max_concurrency`` threads (the client is
thread-safe), each with a timeout and our own retries (:mod:`mechanism.endpoints._http`), and
every answer is kept in the content-addressed cache (:mod:`mechanism.endpoints._cache`), so a
rerun sends nothing. Prompt log-probabilities come from vLLM's ``prompt_logprobs`` or from
``echo`` with ``logprobs`` (:mod:`mechanism.endpoints._parse`); ``"auto"`` tries them in that
order and keeps the one that worked.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Literal, TypeVar

from mechanism.core.errors import InputError
from mechanism.core.progress import progress
from mechanism.endpoints._base import Endpoint, EndpointError, EndpointStats, Message, TokenLogprobs
from mechanism.endpoints._cache import ResponseCache, request_key
from mechanism.endpoints._http import send
from mechanism.endpoints._parse import MalformedAnswer, from_echo, from_prompt_logprobs

T = TypeVar("T")
R = TypeVar("R")
LogprobsVia = Literal["auto", "prompt_logprobs", "echo"]
_VIAS = ("prompt_logprobs", "echo")
_UNSUPPORTED = (400, 422)  # how servers refuse a field or mode they lack (404 is an unknown model)
_EXTRA_FIELDS = ("prompt_logprobs",)  # vLLM's own fields: sent through the client's extra_body


def _options(max_tokens: int, temperature: float, n: int, seed: int | None,
             stop: Sequence[str] | None) -> dict[str, Any]:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise InputError(f"`max_tokens` must be an integer >= 0, got {max_tokens!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"`n` must be an integer >= 1, got {n!r}")
    if not isinstance(temperature, (int, float)) or isinstance(temperature, bool) or not temperature >= 0:
        raise InputError(f"`temperature` must be a number >= 0, got {temperature!r}")
    body: dict[str, Any] = {"max_tokens": max_tokens, "temperature": float(temperature), "n": n}
    if seed is not None:
        body["seed"] = int(seed)
    if stop:
        body["stop"] = [str(s) for s in ([stop] if isinstance(stop, str) else stop)]
    return body


def _texts(answer: dict[str, Any], n: int, read: Callable[[dict[str, Any]], Any]) -> list[str]:
    choices = answer.get("choices")
    if not isinstance(choices, list) or len(choices) != n or not all(isinstance(c, dict) for c in choices):
        raise MalformedAnswer(f"the answer has {len(choices) if isinstance(choices, list) else 'no'} choices, "
                                f"not the {n} asked for")
    ordered = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0)
    texts = [read(c) for c in ordered]
    if not all(isinstance(t, str) for t in texts):
        raise MalformedAnswer("a choice has no text")
    return texts


class OpenAICompatible(Endpoint):
    """A model behind an OpenAI-compatible HTTP API.

    Parameters
    ----------
    base_url
        The API's root, e.g. ``"http://127.0.0.1:8000/v1"``.
    model
        The served model's name (vLLM: ``--served-model-name``).
    api_key
        Sent as the bearer token; local servers take any (``"EMPTY"`` when not given).
    max_concurrency
        Requests in flight at once, at most.
    max_retries
        Retries of a request after a 429, a 5xx, a timeout or a connection error.
    timeout_s
        Seconds one try may take.
    backoff_s
        The wait before the first retry, doubled before each next one (a ``Retry-After`` header
        is honoured instead, capped at 30 s).
    cache_dir
        Folder of the answer cache (kept under ``<cache_dir>/endpoints``); ``None`` keeps
        answers in memory for this object's life only.
    logprobs_via
        How prompt log-probabilities are asked for: vLLM's ``"prompt_logprobs"``, the legacy
        ``"echo"`` with ``logprobs``, or ``"auto"`` (the first of these that works).
    progress
        Show a progress bar (``None``: only when stderr is a terminal).

    Examples
    --------
    >>> from mechanism.endpoints import OpenAICompatible
    >>> rl = OpenAICompatible("http://127.0.0.1:8000/v1", "rl")  # doctest: +SKIP
    >>> rl.complete(["Question: who wrote Dune?\\nAnswer:"], max_tokens=8)  # doctest: +SKIP
    [[' Frank Herbert']]
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *, max_concurrency: int = 8,
                 max_retries: int = 4, timeout_s: float = 60.0, backoff_s: float = 0.5,
                 cache_dir: str | os.PathLike | None = None, logprobs_via: LogprobsVia = "auto",
                 progress: bool | None = None) -> None:
        import openai  # noqa: PLC0415 - openai: optional, only when an OpenAI-compatible endpoint is made

        for name, value, low in (("max_concurrency", max_concurrency, 1), ("max_retries", max_retries, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"`{name}` must be an integer >= {low}, got {value!r}")
        for name, value in (("timeout_s", timeout_s), ("backoff_s", backoff_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise InputError(f"`{name}` must be a number >= 0, got {value!r}")
        if logprobs_via not in ("auto", *_VIAS):
            raise InputError(f"`logprobs_via` must be 'auto', 'prompt_logprobs' or 'echo', got {logprobs_via!r}")
        self.base_url = str(base_url).rstrip("/")
        self.model = str(model)
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout_s = float(timeout_s)
        self.backoff_s = float(backoff_s)
        self.logprobs_via = logprobs_via
        self.progress = progress
        self.stats = EndpointStats()
        self._cache = ResponseCache(cache_dir)
        self._via: str | None = None if logprobs_via == "auto" else logprobs_via
        self._via_lock = threading.Lock()
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or "EMPTY", max_retries=0,
                                     timeout=self.timeout_s)

    def __repr__(self) -> str:
        return f"OpenAICompatible(base_url={self.base_url!r}, model={self.model!r})"

    def _fail(self, what: str, status: int | None = None) -> EndpointError:
        return EndpointError(what, base_url=self.base_url, model=self.model, status=status)

    def _request(self, route: Literal["completions", "chat/completions"], body: dict[str, Any]) -> dict[str, Any]:
        """The answer to ``body`` on ``route``: from the cache, else sent (and then cached)."""
        resource = self._client.completions if route == "completions" else self._client.chat.completions
        fields = {k: v for k, v in body.items() if k not in _EXTRA_FIELDS}
        extra = {k: body[k] for k in _EXTRA_FIELDS if k in body}
        answer, cached = self._cache.fetch(request_key(self.model, route, body), lambda: send(
            lambda: resource.with_raw_response.create(model=self.model, **fields, extra_body=extra or None),
            stats=self.stats, max_retries=self.max_retries, backoff_s=self.backoff_s,
            timeout_s=self.timeout_s, base_url=self.base_url, model=self.model))
        if cached:
            self.stats.add(cached=1)
        return answer

    def _map(self, fn: Callable[[T], R], items: Sequence[T], desc: str) -> list[R]:
        """``[fn(x) for x in items]`` on the thread pool, in order; the first error stops the rest."""
        if not items:
            return []
        results: list[Any] = [None] * len(items)
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(items))) as pool:
            futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
            try:
                for future in progress(as_completed(futures), enabled=self.progress, desc=desc, total=len(items)):
                    results[futures[future]] = future.result()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
        return results

    def complete(self, prompts: Sequence[str], *, max_tokens: int = 64, temperature: float = 0.0, n: int = 1,
                 seed: int | None = 0, stop: Sequence[str] | None = None) -> list[list[str]]:
        """As :meth:`Endpoint.complete`."""
        options = _options(max_tokens, temperature, n, seed, stop)

        def one(prompt: str) -> list[str]:
            answer = self._request("completions", {"prompt": str(prompt), **options})
            try:
                return _texts(answer, n, lambda c: c.get("text"))
            except MalformedAnswer as exc:
                raise self._fail(f"malformed completions answer: {exc}") from None

        return self._map(one, list(prompts), f"{self.model}: completions")

    def chat(self, conversations: Sequence[Sequence[Message]], *, max_tokens: int = 64, temperature: float = 0.0,
             n: int = 1, seed: int | None = 0, stop: Sequence[str] | None = None) -> list[list[str]]:
        """As :meth:`Endpoint.chat`."""
        options = _options(max_tokens, temperature, n, seed, stop)

        def one(messages: Sequence[Message]) -> list[str]:
            body = {"messages": [{"role": str(m["role"]), "content": str(m["content"])} for m in messages], **options}
            answer = self._request("chat/completions", body)
            try:
                return _texts(answer, n, lambda c: (c.get("message") or {}).get("content"))
            except MalformedAnswer as exc:
                raise self._fail(f"malformed chat answer: {exc}") from None

        return self._map(one, list(conversations), f"{self.model}: chat")

    def logprobs(self, texts: Sequence[str]) -> list[TokenLogprobs]:
        """As :meth:`Endpoint.logprobs`."""
        texts = [str(t) for t in texts]
        if not texts:
            return []
        first = self._score(texts[0])  # settles "auto" once, before the rest go out in parallel
        return [first, *self._map(self._score, texts[1:], f"{self.model}: log-probabilities")]

    def _score(self, text: str) -> TokenLogprobs:
        with self._via_lock:
            via = self._via
        tried = [via] if via is not None else list(_VIAS)
        if via is None:  # an answer cached by an earlier run settles the method without a request
            known = [v for v in _VIAS if self._cache.get(request_key(self.model, "completions", _body(v, text)))]
            tried = known[:1] + [v for v in _VIAS if v not in known[:1]]
        refusal = ""
        for method in tried:
            try:
                answer = self._request("completions", _body(method, text))
                parsed = (from_prompt_logprobs if method == "prompt_logprobs" else from_echo)(text, answer)
            except EndpointError as exc:
                if exc.status not in _UNSUPPORTED:
                    raise
                refusal = exc.what
                continue
            except MalformedAnswer as exc:
                raise self._fail(f"malformed {method} answer: {exc}") from None
            if parsed is not None:
                with self._via_lock:
                    self._via = method
                return parsed
        said = f" ({refusal})" if refusal else ""
        raise self._fail(f"does not return prompt log-probabilities (tried {' and '.join(tried)}){said}")


def _body(method: str, text: str) -> dict[str, Any]:
    if method == "prompt_logprobs":
        return {"prompt": text, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}
    return {"prompt": text, "max_tokens": 0, "temperature": 0.0, "echo": True, "logprobs": 0}
