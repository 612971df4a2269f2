"""A data-analyst agent world: questions about a company database, SQL and Python tools.

The user asks a question about the company's data ("What was the total revenue from customers
in Norway in 2023?", "How many orders did Acme Ltd place last quarter?"). The agent has five
tools in OpenAI ``tool_calls`` format: ``list_tables()``, ``describe_table(table)``,
``sample_rows(table, n)``, ``run_sql(query)`` and ``run_python(code)``; results are JSON rows or
text, failures are ``Error: ...`` observations (a misspelt table, a column that does not
exist, a syntax error, a query that timed out), after which the agent fixes the call and tries
the same tool again.

Seven planted strategies; call counts overlap (0, 1-2, 3-7, 2-4, 2-4, 3-6, 2-6 calls with the
retries and optional steps):

=================  ========================================================================
``guess``          answer from the question alone, no tool (an estimate, or a refusal)
``direct_sql``     one SQL query written straight from the question, then the answer
``schema_sql``     list the tables, describe one (optionally a second), then one query
``peek_sql``       look at a few rows of the main table, then one query
``lookup_sql``     a first query finds an id (the customer's, the product's) and a second
                   query uses the id the first returned
``checked_sql``    describe the table, run the query, then a second, different query that
                   checks the first (a row count, the same total computed another way)
``pandas``         fetch the rows with SQL (optionally look at the table's columns first),
                   then compute the answer in Python over what was fetched
=================  ========================================================================

Failures (a call that errs, followed by a corrected call of the same tool) occur inside every
strategy that calls a tool; they are execution, not strategy. The optional steps (a second
table described; the columns looked at before fetching) belong to their strategy whichever way
they go. The SQL text, the Python code and the assistant's words vary inside every strategy.
The ``rl`` arm differs from ``base`` only in its mixture.

Written without reference to how trajectories are segmented or clustered, so that recovering
its strategies tests the method, not the code against itself.
"""
from __future__ import annotations

import json

import numpy as np

from mechanism.core.options import as_generator
from mechanism.datasets.worlds._base import World, chat_world, name, pick, word

STRATEGIES = ("guess", "direct_sql", "schema_sql", "peek_sql", "lookup_sql", "checked_sql", "pandas")
ARMS = {
    "base": {"guess": 0.12, "direct_sql": 0.25, "schema_sql": 0.1, "peek_sql": 0.15, "lookup_sql": 0.13,
             "checked_sql": 0.1, "pandas": 0.15},
    "rl": {"guess": 0.04, "direct_sql": 0.1, "schema_sql": 0.2, "peek_sql": 0.1, "lookup_sql": 0.16,
           "checked_sql": 0.25, "pandas": 0.15},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"guess": 0.1, "direct_sql": 0.5, "schema_sql": 0.7, "peek_sql": 0.6, "lookup_sql": 0.65,
            "checked_sql": 0.8, "pandas": 0.6}
_TABLES = ("orders", "customers", "products", "payments", "shipments")
_COUNTRIES = ("Norway", "Chile", "Kenya", "Japan", "Portugal", "Canada", "Vietnam")
_METRICS = {  # what is asked -> (SQL aggregate over orders, words of the question)
    "revenue": ("SUM(o.amount)", "the total revenue"),
    "orders": ("COUNT(*)", "how many orders were placed"),
    "average": ("AVG(o.amount)", "the average order value"),
}
# the chance that a call which can fail does; a failure is retried (fixed) by the same tool
_P_FAIL = 0.15
_ERRORS = {
    "describe_table": ("Error: no such table: {bad}",),
    "sample_rows": ("Error: no such table: {bad}", "Error: n must be at most 20"),
    "run_sql": ("Error: near \"{kw}\": syntax error", "Error: no such column: {col}",
                "Error: query timed out after 30 s"),
    "run_python": ("Traceback (most recent call last):\n  ...\nNameError: name 'df' is not defined",
                   "Traceback (most recent call last):\n  ...\nKeyError: 'amount'"),
    "list_tables": ("Error: database is locked",),
}
_SAY = {
    "list_tables": ("Let me see which tables there are.", "First, the tables.", "What tables does the database have?"),
    "describe_table": ("Let me check the columns of {t}.", "What does {t} look like?", "Checking the schema of {t}."),
    "sample_rows": ("Let me look at a few rows of {t}.", "A quick peek at {t}.", "Some example rows from {t} first."),
    "run_sql": ("Running the query.", "Let me query the database.", "I will compute it in SQL.", "Querying."),
    "run_python": ("Let me compute this in Python.", "Now the calculation with pandas.", "Computing it."),
}


def _rows(rng: np.random.Generator, n: int, cols: dict[str, str]) -> str:
    """``n`` JSON rows with the given columns (kind: id, name, money, int, date)."""
    out = []
    for _ in range(n):
        row = {}
        for col, kind in cols.items():
            row[col] = {"id": lambda: int(rng.integers(1000, 99999)), "name": lambda: name(rng),
                        "money": lambda: round(float(rng.uniform(5, 900)), 2), "int": lambda: int(rng.integers(1, 50)),
                        "date": lambda: f"2023-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}"}[kind]()
        out.append(row)
    return json.dumps(out)


_COLUMNS = {
    "orders": {"order_id": "id", "customer_id": "id", "amount": "money", "order_date": "date"},
    "customers": {"customer_id": "id", "company": "name", "country": "name"},
    "products": {"product_id": "id", "title": "name", "price": "money"},
    "payments": {"payment_id": "id", "order_id": "id", "paid": "money"},
    "shipments": {"shipment_id": "id", "order_id": "id", "days": "int"},
}


class _Session:
    """One transcript in OpenAI chat format; tool calls numbered, failures retried."""

    def __init__(self, rng: np.random.Generator, task: dict, can_fail: bool) -> None:
        self.rng, self.task, self.can_fail = rng, task, can_fail
        self.messages: list[dict] = [
            {"role": "system", "content": "You are a data analyst with read access to the company database."},
            {"role": "user", "content": task["text"]}]
        self.n = 0

    def _turn(self, tool: str, args: dict, result: str) -> None:
        self.n += 1
        cid = f"call_{self.n:03d}"
        said = pick(self.rng, _SAY[tool]).format(t=args.get("table", "the table"))
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})

    def call(self, tool: str, args: dict, result: str, broken: dict | None = None) -> None:
        """The call; first, where it can fail and does, a broken version of it (``broken``:
        other arguments it was first made with), answered with an error."""
        if self.can_fail and self.rng.random() < _P_FAIL:
            bad = dict(args, **(broken or {}))
            err = pick(self.rng, _ERRORS[tool]).format(bad=str(bad.get("table", "order")) + "s",
                                                       kw=pick(self.rng, ("FORM", "WHER", "GROUPBY")),
                                                       col=pick(self.rng, ("revenue", "total", "cust_name")))
            self._turn(tool, bad, err)
        self._turn(tool, args, result)

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _sql(rng: np.random.Generator, task: dict, where_id: str | None = None) -> str:
    """The question's query, written one of several ways (wording varies inside a strategy)."""
    agg = _METRICS[task["metric"]][0]
    alias = pick(rng, ("value", "result", task["metric"], "answer"))
    if where_id is not None:
        cond = f"o.customer_id = {where_id}"
    else:
        cond = pick(rng, (f"c.country = '{task['country']}'", f"c.country LIKE '{task['country']}'",
                          f"UPPER(c.country) = '{task['country'].upper()}'"))
    year = pick(rng, ("strftime('%Y', o.order_date) = '2023'",
                      "o.order_date BETWEEN '2023-01-01' AND '2023-12-31'", "o.order_date >= '2023-01-01'"))
    if where_id is not None:
        sql = f"SELECT {agg} AS {alias} FROM orders o WHERE {cond} AND {year}"
    else:
        sql = (f"SELECT {agg} AS {alias} FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
               f"WHERE {cond} AND {year}")
    return sql.lower() if rng.random() < 0.3 else sql


def _value(rng: np.random.Generator, task: dict) -> str:
    v = {"revenue": round(float(rng.uniform(1e4, 9e5)), 2), "orders": int(rng.integers(20, 4000)),
         "average": round(float(rng.uniform(20, 400)), 2)}[task["metric"]]
    return json.dumps([{"value": v}])


def _episode(rng: np.random.Generator, strategy: str, task: dict) -> list[dict]:
    s = _Session(rng, task, can_fail=strategy != "guess")
    broken_sql = {"query": pick(rng, ("SELECT SUM(revenue) FORM orders", "SELECT total FROM order WHER year = 2023",
                                      "SELECT cust_name, SUM(amount) FROM orders GROUPBY 1"))}
    if strategy == "guess":
        s.answer(pick(rng, ("I do not have the figures at hand; my best estimate is around 120,000.",
                            "I can't be sure without the data, but probably a few hundred.",
                            f"Roughly {int(rng.integers(2, 90)) * 1000}, judging by typical years.")))
        return s.messages
    if strategy == "schema_sql":
        s.call("list_tables", {}, json.dumps(list(_TABLES)))
        first = pick(rng, ("orders", "customers"))
        s.call("describe_table", {"table": first}, json.dumps(_COLUMNS[first]), broken={"table": first[:-1]})
        if rng.random() < 0.4:  # the optional step: the other table of the join described too
            other = "customers" if first == "orders" else "orders"
            s.call("describe_table", {"table": other}, json.dumps(_COLUMNS[other]), broken={"table": other[:-1]})
    elif strategy == "peek_sql":
        s.call("sample_rows", {"table": "orders", "n": pick(rng, (3, 5, 10))},
               _rows(rng, 3, _COLUMNS["orders"]), broken={"n": 500})
    elif strategy == "checked_sql":
        s.call("describe_table", {"table": "orders"}, json.dumps(_COLUMNS["orders"]), broken={"table": "order"})
    elif strategy == "pandas" and rng.random() < 0.5:  # the optional step: the columns first
        s.call("describe_table", {"table": "orders"}, json.dumps(_COLUMNS["orders"]), broken={"table": "order"})

    if strategy == "lookup_sql":
        company = task["company"]
        cid = str(int(rng.integers(1000, 99999)))
        s.call("run_sql", {"query": pick(rng, (f"SELECT customer_id FROM customers WHERE company = '{company}'",
                                               f"select customer_id, company from customers where company like "
                                               f"'%{company}%'"))},
               json.dumps([{"customer_id": int(cid), "company": company}]), broken=broken_sql)
        s.call("run_sql", {"query": _sql(rng, task, where_id=cid)}, _value(rng, task), broken=broken_sql)
    elif strategy == "pandas":
        fetch = pick(rng, ("SELECT o.amount, o.order_date, c.country FROM orders o JOIN customers c "
                           "ON c.customer_id = o.customer_id",
                           "select * from orders join customers using (customer_id)",
                           "SELECT amount, order_date, country FROM orders NATURAL JOIN customers"))
        s.call("run_sql", {"query": fetch}, _rows(rng, 5, {"amount": "money", "order_date": "date"}), broken=broken_sql)
        code = pick(rng, (f"df = pd.DataFrame(rows)\ndf = df[df.country == '{task['country']}']\n",
                          f"import pandas as pd\nd = pd.DataFrame(rows).query(\"country == '{task['country']}'\")\n",
                          f"sel = [r for r in rows if r['country'] == '{task['country']}']\n"))
        code += {"revenue": "print(sum(amounts))", "orders": "print(len(sel))", "average": "print(mean(amounts))"}[
            task["metric"]]
        s.call("run_python", {"code": code}, str(json.loads(_value(rng, task))[0]["value"]),
               broken={"code": code.replace("rows", "df", 1)})
    else:  # one query, and for checked_sql a second that checks it
        s.call("run_sql", {"query": _sql(rng, task)}, _value(rng, task), broken=broken_sql)
        if strategy == "checked_sql":
            check = pick(rng, ("SELECT COUNT(*) AS n FROM orders WHERE order_date >= '2023-01-01'",
                               "select count(distinct o.order_id) from orders o where o.order_date like '2023%'",
                               "SELECT MIN(order_date), MAX(order_date), COUNT(*) FROM orders"))
            s.call("run_sql", {"query": check}, json.dumps([{"n": int(rng.integers(100, 5000))}]), broken=broken_sql)
    s.answer(pick(rng, ("Here is the figure you asked for.", "The answer is in the result above.",
                        f"Done: {_METRICS[task['metric']][1]} for {task['country']} in 2023.")))
    return s.messages


def analyst(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
            random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the data-analyst world (OpenAI ``tool_calls`` records).

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
        Records in format ``openai`` and the planted strategies.

    Examples
    --------
    >>> w = analyst(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = []
    for i in range(n_questions):
        t = {"metric": pick(rng, tuple(_METRICS)), "country": pick(rng, _COUNTRIES),
             "company": f"{name(rng)} {pick(rng, ('Ltd', 'GmbH', 'Inc', 'AS'))}", "who": word(rng).capitalize()}
        t["text"] = pick(rng, (
            "What was {what} from customers in {country} in 2023? {company} is our largest one there.",
            "Can you tell me {what} for {country} (year 2023)? Our customer {company} is one of them.",
            "For the {country} market in 2023 (accounts like {company}), I need {what}. Thanks, {who}.",
        )).format(what=_METRICS[t["metric"]][1], **t)
        tasks.append((f"analyst-{i:04d}", t))
    return chat_world("analyst", "openai", rng, tasks, arms, n_samples, _episode, _SUCCESS)
