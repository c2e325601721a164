"""Shared types of instruction selectors (paper §3.1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.verify.instructions import Instruction


class SelectorError(VibecheckError):
    """A selector could not judge a task (unparseable reply, API error, missing SDK or key).

    This is an infrastructure failure: the task is not augmented, never silently
    augmented with fewer instructions.
    """


@dataclass(frozen=True)
class Judgement:
    """Whether an instruction is relevant to a task, with a short rule code and a reason."""

    relevant: bool
    rule: str
    reason: str


@dataclass
class TaskJudgements:
    """A selector's answer for one task.

    ``judgements`` maps instruction ids to judgements; ``params`` holds parameter values
    the selector proposes (validated later); ``dropped`` lists ``(id, reason)`` for ids a
    reply named that are not in the taxonomy; ``extra`` is added to the provenance
    (e.g. the model and the cache key of an LLM reply).
    """

    judgements: dict[str, Judgement] = field(default_factory=dict)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class Selector(Protocol):
    """An instruction selector: ``name`` (e.g. ``rules``, ``anthropic:MODEL``), ``version``."""

    name: str
    version: str

    def judge_task(self, problem: Problem, order: Sequence[Instruction], k: int) -> TaskJudgements:
        """Judge the relevance of the instructions in ``order`` (the task's permutation)."""
        ...
