"""Models reached through one interface, for the causal tests: the swap test and base-model
perplexity.

:class:`Endpoint` is what the analyses program against: completions, chat completions and the
per-token log-probabilities of a given text, with :class:`EndpointStats` counting the cost and
:class:`EndpointError` saying on one line what failed. Two kinds:
:class:`OpenAICompatible` (vLLM, SGLang, llama.cpp, TGI, OpenAI; bounded, retried, cached,
counted) and :class:`Transformers` (a local Hugging Face model). Importing this package imports
neither ``openai`` nor ``torch``: each class imports its library when it is made.
"""
from __future__ import annotations

from mechanism.endpoints._base import Endpoint, EndpointError, EndpointStats, TokenLogprobs
from mechanism.endpoints.local import Transformers
from mechanism.endpoints.openai_compatible import OpenAICompatible

__all__ = ["Endpoint", "EndpointError", "EndpointStats", "OpenAICompatible", "TokenLogprobs", "Transformers"]
