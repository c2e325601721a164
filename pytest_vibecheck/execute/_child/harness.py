"""Runs a BigCodeBench-style ``unittest`` test source against a candidate in one interpreter
(inside the sandbox; standard library only).

Loaded by the sandbox bootstrap, which calls ``main(payload, out)``; ``out`` is the sealed result
channel (:class:`boot.Channel`). One JSON line is written to it::

    {"kind": "bigcodebench-unittest", "import": [outcome, message, missing],
     "load": [outcome, message, missing], "tests": [[name, outcome, message, missing], ...],
     "tamper": [reason, ...], "test_time_s": float, "cpu_time_s": float,
     "harness_error": str (only when the harness itself failed), "candidate_ran": bool}

``outcome`` is ``pass``, ``fail``, ``timeout`` or ``notrun``; ``missing`` names a module (or
NLTK data) a failure reports missing: the evaluator decides whether that is the environment's
fault. The harness never decides ``error`` or ``skipped``.

These tests must share the candidate's interpreter (they inspect the DataFrames, plots and files
it makes, and patch the libraries it calls), so the surface between the two is kept small and
closed (``docs/sandbox.md``, "Verdict integrity"):

- the test source runs in a namespace of its own, never the candidate's module: the names it
  expects from the program under test are bound for it, the prompt's imports and constants
  from the task's reference (``payload["trusted"]``), ``task_func`` and the other functions as
  proxies into the candidate (``calls.py``), its classes as they are;
- the candidate's code runs only on its own threads (its import, and each call through a proxy,
  on a fresh thread whose stack leads to no frame of the tests or of the harness); a tracer on
  the harness's and the test threads reports any frame of it there (finalizers, callbacks,
  methods of returned objects, patched library functions);
- the identity of everything the tests resolve (the modules, their classes, the test module and
  its classes, ``builtins``, the run's hooks) is compared around every call (``snapshot.py``), the audit hook refuses what would
  reach the tests' or the harness's objects from the candidate's threads (``audit.py``), the test
  framework's classes are immutable, and a test passes only when its one-time token arrives
  (``steps.py``);
- every sign of tampering is written to an alarm pipe at once; the harness's main thread reads it.

The parts (:data:`PARTS`) are loaded by path when this file is loaded, before any candidate code
runs, as private modules (not in ``sys.modules``).
"""

# ruff: noqa: PTH100, PTH118, PTH120, PTH123
# (os.path, not pathlib: the sandbox's scripts keep their imports to the minimum they need.)

from __future__ import annotations

# Imported before any candidate code runs, so the snapshots record them.
import _thread
import builtins
import collections
import contextlib
import functools
import json
import json.encoder
import linecache
import math
import operator
import os
import sys
import time
import types
import unittest
import unittest.mock
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))

#: The parts of the harness, in load order.
PARTS = ("report.py", "audit.py", "snapshot.py", "calls.py", "steps.py")

#: Every file of the sandbox child (this folder); a test checks that the list is complete.
CHILD_FILES = ("harness.py", "boot.py", "zygote.py", "runner.py", "judge.py", "wire.py",
               "compare.py", *PARTS)

_VIBECHECK_PARTS: dict[str, types.ModuleType] = {}


def _load_sibling(name: str) -> types.ModuleType:
    path = os.path.join(_HERE, name)
    module = types.ModuleType("_vibecheck_" + name[:-3])
    module.__file__ = path
    module.__dict__["_VIBECHECK_PARTS"] = _VIBECHECK_PARTS
    module.__dict__["_VIBECHECK_CHILD_FILES"] = CHILD_FILES
    source = globals().get("_VIBECHECK_SOURCES", {}).get(name)
    if source is None:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    exec(compile(source, path, "exec"), module.__dict__)
    _VIBECHECK_PARTS[name[:-3]] = module
    return module


for _name in PARTS:
    _load_sibling(_name)
report = _VIBECHECK_PARTS["report"]
audit = _VIBECHECK_PARTS["audit"]
snapshot = _VIBECHECK_PARTS["snapshot"]
calls = _VIBECHECK_PARTS["calls"]
steps = _VIBECHECK_PARTS["steps"]

# Pristine references, taken when this file is loaded (before any candidate code runs).
_exit = os._exit
_perf = time.perf_counter
_monotonic = time.monotonic
_times = os.times
_read = os.read
_partial = functools.partial
_deque = collections.deque
_call: Any = operator.call  # type: ignore[attr-defined]
_encode_str: Any = (
    getattr(json.encoder, "c_encode_basestring_ascii", None)
    or json.encoder.py_encode_basestring_ascii
)
_dict_items = dict.items
_TestCase = unittest.TestCase
_FunctionType = types.FunctionType

#: Frames of these files are left out of the tracebacks of a test report.
HIDDEN = frozenset({os.path.join(_HERE, n) for n in CHILD_FILES}
                   | {calls.INVOKE_FILE, calls.PROXY_FILE, "<vibecheck-tracer>", "<vibecheck-step>",
                      os.path.dirname(unittest.__file__) + "/"})
CANDIDATE_FILE = "candidate.py"
#: High descriptor numbers the harness's own pipes are moved to (closed in forked children).
_FD_BASE = 200


def _cpu() -> float:
    t = _times()
    return t.user + t.system + t.children_user + t.children_system


def _enc(value: object) -> str:
    """JSON text of ``value`` (dict, list, str, int, float, bool, None) built from pristine
    C functions only."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    t = type(value)
    if t is str:
        return str(_encode_str(value))
    if t is int:
        return int.__repr__(value)
    if t is float:
        return float.__repr__(value) if math.isfinite(value) else "null"  # type: ignore[arg-type]
    if t in (list, tuple):
        return "[" + ",".join([_enc(v) for v in value]) + "]"  # type: ignore[attr-defined]
    if t is dict:
        items: Any = _dict_items(value)  # type: ignore[arg-type]
        return "{" + ",".join([_encode_str(str(k)) + ":" + _enc(v) for k, v in items]) + "}"
    return str(_encode_str("<not encodable>"))


def run_one(cls: Any, name: str, _getattr: Any = getattr) -> None:
    """Run test method ``name`` of ``cls`` as ``unittest`` does (``setUp``, the test,
    ``tearDown``, cleanups); raise when it did not pass."""
    case = cls(name)
    try:
        case.setUp()
        try:
            _getattr(case, name)()
        finally:
            case.tearDown()
    finally:
        ok = case.doCleanups()
    if ok is False:
        raise AssertionError("a cleanup function of the test failed")


def _high(fd: int) -> int:
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD, _FD_BASE)
    os.close(fd)
    return new


def _code_objects(code: types.CodeType) -> set[types.CodeType]:
    out = {code}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _code_objects(const)
    return out


def _test_classes(tests: dict[str, Any], cls: Any) -> tuple[type, ...]:
    """The classes the test source defined: those bound in its namespace and the bases of
    ``cls`` (the test class), in that order, each once."""
    mro = type.__dict__["__mro__"].__get__(cls) if type(cls) is type else ()
    found: list[type] = []
    for klass in [*tests.values(), *mro]:
        if isinstance(klass, type) and klass.__module__ == "__test__" and not any(
            klass is k for k in found
        ):
            found.append(klass)
    return tuple(found)


def _class_tests(cls: Any, names: list[str], codes: set[types.CodeType]) -> str | None:
    """Check the test class the test source defined; None when it is sound, else why not."""
    if type(cls) is not type:
        return "the test class is missing or was replaced"
    mro = type.__dict__["__mro__"].__get__(cls)
    if _TestCase not in mro:
        return "the test class does not derive from unittest.TestCase"
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


def _resolve_chains(namespace: dict[str, Any], chains: list[list[str]]) -> None:
    """Look up each attribute chain of the tests (``np.testing.assert_array_equal``) now, so
    what loads lazily is loaded (and recorded by the snapshots) before the candidate runs."""
    for chain in chains:
        value: Any = namespace.get(chain[0], builtins.__dict__.get(chain[0]))
        for attr in chain[1:]:
            if value is None:
                break
            try:
                value = getattr(value, attr)
            except Exception:
                break


class _Run:
    """One run: what the main thread keeps (referenced from its own frames only)."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload
        self.limit = float(payload["time_limit_s"])
        self.deadline = _monotonic() + self.limit
        self.names = list(payload.get("test_names") or [])
        self.record: dict[str, Any] = {
            "kind": "bigcodebench-unittest",
            "tests": [[n, "notrun", "", ""] for n in self.names],
            "candidate_ran": False,
        }
        alarm_r, alarm_w = os.pipe()
        self.alarm_r = _high(alarm_r)
        self.alarm = audit.Alarm(_high(alarm_w))
        os.set_blocking(self.alarm_r, False)
        self.tamper: list[str] = []
        self.lines = {"tests.py": str(payload["test_code"]).splitlines(),
                      "candidate.py": str(payload["code"]).splitlines()}

    def describe(self, exc: BaseException) -> tuple[str, str]:
        return report.describe(exc, HIDDEN, self.lines), report.missing(exc)

    def alarms(self) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError, OSError):
            while True:
                data = _read(self.alarm_r, 1 << 16)
                if not data:
                    break
                for line in data.decode("utf-8", "replace").splitlines():
                    if line.strip() and line not in self.tamper and len(self.tamper) < 20:
                        self.tamper.append(line[:300])

    def run(self, out: Any) -> None:
        payload, record = self.payload, self.record
        try:
            code = compile(str(payload["code"]), "candidate.py", "exec", dont_inherit=True)
        except SyntaxError as exc:
            text = "".join(__import__("traceback").format_exception_only(type(exc), exc))
            record["import"] = ["fail", "candidate does not compile: " + text, ""]
            return
        # the candidate's own source, for its own tracebacks and inspect.getsource (the
        # test source is never put there: it is the answer key)
        source = str(payload["code"])
        linecache.cache[CANDIDATE_FILE] = (len(source), None, source.splitlines(True),
                                           CANDIDATE_FILE)
        test_code = compile(str(payload["test_code"]), "tests.py", "exec", dont_inherit=True)
        for name in payload.get("preimport") or ():
            with contextlib.suppress(BaseException):
                __import__("importlib").import_module(name)
        calls.share_sqlite_connections()
        builtins.exit = None  # type: ignore[assignment]
        builtins.quit = None  # type: ignore[assignment]
        module = types.ModuleType("__test__")
        cand: dict[str, Any] = module.__dict__
        cand.update({"__builtins__": builtins, "__file__": "candidate.py", "__package__": None,
                     "__doc__": None, "sys": sys, "os": os, "environ": os.environ})
        sys.modules["__test__"] = module
        imported = [str(n) for n in payload.get("test_imports") or ()]
        # the built-ins are the interpreter's own, as in plain Python: the tests' own patches
        # of them (``patch('builtins.open', ...)``, then ``open.side_effect = ...``) reach their
        # look-ups; the hot snapshots keep ``builtins`` around the import and every call
        tests: dict[str, Any] = {"__name__": "__test__", "__file__": "tests.py",
                                 "__builtins__": builtins, "sys": sys, "os": os,
                                 "environ": os.environ}
        scratch: dict[str, Any] = {"__builtins__": builtins, "__name__": "__test__"}
        for statement in payload.get("trusted") or ():
            with contextlib.suppress(BaseException):
                exec(compile(str(statement), "reference.py", "exec", dont_inherit=True), scratch)
        scratch.pop("__builtins__", None)
        scratch.pop("__name__", None)
        entry = str(payload.get("entry_point") or "task_func")
        free = [str(n) for n in payload.get("free_names") or ()]
        from_candidate = [n for n in free if n not in scratch and n != entry]
        for name in free:
            if name in scratch:
                tests[name] = scratch[name]
        trusted: set[int] = set()
        allowed: set[Any] = set()
        policy = audit.Policy(self.alarm, cand, trusted)
        run = calls.Calls(self.alarm, cand, snapshot, tests)
        policy.handed = run.handed
        run.trusted = trusted
        run.deadline = self.deadline
        tests[entry] = calls.make_proxy(run, entry, entry)
        tracer = calls.make_tracer(self.alarm, cand, allowed)
        run.tracer = tracer
        st = steps.Steps(calls.INVOKE_TRUSTED, self.describe, self.limit)
        st.tok_r, st.tok_w = _high(st.tok_r), _high(st.tok_w)
        os.set_blocking(st.tok_r, False)
        os.register_at_fork(after_in_child=_partial(
            _deque, map(_call, [_partial(os.closerange, 3, 4),
                                _partial(os.closerange, _FD_BASE, _FD_BASE + 16)]), 0))
        audit.freeze_framework()
        if not payload.get("allow_ctypes", True):
            audit.block_ctypes(policy)
        sys.addaudithook(audit.make_hook(policy))
        calls.start_tracing(tracer, trusted)  # the main thread
        trust = [_partial(calls.start_tracing, tracer, trusted)]
        untrust = (_partial(calls.stop_trusting, trusted),)
        outcome, message, missing = st.step(trust, exec, (test_code, tests), self.deadline,
                                            teardown=untrust)
        if outcome != "pass":
            record["load"] = [outcome, "test code failed to load:\n" + message, missing]
            record["harness_error"] = "the test source failed to load before the candidate ran"
            return
        _resolve_chains(tests, [list(c) for c in payload.get("chains") or ()])
        codes = _code_objects(test_code)
        cls = tests.get(str(payload.get("test_class") or "TestCases"))
        # the tests' own classes stay theirs to change (a classmethod setting ``cls.name``), so
        # they are not frozen as unittest's are: the hot snapshots keep their namespaces
        # around the import and every call, where any change is the candidate's
        run.test_classes = _test_classes(tests, cls)
        guard = policy.guard = calls.make_module_guard(self.alarm, trusted, cand)
        calls.guard_modules(guard)
        index = _PREPARED.pop() if _PREPARED else snapshot.Index()

        def made(value: Any) -> bool:
            return bool(calls.made_by_candidate(value, cand))

        before, hot = index.take(), snapshot.take_hot(tests, run.test_classes)
        threads = _thread._count()
        out.write('{"started": true}\n')
        record["candidate_ran"] = True
        outcome, message, missing = st.step([], exec, (code, cand), self.deadline,
                                            invoke=calls.INVOKE)
        # the import's check and the first test's snapshot in one pass (what the harness
        # does until that test, binding the tests' names, changes no module)
        found = snapshot.changes(hot)
        changed, start = index.retake(before, only=made)
        for why in found + changed:
            self.alarm(f"{why} while it was imported")
        calls.guard_modules(guard)  # the modules its import brought
        run.threads_left(threads)
        if outcome != "pass":
            if outcome == "fail":
                message = "candidate failed to import:\n" + message
            record["import"] = [outcome, message, missing]
            return
        record["import"] = ["pass", "", ""]
        for name in imported:
            # as upstream, which runs the candidate's source and then the tests' in one module:
            # once the candidate's module code has run, the tests' imports land in its
            # namespace (rebinding a name it bound), so its functions may use a module or a
            # name only the test source imports (``from string import punctuation``:
            # BigCodeBench/1085; ``import datetime`` over the prompt's ``from datetime import
            # datetime``: 760); its module code ran without them, and nothing else of the
            # tests' lands there
            if name in tests:
                cand[name] = tests[name]
        self._bind(tests, cand, from_candidate, run, allowed)
        problem = _class_tests(cls, self.names, codes)
        if problem is not None:
            self.alarm(problem)
            return
        for n, name in enumerate(self.names):
            outcome, message, missing = st.step(trust, run_one, (cls, name), self.deadline,
                                                teardown=untrust)
            if outcome != "timeout":  # a test still running has not undone its own patches
                # the check of this test and the next test's snapshot, in one pass
                found, start = index.retake(start, only=made)
                for why in found:
                    self.alarm(f"{why} during {name}")
            if run.timed_out and outcome != "pass":
                outcome, message = "timeout", f"time limit of {self.limit:g} s exceeded"
            record["tests"][n] = [name, outcome, message, missing]
            if outcome == "timeout":
                break
        if st.forged:
            self.alarm("wrote to the harness's pipe")

    def _bind(self, tests: dict[str, Any], cand: dict[str, Any], names: list[str],
              run: Any, allowed: set[Any]) -> None:
        """Bind in the test module the names it expects from the candidate's module that the
        reference did not give: functions as proxies, classes as they are (their code may
        run on the test threads), modules only when they are the libraries' own, other values
        as they are."""
        for name in names:
            if name not in cand:
                continue
            value = cand[name]
            if isinstance(value, types.ModuleType):
                if sys.modules.get(value.__name__) is not value:
                    self.alarm(f"bound {name} to a module that is not the library's own")
                    continue
                tests[name] = value
            elif isinstance(value, type):
                # its ordinary methods run on call threads; its special methods (the tests'
                # comparisons, ``str``) still run on the tests' threads, allowed there
                calls.wrap_class(value, run)
                for klass in type.__dict__["__mro__"].__get__(value):
                    for member in type.__dict__["__dict__"].__get__(klass).values():
                        fn = getattr(member, "__func__", member)
                        code = getattr(fn, "__code__", None)
                        if isinstance(code, types.CodeType):
                            allowed.update(_code_objects(code))
                tests[name] = value
            elif callable(value) and isinstance(value, (types.FunctionType, types.MethodType)):
                tests[name] = calls.make_proxy(run, name, name)
            else:
                tests[name] = value


#: The snapshot index :func:`prepare` built in the fork server (taken by the run, before its
#: candidate runs).
_PREPARED: list[Any] = []


def prepare() -> None:
    """Called once by the fork server, after its preloading and before any run: build the
    snapshot index of every module imported now (:meth:`snapshot.Index.prebuild`), which each
    run forked from the server then only refreshes and grows."""
    index = snapshot.Index()
    index.prebuild()
    _PREPARED[:] = [index]


def main(payload: dict[str, Any], out: Any) -> None:
    """Run ``payload`` (see the module docstring) and write one sealed JSON line to ``out``."""
    started, cpu0 = _perf(), _cpu()
    state = _Run(payload)
    try:
        state.run(out)
        record = state.record
    except BaseException as exc:
        record = state.record
        text = f"{type(exc).__name__}: {exc}"
        record["harness_error"] = f"harness crashed: {text}"[:500]
    state.alarms()
    record["tamper"] = list(state.tamper)
    record["test_time_s"] = round(_perf() - started, 6)
    record["cpu_time_s"] = round(_cpu() - cpu0, 6)
    out.write(_enc(record) + "\n")
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    _exit(0)
