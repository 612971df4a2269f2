"""A REST-API operations agent world: a store's internal admin API driven by generic HTTP tools.

A support or billing operator asks about the company's B2B web store ("Why was invoice
INV-2291 charged twice?", "Refund the duplicate charge on INV-2291", "Is ticket T-40213
overdue?", "Cancel order ORD-88123"). Three resource families (invoices, support tickets,
orders) and three kinds of task: *lookup* (read the resource), *change* (write to it: a refund,
a ticket update, a cancellation or new address) and *diagnose* (read the resource and the
evidence below it: an invoice's charges, a ticket's or an order's events). The agent has only
GENERIC request tools in OpenAI ``tool_calls`` format: ``http_request(method, url, body)``,
and ``http_get(url)``, which some episodes (30 %) use for their GETs instead. The URL and the
method say what is read or changed. A response is HTTP tooling output: a status line
(``HTTP/1.1 200 OK``, ``HTTP/2 200`` or ``200 OK``), sometimes headers, then the JSON body.
The final assistant message without a tool call is the answer.

Seven planted strategies; call counts overlap (0, 1-4, 2-5, 1-5, 2-8, 3-7, 1-4 calls with the
optional steps, one more for each failure):

=================  ========================================================================
``no_call``        answer without calling anything (a guess, "done" without doing it, or
                   directions to the admin console)
``direct``         straight to the resource by id: ``GET /invoices/{id}``; a change writes at
                   once ([the resource read first], 50 %); a diagnosis adds the evidence GET
``search``         a search endpoint or a filtered collection query (``/search?q=...``,
                   ``/invoices?number=...``, ``?customer_id=..&status=..``), then GET the hit
``list_filter``    GET the whole collection at once (``?limit=500``, no filter) and filter it
                   client-side; [GET the found item in full] (40 %)
``paginate``       page through the collection, 2-5 GETs (``?page=N&per_page=25`` or a
                   ``cursor``); the resource is on the last page
``walk``           walk related resources: the customer (by id or ``?email=``) > the
                   customer's collection (for an invoice, half the time via its orders:
                   ``/customers/{c}/orders`` > ``/orders/{o}/invoices``) > the resource
``batch``          one ``POST /batch`` holding the reads (the resource, its customer, the
                   evidence); a change puts the write in the batch (50 %) or sends it after
=================  ========================================================================

After the strategy's reads, a diagnosis GETs the evidence (``/invoices/{id}/charges``,
``/tickets/{id}/events``, ``/orders/{id}/events``) and a change sends its write (``POST
/invoices/{id}/refunds``, ``PATCH /tickets/{id}``, ``POST /orders/{id}/cancel``, ``PATCH
/orders/{id}``), in every strategy but ``no_call`` (``batch`` has them inside its batch).

``[...]`` marks an OPTIONAL step taken at a fixed rate whatever the arm and the task; two are
shared by every strategy that calls a tool: a first ``GET /me`` or ``GET /openapi.json``
(25 %), and a final confirming GET of the resource (25 %).

Failures are execution, not strategy: every call fails with probability 0.15 and is followed
at once by a corrected call of the SAME tool: a retry of the same request after ``429 Too Many
Requests`` / ``500`` / ``502`` / ``503``; a fixed URL after ``404 Not Found`` (a mistyped path
or id); a fixed query after ``400 Bad Request`` on an unknown parameter; a fixed body after
``400`` / ``422`` (a missing field, a wrong value; for a batch, a malformed body); a fresh
idempotency key after ``409 Conflict``; the right method after ``405 Method Not Allowed``.
Errors carry ``{"error": {"code": ..., "message": ...}}``, or come back as ``200 OK`` with
``{"status": "error", ...}``. Ids, paths, query strings, bodies, the response style and the
assistant's words vary inside every strategy; the strategy is drawn independently of the task.
The ``rl`` arm differs from ``base`` only in its mixture; success depends only on the strategy
(random within it).

The truth carries, beside ``strategy``, ``n_calls`` (tool calls made) and ``n_failures``
(execution failures among them).

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import as_generator
from mechanism.datasets.worlds._base import World, chat_world, name, pick, word

STRATEGIES = ("no_call", "direct", "search", "list_filter", "paginate", "walk", "batch")
KINDS = ("lookup", "change", "diagnose")
FAMILIES = ("invoice", "ticket", "order")
ARMS = {
    "base": {"no_call": 0.08, "direct": 0.22, "search": 0.18, "list_filter": 0.15, "paginate": 0.12,
             "walk": 0.15, "batch": 0.10},
    "rl": {"no_call": 0.05, "direct": 0.12, "search": 0.28, "list_filter": 0.06, "paginate": 0.07,
           "walk": 0.22, "batch": 0.20},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"no_call": 0.05, "direct": 0.6, "search": 0.75, "list_filter": 0.55, "paginate": 0.5,
            "walk": 0.7, "batch": 0.65}
_P_FAIL = 0.15           # a call fails; the same tool is called again at once, corrected
_P_GET_TOOL = 0.3        # the episode does its GETs with http_get(url)
_P_PREFLIGHT = 0.25      # optional: GET /me or /openapi.json first
_P_CONFIRM = 0.25        # optional: a final confirming GET of the resource
_P_DIRECT_READ = 0.5     # direct, change: the resource read before the write
_P_LIST_DETAIL = 0.4     # list_filter: the found item fetched in full
_P_WALK_ORDERS = 0.5     # walk, invoice: via the customer's orders
_P_BATCH_WRITE = 0.5     # batch, change: the write inside the batch
_REASON = {200: "OK", 201: "Created", 202: "Accepted", 400: "Bad Request", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 422: "Unprocessable Entity", 429: "Too Many Requests",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}
_COLL = {"invoice": "/invoices", "ticket": "/tickets", "order": "/orders"}
_EVIDENCE = {"invoice": "charges", "ticket": "events", "order": "events"}
_SUFFIX = ("Ltd", "GmbH", "Inc", "Labs", "& Co", "BV", "Oy")
_SUBJECTS = ("Cannot export CSV", "SSO login loop", "Webhook not firing", "Invoice PDF blank", "API key rotated")
_CITIES = ("Bergen", "Porto", "Leeds", "Tartu", "Ghent", "Basel", "Lyon")
_SAY = {
    "GET": ("Fetching {u}.", "Let me GET {u}.", "Reading {u}.", "I'll query {u}.", "", "Calling GET {u}."),
    "write": ("Sending {m} {u}.", "Now the change: {m} {u}.", "Applying it with {m} {u}.", "Making the change.", ""),
    "search": ("Searching for it: {u}.", "Let me use the search endpoint.", "Querying with filters: {u}.", ""),
    "list": ("I'll pull the whole list and filter it myself.", "Fetching all of them: {u}.",
             "Listing everything, then I'll look for it.", ""),
    "page": ("Next page: {u}.", "Not on this page; continuing.", "Paging on: {u}.", "Fetching page {p}.", ""),
    "page1": ("I'll page through {u}.", "Let me go through the list page by page.", "Page 1: {u}.", ""),
    "walk": ("Starting from the customer: {u}.", "Following the link to {u}.", "Going one level down: {u}.", ""),
    "batch": ("I'll fetch these together in one batch.", "Sending a batch request.", "Batching the calls.", ""),
    "pre": ("First, let me check what this API offers.", "Checking my credentials and scopes first.", ""),
    "confirm": ("Let me double-check the current state.", "Confirming with a fresh GET of {u}.", ""),
}
_FIX: dict[Any, tuple[str, ...]] = {
    429: ("Rate limited; waiting a moment and retrying.", "429. Trying again.", ""),
    "retry": ("Transient error; retrying.", "Server error, retrying the same request.", "Upstream hiccup; again."),
    "path": ("Typo in the path; fixing the URL.", "Wrong URL, correcting it.", "404: I mistyped it. Again:"),
    "query": ("Wrong parameter name; fixing the query.", "Let me correct the query string.", ""),
    "body": ("The body was wrong; fixing it.", "Correcting the request body.", "Validation error; resending."),
    "method": ("Wrong method; using {m}.", "That endpoint wants {m}.", ""),
    "conflict": ("Stale idempotency key; sending with a fresh one.", "Conflict; retrying with a new key.", ""),
}


def _hex(rng: np.random.Generator, n: int) -> str:
    return f"{int(rng.integers(16 ** n)):0{n}x}"


def _date(rng: np.random.Generator) -> str:
    return f"2024-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}"


def _key(rng: np.random.Generator, family: str) -> str:
    if family == "invoice":
        return f"INV-{int(rng.integers(1000, 9999))}"
    return f"{'T' if family == 'ticket' else 'ORD'}-{int(rng.integers(10000, 99999))}"


def _mangle(rng: np.random.Generator, s: str) -> str:
    """``s`` with one character dropped, doubled or swapped with the next (never ``s`` itself)."""
    k, how = int(rng.integers(len(s))), int(rng.integers(3))
    if how == 0 and len(s) > 2:
        out = s[:k] + s[k + 1:]
    elif how == 1 or k == len(s) - 1:
        out = s[:k] + s[k] + s[k:]
    else:
        out = s[:k] + s[k + 1] + s[k] + s[k + 2:]
    return out if out != s else s + "x"


class _Api:
    """One transcript; every request goes through :meth:`call` (failures retried by the same tool)."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.t = rng, task
        self.root = (task["host"] if rng.random() < 0.5 else "") + "/api/v2"
        self.get_tool = "http_get" if rng.random() < _P_GET_TOOL else "http_request"
        self.proto = pick(rng, ("HTTP/1.1", "HTTP/1.1", "HTTP/2", ""))
        self.headers = rng.random() < 0.4
        self.indent = 2 if rng.random() < 0.3 else None
        self.messages: list[dict] = [
            {"role": "system", "content": pick(rng, (
                f"You are an operations assistant for {task['shop']}. Use the HTTP tools to call the internal "
                f"admin API at {task['host']}/api/v2.",
                f"You help {task['shop']}'s billing and support staff. The admin REST API is at "
                f"{task['host']}/api/v2; call it with http_request or http_get.",
                "You are an agent with access to the company's internal REST API (base path /api/v2)."))},
            {"role": "user", "content": task["text"]}]
        self.n = self.failures = 0

    def response(self, code: int, body: Any, extra: tuple[str, ...] = ()) -> str:
        line = f"HTTP/2 {code}" if self.proto == "HTTP/2" else f"{self.proto} {code} {_REASON[code]}".strip()
        head = [line, *(("content-type: application/json", f"x-request-id: req_{_hex(self.rng, 10)}")
                        if self.headers else ()), *extra]
        return "\n".join(head) + "\n\n" + json.dumps(body, indent=self.indent)

    def _args(self, tool: str, method: str, url: str, body: Any) -> dict:
        if tool == "http_get":
            return {"url": url}
        return {"method": method, "url": url, **({"body": body} if body is not None else {})}

    def _turn(self, tool: str, args: dict, result: str, said: str) -> None:
        self.n += 1
        cid = f"call_{_hex(self.rng, 6)}{self.n:02d}"
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})

    def call(self, method: str, path: str, result: Any, *, body: Any = None, code: int = 200,
             say: str = "GET", p: int = 1) -> None:
        tool = self.get_tool if method == "GET" else "http_request"
        url = self.root + path
        said = pick(self.rng, _SAY[say]).format(u=url, m=method, p=p)
        if self.rng.random() < _P_FAIL:
            said = self._fail(tool, method, url, body, said)
        self._turn(tool, self._args(tool, method, url, body), self.response(code, result), said)

    def _fail(self, tool: str, method: str, url: str, body: Any, said: str) -> str:
        """A failed version of the call (counted); returns what is said before the corrected one."""
        rng = self.rng
        kinds = ["retry", "retry", "path"] + (["query"] if "?" in url else [])
        if body is not None:
            kinds += ["body", "body"] + (["conflict"] if isinstance(body, dict) and "idempotency_key" in body else [])
            kinds += ["method"] if tool == "http_request" and not url.endswith("/batch") else []
        kind = pick(rng, kinds)
        bad_method, bad_url, bad_body, extra = method, url, body, ()
        soft = rng.random() < 0.25
        if kind == "retry":
            code = int(pick(rng, ("429", "429", "500", "502", "503")))
            err = {429: ("rate_limited", f"rate limit of {pick(rng, ('10', '20', '5'))} requests/s exceeded"),
                   500: ("internal_error", "unexpected error, please retry"),
                   502: ("bad_gateway", f"upstream {pick(rng, ('billing-svc', 'orders-svc', 'helpdesk'))} unavailable"),
                   503: ("unavailable", "service temporarily unavailable")}[code]
            extra = (f"retry-after: {int(rng.integers(1, 6))}",) if code == 429 else ()
            soft = False
        elif kind == "path":
            path, _, query = url.partition("?")
            head, _, rest = path.partition("/api/v2/")
            segs = rest.split("/")
            j = int(rng.integers(len(segs)))
            segs[j] = _mangle(rng, segs[j])
            bad_url = f"{head}/api/v2/" + "/".join(segs) + (f"?{query}" if query else "")
            code, err = 404, ("not_found", pick(rng, (f"no route for {method} /" + "/".join(segs),
                                                      f"resource '{segs[j]}' does not exist")))
            soft = False
        elif kind == "query":
            path, _, query = url.partition("?")
            params = query.split("&")
            j = int(rng.integers(len(params)))
            k, _, v = params[j].partition("=")
            bad = _mangle(rng, k) if len(k) > 1 else "query"
            params[j] = f"{bad}={v}"
            bad_url = path + "?" + "&".join(params)
            code, err = 400, ("invalid_parameter", f"unknown query parameter '{bad}'")
        elif kind == "body" and isinstance(body, dict) and "requests" in body:
            bad_body = {"calls": body["requests"]}
            code, err = 400, ("invalid_batch", "body must contain a 'requests' array")
        elif kind == "body":
            k = next(iter(body))
            v = body[k]
            if rng.random() < 0.5 and len(body) > 1:
                bad_body = {x: y for x, y in body.items() if x != k}
                code, err = 400, ("missing_field", f"'{k}' is required")
            else:
                if isinstance(v, float):
                    wrong: Any = f"{v:.2f}".replace(".", ",")  # a decimal comma
                elif isinstance(v, str):
                    wrong = v.title() if v.title() != v else f"{v}_"
                else:
                    wrong = ", ".join(map(str, v.values()))  # an address as one string
                bad_body = {**body, k: wrong}
                code, err = 422, ("invalid_value", f"invalid value for '{k}': {json.dumps(wrong)}")
        elif kind == "conflict":
            bad_body = {**body, "idempotency_key": f"idem-{_hex(rng, 8)}"}
            code, err = 409, ("idempotency_conflict", "this idempotency key was already used with another request")
            soft = False
        else:
            bad_method = "PUT" if method == "PATCH" else pick(rng, ("PUT", "PATCH"))
            code, err = 405, ("method_not_allowed", f"{bad_method} not allowed here; allowed: GET, {method}")
            soft = False
        text = (self.response(200, {"status": "error", "code": err[0], "message": err[1]}) if soft
                else self.response(code, {"error": {"code": err[0], "message": err[1]}}, extra))
        self._turn(tool, self._args(tool, bad_method, bad_url, bad_body), text, said)
        self.failures += 1
        return pick(rng, _FIX[429 if code == 429 else kind]).format(m=method)

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _row(rng: np.random.Generator, t: dict, key: str | None = None) -> dict:
    """A collection row: the task's resource (``key`` is its id) or another one."""
    fam, mine = t["family"], key is not None
    key = key or _key(rng, fam)
    cid = t["cid"] if mine else int(rng.integers(1000, 9999))
    if fam == "invoice":
        return {"id": key, "customer_id": cid, "status": t["status"] if mine else pick(rng, ("paid", "open", "void")),
                "total": t["amount"] if mine else round(float(rng.uniform(20, 3000)), 2)}
    if fam == "ticket":
        return {"id": key, "customer_id": cid, "subject": t["subject"] if mine else pick(rng, _SUBJECTS),
                "status": t["status"] if mine else pick(rng, ("open", "pending", "solved"))}
    return {"id": key, "customer_id": cid, "status": t["status"] if mine else pick(rng, ("shipped", "delivered"))}


def _rows(rng: np.random.Generator, t: dict, n: int, with_target: bool) -> list[dict]:
    rows = [_row(rng, t) for _ in range(n)]
    if with_target:
        rows.insert(int(rng.integers(n + 1)), _row(rng, t, t["key"]))
    return rows


def _item(t: dict, changed: bool = False) -> dict:
    """The task's resource, before or after (``changed``) the change a change task asks for."""
    fam, change = t["family"], changed and t["kind"] == "change"
    if fam == "invoice":
        return {"id": t["key"], "customer_id": t["cid"], "order_id": t["oid"], "status": t["status"],
                "total": t["amount"], "currency": t["cur"], "amount_paid": t["paid"], "due_at": t["due"],
                **({"amount_refunded": t["amount"]} if change else {})}
    if fam == "ticket":
        closed, moved = change and t["action"] == 0, change and t["action"] == 1
        return {"id": t["key"], "customer_id": t["cid"], "subject": t["subject"],
                "status": "closed" if closed else t["status"], "priority": "high" if moved else t["priority"],
                "assignee": {"name": t["new_agent"] if moved else t["agent"], "active": moved or t["cause"] != 0},
                "due_at": t["due"], "sla": {"breached": t["overdue"]}}
    status = "cancelling" if change and t["action"] == 0 else t["status"]
    address = t["new"] if change and t["action"] == 1 else t["old"]
    return {"id": t["key"], "customer_id": t["cid"], "status": status, "placed_at": t["due"],
            "total": t["amount"], "shipping": {"carrier": t["carrier"], "tracking": None, "address": address}}


def _evidence(t: dict) -> dict:
    fam, c = t["family"], t["cause"]
    if fam == "invoice":
        first = {"id": t["ch"][0], "amount": t["amount"], "status": "succeeded", "created_at": f"{t['due']}T10:02:11Z",
                 "source": "checkout" if c == 0 else "renewal"}
        second = {"id": t["ch"][1], "amount": t["amount"], "status": "succeeded",
                  "created_at": f"{t['due']}T10:02:41Z" if c == 0 else f"{t['due']}T15:40:03Z",
                  "source": "checkout_retry" if c == 0 else "portal_pay_now", "idempotency_key": None}
        return {"data": [first, second], "total": 2}
    if fam == "ticket":
        ev = [{"type": "created"}, {"type": "assigned", "to": t["agent"]},
              {"type": "assignee_deactivated"} if c == 0 else {"type": "status_changed", "to": "waiting_on_customer"},
              {"type": "sla_breached"}]
        return {"data": ev}
    ev = [{"type": "placed"}, {"type": "payment_authorized"},
          {"type": "fraud_review", "result": "hold", "reason": "billing/shipping address mismatch"} if c == 0
          else {"type": "capture_failed", "reason": "card_declined", "retry_scheduled": False}]
    return {"data": ev}


def _write(rng: np.random.Generator, t: dict) -> tuple[str, str, dict, int, dict]:
    """The change a task asks for: method, path, body, status code, response body."""
    item, key = f"{_COLL[t['family']]}/{t['key']}", ({"idempotency_key": f"idem-{_hex(rng, 8)}"}
                                                       if rng.random() < 0.5 else {})
    if t["family"] == "invoice":
        body = {"amount": t["amount"], "reason": pick(rng, ("duplicate", "duplicate_charge")), **key}
        return "POST", f"{item}/refunds", body, 201, {"id": t["refund"], "invoice_id": t["key"],
                                                      "amount": t["amount"], "status": "pending"}
    if t["family"] == "ticket":
        body = ({"status": "closed", "resolution": pick(rng, ("fixed", "confirmed by customer"))}
                if t["action"] == 0 else {"assignee": t["new_agent"], "priority": "high"})
        return "PATCH", item, {**body, **key}, 200, _item(t, changed=True)
    if t["action"] == 0:
        return "POST", f"{item}/cancel", {"reason": pick(rng, ("customer_request", "requested_by_customer")), **key}, \
            202, {"id": t["key"], "status": "cancelling"}
    addr = {"line1": t["new"].split(", ")[0], "city": t["new"].split(", ")[1]}
    return "PATCH", item, {"shipping_address": addr, **key}, 200, _item(t, changed=True)


def _answer(rng: np.random.Generator, t: dict, did: bool) -> str:
    fam, kind, k = t["family"], t["kind"], t["key"]
    if not did:
        return pick(rng, {"lookup": (f"{k} is probably still open.", "I can't check that from here; please look "
                                     "it up in the admin console.", f"As far as I know {k} is fine."),
                          "change": ("Done.", f"I've taken care of {k}.", "Please do that in the admin console."),
                          "diagnose": ("Most likely a glitch at the payment gateway or a sync delay.",
                                       "I don't know without looking; check the logs.", "Probably a retry.")}[kind])
    if kind == "lookup":
        return pick(rng, {"invoice": (f"Invoice {k} is {t['status']}: {t['amount']} {t['cur']}, due {t['due']}.",
                                      f"{k}: {t['status']}, {t['amount']} {t['cur']}."),
                          "ticket": (f"{k} is {t['status']}, assigned to {t['agent']}, due {t['due']}"
                                     f"{' and overdue' if t['overdue'] else ''}.", f"{t['agent']} has {k}."),
                          "order": (f"Order {k} is {t['status']} (carrier {t['carrier']}).",
                                    f"{k} has not shipped yet; status {t['status']}.")}[fam])
    if kind == "diagnose":
        cause = {"invoice": ("the first charge timed out at the gateway and checkout retried without an "
                             "idempotency key, so a second charge went through 30 s later",
                             "the renewal charged the card and the customer also clicked 'Pay now' in the portal"),
                 "ticket": (f"it was assigned to {t['agent']}, whose account was deactivated, so nobody picked it up",
                            "it sat in 'waiting on customer', which does not pause the SLA clock in this queue"),
                 "order": ("it is on a fraud-review hold: billing and shipping addresses do not match",
                           "the payment capture failed (card declined) and no retry is scheduled")}[fam][t["cause"]]
        return pick(rng, (f"{k}: {cause}.", f"The cause: {cause}.", f"I checked {k}. In short, {cause}."))
    done = {"invoice": f"refunded {t['amount']} {t['cur']} on {k} (refund {t['refund']}, pending)",
            "ticket": (f"closed {k}", f"reassigned {k} to {t['new_agent']} with high priority")[t["action"]],
            "order": (f"order {k} is being cancelled", f"order {k} now ships to {t['new']}")[t["action"]]}[fam]
    return pick(rng, (f"Done: {done}.", f"I've {done}." if not done.startswith("order") else f"Done, {done}.",
                      done[0].upper() + done[1:] + "."))


def _episode(rng: np.random.Generator, strategy: str, t: dict) -> tuple[list[dict], tuple[int, int]]:
    api = _Api(rng, t)
    if strategy == "no_call":
        api.answer(_answer(rng, t, did=False))
        return api.messages, (0, 0)
    fam, key, cid = t["family"], t["key"], t["cid"]
    coll = _COLL[fam]
    item, evidence = f"{coll}/{key}", f"{coll}/{key}/{_EVIDENCE[fam]}"
    if rng.random() < _P_PREFLIGHT:
        if rng.random() < 0.5:
            api.call("GET", "/me", {"id": f"svc_{word(rng)}", "org": t["shop"],
                                    "scopes": [f"{f}s:{a}" for f in FAMILIES for a in ("read", "write")]}, say="pre")
        else:
            api.call("GET", "/openapi.json", {"openapi": "3.0.3", "info": {"title": f"{t['shop']} Admin API",
                                                                           "version": "2.4.1"},
                                              "paths": [c + s for c in _COLL.values() for s in ("", "/{id}")] +
                                              ["/customers/{id}", "/search", "/batch"]}, say="pre")
    need_evidence, need_write = t["kind"] == "diagnose", t["kind"] == "change"
    if strategy == "direct":
        if t["kind"] != "change" or rng.random() < _P_DIRECT_READ:
            api.call("GET", item, _item(t))
    elif strategy == "search":
        q = pick(rng, (f"/search?q={key}&type={fam}", f"/search?q={key}", f"{coll}?number={key}",
                       f"{coll}?customer_id={cid}&status={t['status']}", f"/search?q={t['slug']}&type={fam}"))
        hits = ({"results": [{"type": fam, "id": r["id"], "href": f"{api.root}{coll}/{r['id']}"}
                             for r in _rows(rng, t, int(rng.integers(0, 3)), True)]} if q.startswith("/search")
                else {"data": _rows(rng, t, int(rng.integers(0, 3)), True)})
        api.call("GET", q, hits, say="search")
        api.call("GET", item, _item(t))
    elif strategy == "list_filter":
        q = pick(rng, (f"{coll}?limit={pick(rng, ('500', '1000'))}", coll, f"{coll}?limit=500&include=customer",
                       f"{coll}?per_page=500&fields=id,status,customer_id"))
        api.call("GET", q, {"data": _rows(rng, t, int(rng.integers(4, 9)), True),
                            "total": int(rng.integers(150, 900)), "has_more": False}, say="list")
        if rng.random() < _P_LIST_DETAIL:
            api.call("GET", item, _item(t))
    elif strategy == "paginate":
        k, per = int(rng.integers(2, 6)), int(pick(rng, ("20", "25", "50")))
        cursor = rng.random() < 0.4
        sort = pick(rng, ("", "", "&sort=-created_at", "&sort=id"))
        nxt = ""
        for p in range(1, k + 1):
            q = (f"{coll}?limit={per}{sort}" + (f"&cursor={nxt}" if nxt else "") if cursor
                 else f"{coll}?page={p}&per_page={per}{sort}")
            nxt = _hex(rng, 12) if p < k else ""
            body = {"data": _rows(rng, t, 3, p == k), "per_page": per, "total": per * k + int(rng.integers(0, per)),
                    **({"next_cursor": nxt or None} if cursor else {"page": p})}
            api.call("GET", q, body, say="page1" if p == 1 else "page", p=p)
    elif strategy == "walk":
        first = pick(rng, (f"/customers/{cid}", f"/customers?email={t['email']}", f"/customers?name={t['slug']}"))
        api.call("GET", first, {"id": cid, "name": t["customer"], "email": t["email"]}, say="walk")
        if fam == "invoice" and rng.random() < _P_WALK_ORDERS:
            api.call("GET", f"/customers/{cid}/orders", {"data": [{"id": t["oid"], "status": "delivered"}]
                                                          + [{"id": _key(rng, "order"), "status": "delivered"}]},
                     say="walk")
            api.call("GET", f"/orders/{t['oid']}/invoices", {"data": [_row(rng, t, key)]}, say="walk")
        else:
            sub = f"/customers/{cid}{coll}" + pick(rng, ("", "", f"?status={t['status']}"))
            api.call("GET", sub, {"data": _rows(rng, t, int(rng.integers(1, 4)), True)}, say="walk")
        api.call("GET", item, _item(t), say="walk")
    elif strategy == "batch":
        reqs = [("GET", item, None, 200, _item(t)),
                ("GET", f"/customers/{cid}", None, 200, {"id": cid, "name": t["customer"]})]
        if need_evidence:
            reqs.append(("GET", evidence, None, 200, _evidence(t)))
            need_evidence = False
        if need_write and rng.random() < _P_BATCH_WRITE:
            reqs.append(_write(rng, t))
            need_write = False
        if rng.random() < 0.5:  # the order of the two reads varies
            reqs[0], reqs[1] = reqs[1], reqs[0]
        body = {"requests": [{"method": m, "url": f"{api.root}{u}", **({"body": b} if b else {})}
                             for m, u, b, _, _ in reqs]}
        api.call("POST", "/batch", {"responses": [{"status": c, "body": r} for _, _, _, c, r in reqs]},
                 body=body, say="batch")
    if need_evidence:
        api.call("GET", evidence, _evidence(t))
    if need_write:
        m, path, body, code, resp = _write(rng, t)
        api.call(m, path, resp, body=body, code=code, say="write")
    if rng.random() < _P_CONFIRM:
        api.call("GET", item, _item(t, changed=True), say="confirm")
    api.answer(_answer(rng, t, did=True))
    return api.messages, (api.n, api.failures)


def _task(rng: np.random.Generator) -> dict:
    fam, kind = pick(rng, FAMILIES), pick(rng, KINDS)
    firm = f"{name(rng)} {pick(rng, _SUFFIX)}"
    t: dict = {"family": fam, "kind": kind, "key": _key(rng, fam), "cid": int(rng.integers(1000, 9999)),
               "customer": firm, "slug": firm.split()[0].lower(), "cause": int(rng.integers(2)),
               "action": int(rng.integers(2)), "due": _date(rng), "amount": round(float(rng.uniform(20, 3000)), 2),
               "shop": f"{name(rng)}{pick(rng, ('Supply', 'Store', 'Parts', 'Direct'))}"}
    t["host"] = pick(rng, (f"https://admin.{t['shop'].lower()}.internal", "http://api.internal:8080",
                           f"https://{word(rng)}.corp.local"))
    t["email"] = f"billing@{t['slug']}.{pick(rng, ('com', 'io', 'de', 'fi'))}"
    t.update(oid=_key(rng, "order"), cur=pick(rng, ("EUR", "USD", "GBP")), ch=[f"ch_{_hex(rng, 10)}" for _ in "ab"],
             refund=f"re_{_hex(rng, 10)}", subject=pick(rng, _SUBJECTS), agent=f"{name(rng)} {name(rng)}",
             new_agent=f"{word(rng)}@support.internal", priority=pick(rng, ("low", "normal", "high")),
             overdue=bool(kind == "diagnose" or rng.random() < 0.5), carrier=pick(rng, ("DHL", "UPS", "PostNord")),
             old=f"{int(rng.integers(1, 200))} {name(rng)} Street, {pick(rng, _CITIES)}",
             new=f"{int(rng.integers(1, 200))} {name(rng)} Road, {pick(rng, _CITIES)}")
    t["status"] = {"invoice": pick(rng, ("paid", "open", "past_due")) if kind == "lookup" else "paid",
                   "ticket": pick(rng, ("open", "pending")),
                   "order": "processing"}[fam]
    t["paid"] = round(t["amount"] * (2 if fam == "invoice" and kind != "lookup" else 1), 2)
    texts = {
        ("invoice", "lookup"): ("What's the status of invoice {key} for {customer}?", "Is {key} paid yet?"),
        ("invoice", "change"): ("Refund the duplicate charge on invoice {key}.",
                                "{customer} was billed twice for {key}; please refund one charge."),
        ("invoice", "diagnose"): ("Why was invoice {key} charged twice?",
                                  "{customer} says {key} hit their card twice. What happened?"),
        ("ticket", "lookup"): ("Is ticket {key} overdue, and who has it?", "Who is working on {key} for {customer}?"),
        ("ticket", "change"): (("Close ticket {key}, the customer confirmed the fix.",
                                "Please close {key}; {customer} says it's solved."),
                               ("Reassign {key} to {new_agent} and raise it to high priority.",
                                "Move ticket {key} to {new_agent}, priority high."))[t["action"]],
        ("ticket", "diagnose"): ("Why did ticket {key} breach its SLA?", "How did {key} for {customer} go overdue?"),
        ("order", "lookup"): ("Where is order {key}? Has it shipped?",
                              "What's the status of {customer}'s order {key}?"),
        ("order", "change"): (("Cancel order {key} for {customer}.", "{customer} wants order {key} cancelled."),
                              ("Change the shipping address of order {key} to {new}.",
                               "Ship {key} to {new} instead."))[t["action"]],
        ("order", "diagnose"): ("Why is order {key} still stuck in processing?",
                                "{customer}'s order {key} hasn't shipped in a week. Why?"),
    }
    t["text"] = pick(rng, texts[(fam, kind)]).format(**t)
    return t


def rest(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
         random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the REST-API operations world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Questions (tasks), and episodes per question and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai`` and the planted strategies; the truth also holds
        ``n_calls`` and ``n_failures`` of every trajectory.

    Examples
    --------
    >>> w = rest(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> sorted(w.truth.columns)
    ['arm', 'n_calls', 'n_failures', 'question_id', 'sample_id', 'strategy']
    """
    rng = as_generator(random_state)
    tasks = [(f"rest-{i:04d}", _task(rng)) for i in range(n_questions)]
    return chat_world("rest", "openai", rng, tasks, arms or ARMS, n_samples, _episode, _SUCCESS,
                      truth_schema={"n_calls": pl.Int64, "n_failures": pl.Int64})
