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
