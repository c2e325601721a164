"""The terminal summary table (also printed by ``vibecheck summary REPORT.json``).

:func:`render_summary` turns a report's ``aggregates`` and ``generation`` totals into lines; the
plugin writes them in ``pytest_terminal_summary`` under a ``vibecheck summary`` separator.
Metrics are fractions in the report and percentages here (one decimal).

What a run spent has one source, the run's shared counters of answered API requests
(``run.spend``, :class:`~pytest_vibecheck.report.records.SpendRecord`), and one line,
:func:`spend_line`: the live run prints it at the very end, ``vibecheck summary`` and
``vibecheck merge`` from the report. The generation line counts generations only: the tokens of
the reported turns are not what was spent (a replay's recorded tokens cost nothing; turns of
items a stop cut short are not reported but were paid for).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast

from pytest_vibecheck.generate.prices import PRICE_WORDS, format_usd
from pytest_vibecheck.report.records import (
    AggregateRecord,
    GenerationTotals,
    SpendRecord,
    VibeReport,
)

__all__ = ["SummaryParts", "pct", "render_summary", "render_table", "spend_line"]


class SummaryParts(TypedDict, total=False):
    """What the summary reads of a report, for a run whose report is not built yet."""

    aggregates: list[AggregateRecord]
    generation: GenerationTotals

HEADERS: tuple[str, ...] = (
    "suite",
    "model",
    "protocol",
    "k",
    "n",
    "pass@1",
    "FR_k",
    "instr-IF",
    "task-IF",
    "errors",
    "no-code",
    "timeouts",
    "tampered",
    "cache-hit",
)


def pct(value: float | None) -> str:
    """A fraction as a percentage with one decimal (``0.4193`` -> ``41.9%``); ``-`` for None."""
    return "-" if value is None else f"{100.0 * value:.1f}%"


def _signed_pct(value: float | None) -> str:
    return "-" if value is None else f"{100.0 * value:+.1f}%"


def render_table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> list[str]:
    """Left-aligned text columns for the first three, right-aligned for the rest."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def fmt(row: Sequence[str]) -> str:
        cells = [
            cell.ljust(widths[i]) if i < 3 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        ]
        return "  ".join(cells).rstrip()

    return [fmt(headers), *(fmt(r) for r in rows)]


def _row(g: AggregateRecord) -> list[str]:
    k = str(g["k"]) + ("*" if g.get("derived") and g["derived"] == g["evaluated"] else "")
    n = str(g["evaluated"])
    if g["evaluated"] != g["items"]:
        n = f"{g['evaluated']}/{g['items']}"
    return [
        str(g["suite"]),
        str(g["model"]),
        str(g["protocol"]),
        k,
        n,
        pct(g["pass_at_1"]),
        _signed_pct(g["fr"]),
        pct(g["instruction_if"]),
        pct(g["task_if"]),
        str(g["errors"]),
        str(g["no_code"]),
        str(g["timeouts"]),
        str(g.get("tampered", 0)),
        pct(g["cache"]["hit_rate"]),
    ]


def _details(g: AggregateRecord) -> list[str]:
    head = f"{g['suite']} / {g['model']} / {g['protocol']} k={g['k']}:"
    out = [head]
    if len(g.get("pass_at") or {}) > 1:
        out.append("  pass@k: " + ", ".join(f"pass@{k} {pct(v)}" for k, v in g["pass_at"].items()))
    if g.get("if_by_position"):
        out.append(
            "  IF by position: "
            + ", ".join(f"{p}: {pct(v)}" for p, v in g["if_by_position"].items())
        )
    if g.get("if_by_category"):
        out.append(
            "  IF by category: "
            + ", ".join(
                f"{c} {pct(r['if'])} ({r['passed']}/{r['n']})" for c, r in g["if_by_category"].items()
            )
        )
    if g.get("if_by_instruction"):
        out.append(
            "  IF by instruction: "
            + ", ".join(f"{i} {pct(r['if'])}" for i, r in g["if_by_instruction"].items())
        )
    if g.get("retention"):
        out.append(
            "  retention by turn: " + ", ".join(f"{t}: {pct(v)}" for t, v in g["retention"].items())
        )
    if g.get("error_kinds"):
        out.append("  errors: " + ", ".join(f"{k} {n}" for k, n in g["error_kinds"].items()))
    return out


def spend_line(spend: SpendRecord) -> str:
    """The one line of what a run spent on API requests (``run.spend``): tokens, requests,
    dollars at the run's prices (``run.spend.price``: list, or batch at half of them;
    :func:`~pytest_vibecheck.generate.prices.format_usd`) and the
    budget, e.g. ``vibecheck: spent 2,000 input + 1,000 output tokens on 2 model requests
    ($0.00625 at list prices); budget $0.0001, reached``. A budget reached says so: requests
    already sent when it was reached count too, so the total can pass the budget."""
    requests, tin, tout = spend["requests"], spend["input_tokens"], spend["output_tokens"]
    text = f"vibecheck: spent {tin:,} input + {tout:,} output tokens on {requests} model requests"
    usd = spend.get("usd")
    if usd is not None and requests:
        text += f" ({format_usd(usd)} at {PRICE_WORDS.get(spend.get('price') or 'list', 'list prices')})"
    if spend.get("budget"):
        text += f"; budget {spend['budget']}" + (", reached" if spend.get("budget_stopped") else "")
    return text


def render_summary(
    report: VibeReport | SummaryParts, verbosity: int = 0, with_spend: bool = True
) -> list[str]:
    """The summary lines of a report (docs/report-schema.md): the table of aggregates, a
    legend, the generation totals, what the run spent (:func:`spend_line`, from ``run.spend``;
    ``with_spend=False`` leaves it to the live run's last line), and at ``verbosity >= 1`` IF by
    position, category, instruction and multi-turn retention for every group."""
    groups: Sequence[AggregateRecord] = report.get("aggregates") or []
    if not groups:
        return ["no vibecheck results (no item ran)"]
    lines = render_table([_row(g) for g in groups], HEADERS)
    legend = (
        "n = results in the metrics (of all results, when some errored or were skipped); "
        "metrics per paper §3.2; FR_k against the baseline pass@1"
    )
    if any(g.get("derived") and g["derived"] == g["evaluated"] for g in groups):
        legend += "; k* = from the earlier turns of longer multi-turn conversations"
    lines.append(legend)
    gen = report.get("generation")
    if gen:
        line = f"generations: {gen.get('requested', 0)} requested, {gen.get('cached', 0)} from the cache"
        looked = gen.get("looked_up", 0)
        if looked:
            line += f" ({pct(gen.get('hit_rate'))} of {looked} looked up)"
        offline = gen.get("requested", 0) - looked
        if offline:
            line += f", {offline} from offline models (replay/reference)"
        lines.append(line)
    run: Mapping[str, Any] = cast("Mapping[str, Any]", report).get("run") or {}
    spend: SpendRecord | None = run.get("spend") if with_spend else None
    if spend is not None:
        lines.append(spend_line(spend))
    errors = sum(int(g["errors"]) for g in groups)
    if errors:
        kinds: dict[str, int] = {}
        for g in groups:
            for kind, n in (g.get("error_kinds") or {}).items():
                kinds[kind] = kinds.get(kind, 0) + int(n)
        lines.append(
            f"infrastructure errors (not in the metrics): {errors} ("
            + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            + ")"
        )
    if verbosity >= 1:
        for g in groups:
            lines.extend(_details(g))
    return lines
