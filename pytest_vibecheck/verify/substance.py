"""What the code of a reply is, as a reviewer reads it: nothing to run, or code hidden in strings.

Two judgments that no single instruction's verifier makes, and that every verdict depends on
(docs/verifiers.md, "Replies a reviewer would not sign"; issue 23):

* **Nothing to run** (:func:`nothing_to_run`): a module whose every statement is an import, a
  docstring or another constant, ``pass`` or ``...``, an annotation without a value,
  ``global``, an ``if`` or ``try`` of only such statements, or a stub (a ``def`` or ``class``
  without decorators whose body is only such statements or ``raise NotImplementedError``).
  A reply whose code is that has no code (:data:`~pytest_vibecheck.verify.nocode.NO_CODE_RULE`):
  it follows no instruction and its tests are not run.
* **Hidden code** (:func:`hidden_code`): the code runs code built at run time: ``exec``,
  ``eval`` or ``compile`` of anything but text read from standard input (``eval(input())``),
  ``types.FunctionType`` / ``LambdaType`` / ``CodeType``, ``marshal.loads``, ``timeit`` of a
  string, the ``code`` and ``codeop`` interpreters, ``pickle.loads`` of bytes written in the
  source, reading or replacing a code object (``__code__``, ``co_code``), reaching
  ``__builtins__``, Python run on a string in a child process (``[sys.executable, "-c", SRC]``),
  and these reached through aliases, ``getattr`` with a name the screen can evaluate
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
HIDDEN_RULES = frozenset({
    "exec-any", "exec-dynamic", "function-build", "function-code", "unpickle-literal", "builtins-reach",
    "string-name",  # only where the name is __builtins__ or __import__ (_HIDDEN_NAMES)
})
#: ``string-name`` findings kept: a string naming one of these reaches code built at run time.
_HIDDEN_NAMES = ("names __builtins__ ", "names __import__ ")
#: Python run on code given in a string, in a child process (``[sys.executable, "-c", SRC]``,
#: ``os.system("python3 -c '...'")``).
_CHILD_PYTHON = re.compile(
    r"""(?:\bsys\.executable|["'](?:[\w./-]*/)?python[0-9.]*["'])\s*,\s*["']-c["']"""
    r"""|["'](?:[\w./-]*/)?python[0-9.]*\s+-c\s"""
)

#: Code without any of these cannot reach a construct of :data:`HIDDEN_RULES` (the screen
#: resolves names through imports, ``getattr``, ``builtins``, ``__import__``,
#: ``sys.modules``, ``vars``/``__dict__``; every route names one of these words).
_HIDDEN_HINT = re.compile(
    r"(?<![.\w])(?:exec|eval|compile)\b|builtins|getattr|__import__|importlib|modules|__dict__"
    r"|\bvars\b|FunctionType|LambdaType|CodeType|marshal|timeit|pickle|\bdill\b|\bcodeop\b"
    r"|\bimport\s+code\b|\bfrom\s+code\b|__code__|func_code|\bco_(?:code|consts)\b"
)

#: Words of which :data:`_HIDDEN_HINT` needs one: substring tests, much faster than the regex.
_HINT_WORDS = (
    "exec", "eval", "compile", "builtins", "getattr", "__import__", "importlib", "modules",
    "__dict__", "vars", "FunctionType", "LambdaType", "CodeType", "marshal", "timeit", "pickle",
    "dill", "codeop", "import code", "from code", "__code__", "func_code", "co_co",
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
    r"\b(?:return|while|with|del|assert|break|continue)\b"
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
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass, ast.Global, ast.Nonlocal)):
        return True
    if isinstance(stmt, ast.AnnAssign):
        return stmt.value is None  # ``x: int`` binds nothing
    if isinstance(stmt, ast.If):  # ``if __name__ == "__main__": pass``
        return all(_inert(s, in_body) for s in (*stmt.body, *stmt.orelse))
    if isinstance(stmt, ast.Try):
        return all(_inert(s, in_body) for s in (*stmt.body, *stmt.orelse, *stmt.finalbody)) and all(
            _inert(s, in_body) for h in stmt.handlers for s in h.body
        )
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
    found: list[tuple[int, int, str]] = []
    if any(word in code for word in _HINT_WORDS) and _HIDDEN_HINT.search(code) is not None:
        found.extend(
            (f.line, f.column, f.reason) for f in screen(code, rules=HIDDEN_RULES)
            if f.rule != "string-name" or f.reason.startswith(_HIDDEN_NAMES)
        )
    if "-c" in code:
        for m in _CHILD_PYTHON.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            found.append((line, m.start() - code.rfind("\n", 0, m.start()),
                          "runs Python on code given in a string, in a child process (python -c)"))
    return tuple(
        Violation(
            HIDDEN_CODE_RULE, line, column,
            f"{reason}: the code that runs is not the code under review, so no code-level "
            "instruction is followed",
        )
        for line, column, reason in sorted(set(found))
    )
