"""Load vibecheck JSON reports (docs/report-schema.md) for the analyses.

``load_reports(paths)`` reads and checks one or more reports written by
``pytest --vibe-report PATH.json``; ``report_results(reports)`` turns their items into
``aggregate.Result`` records (one per suite, model, protocol, task, k, sample; multi-turn
conversations also give their earlier turns as lower-k results), exactly as the plugin's own
aggregates are computed, so every number here agrees with the report's ``aggregates``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError, VibecheckError
from pytest_vibecheck.report.aggregate import PROTOCOL_ORDER, Result, aggregate, results
from pytest_vibecheck.report.analysis.correlate import ScoreTable, _parse_number
from pytest_vibecheck.report.records import ReportItem, VibeReport

__all__ = [
    "LoadedReport",
    "load_report",
    "load_reports",
    "report_items",
    "report_results",
    "scores_from_reports",
]

_ITEM_FIELDS = ("suite", "task_id", "model", "protocol")


@dataclass(frozen=True)
class LoadedReport:
    """One report file: its ``path`` and its checked ``data``."""

    path: str
    data: VibeReport

    @property
    def items(self) -> list[ReportItem]:
        return list(self.data.get("items") or [])


def load_report(path: str | Path) -> LoadedReport:
    """Read and check one report with ``report.json_report.load_report`` (schema
    ``pytest_vibecheck/report/schema.json``, validated with jsonschema), then
    check that every item names its suite, task, model and protocol.

    Raises :class:`~pytest_vibecheck.report.json_report.ReportError` (a
    :class:`~pytest_vibecheck.errors.VibecheckError`) naming the file and field when it is
    missing, not JSON, not a vibecheck report, of an unsupported ``schema_version`` or invalid.
    """
    from pytest_vibecheck.report.json_report import ReportError
    from pytest_vibecheck.report.json_report import load_report as _load

    src = str(path)
    data = _load(path)
    items = data.get("items")
    if not isinstance(items, list):
        raise ReportError(f"{src}: field items: must be a list")
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise ReportError(f"{src}: field items/{n}: not an object")
        for name in _ITEM_FIELDS:
            if not isinstance(item.get(name), str):
                raise ReportError(f"{src}: field items/{n}/{name}: missing or not a string")
    return LoadedReport(src, data)


def load_reports(paths: Iterable[str | Path]) -> list[LoadedReport]:
    """:func:`load_report` for each path, in order. Raises on the first bad file."""
    out = [load_report(p) for p in paths]
    if not out:
        raise VibecheckError("no report given")
    return out


def report_items(reports: Sequence[LoadedReport]) -> list[ReportItem]:
    """The items of all reports, concatenated (duplicates are resolved by ``aggregate``)."""
    return [item for r in reports for item in r.items]


def report_results(reports: Sequence[LoadedReport]) -> list[Result]:
    """``aggregate.results`` over the items of all reports (see the module docstring)."""
    return results(report_items(reports))


def scores_from_reports(
    reports: Sequence[LoadedReport],
    elo_csv: str | Path,
    *,
    elo: str,
    model: str = "model",
    suite: str | None = None,
) -> ScoreTable:
    """Per-model Func, IF and Elo for ``correlate``, from reports and an Elo CSV.

    Func = pass@1 of the (``baseline``, k = 0) group; IF = instruction-level IF of the
    (``single``, k = 1) group (paper §4.5), both fractions, from ``aggregate.aggregate``.
    Models are matched by name: the report's model spec (``--vibe-model``) against the CSV's
    ``model`` column. A model missing from either side, or without one of the two groups, is
    left out and listed in ``skipped``. Reports with several suites need ``suite``.

    Raises :class:`~pytest_vibecheck.errors.DataFileError` for a bad Elo file or column, or an
    ambiguous suite.
    """
    items = report_items(reports)
    suites = sorted({str(i["suite"]) for i in items})
    if suite is None:
        if len(suites) > 1:
            raise DataFileError(
                reports[0].path, f"the reports hold several suites ({', '.join(suites)}); pick one"
            )
        suite = suites[0] if suites else None
    func: dict[str, float | None] = {}
    if_: dict[str, float | None] = {}
    for g in aggregate(items):
        if g["suite"] != suite:
            continue
        if g["protocol"] == "baseline" and g["k"] == 0:
            func[g["model"]] = g["pass_at_1"]
        if g["protocol"] == "single" and g["k"] == 1:
            if_[g["model"]] = g["instruction_if"]

    src = str(elo_csv)
    try:
        lines = Path(elo_csv).read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise DataFileError(src, "file not found") from None
    import csv

    numbered = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip() and not ln.startswith("#")]
    reader = csv.DictReader(ln for _, ln in numbered)
    header = reader.fieldnames or []
    for role, col in (("--model", model), ("--elo", elo)):
        if col not in header:
            raise DataFileError(
                src, f"no column {col!r} (given as {role}); the columns are: {', '.join(header)}",
                field=col,
            )  # fmt: skip
    fs: list[float] = []
    is_: list[float] = []
    es: list[float] = []
    names: list[str | None] = []
    skipped: list[tuple[int, str]] = []
    seen: set[str] = set()
    for (line, _), row in zip(numbered[1:], reader, strict=False):
        name = (row.get(model) or "").strip()
        seen.add(name)
        rating = _parse_number(row.get(elo) or "", src, elo, line)
        f, i = func.get(name), if_.get(name)
        why = [
            w
            for w, bad in (
                ("missing Elo", rating is None),
                ("no baseline k=0 results in the reports", f is None),
                ("no single-turn k=1 results in the reports", i is None),
            )
            if bad
        ]
        if why:
            skipped.append((line, f"{name}: {'; '.join(why)}"))
            continue
        assert rating is not None and f is not None and i is not None
        fs.append(f)
        is_.append(i)
        es.append(rating)
        names.append(name)
    skipped.extend(
        (0, f"{name}: in the reports but not in {src}")
        for name in sorted(set(func) | set(if_))
        if name not in seen
    )
    return ScoreTable(tuple(fs), tuple(is_), tuple(es), tuple(names), tuple(skipped), src)


def results_by(res: Iterable[Result], *fields: str) -> dict[tuple[Any, ...], list[Result]]:
    """Group results by the given attribute names, keys sorted."""
    out: dict[tuple[Any, ...], list[Result]] = {}
    for r in res:
        out.setdefault(tuple(getattr(r, f) for f in fields), []).append(r)
    return dict(sorted(out.items(), key=lambda kv: tuple(_sort_part(x) for x in kv[0])))


def _sort_part(x: Any) -> tuple[int, int, str]:
    if isinstance(x, int):
        return (0, x, "")
    return (1, PROTOCOL_ORDER.get(str(x), 9), str(x))
