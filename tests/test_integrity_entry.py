"""Verdict integrity through `vibecheck exec` and the plugin: a model whose code tampers with
its tests gets pass@1 = 0 and a tampered count equal to the number of items, shown in the
terminal summary, the JSON report, JUnit and the HTML report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from exec_helpers import bcb_problem
from integrity_cases import CASES, problem_for
from junitparser import JUnitXml
from plugin_helpers import fenced, report_items, write_script

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.execute import sandbox
from pytest_vibecheck.report.json_report import load_report
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.store import write_suite

pytestmark = pytest.mark.skipif(
    sandbox.capabilities().mode == "process" or not sys.platform.startswith("linux"),
    reason="needs Linux namespaces",
)

#: A reply that tampers (reads every object through the garbage collector, which the sandbox
#: refuses and records, in a test kind that shares the candidate's interpreter) and is wrong.
TAMPERING_REPLY = fenced(
    "import gc\n"
    "try:\n    gc.get_objects()\nexcept RuntimeError:\n    pass\n"
    "def task_func(x):\n    return x\n"
)


def _mini_suite(tmp_path: Path, problems: list[Problem]) -> Path:
    fixed = [
        Problem(**{**p.__dict__, "suite": "mini", "task_id": f"mini/{n}"})
        for n, p in enumerate(problems)
    ]
    folder = tmp_path / "suite"
    write_suite(folder, fixed, name="mini", description="integrity", source="tests",
                licence="Apache-2.0", attribution="tests", selector="none", seed=None, k=0)
    return folder


@pytest.mark.parametrize(
    "case_id",
    ["channel-spray-import-bcb", "framework-always-equal-fn", "error-fake-boot-failure-he",
     "error-fake-missing-module-stdin"],
)
def test_vibecheck_exec_reports_the_exact_status(
    case_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case = next(c for c in CASES if c.id == case_id)
    monkeypatch.chdir(tmp_path)
    suite = _mini_suite(tmp_path, [problem_for(case.kind)])
    code = tmp_path / "candidate.py"
    code.write_text(case.code, encoding="utf-8")
    # the functional cases are written in LiveCodeBench's form: the lcb rule calls Solution()
    profile = ["--profile", "lcb"] if case.kind == "functional" else []
    rc = main(["exec", "--suite", str(suite), "--task", "mini/0", "--code", str(code), "--json",
               "--time-limit", "5", *profile])
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == case.expected
    assert rc == 1  # a model failure, never 3 (error/skipped) and never 0
    if case.expected == "tampered":
        assert out["tamper"] and out["message"].startswith("tampered with its tests: ")


def test_plugin_counts_tampering_as_failure_per_model(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _mini_suite(pytester.path, [bcb_problem()] * 3)
    folder.rename(pytester.path / "suite")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    script = write_script(pytester.path / "script.json", "cheat", default=TAMPERING_REPLY)
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = pytester.runpytest(
        "--vibe-model", "scripted:cheat", "--vibe-suite", "suite", "-p", "no:randomly",
        "--vibe-protocol", "baseline", "--vibe-report", "r.json", "--vibe-junitxml", "j.xml",
    )
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "*tests: tampered*",
        "*= vibecheck summary =*",
        "suite*model*protocol*k*n*pass@1*FR_k*instr-IF*task-IF*errors*no-code*timeouts*tampered*cache-hit",
        "mini*scripted:cheat*baseline*0*3*0.0%*-*0*0*0*3*",
    ])
    report = load_report(pytester.path / "r.json")
    (g,) = report["aggregates"]
    assert (g["pass_at_1"], g["tampered"], g["evaluated"], g["errors"]) == (0.0, 3, 3, 0)
    assert {i["turns"][0]["tests"]["status"] for i in report_items(report)} == {"tampered"}
    xml = JUnitXml.fromfile(str(pytester.path / "j.xml"))
    # junitparser 5 leaves TestSuite.properties() unannotated
    props = {p.name: p.value for suite in xml for p in suite.properties()}  # type: ignore[no-untyped-call]
    assert props["tampered"] == "3"
    # the HTML report (vibecheck report) shows the count per model in its overview
    assert main(["report", str(pytester.path / "r.json"), "--out", str(pytester.path / "an"),
                 "--no-plots"]) == 0
    html = (pytester.path / "an" / "report.html").read_text(encoding="utf-8")
    assert '{"key":"tampered","label":"tampered","kind":"int"}' in html
    head, row = (pytester.path / "an" / "overview.csv").read_text(encoding="utf-8").splitlines()[:2]
    assert dict(zip(head.split(","), row.split(","), strict=True))["tampered"] == "3"
