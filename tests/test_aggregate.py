"""aggregate(): from report items to the groups of docs/report-schema.md, with exact values."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import cast

import pytest

from pytest_vibecheck.report.aggregate import aggregate, generation_totals, results
from pytest_vibecheck.report.records import AggregateRecord, ReportItem, TurnRecord


def _turn(turn: int, tests: str, verdicts: Sequence[bool], ids: Sequence[str], *, cached: bool = False,
          no_code: bool = False, tokens: tuple[int, int] = (10, 20)) -> TurnRecord:
    """A turn with the fields aggregate() reads."""
    return cast(TurnRecord, {
        "turn": turn,
        "k": turn,
        "generation": {"key": "k" * 64, "cached": cached, "via_cache": True,
                       "input_tokens": tokens[0], "output_tokens": tokens[1],
                       "latency_s": 0.1, "finish_reason": "stop"},
        "extraction": {"method": "none" if no_code else "fenced-first", "blocks": 1,
                       "no_code": no_code, "code_sha256": "0" * 64},
        "tests": {"status": tests, "failed_tests": [], "message": "", "duration_s": 0.0, "cached": False},
        "verdicts": [
            {"position": i + 1, "id": iid, "passed": ok, "error": None, "violations": []}
            for i, (iid, ok) in enumerate(zip(ids, verdicts, strict=True))
        ],
        "passed": tests == "passed" and all(verdicts),
    })


IDS = ["doc_1", "logic_3", "style_3"]


def _item(task: str, protocol: str, k: int, turns: list[TurnRecord], *, outcome: str | None = None,
          sample: int = 0, model: str = "m", error: str | None = None) -> ReportItem:
    """A report item with the fields aggregate() reads (the others left out)."""
    param = f"m-{protocol}" + ("" if protocol == "baseline" else f"-k{k}") + (f"-s{sample}" if sample else "")
    final = turns[-1] if turns else None
    passed = bool(final and final["passed"])
    return cast(ReportItem, {
        "nodeid": f"s::{task}[{param}]",
        "suite": "s",
        "task_id": task,
        "model": model,
        "protocol": protocol,
        "k": k,
        "sample": sample,
        "outcome": outcome or ("passed" if passed else "failed"),
        "passed": None if error else passed,
        "error": {"kind": error, "message": "x"} if error else None,
        "instructions": [
            {"position": i + 1, "id": iid, "category": iid.split("_")[0], "params": {}}
            for i, iid in enumerate(IDS[: (3 if protocol == "baseline" else k)])
        ],
        "turns": turns,
        "no_code": bool(final and final["extraction"]["no_code"]),
        "duration_s": 1.0,
    })


def _group(aggs: list[AggregateRecord], protocol: str, k: int) -> AggregateRecord:
    (g,) = [g for g in aggs if g["protocol"] == protocol and g["k"] == k]
    return g


def test_baseline_and_single_turn_metrics() -> None:
    items = [
        _item("a", "baseline", 0, [_turn(0, "passed", [True, False, True], IDS)]),
        _item("b", "baseline", 0, [_turn(0, "passed", [False, False, False], IDS)]),
        _item("c", "baseline", 0, [_turn(0, "failed", [True, True, True], IDS)]),
        _item("d", "baseline", 0, [_turn(0, "timeout", [True, True, True], IDS)]),
        _item("a", "single", 2, [_turn(0, "passed", [True, True], IDS[:2])]),
        _item("b", "single", 2, [_turn(0, "failed", [True, False], IDS[:2])]),
        _item("c", "single", 2, [_turn(0, "failed", [False, False], IDS[:2], no_code=True)]),
        _item("d", "single", 2, [], outcome="error", error="rate_limit"),
    ]
    aggs = aggregate(items)
    base = _group(aggs, "baseline", 0)
    assert base["pass_at_1"] == 0.5
    assert base["s0"] == 0.5
    assert base["fr"] is None
    assert base["timeouts"] == 1
    assert base["instruction_if"] == pytest.approx((2 / 3 + 0 + 1 + 1) / 4)
    assert base["task_if"] == 0.5
    assert base["if_by_position"] == {"1": 0.75, "2": 0.5, "3": 0.75}
    assert base["if_by_category"]["doc"] == {"if": 0.75, "passed": 3, "n": 4}
    assert base["passed"] == 0  # a passes tests but not every instruction

    single = _group(aggs, "single", 2)
    assert single["items"] == 4
    assert single["evaluated"] == 3
    assert single["errors"] == 1
    assert single["error_kinds"] == {"rate_limit": 1}
    assert single["pass_at_1"] == pytest.approx(1 / 3)
    assert single["fr"] == pytest.approx((0.5 - 1 / 3) / 0.5)
    assert single["instruction_if"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert single["task_if"] == pytest.approx(1 / 3)
    assert single["no_code"] == 1
    assert single["passed"] == 1
    assert single["if_by_instruction"] == {
        "doc_1": {"if": pytest.approx(2 / 3), "passed": 2, "n": 3},
        "logic_3": {"if": pytest.approx(1 / 3), "passed": 1, "n": 3},
    }
    # tokens: only the generations not served from the cache count as spent
    assert single["tokens"] == {"input": 30, "output": 60, "input_all": 30, "output_all": 60}
    assert single["cache"] == {"requested": 3, "looked_up": 3, "cached": 0, "hit_rate": 0.0}


def test_multi_turn_item_yields_lower_k_and_the_baseline() -> None:
    turns = [
        _turn(0, "passed", [True, False, True], IDS, cached=True),
        _turn(1, "passed", [True], IDS[:1]),
        _turn(2, "failed", [False, True], IDS[:2]),
        _turn(3, "passed", [True, True, True], IDS),
    ]
    aggs = aggregate([_item("a", "multi", 3, turns)])
    assert [(g["protocol"], g["k"]) for g in aggs] == [("baseline", 0), ("multi", 1), ("multi", 2), ("multi", 3)]
    base = _group(aggs, "baseline", 0)
    assert base["derived"] == 1
    assert base["instruction_if"] == pytest.approx(2 / 3)
    m2 = _group(aggs, "multi", 2)
    assert m2["pass_at_1"] == 0.0
    assert m2["fr"] == 1.0
    assert m2["retention"] == {"2": 0.0}
    m3 = _group(aggs, "multi", 3)
    assert m3["derived"] == 0
    assert m3["passed"] == 1
    # turn 1: [T]; turn 2: [F, T] -> instruction 1 lost; turn 3: instruction 2 met at 2 and kept
    assert m3["retention"] == {"2": 0.0, "3": 1.0}
    # the cache and token counts belong to the item's own group only
    assert m3["cache"] == {"requested": 4, "looked_up": 4, "cached": 1, "hit_rate": 0.25}
    assert m2["cache"]["requested"] == 0
    assert generation_totals([_item("a", "multi", 3, turns)]) == {
        "requested": 4, "looked_up": 4, "cached": 1, "hit_rate": 0.25,
        "input_tokens": 30, "output_tokens": 60,
    }


def test_an_item_of_the_exact_group_wins_over_a_derived_result() -> None:
    multi = _item("a", "multi", 2, [
        _turn(0, "failed", [False, False, False], IDS),
        _turn(1, "failed", [False], IDS[:1]),
        _turn(2, "passed", [True, True], IDS[:2]),
    ])
    base = _item("a", "baseline", 0, [_turn(0, "passed", [True, True, True], IDS)])
    multi1 = _item("a", "multi", 1, [_turn(0, "passed", [True, True, True], IDS), _turn(1, "passed", [True], IDS[:1])])
    for order in ([multi, base, multi1], [multi1, base, multi], [base, multi1, multi]):
        aggs = aggregate(order)
        assert _group(aggs, "baseline", 0)["pass_at_1"] == 1.0
        assert _group(aggs, "baseline", 0)["derived"] == 0
        assert _group(aggs, "multi", 1)["pass_at_1"] == 1.0
        assert _group(aggs, "multi", 1)["derived"] == 0
    # without the exact items, the shortest conversation wins among derived results
    other = _item("a", "multi", 3, [
        _turn(0, "passed", [True, True, True], IDS),
        _turn(1, "passed", [True], IDS[:1]),
        _turn(2, "passed", [True, True], IDS[:2]),
        _turn(3, "passed", [True, True, True], IDS),
    ])
    chosen = {(r.protocol, r.k): r for r in results([other, multi])}
    assert chosen[("baseline", 0)].source_k == 2
    assert chosen[("multi", 1)].source_k == 2
    assert chosen[("multi", 2)].derived is False


def test_samples_give_unbiased_pass_at_k() -> None:
    items = [
        _item("a", "baseline", 0, [_turn(0, "passed" if s < 2 else "failed", [True] * 3, IDS)], sample=s)
        for s in range(5)
    ] + [
        _item("b", "baseline", 0, [_turn(0, "failed", [True] * 3, IDS)], sample=s) for s in range(5)
    ]
    g = aggregate(items)[0]
    assert g["pass_at_1"] == pytest.approx((0.4 + 0.0) / 2)
    assert g["pass_at"] == {"1": pytest.approx(0.2), "5": pytest.approx(0.5)}


def test_aggregate_is_independent_of_item_order() -> None:
    items = [
        _item(t, p, k, [_turn(0, "passed" if (i + k) % 3 else "failed", [True, bool(i % 2), False][: max(k, 1) if p != "baseline" else 3], IDS[: max(k, 1) if p != "baseline" else 3])])
        for i, t in enumerate("abcdefg")
        for p, k in (("baseline", 0), ("single", 1), ("single", 3))
    ]
    expected = aggregate(items)
    rng = random.Random(7)
    for _ in range(5):
        shuffled = items[:]
        rng.shuffle(shuffled)
        assert aggregate(shuffled) == expected


def test_empty_input() -> None:
    assert aggregate([]) == []
    assert generation_totals([]) == {
        "requested": 0, "looked_up": 0, "cached": 0, "hit_rate": None, "input_tokens": 0, "output_tokens": 0,
    }


def test_group_of_only_errors_has_null_metrics() -> None:
    g = aggregate([_item("a", "single", 1, [], outcome="error", error="api_error")])[0]
    assert g["evaluated"] == 0
    assert g["pass_at_1"] is None
    assert g["instruction_if"] is None
    assert g["task_if"] is None
    assert g["fr"] is None
    assert g["errors"] == 1
