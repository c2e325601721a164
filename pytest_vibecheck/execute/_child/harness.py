"""Runs a problem's tests against a candidate program inside the sandbox (standard library only).

Loaded by the sandbox bootstrap, which calls ``main(payload, out)``; ``out`` is the sealed
result channel (:class:`boot.Channel`). One JSON line is written to it::

    {"kind": str, "import": [outcome, message, missing], "tests": [[name, outcome, message,
     missing], ...], "cases": [[outcome, message, missing], ...], "tamper": [reason, ...],
     "test_time_s": float, "cpu_time_s": float, "harness_error": str (only when the harness itself failed),
     "candidate_ran": bool}

``outcome`` is ``pass``, ``fail``, ``timeout`` or ``notrun``; ``missing`` is the module name
of a ``ModuleNotFoundError``, ``nltk_data:ID=PATH`` for NLTK's ``LookupError`` for missing
data (the evaluator decides whether it is the environment's fault: it checks that the module
or data is really absent), or ``""``. The harness never decides ``error`` or
``skipped``: the evaluator does, from what it observes itself.

How a verdict stays out of the candidate's reach (``docs/sandbox.md``, "Verdict integrity"):

- the harness's code runs on the main thread and never calls code of the candidate; the
  candidate's import, the test source and every test run on threads started with
  ``_thread.start_new_thread`` whose target is a C-level chain (``functools.partial`` of
  ``collections.deque(map(operator.call, steps), 0)``): first the work
  (:func:`guard.run_one`), then ``os.write(pipe, token)`` of a one-time random token. A test
  passes only when its token arrives: the candidate would have to produce 16 random bytes
  that exist only inside that chain, which no Python object it can reach refers to
  (``steps.py``);
- a PEP 578 audit hook (which Python code cannot remove) refuses what would reach the
  harness's or the tests' frames and objects: ``sys._getframe`` / ``tb_frame`` /
  ``gi_frame`` on a stack that holds harness or test code, ``gc.get_referrers`` and friends,
  ``sys._current_frames``, tracing and profiling hooks, new audit hooks, raw memory access
  through ``ctypes``, ``/proc/*/mem``, changing the classes of ``unittest`` or of the tests,
  swapping ``sys.unraisablehook``; each refused attempt is recorded as tampering
  (``audit.py``);
- references to the test framework and to the modules the tests import are taken before the
  candidate runs and compared after its import and after every test (``snapshot.py``); the
  result is sealed with a key that lives only in this thread's frames.

Test kinds (``payload["kind"]``):

- ``bigcodebench-unittest``: candidate and ``TestCases`` executed in one module named
  ``__test__`` (as BigCodeBench's harness does); each test method named in
  ``payload["test_names"]`` (parsed from the test source by the evaluator) runs;
- ``humaneval``: ``check(candidate_function)``;
- ``functional``: LiveCodeBench call-based tests (the entry point called with the JSON
  arguments of each case);
- ``stdin``: LiveCodeBench standard-input programs, each case in a forked process with its
  own stdin and stdout (a real file: ``sys.stdin.buffer`` works) run as ``__main__`` (this
  process never runs the candidate).

The kinds run in ``run_unittest.py`` (``bigcodebench-unittest``, ``humaneval``),
``run_functional.py`` and ``run_stdin.py``. For the two LiveCodeBench kinds, ``payload["grading"]`` (``"paper"``, the default, or
``"lcb"``) names the grading rule of the sibling ``compare.py``: how the entry point is found,
whether LiveCodeBench's prelude runs first, and how outputs are compared.

The parts (:data:`PARTS`) are loaded by path when this file is loaded, before any candidate
code runs, as private modules: not in ``sys.modules``, with this file's builtins (the private
copy the bootstrap gives it, so code under test that patches ``builtins`` changes nothing the
harness calls), each seeing the parts loaded before it in ``_VIBECHECK_PARTS``.
"""

# ruff: noqa: PTH100, PTH118, PTH120, PTH123
# (os.path, not pathlib: the harness keeps its imports to the minimum it needs.)

# ruff: noqa: PTH100, PTH118, PTH120, PTH123
# (os.path, not pathlib: the harness keeps its imports to the minimum it needs.)

from __future__ import annotations

# Imported before any candidate code runs, so the guard protects and snapshots them.
import _thread  # noqa: F401
import builtins  # noqa: F401
import collections  # noqa: F401
import contextlib
import ctypes  # noqa: F401
import functools  # noqa: F401
import json
import json.encoder
import linecache  # noqa: F401
import math
import operator  # noqa: F401
import os
import re  # noqa: F401
import select  # noqa: F401
import signal  # noqa: F401
import sys
import tempfile  # noqa: F401
import time
import traceback
import types
import unittest
import unittest.mock  # noqa: F401
import weakref  # noqa: F401
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))

#: The parts of the harness, in load order (each may use those before it).
PARTS = (
    "guard.py",
    "compare.py",
    "values.py",
    "audit.py",
    "steps.py",
    "snapshot.py",
    "candidate.py",
    "run_unittest.py",
    "run_functional.py",
    "run_stdin.py",
)

#: Every file of the sandbox child (this folder); the audit hook protects their frames and
#: functions, and a test checks that the list is complete.
CHILD_FILES = ("harness.py", "boot.py", "zygote.py", *PARTS)

_VIBECHECK_PARTS: dict[str, types.ModuleType] = {}


def _load_sibling(name: str) -> types.ModuleType:
    """A sibling file loaded by path: inside the sandbox this file is itself run by path."""
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
guard = _VIBECHECK_PARTS["guard"]
compare = _VIBECHECK_PARTS["compare"]

# Pristine references, taken when this file is loaded (before any candidate code runs): the
# main thread only ever calls these, never a module attribute looked up later.
_exit = os._exit
_perf = time.perf_counter
_times = os.times
_encode_str: Any = (
    getattr(json.encoder, "c_encode_basestring_ascii", None)
    or json.encoder.py_encode_basestring_ascii
)
_dict_items = dict.items
_State = _VIBECHECK_PARTS["steps"].State


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its waited-for children (for the
    scheduler's expected durations only, never a verdict)."""
    t = _times()
    return t.user + t.system + t.children_user + t.children_system


def _enc(value: object) -> str:
    """JSON text of ``value`` (dict, list, str, int, float, bool, None) built from pristine
    C functions only: patching ``json`` changes nothing here."""
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


RUNNERS = {
    "bigcodebench-unittest": _VIBECHECK_PARTS["run_unittest"].run,
    "humaneval": _VIBECHECK_PARTS["run_unittest"].run,
    "functional": _VIBECHECK_PARTS["run_functional"].run,
    "stdin": _VIBECHECK_PARTS["run_stdin"].run,
}


def main(payload: dict[str, Any], out: Any) -> None:
    """Run ``payload`` (see the module docstring) and write one sealed JSON line to ``out``."""
    started, cpu0 = _perf(), _cpu()
    st = _State()
    write = st.out_write = out.write
    try:
        record = RUNNERS[payload["kind"]](payload, st)
    except BaseException as exc:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        record = {"kind": str(payload.get("kind")), "harness_error": f"harness crashed: {text}"}
    record["tamper"] = list(st.tamper)
    record["candidate_ran"] = st.candidate_ran
    record["test_time_s"] = round(_perf() - started, 6)
    record["cpu_time_s"] = round(_cpu() - cpu0, 6)
    write(_enc(record) + "\n")
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    _exit(0)
