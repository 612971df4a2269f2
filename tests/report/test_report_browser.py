"""The one-page summary in a real headless browser (Debian's chromium through selenium; nothing
downloads a browser): it renders, shows every figure, and every input string stays text."""
from __future__ import annotations

import shutil

import polars as pl
import pytest

from mechanism.report import write_report

EVIL = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="no chromium/chromedriver binary (apt-get install -y chromium chromium-driver)")


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--window-size=1200,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # an explicit driver path: selenium's manager would otherwise try to download one
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory, small_pair):
    sim = small_pair
    runs = sim.runs.with_columns(pl.col("arm").replace({"rl": EVIL}))
    out = tmp_path_factory.mktemp("browser")
    return write_report(runs, out, base="base", embedder="hashing-128", n_boot=50, n_permutations=20,
                        progress=False)


def test_summary_renders_every_figure_and_runs_nothing_from_the_input(browser, page):
    browser.get(page.summary_html.resolve().as_uri())
    assert browser.title == f"What did training do? {EVIL} vs base"  # a script that ran would have set "pwned"
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);")
    expected = sorted(str(p.relative_to(page.out)) for p in page.figures())
    assert sorted(src for src, _, _ in images) == expected and len(expected) >= 9
    assert all(complete and width > 100 for _, complete, width in images), images
    assert browser.execute_script("return document.scripts.length;") == 0
    text = browser.find_element("tag name", "body").text
    assert EVIL in text  # shown as text, not parsed as markup
    assert browser.execute_script("return document.querySelectorAll('img[src=x]').length;") == 0
    headings = [h.text for h in browser.find_elements("tag name", "h2")]
    assert headings[:3] == ["Overview", "Accuracy", "PASS@(k,T) and the capability boundary"]
    assert "Strategy explorer" in headings


def test_navigation_tables_and_examples_are_visible_and_nothing_errs(browser, page, request):
    browser.get(page.summary_html.resolve().as_uri())
    browser.get_log("browser")  # what loading logged is checked below, after navigating
    links = browser.find_elements("css selector", "nav#contents a")
    assert len(links) >= 6
    for link in links:
        target = link.get_attribute("href").split("#", 1)[1]
        link.click()
        top = browser.execute_script("return document.getElementById(arguments[0]).getBoundingClientRect().top;",
                                     target)
        assert abs(top) < 5 or browser.execute_script(  # scrolled to it, or the page ends before it can
            "return window.innerHeight + window.scrollY >= document.body.scrollHeight - 2;"), target
    tables = [t for t in browser.find_elements("tag name", "table") if t.is_displayed()]
    assert len(tables) >= 3 and all(t.size["height"] > 20 for t in tables[:3])
    members = browser.find_elements("css selector", "article.member")
    assert members and all(m.is_displayed() for m in members)
    # the outcome filter hides the failures without any script
    browser.find_element("css selector", "label[for=outcome-success]").click()
    shown = [m for m in members if m.is_displayed()]
    assert shown and all("success" in m.get_attribute("class") for m in shown)
    browser.find_element("css selector", "label[for=outcome-all]").click()
    # a strategy id in the table opens its entry in the explorer
    link = browser.find_element("css selector", "#strategies table a")
    link.click()
    target = link.get_attribute("href").split("#", 1)[1]
    assert abs(browser.execute_script("return document.getElementById(arguments[0]).getBoundingClientRect().top;",
                                      target)) < 5
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    browser.set_window_size(1200, 2400)
    browser.execute_script("window.scrollTo(0, 0);")
    browser.save_screenshot(str(page.out / "screenshot.png"))
    assert (page.out / "screenshot.png").stat().st_size > 10_000
