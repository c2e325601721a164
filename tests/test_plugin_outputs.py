"""What a run writes and says (pytester, the tiny suite, the reference model): report paths
checked at configure time, write failures at the end that keep the summary, and the summary
table placed last."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from plugin_helpers import write_tiny_suite

from pytest_vibecheck.report.outputs import OutputPathError, check_output_path

RUN = ("--vibe-model", "reference", "--vibe-suite", "suite", "--vibe-protocol", "baseline",
       "-p", "no:randomly", "-p", "no:cacheprovider")


@pytest.fixture
def tiny(pytester: pytest.Pytester) -> pytest.Pytester:
    write_tiny_suite(pytester.path / "suite")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    return pytester


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--vibe-report", "/proc/x.json"),
         "ERROR: vibecheck: --vibe-report /proc/x.json: cannot write in /proc (*); give a file "
         "path in a folder you can write to"),
        (("--vibe-report", "{tmp}"),
         "ERROR: vibecheck: --vibe-report {tmp}: is a folder; give a file path such as "
         "{tmp}/vibe.json"),
        (("--vibe-junitxml", "pyproject.toml/sub/j.xml"),
         "ERROR: vibecheck: --vibe-junitxml {here}/pyproject.toml/sub/j.xml: its folder cannot be "
         "made: {here}/pyproject.toml is a file, not a folder; give a file path in a folder you "
         "can write to"),
        (("--vibe-report", "same.xml", "--junitxml", "same.xml"),
         "ERROR: vibecheck: --vibe-report {here}/same.xml: the same file as --junitxml; give each "
         "output its own path"),
    ],
)
def test_a_bad_report_path_is_a_one_line_usage_error_before_the_run(
    tiny: pytest.Pytester, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    fill = {"tmp": str(tmp_path), "here": str(tiny.path)}
    result = tiny.runpytest(*RUN, *(a.format(**fill) for a in args))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message.format(**fill)])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert len(result.stderr.str().strip().splitlines()) == 1
    assert not (tiny.path / ".vibecheck" / "cache.sqlite").exists()  # nothing ran


def test_the_report_path_from_pyproject_is_named_with_its_source(tiny: pytest.Pytester) -> None:
    tiny.makepyprojecttoml('[tool.pytest.ini_options]\n[tool.vibecheck]\nreport = "/proc/r.json"\n')
    result = tiny.runpytest(*RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.str().startswith(
        "ERROR: vibecheck: pyproject.toml [tool.vibecheck] report /proc/r.json: cannot write in /proc ("
    )


WRECK_CONFTEST = """
import shutil
from pathlib import Path

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    out = Path(session.config.rootpath, "out")
    shutil.rmtree(out, ignore_errors=True)
    out.write_text("a file now, not a folder")
"""


def test_a_write_failure_at_the_end_keeps_the_summary_and_is_one_line(tiny: pytest.Pytester) -> None:
    (tiny.path / "out").mkdir()
    tiny.makeconftest(WRECK_CONFTEST)  # the folder becomes a file after the check at start
    result = tiny.runpytest(*RUN, "--vibe-no-fail-items", "--vibe-report", "out/r.json",
                            "--vibe-junitxml", "out/j.xml")
    out = result.stdout.str()
    assert "Traceback" not in out + result.stderr.str()
    result.stdout.fnmatch_lines([
        "*= vibecheck summary =*",
        "suite*model*protocol*",
        "tiny*reference*baseline*0*3*100.0%*",
        f"vibecheck: cannot write the JSON report {tiny.path}/out/r.json (*); the summary above is complete",
        f"vibecheck: cannot write the JUnit XML {tiny.path}/out/j.xml (*); the summary above is complete",
    ])
    # the items' failures are ignored (--vibe-no-fail-items), the lost reports are not
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_run_ends_on_the_summary_table(tiny: pytest.Pytester) -> None:
    result = tiny.runpytest(*RUN, "-q", "--tb=no", "--vibe-no-fail-items")
    lines = result.stdout.str().strip().splitlines()
    # pytest's FAILED lines come first, then the table, then pytest's final line
    start = next(i for i, line in enumerate(lines) if "vibecheck summary" in line)
    assert all(not line.startswith("FAILED") for line in lines[start:])
    assert any(line.startswith("FAILED") for line in lines[:start])
    assert lines[start + 1].startswith("suite  model")
    assert lines[start + 2].startswith("tiny   reference  baseline  0  3  100.0%")
    # after the table, its legend and totals: only vibecheck's one-line notes, then pytest's line
    assert "vibecheck: 3 failed vibecheck item(s) ignored (--vibe-no-fail-items)" in lines[start + 5:]
    assert all(line.startswith("vibecheck: ") for line in lines[start + 5:-1])
    assert lines[-1].startswith("3 failed in ")
    assert result.ret == pytest.ExitCode.OK


def test_check_output_path_leaves_nothing_behind(tmp_path: Path) -> None:
    check_output_path(tmp_path / "a" / "b" / "r.json")
    assert list(tmp_path.iterdir()) == []  # no folder made, no probe file left
    with pytest.raises(OutputPathError, match="is a folder"):
        check_output_path(tmp_path)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_pytest_junitxml_gets_short_properties_not_a_record_repr(
    tiny: pytest.Pytester, workers: list[str]
) -> None:
    result = tiny.runpytest(*RUN, "--vibe-protocol", "single", "--vibe-k", "2", "--junitxml",
                            "pytest.xml", "--vibe-report", "r.json", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = {c.get("name"): c for c in ET.parse(tiny.path / "pytest.xml").iter("testcase")}
    props = {
        name: [(p.get("name"), p.get("value")) for p in case.iter("property")]
        for name, case in cases.items()
    }
    assert props["t/sign[reference-single-k2]"] == [
        ("vibecheck.model", "reference"),
        ("vibecheck.protocol", "single"),
        ("vibecheck.k", "2"),
        ("vibecheck.tests", "passed"),
        ("vibecheck.logic_3", "passed"),
        ("vibecheck.doc_1", "failed"),
    ]
    text = (tiny.path / "pytest.xml").read_text(encoding="utf-8")
    assert "{'" not in text and "code_sha256" not in text  # no Python repr of the record
    # the record still reaches the controller: the JSON report has every item's verdicts
    report = json.loads((tiny.path / "r.json").read_text(encoding="utf-8"))
    (sign,) = [i for i in report["items"] if i["task_id"] == "t/sign"]
    assert [v["passed"] for v in sign["turns"][0]["verdicts"]] == [True, False]


# ------------------------------------------------------------------ say what ran


def test_a_limit_from_pyproject_is_in_the_header_the_report_and_the_threshold_line(
    tiny: pytest.Pytester,
) -> None:
    tiny.makepyprojecttoml("[tool.pytest.ini_options]\n[tool.vibecheck]\nlimit = 2\n")
    result = tiny.runpytest(*RUN, "--vibe-fail-under", "pass@1=0.5", "--vibe-no-fail-items",
                            "--vibe-report", "r.json")
    result.stdout.fnmatch_lines([
        "vibecheck: models reference; suites suite; *; limit 2 (pyproject.toml ?tool.vibecheck? limit)",
        "vibecheck: 2 items (tiny: 2 of 3 tasks)",
        "passed pass@1 >= 0.5000: reference baseline k=0 (tiny, on 2 of 3 tasks) = 1.0000, margin 0.5000",
    ])
    report = json.loads((tiny.path / "r.json").read_text(encoding="utf-8"))
    assert report["run"]["selection"] == {
        "limit": 2, "limit_source": "pyproject.toml [tool.vibecheck] limit", "tasks": [],
        "suites": [{"name": "tiny", "problems_selected": 2, "problems_total": 3}],
        "collected": 2, "deselected": {}, "selected": 2,
    }
    assert report["suites"][0]["problems"] == 2 and report["suites"][0]["problems_total"] == 3
    (check,) = report["thresholds"]
    assert check["row"] == "reference baseline k=0 (tiny, on 2 of 3 tasks)" and check["passed"] is True


def test_deselections_by_k_and_lf_are_counted_and_recorded(tiny: pytest.Pytester) -> None:
    run = (*RUN[:-2], "--vibe-no-fail-items", "--vibe-report", "r.json")
    result = tiny.runpytest(*run, "--vibe-tasks", "t/a*,t/s*", "-k", "not squares",
                            "--vibe-fail-under", "pass@1=0.5")
    result.stdout.fnmatch_lines([
        "vibecheck: models reference; *; tasks 't/a*', 't/s*'",
        "vibecheck: 3 items; 1 deselected (-k 1); 2 to run",
        # both tasks that ran pass their tests; 2 of the suite's 3 ran
        "passed pass@1 >= 0.5000: reference baseline k=0 (tiny, on 2 of 3 tasks) = 1.0000*",
    ])
    selection = json.loads((tiny.path / "r.json").read_text(encoding="utf-8"))["run"]["selection"]
    assert (selection["collected"], selection["deselected"], selection["selected"]) == (3, {"-k": 1}, 2)
    assert selection["tasks"] == ["t/a*", "t/s*"]


def test_last_failed_deselections_are_counted(tiny: pytest.Pytester) -> None:
    tiny.makepyprojecttoml("[tool.pytest.ini_options]\n[tool.vibecheck]\nprotocols = 'baseline,single'\nk = 1\n")
    run = ("--vibe-model", "reference", "--vibe-suite", "suite", "-p", "no:randomly")
    tiny.runpytest(*run).assert_outcomes(passed=1, failed=5)
    result = tiny.runpytest(*run, "--lf", "--vibe-report", "r.json")
    result.stdout.fnmatch_lines(["vibecheck: 6 items; 1 deselected (--lf 1); 5 to run"])
    selection = json.loads((tiny.path / "r.json").read_text(encoding="utf-8"))["run"]["selection"]
    assert selection["deselected"] == {"--lf": 1}


@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("Nope/*", "ERROR: vibecheck: --vibe-tasks 'Nope/*' matches no task of tiny (3 tasks); "
                   "task ids look like t/add"),
        ("t/sigm", "ERROR: vibecheck: --vibe-tasks 't/sigm' matches no task of tiny (3 tasks); "
                   "close matches: t/sign"),
    ],
)
def test_a_task_glob_that_matches_nothing_is_a_one_line_error(
    tiny: pytest.Pytester, glob: str, message: str
) -> None:
    result = tiny.runpytest(*RUN, "--vibe-tasks", f"t/add,{glob}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # was: exit 5, nothing said
    assert result.stderr.str().strip() == message


# ------------------------------------------------------------------ invisible when unused

PROJECT_MARKERS = """
[tool.pytest.ini_options]
markers = ["style: the project's own marker", "baseline: the project's own marker"]

[tool.vibecheck]
model = "reference"
"""


def test_unused_plugin_registers_no_marker_and_prints_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(PROJECT_MARKERS)
    pytester.makepyfile(test_mine="import pytest\n\n@pytest.mark.style\ndef test_a() -> None:\n    pass\n")
    markers = pytester.runpytest("--markers", "-p", "no:cacheprovider").stdout.str()
    assert "@pytest.mark.style: the project's own marker" in markers
    assert "vibe" not in markers  # no vibe_* marker, no vibecheck(...), no vibe_gate
    run = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers", "-rA")
    off = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers", "-rA",
                             "-p", "no:vibecheck", "-p", "no:vibecheck-gate")
    assert run.ret == off.ret == pytest.ExitCode.OK

    def lines(result: pytest.RunResult) -> list[str]:
        return [line for line in result.outlines if not line.startswith("plugins:") and " in " not in line]

    assert lines(run) == lines(off)  # not one line more
    assert "vibecheck" not in run.stdout.str().replace("plugins: vibecheck", "")


def test_active_plugin_markers_are_namespaced(tiny: pytest.Pytester) -> None:
    markers = tiny.runpytest("--markers", *RUN).stdout.str()
    ours = sorted(line.split(":")[0] for line in markers.splitlines() if line.startswith("@pytest.mark.vibe"))
    assert ours[:4] == ["@pytest.mark.vibe_baseline", "@pytest.mark.vibe_doc", "@pytest.mark.vibe_doc_1",
                        "@pytest.mark.vibe_doc_2"]
    assert len(ours) == 1 + 3 + 5 + 30  # vibecheck(...), protocols, categories, instruction ids
    assert "@pytest.mark.style:" not in markers and "@pytest.mark.baseline:" not in markers


def test_vibe_junitxml_shows_each_threshold_check_as_a_testcase(tiny: pytest.Pytester) -> None:
    result = tiny.runpytest(*RUN, "--vibe-protocol", "single", "--vibe-k", "1", "--vibe-no-fail-items",
                            "--vibe-fail-under", "pass@1=0.5,task_if=0.9", "--vibe-junitxml", "j.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the task_if gate
    first = next(iter(ET.parse(tiny.path / "j.xml").getroot()))
    assert (first.get("name"), first.get("tests"), first.get("failures")) == ("vibecheck thresholds", "2", "1")
    cases = {c.get("name"): c.find("failure") for c in first.iter("testcase")}
    assert cases["pass@1 >= 0.5000: reference single k=1 (tiny)"] is None
    failure = cases["task_if >= 0.9000: reference single k=1 (tiny)"]
    assert failure is not None and failure.get("message") == (
        "FAILED task_if >= 0.9000: reference single k=1 (tiny) = 0.3333, short by 0.5667 (56.67 points)"
    )
