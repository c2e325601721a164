"""Render both JUnit files of a real run in two third-party viewers and screenshot them.

    python scripts/junit_screenshots.py --out /tmp/junit-shots [--xunit-viewer PATH] [--limit 10]

1. Runs the benchmark on the shipped replay of Qwen2.5-Coder-0.5B-Instruct (real replies, no
   server): BigVibeBench-Lite, ``--vibe-limit`` tasks, baseline and single-turn k = 1, with
   ``--vibe-fail-under pass@1=0.5,task_if=0.9`` (so one gate fails), writing pytest's own
   ``--junitxml`` (``pytest.xml``) and the plugin's ``--vibe-junitxml`` (``vibe.xml``).
2. Renders each file with xunit-viewer (npm: ``npm install xunit-viewer``; pass its binary with
   ``--xunit-viewer``, default ``xunit-viewer`` on PATH) and junit2html (PyPI, the ``viewers``
   extra of pyproject.toml).
3. Takes a PNG of the top of each page with headless Chromium (Debian's ``chromium``, driven by
   Playwright from PyPI without a browser download), and for ``vibe.xml`` a second one scrolled
   to the ``vibecheck thresholds`` suite (xunit-viewer orders suites its own way and draws them
   only when scrolled near).

Prints the PNG paths; exits 2 when a viewer or Chromium is missing or fails.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_vibecheck.report.junit import THRESHOLD_SUITE

ROOT = Path(__file__).resolve().parent.parent


def _need(cmd: str) -> str:
    here = Path(sys.executable).parent / cmd  # a console script of this virtual environment
    path = shutil.which(cmd) or (cmd if Path(cmd).is_file() else None) or (str(here) if here.is_file() else None)
    if path is None:
        raise SystemExit(f"junit_screenshots: {cmd} not found (see the module docstring)")
    return path


def _run(argv: list[str], cwd: Path) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n", file=sys.stderr)
        raise SystemExit(2)


def run_benchmark(out: Path, limit: int) -> tuple[Path, Path]:
    """The two JUnit files of a small real run (exit status 1: the task_if gate fails)."""
    pytest_xml, vibe_xml = out / "pytest.xml", out / "vibe.xml"
    argv = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no",
        "--vibe-model=replay:qwen2.5-coder-0.5b-instruct-q4", "--vibe-suite=bigvibebench-lite",
        f"--vibe-limit={limit}", "--vibe-protocol=baseline,single", "--vibe-k=1",
        "--vibe-no-fail-items", "--vibe-fail-under", "pass@1=0.2,task_if=0.9",
        f"--vibe-cache={out / 'cache.sqlite'}",
        f"--junitxml={pytest_xml}", f"--vibe-junitxml={vibe_xml}", f"--vibe-report={out / 'vibe.json'}",
    ]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    print(proc.stdout[-1500:])
    if not (pytest_xml.is_file() and vibe_xml.is_file()):
        print(proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(2)
    return pytest_xml, vibe_xml


#: Scrolls the first element whose text contains the argument to the top of the window; false
#: when it is not in the page yet (xunit-viewer draws a suite only once it is scrolled near).
_SCROLL_TO = """t => {
  const x = document.evaluate(`//*[text()[contains(., '${t}')]]`, document, null,
                              XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue;
  if (!x) return false;
  x.scrollIntoView({block: 'start'}); window.scrollBy(0, -40); return true;
}"""


def screenshots(chromium: str, html: Path, height: int, *, also: str | None = None) -> list[Path]:
    """A PNG of the top of ``html``; with ``also``, a second one scrolled to the first element
    whose text contains it (``NAME.top.png``, ``NAME.also.png``). Playwright drives the system
    Chromium (no browser download)."""
    from playwright.sync_api import sync_playwright

    out = [html.with_suffix(".top.png")]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": height})
        page.goto(html.as_uri())
        page.wait_for_timeout(1500)
        page.screenshot(path=str(out[0]))
        if also is not None:
            for _ in range(400):
                if page.evaluate(_SCROLL_TO, also):
                    break
                page.mouse.wheel(0, 3000)
                page.wait_for_timeout(100)
            page.wait_for_timeout(800)
            if page.evaluate(_SCROLL_TO, also):  # again, after the page settled
                page.wait_for_timeout(800)
                out.append(html.with_suffix(".also.png"))
                page.screenshot(path=str(out[1]))
        browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--xunit-viewer", default="xunit-viewer")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--height", type=int, default=1300)
    args = ap.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    xunit, j2h, chromium = _need(args.xunit_viewer), _need("junit2html"), _need("chromium")
    shots = []
    for xml in run_benchmark(out, args.limit):
        for viewer in ("xunit-viewer", "junit2html"):
            html = out / f"{xml.stem}.{viewer}.html"
            if viewer == "xunit-viewer":
                _run([xunit, "-r", str(xml), "-o", str(html), "-t", f"{xml.name} in xunit-viewer"], out)
            else:
                _run([j2h, str(xml), str(html)], out)
            also = THRESHOLD_SUITE if xml.name == "vibe.xml" else None
            shots += screenshots(chromium, html, args.height, also=also)
    for png in shots:
        print(png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
