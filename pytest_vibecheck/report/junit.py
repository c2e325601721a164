"""JUnit XML (``--vibe-junitxml PATH``) written with :mod:`junitparser` from a report.

Layout (valid against the common Ant/Jenkins JUnit schema, ``tests/data/junit-common.xsd``)::

    <testsuites name="pytest-vibecheck" tests= failures= errors= time=>
      <testsuite name="bigvibebench-lite | reference | single | k=5" tests= failures= errors= skipped= time=>
        <properties>
          <property name="vibecheck.pass_at_1" value="0.46"/>        aggregates of the group
          <property name="vibecheck.instruction_if" value="0.61"/>   ...
          <property name="vibecheck.item.BigCodeBench/13[reference-single-k5].passed" value="false"/>
          ...                                                       per-item properties
        </properties>
        <testcase classname="bigvibebench-lite.reference.single.k5" name="BigCodeBench/13[reference-single-k5]" time=>
          <failure message="..." type="vibecheck.failure">failure text</failure>
        </testcase>
      </testsuite>
    </testsuites>

One test suite per (suite, model, protocol, k) group; groups filled only by derived multi-turn
results carry their properties and no test case. Per-item properties live in the group's
``<properties>`` under ``vibecheck.item.<test case name>.<field>`` because the common schema
allows no ``<properties>`` inside ``<testcase>`` (pytest's own ``xunit2`` family has the same
restriction). Values are fractions in [0, 1]; a metric that is null is left out.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

__all__ = ["build_junit", "write_junit"]

_GROUP_FIELDS: tuple[str, ...] = (
    "items",
    "evaluated",
    "derived",
    "passed",
    "tests_passed",
    "errors",
    "skipped",
    "no_code",
    "timeouts",
    "pass_at_1",
    "s0",
    "fr",
    "instruction_if",
    "task_if",
)


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _group_props(g: Mapping[str, Any], run: Mapping[str, Any], suites: Mapping[str, Any]) -> list[tuple[str, str]]:
    props: list[tuple[str, str]] = [
        ("vibecheck.suite", str(g["suite"])),
        ("vibecheck.model", str(g["model"])),
        ("vibecheck.protocol", str(g["protocol"])),
        ("vibecheck.k", str(g["k"])),
    ]
    props += [(f"vibecheck.{name}", _fmt(g[name])) for name in _GROUP_FIELDS if g.get(name) is not None]
    props += [(f"vibecheck.pass_at.{k}", _fmt(v)) for k, v in (g.get("pass_at") or {}).items()]
    props += [
        (f"vibecheck.if_by_position.{p}", _fmt(v))
        for p, v in (g.get("if_by_position") or {}).items()
    ]
    props += [
        (f"vibecheck.if_by_category.{c}", _fmt(r["if"]))
        for c, r in (g.get("if_by_category") or {}).items()
    ]
    props += [
        (f"vibecheck.if_by_instruction.{i}", _fmt(r["if"]))
        for i, r in (g.get("if_by_instruction") or {}).items()
    ]
    props += [(f"vibecheck.retention.{t}", _fmt(v)) for t, v in (g.get("retention") or {}).items()]
    cache = g.get("cache") or {}
    props += [
        (f"vibecheck.cache.{name}", _fmt(cache[name]))
        for name in ("requested", "looked_up", "cached", "hit_rate")
        if cache.get(name) is not None
    ]
    props += [(f"vibecheck.tokens.{name}", _fmt(v)) for name, v in (g.get("tokens") or {}).items()]
    props += [
        (f"vibecheck.error_kinds.{kind}", _fmt(n)) for kind, n in (g.get("error_kinds") or {}).items()
    ]
    suite = suites.get(str(g["suite"])) or {}
    if suite.get("manifest_sha256"):
        props.append(("vibecheck.suite_manifest_sha256", str(suite["manifest_sha256"])))
    for name in ("plugin_version", "python_version", "ruff_version"):
        if run.get(name):
            props.append((f"vibecheck.{name}", str(run[name])))
    return props


def _case_name(item: Mapping[str, Any]) -> str:
    nodeid = str(item.get("nodeid", ""))
    _, sep, rest = nodeid.partition("::")
    return rest if sep else nodeid


def _item_props(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    prefix = f"vibecheck.item.{_case_name(item)}."
    out: list[tuple[str, str]] = [(prefix + "outcome", str(item.get("outcome")))]
    turns = item.get("turns") or []
    if turns:
        final = turns[-1]
        verdicts = final.get("verdicts") or []
        ok = sum(1 for v in verdicts if v.get("passed"))
        failed = [str(v["id"]) for v in verdicts if v.get("passed") is False]
        gens = [t.get("generation") or {} for t in turns]
        out += [
            (prefix + "passed", _fmt(bool(item.get("passed")))),
            (prefix + "tests", str((final.get("tests") or {}).get("status"))),
            (prefix + "instructions_followed", f"{ok}/{len(verdicts)}"),
            (prefix + "failed_instructions", ",".join(failed)),
            (prefix + "extraction", str((final.get("extraction") or {}).get("method"))),
            (prefix + "no_code", _fmt(bool(item.get("no_code")))),
            (prefix + "generations_cached", f"{sum(bool(g.get('cached')) for g in gens)}/{len(gens)}"),
        ]
    err = item.get("error")
    if err:
        out.append((prefix + "error_kind", str(err.get("kind"))))
    return out


def _testcase(item: Mapping[str, Any]) -> TestCase:
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
        err = item.get("error") or {}
        kind = str(err.get("kind") or "internal_error")
        message = str(err.get("message") or text or "error")
        res_e = Error(message=f"{kind}: {message.splitlines()[0] if message else ''}", type_=f"vibecheck.{kind}")
        res_e.text = text or message
        case.result = [res_e]
    elif outcome == "skipped":
        case.result = [Skipped(message=str(item.get("skip_reason") or "skipped"))]
    return case


def build_junit(report: Mapping[str, Any]) -> JUnitXml:
    """The JUnit document of a report (docs/report-schema.md)."""
    run = report.get("run") or {}
    suites = {str(s["name"]): s for s in report.get("suites") or []}
    items_by_group: dict[tuple[str, str, str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for item in report.get("items") or []:
        items_by_group[(str(item["suite"]), str(item["model"]), str(item["protocol"]), int(item["k"]))].append(item)
    xml = JUnitXml("pytest-vibecheck")
    for g in report.get("aggregates") or []:
        key = (str(g["suite"]), str(g["model"]), str(g["protocol"]), int(g["k"]))
        ts = TestSuite(f"{key[0]} | {key[1]} | {key[2]} | k={key[3]}")
        props = _group_props(g, run, suites)
        items = sorted(items_by_group.get(key, []), key=lambda i: str(i.get("nodeid", "")))
        for item in items:
            props += _item_props(item)
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


def write_junit(path: str | os.PathLike[str], report: Mapping[str, Any]) -> Path:
    """Write the JUnit XML of ``report`` to ``path`` (parent folders created)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    build_junit(report).write(str(tmp), pretty=True)
    tmp.replace(out)
    return out

