"""Loaders: source benchmark files -> :class:`~pytest_vibecheck.suites.problem.Problem` records.

Four source formats (paper §3.1 augments the first two; the last two are fallback suites):

- BigCodeBench, Hugging Face field layout (``task_id``, ``instruct_prompt``, ``code_prompt``,
  ``canonical_solution``, ``test``, ``entry_point``, ``libs`` as a Python-repr string,
  ``doc_struct`` as a JSON string): :func:`load_bigcodebench`.
- LiveCodeBench (``question_id``, ``question_content``, ``starter_code``, ``public_test_cases``
  whose ``testtype`` is ``stdin`` or ``functional``): :func:`load_livecodebench`.
- HumanEval / HumanEval+ (``prompt``, ``canonical_solution``, ``test`` defining ``check``):
  :func:`load_humaneval`.
- MBPP+ (``prompt``, ``canonical_solution``, ``assertion``): :func:`load_mbppplus`.

Files are JSONL, optionally gzip-compressed (``.gz``). Every malformed input raises
:class:`~pytest_vibecheck.errors.DataFileError` naming the file, the line and the field.
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError
from pytest_vibecheck.execute.spec import TestCase, TestSpec
from pytest_vibecheck.suites.jsonl import read_jsonl
from pytest_vibecheck.suites.problem import Problem

#: The paper's / EvalPlus's instruct wrapper for HumanEval and MBPP+ prompts.
EVALPLUS_INSTRUCT = (
    "Please provide a self-contained Python script that solves the following problem "
    "in a markdown code block:\n```\n{prompt}\n```\n"
)

@dataclass(frozen=True)
class SkippedRecord:
    """A source record a loader left out, and why (e.g. a problem with no public tests)."""

    task_id: str
    line: int
    reason: str


# ---------------------------------------------------------------- reading




class _Row:
    """One source record with typed field access that reports file, line and field."""

    def __init__(self, path: Path, line: int, data: Mapping[str, Any]) -> None:
        self.path = path
        self.line = line
        self.data = data

    def fail(self, message: str, field: str | None = None) -> DataFileError:
        return DataFileError(self.path, message, field=field, line=self.line)

    def text(self, key: str, *, allow_empty: bool = True) -> str:
        if key not in self.data:
            raise self.fail("required field is missing", key)
        value = self.data[key]
        if not isinstance(value, str):
            raise self.fail(f"expected a string, got {type(value).__name__}", key)
        if not allow_empty and not value.strip():
            raise self.fail("must not be empty", key)
        return value

    def opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(f"expected a string, got {type(value).__name__}", key)
        return value


def _parse(code: str) -> ast.Module:
    """``ast.parse`` without the SyntaxWarnings of dataset code (e.g. invalid escapes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(code)


def _parses(row: _Row, code: str, field: str) -> None:
    try:
        _parse(code)
    except SyntaxError as exc:
        raise row.fail(f"is not valid Python: {exc.msg} (line {exc.lineno})", field) from None


def _top_level_imports(code: str) -> tuple[str, ...]:
    """Sorted top-level module names imported anywhere in ``code`` (empty if it does not parse)."""
    try:
        tree = _parse(code)
    except SyntaxError:
        return ()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return tuple(sorted(names))


def _read_id_list(path: str | Path, json_key: str | None = None) -> frozenset[str]:
    """Task ids from a text file (one per line) or a JSON list / object of lists.

    For a JSON object, ``json_key`` names the list to use.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(p, f"cannot read: {exc}") from None
    if p.suffix == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFileError(p, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
        if isinstance(doc, dict):
            if json_key is None or json_key not in doc:
                raise DataFileError(p, "expected a list of task ids", field=json_key)
            doc = doc[json_key]
        if not isinstance(doc, list) or not all(isinstance(x, str) for x in doc):
            raise DataFileError(p, "expected a list of task id strings", field=json_key)
        return frozenset(doc)
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


# ---------------------------------------------------------------- BigCodeBench


def load_bigcodebench(
    path: str | Path,
    *,
    suite: str = "bigcodebench",
    network_free: str | Path | None = None,
    stdlib_only: str | Path | None = None,
) -> list[Problem]:
    """Load BigCodeBench in its Hugging Face field layout.

    - ``prompt`` is ``instruct_prompt`` (paper §3.1 uses the instruct split as the query);
    - ``canonical_solution`` is ``code_prompt + canonical_solution``, a full runnable
      program (checked to parse);
    - the test kind is ``bigcodebench-unittest`` (``TestCases`` run against the program
      imported as a module), entry point ``task_func``;
    - ``libs`` (a Python-repr string such as ``"['random', 'itertools']"``) is parsed with
      :func:`ast.literal_eval`; ``doc_struct`` (a JSON string) goes to
      ``metadata["doc_struct"]``.

    ``network_free`` is a text file of task ids needing no network (BigCodeBench's
    ``network-free-set.txt``) and ``stdlib_only`` a JSON file of standard-library-only task
    ids (a list, or an object whose ``stdlib_only_by_all_imports`` list is used); when
    given, ``metadata["network_free"]`` / ``metadata["stdlib_only"]`` are set (``bool``).

    Raises :class:`DataFileError` (file, line, field) for a malformed record.
    """
    p = Path(path)
    nf = _read_id_list(network_free) if network_free is not None else None
    so = (
        _read_id_list(stdlib_only, "stdlib_only_by_all_imports")
        if stdlib_only is not None
        else None
    )
    problems: list[Problem] = []
    for line, data in read_jsonl(p):
        row = _Row(p, line, data)
        task_id = row.text("task_id", allow_empty=False)
        code_prompt = row.text("code_prompt")
        program = code_prompt + row.text("canonical_solution")
        _parses(row, program, "canonical_solution")
        test_code = row.text("test", allow_empty=False)
        _parses(row, test_code, "test")
        entry_point = row.text("entry_point", allow_empty=False)
        libs = _parse_libs(row)
        metadata: dict[str, Any] = {"doc_struct": _parse_doc_struct(row)}
        if nf is not None:
            metadata["network_free"] = task_id in nf
        if so is not None:
            metadata["stdlib_only"] = task_id in so
        problems.append(
            Problem(
                suite=suite,
                task_id=task_id,
                prompt=row.text("instruct_prompt", allow_empty=False),
                test=TestSpec(
                    kind="bigcodebench-unittest", code=test_code, entry_point=entry_point
                ),
                entry_point=entry_point,
                canonical_solution=program,
                starter_code=code_prompt,
                libs=libs,
                metadata=metadata,
            )
        )
    _check_unique(p, problems)
    return problems


def _parse_libs(row: _Row) -> tuple[str, ...]:
    if "libs" not in row.data:
        raise row.fail("required field is missing", "libs")
    raw = row.data["libs"]
    value: object = raw
    if isinstance(raw, str):
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            raise row.fail(
                f"expected a Python list literal such as \"['os']\", got {raw[:60]!r}", "libs"
            ) from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise row.fail(f"expected a list of library names, got {raw!r:.60}", "libs")
    return tuple(sorted(set(value)))


def _parse_doc_struct(row: _Row) -> dict[str, Any]:
    raw = row.data.get("doc_struct")
    if raw is None:
        return {}
    value: object = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise row.fail(f"not a valid JSON string: {exc.msg}", "doc_struct") from None
    if not isinstance(value, dict):
        raise row.fail(f"expected a JSON object, got {type(value).__name__}", "doc_struct")
    return value


def _check_unique(path: Path, problems: list[Problem]) -> None:
    seen: set[str] = set()
    for n, prob in enumerate(problems):
        if prob.task_id in seen:
            raise DataFileError(
                path, f"task id {prob.task_id!r} appears twice (record {n + 1})", field="task_id"
            )
        seen.add(prob.task_id)


# ---------------------------------------------------------------- LiveCodeBench


def load_livecodebench(
    path: str | Path,
    *,
    suite: str = "livecodebench",
    skipped: list[SkippedRecord] | None = None,
) -> list[Problem]:
    """Load LiveCodeBench problems with their public tests.

    The test kind follows the public tests' ``testtype``: ``stdin`` (a program reading stdin,
    compared line by line) or ``functional`` (the starter code's method, named by
    ``func_name`` or ``metadata.func_name``, called with newline-separated JSON arguments).
    ``public_test_cases`` may be a list or a JSON string (the Hugging Face layout).

    ``prompt`` is the problem statement (``question_content``) alone: the run's profile wraps
    it into the query the model sees (the paper's "Problem Type" preamble, or
    LiveCodeBench's ``### Question`` template: ``generate/protocols.py``); there is no
    canonical solution. ``metadata`` holds ``difficulty``, ``platform``, ``contest_date``,
    ``contest_id`` and ``question_title``.

    Problems without public tests cannot be graded and are left out; each is appended to
    ``skipped`` when a list is given. Raises :class:`DataFileError` for a malformed record
    (including tests that mix ``stdin`` and ``functional``).
    """
    p = Path(path)
    problems: list[Problem] = []
    for line, data in read_jsonl(p):
        row = _Row(p, line, data)
        task_id = row.text("question_id", allow_empty=False)
        question = row.text("question_content", allow_empty=False)
        raw_tests = data.get("public_test_cases")
        if isinstance(raw_tests, str):
            try:
                raw_tests = json.loads(raw_tests) if raw_tests.strip() else []
            except json.JSONDecodeError as exc:
                raise row.fail(f"not a valid JSON string: {exc.msg}", "public_test_cases") from None
        if not raw_tests:
            if skipped is not None:
                skipped.append(SkippedRecord(task_id, line, "no public test cases"))
            continue
        if not isinstance(raw_tests, list):
            raise row.fail(f"expected a list, got {type(raw_tests).__name__}", "public_test_cases")
        cases: list[TestCase] = []
        kinds: set[str] = set()
        for n, case in enumerate(raw_tests):
            where = f"public_test_cases[{n}]"
            if not isinstance(case, dict):
                raise row.fail("expected an object with input, output and testtype", where)
            for key in ("input", "output", "testtype"):
                if not isinstance(case.get(key), str):
                    raise row.fail("expected a string", f"{where}.{key}")
            kinds.add(case["testtype"])
            cases.append(TestCase(case["input"], case["output"]))
        if len(kinds) != 1 or not kinds <= {"stdin", "functional"}:
            raise row.fail(
                f"test types {sorted(kinds)}: expected all 'stdin' or all 'functional'",
                "public_test_cases",
            )
        kind = kinds.pop()
        starter = row.opt_str("starter_code") or ""
        func_name = _func_name(row)
        if kind == "functional":
            if not starter.strip():
                raise row.fail("functional tests need starter code", "starter_code")
            if func_name is None:
                raise row.fail("functional tests need the method name", "func_name")
            prompt = question
            test = TestSpec(kind="functional", cases=tuple(cases), entry_point=func_name)
            entry: str | None = func_name
        else:
            prompt = question
            test = TestSpec(kind="stdin", cases=tuple(cases))
            entry = None
        metadata = {
            key: data[key]
            for key in ("difficulty", "platform", "contest_date", "contest_id", "question_title")
            if isinstance(data.get(key), str)
        }
        problems.append(
            Problem(
                suite=suite,
                task_id=task_id,
                prompt=prompt,
                test=test,
                entry_point=entry,
                starter_code=starter or None,
                metadata=metadata,
            )
        )
    _check_unique(p, problems)
    return problems


def _func_name(row: _Row) -> str | None:
    name = row.opt_str("func_name")
    if name:
        return name
    meta = row.data.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta) if meta.strip() else {}
        except json.JSONDecodeError as exc:
            raise row.fail(f"not a valid JSON string: {exc.msg}", "metadata") from None
    if isinstance(meta, dict) and isinstance(meta.get("func_name"), str):
        return str(meta["func_name"])
    return None


# ---------------------------------------------------------------- HumanEval, MBPP+


def load_humaneval(path: str | Path, *, suite: str = "humaneval") -> list[Problem]:
    """Load HumanEval or HumanEval+ (test kind ``humaneval``: ``check(candidate)``).

    ``prompt`` wraps the function signature and docstring in EvalPlus's instruct request
    (:data:`EVALPLUS_INSTRUCT`); ``canonical_solution`` is ``prompt + canonical_solution``.
    HumanEval+'s extra inputs carry no expected outputs in the release and are not used.
    Raises :class:`DataFileError` (file, line, field) for a malformed record.
    """
    p = Path(path)
    problems: list[Problem] = []
    for line, data in read_jsonl(p):
        row = _Row(p, line, data)
        task_id = row.text("task_id", allow_empty=False)
        code_prompt = row.text("prompt", allow_empty=False)
        program = code_prompt + row.text("canonical_solution")
        _parses(row, program, "canonical_solution")
        test_code = row.text("test", allow_empty=False)
        _parses(row, test_code, "test")
        if "def check(" not in test_code:
            raise row.fail("must define check(candidate)", "test")
        entry = row.text("entry_point", allow_empty=False)
        problems.append(
            Problem(
                suite=suite,
                task_id=task_id,
                prompt=EVALPLUS_INSTRUCT.format(prompt=code_prompt.strip()),
                test=TestSpec(kind="humaneval", code=test_code, entry_point=entry),
                entry_point=entry,
                canonical_solution=program,
                starter_code=code_prompt,
                libs=_top_level_imports(program),
            )
        )
    _check_unique(p, problems)
    return problems


def load_mbppplus(path: str | Path, *, suite: str = "mbppplus") -> list[Problem]:
    """Load MBPP+ with its base assertions as a ``humaneval``-kind ``check(candidate)``.

    MBPP+'s ``assertion`` field calls the function by name (``assert f(1) == 2``); the
    loader turns it into ``def check(candidate):`` whose first statement binds the entry
    point's name to ``candidate``, so the sandbox runs it exactly like HumanEval (imports
    in ``assertion`` stay at module level). A runner must take the entry point from the
    candidate's namespace *before* executing the test code: one task (Mbpp/56) names its
    function ``check``. The ``plus_input`` tests have no expected
    outputs in the release and are not used. ``prompt`` wraps the task text in EvalPlus's
    instruct request. Raises :class:`DataFileError` (file, line, field) for a malformed record.
    """
    p = Path(path)
    problems: list[Problem] = []
    for line, data in read_jsonl(p):
        row = _Row(p, line, data)
        task_id = row.text("task_id", allow_empty=False)
        entry = row.text("entry_point", allow_empty=False)
        program = row.text("canonical_solution", allow_empty=False)
        _parses(row, program, "canonical_solution")
        check = _mbpp_check(row, row.text("assertion", allow_empty=False), entry)
        text = row.text("prompt", allow_empty=False).strip()
        if text.startswith('"""') and text.endswith('"""'):
            text = text[3:-3].strip()
        problems.append(
            Problem(
                suite=suite,
                task_id=task_id,
                prompt=EVALPLUS_INSTRUCT.format(prompt=text),
                test=TestSpec(kind="humaneval", code=check, entry_point=entry),
                entry_point=entry,
                canonical_solution=program,
                libs=_top_level_imports(program),
            )
        )
    _check_unique(p, problems)
    return problems


def _mbpp_check(row: _Row, assertion: str, entry: str) -> str:
    try:
        tree = _parse(assertion)
    except SyntaxError as exc:
        raise row.fail(f"is not valid Python: {exc.msg} (line {exc.lineno})", "assertion") from None
    head: list[str] = []
    body: list[str] = []
    for node in tree.body:
        segment = ast.get_source_segment(assertion, node)
        if segment is None:  # pragma: no cover - ast always has positions for parsed source
            raise row.fail("cannot locate a statement", "assertion")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            head.append(segment)
        elif isinstance(node, ast.Assert):
            body.append("    " + segment.replace("\n", "\n    "))
        else:
            raise row.fail(
                f"expected only imports and assert statements, got {type(node).__name__}",
                "assertion",
            )
    if not body:
        raise row.fail("has no assert statement", "assertion")
    lines = [*head, "", "", "def check(candidate):", f"    {entry} = candidate", *body, ""]
    return "\n".join(lines).lstrip("\n")


# ---------------------------------------------------------------- dispatch

#: Source formats by name (``vibecheck augment --source-format``).
#: The built-in source formats (registered by :mod:`pytest_vibecheck.compose.builtins`).
LOADERS: Mapping[str, Callable[..., list[Problem]]] = {
    "bigcodebench": load_bigcodebench,
    "livecodebench": load_livecodebench,
    "humaneval": load_humaneval,
    "mbppplus": load_mbppplus,
}


def _formats() -> list[str]:
    from pytest_vibecheck.registry import get_registry

    return get_registry().suite_loaders.names()


def detect_format(path: str | Path) -> str:
    """Guess the source format from the first record's fields.

    Raises :class:`DataFileError` when the fields match no known format.
    """
    p = Path(path)
    for line, data in read_jsonl(p):
        if "instruct_prompt" in data and "code_prompt" in data:
            return "bigcodebench"
        if "question_content" in data:
            return "livecodebench"
        if "assertion" in data:
            return "mbppplus"
        if "test" in data and "prompt" in data:
            return "humaneval"
        raise DataFileError(
            p,
            f"cannot tell the source format from the fields {sorted(data)}; "
            f"pass --source-format (one of {', '.join(_formats())})",
            line=line,
        )
    raise DataFileError(p, "file has no records")


def load_source(path: str | Path, fmt: str | None = None, **kwargs: Any) -> list[Problem]:
    """Load ``path`` with the registry's loader for ``fmt`` (detected when ``None``): the
    built-in :data:`LOADERS` or one a plugin registered.

    Raises :class:`UnknownIdError` for an unknown format and :class:`DataFileError` for a
    malformed file.
    """
    from pytest_vibecheck.registry import get_registry

    name = fmt or detect_format(path)
    return get_registry().suite_loader(name)(path, **kwargs)
