"""A CodeAct agent world (smolagents ``CodeAgent``-like): the actions are Python programs that
call the tools as functions.

An operations assistant of a retailer answers logistics questions that need several lookups
and some arithmetic (:data:`KINDS`): which of three or four warehouses can ship N units of a
SKU to a city *soonest* (and at what shipping cost), which one gives the *cheapest* total
(goods plus shipping), and what the stock of a SKU held at several warehouses is *worth* in
another currency. The warehouses are named in the question or given as a country ("our
warehouses in Spain"), which ``list_warehouses`` resolves. Five typed tools, called from
code (:data:`TOOLS`): ``list_warehouses(country) -> list``, ``check_stock(sku, warehouse) ->
int``, ``get_price(sku) -> dict`` (``unit_price`` in EUR), ``quote_shipping(warehouse,
destination, units) -> dict`` (``carrier``, ``cost`` in EUR for the whole shipment, ``days``)
and ``convert_currency(amount, from_currency, to_currency) -> float``; the rest is plain
Python (``min``, ``sum``, f-strings), and state persists between programs.

The format is smolagents' code actions inside chat messages (format ``react``): each assistant
message is ``Thought: ...`` then ``Code:`` and a fenced program (```` ```py ... ``` ````) ended
by ``<end_code>``; the environment answers in a user message ``Observation:`` with ``Execution
logs:`` (what the program printed) and ``Last output from code snippet:``, or the program's
error. The last program calls ``final_answer(...)``: with a literal the agent writes from what
it saw, or with an expression it computes. The programs really run when the world is generated
(against tools backed by the question's data), so every observation is what the program
printed and every tool call counted is one that ran.

Seven planted strategies, told apart by how the tool calls are grouped into programs (programs
before failures and optional steps; k warehouses, m of them with enough stock):

=================  ========================================================================
``stepwise``       one tool call per program, the result printed and read before the next
                   (stocks then quotes, or stock and quote warehouse by warehouse; the price
                   and the conversion as programs of their own); the answer in a last
                   program (4-9 programs before it, one call each)
``loop``           one program per tool: a ``for`` loop or a comprehension calling one tool
                   for every warehouse (``check_stock``, then ``quote_shipping`` for the
                   warehouses with enough stock), the single lookups as programs of their
                   own; then the answer (2-4 programs)
``chain``          one program per warehouse that chains different tools, the first result
                   feeding the next call (``check_stock`` then, if the stock is enough,
                   ``quote_shipping``; or ``check_stock`` then ``convert_currency`` of its
                   value); the list and the price chained into the first (k programs)
``one_shot``       a single program doing everything at once (every lookup in loops, the
                   arithmetic) and ending in ``final_answer`` (1 program)
``no_tools``       no tool call: the answer written from assumptions, optionally after a
                   plain-Python estimate (0-1 programs besides the answer)
``explore_first``  one call of one tool whose output it prints with its ``type`` to learn
                   the format (the warehouse list, a quote, or the price), then one program
                   doing the rest and ending in ``final_answer`` (2 programs)
``verify``         a draft program doing every lookup and printing a candidate answer, then
                   a verification program calling the tools again for the pick (its stock
                   and its quote; or the price and the conversion), then the answer (2-3)
=================  ========================================================================

Failures are execution, not strategy: every program (but a last one holding only
``final_answer(...)``) fails with probability :data:`_P_FAIL` and is followed at once by the
corrected program, rerun whole. The failing version really raises: a misspelt variable or tool
(``NameError``), a wrong key of a tool's result (``KeyError: 'eta'``), a tool called without
one of its arguments (``TypeError``), a bad value a tool rejects (``Error: warehouse 'W0' not
found``, an unknown SKU, destination, currency or country, units given as a string), or, for
:data:`_P_TIMEOUT` of failures, ``Error: quote_shipping timed out ...``, rerun unchanged. A
Python error shows as a short traceback or as smolagents' ``Code execution failed at line
...``, evenly. Optional steps at fixed rates whatever the arm and the strategy: a first program
that prints the tools' descriptions (:data:`_P_DOCS`, all strategies), and a program that
prints the computed answer before the final one (:data:`_P_CHECK`, in the four strategies
that answer in a program of their own: stepwise, loop, chain, verify). Variable names, quotes,
f-strings or ``.format``, keyword or positional arguments, loops or comprehensions, dicts or
tuples, comments, constants bound to names or written inline, the entities, the numbers and
the thoughts vary inside every strategy. The ``rl`` arm differs from ``base`` only in its
mixture; success is drawn at the strategy's rate (random within it, whatever the question) and
a wrong answer comes from a slip in the arithmetic or the pick that leaves the calls as they
are (the cheapest warehouse taken for the soonest, a per-shipment cost taken per unit, the
units forgotten, the currencies swapped, the amount left in EUR); the answer equals the gold
(``gold`` in every record) exactly when the episode is ``correct``.

The truth carries, beside ``strategy``, ``kind`` (of question), ``n_actions`` (code actions,
failed ones included; a last program holding only ``final_answer(...)`` is the finishing
action, not one), ``n_tool_calls`` (tool calls that ran across all programs, failed programs
included), ``n_failures`` (failed programs) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import ast
import builtins
import copy
import inspect
import keyword
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, pick, planted_world

STRATEGIES = ("stepwise", "loop", "chain", "one_shot", "no_tools", "explore_first", "verify")
KINDS = ("soonest", "cheapest", "value")
TOOLS = ("list_warehouses", "check_stock", "get_price", "quote_shipping", "convert_currency")
ARMS = {
    "base": {"stepwise": 0.22, "loop": 0.18, "chain": 0.15, "one_shot": 0.1, "no_tools": 0.1, "explore_first": 0.1,
             "verify": 0.15},
    "rl": {"stepwise": 0.08, "loop": 0.24, "chain": 0.1, "one_shot": 0.22, "no_tools": 0.05, "explore_first": 0.11,
           "verify": 0.2},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"stepwise": 0.7, "loop": 0.75, "chain": 0.65, "one_shot": 0.55, "no_tools": 0.1, "explore_first": 0.7,
            "verify": 0.85}
#: the chance that a program fails (it is followed by the corrected program)
_P_FAIL = 0.12
#: the share of failures that are a tool's timeout (the program rerun unchanged)
_P_TIMEOUT = 0.2
#: optional steps, at fixed rates whatever the arm and the strategy
_P_DOCS = 0.2  # a first program printing the tools' descriptions (every strategy)
_P_CHECK = 0.25  # the computed answer printed before the final program (stepwise, loop, chain, verify)
#: per question: the warehouses given as a country (``list_warehouses`` first)
_P_COUNTRY = 0.4
#: inside strategies (part of them whichever way they go)
_P_LITERAL = 0.5  # stepwise, loop, chain, verify: the final answer written as a literal
_P_ESTIMATE = 0.5  # no_tools: a plain-Python estimate before the answer

WAREHOUSES = {"W1": ("Madrid", "ES"), "W2": ("Valencia", "ES"), "W3": ("Zaragoza", "ES"),
              "W4": ("Hamburg", "DE"), "W5": ("Leipzig", "DE"), "W6": ("Munich", "DE"),
              "W7": ("Poznan", "PL"), "W8": ("Wroclaw", "PL"), "W9": ("Gdansk", "PL")}
COUNTRIES = {"ES": "Spain", "DE": "Germany", "PL": "Poland"}
_ISO3 = {"ES": "ESP", "DE": "DEU", "PL": "POL"}
#: EUR -> currency, two decimals (amounts in whole euros convert to whole cents)
RATES = {"USD": 1.08, "GBP": 0.85, "CHF": 0.94, "SEK": 11.46, "JPY": 162.35}
_DESTINATIONS = ("Lyon", "Porto", "Milan", "Brussels", "Vienna", "Prague", "Copenhagen", "Dublin", "Bordeaux",
                 "Rotterdam", "Turin", "Graz", "Ghent", "Seville", "Krakow", "Ljubljana")
_PRODUCTS = ("office chair", "desk lamp", "monitor arm", "standing desk frame", "label printer", "barcode scanner",
             "ergonomic keyboard", "USB-C dock", "cable tray", "filing cabinet", "whiteboard", "headset", "webcam",
             "paper shredder", "footrest", "document camera")
_CARRIERS = ("DHL", "DPD", "GLS", "UPS", "Geodis", "DB Schenker", "FedEx")
_UNITS = (20, 25, 30, 40, 50, 60, 75, 80, 100, 120)
#: each kind's answer, as a format template (value: the currency code follows)
_TEMPLATE = {"soonest": "{}, {} days, {:.2f} EUR", "cheapest": "{}, {:.2f} EUR", "value": "{:.2f}"}
#: the slips that make a wrong answer (the calls stay as they are)
_MISTAKES = {"soonest": ("cheapest_instead", "cost_per_unit"), "cheapest": ("forgot_units", "shipping_per_unit"),
             "value": ("swapped_currencies", "left_in_eur")}

_TOOL_DOCS = {
    "list_warehouses": ("Lists the ids of our warehouses in a country.",
                        {"country": ("string", "Two-letter ISO country code, e.g. 'DE'.")}, "array"),
    "check_stock": ("Returns how many units of a SKU a warehouse has on hand.",
                    {"sku": ("string", "The SKU, e.g. 'SKU-1182'."),
                     "warehouse": ("string", "The warehouse id, e.g. 'W2'.")}, "integer"),
    "get_price": ("Returns the catalogue entry of a SKU: sku, name, unit_price and currency (EUR).",
                  {"sku": ("string", "The SKU, e.g. 'SKU-1182'.")}, "object"),
    "quote_shipping": ("Quotes a shipment of some units from a warehouse to a city: warehouse, carrier, cost (EUR, "
                       "for the whole shipment), currency and days in transit.",
                       {"warehouse": ("string", "The warehouse id, e.g. 'W2'."),
                        "destination": ("string", "The destination city, e.g. 'Lyon'."),
                        "units": ("integer", "How many units are shipped.")}, "object"),
    "convert_currency": ("Converts an amount between two currencies at today's rate, rounded to cents.",
                         {"amount": ("number", "The amount to convert."),
                          "from_currency": ("string", "ISO code of the amount's currency, e.g. 'EUR'."),
                          "to_currency": ("string", "ISO code of the currency wanted, e.g. 'USD'.")}, "number"),
}
_TOOL_TYPOS = {"list_warehouses": ("list_warehouse", "get_warehouses", "warehouses_in"),
               "check_stock": ("check_stocks", "get_stock", "checkstock"),
               "get_price": ("get_prices", "price_of", "lookup_price"),
               "quote_shipping": ("quote_shiping", "get_quote", "shipping_quote"),
               "convert_currency": ("convert", "currency_convert", "convert_currencies")}
_WRONG_KEYS = {"days": ("eta", "transit_days", "delivery_days"), "cost": ("price", "shipping_cost", "total"),
               "unit_price": ("price", "unitPrice", "unit_cost")}
_NAMES = {
    "w": ("w", "wh", "warehouse", "wid", "site"),
    "stock": ("stock", "qty", "on_hand", "n_units", "available"),
    "stocks": ("stocks", "stock_by_wh", "inventory", "levels"),
    "quote": ("q", "quote", "offer", "ship"),
    "quotes": ("quotes", "offers", "shipping", "quote_by_wh"),
    "eligible": ("eligible", "candidates", "can_ship", "enough"),
    "price": ("price", "unit_price", "p", "each"),
    "info": ("info", "product", "price_info", "item"),
    "best": ("best", "winner", "pick", "choice"),
    "grand": ("grand_total", "total_cost", "order_total", "cost_total"),
    "total": ("total_eur", "value_eur", "eur", "stock_value"),
    "conv": ("converted", "value_fx", "result", "in_target"),
    "whs": ("whs", "warehouses", "sites", "ids"),
    "answer": ("answer", "ans", "final", "summary"),
    "opts": ("options", "opts", "seen", "data"),
    "r": ("r", "res", "sample", "out"),
    "sku": ("sku", "the_sku"),
    "units": ("units", "n_needed", "qty_needed"),
    "dest": ("dest", "city", "destination"),
    "cur": ("currency", "target", "cur"),
    "k": ("k", "x", "key_"),
    "tv": ("tool", "t", "fn"),
}
_TIMEOUT = "{} timed out after 30 s; the upstream service did not answer"
_RETRY = "Now let's retry: take care not to repeat previous errors! If you have retried several times, try a " \
         "completely different approach."


class _ToolError(Exception):
    """An error a tool raises (shown as ``Error: ...``)."""


class _Final(Exception):
    """``final_answer`` called: stops the program with the answer."""

    def __init__(self, value: Any) -> None:
        super().__init__(str(value))
        self.value = str(value)


def _quote(t: dict, warehouse: str, units: int) -> dict:
    carrier, base, per, days = t["quote"][warehouse]
    return {"warehouse": warehouse, "carrier": carrier, "cost": round((base + per * units) / 100, 2),
            "currency": "EUR", "days": days}


def _convert(amount: float, frm: str, to: str) -> float:
    eur = amount if frm == "EUR" else amount / RATES[frm]
    return round(eur if to == "EUR" else eur * RATES[to], 2)


def _tool_functions(t: dict) -> dict[str, Any]:
    """The five tools, backed by the question ``t``'s data."""
    def known(warehouse: Any) -> None:
        if warehouse not in WAREHOUSES:
            raise _ToolError(f"warehouse '{warehouse}' not found")

    def sku_ok(sku: Any) -> None:
        if sku != t["sku"]:
            raise _ToolError(f"unknown sku '{sku}'")

    def list_warehouses(country):
        if country not in COUNTRIES:
            raise _ToolError(f"unknown country '{country}'; expected a two-letter ISO code such as 'DE'")
        return [w for w, (_, c) in WAREHOUSES.items() if c == country]

    def check_stock(sku, warehouse):
        known(warehouse)
        sku_ok(sku)
        return t["stock"].get(warehouse, 0)

    def get_price(sku):
        sku_ok(sku)
        return {"sku": sku, "name": t["product"], "unit_price": t["price"], "currency": "EUR"}

    def quote_shipping(warehouse, destination, units):
        known(warehouse)
        if destination not in _DESTINATIONS:
            raise _ToolError(f"no route from {warehouse} to '{destination}': unknown destination")
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise _ToolError(f"units must be a positive integer, got {units!r}")
        if warehouse not in t.get("quote", {}):
            raise _ToolError(f"no carrier serves {warehouse} -> {destination}")
        return _quote(t, warehouse, units)

    def convert_currency(amount, from_currency, to_currency):
        for code in (from_currency, to_currency):
            if code != "EUR" and code not in RATES:
                raise _ToolError(f"unsupported currency '{code}' (supported: EUR, {', '.join(RATES)})")
        if not isinstance(amount, (int, float)) or isinstance(amount, bool):
            raise _ToolError(f"amount must be a number, got {amount!r}")
        return _convert(amount, from_currency, to_currency)

    return {"list_warehouses": list_warehouses, "check_stock": check_stock, "get_price": get_price,
            "quote_shipping": quote_shipping, "convert_currency": convert_currency}


class _Tool:
    """A tool as the interpreter holds it: callable, with smolagents' ``name``, ``description``,
    ``inputs`` and ``output_type``; every call is counted (and may time out)."""

    def __init__(self, env: _Env, name: str, fn: Any) -> None:
        self.env, self.name, self.fn, self.sig = env, name, fn, inspect.signature(fn)
        doc, inputs, out = _TOOL_DOCS[name]
        self.description, self.output_type = doc, out
        self.inputs = {k: {"type": ty, "description": d} for k, (ty, d) in inputs.items()}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.env.calls.append(self.name)
        if self.env.timeout == self.name:
            self.env.timeout = None
            raise _ToolError(_TIMEOUT.format(self.name))
        try:
            bound = self.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}() {e}") from None
        return self.fn(*bound.args, **bound.kwargs)

    def __repr__(self) -> str:
        return f"<tool {self.name}>"


@dataclass
class _Run:
    """What one program did: its printed output, the tools it called, the final answer it gave
    (or ``None``), and the error that stopped it: ``None``, ``("tool", message)`` or
    ``(exception class, message, line number, function, source line)``."""

    logs: str
    calls: list[str]
    final: str | None
    error: tuple | None


class _Env:
    """The interpreter of one episode: the tools, ``print`` and ``final_answer`` in a namespace
    that persists between programs."""

    def __init__(self, t: dict) -> None:
        self.calls: list[str] = []
        self.out: list[str] = []
        self.timeout: str | None = None
        self.tools = {n: _Tool(self, n, fn) for n, fn in _tool_functions(t).items()}
        self.ns: dict[str, Any] = {**self.tools, "print": self._print, "final_answer": self._final_answer}
        self.fixed = set(self.ns)

    def _print(self, *args: Any, sep: str = " ", end: str = "\n") -> None:
        self.out.append(sep.join(str(a) for a in args) + end)

    @staticmethod
    def _final_answer(answer: Any) -> None:
        raise _Final(answer)

    def copy_ns(self) -> dict[str, Any]:
        """A copy of the namespace to try a program on (the user's values deep-copied)."""
        # the interpreter and its tools are shared, never copied: a value that holds a tool (a loop
        # variable left on the last tool printed) would otherwise copy the interpreter, and with it
        # whatever the process has put into `__builtins__`
        keep = {id(self): self, id(self.ns): self.ns, **{id(t): t for t in self.tools.values()}}
        return {k: v if k in self.fixed else copy.deepcopy(v, dict(keep)) for k, v in self.ns.items()
                if k != "__builtins__"}

    def user_names(self) -> set[str]:
        return {k for k in self.ns if k not in self.fixed and k != "__builtins__"}

    def run(self, code: str, *, ns: dict[str, Any] | None = None, timeout: str | None = None) -> _Run:
        """Run ``code`` in the episode's namespace (or in ``ns``); ``timeout``: the tool whose
        first call in it times out."""
        self.calls, self.out, self.timeout = [], [], timeout
        final = error = None
        try:
            exec(compile(code, "<code>", "exec"), self.ns if ns is None else ns)
        except _Final as f:
            final = f.value
        except _ToolError as e:
            error = ("tool", str(e))
        except Exception as e:  # noqa: BLE001 - the program's own error is what the observation shows
            tb, line = e.__traceback__, (0, "<module>")
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == "<code>":
                    line = (tb.tb_lineno, tb.tb_frame.f_code.co_name)
                tb = tb.tb_next
            src = code.split("\n")[line[0] - 1].strip() if line[0] else ""
            error = (type(e).__name__, str(e) if not isinstance(e, KeyError) else repr(e.args[0]), *line, src)
        self.timeout = None
        return _Run("".join(self.out), list(self.calls), final, error)


def _observation(run: _Run, smolagents_style: bool = False) -> str:
    """The environment's answer to a program: its execution logs and last output, or its error
    (a Python error as a short traceback, or smolagents' one line where ``smolagents_style``)."""
    logs = run.logs.rstrip("\n")
    if run.error is None:
        last = run.final if run.final is not None else "None"
        return f"Observation:\nExecution logs:\n{logs}\nLast output from code snippet:\n{last}"
    head = f"Observation:\nExecution logs:\n{logs}\n" if logs else "Observation:\n"
    if run.error[0] == "tool":
        return f"{head}Error: {run.error[1]}"
    name, msg, lineno, func, src = run.error
    if smolagents_style:
        return f"{head}Error:\nCode execution failed at line '{src}' due to: {name}: {msg}\n{_RETRY}"
    return (f"{head}Traceback (most recent call last):\n  File \"<code>\", line {lineno}, in {func}\n    {src}\n"
            f"{name}: {msg}")


def _program_text(message: str) -> str:
    """The program of an assistant message (what is inside its code fence)."""
    return message.split("```py\n", 1)[1].rsplit("\n```", 1)[0]


# -- the questions ----------------------------------------------------------------------------

_QUESTIONS = {
    "soonest": ("Which of {where} can ship {units} units of {sku} ({product}) to {dest} soonest, and what would "
                "the shipping cost? Answer as '<warehouse>, <days> days, <cost> EUR'.",
                "We need {units} x {sku} ({product}) in {dest} as fast as possible. Which of {where} should ship "
                "them, how many days does it take and what does the shipping cost? Answer as '<warehouse>, <days> "
                "days, <cost> EUR'.",
                "A customer in {dest} needs {units} units of {sku} urgently. Among {where}, which one can deliver "
                "the whole order first, and at what shipping cost? Answer as '<warehouse>, <days> days, <cost> "
                "EUR'."),
    "cheapest": ("A customer in {dest} orders {units} units of {sku} ({product}). Which of {where} can fulfil the "
                 "whole order at the lowest total cost (goods plus shipping), and what is that total? Answer as "
                 "'<warehouse>, <total> EUR'.",
                 "What is the cheapest way to deliver {units} units of {sku} ({product}) to {dest} from one of "
                 "{where}, counting the goods and the shipping? Answer as '<warehouse>, <total> EUR'.",
                 "Ship {units} x {sku} to {dest}: from which of {where} is goods plus shipping lowest, and how "
                 "much is it? Answer as '<warehouse>, <total> EUR'."),
    "value": ("What is the total value in {cur} of the {sku} ({product}) units held at {where}? Answer as "
              "'<amount> {cur}'.",
              "How much is our stock of {sku} ({product}) across {where} worth in {cur}? Answer as '<amount> "
              "{cur}'.",
              "For the insurance report: the value, in {cur}, of all {sku} units on hand at {where}. Answer as "
              "'<amount> {cur}'."),
}


def _gold(t: dict, mistake: str | None = None) -> str:
    """The answer to ``t``, or the one a slip (:data:`_MISTAKES`) gives."""
    kind, units = t["kind"], t.get("units", 0)
    if kind == "value":
        total = sum(t["stock"].values()) * t["price"]
        amount = (total if mistake == "left_in_eur" else
                  _convert(total, t["cur"], "EUR") if mistake == "swapped_currencies" else _convert(total, "EUR",
                                                                                                    t["cur"]))
        return f"{amount:.2f} {t['cur']}"
    eligible = [w for w in t["whs"] if t["stock"][w] >= units]
    quotes = {w: _quote(t, w, units) for w in eligible}
    key = "days" if kind == "soonest" and mistake != "cheapest_instead" else "cost"
    best = min(quotes, key=lambda w: quotes[w][key])
    cost = quotes[best]["cost"]
    if kind == "soonest":
        return f"{best}, {quotes[best]['days']} days, {cost * units if mistake == 'cost_per_unit' else cost:.2f} EUR"
    grand = (t["price"] + cost if mistake == "forgot_units" else units * (t["price"] + cost)
             if mistake == "shipping_per_unit" else units * t["price"] + cost)
    return f"{best}, {grand:.2f} EUR"


def _task(rng: np.random.Generator, kind: str, used: set[str]) -> dict:
    sku = f"SKU-{int(rng.integers(1000, 10000))}"
    while sku in used:
        sku = f"SKU-{int(rng.integers(1000, 10000))}"
    used.add(sku)
    if rng.random() < _P_COUNTRY:
        country = pick(rng, tuple(COUNTRIES))
        whs = [w for w, (_, c) in WAREHOUSES.items() if c == country]
    else:
        country = None
        chosen = rng.choice(list(WAREHOUSES), int(rng.integers(3, 5)), replace=False)
        whs = sorted((str(w) for w in chosen), key=lambda w: int(w[1:]))
    t: dict[str, Any] = {"kind": kind, "sku": sku, "product": pick(rng, _PRODUCTS), "whs": whs, "country": country,
                         "price": float(rng.integers(12, 400))}
    if kind == "value":
        t["cur"] = pick(rng, tuple(RATES))
        t["stock"] = {w: int(rng.integers(0, 300)) for w in whs}
    else:
        t["units"], t["dest"] = int(pick(rng, _UNITS)), pick(rng, _DESTINATIONS)
        while True:
            m = int(rng.choice(np.arange(1, len(whs) + 1)))
            eligible = {str(w) for w in rng.choice(whs, m, replace=False)}
            t["stock"] = {w: int(rng.integers(t["units"], 3 * t["units"])) if w in eligible
                          else int(rng.integers(0, t["units"])) for w in whs}
            t["quote"] = {w: (pick(rng, _CARRIERS), int(rng.integers(1500, 12000)), int(rng.integers(15, 250)),
                              int(rng.integers(1, 9))) for w in whs}
            quotes = {w: _quote(t, w, t["units"]) for w in eligible}
            days, costs = sorted(q["days"] for q in quotes.values()), sorted(q["cost"] for q in quotes.values())
            unique = m == 1 or (days[0] < days[1] and costs[0] < costs[1])
            if unique and (m == 1 or min(quotes, key=lambda w: quotes[w]["days"])
                           != min(quotes, key=lambda w: quotes[w]["cost"])):
                break
    names = [*whs[:-1]]
    where = (f"our warehouses in {COUNTRIES[country]}" if country else
             f"warehouses {', '.join(names)} and {whs[-1]}" if rng.random() < 0.5 else
             f"{', '.join(names)} or {whs[-1]}")
    text = pick(rng, _QUESTIONS[kind]).format(where=where, **{k: v for k, v in t.items() if k != "stock"})
    t["text"], t["gold"] = text, _gold(t)
    return t


def _tasks(rng: np.random.Generator, n_questions: int) -> list[tuple[str, dict]]:
    """The questions of a world: their kinds in turn (:data:`KINDS`)."""
    used: set[str] = set()
    return [(f"codeact-{i:04d}", _task(rng, KINDS[i % len(KINDS)], used)) for i in range(n_questions)]


def _system(rng: np.random.Generator) -> str:
    tools = []
    for name, (doc, inputs, out) in _TOOL_DOCS.items():
        spec = {k: {"type": ty, "description": d} for k, (ty, d) in inputs.items()}
        tools.append(f"- {name}: {doc}\n    Takes inputs: {spec}\n    Returns an output of type: {out}")
    tools.append("- final_answer: Provides a final answer to the given problem.\n    Takes inputs: {'answer': "
                 "{'type': 'any', 'description': 'The final answer to the problem'}}\n    Returns an output of type: "
                 "any")
    intro = pick(rng, ("You are an expert assistant who can solve any task using code blobs. You will be given a task "
                       "to solve as best you can. To do so, you have been given access to a list of tools: these "
                       "tools are basically Python functions which you can call with code.",
                       "You are an operations assistant. You solve tasks by writing Python code that calls the "
                       "tools below as ordinary functions."))
    return (f"{intro}\nTo solve the task, you must plan forward to proceed in a series of steps, in a cycle of "
            "'Thought:', 'Code:', and 'Observation:' sequences. At each step, in the 'Thought:' sequence, you should "
            "first explain your reasoning; then in the 'Code:' sequence, write the code in simple Python, ending "
            "with '<end_code>'. Use print() to save whatever important information you will then need; it will "
            "then be available in the 'Observation:' field. Return the answer with the `final_answer` tool.\n"
            "Here are the tools available to you:\n" + "\n".join(tools) +
            "\nThe state persists between code executions: variables and imports stay defined.")


# -- the agent's words ------------------------------------------------------------------------

_SAY = {
    "docs": ("Before anything, let me see what the tools take and return.", "Let me read the tool descriptions first.",
             "I'll print the tools' documentation to check the argument names.",
             "First I want to know the exact inputs of the tools."),
    "list": ("The question names a country, so I first need its warehouses.", "Which warehouses are in {country}?",
             "Let me list our {country} warehouses.", "I'll start by getting the warehouse ids for {country}."),
    "stock1_first": ("Let me start with the stock of {sku} at {w}.", "First, how many units does {w} hold?",
                     "One warehouse at a time; {w} first.", "I'll check {w}'s stock first."),
    "stock1": ("Let me check the stock of {sku} at {w}.", "Next, the stock at {w}.", "How many units does {w} hold?",
               "{w} now.", "Now {w}'s stock."),
    "quote1": ("{w} has enough; let me get a shipping quote to {dest}.", "Quote for {w} to {dest}.",
               "Next, what does shipping {units} units from {w} cost?", "Let me quote {w}."),
    "price1": ("I need the unit price of {sku}.", "Let me get the price of {sku}.",
               "Now the catalogue price of the {product}."),
    "convert1": ("Now convert the total value in EUR to {cur}.", "I have the stock and the price; converting to {cur}.",
                 "Total value in EUR, then to {cur}."),
    "stock_loop": ("I'll check the stock at every warehouse in one loop.",
                   "Let me loop over the warehouses and get the stock of {sku} at each.",
                   "Stock levels first, all warehouses at once.", "One loop for the stock everywhere."),
    "quote_loop": ("Now a shipping quote for each warehouse with at least {units} units.",
                   "Quotes to {dest} for the warehouses that can cover the order.",
                   "Loop over the eligible warehouses and quote each."),
    "price_loop": ("Next the unit price.", "Now the price of {sku}.", "Let me fetch the price."),
    "convert_loop": ("Sum the value in EUR and convert it to {cur}.", "Now the conversion to {cur}.",
                     "Total it up and convert."),
    "chain_first": ("For each warehouse: the stock and, if it is enough, a quote in the same step. {w} first.",
                    "Warehouse by warehouse, stock then quote. Starting with {w}.",
                    "I'll chain the stock check and the quote per warehouse, beginning with {w}."),
    "chain_list": ("First the warehouses in {country}, then the first one's figures in the same program.",
                   "List the {country} warehouses and chain straight into the first one.",
                   "I'll get the warehouse ids and use the first right away."),
    "chain_value_first": ("Per warehouse: its stock and that stock's value in {cur}, chained. {w} first.",
                          "One warehouse at a time, the stock feeding the conversion; starting with {w}."),
    "chain": ("For {w}: the stock and, if it is enough, a quote in the same step.", "Now {w}: stock, then the quote.",
              "Same for {w}.", "Next warehouse, {w}.", "{w}: check the stock and quote it if it can ship."),
    "chain_value": ("For {w}: its stock and that stock's value in {cur} in one go.", "Now {w}.", "Same for {w}.",
                    "{w}: stock, then convert its value."),
    "one_shot": ("I can do all of it in one program: the lookups, the arithmetic and the answer.",
                 "Everything at once: loop over the warehouses, compute, answer.",
                 "I'll write one program that gathers the data and returns the answer.",
                 "This is simple enough to solve in a single code block."),
    "probe": ("I don't know what {tool} returns; let me call it once and look.",
              "Let me first see the shape of {tool}'s output.", "Quick look at one result of {tool} before I loop.",
              "What type does {tool} return? One call to find out."),
    "big": ("Now I know the format. Everything else in one program.", "Good, now the full computation.",
            "With that format, I can write the whole solution.", "Now the rest in a single block."),
    "draft": ("Let me gather everything and compute a candidate, then double-check it.",
              "First a draft: all lookups and the computation, printed, not yet answered.",
              "I'll compute the answer in one go and verify it before submitting."),
    "verify": ("Let me double-check {best} before answering.", "Verifying the figures for {best} with fresh calls.",
               "Before I answer, I re-query the tools for {best}.", "Sanity check on {best}."),
    "verify_value": ("Let me double-check the price and the conversion.", "Verifying the price and the rate.",
                     "Before I answer, a fresh look at the price and the conversion."),
    "check": ("Let me print the result once more before answering.", "Quick check of the computed answer.",
              "Before the final answer, let me print it.", "Let me make sure of the numbers."),
    "final": ("I have everything I need.", "That's the answer.", "Answering now.", "Done, submitting.",
              "I can answer now."),
    "no_tools": ("I can answer this from what I know without the tools.", "No need for lookups; I'll estimate.",
                 "From experience, I can give the answer directly.", "I'll answer without calling the tools."),
    "estimate": ("A quick estimate in Python first.", "Let me rough it out.", "Some back-of-the-envelope numbers."),
}
_FIX = {
    "name": ("NameError: `{bad}` is not defined; it should be `{good}`. Fixing.", "Typo in `{bad}`; rerunning.",
             "I misspelt `{good}`. Again with the right name."),
    "tool_name": ("There is no `{bad}`; the tool is `{good}`.", "Wrong tool name, it is `{good}`. Rerunning.",
                  "`{bad}` does not exist; using `{good}`."),
    "key": ("The result has no key '{bad}'; the key is '{good}'.", "KeyError: the field is called '{good}'.",
            "Wrong key, it is '{good}' not '{bad}'."),
    "arg": ("I forgot the `{bad}` argument of {tool}.", "{tool} needs `{bad}` too. Fixing the call.",
            "Missing argument `{bad}`; adding it."),
    "value": ("'{bad}' is not valid; it should be '{good}'.", "The tool rejected '{bad}'; using '{good}'.",
              "Wrong value '{bad}', correcting to '{good}'."),
    "units": ("The units must be an integer, not the string '{bad}'.", "I passed {good} as a string; fixing.",
              "Units as a string was wrong; using the number {good}."),
    "timeout": ("The call timed out; running the same code again.", "Timeout from {tool}. Retrying.",
                "{tool} did not answer in time; I'll just rerun it."),
}


@dataclass
class _Style:
    """How one episode's programs are written."""

    q: str  # the quote of string literals
    fstr: bool  # f-strings (else print(a, b) and .format)
    kw: bool  # keyword arguments
    consts: bool  # the question's constants bound to names in the first program
    comments: bool
    comp: bool  # comprehensions (else for loops with a dict)
    tuples: bool  # transcribed options as tuples (else a dict of dicts)
    sort: bool  # sorted(...)[0] (else min)
    assign: bool  # single calls assigned to a variable (else printed directly)
    names: dict[str, str]


def _style(rng: np.random.Generator) -> _Style:
    return _Style(q=pick(rng, ('"', "'")), fstr=bool(rng.random() < 0.6), kw=bool(rng.random() < 0.8),
                  consts=bool(rng.random() < 0.4), comments=bool(rng.random() < 0.5), comp=bool(rng.random() < 0.4),
                  tuples=bool(rng.random() < 0.4), sort=bool(rng.random() < 0.3), assign=bool(rng.random() < 0.5),
                  names={role: pick(rng, options) for role, options in _NAMES.items()})


class _Agent:
    """One episode: writes the programs, runs them, and logs the chat."""

    def __init__(self, rng: np.random.Generator, t: dict, strategy: str, correct: bool) -> None:
        self.rng, self.t, self.strategy = rng, t, strategy
        self.st = _style(rng)
        self.n = self.st.names
        self.env = _Env(t)
        self.messages: list[dict] = [{"role": "system", "content": _system(rng)},
                                     {"role": "user", "content": f"New task:\n{t['text']}"}]
        self.n_actions = self.n_failures = self.n_calls = 0
        self.final: str | None = None
        self.headed = False
        self.answer_var: str | None = None
        self.mistake = None if correct else pick(rng, tuple(
            m for m in _MISTAKES[t["kind"]] if not (m == "cheapest_instead" and len(self.eligible) < 2)))

    # -- literals, calls, prints -------------------------------------------------------------
    @property
    def eligible(self) -> list[str]:
        return [w for w in self.t["whs"] if self.t["stock"][w] >= self.t.get("units", 0)]

    def s(self, v: str) -> str:
        return f"{self.st.q}{v}{self.st.q}"

    def lit(self, v: Any) -> str:
        if isinstance(v, str):
            return self.s(v)
        if isinstance(v, list):
            return "[" + ", ".join(self.lit(x) for x in v) + "]"
        return repr(v)

    def e(self, role: str) -> str:
        """A constant of the question: its name once bound (:meth:`head`), else the literal."""
        if self.st.consts and self.headed:
            return self.n[role]
        return self.lit({"sku": self.t["sku"], "units": self.t.get("units"), "dest": self.t.get("dest"),
                         "cur": self.t.get("cur")}[role])

    def head(self) -> list[str]:
        """The constants bound to names, in the first program that calls a tool (one style)."""
        if not self.st.consts or self.headed:
            return []
        roles = ("sku", "cur") if self.t["kind"] == "value" else ("sku", "units", "dest")
        lines = [f"{self.n[r]} = {self.e(r)}" for r in roles]
        self.headed = True
        return lines

    def call(self, tool: str, **args: str) -> str:
        order = list(_TOOL_DOCS[tool][1])
        if self.st.kw:
            return f"{tool}(" + ", ".join(f"{k}={args[k]}" for k in order) + ")"
        return f"{tool}(" + ", ".join(args[k] for k in order) + ")"

    def fmt(self, template: str, *exprs: str) -> str:
        """``template`` (``{}`` / ``{:.2f}`` holes) filled with ``exprs``: an f-string or ``.format``."""
        if not self.st.fstr:
            return f"{self.s(template)}.format({', '.join(exprs)})"
        holes = iter(exprs)
        fq = "'" if self.st.q == '"' else '"'
        return "f" + fq + re.sub(r"\{(:[^}]*)?\}", lambda m: "{" + next(holes) + (m.group(1) or "") + "}",
                                 template) + fq

    def pr(self, label: str, *exprs: str) -> str:
        if not label and len(exprs) == 1:
            return f"print({exprs[0]})"
        if self.st.fstr:
            return "print(" + self.fmt(" ".join([label, *["{}"] * len(exprs)]).strip(), *exprs) + ")"
        return "print(" + ", ".join(([self.s(label)] if label else []) + list(exprs)) + ")"

    def comment(self, text: str) -> list[str]:
        return [f"# {text}"] if self.st.comments and self.rng.random() < 0.6 else []

    def say(self, role: str, **kw: Any) -> str:
        t = self.t
        fill = {"sku": t["sku"], "product": t["product"], "units": t.get("units"), "dest": t.get("dest"),
                "cur": t.get("cur"), "country": COUNTRIES.get(t["country"] or "", ""), **kw}
        if self.n_calls == 0 and f"{role}_first" in _SAY:  # the first lookup of the episode
            role = f"{role}_first"
        return pick(self.rng, _SAY[role]).format(**fill)

    # -- acting ------------------------------------------------------------------------------
    def _log(self, thought: str, code: str, run: _Run, smolagents_style: bool = False) -> None:
        content = f"Thought: {thought}\nCode:\n```py\n{code}\n```<end_code>"
        self.messages.append({"role": "assistant", "content": content})
        self.messages.append({"role": "user", "content": _observation(run, smolagents_style)})

    def act(self, thought: str, lines: list[str]) -> _Run:
        """Run the program ``lines`` (first a broken version of it that fails, at :data:`_P_FAIL`),
        logging each program and its observation."""
        code = "\n".join(lines)
        counted = not re.fullmatch(r"final_answer\(.*\)", code)
        if counted and self.rng.random() < _P_FAIL:
            broken = self._broken(code)
            if broken is not None:
                bad_code, timeout, fix = broken
                run = self.env.run(bad_code, timeout=timeout)
                assert run.error is not None, bad_code
                self._log(thought, bad_code, run, bool(self.rng.random() < 0.5))
                self.n_actions += 1
                self.n_failures += 1
                self.n_calls += len(run.calls)
                thought = fix
        run = self.env.run(code)
        if run.error is not None:  # pragma: no cover - the world's own programs run
            raise RuntimeError(f"program failed: {run.error}\n{code}")
        self._log(thought, code, run)
        self.n_actions += counted
        self.n_calls += len(run.calls)
        if run.final is not None:
            self.final = run.final
        return run

    def evaluate(self, lines: list[str]) -> str:
        """What ``lines`` (ending in ``final_answer``) answer, run on a copy of the state."""
        run = self.env.run("\n".join(lines), ns=self.env.copy_ns())
        assert run.final is not None and run.error is None and not run.calls, run
        return run.final

    # -- failures ----------------------------------------------------------------------------
    def _broken(self, code: str) -> tuple[str, str | None, str] | None:
        """A version of ``code`` that fails when run, the tool that times out (or ``None``) and the
        thought of the fix; ``None`` when no version found fails."""
        rng, t = self.rng, self.t
        tree = ast.parse(code)
        lines = code.split("\n")
        skip = {id(sub) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for sub in ast.walk(node)}
        assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        assigned |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.Lambda) for a in n.args.args}
        assigned |= self.env.user_names()
        values = {*t["whs"], t["sku"], t.get("dest"), t.get("cur"), t["country"]} - {None}
        found: dict[str, list] = {k: [] for k in ("name", "tool_name", "key", "arg", "value")}
        called: list[str] = []
        for node in ast.walk(tree):
            if id(node) in skip or getattr(node, "end_lineno", None) != getattr(node, "lineno", -1):
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id in TOOLS:
                    found["tool_name"].append(node)
                elif node.id in assigned:
                    found["name"].append(node)
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                    and node.slice.value in _WRONG_KEYS and id(node.slice) not in skip:
                found["key"].append(node.slice)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in TOOLS:
                called.append(node.func.id)
                if node.args or node.keywords:
                    found["arg"].append(node)
            elif isinstance(node, ast.Constant) and (node.value in values if isinstance(node.value, str)
                                                     else type(node.value) is int and node.value == t.get("units")):
                found["value"].append(node)
        tries: list[tuple[str, Any]] = []
        if called and rng.random() < _P_TIMEOUT:
            tries.append(("timeout", pick(rng, sorted(set(called)))))
        # one error type after another (a misspelt variable or tool both give a NameError), in a
        # random order among those the program allows
        groups = [g for g in (("name", "tool_name"), ("key",), ("arg",), ("value",)) if any(found[k] for k in g)]
        for group in [groups[int(i)] for i in rng.permutation(len(groups))]:
            for kind in [group[int(i)] for i in rng.permutation(len(group))]:
                nodes = found[kind]
                tries += [(kind, nodes[int(i)]) for i in rng.permutation(len(nodes))[:3]]
        for kind, node in tries:
            if kind == "timeout":
                run = self.env.run(code, ns=self.env.copy_ns(), timeout=node)
                if run.error is not None:
                    return code, node, pick(rng, _FIX["timeout"]).format(tool=node)
                continue
            new, info = self._mutate(kind, node, lines, code, assigned)
            if new is None:
                continue
            run = self.env.run(new, ns=self.env.copy_ns())
            if run.error is not None:
                return new, None, pick(rng, _FIX[info.pop("fix", kind)]).format(**info)
        return None

    def _mutate(self, kind: str, node: Any, lines: list[str], code: str, assigned: set[str]
                ) -> tuple[str | None, dict]:
        rng = self.rng
        line = lines[node.lineno - 1]
        a, b = node.col_offset, node.end_col_offset
        if kind == "name":
            good = node.id
            bad = _typo(rng, good, assigned | set(TOOLS))
            new = bad
            info = {"bad": bad, "good": good}
        elif kind == "tool_name":
            good = node.id
            bad = new = pick(rng, _TOOL_TYPOS[good])
            info = {"bad": bad, "good": good}
        elif kind == "key":
            good = node.value
            bad = pick(rng, _WRONG_KEYS[good])
            new = line[a] + bad + line[a]
            info = {"bad": bad, "good": good}
        elif kind == "arg":
            parts = [(None, ast.get_source_segment(code, x)) for x in node.args]
            parts += [(k.arg, f"{k.arg}={ast.get_source_segment(code, k.value)}") for k in node.keywords]
            drop = int(rng.integers(len(parts)))
            order = list(_TOOL_DOCS[node.func.id][1])
            missing = parts[drop][0] or order[drop]
            new = f"{node.func.id}(" + ", ".join(p for i, (_, p) in enumerate(parts) if i != drop) + ")"
            info = {"bad": missing, "tool": node.func.id}
        else:  # a value a tool rejects
            good = node.value
            if isinstance(good, int):
                bad, new = str(good), self.s(str(good))
                info = {"bad": bad, "good": good, "fix": "units"}
                return "\n".join([*lines[:node.lineno - 1], line[:a] + new + line[b:], *lines[node.lineno:]]), info
            else:
                bad = _bad_value(rng, good, self.t)
                new = line[a] + bad + line[a]
            info = {"bad": bad, "good": good}
        return "\n".join([*lines[:node.lineno - 1], line[:a] + new + line[b:], *lines[node.lineno:]]), info

    # -- programs of the question's stages (values kept in variables) --------------------------
    def whs(self) -> str:
        return self.n["whs"] if self.t["country"] else self.lit(self.t["whs"])

    def v_list(self, prints: bool = True) -> list[str]:
        out = [f"{self.n['whs']} = {self.call('list_warehouses', country=self.s(self.t['country']))}"]
        return out + ([f"print({self.n['whs']})"] if prints else [])

    def v_stock(self, prints: bool = True) -> list[str]:
        n, w, st = self.n, self.n["w"], self.n["stocks"]
        call = self.call("check_stock", sku=self.e("sku"), warehouse=w)
        if self.st.comp:
            out = [f"{st} = {{{w}: {call} for {w} in {self.whs()}}}"] + ([f"print({st})"] if prints else [])
        else:
            out = [f"{st} = {{}}", f"for {w} in {self.whs()}:", f"    {st}[{w}] = {call}"]
            out += [f"    {self.pr('', w, f'{st}[{w}]')}"] if prints else []
        if self.t["kind"] != "value":
            out.append(f"{n['eligible']} = [{w} for {w} in {st} if {st}[{w}] >= {self.e('units')}]")
            out += [self.pr("enough stock:", n["eligible"])] if prints else []
        return out

    def v_price(self, prints: bool = True, probed: str | None = None) -> list[str]:
        n, call = self.n, self.call("get_price", sku=self.e("sku"))
        if probed is not None:  # the catalogue entry already fetched (explore_first's probe)
            return [f"{n['price']} = {probed}[{self.s('unit_price')}]"]
        if self.rng.random() < 0.5:
            return [f"{n['price']} = {call}[{self.s('unit_price')}]"] + ([self.pr("unit price:", n["price"])]
                                                                          if prints else [])
        return ([f"{n['info']} = {call}"] + ([f"print({n['info']})"] if prints else [])
                + [f"{n['price']} = {n['info']}[{self.s('unit_price')}]"])

    def v_quotes(self, eligible: str, prints: bool = True) -> list[str]:
        w, qs = self.n["w"], self.n["quotes"]
        call = self.call("quote_shipping", warehouse=w, destination=self.e("dest"), units=self.e("units"))
        if self.st.comp:
            return [f"{qs} = {{{w}: {call} for {w} in {eligible}}}"] + ([f"print({qs})"] if prints else [])
        out = [f"{qs} = {{}}", f"for {w} in {eligible}:", f"    {qs}[{w}] = {call}"]
        return out + ([f"    {self.pr('', w, f'{qs}[{w}]')}"] if prints else [])

    def convert_args(self, amount: str) -> str:
        frm, to = self.s("EUR"), self.e("cur")
        if self.mistake == "swapped_currencies":
            frm, to = to, frm
        return self.call("convert_currency", amount=amount, from_currency=frm, to_currency=to)

    def v_convert(self, prints: bool = True) -> list[str]:
        n = self.n
        out = [f"{n['total']} = sum({n['stocks']}.values()) * {n['price']}",
               f"{n['conv']} = {self.convert_args(n['total'])}"]
        return out + ([self.pr("", n["total"], n["conv"])] if prints else [])

    def v_all(self, prints: bool, listed: bool = False, probed: str | None = None) -> list[str]:
        """Every lookup of the question, in one program's lines (but the warehouse list where
        ``listed``, and the price where ``probed`` names the catalogue entry already fetched)."""
        kind = self.t["kind"]
        out = self.v_list(prints) if self.t["country"] and not listed else []
        if kind == "cheapest":
            out += self.v_price(prints)
        out += self.v_stock(prints)
        if kind == "value":
            return out + self.v_price(prints, probed) + self.v_convert(prints)
        return out + self.v_quotes(self.n["eligible"], prints)

    # -- the answer --------------------------------------------------------------------------
    def compute(self, source: str) -> tuple[list[str], str]:
        """(lines, answer expression) computing the answer from the values kept in variables
        (``source="vars"``) or from the values seen, written into the program (``"stepwise"``,
        ``"chain"``); a slip (:attr:`mistake`) goes in here."""
        t, n, mistake = self.t, self.n, self.mistake
        kind, units = t["kind"], self.e("units") if t["kind"] != "value" else ""
        if kind == "value":
            if source == "vars" or source == "stepwise":
                amount = n["total"] if mistake == "left_in_eur" else n["conv"]
                return [], self.fmt(_TEMPLATE["value"] + " " + t["cur"], amount)
            frm, to = ("EUR", t["cur"]) if mistake != "swapped_currencies" else (t["cur"], "EUR")
            parts = [repr(t["stock"][w] * t["price"]) if mistake == "left_in_eur"
                     else repr(_convert(t["stock"][w] * t["price"], frm, to)) for w in t["whs"]]
            var = n["total"] if mistake == "left_in_eur" else n["conv"]
            return [f"{var} = {' + '.join(parts)}"], self.fmt(_TEMPLATE["value"] + " " + t["cur"], var)
        lines: list[str] = []
        key = "days" if kind == "soonest" and mistake != "cheapest_instead" else "cost"
        k, best = n["k"], n["best"]
        if source == "vars" or not self.st.tuples:
            table = n["quotes"]
            if source != "vars":
                table = n["opts"]
                quotes = {w: _quote(t, w, t["units"]) for w in self.eligible}
                entries = ", ".join(f"{self.s(w)}: {{{self.s('days')}: {q['days']}, {self.s('cost')}: {q['cost']!r}}}"
                                    for w, q in quotes.items())
                lines.append(f"{table} = {{{entries}}}")
            if self.st.sort:
                lines.append(f"{best} = sorted({table}.items(), key=lambda {k}: {k}[1][{self.s(key)}])[0][0]")
            else:
                lines.append(f"{best} = min({table}, key=lambda {k}: {table}[{k}][{self.s(key)}])")
            wid, days, cost = best, f"{table}[{best}][{self.s('days')}]", f"{table}[{best}][{self.s('cost')}]"
        else:
            table = n["opts"]
            rows = ", ".join(f"({self.s(w)}, {_quote(t, w, t['units'])['days']}, "
                             f"{_quote(t, w, t['units'])['cost']!r})" for w in self.eligible)
            lines.append(f"{table} = [{rows}]")
            idx = 1 if key == "days" else 2
            lines.append(f"{best} = sorted({table}, key=lambda {k}: {k}[{idx}])[0]" if self.st.sort
                         else f"{best} = min({table}, key=lambda {k}: {k}[{idx}])")
            wid, days, cost = f"{best}[0]", f"{best}[1]", f"{best}[2]"
        if kind == "soonest":
            return lines, self.fmt(_TEMPLATE["soonest"], wid, days,
                                   f"{cost} * {units}" if mistake == "cost_per_unit" else cost)
        price = n["price"] if source in ("vars", "chain") else repr(t["price"])
        grand = {"forgot_units": f"{price} + {cost}", "shipping_per_unit": f"{units} * ({price} + {cost})"}.get(
            mistake or "", f"{units} * {price} + {cost}")
        return lines + [f"{n['grand']} = {grand}"], self.fmt(_TEMPLATE["cheapest"], wid, n["grand"])

    def finish(self, source: str) -> None:
        """The optional check of the answer, then the final program (a literal, or computed)."""
        if self.rng.random() < _P_CHECK:
            lines, expr = self.compute(source)
            self.act(self.say("check"), self.comment("check before answering") + lines
                     + [f"{self.n['answer']} = {expr}", f"print({self.n['answer']})"])
            self.answer_var = self.n["answer"]
        if self.answer_var is not None:
            lines, expr = [], self.answer_var
        else:
            lines, expr = self.compute(source)
        if self.rng.random() < _P_LITERAL:
            value = self.evaluate([*lines, f"final_answer({expr})"])
            self.act(self.say("final"), [f"final_answer({self.s(value)})"])
        else:
            self.act(self.say("final"), [*lines, f"final_answer({expr})"])

    # -- single calls (stepwise) -------------------------------------------------------------
    def single(self, label: str, var: str, call: str) -> list[str]:
        """One tool call, printed (assigned to ``var`` first, in one style)."""
        if self.st.assign:
            return [f"{var} = {call}", self.pr(label, var)]
        return [f"print({call})"]

    def stock1(self, w: str) -> None:
        lines = self.head()
        call = self.call("check_stock", sku=self.e("sku"), warehouse=self.s(w))
        self.act(self.say("stock1", w=w),
                 self.comment(f"stock at {w}") + lines + self.single(f"{w} stock:", self.n["stock"], call))

    def quote1(self, w: str) -> None:
        lines = self.head()
        call = self.call("quote_shipping", warehouse=self.s(w), destination=self.e("dest"), units=self.e("units"))
        self.act(self.say("quote1", w=w), lines + self.single("", self.n["quote"], call))

    def price1(self) -> None:
        lines = self.head()
        self.act(self.say("price1"), lines + self.single("", self.n["info"], self.call("get_price", sku=self.e("sku"))))

    def convert1(self) -> None:
        t, n = self.t, self.n
        lines = self.head()
        total = "(" + " + ".join(str(t["stock"][w]) for w in t["whs"]) + f") * {t['price']!r}"
        self.act(self.say("convert1"), lines + [f"{n['total']} = {total}",
                                                f"{n['conv']} = {self.convert_args(n['total'])}",
                                                self.pr("", n["total"], n["conv"])])

    def docs(self) -> None:
        kind = self.t["kind"]
        tools = (["list_warehouses"] if self.t["country"] else []) + {
            "soonest": ["check_stock", "quote_shipping"], "cheapest": ["get_price", "check_stock", "quote_shipping"],
            "value": ["check_stock", "get_price", "convert_currency"]}[kind]
        if self.rng.random() < 0.5:
            tool = pick(self.rng, tuple(tools))
            lines = [f"print({tool}.description)", f"print({tool}.inputs)"]
        else:
            tv = self.n["tv"]
            what = pick(self.rng, ("description", "inputs"))
            lines = [f"for {tv} in [{', '.join(tools)}]:", f"    print({tv}.name, {tv}.{what})"]
        self.act(self.say("docs"), lines)


def _typo(rng: np.random.Generator, name: str, taken: set[str]) -> str:
    """A misspelling of ``name`` that names nothing defined (no keyword, no builtin)."""
    for _ in range(20):
        if len(name) <= 2:
            bad = name.upper() if rng.random() < 0.5 else name + name[-1]
        else:
            i = int(rng.integers(1, len(name) - 1))
            bad = pick(rng, (name[:i] + name[i + 1:], name[:i] + name[i] + name[i:],
                             name[:i - 1] + name[i] + name[i - 1] + name[i + 1:]))
        if bad != name and bad not in taken and bad.isidentifier() and not keyword.iskeyword(bad) \
                and not hasattr(builtins, bad):
            return bad
    return name + "_"


def _bad_value(rng: np.random.Generator, good: str, t: dict) -> str:
    """A value close to ``good`` that the tools reject."""
    if good in WAREHOUSES:
        options = ("W0", "W1" + good[1:], good.lower(), "WH" + good[1:], "W0" + good[1:])
    elif good == t["sku"]:
        digits = good[4:]
        swapped = digits[:2] + digits[3] + digits[2]
        options = ("SKU" + digits, good.lower(), "SKU-" + swapped if swapped != digits else "SKU-" + digits[:3])
    elif good in COUNTRIES:
        options = (COUNTRIES[good], _ISO3[good], good.lower())
    elif good in RATES:
        options = (good.lower(), good[:2])
    else:  # a city
        options = (good.lower(), good + "s", good[:-1], good.upper())
    return pick(rng, tuple(o for o in options if o != good))


# -- the strategies ---------------------------------------------------------------------------

def _stepwise(a: _Agent) -> None:
    t, rng = a.t, a.rng
    if t["country"]:
        a.act(a.say("list"), a.head() + a.single("", a.n["whs"], a.call("list_warehouses", country=a.s(t["country"]))))
    if t["kind"] == "value":
        price_first = rng.random() < 0.5
        if price_first:
            a.price1()
        for w in t["whs"]:
            a.stock1(w)
        if not price_first:
            a.price1()
        a.convert1()
        return a.finish("stepwise")
    price_at = int(rng.integers(2)) if t["kind"] == "cheapest" else -1
    if price_at == 0:
        a.price1()
    if rng.random() < 0.5:  # all the stocks, then the quotes
        for w in t["whs"]:
            a.stock1(w)
        for w in a.eligible:
            a.quote1(w)
    else:  # warehouse by warehouse
        for w in t["whs"]:
            a.stock1(w)
            if w in a.eligible:
                a.quote1(w)
    if price_at == 1:
        a.price1()
    a.finish("stepwise")


def _loop(a: _Agent) -> None:
    t, rng, kind = a.t, a.rng, a.t["kind"]
    if t["country"]:
        a.act(a.say("list"), a.head() + a.v_list())
    first = kind in ("cheapest", "value") and rng.random() < 0.5
    if first:
        a.act(a.say("price_loop"), a.head() + a.v_price())
    a.act(a.say("stock_loop"), a.head() + a.comment("stock everywhere") + a.v_stock())
    if kind == "value":
        if not first:
            a.act(a.say("price_loop"), a.head() + a.v_price())
        a.act(a.say("convert_loop"), a.v_convert())
    else:
        eligible = a.n["eligible"] if rng.random() < 0.5 else a.lit(a.eligible)
        a.act(a.say("quote_loop"), a.comment(f"quotes to {t['dest']}") + a.v_quotes(eligible))
        if kind == "cheapest" and not first:
            a.act(a.say("price_loop"), a.v_price())
    a.finish("vars")


def _chain(a: _Agent) -> None:
    t, n, kind = a.t, a.n, a.t["kind"]
    for i, w in enumerate(t["whs"]):
        lines = a.head()
        if i == 0 and t["country"]:
            lines += a.v_list()
        wx = f"{n['whs']}[0]" if i == 0 and t["country"] else a.s(w)
        label, shown = ("", [wx]) if i == 0 and t["country"] else (w, [])
        if i == 0 and kind != "soonest":
            lines.append(f"{n['price']} = {a.call('get_price', sku=a.e('sku'))}[{a.s('unit_price')}]")
        stock = n["stock"]
        lines.append(f"{stock} = {a.call('check_stock', sku=a.e('sku'), warehouse=wx)}")
        if kind == "value":
            amount = f"{stock} * {n['price']}"
            lines += [f"{n['conv']} = {a.convert_args(amount)}", a.pr(label, *shown, stock, n["conv"])]
            a.act(a.say("chain_value" if label else "chain_list", w=w), lines)
            continue
        call = a.call("quote_shipping", warehouse=wx, destination=a.e("dest"), units=a.e("units"))
        lines += [f"if {stock} >= {a.e('units')}:", f"    {n['quote']} = {call}",
                  f"    {a.pr(label, *shown, n['quote'])}"]
        if a.rng.random() < 0.5:
            short = f"not enough stock at {w}:" if label else "not enough stock:"
            lines += ["else:", f"    {a.pr(short, *shown, stock)}"]
        else:
            lines.insert(len(lines) - 3, a.pr(f"{w} stock:" if label else "", *shown, stock))
        a.act(a.say("chain" if label else "chain_list", w=w), lines)
    a.finish("chain")


def _one_shot(a: _Agent) -> None:
    lines = a.head() + a.comment("all lookups, then the answer") + a.v_all(prints=bool(a.rng.random() < 0.5))
    calc, expr = a.compute("vars")
    a.act(a.say("one_shot"), _answer_lines(a, lines + calc, expr))


def _answer_lines(a: _Agent, lines: list[str], expr: str) -> list[str]:
    if a.rng.random() < 0.5:
        return [*lines, f"{a.n['answer']} = {expr}", f"print({a.n['answer']})", f"final_answer({a.n['answer']})"]
    return [*lines, f"final_answer({expr})"]


def _no_tools(a: _Agent, correct: bool) -> None:
    t, rng = a.t, a.rng
    if rng.random() < _P_ESTIMATE:
        guess = round(float(rng.uniform(1.2, 4.0)), 2)
        var = pick(rng, ("per_unit", "guess", "rough", "assumed"))
        lines = a.comment("rough estimate, no lookups") + (
            [f"{var} = {guess}", f"print({t['units']} * {var})"] if t["kind"] == "soonest" else
            [f"{var} = {int(rng.integers(20, 300))}", f"print({t['units']} * {var} + {int(rng.integers(40, 200))})"]
            if t["kind"] == "cheapest" else
            [f"{var} = {RATES[t['cur']]}",
             f"print({int(rng.integers(50, 400))} * {len(t['whs'])} * {int(rng.integers(20, 300))} * {var})"])
        a.act(a.say("estimate"), lines)
    value = t["gold"] if correct else _guess(rng, t)
    a.act(a.say("no_tools"), [f"final_answer({a.s(value)})"])


def _guess(rng: np.random.Generator, t: dict) -> str:
    while True:
        w = pick(rng, tuple(t["whs"]))
        guess = (f"{w}, {int(rng.integers(1, 8))} days, {float(rng.uniform(60, 900)):.2f} EUR" if t["kind"] == "soonest"
                 else f"{w}, {float(rng.uniform(300, 40000)):.2f} EUR" if t["kind"] == "cheapest"
                 else f"{float(rng.uniform(1000, 200000)):.2f} {t['cur']}")
        if guess != t["gold"]:
            return guess


def _explore_first(a: _Agent) -> None:
    t, n = a.t, a.n
    r, probed = n["r"], None
    if t["country"]:
        tool, call = "list_warehouses", a.call("list_warehouses", country=a.s(t["country"]))
        r = n["whs"]
    elif t["kind"] == "value":
        tool, call = "get_price", a.call("get_price", sku=a.lit(t["sku"]))
        probed = r
    else:
        tool = "quote_shipping"
        call = a.call("quote_shipping", warehouse=a.s(t["whs"][0]), destination=a.lit(t["dest"]),
                      units=a.lit(t["units"]))
    a.act(a.say("probe", tool=tool), [f"{r} = {call}", f"print(type({r}))", f"print({r})"])
    lines = a.head() + a.comment("now everything") + a.v_all(bool(a.rng.random() < 0.5), listed=bool(t["country"]),
                                                             probed=probed)
    calc, expr = a.compute("vars")
    a.act(a.say("big"), _answer_lines(a, lines + calc, expr))


def _verify(a: _Agent) -> None:
    t, n = a.t, a.n
    lines = a.head() + a.v_all(prints=bool(a.rng.random() < 0.5))
    calc, expr = a.compute("vars")
    a.act(a.say("draft"), lines + calc + [f"{n['answer']} = {expr}", a.pr("candidate:", n["answer"])])
    a.answer_var = n["answer"]
    if t["kind"] == "value":
        check = [f"print({a.call('get_price', sku=a.e('sku'))})", f"print({a.convert_args(n['total'])})"]
        a.act(a.say("verify_value"), a.comment("double-check") + check)
    else:
        best = n["best"]
        check = [a.pr("stock:", a.call("check_stock", sku=a.e("sku"), warehouse=best)),
                 a.pr("quote:", a.call("quote_shipping", warehouse=best, destination=a.e("dest"),
                                       units=a.e("units")))]
        picked = a.env.ns[n["best"]]
        a.act(a.say("verify", best=picked), a.comment("double-check the pick") + check)
    a.finish("vars")


def _episode(rng: np.random.Generator, strategy: str, t: dict, correct: bool) -> _Agent:
    a = _Agent(rng, t, strategy, correct)
    if rng.random() < _P_DOCS:  # optional, whatever the strategy
        a.docs()
    if strategy == "no_tools":
        _no_tools(a, correct)
    else:
        {"stepwise": _stepwise, "loop": _loop, "chain": _chain, "one_shot": _one_shot,
         "explore_first": _explore_first, "verify": _verify}[strategy](a)
    if a.final is None or (a.final == t["gold"]) != correct:  # pragma: no cover - the design guarantees it
        raise RuntimeError(f"{strategy}: answered {a.final!r}, gold {t['gold']!r}, correct={correct}")
    return a


def codeact(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
            random_state: RandomState = 0) -> World:
    """Generate the CodeAct agent world (smolagents code actions inside chat ``messages``).

    Parameters
    ----------
    n_questions, n_samples
        Questions (their kinds in turn, :data:`KINDS`), and episodes per question and arm.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``react`` (``gold`` the question's answer); truth ``arm, question_id,
        sample_id, strategy, kind, n_actions`` (code actions, failed ones included),
        ``n_tool_calls`` (tool calls that ran), ``n_failures`` (failed programs) and ``correct``.

    Examples
    --------
    >>> w = codeact(n_questions=3, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('react', 6, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.truth["n_actions"].to_list()
    True
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = _tasks(rng, n_questions)

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, t: dict
                ) -> tuple[dict, tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        a = _episode(rng, strategy, t, correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [t["gold"]], "correct": correct,
                 "messages": a.messages},
                (t["kind"], a.n_actions, a.n_calls, a.n_failures, correct))

    return planted_world("codeact", "react", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_actions": pl.Int64, "n_tool_calls": pl.Int64,
                                       "n_failures": pl.Int64, "correct": pl.Boolean})
