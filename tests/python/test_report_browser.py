"""The reports as a person sees them: `cellcc reproduce --all --quick`, then every page
opened in headless Chromium. Every page must load without console errors and every
figure must render (an image that failed to load has no natural width).

Needs Debian's `chromium` and `chromium-driver` (`make test` installs them when run as
root) and the shared traces; skips and says why when either is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _driver():
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip("headless Chromium is not installed (Debian chromium, chromium-driver)")
    # Selenium must not try to fetch a browser or driver from the network.
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(driver))


def test_every_reproduction_report_renders_without_errors(shared_traces, tmp_path):
    out = tmp_path / "reproduce"
    run = subprocess.run(
        [sys.executable, "-m", "cellcc", "reproduce", "--all", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    pages = [out / "index.html", *sorted(out.glob("*/index.html"))]
    assert len(pages) > 20, pages
    browser = _driver()
    try:
        figures = 0
        for page in pages:
            browser.get(Path(page).as_uri())
            errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            assert not errors, f"{page}: {errors}"
            images = browser.execute_script(
                "return Array.from(document.images).map("
                "i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0]);"
            )
            broken = [src for src, ok in images if not ok]
            assert not broken, f"{page}: figures that did not render: {broken}"
            figures += len(images)
            title = browser.title
            assert title, f"{page}: no title"
        print(f"{len(pages)} pages, {figures} figures rendered in headless Chromium")
        assert figures >= len(pages) - 1
    finally:
        browser.quit()
