"""The per-report outcome logic, written once: pytest reports -> :class:`ReportItem` records.

Both controller-side reporters use :class:`ItemCollector`: the benchmark's
:class:`~pytest_vibecheck.report.session.VibeSummary` and, when that plugin is not active in a
run, the CI gate's reporter (for its thresholds). An item's outcome is decided by its reports:

- setup failed -> ``error`` (an infrastructure failure, never a model failure); setup skipped ->
  ``skipped``;
- call passed / failed / skipped -> ``passed`` / ``failed`` / ``skipped``;
- teardown failed (or a teardown report with nothing decided before) -> ``error``.
"""

from __future__ import annotations

import re
from typing import Any, cast

import pytest

from pytest_vibecheck.report.properties import record_of
from pytest_vibecheck.report.records import BENCH_PROP, ReportItem

__all__ = ["SAME_AS_SETUP", "ItemCollector"]

#: The line pytest-xdist puts before a worker's failure text.
_XDIST_HEADER = re.compile(r"\A\[gw\d+\] [^\n]*\n")
#: Longest failure text kept for an error without a record of its own.
MAX_ERROR_TEXT = 2000


def _outcome(report: pytest.TestReport, before: str | None) -> str | None:
    if report.when == "setup":
        if report.failed:
            return "error"
        return "skipped" if report.skipped else before
    if report.when == "call":
        return "passed" if report.passed else ("skipped" if report.skipped else "failed")
    if report.failed or before is None:  # teardown
        return "error"
    return before


#: The record carried by an item's call and teardown reports: its full record came with the
#: setup report (so each record crosses from an xdist worker once, not three times).
SAME_AS_SETUP: dict[str, Any] = {"same_as_setup": True}

class ItemCollector:
    """Report items by node id, completed from each ``pytest_runtest_logreport`` call.

    The same calls arrive with or without pytest-xdist, so the items (and the aggregates built
    from them) do not depend on ``-n``.
    """

    def __init__(self) -> None:
        self._items: dict[str, dict[str, Any]] = {}

    def add(self, report: pytest.TestReport) -> ReportItem | None:
        """Merge ``report`` into its item. Returns the item when this report decided its outcome
        for the first time (so each item is counted once), else None; None too for a report
        without a vibecheck record."""
        record = record_of(report, BENCH_PROP)
        if record is None:
            return None
        item = self._items.get(report.nodeid)
        if item is None:
            item = self._items[report.nodeid] = {"outcome": None, "duration_s": 0.0, "failure": None}
        before, prev_error = item["outcome"], item.get("error")
        if not record.get("same_as_setup"):  # call/teardown carry a marker (SAME_AS_SETUP)
            item.update(record)
        item["nodeid"] = report.nodeid
        item["outcome"] = _outcome(report, before)
        item["duration_s"] = float(item["duration_s"]) + float(report.duration)
        if report.failed and report.longrepr is not None and not item.get("failure"):
            item["failure"] = _XDIST_HEADER.sub("", report.longreprtext, count=1)
        if item["outcome"] != "error":
            item["error"] = None
        elif not item.get("error"):
            item["error"] = prev_error or {
                "kind": "internal_error",
                "message": (report.longreprtext or "error")[-MAX_ERROR_TEXT:],
            }
        decided = before is None and item["outcome"] is not None
        return cast(ReportItem, item) if decided else None

    def items(self) -> list[ReportItem]:
        """Copies of the finished items (outcome decided), sorted by node id."""
        return [
            cast(ReportItem, dict(v)) for _, v in sorted(self._items.items()) if v.get("outcome")
        ]

    def __len__(self) -> int:
        return len(self._items)
