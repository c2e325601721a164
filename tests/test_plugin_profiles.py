"""Issue 14: ``--vibe-profile`` end to end on a two-problem LiveCodeBench-style suite.

A scripted model answers; its request log shows the exact messages and temperature each
profile sends, and the report shows each item's profile and verdict under that profile's
grading rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import fenced, report_items, write_script, write_tiny_suite

from pytest_vibecheck.execute.spec import TestCase, TestSpec
from pytest_vibecheck.generate import protocols
from pytest_vibecheck.report.records import ReportItem
from pytest_vibecheck.suites import queries
from pytest_vibecheck.suites.problem import InstructionRef, Problem
from pytest_vibecheck.suites.store import write_suite

STARTER = "class Solution:\n    def double(self, x: int) -> int:\n        "
PAPER_FUNC = "def solve(x):\n    return 2 * x\n"
LCB_FUNC = "class Solution:\n    def double(self, x: int) -> int:\n        return 2 * x\n"
STDIN = "import sys\nprint(f\"{int(sys.stdin.buffer.read()) / 2:.2f}\")\n"  # 1.50, expected 1.5


def _live_suite(folder: Path) -> None:
    problems = [
        Problem(
            suite="live",
            task_id="f/1",
            prompt="Return twice x.",
            test=TestSpec(kind="functional", cases=(TestCase("3", "6"),), entry_point="double"),
            entry_point="double",
            starter_code=STARTER,
            instructions=(InstructionRef("doc_4", {}),),
        ),
        Problem(
            suite="live",
            task_id="s/1",
            prompt="Print half of N.",
            test=TestSpec(kind="stdin", cases=(TestCase("3\n", "1.5\n"),)),
            instructions=(InstructionRef("doc_6", {}),),
        ),
    ]
    write_suite(
        folder, problems, name="live", description="two LiveCodeBench-style problems",
        source="tests/test_plugin_profiles.py", licence="Apache-2.0", attribution="tests",
        selector="manual", seed=None, k=1, compress=False,
        extra={"generation": {"temperature": 0.2, "system_prompt": protocols.PAPER_LIVE_SYSTEM_PROMPT}},
    )


@pytest.fixture
def live(pytester: pytest.Pytester) -> pytest.Pytester:
    _live_suite(pytester.path / "suite")
    return pytester


def _run(pt: pytest.Pytester, mp: pytest.MonkeyPatch, *args: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    log = pt.path / "requests.jsonl"
    log.unlink(missing_ok=True)
    script = write_script(
        pt.path / "script.json", "bot",
        rules=[
            {"task_id": "f/1", "contains": "solve()", "reply": fenced(PAPER_FUNC)},
            {"task_id": "f/1", "reply": fenced(LCB_FUNC)},
            {"task_id": "s/1", "reply": fenced(STDIN)},
        ],
        default=None, log=log,
    )
    mp.setenv("VIBECHECK_SCRIPTED", str(script))
    pt.runpytest("--vibe-model", "scripted:bot", "--vibe-suite", "suite", "--vibe-k", "1",
                 "--vibe-report", "r.json", "--vibe-cache-mode", "off", "-p", "no:randomly", *args)
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    return requests, json.loads((pt.path / "r.json").read_text())


def _by(report: dict[str, Any]) -> dict[tuple[str, str], ReportItem]:
    return {(i["task_id"], i["protocol"]): i for i in report_items(report)}


def test_paper_profile_prompts_temperature_and_grading(live: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    requests, report = _run(live, monkeypatch)
    base = {r["task_id"]: r for r in requests if r["label"] == "baseline"}
    func_problem = Problem(suite="live", task_id="f/1", prompt="Return twice x.",
                           test=TestSpec(kind="functional"), starter_code=STARTER)
    assert base["f/1"]["messages"] == [
        {"role": "system", "content": protocols.PAPER_LIVE_SYSTEM_PROMPT},
        {"role": "user", "content": queries.paper_query(func_problem)},
    ]
    assert {r["temperature"] for r in requests} == {0.2}  # the manifest's
    single = next(r for r in requests if r["task_id"] == "s/1" and r["label"] == "single-k1")
    assert single["messages"][-1]["content"].endswith(
        "\n\nAdditionally, ensure your code meets the following requirement: "
        "After the Python code block, add exactly one JSON code block that explains the code, "
        "and nothing else."
    )
    items = _by(report)
    assert {(i["profile"], i["temperature"]) for i in report_items(report)} == {("paper", 0.2)}
    assert report["run"]["settings"]["profile"] == "paper"
    assert len(items) == 6  # baseline, single, multi for both problems
    assert items[("f/1", "baseline")]["turns"][0]["tests"]["status"] == "passed"  # solve()
    stdin = items[("s/1", "baseline")]["turns"][0]["tests"]
    assert stdin["status"] == "failed"  # "1.50" is not "1.5" under the paper's exact rule
    assert stdin["message"] == "case 0: line 1: got '1.50', expected '1.5' (paper rule)"


def test_lcb_profile_prompts_temperature_and_grading(live: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    requests, report = _run(live, monkeypatch, "--vibe-profile", "lcb", "--vibe-temperature", "0.7")
    assert sorted((r["task_id"], r["label"]) for r in requests) == [("f/1", "baseline"), ("s/1", "baseline")]
    stdin_problem = Problem(suite="live", task_id="s/1", prompt="Print half of N.", test=TestSpec(kind="stdin"))
    s1 = next(r for r in requests if r["task_id"] == "s/1")
    assert s1["messages"] == [
        {"role": "system", "content": protocols.LCB_SYSTEM_PROMPT},
        {"role": "user", "content": queries.lcb_query(stdin_problem)},
    ]
    assert {r["temperature"] for r in requests} == {0.7}  # the setting beats the profile
    items = _by(report)
    assert {i["profile"] for i in report_items(report)} == {"lcb"}
    assert items[("f/1", "baseline")]["turns"][0]["tests"]["status"] == "passed"  # Solution().double
    assert items[("s/1", "baseline")]["turns"][0]["tests"]["status"] == "passed"  # Decimal 1.50 == 1.5


def test_lcb_profile_refuses_other_suites_and_protocols(pytester: pytest.Pytester) -> None:
    write_tiny_suite(pytester.path / "suite")
    result = pytester.runpytest("--vibe-model", "reference", "--vibe-suite", "suite", "--vibe-profile", "lcb")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*profile 'lcb' (*) does not apply to tests of kind humaneval; use --vibe-profile=paper*"])
    _live_suite(pytester.path / "live")
    result = pytester.runpytest("--vibe-model", "reference", "--vibe-suite", "live", "--vibe-profile", "lcb",
                                "--vibe-protocol", "single")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*profile 'lcb' runs only baseline*drop single*"])
