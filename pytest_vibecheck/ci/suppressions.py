"""Suppression comments in the gate: reported where they are added, excused only by a team's rule.

Verdicts never honour a suppression (Ruff runs with ``--ignore-noqa``,
:mod:`pytest_vibecheck.verify.ruff_engine`), so a violation under ``# noqa`` is reported on its
own line. The gate also reports the comment itself: a suppression comment on a changed line is
a finding (rule :data:`SUPPRESSION_RULE`) of each declared instruction whose rules it would hide,
on the comment's line, naming the rules. A team can allow suppressions that state a reason
(``[tool.vibecheck.gate] suppressions = "with-reason"``); then a suppression with a reason is not
reported and excuses the violations it covers, and one without a reason is reported. The default
(``"forbid"``) allows none.

The forms read are the ones Ruff honours (Ruff 0.17 documentation, "Error suppression";
measured with Ruff 0.17.6): ``# noqa`` and ``# noqa: CODES`` (the line; anywhere in a comment),
``# ruff: noqa`` / ``# flake8: noqa`` with or without ``: CODES`` and ``# ruff:
file-ignore[CODES]`` (the file), ``# ruff: ignore[CODES]`` (the line), ``# ruff:
disable[CODES]`` up to the matching ``# ruff: enable[CODES]`` (a block; to the end of the file
when unmatched). A reason is text after the directive with a word of three letters or more:
``# noqa: E501  # the URL is one token``, ``# ruff: disable[N803] legacy API names``.

Codes are matched to an instruction's rule selectors as Ruff selects them
(:func:`~pytest_vibecheck.verify.ruff_engine.selector_covers`); a blanket ``# noqa`` or ``# ruff:
noqa`` hides every rule, and a rule name (``unused-import``, which preview Ruff accepts) is
taken to hide every rule of the instructions that use Ruff.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_vibecheck.verify.ruff_engine import selector_covers
from pytest_vibecheck.verify.verdict import Verdict, Violation

__all__ = ["POLICIES", "SUPPRESSION_RULE", "Suppression", "SuppressionPolicy", "find_suppressions", "gate_verdict"]

#: Rule of the gate's finding for a suppression comment.
SUPPRESSION_RULE = "suppression"

SuppressionPolicy = Literal["forbid", "with-reason"]
#: The values of ``[tool.vibecheck.gate] suppressions``.
POLICIES: tuple[SuppressionPolicy, ...] = ("forbid", "with-reason")

_CODE = r"[A-Za-z]+[0-9]+|[a-z][a-z0-9-]*[a-z0-9]"
_CODES = rf"(?:{_CODE})(?:\s*,\s*(?:{_CODE}))*"
_FILE_NOQA = re.compile(rf"#\s*(?:ruff|flake8)\s*:\s*noqa\b(?:\s*:\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
_LINE_NOQA = re.compile(rf"#\s*noqa\b(?:\s*:\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
_RUFF = re.compile(rf"#\s*ruff\s*:\s*(?P<kind>file-ignore|ignore|disable|enable)\s*\[\s*(?P<codes>{_CODES})\s*,?\s*\]")
_REASON = re.compile(r"[A-Za-z]{3,}")


@dataclass(frozen=True)
class Suppression:
    """One suppression comment: where (1-based ``line``, ``column`` in characters), its
    ``scope`` (``line``, ``file`` or ``block``, which covers lines ``line`` to ``end``), the
    ``codes`` it names (``()``: every rule), the directive's ``text`` and its ``reason``
    (None: none stated)."""

    line: int
    column: int
    scope: Literal["line", "file", "block"]
    codes: tuple[str, ...]
    text: str
    reason: str | None
    end: int = 0

    def hides(self, selectors: Sequence[str]) -> list[str]:
        """The codes of this suppression that an instruction with Ruff rule ``selectors``
        would lose (``["every rule"]`` for a blanket one); ``[]`` when it hides none of them."""
        if not selectors:
            return []
        if not self.codes:
            return ["every rule"]
        out = []
        for code in self.codes:
            if not re.fullmatch(r"[A-Za-z]+[0-9]+", code):  # a rule name: any rule, as far as we know
                out.append(code)
            elif any(selector_covers(sel, code.upper()) or selector_covers(code.upper(), sel) for sel in selectors):
                out.append(code.upper())
        return out

    def covers(self, rule: str, line: int) -> bool:
        """True if this suppression would hide violation ``rule`` on ``line``."""
        if self.scope == "line" and line != self.line:
            return False
        if self.scope == "block" and not self.line <= line <= self.end:
            return False
        return not self.codes or any(
            not re.fullmatch(r"[A-Za-z]+[0-9]+", c) or selector_covers(c.upper(), rule) for c in self.codes
        )


def _comments(source: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of each comment, from the tokenizer; from a scan of the lines
    when the source does not tokenize (a ``#`` in a string may then be taken for one)."""
    try:
        return [
            (tok.start[0], tok.start[1] + 1, tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, ValueError):
        out = []
        for n, text in enumerate(source.splitlines(), start=1):
            i = text.find("#")
            if i >= 0:
                out.append((n, i + 1, text[i:]))
        return out


def _codes(text: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split(",") if c.strip()) if text else ()


def _reason(rest: str) -> str | None:
    rest = rest.strip(" \t#-—:;,.")
    return rest if _REASON.search(rest) else None


def find_suppressions(source: str) -> list[Suppression]:
    """Every suppression comment of ``source``, in order (see the module docstring)."""
    found: list[Suppression] = []
    open_blocks: dict[str, int] = {}  # code -> index in found of its open disable
    last = source.count("\n") + 1
    for line, col, text in _comments(source):
        m = _FILE_NOQA.search(text)
        if m is not None:
            found.append(Suppression(line, col + m.start(), "file", _codes(m.group("codes")),
                                     m.group(0), _reason(text[m.end():])))
            continue
        m = _RUFF.search(text)
        if m is not None:
            kind, codes = m.group("kind"), _codes(m.group("codes"))
            if kind == "enable":
                for code in codes:
                    k = open_blocks.pop(code, None)
                    if k is not None:
                        s = found[k]
                        found[k] = Suppression(s.line, s.column, s.scope, s.codes, s.text, s.reason, line)
                continue
            scope: Literal["line", "file", "block"] = (
                "file" if kind == "file-ignore" else "line" if kind == "ignore" else "block"
            )
            found.append(Suppression(line, col + m.start(), scope, codes, m.group(0),
                                     _reason(text[m.end():]), last if scope == "block" else 0))
            if scope == "block":
                for code in codes:
                    open_blocks[code] = len(found) - 1
            continue
        m = _LINE_NOQA.search(text)
        if m is not None:
            found.append(Suppression(line, col + m.start(), "line", _codes(m.group("codes")),
                                     m.group(0), _reason(text[m.end():])))
    return found


def gate_verdict(
    verdict: Verdict, suppressions: Sequence[Suppression], selectors: Sequence[str], policy: SuppressionPolicy
) -> Verdict:
    """The gate's view of one instruction's ``verdict`` on a file with ``suppressions``:
    with ``policy`` ``"with-reason"``, the violations that a suppression with a reason covers
    are dropped; every other suppression that hides one of ``selectors`` (the instruction's
    Ruff rules) becomes a :data:`SUPPRESSION_RULE` violation on its own line. A verdict that
    could not be judged (``passed`` None) is returned as it is."""
    if verdict.passed is None or not suppressions or not selectors:
        return verdict
    excusing = [s for s in suppressions if policy == "with-reason" and s.reason is not None]
    kept = [v for v in verdict.violations if not any(s.covers(v.rule, v.line) for s in excusing)]
    for s in suppressions:
        if s in excusing:
            continue
        hidden = s.hides(selectors)
        if not hidden:
            continue
        why = ("suppressions are not allowed: [tool.vibecheck.gate] suppressions = \"forbid\""
               if policy == "forbid" else "it gives no reason (suppressions = \"with-reason\")")
        kept.append(Violation(
            SUPPRESSION_RULE, s.line, s.column,
            f"`{s.text}` hides {', '.join(hidden)} from {verdict.instruction}; {why}",
        ))
    if len(kept) == len(verdict.violations) and all(a is b for a, b in zip(kept, verdict.violations, strict=True)):
        return verdict
    return Verdict.judged(verdict.instruction, kept, params=verdict.params,
                          ruff_version=verdict.ruff_version, warnings=verdict.warnings)
