"""The judge of assert-style tests, ``check(candidate)`` (standard library only).

Loaded by the sandbox bootstrap, which calls ``main(payload, out)``. The judge runs the test's
own code and never runs candidate code: ``candidate`` (and the entry point's name) stands for a
call into the candidate's process, a separate sandbox (``runner.py``, ``serve`` mode), over two
pipes. Arguments go there as :mod:`wire` values; what the candidate returns comes back as plain
values (lists, tuples, dicts, sets, numbers, strings, ...), built here from data, so nothing it
returns can compare equal to everything, and nothing it does in its own process (patching
``builtins``, the test framework, libraries) reaches the test. An exception it raises is raised
here as the built-in exception of the same name (``ValueError``, ...), else as
:class:`CandidateError`, with the candidate's traceback as its message.

Names the test uses from the program under test other than the entry point (HumanEval/32's
``poly``) come from the task's reference program (``payload["program"]``), executed here first;
only without one are they calls into the candidate's process (``payload["remote"]``).

The judge writes one sealed line on ``out``, in the harness's format (``harness.py``)::

    {"kind": "humaneval", "import": [outcome, message, missing],
     "tests": [["check", outcome, message, missing]], "test_time_s": float,
     "cpu_time_s": float, "calls": int}

``harness_error`` reports a failure of the judge itself, such as an argument the test passes
that cannot be sent (an infrastructure error, never the candidate's).
"""

# ruff: noqa: PTH100, PTH118, PTH120, PTH123
# (os.path, not pathlib: the sandbox's scripts keep their imports to the minimum they need.)

from __future__ import annotations

import builtins
import contextlib
import json
import os
import sys
import time
import types
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sibling(name: str) -> types.ModuleType:
    path = os.path.join(_HERE, name + ".py")
    source = globals().get("_VIBECHECK_SOURCES", {}).get(name + ".py")
    if source is None:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    module = types.ModuleType("_vibecheck_" + name)
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module


wire = _sibling("wire")
report = _sibling("report")

TEST_FILE = "tests.py"
PROGRAM_FILE = "reference.py"
HIDDEN = frozenset({os.path.join(_HERE, n) for n in ("judge.py", "wire.py", "report.py", "boot.py",
                                                    "zygote.py")})


class CandidateError(Exception):
    """An exception the candidate raised whose class is not a built-in one."""


class _Stop(BaseException):
    """Ends the test: the candidate's process timed out, ended or broke the protocol
    (a ``BaseException``, so the test's own ``except Exception`` does not swallow it)."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


class _Unsendable(BaseException):
    """An argument of the test that cannot be sent to the candidate's process."""


class _Link:
    """The two pipes to the candidate's process and the run's deadline."""

    def __init__(self, req: int, rep: int, deadline: float) -> None:
        self.req, self.rep, self.deadline = req, rep, deadline
        self.calls = 0
        self.stopped: _Stop | None = None

    def answer(self) -> dict[str, Any]:
        try:
            text = wire.recv(self.rep, self.deadline)
        except TimeoutError:
            raise self._stop("timeout", "time limit exceeded") from None
        except (wire.WireError, OSError) as exc:
            raise self._stop("fail", f"the candidate's process broke the protocol: {exc}") from None
        if text is None:
            raise self._stop("fail", "the candidate's process ended")
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise self._stop("fail", "the candidate's process sent a malformed answer")
        return value

    def _stop(self, outcome: str, message: str) -> _Stop:
        self.stopped = self.stopped or _Stop(outcome, message)
        return self.stopped

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.stopped is not None:
            raise self.stopped
        try:
            request = json.dumps({"call": name, "args": wire.dumps(list(args)),
                                  "kwargs": wire.dumps(dict(kwargs))})
        except wire.WireError as exc:
            raise _Unsendable(f"an argument of {name}() cannot be sent to the candidate's "
                              f"process: {exc}") from None
        if any(type(a) is wire.Opaque for a in args):
            raise _Unsendable(f"an argument of {name}() is a value of the candidate's")
        try:
            wire.send(self.req, request)
        except OSError:
            raise self._stop("fail", "the candidate's process ended") from None
        self.calls += 1
        reply = self.answer()
        if "ok" in reply and type(reply["ok"]) is str:
            try:
                return wire.loads(reply["ok"])
            except wire.WireError as exc:
                raise self._stop("fail", f"the candidate's process sent a malformed value: "
                                 f"{exc}") from None
        raised = reply.get("raise")
        if type(raised) is list and len(raised) == 3 and all(type(x) is str for x in raised):
            raise _exception(*raised)
        if type(reply.get("error")) is str:
            raise CandidateError(str(reply["error"])[:500])
        raise self._stop("fail", "the candidate's process sent a malformed answer")


def _exception(type_name: str, message: str, missing: str) -> BaseException:
    cls = getattr(builtins, type_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = CandidateError
    try:
        exc = cls(f"raised in the candidate's code:\n{report.short(message)}")
    except Exception:
        exc = CandidateError(f"{type_name} raised in the candidate's code:\n{message}")
    exc.__dict__["vibecheck_missing"] = missing[:500]
    return exc


def _remote(link: _Link, name: str) -> Any:
    """A function standing for ``name`` of the candidate's process."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return link.call(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def main(payload: dict[str, Any], out: Any) -> None:
    """Judge ``payload`` (see the module docstring) and write one sealed line to ``out``."""
    started, cpu0 = time.monotonic(), _cpu()
    record: dict[str, Any] = {"kind": "humaneval", "tests": [["check", "notrun", "", ""]]}
    try:
        _judge(payload, record, started)
    except BaseException as exc:
        record["harness_error"] = f"the judge failed: {type(exc).__name__}: {exc}"[:500]
    record["test_time_s"] = round(time.monotonic() - started, 6)
    record["cpu_time_s"] = round(_cpu() - cpu0, 6)
    out.write(json.dumps(record) + "\n")
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def _judge(payload: dict[str, Any], record: dict[str, Any], started: float) -> None:
    limit = float(payload["time_limit_s"])
    link = _Link(int(payload["fd_req"]), int(payload["fd_rep"]), started + limit)
    test_code = str(payload["test_code"])
    program = str(payload.get("program") or "")
    lines = {TEST_FILE: test_code.splitlines(), PROGRAM_FILE: program.splitlines()}
    namespace: dict[str, Any] = {"__name__": "__test__", "__builtins__": builtins}
    if program:
        exec(compile(program, PROGRAM_FILE, "exec", dont_inherit=True), namespace)
    entry = str(payload["entry_point"])
    candidate = _remote(link, entry)
    namespace[entry] = candidate
    for name in payload.get("remote") or ():
        namespace[str(name)] = _remote(link, str(name))
    try:
        first = link.answer()
    except _Stop as stop:
        message = (f"time limit of {limit:g} s exceeded" if stop.outcome == "timeout"
                   else "candidate failed to import: " + stop.message)
        record["import"] = [stop.outcome, message, ""]
        return
    imported = first.get("import")
    if not (type(imported) is list and len(imported) == 3 and all(type(x) is str for x in imported)
            and imported[0] in ("pass", "fail")):
        record["import"] = ["fail", "the candidate's process sent a malformed answer", ""]
        return
    record["import"] = imported
    if imported[0] != "pass":
        return
    exec(compile(test_code, TEST_FILE, "exec", dont_inherit=True), namespace)
    check = namespace.get("check")
    outcome, message, missing = "pass", "", ""
    try:
        check(candidate)  # type: ignore[misc]
    except _Unsendable as exc:
        record["harness_error"] = str(exc)[:500]
        return
    except _Stop as stop:
        outcome, message = stop.outcome, stop.message
    except BaseException as exc:
        outcome = "fail"
        message = report.describe(exc, HIDDEN, lines)
        missing = str(exc.__dict__.get("vibecheck_missing", "")) if hasattr(exc, "__dict__") else ""
    if link.stopped is not None:  # a _Stop the test's own code caught
        outcome, message = link.stopped.outcome, link.stopped.message
    if outcome == "timeout":
        message = f"time limit of {limit:g} s exceeded"
    record["tests"] = [["check", outcome, message, missing]]
    record["calls"] = link.calls
