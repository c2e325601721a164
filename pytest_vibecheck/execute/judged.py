"""Test kinds judged outside the candidate's process: LiveCodeBench ``stdin`` and ``functional``,
and assert-style ``humaneval`` tests (``docs/sandbox.md``, "Verdict integrity").

The candidate runs in a sandbox of its own (``_child/runner.py``) that receives only the
inputs: never an expected output, never the test source. What it printed or returned comes
back as bounded data, and is compared here (stdin, functional: :mod:`._child.compare`, in this
process, which never runs candidate code) or by the judge (humaneval: ``_child/judge.py``, a
second sandbox that runs the test's own code with ``candidate`` standing for a call into the
candidate's sandbox). So nothing the candidate does in its own process can change the verdict;
only its output can.

:func:`run_judged` returns the run's :class:`~.sandbox.SandboxResult` whose ``result`` is a
record in the harness's format (``import``, ``cases`` or ``tests``, ``test_time_s``,
``cpu_time_s``), for :func:`~.verdict.decide`.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import functools
import os
import threading
import warnings
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute._child import compare, wire
from pytest_vibecheck.execute.sandbox import SandboxResult, SandboxSettings, run_in_sandbox
from pytest_vibecheck.execute.spec import Task

__all__ = ["JUDGED_KINDS", "free_names", "run_judged"]

#: The test kinds whose verdict is made outside the candidate's process.
JUDGED_KINDS: frozenset[str] = frozenset({"stdin", "functional", "humaneval"})

_RUNNER = Path(__file__).parent / "_child" / "runner.py"
_JUDGE = Path(__file__).parent / "_child" / "judge.py"

#: Bytes of standard output kept per stdin case (more is a failure: "output too long").
MAX_CASE_OUTPUT = 8 << 20


class BadTestData(VibecheckError):
    """A case of the problem that cannot be used (its expected output is not JSON, ...): the
    suite's fault, reported as ``error``."""


def run_judged(
    code: str, task: Task, limit: float, rule: str, sandbox: SandboxSettings
) -> SandboxResult:
    """Run ``task``'s tests against ``code`` with the verdict made outside the candidate's
    process (``task.test.kind`` in :data:`JUDGED_KINDS`); ``limit`` is the time limit in
    seconds (per case for stdin and functional, for the whole ``check`` otherwise); ``rule``
    the grading rule of the LiveCodeBench kinds. Raises :class:`BadTestData` for unusable test
    data; never for anything the code does."""
    kind = task.test.kind
    if kind == "humaneval":
        return _humaneval(code, task, limit, sandbox)
    prelude = compare.LCB_PRELUDE if compare.uses_prelude(rule) else ""
    digits = compare.int_max_str_digits(rule)
    if kind == "stdin":
        return _stdin(prelude + code, task, limit, rule, digits, sandbox)
    return _functional(prelude + code, code, task, limit, rule, digits, sandbox)


def _job(sres: SandboxResult, kind: str, rows: list[list[str]], n_cases: int) -> SandboxResult:
    """``sres`` with its runner events turned into the harness's record: the import step, the
    judged case rows (a case that never came back: the candidate's process ended)."""
    events: dict[str, Any] = sres.result if isinstance(sres.result, dict) else {}
    if not events.get("events"):
        return sres
    record: dict[str, Any] = {"kind": kind, "tamper": [], "candidate_ran": True}
    imported = events.get("import")
    record["import"] = imported if imported is not None else [
        "fail", "the candidate's process ended before its import was reported", ""]
    end_raw = events.get("end")
    end: dict[str, Any] = end_raw if isinstance(end_raw, dict) else {}
    record["test_time_s"] = end.get("test_time_s")
    record["cpu_time_s"] = end.get("cpu_time_s")
    if isinstance(events.get("harness_error"), str):
        record["harness_error"] = events["harness_error"]
    cases = list(rows)
    unfinished = not cases or cases[-1][0] == "pass"
    if imported is not None and imported[:1] == ["pass"] and not sres.stopped and unfinished:
        if len(cases) < n_cases and sres.status == "timeout":
            cases.append(["timeout", f"case {len(cases)}: wall-clock limit of "
                          f"{sres.limits.get('timeout_s')} s exceeded", ""])
        elif len(cases) < n_cases:
            cases.append(["fail", f"case {len(cases)}: the test process ended before the case "
                          "ran", ""])
    record["cases"] = cases
    return dataclasses.replace(sres, result=record)


def _stdin(
    code: str, task: Task, limit: float, rule: str, digits: int | None, sandbox: SandboxSettings
) -> SandboxResult:
    expected = [c.output for c in task.test.cases]
    rows: list[list[str]] = []

    def watch(case: dict[str, Any]) -> bool:
        n = len(rows)
        if case.get("n") != n or n >= len(expected):
            rows.append(["fail", f"case {n}: the test process reported cases out of order", ""])
            return True
        outcome = case.get("outcome")
        if outcome == "ok":
            why = compare.stdout_mismatch(rule, str(case.get("out", "")), expected[n])
            if why is None:
                rows.append(["pass", "", ""])
                return False
            rows.append(["fail", f"case {n}: {why} ({rule} rule)", ""])
        elif outcome == "timeout":
            rows.append(["timeout", f"case {n}: time limit of {limit:g} s exceeded", ""])
        elif outcome == "too_long":
            rows.append(["fail", f"case {n}: output too long", ""])
        else:
            rows.append(["fail", f"case {n}: {str(case.get('message', ''))[:3000]}",
                         str(case.get("missing", ""))[:500]])
        return True

    payload = {
        "mode": "stdin",
        "code": code,
        "inputs": [c.input for c in task.test.cases],
        "limit": limit,
        "max_out": MAX_CASE_OUTPUT,
        "int_max_str_digits": digits,
    }
    sres = run_in_sandbox(script=_RUNNER, payload=payload, settings=sandbox, watch=watch,
                          job_is_init=True)
    return _job(sres, "stdin", rows, len(expected))


def _functional(
    code: str,
    source: str,
    task: Task,
    limit: float,
    rule: str,
    digits: int | None,
    sandbox: SandboxSettings,
) -> SandboxResult:
    max_digits = digits or 4300
    expected = []
    for n, c in enumerate(task.test.cases):
        try:
            for line in c.input.split("\n"):
                if line.strip():
                    wire.loads_marked(line, max_digits)
        except wire.WireError as exc:
            raise BadTestData(f"case {n}: bad test data: an argument is not JSON ({exc})") from None
        try:
            expected.append(wire.loads_marked(c.output, max_digits))
        except wire.WireError as exc:
            raise BadTestData(f"case {n}: bad test data: the expected output is not JSON "
                              f"({exc})") from None
    use_class, entry = compare.entry_point(rule, source, str(task.test.entry_point or
                                                              task.entry_point or ""))
    rows: list[list[str]] = []

    def watch(case: dict[str, Any]) -> bool:
        n = len(rows)
        if case.get("n") != n or n >= len(expected):
            rows.append(["fail", f"case {n}: the test process reported cases out of order", ""])
            return True
        outcome = case.get("outcome")
        if outcome == "ok":
            shown = str(case.get("repr", "?"))
            try:
                got = wire.loads_marked(str(case.get("out", "")), max_digits)
            except wire.WireError as exc:
                rows.append(["fail", f"case {n}: got {_cut(shown)}, which is not a JSON value "
                             f"({exc})", ""])
                return True
            why = compare.value_mismatch(rule, got, expected[n])
            if why is None:
                rows.append(["pass", "", ""])
                return False
            rows.append(["fail", f"case {n}: got {_cut(shown)}, expected "
                         f"{_cut(task.test.cases[n].output)} ({rule} rule)", ""])
        elif outcome == "timeout":
            rows.append(["timeout", f"case {n}: time limit of {limit:g} s exceeded", ""])
        else:
            rows.append(["fail", f"case {n}:\n{str(case.get('message', ''))[:3000]}",
                         str(case.get("missing", ""))[:500]])
        return True

    payload = {
        "mode": "calls",
        "code": code,
        "entry": {"use_class": use_class, "name": entry, "rule": rule},
        "args": [c.input for c in task.test.cases],
        "limit": limit,
        "int_max_str_digits": digits,
    }
    sres = run_in_sandbox(script=_RUNNER, payload=payload, settings=sandbox, watch=watch,
                          job_is_init=True)
    return _job(sres, "functional", rows, len(expected))


def _cut(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------------------ humaneval


def _import_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an ``import`` statement binds (``import os.path``: ``os``; a star import
    binds nothing it names)."""
    return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]


def _bound_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (assignments, imports, functions, classes)."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(_import_names(node))
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    out.add(sub.id)
    return out


@functools.lru_cache(maxsize=64)
def _parsed(test_code: str) -> ast.Module | None:
    """``test_code`` parsed once for the look-ups below (the evaluator asks several of each
    task's test source), or None when it does not parse. The warnings the test source's own
    text raises (BigCodeBench/19's invalid escape ``'\\#'``) are the benchmark's, not the
    user's run's: not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(test_code)
        except (SyntaxError, ValueError):
            return None


def import_bindings(test_code: str) -> tuple[str, ...]:
    """The names the test source's top-level ``import`` statements bind, in order, each once
    (``import os.path`` binds ``os``; ``from string import punctuation``, ``punctuation``).
    Empty when the source does not parse."""
    tree = _parsed(test_code)
    if tree is None:
        return ()
    out: dict[str, None] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(dict.fromkeys(_import_names(node)))
    return tuple(out)


def free_names(test_code: str) -> tuple[str, ...]:
    """Global names the test source reads that it does not bind at its top level and that are
    not built-ins, sorted: what it expects from the program under test (``candidate`` is a
    parameter of ``check``, so it is never one). Empty when the source does not parse."""
    import symtable

    tree = _parsed(test_code)
    if tree is None:
        return ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            table = symtable.symtable(test_code, "tests.py", "exec")
        except (SyntaxError, ValueError):
            return ()
    bound = _bound_names(tree)
    wanted: set[str] = set()
    stack = [table]
    while stack:
        scope = stack.pop()
        stack.extend(scope.get_children())
        for sym in scope.get_symbols():
            if not sym.is_referenced():
                continue
            if scope.get_type() == "module" or sym.is_global():
                wanted.add(sym.get_name())
    return tuple(sorted(n for n in wanted - bound if not hasattr(builtins, n)))


def _humaneval(code: str, task: Task, limit: float, sandbox: SandboxSettings) -> SandboxResult:
    entry = str(task.test.entry_point or task.entry_point or "")
    helpers = [n for n in free_names(task.test.code) if n != entry]
    program = ""
    remote = list(helpers)
    if helpers and task.canonical_solution:
        try:
            defined = _bound_names(ast.parse(task.canonical_solution))
        except SyntaxError:
            defined = set()
        if all(n in defined for n in helpers):
            program, remote = task.canonical_solution, []
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    stop_r, stop_w = os.pipe()
    box: list[SandboxResult] = []
    cand_payload = {"mode": "serve", "code": code, "names": [entry, *remote],
                    "fd_req": 4, "fd_rep": 5}
    judge_payload = {"test_code": task.test.code, "program": program, "entry_point": entry,
                     "remote": remote, "time_limit_s": limit, "fd_req": 4, "fd_rep": 5}

    def candidate() -> None:
        box.append(run_in_sandbox(script=_RUNNER, payload=cand_payload, settings=sandbox,
                                  extra_fds=(req_r, rep_w), stop_fd=stop_r, job_is_init=True))

    thread = threading.Thread(target=candidate, name="vibecheck-candidate", daemon=True)
    try:
        thread.start()
        judged = run_in_sandbox(script=_JUDGE, payload=judge_payload, settings=sandbox,
                                extra_fds=(req_w, rep_r))
    finally:
        with contextlib.suppress(OSError):
            os.write(stop_w, b"x")
        thread.join()
        for fd in (stop_r, stop_w):
            os.close(fd)
    cand = box[0] if box else None
    if cand is not None and cand.status == "error":
        return dataclasses.replace(cand, result=None)
    if cand is None:
        return dataclasses.replace(judged, status="error", result=None,
                                   error="the candidate's sandbox did not run")
    # what the candidate printed is what a reader of the result wants; the judge's sandbox
    # speaks for the verdict
    return dataclasses.replace(
        judged,
        stdout=cand.stdout,
        stderr=(cand.stderr + ("\n" + judged.stderr if judged.stderr.strip() else "")).strip(),
        network=cand.network,
        isolation=cand.isolation,
        writes_outside=tuple(dict.fromkeys((*cand.writes_outside, *judged.writes_outside))),
        channel_problems=(*judged.channel_problems, *cand.channel_problems),
        started=True,
    )
