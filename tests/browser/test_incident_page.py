"""The incident page in a real browser: Debian's headless Chromium, driven by selenium through chromedriver,
loading the page from uvicorn on 127.0.0.1. It checks what a person sees: the initiating marker on rank 37's row
of the timeline, and that the copy button puts the exact verification command on the system clipboard (read back
with navigator.clipboard.readText, permission granted through the DevTools protocol)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas.incident import Incident
from store.incidents import Store
from tests.api.conftest import history_app
from tests.api.seed import HISTORY, seed_history
from tests.api.server import serving

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCREENSHOTS = os.environ.get("FIRSTFAULT_SCREENSHOTS")  # a directory to keep the screenshots in, if set

pytestmark = pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
                                reason="needs Debian's chromium and chromium-driver (.ci/run installs them)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Incident]]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('browser') / 'firstfault.db'}"
    store = Store.open(url)
    jobs = [j for j in HISTORY if j.job_id in ("train-oom-1", "train-xid-2")]
    seeded = seed_history(store, tmp_path_factory.mktemp("browser-logs"), jobs)
    with serving(history_app(store, url)) as base:
        yield base, seeded
    store.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1280,1700",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _centre_y(browser: Any, script: str) -> float:
    rect = browser.execute_script(f"const r = ({script}).getBoundingClientRect(); return [r.top, r.height];")
    return float(rect[0]) + float(rect[1]) / 2


def _screenshot(browser: Any, tmp_path: Path, name: str) -> Path:
    target = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    target.mkdir(parents=True, exist_ok=True)
    path = target / name
    assert browser.save_screenshot(str(path))
    assert path.stat().st_size > 10_000  # a rendered page, not a blank frame
    return path


def test_the_timeline_marks_the_initiating_rank(browser: Any, site: tuple[str, dict[str, Incident]],
                                                tmp_path: Path) -> None:
    base, seeded = site
    browser.get(f"{base}/incidents/{seeded['train-oom-1'].id}")
    marker = browser.find_element("css selector", "svg.timeline g.event.initiating")
    assert marker.get_attribute("data-rank") == "37"
    assert marker.is_displayed()
    # drawn on rank 37's row, as the eye reads it: same height on screen as the row's label
    marker_y = _centre_y(browser, "document.querySelector('svg.timeline g.event.initiating path')")
    label_y = _centre_y(browser, "[...document.querySelectorAll('svg.timeline .rowlabel')]"
                                 ".find(t => t.textContent === 'rank 37')")
    assert abs(marker_y - label_y) < 6
    collateral = browser.find_elements("css selector", "svg.timeline g.event.collateral")
    assert len(collateral) >= 63
    colours = {browser.execute_script("return getComputedStyle(arguments[0]).fill", g) for g in (marker,
                                                                                               collateral[0])}
    assert len(colours) == 2  # the initiator and the collateral are told apart by colour
    _screenshot(browser, tmp_path, "incident-oom.png")


def test_the_copy_button_puts_the_verification_command_on_the_clipboard(
        browser: Any, site: tuple[str, dict[str, Incident]], tmp_path: Path) -> None:
    base, seeded = site
    incident = seeded["train-xid-2"]
    browser.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    browser.get(f"{base}/incidents/{incident.id}")
    button = browser.find_element("css selector", "button[data-copy-target='verify-cmd']")
    button.click()  # a real click: the user gesture the clipboard API asks for
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(lambda b: button.text == "Copied")
    pasted = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "navigator.clipboard.readText().then(done, e => done('refused: ' + e));")
    assert pasted == incident.diagnosis.verification
    _screenshot(browser, tmp_path, "incident-xid-copied.png")
