"""The results viewer in a real browser (headless Chromium, Selenium): the static site built by
``vibecheck view --out`` from a real run of the shipped 0.5B replay with every protocol.

The values asserted (counts, reply text, code lines, violation marks, unchanged turns) are
computed from the JSON report the run wrote, so each test checks the page against the data.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from viewer_helpers import chrome, load, replay_run

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.report.viewer.site import item_fragment, page_blob


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The report of a replay run (4 tasks x 7 items) and the static site built from it."""
    work = tmp_path_factory.mktemp("replay")
    report = replay_run(work)
    site = work / "site"
    assert main(["view", str(report), "--out", str(site), "--no-browser", "--bootstrap", "50"]) == 0
    return load(report), site / "index.html"


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    d = chrome()
    try:
        yield d
    finally:
        d.quit()


def _open(driver: Any, index: Path, fragment: str) -> None:
    driver.get(index.as_uri() + fragment)
    for _ in range(100):
        if driver.find_element("tag name", "body").get_attribute("data-ready") == "1":
            return
        time.sleep(0.05)
    raise AssertionError(f"the viewer did not start: {driver.get_log('browser')}")


def _wait(driver: Any, css: str, text_start: str = "") -> Any:
    """The element at ``css`` once it exists (and its text starts with ``text_start``): after a
    click, the page changes on the next hashchange event."""
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d: Any) -> Any:
        els = d.find_elements("css selector", css)
        return els[0] if els and els[0].text.startswith(text_start) else False

    return WebDriverWait(driver, 20).until(found)


def _errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _final_violations(item: dict[str, Any]) -> list[dict[str, Any]]:
    return [x for v in item["turns"][-1]["verdicts"] for x in v["violations"]]


def _multi_with_violations(report: dict[str, Any]) -> dict[str, Any]:
    return next(
        i for i in report["items"]
        if i["protocol"] == "multi" and i["k"] == 5 and _final_violations(i)
        and any(v["passed"] is False for v in i["turns"][-1]["verdicts"])
    )  # fmt: skip


def test_filter_to_an_instruction_and_open_an_item(run: tuple[dict[str, Any], Path], driver: Any) -> None:
    from selenium.webdriver.support.ui import Select

    report, index = run
    item = _multi_with_violations(report)
    failed = next(v["id"] for v in item["turns"][-1]["verdicts"] if v["passed"] is False)
    expected = [
        i["nodeid"] for i in report["items"]
        if i["turns"] and any(v["id"] == failed and v["passed"] is False for v in i["turns"][-1]["verdicts"])
    ]  # fmt: skip
    _open(driver, index, "#/items")
    assert driver.find_element("id", "item-count").text == f"{len(report['items'])} of {len(report['items'])} items"
    Select(driver.find_element("id", "filter-instr")).select_by_value(failed)
    assert driver.find_element("id", "item-count").text == f"{len(expected)} of {len(report['items'])} items"
    rows = driver.find_elements("css selector", "#item-list a.vrow")
    assert sorted(r.get_attribute("data-nodeid") for r in rows) == sorted(expected)
    assert f"instr={failed}" in driver.current_url  # the filter is in the URL: a shareable link
    next(r for r in rows if r.get_attribute("data-nodeid") == item["nodeid"]).click()

    final = item["turns"][-1]
    section = _wait(driver, f"#turn-{final['turn']}")
    assert driver.current_url.endswith(item_fragment(item["nodeid"]))
    # the reply as sent
    reply = section.find_element("css selector", "pre.reply").get_attribute("textContent")
    assert reply == final["reply"]
    # the extracted code, one row per line
    code_rows = section.find_elements("css selector", ".code:not(.diff) .line .src")
    assert [r.get_attribute("textContent") for r in code_rows] == [
        line or " " for line in final["code"].rstrip("\n").split("\n")
    ]
    # every violation of the final turn marked on its line, with rule and message
    expected_marks = sorted((x["rule"], str(x["line"])) for x in _final_violations(item))
    notes = section.find_elements("css selector", ".code:not(.diff) .vnote")
    assert sorted((n.get_attribute("data-rule"), n.get_attribute("data-line")) for n in notes) == expected_marks
    marked = {r.get_attribute("data-line") for r in section.find_elements("css selector", ".code:not(.diff) .line.vio")}
    assert marked == {str(x["line"]) for x in _final_violations(item) if x["line"] <= len(code_rows)}
    first = _final_violations(item)[0]
    assert any(first["message"] in n.text and first["rule"] in n.text for n in notes)
    assert _errors(driver) == []


def test_multi_turn_item_marks_unchanged_turns_and_diffs(run: tuple[dict[str, Any], Path], driver: Any) -> None:
    report, index = run
    multi = [i for i in report["items"] if i["protocol"] == "multi" and i["k"] == 5]
    item = next(
        i for i in multi
        if any(a["code"] == b["code"] for a, b in pairwise(i["turns"]))
        and any(a["code"] != b["code"] for a, b in pairwise(i["turns"]))
    )  # fmt: skip
    _open(driver, index, item_fragment(item["nodeid"]))
    turns = item["turns"]
    sections = driver.find_elements("css selector", "section.turn")
    assert [s.get_attribute("data-turn") for s in sections] == [str(t["turn"]) for t in turns]
    unchanged = [str(b["turn"]) for a, b in pairwise(turns) if a["code"] == b["code"]]
    shown = [s.get_attribute("data-turn") for s in sections if s.find_elements("css selector", ".b-unchanged")]
    assert shown == unchanged
    changed = [b for a, b in pairwise(turns) if a["code"] != b["code"]]
    for t in changed:
        diff = driver.find_element("css selector", f"#turn-{t['turn']} .turn-diff .diff")
        assert int(diff.get_attribute("data-changed")) > 0
    # each edit turn shows the one instruction added at that turn
    assert driver.find_element("css selector", "#turn-1 .messages").text.endswith(turns[1]["messages"][-1]["content"])
    assert _errors(driver) == []


def test_compare_two_protocols_of_one_task(run: tuple[dict[str, Any], Path], driver: Any) -> None:
    report, index = run
    by_id = {i["nodeid"]: i for i in report["items"]}
    a = _multi_with_violations(report)
    b = next(i for i in report["items"] if i["task_id"] == a["task_id"] and i["protocol"] == "single" and i["k"] == 5)
    _open(driver, index, item_fragment(a["nodeid"]))
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", "compare-with")).select_by_value(b["nodeid"])
    table = _wait(driver, "#compare-table")
    rows = {r.get_attribute("data-iid"): r for r in table.find_elements("css selector", "tr[data-iid]")}
    ids = {v["id"] for it in (a, b) for v in by_id[it["nodeid"]]["turns"][-1]["verdicts"]}
    assert set(rows) == ids
    for iid, row in rows.items():
        cells = row.find_elements("css selector", "td")
        for it, cell in zip((a, b), cells[1:], strict=True):
            v = next((v for v in it["turns"][-1]["verdicts"] if v["id"] == iid), None)
            want = "not judged" if v is None else ("followed" if v["passed"] else "not followed")
            assert cell.text.endswith(want), (iid, cell.text)
    assert driver.find_elements("css selector", "main > .code.diff")
    assert _errors(driver) == []


def test_overview_one_row_per_group(run: tuple[dict[str, Any], Path], driver: Any) -> None:
    report, index = run
    _open(driver, index, "#/")
    heads = [th.text for th in driver.find_elements("css selector", "#table-overview thead th")]
    for name in ("pass@1", "FR_k", "instruction IF", "task IF", "errors", "no code", "timeouts", "tampered"):
        assert name in heads
    rows = driver.find_elements("css selector", "#table-overview tbody tr")
    assert len(rows) == len(report["aggregates"])
    base = next(g for g in report["aggregates"] if g["protocol"] == "baseline")
    cells = rows[0].find_elements("css selector", "td")
    assert cells[heads.index("pass@1")].text.startswith(f"{100 * base['pass_at_1']:.1f}% [")
    # the analysis tables of `vibecheck report` are on the same page
    assert driver.find_element("id", "table-fr_by_k") and driver.find_element("id", "table-retention")
    rows[0].find_element("css selector", "a").click()  # a group row opens its items
    n = sum(1 for i in report["items"] if i["protocol"] == "baseline")
    assert _wait(driver, "#item-count", f"{n} of ")
    assert _errors(driver) == []


def test_served_viewer_and_item_link(run: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    """``vibecheck view`` serves the same page on 127.0.0.1 (the page, a 404 elsewhere);
    ``--item`` names the item's permalink."""
    report, index = run
    nodeid = report["items"][0]["nodeid"]
    src = index.parent.parent / "r.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_vibecheck.cli.main", "view", str(src), "--port", "0",
         "--no-browser", "--bootstrap", "0", "--item", nodeid],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = ""
        while not line.startswith("serving"):
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
        url = line.split(" at ", 1)[1].split(" ", 1)[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith(item_fragment(nodeid))
        with urllib.request.urlopen(url.split("#", 1)[0], timeout=10) as resp:
            page = resp.read().decode("utf-8")
        assert [i["nodeid"] for i in page_blob(page)["items"]] == [i["nodeid"] for i in report["items"]]
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(url.split("#", 1)[0] + "other", timeout=10)
    finally:
        proc.terminate()
        proc.wait(10)
