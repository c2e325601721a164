"""One-call and batch verification of VeriCode instructions (paper §2.2).

``verify(text, "logic_3", {"max_branches": 3})`` judges one text against one instruction;
``verify_batch(items)`` judges many (text, [instructions]) items with all their Ruff-backed
checks in as few Ruff processes as possible (:mod:`pytest_vibecheck.verify.ruff_engine`).

What each instruction judges (its ``verifier.target``):

* ``code`` instructions (27 of 30) judge the item's ``code``, or, when only a ``reply`` is
  given, the code extracted from it (:func:`pytest_vibecheck.verify.extract.extract_code`);
* ``reply`` instructions (doc_4, doc_6) judge the whole ``reply``, or the ``code`` when only
  code is given.

Before linting, the code is normalised to LF line endings and exactly one final newline (a
blank text becomes empty), so a missing final newline never fails style_1 through W292. A reply
without code is judged as empty code (most instructions pass it): callers that report "no code"
as its own outcome check :func:`~pytest_vibecheck.verify.extract.extract_code` first (its ``method`` is
``"none"``), as the plugin's runner does.
Parameters are validated as in the paper (§3.1, :func:`pytest_vibecheck.verify.params.validate_params`,
non-strict): unknown keys are dropped and invalid values reset to the default; each change is
emitted as a :class:`~pytest_vibecheck.errors.ParameterWarning` and kept in
``Verdict.warnings``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_vibecheck.errors import ParameterWarning, VibecheckError
from pytest_vibecheck.registry import get_registry
from pytest_vibecheck.types import ExtractMode as ExtractMode
from pytest_vibecheck.verify.checks import SYNTAX_RULE
from pytest_vibecheck.verify.instructions import Instruction, InstructionRegistry, default_registry
from pytest_vibecheck.verify.params import validate_params
from pytest_vibecheck.verify.ruff_engine import (
    RuffCheck,
    RuffEngine,
    RuffJob,
    RuffOutcome,
    default_engine,
)
from pytest_vibecheck.verify.verdict import Verdict, Violation

__all__ = ["VerifyItem", "normalise_code", "ruff_check_for", "verify", "verify_batch"]



@dataclass(frozen=True)
class VerifyItem:
    """One text to verify against several instructions.

    ``instructions``: ``(instruction id, params)`` pairs, judged in this order. Give
    ``code`` (already extracted), ``reply`` (a model's whole reply), or both.
    ``entry_point`` and ``extract_mode`` steer extraction when only ``reply`` is given.
    """

    instructions: Sequence[tuple[str, Mapping[str, object]]]
    reply: str | None = None
    code: str | None = None
    entry_point: str | None = None
    extract_mode: ExtractMode = "first"
    label: str = field(default="", compare=False)


def normalise_code(code: str) -> str:
    """LF line endings and exactly one final newline; blank code becomes ``""``."""
    text = code.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    return text + "\n" if text.strip() else ""


def ruff_check_for(instruction: Instruction, params: Mapping[str, int | str]) -> RuffCheck | None:
    """The Ruff request of ``instruction`` with validated ``params`` (None if it uses no Ruff).

    Settings are the instruction's fixed Ruff settings plus each parameter mapped to its
    Ruff setting (``verifier.settings``).
    """
    spec = instruction.verifier
    if not spec.rules:
        return None
    settings: dict[str, int | str | bool] = dict(spec.fixed)
    for pname, key in spec.settings.items():
        settings[key] = params[pname]
    return RuffCheck.make(spec.rules, spec.preview, settings)


class _ParamCache:
    """Validated params and Ruff requests per (instruction, raw params): batches repeat them."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, tuple[tuple[str, object], ...]], tuple[dict[str, int | str], tuple[str, ...], RuffCheck | None]] = {}

    def get(
        self, inst: Instruction, raw: Mapping[str, object] | None
    ) -> tuple[dict[str, int | str], tuple[str, ...], RuffCheck | None]:
        items = tuple(sorted(raw.items())) if raw else ()
        key: tuple[str, str, tuple[tuple[str, object], ...]] | None = (inst.id, inst.source, items)
        try:
            hit = self._cache.get(key)  # type: ignore[arg-type]
        except TypeError:  # unhashable parameter values: no caching
            key, hit = None, None
        if hit is None:
            validated = validate_params(inst, raw, warn=False)
            hit = (validated.params, validated.changes, ruff_check_for(inst, validated.params))
            if key is not None:
                self._cache[key] = hit
        return dict(hit[0]), hit[1], hit[2]


@dataclass
class _Planned:
    inst: Instruction
    params: dict[str, int | str]
    changes: tuple[str, ...]
    text: str
    check: RuffCheck | None
    job_slot: tuple[int, int] | None = None  # (job index, check index)


def _resolve_texts(item: VerifyItem, where: str) -> tuple[str | None, str | None]:
    """(code text, reply text) of an item; extraction runs only if needed and possible."""
    if item.reply is None and item.code is None:
        raise VibecheckError(f"{where}: give the text to verify as `code` or `reply` (both are missing)")
    for name, value in (("code", item.code), ("reply", item.reply)):
        if value is not None and not isinstance(value, str):
            raise VibecheckError(f"{where}: `{name}` must be a string, got {type(value).__name__}")
    reply = item.reply if item.reply is not None else item.code
    return item.code, reply


def verify_batch(
    items: Sequence[VerifyItem],
    *,
    registry: InstructionRegistry | None = None,
    engine: RuffEngine | None = None,
) -> list[list[Verdict]]:
    """Verify every item against its instructions; returns verdicts in the same order.

    ``result[i][j]`` is the verdict of ``items[i].instructions[j]``. All Ruff-backed checks of
    all items run in one batch (see :mod:`pytest_vibecheck.verify.ruff_engine`). Ruff problems and
    internal errors of a check become verdicts with ``passed=None`` and ``error`` set, never
    failures.

    Raises :class:`~pytest_vibecheck.errors.UnknownIdError` for an unknown instruction id and
    :class:`~pytest_vibecheck.errors.VibecheckError` for an item without text, before any
    verification runs.
    """
    reg = registry if registry is not None else default_registry()
    eng = engine if engine is not None else default_engine()
    plans: list[list[_Planned]] = []
    jobs: list[RuffJob] = []
    job_of_text: dict[tuple[int, str], int] = {}
    cache = _ParamCache()
    for i, item in enumerate(items):
        where = item.label or f"item {i}"
        code, reply = _resolve_texts(item, where)
        code_text: str | None = None  # normalised once per item
        row: list[_Planned] = []
        for iid, raw_params in item.instructions:
            inst = reg.get(iid)
            params, changes, check = cache.get(inst, raw_params)
            for change in changes:
                warnings.warn(f"{where}: {change}", ParameterWarning, stacklevel=2)
            if inst.verifier.target == "reply":
                assert reply is not None
                text = reply
            else:
                if code_text is None:
                    if code is None:
                        from pytest_vibecheck.verify.extract import extract_code

                        assert item.reply is not None
                        code = extract_code(item.reply, item.extract_mode, item.entry_point).code
                    code_text = normalise_code(code)
                text = code_text
            row.append(_Planned(inst, params, changes, text, check))
        plans.append(row)
    # One Ruff job per distinct (item, text), holding all checks on that text.
    job_checks: list[list[RuffCheck]] = []
    for i, row in enumerate(plans):
        for planned in row:
            if planned.check is None:
                continue
            key = (i, planned.text)
            j = job_of_text.get(key)
            if j is None:
                j = len(jobs)
                job_of_text[key] = j
                jobs.append(RuffJob(planned.text, []))
                job_checks.append([])
            planned.job_slot = (j, len(job_checks[j]))
            job_checks[j].append(planned.check)
    jobs = [RuffJob(job.code, tuple(checks)) for job, checks in zip(jobs, job_checks, strict=True)]
    outcomes = eng.run(jobs) if jobs else []
    return [[_verdict(p, outcomes) for p in row] for row in plans]


def _verdict(p: _Planned, outcomes: list[list[RuffOutcome]]) -> Verdict:
    iid, params, notes = p.inst.id, p.params, p.changes
    violations: list[Violation] = []
    version: str | None = None
    syntax = False
    ruff_parsed = False
    if p.job_slot is not None:
        outcome = outcomes[p.job_slot[0]][p.job_slot[1]]
        version = outcome.ruff_version
        if outcome.error is not None:
            return Verdict.failed_to_judge(iid, outcome.error, params=params,
                                           ruff_version=version, warnings=notes)
        violations.extend(outcome.violations)
        syntax = outcome.syntax_error
        ruff_parsed = not syntax
    registry = get_registry()
    for name in p.inst.verifier.checks:
        quick = registry.nothing_but_syntax(name)
        if ruff_parsed and quick is not None and quick(p.text):
            continue  # nothing to find but a syntax error, and Ruff has parsed this very text
        try:
            found = registry.check(name)(p.text)
        except Exception as exc:  # an internal error is never a verdict
            return Verdict.failed_to_judge(
                iid, f"internal error in built-in check {name}: {type(exc).__name__}: {exc}",
                params=params, ruff_version=version, warnings=notes)
        if syntax:  # Ruff already reported the syntax error for this code
            found = [v for v in found if v.rule != SYNTAX_RULE]
        violations.extend(found)
    return Verdict.judged(iid, violations, params=params, ruff_version=version, warnings=notes)


def verify(
    text: str,
    instruction_id: str,
    params: Mapping[str, object] | None = None,
    *,
    is_reply: bool = False,
    extract_mode: ExtractMode = "first",
    entry_point: str | None = None,
    registry: InstructionRegistry | None = None,
    engine: RuffEngine | None = None,
) -> Verdict:
    """Verify one ``text`` against one instruction, e.g. ``verify(code, "logic_3", {"max_branches": 3})``.

    ``text`` is code unless ``is_reply`` (then code-target instructions judge the code
    extracted from it with ``extract_mode``). Returns a :class:`Verdict`; for many texts use
    :func:`verify_batch`, which is much faster. Raises
    :class:`~pytest_vibecheck.errors.UnknownIdError` for an unknown instruction id.
    """
    item = VerifyItem(
        instructions=[(instruction_id, dict(params or {}))],
        reply=text if is_reply else None,
        code=None if is_reply else text,
        entry_point=entry_point,
        extract_mode=extract_mode,
    )
    return verify_batch([item], registry=registry, engine=engine)[0][0]
