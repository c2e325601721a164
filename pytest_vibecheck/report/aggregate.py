"""From item results to the aggregates of a report (docs/report-schema.md, ``aggregates[]``).

Pure functions over the report items (:class:`~pytest_vibecheck.report.records.ReportItem`: the
records items store in ``user_properties``, builtins only), so the same code runs on the pytest
controller, in ``vibecheck summary`` and when reports are merged: ``aggregate(items)`` gives
identical numbers however the items were produced. A row is an
:class:`~pytest_vibecheck.report.records.AggregateRecord`.

A *result* is one (suite, task, model, protocol, k, sample). Each item gives one result for its
own (protocol, k). A multi-turn item for k = K also gives *derived* results for (multi, t),
t = 1..K-1, and (baseline, 0) from its earlier turns (paper §3.2: the K-turn conversation's
earlier rounds are the lower-k results; turn 1's reply is the 0-instruction generation). A
derived result is used only where no item of that exact group exists for the same task and
sample; among derived results, the shortest conversation wins (then the smallest node id).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_vibecheck.report import metrics
from pytest_vibecheck.report.records import (
    AggregateRecord,
    GenerationTotals,
    RateRecord,
    ReportItem,
    TokenCounts,
    TurnRecord,
)
from pytest_vibecheck.types import ProtocolName

__all__ = ["PASS_AT_KS", "PROTOCOL_ORDER", "Result", "aggregate", "generation_totals", "results"]

#: The k values of pass@k reported when there are enough samples per problem.
PASS_AT_KS: tuple[int, ...] = (1, 5, 10, 20, 50, 100)
#: Display order of the protocols.
PROTOCOL_ORDER: dict[str, int] = {"baseline": 0, "single": 1, "multi": 2}

GroupKey = tuple[str, str, ProtocolName, int]  # suite, model, protocol, k


@dataclass(frozen=True)
class Result:
    """One result of a group (see the module docstring)."""

    suite: str
    task_id: str
    model: str
    protocol: ProtocolName
    k: int
    sample: int
    status: str  # "evaluated" | "error" | "skipped"
    nodeid: str
    derived: bool = False
    source_k: int = 0  # k of the item that produced a derived result
    tests_passed: bool = False
    timeout: bool = False
    tampered: bool = False
    no_code: bool = False
    passed: bool = False
    error_kind: str | None = None
    #: (instruction id, category, passed) in position order
    verdicts: tuple[tuple[str, str, bool], ...] = ()
    #: multi-turn: outcomes of instructions 1..t at each turn t = 1..k
    turn_verdicts: tuple[tuple[bool, ...], ...] = ()
    cache_requested: int = 0
    cache_hits: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)

    @property
    def group(self) -> GroupKey:
        return (self.suite, self.model, self.protocol, self.k)

    @property
    def unit(self) -> tuple[str, str, str, str, int, int]:
        return (self.suite, self.model, self.protocol, self.task_id, self.k, self.sample)


def _verdicts(turn: TurnRecord, categories: Mapping[str, str]) -> tuple[tuple[str, str, bool], ...]:
    out = []
    for v in sorted(turn.get("verdicts") or [], key=lambda v: int(v.get("position", 0))):
        iid = str(v["id"])
        out.append((iid, categories.get(iid, iid.split("_", 1)[0]), v.get("passed") is True))
    return tuple(out)


def _turn_result(
    item: ReportItem,
    turn: TurnRecord,
    *,
    protocol: ProtocolName,
    k: int,
    derived: bool,
    turn_verdicts: tuple[tuple[bool, ...], ...] = (),
) -> Result:
    categories = {str(i["id"]): str(i.get("category", "")) for i in item.get("instructions") or []}
    tests = turn.get("tests") or {}
    status = tests.get("status")
    verdicts = _verdicts(turn, categories)
    tests_passed = status == "passed"
    return Result(
        suite=str(item["suite"]),
        task_id=str(item["task_id"]),
        model=str(item["model"]),
        protocol=protocol,
        k=k,
        sample=int(item.get("sample", 0)),
        status="evaluated",
        nodeid=str(item.get("nodeid", "")),
        derived=derived,
        source_k=int(item.get("k", 0)),
        tests_passed=tests_passed,
        timeout=status == "timeout",
        tampered=status == "tampered",
        no_code=bool((turn.get("extraction") or {}).get("no_code")),
        passed=tests_passed and all(ok for _, _, ok in verdicts),
        verdicts=verdicts,
        turn_verdicts=turn_verdicts,
    )


def _usage(turns: Iterable[TurnRecord]) -> tuple[int, int, dict[str, int]]:
    """(requested, cached, tokens); ``tokens["looked_up"]`` counts generations that went
    through the cache (offline backends such as replay and reference bypass it)."""
    requested = cached = 0
    tok = {"input": 0, "output": 0, "input_all": 0, "output_all": 0, "looked_up": 0}
    for t in turns:
        g = t.get("generation") or {}
        if not g:
            continue
        requested += 1
        hit = bool(g.get("cached"))
        cached += hit
        tok["looked_up"] += bool(g.get("via_cache", hit))
        inp = int(g.get("input_tokens") or 0)
        out = int(g.get("output_tokens") or 0)
        tok["input_all"] += inp
        tok["output_all"] += out
        if not hit:
            tok["input"] += inp
            tok["output"] += out
    return requested, cached, tok


def _item_results(item: ReportItem) -> list[Result]:
    protocol = item["protocol"]
    k = int(item.get("k", 0))
    outcome = item.get("outcome")
    turns: list[TurnRecord] = list(item.get("turns") or [])
    requested, cached, tok = _usage(turns)
    base = {
        "suite": str(item["suite"]),
        "task_id": str(item["task_id"]),
        "model": str(item["model"]),
        "protocol": protocol,
        "k": k,
        "sample": int(item.get("sample", 0)),
        "nodeid": str(item.get("nodeid", "")),
        "source_k": k,
        "cache_requested": requested,
        "cache_hits": cached,
        "tokens": tok,
    }
    if outcome in ("error", "skipped") or not turns:
        err = item.get("error")
        kind = str(err.get("kind")) if err else ("internal_error" if outcome != "skipped" else None)
        status = "skipped" if outcome == "skipped" else "error"
        return [Result(status=status, error_kind=kind if status == "error" else None, **base)]  # type: ignore[arg-type]

    out: list[Result] = []
    if protocol == "multi":
        by_turn = {int(t.get("turn", i)): t for i, t in enumerate(turns)}
        cats = {str(i["id"]): str(i.get("category", "")) for i in item.get("instructions") or []}
        history: list[tuple[bool, ...]] = [
            tuple(ok for _, _, ok in _verdicts(by_turn[t], cats))
            for t in range(1, k + 1)
            if t in by_turn
        ]
        for t in range(k + 1):
            if t not in by_turn:
                continue
            r = _turn_result(
                item,
                by_turn[t],
                protocol="baseline" if t == 0 else "multi",
                k=t,
                derived=t != k,
                turn_verdicts=tuple(history[:t]) if t else (),
            )
            out.append(r)
    else:
        out.append(_turn_result(item, turns[-1], protocol=protocol, k=k, derived=False))
    final = [r for r in out if not r.derived]
    others = [r for r in out if r.derived]
    # usage and cache belong to the item's own result only (never counted twice)
    final = [
        Result(**{**r.__dict__, "cache_requested": requested, "cache_hits": cached, "tokens": tok})
        for r in final
    ]
    return final + others


def results(items: Iterable[ReportItem]) -> list[Result]:
    """All results of the run, one per (suite, model, protocol, task, k, sample).

    Items' own results win over derived ones; see the module docstring.
    """
    chosen: dict[tuple[str, str, str, str, int, int], Result] = {}
    for item in sorted(items, key=lambda it: str(it.get("nodeid", ""))):
        for r in _item_results(item):
            old = chosen.get(r.unit)
            if old is None or (old.derived and (not r.derived or r.source_k < old.source_k)):
                chosen[r.unit] = r
    return list(chosen.values())


def _group_sort(key: GroupKey) -> tuple[str, str, int, int]:
    suite, model, protocol, k = key
    return (suite, model, PROTOCOL_ORDER.get(protocol, 9), k)


def _rates(d: Mapping[str, tuple[float, int, int]]) -> dict[str, RateRecord]:
    return {key: {"if": v[0], "passed": v[1], "n": v[2]} for key, v in sorted(d.items())}


def _group(key: GroupKey, rs: Sequence[Result], s0: float | None) -> AggregateRecord:
    suite, model, protocol, k = key
    ev = [r for r in rs if r.status == "evaluated"]
    by_problem: dict[str, list[bool]] = defaultdict(list)
    for r in ev:
        by_problem[r.task_id].append(r.tests_passed)
    counts = [(len(v), sum(v)) for v in by_problem.values()]
    max_n = max((n for n, _ in counts), default=0)
    pass_at = {
        str(kk): v
        for kk in PASS_AT_KS
        if kk <= max_n and (v := metrics.mean_pass_at_k(counts, kk)) is not None
    }
    p1 = metrics.pass_at_1(by_problem)
    vlists = [[ok for _, _, ok in r.verdicts] for r in ev]
    error_kinds: dict[str, int] = defaultdict(int)
    for r in rs:
        if r.status == "error":
            error_kinds[r.error_kind or "internal_error"] += 1
    requested = sum(r.cache_requested for r in rs if not r.derived)
    hits = sum(r.cache_hits for r in rs if not r.derived)
    looked_up = sum(int(r.tokens.get("looked_up", 0)) for r in rs if not r.derived)
    tokens = {"input": 0, "output": 0, "input_all": 0, "output_all": 0}
    for r in rs:
        if not r.derived:
            for name in tokens:
                tokens[name] += int(r.tokens.get(name, 0))
    token_counts: TokenCounts = {
        "input": tokens["input"], "output": tokens["output"],
        "input_all": tokens["input_all"], "output_all": tokens["output_all"],
    }  # fmt: skip
    retention = (
        {str(t): v for t, v in metrics.retention_by_turn(r.turn_verdicts for r in ev).items()}
        if protocol == "multi"
        else {}
    )
    return {
        "suite": suite,
        "model": model,
        "protocol": protocol,
        "k": k,
        "items": len(rs),
        "evaluated": len(ev),
        "derived": sum(r.derived for r in ev),
        "errors": sum(r.status == "error" for r in rs),
        "skipped": sum(r.status == "skipped" for r in rs),
        "error_kinds": dict(sorted(error_kinds.items())),
        "no_code": sum(r.no_code for r in ev),
        "timeouts": sum(r.timeout for r in ev),
        "tampered": sum(r.tampered for r in ev),
        "passed": sum(r.passed for r in ev),
        "tests_passed": sum(r.tests_passed for r in ev),
        "pass_at_1": p1,
        "pass_at": pass_at,
        "s0": s0,
        "fr": None if protocol == "baseline" else metrics.functional_regression(s0, p1),
        "instruction_if": metrics.instruction_level_if(vlists),
        "task_if": metrics.task_level_if(vlists),
        "if_by_position": {str(p): v for p, v in metrics.if_by_position(vlists).items()},
        "if_by_category": _rates(metrics.if_by_key((c, ok) for r in ev for _, c, ok in r.verdicts)),
        "if_by_instruction": _rates(
            metrics.if_by_key((i, ok) for r in ev for i, _, ok in r.verdicts)
        ),
        "retention": retention,
        "cache": {
            "requested": requested,
            "looked_up": looked_up,
            "cached": hits,
            "hit_rate": metrics.cache_hit_rate(looked_up, hits),
        },
        "tokens": token_counts,
    }


def aggregate(items: Iterable[ReportItem]) -> list[AggregateRecord]:
    """The ``aggregates`` list of a report: one dict per (suite, model, protocol, k).

    ``items`` are report items (docs/report-schema.md). Sorted by suite, model, protocol
    (baseline, single, multi) and k. Identical for any order of ``items``.
    """
    groups: dict[GroupKey, list[Result]] = defaultdict(list)
    for r in results(items):
        groups[r.group].append(r)
    s0: dict[tuple[str, str], float | None] = {}
    for (suite, model, protocol, _k), rs in groups.items():
        if protocol == "baseline":
            by_problem: dict[str, list[bool]] = defaultdict(list)
            for r in rs:
                if r.status == "evaluated":
                    by_problem[r.task_id].append(r.tests_passed)
            s0[(suite, model)] = metrics.pass_at_1(by_problem)
    return [
        _group(key, groups[key], s0.get((key[0], key[1])))
        for key in sorted(groups, key=_group_sort)
    ]


def generation_totals(items: Iterable[ReportItem]) -> GenerationTotals:
    """Run totals: ``requested``, ``looked_up`` (went through the cache), ``cached``,
    ``hit_rate`` (cached / looked_up), ``input_tokens``, ``output_tokens``.

    Tokens count the generations that were not served from the cache (what the run cost).
    """
    requested = cached = looked_up = inp = out = 0
    for item in items:
        r, c, tok = _usage(item.get("turns") or [])
        requested += r
        cached += c
        looked_up += tok["looked_up"]
        inp += tok["input"]
        out += tok["output"]
    return {
        "requested": requested,
        "looked_up": looked_up,
        "cached": cached,
        "hit_rate": metrics.cache_hit_rate(looked_up, cached),
        "input_tokens": inp,
        "output_tokens": out,
    }
