"""Helpers of the viewer tests and benchmark: a real replay run, and headless Chromium.

The browser is Debian's ``chromium`` with its ``chromedriver`` (``apt-get install chromium
chromium-driver``; ``.ci/run`` installs them), driven by Selenium with the driver's path given,
so Selenium never downloads anything. Without them the browser tests are skipped, unless
``VIBECHECK_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPLAY = "replay:qwen2.5-coder-0.5b-instruct-q4"

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser_paths() -> tuple[str, str] | None:
    """(browser, chromedriver) executables found on PATH, or None."""
    browser = next((p for p in map(shutil.which, BROWSERS) if p), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def chrome(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium WebDriver; skips (or fails under ``VIBECHECK_REQUIRE_BROWSER=1``)
    when Selenium, Chromium or chromedriver is missing."""
    paths = browser_paths()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        paths = None
    if paths is None:
        why = "headless Chromium tests need selenium, chromium and chromedriver (apt-get install chromium chromium-driver)"
        if os.environ.get("VIBECHECK_REQUIRE_BROWSER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    opts = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--disable-extensions", "--no-first-run"):  # fmt: skip
        opts.add_argument(arg)
    opts.binary_location = paths[0]
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=opts, service=Service(paths[1]))


def replay_run(work: Path, *, limit: int = 4, extra: tuple[str, ...] = ()) -> Path:
    """Run the shipped 0.5B replay (every protocol, k = 1, 3, 5, the first ``limit`` tasks of
    bigvibebench-lite) in ``work`` through the real plugin; returns the JSON report's path."""
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    report = work / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no", "--rootdir", str(work),
         f"--vibe-model={REPLAY}", "--vibe-suite=bigvibebench-lite", f"--vibe-limit={limit}",
         "--vibe-protocol=baseline,single,multi", "--vibe-k=1,3,5", "--vibe-no-fail-items",
         f"--vibe-report={report}", *extra],
        cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert report.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return report


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
