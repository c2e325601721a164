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
blank text becomes empty), so a missing final newline never fails style_1 through W292.

What no single verifier judges (docs/verifiers.md, "Replies a reviewer would not sign"):

* an item given as a ``reply`` only (its code extracted here) whose reply has no code
  (:func:`~pytest_vibecheck.verify.nocode.no_code_reason`: nothing extracted, prose, or code
  with nothing to run, such as only a docstring, only imports or a stub) fails every
  instruction with one ``NO-CODE`` violation, as in the plugin and the reward; code given
  as ``code`` is judged as it is (an ``__init__.py`` of imports is honest in the gate);
* code that runs code built at run time (``exec`` of a string, ``compile`` with
  ``types.FunctionType``, ...: :func:`~pytest_vibecheck.verify.substance.hidden_code`)
  fails every code-level instruction, with a ``hidden-code`` violation at each construct.

Suppression comments (``# noqa``, ``# ruff: noqa``, ``# ruff: disable[...]``, ...) never excuse a
violation: Ruff runs with ``--ignore-noqa`` (:mod:`pytest_vibecheck.verify.ruff_engine`).
Parameters are validated as in the paper (§3.1, :func:`pytest_vibecheck.verify.params.validate_params`,
non-strict): unknown keys are dropped and invalid values reset to the default; each change is
emitted as a :class:`~pytest_vibecheck.errors.ParameterWarning` and kept in
``Verdict.warnings``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_vibecheck import _gc
from pytest_vibecheck.errors import ParameterWarning, VibecheckError
from pytest_vibecheck.registry import get_registry
from pytest_vibecheck.types import ExtractMode as ExtractMode
from pytest_vibecheck.verify.checks import SYNTAX_RULE
from pytest_vibecheck.verify.instructions import Instruction, InstructionRegistry, default_registry
from pytest_vibecheck.verify.nocode import NO_CODE_RULE
from pytest_vibecheck.verify.params import validate_params
from pytest_vibecheck.verify.ruff_engine import (
    RuffCheck,
    RuffEngine,
    RuffJob,
    RuffOutcome,
    RuffRun,
    default_engine,
    selector_covers,
)
from pytest_vibecheck.verify.substance import hidden_code
from pytest_vibecheck.verify.verdict import Verdict, Violation

__all__ = ["BatchVerification", "VerifyItem", "normalise_code", "ruff_check_for", "verify", "verify_batch"]



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
    """Validated params and Ruff requests per (instruction, raw params): batches repeat them.
    The params dict is shared by every item with the same request: read it, never change it
    (a :class:`Verdict` holds a copy of its own)."""

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
        return hit


@dataclass(slots=True)
class _Planned:
    inst: Instruction
    params: dict[str, int | str]
    changes: tuple[str, ...]
    text: str
    check: RuffCheck | None
    job_slot: tuple[int, int] | None = None  # (job index, check index)
    found: list[Violation] | None = None  # what the built-in checks found
    check_error: str | None = None  # a built-in check that raised
    #: the item's reply has no code (a no-code reason): the verdict is a NO-CODE failure
    no_code: str | None = None
    #: violations every code-level verdict of the item carries (hidden code)
    hidden: tuple[Violation, ...] = ()


def _resolve_texts(item: VerifyItem, where: str) -> tuple[str | None, str | None]:
    """(code text, reply text) of an item; extraction runs only if needed and possible."""
    if item.reply is None and item.code is None:
        raise VibecheckError(f"{where}: give the text to verify as `code` or `reply` (both are missing)")
    for name, value in (("code", item.code), ("reply", item.reply)):
        if value is not None and not isinstance(value, str):
            raise VibecheckError(f"{where}: `{name}` must be a string, got {type(value).__name__}")
    reply = item.reply if item.reply is not None else item.code
    return item.code, reply


#: A built-in check as run in a batch: (name, check, its "nothing but a syntax error" test).
_BoundCheck = tuple[str, Callable[[str], list[Violation]], Callable[[str], bool] | None]


class BatchVerification:
    """The verification of a batch in three steps, so that a caller can work while Ruff runs.

    ``BatchVerification(items)`` plans every item (errors as for :func:`verify_batch`, before
    anything runs), writes the Ruff batch and starts Ruff; :meth:`check_item` runs item ``i``'s
    built-in checks (the verifiers that are not Ruff rules) meanwhile; :meth:`finish` waits for
    Ruff and returns the verdicts (running the built-in checks of items not yet checked).
    :func:`verify_batch` is these three steps; the verdicts are the same whatever is checked
    when. Use it as a context manager (or call :meth:`close`) so that Ruff is stopped and its
    temporary files removed if the caller gives up.
    """

    def __init__(
        self,
        items: Sequence[VerifyItem],
        *,
        registry: InstructionRegistry | None = None,
        engine: RuffEngine | None = None,
    ) -> None:
        reg = registry if registry is not None else default_registry()
        eng = engine if engine is not None else default_engine()
        self._plans = _plan(items, reg)
        self._checks = get_registry()
        self._bound: dict[str, tuple[_BoundCheck, ...]] = {}
        self._checked = [False] * len(self._plans)
        self._dropped: set[int] = set()
        jobs = _jobs(self._plans)
        self._run: RuffRun | None = eng.start(jobs) if jobs else None

    def __enter__(self) -> BatchVerification:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop Ruff if it still runs and remove its temporary files (idempotent)."""
        if self._run is not None:
            self._run.close()

    def _bind(self, inst: Instruction) -> tuple[_BoundCheck, ...]:
        bound = self._bound.get(inst.id)
        if bound is None:
            reg = self._checks
            bound = self._bound[inst.id] = tuple(
                (name, reg.check(name), reg.nothing_but_syntax(name)) for name in inst.verifier.checks
            )
        return bound

    def check_item(self, i: int) -> None:
        """Run the built-in checks of item ``i`` (once; later calls do nothing)."""
        if self._checked[i]:
            return
        self._checked[i] = True
        for p in self._plans[i]:
            bound = self._bind(p.inst)
            if not bound or p.no_code is not None:
                continue
            found: list[Violation] = []
            for name, check, quick in bound:
                # With a Ruff check on the same text, a check that can find nothing but a
                # syntax error adds nothing: Ruff parses the text, and reports the error.
                if p.check is not None and quick is not None and quick(p.text):
                    continue
                try:
                    found.extend(check(p.text))
                except Exception as exc:  # an internal error is never a verdict
                    p.check_error = f"internal error in built-in check {name}: {type(exc).__name__}: {exc}"
                    break
            p.found = found

    def drop(self, i: int) -> None:
        """The caller does not want item ``i``'s verdicts: its built-in checks do not run, and
        its row of :meth:`finish` is empty (Ruff still lints it: it has started)."""
        self._checked[i] = True
        self._dropped.add(i)

    def finish(self) -> list[list[Verdict]]:
        """Wait for Ruff; ``result[i][j]`` is the verdict of ``items[i].instructions[j]``."""
        for i in range(len(self._plans)):
            self.check_item(i)
        outcomes = self._run.outcomes() if self._run is not None else []
        dropped = self._dropped
        return [[] if i in dropped else [_verdict(p, outcomes) for p in row] for i, row in enumerate(self._plans)]


def _plan(items: Sequence[VerifyItem], reg: InstructionRegistry) -> list[list[_Planned]]:
    plans: list[list[_Planned]] = []
    cache = _ParamCache()
    for i, item in enumerate(items):
        where = item.label or f"item {i}"
        code, reply = _resolve_texts(item, where)
        code_text: str | None = None  # normalised once per item
        has_all: dict[str, bool] = {}  # text -> whether it names __all__ (once per text)
        hidden: tuple[Violation, ...] = ()
        no_code: str | None = None
        if code is None:  # a reply: the plugin's no-code rule (substance.py: nothing to run)
            from pytest_vibecheck.verify.extract import extract_code
            from pytest_vibecheck.verify.nocode import no_code_reason

            assert item.reply is not None
            extraction = extract_code(item.reply, item.extract_mode, item.entry_point)
            code = extraction.code
            no_code = no_code_reason(extraction)
        row: list[_Planned] = []
        for iid, raw_params in item.instructions:
            inst = reg.get(iid)
            params, changes, check = cache.get(inst, raw_params)
            for change in changes:
                warnings.warn(f"{where}: {change}", ParameterWarning, stacklevel=4)
            if inst.verifier.target == "reply":
                assert reply is not None
                text = reply
            else:
                if code_text is None:
                    code_text = normalise_code(code)
                    if no_code is None:
                        hidden = hidden_code(code_text)
                text = code_text
            if check is not None:
                names_all = has_all.get(text)
                if names_all is None:
                    names_all = has_all[text] = "__all__" in text
                if names_all and _judges_public(check):
                    text = _DUNDER_ALL.sub("_x_all_", text)
            planned = _Planned(inst, params, changes, text, check, no_code=no_code)
            if inst.verifier.target != "reply":
                planned.hidden = hidden
            row.append(planned)
        plans.append(row)
    return plans


#: ``__all__`` as a name; replaced by a name of the same length (columns keep their place).
_DUNDER_ALL = re.compile(r"\b__all__\b")
#: The pydocstyle rules whose subject is a public name (Ruff takes ``__all__`` to say which).
_PUBLIC_DOC_RULES = ("D100", "D101", "D102", "D103", "D104", "D105", "D106", "D107")


def _judges_public(check: RuffCheck) -> bool:
    """True if ``check`` selects a docstring rule of public names: for it, ``__all__`` does not
    make a module's names private (docs/verifiers.md, "Replies a reviewer would not sign":
    ``__all__ = []`` would otherwise hide every undocumented function from doc_3)."""
    return any(selector_covers(sel, code) for sel in check.rules for code in _PUBLIC_DOC_RULES)


def _jobs(plans: list[list[_Planned]]) -> list[RuffJob]:
    """One Ruff job per distinct (item, text), holding all checks on that text."""
    job_of_text: dict[tuple[int, str], int] = {}
    texts: list[str] = []
    job_checks: list[list[RuffCheck]] = []
    for i, row in enumerate(plans):
        for planned in row:
            if planned.check is None or planned.no_code is not None:
                continue
            key = (i, planned.text)
            j = job_of_text.get(key)
            if j is None:
                j = job_of_text[key] = len(texts)
                texts.append(planned.text)
                job_checks.append([])
            planned.job_slot = (j, len(job_checks[j]))
            job_checks[j].append(planned.check)
    return [RuffJob(text, tuple(checks)) for text, checks in zip(texts, job_checks, strict=True)]


def verify_batch(
    items: Sequence[VerifyItem],
    *,
    registry: InstructionRegistry | None = None,
    engine: RuffEngine | None = None,
) -> list[list[Verdict]]:
    """Verify every item against its instructions; returns verdicts in the same order.

    ``result[i][j]`` is the verdict of ``items[i].instructions[j]``. All Ruff-backed checks of
    all items run in one batch (see :mod:`pytest_vibecheck.verify.ruff_engine`), and the
    built-in checks run while Ruff does (:class:`BatchVerification`); the cyclic garbage
    collector waits until the batch ends (:mod:`pytest_vibecheck._gc`). Ruff problems and
    internal errors of a check become verdicts with ``passed=None`` and ``error`` set, never
    failures.

    Raises :class:`~pytest_vibecheck.errors.UnknownIdError` for an unknown instruction id and
    :class:`~pytest_vibecheck.errors.VibecheckError` for an item without text, before any
    verification runs.
    """
    with _gc.paused(), BatchVerification(items, registry=registry, engine=engine) as batch:
        return batch.finish()


#: The no-code reasons (:func:`~pytest_vibecheck.verify.nocode.no_code_reason`) as a reviewer reads them.
_NO_CODE_WHY = {
    "none": "nothing to extract",
    "prose": "only prose",
    "empty": "nothing to run: only imports, docstrings, constants, pass or stubs",
    "unparseable": "nested too deeply for the parser",
}


def _verdict(p: _Planned, outcomes: list[list[RuffOutcome]]) -> Verdict:
    iid, params, notes = p.inst.id, p.params, p.changes
    if p.no_code is not None:
        why = _NO_CODE_WHY.get(p.no_code, p.no_code)
        return Verdict.judged(iid, [Violation(NO_CODE_RULE, 1, 1, f"the reply contains no code ({why})")],
                              params=params, warnings=notes)
    version: str | None = None
    violations: list[Violation] = list(p.hidden)
    syntax = False
    if p.job_slot is not None:
        outcome = outcomes[p.job_slot[0]][p.job_slot[1]]
        version = outcome.ruff_version
        if outcome.error is not None:
            return Verdict.failed_to_judge(iid, outcome.error, params=params,
                                           ruff_version=version, warnings=notes)
        if not violations and not p.found and p.check_error is None:  # Ruff's findings alone
            return Verdict.judged(iid, outcome.violations, params=params, ruff_version=version, warnings=notes)
        violations.extend(outcome.violations)
        syntax = outcome.syntax_error
    if p.check_error is not None:
        return Verdict.failed_to_judge(iid, p.check_error, params=params, ruff_version=version, warnings=notes)
    if p.found:
        if syntax:  # Ruff already reported the syntax error for this code
            violations.extend(v for v in p.found if v.rule != SYNTAX_RULE)
        else:
            violations.extend(p.found)
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
