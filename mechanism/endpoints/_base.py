"""The one endpoint interface: what the swap test and base-model scoring program against.

An :class:`Endpoint` is a model reached for three things: completions, chat completions and
the per-token log-probabilities of a given text (no generation). Its :class:`EndpointStats`
count what it cost (requests, cache hits, retries, failures, tokens), and every failure is one
:class:`EndpointError` line naming the endpoint and the model.
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import NamedTuple

from mechanism.core.errors import MechanismError, one_line


class TokenLogprobs(NamedTuple):
    """The log-probabilities of one text's tokens.

    Attributes
    ----------
    text
        The scored text.
    tokens
        The model's tokens, in order, covering the scored text.
    offsets
        The character offset in ``text`` where each token starts.
    logprobs
        The natural-log probability of each token given the text before it; ``None`` for the
        first token of the model's input (it has no context). A token the model put before the
        text (a beginning-of-sequence token) is not listed, so the text's first token then has
        a number: its probability given that token.
    """

    text: str
    tokens: tuple[str, ...]
    offsets: tuple[int, ...]
    logprobs: tuple[float | None, ...]


_COUNTERS = ("requests", "cached", "retries", "failed", "prompt_tokens", "completion_tokens")


@dataclass
class EndpointStats:
    """What an endpoint's work cost, counted as it runs (safe to update from several threads).

    Attributes
    ----------
    requests
        HTTP requests sent, each retry counted (a local model: its forward passes).
    cached
        Answers served from the cache without a request.
    retries
        Requests sent again after a retryable failure.
    failed
        Requests that ended in an error after their retries.
    prompt_tokens, completion_tokens
        Token counts from the server's ``usage`` where it gives one (requests sent only).
    """

    requests: int = 0
    cached: int = 0
    retries: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        """Add ``counts`` (counter name -> amount) under the lock."""
        unknown = set(counts) - set(_COUNTERS)
        if unknown:
            raise ValueError(f"unknown counter {sorted(unknown)[0]!r}")
        with self._lock:
            for name, amount in counts.items():
                setattr(self, name, getattr(self, name) + int(amount))

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name in _COUNTERS}


class EndpointError(MechanismError):
    """A request an endpoint could not answer, on one line:
    ``endpoint <base_url> (model `name`): <what>``.

    Parameters
    ----------
    what
        What went wrong (after how many tries, the server's own words, cut short).
    base_url
        Where the endpoint is (a URL, or a local model's path).
    model
        The model's name.
    status
        The HTTP status of the server's last answer, when it gave one.
    """

    def __init__(self, what: str, *, base_url: str, model: str, status: int | None = None) -> None:
        self.what = what
        self.base_url = base_url
        self.model = model
        self.status = status
        super().__init__(one_line(f"endpoint {one_line(base_url, limit=300)} (model `{one_line(model, limit=200)}`): "
                                  f"{what}"))


Message = Mapping[str, str]


class Endpoint(ABC):
    """A model reached for completions, chat completions and prompt log-probabilities.

    Attributes
    ----------
    model
        The served model's name (vLLM: its ``--served-model-name``).
    stats
        What the endpoint's work has cost so far.
    """

    model: str
    stats: EndpointStats

    @abstractmethod
    def complete(self, prompts: Sequence[str], *, max_tokens: int = 64, temperature: float = 0.0, n: int = 1,
                 seed: int | None = 0, stop: Sequence[str] | None = None) -> list[list[str]]:
        """Per prompt, its ``n`` completion texts (in the prompts' order).

        Parameters
        ----------
        prompts
            The prompts, each completed independently.
        max_tokens
            The most tokens a completion may have.
        temperature
            0 is greedy; above 0 samples.
        n
            Completions per prompt.
        seed
            The sampling seed, so the same request gives the same answer.
        stop
            Strings that end a completion (not included in it).
        """

    @abstractmethod
    def chat(self, conversations: Sequence[Sequence[Message]], *, max_tokens: int = 64, temperature: float = 0.0,
             n: int = 1, seed: int | None = 0, stop: Sequence[str] | None = None) -> list[list[str]]:
        """Per conversation (a list of ``{"role", "content"}`` messages), its ``n`` reply texts;
        options as :meth:`complete`."""

    @abstractmethod
    def logprobs(self, texts: Sequence[str]) -> list[TokenLogprobs]:
        """Per text, the log-probability of each of its tokens given the text before it (no
        generation)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"
