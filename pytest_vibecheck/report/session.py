"""The controller-only reporter: collects item results from pytest reports, writes the reports.

One :class:`VibeSummary` is registered per session on the controller (never on an xdist worker)
and kept in ``config.stash[SUMMARY_KEY]``. Its hook methods receive the same
``pytest_runtest_logreport`` calls with or without ``-n``, so the aggregates are identical. Other
plugins (the CI gate) read ``summary.aggregates()`` at ``pytest_sessionfinish`` and may add
optional top-level report fields through ``summary.extra`` (e.g. ``{"shard": {...}}``) or the
``pytest_vibecheck_report`` hook.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.report.aggregate import aggregate, generation_totals
from pytest_vibecheck.report.collector import ItemCollector
from pytest_vibecheck.report.json_report import build_report, without_replies, write_report
from pytest_vibecheck.report.junit import write_junit
from pytest_vibecheck.report.outputs import write_error_line
from pytest_vibecheck.report.records import AggregateRecord, ReportItem, VibeReport
from pytest_vibecheck.report.terminal import SummaryParts, render_summary

if TYPE_CHECKING:
    from pytest_vibecheck.config.selection import Selection
    from pytest_vibecheck.config.settings import VibeSettings
    from pytest_vibecheck.plugin.run.guard import RunGuard


__all__ = ["SUMMARY_KEY", "VibeSummary"]


class VibeSummary:
    """Aggregates the run on the controller and writes the terminal summary, JSON and JUnit."""

    def __init__(self, config: pytest.Config, settings: VibeSettings) -> None:
        self.config = config
        self.settings = settings
        self.started = time.time()
        self.collector = ItemCollector()
        self._aggregates: list[AggregateRecord] | None = None
        #: optional top-level fields added to the JSON report (e.g. ``shard``)
        self.extra: dict[str, Any] = {}
        #: the execution environment (``run.settings.environment``: name, id with the lock
        #: hash, python), set by the plugin
        self.environment: Mapping[str, Any] | None = None
        self.report: VibeReport | None = None
        self.written: list[tuple[str, Path]] = []
        #: what the run selected (set by the plugin: limit, task globs, deselections)
        self.selection: Selection | None = None
        #: one line per report that could not be written at the end of the run
        self.write_errors: list[str] = []
        #: the controller's run guard (set by the plugin): what the run spent (``run.spend``)
        self.guard: RunGuard | None = None

    # ------------------------------------------------------------ collecting

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.collector.add(report)
        self._aggregates = None

    def items(self) -> list[ReportItem]:
        """The report items collected so far (finished items only), sorted by node id."""
        return self.collector.items()

    def aggregates(self) -> list[AggregateRecord]:
        """The ``aggregates`` rows (docs/report-schema.md) of the items so far."""
        if self._aggregates is None:
            self._aggregates = aggregate(self.items())
        return self._aggregates

    # ------------------------------------------------------------ writing

    def build(self, exitstatus: int) -> VibeReport:
        """The JSON report dict of the run; also kept in :attr:`report`."""
        workers = getattr(self.config.option, "numprocesses", None) or 0
        if not isinstance(workers, int):
            workers = 0
        items = self.items()
        settings = self.settings.to_dict()
        if self.environment is not None:
            settings["environment"] = dict(self.environment)
        report = build_report(
            items if self.settings.report_replies else without_replies(items),
            settings=settings,
            workers=workers,
            duration_s=time.time() - self.started,
            exitstatus=exitstatus,
            extra=self.extra,
        )
        if self.guard is not None:  # every process's requests, from the run's shared state
            report["run"]["spend"] = self.guard.spend(cache_hits=report["generation"]["cached"])
        selection = self.selection
        if selection is not None:  # what ran, of what (docs/report-schema.md)
            report["run"]["selection"] = selection.to_dict()
            for entry in report["suites"]:
                if entry["name"] in selection.suites:
                    entry["problems_total"] = selection.suites[entry["name"]][1]
        self.config.hook.pytest_vibecheck_report(config=self.config, report=report)
        self.report = report
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write the reports. A report that cannot be written (the paths were checked at
        configure time, but the disk may fill up or a folder vanish) is one line in the
        terminal summary and exit status 1, never a traceback that hides the summary."""
        report = self.build(int(session.exitstatus))
        outputs = (
            ("JSON report", self.settings.report, write_report),
            ("JUnit XML", self.settings.junitxml, write_junit),
        )
        for what, path, write in outputs:
            if path is None:
                continue
            try:
                self.written.append((what, write(path, report)))
            except (OSError, VibecheckError) as exc:
                self.write_errors.append(write_error_line(what, path, exc))
        if self.write_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        """The summary table, last: after pytest's own sections and its short test summary
        (``FAILED ...`` lines), so a run ends on the table, just above pytest's final line."""
        try:
            return (yield)
        finally:
            self._write_summary(terminalreporter)

    def _write_summary(self, terminalreporter: Any) -> None:
        report: VibeReport | SummaryParts
        if self.report is not None:
            report = self.report
        else:
            report = {"aggregates": self.aggregates(), "generation": generation_totals(self.items())}
        terminalreporter.write_sep("=", "vibecheck summary")
        # what the run spent is the progress reporter's last line (report/progress.py)
        for line in render_summary(report, verbosity=self.config.get_verbosity(), with_spend=False):
            terminalreporter.write_line(line)
        for what, path in self.written:
            terminalreporter.write_line(f"{what}: {path}")
        for line in self.write_errors:
            terminalreporter.write_line(line, red=True)


#: Stash key of the controller's :class:`VibeSummary` (absent on xdist workers and when the
#: plugin is inactive).
SUMMARY_KEY = pytest.StashKey[VibeSummary]()
