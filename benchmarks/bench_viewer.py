#!/usr/bin/env python3
"""The results viewer on a full BigVibeBench report, in headless Chromium (issue 13).

Workload: a 3,420-item report, all 1,140 BigVibeBench tasks x (baseline, single-turn k = 5,
multi-turn k = 5), made by the real pipeline (``pytest --vibe-model=reference``: the reference
model answers every turn with the task's reference solution; tests run in the sandbox, or are
skipped where this environment lacks a library), plus the real replies of the shipped 0.5B
replay (``replay:qwen2.5-coder-0.5b-instruct-q4``, 30 tasks x 7 items, every protocol) as a
second report. The page is built with ``vibecheck view --out`` and opened from disk.

Measured in the same browser, same run:
  load     navigation start -> the viewer is ready (data parsed, overview drawn), for
           A. the floor: a page with the same JSON blob that only parses it;
           B. the viewer: the same data, prepared and the overview drawn;
  filter   one filter change through the UI's own handler (filter, sort, draw the rows in
           view, layout forced), for
           C. the viewer (virtualised list: only the rows in view exist);
           D. the naive baseline: the same filter, then every matching row drawn as a table row
              (what a list without virtualisation does);
           each filter alone, from no filter;
  memory   JS heap after load and after the filters; peak RSS (VmHWM) of the browser's
           processes.
Also at 10,260 items (the 3,420 repeated three times under three model names) for scale.

Targets: load < 2 s, filter < 200 ms. Prints milliseconds and ratios.
Usage: python benchmarks/bench_viewer.py [--report REF.json] [--work DIR]
  (without --report, the reference run is made first: minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from viewer_helpers import chrome, replay_run  # noqa: E402

from pytest_vibecheck.cli.main import main as vibecheck  # noqa: E402
from pytest_vibecheck.report.viewer.site import page_blob  # noqa: E402

FILTERS: list[tuple[str, str, str]] = [
    ("failed instruction", "instr", "style_3"),
    ("failed category", "cat", "doc"),
    ("protocol", "protocol", "multi"),
    ("text in code (first: builds the index)", "q", "import os"),
    ("text in code (again)", "q", "def task_func"),
    ("no filter (every item drawn)", "q", ""),
]


def reference_run(work: Path) -> Path:
    """The 3,420-item reference report (the real pipeline), ``work/ref.json``."""
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    report = work / "ref.json"
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no", "--rootdir", str(work),
         "--vibe-model=reference", "--vibe-suite=bigvibebench", "--vibe-protocol=baseline,single,multi",
         "--vibe-k=5", "-n", "2", "--vibe-no-fail-items", f"--vibe-report={report}"],
        cwd=work, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    print(f"reference run: {time.perf_counter() - t0:.0f} s")
    return report


def repeated(report: Path, out: Path, times: int) -> Path:
    """``report`` with its items repeated ``times`` times under distinct model names."""
    data = json.loads(report.read_text(encoding="utf-8"))
    items = []
    for n in range(times):
        for it in data["items"]:
            copy = dict(it)
            copy["model"] = f"{it['model']}-copy{n}"
            copy["nodeid"] = it["nodeid"].replace("[", f"[copy{n}-", 1)
            items.append(copy)
    from pytest_vibecheck.report.aggregate import aggregate
    from pytest_vibecheck.report.records import ReportItem

    data["items"] = items
    data["aggregates"] = aggregate(cast("list[ReportItem]", items))  # JSON read back above
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def floor_page(index: Path, out: Path) -> Path:
    """A page with the viewer's JSON blob that only parses it (the load floor)."""
    page = index.read_text(encoding="utf-8")
    blob = json.dumps(page_blob(page, resolve=False), separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")
    out.write_text(
        '<!DOCTYPE html><html><body><script type="application/json" id="d">' + blob + "</script><script>"
        "var d=JSON.parse(document.getElementById('d').textContent);"
        "window.readyAt=performance.now();document.body.setAttribute('data-ready','1');</script></body></html>",
        encoding="utf-8",
    )
    return out


def _wait_ready(driver: Any) -> None:
    for _ in range(600):
        if driver.execute_script("return document.body && document.body.getAttribute('data-ready')") == "1":
            return
        time.sleep(0.02)
    raise RuntimeError("page did not become ready")


def load_ms(driver: Any, url: str, viewer: bool) -> float:
    driver.get("about:blank")
    driver.get(url)
    _wait_ready(driver)
    expr = "window.vibecheckViewer.readyAt" if viewer else "window.readyAt"
    return float(driver.execute_script(f"return {expr}"))


NAIVE = """
var f = {}; f[arguments[0]] = arguments[1];
var t0 = performance.now();
var r = window.vibecheckViewer.filter(f);
var rows = window.vibecheckViewer.rows(f);
var table = document.createElement('table');
for (var i = 0; i < rows.length; i++) {
  var it = rows[i], tr = document.createElement('tr');
  [it.outcome, it._status, it._failed.join(' '), it.suite, it.task_id, it.model, it.protocol, it.k]
    .forEach(function (v) { var td = document.createElement('td'); td.textContent = v; tr.appendChild(td); });
  table.appendChild(tr);
}
var old = document.getElementById('naive'); if (old) old.remove();
table.id = 'naive'; document.body.appendChild(table);
void document.body.offsetHeight;
return performance.now() - t0;
"""

VIEWER = """
window.vibecheckViewer.clearFilters();
var t0 = performance.now();
window.vibecheckViewer.setFilter(arguments[0], arguments[1]);
void document.body.offsetHeight;
return performance.now() - t0;
"""


def heap_mb(driver: Any) -> float:
    driver.execute_cdp_cmd("Performance.enable", {})
    metrics = driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
    used = next(m["value"] for m in metrics if m["name"] == "JSHeapUsedSize")
    return float(used) / 1e6


def peak_rss_mb(driver: Any) -> float:
    """Sum of VmHWM over the browser's processes (descendants of chromedriver)."""
    root = driver.service.process.pid
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    total, todo = 0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def measure(label: str, reports: list[Path], work: Path, repeats: int) -> None:
    site = work / f"site-{label}"
    t0 = time.perf_counter()
    assert vibecheck(["view", *map(str, reports), "--out", str(site), "--no-browser", "--bootstrap", "200"]) == 0
    build_s = time.perf_counter() - t0
    index = site / "index.html"
    floor = floor_page(index, work / f"floor-{label}.html")
    n = len(page_blob(index.read_text(encoding="utf-8"))["items"])
    print(f"\n== {label}: {n} items, page {index.stat().st_size / 1e6:.1f} MB, built in {build_s:.1f} s")
    driver = chrome(1400, 1000)
    try:
        driver.get("about:blank")
        blank_rss = peak_rss_mb(driver)
        floors = [load_ms(driver, floor.as_uri(), False) for _ in range(repeats)]
        loads = [load_ms(driver, index.as_uri() + "#/", True) for _ in range(repeats)]
        a, b = statistics.median(floors), statistics.median(loads)
        print(f"load   A floor (parse only) {a:7.0f} ms   B viewer {b:7.0f} ms   B/A {b / a:.2f}   (target < 2000 ms)")
        driver.get(index.as_uri() + "#/items")
        _wait_ready(driver)
        heap_loaded = heap_mb(driver)
        for name, key, value in FILTERS:
            c = statistics.median([driver.execute_script(VIEWER, key, value) for _ in range(repeats)])
            count = driver.find_element("id", "item-count").text
            d = statistics.median([driver.execute_script(NAIVE, key, value) for _ in range(repeats)])
            print(f"filter {name:40s} C viewer {c:6.1f} ms   D naive full list {d:7.1f} ms   D/C {d / c:5.1f}   ({count})")
        print(f"memory JS heap {heap_loaded:.0f} MB after load, {heap_mb(driver):.0f} MB after the filters; "
              f"peak RSS of the browser's processes {peak_rss_mb(driver):.0f} MB "
              f"(a blank page: {blank_rss:.0f} MB)")  # fmt: skip
    finally:
        driver.quit()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--report", type=Path, help="an existing 3,420-item reference report (skips the run)")
    p.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--scale", type=int, default=3, help="also the report repeated N times (0: skip)")
    args = p.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    work.mkdir(parents=True, exist_ok=True)
    ref = args.report or reference_run(work)
    n_ref = len(json.loads(ref.read_text(encoding="utf-8"))["items"])
    if n_ref != 3420:
        print(f"note: the reference report has {n_ref} items, not 3,420")
    (work / "replay").mkdir(exist_ok=True)
    rep = replay_run(work / "replay", limit=30, extra=("-n", "2"))
    measure("bigvibebench", [ref, rep], work, args.repeats)
    if args.scale > 1:
        measure(f"x{args.scale}", [repeated(ref, work / f"ref-x{args.scale}.json", args.scale)], work, args.repeats)
    return 0


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        sys.exit(main())
    finally:
        print(run_context())
