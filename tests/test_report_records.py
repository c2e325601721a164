"""report/schema.json agrees with the typed records of report/records.py, key for key."""

from __future__ import annotations

import typing
from typing import Any, get_args, get_origin, get_type_hints

import pytest

from pytest_vibecheck.report import records
from pytest_vibecheck.report.json_report import report_schema

DEFS = report_schema()["$defs"]
ITEM = DEFS["item"]
TURN = DEFS["turn"]

#: (TypedDict, its definition in schema.json)
PAIRS: list[tuple[type, dict[str, Any]]] = [
    (records.ReportItem, ITEM),
    (records.InstructionRecord, DEFS["instruction"]),
    (records.TurnRecord, TURN),
    (records.GenerationRecord, TURN["properties"]["generation"]),
    (records.ExtractionRecord, TURN["properties"]["extraction"]),
    (records.TestsRecord, TURN["properties"]["tests"]),
    (records.VerdictRecord, DEFS["verdict"]),
    (records.ViolationRecord, DEFS["violation"]),
    (records.ErrorRecord, ITEM["properties"]["error"]["oneOf"][1]),
    (records.SpendRecord, report_schema()["properties"]["run"]["properties"]["spend"]),
    (records.ModelSpendRecord,
     report_schema()["properties"]["run"]["properties"]["spend"]["properties"]["models"]["additionalProperties"]),
    (records.VibeReport, report_schema()),
    (records.RunRecord, report_schema()["properties"]["run"]),
    (records.SelectionRecord, report_schema()["properties"]["run"]["properties"]["selection"]),
    (records.SuiteSelectionRecord,
     report_schema()["properties"]["run"]["properties"]["selection"]["properties"]["suites"]["items"]),
    (records.SuiteEntry, report_schema()["properties"]["suites"]["items"]),
    (records.GenerationTotals, report_schema()["properties"]["generation"]),
    (records.ShardRecord, report_schema()["properties"]["shard"]),
    (records.ThresholdCheckRecord, report_schema()["properties"]["thresholds"]["items"]),
    (records.AggregateRecord, DEFS["group"]),
    (records.RateRecord, DEFS["rate"]),
    (records.GroupCacheRecord, DEFS["group"]["properties"]["cache"]),
]


def _literal_values(hint: Any) -> set[str] | None:
    """The values of a Literal (possibly inside ``X | None``), else None."""
    if get_origin(hint) is typing.Literal:
        return set(get_args(hint))
    for arg in get_args(hint):
        found = _literal_values(arg)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize(("typed", "schema"), PAIRS, ids=[t.__name__ for t, _ in PAIRS])
def test_same_keys_and_required_keys(typed: type, schema: dict[str, Any]) -> None:
    hints = get_type_hints(typed)
    assert set(hints) == set(schema["properties"])
    # Every key the schema requires is always present in a record built by the plugin.
    assert set(schema["required"]) <= typed.__required_keys__  # type: ignore[attr-defined]


@pytest.mark.parametrize(("typed", "schema"), PAIRS, ids=[t.__name__ for t, _ in PAIRS])
def test_same_enumerations(typed: type, schema: dict[str, Any]) -> None:
    hints = get_type_hints(typed)
    for key, prop in schema["properties"].items():
        values = _literal_values(hints[key])
        if "enum" in prop:
            assert values == set(prop["enum"]), key
        else:
            assert values is None, key


def test_the_item_record_is_built_in_one_place() -> None:
    rec = records.new_item_record(
        suite="s", suite_sha256=None, task_id="t/1", model="m", protocol="single", k=1, sample=0,
        instructions=[{"position": 1, "id": "doc_1", "category": "doc", "params": {}}],
    )
    assert set(rec) == set(get_type_hints(records.ItemRecord))
    assert rec["passed"] is None and rec["turns"] == [] and rec["timing"]["total"] == 0.0
    item_keys = set(ITEM["properties"]) - {"nodeid", "outcome", "duration_s"}
    assert set(rec) == item_keys


def test_categories_are_open() -> None:
    prop = DEFS["instruction"]["properties"]["category"]
    assert "enum" not in prop and prop["type"] == "string"


def test_token_counts_are_the_required_token_keys() -> None:
    tokens = DEFS["group"]["properties"]["tokens"]  # required keys, any further integer key
    assert set(get_type_hints(records.TokenCounts)) == set(tokens["required"])
    assert records.TokenCounts.__required_keys__ == set(tokens["required"])


def test_the_spend_line_names_the_prices_the_dollars_are_at() -> None:
    from pytest_vibecheck.report.terminal import spend_line

    base: dict[str, object] = {
        "requests": 2, "input_tokens": 2_000, "output_tokens": 1_000, "cache_hits": 0,
        "usd": 0.003125, "prices_as_of": "2025-10", "budget": None, "budget_stopped": False, "models": {},
    }
    lines = {price: spend_line({**base, "price": price}) for price in ("list", "batch", "mixed")}  # type: ignore[typeddict-item]
    assert lines["list"] == (
        "vibecheck: spent 2,000 input + 1,000 output tokens on 2 model requests ($0.00313 at list prices)"
    )
    assert lines["batch"].endswith("($0.00313 at batch prices (half the list price))")
    assert lines["mixed"].endswith("($0.00313 at list and batch prices (shards of both kinds))")
    # a report written before run.spend.price existed reads as list prices
    assert spend_line(base) == lines["list"]  # type: ignore[arg-type]
