"""Build schema-valid vibecheck report items by hand for the analysis tests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from pytest_vibecheck.report.json_report import build_report, write_report
from pytest_vibecheck.report.records import ReportItem

CATEGORY = {
    "style": "style",
    "logic": "logic",
    "doc": "doc",
    "error": "error",
    "library": "library",
}


def _turn(
    turn: int, k: int, ids: Sequence[str], verdicts: Sequence[bool], tests: bool
) -> dict[str, Any]:
    return {
        "turn": turn,
        "k": k,
        "generation": {
            "key": hashlib.sha256(f"{turn}{ids}".encode()).hexdigest(),
            "cached": False,
            "input_tokens": 10,
            "output_tokens": 20,
            "latency_s": 0.1,
            "finish_reason": "stop",
        },
        "extraction": {
            "method": "fenced-first",
            "blocks": 1,
            "no_code": False,
            "code_sha256": hashlib.sha256(b"x").hexdigest(),
        },
        "tests": {
            "status": "passed" if tests else "failed",
            "failed_tests": [] if tests else ["test_x"],
            "message": "",
            "duration_s": 0.01,
            "cached": False,
        },
        "verdicts": [
            {"position": p, "id": i, "passed": ok, "error": None, "violations": []}
            for p, (i, ok) in enumerate(zip(ids, verdicts, strict=True), start=1)
        ],
        "passed": tests and all(verdicts),
    }


def item(
    model: str,
    task: str,
    protocol: str,
    k: int,
    *,
    ids: Sequence[str],
    turns: Sequence[tuple[Sequence[bool], bool]] = (),
    verdicts: Sequence[bool] = (),
    tests: bool = True,
    sample: int = 0,
    suite: str = "demo",
    error: str | None = None,
) -> ReportItem:
    """One report item. Single/baseline: ``verdicts`` and ``tests``. Multi: ``turns`` is a list
    over turns 0..k of (verdicts of instructions 1..t, tests passed)."""
    nodeid = f"{suite}::{task}[{model}-{protocol}-k{k}-s{sample}]"
    insts = [
        {"position": p, "id": i, "category": CATEGORY[i.split("_")[0]], "params": {}}
        for p, i in enumerate(ids, start=1)
    ]
    base: dict[str, Any] = {
        "nodeid": nodeid, "suite": suite, "task_id": task, "model": model,
        "protocol": protocol, "k": k, "sample": sample, "instructions": insts,
        "no_code": False, "duration_s": 0.5, "skip_reason": None, "ruff_version": "0.17.6",
    }  # fmt: skip
    if error:
        return cast(ReportItem, {**base, "outcome": "error", "passed": None, "turns": [],
                                 "error": {"kind": error, "message": "boom"}})  # fmt: skip
    if protocol == "multi":
        ts = [_turn(t, t, ids[:t], v, ok) for t, (v, ok) in enumerate(turns)]
    else:
        ts = [_turn(0, k, ids, verdicts, tests)]
    passed = bool(ts[-1]["passed"])
    return cast(ReportItem, {**base, "outcome": "passed" if passed else "failed", "passed": passed,
                             "turns": ts, "error": None})  # fmt: skip


def demo_items() -> list[ReportItem]:
    """Model m1 on 4 tasks: baseline, single k=2, multi k=2, plus one infrastructure error.

    Hand-computed facts used by the tests:
    baseline pass@1 3/4; single k=2 pass@1 2/4 (FR 1/3), position IF 3/4 and 1/4,
    instruction IF 1/2, task IF 1/4; multi k=2 pass@1 4/4 (FR -1/3), retention at turn 2: 2/3,
    recovery 1/1, acquisition turn 1: 3/4, turn 2: 3/4.
    """
    ids = ["style_1", "logic_3"]
    out = []
    base_tests = [True, True, True, False]
    single = [
        ((True, True), True),
        ((True, False), True),
        ((False, False), False),
        ((True, False), False),
    ]
    multi = [
        [(True,), (True, True)],
        [(True,), (False, True)],
        [(False,), (True, False)],
        [(True,), (True, True)],
    ]
    for n in range(4):
        task = f"T{n}"
        out.append(
            item("m1", task, "baseline", 0, ids=ids, verdicts=(False, True), tests=base_tests[n])
        )
        v, ok = single[n]
        out.append(item("m1", task, "single", 2, ids=ids, verdicts=v, tests=ok))
        turns = [((), True), (multi[n][0], True), (multi[n][1], True)]
        out.append(item("m1", task, "multi", 2, ids=ids, turns=turns))
    out.append(item("m1", "T4", "single", 2, ids=ids, error="api_error"))
    return out


def write_demo_report(path: Path, items: list[ReportItem] | None = None) -> Path:
    """Write a schema-valid report of ``items`` (default :func:`demo_items`) to ``path``."""
    report = build_report(items if items is not None else demo_items(), settings={})
    return write_report(path, report)
