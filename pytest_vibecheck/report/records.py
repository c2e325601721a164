"""The typed records that travel from an item to the reports (docs/report-schema.md ``items[]``).

An item's record is built here once (:func:`new_item_record`), filled in by the item as it runs,
carried to the controller in the item's ``user_properties`` (builtins only, so it crosses
pytest-xdist), and completed there into a :class:`ReportItem` (node id, outcome, duration) by
:class:`pytest_vibecheck.report.collector.ItemCollector`. Both reporters (the benchmark's
:mod:`~pytest_vibecheck.report.session` and the CI gate's) read these types.

``report/schema.json`` describes the same records for readers of the JSON report; the test
``tests/test_report_records.py`` checks that every ``TypedDict`` here and its schema definition
have the same keys, the same required keys and the same enumerations.

The gate's per-(file, instruction) record is :class:`GateRecord`.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from pytest_vibecheck.types import ErrorKind, Outcome, ProtocolName, TestStatus

__all__ = [
    "BENCH_PROP",
    "GATE_PROP",
    "ErrorRecord",
    "ExtractionRecord",
    "GateRecord",
    "GateStatus",
    "GateViolationRecord",
    "GenerationRecord",
    "InstructionRecord",
    "ItemRecord",
    "MessageRecord",
    "ModelSpendRecord",
    "ReportItem",
    "SpendRecord",
    "TestsRecord",
    "TurnRecord",
    "VerdictRecord",
    "ViolationRecord",
    "new_item_record",
    "new_timing",
]

#: ``user_properties`` name of a benchmark item's :class:`ItemRecord`.
BENCH_PROP = "vibecheck"
#: ``user_properties`` name of a gate item's :class:`GateRecord`.
GATE_PROP = "vibecheck_gate"

ParamValue = int | str


class ViolationRecord(TypedDict):
    """One verifier finding (``Violation.to_dict``); ``line``/``column`` are 1-based."""

    rule: str
    line: int
    column: int
    message: str


class VerdictRecord(TypedDict):
    """One instruction's verdict on one turn; ``passed`` is None iff ``error`` is set."""

    position: int
    id: str
    passed: bool | None
    error: str | None
    violations: list[ViolationRecord]


class GenerationRecord(TypedDict):
    """One model reply: cache key, token counts (None when the backend gives none), seconds."""

    key: str | None
    cached: bool
    via_cache: bool
    input_tokens: int | None
    output_tokens: int | None
    latency_s: float | None
    finish_reason: str | None


class ExtractionRecord(TypedDict):
    """How the code was taken from the reply (``method``, blocks found, sha256 of the code)."""

    method: str
    blocks: int
    block: int | None
    no_code: bool
    code_sha256: str


class TestsRecord(TypedDict):
    """The sandboxed unit-test run of one turn's code (``duration_s`` in seconds)."""

    status: TestStatus
    failed_tests: list[str]
    message: str
    duration_s: float
    cached: bool


class MessageRecord(TypedDict):
    """One chat message sent to the model."""

    role: str
    content: str


class _TurnTexts(TypedDict, total=False):
    """The texts of a turn: in the record always, in the JSON report only with
    ``--vibe-report-replies`` (:func:`pytest_vibecheck.report.json_report.without_replies`)."""

    messages: list[MessageRecord]
    reply: str
    code: str


class TurnRecord(_TurnTexts):
    """One judged turn: turn 0 is the plain query; ``k`` instructions judged so far."""

    turn: int
    k: int
    generation: GenerationRecord
    extraction: ExtractionRecord
    tests: TestsRecord
    verdicts: list[VerdictRecord]
    passed: bool | None


class InstructionRecord(TypedDict):
    """One instruction of the item (``position`` is 1-based); categories are open strings."""

    position: int
    id: str
    category: str
    params: dict[str, ParamValue]


class ErrorRecord(TypedDict):
    """Why an item could not be judged (an infrastructure failure, never a model failure)."""

    kind: ErrorKind
    message: str


class ItemRecord(TypedDict):
    """What a benchmark item records about itself (``timing`` values in seconds)."""

    suite: str
    suite_sha256: str | None
    profile: str
    temperature: float
    task_id: str
    model: str
    protocol: ProtocolName
    k: int
    sample: int
    passed: bool | None
    error: ErrorRecord | None
    skip_reason: str | None
    instructions: list[InstructionRecord]
    turns: list[TurnRecord]
    no_code: bool
    timing: dict[str, float]
    ruff_version: str | None
    failure: str | None


class ReportItem(ItemRecord):
    """An :class:`ItemRecord` completed on the controller: one entry of the report's ``items``.

    ``duration_s`` is the sum of the setup, call and teardown durations in seconds.
    """

    nodeid: str
    outcome: Outcome
    duration_s: float


class ModelSpendRecord(TypedDict):
    """What one model's API requests spent (``run.spend.models``): requests answered, tokens,
    and US dollars at list prices (None when no price is known for the model)."""

    requests: int
    input_tokens: int
    output_tokens: int
    usd: float | None


class SpendRecord(TypedDict):
    """What the run spent on API requests (the report's ``run.spend``), over every process of
    the run (the xdist workers' counts meet in the run's shared state,
    :mod:`pytest_vibecheck.plugin.run.state`): model requests answered, input and output tokens
    of those replies, generations served from the cache (which cost nothing), US dollars at the
    list prices of :mod:`pytest_vibecheck.generate.prices` as of ``prices_as_of`` (None when a
    model of the run has no known price), ``--vibe-budget`` (None without one) and whether it
    stopped the run. Offline models (replay, reference) send nothing and spend nothing."""

    requests: int
    input_tokens: int
    output_tokens: int
    cache_hits: int
    usd: float | None
    prices_as_of: str
    budget: str | None
    budget_stopped: bool
    models: dict[str, ModelSpendRecord]


GateStatus = Literal["passed", "failed", "syntax", "error"]


class GateViolationRecord(ViolationRecord):
    """A gate violation; ``counted`` is False on a line the pull request did not change."""

    counted: bool


class GateRecord(TypedDict):
    """One gate item: a changed file against one instruction (or its syntax check)."""

    file: str
    status_in_diff: str
    old_path: str | None
    instruction: str
    label: str
    params: dict[str, ParamValue]
    status: GateStatus
    violations: list[GateViolationRecord]
    error: str | None
    line: int | None
    column: int | None


def new_timing() -> dict[str, float]:
    """Seconds spent per stage, all zero: ``generate``, ``tests``, ``verify``, ``total``."""
    return {"generate": 0.0, "tests": 0.0, "verify": 0.0, "total": 0.0}


def new_item_record(
    *,
    suite: str,
    suite_sha256: str | None,
    task_id: str,
    model: str,
    protocol: ProtocolName,
    k: int,
    sample: int,
    instructions: list[InstructionRecord],
    profile: str = "paper",
    temperature: float = 0.0,
) -> ItemRecord:
    """The record of an item before it runs: not judged (``passed`` None), no turns yet.
    ``profile`` and ``temperature``: the run's profile and the suite's sampling temperature
    (docs/suites.md, "Profiles")."""
    return {
        "suite": suite,
        "suite_sha256": suite_sha256,
        "profile": profile,
        "temperature": temperature,
        "task_id": task_id,
        "model": model,
        "protocol": protocol,
        "k": k,
        "sample": sample,
        "passed": None,
        "error": None,
        "skip_reason": None,
        "instructions": instructions,
        "turns": [],
        "no_code": False,
        "timing": new_timing(),
        "ruff_version": None,
        "failure": None,
    }
