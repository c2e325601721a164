"""Verifier results: one :class:`Verdict` per (text, instruction), made of :class:`Violation` s.

A verdict has three outcomes (paper §2, "verifiable instructions"; issue 2, item 4):

* ``passed=True``: the verifier ran and found nothing;
* ``passed=False``: the verifier ran and found at least one violation (listed);
* ``passed=None``: the verifier could not judge (Ruff missing or failing, an unknown or
  removed Ruff rule, an internal error); ``error`` says why. Such a verdict is an
  infrastructure failure and must never be counted as an instruction failure.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from pytest_vibecheck.types import ParamValue

__all__ = ["Verdict", "VerdictDict", "Violation", "ViolationRecord"]


class ViolationRecord(TypedDict):
    """One verifier finding as JSON (:meth:`Violation.to_dict`); ``line``/``column`` are
    1-based."""

    rule: str
    line: int
    column: int
    message: str


class VerdictDict(TypedDict):
    """A verdict as JSON (:meth:`Verdict.to_dict`; ``vibecheck verify --json``): the
    instruction, the parameters used, ``passed`` (None iff ``error``), the violations, the
    Ruff version and the parameter warnings."""

    instruction: str
    params: dict[str, ParamValue]
    passed: bool | None
    error: str | None
    violations: list[ViolationRecord]
    ruff_version: str | None
    warnings: list[str]


@dataclass(frozen=True, slots=True)
class Violation:
    """One finding of a verifier.

    ``rule``: the Ruff rule code (``"E501"``), ``"invalid-syntax"`` for code that does not
    parse, or the name of a built-in check's finding (``"comment"``, ``"docstring"``,
    ``"markdown-fence"``, ``"PD901"`` for the re-implemented pandas rule, ...).
    ``line`` and ``column`` are 1-based; the column counts characters (not bytes), as
    Ruff's JSON output does. ``message`` is a one-line explanation.
    """

    rule: str
    line: int
    column: int
    message: str

    def sort_key(self) -> tuple[int, int, str, str]:
        """Order of violations in a verdict: by position, then rule."""
        return (self.line, self.column, self.rule, self.message)

    def to_dict(self) -> ViolationRecord:
        """``{"rule": str, "line": int, "column": int, "message": str}``."""
        return {"rule": self.rule, "line": self.line, "column": self.column, "message": self.message}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Violation:
        """Inverse of :meth:`to_dict`."""
        return cls(str(data["rule"]), int(data["line"]), int(data["column"]), str(data["message"]))


#: :meth:`Violation.sort_key` as a C-level key function.
_SORT_KEY = operator.attrgetter("line", "column", "rule", "message")


@dataclass(frozen=True, slots=True)
class Verdict:
    """The result of verifying one text against one instruction.

    ``passed`` is None exactly when ``error`` is set (the verifier could not judge);
    otherwise ``passed`` is True iff ``violations`` is empty. ``params`` are the validated
    parameters actually used; ``ruff_version`` is the Ruff version that produced the
    verdict (None for instructions checked without Ruff, or when Ruff could not run).
    ``warnings`` lists parameter changes made by validation (unknown keys dropped, invalid
    values reset to the default; paper §3.1).

    Raises :class:`ValueError` when the fields are inconsistent.
    """

    passed: bool | None
    violations: tuple[Violation, ...]
    error: str | None
    instruction: str
    params: dict[str, ParamValue] = field(default_factory=dict)
    ruff_version: str | None = None
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.passed is None) != (self.error is not None):
            raise ValueError(
                f"Verdict for {self.instruction}: passed is None iff error is set "
                f"(passed={self.passed!r}, error={self.error!r})"
            )
        if self.passed is not None and self.passed == bool(self.violations):
            raise ValueError(
                f"Verdict for {self.instruction}: passed={self.passed} "
                f"contradicts {len(self.violations)} violation(s)"
            )

    @classmethod
    def judged(
        cls,
        instruction: str,
        violations: tuple[Violation, ...] | list[Violation],
        *,
        params: Mapping[str, Any] | None = None,
        ruff_version: str | None = None,
        warnings: tuple[str, ...] = (),
    ) -> Verdict:
        """A pass (no violations) or a fail; violations are sorted by line, column, rule."""
        vs = tuple(violations) if len(violations) < 2 else tuple(sorted(violations, key=_SORT_KEY))
        return cls(not vs, vs, None, instruction, dict(params) if params else {}, ruff_version, warnings)

    @classmethod
    def failed_to_judge(
        cls,
        instruction: str,
        error: str,
        *,
        params: Mapping[str, Any] | None = None,
        ruff_version: str | None = None,
        warnings: tuple[str, ...] = (),
    ) -> Verdict:
        """A verifier error: ``passed=None``, never counted as a pass or a fail."""
        return cls(None, (), error, instruction, dict(params or {}), ruff_version, warnings)

    def to_dict(self) -> VerdictDict:
        """JSON-ready dict: instruction, params, passed, error, violations, ruff_version, warnings.

        The first five keys are the result format of ``vibecheck verify --batch``.
        """
        return {
            "instruction": self.instruction,
            "params": dict(self.params),
            "passed": self.passed,
            "error": self.error,
            "violations": [v.to_dict() for v in self.violations],
            "ruff_version": self.ruff_version,
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """Inverse of :meth:`to_dict` (``ruff_version`` and ``warnings`` are optional)."""
        return cls(
            passed=data["passed"],
            violations=tuple(Violation.from_dict(v) for v in data.get("violations", ())),
            error=data.get("error"),
            instruction=str(data["instruction"]),
            params=dict(data.get("params") or {}),
            ruff_version=data.get("ruff_version"),
            warnings=tuple(data.get("warnings", ())),
        )
