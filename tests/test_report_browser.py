"""`promptc report` in a real browser: Debian's Chromium, headless, driven by Selenium through
Debian's chromedriver (no browser download). The page loads with no console message, shows every
prompt, and its filter works; the test keeps a screenshot (`UPDATE_SCREENSHOT=1` writes it to
docs/report.png, the one the README shows). `.ci/run` installs chromium and chromium-driver."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .conftest import ROOT, run_promptc

pytestmark = pytest.mark.ci_only

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("chromium and chromium-driver are not installed (.ci/run installs them with apt-get)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_report_in_chromium(browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    (tmp_path / "traffic.json").write_text('{"support/chat": 12000, "helpdesk/agent": 800, "helpdesk/triage": 3000}')
    page = tmp_path / "report.html"
    result = run_promptc(
        "report", "-o", "report.html", "--out", str(ROOT / "build"), "--traffic", "traffic.json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    browser.get(page.as_uri())
    assert browser.title == "promptc cache report"
    names = sorted(json.loads((ROOT / "build/manifest.json").read_text())["artifacts"])
    shown = [
        el.get_attribute("data-name") for el in browser.find_elements(By.CSS_SELECTOR, ".prompt") if el.is_displayed()
    ]
    assert shown == names
    tree_names = {el.get_attribute("data-name") for el in browser.find_elements(By.CSS_SELECTOR, "#tree text.name")}
    assert tree_names == set(names)  # every prompt is a leaf of the prefix tree
    assert browser.find_element(By.ID, "shown").text == f"{len(names)} of {len(names)} prompts shown"
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, height)
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("UPDATE_SCREENSHOT"):
        shutil.copy(shot, ROOT / "docs" / "report.png")
    # the filter is the page's only script: typing hides the other prompts
    browser.find_element(By.ID, "filter").send_keys("helpdesk")
    visible = [
        el.get_attribute("data-name") for el in browser.find_elements(By.CSS_SELECTOR, ".prompt") if el.is_displayed()
    ]
    assert (
        visible == [n for n in names if "helpdesk" in n] == ["helpdesk/agent", "helpdesk/escalate", "helpdesk/triage"]
    )
    assert browser.find_element(By.ID, "shown").text == f"3 of {len(names)} prompts shown"
    logs = browser.get_log("browser")
    assert logs == [], logs  # no console error, warning or message at all


def test_report_boxes_bars_and_cost_table_as_drawn(browser, tmp_path: Path) -> None:
    """What the browser draws: both lines of every prefix-tree box inside the box; the bar of a
    prompt whose prefix is below its provider's minimum has no block in the cached colour (its card
    says cached 0); the cost table has a requests/day column."""
    from selenium.webdriver.common.by import By

    from promptc.runtime.model import Artifact

    (tmp_path / "traffic.json").write_text('{"support/chat": 12000, "helpdesk/agent": 800, "helpdesk/triage": 3000}')
    result = run_promptc(
        "report", "-o", "report.html", "--out", str(ROOT / "build"), "--traffic", "traffic.json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    browser.get((tmp_path / "report.html").as_uri())
    clipped = browser.execute_script(
        """
        var out = [];
        document.querySelectorAll('#tree g.edge').forEach(function (g) {
          var box = g.querySelector('rect').getBBox();
          g.querySelectorAll('text').forEach(function (t) {
            var b = t.getBBox();
            if (b.y < box.y - 0.5 || b.y + b.height > box.y + box.height + 0.5) { out.push(t.textContent); }
          });
        });
        return [out, document.querySelectorAll('#tree g.edge').length];
        """
    )
    assert clipped[1] > 0 and clipped[0] == [], clipped
    manifest = json.loads((ROOT / "build/manifest.json").read_text())
    for name in manifest["artifacts"]:
        artifact = Artifact.from_json(json.loads((ROOT / "build" / manifest["artifacts"][name]["path"]).read_text()))
        card = browser.find_element(By.CSS_SELECTOR, f'.prompt[data-name="{name}"]')
        colours = browser.execute_script(
            "return Array.prototype.map.call(arguments[0].querySelectorAll('rect.block'),"
            " function (r) { return getComputedStyle(r).fill; });",
            card,
        )
        stable = browser.execute_script(
            "return getComputedStyle(document.documentElement).getPropertyValue('--stable').trim();"
        )
        painted_cached = [c for c in colours if c in ("rgb(46, 125, 50)", stable)]
        if artifact.cache.cacheable_tokens == 0:
            assert "cached 0 tokens" in card.text and painted_cached == [], (name, colours)
        elif artifact.cache.cacheable_tokens:
            assert painted_cached, (name, colours)
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#cost thead th")]
    assert headers[:2] == ["prompt", "requests/day"]
    rows = {
        tr.find_element(By.CSS_SELECTOR, "td").text: [td.text for td in tr.find_elements(By.CSS_SELECTOR, "td")]
        for tr in browser.find_elements(By.CSS_SELECTOR, "#cost tbody tr")
    }
    assert rows["support/chat"][1] == "12,000" and rows["helpdesk/triage"][1] == "3,000"
    assert browser.get_log("browser") == []
