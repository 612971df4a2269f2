"""A personal-assistant agent world: e-mail, calendar and contacts tools, ATIF documents.

The user asks for something about their mail and diary ("Set up a meeting with Dana about the
Q3 budget next week", "Reply to Omar's last email about the invoice"). The agent has six tools:
``search_email(query)``, ``read_email(id)``, ``send_email(to, subject, body)``,
``list_events(date)``, ``create_event(title, date, time, attendees)`` and
``find_contact(name)``. Every trajectory is one ATIF v1.4 document (Harbor RFC 0001) with the
arm in ``agent.model_name`` and the question id, sample id, gold and correctness in the root
``extra`` object. A task is a *meeting* (its deliverable is ``create_event``) or a *reply* (its
deliverable is ``send_email``); each strategy runs on both kinds.

Six planted strategies; call counts overlap (0, 1-4, 2-8, 2-6, 3-10, 4-10 calls with the
retries and optional steps):

==================  =======================================================================
``no_tools``        no tool: a clarifying question back to the user, or an answer from the
                    request alone
``direct``          the deliverable at once, its arguments guessed from the request
                    (create_event [+ list_events check]; or send_email)
``calendar_first``  list_events for 1-3 candidate days, then the deliverable
                    (create_event [+ check], or send_email proposing a free slot)
``contact_first``   find_contact, then the deliverable with the address it found
``thread_first``    search_email [+ a second search_email in other words], read_email for
                    1-3 messages, then the deliverable (a reply, or the event the thread asks
                    for [+ check])
``diligent``        find_contact, list_events for 1-2 days, create_event [+ check], then
                    send_email confirming the invitation (on both kinds of task)
==================  =======================================================================

Failures are execution, not strategy: any call may fail (probability :data:`_P_FAIL` each: a
contact not found under a misspelt name, a date or time in the wrong format, an address
without its ``@``, an unterminated quote in a search, a message id mistyped), and a failed call
is followed by the corrected call of the same tool. The two optional steps happen at fixed
rates whatever the arm: a ``list_events`` on the new event's date to check it, after every
``create_event`` (:data:`_P_CHECK`), and a second ``search_email`` with other words before
reading (:data:`_P_RESEARCH`). Names, topics, dates, times, subjects, bodies, search words and
the assistant's words vary inside every strategy. The ``rl`` arm differs from ``base`` only in
its mixture; success is drawn at the strategy's rate (random within it).

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import as_generator
from mechanism.datasets.worlds._base import World, name, pick, planted_world, word

STRATEGIES = ("no_tools", "direct", "calendar_first", "contact_first", "thread_first", "diligent")
ARMS = {
    "base": {"no_tools": 0.18, "direct": 0.26, "calendar_first": 0.14, "contact_first": 0.18, "thread_first": 0.14,
             "diligent": 0.10},
    "rl": {"no_tools": 0.06, "direct": 0.10, "calendar_first": 0.20, "contact_first": 0.14, "thread_first": 0.24,
           "diligent": 0.26},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"no_tools": 0.15, "direct": 0.45, "calendar_first": 0.65, "contact_first": 0.6, "thread_first": 0.7,
            "diligent": 0.85}
#: the chance that a call fails (execution: fixed by a corrected call of the same tool)
_P_FAIL = 0.15
#: the chance of the optional check (list_events on the date) after a create_event
_P_CHECK = 0.4
#: the chance of the optional second search_email, in other words, before reading
_P_RESEARCH = 0.35

_TODAY = dt.date(2026, 3, 2)  # a Monday
_TOPICS = ("the Q3 budget", "the invoice", "the offsite", "the hiring plan", "the roadmap review",
           "the contract renewal", "the quarterly report", "the design review", "the launch checklist",
           "the travel expenses")
_WHEN = {"next week": (7, 11), "this week": (1, 4), "on Thursday": (3, 3), "early next week": (7, 8),
         "before Friday": (1, 3)}
_DOMAINS = ("example.com", "acme.io", "northwind.org", "contoso.net")
_TIMES = ("09:00", "09:30", "10:00", "11:00", "13:30", "14:00", "15:00", "16:30")
_SYSTEM = ("You are a personal assistant with access to the user's e-mail, calendar and contacts.",
           "You help the user manage their mail and diary. Use the tools when useful.",
           "You are an executive assistant. Tools: e-mail, calendar, contacts.")
_SAY = {
    "search_email": ("Let me find the thread.", "Searching the mailbox for {p}'s messages.",
                     "I'll look for the e-mail about {t}.", "First, the relevant e-mails."),
    "read_email": ("Opening that message.", "Let me read it.", "Reading the e-mail from {p}.",
                   "Let me see what {p} wrote."),
    "send_email": ("Sending the e-mail now.", "I'll write to {p}.", "Sending the reply.", "Drafting and sending."),
    "list_events": ("Let me check the calendar.", "What is on the diary that day?", "Checking availability.",
                    "Looking at your schedule."),
    "create_event": ("Booking the meeting.", "I'll put it in the calendar.", "Creating the event.",
                     "Scheduling it now."),
    "find_contact": ("Let me look up {p}.", "Finding {p}'s address.", "Checking your contacts for {p}.",
                     "Who is {p}? Looking it up."),
}
_RETRY = ("That failed; fixing the {what} and trying again.", "Let me correct the {what}.",
          "The {what} was wrong, retrying.", "Oops, wrong {what}. Again.")


def _misspell(rng: np.random.Generator, s: str) -> str:
    """The name with two neighbouring letters swapped (or one dropped)."""
    if len(s) < 3:
        return s + s[-1]
    i = int(rng.integers(1, len(s) - 1))
    if rng.random() < 0.5:
        return s[:i] + s[i + 1] + s[i] + s[i + 2:]
    return s[:i] + s[i + 1:]


def _bad_date(rng: np.random.Generator, d: dt.date) -> str:
    return pick(rng, (d.strftime("%d/%m/%Y"), d.strftime("%B %d"), f"{d.year}-{d.day:02d}-{d.month:02d}"
                      if d.day > 12 else d.strftime("%m-%d-%Y"), d.strftime("%A")))


def _bad_time(rng: np.random.Generator, t: str) -> str:
    h, m = (int(x) for x in t.split(":"))
    return pick(rng, (f"{h % 12 or 12}{'pm' if h >= 12 else 'am'}", f"{h}.{m:02d}", f"{h}h{m:02d}", f"{h:02d}{m:02d}"))


class _Session:
    """One ATIF document being written: steps numbered, calls numbered, failures retried."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.task = rng, task
        self.steps: list[dict[str, Any]] = [
            {"step_id": 1, "source": "system", "message": pick(rng, _SYSTEM)},
            {"step_id": 2, "source": "user", "message": task["text"]}]
        self.n_calls = self.n_failures = 0
        self.date_seen: dt.date | None = None

    def _say(self, tool: str) -> str:
        return pick(self.rng, _SAY[tool]).format(p=self.task["person"], t=self.task["topic"])

    def _step(self, message: str, tool: str, args: dict[str, Any], result: str) -> None:
        self.n_calls += 1
        cid = f"call_{self.n_calls:03d}"
        self.steps.append({"step_id": len(self.steps) + 1, "source": "agent", "message": message,
                           "tool_calls": [{"tool_call_id": cid, "function_name": tool, "arguments": args}],
                           "observation": {"results": [{"source_call_id": cid, "content": result}]}})

    def call(self, tool: str, args: dict[str, Any], result: str, broken: dict[str, Any], error: str,
             what: str) -> None:
        """The call; where it fails (:data:`_P_FAIL`), first the broken version of it (``broken``:
        the arguments it was made with) answered by ``error``, then the corrected call."""
        message = self._say(tool)
        if self.rng.random() < _P_FAIL:
            self.n_failures += 1
            self._step(message, tool, dict(args, **broken), error)
            message = pick(self.rng, _RETRY).format(what=what)
        self._step(message, tool, args, result)

    def answer(self, text: str) -> None:
        self.steps.append({"step_id": len(self.steps) + 1, "source": "agent", "message": text})

    # the tools ---------------------------------------------------------------------------------

    def find_contact(self) -> None:
        t = self.task
        query = pick(self.rng, (t["person"], t["full"], t["person"].lower()))
        found = json.dumps([{"name": t["full"], "email": t["email"],
                             "phone": f"+1 555 {int(self.rng.integers(1000, 9999))}"}])
        bad = _misspell(self.rng, t["person"])
        self.call("find_contact", {"name": query}, found, {"name": bad}, f"No contact found matching '{bad}'.",
                  "name")

    def list_events(self, day: dt.date) -> None:
        n = int(self.rng.integers(0, 4))
        busy = sorted(self.rng.choice(len(_TIMES), size=n, replace=False).tolist())
        events = [{"title": pick(self.rng, ("Stand-up", "1:1", "Lunch", "Focus time", f"Call with {name(self.rng)}",
                                            "Dentist", "Team sync")), "time": _TIMES[i]} for i in busy]
        bad = _bad_date(self.rng, day)
        self.call("list_events", {"date": day.isoformat()}, json.dumps(events), {"date": bad},
                  f"Error: invalid date '{bad}': expected YYYY-MM-DD.", "date format")
        self.date_seen = day

    def create_event(self, day: dt.date, time: str, attendees: list[str]) -> None:
        t = self.task
        title = pick(self.rng, (f"{t['topic_short'].title()} with {t['person']}", f"{t['person']} / {t['topic_short']}",
                                f"Meeting: {t['topic_short']}", f"Discuss {t['topic_short']}"))
        args = {"title": title, "date": day.isoformat(), "time": time, "attendees": attendees}
        if self.rng.random() < 0.5:
            bad = _bad_date(self.rng, day)
            broken, err, what = {"date": bad}, f"Error: invalid date '{bad}': expected YYYY-MM-DD.", "date"
        else:
            bad = _bad_time(self.rng, time)
            broken, err, what = {"time": bad}, f"Error: invalid time '{bad}': expected HH:MM.", "time"
        eid = f"evt_{int(self.rng.integers(10000, 99999))}"
        self.call("create_event", args, json.dumps({"id": eid, "status": "created", "date": day.isoformat(),
                                                    "time": time}), broken, err, what)
        if self.rng.random() < _P_CHECK:  # the optional step: the new event checked on the calendar
            self.list_events(day)

    def send_email(self, to: str, subject: str, body: str) -> None:
        bad = pick(self.rng, (to.replace("@", "."), to.split("@")[0], to.replace("@", "@@"), f"{self.task['person']}"))
        mid = f"msg_{int(self.rng.integers(1000, 9999)):04d}"
        self.call("send_email", {"to": to, "subject": subject, "body": body}, json.dumps({"id": mid, "status": "sent"}),
                  {"to": bad}, f"Error: invalid recipient address '{bad}'.", "address")

    def search_email(self, query: str) -> list[str]:
        ids = [f"msg_{int(self.rng.integers(1000, 9999)):04d}" for _ in range(int(self.rng.integers(1, 5)))]
        hits = [{"id": i, "from": self.task["email"], "subject": f"Re: {self.task['topic_short']}",
                 "date": (_TODAY - dt.timedelta(days=int(self.rng.integers(1, 20)))).isoformat()} for i in ids]
        bad = query + ' "' + pick(self.rng, ("about", "re", "urgent"))
        self.call("search_email", {"query": query}, json.dumps(hits), {"query": bad},
                  "Error: unterminated quoted phrase in query.", "query")
        return ids

    def read_email(self, mid: str) -> None:
        t = self.task
        body = pick(self.rng, (f"Hi, following up on {t['topic']}. Could we talk {t['when']}?",
                               f"Hello! Quick question about {t['topic']}: any news? Best, {t['person']}",
                               f"Attached the numbers for {t['topic']}. {pick(self.rng, _TIMES)} works for me.",
                               f"Can you confirm {t['topic']}? Thanks, {t['person']}"))
        bad = pick(self.rng, (mid.replace("msg_", "msg"), mid[:-1], mid.replace("msg_", "")))
        self.call("read_email", {"id": mid}, json.dumps({"id": mid, "from": t["email"], "body": body}), {"id": bad},
                  f"Error: no message with id '{bad}'.", "message id")


def _days(rng: np.random.Generator, task: dict, k: int) -> list[dt.date]:
    lo, hi = _WHEN[task["when"]]
    offsets = rng.choice(np.arange(lo, hi + 1), size=min(k, hi - lo + 1), replace=False)
    return [_TODAY + dt.timedelta(days=int(o)) for o in sorted(offsets.tolist())]


def _search_query(rng: np.random.Generator, task: dict, other: bool = False) -> str:
    if other:
        return pick(rng, (f"{task['topic_short']}", f"subject:{task['topic_short'].split()[-1]}",
                          f"{task['full']} {task['topic_short'].split()[-1]}", f"to:me {task['topic_short']}"))
    return pick(rng, (f"from:{task['person'].lower()} {task['topic_short']}", f"{task['person']} {task['topic_short']}",
                      f"from:{task['email']}", f"{task['topic_short'].split()[-1]} {task['person'].lower()}"))


def _subject(rng: np.random.Generator, task: dict, confirm: bool = False) -> str:
    if confirm:
        return pick(rng, (f"Invitation: {task['topic_short']}", f"Meeting about {task['topic_short']}",
                          f"Booked: {task['topic_short']}"))
    return pick(rng, (f"Re: {task['topic_short']}", f"RE: {task['topic_short'].title()}",
                      f"About {task['topic_short']}", f"{task['topic_short'].capitalize()}"))


def _body(rng: np.random.Generator, task: dict, day: dt.date | None = None, time: str | None = None) -> str:
    slot = f" How about {day.strftime('%A %d %B')} at {time}?" if day is not None else ""
    return pick(rng, (f"Hi {task['person']},\n\nThanks for your note on {task['topic']}.{slot}\n\nBest",
                      f"Hello {task['person']}, following up on {task['topic']}.{slot} Regards",
                      f"{task['person']} - noted re {task['topic']}.{slot} Cheers",
                      f"Dear {task['person']},\n{pick(rng, ('Sounds good.', 'Agreed.', 'Will do.'))}{slot}"))


def _guess_address(rng: np.random.Generator, task: dict) -> str:
    """The address an agent writes without looking it up (sometimes right)."""
    return pick(rng, (task["email"], f"{task['person'].lower()}@{pick(rng, _DOMAINS)}",
                      f"{task['person'].lower()}.{word(rng, 1)}@{task['email'].split('@')[1]}"))


def _episode(rng: np.random.Generator, strategy: str, task: dict) -> _Session:
    s = _Session(rng, task)
    meeting = task["kind"] == "meeting"
    time = pick(rng, _TIMES)
    if strategy == "no_tools":
        s.answer(pick(rng, (f"Which day would suit you for {task['topic']}, and should I invite anyone besides "
                            f"{task['person']}?",
                            f"Could you tell me {task['person']}'s e-mail address first?",
                            f"Sure - I'd suggest {pick(rng, ('Tuesday', 'Wednesday', 'Thursday'))} at {time}. "
                            f"Shall I go ahead?",
                            f"I'll need a bit more detail about {task['topic']} before I write to {task['person']}.",
                            f"Noted: {task['topic']} with {task['person']} {task['when']}.")))
        return s
    if strategy == "direct":
        day = _days(rng, task, 1)[0]
        if meeting:
            s.create_event(day, time, [_guess_address(rng, task)])
        else:
            s.send_email(_guess_address(rng, task), _subject(rng, task), _body(rng, task))
    elif strategy == "calendar_first":
        days = _days(rng, task, int(rng.integers(1, 4)))
        for d in days:
            s.list_events(d)
        day = days[int(rng.integers(len(days)))]
        if meeting:
            s.create_event(day, time, [_guess_address(rng, task)])
        else:
            s.send_email(_guess_address(rng, task), _subject(rng, task), _body(rng, task, day, time))
    elif strategy == "contact_first":
        s.find_contact()
        if meeting:
            s.create_event(_days(rng, task, 1)[0], time, [task["email"]])
        else:
            s.send_email(task["email"], _subject(rng, task), _body(rng, task))
    elif strategy == "thread_first":
        ids = s.search_email(_search_query(rng, task))
        if rng.random() < _P_RESEARCH:  # the optional step: a second search in other words
            ids = s.search_email(_search_query(rng, task, other=True))
        for mid in ids[:int(rng.integers(1, 4))]:
            s.read_email(mid)
        if meeting:
            s.create_event(_days(rng, task, 1)[0], time, [task["email"]])
        else:
            s.send_email(task["email"], _subject(rng, task), _body(rng, task))
    elif strategy == "diligent":
        s.find_contact()
        days = _days(rng, task, int(rng.integers(1, 3)))
        for d in days:
            s.list_events(d)
        day = days[-1]
        s.create_event(day, time, [task["email"]])
        s.send_email(task["email"], _subject(rng, task, confirm=True), _body(rng, task, day, time))
    else:
        raise ValueError(f"unknown strategy {strategy!r}")
    s.answer(pick(rng, (f"Done - {'the meeting is booked' if meeting else 'the reply is sent'}.",
                        f"All set with {task['person']}.",
                        f"I've {'scheduled it' if meeting else 'replied'}; let me know if you need anything else.",
                        f"{'Booked' if meeting else 'Sent'}: {task['topic']}.")))
    return s


def _task(rng: np.random.Generator) -> dict:
    person = name(rng)
    surname = name(rng)
    topic = pick(rng, _TOPICS)
    t = {"kind": pick(rng, ("meeting", "reply")), "person": person, "full": f"{person} {surname}",
         "email": f"{person.lower()}.{surname.lower()}@{pick(rng, _DOMAINS)}", "topic": topic,
         "topic_short": topic.removeprefix("the "), "when": pick(rng, tuple(_WHEN))}
    if t["kind"] == "meeting":
        t["text"] = pick(rng, ("Set up a meeting with {person} about {topic} {when}.",
                               "Can you book time with {person} {when} to go over {topic}?",
                               "Please schedule a call with {person} re {topic}, {when} if possible.",
                               "I need to meet {person} about {topic} {when}. Sort it out?")).format(**t)
    else:
        t["text"] = pick(rng, ("Reply to {person}'s last email about {topic}.",
                               "Can you answer {person}'s message on {topic}? Aim for {when}.",
                               "{person} wrote about {topic} - please get back to them.",
                               "Please respond to {person} regarding {topic}.")).format(**t)
    return t


def assistant(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
              random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the personal-assistant world (ATIF v1.4 documents, one per trajectory).

    Parameters
    ----------
    n_questions, n_samples
        Requests (tasks), and episodes per request and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``atif``; the truth has ``strategy``, ``kind`` (meeting or reply),
        ``n_calls`` (tool calls, failed ones included) and ``n_failures``.

    Examples
    --------
    >>> w = assistant(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('atif', 4, ['base', 'rl'])
    >>> w.records[0]["schema_version"], w.records[0]["agent"]["model_name"]
    ('ATIF-v1.4', 'base')
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"assistant-{i:04d}", _task(rng)) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, task: dict
                ) -> tuple[dict, tuple]:
        session = _episode(rng, strategy, task)
        correct = bool(rng.random() < _SUCCESS[strategy])
        return ({"schema_version": "ATIF-v1.4", "session_id": f"{arm}-{qid}-{sample}",
                 "agent": {"name": "assistant-agent", "version": "1.0", "model_name": arm}, "steps": session.steps,
                 "extra": {"question_id": qid, "sample_id": sample, "correct": correct,
                           "gold": [f"{'event' if task['kind'] == 'meeting' else 'reply'}:{task['email']}"]}},
                (task["kind"], session.n_calls, session.n_failures))

    return planted_world("assistant", "atif", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64})
