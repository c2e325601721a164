"""The hostile candidates of ``integrity_families`` (seven families, at least eight cases each,
across the four test kinds) get their exact status through the runner, ``vibecheck exec``, the
plugin and the reward API; none is ever ``passed``, ``error`` or ``skipped``."""

from __future__ import annotations

import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from integrity_families import CASES, FAMILIES, HOST_DIR, HOST_MARKER, Case, problem_of
from plugin_helpers import fenced, report_items, write_script

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.execute import sandbox
from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings
from pytest_vibecheck.report.json_report import load_report
from pytest_vibecheck.reward import RewardConfig, score_batch
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.store import write_suite

pytestmark = pytest.mark.skipif(
    sandbox.capabilities().mode == "process" or not sys.platform.startswith("linux"),
    reason="needs Linux namespaces",
)

#: The layers behind the static screen are tested with it off (the screen would report most
#: in-process cases first); ``test_with_the_screen_on_nothing_passes`` runs them with it on.
SETTINGS = ExecSettings(time_limit_s=8.0, startup_s=10.0, grading="lcb", screen=False)
SCREENED = ExecSettings(time_limit_s=8.0, startup_s=10.0, grading="lcb")

#: Cases whose status depends on which thread the garbage collector happens to run on: the
#: candidate's own (a plain failure) or one of the tests' (the tracer reports it).
EITHER = {"where-finalizer-on-a-cycle": ("failed", "tampered")}


def _missing_libs(case: Case) -> str | None:
    import importlib.util

    return next((lib for lib in case.libs if importlib.util.find_spec(lib) is None), None)


@pytest.fixture(scope="module")
def results() -> dict[str, ExecResult]:
    """Every case run once, two at a time, with a marker file and folder on the host."""
    Path(HOST_MARKER).write_text("host", encoding="utf-8")
    Path(HOST_DIR).mkdir(parents=True, exist_ok=True)
    try:
        cases = [c for c in CASES if _missing_libs(c) is None]
        got = run_many([(c.code, problem_of(c.problem)) for c in cases], SETTINGS, None,
                       workers=2)
    finally:
        Path(HOST_MARKER).unlink(missing_ok=True)
        shutil.rmtree(HOST_DIR, ignore_errors=True)
    return {c.id: r for c, r in zip(cases, got, strict=True)}


def test_every_family_has_at_least_eight_cases_across_the_kinds() -> None:
    kinds = {f: Counter(problem_of(c.problem).test.kind for c in cases)
             for f, cases in FAMILIES.items()}
    assert {f: sum(k.values()) >= 8 for f, k in kinds.items()} == dict.fromkeys(FAMILIES, True)
    assert all(len(k) >= 2 for k in kinds.values()), kinds
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_candidate_gets_its_exact_status(case: Case, results: dict[str, ExecResult]) -> None:
    missing = _missing_libs(case)
    if missing is not None:
        pytest.skip(f"needs {missing}")
    res = results[case.id]
    allowed = EITHER.get(case.id, (case.expected,))
    assert res.status in allowed, (res.status, res.tamper, res.message[:600])
    if res.status == "tampered" and case.reason:
        assert res.tamper and res.tamper[0].startswith(case.reason), res.tamper
    if res.status != "tampered":
        assert res.tamper == ()


def test_with_the_screen_on_nothing_passes(results: dict[str, ExecResult]) -> None:
    """The default settings (the screen on): every case is still a model failure, and the
    in-process cases the screen recognises are ``tampered`` with its reason."""
    from pytest_vibecheck.screen import screen

    cases = [c for c in CASES if _missing_libs(c) is None]
    got = run_many([(c.code, problem_of(c.problem)) for c in cases], SCREENED, None, workers=2)
    bad = {c.id: r.status for c, r in zip(cases, got, strict=True)
           if r.status not in ("failed", "tampered", "timeout")}
    assert bad == {}
    for c, r in zip(cases, got, strict=True):
        p = problem_of(c.problem)
        if p.test.kind == "bigcodebench-unittest" and screen(c.code, task_modules=p.libs):
            assert r.status == "tampered" and r.tamper[0].startswith("line "), (c.id, r.tamper)
        elif p.test.kind != "bigcodebench-unittest":
            assert (r.status, r.tamper) == (results[c.id].status, ()), c.id


def _suite(tmp_path: Path, problems: list[Problem]) -> Path:
    fixed = [Problem(**{**p.__dict__, "suite": "mini", "task_id": f"mini/{n}"})
             for n, p in enumerate(problems)]
    folder = tmp_path / "suite"
    write_suite(folder, fixed, name="mini", description="integrity", source="tests",
                licence="Apache-2.0", attribution="tests", selector="none", seed=None, k=0)
    return folder


#: One case of each family through ``vibecheck exec`` (across the four kinds).
EXEC_CASES = ["reach-proxy-kwdefaults-via-callback", "where-gc-callback",
              "names-humaneval-helper-rebound", "inplace-json-in-functional",
              "values-c-slot-eq", "key-expected-in-memory-stdin", "host-host-run-sockets",
              "reach-monitor-via-proc-stdin"]


@pytest.mark.parametrize("case_id", EXEC_CASES)
def test_vibecheck_exec_gives_the_exact_status(
    case_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = next(c for c in CASES if c.id == case_id)
    monkeypatch.chdir(tmp_path)
    suite = _suite(tmp_path, [problem_of(case.problem)])
    code = tmp_path / "candidate.py"
    code.write_text(case.code, encoding="utf-8")
    rc = main(["exec", "--suite", str(suite), "--task", "mini/0", "--code", str(code), "--json",
               "--time-limit", "8", "--profile", "lcb"])
    out = json.loads(capsys.readouterr().out)
    assert (out["status"], rc) == (case.expected, 1)  # a model failure, never 0 or 3
    if problem_of(case.problem).test.kind == "bigcodebench-unittest" and case.expected == "tampered":
        assert out["tamper"][0].startswith("line ")  # the static screen (on by default) saw it
    elif case.reason:
        assert out["tamper"][0].startswith(case.reason)


#: Cases the plugin and the reward API run (a bigcodebench one of each in-process family, and
#: the by-construction kinds).
MODEL_CASES = ["reach-current-frames", "where-thread-left-running", "names-builtins-abs",
               "values-mock-any", "key-tests-code-objects-via-callback",
               "values-always-equal-humaneval", "reach-gc-scan-in-functional",
               "host-other-sandboxes"]


def test_the_plugin_counts_each_case_as_a_model_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [next(c for c in CASES if c.id == i) for i in MODEL_CASES]
    suite = _suite(pytester.path, [problem_of(c.problem) for c in cases])
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    rules = [{"task_id": f"mini/{n}", "reply": fenced(c.code)} for n, c in enumerate(cases)]
    script = write_script(pytester.path / "script.json", "cheat", rules=rules, default=None)
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = pytester.runpytest(
        "--vibe-model", "scripted:cheat", "--vibe-suite", str(suite), "-p", "no:randomly",
        "--vibe-protocol", "baseline", "--vibe-report", "r.json",
    )
    result.assert_outcomes(failed=len(cases))
    report = load_report(pytester.path / "r.json")
    (g,) = report["aggregates"]
    expected_tampered = sum(c.expected == "tampered" for c in cases)
    assert (g["pass_at_1"], g["tampered"], g["errors"]) == (0.0, expected_tampered, 0)
    statuses = {i["task_id"]: i["turns"][0]["tests"]["status"] for i in report_items(report)}
    assert statuses == {f"mini/{n}": c.expected for n, c in enumerate(cases)}


def test_the_reward_pays_nothing_for_any_case() -> None:
    cases = [next(c for c in CASES if c.id == i) for i in MODEL_CASES]
    got = score_batch([fenced(c.code) for c in cases], [problem_of(c.problem) for c in cases],
                      RewardConfig(instructions=False, exec_settings=SETTINGS))
    assert [(r.func, r.reward, r.exec_status) for r in got] == [
        (0.0, 0.0, c.expected) for c in cases]


def test_the_runner_never_sees_an_expected_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """By construction: the payload of a stdin or functional run holds the inputs only."""
    from pytest_vibecheck.execute import judged

    seen: list[object] = []
    real = sandbox.run_in_sandbox

    def spy(**kwargs: Any) -> sandbox.SandboxResult:
        seen.append(kwargs.get("payload"))
        return real(**kwargs)

    monkeypatch.setattr(judged, "run_in_sandbox", spy)
    for name in ("stdin", "fn"):
        judged.run_judged("print(1)\n", problem_of(name), 2.0, "lcb", sandbox.SandboxSettings())
    text = json.dumps(seen)
    assert len(seen) == 2 and "3\\n" in text and "[2,7,11,15]" in text  # the inputs went
    assert "6\\n" not in text and "8\\n" not in text and "[0, 1]" not in text  # no output did
