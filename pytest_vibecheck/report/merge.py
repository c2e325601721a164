"""Merge the JSON reports of a sharded run (``vibecheck merge``) into one report.

The items are the source of truth (docs/report-schema.md): the merged report holds every item
of every input, and its ``aggregates``, ``suites`` and ``generation`` are recomputed from them
with :func:`pytest_vibecheck.report.json_report.build_report` (which calls
:func:`pytest_vibecheck.report.aggregate.aggregate`), exactly as an unsharded run computes them. So
three shards merged give the aggregates of the unsharded run, including FR_k and the results a
multi-turn item derives for lower k, whichever shard each item ran on.

Reports are refused, with a message naming the files and the field, when they cannot describe
one run:

* a different ``schema`` or ``schema_version`` (each file is validated against the schema);
* the same suite with a different manifest hash (different problem data);
* different result-affecting settings (:data:`SAME_SETTINGS`: suites, protocols, k, samples,
  temperature, max tokens, extraction, base URL, task filter, limit, the execution environment
  with its lock hash); models may differ, so
  runs of several models can be merged into one report;
* different Ruff versions (verdicts depend on the Ruff version);
* the same item (node id) in two reports (overlapping shards, or one report given twice).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.report.json_report import build_report, load_report
from pytest_vibecheck.report.records import (
    ModelSpendRecord,
    ReportItem,
    SpendRecord,
    VibeReport,
)

__all__ = ["SAME_SETTINGS", "MergeError", "merge_files", "merge_reports", "merge_spend"]

#: Keys of ``run.settings`` that must be equal in every merged report.
SAME_SETTINGS: tuple[str, ...] = (
    "suites", "protocols", "ks", "samples", "profile", "temperature", "system_prompt", "max_tokens",
    "extract", "base_url", "tasks", "limit", "environment",
)


class MergeError(VibecheckError):
    """The reports cannot be merged; the message names the files and what differs."""


def merge_reports(reports: Sequence[tuple[str, VibeReport]]) -> VibeReport:
    """Merge ``(name, report)`` pairs (reports already loaded and validated) into one report.

    ``run``: the first report's platform and versions; ``settings`` with the union of
    ``models`` (in first-seen order); ``workers`` summed; ``duration_s`` the longest shard's
    (shards run side by side); ``exitstatus`` the largest. A top-level ``merged_from`` lists
    each input (``name``, ``created``, ``shard``, ``items``, ``exitstatus``). Raises
    :class:`MergeError` (see the module docstring).
    """
    if not reports:
        raise MergeError("nothing to merge: give at least one report")
    _check_schema_versions(reports)
    _check_suites(reports)
    base_settings = _common_settings(reports)
    ruff = _ruff_version(reports)
    items = _items_once(reports)
    models: list[str] = []
    for _, rep in reports:
        for m in (rep["run"].get("settings") or {}).get("models") or []:
            if m not in models:
                models.append(m)
    settings = {**base_settings, "models": models, "report": None, "junitxml": None}
    runs = [rep["run"] for _, rep in reports]
    merged = build_report(
        items,
        settings=settings,
        workers=sum(int(r.get("workers") or 0) for r in runs),
        duration_s=max(float(r.get("duration_s") or 0.0) for r in runs),
        exitstatus=max(int(r.get("exitstatus") or 0) for r in runs),
        extra={
            "merged_from": [
                {
                    "name": name,
                    "created": rep.get("created"),
                    "shard": rep.get("shard"),
                    "items": len(rep.get("items") or []),
                    "exitstatus": rep["run"].get("exitstatus"),
                }
                for name, rep in reports
            ]
        },
    )
    run, head = merged["run"], reports[0][1]["run"]
    run["plugin_version"] = head.get("plugin_version", run["plugin_version"])
    run["python_version"] = head.get("python_version", run["python_version"])
    run["pytest_version"] = head.get("pytest_version", run["pytest_version"])
    run["platform"] = head.get("platform", run["platform"])
    run["ruff_version"] = ruff if ruff is not None else run["ruff_version"]
    spends = [sp for r in runs if (sp := r.get("spend")) is not None]
    if spends and len(spends) == len(runs):
        run["spend"] = merge_spend(spends)
    return merged


def _check_schema_versions(reports: Sequence[tuple[str, VibeReport]]) -> None:
    first_name, first = reports[0]
    for name, rep in reports[1:]:
        if rep.get("schema_version") != first.get("schema_version"):
            raise MergeError(
                f"{name} has report schema version {rep.get('schema_version')!r} but "
                f"{first_name} has {first.get('schema_version')!r}; re-run the shards with one "
                "pytest-vibecheck version"
            )


def _check_suites(reports: Sequence[tuple[str, VibeReport]]) -> None:
    manifests: dict[str, tuple[str | None, str]] = {}
    for name, rep in reports:
        for suite in rep.get("suites") or []:
            seen = manifests.setdefault(suite["name"], (suite.get("manifest_sha256"), name))
            if seen[0] != suite.get("manifest_sha256"):
                raise MergeError(
                    f"suite {suite['name']!r} differs: manifest sha256 {seen[0]} in {seen[1]} "
                    f"but {suite.get('manifest_sha256')} in {name}; the shards ran on different "
                    "problem data"
                )


def _common_settings(reports: Sequence[tuple[str, VibeReport]]) -> dict[str, Any]:
    """The first report's ``run.settings`` (plain JSON), once every :data:`SAME_SETTINGS` key
    is equal in all reports."""
    first_name, first = reports[0]
    base_settings: dict[str, Any] = dict(first["run"].get("settings") or {})
    for name, rep in reports[1:]:
        settings = rep["run"].get("settings") or {}
        for key in SAME_SETTINGS:
            if key in base_settings or key in settings:
                a, b = base_settings.get(key), settings.get(key)
                if a != b:
                    raise MergeError(
                        f"setting {key!r} differs: {a!r} in {first_name} but {b!r} in {name}; "
                        "only shards of one run (or runs of different models with the same "
                        "settings) can be merged"
                    )
    return base_settings


def _ruff_version(reports: Sequence[tuple[str, VibeReport]]) -> str | None:
    """The one Ruff version that judged the reports (None when none says)."""
    ruff: tuple[str, str] | None = None
    for name, rep in reports:
        version = rep["run"].get("ruff_version")
        if version is None:
            continue
        if ruff is not None and ruff[0] != version:
            raise MergeError(
                f"Ruff {ruff[0]} judged {ruff[1]} but Ruff {version} judged {name}; verdicts "
                "depend on the Ruff version, so these reports cannot be merged"
            )
        ruff = ruff or (version, name)
    return ruff[0] if ruff else None


def _items_once(reports: Sequence[tuple[str, VibeReport]]) -> list[ReportItem]:
    """Every report's items, each node id once (two reports holding it: MergeError)."""
    items: list[ReportItem] = []
    origin: dict[str, str] = {}
    for name, rep in reports:
        for item in rep.get("items") or []:
            nodeid = str(item.get("nodeid"))
            if nodeid in origin:
                raise MergeError(
                    f"item {nodeid} is in {origin[nodeid]} and in {name}: the shards overlap "
                    "(run every shard with the same --vibe-shard I/N count, and give each "
                    "report once)"
                )
            origin[nodeid] = name
            items.append(item.copy())
    return items


def _price(spends: Sequence[SpendRecord]) -> Literal["list", "batch", "mixed"]:
    """The merged spend's prices: ``list`` or ``batch`` when every shard's were those, else
    ``mixed`` (a shard's report from an older version has no ``price``: list)."""
    prices = {sp.get("price", "list") for sp in spends}
    return prices.pop() if len(prices) == 1 else "mixed"


def merge_spend(spends: Sequence[SpendRecord]) -> SpendRecord:
    """The ``run.spend`` of shards together (docs/report-schema.md): counts and dollars summed
    (dollars None when any shard's are), per model too; the budget of the first shard, stopped
    when any shard's was. Each shard had its own budget: the merged spend may exceed one."""
    total: SpendRecord = {
        "requests": 0, "input_tokens": 0, "output_tokens": 0, "cache_hits": 0, "usd": 0.0,
        "prices_as_of": spends[0]["prices_as_of"], "price": _price(spends), "budget": spends[0]["budget"],
        "budget_stopped": any(bool(sp["budget_stopped"]) for sp in spends), "models": {},
    }
    for sp in spends:
        total["requests"] += int(sp["requests"])
        total["input_tokens"] += int(sp["input_tokens"])
        total["output_tokens"] += int(sp["output_tokens"])
        total["cache_hits"] += int(sp["cache_hits"])
        total["usd"] = _add_usd(total["usd"], sp["usd"])
        for spec, m in sp["models"].items():
            row: ModelSpendRecord = total["models"].setdefault(
                spec, {"requests": 0, "input_tokens": 0, "output_tokens": 0, "usd": 0.0}
            )
            row["requests"] += int(m["requests"])
            row["input_tokens"] += int(m["input_tokens"])
            row["output_tokens"] += int(m["output_tokens"])
            row["usd"] = _add_usd(row["usd"], m["usd"])
    return total


def _add_usd(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a + b, 6)


def merge_files(paths: Sequence[str | os.PathLike[str]]) -> VibeReport:
    """Load (and validate against the schema) each JSON report in ``paths`` and merge them.
    Raises :class:`~pytest_vibecheck.report.json_report.ReportError` for an unreadable or
    invalid file and :class:`MergeError` for reports that do not fit together."""
    seen: set[Path] = set()
    loaded: list[tuple[str, VibeReport]] = []
    for p in paths:
        path = Path(p)
        real = path.resolve()
        if real in seen:
            raise MergeError(f"{path} is given twice")
        seen.add(real)
        loaded.append((str(path), load_report(path)))
    return merge_reports(loaded)
