"""The published results page (``docs/results.md``) generated from a JSON report.

``vibecheck results REPORT.json --out docs/results.md`` renders one Markdown page from a report
written by ``pytest --vibe-report`` (docs/report-schema.md): the headline table (pass@1, FR_k,
instruction-level and task-level IF per protocol and k), IF by position and by category, FR_k
over k and multi-turn retention, all computed by the analysis package
(:mod:`pytest_vibecheck.report.analysis.breakdowns`, so every number agrees with the report's
``aggregates``), next to the paper's reference numbers for larger models (Vibe Checker Tables
2-3, :data:`PAPER_REFERENCE`), the model's behaviour (replies with no code, extraction methods,
token-limit hits, test timeouts), the cost of the run and the commands that reproduce it.

Nothing in the page depends on the time it was rendered, so re-rendering the same inputs gives
the same bytes (the tests check that the shipped page matches its report).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from pytest_vibecheck.errors import DataFileError, VibecheckError
from pytest_vibecheck.report.aggregate import PROTOCOL_ORDER
from pytest_vibecheck.report.analysis.breakdowns import AnalysisSettings, build_tables
from pytest_vibecheck.report.analysis.load import LoadedReport, load_report, report_results
from pytest_vibecheck.report.analysis.tables import Table, format_cell
from pytest_vibecheck.report.records import AggregateRecord, ReportItem, TurnRecord, VibeReport

__all__ = [
    "PAPER_REFERENCE",
    "HeadlineRow",
    "RunInfo",
    "behaviour_counts",
    "headline_rows",
    "read_runs",
    "render_results_page",
]

#: Reference numbers of the paper (Vibe Checker, Tables 2-3; percentages, BigVibeBench), as
#: summarised in the project's reference notes (vericode.md §5). ``None``: not reported there.
PAPER_REFERENCE: dict[str, Any] = {
    "task_if": {
        # model: (single-turn k=1, single-turn k=5, multi-turn k=5)
        "Claude 4 Opus": (88.77, 46.75, 42.11),
        "GPT 5": (82.89, 34.39, 48.51),
        "Gemini 2.5 Pro": (82.19, 30.70, 33.68),
        "mean of 31 models": (77.25, 23.47, 27.97),
    },
    "multi_k1_mean": 80.50,
    "base_pass_at_1": {
        "Claude 4 Opus": 51.05,
        "GPT 5": 46.49,
        "Gemini 2.5 Pro": 50.35,
        "o4 mini": 52.28,
    },
    "fr5_single_mean": 5.85,
    "position_if_mean": {
        "single": (76.0, 72.6, 72.3, 72.7, 73.8),
        "multi": (74.7, 73.3, 75.0, 75.6, 78.9),
    },
}


@dataclass(frozen=True)
class RunInfo:
    """One invocation of the benchmark script (a line of ``PREFIX.runs.jsonl``): UTC start and
    end, wall time in seconds, pytest's exit status, cache mode, and ``kind``: ``record`` (asks
    the server for replies) or ``score`` (scores recorded replies)."""

    started: str
    finished: str
    wall_s: float
    exit: int
    cache_mode: str = "use"
    kind: str = "record"


def read_runs(path: str | Path) -> list[RunInfo]:
    """The invocations recorded by ``scripts/run_local_model_benchmark.sh`` (JSON lines).

    Raises :class:`DataFileError` naming the file and line for a malformed line.
    """
    p = Path(path)
    out: list[RunInfo] = []
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataFileError(p, f"cannot read: {exc}") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out.append(
                RunInfo(
                    str(obj["started"]), str(obj["finished"]), float(obj["wall_s"]),
                    int(obj["exit"]), str(obj.get("cache_mode", "use")), str(obj.get("kind", "record")),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise DataFileError(p, f"not a run record ({exc})", line=n) from None
    return out


def _pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def _group_sort(row: AggregateRecord) -> tuple[str, str, int, int]:
    return (str(row["suite"]), str(row["model"]), PROTOCOL_ORDER.get(str(row["protocol"]), 9), int(row["k"]))


class HeadlineRow(TypedDict):
    """One aggregate group reduced to the published numbers (:func:`headline_rows`)."""

    suite: str
    model: str
    protocol: str
    k: int
    evaluated: int
    errors: int
    no_code: int
    timeouts: int
    pass_at_1: float | None
    fr: float | None
    instruction_if: float | None
    task_if: float | None
    if_by_position: dict[str, float]
    if_by_category: dict[str, float | None]


def headline_rows(report: VibeReport) -> list[HeadlineRow]:
    """The report's aggregate groups reduced to the published numbers (fractions in [0, 1]):
    ``suite, model, protocol, k, evaluated, errors, no_code, timeouts, pass_at_1, fr,
    instruction_if, task_if, if_by_position, if_by_category`` (category -> IF).

    These are what the reproduction test compares exactly with a re-scored run; sorted by
    (suite, model, protocol order, k).
    """
    return [
        {
            "suite": g["suite"],
            "model": g["model"],
            "protocol": g["protocol"],
            "k": g["k"],
            "evaluated": g["evaluated"],
            "errors": g["errors"],
            "no_code": g["no_code"],
            "timeouts": g["timeouts"],
            "pass_at_1": g["pass_at_1"],
            "fr": g["fr"],
            "instruction_if": g["instruction_if"],
            "task_if": g["task_if"],
            "if_by_position": dict(g.get("if_by_position") or {}),
            "if_by_category": {c: v.get("if") for c, v in sorted((g.get("if_by_category") or {}).items())},
        }
        for g in sorted(report.get("aggregates") or [], key=_group_sort)
    ]


def _without_model(rows: Sequence[HeadlineRow]) -> list[dict[str, object]]:
    return [{k: v for k, v in r.items() if k != "model"} for r in rows]


@dataclass
class Behaviour:
    """Counts over the distinct generations of a report (a multi-turn conversation's turns and
    the baseline reply shared with multi-turn turn 0 are counted once, by cache key)."""

    generations: int = 0
    no_code: int = 0
    methods: Counter[str] = field(default_factory=Counter)
    finish: Counter[str] = field(default_factory=Counter)
    input_tokens: int = 0
    output_tokens: int = 0
    cached: int = 0
    latency_s: float = 0.0
    test_status: Counter[str] = field(default_factory=Counter)
    by_label_length: Counter[str] = field(default_factory=Counter)
    by_label: Counter[str] = field(default_factory=Counter)
    max_output_tokens: int = 0


def _label(item: ReportItem, turn: TurnRecord) -> str:
    if item["protocol"] == "multi":
        return "baseline" if turn["turn"] == 0 else f"multi-k{turn['turn']}"
    return "baseline" if item["protocol"] == "baseline" else f"single-k{item['k']}"


def behaviour_counts(report: VibeReport) -> Behaviour:
    """Model behaviour over the report's distinct generations: replies with no code,
    extraction methods (``extract.METHODS``), finish reasons (``length`` = the token limit was
    hit), tokens, latency (seconds, of the original calls) and test statuses of the code."""
    b = Behaviour()
    seen: set[str] = set()
    for item in report.get("items") or []:
        for turn in item.get("turns") or []:
            gen = turn.get("generation") or {}
            key = gen.get("key") or f"{item['nodeid']}#{turn.get('turn')}"
            if key in seen:
                continue
            seen.add(key)
            ex = turn.get("extraction") or {}
            b.generations += 1
            label = _label(item, turn)
            b.by_label[label] += 1
            b.no_code += bool(ex.get("no_code"))
            b.methods[str(ex.get("method"))] += 1
            finish = str(gen.get("finish_reason"))
            b.finish[finish] += 1
            if finish == "length":
                b.by_label_length[label] += 1
            b.input_tokens += int(gen.get("input_tokens") or 0)
            out_tokens = int(gen.get("output_tokens") or 0)
            b.output_tokens += out_tokens
            b.max_output_tokens = max(b.max_output_tokens, out_tokens)
            b.cached += bool(gen.get("cached"))
            b.latency_s += float(gen.get("latency_s") or 0.0)
            b.test_status[str((turn.get("tests") or {}).get("status"))] += 1
    return b


def _table_md(t: Table, drop: Sequence[str] = ("suite", "model")) -> list[str]:
    keep = [i for i, c in enumerate(t.columns) if c.key not in drop]
    cols = [t.columns[i] for i in keep]
    out = ["| " + " | ".join(c.label for c in cols) + " |",
           "| " + " | ".join("---:" if c.kind != "text" else "---" for c in cols) + " |"]
    out.extend(
        "| " + " | ".join(format_cell(cols[j], row[i]).replace("|", "\\|") for j, i in enumerate(keep)) + " |"
        for row in t.rows
    )
    return out


def _hms(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600} h {s % 3600 // 60:02d} min {s % 60:02d} s" if s >= 3600 else f"{s // 60} min {s % 60:02d} s"


def render_results_page(
    report_path: str | Path,
    *,
    title: str,
    intro: Sequence[str] = (),
    commands: Sequence[str] = (),
    runs: Sequence[RunInfo] = (),
    rerun_report: str | Path | None = None,
    replay_manifest: Mapping[str, Any] | None = None,
    partial_note: str | None = None,
    settings: AnalysisSettings | None = None,
    display_paths: Mapping[str, str] | None = None,
) -> str:
    """The Markdown page for the run in ``report_path``.

    ``intro``: paragraphs under the title; ``commands``: the shell commands that produced and
    reproduce the numbers; ``runs``: the invocations of the benchmark script (wall time; a
    resumed run has several); ``rerun_report``: the report of a second, identical run (its cache
    hit rate is shown); ``replay_manifest``: the shipped replay's manifest (provenance);
    ``partial_note``: shown at the top when the run is incomplete. ``display_paths`` maps a
    path to the text shown for it (so the page names repository paths, not a machine's).

    Raises :class:`VibecheckError` for a report without items.
    """
    shown = dict(display_paths or {})
    rep = load_report(report_path)
    data = rep.data
    res = report_results([rep])
    if not res:
        raise VibecheckError(f"{report_path}: the report holds no items")
    tables = {t.name: t for t in build_tables(res, settings or AnalysisSettings())}
    b = behaviour_counts(data)
    out: list[str] = [f"# {title}", ""]
    out.append(
        f"<!-- generated by `vibecheck results` from {shown.get(str(report_path), str(report_path))}; "
        "do not edit by hand -->"
    )
    out.append("")
    if partial_note:
        out += [f"> **Partial results.** {partial_note}", ""]
    out += [*(p for para in intro for p in (para, ""))]
    out += _headline_section(tables)
    out += _paper_section(data, replay_manifest)
    out += _behaviour_section(data, b)
    out += _cost_section(data, b, runs, rerun_report)
    out += _provenance_section(replay_manifest)
    out += _reproduce_section(data, commands)
    return "\n".join(line for line in out if line is not None) + ("" if out[-1] == "" else "\n")


#: The tables of the headline section after the overview: (name, heading suffix).
_HEADLINE_TABLES: tuple[tuple[str, str], ...] = (
    ("fr_by_k", ""),
    ("if_by_position", " (largest k)"),
    ("if_by_category", " (largest k; baseline: all instructions judged)"),
    ("retention", ""),
)


def _headline_section(tables: Mapping[str, Table]) -> list[str]:
    """``## Headline numbers``: what the metrics mean, the overview and the breakdowns."""
    out = ["## Headline numbers", ""]
    out.append(
        "pass@1 is the share of tasks whose unit tests pass; FR_k = (S0 - S_k) / S0 the "
        "functional regression against the baseline (negative = better); instruction-level IF "
        "the mean share of the k instructions a reply meets; task-level IF the share of replies "
        "meeting all k (paper §3.2). The baseline row judges code written without the "
        "instructions against all of the task's instructions. Multi-turn k = t is the code after the "
        "t-th instruction turn. 95% intervals in brackets (pass@1 and task-level IF: Wilson; "
        "instruction-level IF and FR_k: bootstrap over tasks, 1,000 resamples, seed 0)."
    )
    out.append("")
    if "overview" in tables:
        out += _table_md(tables["overview"])
        out.append("")
    for name, suffix in _HEADLINE_TABLES:
        if name in tables:
            out += [f"### {tables[name].title}{suffix}", "", tables[name].note, ""]
            out += _table_md(tables[name])
            out.append("")
    return out


def _paper_section(data: VibeReport, replay_manifest: Mapping[str, Any] | None) -> list[str]:
    """``## Next to the paper``: this run's task-level IF, pass@1, FR_5 and IF by position
    beside :data:`PAPER_REFERENCE`."""
    aggs: dict[tuple[str, int], AggregateRecord] = {
        (g["protocol"], g["k"]): g for g in data.get("aggregates") or []
    }
    settings_used = (data.get("run") or {}).get("settings") or {}
    suites = data.get("suites") or []

    def ours(protocol: str, k: int, key: str) -> str:
        g = aggs.get((protocol, k))
        if not g:
            return "-"
        fields: Mapping[str, object] = g  # the metric named by ``key``
        value = fields.get(key)
        return _pct(float(value) if isinstance(value, (int, float)) else None)

    ref = PAPER_REFERENCE
    out = ["## Next to the paper", ""]
    out.append(
        "The paper (Vibe Checker, Tables 2-3) evaluates 31 much larger models on all 1,140 "
        "BigVibeBench tasks with instructions chosen by an LLM; this run is a 0.5B model on "
        f"{sum(int(s.get('problems', 0)) for s in suites)} standard-library tasks with "
        "instructions chosen by the rule-based selector, so only the shape of the curves is "
        "comparable, not the levels."
    )
    out.append("")
    out.append("| model | base pass@1 (S0) | task IF single k=1 | task IF single k=5 | task IF multi k=5 | FR_5 single |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    model_name = str((replay_manifest or {}).get("model") or settings_used.get("models", ["this model"])[0])
    out.append(
        f"| **{model_name} (this run)** | {ours('baseline', 0, 'pass_at_1')} | "
        f"{ours('single', 1, 'task_if')} | {ours('single', 5, 'task_if')} | "
        f"{ours('multi', 5, 'task_if')} | {ours('single', 5, 'fr')} |"
    )
    for name, (s1, s5, m5) in ref["task_if"].items():
        base = ref["base_pass_at_1"].get(name)
        fr = f"{ref['fr5_single_mean']:.2f}%" if name.startswith("mean") else "-"
        out.append(
            f"| {name} (paper) | {'-' if base is None else f'{base:.2f}%'} | {s1:.2f}% | {s5:.2f}% | {m5:.2f}% | {fr} |"
        )
    out.append("")
    out.append("Instruction-level IF by position at k = 5, this run vs. the paper's mean over models:")
    out.append("")
    out.append("| protocol | pos 1 | pos 2 | pos 3 | pos 4 | pos 5 |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for protocol in ("single", "multi"):
        g = aggs.get((protocol, 5))
        pos = (g.get("if_by_position") if g else None) or {}
        out.append(f"| {protocol}-turn, this run | " + " | ".join(_pct(pos.get(str(p))) for p in range(1, 6)) + " |")
        out.append(f"| {protocol}-turn, paper mean | " + " | ".join(f"{v:.1f}%" for v in ref["position_if_mean"][protocol]) + " |")
    out.append("")
    return out


def _behaviour_section(data: VibeReport, b: Behaviour) -> list[str]:
    """``## What the model did``: replies with no code, extraction, finish reasons, tests."""
    settings_used = (data.get("run") or {}).get("settings") or {}
    out = ["## What the model did", ""]
    out.append(
        f"Counted over the {b.generations} distinct generations of the run (the baseline reply is "
        "also multi-turn turn 0, and a k = 5 conversation contains the k = 1 and k = 3 ones, so "
        "they are counted once)."
    )
    out.append("")
    maxt = settings_used.get("max_tokens")
    out.append(f"- Replies with no code: **{b.no_code}** of {b.generations}.")
    meth = ", ".join(f"`{m}` {n} ({100 * n / b.generations:.1f}%)" for m, n in b.methods.most_common())
    out.append(f"- Extraction method (`--vibe-extract {settings_used.get('extract', 'first')}`): {meth}.")
    fin = ", ".join(f"`{f}` {n}" for f, n in b.finish.most_common())
    hit = ", ".join(f"{lab} {n}" for lab, n in sorted(b.by_label_length.items())) or "none"
    out.append(
        f"- Finish reasons: {fin}. Replies cut at the token limit ({maxt} tokens; `length`): "
        f"**{b.finish.get('length', 0)}** ({hit})."
    )
    tests = ", ".join(f"`{s}` {n}" for s, n in b.test_status.most_common())
    out.append(f"- Test outcomes of the distinct replies: {tests} (a `timeout` is a model failure, counted apart in the table).")
    errors = sum(int(g.get("errors", 0)) for g in data.get("aggregates") or [])
    out.append(f"- Infrastructure errors (left out of every metric): {errors}.")
    out.append("")
    return out


def _cost_section(
    data: VibeReport, b: Behaviour, runs: Sequence[RunInfo], rerun_report: str | Path | None
) -> list[str]:
    """``## Cost of the run``: tokens and generation time, wall time of the recording, the
    cache, and a second identical run when given."""
    gen_tot = data.get("generation") or {}
    out = ["## Cost of the run", ""]
    out.append(
        f"- Generations: {b.generations} distinct requests; {b.input_tokens:,} prompt tokens and "
        f"{b.output_tokens:,} completion tokens in all (longest reply {b.max_output_tokens} tokens); "
        f"{b.latency_s / 60:.1f} minutes of generation time as measured by the client "
        f"({b.output_tokens / b.latency_s:.1f} completion tokens/s overall)." if b.latency_s > 0 else
        f"- Generations: {b.generations}; {b.input_tokens:,} prompt and {b.output_tokens:,} completion tokens."
    )
    if runs:
        recording = [r for r in runs if r.kind == "record" and r.cache_mode != "only"]
        total = sum(r.wall_s for r in recording)
        out.append(
            f"- Wall time of the recording: {_hms(total)} over {len(recording)} invocation(s) "
            f"of the benchmark script ({recording[0].started} to {recording[-1].finished})"
            if recording else "- Wall time: -"
        )
    duration = (data.get("run") or {}).get("duration_s")
    out.append(
        f"- This report: {gen_tot.get('requested', '-')} generations requested by the items, "
        f"{gen_tot.get('cached', '-')} served from the cache (hit rate "
        f"{_pct(gen_tot.get('hit_rate'))}); pytest session {duration:.0f} s."
        if isinstance(duration, (int, float)) else ""
    )
    if rerun_report is not None:
        rr = load_report(rerun_report).data
        rg = rr.get("generation") or {}
        rd = (rr.get("run") or {}).get("duration_s")
        same = _without_model(headline_rows(rr)) == _without_model(headline_rows(data))
        out.append(
            f"- Second run of the same command: {rg.get('cached')} of {rg.get('requested')} "
            f"generations from the cache (hit rate **{_pct(rg.get('hit_rate'))}**), "
            f"{rg.get('output_tokens', 0)} new completion tokens, {rd:.0f} s (sandbox and "
            f"verifiers only); aggregates {'identical' if same else 'DIFFERENT'} to the first run."
        )
    out.append("")
    return out


def _provenance_section(replay_manifest: Mapping[str, Any] | None) -> list[str]:
    """``## The recorded replies``: the shipped replay and its provenance (none without one)."""
    if not replay_manifest:
        return []
    out = ["## The recorded replies", ""]
    out.append(
        f"Every reply is shipped as `replay:{replay_manifest.get('name')}` "
        f"({replay_manifest.get('entries')} replies: "
        + ", ".join(f"{k} {v}" for k, v in (replay_manifest.get("labels") or {}).items())
        + "), so the numbers above can be re-scored offline, with no server."
    )
    out.append("")
    prov = replay_manifest.get("provenance") or {}
    for key, value in prov.items():
        out.append(f"- {key}: {value}")
    if prov:
        out.append("")
    return out


def _reproduce_section(data: VibeReport, commands: Sequence[str]) -> list[str]:
    """``## Reproduce``: the commands and the versions and suite manifests of the report."""
    suites = data.get("suites") or []
    out = ["## Reproduce", ""]
    if commands:
        out.append("```bash")
        out += list(commands)
        out.append("```")
        out.append("")
    versions = data.get("run") or {}
    out.append(
        f"Report: pytest-vibecheck {versions.get('plugin_version')}, Python "
        f"{versions.get('python_version')}, pytest {versions.get('pytest_version')}, Ruff "
        f"{versions.get('ruff_version')}; suite manifest sha256 "
        + ", ".join(f"{s.get('name')} `{str(s.get('manifest_sha256'))[:16]}…`" for s in suites)
        + "."
    )
    out.append("")
    return out


def loaded(path: str | Path) -> LoadedReport:
    """The report at ``path`` (checked against the schema)."""
    return load_report(path)
