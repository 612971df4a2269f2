"""A text-to-SQL world: one SQL tool on analytics questions about SQLite databases (BIRD / Spider 2.0-like).

Four databases of different domains (:data:`DATABASES`; a web shop, flights, a university, a
music-streaming service), each with five or six tables with realistic columns and foreign keys,
are built with random rows when the world is generated. Each question is about one database and
its answer is a number or a short value ("How many customers in Lyon placed more than two orders
in 2023?", "Which product category had the highest average review score in Q3 2023?", "What share
of flights departing Boston in 2024 were delayed by more than an hour?"); twelve kinds of question
(:data:`QUESTIONS`), three per database, with random parameters.

The agent has ONE tool, named as LangChain's SQL toolkit names its query tool:
``sql_db_query`` with the single argument ``{"query": ...}``, in OpenAI ``tool_calls`` format.
The system prompt names the database but not its tables: the agent learns the schema only by
querying the catalog (``sqlite_master``, ``PRAGMA table_info``) or guesses the names from the
question. Every statement is run on the world's SQLite database when the world is generated, so
the tool's result (role ``tool``) is what the database returns: the rows as the ``sqlite3`` shell
prints them with headers on (a header line, then one line per row, ``|`` between values), or the
error as LangChain's ``SQLDatabase`` reports a SQLAlchemy error::

    Error: (sqlite3.OperationalError) no such column: o.ordered_at
    [SQL: SELECT ...]
    (Background on this error at: https://sqlalche.me/e/20/e3q8)

(``no such table: customer``, ``near "SELEC": syntax error``, ``ambiguous column name:
customer_id``, ``no such function: YEAR``, ...; the message is SQLite's own). A statement still
running after 30 seconds is interrupted by the harness (a cross join left without its ``ON`` on
the full-size tables): ``Error: (sqlite3.OperationalError) interrupted`` with the same two lines
(:func:`error_text`). The text of an assistant message before a tool call is its reasoning
(sometimes empty); the last assistant message, without a tool call, gives the answer in bold
(``The answer is **7**.``).

Seven planted strategies (statements without failures and optional steps):

================  =========================================================================
``no_query``      answers from the question alone: a refusal or a guess; no statement
``direct``        guesses the schema and writes the final query at once (one statement)
``schema_first``  lists the tables from the catalog (``SELECT name FROM sqlite_master ...``),
                  then the columns of each table the question needs (``PRAGMA table_info``,
                  ``pragma_table_info`` or the table's ``CREATE`` statement), then the final
                  query; or (:data:`_P_DDL`) one catalog query returning every ``CREATE``
                  statement, then the final query (two to seven statements)
``sample_rows``   ``SELECT * FROM t LIMIT n`` of each table the question needs (at most
                  three), then the final query (three or four statements)
``decompose``     two to four small queries, each computing an intermediate result (an id, a
                  list of ids, a count), a later one typing in the values an earlier one
                  returned instead of a join; the last one returns the answer
``probe_values``  checks the values or range of one to all of the columns the question
                  filters on (``SELECT DISTINCT city ...``, ``MIN(order_date),
                  MAX(order_date)``, a count per value), then the final query (two to four
                  statements)
``verify``        the final query, then a differently written one confirming it (a subquery
                  instead of the join, or the counts and sums behind an average or a ranking)
================  =========================================================================

Failures are execution, not strategy: any statement fails with probability :data:`_P_FAIL` (a
guessed column or table name; a syntax slip: ``SELEC``, a comma before ``FROM``, a parenthesis
left open, ``FORM``; an unqualified column that two joined tables share; another dialect's date
functions, ``YEAR(o.order_date) = 2023``, ``DATE '2023-01-01'``; a join left without its
condition, which times out) and is followed at once by the corrected statement. The optional
steps happen at fixed rates whatever the arm, the question and the strategy, in every strategy
that queries: a ``SELECT COUNT(*)`` sanity check of the question's main table first
(:data:`_P_COUNT`), and the final query re-run with a ``LIMIT`` to look at the rows
(:data:`_P_LIMIT`); and an empty reasoning text (:data:`_P_EMPTY`, every assistant message before
a tool call). Table aliases (``o``, ``ord``, ``orders AS o``, none), keyword case, line breaks,
a closing semicolon, column names and order, numbers and the assistant's words vary inside every
strategy. The ``rl`` arm differs from ``base`` only in its mixture; success is drawn at the
strategy's rate (random within it), and a wrong answer is a plausible near value (a number a few
percent off, another category, airline, department or artist).

The truth carries, beside ``strategy``, ``database``, ``n_calls`` (statements run),
``n_failures`` (statements that errored) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, name, pick, planted_world, word

STRATEGIES = ("no_query", "direct", "schema_first", "sample_rows", "decompose", "probe_values", "verify")
DATABASES = ("shop", "flights", "university", "music")
ARMS = {
    "base": {"no_query": 0.1, "direct": 0.22, "schema_first": 0.16, "sample_rows": 0.14, "decompose": 0.12,
             "probe_values": 0.14, "verify": 0.12},
    "rl": {"no_query": 0.04, "direct": 0.1, "schema_first": 0.22, "sample_rows": 0.1, "decompose": 0.1,
           "probe_values": 0.22, "verify": 0.22},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"no_query": 0.1, "direct": 0.45, "schema_first": 0.62, "sample_rows": 0.58, "decompose": 0.55,
            "probe_values": 0.68, "verify": 0.7}
#: the chance that a statement fails (the same for every statement, strategy and arm)
_P_FAIL = 0.15
#: the optional steps' rates (the same in every arm, question and strategy that queries)
_P_COUNT = 0.2  # a SELECT COUNT(*) sanity check of the main table first
_P_LIMIT = 0.25  # the final query re-run with a LIMIT at the end
_P_EMPTY = 0.2  # an assistant message before a tool call without text
_P_DDL = 0.3  # schema_first: one catalog query returning the CREATE statements instead of one look per table
TOOL = "sql_db_query"
_ERROR = "sqlite3.OperationalError"
_BACKGROUND = "(Background on this error at: https://sqlalche.me/e/20/e3q8)"


def error_text(message: str, sql: str, error: str = _ERROR) -> str:
    """The tool's result for a statement that failed, as LangChain's ``SQLDatabase`` reports it.

    >>> print(error_text("no such column: o.total", "SELECT o.total FROM orders o"))
    Error: (sqlite3.OperationalError) no such column: o.total
    [SQL: SELECT o.total FROM orders o]
    (Background on this error at: https://sqlalche.me/e/20/e3q8)
    """
    return f"Error: ({error}) {message}\n[SQL: {sql}]\n{_BACKGROUND}"


# the databases --------------------------------------------------------------------------------------

_CITIES = ("Lyon", "Paris", "Marseille", "Lille", "Nantes", "Toulouse", "Bordeaux", "Nice")
_MAILS = ("example.com", "mail.fr", "webmail.net", "post.org")
_CATEGORIES = {"Electronics": ("Headphones", "Charger", "Speaker", "Webcam", "Keyboard"),
               "Home & Kitchen": ("Kettle", "Blender", "Pan", "Lamp", "Mug"),
               "Books": ("Cookbook", "Novel", "Atlas", "Guide", "Anthology"),
               "Toys": ("Puzzle", "Kite", "Robot", "Blocks", "Doll"),
               "Sports": ("Yoga Mat", "Dumbbell", "Water Bottle", "Racket", "Helmet"),
               "Beauty": ("Serum", "Lotion", "Shampoo", "Brush", "Lip Balm")}
_ADJ = ("Classic", "Compact", "Deluxe", "Eco", "Pro", "Smart", "Mini", "Ultra", "Travel", "Family")
_STATUS = ("delivered", "shipped", "cancelled", "returned")
_AIRPORTS = (("JFK", "John F. Kennedy International", "New York"), ("ORD", "O'Hare International", "Chicago"),
             ("LAX", "Los Angeles International", "Los Angeles"), ("ATL", "Hartsfield-Jackson", "Atlanta"),
             ("DFW", "Dallas/Fort Worth International", "Dallas"), ("DEN", "Denver International", "Denver"),
             ("SEA", "Seattle-Tacoma International", "Seattle"), ("SFO", "San Francisco International",
                                                                  "San Francisco"),
             ("BOS", "Logan International", "Boston"), ("MIA", "Miami International", "Miami"))
_AIRLINES = (("Northwind Air", "NW"), ("Bluejay Airways", "BJ"), ("Summit Airlines", "SU"),
             ("Coastal Express", "CE"), ("Polar Wings", "PW"), ("Meridian Air", "MD"))
_AIRCRAFT = (("A320", 180), ("A321neo", 206), ("B737-800", 172), ("B737 MAX 8", 178), ("E175", 76),
             ("A220-300", 140), ("B787-9", 290), ("CRJ900", 76))
_CABINS = {"economy": ("economy", 80, 420), "premium": ("premium economy", 250, 750),
           "business": ("business-class", 700, 2600)}
_DEPARTMENTS = (("Physics", "PHYS", "Watson Hall"), ("History", "HIST", "Painter Hall"),
                ("Biology", "BIO", "Lamberton Hall"), ("Computer Science", "CS", "Taylor Hall"),
                ("Economics", "ECON", "Packard Hall"), ("Music", "MUS", "Main Building"))
_COURSE_WORDS = ("Introduction to", "Topics in", "Advanced", "Seminar in", "Methods of", "Foundations of")
_GRADES = ("A", "A-", "B+", "B", "B-", "C+", "C", "D", "F")
_GENRES = {"Rock": 230_000, "Jazz": 320_000, "Hip-Hop": 215_000, "Electronic": 300_000, "Classical": 420_000,
           "Pop": 200_000}
_COUNTRIES = {"DE": "Germany", "FR": "France", "US": "the United States", "BR": "Brazil", "JP": "Japan",
              "SE": "Sweden"}
_PLANS = {"free": "free-tier", "premium": "Premium", "family": "Family-plan"}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_ORDINALS = ("first", "second", "third", "fourth")

# table -> (short alias, longer alias)
_ALIASES = {
    "shop": {"customers": ("c", "cust"), "categories": ("ca", "cat"), "products": ("p", "prod"),
             "orders": ("o", "ord"), "order_items": ("oi", "items"), "reviews": ("r", "rev")},
    "flights": {"airports": ("a", "ap"), "airlines": ("al", "carrier"), "aircraft": ("ac", "plane"),
                "flights": ("f", "fl"), "bookings": ("b", "bk")},
    "university": {"departments": ("d", "dept"), "instructors": ("i", "inst"), "students": ("s", "stu"),
                   "courses": ("c", "crs"), "teaches": ("te", "tch"), "takes": ("t", "tk")},
    "music": {"artists": ("ar", "art"), "albums": ("al", "alb"), "tracks": ("t", "trk"), "users": ("u", "usr"),
              "plays": ("p", "pl")},
}


def _ddl(table: str, *cols: str) -> str:
    return f"CREATE TABLE {table} (\n    " + ",\n    ".join(cols) + "\n)"


def _days(rng: np.random.Generator, start: str, end: str) -> str:
    a, b = np.datetime64(start), np.datetime64(end)
    return str(a + int(rng.integers(0, int((b - a).astype(int)) + 1)))


def _choice(rng: np.random.Generator, n: int, p: np.ndarray) -> int:
    return int(rng.choice(n, p=p / p.sum()))


class _Db:
    """One SQLite database in memory, its schema, and the values questions are drawn from."""

    def __init__(self, name_: str, ddl: list[str], data: dict[str, list[tuple]], values: dict[str, Any]) -> None:
        self.name = name_
        self.conn = sqlite3.connect(":memory:")
        for stmt in ddl:
            self.conn.execute(stmt)
        for table, rows in data.items():
            self.conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
        self.conn.commit()
        self.tables = list(data)
        self.columns = {t: [r[1] for r in self.conn.execute(f"PRAGMA table_info({t})")] for t in self.tables}
        self.values = values
        self._cache: dict[str, Any] = {}

    def execute(self, sql: str) -> tuple[list[str], list[tuple]]:
        """The header and rows of ``sql``; raises the ``sqlite3.Error`` it raises."""
        got = self._cache.get(sql)
        if got is None:
            try:
                cur = self.conn.execute(sql)
                got = ([d[0] for d in cur.description or ()], cur.fetchall())
            except sqlite3.Error as e:
                got = e
            self._cache[sql] = got
        if isinstance(got, sqlite3.Error):
            raise got
        return got


def _shop(rng: np.random.Generator) -> _Db:
    ddl = [_ddl("customers", "customer_id INTEGER PRIMARY KEY", "first_name TEXT NOT NULL", "last_name TEXT NOT NULL",
                "email TEXT", "city TEXT", "signup_date TEXT"),
           _ddl("categories", "category_id INTEGER PRIMARY KEY", "name TEXT NOT NULL"),
           _ddl("products", "product_id INTEGER PRIMARY KEY", "name TEXT NOT NULL",
                "category_id INTEGER REFERENCES categories(category_id)", "price REAL"),
           _ddl("orders", "order_id INTEGER PRIMARY KEY", "customer_id INTEGER REFERENCES customers(customer_id)",
                "order_date TEXT", "status TEXT"),
           _ddl("order_items", "order_id INTEGER REFERENCES orders(order_id)",
                "product_id INTEGER REFERENCES products(product_id)", "quantity INTEGER", "unit_price REAL"),
           _ddl("reviews", "review_id INTEGER PRIMARY KEY", "product_id INTEGER REFERENCES products(product_id)",
                "customer_id INTEGER REFERENCES customers(customer_id)", "rating INTEGER", "created_at TEXT")]
    city_p = rng.dirichlet(np.full(len(_CITIES), 4.0))
    customers = []
    for i in range(1, int(rng.integers(60, 76))):
        first, last = name(rng), name(rng)
        customers.append((i, first, last, f"{first.lower()}.{last.lower()}@{pick(rng, _MAILS)}",
                          _CITIES[_choice(rng, len(_CITIES), city_p)], _days(rng, "2020-01-01", "2023-12-31")))
    cats = list(_CATEGORIES)
    categories = [(i + 1, c) for i, c in enumerate(cats)]
    cat_q = rng.normal(0, 0.35, len(cats))
    products, quality, prices = [], [], []
    for i in range(1, 43):
        c = int(rng.integers(len(cats)))
        price = round(float(np.exp(rng.uniform(np.log(6), np.log(400)))), 2)
        products.append((i, f"{pick(rng, _ADJ)} {pick(rng, _CATEGORIES[cats[c]])}", c + 1, price))
        quality.append(cat_q[c] + rng.normal(0, 0.5))
        prices.append(price)
    activity = rng.gamma(1.5, 1.0, len(customers))
    orders, items = [], []
    for i in range(1, 361):
        orders.append((i, _choice(rng, len(customers), activity) + 1, _days(rng, "2022-01-01", "2024-06-30"),
                       _STATUS[_choice(rng, 4, np.array([0.72, 0.12, 0.09, 0.07]))]))
        for _ in range(int(rng.integers(1, 5))):
            p = int(rng.integers(len(products)))
            unit = prices[p] if rng.random() < 0.8 else round(prices[p] * 0.9, 2)
            items.append((i, p + 1, int(rng.integers(1, 4)), unit))
    reviews = []
    for i in range(1, 461):
        p = int(rng.integers(len(products)))
        rating = int(np.clip(round(3.7 + quality[p] + rng.normal(0, 0.9)), 1, 5))
        reviews.append((i, p + 1, int(rng.integers(1, len(customers) + 1)), rating,
                        _days(rng, "2022-01-01", "2024-06-30")))
    data = {"customers": customers, "categories": categories, "products": products, "orders": orders,
            "order_items": items, "reviews": reviews}
    return _Db("shop", ddl, data, {"cities": sorted({c[4] for c in customers}), "categories": cats})


def _flights(rng: np.random.Generator) -> _Db:
    ddl = [_ddl("airports", "code TEXT PRIMARY KEY", "name TEXT", "city TEXT", "country TEXT"),
           _ddl("airlines", "airline_id INTEGER PRIMARY KEY", "name TEXT NOT NULL", "iata_code TEXT"),
           _ddl("aircraft", "aircraft_id INTEGER PRIMARY KEY", "model TEXT", "seats INTEGER"),
           _ddl("flights", "flight_id INTEGER PRIMARY KEY", "flight_no TEXT",
                "airline_id INTEGER REFERENCES airlines(airline_id)",
                "aircraft_id INTEGER REFERENCES aircraft(aircraft_id)", "origin TEXT REFERENCES airports(code)",
                "destination TEXT REFERENCES airports(code)", "flight_date TEXT", "dep_delay INTEGER",
                "cancelled INTEGER"),
           _ddl("bookings", "booking_id INTEGER PRIMARY KEY", "flight_id INTEGER REFERENCES flights(flight_id)",
                "passenger_name TEXT", "cabin TEXT", "fare REAL")]
    airports = [(code, full, city, "US") for code, full, city in _AIRPORTS]
    airlines = [(i + 1, n, iata) for i, (n, iata) in enumerate(_AIRLINES)]
    aircraft = [(i + 1, m, s) for i, (m, s) in enumerate(_AIRCRAFT)]
    late = rng.uniform(0.08, 0.3, len(airports))
    cancel = rng.uniform(0.02, 0.09, len(airlines))
    air_p = rng.dirichlet(np.full(len(airlines), 5.0))
    flights = []
    for i in range(1, 1601):
        o, d = rng.choice(len(airports), 2, replace=False)
        al = _choice(rng, len(airlines), air_p)
        if rng.random() < cancel[al]:
            delay, cancelled = None, 1
        else:
            delay = int(rng.exponential(70)) + 61 if rng.random() < late[o] else int(rng.integers(-8, 55))
            cancelled = 0
        flights.append((i, f"{_AIRLINES[al][1]}{int(rng.integers(100, 2999))}", al + 1,
                        int(rng.integers(1, len(aircraft) + 1)), _AIRPORTS[o][0], _AIRPORTS[d][0],
                        _days(rng, "2023-01-01", "2024-12-31"), delay, cancelled))
    flown = [f[0] for f in flights if not f[8]]
    mult = rng.uniform(0.8, 1.3, len(airlines))
    bookings = []
    for i in range(1, 3601):
        f = flights[flown[int(rng.integers(len(flown)))] - 1]
        cabin = ("economy", "premium", "business")[_choice(rng, 3, np.array([0.72, 0.12, 0.16]))]
        _, lo, hi = _CABINS[cabin]
        bookings.append((i, f[0], f"{name(rng)} {name(rng)}", cabin,
                         round(float(rng.uniform(lo, hi) * mult[f[2] - 1]), 2)))
    data = {"airports": airports, "airlines": airlines, "aircraft": aircraft, "flights": flights,
            "bookings": bookings}
    return _Db("flights", ddl, data, {"cities": [a[2] for a in _AIRPORTS], "airlines": [a[0] for a in _AIRLINES]})


def _university(rng: np.random.Generator) -> _Db:
    ddl = [_ddl("departments", "dept_id INTEGER PRIMARY KEY", "dept_name TEXT NOT NULL", "building TEXT",
                "budget REAL"),
           _ddl("instructors", "instructor_id INTEGER PRIMARY KEY", "name TEXT",
                "dept_id INTEGER REFERENCES departments(dept_id)", "salary REAL", "hire_year INTEGER"),
           _ddl("students", "student_id INTEGER PRIMARY KEY", "name TEXT",
                "dept_id INTEGER REFERENCES departments(dept_id)", "enrollment_year INTEGER"),
           _ddl("courses", "course_id TEXT PRIMARY KEY", "title TEXT",
                "dept_id INTEGER REFERENCES departments(dept_id)", "credits INTEGER"),
           _ddl("teaches", "instructor_id INTEGER REFERENCES instructors(instructor_id)",
                "course_id TEXT REFERENCES courses(course_id)", "semester TEXT", "year INTEGER"),
           _ddl("takes", "student_id INTEGER REFERENCES students(student_id)",
                "course_id TEXT REFERENCES courses(course_id)", "semester TEXT", "year INTEGER", "grade TEXT")]
    departments = [(i + 1, n, b, float(int(rng.integers(40, 200)) * 5000)) for i, (n, _, b) in enumerate(_DEPARTMENTS)]
    base = rng.uniform(60_000, 110_000, len(departments))
    instructors = []
    for i in range(1, 37):
        d = int(rng.integers(len(departments)))
        year = int(rng.integers(1995, 2024))
        salary = round(float(base[d] + (2024 - year) * rng.uniform(800, 2200) + rng.normal(0, 9000)), 2)
        instructors.append((i, f"{name(rng)} {name(rng)}", d + 1, salary, year))
    students, seen = [], set()
    while len(students) < 160:
        full = f"{name(rng)} {name(rng)}"
        if full in seen:
            continue
        seen.add(full)
        students.append((len(students) + 1, full, int(rng.integers(1, len(departments) + 1)),
                         int(rng.integers(2019, 2024))))
    courses = []
    for d, (dname, code, _) in enumerate(_DEPARTMENTS):
        for k in range(4):
            courses.append((f"{code}-{100 * (k + 1) + int(rng.integers(1, 10))}",
                            f"{pick(rng, _COURSE_WORDS)} {dname}", d + 1, int(pick(rng, (2, 3, 3, 4, 4)))))
    terms = [(s, y) for y in (2022, 2023, 2024) for s in ("Spring", "Fall")]
    teaches = []
    for c in courses:
        staff = [ins[0] for ins in instructors if ins[2] == c[2]] or [instructors[0][0]]
        for s, y in terms:
            if rng.random() < 0.5:
                teaches.append((staff[int(rng.integers(len(staff)))], c[0], s, y))
    takes = []
    for st in students:
        ability = rng.normal(0, 1.2)
        for ci in rng.choice(len(courses), int(rng.integers(5, 11)), replace=False):
            s, y = terms[int(rng.integers(len(terms)))]
            g = int(np.clip(round(2.6 - ability + rng.normal(0, 1.6)), 0, len(_GRADES) - 1))
            takes.append((st[0], courses[int(ci)][0], s, y, _GRADES[g]))
    data = {"departments": departments, "instructors": instructors, "students": students, "courses": courses,
            "teaches": teaches, "takes": takes}
    return _Db("university", ddl, data, {"departments": [d[0] for d in _DEPARTMENTS],
                                         "students": [s[1] for s in students]})


def _music(rng: np.random.Generator) -> _Db:
    ddl = [_ddl("artists", "artist_id INTEGER PRIMARY KEY", "name TEXT NOT NULL", "country TEXT"),
           _ddl("albums", "album_id INTEGER PRIMARY KEY", "artist_id INTEGER REFERENCES artists(artist_id)",
                "title TEXT", "release_year INTEGER"),
           _ddl("tracks", "track_id INTEGER PRIMARY KEY", "album_id INTEGER REFERENCES albums(album_id)", "title TEXT",
                "genre TEXT", "duration_ms INTEGER"),
           _ddl("users", "user_id INTEGER PRIMARY KEY", "username TEXT UNIQUE", "country TEXT", "plan TEXT",
                "joined_at TEXT"),
           _ddl("plays", "play_id INTEGER PRIMARY KEY", "user_id INTEGER REFERENCES users(user_id)",
                "track_id INTEGER REFERENCES tracks(track_id)", "played_at TEXT")]
    artists, seen = [], set()
    while len(artists) < 16:
        n = pick(rng, ("{a} {b}", "The {a}s", "{a} Collective", "{a} & the {b}s", "{a}")).format(
            a=name(rng), b=word(rng).capitalize())
        if n not in seen:
            seen.add(n)
            artists.append((len(artists) + 1, n, pick(rng, ("US", "GB", "SE", "DE", "FR", "JP", "BR", "KR"))))
    genres = list(_GENRES)
    albums, tracks = [], []
    for i in range(1, 49):
        genre = pick(rng, genres)
        albums.append((i, int(rng.integers(1, len(artists) + 1)), " ".join(word(rng).capitalize()
                                                                         for _ in range(int(rng.integers(1, 4)))),
                       int(rng.integers(2005, 2025))))
        for _ in range(int(rng.integers(5, 9))):
            g = genre if rng.random() < 0.8 else pick(rng, genres)
            tracks.append((len(tracks) + 1, i, word(rng).capitalize(), g,
                           int(max(60_000, rng.normal(_GENRES[g], _GENRES[g] * 0.2)))))
    users, seen = [], set()
    codes = list(_COUNTRIES)
    country_p = rng.dirichlet(np.full(len(codes), 6.0))
    while len(users) < 96:
        u = f"{word(rng)}{int(rng.integers(10, 999))}"
        if u in seen:
            continue
        seen.add(u)
        users.append((len(users) + 1, u, codes[_choice(rng, len(codes), country_p)],
                      ("free", "premium", "family")[_choice(rng, 3, np.array([0.5, 0.35, 0.15]))],
                      _days(rng, "2019-01-01", "2023-12-31")))
    taste = rng.gamma(0.8, 1.0, (len(codes), len(artists)))
    by_artist: dict[int, list[int]] = {}
    for t in tracks:
        by_artist.setdefault(albums[t[1] - 1][1], []).append(t[0])
    active = rng.gamma(1.2, 1.0, len(users))
    artist_ids = sorted(by_artist)
    plays = []
    for i in range(1, 4501):
        u = _choice(rng, len(users), active)
        c = codes.index(users[u][2])
        a = artist_ids[_choice(rng, len(artist_ids), taste[c, [x - 1 for x in artist_ids]])]
        ts = f"{_days(rng, '2024-01-01', '2024-12-31')} {int(rng.integers(24)):02d}:{int(rng.integers(60)):02d}:" \
             f"{int(rng.integers(60)):02d}"
        plays.append((i, u + 1, pick(rng, by_artist[a]), ts))
    data = {"artists": artists, "albums": albums, "tracks": tracks, "users": users, "plays": plays}
    return _Db("music", ddl, data, {"artists": [a[1] for a in artists], "genres": genres,
                                    "countries": sorted({u[2] for u in users}),
                                    "years": sorted({a[3] for a in albums})})


_BUILDERS = {"shop": _shop, "flights": _flights, "university": _university, "music": _music}


def databases(random_state: RandomState = 0) -> dict[str, _Db]:
    """The world's databases as :func:`sql` builds them first from ``random_state``: name ->
    an object whose ``conn`` is the open ``sqlite3`` connection (to run a statement again)."""
    rng = as_generator(random_state)
    return {n: _BUILDERS[n](rng) for n in DATABASES}


# the questions ---------------------------------------------------------------------------------------

@dataclass
class _Question:
    db: str
    text: str
    params: dict[str, Any]
    tables: list[str]  # the tables the final query reads, the main one first
    probes: list[tuple[str, tuple[str, ...]]]  # (column, alternative statements) per filtered column
    finals: tuple[str, ...]  # the final query, written in different ways
    checks: tuple[str, ...]  # differently written confirmations (verify)
    steps: list[tuple[str, ...]]  # decompose: alternatives per step; {s0} / {l0}: values step 0 returned
    ranking: str | None  # for a name answer: every candidate with its score, best first (no ties allowed)
    others: tuple[str, ...]  # the candidate names (wrong answers)
    unit: str = ""
    answer: Any = None
    shown: str = ""


def _expand(template: str, **macros: str) -> str:
    for key, value in macros.items():
        template = template.replace(f"@{key}", value)
    return template


def _quarter(year: int, q: int) -> dict[str, Any]:
    start = f"{year}-{3 * q - 2:02d}-01"
    end = f"{year + (q == 4)}-{(3 * q) % 12 + 1:02d}-01"
    last = str(np.datetime64(end) - 1)
    return {"start": start, "end": end, "last": last, "q": q, "ordinal": _ORDINALS[q - 1], "year": year}


def _q_busy(rng: np.random.Generator, db: _Db) -> dict:
    k = int(rng.integers(1, 4))
    p = {"city": pick(rng, db.values["cities"]), "year": pick(rng, ("2022", "2023")), "k": k,
         "k_orders": ("one order", "two orders", "three orders")[k - 1],
         "k_times": ("once", "twice", "three times")[k - 1]}
    text = pick(rng, ("How many customers in {city} placed more than {k_orders} in {year}?",
                      "Count the customers based in {city} who made more than {k_orders} during {year}.",
                      "In {year}, how many {city} customers ordered more than {k_times}?"))
    join = "{customers_} JOIN {orders_} ON {orders}.customer_id = {customers}.customer_id"
    by = ("SELECT {customers}.customer_id FROM @J WHERE {customers}.city = '{city}' AND "
          "strftime('%Y', {orders}.order_date) = '{year}' GROUP BY {customers}.customer_id "
          "HAVING COUNT({orders}.order_id) > {k}")
    return dict(
        text=text.format(**p), params=p, tables=["orders", "customers"],
        probes=[("city", ("SELECT DISTINCT city FROM customers",
                          "SELECT city, COUNT(*) AS {n} FROM customers GROUP BY city",
                          "SELECT DISTINCT city FROM customers ORDER BY city")),
                ("order_date", ("SELECT MIN(order_date), MAX(order_date) FROM orders",
                                "SELECT DISTINCT substr(order_date, 1, 4) AS yr FROM orders"))],
        finals=(_expand("SELECT COUNT(*) AS {n} FROM (" + by + ")", J=join),
                _expand("SELECT COUNT(*) FROM (SELECT {orders}.customer_id, COUNT(*) AS {n} FROM {orders_} JOIN "
                        "{customers_} ON {customers}.customer_id = {orders}.customer_id WHERE {customers}.city = "
                        "'{city}' AND {orders}.order_date LIKE '{year}-%' GROUP BY {orders}.customer_id "
                        "HAVING {n} > {k})")),
        checks=("SELECT COUNT(*) FROM {customers_} WHERE {customers}.city = '{city}' AND (SELECT COUNT(*) FROM "
                "{orders_} WHERE {orders}.customer_id = {customers}.customer_id AND {orders}.order_date BETWEEN "
                "'{year}-01-01' AND '{year}-12-31') > {k}",
                _expand("SELECT {customers}.customer_id, {customers}.first_name, {customers}.last_name, "
                        "COUNT(*) AS {n} FROM @J WHERE {customers}.city = '{city}' AND "
                        "strftime('%Y', {orders}.order_date) = '{year}' "
                        "GROUP BY {customers}.customer_id HAVING {n} > {k}", J=join)),
        steps=[("SELECT customer_id FROM customers WHERE city = '{city}'",),
               ("SELECT COUNT(*) FROM (SELECT customer_id FROM orders WHERE customer_id IN ({l0}) AND order_date LIKE "
                "'{year}-%' GROUP BY customer_id HAVING COUNT(*) > {k})",
                "SELECT COUNT(*) AS {n} FROM (SELECT customer_id, COUNT(*) AS c FROM orders WHERE strftime('%Y', "
                "order_date) = '{year}' AND customer_id IN ({l0}) GROUP BY customer_id) WHERE c > {k}")],
        ranking=None, others=(), unit=" customers")


def _q_rating(rng: np.random.Generator, db: _Db) -> dict:
    year = int(rng.integers(2022, 2025))
    p = _quarter(year, int(rng.integers(1, 3 if year == 2024 else 5)))
    text = pick(rng, ("Which product category had the highest average review score in Q{q} {year}?",
                      "In the {ordinal} quarter of {year}, which category's products got the best average rating?"))
    join = ("{reviews_} JOIN {products_} ON {products}.product_id = {reviews}.product_id JOIN {categories_} "
            "ON {categories}.category_id = {products}.category_id")
    when = "{reviews}.created_at >= '{start}' AND {reviews}.created_at < '{end}'"
    return dict(
        text=text.format(**p), params=p, tables=["reviews", "products", "categories"],
        probes=[("created_at", ("SELECT MIN(created_at), MAX(created_at) FROM reviews",
                                "SELECT MIN(created_at), MAX(created_at), COUNT(*) AS {n} FROM reviews")),
                ("rating", ("SELECT DISTINCT rating FROM reviews ORDER BY rating",
                            "SELECT rating, COUNT(*) FROM reviews GROUP BY rating"))],
        finals=(_expand("SELECT {categories}.name, ROUND(AVG({reviews}.rating), 2) AS avg_rating FROM @J WHERE @W "
                        "GROUP BY {categories}.name ORDER BY avg_rating DESC LIMIT 1", J=join, W=when),
                "SELECT ROUND(AVG({reviews}.rating), 2) AS avg_score, {categories}.name AS category FROM "
                "{categories_} JOIN {products_} ON {products}.category_id = {categories}.category_id JOIN {reviews_} "
                "ON {reviews}.product_id = {products}.product_id WHERE {reviews}.created_at BETWEEN '{start}' AND "
                "'{last}' GROUP BY {categories}.category_id ORDER BY avg_score DESC LIMIT 1"),
        checks=(_expand("SELECT name FROM categories WHERE category_id = (SELECT {products}.category_id FROM "
                        "{reviews_} JOIN {products_} ON {products}.product_id = {reviews}.product_id WHERE @W GROUP BY "
                        "{products}.category_id ORDER BY AVG({reviews}.rating) DESC LIMIT 1)", W=when),
                _expand("SELECT {categories}.name, COUNT(*) AS {n}, SUM({reviews}.rating) AS rating_sum, "
                        "ROUND(AVG({reviews}.rating), 2) AS avg_rating FROM @J WHERE @W GROUP BY {categories}.name "
                        "ORDER BY avg_rating DESC", J=join, W=when)),
        steps=[(_expand("SELECT {products}.category_id, ROUND(AVG({reviews}.rating), 2) AS avg_rating FROM {reviews_} "
                        "JOIN {products_} ON {products}.product_id = {reviews}.product_id WHERE @W GROUP BY "
                        "{products}.category_id ORDER BY avg_rating DESC", W=when),),
               ("SELECT name FROM categories WHERE category_id = {s0}",)],
        ranking=_expand("SELECT {categories}.name, ROUND(AVG({reviews}.rating), 2) FROM @J WHERE @W "
                        "GROUP BY {categories}.name ORDER BY 2 DESC", J=join, W=when),
        others=tuple(db.values["categories"]))


def _q_revenue(rng: np.random.Generator, db: _Db) -> dict:
    year, month = int(rng.integers(2022, 2025)), int(rng.integers(1, 13))
    if year == 2024 and month > 6:
        month -= 6
    p = {"ym": f"{year}-{month:02d}", "month": _MONTHS[month - 1], "year": year}
    text = pick(rng, ("What was the total revenue from delivered orders in {month} {year}?",
                      "How much revenue (quantity times unit price) did delivered orders bring in {month} {year}?"))
    join = "{order_items_} JOIN {orders_} ON {orders}.order_id = {order_items}.order_id"
    return dict(
        text=text.format(**p), params=p, tables=["order_items", "orders"],
        probes=[("status", ("SELECT DISTINCT status FROM orders",
                            "SELECT status, COUNT(*) AS {n} FROM orders GROUP BY status")),
                ("order_date", ("SELECT MIN(order_date), MAX(order_date) FROM orders",))],
        finals=(_expand("SELECT ROUND(SUM({order_items}.quantity * {order_items}.unit_price), 2) AS revenue FROM @J "
                        "WHERE {orders}.status = 'delivered' AND strftime('%Y-%m', {orders}.order_date) = '{ym}'",
                        J=join),
                "SELECT ROUND(SUM({order_items}.unit_price * {order_items}.quantity), 2) FROM {orders_} JOIN "
                "{order_items_} ON {order_items}.order_id = {orders}.order_id WHERE {orders}.order_date LIKE '{ym}-%' "
                "AND {orders}.status = 'delivered'"),
        checks=("SELECT ROUND(SUM(quantity * unit_price), 2) FROM order_items WHERE order_id IN (SELECT order_id FROM "
                "orders WHERE status = 'delivered' AND order_date LIKE '{ym}-%')",
                _expand("SELECT COUNT(DISTINCT {orders}.order_id) AS n_orders, COUNT(*) AS n_items, "
                        "ROUND(SUM({order_items}.quantity * {order_items}.unit_price), 2) AS revenue FROM @J WHERE "
                        "{orders}.status = 'delivered' AND {orders}.order_date LIKE '{ym}-%'", J=join)),
        steps=[("SELECT order_id FROM orders WHERE status = 'delivered' AND order_date LIKE '{ym}-%'",
                "SELECT order_id FROM orders WHERE strftime('%Y-%m', order_date) = '{ym}' AND status = 'delivered'"),
               ("SELECT ROUND(SUM(quantity * unit_price), 2) FROM order_items WHERE order_id IN ({l0})",)],
        ranking=None, others=())


def _q_delay(rng: np.random.Generator, db: _Db) -> dict:
    p = {"city": pick(rng, db.values["cities"]), "year": int(rng.integers(2023, 2025))}
    text = pick(rng, ("What share of flights departing {city} in {year} were delayed by more than an hour? "
                      "Give a percentage.",
                      "What percentage of {year} departures from {city} left more than 60 minutes late?"))
    join = "{flights_} JOIN {airports_} ON {airports}.code = {flights}.origin"
    where = "{airports}.city = '{city}' AND strftime('%Y', {flights}.flight_date) = '{year}'"
    return dict(
        text=text.format(**p), params=p, tables=["flights", "airports"], unit="%",
        probes=[("city", ("SELECT DISTINCT city FROM airports", "SELECT DISTINCT code, city FROM airports")),
                ("flight_date", ("SELECT MIN(flight_date), MAX(flight_date) FROM flights",)),
                ("dep_delay", ("SELECT MIN(dep_delay), MAX(dep_delay), AVG(dep_delay) FROM flights",
                               "SELECT MIN(dep_delay), MAX(dep_delay) FROM flights"))],
        finals=(_expand("SELECT ROUND(100.0 * SUM(CASE WHEN {flights}.dep_delay > 60 THEN 1 ELSE 0 END) / COUNT(*), 1) "
                        "AS pct_delayed FROM @J WHERE @W", J=join, W=where),
                "SELECT ROUND(AVG(CASE WHEN {flights}.dep_delay > 60 THEN 100.0 ELSE 0 END), 1) AS share FROM "
                "{airports_} JOIN {flights_} ON {flights}.origin = {airports}.code WHERE {airports}.city = '{city}' "
                "AND {flights}.flight_date LIKE '{year}-%'"),
        checks=("SELECT COUNT(*) AS total, SUM({flights}.dep_delay > 60) AS late FROM {flights_} WHERE "
                "{flights}.origin IN (SELECT code FROM airports WHERE city = '{city}') AND {flights}.flight_date "
                "BETWEEN '{year}-01-01' AND '{year}-12-31'",
                _expand("SELECT {flights}.dep_delay > 60 AS late, COUNT(*) AS {n} FROM @J WHERE @W GROUP BY late",
                        J=join, W=where)),
        steps=[("SELECT code FROM airports WHERE city = '{city}'",),
               ("SELECT COUNT(*) FROM flights WHERE origin = {s0} AND flight_date LIKE '{year}-%'",),
               ("SELECT COUNT(*) FROM flights WHERE origin = {s0} AND flight_date LIKE '{year}-%' AND dep_delay > 60",),
               ("SELECT ROUND(100.0 * {s2} / {s1}, 1)",)],
        ranking=None, others=())


def _q_airline(rng: np.random.Generator, db: _Db) -> dict:
    m = int(pick(rng, (0, 30, 45, 60, 90)))
    p = {"year": int(rng.integers(2023, 2025)), "m": m}
    if m == 0:
        text = pick(rng, ("Which airline had the most cancelled flights in {year}?",
                          "Which carrier cancelled the largest number of flights in {year}?"))
        cond, cond0 = "{flights}.cancelled = 1", "cancelled = 1"
        probe = ("cancelled", ("SELECT DISTINCT cancelled FROM flights",
                               "SELECT cancelled, COUNT(*) AS {n} FROM flights GROUP BY cancelled"))
    else:
        text = pick(rng, ("Which airline had the most flights delayed by more than {m} minutes in {year}?",
                          "In {year}, which carrier had the largest number of departures over {m} minutes late?"))
        cond, cond0 = "{flights}.dep_delay > {m}", "dep_delay > {m}"
        probe = ("dep_delay", ("SELECT MIN(dep_delay), MAX(dep_delay) FROM flights",
                               "SELECT MIN(dep_delay), MAX(dep_delay), AVG(dep_delay) FROM flights"))
    join = "{flights_} JOIN {airlines_} ON {airlines}.airline_id = {flights}.airline_id"
    where = "@C AND strftime('%Y', {flights}.flight_date) = '{year}'"
    return dict(
        text=text.format(**p), params=p, tables=["flights", "airlines"],
        probes=[probe, ("flight_date", ("SELECT MIN(flight_date), MAX(flight_date) FROM flights",))],
        finals=(_expand("SELECT {airlines}.name, COUNT(*) AS {n} FROM @J WHERE @W GROUP BY {airlines}.name "
                        "ORDER BY {n} DESC LIMIT 1", J=join, W=where, C=cond),
                _expand("SELECT {airlines}.name AS airline FROM {airlines_} JOIN {flights_} ON {flights}.airline_id = "
                        "{airlines}.airline_id WHERE @C AND {flights}.flight_date LIKE '{year}-%' GROUP BY "
                        "{airlines}.airline_id ORDER BY COUNT(*) DESC LIMIT 1", C=cond)),
        checks=(_expand("SELECT name FROM airlines WHERE airline_id = (SELECT airline_id FROM flights WHERE @C AND "
                        "flight_date LIKE '{year}-%' GROUP BY airline_id ORDER BY COUNT(*) DESC LIMIT 1)", C=cond0),
                _expand("SELECT {airlines}.airline_id, {airlines}.name, COUNT(*) AS {n} FROM @J WHERE @W GROUP BY "
                        "{airlines}.airline_id ORDER BY {n} DESC", J=join, W=where, C=cond)),
        steps=[(_expand("SELECT airline_id, COUNT(*) AS {n} FROM flights WHERE @C AND flight_date LIKE '{year}-%' "
                        "GROUP BY airline_id ORDER BY {n} DESC", C=cond0),
                _expand("SELECT airline_id, COUNT(*) FROM flights WHERE @C AND strftime('%Y', flight_date) = '{year}' "
                        "GROUP BY airline_id ORDER BY 2 DESC LIMIT 3", C=cond0)),
               ("SELECT name FROM airlines WHERE airline_id = {s0}",)],
        ranking=_expand("SELECT {airlines}.name, COUNT(*) FROM @J WHERE @W GROUP BY {airlines}.name ORDER BY 2 DESC",
                        J=join, W=where, C=cond),
        others=tuple(db.values["airlines"]))


def _q_fare(rng: np.random.Generator, db: _Db) -> dict:
    cabin = pick(rng, tuple(_CABINS))
    p = {"cabin": cabin, "cabin_words": _CABINS[cabin][0], "airline": pick(rng, db.values["airlines"]),
         "year": int(rng.integers(2023, 2025))}
    text = pick(rng, ("What was the average {cabin_words} fare on {airline} flights in {year}?",
                      "On average, how much did a {cabin_words} booking on {airline} cost in {year}?"))
    join = ("{bookings_} JOIN {flights_} ON {flights}.flight_id = {bookings}.flight_id JOIN {airlines_} ON "
            "{airlines}.airline_id = {flights}.airline_id")
    where = ("{airlines}.name = '{airline}' AND {bookings}.cabin = '{cabin}' AND "
             "strftime('%Y', {flights}.flight_date) = '{year}'")
    return dict(
        text=text.format(**p), params=p, tables=["bookings", "flights", "airlines"], unit=" dollars",
        probes=[("cabin", ("SELECT DISTINCT cabin FROM bookings",
                           "SELECT cabin, COUNT(*) AS {n} FROM bookings GROUP BY cabin")),
                ("airline", ("SELECT DISTINCT name FROM airlines",
                             "SELECT DISTINCT airline_id, name FROM airlines ORDER BY name")),
                ("flight_date", ("SELECT MIN(flight_date), MAX(flight_date) FROM flights",))],
        finals=(_expand("SELECT ROUND(AVG({bookings}.fare), 2) AS avg_fare FROM @J WHERE @W", J=join, W=where),
                "SELECT ROUND(AVG({bookings}.fare), 2) FROM {flights_} JOIN {bookings_} ON {bookings}.flight_id = "
                "{flights}.flight_id JOIN {airlines_} ON {airlines}.airline_id = {flights}.airline_id WHERE "
                "{bookings}.cabin = '{cabin}' AND {airlines}.name = '{airline}' AND {flights}.flight_date LIKE "
                "'{year}-%'"),
        checks=(_expand("SELECT COUNT(*) AS {n}, ROUND(SUM({bookings}.fare), 2) AS total_fare FROM @J WHERE @W",
                        J=join, W=where),
                "SELECT ROUND(AVG(fare), 2) FROM bookings WHERE cabin = '{cabin}' AND flight_id IN (SELECT flight_id "
                "FROM flights WHERE airline_id = (SELECT airline_id FROM airlines WHERE name = '{airline}') AND "
                "flight_date LIKE '{year}-%')"),
        steps=[("SELECT airline_id FROM airlines WHERE name = '{airline}'",),
               ("SELECT ROUND(AVG({bookings}.fare), 2) FROM {bookings_} JOIN {flights_} ON {flights}.flight_id = "
                "{bookings}.flight_id WHERE {flights}.airline_id = {s0} AND {bookings}.cabin = '{cabin}' AND "
                "{flights}.flight_date LIKE '{year}-%'",)],
        ranking=None, others=())


def _q_grades(rng: np.random.Generator, db: _Db) -> dict:
    p = {"dept": pick(rng, db.values["departments"]), "semester": pick(rng, ("Spring", "Fall")),
         "year": int(rng.integers(2022, 2025))}
    text = pick(rng, ("How many {dept} students received an A in {semester} {year}?",
                      "How many students majoring in {dept} got a grade of A in the {semester} {year} term?"))
    join = ("{takes_} JOIN {students_} ON {students}.student_id = {takes}.student_id JOIN {departments_} ON "
            "{departments}.dept_id = {students}.dept_id")
    where = ("{departments}.dept_name = '{dept}' AND {takes}.grade = 'A' AND {takes}.semester = '{semester}' AND "
             "{takes}.year = {year}")
    return dict(
        text=text.format(**p), params=p, tables=["takes", "students", "departments"], unit=" students",
        probes=[("grade", ("SELECT DISTINCT grade FROM takes",
                           "SELECT grade, COUNT(*) AS {n} FROM takes GROUP BY grade")),
                ("semester", ("SELECT DISTINCT semester, year FROM takes ORDER BY year",
                              "SELECT DISTINCT semester FROM takes")),
                ("dept_name", ("SELECT DISTINCT dept_id, dept_name FROM departments",
                               "SELECT DISTINCT dept_name FROM departments"))],
        finals=(_expand("SELECT COUNT(DISTINCT {takes}.student_id) FROM @J WHERE @W", J=join, W=where),
                "SELECT COUNT(DISTINCT {students}.student_id) AS {n} FROM {students_} JOIN {departments_} ON "
                "{departments}.dept_id = {students}.dept_id JOIN {takes_} ON {takes}.student_id = "
                "{students}.student_id WHERE {takes}.year = {year} AND {takes}.semester = '{semester}' AND "
                "{takes}.grade = 'A' AND {departments}.dept_name = '{dept}'"),
        checks=("SELECT COUNT(*) FROM students WHERE dept_id = (SELECT dept_id FROM departments WHERE dept_name = "
                "'{dept}') AND student_id IN (SELECT student_id FROM takes WHERE grade = 'A' AND semester = "
                "'{semester}' AND year = {year})",
                _expand("SELECT DISTINCT {students}.student_id, {students}.name FROM @J WHERE @W ORDER BY "
                        "{students}.student_id", J=join, W=where)),
        steps=[("SELECT dept_id FROM departments WHERE dept_name = '{dept}'",),
               ("SELECT student_id FROM students WHERE dept_id = {s0}",),
               ("SELECT COUNT(DISTINCT student_id) FROM takes WHERE grade = 'A' AND semester = '{semester}' AND "
                "year = {year} AND student_id IN ({l1})",)],
        ranking=None, others=())


def _q_salary(rng: np.random.Generator, db: _Db) -> dict:
    p = {"year": int(rng.integers(2000, 2016))}
    text = pick(rng, ("Which department has the highest average salary among instructors hired after {year}?",
                      "Among instructors hired after {year}, which department pays the best on average?"))
    join = "{instructors_} JOIN {departments_} ON {departments}.dept_id = {instructors}.dept_id"
    return dict(
        text=text.format(**p), params=p, tables=["instructors", "departments"],
        probes=[("hire_year", ("SELECT MIN(hire_year), MAX(hire_year) FROM instructors",
                               "SELECT DISTINCT hire_year FROM instructors ORDER BY hire_year")),
                ("salary", ("SELECT MIN(salary), MAX(salary) FROM instructors",))],
        finals=(_expand("SELECT {departments}.dept_name, ROUND(AVG({instructors}.salary), 2) AS avg_salary FROM @J "
                        "WHERE {instructors}.hire_year > {year} GROUP BY {departments}.dept_name ORDER BY avg_salary "
                        "DESC LIMIT 1", J=join),
                "SELECT {departments}.dept_name FROM {departments_} JOIN {instructors_} ON {instructors}.dept_id = "
                "{departments}.dept_id WHERE {instructors}.hire_year > {year} GROUP BY {departments}.dept_id ORDER BY "
                "AVG({instructors}.salary) DESC LIMIT 1"),
        checks=("SELECT dept_name FROM departments WHERE dept_id = (SELECT dept_id FROM instructors WHERE hire_year > "
                "{year} GROUP BY dept_id ORDER BY AVG(salary) DESC LIMIT 1)",
                _expand("SELECT {departments}.dept_name, COUNT(*) AS {n}, ROUND(AVG({instructors}.salary), 2) AS "
                        "avg_salary FROM @J WHERE {instructors}.hire_year > {year} GROUP BY {departments}.dept_name "
                        "ORDER BY avg_salary DESC", J=join)),
        steps=[("SELECT dept_id, ROUND(AVG(salary), 2) AS avg_salary FROM instructors WHERE hire_year > {year} "
                "GROUP BY dept_id ORDER BY avg_salary DESC",),
               ("SELECT dept_name FROM departments WHERE dept_id = {s0}",)],
        ranking=_expand("SELECT {departments}.dept_name, ROUND(AVG({instructors}.salary), 2) FROM @J WHERE "
                        "{instructors}.hire_year > {year} GROUP BY {departments}.dept_name ORDER BY 2 DESC", J=join),
        others=tuple(db.values["departments"]))


def _q_credits(rng: np.random.Generator, db: _Db) -> dict:
    p = {"student": pick(rng, db.values["students"]), "year": int(rng.integers(2022, 2025))}
    p["first"] = p["student"].split()[0]
    text = pick(rng, ("How many credits did {student} earn in {year}, counting only courses not failed?",
                      "How many course credits did {student} complete in {year} (any grade except F)?"))
    join = ("{takes_} JOIN {courses_} ON {courses}.course_id = {takes}.course_id JOIN {students_} ON "
            "{students}.student_id = {takes}.student_id")
    where = "{students}.name = '{student}' AND {takes}.year = {year} AND {takes}.grade <> 'F'"
    return dict(
        text=text.format(**p), params=p, tables=["takes", "courses", "students"], unit=" credits",
        probes=[("grade", ("SELECT DISTINCT grade FROM takes", "SELECT grade, COUNT(*) FROM takes GROUP BY grade")),
                ("name", ("SELECT DISTINCT name FROM students WHERE name LIKE '{first}%'",
                          "SELECT COUNT(*) FROM students WHERE name = '{student}'")),
                ("year", ("SELECT DISTINCT year FROM takes", "SELECT MIN(year), MAX(year) FROM takes"))],
        finals=(_expand("SELECT SUM({courses}.credits) AS total_credits FROM @J WHERE @W", J=join, W=where),
                "SELECT SUM({courses}.credits) FROM {students_} JOIN {takes_} ON {takes}.student_id = "
                "{students}.student_id JOIN {courses_} ON {courses}.course_id = {takes}.course_id WHERE "
                "{students}.name = '{student}' AND {takes}.grade != 'F' AND {takes}.year = {year}"),
        checks=("SELECT SUM(credits) FROM courses WHERE course_id IN (SELECT course_id FROM takes WHERE student_id = "
                "(SELECT student_id FROM students WHERE name = '{student}') AND year = {year} AND grade <> 'F')",
                _expand("SELECT {takes}.course_id, {courses}.credits, {takes}.grade FROM @J WHERE @W ORDER BY "
                        "{takes}.course_id", J=join, W=where)),
        steps=[("SELECT student_id FROM students WHERE name = '{student}'",),
               ("SELECT course_id FROM takes WHERE student_id = {s0} AND year = {year} AND grade <> 'F'",
                "SELECT course_id, grade FROM takes WHERE student_id = {s0} AND year = {year} AND grade != 'F'"),
               ("SELECT SUM(credits) FROM courses WHERE course_id IN ({l1})",)],
        ranking=None, others=())


def _q_listeners(rng: np.random.Generator, db: _Db) -> dict:
    month = int(rng.integers(1, 13))
    plan = pick(rng, tuple(_PLANS))
    p = {"plan": plan, "plan_words": _PLANS[plan], "genre": pick(rng, db.values["genres"]),
         "ym": f"2024-{month:02d}", "month": _MONTHS[month - 1]}
    text = pick(rng, ("How many {plan_words} users played at least one {genre} track in {month} 2024?",
                      "In {month} 2024, how many users on the {plan_words} plan listened to {genre}?"))
    join = ("{plays_} JOIN {users_} ON {users}.user_id = {plays}.user_id JOIN {tracks_} ON {tracks}.track_id = "
            "{plays}.track_id")
    where = "{users}.plan = '{plan}' AND {tracks}.genre = '{genre}' AND strftime('%Y-%m', {plays}.played_at) = '{ym}'"
    return dict(
        text=text.format(**p), params=p, tables=["plays", "users", "tracks"], unit=" users",
        probes=[("plan", ("SELECT DISTINCT plan FROM users", "SELECT plan, COUNT(*) AS {n} FROM users GROUP BY plan")),
                ("genre", ("SELECT DISTINCT genre FROM tracks",)),
                ("played_at", ("SELECT MIN(played_at), MAX(played_at) FROM plays",))],
        finals=(_expand("SELECT COUNT(DISTINCT {plays}.user_id) FROM @J WHERE @W", J=join, W=where),
                "SELECT COUNT(DISTINCT {users}.user_id) AS {n} FROM {users_} JOIN {plays_} ON {plays}.user_id = "
                "{users}.user_id JOIN {tracks_} ON {tracks}.track_id = {plays}.track_id WHERE {plays}.played_at LIKE "
                "'{ym}-%' AND {tracks}.genre = '{genre}' AND {users}.plan = '{plan}'"),
        checks=("SELECT COUNT(*) FROM users WHERE plan = '{plan}' AND user_id IN (SELECT user_id FROM plays WHERE "
                "played_at LIKE '{ym}-%' AND track_id IN (SELECT track_id FROM tracks WHERE genre = '{genre}'))",
                _expand("SELECT DISTINCT {users}.user_id, {users}.username FROM @J WHERE @W ORDER BY {users}.user_id",
                        J=join, W=where)),
        steps=[("SELECT DISTINCT {plays}.user_id FROM {plays_} JOIN {tracks_} ON {tracks}.track_id = {plays}.track_id "
                "WHERE {tracks}.genre = '{genre}' AND {plays}.played_at LIKE '{ym}-%' ORDER BY {plays}.user_id",),
               ("SELECT COUNT(*) FROM users WHERE plan = '{plan}' AND user_id IN ({l0})",)],
        ranking=None, others=())


def _q_artist(rng: np.random.Generator, db: _Db) -> dict:
    cc = pick(rng, db.values["countries"])
    p = {"cc": cc, "country": _COUNTRIES[cc], **_quarter(2024, int(rng.integers(1, 5)))}
    text = pick(rng, ("Which artist was played the most by listeners in {country} in Q{q} {year}?",
                      "In the {ordinal} quarter of {year}, whose tracks did users from {country} play most often?"))
    join = ("{plays_} JOIN {users_} ON {users}.user_id = {plays}.user_id JOIN {tracks_} ON {tracks}.track_id = "
            "{plays}.track_id JOIN {albums_} ON {albums}.album_id = {tracks}.album_id JOIN {artists_} ON "
            "{artists}.artist_id = {albums}.artist_id")
    where = "{users}.country = '{cc}' AND {plays}.played_at >= '{start}' AND {plays}.played_at < '{end}'"
    return dict(
        text=text.format(**p), params=p, tables=["plays", "users", "tracks", "albums", "artists"],
        probes=[("country", ("SELECT DISTINCT country FROM users",
                             "SELECT country, COUNT(*) AS {n} FROM users GROUP BY country")),
                ("played_at", ("SELECT MIN(played_at), MAX(played_at) FROM plays",))],
        finals=(_expand("SELECT {artists}.name, COUNT(*) AS n_plays FROM @J WHERE @W GROUP BY {artists}.artist_id "
                        "ORDER BY n_plays DESC LIMIT 1", J=join, W=where),
                "SELECT {artists}.name AS artist FROM {artists_} JOIN {albums_} ON {albums}.artist_id = "
                "{artists}.artist_id JOIN {tracks_} ON {tracks}.album_id = {albums}.album_id JOIN {plays_} ON "
                "{plays}.track_id = {tracks}.track_id JOIN {users_} ON {users}.user_id = {plays}.user_id WHERE "
                "{users}.country = '{cc}' AND {plays}.played_at BETWEEN '{start}' AND '{last} 23:59:59' GROUP BY "
                "{artists}.artist_id ORDER BY COUNT(*) DESC LIMIT 1"),
        checks=("SELECT name FROM artists WHERE artist_id = (SELECT {albums}.artist_id FROM {plays_} JOIN {tracks_} ON "
                "{tracks}.track_id = {plays}.track_id JOIN {albums_} ON {albums}.album_id = {tracks}.album_id WHERE "
                "{plays}.user_id IN (SELECT user_id FROM users WHERE country = '{cc}') AND {plays}.played_at >= "
                "'{start}' AND {plays}.played_at < '{end}' GROUP BY {albums}.artist_id ORDER BY COUNT(*) DESC LIMIT 1)",
                _expand("SELECT {artists}.name, COUNT(*) AS n_plays, COUNT(DISTINCT {plays}.user_id) AS listeners "
                        "FROM @J WHERE @W GROUP BY {artists}.artist_id ORDER BY n_plays DESC LIMIT 3", J=join,
                        W=where)),
        steps=[("SELECT user_id FROM users WHERE country = '{cc}'",),
               ("SELECT {albums}.artist_id, COUNT(*) AS n_plays FROM {plays_} JOIN {tracks_} ON {tracks}.track_id = "
                "{plays}.track_id JOIN {albums_} ON {albums}.album_id = {tracks}.album_id WHERE {plays}.user_id IN "
                "({l0}) AND {plays}.played_at >= '{start}' AND {plays}.played_at < '{end}' GROUP BY "
                "{albums}.artist_id ORDER BY n_plays DESC LIMIT 5",),
               ("SELECT name FROM artists WHERE artist_id = {s1}",)],
        ranking=_expand("SELECT {artists}.name, COUNT(*) FROM @J WHERE @W GROUP BY {artists}.artist_id ORDER BY 2 DESC",
                        J=join, W=where),
        others=tuple(db.values["artists"]))


def _q_length(rng: np.random.Generator, db: _Db) -> dict:
    p = {"genre": pick(rng, db.values["genres"]), "year": pick(rng, db.values["years"])}
    text = pick(rng, ("What is the average length, in minutes, of {genre} tracks on albums released in {year}?",
                      "On average, how many minutes long are the {genre} tracks from albums released in {year}?"))
    join = "{tracks_} JOIN {albums_} ON {albums}.album_id = {tracks}.album_id"
    where = "{tracks}.genre = '{genre}' AND {albums}.release_year = {year}"
    return dict(
        text=text.format(**p), params=p, tables=["tracks", "albums"], unit=" minutes",
        probes=[("genre", ("SELECT DISTINCT genre FROM tracks",
                           "SELECT genre, COUNT(*) AS {n} FROM tracks GROUP BY genre")),
                ("release_year", ("SELECT MIN(release_year), MAX(release_year) FROM albums",
                                  "SELECT DISTINCT release_year FROM albums ORDER BY release_year")),
                ("duration_ms", ("SELECT MIN(duration_ms), MAX(duration_ms) FROM tracks",))],
        finals=(_expand("SELECT ROUND(AVG({tracks}.duration_ms) / 60000.0, 2) AS avg_minutes FROM @J WHERE @W",
                        J=join, W=where),
                "SELECT ROUND(AVG({tracks}.duration_ms / 60000.0), 2) FROM {albums_} JOIN {tracks_} ON "
                "{tracks}.album_id = {albums}.album_id WHERE {albums}.release_year = {year} AND {tracks}.genre = "
                "'{genre}'"),
        checks=(_expand("SELECT COUNT(*) AS {n}, SUM({tracks}.duration_ms) AS total_ms FROM @J WHERE @W", J=join,
                        W=where),
                "SELECT ROUND(AVG(duration_ms) / 60000.0, 2) FROM tracks WHERE genre = '{genre}' AND album_id IN "
                "(SELECT album_id FROM albums WHERE release_year = {year})"),
        steps=[("SELECT album_id FROM albums WHERE release_year = {year}",),
               ("SELECT AVG(duration_ms) FROM tracks WHERE genre = '{genre}' AND album_id IN ({l0})",),
               ("SELECT ROUND({s1} / 60000.0, 2)",)],
        ranking=None, others=())


#: the kinds of question, by database
QUESTIONS: dict[str, tuple[Callable[[np.random.Generator, _Db], dict], ...]] = {
    "shop": (_q_busy, _q_rating, _q_revenue), "flights": (_q_delay, _q_airline, _q_fare),
    "university": (_q_grades, _q_salary, _q_credits), "music": (_q_listeners, _q_artist, _q_length)}
_KINDS = [(db, q) for q in range(3) for db in DATABASES]  # the databases in turn


# rendering and running statements ------------------------------------------------------------------------

_KEYWORDS = ("SELECT", "FROM", "WHERE", "JOIN", "ON", "AND", "OR", "GROUP", "ORDER", "BY", "HAVING", "LIMIT", "AS",
             "DISTINCT", "COUNT", "AVG", "SUM", "MIN", "MAX", "ROUND", "DESC", "ASC", "IN", "NOT", "BETWEEN", "LIKE",
             "CASE", "WHEN", "THEN", "ELSE", "END", "PRAGMA", "NULL", "IS")
_QUOTED = r"'[^']*'"
_LOWER = re.compile(rf"{_QUOTED}|\b(?:{'|'.join(_KEYWORDS)})\b")
_CLAUSE = re.compile(rf"{_QUOTED}|\s+(?=(?:FROM|JOIN|WHERE|GROUP BY|ORDER BY|HAVING|LIMIT)\b)")
_INDENT = re.compile(rf"{_QUOTED}|BETWEEN\s+\S+\s+AND\b|\s+(?=(?:JOIN|AND)\b)")
_NAMES = ("n", "cnt", "num", "total")


@dataclass
class _Style:
    """How one agent writes SQL in an episode."""

    lower: bool = False  # keywords in lower case
    layout: int = 0  # 0: one line; 1: a line per clause; 2: and JOIN / AND lines indented
    semi: bool = False  # a closing semicolon
    alias: int = 3  # 0: short alias, 1: short alias with AS, 2: longer alias, 3: the table's name
    n: str = "n"  # the name given to a count

    def up(self, keyword: str) -> str:
        return keyword.lower() if self.lower else keyword


def _style(rng: np.random.Generator) -> _Style:
    return _Style(lower=bool(rng.random() < 0.35), layout=int(rng.integers(3)), semi=bool(rng.random() < 0.3),
                  alias=int(rng.integers(4)), n=pick(rng, _NAMES))


def _render(template: str, q: _Question, st: _Style, extra: dict[str, Any] | None = None) -> str:
    fill: dict[str, Any] = {**q.params, "n": st.n}
    for table, (short, longer) in _ALIASES[q.db].items():
        alias = (short, short, longer, table)[st.alias]
        fill[table] = alias
        fill[table + "_"] = table if alias == table else f"{table} AS {alias}" if st.alias == 1 else f"{table} {alias}"
    sql = template.format_map({**fill, **(extra or {})})

    def keep(new: Callable[[str], str]) -> Callable[[re.Match], str]:
        return lambda m: m.group() if m.group()[0] == "'" or m.group().startswith("BETWEEN ") else new(m.group())

    if st.layout:
        sql = _CLAUSE.sub(keep(lambda s: "\n"), sql)
    if st.layout == 2:
        sql = _INDENT.sub(keep(lambda s: "\n  "), sql.replace("\nJOIN", " JOIN"))
    if st.lower:
        sql = _LOWER.sub(keep(str.lower), sql)
    return sql + (";" if st.semi else "")


def _cell(v: Any) -> str:
    """A value as the sqlite3 shell prints it."""
    if v is None:
        return ""
    if isinstance(v, float):
        s = f"{v:.15g}"
        return s if any(ch in s for ch in ".en") else s + ".0"
    return str(v)


def _lit(v: Any) -> str:
    """A value typed into a later statement."""
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return "NULL" if v is None else _cell(v)


def _show(header: list[str], rows: list[tuple]) -> str:
    if not rows:
        return ""
    return "\n".join(["|".join(header), *("|".join(_cell(v) for v in row) for row in rows)])


# failures: the statement broken in one way, run to get SQLite's own error ----------------------------------

_WRONG_COLUMN = {
    "order_date": ("date", "ordered_at", "orderdate"), "city": ("city_name", "town"),
    "customer_id": ("cust_id", "customerid"), "order_id": ("orderid", "ord_id"), "product_id": ("prod_id", "productid"),
    "category_id": ("cat_id", "categoryid"), "name": ("title", "full_name", "label"),
    "rating": ("score", "stars", "review_score"), "created_at": ("review_date", "created"),
    "quantity": ("qty", "amount"), "unit_price": ("unitprice", "item_price"), "status": ("order_status", "state"),
    "dep_delay": ("delay", "departure_delay", "delay_minutes"), "flight_date": ("departure_date", "flight_day"),
    "origin": ("origin_airport", "from_airport"), "code": ("airport_code", "iata"), "airline_id": ("carrier_id",),
    "cancelled": ("canceled", "is_cancelled"), "fare": ("fare_amount", "ticket_price"),
    "cabin": ("cabin_class", "fare_class"), "flight_id": ("flightid",), "dept_name": ("department", "department_name"),
    "dept_id": ("department_id", "deptid"), "salary": ("annual_salary", "pay"), "hire_year": ("year_hired",
                                                                                              "hire_date"),
    "grade": ("letter_grade", "mark"), "semester": ("term", "season"), "year": ("yr", "academic_year"),
    "student_id": ("studentid", "sid"), "course_id": ("courseid", "course_code"), "credits": ("credit_hours", "units"),
    "plan": ("subscription", "plan_type", "tier"), "genre": ("track_genre", "style"),
    "played_at": ("play_date", "played"), "user_id": ("userid", "listener_id"), "track_id": ("song_id", "trackid"),
    "duration_ms": ("duration", "length_ms"), "release_year": ("released", "release_date"),
    "artist_id": ("artistid", "band_id"), "album_id": ("albumid", "record_id"), "country": ("country_code", "nation"),
    "username": ("user_name",), "first_name": ("firstname",), "last_name": ("lastname", "surname")}
_WRONG_TABLE = {
    "customers": ("customer", "clients"), "orders": ("order_table", "sales"),
    "order_items": ("orderitems", "order_lines"), "products": ("product",),
    "categories": ("category", "product_categories"), "reviews": ("review", "product_reviews"),
    "flights": ("flight", "flight_data"), "airports": ("airport",), "airlines": ("airline", "carriers"),
    "aircraft": ("aircrafts", "planes"), "bookings": ("booking", "tickets"), "departments": ("department", "depts"),
    "instructors": ("instructor", "teachers"), "students": ("student",), "courses": ("course",),
    "teaches": ("teaching",), "takes": ("enrollments", "enrollment"), "artists": ("artist",), "albums": ("album",),
    "tracks": ("track", "songs"), "users": ("user", "listeners"), "plays": ("play", "streams", "listens"),
    "sqlite_master": ("sqlite_tables", "information_schema.tables")}
_DIALECT = (
    (r"strftime\('%Y', ([\w.]+)\) = '(\d{4})'", lambda m, up: f"{up('YEAR')}({m[1]}) = {m[2]}"),
    (r"strftime\('%Y-%m', ([\w.]+)\) = '(\d{4})-(\d{2})'",
     lambda m, up: f"{up('DATE_FORMAT')}({m[1]}, '%Y-%m') = '{m[2]}-{m[3]}'"),
    (r"([\w.]+) (?:LIKE|like) '(\d{4})-%'", lambda m, up: f"{up('YEAR')}({m[1]}) = {m[2]}"),
    (r"([\w.]+) (?:LIKE|like) '(\d{4})-(\d{2})-%'",
     lambda m, up: f"{up('YEAR')}({m[1]}) = {m[2]} {up('AND')} {up('MONTH')}({m[1]}) = {int(m[3])}"),
    (r"([\w.]+) >= '(\d{4}-\d{2}-\d{2})'", lambda m, up: f"{m[1]} >= {up('DATE')} '{m[2]}'"),
    (r"(BETWEEN|between) '(\d{4}-\d{2}-\d{2})' (AND|and) '(\d{4}-\d{2}-\d{2})'",
     lambda m, up: f"{m[1]} {up('DATE')} '{m[2]}' {m[3]} {up('DATE')} '{m[4]}'"),
)


def _outside(sql: str, pattern: str, flags: int = 0) -> list[re.Match]:
    """The matches of ``pattern`` outside quoted literals."""
    return [m for m in re.finditer(f"{_QUOTED}|{pattern}", sql, flags) if m.group()[0] != "'"]


def _swap(sql: str, m: re.Match, group: int, new: str) -> str:
    return sql[:m.start(group)] + new + sql[m.end(group):]


def _tables_in(sql: str) -> list[str]:
    return [m[1] for m in _outside(sql, r"\b(?:FROM|JOIN)\s+(\w+)", re.I)]


def _b_column(rng: np.random.Generator, db: _Db, sql: str, st: _Style) -> str | None:
    columns = {c for t in _tables_in(sql) for c in db.columns.get(t, ())}
    ms = [m for m in _outside(sql, r"(?<![\w.])(\w+\.)?(\w+)\b(?!\s*\()") if m[2] in columns]
    if not ms:
        return None
    m = ms[int(rng.integers(len(ms)))]
    col = m[2]
    return _swap(sql, m, 2, pick(rng, _WRONG_COLUMN.get(col, (col + "s", col.replace("_", "")))))


def _b_table(rng: np.random.Generator, db: _Db, sql: str, st: _Style) -> str | None:
    ms = [m for m in _outside(sql, r"\b(?:FROM|JOIN)\s+(\w+)", re.I) if m[1] in _WRONG_TABLE]
    if not ms:
        return None
    m = ms[int(rng.integers(len(ms)))]
    return _swap(sql, m, 1, pick(rng, _WRONG_TABLE[m[1]]))


def _b_syntax(rng: np.random.Generator, db: _Db, sql: str, st: _Style) -> str | None:
    options = []
    first = re.match(r"(SELECT|select)\b", sql)
    if first:
        options.append(sql[:first.end() - 1] + sql[first.end():])  # SELEC
    froms = _outside(sql, r"(\s+)(?:FROM|from)\b")
    if froms:
        options.append(_swap(sql, froms[0], 1, "," + froms[0][1]))  # a comma left before FROM
        options.append(sql[:froms[0].end() - 4] + st.up("FORM") + sql[froms[0].end():])
    closing = sql.rfind(")")
    if closing >= 0:
        options.append(sql[:closing] + sql[closing + 1:])  # a parenthesis left open
    return pick(rng, options) if options else None


def _b_ambiguous(rng: np.random.Generator, db: _Db, sql: str, st: _Style) -> str | None:
    tables = [t for t in _tables_in(sql) if t in db.columns]
    ms = [m for m in _outside(sql, r"\b(\w+)\.(\w+)\b")
          if sum(m[2] in db.columns[t] for t in tables) >= 2]
    if not ms:
        return None
    m = ms[int(rng.integers(len(ms)))]
    return sql[:m.start()] + m[2] + sql[m.end():]


def _b_dialect(rng: np.random.Generator, db: _Db, sql: str, st: _Style) -> str | None:
    hits = [(m, make) for pattern, make in _DIALECT for m in re.finditer(pattern, sql)]
    if not hits:
        return None
    m, make = hits[int(rng.integers(len(hits)))]
    return sql[:m.start()] + make(m, st.up) + sql[m.end():]


def _b_cross_join(rng: np.random.Generator, db: _Db, sql: str, st: _Style) -> str | None:
    ms = _outside(sql, r"\bJOIN\s+\w+(?:\s+(?:AS\s+)?(?!ON\b)\w+)?(\s+ON\s+[\w.]+\s*=\s*[\w.]+)", re.I)
    if not ms:
        return None
    m = ms[int(rng.integers(len(ms)))]
    return _swap(sql, m, 1, "")


_BREAKS = {"column": _b_column, "table": _b_table, "syntax": _b_syntax, "ambiguous": _b_ambiguous,
           "dialect": _b_dialect, "timeout": _b_cross_join}


def _break(rng: np.random.Generator, db: _Db, sql: str, st: _Style) -> tuple[str, str]:
    """A failing version of ``sql`` and the tool's error for it: one of the ways (:data:`_BREAKS`)
    that applies, drawn at random, run to get SQLite's message (a cross join is not run: it
    times out)."""
    kinds = list(_BREAKS)
    for i in rng.permutation(len(kinds)):
        broken = _BREAKS[kinds[int(i)]](rng, db, sql, st)
        if broken is None or broken == sql:
            continue
        if kinds[int(i)] == "timeout":
            return broken, error_text("interrupted", broken)
        try:
            db.execute(broken)
        except sqlite3.Error as e:
            return broken, error_text(str(e), broken, f"sqlite3.{type(e).__name__}")
    raise RuntimeError(f"no way to break {sql!r}")  # pragma: no cover - SELEC always applies


def _retry_key(output: str) -> str:
    for key, marker in (("timeout", ") interrupted\n"), ("column", "no such column"), ("table", "no such table"),
                        ("ambiguous", "ambiguous column"), ("dialect", "no such function")):
        if marker in output:
            return "retry_" + key
    return "retry_syntax"


# the episodes --------------------------------------------------------------------------------------------

_SYSTEM = (
    "You are an agent that answers questions about the SQLite database `{db}`. Write syntactically correct SQLite "
    "queries, run them with the `sql_db_query` tool, look at the results and answer the question. If a query fails, "
    "rewrite it and try again. Give the final answer in bold.",
    "Answer the user's question using the `{db}` database (SQLite). The `sql_db_query` tool runs one SQL statement "
    "and returns its rows or the error.",
    "You are a data analyst with read-only access to the SQLite database `{db}`. Use the sql_db_query tool to run "
    "queries. State the final answer clearly, in bold.",
)
_CATALOG = ("SELECT name FROM sqlite_master WHERE type='table'",
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
            "SELECT tbl_name FROM sqlite_master WHERE type = 'table'",
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")
_CATALOG_DDL = ("SELECT name, sql FROM sqlite_master WHERE type='table'",
                "SELECT sql FROM sqlite_master WHERE type = 'table'")
_DESCRIBE = ("PRAGMA table_info({t})", "PRAGMA table_info('{t}')", "SELECT sql FROM sqlite_master WHERE name = '{t}'",
             "SELECT name, type FROM pragma_table_info('{t}')")
_SAMPLE = ("SELECT * FROM {t} LIMIT {lim}",)
_COUNT = ("SELECT COUNT(*) FROM {t}", "SELECT COUNT(*) AS {n} FROM {t}", "SELECT COUNT(1) FROM {t}")
_SAY = {
    "count": ("First, a quick sanity check of {t}.", "Let me check how many rows {t} has.", "How big is {t}?",
              "A row count of {t} first."),
    "direct": ("I'll answer this with a single query.", "Let me write the query directly.",
               "The tables are probably named after the entities in the question; one query should do.",
               "Let me query the database.", "Let me compute this in SQL."),
    "catalog": ("Let me see which tables the database has.", "First the schema: the list of tables.",
                "I don't know the schema yet, so let me list the tables.", "Let me look at the catalog."),
    "catalog_ddl": ("Let me get the definitions of all tables.", "Schema first: the CREATE statements.",
                    "I don't know the schema yet; let me read the table definitions.", "Let me look at the catalog."),
    "describe": ("Now the columns of {t}.", "Let me check the columns of {t}.", "What does {t} look like?",
                 "Schema of {t}:"),
    "after_schema": ("Now the query, with the right column names.", "With the schema known, let me write the query.",
                     "I have the columns I need.", "Putting it together.", "Let me compute this in SQL."),
    "sample": ("Let me look at a few rows of {t}.", "Sample rows from {t} first.",
               "What does the data in {t} look like?", "Peeking at {t}."),
    "after_sample": ("Now I know what the data looks like; the query:", "The formats are clear. Now the query.",
                     "Let me compute this in SQL.", "Now the actual query."),
    "probe": ("Let me check how {col} is stored.", "What values does {col} take?", "Checking {col} first.",
              "Before filtering, the values of {col}."),
    "after_probe": ("The filter values are confirmed; now the query.", "Good, I know the exact values to filter on.",
                    "Let me compute this in SQL.", "Now the query with those values."),
    "step0": ("Step by step. First the ids I need.", "Let me break this down into small queries.",
              "First an intermediate result.", "I'll do this in pieces."),
    "step": ("Next, using {prev}.", "Now plug in {prev}.", "With {prev}, the next piece.", "Next step.",
             "Let me compute this in SQL."),
    "verify": ("Let me write the query.", "First the main query.", "Let me compute this in SQL.",
               "One query should give the answer; I'll check it after."),
    "check": ("Let me double-check with a differently written query.", "Cross-checking another way.",
              "Verifying with a second query.", "Let me confirm the numbers behind that result."),
    "rerun": ("Let me look at the rows themselves.", "Re-running with a LIMIT to see the rows.",
              "A quick look at the top rows.", "Let me view a few rows of the result."),
    "retry_column": ("No such column; let me use the right column name.", "Wrong column name. Fixing it.",
                     "That column doesn't exist. Corrected:", "Let me fix the column reference."),
    "retry_table": ("That table name is wrong; fixing it.", "No such table. Let me use the right table name.",
                    "Wrong table name.", "Corrected the table name."),
    "retry_syntax": ("Syntax error; fixing the typo.", "Typo in the query. Corrected.", "Let me fix the syntax.",
                     "Oops, a syntax slip."),
    "retry_ambiguous": ("The column is ambiguous in the join; qualifying it.",
                        "I need to qualify the column with its table.", "Ambiguous column. Adding the table prefix.",
                        "Let me qualify that column."),
    "retry_dialect": ("SQLite doesn't support that; rewriting the date filter.",
                      "Wrong dialect for dates in SQLite. Fixing the filter.",
                      "SQLite date handling differs; fixing it.", "Let me use SQLite's own date syntax."),
    "retry_timeout": ("The query timed out: I left out a join condition.",
                      "Timed out. That was a cross join; adding the ON clause back.",
                      "Too slow: the join was missing its condition.", "Let me fix the join and rerun."),
    "final": ("The answer is **{a}**{unit}.", "**{a}**", "Result: **{a}**{unit}.", "Based on the query, the answer is "
              "**{a}**{unit}.", "Final answer: **{a}**"),
    "refuse": ("I can't answer this without querying the `{db}` database, and I don't know its schema.",
               "I don't have enough information to answer that; the data lives in the `{db}` database.",
               "Sorry, I cannot determine this without access to the data."),
    "guess": ("Without querying, my best estimate is **{a}**{unit}.", "I'd guess **{a}**{unit}.",
              "Probably **{a}**{unit}, though I haven't checked the data."),
}


class _Chat:
    """One transcript in OpenAI chat format: sql_db_query calls, counted, with failures fixed."""

    def __init__(self, rng: np.random.Generator, q: _Question, db: _Db) -> None:
        self.rng, self.q, self.db = rng, q, db
        self.st = _style(rng)
        self.messages: list[dict] = [{"role": "system", "content": pick(rng, _SYSTEM).format(db=q.db)},
                                     {"role": "user", "content": q.text}]
        self.n_calls = self.n_failures = 0

    def say(self, key: str, **fill: Any) -> str:
        return pick(self.rng, _SAY[key]).format(**fill)

    def _call(self, text: str, sql: str, output: str) -> None:
        self.n_calls += 1
        cid = f"call_{self.n_calls:02d}{int(self.rng.integers(16 ** 8)):08x}"
        content = "" if self.rng.random() < _P_EMPTY else text
        self.messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": TOOL, "arguments": json.dumps({"query": sql})}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": TOOL, "content": output})

    def run(self, text: str, template: str, extra: dict[str, Any] | None = None
            ) -> tuple[str, list[str], list[tuple]]:
        """The statement; where it fails (:data:`_P_FAIL`), first a broken version of it."""
        sql = _render(template, self.q, self.st, extra)
        if self.rng.random() < _P_FAIL:
            self.n_failures += 1
            broken, output = _break(self.rng, self.db, sql, self.st)
            self._call(text, broken, output)
            text = self.say(_retry_key(output))
        header, rows = self.db.execute(sql)
        self._call(text, sql, _show(header, rows))
        return sql, header, rows

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _with_limit(rng: np.random.Generator, sql: str, st: _Style) -> str:
    """The final query again with a LIMIT (a LIMIT 1 widened), as a template."""
    body = sql.rstrip(";")
    k = pick(rng, ("5", "10"))
    m = re.search(r"\b(LIMIT|limit)\s+\d+$", body)
    body = body[:m.start()] + f"{m[1]} {k}" if m else body + ("\n" if "\n" in body else " ") + f"{st.up('LIMIT')} {k}"
    return body.replace("{", "{{").replace("}", "}}")


def _prev(header: list[str], rows: list[tuple]) -> str:
    if len(rows) > 1 and header[0].endswith("_id"):
        return f"those {len(rows)} ids"
    return _cell(rows[0][0])


def _episode(rng: np.random.Generator, strategy: str, q: _Question, db: _Db, correct: bool) -> _Chat:
    ch = _Chat(rng, q, db)
    main = None
    if strategy != "no_query" and rng.random() < _P_COUNT:
        ch.run(ch.say("count", t=q.tables[0]), pick(rng, _COUNT), {"t": q.tables[0]})
    if strategy == "direct":
        main = ch.run(ch.say("direct"), pick(rng, q.finals))[0]
    elif strategy == "schema_first":
        if rng.random() < _P_DDL:
            ch.run(ch.say("catalog_ddl"), pick(rng, _CATALOG_DDL))
        else:
            ch.run(ch.say("catalog"), pick(rng, _CATALOG))
            look = pick(rng, _DESCRIBE)
            for t in q.tables:
                ch.run(ch.say("describe", t=t), look, {"t": t})
        main = ch.run(ch.say("after_schema"), pick(rng, q.finals))[0]
    elif strategy == "sample_rows":
        lim = pick(rng, ("3", "5", "5", "10"))
        for t in q.tables[:3]:
            ch.run(ch.say("sample", t=t), _SAMPLE[0], {"t": t, "lim": lim})
        main = ch.run(ch.say("after_sample"), pick(rng, q.finals))[0]
    elif strategy == "probe_values":
        chosen = sorted(rng.choice(len(q.probes), int(rng.integers(1, len(q.probes) + 1)), replace=False))
        for i in chosen:
            col, alternatives = q.probes[int(i)]
            ch.run(ch.say("probe", col=col), pick(rng, alternatives))
        main = ch.run(ch.say("after_probe"), pick(rng, q.finals))[0]
    elif strategy == "decompose":
        values: dict[str, str] = {}
        header: list[str] = []
        rows: list[tuple] = []
        for i, alternatives in enumerate(q.steps):
            text = ch.say("step", prev=_prev(header, rows)) if i else ch.say("step0")
            main, header, rows = ch.run(text, pick(rng, alternatives), values)
            values[f"s{i}"] = _lit(rows[0][0])
            values[f"l{i}"] = ", ".join(_lit(r[0]) for r in rows)
    elif strategy == "verify":
        main = ch.run(ch.say("verify"), pick(rng, q.finals))[0]
        ch.run(ch.say("check"), pick(rng, q.checks))
    elif strategy != "no_query":  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    if main is not None and rng.random() < _P_LIMIT:
        ch.run(ch.say("rerun"), _with_limit(rng, main, ch.st))
    a = q.shown if correct else _wrong(rng, q)
    if strategy == "no_query":
        unit = q.unit[:-1] if a == "1" and q.unit.endswith("s") else q.unit
        ch.answer(ch.say("guess", a=a, unit=unit) if correct or rng.random() < 0.5 else ch.say("refuse", db=q.db))
    else:
        ch.answer(ch.say("final", a=a, unit=q.unit[:-1] if a == "1" and q.unit.endswith("s") else q.unit))
    return ch


def _wrong(rng: np.random.Generator, q: _Question) -> str:
    """A plausible near value: another candidate name, or a number a little off."""
    a = q.answer
    if isinstance(a, str):
        return pick(rng, [o for o in q.others if o != a])
    if isinstance(a, int):
        step = max(1, round(abs(a) * 0.05))
        w = a + step * int(pick(rng, (-3, -2, -1, 1, 2, 3)))
        return str(w if w >= 0 else a + step)
    decimals = len(q.shown.split(".")[1]) if "." in q.shown else 0
    for _ in range(20):
        w = round(a * float(pick(rng, (0.9, 0.94, 0.97, 1.03, 1.06, 1.1))), decimals)
        if _cell(w) != q.shown:
            return _cell(w)
    return _cell(round(a + 10 ** -decimals, decimals))  # pragma: no cover - a zero answer is never drawn


# building and checking the questions ---------------------------------------------------------------------

_STYLES = (_Style(), _Style(alias=0, n="cnt", lower=True, layout=2), _Style(alias=1, n="total", layout=1),
           _Style(alias=2, n="num"))


def _decompose(q: _Question, db: _Db, st: _Style, choice: int) -> list[tuple] | None:
    values: dict[str, str] = {}
    rows: list[tuple] = []
    for i, alternatives in enumerate(q.steps):
        _, rows = db.execute(_render(alternatives[min(choice, len(alternatives) - 1)], q, st, values))
        if not rows:
            return None
        values[f"s{i}"] = _lit(rows[0][0])
        values[f"l{i}"] = ", ".join(_lit(r[0]) for r in rows)
    return rows


def _valid(q: _Question, db: _Db) -> bool:
    """Whether every way the question's statements are written runs, returns rows, and agrees
    on the answer (a name answer without a tie); sets the answer."""
    try:
        _, rows = db.execute(_render(q.finals[0], q, _STYLES[0]))
        if not rows or rows[0][0] is None or (not isinstance(rows[0][0], str) and rows[0][0] <= 0):
            return False
        q.answer, q.shown = rows[0][0], _cell(rows[0][0])
        if q.ranking is not None:
            _, ranked = db.execute(_render(q.ranking, q, _STYLES[0]))
            if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
                return False
        for st in _STYLES:
            for template in q.finals:
                _, rows = db.execute(_render(template, q, st))
                if not rows or q.shown not in [_cell(v) for v in rows[0]]:
                    return False
            for template in (*q.checks, *(p for _, alts in q.probes for p in alts)):
                if not db.execute(_render(template, q, st))[1]:
                    return False
            for choice in range(2):
                rows = _decompose(q, db, st, choice)
                if rows is None or _cell(rows[0][0]) != q.shown:
                    return False
    except sqlite3.Error as e:  # pragma: no cover - a template that does not run is a bug
        raise RuntimeError(f"{q.db}: {q.text}: {e}") from e
    return True


def _question(rng: np.random.Generator, db: _Db, kind: Callable[[np.random.Generator, _Db], dict],
              used: set[str]) -> _Question:
    for attempt in range(1000):
        q = _Question(db=db.name, **kind(rng, db))
        if (q.text not in used or attempt >= 300) and _valid(q, db):  # the same question again once none is new
            used.add(q.text)
            return q
    raise RuntimeError(f"no valid {kind.__name__} question")  # pragma: no cover


def sql(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
        random_state: RandomState = 0) -> World:
    """Generate the text-to-SQL world (one ``sql_db_query`` tool; OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Questions (the databases in turn, :data:`DATABASES`, and their kinds of question), and
        episodes per question and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai``; truth ``arm, question_id, sample_id, strategy, database,
        n_calls, n_failures, correct``.

    Examples
    --------
    >>> w = sql(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.truth["n_calls"].to_list()
    True
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    dbs = {n: _BUILDERS[n](rng) for n in DATABASES}
    used: set[str] = set()
    questions = []
    for i in range(n_questions):
        db, k = _KINDS[i % len(_KINDS)]
        questions.append((f"sql-{i:04d}", _question(rng, dbs[db], QUESTIONS[db][k], used)))

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, q: _Question
                ) -> tuple[dict, tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        ch = _episode(rng, strategy, q, dbs[q.db], correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [q.shown], "correct": correct,
                 "messages": ch.messages}, (q.db, ch.n_calls, ch.n_failures, correct))

    return planted_world("sql", "openai", rng, questions, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"database": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                       "correct": pl.Boolean})
