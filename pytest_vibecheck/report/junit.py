"""JUnit XML (``--vibe-junitxml PATH``) written with :mod:`junitparser` from a report.

Made for CI dashboards and JUnit viewers (Jenkins, GitLab, xunit-viewer, junit2html), and valid
against the common Ant/Jenkins JUnit schema (``tests/data/junit-common.xsd``)::

    <testsuites name="pytest-vibecheck" tests= failures= errors= time=>
      <testsuite name="vibecheck thresholds" tests= failures=>   first, when the run had thresholds
        <testcase classname="vibecheck.thresholds" name="pass@1 &gt;= 0.7000: reference single k=5 (bigvibebench-lite)">
          <failure message="FAILED pass@1 >= 0.7000: ... short by 0.2400 (24.00 points)" type="vibecheck.threshold"/>
        </testcase>
      </testsuite>
      <testsuite name="bigvibebench-lite | reference | single | k=5" tests= failures= errors= skipped= time=>
        <properties>                                       the group's metrics, readable
          <property name="pass@1" value="46.0%"/>
          <property name="instruction-level IF" value="61.0%"/>
          <property name="task-level IF" value="20.0%"/>
          <property name="FR_k" value="+4.0%"/>  ...
        </properties>
        <testcase classname="bigvibebench-lite.reference.single.k5" name="BigCodeBench/13[reference-single-k5]" time=>
          <failure message="..." type="vibecheck.failure">failure text</failure>
          <system-out>model: reference                       the item, one fact per line
    protocol: single
    k: 5
    tests: passed
    doc_1: failed ...</system-out>
        </testcase>
      </testsuite>
    </testsuites>

One test suite per (suite, model, protocol, k) group; groups filled only by derived multi-turn
results carry their properties and no test case. Metrics are percentages with one decimal, as
in the terminal table (the JSON report keeps the exact fractions). The common schema allows no
``<properties>`` inside ``<testcase>``, so an item's facts are lines of its ``<system-out>``,
which every viewer shows; pytest's own ``--junitxml`` gets the same facts as test-case
properties (:mod:`pytest_vibecheck.report.properties`). Each threshold check is a test case of
its own, so a failed gate is a failed test named after the threshold.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from pytest_vibecheck.report.properties import item_properties
from pytest_vibecheck.report.records import (
    AggregateRecord,
    ReportItem,
    RunRecord,
    SuiteEntry,
    ThresholdCheckRecord,
    VibeReport,
)
from pytest_vibecheck.report.terminal import pct

__all__ = ["THRESHOLD_SUITE", "build_junit", "write_junit"]

#: Name of the test suite that holds one test case per threshold check.
THRESHOLD_SUITE = "vibecheck thresholds"


def _signed(value: float) -> str:
    return f"{100.0 * value:+.1f}%"


def _joined(pairs: Mapping[str, Any], key: str | None = None) -> str:
    return ", ".join(f"{name} {pct(v[key] if key else v)}" for name, v in pairs.items())


def _group_props(
    g: AggregateRecord, run: RunRecord | None, suites: Mapping[str, SuiteEntry]
) -> list[tuple[str, str]]:
    props: list[tuple[str, str]] = [
        ("suite", str(g["suite"])),
        ("model", str(g["model"])),
        ("protocol", str(g["protocol"])),
        ("k", str(g["k"])),
        ("results", f"{g['evaluated']} evaluated of {g['items']}"
         + (f" ({g['derived']} from longer multi-turn conversations)" if g.get("derived") else "")),
    ]
    suite = suites.get(str(g["suite"]))
    total = suite.get("problems_total") if suite else None
    if suite and total and suite.get("problems") != total:
        props.append(("tasks", f"{suite['problems']} of {total}"))
    metrics = [
        ("pass@1", g.get("pass_at_1"), pct),
        ("FR_k", g.get("fr"), _signed),
        ("instruction-level IF", g.get("instruction_if"), pct),
        ("task-level IF", g.get("task_if"), pct),
    ]
    props += [(name, fmt(v)) for name, v, fmt in metrics if v is not None]
    props += [(f"pass@{k}", pct(v)) for k, v in (g.get("pass_at") or {}).items() if str(k) != "1"]
    if g.get("if_by_position"):
        props.append(("IF by position", _joined(g["if_by_position"])))
    if g.get("if_by_category"):
        props.append(("IF by category", _joined(g["if_by_category"], "if")))
    if g.get("if_by_instruction"):
        props.append(("IF by instruction", _joined(g["if_by_instruction"], "if")))
    if g.get("retention"):
        props.append(("multi-turn retention", _joined(g["retention"])))
    props += [
        ("errors", str(g.get("errors", 0))
         + (" (" + ", ".join(f"{k} {n}" for k, n in g["error_kinds"].items()) + ")"
            if g.get("error_kinds") else "")),
        ("skipped", str(g.get("skipped", 0))),
        ("no code", str(g.get("no_code", 0))),
        ("timeouts", str(g.get("timeouts", 0))),
        ("tampered", str(g.get("tampered", 0))),
    ]
    cache = g.get("cache") or {}
    if cache.get("hit_rate") is not None:
        props.append(("cache hits", f"{pct(cache['hit_rate'])} of {cache.get('looked_up', 0)}"))
    tokens = g.get("tokens") or {}
    if tokens:
        props.append(
            ("tokens", f"{int(tokens.get('input', 0)):,} input, {int(tokens.get('output', 0)):,} output")
        )
    named = (
        ("pytest-vibecheck", run.get("plugin_version")),
        ("Python", run.get("python_version")),
        ("Ruff", run.get("ruff_version")),
    ) if run else ()
    versions = [f"{label} {value}" for label, value in named if value]
    if versions:
        props.append(("versions", ", ".join(versions)))
    if suite and suite.get("manifest_sha256"):
        props.append(("suite manifest sha256", str(suite["manifest_sha256"])))
    return props


def _case_name(item: ReportItem) -> str:
    nodeid = str(item.get("nodeid", ""))
    _, sep, rest = nodeid.partition("::")
    return rest if sep else nodeid


def _facts(item: ReportItem) -> str:
    """The item's facts, one ``name: value`` per line (its test case's ``<system-out>``)."""
    lines = [f"{name.removeprefix('vibecheck.')}: {value}" for name, value in item_properties(item)]
    return "\n".join(lines) + "\n"


def _testcase(item: ReportItem) -> TestCase:
    suite = str(item["suite"])
    group = f"{suite}.{item['model']}.{item['protocol']}" + (
        "" if item["protocol"] == "baseline" else f".k{item['k']}"
    )
    case = TestCase(_case_name(item), classname=group, time=float(item.get("duration_s") or 0.0))
    outcome = item.get("outcome")
    text = str(item.get("failure") or "")
    if outcome == "failed":
        first = text.splitlines()[0] if text else "failed"
        res = Failure(message=first, type_="vibecheck.failure")
        res.text = text
        case.result = [res]
    elif outcome == "error":
        err = item.get("error")
        kind = str((err.get("kind") if err else None) or "internal_error")
        message = str((err.get("message") if err else None) or text or "error")
        res_e = Error(message=f"{kind}: {message.splitlines()[0] if message else ''}", type_=f"vibecheck.{kind}")
        res_e.text = text or message
        case.result = [res_e]
    elif outcome == "skipped":
        case.result = [Skipped(message=str(item.get("skip_reason") or "skipped"))]
    case.system_out = _facts(item)
    return case


def _threshold_suite(checks: list[ThresholdCheckRecord]) -> TestSuite:
    ts = TestSuite(THRESHOLD_SUITE)
    for c in checks:
        name = str(c["threshold"]) + (f": {c['row']}" if c.get("row") else "")
        case = TestCase(name, classname="vibecheck.thresholds", time=0.0)
        if not c.get("passed"):
            case.result = [Failure(message=str(c["message"]), type_="vibecheck.threshold")]
        case.system_out = str(c["message"]) + "\n"
        ts.add_testcase(case)
    ts.update_statistics()  # type: ignore[no-untyped-call]
    return ts


def build_junit(report: VibeReport) -> JUnitXml:
    """The JUnit document of a report (docs/report-schema.md)."""
    run = report.get("run")
    suites = {str(s["name"]): s for s in report.get("suites") or []}
    items_by_group: dict[tuple[str, str, str, int], list[ReportItem]] = defaultdict(list)
    for item in report.get("items") or []:
        items_by_group[(str(item["suite"]), str(item["model"]), str(item["protocol"]), int(item["k"]))].append(item)
    xml = JUnitXml("pytest-vibecheck")
    thresholds = report.get("thresholds")
    if thresholds:  # first: a failed gate is the first thing a viewer shows
        xml.add_testsuite(_threshold_suite(list(thresholds)))
    for g in report.get("aggregates") or []:
        key = (str(g["suite"]), str(g["model"]), str(g["protocol"]), int(g["k"]))
        ts = TestSuite(f"{key[0]} | {key[1]} | {key[2]} | k={key[3]}")
        props = _group_props(g, run, suites)
        items = sorted(items_by_group.get(key, []), key=lambda i: str(i.get("nodeid", "")))
        for name, value in props:
            ts.add_property(name, value)
        for item in items:
            ts.add_testcase(_testcase(item))
        ts.update_statistics()  # type: ignore[no-untyped-call]
        if not items:
            ts.tests = ts.failures = ts.errors = ts.skipped = 0
            ts.time = 0.0
        xml.add_testsuite(ts)
    xml.update_statistics()  # type: ignore[no-untyped-call]
    return xml


def write_junit(path: str | os.PathLike[str], report: VibeReport) -> Path:
    """Write the JUnit XML of ``report`` to ``path`` (parent folders created)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    build_junit(report).write(str(tmp), pretty=True)
    tmp.replace(out)
    return out

