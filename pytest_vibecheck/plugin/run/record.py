"""An item's prepared work (:class:`Work`, one :class:`Turn` per generation) and its report
record (builtins only, docs/report-schema.md ``items[]``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.report.records import (
    ItemRecord,
    TestsRecord,
    TurnRecord,
    VerdictRecord,
    new_item_record,
    new_timing,
)
from pytest_vibecheck.verify.nocode import no_code_reason

if TYPE_CHECKING:
    from pytest_vibecheck.errors import VibeInfraError
    from pytest_vibecheck.generate.backends.base import Generation
    from pytest_vibecheck.plugin.run.spec import ItemSpec, Judged
    from pytest_vibecheck.verify.extract import Extraction

__all__ = [
    "ItemOutcome",
    "Turn",
    "Work",
    "has_no_code",
    "new_record",
    "no_code_reason",
    "sha256_text",
    "tests_dict",
]

#: Longest test message kept in a record.
MAX_MESSAGE = 2000


@dataclass
class ItemOutcome:
    """What :func:`run_item_for` returns: ``passed``, the failure text and the record."""

    passed: bool
    failure_text: str
    record: ItemRecord


def has_no_code(extraction: Extraction) -> bool:
    """True when a reply has no code (:func:`no_code_reason` gives a reason)."""
    return no_code_reason(extraction) is not None


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tests_dict(res: Any) -> TestsRecord:
    message = str(getattr(res, "message", "") or "")
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + f"... [{len(message) - MAX_MESSAGE} more characters]"
    return {
        "status": res.status,
        "failed_tests": [str(t) for t in (getattr(res, "failed_tests", ()) or ())],
        "message": message,
        "duration_s": float(getattr(res, "duration_s", 0.0) or 0.0),
        "cached": bool(getattr(res, "cached", False)),
    }


@dataclass
class Turn:
    turn: int
    k: int
    generation: Generation
    via_cache: bool
    extraction: Extraction
    no_code: bool
    judged: Judged
    tests: TestsRecord | None = None
    verdicts: list[VerdictRecord] = field(default_factory=list)
    ruff_version: str | None = None
    #: the request's messages not already in earlier turns (all of them at turn 0; in
    #: multi-turn turn t, the new edit instruction after turn t - 1's reply)
    messages: list[dict[str, str]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (
            self.tests is not None
            and self.tests["status"] == "passed"
            and all(v["passed"] for v in self.verdicts)
        )

    def to_dict(self) -> TurnRecord:
        gen = self.generation
        assert self.tests is not None, "a turn is recorded once its tests ran"
        return {
            "turn": self.turn,
            "k": self.k,
            "generation": {
                "key": gen.key,
                "cached": bool(gen.cached),
                "via_cache": self.via_cache,
                "input_tokens": gen.input_tokens,
                "output_tokens": gen.output_tokens,
                "latency_s": float(gen.latency_s),
                "finish_reason": gen.finish_reason,
            },
            "extraction": {
                "method": self.extraction.method,
                "blocks": len(self.extraction.blocks),
                "block": chosen_block(self.extraction),
                "no_code": self.no_code,
                "code_sha256": sha256_text(self.extraction.code),
            },
            "tests": self.tests,
            "verdicts": self.verdicts,
            "passed": self.passed,
            "messages": [{"role": m["role"], "content": m["content"]} for m in self.messages],
            "reply": gen.text,
            "code": self.extraction.code,
        }


def chosen_block(extraction: Extraction) -> int | None:
    """0-based index of the fenced block the code was taken from (the first block equal to the
    extracted code), or None when the code is not a block (``whole-reply``, ``none``,
    ``stray-closing-fence``)."""
    if extraction.method in ("whole-reply", "none", "stray-closing-fence"):
        return None
    for i, block in enumerate(extraction.blocks):
        if block == extraction.code:
            return i
    return None


def new_messages(
    previous: Sequence[Mapping[str, str]], messages: Sequence[Mapping[str, str]]
) -> list[dict[str, str]]:
    """The messages of a multi-turn request that are not in the previous request or its reply:
    ``messages`` minus the prefix ``previous`` + the assistant reply (all of ``messages`` when
    it does not extend ``previous``)."""
    n = len(previous)
    if (
        n
        and len(messages) > n
        and [dict(m) for m in messages[:n]] == [dict(m) for m in previous]
        and messages[n].get("role") == "assistant"
    ):
        return [dict(m) for m in messages[n + 1 :]]
    return [dict(m) for m in messages]


@dataclass
class Work:
    """The prepared result of one item: its replies and turns, or the error / skip that stopped it."""

    spec: ItemSpec
    turns: list[Turn] = field(default_factory=list)
    error: VibeInfraError | None = None
    skip: str | None = None
    #: test runs started and not yet collected (program -> future of its ExecResult)
    pending: dict[str, Future[Any]] = field(default_factory=dict)
    tests_started: float = 0.0
    timing: dict[str, float] = field(default_factory=new_timing)
    #: the replies of stage 1, ``(turn, k, generation, judged, new messages)``, before extraction
    replies: list[tuple[int, int, Generation, Judged, list[dict[str, str]]]] = field(default_factory=list)
    #: all stages done (extract, verify, test)
    finished: bool = False

    @property
    def live(self) -> bool:
        return self.error is None and self.skip is None


def new_record(spec: ItemSpec) -> ItemRecord:
    """The item's record before it runs (builtins only)."""
    from pytest_vibecheck.verify.instructions import get_instruction

    return new_item_record(
        suite=spec.suite,
        suite_sha256=spec.suite_hash,
        profile=spec.setup.profile,
        temperature=spec.setup.temperature,
        task_id=spec.problem.task_id,
        model=spec.model,
        protocol=spec.protocol,
        k=spec.k,
        sample=spec.sample,
        instructions=[
            {"position": pos, "id": iid, "category": get_instruction(iid).category, "params": params}
            for pos, iid, params in spec.instructions
        ],
    )
