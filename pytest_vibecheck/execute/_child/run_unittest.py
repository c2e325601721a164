"""The ``bigcodebench-unittest`` and ``humaneval`` test kinds (inside the sandbox; loaded by
``harness.py``).

``bigcodebench-unittest``: candidate and ``TestCases`` executed in one module named
``__test__`` (as BigCodeBench's harness does); each test method named in
``payload["test_names"]`` (parsed from the test source by the evaluator) runs, after the test
class is checked to be the one the test source defines. ``humaneval``:
``check(candidate_function)``. The snapshot is compared after the candidate's import and after
every test.
"""

from __future__ import annotations

import builtins
import functools
import os
import sys
import time
import types
import unittest
from typing import Any

_parts: dict[str, Any] = globals()["_VIBECHECK_PARTS"]  # loaded before this file (harness.py)
guard, audit, steps = _parts["guard"], _parts["audit"], _parts["steps"]
snapshot, candidate = _parts["snapshot"], _parts["candidate"]

# Pristine references, taken when this file is loaded (before any candidate code runs).
_monotonic = time.monotonic
_partial = functools.partial
_modules = sys.modules
_TestCase = unittest.TestCase
_FunctionType = types.FunctionType
_dict_get = dict.get
_exec_code, _run_one, _wrap_entry = guard.exec_code, guard.run_one, guard.wrap_entry


def _class_tests(st: Any, cls: Any, names: list[str], codes: set[types.CodeType]) -> str | None:
    """Check the test class the test source defined; None when it is sound, else why not."""
    if type(cls) is not type:
        return "the test class is missing or was replaced"
    mro = type.__dict__["__mro__"].__get__(cls)
    if _TestCase not in mro:
        return "the test class does not derive from unittest.TestCase"
    for klass in mro:
        if klass is not object:
            st.protect(klass)
            if klass.__module__ == "__test__":
                audit.freeze(klass)
    for name in names:
        found = [vars(k)[name] for k in mro if type(k) is type and name in vars(k)]
        if not found:
            return f"test {name} is missing from the test class"
        fn = found[0]
        for _ in range(10):  # decorators such as unittest.mock.patch keep __wrapped__
            inner = getattr(fn, "__wrapped__", None) if type(fn) is _FunctionType else None
            if inner is None:
                break
            fn = inner
        if type(fn) is not _FunctionType or fn.__code__ not in codes:
            return f"test {name} is not the one the test source defines"
    return None


def run(payload: dict[str, Any], st: Any) -> dict[str, Any]:
    kind = payload["kind"]
    bcb = kind == "bigcodebench-unittest"
    names = list(payload.get("test_names") or ([] if bcb else ["check"]))
    record: dict[str, Any] = {"kind": kind, "tests": [[n, "notrun", "", ""] for n in names]}
    st.limit = float(payload["time_limit_s"])
    deadline = _monotonic() + st.limit
    try:
        code = candidate.compile_code(payload["code"], "candidate.py")
    except SyntaxError as exc:
        record["import"] = candidate.compile_error(exc)
        return record
    test_code = candidate.compile_code(payload["test_code"], "tests.py")
    candidate.preimport(list(payload.get("preimport") or ()))
    if bcb:
        module = candidate.new_module("__test__", "__test__.py")
        module.__dict__.update({"sys": sys, "os": os, "environ": os.environ})
        builtins.exit = None  # type: ignore[assignment]
        builtins.quit = None  # type: ignore[assignment]
    else:
        module = candidate.new_module("__candidate__", "candidate.py")
    ns = module.__dict__
    audit.install_guard(st, bool(payload.get("allow_ctypes", True)), module.__name__)
    st.snapshot = snapshot.take(list(payload.get("preimport") or ()))
    st.in_sys = {name for name, mod, _, _ in st.snapshot if _modules.get(name) is mod}
    steps.started(st)
    outcome, message, missing = steps.step(st, [_partial(_exec_code, code, ns)], deadline)
    if outcome != "pass":
        if outcome == "fail":
            message = "candidate failed to import:\n" + message
        record["import"] = [outcome, message, missing]
        return record
    record["import"] = ["pass", "", ""]
    snapshot.verify(st, "while the candidate was imported")
    entry = str(payload.get("entry_point") or "")
    if not bcb and not callable(_dict_get(ns, entry)):
        record["import"] = ["fail", f"the candidate does not define {entry!r}", ""]
        return record
    outcome, message, missing = steps.step(st, [_partial(_exec_code, test_code, ns)], deadline)
    if outcome != "pass":
        # the test code runs after the candidate in one module (as upstream): a candidate
        # that shadows a name the tests need breaks them, which is the candidate's failure
        record["load"] = [outcome, "test code failed to load:\n" + message, missing]
        return record
    st.snapshot = snapshot.take(list(payload.get("preimport") or ()))
    if entry:
        steps.step(st, [_partial(_wrap_entry, ns, entry)], deadline)
    if bcb:
        cls = _dict_get(ns, str(payload.get("test_class") or "TestCases"))
        problem = _class_tests(st, cls, names, _code_objects(test_code))
        if problem is not None:
            st.flag(problem)
            return record
        work = [(n, [_partial(_run_one, cls, n)]) for n in names]
    else:
        check = _dict_get(ns, "check")
        codes = _code_objects(test_code)
        if type(check) is not _FunctionType or check.__code__ not in codes:
            st.flag("the test function check was replaced")
            return record
        work = [("check", [_partial(check, _dict_get(ns, entry))])]
    for n, (name, work_steps) in enumerate(work):
        outcome, message, missing = steps.step(st, work_steps, deadline)
        record["tests"][n] = [name, outcome, message, missing]
        if outcome == "timeout":
            # the test is still running on its thread (inside a `with mock.patch(...)`, say):
            # what it changed is not restored yet, so there is nothing to compare; a timeout
            # is a model failure either way
            break
        snapshot.verify(st, f"during {name}")
    return record


def _code_objects(code: types.CodeType) -> set[types.CodeType]:
    out = {code}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _code_objects(const)
    return out
