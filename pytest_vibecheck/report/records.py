"""The typed records that travel from an item to the reports (docs/report-schema.md ``items[]``).

An item's record is built here once (:func:`new_item_record`), filled in by the item as it runs,
carried to the controller in the item's ``user_properties`` (builtins only, so it crosses
pytest-xdist), and completed there into a :class:`ReportItem` (node id, outcome, duration) by
:class:`pytest_vibecheck.report.collector.ItemCollector`. Both reporters (the benchmark's
:mod:`~pytest_vibecheck.report.session` and the CI gate's) read these types.

``report/schema.json`` describes the same records for readers of the JSON report; the test
``tests/test_report_records.py`` checks that every ``TypedDict`` here and its schema definition
have the same keys, the same required keys and the same enumerations.

The report itself is a :class:`VibeReport`: its ``items`` (:class:`ReportItem`), ``aggregates``
(:class:`AggregateRecord`, one per (suite, model, protocol, k), made by
:func:`pytest_vibecheck.report.aggregate.aggregate`), ``generation`` totals, ``suites`` and
``run`` (:class:`RunRecord`, whose ``settings`` and the environment in it stay plain JSON). A
report read back from disk is checked against ``schema.json`` first
(:func:`pytest_vibecheck.report.json_report.load_report`), where JSON becomes these types.

The gate's per-(file, instruction) record is :class:`GateRecord`.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pytest_vibecheck.types import ErrorKind, Outcome, ParamValue, ProtocolName, TestStatus
from pytest_vibecheck.verify.verdict import ViolationRecord

__all__ = [
    "BENCH_PROP",
    "GATE_PROP",
    "AggregateRecord",
    "ErrorRecord",
    "ExtractionRecord",
    "GateRecord",
    "GateStatus",
    "GateViolationRecord",
    "GenerationRecord",
    "GenerationTotals",
    "GroupCacheRecord",
    "InstructionRecord",
    "ItemRecord",
    "MessageRecord",
    "ModelSpendRecord",
    "RateRecord",
    "ReportItem",
    "RunRecord",
    "SelectionRecord",
    "ShardRecord",
    "SpendRecord",
    "SuiteEntry",
    "SuiteSelectionRecord",
    "TestsRecord",
    "ThresholdCheckRecord",
    "TokenCounts",
    "TurnRecord",
    "VerdictRecord",
    "VibeReport",
    "ViolationRecord",
    "new_item_record",
    "new_timing",
]

#: ``user_properties`` name of a benchmark item's :class:`ItemRecord`.
BENCH_PROP = "vibecheck"
#: ``user_properties`` name of a gate item's :class:`GateRecord`.
GATE_PROP = "vibecheck_gate"


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
    #: ``"list"``, or ``"batch"`` (``--vibe-batch``: the dollars are at the batch price, half the
    #: list price), or ``"mixed"`` (shards of both, merged)
    price: Literal["list", "batch", "mixed"]
    budget: str | None
    budget_stopped: bool
    models: dict[str, ModelSpendRecord]


#: One instruction's (or category's) instruction-level IF in a group: the fraction ``if`` of
#: ``n`` verdicts, ``passed`` of them passed. (``if`` is a keyword: the functional form.)
RateRecord = TypedDict("RateRecord", {"if": float, "passed": int, "n": int})


class GroupCacheRecord(TypedDict):
    """A group's generations: requested, looked up in the cache (offline backends bypass it),
    served from it, and the hit rate (cached / looked up; None when nothing was looked up)."""

    requested: int
    looked_up: int
    cached: int
    hit_rate: float | None


class TokenCounts(TypedDict):
    """Tokens of a group: ``input``/``output`` of the generations not served from the cache
    (what the run cost), ``input_all``/``output_all`` of every generation."""

    input: int
    output: int
    input_all: int
    output_all: int


class AggregateRecord(TypedDict):
    """One row of the report's ``aggregates``: a (suite, model, protocol, k) group.

    Counts of results (``items``, ``evaluated``, ``derived`` from earlier turns of longer
    conversations, ``errors`` by ``error_kinds``, ``skipped``, ``no_code``, ``timeouts``,
    ``tampered``, ``passed``: tests and every instruction, ``tests_passed``) and the metrics as
    fractions in [0, 1] or None when nothing was measured: ``pass_at_1`` and ``pass_at`` (by k,
    as strings), ``s0`` (the baseline's pass@1), ``fr`` (FR_k = (S0 - S_k) / S0; None for the
    baseline), ``instruction_if``, ``task_if``, IF by position (1-based, as strings), by
    category and by instruction, and multi-turn ``retention`` by turn."""

    suite: str
    model: str
    protocol: ProtocolName
    k: int
    items: int
    evaluated: int
    derived: int
    errors: int
    skipped: int
    error_kinds: dict[str, int]
    no_code: int
    timeouts: int
    tampered: int
    passed: int
    tests_passed: int
    pass_at_1: float | None
    pass_at: dict[str, float]
    s0: float | None
    fr: float | None
    instruction_if: float | None
    task_if: float | None
    if_by_position: dict[str, float]
    if_by_category: dict[str, RateRecord]
    if_by_instruction: dict[str, RateRecord]
    retention: dict[str, float]
    cache: GroupCacheRecord
    tokens: TokenCounts


class GenerationTotals(TypedDict):
    """The report's ``generation``: the run's generations requested, looked up in the cache,
    served from it, the hit rate, and the tokens of those not served from the cache."""

    requested: int
    looked_up: int
    cached: int
    hit_rate: float | None
    input_tokens: int
    output_tokens: int


class _SuiteTotal(TypedDict, total=False):
    problems_total: int


class SuiteEntry(_SuiteTotal):
    """One entry of the report's ``suites``: the tasks run (``problems``) and, when the run
    selected some, how many the suite holds (``problems_total``)."""

    name: str
    manifest_sha256: str | None
    problems: int


class SuiteSelectionRecord(TypedDict):
    """One suite of ``run.selection``: tasks selected of the suite's total."""

    name: str
    problems_selected: int
    problems_total: int


class SelectionRecord(TypedDict):
    """``run.selection`` (:class:`pytest_vibecheck.config.selection.Selection`): the limit and
    where it came from, the task globs, each suite's share, the benchmark items collected,
    deselected by option, and left to run."""

    limit: int | None
    limit_source: str | None
    tasks: list[str]
    suites: list[SuiteSelectionRecord]
    collected: int
    deselected: dict[str, int]
    selected: int


class _RunOptional(TypedDict, total=False):
    selection: SelectionRecord
    spend: SpendRecord


class RunRecord(_RunOptional):
    """The report's ``run``: versions, platform, the resolved settings (plain JSON:
    :meth:`pytest_vibecheck.config.settings.VibeSettings.to_dict`, with the environment),
    xdist workers, seconds, exit status; ``selection`` and ``spend`` when known."""

    plugin_version: str
    python_version: str
    pytest_version: str
    ruff_version: str | None
    platform: str
    settings: dict[str, Any]
    workers: int
    duration_s: float
    exitstatus: int


class ShardRecord(TypedDict):
    """The report's ``shard`` (``--vibe-shard I/N``): 0-based index, count."""

    index: int
    count: int


class ThresholdCheckRecord(TypedDict):
    """One entry of the report's ``thresholds``
    (:meth:`pytest_vibecheck.config.thresholds.Check.to_dict`): a threshold against one
    aggregate row (``row`` None: nothing to compare); ``value``/``actual`` are fractions."""

    threshold: str
    metric: str
    kind: Literal["min", "max"]
    value: float
    model: str | None
    row: str | None
    actual: float | None
    passed: bool
    message: str


class _ReportOptional(TypedDict, total=False):
    shard: ShardRecord
    thresholds: list[ThresholdCheckRecord]


class VibeReport(_ReportOptional):
    """A JSON report (docs/report-schema.md): ``schema`` ``"pytest-vibecheck-report"``,
    ``schema_version`` 1, ``created`` (UTC, ISO 8601), then :class:`RunRecord`, the suites,
    the items, the aggregates and the generation totals. Plugins may add top-level fields of
    their own (the ``pytest_vibecheck_report`` hook)."""

    schema: str
    schema_version: int
    created: str
    run: RunRecord
    suites: list[SuiteEntry]
    items: list[ReportItem]
    aggregates: list[AggregateRecord]
    generation: GenerationTotals


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
