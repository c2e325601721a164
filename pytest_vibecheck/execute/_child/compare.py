"""The grading rules of LiveCodeBench-style tests, exactly (standard library only).

The sandbox harness loads this file by path (it runs inside the sandbox, next to it); the
host imports it as ``pytest_vibecheck.execute._child.compare``. Two named rules, one per
profile (``docs/suites.md``, "Profiles"):

``paper``
    The Vibe Checker paper's released evaluator (maszhongming/SWE-IF,
    ``swe_if/livecodebench_utils.py``):

    - standard input: the whole output and the whole expected output, each with leading and
      trailing whitespace removed (``str.strip``), are equal as strings
      (:func:`paper_stdout_mismatch`). ``"0.5"`` and ``"0.50"`` differ; so do ``"1 2 \\n3"``
      and ``"1 2\\n3"``;
    - call-based: the function's return value ``!=`` the JSON-decoded expected value fails,
      Python equality otherwise decides (:func:`paper_value_mismatch`): ``1 == 1.0``, a tuple
      never equals a list;
    - the function under test: a top-level ``solve``, else the last top-level function, else
      the name before the code's first ``(`` (:func:`paper_entry_point`);
    - no prelude: the candidate runs as written.

``lcb``
    LiveCodeBench's official grader (``lcb_runner/evaluation/testing_util.py``):

    - standard input: both outputs are stripped, split on ``"\\n"`` and every line stripped;
      the line counts must be equal; a line pair matches when equal as strings, else when
      both split on whitespace into the same list of :class:`decimal.Decimal` values
      (exact decimal equality: ``"0.5"`` equals ``"0.50"`` and ``"5e-1"``, but
      ``"0.3333333"`` never equals ``"0.33333333"``, and integers of any size are compared
      digit for digit) (:func:`lcb_stdout_mismatch`);
    - call-based: a returned tuple becomes a list (top level only), then Python ``==``
      against the JSON-decoded expected value (:func:`lcb_value_mismatch`);
    - the function under test: ``Solution().<func_name>`` when the code defines
      ``class Solution``, else the module-level ``<func_name>`` (:func:`lcb_entry_point`);
    - the prelude :data:`LCB_PRELUDE` (LiveCodeBench's ``import_string``) runs before the
      candidate, with integer/string conversions allowed up to 50,000 digits
      (:func:`int_max_str_digits`).

Neither rule has a floating-point tolerance: an earlier version of this project accepted
decimals within 1e-6, which matches neither official grader (issue 14).

Every ``*_mismatch`` function returns ``None`` when the output is accepted, else a one-line
reason (at most a few hundred characters) for the test report; none of them raises.
"""

from __future__ import annotations

import ast
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = [
    "GRADINGS",
    "LCB_PRELUDE",
    "entry_point",
    "int_max_str_digits",
    "lcb_entry_point",
    "lcb_stdout_mismatch",
    "lcb_value_mismatch",
    "paper_entry_point",
    "paper_stdout_mismatch",
    "paper_value_mismatch",
    "stdout_mismatch",
    "uses_prelude",
    "value_mismatch",
]

#: The grading rules this module implements (the names of the profiles that use them).
GRADINGS: tuple[str, ...] = ("paper", "lcb")

#: LiveCodeBench's prelude for call-based and stdin programs (lcb_runner ``import_string``),
#: used by the ``lcb`` rule only.
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

_SHOW = 200


def _show(text: str) -> str:
    return repr(text if len(text) <= _SHOW else text[:_SHOW] + "...")


def _check(rule: str) -> None:
    if rule not in GRADINGS:
        raise ValueError(f"unknown grading rule {rule!r}; expected one of {', '.join(GRADINGS)}")


# --------------------------------------------------------------------------- standard input


def paper_stdout_mismatch(got: str, expected: str) -> str | None:
    """The paper's stdin rule: ``got.strip() == expected.strip()``.

    ``got`` is the program's standard output and ``expected`` the test's expected output,
    both ``str``. Returns None on a match, else a reason naming the first differing line.
    (The released evaluator also drops one trailing ``-`` from the expected output; no public
    LiveCodeBench test ends with one, and a correct program printing ``-`` would fail, so
    that step is left out: docs/suites.md lists it among the deviations.)
    """
    g, e = got.strip(), expected.strip()
    if g == e:
        return None
    gl, el = g.split("\n"), e.split("\n")
    for n, (a, b) in enumerate(zip(gl, el, strict=False), 1):
        if a != b:
            return f"line {n}: got {_show(a)}, expected {_show(b)}"
    return f"expected {len(el)} line(s), got {len(gl)}"


def _stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return None


def _same_decimals(a: list[Decimal], b: list[Decimal]) -> bool:
    try:
        return a == b
    except InvalidOperation:  # a signalling NaN ("sNaN") refuses comparison: never a match
        return False


def lcb_stdout_mismatch(got: str, expected: str) -> str | None:
    """LiveCodeBench's stdin rule (``grade_stdio``): stripped lines, exact ``Decimal`` tokens.

    Returns None on a match, else a reason. See the module docstring for the rule; a line
    that is not all numbers must match exactly (after stripping).
    """
    gl, el = _stripped_lines(got), _stripped_lines(expected)
    if len(gl) != len(el):
        return f"expected {len(el)} line(s), got {len(gl)}"
    for n, (a, b) in enumerate(zip(gl, el, strict=True), 1):
        if a == b:
            continue
        da, db = _decimals(a), _decimals(b)
        if da is not None and db is not None and _same_decimals(da, db):
            continue
        return f"line {n}: got {_show(a)}, expected {_show(b)}"
    return None


def stdout_mismatch(rule: str, got: str, expected: str) -> str | None:
    """Dispatch on ``rule`` (one of :data:`GRADINGS`); raises ValueError for another name."""
    _check(rule)
    if rule == "paper":
        return paper_stdout_mismatch(got, expected)
    return lcb_stdout_mismatch(got, expected)


# --------------------------------------------------------------------------- call-based


def _short_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a candidate's object whose __repr__ fails
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 300 else text[:300] + "..."


def paper_value_mismatch(got: object, expected: Any) -> str | None:
    """The paper's call-based rule: ``got != expected`` fails.

    ``expected`` is the JSON-decoded expected output. A comparison that raises (for example
    an array whose truth value is ambiguous) fails, as it does in the released evaluator.
    """
    try:
        differs = bool(got != expected)
    except Exception as exc:
        return f"got {_short_repr(got)}; comparing it with the expected value raised {type(exc).__name__}"
    if differs:
        return f"got {_short_repr(got)}, expected {_short_repr(expected)}"
    return None


def lcb_value_mismatch(got: object, expected: Any) -> str | None:
    """LiveCodeBench's call-based rule (``grade_call_based``): a returned tuple becomes a list
    (top level only), then ``got == expected`` must hold."""
    if isinstance(got, tuple):
        got = list(got)
    try:
        same = bool(got == expected)
    except Exception as exc:
        return f"got {_short_repr(got)}; comparing it with the expected value raised {type(exc).__name__}"
    if not same:
        return f"got {_short_repr(got)}, expected {_short_repr(expected)}"
    return None


def value_mismatch(rule: str, got: object, expected: Any) -> str | None:
    """Dispatch on ``rule`` (one of :data:`GRADINGS`); raises ValueError for another name."""
    _check(rule)
    if rule == "paper":
        return paper_value_mismatch(got, expected)
    return lcb_value_mismatch(got, expected)


# --------------------------------------------------------------------------- entry points


def paper_entry_point(code: str) -> str:
    """The name of the function the paper's evaluator calls (``find_entry_point_name``).

    A top-level (async) function named ``solve``; else the top-level function defined last;
    else (no top-level function, or code that does not parse) the last word before the
    code's first ``(``. Returns ``""`` when even that finds nothing.
    """
    head = code.strip().split("(", 1)[0].split()
    fallback = head[-1] if head else ""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return fallback
    names = [
        (node.lineno, node.name)
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    if not names:
        return fallback
    if any(name == "solve" for _, name in names):
        return "solve"
    return max(names)[1]


def lcb_entry_point(code: str, func_name: str) -> tuple[bool, str]:
    """``(use_solution_class, name)`` for LiveCodeBench: its grader instantiates
    ``Solution`` when the text ``class Solution`` occurs in the code, and otherwise looks the
    function up in the module."""
    return ("class Solution" in code, func_name)


def entry_point(rule: str, code: str, func_name: str) -> tuple[bool, str]:
    """``(use_solution_class, name)`` of the callable under test for ``rule``: the paper's
    rule never uses a class; see :func:`paper_entry_point` and :func:`lcb_entry_point`."""
    _check(rule)
    if rule == "paper":
        return (False, paper_entry_point(code))
    return lcb_entry_point(code, func_name)


def int_max_str_digits(rule: str) -> int | None:
    """The limit on int/str conversions the candidate runs with: LiveCodeBench's grader
    raises it to 50,000 digits (``compute_code_generation_metrics``); the paper's keeps the
    interpreter's default (None: 4,300 digits on Python >= 3.11)."""
    _check(rule)
    return 50000 if rule == "lcb" else None


def uses_prelude(rule: str) -> bool:
    """Whether ``rule`` runs :data:`LCB_PRELUDE` before the candidate (only ``lcb``)."""
    _check(rule)
    return rule == "lcb"
