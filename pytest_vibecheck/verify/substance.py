"""What the code of a reply is, as a reviewer reads it: nothing to run, or code hidden in strings.

Two judgments that no single instruction's verifier makes, and that every verdict depends on
(docs/verifiers.md, "Replies a reviewer would not sign"; issue 23):

* **Nothing to run** (:func:`nothing_to_run`): a module whose every statement is an import, a
  docstring or another constant, ``pass`` or ``...``, or a stub (a ``def`` or ``class``
  without decorators whose body is only such statements or ``raise NotImplementedError``).
  A reply whose code is that has no code (:data:`~pytest_vibecheck.verify.nocode.NO_CODE_RULE`):
  it follows no instruction and its tests are not run.
* **Hidden code** (:func:`hidden_code`): the code runs code built at run time: ``exec``,
  ``eval`` or ``compile`` of anything but text read from standard input (``eval(input())``),
  ``types.FunctionType`` / ``LambdaType`` / ``CodeType``, ``marshal.loads``, ``timeit`` of a
  string, the ``code`` and ``codeop`` interpreters, ``pickle.loads`` of bytes written in the
  source, and these reached through aliases, ``getattr`` with a name the screen can evaluate
  (``"ex" + "ec"``), ``builtins``, ``__import__`` (the shared static screen,
  :mod:`pytest_vibecheck.screen`, rules :data:`HIDDEN_RULES`). The code under review is then
  not the code that runs, so it violates every code-level instruction, with one
  :data:`HIDDEN_CODE_RULE` violation per construct, at the construct.

Both read the code only (never run it) and cost little on ordinary code: a regular
expression rules most code out before anything is parsed (:data:`_HIDDEN_HINT`,
:func:`_could_be_empty`). Measured on every real solution the project has (6,902:
``benchmarks/substance_real.py``): no hidden code; the replies with nothing to run are listed
there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from pytest_vibecheck.screen import screen
from pytest_vibecheck.verify.extract import parse_shared
from pytest_vibecheck.verify.verdict import Violation

__all__ = ["HIDDEN_CODE_RULE", "HIDDEN_RULES", "hidden_code", "inert_module", "nothing_to_run"]

#: Violation rule of code that runs code built at run time.
HIDDEN_CODE_RULE = "hidden-code"

#: The rules of :mod:`pytest_vibecheck.screen` that mean "the code that runs is not the code
#: under review".
HIDDEN_RULES = frozenset({"exec-any", "exec-dynamic", "function-build", "unpickle-literal"})

#: Code without any of these cannot reach a construct of :data:`HIDDEN_RULES` (the screen
#: resolves names through imports, ``getattr``, ``builtins``, ``__import__``,
#: ``sys.modules``, ``vars``/``__dict__``; every route names one of these words).
_HIDDEN_HINT = re.compile(
    r"(?<![.\w])(?:exec|eval|compile)\b|builtins|getattr|__import__|importlib|modules|__dict__"
    r"|\bvars\b|FunctionType|LambdaType|CodeType|marshal|timeit|loads|\bcodeop\b|\bcode\b"
)

#: String literals (any prefix but ``f``/``t``, which :func:`_could_be_empty` parses) and
#: comments, left to right as the tokenizer reads them.
_STRINGS_AND_COMMENTS = re.compile(
    r"'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^\"\\]|\\.|\"(?!\"\"))*\"\"\""
    r"|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|#[^\n]*",
    re.DOTALL,
)
#: An f-string or t-string prefix: its fields may hold quotes (Python 3.12+).
_FORMATTED = re.compile(r"(?i)(?<![\w])[rb]?[ft][rb]?['\"]")
#: Keywords that only a statement has, and augmented assignments: none is in a module with
#: nothing to run, and one of them is in almost every real solution (``return``).
_STATEMENT = re.compile(
    r"\b(?:return|while|with|try|except|finally|del|global|nonlocal|assert|break|continue|elif)\b"
    r"|(?:\+|-|\*\*?|//?|%|&|\||\^|>>|<<|@)="
)


def _could_be_empty(code: str) -> bool:
    """False when ``code`` certainly has something to run (a statement keyword outside its
    strings and comments); True when only a parse can tell."""
    if _FORMATTED.search(code):
        return True
    return _STATEMENT.search(_STRINGS_AND_COMMENTS.sub(" ", code)) is None


def _not_implemented(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _inert(stmt: ast.stmt, in_body: bool) -> bool:
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return not stmt.decorator_list and all(_inert(s, True) for s in stmt.body)
    return in_body and _not_implemented(stmt)


def inert_module(tree: ast.Module) -> bool:
    """True when every statement of ``tree`` has nothing to run (see :func:`nothing_to_run`)."""
    return all(_inert(s, False) for s in tree.body)


def nothing_to_run(code: str, parse: Callable[[str], ast.Module] = parse_shared) -> bool:
    """True when ``code`` parses and has nothing to run: every statement is an import, a
    constant expression (a docstring, ``...``), ``pass`` or a stub (``def``/``class`` without
    decorators whose body is only such statements or ``raise NotImplementedError``). Blank
    code is True; code that does not parse is False (it has code; the verifiers report the
    syntax error). ``parse`` defaults to the verifiers' shared parse."""
    if not code.strip():
        return True
    if not _could_be_empty(code):
        return False
    try:
        tree = parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return inert_module(tree)


def hidden_code(code: str) -> tuple[Violation, ...]:
    """The :data:`HIDDEN_CODE_RULE` violations of ``code``: one per construct that runs code
    built at run time (see the module docstring), at the construct (1-based line and column
    in characters); ``()`` for code without one and for code that does not parse."""
    if _HIDDEN_HINT.search(code) is None:
        return ()
    found = screen(code, rules=HIDDEN_RULES)
    return tuple(
        Violation(
            HIDDEN_CODE_RULE, f.line, f.column,
            f"{f.reason}: the code that runs is not the code under review, so no code-level "
            "instruction is followed",
        )
        for f in found
    )
