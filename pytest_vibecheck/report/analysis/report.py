"""The analysis report: Markdown, self-contained HTML, CSV and JSON (issue 7, item 3).

``build_report(reports)`` computes every table of :mod:`.breakdowns` (and, given an Elo CSV,
the composite correlation of :mod:`.correlate`); ``write_report(report, out_dir)`` writes:

- ``report.md``: Markdown tables (figures linked as ``figures/*.png``);
- ``report.html``: the results viewer (:mod:`pytest_vibecheck.report.viewer`, the same page
  as ``vibecheck view --out``): one self-contained file, inline CSS, JavaScript and data,
  figures as data URIs, no external resource; safe to attach or archive;
- ``<table>.csv``: one file per table, rates as fractions, intervals as ``_low``/``_high``;
- ``analysis.json``: all tables and the correlation result;
- ``figures/*.png``: the plots, only when matplotlib is installed (the ``plots`` extra);
  without it the reports hold the tables only and say so.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from pytest_vibecheck import __version__
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.report.aggregate import aggregate
from pytest_vibecheck.report.analysis.breakdowns import AnalysisSettings, build_tables
from pytest_vibecheck.report.analysis.correlate import METHODS, CorrelationResult
from pytest_vibecheck.report.analysis.load import LoadedReport, report_items, report_results
from pytest_vibecheck.report.analysis.tables import Column, Table, format_cell
from pytest_vibecheck.report.records import ReportItem
from pytest_vibecheck.report.viewer.site import page_data, render_page

__all__ = [
    "AnalysisReport",
    "Figure",
    "SourceRecord",
    "basic_analysis",
    "build_report",
    "matplotlib_available",
    "write_report",
]


@dataclass(frozen=True)
class Figure:
    """A rendered plot: ``name`` (file stem), ``title`` and the ``png`` bytes."""

    name: str
    title: str
    png: bytes


class SourceRecord(TypedDict):
    """One report an analysis read: its path, when it was made, by which plugin and Ruff, its
    item count and suites (``name (manifest sha256 0123456789ab)``)."""

    path: str
    created: str | None
    plugin_version: str | None
    ruff_version: str | None
    items: int
    suites: list[str]


@dataclass
class AnalysisReport:
    """Everything the writers need."""

    title: str
    sources: list[SourceRecord]
    tables: list[Table]
    figures: list[Figure] = field(default_factory=list)
    correlation: CorrelationResult | None = None
    notes: list[str] = field(default_factory=list)
    #: the reports' items (docs/report-schema.md ``items[]``), shown by the HTML viewer
    items: list[ReportItem] = field(default_factory=list)


def matplotlib_available() -> bool:
    """True when matplotlib can be imported (the ``plots`` extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def report_sources(reports: Sequence[LoadedReport]) -> list[SourceRecord]:
    """The :class:`SourceRecord` of each report read."""
    out: list[SourceRecord] = []
    for r in reports:
        run = r.data.get("run") or {}
        out.append({
            "path": r.path,
            "created": r.data.get("created"),
            "plugin_version": run.get("plugin_version"),
            "ruff_version": run.get("ruff_version"),
            "items": len(r.items),
            "suites": [
                f"{s.get('name')} (manifest sha256 {str(s.get('manifest_sha256') or '-')[:12]})"
                for s in r.data.get("suites") or []
            ],
        })  # fmt: skip
    return out


def _best_text(method: str, c: CorrelationResult) -> str:
    b = c.best[method]
    text = f"{method} {b.alpha:g}"
    if b.alpha_ci is not None:
        text += f" (CI of alpha {b.alpha_ci[0]:g}-{b.alpha_ci[1]:g})"
    return text


def _correlation_table(c: CorrelationResult) -> Table:
    t = Table(
        "correlation",
        "Composite score against Elo",
        [Column("alpha", "alpha", "float")] + [Column(m, m, "float_ci") for m in METHODS],
        note=(
            f"Composite = alpha*IF + (1-alpha)*Func over {c.n} models ({c.skipped} left out "
            "for missing values); intervals: bootstrap over models "
            f"({c.n_resamples} resamples, seed {c.seed}). Best alpha: "
            + "; ".join(_best_text(m, c) for m in METHODS)
        ),
    )
    for i, a in enumerate(c.alphas):
        row: list[Any] = [a]
        for m in METHODS:
            ci = c.sweep_ci.get(m, ())[i] if c.sweep_ci else None
            row.append((c.sweep[m][i], *(ci if ci else (None, None))))
        t.rows.append(row)
    return t


# --------------------------------------------------------------------------- figures


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def _colors(models: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(models) <= 10 else "tab20"]
    return {m: cmap(i % cmap.N) for i, m in enumerate(models)}


def _panels(
    table: Table, x_cols: list[str], x_vals: list[int], title: str, xlabel: str, ylabel: str,
    name: str,
) -> Figure | None:  # fmt: skip
    """One panel per protocol, one line per model (same colour in every panel), with the
    interval of each point as an error bar; models are dodged slightly along x."""
    from matplotlib.figure import Figure as MplFigure

    keys = [c.key for c in table.columns]
    rows = [dict(zip(keys, row, strict=True)) for row in table.rows]
    protocols = [p for p in ("single", "multi") if any(r["protocol"] == p for r in rows)]
    if not protocols:
        return None
    models = sorted({str(r["model"]) for r in rows})
    colors = _colors(models)
    fig = MplFigure(figsize=(5.2 * len(protocols) + 2.2, 4))
    axes = fig.subplots(1, len(protocols), sharey=True, squeeze=False)[0]
    width = 0.3 / max(1, len(models))
    for ax, protocol in zip(axes, protocols, strict=True):
        for r in rows:
            if r["protocol"] != protocol:
                continue
            mi = models.index(str(r["model"]))
            xs, ys, lo, hi = [], [], [], []
            for x, col in zip(x_vals, x_cols, strict=True):
                v = r.get(col)
                if v is None or v[0] is None:
                    continue
                xs.append(x + (mi - (len(models) - 1) / 2) * width)
                ys.append(100 * v[0])
                lo.append(100 * (v[0] - v[1]) if v[1] is not None else 0.0)
                hi.append(100 * (v[2] - v[0]) if v[2] is not None else 0.0)
            if xs:
                ax.errorbar(
                    xs, ys, yerr=[lo, hi], marker="o", markersize=4, capsize=2,
                    elinewidth=0.8, color=colors[str(r["model"])], label=str(r["model"]),
                )  # fmt: skip
        ax.set_title(f"{protocol}-turn")
        ax.set_xlabel(xlabel)
        ax.set_xticks(x_vals)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(ylabel)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        h, lab = ax.get_legend_handles_labels()
        for hh, ll in zip(h, lab, strict=True):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    return Figure(name, title, _png(fig))


def _figures(tables: list[Table], corr: CorrelationResult | None) -> list[Figure]:
    from matplotlib.figure import Figure as MplFigure

    by_name = {t.name: t for t in tables}
    figs: list[Figure | None] = []
    if (t := by_name.get("fr_by_k")) is not None:
        cols = [c.key for c in t.columns if c.key.startswith("k") and c.key[1:].isdigit()]
        figs.append(_panels(
            t, cols, [int(c[1:]) for c in cols], "Functional regression FR_k (S0 - S_k) / S0",
            "k (instructions)", "FR_k (%)", "fr_by_k",
        ))  # fmt: skip
    if (t := by_name.get("if_by_position")) is not None:
        cols = [c.key for c in t.columns if c.key.startswith("pos")]
        figs.append(_panels(
            t, cols, [int(c[3:]) for c in cols], "Instruction following by position",
            "position", "IF (%)", "if_by_position",
        ))  # fmt: skip
    if (t := by_name.get("retention")) is not None:
        models = sorted({str(r[1]) for r in t.rows})
        colors = _colors(models)
        fig = MplFigure(figsize=(7.4, 4))
        ax = fig.add_subplot()
        for model in models:
            pts = [(r[2], r[3]) for r in t.rows if r[1] == model and r[3] is not None]
            if pts:
                ax.plot([p[0] for p in pts], [100 * p[1][0] for p in pts], marker="o",
                        color=colors[model], label=model)  # fmt: skip
        ax.set_xticks(sorted({int(r[2]) for r in t.rows}))
        ax.set_title("Multi-turn retention: P(met at turn t | met at t-1)")
        ax.set_xlabel("turn t")
        ax.set_ylabel("retention (%)")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
            figs.append(Figure("retention", "Multi-turn retention", _png(fig)))
    if corr is not None:
        fig = MplFigure(figsize=(7.4, 4))
        ax = fig.add_subplot()
        for m in METHODS:
            line = ax.plot(
                corr.alphas, corr.sweep[m], marker="o", label=f"{m} (best {corr.best[m].alpha:g})"
            )
            cis = corr.sweep_ci.get(m) if corr.sweep_ci else None
            if cis and all(ci is not None for ci in cis):
                ax.fill_between(
                    corr.alphas, [ci[0] for ci in cis if ci], [ci[1] for ci in cis if ci],
                    color=line[0].get_color(), alpha=0.12,
                )  # fmt: skip
        ax.set_title("Composite alpha*IF + (1-alpha)*Func against Elo")
        ax.set_xlabel("alpha")
        ax.set_ylabel("correlation with Elo")
        ax.grid(alpha=0.3)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
        figs.append(Figure("correlation", "Composite score against Elo", _png(fig)))
    return [f for f in figs if f is not None]


# --------------------------------------------------------------------------- build


def build_report(
    reports: Sequence[LoadedReport],
    *,
    settings: AnalysisSettings | None = None,
    correlation: CorrelationResult | None = None,
    plots: bool = True,
    title: str = "pytest-vibecheck analysis",
) -> AnalysisReport:
    """Compute all tables (and figures when ``plots`` and matplotlib is installed).

    Raises :class:`~pytest_vibecheck.errors.VibecheckError` when the reports hold no item.
    """
    res = report_results(reports)
    if not res:
        raise VibecheckError(
            f"{', '.join(r.path for r in reports)}: the reports hold no items to analyse"
        )
    tables = build_tables(res, settings)
    if correlation is not None:
        names = [t.name for t in tables]
        at = names.index("retention") + 1 if "retention" in names else min(len(tables), 3)
        tables.insert(at, _correlation_table(correlation))
    notes = []
    figures: list[Figure] = []
    if plots and matplotlib_available():
        figures = _figures(tables, correlation)
    elif plots:
        notes.append(
            "Figures are off: matplotlib is not installed (pip install 'pytest-vibecheck[plots]')."
        )
    return AnalysisReport(
        title, report_sources(reports), tables, figures, correlation, notes, items=report_items(reports)
    )


# --------------------------------------------------------------------------- writers


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def basic_analysis(
    items: Sequence[ReportItem], sources: list[SourceRecord], title: str
) -> AnalysisReport:
    """An analysis report with only the overview table, from the items' aggregates (no
    intervals): what the viewer shows when scipy (the ``analysis`` extra) is not installed."""
    t = Table(
        "overview",
        "Overview by group",
        [
            Column("suite", "suite"), Column("model", "model"), Column("protocol", "protocol"),
            Column("k", "k", "int"), Column("evaluated", "evaluated", "int"),
            Column("errors", "errors", "int"), Column("skipped", "skipped", "int"),
            Column("no_code", "no code", "int"), Column("pass_at_1", "pass@1", "pct"),
            Column("fr", "FR_k", "pct"), Column("instruction_if", "instruction IF", "pct"),
            Column("task_if", "task IF", "pct"),
        ],
        note="FR_k = (S0 - S_k) / S0, negative = improvement. No intervals: install "
        "'pytest-vibecheck[analysis]' (scipy) for intervals and the analysis tables.",
    )
    for g in aggregate(list(items)):
        t.rows.append([
            g["suite"], g["model"], g["protocol"], g["k"], g["evaluated"], g["errors"],
            g["skipped"], g["no_code"], g["pass_at_1"], g["fr"], g["instruction_if"], g["task_if"],
        ])  # fmt: skip
    return AnalysisReport(title, sources, [t], items=list(items))


def render_markdown(rep: AnalysisReport) -> str:
    """The report as Markdown (GitHub tables); figures linked from ``figures/``."""
    out = [f"# {rep.title}", "", f"Generated by pytest-vibecheck {__version__}.", ""]
    out.append("## Sources")
    out.append("")
    for s in rep.sources:
        suites = ", ".join(s["suites"]) or "-"
        out.append(
            f"- `{s['path']}`: {s['items']} items, created {s['created']}, plugin "
            f"{s['plugin_version']}, Ruff {s['ruff_version']}; suites: {suites}"
        )
    out.append("")
    out += [f"> {n}" for n in rep.notes]
    if rep.notes:
        out.append("")
    out += ["## Contents", ""] + [f"- [{t.title}](#{t.name})" for t in rep.tables] + [""]
    figs = {f.name: f for f in rep.figures}
    for t in rep.tables:
        out.append(f'<a id="{t.name}"></a>')
        out += [f"## {t.title}", "", t.note, ""] if t.note else [f"## {t.title}", ""]
        out.append("| " + " | ".join(_md_cell(c.label) for c in t.columns) + " |")
        out.append(
            "| " + " | ".join("---:" if c.kind != "text" else "---" for c in t.columns) + " |"
        )
        for row in t.rows:
            cells = [_md_cell(format_cell(c, v)) for c, v in zip(t.columns, row, strict=True)]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        if t.name in figs:
            out += [f"![{figs[t.name].title}](figures/{t.name}.png)", ""]
    return "\n".join(out)


def render_html(rep: AnalysisReport) -> str:
    """The report as the results viewer's page (:mod:`pytest_vibecheck.report.viewer.site`):
    one self-contained HTML file with the tables, the figures and every item; no external
    resource."""
    return render_page(page_data(rep))


def write_report(rep: AnalysisReport, out_dir: str | Path) -> list[Path]:
    """Write report.md, report.html, analysis.json, one CSV per table and the figures.

    Returns the paths written. Raises :class:`VibecheckError` when ``out_dir`` cannot be
    created or written.
    """
    out = Path(out_dir)
    written: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        if rep.figures:
            (out / "figures").mkdir(exist_ok=True)
            for f in rep.figures:
                p = out / "figures" / f"{f.name}.png"
                p.write_bytes(f.png)
                written.append(p)
        for t in rep.tables:
            p = out / f"{t.name}.csv"
            with p.open("w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(t.csv_header())
                w.writerows(t.csv_rows())
            written.append(p)
        payload = {
            "title": rep.title,
            "plugin_version": __version__,
            "sources": rep.sources,
            "tables": [t.to_json() for t in rep.tables],
            "correlation": rep.correlation.to_json() if rep.correlation else None,
            "notes": rep.notes,
        }
        p = out / "analysis.json"
        p.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        written.append(p)
        for name, text in (("report.md", render_markdown(rep)), ("report.html", render_html(rep))):
            p = out / name
            p.write_text(text, encoding="utf-8")
            written.append(p)
    except OSError as exc:
        raise VibecheckError(f"cannot write the report to {out}: {exc}") from None
    return written
