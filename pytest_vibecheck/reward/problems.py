"""The problem a completion answers: a suite task id or an inline problem.

A *problem reference* is one of

- a suite task id ``"SUITE::TASK_ID"``, e.g. ``"bigvibebench::BigCodeBench/13"`` (``SUITE`` is a
  shipped suite name or a suite folder, as for ``--vibe-suite``);
- a :class:`~pytest_vibecheck.suites.problem.Problem`;
- an inline problem, a mapping (or its JSON text) with the test and the instructions::

      {"test": {"kind": "humaneval", "code": "def check(candidate): ...",
                "entry_point": "add"},
       "entry_point": "add",
       "instructions": [{"id": "style_1", "params": {"line_length": 79}}, "doc_1"]}

  ``test`` follows the suite record (``docs/suites.md``): ``kind`` is one of
  ``bigcodebench-unittest``, ``humaneval``, ``stdin``, ``functional``; ``cases`` holds
  ``{"input", "output"}`` pairs for the last two. Every other field of a suite record
  (``task_id``, ``suite``, ``prompt``, ``libs``, ...) is optional. An instruction is an id or
  ``{"id", "params"}``; missing parameters take their defaults, invalid ones are an error.
  A full suite record (``Problem.to_dict()``, as ``vibecheck export-dataset`` writes it) is an
  inline problem too.

Suites are loaded once per process (on first use; nothing is set up beforehand, so this works
in a fresh Ray or accelerate worker).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_vibecheck.errors import ParameterError, VibecheckError
from pytest_vibecheck.execute.spec import TestSpec
from pytest_vibecheck.suites.problem import InstructionRef, Problem
from pytest_vibecheck.suites.store import Suite, check_instructions, load_suite
from pytest_vibecheck.verify.instructions import default_registry
from pytest_vibecheck.verify.params import validate_params

__all__ = [
    "TASK_SEPARATOR",
    "ProblemRef",
    "inline_problem",
    "problem_ref_text",
    "resolve_problem",
    "suite_problem",
]

#: Separates the suite from the task id in a suite task reference (``bigvibebench::BigCodeBench/13``).
TASK_SEPARATOR = "::"

ProblemRef = str | Problem | Mapping[str, Any]


@functools.lru_cache(maxsize=16)
def _suite(name: str) -> tuple[Suite, dict[str, Problem]]:
    suite = load_suite(name)
    return suite, {p.task_id: p for p in suite.problems}


def suite_problem(ref: str) -> Problem:
    """The problem of a suite task id ``"SUITE::TASK_ID"``.

    Raises :class:`~pytest_vibecheck.errors.VibecheckError` for a text without ``::``, and
    :class:`~pytest_vibecheck.errors.UnknownIdError` (with suggestions) for an unknown suite or
    task.
    """
    suite, sep, task = ref.partition(TASK_SEPARATOR)
    if not sep or not suite or not task:
        raise VibecheckError(
            f"problem {ref!r}: a suite task id is SUITE::TASK_ID, e.g. "
            "'bigvibebench::BigCodeBench/13' (or give an inline problem)"
        )
    loaded, by_id = _suite(suite)
    found = by_id.get(task)
    return found if found is not None else loaded.get(task)  # UnknownIdError with suggestions


def _instruction_refs(raw: object, where: str) -> tuple[InstructionRef, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise VibecheckError(f"{where}: `instructions` must be a list of ids or {{id, params}} objects")
    registry = default_registry()
    refs: list[InstructionRef] = []
    for n, item in enumerate(raw):
        params: object
        if isinstance(item, str):
            iid, params = item, {}
        elif isinstance(item, Mapping) and isinstance(item.get("id"), str):
            iid, params = item["id"], item.get("params") or {}
        elif (
            isinstance(item, Sequence) and len(item) == 2 and isinstance(item[0], str)
            and isinstance(item[1], Mapping)
        ):
            iid, params = item[0], item[1]
        else:
            raise VibecheckError(
                f"{where}: instructions[{n}] must be an id or an {{\"id\", \"params\"}} object, got {item!r:.80}"
            )
        if not isinstance(params, Mapping):
            raise VibecheckError(f"{where}: instructions[{n}].params must be an object, got {params!r:.60}")
        inst = registry.get(iid)  # UnknownIdError with suggestions
        try:
            full = validate_params(inst, params, strict=True, warn=False).params
        except ParameterError as exc:
            raise VibecheckError(f"{where}: instructions[{n}]: {exc}") from None
        refs.append(InstructionRef(iid, dict(full)))
    return tuple(refs)


def inline_problem(data: Mapping[str, Any] | str, *, where: str = "inline problem") -> Problem:
    """A :class:`Problem` from an inline problem (mapping or JSON text; see the module docstring).

    Raises :class:`~pytest_vibecheck.errors.VibecheckError` (a
    :class:`~pytest_vibecheck.errors.DataFileError` naming the field) for a malformed problem,
    an unknown instruction id or an invalid parameter.
    """
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise VibecheckError(f"{where}: not valid JSON ({exc.msg}); give a suite task id "
                                 "SUITE::TASK_ID or an inline problem object") from None
        if not isinstance(data, Mapping):
            raise VibecheckError(f"{where}: expected a JSON object, got {type(data).__name__}")
    test = data.get("test", data.get("tests"))
    if not isinstance(test, Mapping):
        raise VibecheckError(f"{where}: field 'test' is missing: give {{\"kind\", \"code\", "
                             "\"cases\", \"entry_point\"} (see docs/reward.md)")
    # Every field of the record at its default (whatever fields this version's record has),
    # then the given ones.
    record: dict[str, Any] = _TEMPLATE.to_dict()
    unknown = sorted(set(data) - set(record) - {"tests"})
    if unknown:
        raise VibecheckError(f"{where}: unknown field(s) {unknown}; an inline problem has {list(record)}")
    entry = data.get("entry_point")
    default_test = record["test"]
    record.update({k: v for k, v in data.items() if k in record and v is not None})
    record["suite"] = data.get("suite") or "inline"
    record["task_id"] = data.get("task_id") or "inline"
    record["test"] = {**default_test, **dict(test)}
    if record["test"].get("entry_point") is None:
        record["test"]["entry_point"] = entry
    record["instructions"] = []
    prob = Problem.from_dict(record, source=where)
    refs = _instruction_refs(data.get("instructions"), where)
    prob = Problem(**{**_fields(prob), "instructions": refs})
    check_instructions(prob, default_registry(), source=where)  # duplicates and conflicts
    return prob


#: A minimal problem whose record gives every field's default.
_TEMPLATE = Problem(suite="inline", task_id="inline", prompt="", test=TestSpec(kind="humaneval"))


def _fields(prob: Problem) -> dict[str, Any]:
    return {name: getattr(prob, name) for name in Problem.__dataclass_fields__}


def resolve_problem(ref: ProblemRef, *, where: str = "problem") -> Problem:
    """The :class:`Problem` of a reference (suite task id, Problem, inline mapping or its JSON).

    A string that starts with ``{`` is an inline problem's JSON; any other string is a suite task
    id. Raises :class:`~pytest_vibecheck.errors.VibecheckError` for anything else.
    """
    if isinstance(ref, Problem):
        return ref
    if isinstance(ref, str):
        if ref.lstrip().startswith("{"):
            return inline_problem(ref, where=where)
        return suite_problem(ref)
    if isinstance(ref, Mapping):
        return inline_problem(ref, where=where)
    raise VibecheckError(
        f"{where}: expected a suite task id 'SUITE::TASK_ID', an inline problem object or a "
        f"Problem, got {type(ref).__name__}"
    )


def problem_ref_text(prob: Problem) -> str:
    """``"SUITE::TASK_ID"`` of a problem (its suite name or folder and its task id)."""
    return f"{prob.suite}{TASK_SEPARATOR}{prob.task_id}"
