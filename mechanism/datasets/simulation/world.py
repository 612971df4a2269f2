"""A generated multi-hop question world in the style of HotpotQA's distractor setting.

Every question comes with ten paragraphs: two gold ones (the two hops, or the two compared
entities) and eight distractors of the same kinds as the gold ones, several sharing a name word
with the question's entities (a title word, a surname, a company's first word), so a
bag-of-words retriever has to be queried well to find the gold paragraphs.

Questions differ in difficulty in stated ways: ``familiarity`` (how often a guess without
evidence is right), ``ease`` (which multiplies a policy's integration skill) and ``hard``: a
share ``hard_share`` of bridge questions is hard (their linked page is easy to misread, only a
strategy that checks its candidate answers them, and no guess is right). A caller can refuse a
question (``accept``) and have it drawn again, which is how the simulator makes sure every
lookup its plans issue retrieves the page it names.

Question kinds (``relation``):

- bridge (``category="bridge"``): ``film_director_birthplace``, ``company_founder_birthyear``,
  ``novel_author_nationality``, ``album_label_headquarters``: entity A names a linked entity B
  (its director, founder, author, label); the answer is an attribute of B.
- comparison (``category="comparison"``): ``company_founded_first`` and ``person_born_first``
  (the answer is one of the two names) and ``person_same_nationality`` (yes/no).

Paragraphs carry their facts as data (``subject``, ``facts``) beside the rendered text, so a
simulated agent "reads" exactly what the text it retrieved says. Everything is generated from
one ``numpy.random.Generator``: the same seed gives the same world.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# Name parts. Varied on purpose: names are what a strategy analysis must learn to ignore.
FIRST_NAMES = (
    "Mara", "Joel", "Ines", "Tobias", "Leona", "Anselm", "Priya", "Kenji", "Odette", "Rafael",
    "Sunniva", "Dmitri", "Amara", "Colm", "Yusuf", "Elif", "Hugo", "Noor", "Bastian", "Ilse",
    "Teodor", "Marisol", "Callum", "Annika", "Oren", "Zofia", "Lucien", "Wren", "Ayaan", "Greta",
    "Matthias", "Saoirse", "Emeka", "Linnea", "Caspar", "Ottilie", "Rui", "Delphine", "Arvid",
    "Imogen", "Stellan", "Farah", "Bram", "Valeria", "Kofi", "Henrike", "Isidro", "Maren",
)
SURNAME_HEADS = (
    "Hal", "Vel", "Ash", "Brom", "Cal", "Dun", "Er", "Fal", "Gar", "Hol", "Kes", "Lind", "Mor",
    "Nor", "Ost", "Pell", "Quen", "Rav", "Sel", "Thorn", "Ul", "Vos", "Wick", "Yar", "Zell",
)
SURNAME_TAILS = (
    "den", "strom", "worth", "ley", "mann", "ard", "icki", "ova", "ssen", "ington", "ridge",
    "court", "beck", "ani", "ero", "sby", "holm", "vik", "ez", "ton",
)
CITY_HEADS = (
    "Ash", "Bel", "Cor", "Dray", "Elm", "Fen", "Glen", "Hart", "Ivy", "Kings", "Lor", "Mar",
    "North", "Oak", "Pem", "Red", "Stan", "Tarn", "Wex", "Aber", "Brig", "Carra", "Dun", "Galt",
)
CITY_TAILS = (
    "ford", "mont", "bridge", "haven", "wick", "field", "port", "dale", "burgh", "moor", "stead",
    "ton", "ville", "chester", "holme", "mouth",
)
TITLE_ADJECTIVES = (
    "Silent", "Crimson", "Hollow", "Northern", "Last", "Glass", "Velvet", "Burning", "Distant",
    "Quiet", "Iron", "Paper", "Golden", "Broken", "Salt", "Winter", "Hidden", "Electric", "Amber",
    "Wild",
)
TITLE_NOUNS = (
    "Harbor", "Orchard", "Lantern", "River", "Meridian", "Garden", "Signal", "Frontier", "Echo",
    "Mirror", "Tide", "Season", "Engine", "Compass", "Hour", "Canyon", "Letter", "Island", "Crown",
    "Horizon",
)
COMPANY_SUFFIXES = ("Industries", "Group", "Works", "Holdings", "Systems", "Motors", "Press", "Labs")
LABEL_SUFFIXES = ("Records", "Recordings", "Music", "Sound")
NATIONALITIES = (
    "American", "Canadian", "British", "Irish", "French", "German", "Dutch", "Swedish",
    "Norwegian", "Danish", "Italian", "Spanish", "Portuguese", "Polish", "Czech", "Austrian",
    "Swiss", "Belgian", "Finnish", "Australian", "Mexican", "Brazilian", "Argentine", "Japanese",
)
GENRES = ("drama", "thriller", "comedy", "science fiction", "documentary", "romance", "war", "horror")
INDUSTRIES = ("engineering", "shipping", "software", "publishing", "textile", "aerospace", "food", "mining")
ROLES = {"director": ("film director", "filmmaker", "director and screenwriter"),
         "entrepreneur": ("businessperson", "entrepreneur", "industrialist"),
         "writer": ("novelist", "writer", "author"),
         "artist": ("musician", "singer-songwriter", "composer")}

BRIDGE_RELATIONS = ("film_director_birthplace", "company_founder_birthyear",
                    "novel_author_nationality", "album_label_headquarters")
COMPARISON_RELATIONS = ("company_founded_first", "person_born_first", "person_same_nationality")

# For each bridge relation: A's kind, the fact on A that names B, B's kind and role, the
# attribute of B that answers, and the question templates.
BRIDGE_SPECS = {
    "film_director_birthplace": dict(
        a_kind="film", link="director", b_kind="person", b_role="director", attr="birthplace",
        templates=("What is the birthplace of the director of {a}?",
                   "Where was the director of {a} born?",
                   "In which city was the director of the film {a} born?")),
    "company_founder_birthyear": dict(
        a_kind="company", link="founder", b_kind="person", b_role="entrepreneur", attr="birth_year",
        templates=("In what year was the founder of {a} born?",
                   "When was the founder of {a} born?",
                   "What is the birth year of the person who founded {a}?")),
    "novel_author_nationality": dict(
        a_kind="novel", link="author", b_kind="person", b_role="writer", attr="nationality",
        templates=("What nationality is the author of {a}?",
                   "What is the nationality of the writer of the novel {a}?",
                   "The author of {a} holds which nationality?")),
    "album_label_headquarters": dict(
        a_kind="album", link="label", b_kind="label", b_role=None, attr="headquarters",
        templates=("In which city is the label that released {a} headquartered?",
                   "Where is the record label that released {a} based?",
                   "The album {a} was released on a label headquartered in which city?")),
}
COMPARISON_SPECS = {
    "company_founded_first": dict(
        kind="company", attr="founded",
        templates=("Which was founded first, {x} or {y}?",
                   "Which company is older, {x} or {y}?",
                   "{x} or {y}: which was established earlier?")),
    "person_born_first": dict(
        kind="person", attr="birth_year",
        templates=("Who was born first, {x} or {y}?",
                   "Which person is older, {x} or {y}?",
                   "Was {x} or {y} born earlier?")),
    "person_same_nationality": dict(
        kind="person", attr="nationality",
        templates=("Are {x} and {y} of the same nationality?",
                   "Do {x} and {y} share the same nationality?",
                   "Are {x} and {y} both from the same country?")),
}


@dataclass(frozen=True)
class Paragraph:
    """One retrievable paragraph: a title, its text, its subject and the facts it states."""

    title: str
    text: str
    subject: str
    kind: str
    facts: dict[str, str]

    def render(self) -> str:
        """The paragraph as a search result shows it (Search-R1's ``(Title: ...)`` style)."""
        return f'(Title: "{self.title}") {self.text}'


@dataclass
class Question:
    """A question, its gold answers and its ten paragraphs (gold ones listed in ``gold_docs``)."""

    question_id: str
    category: str  # "bridge" or "comparison"
    relation: str
    text: str
    gold: list[str]
    paragraphs: list[Paragraph]
    gold_docs: tuple[int, ...]  # bridge: (A's, B's); comparison: (X's, Y's)
    entities: tuple[str, str]  # bridge: (A, B); comparison: (X, Y)
    attr: str  # the attribute that answers (bridge) or is compared (comparison)
    link: str | None = None  # bridge: the fact on A naming B
    wrong_pool: list[str] = field(default_factory=list)  # plausible wrong answers for guesses
    familiarity: float = 0.0  # probability that a guess without evidence is right
    ease: float = 1.0  # multiplies a policy's integration skill on this question
    hard: bool = False  # only a strategy that checks its candidate answers it
    direct: bool = False  # a search with the whole question retrieves the evidence (set by the simulator)


class _Names:
    """Draws names that are unique within a world, so no entity's name is another's."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def _pick(self, options) -> str:
        return options[int(self.rng.integers(len(options)))]

    def _unique(self, make) -> str:
        for _ in range(200):
            name = make()
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("name space exhausted")  # pragma: no cover - 10^5 combinations per kind

    def surname(self) -> str:
        return self._pick(SURNAME_HEADS) + self._pick(SURNAME_TAILS)

    def person(self, surname: str | None = None) -> str:
        return self._unique(lambda: f"{self._pick(FIRST_NAMES)} {surname or self.surname()}")

    def city(self) -> str:
        # the bare stem is reserved too, so no city name contains another as whole words
        for _ in range(200):
            base = self._pick(CITY_HEADS) + self._pick(CITY_TAILS)
            roll = self.rng.random()
            name = f"Port {base}" if roll < 0.1 else f"{base} Falls" if roll < 0.18 else base
            if base not in self.used:
                self.used.update({base, name})
                return name
        raise RuntimeError("name space exhausted")  # pragma: no cover

    def title(self, share: str | None = None) -> str:
        def make():
            adj, noun = self._pick(TITLE_ADJECTIVES), self._pick(TITLE_NOUNS)
            if share is not None:  # keep one word of the title it imitates
                if share in TITLE_ADJECTIVES:
                    adj = share
                else:
                    noun = share
            form = int(self.rng.integers(3))
            return (f"The {adj} {noun}", f"{adj} {noun}", f"{noun} of the {adj} Sea")[form]
        return self._unique(make)

    def company(self, head: str | None = None, suffixes=COMPANY_SUFFIXES) -> str:
        return self._unique(lambda: f"{head or self.surname()} {self._pick(suffixes)}")


def _a(word: str) -> str:
    return f"{'an' if word[0].lower() in 'aeiou' else 'a'} {word}"


def _title_word(title: str) -> str:
    words = [w for w in title.split() if w in TITLE_ADJECTIVES or w in TITLE_NOUNS]
    return words[0] if words else title.split()[-1]


class _Builder:
    """Entities and their paragraphs for one question."""

    def __init__(self, rng: np.random.Generator, names: _Names) -> None:
        self.rng = rng
        self.names = names

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def year(self, lo: int, hi: int, after: int | None = None) -> str:
        if after is not None:  # a work comes after its maker's birth or founding
            lo, hi = max(lo, after), min(max(hi, after + 5), 2024)
        return str(int(self.rng.integers(lo, hi + 1)))

    def person(self, role: str, *, name: str | None = None, surname: str | None = None) -> Paragraph:
        name = name or self.names.person(surname)
        facts = {"birthplace": self.names.city(), "birth_year": self.year(1890, 1990),
                 "nationality": self.pick(NATIONALITIES)}
        job = self.pick(ROLES[role])
        b, y, nat = facts["birthplace"], facts["birth_year"], facts["nationality"]
        form = int(self.rng.integers(4))
        # every form states each fact with its attribute word (born, nationality), so a lookup
        # of the person by name and attribute finds this page, not a page that merely names them
        text = (f"{name} (born {y}) is {_a(job)} of {nat} nationality. {name.split()[0]} was born in {b}.",
                f"{name} is {_a(job)} of {nat} nationality, born in {y} in {b}.",
                f"Born in {b} in {y}, {name} is {_a(job)} of {nat} nationality.",
                f"{name} ({y}) is {_a(job)} of {nat} nationality, born in {b}.")[form]
        return Paragraph(name, text, name, "person", facts)

    def known_for(self, par: Paragraph, work: str) -> Paragraph:
        """Half the time, B's page names the work it is known for, as real pages often do."""
        if self.rng.random() >= 0.5:
            return par
        who = par.subject.split()[-1] if par.kind == "person" else "The label"
        return Paragraph(par.title, f"{par.text} {who} is best known for {work}.", par.subject, par.kind,
                         par.facts)

    def film(self, director: str, *, share: str | None = None, after: int | None = None) -> Paragraph:
        title = self.names.title(share)
        y, genre = self.year(1950, 2022, after), self.pick(GENRES)
        form = int(self.rng.integers(3))
        text = (f"{title} is a {y} {genre} film directed by {director}.",
                f"{title} is {_a(genre)} film from {y}, written and directed by {director}.",
                f"Directed by {director}, {title} ({y}) is {_a(genre)} picture.")[form]
        return Paragraph(title, text, title, "film", {"director": director, "year": y})

    def novel(self, author: str, *, share: str | None = None, after: int | None = None) -> Paragraph:
        title = self.names.title(share)
        y = self.year(1900, 2022, after)
        form = int(self.rng.integers(3))
        text = (f"{title} is a {y} novel by {author}.",
                f"{title} is a novel written by {author}, first published in {y}.",
                f"Published in {y}, {title} is the best-known novel of {author}.")[form]
        return Paragraph(title, text, title, "novel", {"author": author, "year": y})

    def album(self, label: str, *, share: str | None = None, after: int | None = None) -> Paragraph:
        title = self.names.title(share)
        y, artist = self.year(1960, 2022, after), self.names.person()
        form = int(self.rng.integers(3))
        text = (f"{title} is a {y} studio album by {artist}, released on {label}.",
                f"{title} is the debut album of {artist}, issued in {y} by {label}.",
                f"Released by {label} in {y}, {title} is an album by {artist}.")[form]
        return Paragraph(title, text, title, "album", {"label": label, "year": y})

    def company(self, *, founder: str | None = None, head: str | None = None,
                label: bool = False, name: str | None = None, after: int | None = None) -> Paragraph:
        name = name or self.names.company(head, LABEL_SUFFIXES if label else COMPANY_SUFFIXES)
        y, hq = self.year(1850, 2015, after), self.names.city()
        founder = founder or self.names.person()
        what = "record label" if label else f"{self.pick(INDUSTRIES)} company"
        article = _a(what).split()[0]
        form = int(self.rng.integers(3))
        text = (f"{name} is {article} {what} founded in {y} by {founder}. It is headquartered in {hq}.",
                f"{name} is {article} {what} headquartered in {hq}, founded in {y} by {founder}.",
                f"Founded by {founder} in {y}, {name} is {article} {what} headquartered in {hq}.")[form]
        return Paragraph(name, text, name, "label" if label else "company",
                         {"founded": y, "headquarters": hq, "founder": founder})


def _bridge(qid: str, relation: str, rng: np.random.Generator, names: _Names) -> Question:
    spec = BRIDGE_SPECS[relation]
    bld = _Builder(rng, names)
    a_kind, b_role, attr = spec["a_kind"], spec["b_role"], spec["attr"]

    def make_b(name=None, surname=None) -> Paragraph:
        if a_kind == "album":
            return bld.company(label=True, name=name)
        return bld.person(b_role, name=name, surname=surname)

    def make_a(b: Paragraph, share=None) -> Paragraph:
        # A's year follows B's: a person works from age 20, a label releases after its founding
        after = int(b.facts["birth_year"]) + 20 if b.kind == "person" else int(b.facts["founded"])
        if a_kind == "film":
            return bld.film(b.subject, share=share, after=after)
        if a_kind == "novel":
            return bld.novel(b.subject, share=share, after=after)
        if a_kind == "album":
            return bld.album(b.subject, share=share, after=after)
        return bld.company(founder=b.subject, head=share, after=after)

    b_par = make_b()
    b_name = b_par.subject
    a_par = make_a(b_par)
    b_par = bld.known_for(b_par, a_par.subject)
    share = _title_word(a_par.subject) if a_kind != "company" else a_par.subject.split()[0]
    distractors: list[Paragraph] = []
    # three A-like entities (two sharing a word with A), each linked to its own B-like
    # entity (one sharing B's surname), then two more B-like entities
    for i in range(3):
        other_b = make_b(surname=b_name.split()[-1] if (i == 0 and a_kind != "album") else None)
        distractors.append(make_a(other_b, share=share if i < 2 else None))
        distractors.append(other_b)
    for _ in range(2):
        distractors.append(make_b())
    paragraphs = [a_par, b_par] + distractors
    order = rng.permutation(len(paragraphs))
    paragraphs = [paragraphs[i] for i in order]
    where = {int(j): i for i, j in enumerate(order)}
    gold = b_par.facts[attr]
    wrong = sorted({p.facts[attr] for p in paragraphs if attr in p.facts and p.facts[attr] != gold})
    if attr == "nationality":
        wrong = sorted(set(wrong) | {n for n in NATIONALITIES if n != gold})
    text = bld.pick(spec["templates"]).format(a=a_par.subject)
    return Question(qid, "bridge", relation, text, [gold], paragraphs, (where[0], where[1]),
                    (a_par.subject, b_name), attr, spec["link"], wrong)


def _comparison(qid: str, relation: str, rng: np.random.Generator, names: _Names) -> Question:
    spec = COMPARISON_SPECS[relation]
    bld = _Builder(rng, names)
    kind, attr = spec["kind"], spec["attr"]

    def make(head=None) -> Paragraph:
        if kind == "company":
            return bld.company(head=head)
        return bld.person(bld.pick(tuple(ROLES)), surname=head)

    for _ in range(100):
        x, y = make(), make()
        # the two names share no word (a lookup of one never reads as a lookup of the other)
        distinct = not set(x.subject.lower().split()) & set(y.subject.lower().split())
        if distinct and (x.facts[attr] != y.facts[attr] or relation == "person_same_nationality"):
            break
    if relation == "person_same_nationality" and rng.random() < 0.5:
        y = Paragraph(y.title, y.text.replace(y.facts["nationality"], x.facts["nationality"]),
                      y.subject, y.kind, {**y.facts, "nationality": x.facts["nationality"]})
    distractors = []
    for i in range(8):  # two share x's name head, two share y's, the rest are the same kind
        head = x.subject.split()[-1 if kind == "person" else 0] if i < 2 else \
            y.subject.split()[-1 if kind == "person" else 0] if i < 4 else None
        distractors.append(make(head))
    paragraphs = [x, y] + distractors
    order = rng.permutation(len(paragraphs))
    paragraphs = [paragraphs[i] for i in order]
    where = {int(j): i for i, j in enumerate(order)}
    if relation == "person_same_nationality":
        gold = "yes" if x.facts[attr] == y.facts[attr] else "no"
        wrong = ["no" if gold == "yes" else "yes"]
    else:
        first = x if int(x.facts[attr]) < int(y.facts[attr]) else y
        gold = first.subject
        wrong = [y.subject if first is x else x.subject]
    text = bld.pick(spec["templates"]).format(x=x.subject, y=y.subject)
    return Question(qid, "comparison", relation, text, [gold], paragraphs, (where[0], where[1]),
                    (x.subject, y.subject), attr, None, wrong)


def make_world(n_questions: int, rng: np.random.Generator, *, bridge_share: float = 0.6,
               hard_share: float = 0.3, accept: Callable[[Question], bool] | None = None,
               max_draws: int = 50) -> list[Question]:
    """Generate ``n_questions`` questions (about ``bridge_share`` of them bridge questions).

    Parameters
    ----------
    n_questions
        How many questions.
    rng
        The only source of randomness.
    bridge_share
        Probability that a question is a bridge question (HotpotQA: about 0.8; the reference
        study analyses both kinds).
    hard_share
        Probability that a bridge question is hard: ``hard=True``, ``familiarity`` 0 and
        ``ease`` from U(0.15, 0.35) (ordinary questions: Beta(4, 1)).
    accept
        Called with each drawn question; a question it refuses is drawn again (the same kind,
        bridge or comparison, with fresh names and facts), at most ``max_draws`` times.
    max_draws
        Draws per question before giving up (a ``RuntimeError``: the world cannot satisfy
        ``accept``).

    Returns
    -------
    list of Question
        Ids ``q0000``, ``q0001``, ...
    """
    out = []
    for i in range(n_questions):
        # the kind first, so refused draws cannot change the mix of kinds
        bridge = bool(rng.random() < bridge_share)
        for _ in range(max_draws):
            q = _draw(f"q{i:04d}", rng, bridge, hard_share)
            if accept is None or accept(q):
                break
        else:
            raise RuntimeError(f"no acceptable question after {max_draws} draws")  # pragma: no cover
        out.append(q)
    return out


def _draw(qid: str, rng: np.random.Generator, bridge: bool, hard_share: float) -> Question:
    names = _Names(rng)  # names are unique within a question, where retrieval competes
    if bridge:
        q = _bridge(qid, BRIDGE_RELATIONS[int(rng.integers(len(BRIDGE_RELATIONS)))], rng, names)
        # most multi-hop facts are not known parametrically; a few are
        q.familiarity = float(rng.beta(0.15, 6.0))
    else:
        q = _comparison(qid, COMPARISON_RELATIONS[int(rng.integers(len(COMPARISON_RELATIONS)))], rng, names)
        # a two-way guess is right half the time on average, but a model's prior is often
        # confidently one way (U-shaped), so some comparisons are rarely guessed right
        q.familiarity = float(rng.beta(0.6, 0.6))
    # hard questions are what put problems near the capability boundary: most episodes fail
    # them even with the evidence in hand, and only the checking strategy succeeds at all
    q.hard = q.category == "bridge" and bool(rng.random() < hard_share)
    if q.hard:
        q.familiarity = 0.0
        q.ease = float(rng.uniform(0.15, 0.35))
    else:
        q.ease = float(rng.beta(4.0, 1.0))
    return q
