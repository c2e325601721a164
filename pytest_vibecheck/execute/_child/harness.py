"""Runs a problem's tests against a candidate program inside the sandbox (standard library only).

Loaded by the sandbox bootstrap, which calls ``main(payload, out)``; ``out`` is the result
file. One JSON line is written to it::

    {"status": "passed"|"failed"|"timeout"|"error", "failed_tests": [...], "message": str,
     "test_time_s": float, "missing_module": str|None, "phase": "import"|"test"|"harness"}

``error`` is only for the environment or the harness (a library the task needs is not
installed, the harness crashed); a candidate that does not compile or import is ``failed``.

Test kinds (``payload["kind"]``):

- ``bigcodebench-unittest``: candidate and ``TestCases`` executed in one module named
  ``__test__`` (as BigCodeBench's harness does), each failing test method listed;
- ``humaneval``: ``check(candidate_function)``;
- ``functional``: LiveCodeBench call-based tests (``Solution().method(*json_args)``);
- ``stdin``: LiveCodeBench standard-input programs, each case in a forked process with its
  own stdin and stdout, output compared line by line.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import linecache
import math
import os
import re
import select
import signal
import sys
import tempfile
import time
import traceback
import types
import unittest
from decimal import Decimal, InvalidOperation
from typing import Any

#: LiveCodeBench's prelude for call-based and stdin programs (lcb_runner ``import_string``).
LCB_PRELUDE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
    "from random import *\nfrom statistics import *\nfrom itertools import *\n"
    "from functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\n"
    "import datetime\nimport collections\nimport heapq\nimport bisect\nimport copy\nimport math\n"
    "import random\nimport statistics\nimport itertools\nimport functools\nimport operator\n"
    "import io\nimport sys\nimport json\nsys.setrecursionlimit(50000)\n"
)

MAX_MESSAGE = 2000

_INT = re.compile(r"[+-]?\d+\Z")


class _Out:
    """Where the single result line goes; written at most once."""

    def __init__(self, fh: object, started: float) -> None:
        self.fh = fh
        self.started = started
        self.done = False

    def write(self, result: dict[str, Any]) -> None:
        if self.done:
            return
        self.done = True
        result.setdefault("failed_tests", [])
        result.setdefault("message", "")
        result.setdefault("missing_module", None)
        result["test_time_s"] = round(time.perf_counter() - self.started, 6)
        result["message"] = _short(result["message"])
        self.fh.write(json.dumps(result) + "\n")  # type: ignore[attr-defined]
        self.fh.flush()  # type: ignore[attr-defined]


def _short(text: str, limit: int = MAX_MESSAGE) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 4] + "\n[...]\n" + text[-(3 * limit) // 4 :]


def _trace(exc: BaseException, limit: int = 6) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    head, frames, tail = lines[:1], lines[1:-1], lines[-1:]
    kept = [f for f in frames if "_child/harness.py" not in f]
    return "".join(head + kept[-limit:] + tail)


def _install_deadline(out: _Out, seconds: float, current: list[str]) -> None:
    """After ``seconds``, write a timeout result and end the process at once."""

    def on_alarm(signum: int, frame: object) -> None:
        out.write(
            {
                "status": "timeout",
                "failed_tests": list(current),
                "message": f"time limit of {seconds:g} s exceeded",
                "phase": "test",
            }
        )
        os._exit(0)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _cancel_deadline() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


def _missing(exc: BaseException, known: set[str]) -> str | None:
    """The top-level module name when ``exc`` means the environment lacks a library."""
    if not isinstance(exc, ModuleNotFoundError):
        return None
    name = (exc.name or "").split(".")[0]
    if not name:
        return None
    if name in known or name in getattr(sys, "stdlib_module_names", ()):
        return name
    return None


def _compile(source: str, filename: str) -> types.CodeType:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec", dont_inherit=True)


def _new_module(name: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(
        {
            "__builtins__": builtins,
            "__file__": filename,
            "__package__": None,
            "__doc__": None,
        }
    )
    sys.modules[name] = module
    return module


def _import_candidate(
    payload: dict[str, Any], module: types.ModuleType, known: set[str], prelude: str = ""
) -> dict[str, Any] | None:
    """Execute the candidate in ``module``; a result dict[str, Any] if that failed, else None."""
    try:
        code = _compile(prelude + payload["code"], "candidate.py")
    except SyntaxError as exc:
        return {
            "status": "failed",
            "failed_tests": ["<import>"],
            "message": "candidate does not compile: "
            + "".join(traceback.format_exception_only(type(exc), exc)),
            "phase": "import",
        }
    try:
        exec(code, module.__dict__)
    except BaseException as exc:
        missing = _missing(exc, known)
        if missing:
            return {
                "status": "error",
                "message": f"environment: missing module {missing}",
                "missing_module": missing,
                "phase": "import",
            }
        return {
            "status": "failed",
            "failed_tests": ["<import>"],
            "message": "candidate failed to import:\n" + _trace(exc),
            "phase": "import",
        }
    return None


# --------------------------------------------------------------------------- BigCodeBench


class _Result(unittest.TestResult):
    def __init__(self, known: set[str]) -> None:
        super().__init__()
        self.known = known
        self.missing: str | None = None
        self.traces: dict[str, str] = {}
        self.current: list[str] = []

    def startTest(self, test: unittest.TestCase) -> None:
        self.current[:] = [test.id().split(".")[-1]]
        super().startTest(test)

    def _record(self, test: unittest.TestCase, err: tuple[Any, ...]) -> None:
        name = test.id().split(".")[-1]
        exc = err[1]
        missing = _missing(exc, self.known) if exc is not None else None
        if missing:
            self.missing = missing
        # unittest's own formatting drops its internal frames
        fmt = getattr(self, "_exc_info_to_string", None)
        if exc is None:
            self.traces[name] = ""
        elif fmt is not None:
            self.traces[name] = str(fmt(err, test))
        else:  # pragma: no cover - private unittest API gone
            self.traces[name] = "".join(traceback.format_exception(*err))

    def addError(self, test: unittest.TestCase, err: tuple[Any, ...]) -> None:
        super().addError(test, err)
        self._record(test, err)

    def addFailure(self, test: unittest.TestCase, err: tuple[Any, ...]) -> None:
        super().addFailure(test, err)
        self._record(test, err)

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self.traces[test.id().split(".")[-1]] = "unexpected success"


def _run_bigcodebench(payload: dict[str, Any], out: _Out, known: set[str]) -> dict[str, Any]:
    module = _new_module("__test__", "__test__.py")
    # BigCodeBench's harness puts these in the module namespace.
    module.__dict__.update({"sys": sys, "os": os, "environ": os.environ})
    builtins.exit = None  # type: ignore[assignment]
    builtins.quit = None  # type: ignore[assignment]
    current: list[str] = ["<import>"]
    _install_deadline(out, payload["time_limit_s"], current)
    failed = _import_candidate(payload, module, known)
    if failed is not None:
        return failed
    current[:] = ["<tests>"]
    try:
        exec(_compile(payload["test_code"], "tests.py"), module.__dict__)
        test_cases = module.__dict__["TestCases"]
        suite = unittest.TestLoader().loadTestsFromTestCase(test_cases)
    except BaseException as exc:
        missing = _missing(exc, known)
        if missing:
            return {
                "status": "error",
                "message": f"environment: missing module {missing}",
                "missing_module": missing,
                "phase": "test",
            }
        # The test code runs after the candidate in one module (as upstream): a candidate
        # that shadows a name the tests need breaks them, which is the candidate's failure.
        return {
            "status": "failed",
            "failed_tests": ["<tests>"],
            "message": "test code failed to load:\n" + _trace(exc),
            "phase": "test",
        }
    result = _Result(known)
    result.current = current
    suite.run(result)
    _cancel_deadline()
    if result.missing:
        return {
            "status": "error",
            "message": f"environment: missing module {result.missing}",
            "missing_module": result.missing,
            "failed_tests": sorted(result.traces),
            "phase": "test",
        }
    if result.traces:
        first = sorted(result.traces)[0]
        return {
            "status": "failed",
            "failed_tests": sorted(result.traces),
            "message": f"{first}:\n{result.traces[first]}",
            "phase": "test",
        }
    if result.testsRun == 0:
        return {"status": "error", "message": "TestCases has no tests", "phase": "harness"}
    return {"status": "passed", "phase": "test"}


# --------------------------------------------------------------------------- HumanEval


def _run_humaneval(payload: dict[str, Any], out: _Out, known: set[str]) -> dict[str, Any]:
    module = _new_module("__candidate__", "candidate.py")
    current = ["<import>"]
    _install_deadline(out, payload["time_limit_s"], current)
    failed = _import_candidate(payload, module, known)
    if failed is not None:
        return failed
    entry = payload.get("entry_point") or ""
    fn = module.__dict__.get(entry)
    if not callable(fn):
        return {
            "status": "failed",
            "failed_tests": ["<import>"],
            "message": f"the candidate does not define {entry!r}",
            "phase": "import",
        }
    current[:] = ["check"]
    try:
        exec(_compile(payload["test_code"], "tests.py"), module.__dict__)
        check = module.__dict__["check"]
        check(fn)
    except BaseException as exc:
        _cancel_deadline()
        missing = _missing(exc, known)
        if missing:
            return {
                "status": "error",
                "message": f"environment: missing module {missing}",
                "missing_module": missing,
                "phase": "test",
            }
        return {
            "status": "failed",
            "failed_tests": ["check"],
            "message": _trace(exc),
            "phase": "test",
        }
    _cancel_deadline()
    return {"status": "passed", "phase": "test"}


# --------------------------------------------------------------------------- comparisons


def _norm(value: object) -> object:
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


def values_equal(got: object, expected: object, tol: float) -> bool:
    """JSON-value equality; floats within ``tol`` (absolute or relative), ints exactly."""
    if isinstance(got, float) or isinstance(expected, float):
        if isinstance(got, bool) or isinstance(expected, bool):
            return got == expected
        if isinstance(got, (int, float)) and isinstance(expected, (int, float)):
            if math.isnan(got) or math.isnan(expected):
                return False
            return math.isclose(got, expected, rel_tol=tol, abs_tol=tol)
        return False
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(
            values_equal(a, b, tol) for a, b in zip(got, expected, strict=True)
        )
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(
            values_equal(got[k], expected[k], tol) for k in got
        )
    return bool(got == expected)


def _token_equal(a: str, b: str, tol: float) -> bool:
    if a == b:
        return True
    if _INT.match(a) and _INT.match(b):
        return int(a) == int(b)  # integers exactly, never through floats
    try:
        x, y = Decimal(a), Decimal(b)
    except (InvalidOperation, ValueError):
        return False
    if not (x.is_finite() and y.is_finite()):
        return False
    return abs(x - y) <= Decimal(repr(tol)) * max(Decimal(1), abs(y))


def compare_stdout(got: str, expected: str, tol: float) -> str | None:
    """None when ``got`` matches ``expected``, else a one-line reason.

    Lines are compared after removing trailing whitespace (and trailing blank lines); a
    line that differs is split into whitespace-separated tokens: integer tokens must be
    equal exactly, decimal tokens within ``tol`` (absolute, or relative to the expected
    value when it is larger than 1), other tokens exactly.
    """
    g = [line.rstrip() for line in got.rstrip().split("\n")]
    e = [line.rstrip() for line in expected.rstrip().split("\n")]
    if len(g) != len(e):
        return f"expected {len(e)} line(s), got {len(g)}"
    for n, (a, b) in enumerate(zip(g, e, strict=True), 1):
        if a == b:
            continue
        ta, tb = a.split(), b.split()
        if len(ta) != len(tb) or not all(
            _token_equal(x, y, tol) for x, y in zip(ta, tb, strict=True)
        ):
            return f"line {n}: got {a[:200]!r}, expected {b[:200]!r}"
    return None


# --------------------------------------------------------------------------- LiveCodeBench


def _run_functional(payload: dict[str, Any], out: _Out, known: set[str]) -> dict[str, Any]:
    module = _new_module("__candidate__", "candidate.py")
    current = ["<import>"]
    limit = float(payload["time_limit_s"])
    _install_deadline(out, limit, current)
    failed = _import_candidate(payload, module, known, LCB_PRELUDE)
    if failed is not None:
        return failed
    _cancel_deadline()
    entry = payload.get("entry_point") or ""
    target: object = module
    solution = module.__dict__.get("Solution")
    if isinstance(solution, type):
        try:
            target = solution()
        except BaseException as exc:
            return {
                "status": "failed",
                "failed_tests": ["<import>"],
                "message": "Solution() failed:\n" + _trace(exc),
                "phase": "import",
            }
    method = getattr(target, entry, None)
    if not callable(method):
        return {
            "status": "failed",
            "failed_tests": ["<import>"],
            "message": f"the candidate does not define {entry!r}",
            "phase": "import",
        }
    tol = float(payload.get("float_tol", 1e-6))
    for n, (inp, expected_text) in enumerate(payload["cases"]):
        name = f"case {n}"
        try:
            args = [json.loads(line) for line in inp.split("\n") if line.strip()]
            expected = json.loads(expected_text)
        except ValueError as exc:
            return {
                "status": "error",
                "message": f"{name}: bad test data: {exc}",
                "phase": "harness",
            }
        current[:] = [name]
        _install_deadline(out, limit, current)
        try:
            got = method(*args)
        except BaseException as exc:
            _cancel_deadline()
            missing = _missing(exc, known)
            if missing:
                return {
                    "status": "error",
                    "message": f"environment: missing module {missing}",
                    "missing_module": missing,
                    "phase": "test",
                }
            return {
                "status": "failed",
                "failed_tests": [name],
                "message": _trace(exc),
                "phase": "test",
            }
        _cancel_deadline()
        if not values_equal(_norm(got), expected, tol):
            return {
                "status": "failed",
                "failed_tests": [name],
                "message": f"{name}: got {_short(repr(got), 300)}, expected {_short(expected_text, 300)}",
                "phase": "test",
            }
    return {"status": "passed", "phase": "test"}


def _run_stdin_case(code: types.CodeType, data: str, limit: float, max_out: int) -> tuple[str, str]:
    """Run one case in a forked child; returns ``(outcome, stdout)``.

    ``outcome`` is ``ok``, ``timeout``, ``output too long`` or ``runtime error: ...``.
    """
    with (
        tempfile.TemporaryFile() as fin,
        tempfile.TemporaryFile() as fout,
        tempfile.TemporaryFile() as ferr,
    ):
        fin.write(data.encode("utf-8"))
        fin.seek(0)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child: the program runs as __main__ with the case as its stdin
            _case_child(code, fin.fileno(), fout.fileno(), ferr.fileno())
        waited = _wait_child(pid, limit)
        if waited is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", ""
        fout.seek(0)
        raw = fout.read(max_out + 1)
        ferr.seek(0)
        err = ferr.read(4000).decode("utf-8", "replace")
    status = os.waitstatus_to_exitcode(waited)
    if status == 2 or status < 0:
        why = err.strip().splitlines()[-1] if err.strip() else f"exit status {status}"
        return f"runtime error: {why}\n{err[-1500:]}", ""
    if len(raw) > max_out:
        return "output too long", ""
    return "ok", raw.decode("utf-8", "replace")


def _case_child(code: types.CodeType, fin: int, fout: int, ferr: int) -> None:
    """In the forked child: run ``code`` as ``__main__`` on the case's stdin; never returns."""
    status = 0
    try:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        os.dup2(fin, 0)
        os.dup2(fout, 1)
        os.dup2(ferr, 2)
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        try:
            exec(code, namespace)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                status = 3
        except BaseException:
            traceback.print_exc(limit=4)
            status = 2
        import threading

        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            status = status or 2
    finally:
        os._exit(status)


def _wait_child(pid: int, limit: float) -> int | None:
    """Wait up to ``limit`` seconds for ``pid``; its wait status, or None on timeout."""
    deadline = time.monotonic() + limit
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if pidfd >= 0:
                ready, _, _ = select.select([pidfd], [], [], remaining)
                if ready:
                    return os.waitpid(pid, 0)[1]
            else:  # pragma: no cover - kernels before 5.3
                got, wstatus = os.waitpid(pid, os.WNOHANG)
                if got:
                    return wstatus
                time.sleep(min(0.005, remaining))
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _run_stdin(payload: dict[str, Any], out: _Out, known: set[str]) -> dict[str, Any]:
    try:
        code = _compile(LCB_PRELUDE + payload["code"], "candidate.py")
    except SyntaxError as exc:
        return {
            "status": "failed",
            "failed_tests": ["<import>"],
            "message": "candidate does not compile: "
            + "".join(traceback.format_exception_only(type(exc), exc)),
            "phase": "import",
        }
    limit = float(payload["time_limit_s"])
    tol = float(payload.get("float_tol", 1e-6))
    for n, (inp, expected) in enumerate(payload["cases"]):
        name = f"case {n}"
        max_out = max(1 << 20, 4 * len(expected))
        outcome, got = _run_stdin_case(code, inp, limit, max_out)
        if outcome == "timeout":
            return {
                "status": "timeout",
                "failed_tests": [name],
                "message": f"{name}: time limit of {limit:g} s exceeded",
                "phase": "test",
            }
        if outcome != "ok":
            m = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", outcome)
            if m and m.group(1).split(".")[0] in known:
                mod = m.group(1).split(".")[0]
                return {
                    "status": "error",
                    "message": f"environment: missing module {mod}",
                    "missing_module": mod,
                    "phase": "test",
                }
            return {
                "status": "failed",
                "failed_tests": [name],
                "message": f"{name}: {outcome}",
                "phase": "test",
            }
        why = compare_stdout(got, expected, tol)
        if why is not None:
            return {
                "status": "failed",
                "failed_tests": [name],
                "message": f"{name}: {why}",
                "phase": "test",
            }
    return {"status": "passed", "phase": "test"}


RUNNERS = {
    "bigcodebench-unittest": _run_bigcodebench,
    "humaneval": _run_humaneval,
    "functional": _run_functional,
    "stdin": _run_stdin,
}


def main(payload: dict[str, Any], fh: object) -> None:
    """Run ``payload`` (see the module docstring) and write one JSON result line to ``fh``."""
    out = _Out(fh, time.perf_counter())
    known = set(payload.get("known_libs", ()))
    try:
        runner = RUNNERS[payload["kind"]]
        result = runner(payload, out, known)
    except BaseException as exc:
        result = {
            "status": "error",
            "message": "harness crashed: "
            + "".join(traceback.format_exception_only(type(exc), exc)),
            "phase": "harness",
        }
    _cancel_deadline()
    out.write(result)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(0)
