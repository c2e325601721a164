"""Preparing a run (inside the sandbox; loaded by ``harness.py``): compiling the candidate and
the tests, the module they run in, the modules the tests import (imported first), the grading
rule of the LiveCodeBench kinds (``compare.py``).
"""

from __future__ import annotations

import builtins
import contextlib
import linecache
import sys
import traceback
import types
from typing import Any

_parts: dict[str, Any] = globals()["_VIBECHECK_PARTS"]  # loaded before this file (harness.py)
compare = _parts["compare"]


def compile_code(source: str, filename: str) -> types.CodeType:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec", dont_inherit=True)


def compile_error(exc: SyntaxError) -> list[str]:
    text = "".join(traceback.format_exception_only(type(exc), exc))
    return ["fail", "candidate does not compile: " + text, ""]


def new_module(name: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(
        {"__builtins__": builtins, "__file__": filename, "__package__": None, "__doc__": None}
    )
    sys.modules[name] = module
    return module


def preimport(names: list[str]) -> None:
    """Import the modules the tests import, before the candidate (so their snapshot is
    taken before the candidate can change them); a module that fails to import is left out."""
    import importlib

    for name in names:
        with contextlib.suppress(BaseException):
            importlib.import_module(name)


def grading(payload: dict[str, Any]) -> str:
    """The payload's grading rule; the rule's int/str digit limit is applied to this process
    (and so to the forked stdin cases)."""
    rule = str(payload.get("grading", "paper"))
    if rule not in compare.GRADINGS:
        raise ValueError(f"unknown grading rule {rule!r}")
    digits = compare.int_max_str_digits(rule)
    if digits is not None and hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(digits)
    return rule


def prelude(rule: str) -> str:
    return str(compare.LCB_PRELUDE) if compare.uses_prelude(rule) else ""

