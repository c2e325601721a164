"""What a problem's tests are, read from the test source by the evaluator (parsed, never run).

The harness runs exactly the tests named here, and the evaluator accepts a result only when it
reports each of them: a candidate cannot make tests disappear, add its own, or make the suite
run none (``docs/sandbox.md``, "Verdict integrity").
"""

from __future__ import annotations

import ast
import threading
import warnings
from dataclasses import dataclass
from functools import lru_cache

#: ``ast.parse`` is not thread-safe in CPython 3.11/3.12 (gh-106905); the runner uses threads.
_AST_LOCK = threading.Lock()

#: ``unittest``'s default ``TestLoader.testMethodPrefix``.
TEST_PREFIX = "test"


@dataclass(frozen=True)
class ExpectedTests:
    """``class_name``: the ``unittest.TestCase`` class the harness runs (``TestCases`` in
    BigCodeBench); ``names``: its test methods in ``unittest``'s order (sorted by name),
    including those of base classes defined in the same source; ``imports``: the modules the
    test source imports (top level and dotted, e.g. ``numpy``, ``numpy.testing``), which the
    harness imports and snapshots before the candidate runs; ``error``: why the source
    cannot be used (a syntax error, no test class, no test), else None."""

    class_name: str
    names: tuple[str, ...]
    imports: tuple[str, ...]
    error: str | None = None


def _imports(tree: ast.AST) -> tuple[str, ...]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    out: list[str] = []
    for name in found:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            dotted = ".".join(parts[:i])
            if dotted not in out and dotted != "__future__":
                out.append(dotted)
    return tuple(out)


def _methods(classes: dict[str, ast.ClassDef], name: str, seen: set[str]) -> set[str]:
    node = classes.get(name)
    if node is None or name in seen:
        return set()
    seen.add(name)
    names = {
        item.name
        for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        and item.name.startswith(TEST_PREFIX)
    }
    for base in node.bases:
        if isinstance(base, ast.Name):
            names |= _methods(classes, base.id, seen)
    return names


@lru_cache(maxsize=4096)
def expected_tests(kind: str, test_code: str, class_name: str = "TestCases") -> ExpectedTests:
    """The tests of a problem of test kind ``kind`` (see :class:`ExpectedTests`).

    For ``humaneval`` the one test is ``check``; for the LiveCodeBench kinds the cases are
    counted by the caller and ``names`` is empty.
    """
    with _AST_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dataset's invalid escapes are not the run's warnings
        try:
            tree = ast.parse(test_code or "")
        except SyntaxError as exc:
            return ExpectedTests(class_name, (), (), f"the test source does not parse: {exc.msg}")
    imports = _imports(tree)
    if kind == "humaneval":
        has_check = any(
            isinstance(n, ast.FunctionDef) and n.name == "check" for n in tree.body
        )
        error = None if has_check else "the test source defines no check function"
        return ExpectedTests("", ("check",), imports, error)
    if kind != "bigcodebench-unittest":
        return ExpectedTests("", (), imports)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if class_name not in classes:
        return ExpectedTests(class_name, (), imports, f"the test source defines no {class_name}")
    names = tuple(sorted(_methods(classes, class_name, set())))
    error = None if names else f"{class_name} has no test methods"
    return ExpectedTests(class_name, names, imports, error)


def _parse(code: str) -> ast.Module | None:
    with _AST_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(code or "")
        except (SyntaxError, ValueError):
            return None


@lru_cache(maxsize=4096)
def attribute_chains(test_code: str) -> tuple[tuple[str, ...], ...]:
    """The attribute chains the test source reads from a name (``np.testing.assert_array_equal``
    -> ``("np", "testing", "assert_array_equal")``), longest first, at most 2,000: the harness
    looks each up before the candidate runs, so what loads lazily is loaded and recorded."""
    tree = _parse(test_code)
    if tree is None:
        return ()
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        parts: list[str] = []
        cur: ast.expr = node
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id != "self":
            found.add((cur.id, *reversed(parts)))
    return tuple(sorted(found, key=lambda c: (-len(c), c)))[:2000]


@lru_cache(maxsize=4096)
def trusted_bindings(program: str) -> tuple[str, ...]:
    """The statements of a task's reference program that bind what its prompt gives the tests:
    its top-level imports and its assignments of literal values to names
    (``OUTPUT_DIR = './output'``), one statement each, in order. The harness binds the names
    the tests expect from these rather than from the candidate, which could rebind them."""
    tree = _parse(program)
    if tree is None:
        return ()
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not (
            isinstance(node, ast.ImportFrom) and (node.level or node.module == "__future__")
        ):
            out.append(ast.unparse(node))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not all(isinstance(t, ast.Name) for t in targets):
                continue
            try:
                ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            out.append(ast.unparse(node))
    return tuple(out)
