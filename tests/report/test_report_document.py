"""The report as a document a paper's authors read and check: HTML tables, contents,
a strategy explorer with member transcripts, single-agent reports, LaTeX a paper takes, and
escaping of hostile transcripts.

Fixtures are generated here in the shapes the issue describes: a Reflexion-like study (three
arms with long names that share prefixes, ReAct-style search/lookup logs in canonical form) and
a tau-bench-like single agent (OpenAI ``tool_calls`` messages, tasks x 4 trials, with failed
calls and retries).
"""
from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import polars as pl
import pytest

import mechanism as mx
from mechanism._cli.main import main
from mechanism.report import write_report

ARMS = ("davinci003_react_base", "davinci003_react_reflexion", "claude3haiku_react_reflexion")
HOSTILE = ('<script>document.title="pwned"</script></textarea>{{ 7*7 }}{% if 1 %}x{% endif %}'
           "\u202egnp.exe\u2066")


def reflexion_runs() -> pl.DataFrame:
    """Three ReAct arms on shared HotpotQA-like questions; every first observation carries hostile text."""
    sim = mx.simulate(n_questions=12, n_samples=3, arms=("base", "rl", "sft"), random_state=3, progress=False)
    runs = sim.runs.with_columns(pl.col("arm").replace(dict(zip(("base", "rl", "sft"), ARMS))))
    steps = runs["steps"].to_list()
    for _i, s in enumerate(steps):
        if s:
            s[0] = {**s[0], "observation": HOSTILE + " " + str(s[0]["observation"])}
    return runs.with_columns(pl.Series("steps", steps, dtype=runs["steps"].dtype))


def taubench_file(path, *, n_tasks: int = 10, n_trials: int = 4) -> None:
    """A GPT-4o-like retail agent: read the order, cancel it (sometimes failing, then retrying)."""
    rows = []
    for task in range(n_tasks):
        for trial in range(n_trials):
            order = f"#W{4830391 + task}"
            user = f"mia_li_{3668 + task}"
            calls = [("get_order_details", {"order_id": order}, f'{{"order_id": "{order}", "status": "pending"}}')]
            if (task + trial) % 3 == 0:
                calls.append(("cancel_pending_order", {"order_id": order, "reason": "no longer needed"},
                              "Error: order is not pending"))
            calls.append(("cancel_pending_order", {"order_id": order, "reason": "no longer needed"},
                          f'{{"order_id": "{order}", "status": "cancelled"}}'))
            if task % 4 == 0:
                calls.insert(0, ("find_user_id_by_name_zip", {"first_name": "Mia", "zip": "80218"}, user))
            messages = [{"role": "system", "content": "You are a retail agent."},
                        {"role": "user", "content": f"I am {user}; please cancel order {order}."}]
            for j, (tool, args, result) in enumerate(calls):
                messages.append({"role": "assistant", "content": "", "tool_calls": [
                    {"id": f"c{j}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
                messages.append({"role": "tool", "tool_call_id": f"c{j}", "content": result})
            messages.append({"role": "assistant", "content": "Your order is cancelled."})
            rows.append({"arm": "gpt-4o", "question_id": f"task-{task:02d}", "sample_id": trial,
                         "question": messages[1]["content"], "gold": [], "correct": (task * 7 + trial) % 5 < 3,
                         "messages": messages})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")


class _Text(HTMLParser):
    """Visible text of a page, with the share inside <pre>, and every in-page link."""

    def __init__(self) -> None:
        super().__init__()
        self.text, self.pre, self.depth, self.skip = [], [], 0, 0
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "pre":
            self.depth += 1
        if tag in ("style", "title"):
            self.skip += 1
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and (attrs.get("href") or "").startswith("#"):
            self.links.append(attrs["href"][1:])

    def handle_endtag(self, tag):
        if tag == "pre":
            self.depth -= 1
        if tag in ("style", "title"):
            self.skip -= 1

    def handle_data(self, data):
        if self.skip:
            return
        (self.pre if self.depth else self.text).append(data)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("reflexion")
    return reflexion_runs(), write_report(reflexion_runs(), out, base=ARMS[0], embedder="hashing-128", n_boot=40,
                                          n_permutations=20, progress=False)


def test_the_page_is_a_document_with_tables_links_and_every_arm_in_full(study):
    runs, report = study
    page = report.summary_html.read_text("utf-8")
    parsed = _Text()
    parsed.feed(page)
    text, pre = "".join(parsed.text), "".join(parsed.pre)
    assert page.count("<table") >= 3
    assert len(pre) <= 0.10 * (len(text) + len(pre))
    assert len(parsed.links) >= 4 and all(link in parsed.ids for link in parsed.links)
    for arm in ARMS:
        assert arm in text
    figures = re.findall(r'<img src="([^"]+)"', page)
    assert figures and not any("table" in f for f in figures)  # no table drawn as a picture
    md = report.summary_markdown.read_text("utf-8")
    assert md.count("|---|") >= 3 and "## Contents" in md and "```" not in md


def test_every_strategy_with_three_members_shows_three_transcripts(study):
    """Joined from the report's own labels (strategies/labels.parquet) with the questions."""
    runs, report = study
    labels = pl.read_parquet(report.out / "strategies" / "labels.parquet")
    sizes = labels.group_by("strategy").len()
    page = report.summary_html.read_text("utf-8")
    members = labels.join(runs.select("arm", "question_id", "sample_id", "question"),
                          on=["arm", "question_id", "sample_id"])
    for s, size in sizes.iter_rows():
        block = page.split(f'id="strategy-{str(s).replace("-", "m")}"', 1)[1].split('<section class="strategy"', 1)[0]
        shown = re.findall(r'<article class="member[^"]*"', block)
        if size >= 3:
            assert len(shown) >= 3, (s, size)
        questions = set(members.filter(pl.col("strategy") == s)["question"].to_list())
        for q in re.findall(r"<b>Question:</b> (.*?)</p>", block):
            assert html.unescape(q) in {" ".join(x.split()) for x in questions}
        assert block.count('class="call') >= sum(1 for _ in re.finditer("from (user|call|result|new)", block)) > 0 \
            or "answer without tools" in block or size < 3


def test_hostile_transcripts_stay_text(study):
    _, report = study
    page = report.summary_html.read_text("utf-8")
    assert "<script" not in page.lower() and "</textarea>" not in page
    assert "{{ 7*7 }}" in page and "{% if 1 %}x{% endif %}" in page  # template syntax shown, never evaluated
    assert "\u202e" not in page and "\\u202e" in page  # bidi override shown as an escape
    assert "default-src 'none'" in page
    md = report.summary_markdown.read_text("utf-8")
    outside_code = re.sub(r"`[^`]*`", "", md)  # a code span shows its text literally
    assert re.search(r"(?<!\\)<script", outside_code) is None and "\u202e" not in md


def test_latex_tables_have_captions_labels_and_intervals(study):
    _, report = study
    tex = (report.out / "tables.tex").read_text("utf-8")
    tables = tex.split(r"\begin{table}")[1:]
    assert len(tables) >= 4
    for label in ("tab:passkt", "tab:boundary", "tab:split", "tab:strategies"):
        assert rf"\label{{{label}}}" in tex
    for table in tables:
        assert r"\caption{" in table and r"\toprule" in table and r"\bottomrule" in table
    assert re.search(r"0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]", tex)
    assert "davinci003\\_react\\_base" in tex and "<script>" not in tex and "\\caption*" not in tex


def test_arm_names_rename_every_table(tmp_path):
    runs = reflexion_runs().filter(pl.col("arm") != ARMS[2])
    report = write_report(runs, tmp_path, base=ARMS[0], embedder="hashing-64", n_boot=20, n_permutations=0,
                          progress=False, arm_names={ARMS[1]: "Reflexion (davinci)", ARMS[0]: "ReAct (davinci)"})
    page = report.summary_html.read_text("utf-8")
    assert "Reflexion (davinci)" in page and ARMS[1] not in page
    assert report.verdicts[0].startswith("Reflexion (davinci) vs ReAct (davinci)")
    with pytest.raises(mx.InputError, match="arm_names"):
        write_report(runs, tmp_path / "x", base=ARMS[0], arm_names={"nope": "x"}, embedder="hashing-64")


def test_lead_sections_come_first(tmp_path):
    class Lead:
        title = "The study table"
        html = "<p id='lead-marker'>lead</p>"
        markdown = "lead section"

    sim = mx.simulate(n_questions=5, n_samples=2, arms=("base", "rl"), random_state=0, progress=False)
    report = write_report(sim.runs, tmp_path, base="base", embedder="hashing-64", n_boot=10, n_permutations=0,
                          progress=False, lead=[Lead()])
    page = report.summary_html.read_text("utf-8")
    assert page.index("lead-marker") < page.index('id="overview"')
    assert report.summary_markdown.read_text("utf-8").index("lead section") < \
        report.summary_markdown.read_text("utf-8").index("## Overview")


def test_single_agent_report_states_pass_hat_k(tmp_path, capsys):
    data = tmp_path / "tau.jsonl"
    taubench_file(data)
    rc = main(["report", str(data), "--format", "openai", "--out", str(tmp_path / "out"), "--embedder", "hashing-64",
               "--n-boot", "30", "--no-progress"])
    assert rc == 0
    page = (tmp_path / "out" / "summary.html").read_text("utf-8")
    assert "pass^4" in page and "pass^k" in page and "Per-task consistency" in page
    assert "Failures per tool" in page and "cancel_pending_order" in page and page.count("<table") >= 5
    hat = pl.read_csv(tmp_path / "out" / "passkt" / "pass_hat_k.csv")
    assert hat["metric"].unique().to_list() == ["pass^k"] and hat["k"].max() == 4
    # every call of a member shows where its values came from: the order id from the user turn
    assert re.search(r"<code>#W\d+</code> from user", page)
    assert 'class="call failed"' in page  # the failing cancel is marked


def test_cli_rejects_a_bad_arm_names_pair(tmp_path, capsys):
    data = tmp_path / "tau.jsonl"
    taubench_file(data, n_tasks=3, n_trials=2)
    rc = main(["report", str(data), "--format", "openai", "--out", str(tmp_path / "o"), "--arm-names", "gpt-4o"])
    assert rc == 2 and "OLD=NEW" in capsys.readouterr().err


def test_space_examples_are_typical_and_atypical_members(tmp_path):
    runs = reflexion_runs()
    space = mx.StrategySpace(embedder="hashing-128", random_state=0, progress=False).fit(runs)
    desc = space.describe()
    assert desc["fidelity"].is_between(0, 1).all()
    mixed = next(r["strategy"] for r in desc.iter_rows(named=True) if r["strategy"] >= 0 and r["size"] >= 3)
    ex = space.examples(mixed, n=3)
    assert ex.height == 3 and set(ex["strategy"].to_list()) == {mixed}
    typical = desc.filter(pl.col("strategy") == mixed)["typical_moves"][0]
    assert (ex.filter(pl.col("kind") == "typical")["moves"] == typical).all()
    assert (ex.filter(pl.col("kind") == "atypical")["moves"] != typical).all()
    assert all(c["tool"] and c["values"] is not None and c["relation"] for calls in ex["calls"] for c in calls)
    only = space.examples(mixed, n=2, arm=ARMS[1])
    assert set(only["arm"].to_list()) <= {ARMS[1]}
    space.save(tmp_path / "space")
    loaded = mx.StrategySpace.load(tmp_path / "space")
    with pytest.raises(mx.InputError, match="runs="):
        loaded.examples(mixed)
    again = loaded.examples(mixed, n=3, runs=runs)
    assert again.height == 3 and again["calls"].list.len().min() >= 0
