"""A ToolBench / RapidAPI-style API-calling agent world: compound requests, fourteen APIs.

The user asks for something that one or more public APIs can answer ("What's the weather in
the city where Brathon Corp is headquartered?", "Convert 250 EUR to JPY and tell me the Nikkei
news today", "Which is cheaper for a night, a hotel in Lisbon or in Oslo?"). The agent has
fourteen tools in OpenAI ``tool_calls`` format, from six API families: weather
(``weather_current``, ``weather_forecast``), geo (``geocode``, ``reverse_geocode``), finance
(``stock_quote``, ``fx_rate``, ``crypto_price``), travel (``flight_search``, ``hotel_search``),
news (``news_search``, ``news_top``) and utility (``unit_convert``, ``calculator``,
``translate``). Results are JSON; failures are observations starting ``Error:`` (429 rate
limit, 401 invalid API key for a family, 400 missing required parameter, 404 city not found),
each followed by a call of the same tool: made again as it was after a rate limit or a key
error, corrected after a missing parameter or a misspelt city.

Three kinds of request (``kind`` in the truth): ``single`` (one API answers it), ``chain`` (two
APIs, the second using what the first returned: a company's headquarters then its weather, a
landmark's coordinates then hotels near them, a flight then the weather on landing, a coin's
dollar price then converted) and ``compare`` (the same question about two to four items). The
request decides WHICH APIs are called; the strategy decides the SHAPE.

Seven planted strategies; call counts overlap (planned calls 0, 1, 2 or 4, 2-4, 4-6, 2-5, 1-2;
with retries and optional steps about 0, 1-4, 2-8, 2-7, 4-11, 2-8, 1-2):

=============  ===========================================================================
``memory``     answer from memory, no tool
``one_call``   the request's first call only, then an answer (ignores the rest of a chained
               or compared request)
``chain``      each of the request's first one or two items resolved first (geocode the
               place, find the ticker, translate the topic, the USD leg of a conversion) and
               the resolved value fed into the next call: resolve, call, resolve, call
``fan_out``    the same tool on two to four items (the request's items, or the asked one and
               nearby variants: other cities, peer companies, other dates), then a comparison
``over_call``  four to six different, loosely related APIs (news, weather, quotes, geocoding
               ...) including the request's own, in any order, then picks what fits
``verify``     the request's calls in full, a draft answer in words, then a cross-check with a
               different API (a forecast against current weather, a calculator against a rate,
               reverse geocoding against a hotel's address, headlines against a quote)
``give_up``    the request's first call fails once or twice, then an apology (no retry that
               succeeds)
=============  ===========================================================================

Execution failures (``_P_FAIL`` per call that can fail, each followed by the same tool again)
occur inside every strategy that calls a tool except ``give_up``, whose failures ARE the
strategy. Two optional steps at fixed rates, independent of arm, kind of request and strategy
(in every tool-using strategy but ``give_up``): a final ``unit_convert`` (a temperature, a
distance) or ``translate`` of the result before answering (``_P_FINAL_UTILITY``), and, after
any successful call, the identical call made again "to be sure" (``_P_REPEAT`` per call).
Arguments, results and the agent's words vary inside every strategy.

The mixture depends mildly on the kind of request for one strategy: ``fan_out``'s weight is
multiplied by ``KIND_TILT["compare"]["fan_out"]`` (1.8) on comparison requests, and the mixture
renormalised; every strategy is used on every kind. The ``rl`` arm differs from ``base`` only in
its mixture; success depends only on the strategy (random within it). ``planted`` holds the
shares averaged over the world's requests.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState
from mechanism.datasets.worlds._base import World, draw, mixture_planted, name, pick, truth_frame, word, world_generator

STRATEGIES = ("memory", "one_call", "chain", "fan_out", "over_call", "verify", "give_up")
KINDS = ("single", "chain", "compare")
ARMS = {
    "base": {"memory": 0.14, "one_call": 0.24, "chain": 0.12, "fan_out": 0.12, "over_call": 0.16, "verify": 0.08,
             "give_up": 0.14},
    "rl": {"memory": 0.04, "one_call": 0.1, "chain": 0.24, "fan_out": 0.16, "over_call": 0.1, "verify": 0.26,
           "give_up": 0.1},
}
#: kind of request -> strategy -> factor on its weight (then renormalised)
KIND_TILT = {"compare": {"fan_out": 1.8}}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"memory": 0.15, "one_call": 0.4, "chain": 0.75, "fan_out": 0.6, "over_call": 0.5, "verify": 0.8,
            "give_up": 0.05}
_P_FAIL = 0.15  # a call that can fail does, then the same tool is called again
_P_REPEAT = 0.08  # after a successful call: the identical call again, "to be sure"
_P_FINAL_UTILITY = 0.3  # a unit_convert or translate of the result before the answer

TOOLS = ("weather_current", "weather_forecast", "geocode", "reverse_geocode", "stock_quote", "fx_rate",
         "crypto_price", "flight_search", "hotel_search", "news_search", "news_top", "unit_convert", "calculator",
         "translate")
_FAMILY_OF_TOOL = {"weather_current": "weather", "weather_forecast": "weather", "geocode": "geo",
                   "reverse_geocode": "geo", "stock_quote": "finance", "fx_rate": "finance", "crypto_price": "finance",
                   "flight_search": "travel", "hotel_search": "travel", "news_search": "news", "news_top": "news",
                   "unit_convert": "utility", "calculator": "utility", "translate": "utility"}
_CITIES = (("Lisbon", "PT"), ("Oslo", "NO"), ("Nairobi", "KE"), ("Osaka", "JP"), ("Santiago", "CL"),
           ("Hanoi", "VN"), ("Toronto", "CA"), ("Krakow", "PL"), ("Lima", "PE"), ("Perth", "AU"), ("Seville", "ES"),
           ("Tbilisi", "GE"), ("Accra", "GH"), ("Porto", "PT"), ("Bergen", "NO"), ("Denver", "US"))
_CURRENCIES = ("EUR", "JPY", "USD", "GBP", "CHF", "INR", "BRL", "NOK", "CAD")
_MARKETS = {"EUR": "DAX", "JPY": "Nikkei", "USD": "S&P 500", "GBP": "FTSE", "CHF": "SMI", "INR": "Sensex",
            "BRL": "Bovespa", "NOK": "Oslo Bors", "CAD": "TSX"}
_COINS = ("BTC", "ETH", "SOL", "ADA", "DOGE", "XRP", "DOT")
_TOPICS = ("elections", "the heatwave", "the central bank", "the football final", "a rail strike", "chip exports",
           "the film festival", "wildfires")
_LANGS = {"PT": "pt", "NO": "no", "KE": "sw", "JP": "ja", "CL": "es", "VN": "vi", "CA": "fr", "PL": "pl",
          "PE": "es", "AU": "en", "ES": "es", "GE": "ka", "GH": "en", "US": "en"}
_DAYS = ("next Friday", "tomorrow", "this Saturday", "next Monday", "the 14th", "March 3")
_SAY = {
    "weather_current": ("Checking the current weather.", "Let me get the weather now.", "Weather API first.", ""),
    "weather_forecast": ("Let me look at the forecast.", "Getting the forecast.", "Forecast check.", ""),
    "geocode": ("Let me find where that is.", "Geocoding the place first.", "I need its coordinates.", ""),
    "reverse_geocode": ("Let me see what is at those coordinates.", "Reverse-geocoding it.", "Where is that?", ""),
    "stock_quote": ("Getting the quote.", "Let me check the share price.", "Stock API.", ""),
    "fx_rate": ("Looking up the exchange rate.", "Let me convert that.", "Currency rates.", ""),
    "crypto_price": ("Checking the coin's price.", "Let me get the crypto price.", "Crypto API.", ""),
    "flight_search": ("Searching flights.", "Let me look for flights.", "Flight search.", ""),
    "hotel_search": ("Searching hotels.", "Let me find hotels.", "Looking for a place to stay.", ""),
    "news_search": ("Searching the news.", "Let me look for articles.", "News search.", ""),
    "news_top": ("Top headlines first.", "Let me see the top stories.", "Headlines.", ""),
    "unit_convert": ("Converting the units for you.", "Let me convert that.", "Unit conversion.", ""),
    "calculator": ("Let me compute it.", "Quick calculation.", "Calculator.", ""),
    "translate": ("Translating.", "Let me translate that.", "Translation.", ""),
}
_AGAIN = ("Let me call it once more to be sure.", "Double-checking with the same call.", "Once more, to be safe.")


def _city(rng: np.random.Generator) -> tuple[str, str]:
    return _CITIES[int(rng.integers(len(_CITIES)))]


def _company(rng: np.random.Generator) -> dict[str, str]:
    n = name(rng)
    hq, cc = _city(rng)
    return {"company": f"{n} {pick(rng, ('Corp', 'Group', 'Labs', 'Holdings', 'Inc'))}",
            "ticker": (n[:4] + word(rng, 1)).upper()[:4], "hq": hq, "country": cc}


def _coords(rng: np.random.Generator) -> tuple[float, float]:
    return round(float(rng.uniform(-45, 65)), 4), round(float(rng.uniform(-120, 150)), 4)


def _entity(rng: np.random.Generator, family: str) -> dict[str, Any]:
    """A random item the family's API can be asked about."""
    if family in ("weather", "forecast"):
        city, cc = _city(rng)
        return {"city": city, "country": cc, "date": pick(rng, _DAYS)}
    if family == "stocks":
        return _company(rng)
    if family == "fx":
        a, b = (str(c) for c in rng.choice(_CURRENCIES, 2, replace=False))
        return {"amount": int(pick(rng, (50, 100, 250, 1000, 1200, 40))), "from": a, "to": b}
    if family == "crypto":
        return {"coin": pick(rng, _COINS), "currency": pick(rng, _CURRENCIES)}
    if family == "hotel":
        place = pick(rng, (f"the {name(rng)} Tower", f"{name(rng)} Square", f"the {name(rng)} Museum"))
        city, cc = _city(rng)
        return {"place": f"{place}, {city}", "city": city, "country": cc, "date": pick(rng, _DAYS),
                "nights": int(rng.integers(1, 5))}
    if family == "flight":
        (o, _), (d, cc) = _city(rng), _city(rng)
        return {"origin": o, "destination": d, "country": cc, "date": pick(rng, _DAYS)}
    if family == "news":
        city, cc = _city(rng)
        return {"topic": pick(rng, _TOPICS), "country": cc}
    if family == "geo":  # a company's headquarters
        return _company(rng)
    raise ValueError(family)


def _variants(rng: np.random.Generator, family: str, ent: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """``ent`` and ``n`` other items like it (a nearby city, a peer company, another date or
    currency), all different in what their calls show."""
    out = [ent]
    while len(out) <= n:
        other = _entity(rng, family)
        if family in ("hotel", "flight", "forecast") and rng.random() < 0.5:
            other = {**ent, "date": other["date"]}
        if all(_shown(family, other) != _shown(family, e) for e in out):
            out.append(other)
    return out


def _shown(family: str, ent: dict[str, Any]) -> tuple:
    """What of an item its API call shows (two items asked about must differ in it)."""
    keys = {"weather": ("city",), "forecast": ("city", "date"), "stocks": ("ticker",), "fx": ("amount", "from", "to"),
            "crypto": ("coin", "currency"), "hotel": ("place", "date", "nights"),
            "flight": ("origin", "destination", "date"), "news": ("topic", "country")}[family]
    return tuple(ent[k] for k in keys)


class _Spec:
    """One tool call: its tool, arguments and result, and ``place``: the argument naming a
    place (a misspelt one is answered "city not found")."""

    def __init__(self, tool: str, args: dict[str, Any], result: Any, place: str | None = None) -> None:
        self.tool, self.args, self.result, self.place = tool, args, result, place


def _weather(rng: np.random.Generator, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out = {"temp_c": round(float(rng.uniform(-8, 36)), 1), "conditions": pick(rng, ("clear", "rain", "cloudy", "snow",
                                                                                     "windy", "fog")),
           "humidity": int(rng.integers(20, 100))}
    if tool == "weather_forecast":
        out = {"days": [{**out, "day": i} for i in range(int(args.get("days", 1)))]}
    return out


def _main(rng: np.random.Generator, family: str, ent: dict[str, Any]) -> _Spec:
    """The call that answers ``ent`` directly."""
    if family == "weather":
        args = {"city": ent["city"]}
        if rng.random() < 0.5:
            args["units"] = pick(rng, ("metric", "imperial"))
        return _Spec("weather_current", args, {"city": ent["city"], **_weather(rng, "weather_current", args)},
                     place="city")
    if family == "forecast":
        args = {"city": ent["city"], "date": ent["date"], "days": int(pick(rng, (1, 2, 3)))}
        return _Spec("weather_forecast", args, {"city": ent["city"], **_weather(rng, "weather_forecast", args)},
                     place="city")
    if family == "stocks":
        return _Spec("stock_quote", {"symbol": ent["ticker"]},
                     {"symbol": ent["ticker"], "price": round(float(rng.uniform(3, 900)), 2),
                      "change_pct": round(float(rng.normal(0, 2)), 2)})
    if family == "fx":
        rate = round(float(rng.uniform(0.005, 160)), 4)
        return _Spec("fx_rate", {"from": ent["from"], "to": ent["to"], "amount": ent["amount"]},
                     {"rate": rate, "converted": round(rate * ent["amount"], 2)})
    if family == "crypto":
        return _Spec("crypto_price", {"coin": ent["coin"], "currency": ent["currency"]},
                     {"coin": ent["coin"], "price": round(float(rng.uniform(0.05, 70000)), 2),
                      "change_24h": round(float(rng.normal(0, 4)), 2)})
    if family == "hotel":
        args = {"location": ent["place"], "checkin": ent["date"], "nights": ent["nights"]}
        if rng.random() < 0.4:
            args["max_price"] = int(pick(rng, (120, 200, 300)))
        return _Spec("hotel_search", args, {"hotels": [{"name": f"Hotel {name(rng)}",
                                                        "price": int(rng.integers(60, 400)),
                                                        "distance_km": round(float(rng.uniform(0.1, 4)), 1)}
                                                       for _ in range(int(rng.integers(1, 4)))]}, place="location")
    if family == "flight":
        return _Spec("flight_search", {"origin": ent["origin"], "destination": ent["destination"], "date": ent["date"]},
                     {"flights": [{"airline": f"{name(rng)} Air", "price": int(rng.integers(40, 900)),
                                   "depart": f"{int(rng.integers(5, 23)):02d}:{pick(rng, ('05', '20', '45'))}"}
                                  for _ in range(int(rng.integers(1, 4)))]}, place="destination")
    if family == "news":
        args = {"query": ent["topic"], "country": ent["country"]}
        return _Spec("news_search", args, {"articles": [{"title": f"{ent['topic'].capitalize()}: {word(rng)} "
                                                                  f"{pick(rng, ('update', 'latest', 'analysis'))}"}
                                                        for _ in range(int(rng.integers(1, 4)))]})
    if family == "geo":
        lat, lon = _coords(rng)
        return _Spec("geocode", {"query": f"{ent['company']} headquarters"},
                     {"name": ent["hq"], "country": ent["country"], "lat": lat, "lon": lon})
    raise ValueError(family)


def _chained(rng: np.random.Generator, family: str, ent: dict[str, Any]) -> list[_Spec]:
    """Two calls, the first resolving what the second is called with."""
    lat, lon = _coords(rng)
    if family in ("weather", "forecast"):
        tool = "weather_current" if family == "weather" else "weather_forecast"
        args = {"lat": lat, "lon": lon} | ({"days": int(pick(rng, (1, 2)))} if family == "forecast" else {})
        return [_Spec("geocode", {"query": pick(rng, (ent["city"], f"{ent['city']}, {ent['country']}"))},
                      {"name": ent["city"], "lat": lat, "lon": lon}, place="query"),
                _Spec(tool, args, _weather(rng, tool, args))]
    if family == "stocks":
        return [_Spec("news_search", {"query": pick(rng, (f"{ent['company']} stock ticker",
                                                          f"{ent['company']} shares symbol"))},
                      {"articles": [{"title": f"{ent['company']} ({ent['ticker']}) shares {word(rng)}"}]}),
                _main(rng, "stocks", ent)]
    if family == "fx":
        usd = round(ent["amount"] * float(rng.uniform(0.01, 2)), 2)
        rate = round(float(rng.uniform(0.005, 160)), 4)
        return [_Spec("fx_rate", {"from": ent["from"], "to": "USD", "amount": ent["amount"]},
                      {"rate": round(usd / ent["amount"], 4), "converted": usd}),
                _Spec("fx_rate", {"from": "USD", "to": ent["to"], "amount": usd},
                      {"rate": rate, "converted": round(rate * usd, 2)})]
    if family == "crypto":
        price = round(float(rng.uniform(0.05, 70000)), 2)
        rate = round(float(rng.uniform(0.005, 160)), 4)
        return [_Spec("crypto_price", {"coin": ent["coin"], "currency": "USD"}, {"coin": ent["coin"], "price": price}),
                _Spec("fx_rate", {"from": "USD", "to": ent["currency"], "amount": price},
                      {"rate": rate, "converted": round(rate * price, 2)})]
    if family == "hotel":
        return [_Spec("geocode", {"query": ent["place"]}, {"name": ent["place"], "lat": lat, "lon": lon},
                      place="query"),
                _Spec("hotel_search", {"lat": lat, "lon": lon, "checkin": ent["date"],
                                       "radius_km": int(pick(rng, (1, 2, 5)))},
                      {"hotels": [{"name": f"Hotel {name(rng)}", "price": int(rng.integers(60, 400))}]})]
    if family == "flight":
        iata = (ent["destination"][:2] + word(rng, 1)).upper()[:3]
        return [_Spec("geocode", {"query": f"{ent['destination']} airport"},
                      {"name": f"{ent['destination']} International", "iata": iata, "lat": lat, "lon": lon}),
                _Spec("flight_search", {"origin": ent["origin"], "destination": iata, "date": ent["date"]},
                      {"flights": [{"airline": f"{name(rng)} Air", "price": int(rng.integers(40, 900))}]})]
    if family == "news":
        lang = _LANGS.get(ent["country"], "en")
        local = f"{word(rng)} {word(rng)}"
        return [_Spec("translate", {"text": ent["topic"], "target": lang}, {"translation": local}),
                _Spec("news_search", {"query": local, "lang": lang},
                      {"articles": [{"title": f"{local.capitalize()} {word(rng)}"}]})]
    if family == "geo":
        first = _main(rng, "geo", ent)
        return [first, _Spec("reverse_geocode", {"lat": first.result["lat"], "lon": first.result["lon"]},
                             {"city": ent["hq"], "country": ent["country"], "address": f"{int(rng.integers(1, 300))} "
                                                                                      f"{name(rng)} Street"})]
    raise ValueError(family)


def _cross(rng: np.random.Generator, family: str, ent: dict[str, Any], last: _Spec) -> _Spec:
    """A call of another API than ``last``'s that checks the answer."""
    if family in ("weather", "forecast"):
        tool = "weather_forecast" if last.tool == "weather_current" else "weather_current"
        args = {"city": ent["city"]} | ({"days": 1} if tool == "weather_forecast" else {})
        return _Spec(tool, args, _weather(rng, tool, args), place="city")
    if family == "stocks":
        return _Spec("news_search", {"query": pick(rng, (f"{ent['company']} shares today", f"{ent['ticker']} stock"))},
                     {"articles": [{"title": f"{ent['company']} {pick(rng, ('rises', 'falls', 'flat'))}"}]})
    if family in ("fx", "crypto"):
        conv = last.result.get("converted", last.result.get("price", 1.0))
        rate = last.result.get("rate", 1.0)
        expr = pick(rng, (f"{conv} / {rate}", f"{rate} * {last.args.get('amount', 1)}"))
        return _Spec("calculator", {"expression": expr}, {"result": round(float(rng.uniform(1, 1e4)), 3)})
    if family == "hotel":
        lat, lon = _coords(rng)
        return _Spec("reverse_geocode", {"lat": lat, "lon": lon},
                     {"city": ent["city"], "address": f"{int(rng.integers(1, 300))} {name(rng)} Street"})
    if family == "flight":
        return _Spec("news_search", {"query": f"{ent['destination']} airport delays"},
                     {"articles": [{"title": f"{ent['destination']} airport {word(rng)}"}]})
    if family == "news":
        return _Spec("news_top", {"country": ent["country"]} | ({"category": "general"} if rng.random() < 0.5 else {}),
                     {"articles": [{"title": f"{word(rng).capitalize()} {word(rng)}"} for _ in range(3)]})
    if family == "geo":
        return _Spec("reverse_geocode", {"lat": last.result.get("lat", 0.0), "lon": last.result.get("lon", 0.0)},
                     {"city": ent["hq"], "country": ent["country"]})
    raise ValueError(family)


def _loose(rng: np.random.Generator, tool: str, label: str) -> _Spec:
    """A call of ``tool`` loosely related to the request (``label``: what it is about)."""
    city, cc = _city(rng)
    lat, lon = _coords(rng)
    if tool in ("weather_current", "weather_forecast"):
        args = {"city": city} | ({"days": 2} if tool == "weather_forecast" else {})
        return _Spec(tool, args, _weather(rng, tool, args), place="city")
    if tool == "geocode":
        return _Spec(tool, {"query": label}, {"name": label, "lat": lat, "lon": lon}, place="query")
    if tool == "reverse_geocode":
        return _Spec(tool, {"lat": lat, "lon": lon}, {"city": city, "country": cc})
    if tool == "stock_quote":
        sym = word(rng, 1).upper()[:4]
        return _Spec(tool, {"symbol": sym}, {"symbol": sym, "price": round(float(rng.uniform(3, 900)), 2)})
    if tool == "crypto_price":
        coin = pick(rng, _COINS)
        return _Spec(tool, {"coin": coin, "currency": "USD"}, {"coin": coin, "price": round(float(rng.uniform(1, 9e4)),
                                                                                            2)})
    if tool == "fx_rate":
        return _Spec(tool, {"from": "USD", "to": pick(rng, _CURRENCIES), "amount": 1},
                     {"rate": round(float(rng.uniform(0.1, 150)), 4)})
    if tool == "news_search":
        return _Spec(tool, {"query": label}, {"articles": [{"title": f"{label} {word(rng)}"}]})
    if tool == "news_top":
        return _Spec(tool, {"country": cc}, {"articles": [{"title": f"{word(rng).capitalize()} {word(rng)}"}]})
    if tool == "hotel_search":
        return _Spec(tool, {"location": city, "checkin": pick(rng, _DAYS)},
                     {"hotels": [{"name": f"Hotel {name(rng)}", "price": int(rng.integers(60, 400))}]},
                     place="location")
    if tool == "flight_search":
        return _Spec(tool, {"origin": city, "destination": _city(rng)[0], "date": pick(rng, _DAYS)},
                     {"flights": [{"airline": f"{name(rng)} Air", "price": int(rng.integers(40, 900))}]},
                     place="destination")
    raise ValueError(tool)


class _Session:
    """One transcript in OpenAI chat format; tool calls numbered; failures then the same tool."""

    def __init__(self, rng: np.random.Generator, task: dict[str, Any], can_fail: bool) -> None:
        self.rng, self.task, self.can_fail = rng, task, can_fail
        system = pick(rng, ("You are a helpful assistant with access to RapidAPI tools.",
                            "You can call the APIs below to answer the user. Use them when needed.",
                            "You are an API-calling agent. Tools: weather, geo, finance, travel, news, utility."))
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                               {"role": "user", "content": task["text"]}]
        self.n = self.n_failures = 0

    def _turn(self, tool: str, args: dict[str, Any], result: str, said: str | None = None) -> None:
        self.n += 1
        cid = f"call_{word(self.rng, 1)}{self.n:02d}"
        said = pick(self.rng, _SAY[tool]) if said is None else said
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})
        if result.startswith("Error:"):
            self.n_failures += 1

    def error(self, spec: _Spec, *, transient: bool = False) -> tuple[dict[str, Any], str, bool]:
        """(the arguments of a failed first attempt, its error, whether the next call corrects
        them); transient errors (``transient``: only those) are answered by the same call made
        again."""
        kinds = ["429", "401"] + ([] if transient else ["missing"] + (["not_found"] if spec.place else []))
        kind = pick(self.rng, kinds)
        family = _FAMILY_OF_TOOL[spec.tool]
        if kind == "429":
            return spec.args, pick(self.rng, ("Error: 429 Too Many Requests - rate limit exceeded, retry after 2 s",
                                              "Error: 429 rate limit reached for this endpoint")), False
        if kind == "401":
            return spec.args, pick(self.rng, (f"Error: 401 invalid API key for the {family} API",
                                              f"Error: 401 Unauthorized ({family} API key rejected)")), False
        if kind == "missing" and len(spec.args) > 0:
            key = pick(self.rng, list(spec.args))
            bad = {k: v for k, v in spec.args.items() if k != key}
            return bad, f"Error: 400 missing required parameter '{key}'", True
        place = spec.place or next(iter(spec.args))
        value = str(spec.args.get(place, ""))
        bad_value = value[:-2] + value[-1:] if len(value) > 3 else value + "x"
        return {**spec.args, place: bad_value}, f"Error: 404 city not found: '{bad_value}'", True

    def call(self, spec: _Spec, said: str | None = None, *, repeatable: bool = True) -> None:
        """The call; first, where it can fail and does, a failed attempt of the same tool."""
        if self.can_fail and self.rng.random() < _P_FAIL:
            bad, err, _ = self.error(spec)
            self._turn(spec.tool, bad, err, said)
            said = pick(self.rng, ("Retrying.", "Let me try that again.", "Fixing the request.", ""))
        self._turn(spec.tool, spec.args, json.dumps(spec.result), said)
        if repeatable and self.can_fail and self.rng.random() < _P_REPEAT:  # the optional repeat
            self.call(spec, pick(self.rng, _AGAIN), repeatable=False)

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _final_utility(rng: np.random.Generator, family: str, ent: dict[str, Any]) -> _Spec:
    """The optional last step: the result's units converted, or its text translated."""
    if family in ("weather", "forecast"):
        v = round(float(rng.uniform(-8, 36)), 1)
        return _Spec("unit_convert", {"value": v, "from": "C", "to": "F"}, {"result": round(v * 9 / 5 + 32, 1)})
    if family in ("hotel", "flight"):
        v = round(float(rng.uniform(0.2, 900)), 1)
        return _Spec("unit_convert", {"value": v, "from": "km", "to": "mi"}, {"result": round(v * 0.6214, 1)})
    target = pick(rng, ("en", "es", "fr", "de", "ja"))
    return _Spec("translate", {"text": pick(rng, ("The result is ready.", "Here are the figures.",
                                                  f"About {ent.get('company', ent.get('coin', 'it'))}.")),
                               "target": target}, {"translation": f"{word(rng)} {word(rng)}"})


def _episode(rng: np.random.Generator, strategy: str, task: dict[str, Any]) -> tuple[list[dict[str, Any]], int, int]:
    """The transcript, its number of tool calls and of failed ones."""
    s = _Session(rng, task, can_fail=strategy not in ("memory", "give_up"))
    units: list[tuple[str, dict[str, Any]]] = task["units"]
    label = task["label"]
    if strategy == "memory":
        s.say(pick(rng, (f"From what I know, {label} is usually around what I would expect; I can't check live data.",
                         f"I don't have live access right now, but as of my knowledge {label} was roughly "
                         f"{int(rng.integers(2, 400))}.", "I believe the answer is fairly typical for this time of "
                                                          "year; please check an official source.",
                         f"Without calling an API: my best guess for {label} is {int(rng.integers(5, 90))}.")))
        return s.messages, s.n, s.n_failures
    if strategy == "give_up":
        spec = _main(rng, *units[0])
        for i in range(int(rng.integers(1, 3))):  # the second attempt: made as it should be, fails again
            bad, err, _ = s.error(spec, transient=i > 0)
            s._turn(spec.tool, bad, err)
        s.say(pick(rng, ("I'm sorry, the API is not responding right now, so I can't answer that.",
                         f"Apologies: I could not get {label}; the service returned errors.",
                         "Sorry, I'm unable to complete this request at the moment. Please try again later.",
                         "Unfortunately the tool failed, and I can't give you a reliable answer.")))
        return s.messages, s.n, s.n_failures

    last_family, last_ent = units[-1]
    if strategy == "one_call":
        s.call(_main(rng, *units[0]))
        last_family, last_ent = units[0]
    elif strategy == "chain":
        for family, ent in units[:2]:
            first, second = _chained(rng, family, ent)
            s.call(first)
            s.call(second, pick(rng, ("Now using that result.", f"With that, the {second.tool.split('_')[0]} call.",
                                      "Feeding it into the next API.", "")))
    elif strategy == "fan_out":
        if task["kind"] == "compare":
            items = units
        elif task["kind"] == "chain":
            s.call(_main(rng, *units[0]))
            family, ent = units[1]
            items = [(family, e) for e in _variants(rng, family, ent, int(rng.integers(1, 3)))]
        else:
            family, ent = units[0]
            items = [(family, e) for e in _variants(rng, family, ent, int(rng.integers(1, 4)))]
        for family, ent in items:
            s.call(_main(rng, family, ent))
    elif strategy == "over_call":
        own = [_main(rng, *units[0])]
        if len(units) > 1 and units[1][0] != units[0][0]:  # a chained request's second API too
            own.append(_main(rng, *units[1]))
        tools = {sp.tool for sp in own}
        others = [t for t in TOOLS if t not in tools and _FAMILY_OF_TOOL[t] != "utility"]
        n = int(rng.integers(4, 7))
        extra = [str(t) for t in rng.choice(others, max(n - len(own), 2), replace=False)]
        specs = own[:1] + [_loose(rng, t, label) for t in extra] + own[1:]
        order = rng.permutation(len(specs))
        for i in order:
            s.call(specs[int(i)])
        s.say(pick(rng, ("That's a lot of data; picking what answers the question.", "Some of these are not needed.",
                         "Let me pick the relevant results.", "OK.")))
    elif strategy == "verify":
        specs = [_main(rng, *u) for u in units]
        for spec in specs:
            s.call(spec)
        s.say(pick(rng, (f"Draft answer: {label} looks settled. Let me cross-check it with another API.",
                         "I have an answer; before sending it, a second source.",
                         "Preliminary result ready. Cross-checking.", "Let me verify this another way.")))
        s.call(_cross(rng, last_family, last_ent, specs[-1]))
    if rng.random() < _P_FINAL_UTILITY:  # the optional step, at a fixed rate
        s.call(_final_utility(rng, last_family, last_ent))
    s.say(pick(rng, (f"Here is what I found about {label}.", f"Done: {label}.", "Summary of the results above.",
                     f"Based on the API results, {label} is as shown.", "That should answer your request.")))
    return s.messages, s.n, s.n_failures


_SINGLE = {  # family -> request text
    "weather": ("What's the weather in {city} right now?", "Is it raining in {city}?",
                "Current temperature in {city}, please."),
    "forecast": ("What's the forecast for {city} {date}?", "Will it be sunny in {city} {date}?"),
    "stocks": ("What's {company}'s share price?", "How is {company} stock doing today?"),
    "fx": ("Convert {amount} {from} to {to}.", "How much is {amount} {from} in {to}?"),
    "crypto": ("What's the price of {coin} in {currency}?", "How much is one {coin} worth in {currency}?"),
    "hotel": ("Find a hotel near {place} for {date}.", "I need a room close to {place}, {nights} nights from {date}."),
    "flight": ("Any flights from {origin} to {destination} {date}?",
               "Cheapest flight {origin} -> {destination} {date}?"),
    "news": ("Latest news about {topic} in {country}?", "What are people saying about {topic} ({country})?"),
}
_COMPARE = ("weather", "stocks", "crypto", "hotel", "flight")


def _task(rng: np.random.Generator, kind: str) -> dict[str, Any]:
    """A request: its units ((family, item) in the order the request needs them) and text."""
    if kind == "single":
        family = pick(rng, tuple(_SINGLE))
        ent = _entity(rng, family)
        return {"kind": kind, "family": family, "units": [(family, ent)], "label": f"your {family} request",
                "text": pick(rng, _SINGLE[family]).format(**ent)}
    if kind == "chain":
        combo = pick(rng, ("hq_weather", "fx_news", "landmark_hotel", "flight_weather", "coin_fx"))
        if combo == "hq_weather":
            c = _company(rng)
            units = [("geo", c), ("weather", {"city": c["hq"], "country": c["country"], "date": "today"})]
            text = pick(rng, (f"What's the weather in the city where {c['company']} is headquartered, in Celsius?",
                              f"Is it cold today where {c['company']} has its head office?"))
        elif combo == "fx_news":
            fx = _entity(rng, "fx")
            units = [("fx", fx), ("news", {"topic": f"{_MARKETS[fx['to']]} market", "country": "US"})]
            text = pick(rng, (f"Convert {fx['amount']} {fx['from']} to {fx['to']} and tell me the "
                              f"{_MARKETS[fx['to']]} news today.",
                              f"How many {fx['to']} do I get for {fx['amount']} {fx['from']}? Also any "
                              f"{_MARKETS[fx['to']]} headlines?"))
        elif combo == "landmark_hotel":
            h = _entity(rng, "hotel")
            units = [("geo", {**_company(rng), "company": h["place"], "hq": h["city"]}), ("hotel", h)]
            text = pick(rng, (f"Find a hotel near {h['place']} for {h['date']}.",
                              f"Where can I stay within walking distance of {h['place']}, {h['date']}?"))
        elif combo == "flight_weather":
            f = _entity(rng, "flight")
            units = [("flight", f), ("forecast", {"city": f["destination"], "country": f["country"],
                                                  "date": f["date"]})]
            text = pick(rng, (f"Book-search a flight {f['origin']} to {f['destination']} {f['date']} and tell me "
                              f"the weather when I land.", f"Flights from {f['origin']} to {f['destination']} "
                                                           f"{f['date']}? What will the weather be there?"))
        else:
            cr = _entity(rng, "crypto")
            units = [("crypto", {**cr, "currency": "USD"}), ("fx", {"amount": 1, "from": "USD",
                                                                   "to": cr["currency"]})]
            text = pick(rng, (f"What's {cr['coin']} worth in {cr['currency']}? Get the dollar price and convert.",
                              f"Price of {cr['coin']} in USD, then in {cr['currency']}, please."))
        return {"kind": kind, "family": combo, "units": units, "label": f"your {combo.replace('_', ' ')} request",
                "text": text}
    family = pick(rng, _COMPARE)
    k = int(rng.integers(2, 5))
    key = {"weather": "city", "stocks": "company", "crypto": "coin", "hotel": "city", "flight": "date"}[family]
    units: list[tuple[str, dict[str, Any]]] = []
    while len(units) < k:  # items that differ in what the request names (a flight: the same route, other days)
        ent = _entity(rng, family)
        if family == "flight" and units:
            ent = {**units[0][1], "date": ent["date"]}
        if all(ent[key] != e[key] for _, e in units):
            units.append((family, ent))
    items = ", ".join(str(ent[key]) for _, ent in units)
    text = pick(rng, {"weather": (f"Which is warmer today: {items}?", f"Compare the weather in {items}."),
                      "stocks": (f"Compare the share prices of {items}.", f"Which did best today: {items}?"),
                      "crypto": (f"Which of {items} gained the most today?", f"Compare prices: {items}."),
                      "hotel": (f"Where is a hotel cheapest for a night: {items}?", f"Compare hotels in {items}."),
                      "flight": (f"Which day is cheapest to fly: {items}?", f"Compare flight prices on {items}.")
                      }[family])
    return {"kind": kind, "family": family, "units": units, "label": f"the comparison of {items}", "text": text}


def _mixture(mixture: dict[str, float], kind: str) -> dict[str, float]:
    """The arm's mixture on a kind of request (tilted by :data:`KIND_TILT`, renormalised)."""
    w = {s: float(p) * KIND_TILT.get(kind, {}).get(s, 1.0) for s, p in mixture.items()}
    total = sum(w.values())
    return {s: v / total for s, v in w.items()}


def toolbench(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
              random_state: RandomState = 0) -> World:
    """Generate the ToolBench-style API-calling world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Requests (tasks; their kinds cycle single, chain, compare), and episodes per request
        and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it);
        tilted on comparison requests by :data:`KIND_TILT`.
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai``; the truth has ``strategy``, ``kind``, ``family``,
        ``n_calls`` (tool calls, failures included), ``n_failures`` and ``correct``.

    Examples
    --------
    >>> w = toolbench(n_questions=3, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["kind"]))
    ('openai', 6, ['chain', 'compare', 'single'])
    """
    rng = world_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"toolbench-{i:04d}", _task(rng, KINDS[i % len(KINDS)])) for i in range(n_questions)]
    records, truth = [], []
    for arm, mixture in arms.items():
        for qid, task in tasks:
            mix = _mixture(mixture, task["kind"])
            for sample in range(n_samples):
                strategy = draw(rng, mix)
                messages, n_calls, n_failures = _episode(rng, strategy, task)
                correct = bool(rng.random() < _SUCCESS[strategy])
                records.append({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [], "correct": correct,
                                "messages": messages})
                truth.append((arm, qid, sample, strategy, task["kind"], task["family"], n_calls, n_failures, correct))
    frame = truth_frame(truth, {"kind": pl.String, "family": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                "correct": pl.Boolean})
    shares = {arm: {s: float(np.mean([_mixture(mix, t["kind"])[s] for _, t in tasks])) if tasks else float(p)
                    for s, p in mix.items()} for arm, mix in arms.items()}
    return World(name="toolbench", format="openai", records=records, truth=frame,
                 planted=mixture_planted(shares, _SUCCESS))
