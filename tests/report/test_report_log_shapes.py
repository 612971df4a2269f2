"""The report on logs in the shapes of Reflexion, FireAct and tau-bench: the user on
the explorer page (checked in headless Chromium), every member reachable, captions that name
their comparison, split tables that add up, pass^k at every requested k, and no figure
written under ``figures=False``."""
from __future__ import annotations

import csv
import re
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

import mechanism as mx
from mechanism.report import write_report

sys.path.insert(0, str(Path(__file__).parents[1] / "readers"))
from log_shapes import REFLEXION_READ, TAU_READ, reflexion_log, tau_log

pytestmark = pytest.mark.slow
OPTS = dict(embedder="hashing-128", n_boot=30, n_permutations=30, progress=False)


@pytest.fixture(scope="module")
def tau(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tau-log")
    paths, _ = tau_log(folder)
    runs = mx.read(paths, **{**TAU_READ, "columns": {**TAU_READ["columns"], "arm": "agent"}})
    return write_report(runs, folder / "report", base="gpt-4o-mini", k=[1, 2, 3, 4], members_per_page=10, **OPTS)


@pytest.fixture(scope="module")
def reflexion(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reflexion-log")
    path, _ = reflexion_log(folder)
    runs = mx.read(path, **REFLEXION_READ)
    # two treated arms: captions must tell the comparisons apart
    runs = pl.concat([runs, runs.filter(pl.col("arm") == "reflexion").with_columns(pl.lit("reflexion-2").alias("arm"))])
    return write_report(runs, folder / "report", base="react", k=[1, 2, 3], members_per_page=8, **OPTS)


def _page(report) -> str:
    return report.summary_html.read_text("utf-8")


def test_pass_hat_k_at_every_requested_k_in_csv_and_page(tau):
    hat = pl.read_csv(tau.out / "passkt" / "pass_hat_k.csv")
    assert sorted(hat["k"].unique().to_list()) == [1, 2, 3, 4]
    md = tau.summary_markdown.read_text("utf-8")
    table = md.split("**pass^k: all k trials succeed")[1].split("\n\n")[1]
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == ["1", "2", "3", "4"]
    assert table.splitlines()[0].split("|")[2:4] == [" gpt-4o-mini ", " gpt-4o "]  # arms as columns


def _md_table(md: str, title: str) -> list[list[str]]:
    block = md.split(f"**{title}**")[1].split("\n\n")[1]
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in block.splitlines() if not line.startswith("|---")]


def _number(cell: str) -> float:
    return float(cell.split()[0].replace("\\", ""))


@pytest.mark.parametrize("title,parts,total", [
    ("Accuracy difference = retrieval + integration + parametric + not retrievable",
     ("retrieval", "integration", "parametric", "not retrievable"), "accuracy difference (total)"),
    ("Accuracy change = composition (reweighting) + within-strategy execution",
     ("composition (reweighting)", "within-strategy execution"), "accuracy change (total)")])
def test_every_split_table_lists_its_parts_and_sums_to_its_total(reflexion, tau, title, parts, total):
    for report in (reflexion, tau):
        rows = _md_table(report.summary_markdown.read_text("utf-8"), title)
        by = {r[0]: r[1:] for r in rows[1:]}
        assert all(p in by for p in (*parts, "sum", total)), by
        for j in range(len(rows[0]) - 1):
            measured = [_number(by[p][j]) for p in parts if not by[p][j].startswith("n/a")]
            assert _number(by["sum"][j]) == pytest.approx(sum(measured), abs=2e-3)
            assert _number(by["sum"][j]) == pytest.approx(_number(by[total][j]), abs=2e-3)


def test_without_gold_the_integration_parts_say_n_a_with_the_reason(tau):
    rows = _md_table(tau.summary_markdown.read_text("utf-8"),
                     "Accuracy difference = retrieval + integration + parametric + not retrievable")
    by = {r[0]: r[1:] for r in rows[1:]}
    assert by["retrieval"][0].startswith("n/a (no gold answer text to find)")
    section = tau.summary_markdown.read_text("utf-8").split("## Information integration")[1].split("\n## ")[0]
    assert "0.000 [0.000, 0.000]" not in section.replace("\\", "")
    rates = _md_table(section, "Retrieval and integration rates per arm")
    assert all(r[2].startswith("n/a") for r in rates[1:])


def test_boundary_table_holds_the_exact_test_and_the_permutation_p_apart(reflexion):
    from scipy.stats import binomtest

    rows = _md_table(reflexion.summary_markdown.read_text("utf-8"), "Capability boundary: problems gained and lost")
    head = rows[0]
    assert "exact p" in head and "permutation p" in head
    for r in rows[1:]:
        gained, lost = int(r[head.index("gained")]), int(r[head.index("lost")])
        exact = binomtest(gained, gained + lost, 0.5).pvalue if gained + lost else 1.0
        assert float(r[head.index("exact p")]) == pytest.approx(exact, rel=1e-2)


def test_captions_name_their_comparison_and_are_distinct(reflexion):
    captions = re.findall(r"<figcaption>(.*?) \(<a", _page(reflexion))
    assert captions and not any("{" in c for c in captions)
    gaps = [c for c in captions if c.startswith("PASS@(k,T) difference")]
    assert len(gaps) == 2 and len(set(gaps)) == 2 and all("vs react" in c or "- react" in c for c in gaps)


def test_every_member_is_reachable_from_the_strategy_table(reflexion, tau):
    for report in (reflexion, tau):
        page = _page(report)
        labels = pl.read_parquet(report.out / "strategies" / "labels.parquet")
        reached = 0
        for s, part in labels.group_by("strategy"):
            stem = "outliers" if s[0] == -1 else f"S{s[0]}"
            first = f"strategies/members/strategy-{stem}-1.html"
            assert f'href="{first}"' in page  # linked from the strategy table and the explorer
            listed = list(csv.DictReader((report.out / "strategies" / "members" /
                                          f"strategy-{stem}-members.csv").open(encoding="utf-8")))
            assert len(listed) == part.height
            for row in listed:
                html = (report.out / row["page"]).read_text("utf-8")
                assert f'id="{row["anchor"]}"' in html
                reached += 1
        assert reached == labels.height


def test_no_figures_writes_no_figure(tmp_path):
    paths, _ = tau_log(tmp_path, n_tasks=4, trials=2)
    runs = mx.read(paths, **{**TAU_READ, "columns": {**TAU_READ["columns"], "arm": "agent"}})
    report = write_report(runs, tmp_path / "report", base="gpt-4o-mini", figures=False, **OPTS)
    assert not list(report.out.rglob("*.png")) and not list(report.out.rglob("*.pdf"))
    assert "<img" not in _page(report)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("no chromium/chromedriver binary (apt-get install -y chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--window-size=1400,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    yield driver
    driver.quit()


def test_explorer_shows_user_turns_in_place_and_user_provenance(browser, tau):
    browser.get(tau.summary_html.resolve().as_uri())
    turns = [t for t in browser.find_elements("css selector", "#explorer li.user-turn") if t.is_displayed()]
    assert turns and any("Sure, it's" in t.text for t in turns)
    # the id the user typed is the user's, as mx.segment says, never "new"
    values = browser.find_elements("css selector", "#explorer ul.values li")
    typed = [v.text for v in values if "_" in v.text and any(u in v.text for u in ("mia_li", "ava_kim", "noah_lee",
                                                                                     "liam_roy"))]
    assert typed and all(t.endswith("from user") for t in typed), typed
    # a user turn stands before the call it answers
    first = browser.find_element("css selector", "#explorer article.member ol.calls")
    items = first.find_elements("css selector", ":scope > li")
    kinds = [i.get_attribute("class") for i in items]
    assert kinds[0] == "user-turn" and kinds[1].startswith("call")
    # a member page: filters work without scripts, and every member of the page is there
    browser.get((tau.out / "strategies" / "members" / "strategy-S0-1.html").resolve().as_uri()
                if (tau.out / "strategies" / "members" / "strategy-S0-1.html").exists() else
                next((tau.out / "strategies" / "members").glob("*-1.html")).resolve().as_uri())
    assert browser.execute_script("return document.scripts.length;") == 0
    members = browser.find_elements("css selector", "article.member")
    assert members and all(m.is_displayed() for m in members)
    browser.find_element("css selector", "label[for=outcome-success]").click()
    shown = [m for m in members if m.is_displayed()]
    assert all("success" in m.get_attribute("class") for m in shown)
    width = browser.execute_script("return document.documentElement.scrollWidth;")
    assert width <= 1400


def test_track_refuses_checkpoints_sharing_few_questions_in_one_line(tmp_path, capsys):
    from mechanism._cli.main import main

    path, _ = reflexion_log(tmp_path, n_questions=6, trials=1)
    lines = path.read_text("utf-8").splitlines()
    import json as _json

    # trial 2 prefixes a reflection and carries no id: its questions get new ids from the text
    records = [_json.loads(line) for line in lines]
    for r in records:
        del r["qid"]
        if r["run"] == "reflexion":
            r["block"] = r["block"].replace("Question: ", "Question: (Reflection: search better.) ", 1)
    path.write_text("".join(_json.dumps(r) + "\n" for r in records), encoding="utf-8")
    cols = "text=block,gold=gold_answer,correct=status:CORRECT,arm=run"
    code = main(["track", str(path), "--format", "react", "--columns", cols, "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "question_key=" in err[0] and "share 0 of 12 questions" in err[0]
