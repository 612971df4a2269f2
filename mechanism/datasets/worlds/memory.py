"""A stateful assistant with long-term memory talking with a returning user (MemGPT / Letta-like).

The assistant keeps three memories, as a Letta agent does: *core memory*, two small text blocks
(``persona`` and ``human``) shown in the system message and so always in context; *archival
memory*, passages the agent saved earlier, searched by meaning; and *recall memory*, every past
message of the conversation, searched by text or by date. The user comes back and asks for
something they told the assistant in an earlier session ("What was the name of the restaurant I
told you about last month?", "Remind me what my sister's kids are called", "Did I already tell
you my new address?"), a question that needs one remembered fact or two (:data:`TOPICS`).

The records are OpenAI chat transcripts with ``tool_calls`` (format ``openai``) as Letta logs
them. The assistant speaks to the user ONLY through the tool ``send_message(message)``: the
``content`` of an assistant message is its inner monologue, a short private thought, or empty;
one call per assistant message. The episode's final answer is the text of its LAST
``send_message`` call. After it the transcript either ends with that call's tool message (no
final assistant text at all, as in real Letta logs) or with an assistant message holding only an
inner thought (:data:`_P_TRAILING`). The tools (:data:`TOOLS`), with Letta's names and results:
``send_message(message)``, ``core_memory_append(label, content)``,
``core_memory_replace(label, old_content, new_content)`` (label ``human``),
``archival_memory_insert(content)``, ``archival_memory_search(query, page?)`` (a JSON list of
``{"timestamp", "content"}`` passages, or ``No results found.`` / ``[]``),
``conversation_search(query, page?)`` and ``conversation_search_date(start_date, end_date)``
(``Showing n of m results (page p/q): [...]`` with ``timestamp: ..., role - text`` entries, or
``No results found.``). Calls may carry ``request_heartbeat`` (true on a call after which the
agent goes on; absent or false on a ``send_message``). Every tool message is Letta's JSON
``{"status": "OK" | "Failed", "message": ..., "time": "2024-05-14 03:22:10 PM PDT-0700"}``;
``send_message`` and the memory edits return the message ``"None"``.

Where the facts live (:data:`SOURCES`, the question's *source*, in turn): in the ``human`` block
of core memory (``core``), in a passage of archival memory (``archival``), or only in the past
conversation (``conversation``). Every fact was once said by the user, so recall memory always
holds it (``conversation_search`` finds it, and ``conversation_search_date`` over a range that
holds the day it was said); ``archival_memory_search`` finds it only when the source is
``archival`` (else no result, or unrelated passages); the ``human`` block holds it only when the
source is ``core`` (else an older, vaguer line about it). Seven planted strategies (``k``: the
question's facts, 1 or 2; calls before failures and optional steps, ``send_message`` included):

=========================  =========================================================================
``answer_from_core``       answers at once from what is in context: ``send_message`` only (1 call)
``archival_lookup``        ``archival_memory_search`` once per fact, then answers (k + 1 calls)
``recall_lookup``          ``conversation_search`` once per fact, then answers (k + 1 calls)
``date_range_recall``      ``conversation_search_date`` once per fact, over the period the user
                           named ("last month", "in March", "a few weeks ago"; else the last 180
                           days), then answers (k + 1 calls)
``search_both_stores``     per fact ``archival_memory_search`` then ``conversation_search``, then
                           answers (2k + 1 calls)
``consolidate_to_core``    searches one store (archival or recall, drawn per episode) once per
                           fact, writes what it recalled into core memory with one
                           ``core_memory_append`` or ``core_memory_replace`` (the old line
                           replaced, :data:`_P_REPLACE`) of the ``human`` block, then answers
                           (k + 2 calls)
``clarify_then_search``    first asks the user a clarifying question with ``send_message`` (when
                           was it? which one?), the user replies, then it searches one store
                           (archival, recall or recall by date: the month the user named) once
                           per fact and answers: two ``send_message`` calls (k + 2 calls)
=========================  =========================================================================

Noise inside every strategy, at fixed rates whatever the arm, the source and the strategy.
Failures are execution, not strategy: every call but ``send_message`` fails with probability
:data:`_P_FAIL` (``"status": "Failed"``, message ``Error calling function <tool>: <error>``) and
is followed at once by the corrected call of the same tool: a malformed query (empty, or a list
of keywords), a page out of range, a date in the wrong format or a range the wrong way round, a
block label that does not exist, an ``old_content`` not found in the block, an empty insert;
or, :data:`_P_TRANSIENT` of failures, a transient backend error (:data:`TRANSIENT`) retried with
the same arguments. Optional steps: an ``archival_memory_insert`` of a new fact the user just
mentioned in passing (half the questions carry such an aside), as the episode's first call
(:data:`_P_INSERT` of the episodes whose question has one); a paging call (the same query,
``page=1``) after the first page of the episode's first text search (archival or recall) showed
nothing relevant (:data:`_P_PAGE`); an extra assistant turn holding only an inner monologue,
before one of the calls (:data:`_P_THOUGHT`); the trailing inner thought after the answer
(:data:`_P_TRAILING`). Names, values, dates, queries, call ids (Letta's truncated uuids),
inner thoughts, the wording of every message, the order of the arguments, ``page=0`` given or
not, and ``request_heartbeat`` given or not vary inside every strategy; every strategy is used
on every source and question size (drawn independently of them).

Failure modes of the answer: success (whether the final answer holds the remembered facts) is
drawn at the strategy's rate (:data:`_SUCCESS`), random within it, whatever the source (a store
that did not hold the fact may still end in a right answer, and a found fact may be misread:
success must not tell strategies or sources apart). A wrong answer is "I don't remember" (or
"No, I don't think you have" to an "already told you?" question), or the right sentence with a
wrong value (another name, another date; for two facts, one of them or both). The record carries
``correct`` and ``gold`` (the facts' values, ``; ``-joined). The ``rl`` arm differs from
``base`` only in its mixture (:data:`ARMS`).

The truth carries, beside ``strategy``, ``source``, ``n_facts``, ``n_calls`` (tool calls, failed
ones and ``send_message`` included), ``n_failures`` (failed calls), ``n_send_messages``,
``n_user_turns`` (user messages after the first) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented or
clustered.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, name, pick, planted_world, word

STRATEGIES = ("answer_from_core", "archival_lookup", "recall_lookup", "date_range_recall", "search_both_stores",
              "consolidate_to_core", "clarify_then_search")
#: where a question's facts live: the human block of core memory, archival memory, or only past messages
SOURCES = ("core", "archival", "conversation")
TOOLS = ("send_message", "core_memory_append", "core_memory_replace", "archival_memory_insert",
         "archival_memory_search", "conversation_search", "conversation_search_date")
SEARCHES = ("archival_memory_search", "conversation_search", "conversation_search_date")
ARMS = {
    "base": {"answer_from_core": 0.22, "archival_lookup": 0.20, "recall_lookup": 0.16, "date_range_recall": 0.08,
             "search_both_stores": 0.12, "consolidate_to_core": 0.08, "clarify_then_search": 0.14},
    "rl": {"answer_from_core": 0.06, "archival_lookup": 0.12, "recall_lookup": 0.16, "date_range_recall": 0.18,
           "search_both_stores": 0.22, "consolidate_to_core": 0.16, "clarify_then_search": 0.10},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"answer_from_core": 0.35, "archival_lookup": 0.6, "recall_lookup": 0.7, "date_range_recall": 0.75,
            "search_both_stores": 0.85, "consolidate_to_core": 0.8, "clarify_then_search": 0.65}
#: the chance that a call (not send_message) fails; the corrected call of the same tool follows it
_P_FAIL = 0.12
#: the share of failures that are transient backend errors, retried with the same arguments
_P_TRANSIENT = 0.3
#: optional steps, at fixed rates whatever the arm, the source and the strategy
_P_ASIDE = 0.5  # a question carries a new fact mentioned in passing (per question)
_P_INSERT = 0.5  # archival_memory_insert of that fact as the first call (of episodes whose question has one)
_P_PAGE = 0.3  # page=1 after the first page of the episode's first text search
_P_THOUGHT = 0.3  # an extra assistant turn with only an inner thought, before one of the calls
_P_TRAILING = 0.4  # an assistant message with only an inner thought after the answer
#: variation of wording and arguments
_P_MONOLOGUE = 0.75  # a call's assistant message holds an inner thought (else "" or null)
_P_HEARTBEAT = 0.85  # request_heartbeat: true on a call that is not a send_message
_P_HEARTBEAT_FALSE = 0.4  # request_heartbeat: false on a send_message (else absent)
_P_PAGE0 = 0.3  # a search gives page=0 explicitly
#: inside a strategy
_P_REPLACE = 0.35  # consolidate_to_core: core_memory_replace of the old line (else core_memory_append)
_P_DONT_REMEMBER = 0.45  # a wrong answer is "I don't remember" (else a wrong value)

TRANSIENT = {"archival_memory_search": "ConnectionError: embedding endpoint timed out after 30.0s",
             "archival_memory_insert": "ConnectionError: embedding endpoint timed out after 30.0s",
             "conversation_search": "OperationalError: database is locked",
             "conversation_search_date": "OperationalError: database is locked",
             "core_memory_append": "TimeoutError: timed out saving memory block 'human'",
             "core_memory_replace": "TimeoutError: timed out saving memory block 'human'"}
NO_RESULTS = "No results found."
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_ZONES = ("PDT-0700", "EDT-0400", "CDT-0500", "BST+0100", "CEST+0200", "UTC+0000")
_CITIES = ("Portland", "Leeds", "Austin", "Utrecht", "Halifax", "Bristol", "Tucson", "Lyon", "Ghent", "Dunedin")
_STREETS = ("Street", "Avenue", "Road", "Lane", "Close", "Terrace")
_JOBS = ("a nurse", "a software tester", "a primary school teacher", "an electrician", "a graphic designer",
         "a pharmacist", "an accountant", "a barista")
_ALLERGIES = ("penicillin", "shellfish", "peanuts", "latex", "bee stings", "sesame", "kiwi fruit")
_EATERIES = ("Trattoria {n}", "Bistro {n}", "{n} Kitchen", "{n} Noodle Bar", "Taqueria {n}", "Cafe {n}")


def _title(rng: np.random.Generator) -> str:
    return pick(rng, ("The {a} of {b}", "{a} and {b}", "The Last {a}", "A {a} in {b}")).format(
        a=word(rng).capitalize(), b=word(rng).capitalize())


def _day(d: date) -> str:
    return f"{_MONTHS[d.month - 1]} {d.day}"


#: the facts a user may ask about: how a value is drawn, how it is asked for (``{when}``: the time
#: the user names), told, archived, kept in core memory (``full``; ``stale``: the vaguer line the
#: human block holds when the fact is not there), answered, and searched for
TOPICS: dict[str, dict[str, Any]] = {
    "restaurant": {
        "make": lambda rng: {"v": pick(rng, _EATERIES).format(n=_long_name(rng))},
        "gold": "{v}",
        "ask": ("What was the name of the restaurant I told you about{when}?",
                "Which restaurant did I say we loved{when}?", "Remind me, what was that restaurant I mentioned{when}?"),
        "told": ("We went to {v} for our anniversary and it was amazing, we have to go back.",
                 "Just got back from dinner at {v}. Best pasta I've had in years!"),
        "passage": ("{first} loved the restaurant {v} (anniversary dinner).", "Restaurant {first} recommends: {v}."),
        "full": "Favourite restaurant: {v}.", "stale": "Enjoys eating out with their partner.",
        "answer": ("The restaurant was {v}.", "It was {v}, where you had your anniversary dinner.",
                   "You told me about {v}!"),
        "queries": ("restaurant", "anniversary dinner", "restaurant name", "dinner place we loved"),
        "desc": "their favourite restaurant"},
    "kids": {
        "make": lambda rng: dict(zip(("sister", "kid1", "kid2"), _distinct_names(rng, 3))),
        "gold": "{kid1} and {kid2}",
        "ask": ("Remind me what my sister's kids are called?", "What are my sister's children's names again?",
                "My sister's two kids, what were their names? I told you{when}."),
        "told": ("My sister {sister} is staying over with her kids {kid1} and {kid2} this weekend.",
                 "{kid1} and {kid2} (my sister {sister}'s two) drew me a birthday card!"),
        "passage": ("{first}'s sister {sister} has two children, {kid1} and {kid2}.",
                    "Nephew/niece of {first}: {kid1} and {kid2}, children of {sister}."),
        "full": "Sister: {sister}; her kids are {kid1} and {kid2}.", "stale": "Has a sister, {sister}.",
        "answer": ("Your sister {sister}'s kids are {kid1} and {kid2}.", "They're {kid1} and {kid2}.",
                   "{kid1} and {kid2}, {sister}'s two."),
        "queries": ("sister kids", "sister children names", "{sister} kids", "nephew niece"),
        "desc": "their sister's kids"},
    "address": {
        "make": lambda rng: {"num": str(int(rng.integers(2, 240))),
                             "street": f"{_long_name(rng)} {pick(rng, _STREETS)}", "city": pick(rng, _CITIES)},
        "gold": "{num} {street}",
        "ask": ("Did I already tell you my new address?", "Do you have my new address saved?",
                "What's my new address again? I told you{when}."),
        "told": ("We finally moved! The new place is {num} {street}, {city}.",
                 "New address for you: {num} {street} in {city}."),
        "passage": ("{first} moved to {num} {street}, {city}.", "{first}'s new home address: {num} {street}, {city}."),
        "full": "Address: {num} {street}, {city}.", "stale": "Was planning to move house.",
        "answer": ("Yes, you did: {num} {street}, {city}.", "You told me - it's {num} {street}, {city}."),
        "queries": ("new address", "moved house", "address", "new place"),
        "desc": "their new address", "no": "No, I don't think you've told me your new address yet."},
    "dog": {
        "make": lambda rng: {"v": _long_name(rng)},
        "gold": "{v}",
        "ask": ("What's my dog's name again? I'm blanking.", "What did I tell you we named the puppy{when}?"),
        "told": ("We adopted a puppy! We're calling him {v}.", "{v} (the new puppy) chewed through my charger again."),
        "passage": ("{first} adopted a puppy named {v}.",),
        "full": "Dog: a puppy called {v}.", "stale": "Wanted to adopt a dog.",
        "answer": ("Your puppy is called {v}.", "His name is {v}!"),
        "queries": ("dog name", "puppy", "adopted dog", "pet"),
        "desc": "their dog"},
    "dentist": {
        "make": lambda rng: {"v": f"Dr. {_long_name(rng)}"},
        "gold": "{v}",
        "ask": ("Who's the dentist I said I was switching to{when}?", "Which dentist did I tell you about?"),
        "told": ("I'm switching dentists, going to {v} from now on.", "Booked a cleaning with {v}, the new dentist."),
        "passage": ("{first} switched to a new dentist, {v}.",),
        "full": "Dentist: {v}.", "stale": "Unhappy with their old dentist.",
        "answer": ("Your new dentist is {v}.", "You said you were switching to {v}."),
        "queries": ("dentist", "new dentist", "dental appointment"),
        "desc": "their new dentist"},
    "book": {
        "make": lambda rng: {"v": _title(rng)},
        "gold": "{v}",
        "ask": ("What was the book my book club picked{when}?", "Remind me which book we're reading in book club?"),
        "told": ("Book club picked {v} for next month, never heard of it.", "We're reading {v} in book club now."),
        "passage": ("{first}'s book club is reading {v}.",),
        "full": "Book club book: {v}.", "stale": "Is in a book club.",
        "answer": ("Your book club picked {v}.", "It's {v}."),
        "queries": ("book club", "book club pick", "reading"),
        "desc": "their book club's book"},
    "birthday": {
        "make": lambda rng: {"partner": _long_name(rng),
                             "v": f"{pick(rng, _MONTHS)} {int(rng.integers(1, 29))}"},
        "gold": "{v}",
        "ask": ("When is {partner}'s birthday? I know I told you{when}.", "Remind me of {partner}'s birthday?"),
        "told": ("{partner}'s birthday is {v}, please help me not forget this year.",
                 "Note to self (and you): {partner} turns a year older on {v}."),
        "passage": ("{first}'s partner {partner} has a birthday on {v}.",),
        "full": "Partner: {partner}, birthday {v}.", "stale": "Partner: {partner}.",
        "answer": ("{partner}'s birthday is on {v}.", "It's {v} - don't forget!"),
        "queries": ("{partner} birthday", "birthday", "partner birthday"),
        "desc": "their partner's birthday"},
    "allergy": {
        "make": lambda rng: {"v": pick(rng, _ALLERGIES)},
        "gold": "{v}",
        "ask": ("What was that thing I said I'm allergic to{when}?", "Did I tell you what I'm allergic to?"),
        "told": ("Found out today I'm allergic to {v}. Great.", "The doctor confirmed it, an allergy to {v}."),
        "passage": ("{first} is allergic to {v}.",),
        "full": "Allergy: {v}.", "stale": "Had an allergy test.",
        "answer": ("You're allergic to {v}.", "You told me: {v}."),
        "queries": ("allergy", "allergic", "allergy test results"),
        "desc": "their allergy"},
    "manager": {
        "make": lambda rng: {"v": f"{_long_name(rng)} {_long_name(rng)}"},
        "gold": "{v}",
        "ask": ("What's the name of my new manager?", "Who did I say my new boss was{when}?"),
        "told": ("Met my new manager today, {v}. Seems nice enough.", "My new boss is called {v}, starts Monday."),
        "passage": ("{first}'s new manager at work is {v}.",),
        "full": "Manager: {v}.", "stale": "Was getting a new manager at work.",
        "answer": ("Your new manager is {v}.", "You said it's {v}."),
        "queries": ("new manager", "boss", "manager name"),
        "desc": "their new manager"},
}
_ASIDES = (("Oh, and I started learning the cello last week!", "{first} started learning the cello ({today})."),
           ("By the way, I got the promotion!", "{first} got promoted at work ({today})."),
           ("Also, my flight to Lisbon is on the 12th.", "{first} is flying to Lisbon on the 12th (said {today})."),
           ("PS: I'm going vegetarian this month.", "{first} is trying a vegetarian diet (since {today})."),
           ("Btw I sprained my ankle playing football.", "{first} sprained an ankle playing football ({today})."),
           ("Oh and we're expecting a baby in the spring!", "{first} and partner are expecting a baby in spring."))
_OTHER_PASSAGES = ("{first} prefers tea to coffee.", "{first} works as {job}.",
                   "{first} is training for a half marathon in the autumn.", "{first} finds Mondays hard.",
                   "{first} is learning Spanish on an app.", "{first}'s favourite film is an old western.",
                   "{first} hates cilantro.", "{first} grew up near the sea.",
                   "{first} plays five-a-side on Thursdays.")
_OTHER_MESSAGES = (("user", "ugh, long day at work"), ("user", "can you remind me to call my mom on Sunday?"),
                   ("assistant", "That sounds exhausting! Want to talk about it?"),
                   ("user", "I finally finished that puzzle"), ("assistant", "Good morning! How did you sleep?"),
                   ("user", "haha yes exactly"), ("user", "I'm thinking of taking a trip in the summer"),
                   ("assistant", "I'm always here if you want to chat."), ("user", "going to bed, night!"))
_PERSONAS = ("The following is a starter persona, and it can be expanded as the personality develops:\n\nI am {me}.\n"
             "I don't identify as male or female, but my voice is soft and soothing.\nI'm curious, empathetic, and "
             "extraordinarily perceptive.",
             "My name is {me}. I am a warm, attentive companion who remembers the little things.\nI keep my messages "
             "short and friendly.",
             "I am {me}, {first}'s personal assistant. I am calm, organised and a little playful.")


def _words(*texts: Any) -> set[str]:
    out: set[str] = set()
    for x in texts:
        if isinstance(x, str):
            out.update(w.lower() for w in re.findall(r"[A-Za-z]+", x))
        elif isinstance(x, (tuple, list)):
            out |= _words(*x)
    return out


def _distinct_names(rng: np.random.Generator, n: int) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        x = _long_name(rng)
        if x not in out:
            out.append(x)
    return out


def _long_name(rng: np.random.Generator) -> str:
    """A made-up name of three letters or more, never a word of the fixed texts ("His")."""
    while len(x := name(rng)) < 3 or x.lower() in _RESERVED:
        pass
    return x


def _call_id(rng: np.random.Generator) -> str:
    """Letta's tool call id: a uuid4 truncated to 29 characters."""
    h = "".join(pick(rng, tuple("0123456789abcdef")) for _ in range(32))
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:25]}"


def _stamp(dt: datetime, zone: str) -> str:
    """Letta's local time: ``2024-05-14 03:22:10 PM PDT-0700``."""
    return f"{dt.strftime('%Y-%m-%d %I:%M:%S %p')} {zone}"


def _at(rng: np.random.Generator, d: date) -> datetime:
    return datetime(d.year, d.month, d.day, int(rng.integers(7, 23)), int(rng.integers(0, 60)),
                    int(rng.integers(0, 60)))


# -- failures -----------------------------------------------------------------------------------------
def _broken(rng: np.random.Generator, tool: str, args: dict) -> tuple[dict, str]:
    """A broken version of a call (its keys in the same order) and the error it gets."""
    if rng.random() < _P_TRANSIENT:
        return dict(args), TRANSIENT[tool]
    if tool in ("archival_memory_search", "conversation_search"):
        form = int(rng.integers(3))
        if form == 0:
            return dict(args, query=""), "ValueError: query must be a non-empty string"
        if form == 1:
            return dict(args, query=args["query"].split()), "TypeError: query must be str, not list"
        page = int(rng.integers(3, 10))
        return dict(args, page=page), f"ValueError: page {page} is out of range (results have 2 pages)"
    if tool == "conversation_search_date":
        if rng.random() < 0.6:
            bad = {k: (f"{v[5:7]}/{v[8:10]}/{v[:4]}" if k.endswith("_date") else v) for k, v in args.items()}
            return bad, "ValueError: Invalid date format. Expected format: YYYY-MM-DD"
        bad = dict(args, start_date=args["end_date"], end_date=args["start_date"])
        return bad, "ValueError: start_date must be on or before end_date"
    if tool == "core_memory_replace" and rng.random() < 0.7:
        old = args["old_content"]
        bad = pick(rng, (old.rstrip("."), old[0].lower() + old[1:], old.replace(": ", " - ", 1), old + " " + old))
        if bad == old:
            bad = old.rstrip(".") + "!"
        return dict(args, old_content=bad), f"ValueError: Old content '{bad}' not found in memory block 'human'"
    if tool in ("core_memory_append", "core_memory_replace"):
        bad = pick(rng, ("user", "Human", "memory", "humans"))
        return dict(args, label=bad), (f"ValueError: No memory section named '{bad}' "
                                       "(available sections: persona, human)")
    # archival_memory_insert
    return dict(args, content=""), "ValueError: content must be a non-empty string"


# -- the conversation ---------------------------------------------------------------------------------
_RETRY = ("That failed. Fixing the arguments and trying again.", "Error - let me correct that.", "Retrying.",
          "Oops, wrong input. Again.", "Let me try that once more.")
_MUSINGS = ("Hmm, let me think about where I would have stored this.", "The user seems to be in a hurry.",
            "Keep the reply short and warm.", "I should be careful not to make anything up here.",
            "They sound cheerful today.", "Thinking about how to phrase this.")
_TRAILING = ("Answered. Waiting for the user's reply.", "User should be happy with that.", "Done for now.",
             "I'll wait and see if they need anything else.", "Replied to the user.")


class _Session:
    """One Letta episode in OpenAI chat format: one call per assistant message (the content an
    inner thought), failures retried corrected, the user's replies to a send_message."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.t = rng, task
        self.clock: datetime = task["now"]
        self.messages: list[dict] = [{"role": "system", "content": _system(rng, task)},
                                     {"role": "user", "content": task["text"]}]
        self.n_calls = self.failures = self.sends = self.user_turns = 0
        # the optional steps, drawn once per episode
        self.insert = task["aside"] is not None and bool(rng.random() < _P_INSERT)
        self.page = bool(rng.random() < _P_PAGE)
        self.extra_thought = bool(rng.random() < _P_THOUGHT)
        self.trailing = bool(rng.random() < _P_TRAILING)
        self.searched = False  # a text search (the only one that may page) happened already

    def now(self) -> str:
        self.clock += timedelta(seconds=int(self.rng.integers(1, 20)))
        return _stamp(self.clock, self.t["zone"])

    def thought(self, options: tuple[str, ...]) -> str | None:
        if self.rng.random() < _P_MONOLOGUE:
            return pick(self.rng, options).format(**self.t)
        return pick(self.rng, ("", None))  # type: ignore[arg-type]

    def _turn(self, tool: str, args: dict, status: str, message: str, thought: str | None) -> None:
        self.n_calls += 1
        cid = _call_id(self.rng)
        self.messages.append({"role": "assistant", "content": thought, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool,
                              "content": json.dumps({"status": status, "message": message, "time": self.now()})})

    def call(self, tool: str, args: dict, message: str, thoughts: tuple[str, ...]) -> None:
        """The call (first, where it fails, a broken one answered by a Failed status)."""
        rng = self.rng
        keys = list(args)
        args = {keys[int(i)]: args[keys[int(i)]] for i in rng.permutation(len(keys))}
        if tool == "send_message":
            if rng.random() < _P_HEARTBEAT_FALSE:
                args["request_heartbeat"] = False
        elif rng.random() < _P_HEARTBEAT:
            args["request_heartbeat"] = True
        thought = self.thought(thoughts)
        if tool != "send_message" and rng.random() < _P_FAIL:
            bad, err = _broken(rng, tool, args)
            self._turn(tool, bad, "Failed", f"Error calling function {tool}: {err}", thought)
            self.failures += 1
            thought = self.thought(_RETRY)
        self._turn(tool, args, "OK", message, thought)
        if tool == "send_message":
            self.sends += 1

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})
        self.user_turns += 1

    def finish(self) -> None:
        """The optional inner-thought-only turns: one before a call, one after the answer."""
        rng = self.rng
        if self.extra_thought:
            spots = [i for i, m in enumerate(self.messages) if m["role"] == "assistant" and m.get("tool_calls")]
            self.messages.insert(spots[int(rng.integers(len(spots)))],
                                 {"role": "assistant", "content": pick(rng, _MUSINGS)})
        if self.trailing:
            self.messages.append({"role": "assistant", "content": pick(rng, _TRAILING)})


def _system(rng: np.random.Generator, t: dict) -> str:
    head = pick(rng, (
        "You are Letta, the latest version of Limnal Corporation's digital companion, developed in 2023.\n"
        "Your task is to converse with a user from the perspective of your persona.",
        "You are MemGPT, the latest version of Limnal Corporation's digital companion, developed in 2023.\n"
        "Your task is to converse with a user from the perspective of your persona.",
        "You are a stateful companion agent with long-term memory. Converse with the user from the perspective "
        "of your persona."))
    rules = pick(rng, (
        "Basic functions:\nWhen you write a response, the content of your message is your inner monologue (private "
        "to you only), this is how you think.\nTo send a visible message to the user, use the send_message function."
        "\n'send_message' is the ONLY action that sends a notification to the user. The user does not see anything "
        "else you do.\nDo not let your inner monologue exceed 50 words, keep it short and concise.",
        "Your inner monologue is private. Speak to the user only with send_message.\nUse core_memory_append and "
        "core_memory_replace to edit core memory, archival_memory_insert / archival_memory_search for archival "
        "memory, and conversation_search / conversation_search_date to search recall memory (past messages)."))
    persona = pick(rng, _PERSONAS).format(me=t["me"], first=t["first"])
    human = "\n".join(t["human"])
    return (f"{head}\n\n{rules}\n\n### Memory [last modified: {_stamp(t['now'] - timedelta(days=1), t['zone'])}]\n"
            f"{t['n_recall']} previous messages between you and the user are stored in recall memory (use functions "
            f"to access them)\n{t['n_archival']} total memories you created are stored in archival memory (use "
            "functions to access them)\n\nCore memory shown below (limited in size, additional information stored "
            f"in archival / recall memory):\n<persona characters=\"{len(persona)}/5000\">\n{persona}\n</persona>\n"
            f"<human characters=\"{len(human)}/5000\">\n{human}\n</human>")


# -- search results -----------------------------------------------------------------------------------
def _passages(s: _Session, items: list[tuple[datetime, str]]) -> str:
    if not items:
        return NO_RESULTS if s.rng.random() < 0.7 else "[]"
    return json.dumps([{"timestamp": _stamp(dt, s.t["zone"]), "content": c} for dt, c in items])


def _showing(s: _Session, items: list[tuple[datetime, str, str]], page: int, last: int, total: int) -> str:
    if not items:
        return NO_RESULTS
    shown = [f"timestamp: {_stamp(dt, s.t['zone'])}, {role} - {text}" for dt, role, text in items]
    return f"Showing {len(items)} of {total} results (page {page}/{last}): {json.dumps(shown)}"


def _other_passages(s: _Session, n: int) -> list[tuple[datetime, str]]:
    rng, t = s.rng, s.t
    picks = rng.choice(len(_OTHER_PASSAGES), size=n, replace=False)
    return [(_at(rng, t["today"] - timedelta(days=int(rng.integers(5, 300)))), _OTHER_PASSAGES[int(i)].format(**t))
            for i in picks]


def _other_messages(s: _Session, n: int, lo: date | None = None, hi: date | None = None) -> list[tuple]:
    rng, t = s.rng, s.t
    lo = lo or t["today"] - timedelta(days=300)
    hi = hi or t["today"] - timedelta(days=2)
    span = max((hi - lo).days, 0)
    picks = rng.choice(len(_OTHER_MESSAGES), size=n, replace=False)
    return [(_at(rng, lo + timedelta(days=int(rng.integers(0, span + 1)))), *_OTHER_MESSAGES[int(i)]) for i in picks]


def _shuffled(rng: np.random.Generator, items: list) -> list:
    return [items[int(i)] for i in rng.permutation(len(items))]


def _archival_result(s: _Session, f: dict, hold: bool, page: int) -> str:
    """Page 0 holds the fact's passage when the source is archival (unless held back for a page 1)."""
    rng = s.rng
    found = s.t["source"] == "archival"
    if hold:  # a first page with nothing relevant
        return _passages(s, _other_passages(s, int(rng.integers(2, 4))))
    if page == 1:
        return _passages(s, [(f["at"], f["passage"])] if found else [])
    if found:
        return _passages(s, _shuffled(rng, [(f["at"], f["passage"]), *_other_passages(s, int(rng.integers(0, 3)))]))
    return _passages(s, _other_passages(s, int(rng.integers(1, 3))) if rng.random() < 0.4 else [])


def _recall_result(s: _Session, f: dict, hold: bool, page: int) -> str:
    """Recall memory holds every past message: the fact's is found (on page 1 when page 0 is held back)."""
    rng = s.rng
    told = (f["at"], "user", f["told"])
    if hold:
        extra = int(rng.integers(0, 2))
        return _showing(s, _other_messages(s, 3), 0, 1, 4 + extra)
    if page == 1:
        return _showing(s, _shuffled(rng, [told, *_other_messages(s, int(rng.integers(0, 2)))]), 1, 1,
                        5 + int(rng.integers(0, 2)))
    items = _shuffled(rng, [told, *_other_messages(s, int(rng.integers(0, 3)))])
    return _showing(s, items, 0, 0, len(items))


def _date_result(s: _Session, f: dict, lo: date, hi: date) -> str:
    others = _other_messages(s, int(s.rng.integers(1, 4)), lo, min(hi, s.t["today"] - timedelta(days=1)))
    items = sorted([(f["at"], "user", f["told"]), *others])
    return _showing(s, items, 0, 0, len(items))


_SEARCH_THOUGHTS = {
    "archival_memory_search": ("They are asking about {desc}. Checking archival memory.",
                               "Let me search archival memory.", "Not in my core memory. Searching my archives.",
                               "I probably saved this. Searching."),
    "conversation_search": ("They told me this in an earlier chat. Searching recall memory.",
                            "Let me look through our past conversations.", "Searching my conversation history.",
                            "I remember them mentioning it. Let me find the message."),
    "conversation_search_date": ("They said it was{when}. I'll look at the messages from then.",
                                 "Searching past messages by date.", "Let me check the conversation around that time.",
                                 "I'll narrow the recall search to the right dates."),
}
_PAGE_THOUGHTS = ("Nothing relevant on the first page. Next page.", "Not there. Let me check page 1.",
                  "Those results aren't it. Trying the next page.")


def _search(s: _Session, tool: str, f: dict, span: tuple[date, date] | None = None) -> None:
    """One search for fact ``f`` with ``tool`` (``span``: the dates of a date search); the
    episode's first text search may be followed by its page 1 (the optional step)."""
    rng = s.rng
    thoughts = tuple(x.replace("{desc}", f["desc"]).replace("{when}", f["when"] or " a while ago")
                     for x in _SEARCH_THOUGHTS[tool])
    if tool == "conversation_search_date":
        lo, hi = span or f["span"]
        s.call(tool, {"start_date": lo.isoformat(), "end_date": hi.isoformat()}, _date_result(s, f, lo, hi), thoughts)
        return
    query = pick(rng, f["queries"])
    hold = s.page and not s.searched
    s.searched = True
    args: dict[str, Any] = {"query": query}
    if rng.random() < _P_PAGE0:
        args["page"] = 0
    result = _archival_result if tool == "archival_memory_search" else _recall_result
    s.call(tool, args, result(s, f, hold, 0), thoughts)
    if hold:
        s.call(tool, {"query": query, "page": 1}, result(s, f, False, 1), _PAGE_THOUGHTS)


def _month_span(d: date) -> tuple[date, date]:
    nxt = date(d.year + (d.month == 12), d.month % 12 + 1, 1)
    return date(d.year, d.month, 1), nxt - timedelta(days=1)


# -- the strategies -----------------------------------------------------------------------------------
def _from_core(s: _Session) -> None:
    return None  # the answer alone


def _archival(s: _Session) -> None:
    for f in s.t["facts"]:
        _search(s, "archival_memory_search", f)


def _recall(s: _Session) -> None:
    for f in s.t["facts"]:
        _search(s, "conversation_search", f)


def _by_date(s: _Session) -> None:
    for f in s.t["facts"]:
        _search(s, "conversation_search_date", f)


def _both(s: _Session) -> None:
    for f in s.t["facts"]:
        _search(s, "archival_memory_search", f)
        _search(s, "conversation_search", f)


def _consolidate(s: _Session) -> None:
    rng, t = s.rng, s.t
    store = pick(rng, SEARCHES[:2])
    for f in t["facts"]:
        _search(s, store, f)
    new = " ".join(f["full"] for f in t["facts"])
    thoughts = ("I should keep this in core memory so I don't have to search next time.",
                "Saving this to my core memory about {first}.", "Updating core memory with what I found.")
    if rng.random() < _P_REPLACE:
        old = t["human"][t["fact_lines"][0]]
        if old == new:
            new = f"{new[:-1]} (confirmed {t['today'].isoformat()})."
        s.call("core_memory_replace", {"label": "human", "old_content": old, "new_content": new}, "None", thoughts)
    else:
        s.call("core_memory_append", {"label": "human", "content": new}, "None", thoughts)


_CLARIFY = ("Happy to help! Just so I look in the right place: roughly when did you tell me about {desc}?",
            "Of course. Do you remember around when we talked about it?",
            "Let me check! Was that something you mentioned this year? Any idea which month?",
            "Sure - quick question first, so I don't mix things up: when did you mention {desc}?")
_REPLIES = ("It was in {month}, I think.", "Around {month}.", "{month}, pretty sure.",
            "Hmm, {month} maybe? Yeah, {month}.")


def _clarify(s: _Session) -> None:
    rng, t = s.rng, s.t
    f0 = t["facts"][0]
    s.call("send_message", {"message": pick(rng, _CLARIFY).format(desc=f0["desc"].replace("their", "your"))}, "None",
           ("The request is a bit vague; better ask before searching.", "I'll ask when it was, to narrow it down.",
            "Let me ask a clarifying question first."))
    s.user(pick(rng, _REPLIES).format(month=_MONTHS[f0["day"].month - 1]))
    store = pick(rng, SEARCHES)
    for i, f in enumerate(t["facts"]):
        _search(s, store, f, span=_month_span(f0["day"]) if i == 0 else None)


_STRATEGY: dict[str, Callable[[_Session], None]] = {
    "answer_from_core": _from_core, "archival_lookup": _archival, "recall_lookup": _recall,
    "date_range_recall": _by_date, "search_both_stores": _both, "consolidate_to_core": _consolidate,
    "clarify_then_search": _clarify}


# -- the answer ---------------------------------------------------------------------------------------
_DONT_REMEMBER = ("I'm sorry, I don't remember you telling me that. Could you remind me?",
                  "Hmm, I can't find that in my memory, sorry! Would you tell me again?",
                  "I don't think I know that one yet. What was it?",
                  "Oh no, that one slipped through my memory. Can you tell me once more?",
                  "I'm drawing a blank on that, sorry. Remind me?",
                  "I don't have that saved anywhere, I'm afraid. What was it?")
_FINAL_THOUGHTS = ("Replying.", "Time to answer.", "Replying to {first}.", "Let me tell them.", "Answering now.")


def _sentence(rng: np.random.Generator, f: dict, vals: dict) -> str:
    return pick(rng, f["answer"]).format(**vals)


def _answer(s: _Session, correct: bool) -> str:
    """The final answer: the facts' right values when correct; else I don't remember, or a wrong
    value (for two facts, one of them or both)."""
    rng, facts = s.rng, s.t["facts"]
    if correct:
        return " ".join(_sentence(rng, f, f["vals"]) for f in facts)
    if rng.random() < _P_DONT_REMEMBER:
        f0 = facts[0]
        return f0.get("no") or pick(rng, _DONT_REMEMBER)
    wrong = [True] * len(facts) if len(facts) == 1 or rng.random() < 0.4 else _shuffled(rng, [True, False])
    parts = []
    for f, w in zip(facts, wrong):
        vals = f["vals"]
        if w:
            for _ in range(50):
                alt = dict(vals, **{k: v for k, v in TOPICS[f["topic"]]["make"](rng).items()
                                    if k in ("v", "kid1", "kid2", "num", "street")})
                g = TOPICS[f["topic"]]["gold"].format(**alt)
                if g not in f["gold"] and f["gold"] not in g:
                    break
            vals = alt
        parts.append(_sentence(rng, f, vals))
    return " ".join(parts)


def _holds(answer: str, facts: list[dict]) -> bool:
    """Every fact's value in the answer, as whole words."""
    return all(re.search(rf"\b{re.escape(f['gold'])}\b", answer) for f in facts)


def _episode(rng: np.random.Generator, strategy: str, t: dict, correct: bool) -> _Session:
    s = _Session(rng, t)
    if s.insert:  # optional, whatever the arm, the source and the strategy
        s.call("archival_memory_insert", {"content": t["aside_passage"]}, "None",
               ("They mentioned something new about themselves. Saving it to archival memory first.",
                "New fact about {first}; archiving it.", "I'll remember that: inserting into archival memory."))
    _STRATEGY[strategy](s)
    text = _answer(s, correct)
    if _holds(text, t["facts"]) != correct:  # pragma: no cover - the design guarantees it
        raise AssertionError(f"the answer {text!r} does not match correct={correct}")
    s.call("send_message", {"message": text}, "None", _FINAL_THOUGHTS)
    s.finish()
    return s


#: the words of the fixed texts: a drawn name is never one of them
_RESERVED = _words(*(v for spec in TOPICS.values() for k, v in spec.items() if k not in ("make", "gold")),
                   _ASIDES, _OTHER_PASSAGES, _OTHER_MESSAGES, _PERSONAS, _MONTHS, _JOBS, _CITIES, _STREETS,
                   _DONT_REMEMBER, _CLARIFY, _REPLIES)


# -- the questions ------------------------------------------------------------------------------------
def _when(rng: np.random.Generator, today: date) -> tuple[str, date, tuple[date, date]]:
    """The time the user names (or none), the day the fact was said, and the range a date search
    covers (the named period; else the last 180 days)."""
    form = int(rng.integers(4))
    if form == 0:  # last month
        lo, hi = _month_span(today.replace(day=1) - timedelta(days=1))
        return " last month", lo + timedelta(days=int(rng.integers(0, (hi - lo).days + 1))), (lo, hi)
    if form == 1:  # in <Month>, two to five months back
        back = today.replace(day=1)
        for _ in range(int(rng.integers(2, 6))):
            back = (back - timedelta(days=1)).replace(day=1)
        lo, hi = _month_span(back)
        return f" in {_MONTHS[lo.month - 1]}", lo + timedelta(days=int(rng.integers(0, (hi - lo).days + 1))), (lo, hi)
    if form == 2:  # a few weeks ago
        lo, hi = today - timedelta(days=42), today - timedelta(days=10)
        return " a few weeks ago", today - timedelta(days=int(rng.integers(14, 36))), (lo, hi)
    return ("", *_when_none(rng, today))


def _task(rng: np.random.Generator, source: str, n_facts: int) -> dict:
    first, last = (_long_name(rng) for _ in range(2))
    now = datetime(int(rng.integers(2024, 2026)), int(rng.integers(1, 13)), int(rng.integers(1, 29)),
                   int(rng.integers(7, 23)), int(rng.integers(0, 60)), int(rng.integers(0, 60)))
    today = now.date()
    t: dict[str, Any] = {"first": first, "last": last, "me": pick(rng, ("Sam", "Juno", "Ari", "Kit", _long_name(rng))),
                         "zone": pick(rng, _ZONES), "now": now, "today": today, "job": pick(rng, _JOBS),
                         "city": pick(rng, _CITIES), "source": source, "n_facts": n_facts,
                         "n_recall": int(rng.integers(40, 2400)), "n_archival": int(rng.integers(3, 180))}
    topics = [str(x) for x in rng.choice(list(TOPICS), size=n_facts, replace=False)]
    facts, asks = [], []
    for i, topic in enumerate(topics):
        spec = TOPICS[topic]
        vals = {"first": first, **spec["make"](rng)}
        while any(w in (first, last, t["me"]) for w in spec["gold"].format(**vals).split()):
            vals = {"first": first, **spec["make"](rng)}  # a value never named like the user or the assistant
        form = pick(rng, spec["ask"])
        when, day, span = _when(rng, today) if "{when}" in form and i == 0 else ("", *_when_none(rng, today))
        at = _at(rng, day)
        f = {"topic": topic, "vals": vals, "gold": spec["gold"].format(**vals), "when": when, "day": day, "at": at,
             "span": span, "told": pick(rng, spec["told"]).format(**vals),
             "passage": pick(rng, spec["passage"]).format(**vals), "full": spec["full"].format(**vals),
             "stale": spec["stale"].format(**vals), "answer": spec["answer"], "desc": spec["desc"],
             "queries": tuple(q.format(**vals) for q in spec["queries"])}
        if "no" in spec:
            f["no"] = spec["no"]
        facts.append(f)
        asks.append(form.format(when=when, **vals))
    text = asks[0] if n_facts == 1 else f"{asks[0]} {pick(rng, ('Also,', 'And', 'Oh, and'))} " \
                                        f"{asks[1][0].lower()}{asks[1][1:]}"
    hello = pick(rng, ("", "Hey! ", "Hi again. ", f"Hey {t['me']}, "))
    text = hello + (text[0].lower() + text[1:] if hello.endswith(", ") else text)
    if rng.random() < _P_ASIDE:
        aside, passage = _ASIDES[int(rng.integers(len(_ASIDES)))]
        text = f"{text} {aside}"
        t.update(aside=aside, aside_passage=passage.format(first=first, today=today.isoformat()))
    else:
        t.update(aside=None, aside_passage=None)
    # the human block: who the user is, a line per asked fact (the fact itself only when the source is core)
    lines = [pick(rng, (f"Name: {first} {last}", f"First name: {first}", f"The user's name is {first} {last}.")),
             f"Works as {t['job']}.", f"Lives in {t['city']}."]
    lines += [str(x).format(first=first, job=t["job"]) for x in rng.choice(_OTHER_PASSAGES, size=2, replace=False)]
    fact_lines = [f["full"] if source == "core" else f["stale"] for f in facts]
    lines = _shuffled(rng, lines + fact_lines)
    t.update(facts=facts, text=text, human=lines, fact_lines=[lines.index(x) for x in fact_lines],
             gold="; ".join(f["gold"] for f in facts))
    return t


def _when_none(rng: np.random.Generator, today: date) -> tuple[date, tuple[date, date]]:
    """The day a fact asked for without a time was said, and the range a date search covers."""
    return today - timedelta(days=int(rng.integers(7, 171))), (today - timedelta(days=180), today)


def memory(n_questions: int = 60, n_samples: int = 4, random_state: RandomState = 0, *,
           arms: dict[str, dict[str, float]] | None = None) -> World:
    """Generate the long-term-memory assistant world (Letta-like; OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        The user's questions (their sources in turn, :data:`SOURCES`; every third triple of them
        asks for two facts; no two in the same words), and episodes per question and arm.
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).

    Returns
    -------
    World
        Records in format ``openai`` (the answer: the last ``send_message``; the record's
        ``gold`` the facts' values, ``correct`` whether the answer holds them); truth ``arm,
        question_id, sample_id, strategy, source, n_facts, n_calls`` (tool calls, failed ones and
        ``send_message`` included), ``n_failures``, ``n_send_messages``, ``n_user_turns`` (user
        messages after the first) and ``correct``.

    Examples
    --------
    >>> w = memory(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> calls = [c["function"]["name"] for m in w.records[0]["messages"] for c in m.get("tool_calls") or []]
    >>> calls[-1]
    'send_message'
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks, asked = [], set()
    for i in range(n_questions):
        while (t := _task(rng, SOURCES[i % 3], 2 if (i // 3) % 3 == 2 else 1))["text"] in asked:
            pass  # every question asked in its own words
        asked.add(t["text"])
        tasks.append((f"memory-{i:04d}", t))

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, t: dict
                ) -> tuple[dict, tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        s = _episode(rng, strategy, t, correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [t["gold"]], "correct": correct,
                 "messages": s.messages},
                (t["source"], t["n_facts"], s.n_calls, s.failures, s.sends, s.user_turns, correct))

    return planted_world("memory", "openai", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"source": pl.String, "n_facts": pl.Int64, "n_calls": pl.Int64,
                                       "n_failures": pl.Int64, "n_send_messages": pl.Int64,
                                       "n_user_turns": pl.Int64, "correct": pl.Boolean})
