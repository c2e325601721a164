"""The CI side's controller-only reporter: gate records and item outcomes -> exit status (with
``--vibe-no-fail-items`` and the thresholds), the terminal summary, GitHub annotations and the
step summary."""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_vibecheck.ci import gate as gatemod
from pytest_vibecheck.ci.items import GATE_RUN_KEY, GateRun
from pytest_vibecheck.ci.options import SHARD_TOTAL_KEY, CISettings
from pytest_vibecheck.config import thresholds as thmod
from pytest_vibecheck.report.collector import ItemCollector
from pytest_vibecheck.report.properties import record_of
from pytest_vibecheck.report.records import BENCH_PROP, GATE_PROP, AggregateRecord, GateRecord

__all__ = ["REPORTER_KEY", "CIReporter"]


class CIReporter:
    """Controller-only: collects gate records and item outcomes, applies ``--vibe-no-fail-items``
    and the thresholds at ``pytest_sessionfinish``, and writes the summary and GitHub outputs."""

    def __init__(self, config: pytest.Config, settings: CISettings) -> None:
        self.config = config
        self.settings = settings
        self.gate_records: dict[str, GateRecord] = {}
        self.bench_items = ItemCollector()
        self.item_failures: set[str] = set()  # vibecheck items failed in "call"
        self.other_failures: set[str] = set()  # anything else that failed (incl. errors)
        self.checks: list[thmod.Check] = []
        self.exit_note: str = ""
        self.github_written = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        gate_rec = record_of(report, GATE_PROP)
        bench = record_of(report, BENCH_PROP)
        if gate_rec is not None:
            self.gate_records[report.nodeid] = cast(GateRecord, gate_rec)
        if bench is not None and self.settings.thresholds and not self._has_summary():
            self.bench_items.add(report)
        if report.failed and not hasattr(report, "wasxfail"):
            ours = gate_rec is not None or bench is not None
            if report.when == "call" and ours:
                self.item_failures.add(report.nodeid)
            else:
                self.other_failures.add(report.nodeid)

    def _has_summary(self) -> bool:
        from pytest_vibecheck.report.session import SUMMARY_KEY

        return SUMMARY_KEY in self.config.stash

    def aggregates(self) -> list[AggregateRecord]:
        """The run's aggregate rows (docs/report-schema.md): ``summary.aggregates()`` of the
        benchmark plugin's controller summary when it is active, else recomputed from the
        ``vibecheck`` records seen here with :func:`pytest_vibecheck.report.aggregate.aggregate`."""
        from pytest_vibecheck.report.session import SUMMARY_KEY

        summary = self.config.stash.get(SUMMARY_KEY, None)
        if summary is not None:
            return list(summary.aggregates())
        from pytest_vibecheck.report.aggregate import aggregate

        return aggregate(self.bench_items.items())

    def _coverage(self) -> dict[str, tuple[int, int]]:
        """Suites of which only part of the tasks ran: name -> (ran, in the suite)."""
        from pytest_vibecheck.config.selection import SELECTION_KEY, tasks_run
        from pytest_vibecheck.report.session import SUMMARY_KEY

        selection = self.config.stash.get(SELECTION_KEY, None)
        summary = self.config.stash.get(SUMMARY_KEY, None)
        if selection is None or summary is None:
            return {}
        return selection.coverage(tasks_run(summary.items()))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Set the exit status (this runs before the benchmark plugin's trylast report writer,
        so the JSON report records the final status and the shard) and write the GitHub
        outputs of the gate."""
        s = self.settings
        from pytest_vibecheck.report.session import SUMMARY_KEY

        summary = self.config.stash.get(SUMMARY_KEY, None)
        if summary is not None and s.shard is not None:
            summary.extra["shard"] = {"index": s.shard[0], "count": s.shard[1]}
        status = session.exitstatus
        notes: list[str] = []
        if status == pytest.ExitCode.NO_TESTS_COLLECTED and (
            s.gate or (s.shard is not None and self.config.stash.get(SHARD_TOTAL_KEY, 0) > 0)
        ):
            status = pytest.ExitCode.OK
            notes.append("no gate items (no changed Python file)" if s.gate
                         else "this shard has no items")
        if (
            s.no_fail_items
            and status == pytest.ExitCode.TESTS_FAILED
            and self.item_failures
            and not self.other_failures
        ):
            status = pytest.ExitCode.OK
            notes.append(f"{len(self.item_failures)} failed vibecheck item(s) ignored "
                         "(--vibe-no-fail-items)")
        if s.thresholds:
            self.checks = thmod.evaluate(self.aggregates(), s.thresholds, self._coverage())
            if summary is not None:  # into the JSON report and the JUnit XML
                summary.extra["thresholds"] = [c.to_dict() for c in self.checks]
            failed = [c for c in self.checks if not c.passed]
            if failed and status == pytest.ExitCode.OK:
                status = pytest.ExitCode.TESTS_FAILED
            notes.append(f"thresholds: {len(failed)} of {len(self.checks)} check(s) failed"
                         if failed else f"thresholds: all {len(self.checks)} check(s) met")
        if status != session.exitstatus:
            session.exitstatus = status
        self.exit_note = "; ".join(notes)
        if s.gate:
            self._write_github()

    def _github_env(self) -> bool:
        return os.environ.get("GITHUB_ACTIONS") == "true"

    def annotation_lines(self) -> list[str]:
        """The workflow-command lines for the counted violations and syntax errors."""
        level: Any = "warning" if self.settings.no_fail_items else "error"
        out: list[str] = []
        for _nodeid, rec in sorted(self.gate_records.items()):
            if rec["status"] == "syntax":
                out.append(gatemod.annotation_line(
                    rec["file"], rec.get("line"), rec.get("column"), "vibecheck syntax error",
                    f"{rec['error']} (the file cannot be checked against any instruction)", level,
                ))
                continue
            out.extend(
                gatemod.annotation_line(
                    rec["file"], v["line"], v["column"],
                    f"vibecheck {v['rule']} ({rec['label']})", v["message"], level,
                )
                for v in rec.get("violations", [])
                if v.get("counted")
            )
        return out

    def _write_github(self) -> None:
        if not self._github_env() or self.github_written:
            return
        self.github_written = True
        path = os.environ.get("GITHUB_STEP_SUMMARY")
        run: GateRun | None = self.config.stash.get(GATE_RUN_KEY, None)
        if not path or run is None:
            return
        text = gatemod.render_step_summary(
            list(self.gate_records.values()),
            base=run.diff.base, merge_base=run.diff.merge_base,
            skipped=run.diff.skipped, all_lines=run.all_lines,
            instructions=run.config.instructions,
        )
        try:
            with Path(path).open("a", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            warnings.warn(f"vibecheck gate: cannot append to GITHUB_STEP_SUMMARY {path}: {exc}",
                          stacklevel=1)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(
        self, terminalreporter: Any, exitstatus: int
    ) -> Generator[None, None, None]:
        """The gate summary, thresholds and exit note, at the very end of the output (after
        pytest's short test summary and the benchmark's summary table)."""
        try:
            return (yield)
        finally:
            self._write_summary(terminalreporter)

    def _write_summary(self, terminalreporter: Any) -> None:
        s = self.settings
        tr = terminalreporter
        run: GateRun | None = self.config.stash.get(GATE_RUN_KEY, None)
        if s.gate and run is not None:
            tr.write_sep("=", "vibecheck gate")
            recs = list(self.gate_records.values())
            failed = sum(r["status"] in ("failed", "syntax") for r in recs)
            errors = sum(r["status"] == "error" for r in recs)
            hidden = sum(1 for r in recs for v in r.get("violations", []) if not v.get("counted"))
            tr.write_line(
                f"base {run.diff.base} (merge base {run.diff.merge_base[:12]}); "
                f"{len(run.diff.files)} changed Python file(s); {len(recs)} check(s): "
                f"{failed} failed, {errors} error(s); violations counted on "
                + ("all lines" if run.all_lines else "changed lines only")
                + (f" ({hidden} on unchanged lines not counted)" if hidden else "")
            )
            for sk in run.diff.skipped:
                tr.write_line(f"skipped {sk.path}: {sk.reason}")
            if self._github_env():
                for line in self.annotation_lines():
                    tr.write_line(line)
        if s.thresholds:
            tr.write_sep("=", "vibecheck thresholds")
            if s.shard is not None:
                tr.write_line(
                    f"note: shard {s.shard[0]}/{s.shard[1]}: these thresholds judge this shard's "
                    "items only; gate the merged report with `vibecheck merge --fail-under`"
                )
            for line in thmod.format_checks(self.checks, verbose=True):
                tr.write_line(line)
        if self.exit_note:
            tr.write_line(f"vibecheck: {self.exit_note}")


#: The controller's :class:`CIReporter`, when a CI option is given (set by the gate's plugin).
REPORTER_KEY: pytest.StashKey[CIReporter] = pytest.StashKey()
