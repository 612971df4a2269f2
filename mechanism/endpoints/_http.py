"""One HTTP request through the ``openai`` client, with our own retries.

The client's own retries are off (``max_retries=0``) so that each try is counted and the final
error can say how many were made. Retried: 429, 5xx, timeouts and connection errors, after
``backoff_s * 2**i`` seconds (or the server's ``Retry-After``, capped); any other 4xx is the
caller's mistake and is not retried. Every failure ends as one :class:`EndpointError` line.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from mechanism.endpoints._base import EndpointError, EndpointStats

RETRY_AFTER_CAP_S = 30.0  # a server asking for longer is waited on for this long at most
BODY_CHARS = 200  # of a server's error body, quoted in the error line


def _tries(n: int) -> str:
    return f"{n} {'try' if n == 1 else 'tries'}"


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = None if response is None else response.headers.get("retry-after")
    try:
        return None if value is None else min(max(float(value), 0.0), RETRY_AFTER_CAP_S)
    except ValueError:  # an HTTP date: not worth parsing, the backoff applies
        return None


def _body(exc: Any) -> str:
    response = getattr(exc, "response", None)
    try:
        text = response.text if response is not None else str(exc)
    except Exception:  # noqa: BLE001 - a body that cannot be read (streamed, closed) is only left out of the message
        text = str(exc)
    return " ".join(str(text).split())[:BODY_CHARS]


def _refused(exc: BaseException) -> bool:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ConnectionRefusedError) or "refused" in str(exc).lower():
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def classify(exc: Exception, *, timeout_s: float) -> tuple[bool, str, int | None]:
    """Whether ``exc`` (from the ``openai`` client) is worth retrying, what it was (the start of the
    error line, without the tries) and the HTTP status where there was one."""
    import openai  # noqa: PLC0415 - openai: optional, only when an OpenAI-compatible endpoint is used

    if isinstance(exc, openai.APITimeoutError):
        return True, f"no answer within {round(float(timeout_s), 3)} s", None
    if isinstance(exc, openai.APIConnectionError):
        if _refused(exc):
            return True, "connection refused", None
        cause = exc.__cause__ or exc
        return True, f"cannot connect ({type(cause).__name__}: {' '.join(str(cause).split())[:BODY_CHARS]})", None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return status == 429 or status >= 500, f"HTTP {status}", status
    return False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:BODY_CHARS]}", None


def send(call: Callable[[], Any], *, stats: EndpointStats, max_retries: int, backoff_s: float, timeout_s: float,
         base_url: str, model: str) -> dict[str, Any]:
    """The JSON answer of ``call()`` (a ``with_raw_response`` call of the client), retried as the
    module says; counts requests, retries, failures and the ``usage`` tokens in ``stats``."""
    import openai  # noqa: PLC0415 - openai: optional, only when an OpenAI-compatible endpoint is used

    tries = 0
    while True:
        tries += 1
        stats.add(requests=1)
        try:
            raw = call()
            break
        except openai.OpenAIError as exc:
            retry, what, status = classify(exc, timeout_s=timeout_s)
            if retry and tries <= max_retries:
                stats.add(retries=1)
                wait = _retry_after(exc)
                time.sleep(backoff_s * 2 ** (tries - 1) if wait is None else wait)
                continue
            stats.add(failed=1)
            if status is not None:
                what = f"{what} after {_tries(tries)}: {_body(exc)}" if retry else f"{what}: {_body(exc)}"
            else:
                what = f"{what} after {_tries(tries)}"
            raise EndpointError(what, base_url=base_url, model=model, status=status) from None
    try:
        answer = json.loads(raw.text)
    except ValueError:
        stats.add(failed=1)
        raise EndpointError(f"answered with something that is not JSON: {' '.join(raw.text.split())[:BODY_CHARS]}",
                            base_url=base_url, model=model) from None
    if not isinstance(answer, dict):
        stats.add(failed=1)
        raise EndpointError("answered with JSON that is not an object", base_url=base_url, model=model)
    usage = answer.get("usage")
    if isinstance(usage, dict):
        stats.add(**{k: usage[k] for k in ("prompt_tokens", "completion_tokens")
                     if isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)})
    return answer
