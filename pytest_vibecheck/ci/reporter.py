"""The CI side's controller-only reporter: gate records and item outcomes -> exit status (with
``--vibe-no-fail-items`` and the thresholds), the terminal summary, GitHub annotations and the
step summary."""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import Any, Literal, cast

import pytest

from pytest_vibecheck.ci import gate as gatemod
from pytest_vibecheck.ci import sarif as sarifmod
from pytest_vibecheck.ci.annotations import AnnotationPlan, limit_note, plan_annotations
from pytest_vibecheck.ci.declared import relative_source
from pytest_vibecheck.ci.items import GATE_RUN_KEY, GateRun
from pytest_vibecheck.ci.options import SHARD_TOTAL_KEY, CISettings
from pytest_vibecheck.ci.prompt import stale_agent_files
from pytest_vibecheck.config import thresholds as thmod
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.report.collector import ItemCollector
from pytest_vibecheck.report.properties import record_of
from pytest_vibecheck.report.records import BENCH_PROP, GATE_PROP, AggregateRecord, GateRecord

__all__ = ["REPORTER_KEY", "SUMMARY_ROWS", "CIReporter"]

#: Violation rows the job summary's table lists at most (the rest are counted).
SUMMARY_ROWS = 100


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
        #: the SARIF file written at the end of the run (``--vibe-sarif``) and its result count
        self.sarif_written: tuple[Path, int] | None = None
        self.sarif_error: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        gate_rec = record_of(report, GATE_PROP)
        bench = record_of(report, BENCH_PROP)
        if gate_rec is not None:
            self.gate_records[report.nodeid] = cast(GateRecord, gate_rec)
        wanted = self.settings.thresholds or (self.settings.sarif and not self.settings.gate)
        if bench is not None and wanted and not self._has_summary():
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
        if s.sarif is not None and not self._write_sarif(s.sarif) and status == pytest.ExitCode.OK:
            status = pytest.ExitCode.TESTS_FAILED
        if status != session.exitstatus:
            session.exitstatus = status
        self.exit_note = "; ".join(notes)
        if s.gate:
            self._write_github()

    def _level(self) -> Literal["error", "warning"]:
        return "warning" if self.settings.no_fail_items else "error"

    def sarif_log(self) -> sarifmod.SarifLog:
        """The run's SARIF log: the gate's counted violations with ``--vibe-gate``, else the
        instruction violations of the benchmark items (:mod:`pytest_vibecheck.ci.sarif`)."""
        from pytest_vibecheck import __version__
        from pytest_vibecheck.verify.ruff_engine import default_engine

        ruff_version = default_engine().version()
        run: GateRun | None = self.config.stash.get(GATE_RUN_KEY, None)
        if run is None:
            from pytest_vibecheck.report.session import SUMMARY_KEY

            summary = self.config.stash.get(SUMMARY_KEY, None)
            items = summary.items() if summary is not None else self.bench_items.items()
            return sarifmod.benchmark_log(items, tool_version=__version__,
                                          ruff_version=ruff_version, level=self._level())
        repo = run.diff.repo

        def text_of(path: str) -> str | None:
            try:
                return (repo / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None

        return sarifmod.gate_log(
            [rec for _, rec in sorted(self.gate_records.items())], run.config.instructions,
            text_of=text_of, tool_version=__version__, ruff_version=ruff_version,
            level=self._level(), repo=repo,
            properties={"base": run.diff.base, "mergeBase": run.diff.merge_base,
                        "linesCounted": "all" if run.all_lines else "changed",
                        "config": relative_source(Path(run.config.source), repo)},
        )

    def _write_sarif(self, path: Path) -> bool:
        from pytest_vibecheck.report.outputs import write_error_line

        try:
            log = self.sarif_log()
            sarifmod.write_log(path, log)
        except (OSError, VibecheckError) as exc:
            self.sarif_error = write_error_line("SARIF log", path, exc)
            return False
        self.sarif_written = (path, len(log["runs"][0].get("results", [])))
        return True

    def _github_env(self) -> bool:
        return os.environ.get("GITHUB_ACTIONS") == "true"

    def annotation_lines(self) -> list[str]:
        """The workflow-command lines for the counted violations and syntax errors, most
        important first (GitHub keeps only the first few): the files that do not parse, then
        every violation by file, line and column."""
        level: Any = "warning" if self.settings.no_fail_items else "error"
        keyed: list[tuple[tuple[int, str, int, int], str]] = []
        for _nodeid, rec in sorted(self.gate_records.items()):
            if rec["status"] == "syntax":
                keyed.append(((0, rec["file"], 0, 0), gatemod.annotation_line(
                    rec["file"], rec.get("line"), rec.get("column"), "vibecheck syntax error",
                    f"{rec['error']} (the file cannot be checked against any instruction)", level,
                )))
                continue
            keyed.extend(
                ((1, rec["file"], v["line"] or 0, v["column"] or 0), gatemod.annotation_line(
                    rec["file"], v["line"], v["column"],
                    f"vibecheck {v['rule']} ({rec['label']})", v["message"], level,
                ))
                for v in rec.get("violations", [])
                if v.get("counted")
            )
        return [line for _, line in sorted(keyed, key=lambda kv: kv[0])]

    def _places(self, *, summary: str) -> list[str]:
        """Where every finding of the gate is: the job summary's table (when it lists them
        all), the SARIF file, the JUnit file, and this step's output."""
        places = []
        if len(self.annotation_lines()) <= SUMMARY_ROWS:
            places.append(summary)
        if self.settings.sarif is not None:
            places.append(f"the SARIF file {self._shown(self.settings.sarif)}")
        xml = self.config.getoption("xmlpath", None)
        if xml:
            places.append(f"the JUnit file {self._shown(Path(xml))}")
        places.append("this step's output")
        return places

    def _shown(self, path: Path) -> str:
        base = self.config.invocation_params.dir
        full = path if path.is_absolute() else base / path
        try:
            return full.relative_to(base).as_posix()
        except ValueError:
            return str(full)

    def annotation_plan(self) -> AnnotationPlan:
        """The annotations to print: at most GitHub's per-step limit, then a notice."""
        return plan_annotations(self.annotation_lines(), self._places(summary="the job summary"))

    def _notes(self, run: GateRun) -> list[str]:
        plan = plan_annotations(self.annotation_lines(), self._places(summary="the table below"))
        notes = limit_note(plan, self._places(summary="the table below"))
        stale = stale_agent_files(run.diff.repo, run.config,
                                  relative_source(Path(run.config.source), run.diff.repo))
        if stale:
            notes += [f"**{', '.join(stale)} no longer match{'es' if len(stale) == 1 else ''} "
                      "the declared instructions**: the agent was told something other than "
                      "what the gate checks; run `vibecheck gate-prompt --write` and commit it.",
                      ""]
        return notes

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
            instructions=run.config.instructions, max_rows=SUMMARY_ROWS,
            notes=self._notes(run),
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
            for name in stale_agent_files(run.diff.repo, run.config,
                                          relative_source(Path(run.config.source), run.diff.repo)):
                tr.write_line(f"note: {name} no longer matches the declared instructions (the "
                              "agent was told something else); run `vibecheck gate-prompt "
                              "--write` and commit it")
            if self._github_env():
                for line in self.annotation_plan().lines:
                    tr.write_line(line)
        if self.sarif_written is not None:
            path, count = self.sarif_written
            tr.write_line(f"vibecheck: SARIF log {self._shown(path)}: {count} result(s)")
        if self.sarif_error is not None:
            tr.write_line(self.sarif_error)
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
