"""Helpers of the plugin tests: a tiny suite on disk and scripted-model files.

The tiny suite (suite format of docs/suites.md, written with ``suites.write_suite``) has three
HumanEval-style problems with known canonical solutions and three instructions each, so a
pytester run takes seconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pytest_vibecheck.execute.spec import TestSpec
from pytest_vibecheck.report.records import ReportItem
from pytest_vibecheck.suites.problem import InstructionRef, Problem
from pytest_vibecheck.suites.store import write_suite

SUITE = "tiny"

ADD = "def add(a, b):\n    return a + b\n"
SIGN = (
    "def sign(x):\n"
    "    if x > 0:\n"
    "        return 1\n"
    "    if x < 0:\n"
    "        return -1\n"
    "    return 0\n"
)
SQUARES = "def squares(n):\n    out = []\n    for i in range(n):\n        out.append(i * i)\n    return out\n"


def tiny_problems(name: str = SUITE) -> list[Problem]:
    """Three problems: add (t/add), sign (t/sign), squares (t/squares)."""

    def prob(task: str, entry: str, prompt: str, check: str, solution: str, insts: Sequence[tuple[str, dict[str, Any]]]) -> Problem:
        return Problem(
            suite=name,
            task_id=task,
            prompt=prompt,
            test=TestSpec(kind="humaneval", code=check, entry_point=entry),
            entry_point=entry,
            canonical_solution=solution,
            instructions=tuple(InstructionRef(i, dict(p)) for i, p in insts),
        )

    return [
        prob(
            "t/add", "add", "Write a Python function add(a, b) that returns a + b.",
            "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n",
            ADD,
            [("doc_1", {}), ("logic_3", {"max_branches": 2}), ("style_3", {"line_length": 79})],
        ),
        prob(
            "t/sign", "sign", "Write a Python function sign(x) returning 1, -1 or 0.",
            "def check(candidate):\n    assert candidate(5) == 1\n    assert candidate(-2) == -1\n    assert candidate(0) == 0\n",
            SIGN,
            [("logic_3", {"max_branches": 2}), ("doc_1", {}), ("style_5", {})],
        ),
        prob(
            "t/squares", "squares", "Write a Python function squares(n) returning [0, 1, 4, ...].",
            "def check(candidate):\n    assert candidate(3) == [0, 1, 4]\n",
            SQUARES,
            [("logic_8", {}), ("doc_1", {}), ("logic_1", {})],
        ),
    ]


def write_tiny_suite(folder: Path, name: str = SUITE) -> Path:
    """Write the tiny suite into ``folder`` (created); returns the folder."""
    write_suite(
        folder,
        tiny_problems(name),
        name=name,
        description="three tiny problems for the plugin tests",
        source="tests/plugin_helpers.py",
        licence="Apache-2.0",
        attribution="pytest-vibecheck tests",
        selector="manual",
        seed=None,
        k=3,
        compress=False,
    )
    return folder


def report_items(report: Mapping[str, Any]) -> list[ReportItem]:
    """The ``items`` of a JSON report read back (``load_report`` checks them against
    ``schema.json``), typed as the records the plugin wrote."""
    return cast("list[ReportItem]", report["items"])


def fenced(code: str) -> str:
    """``code`` as a ```python block."""
    return "```python\n" + code + "```"


def write_script(
    path: Path,
    name: str,
    *,
    rules: Sequence[Mapping[str, Any]] = (),
    default: str | None = "@reference",
    log: Path | None = None,
    cacheable: bool = True,
    usage: Mapping[str, int] | None = None,
) -> Path:
    """Write a scripted-model file (``$VIBECHECK_SCRIPTED``) with one model ``name``."""
    script: dict[str, Any] = {"rules": list(rules), "cacheable": cacheable}
    if default is not None:
        script["default"] = default
    if log is not None:
        script["log"] = str(log)
    if usage is not None:
        script["usage"] = dict(usage)
    path.write_text(json.dumps({name: script}), encoding="utf-8")
    return path


def write_many_suite(folder: Path, n: int, name: str = "many") -> Path:
    """A suite of ``n`` copies of the add problem (task ids ``m/000`` ...), for runs that must
    last long enough to be interrupted."""
    base = tiny_problems(name)[0]
    problems = [
        Problem(
            suite=name,
            task_id=f"m/{i:03d}",
            prompt=base.prompt + f" (variant {i})",
            test=base.test,
            entry_point=base.entry_point,
            canonical_solution=base.canonical_solution,
            instructions=base.instructions,
        )
        for i in range(n)
    ]
    write_suite(
        folder, problems, name=name, description="n copies of add", source="tests",
        licence="Apache-2.0", attribution="pytest-vibecheck tests", selector="manual", seed=None,
        k=3, compress=False,
    )
    return folder


SLOW_CONFTEST = '''
import time

from pytest_vibecheck.generate.backends.base import fence
from pytest_vibecheck.generate.backends.scripted import ScriptedBackend, register_scripted


def _respond(request):
    time.sleep({delay})
    return fence(request.reference)


register_scripted("slow", ScriptedBackend("slow", respond=_respond, log_path={log!r}))
'''
