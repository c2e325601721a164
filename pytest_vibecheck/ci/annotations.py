"""GitHub's annotation limits, and saying where the findings are that GitHub does not show.

A step's workflow commands become annotations on the pull request's diff, but GitHub keeps at
most 10 error, 10 warning and 10 notice annotations per step and 50 per job
(actions/toolkit/docs/problem-matchers.md, "Limitations"); the rest are dropped without a word. The gate
therefore prints at most :data:`PER_STEP` annotations of its level, then one notice that names
how many were left out and where every finding is; the step summary says the same
(:func:`limit_note`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_vibecheck.ci.gate import escape_data, escape_property

__all__ = ["PER_JOB", "PER_STEP", "AnnotationPlan", "limit_note", "plan_annotations"]

#: Annotations of one level (error, warning, notice) GitHub keeps per step.
PER_STEP = 10
#: Annotations GitHub keeps per job, over all its steps.
PER_JOB = 50


@dataclass(frozen=True)
class AnnotationPlan:
    """The workflow commands to print (``lines``), how many findings there are (``total``) and
    how many of them are annotated (``annotated``, at most :data:`PER_STEP`)."""

    lines: tuple[str, ...]
    total: int
    annotated: int

    @property
    def left_out(self) -> int:
        return self.total - self.annotated


def _where(places: Sequence[str]) -> str:
    if len(places) == 1:
        return places[0]
    return ", ".join(places[:-1]) + " and " + places[-1]


def plan_annotations(findings: Sequence[str], places: Sequence[str]) -> AnnotationPlan:
    """The first :data:`PER_STEP` of ``findings`` (workflow commands, most important first)
    and, when there are more, a notice saying how many are not annotated and naming
    ``places`` (where all of them are: "the job summary", "the SARIF file x.sarif", ...)."""
    shown = tuple(findings[:PER_STEP])
    lines = shown
    if len(findings) > PER_STEP:
        left = len(findings) - PER_STEP
        message = (f"{left} more finding(s) not annotated: GitHub shows {PER_STEP} "
                   f"annotations of a kind per step ({PER_JOB} per job). All {len(findings)} "
                   f"are in {_where(places)}.")
        lines += (f"::notice title={escape_property('vibecheck gate')}::{escape_data(message)}",)
    return AnnotationPlan(lines, len(findings), len(shown))


def limit_note(plan: AnnotationPlan, places: Sequence[str]) -> list[str]:
    """Markdown lines for the step summary when findings were left unannotated (else none)."""
    if not plan.left_out:
        return []
    return [
        f"**{plan.annotated} of {plan.total} findings are annotated on the diff**: GitHub shows "
        f"at most {PER_STEP} error (or warning) annotations per step and {PER_JOB} per job, and "
        f"drops the rest silently. {plan.left_out} are not annotated; all {plan.total} are in "
        f"{_where(places)}.",
        "",
    ]
