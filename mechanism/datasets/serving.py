"""The simulator served as an OpenAI-compatible HTTP API on the loopback interface: a real
FastAPI app under uvicorn, in a daemon thread, so an endpoint client, the swap test and the
base-model scoring can be run against a server whose truth is known.

Each arm of the simulation is a model (``GET /v1/models``). ``POST /v1/completions`` and
``POST /v1/chat/completions`` answer as that arm's reasoner would, given the context in the
prompt (the closed form in :mod:`mechanism.datasets.served_model`, whose planted truth is
:func:`planted_swap`); the answer is drawn from a generator seeded by ``(random_state, model,
seed, prompt, choice index)``, so the same request gives the same answer (``temperature`` is
accepted and not used: the reasoner always samples, seeded). Completions return per-token
log-probabilities of the prompt from the arm's planted unigram model
(:func:`planted_logprobs`) in both shapes servers use: the legacy ``echo`` + ``logprobs``
object (``tokens``, ``token_logprobs``, ``text_offset``, ``top_logprobs``) and vLLM's
``prompt_logprobs`` (one entry per prompt token, None first, each
``{token_id: {"logprob", "rank", "decoded_token"}}``). A prompt without a known question may
still be scored; its continuation is then the unigram model's most probable token.

Faults for client tests: ``faults`` (the status codes of the first requests, 429 with
``Retry-After: 0``), ``delay_s`` (every response waits that long) and ``logprobs=False`` (both
log-probability routes refused with HTTP 400, as a server without them does).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from mechanism.core.errors import InputError, MechanismError
from mechanism.datasets.served_model import (
    NO_RETRIEVAL,
    TOKEN,
    UnigramModel,
    gold_counts,
    language_model,
    planted_logprobs,
    planted_swap,
    reasoner_probability,
    split_prompt,
    swap_policies,
    swap_split,
)
from mechanism.datasets.simulation.run import Simulation

__all__ = ["serve", "SimServer", "planted_swap", "swap_split", "swap_policies", "planted_logprobs", "NO_RETRIEVAL"]

LOOPBACK = {"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1"}
_ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError", 500: "InternalServerError"}
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0


class _RequestError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


def _error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "APIError"), "param": param,
                      "code": status}}


class SimServer:
    """A running served simulator (a context manager; :func:`serve` starts it).

    Attributes
    ----------
    url
        The API's base URL, ``http://127.0.0.1:<port>/v1``.
    port
        The port it listens on.
    requests
        Requests received so far, on every route, faults included.
    models
        The served model names (the simulation's arms).
    """

    def __init__(self, sim: Simulation, *, host: str, port: int, delay_s: float, faults: Sequence[int],
                 logprobs: bool, random_state: int) -> None:
        self.sim = sim
        self.models = list(sim.policies)
        self.delay_s = float(delay_s)
        self.logprobs = bool(logprobs)
        self.random_state = int(random_state)
        self._faults = deque(int(f) for f in faults)
        self._requests = 0
        self._lock = threading.Lock()
        self._by_text = {}
        for q in sim.world:
            self._by_text.setdefault(q.text, q)
        bind = LOOPBACK[host]
        family = socket.AF_INET6 if bind == "::1" else socket.AF_INET
        # IPPROTO_TCP named, so asyncio sets TCP_NODELAY on accepted connections (proto 0 skips it,
        # and Nagle with delayed ACKs costs ~40 ms a response)
        self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((bind, port))
        except OSError as exc:
            self._socket.close()
            raise InputError(f"cannot listen on {bind}:{port}: {exc.strerror or exc}", field="port") from None
        self.port = int(self._socket.getsockname()[1])
        self.url = f"http://{'[::1]' if bind == '::1' else bind}:{self.port}/v1"
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> SimServer:
        """Start listening; returns once the server accepts requests."""
        import uvicorn  # noqa: PLC0415 - uvicorn: optional, only when a server is started

        config = uvicorn.Config(self._app(), log_config=None, log_level="warning", access_log=False,
                                lifespan="off", timeout_graceful_shutdown=1, timeout_keep_alive=5)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name=f"serve-sim:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise MechanismError(f"the served simulator did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop the server (bounded: the thread is joined with a timeout)."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(STOP_TIMEOUT_S)
            if self._thread.is_alive():
                self._server.force_exit = True
                self._thread.join(STOP_TIMEOUT_S)
        self._socket.close()

    def __enter__(self) -> SimServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def requests(self) -> int:
        return self._requests

    def __repr__(self) -> str:
        return f"SimServer({self.url!r}, models={self.models}, requests={self._requests})"

    # -- the app -------------------------------------------------------------------------
    def _app(self) -> Any:
        from fastapi import FastAPI, Request  # noqa: PLC0415 - fastapi: optional, only when a server is started
        from fastapi.responses import JSONResponse  # noqa: PLC0415 - fastapi: as above

        app = FastAPI(title="mechanism serve-sim", openapi_url=None, docs_url=None, redoc_url=None)

        @app.middleware("http")
        async def gate(request: Request, call_next):  # every request: counted, delayed, maybe a fault
            with self._lock:
                self._requests += 1
                fault = self._faults.popleft() if self._faults else None
            if self.delay_s > 0:
                await asyncio.sleep(self.delay_s)
            if fault is not None:
                headers = {"Retry-After": "0"} if fault == 429 else None
                return JSONResponse(_error_body(fault, f"planted fault: HTTP {fault}"), status_code=fault,
                                    headers=headers)
            return await call_next(request)

        def answer(handler):
            async def route(request: Request):
                try:
                    body = await request.json()
                except ValueError:
                    body = None
                try:
                    if not isinstance(body, dict):
                        raise _RequestError(400, "the request body must be a JSON object")
                    return JSONResponse(handler(body))
                except _RequestError as exc:
                    return JSONResponse(_error_body(exc.status, exc.message, exc.param), status_code=exc.status)
            # the annotation as an object: this module's postponed annotations name a local import
            route.__annotations__ = {"request": Request}
            return route

        @app.get("/v1/models")
        async def models():
            return {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "mechanism",
                                                "root": m, "max_model_len": 1 << 20} for m in self.models]}

        app.post("/v1/completions")(answer(self._completions))
        app.post("/v1/chat/completions")(answer(self._chat))
        return app

    # -- requests ------------------------------------------------------------------------
    def _model(self, body: dict) -> str:
        model = body.get("model")
        if model not in self.sim.policies:
            raise _RequestError(404, f"The model `{model}` does not exist.", "model")
        return model

    def _rng(self, model: str, seed: Any, prompt: str, index: int) -> random.Random:
        key = json.dumps([self.random_state, model, seed, prompt, index], ensure_ascii=False)
        return random.Random(int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big"))

    def _generate(self, model: str, prompt: str, seed: Any, index: int, max_tokens: int | None,
                  stop: Sequence[str], scoring: bool) -> tuple[str, str]:
        """(the continuation, finish_reason) of one choice."""
        text, context = split_prompt(prompt)
        q = self._by_text.get(text) if text is not None else None
        if q is None:
            if not scoring:
                raise _RequestError(400, "no known question in the prompt (a line `Question: <text>` naming one "
                                         "of the simulation's questions)", "prompt")
            lm = language_model(self.sim, model)
            answer = (lm.vocab[0] if lm.vocab else " ") * (max_tokens if max_tokens is not None else 1)
        else:
            p = reasoner_probability(self.sim.policies[model], q, gold_counts(q, (context,)))
            rng = self._rng(model, seed, prompt, index)
            wrong = q.wrong_pool or ["unknown"]
            answer = q.gold[0] if rng.random() < p else wrong[rng.randrange(len(wrong))]
        finish = "stop"
        if max_tokens is not None:
            tokens = TOKEN.findall(answer)
            if len(tokens) > max_tokens:
                answer, finish = "".join(tokens[:max_tokens]), "length"
        cuts = [i for i in (answer.find(s) for s in stop if s) if i >= 0]
        if cuts:
            answer, finish = answer[:min(cuts)], "stop"
        return answer, finish

    def _options(self, body: dict, default_max: int | None) -> tuple[int | None, int, Any, list[str]]:
        try:
            max_tokens = body.get("max_tokens", body.get("max_completion_tokens", default_max))
            max_tokens = None if max_tokens is None else int(max_tokens)
            n = int(body.get("n") or 1)
        except (TypeError, ValueError):
            raise _RequestError(400, "`max_tokens` and `n` must be integers") from None
        if (max_tokens is not None and max_tokens < 0) or n < 1:
            raise _RequestError(400, "`max_tokens` must be >= 0 and `n` >= 1")
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else [str(s) for s in stop]
        return max_tokens, n, body.get("seed"), stop

    def _completions(self, body: dict) -> dict[str, Any]:
        model = self._model(body)
        prompts = body.get("prompt")
        prompts = [prompts] if isinstance(prompts, str) else prompts
        if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
            raise _RequestError(400, "`prompt` must be a string or a list of strings", "prompt")
        max_tokens, n, seed, stop = self._options(body, 16)
        echo, top, prompt_top = bool(body.get("echo")), body.get("logprobs"), body.get("prompt_logprobs")
        if (echo or prompt_top is not None) and not self.logprobs:
            what = "prompt_logprobs" if prompt_top is not None else "echo"
            raise _RequestError(400, f"this server does not return prompt log-probabilities (`{what}` is not "
                                     "supported)", what)
        lm = language_model(self.sim, model)
        choices, prompt_tokens, completion_tokens = [], 0, 0
        for i, prompt in enumerate(prompts):
            prompt_tokens += len(TOKEN.findall(prompt))
            for j in range(n):
                text, finish = self._generate(model, prompt, seed, j, max_tokens, stop,
                                              scoring=echo or prompt_top is not None)
                completion_tokens += len(TOKEN.findall(text))
                choice: dict[str, Any] = {"index": i * n + j, "text": prompt + text if echo else text,
                                          "logprobs": None, "finish_reason": finish, "stop_reason": None}
                if top is not None:
                    choice["logprobs"] = _legacy_logprobs(lm, prompt if echo else None, text, int(top or 0))
                if prompt_top is not None:
                    choice["prompt_logprobs"] = _vllm_prompt_logprobs(lm, prompt, int(prompt_top or 0))
                choices.append(choice)
        return {"id": f"cmpl-{self._requests}", "object": "text_completion", "created": int(time.time()),
                "model": model, "choices": choices, "usage": _usage(prompt_tokens, completion_tokens)}

    def _chat(self, body: dict) -> dict[str, Any]:
        model = self._model(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise _RequestError(400, "`messages` must be a list of message objects", "messages")
        users = [m for m in messages if m.get("role") == "user"]
        if not users:
            raise _RequestError(400, "`messages` holds no user message", "messages")
        prompt = _content(users[-1].get("content"))
        max_tokens, n, seed, stop = self._options(body, None)
        choices, completion_tokens = [], 0
        for j in range(n):
            text, finish = self._generate(model, prompt, seed, j, max_tokens, stop, scoring=False)
            completion_tokens += len(TOKEN.findall(text))
            choices.append({"index": j, "message": {"role": "assistant", "content": text},
                            "logprobs": None, "finish_reason": finish})
        prompt_tokens = sum(len(TOKEN.findall(_content(m.get("content")))) for m in messages)
        return {"id": f"chatcmpl-{self._requests}", "object": "chat.completion", "created": int(time.time()),
                "model": model, "choices": choices, "usage": _usage(prompt_tokens, completion_tokens)}


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: the text ones, joined
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise _RequestError(400, "a message's `content` must be a string or a list of text parts", "messages")


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def _top(lm: UnigramModel, k: int) -> dict[str, float]:
    return {t: lm.logprob(t) for t in lm.vocab[:k]}


def _legacy_logprobs(lm: UnigramModel, prompt: str | None, text: str, k: int) -> dict[str, Any]:
    """The completions API's ``logprobs`` object: the prompt's tokens (when echoed; the first
    has None) then the continuation's, offsets into the returned text."""
    tokens: list[str] = []
    offsets: list[int] = []
    lps: list[float | None] = []
    shift = 0
    if prompt is not None:
        t, o, lp = lm.score(prompt)
        tokens, offsets, lps, shift = list(t), list(o), list(lp), len(prompt)
    t, o, lp = lm.score(text, first=prompt is not None and not tokens)
    tokens += t
    offsets += [x + shift for x in o]
    lps += lp
    top = [None if v is None else {tok: v, **_top(lm, k)} for tok, v in zip(tokens, lps)]
    return {"tokens": tokens, "token_logprobs": lps, "text_offset": offsets, "top_logprobs": top}


def _vllm_prompt_logprobs(lm: UnigramModel, prompt: str, k: int) -> list[dict[str, dict] | None]:
    """vLLM's ``prompt_logprobs``: None for the first token, then per token ``{id: {"logprob",
    "rank", "decoded_token"}}`` holding the token itself and the ``k`` most probable ones."""
    tokens, _, lps = lm.score(prompt)
    out: list[dict[str, dict] | None] = []
    for tok, lp in zip(tokens, lps):
        if lp is None:
            out.append(None)
            continue
        entry = {str(lm.token_id(tok)): {"logprob": lp, "rank": lm.token_id(tok) + 1, "decoded_token": tok}}
        for rank, other in enumerate(lm.vocab[:k], start=1):
            entry.setdefault(str(rank - 1), {"logprob": lm.logprob(other), "rank": rank, "decoded_token": other})
        out.append(entry)
    return out


def serve(sim: Simulation, *, host: str = "127.0.0.1", port: int = 0, delay_s: float = 0.0,
          faults: Sequence[int] = (), logprobs: bool = True, random_state: int = 0) -> SimServer:
    """Serve ``sim``'s arms as an OpenAI-compatible API on the loopback interface.

    Parameters
    ----------
    sim
        The simulation (from :func:`mechanism.datasets.simulation.simulate`); each arm is a model.
    host
        ``"127.0.0.1"``, ``"localhost"`` or ``"::1"``; any other host is refused.
    port
        The port; 0 picks a free one (bound before the server starts, so no race).
    delay_s
        Every response waits this long first (a slow server).
    faults
        HTTP status codes returned, in order, by the first ``len(faults)`` requests (429 with
        ``Retry-After: 0``); later requests are answered normally.
    logprobs
        False: refuse ``echo`` and ``prompt_logprobs`` with HTTP 400 (a server without them).
    random_state
        Seeds the reasoner's draws (with the model, the request's seed, the prompt and the
        choice index).

    Returns
    -------
    SimServer
        Started and ready; stop it with :meth:`SimServer.stop` or a ``with`` block.
    """
    if host not in LOOPBACK:
        raise InputError(f"`host` must be a loopback address (127.0.0.1, localhost or ::1), got {host!r}",
                         field="host")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InputError(f"`port` must be an integer in [0, 65535], got {port!r}", field="port")
    if not delay_s >= 0:
        raise InputError(f"`delay_s` must be non-negative, got {delay_s}", field="delay_s")
    bad = [f for f in faults if isinstance(f, bool) or not isinstance(f, int) or not 400 <= f <= 599]
    if bad:
        raise InputError(f"`faults` must hold HTTP error codes (400-599), got {bad[0]!r}", field="faults")
    if not isinstance(sim, Simulation) or not sim.world:
        raise InputError("`sim` must be a Simulation from mechanism.datasets.simulation.simulate", field="sim")
    return SimServer(sim, host=host, port=port, delay_s=delay_s, faults=faults, logprobs=logprobs,
                     random_state=random_state).start()
