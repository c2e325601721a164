"""Reports from synthetic items: JSON schema, JUnit validity, terminal table, `vibecheck summary`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
import xmlschema

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.report.json_report import (
    ReportError,
    build_report,
    load_report,
    validate_report,
    write_report,
)
from pytest_vibecheck.report.junit import build_junit, write_junit
from pytest_vibecheck.report.records import ReportItem, VibeReport
from pytest_vibecheck.report.terminal import pct, render_summary

XSD = Path(__file__).parent / "data" / "junit-common.xsd"


def _item(task: str, protocol: str, k: int, outcome: str, tests: str = "passed", verdicts: tuple[bool, ...] = (True,),
          error: str | None = None) -> ReportItem:
    ids = ["doc_1", "logic_3", "style_3"][: len(verdicts)]
    turns = [] if error else [{
        "turn": 0, "k": k,
        "generation": {"key": "a" * 64, "cached": True, "via_cache": True, "input_tokens": 5,
                       "output_tokens": 7, "latency_s": 0.5, "finish_reason": "stop"},
        "extraction": {"method": "fenced-first", "blocks": 1, "no_code": False, "code_sha256": "b" * 64},
        "tests": {"status": tests, "failed_tests": [] if tests == "passed" else ["test_x"], "message": "",
                  "duration_s": 0.1, "cached": False},
        "verdicts": [{"position": i + 1, "id": iid, "passed": ok, "error": None,
                      "violations": [] if ok else [{"rule": "ANN001", "line": 1, "column": 9, "message": "m"}]}
                     for i, (iid, ok) in enumerate(zip(ids, verdicts, strict=True))],
        "passed": tests == "passed" and all(verdicts),
    }]
    param = "m-baseline" if protocol == "baseline" else f"m-{protocol}-k{k}"
    return cast(ReportItem, {
        "nodeid": f"s::{task}[{param}]", "suite": "s", "suite_sha256": "c" * 64, "task_id": task,
        "model": "scripted:m", "protocol": protocol, "k": k, "sample": 0, "outcome": outcome,
        "passed": None if outcome in ("error", "skipped") else outcome == "passed",
        "error": {"kind": error, "message": "HTTP 429 <&> \"quoted\""} if error else None,
        "skip_reason": "no numpy" if outcome == "skipped" else None,
        "instructions": [{"position": i + 1, "id": iid, "category": iid.split("_")[0], "params": {}}
                         for i, iid in enumerate(ids)],
        "turns": turns, "no_code": False, "duration_s": 1.25,
        "timing": {"generate": 0.1, "tests": 0.2, "verify": 0.3, "total": 0.6},
        "failure": "t failed\n  tests: failed (1 failing: test_x)" if outcome == "failed" else None,
        "ruff_version": "0.17.6",
    })


@pytest.fixture
def report() -> VibeReport:
    items = [
        _item("a", "baseline", 0, "passed"),
        _item("b", "baseline", 0, "failed", tests="failed"),
        _item("a", "single", 2, "failed", verdicts=(True, False)),
        _item("b", "single", 2, "error", error="rate_limit"),
        _item("c", "single", 2, "skipped", tests="skipped", verdicts=(True, True)),
    ]
    return build_report(items, settings={"models": ["scripted:m"]}, workers=2, duration_s=3.5, exitstatus=1)


def test_report_matches_the_schema_and_round_trips(report: VibeReport, tmp_path: Path) -> None:
    validate_report(report)
    assert report["schema_version"] == 1
    assert report["run"]["ruff_version"] == "0.17.6"
    assert report["suites"] == [{"name": "s", "manifest_sha256": "c" * 64, "problems": 3}]
    assert [i["nodeid"] for i in report["items"]] == sorted(i["nodeid"] for i in report["items"])
    path = write_report(tmp_path / "sub" / "r.json", report)
    assert load_report(path) == json.loads(json.dumps(report))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r["items"][0].update(outcome="broken"), "field items/0/outcome"),
        (lambda r: r["aggregates"][0].update(pass_at_1=1.5), "field aggregates/0/pass_at_1"),
        (lambda r: r.pop("generation"), "'generation' is a required property"),
        (lambda r: r["items"][1]["turns"][0]["tests"].update(status="weird"), "items/1/turns/0/tests/status"),
    ],
)
def test_schema_rejects_broken_reports(report: VibeReport, mutate: Any, message: str) -> None:
    mutate(report)
    with pytest.raises(ReportError, match=message.replace("(", r"\(")):
        validate_report(report)


def test_version_and_identity_checks(report: VibeReport, tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="not a pytest-vibecheck report"):
        validate_report({"schema": "other"})
    report["schema_version"] = 2
    with pytest.raises(ReportError, match="report schema version 2"):
        validate_report(report)
    bad = tmp_path / "bad.json"
    bad.write_text("{\n  nope", encoding="utf-8")
    with pytest.raises(ReportError, match=r"bad.json:2: not valid JSON"):
        load_report(bad)


def test_junit_is_valid_and_carries_readable_metrics_and_item_facts(report: VibeReport, tmp_path: Path) -> None:
    path = write_junit(tmp_path / "j.xml", report)
    schema = xmlschema.XMLSchema(str(XSD))
    schema.validate(str(path))
    doc = schema.to_dict(str(path))
    assert isinstance(doc, dict)  # decoded XML: nested dicts and lists
    suites = {s["@name"]: s for s in doc["testsuite"]}
    assert set(suites) == {"s | scripted:m | baseline | k=0", "s | scripted:m | single | k=2"}
    single = suites["s | scripted:m | single | k=2"]
    assert (single["@tests"], single["@failures"], single["@errors"], single["@skipped"]) == (3, 1, 1, 1)
    props = [(p["@name"], p["@value"]) for p in single["properties"]["property"]]
    # only item a was evaluated: its tests pass (pass@1 100%), 1 of its 2 instructions is met;
    # S0 = 0.5, S_2 = 1.0: FR = (0.5 - 1) / 0.5
    assert props == [
        ("suite", "s"), ("model", "scripted:m"), ("protocol", "single"), ("k", "2"),
        ("results", "1 evaluated of 3"),
        ("pass@1", "100.0%"), ("FR_k", "-100.0%"), ("instruction-level IF", "50.0%"),
        ("task-level IF", "0.0%"),
        ("IF by position", "1 100.0%, 2 0.0%"),
        ("IF by category", "doc 100.0%, logic 0.0%"),
        ("IF by instruction", "doc_1 100.0%, logic_3 0.0%"),
        ("errors", "1 (rate_limit 1)"), ("skipped", "1"), ("no code", "0"), ("timeouts", "0"), ("tampered", "0"),
        ("cache hits", "100.0% of 2"), ("tokens", "0 input, 0 output"),
        ("versions", "pytest-vibecheck 0.1.0, Python " + report["run"]["python_version"] + ", Ruff 0.17.6"),
        ("suite manifest sha256", "c" * 64),
    ]
    # per-item facts are the test case's system-out (no <properties> allowed in a testcase)
    cases = {c["@name"]: c for c in single["testcase"]}
    assert cases["a[m-single-k2]"]["system-out"] == (
        "model: scripted:m\nprotocol: single\nk: 2\ntests: passed\ndoc_1: passed\nlogic_3: failed\n"
    )
    assert cases["b[m-single-k2]"]["system-out"].endswith("tests: not run\nerror: rate_limit\n")
    assert cases["a[m-single-k2]"]["failure"]["@type"] == "vibecheck.failure"
    assert cases["b[m-single-k2]"]["error"]["@type"] == "vibecheck.rate_limit"
    assert cases["b[m-single-k2]"]["error"]["@message"] == 'rate_limit: HTTP 429 <&> "quoted"'
    assert cases["c[m-single-k2]"]["skipped"]["@message"] == "no numpy"
    assert cases["a[m-single-k2]"]["@classname"] == "s.scripted:m.single.k2"
    assert sum(len(s["properties"]["property"]) for s in doc["testsuite"]) < 45  # was 3 per item more


def test_junit_has_a_testcase_per_threshold_check(report: VibeReport, tmp_path: Path) -> None:
    from pytest_vibecheck.config import thresholds as th

    checks = th.evaluate(report["aggregates"], th.parse_fail_under("pass@1=0.6"))
    report["thresholds"] = [c.to_dict() for c in checks]
    validate_report(report)
    path = write_junit(tmp_path / "j.xml", report)
    schema = xmlschema.XMLSchema(str(XSD))
    schema.validate(str(path))
    doc = schema.to_dict(str(path))
    assert isinstance(doc, dict)
    (gate,) = [s for s in doc["testsuite"] if s["@name"] == "vibecheck thresholds"]
    assert (gate["@tests"], gate["@failures"]) == (2, 1)
    cases = {c["@name"]: c for c in gate["testcase"]}
    failed = cases["pass@1 >= 0.6000: scripted:m baseline k=0 (s)"]
    assert failed["failure"]["@message"] == (
        "FAILED pass@1 >= 0.6000: scripted:m baseline k=0 (s) = 0.5000, short by 0.1000 (10.00 points)"
    )
    assert failed["failure"]["@type"] == "vibecheck.threshold"
    assert "failure" not in cases["pass@1 >= 0.6000: scripted:m single k=2 (s)"]


def test_the_xsd_rejects_properties_inside_a_testcase(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text(
        '<testsuites><testsuite name="x" tests="1" failures="0" errors="0">'
        '<testcase name="t"><properties><property name="a" value="b"/></properties></testcase>'
        "</testsuite></testsuites>",
        encoding="utf-8",
    )
    assert not xmlschema.XMLSchema(str(XSD)).is_valid(str(bad))


def test_terminal_table(report: VibeReport) -> None:
    lines = render_summary(report)
    assert lines[0].split() == ["suite", "model", "protocol", "k", "n", "pass@1", "FR_k", "instr-IF",
                                "task-IF", "errors", "no-code", "timeouts", "tampered", "cache-hit"]
    assert lines[1].split() == ["s", "scripted:m", "baseline", "0", "2", "50.0%", "-", "100.0%", "100.0%",
                                "0", "0", "0", "0", "100.0%"]
    assert lines[2].split() == ["s", "scripted:m", "single", "2", "1/3", "100.0%", "-100.0%", "50.0%",
                                "0.0%", "1", "0", "0", "0", "100.0%"]
    assert "generations: 4 requested, 4 from the cache (100.0% of 4 looked up)" in lines
    assert not [ln for ln in lines if "spent" in ln]  # no run.spend in this report: nothing said
    assert "infrastructure errors (not in the metrics): 1 (rate_limit 1)" in lines
    verbose = render_summary(report, verbosity=1)
    assert "  IF by position: 1: 100.0%, 2: 0.0%" in verbose
    assert render_summary({"aggregates": []}) == ["no vibecheck results (no item ran)"]
    assert pct(0.41935) == "41.9%"
    assert pct(None) == "-"


def test_summary_command(report: VibeReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_report(tmp_path / "r.json", report)
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"vibecheck summary of {path} (pytest-vibecheck ")
    assert out[1:] == render_summary(report)
    assert main(["summary", "--recompute", "-v", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  IF by category: doc 100.0% (2/2)" in out
    assert "  IF by category: doc 100.0% (1/1), logic 0.0% (0/1)" in out
    assert main(["summary", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the report" in capsys.readouterr().err


def test_junit_of_a_derived_only_group_has_no_testcases() -> None:
    item = _item("a", "multi", 2, "passed", verdicts=(True, True))
    item["turns"] = [{**item["turns"][0], "turn": t, "k": t} for t in range(3)]
    for t, turn in enumerate(item["turns"]):
        turn["verdicts"] = turn["verdicts"][: max(t, 1) if t else 2]
    report = build_report([item], settings={})
    xml = build_junit(report)
    names = [ts.name for ts in xml]
    assert names == ["s | scripted:m | baseline | k=0", "s | scripted:m | multi | k=1", "s | scripted:m | multi | k=2"]
    derived = list(xml)[1]
    assert (derived.tests, derived.failures, derived.errors) == (0, 0, 0)


def test_the_report_file_gets_an_ordinary_files_mode(report: VibeReport, tmp_path: Path) -> None:
    """Not mkstemp's 0600: the mode of a file written under the umask (0644 under 022)."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = write_report(tmp_path / "r.json", report)
        plain = tmp_path / "plain.txt"
        plain.write_text("x", encoding="utf-8")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o644
