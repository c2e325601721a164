"""pytest entry point ``pytest11: vibecheck-gate``: the CI side of pytest-vibecheck.

Options (all in the ``vibecheck`` option group; see ``docs/ci.md``):

* ``--vibe-gate``: the pull-request gate. Collects one item per (changed Python file,
  instruction declared in ``[tool.vibecheck.gate]``) instead of the test suite; the logic is in
  :mod:`pytest_vibecheck.ci.gate`. ``--vibe-base REF``, ``--vibe-gate-all-lines``,
  ``--vibe-gate-config PATH`` tune it.
* ``--vibe-fail-under METRIC=VALUE,...`` and ``--vibe-max-fr VALUE``: thresholds on the run's
  aggregates (:mod:`pytest_vibecheck.ci.thresholds`) that decide ``session.exitstatus``.
* ``--vibe-no-fail-items``: items that fail (model failures, gate violations) do not fail the
  run; errors and ordinary tests still do, thresholds still gate.
* ``--vibe-shard I/N``: keep only shard I of N of the collected items
  (:mod:`pytest_vibecheck.ci.shard`).

Per-item results travel in ``user_properties`` under ``"vibecheck_gate"`` (builtins only, so
they cross pytest-xdist); the controller-only :class:`CIReporter` collects them, prints the
summary, the GitHub annotations and the step summary, and sets the exit status.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import pytest

from pytest_vibecheck.ci import gate as gatemod
from pytest_vibecheck.ci import shard as shardmod
from pytest_vibecheck.ci import thresholds as thmod
from pytest_vibecheck.ci.ruff_config import apply_repo_ruff, load_repo_ruff
from pytest_vibecheck.errors import Picklable, VibecheckError
from pytest_vibecheck.plugin.settings import CI_OPTIONS, add_option_specs, resolve_options
from pytest_vibecheck.report.collector import ItemCollector
from pytest_vibecheck.report.properties import record_of
from pytest_vibecheck.report.records import BENCH_PROP, GATE_PROP, GateRecord

if TYPE_CHECKING:
    from pytest_vibecheck.verify.verdict import Verdict



# ---------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    """The CI options (:data:`pytest_vibecheck.plugin.settings.CI_OPTIONS`), in the shared
    ``vibecheck`` group: command line, environment, ``[tool.vibecheck]`` and ini, as every
    setting."""
    add_option_specs(parser, CI_OPTIONS)


@dataclass
class CISettings:
    """The resolved CI options of a session."""

    gate: bool = False
    base: str | None = None
    all_lines: bool = False
    gate_config: Path | None = None
    thresholds: list[thmod.Threshold] = field(default_factory=list)
    no_fail_items: bool = False
    shard: tuple[int, int] | None = None
    #: where each option's value came from (``--vibe-shard``, ``environment variable ...``)
    sources: dict[str, str] = field(default_factory=dict)


CI_SETTINGS_KEY = pytest.StashKey[CISettings]()
GATE_RUN_KEY = pytest.StashKey["GateRun"]()
REPORTER_KEY = pytest.StashKey["CIReporter"]()


def _resolve(config: pytest.Config) -> CISettings:
    values, sources = resolve_options(config, CI_OPTIONS)
    s = CISettings(
        gate=bool(values.get("gate", False)),
        base=values.get("base"),
        all_lines=bool(values.get("all_lines", False)),
        no_fail_items=bool(values.get("no_fail_items", False)),
        thresholds=[*values.get("fail_under", ())],
        shard=values.get("shard"),
    )
    if "max_fr" in values:
        s.thresholds.append(values["max_fr"])
    gate_config = values.get("gate_config")
    if isinstance(gate_config, Path):
        s.gate_config = gate_config if gate_config.is_absolute() else config.invocation_params.dir / gate_config
    gate_only = (s.base, s.all_lines, s.gate_config)
    if not s.gate and any(v for v in gate_only):
        raise pytest.UsageError(
            "vibecheck: --vibe-base, --vibe-gate-all-lines and --vibe-gate-config only apply "
            "with --vibe-gate"
        )
    s.sources = sources
    return s


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Resolve the options once; in gate mode load the config and compute the diff (a bad
    config or base ref is a usage error, exit status 4); register the controller reporter.

    Last, so the reporter is registered after the benchmark's summary reporter and its
    terminal summary (thresholds, exit note) comes after the summary table."""
    settings = _resolve(config)
    config.stash[CI_SETTINGS_KEY] = settings
    config.addinivalue_line(
        "markers", "vibe_gate: a pull-request gate item of pytest-vibecheck (--vibe-gate)"
    )
    if settings.gate:
        config.stash[GATE_RUN_KEY] = GateRun.create(config, settings)
    if not _is_worker(config):
        reporter = CIReporter(config, settings)
        config.stash[REPORTER_KEY] = reporter
        config.pluginmanager.register(reporter, "vibecheck-ci-reporter")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Unregister the controller reporter."""
    reporter = config.stash.get(REPORTER_KEY, None)
    if reporter is not None:
        config.pluginmanager.unregister(reporter)
        del config.stash[REPORTER_KEY]


# ---------------------------------------------------------------- gate items


@dataclass
class GateRun:
    """Per-process gate state: the config, the diff, and verdicts cached per file."""

    config: gatemod.GateConfig
    diff: gatemod.GateDiff
    all_lines: bool
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)

    @classmethod
    def create(cls, config: pytest.Config, settings: CISettings) -> GateRun:
        start = config.invocation_params.dir
        try:
            root = gatemod.repo_root(start)
            path = settings.gate_config
            if path is None:
                candidates = [config.rootpath / "pyproject.toml", root / "pyproject.toml"]
                path = next((c for c in candidates if c.is_file()), candidates[-1])
            gconf = gatemod.load_gate_config(path)
            gconf = replace(
                gconf, instructions=apply_repo_ruff(gconf.instructions, load_repo_ruff(root))
            )
            base = gatemod.resolve_base(root, settings.base, gconf.base)
            diff = gatemod.compute_diff(root, base, gconf)
        except VibecheckError as exc:
            raise pytest.UsageError(f"vibecheck gate: {exc}") from None
        return cls(gconf, diff, settings.all_lines)

    def file_verdicts(self, cf: gatemod.ChangedFile) -> list[Verdict]:
        """The verdicts of every declared instruction on file ``cf`` (one batch per file),
        in the order of the config. Raises whatever the verification engine raises."""
        if cf.path not in self.verdicts:
            from pytest_vibecheck.verify.api import VerifyItem, verify_batch

            code = (self.diff.repo / cf.path).read_text(encoding="utf-8")
            job = VerifyItem(
                instructions=[(gi.id, dict(gi.params)) for gi in self.config.instructions],
                code=code,
            )
            self.verdicts[cf.path] = list(verify_batch([job])[0])
        return self.verdicts[cf.path]


class GateInfraError(Picklable, Exception):
    """The verifier could not judge (an error outcome, never a violation)."""


class GateViolations(Picklable, Exception):
    """Counted violations of one (file, instruction) item."""


class GateFile(pytest.File):
    """A changed Python file: one :class:`GateItem` per declared instruction, or one syntax item
    when the file does not parse."""

    def __init__(self, *, changed: gatemod.ChangedFile, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.changed = changed

    def collect(self) -> list[GateItem]:
        """Node ids ``PATH::gate[logic_3]`` (one per instruction) or ``PATH::gate[syntax]``."""
        run: GateRun = self.config.stash[GATE_RUN_KEY]
        cf = self.changed
        problem = gatemod.check_syntax(self.path.read_bytes(), cf.path)
        if problem is not None:
            return [GateItem.from_parent(self, name="gate[syntax]", changed=cf,
                                         instruction=None, index=-1, syntax=problem)]
        return [
            GateItem.from_parent(self, name=f"gate[{gi.id}]", changed=cf, instruction=gi, index=n)
            for n, gi in enumerate(run.config.instructions)
        ]


class GateItem(pytest.Item):
    """One (changed file, instruction) check, or the file's syntax check (``instruction=None``)."""

    def __init__(
        self,
        *,
        changed: gatemod.ChangedFile,
        instruction: gatemod.GateInstruction | None,
        index: int,
        syntax: gatemod.SyntaxProblem | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.changed = changed
        self.instruction = instruction
        self.index = index
        self.syntax = syntax
        self.record: GateRecord = self._base_record()
        self.add_marker("vibe_gate")
        if instruction is not None:
            self.extra_keyword_matches.add(instruction.id)

    def _base_record(self) -> GateRecord:
        inst = self.instruction
        return {
            "file": self.changed.path,
            "status_in_diff": self.changed.status,
            "old_path": self.changed.old_path,
            "instruction": inst.id if inst else "syntax",
            "label": inst.label() if inst else "syntax",
            "params": dict(inst.params) if inst else {},
            "status": "passed",
            "violations": [],
            "error": None,
            "line": None,
            "column": None,
        }

    def setup(self) -> None:
        """Verify the file (batched per file); a verifier error is an *error* outcome."""
        self.record = self._base_record()
        if self.syntax is not None or self.instruction is None:
            return
        run: GateRun = self.config.stash[GATE_RUN_KEY]
        try:
            verdict = run.file_verdicts(self.changed)[self.index]
        except VibecheckError as exc:
            self._error(f"verification failed: {exc}")
        if verdict.passed is None:
            self._error(f"verifier error: {verdict.error}")
        added = self.changed.added
        self.record["violations"] = [
            {
                "rule": v.rule,
                "line": v.line,
                "column": v.column,
                "message": v.message,
                "counted": gatemod.counted(v.line, added, run.all_lines),
            }
            for v in verdict.violations
        ]

    def _error(self, message: str) -> NoReturn:
        self.record["status"] = "error"
        self.record["error"] = message
        self.user_properties.append((GATE_PROP, self.record))
        raise GateInfraError(message)

    def runtest(self) -> None:
        """Fail on a syntax error, or on any counted violation."""
        rec = self.record
        if self.syntax is not None:
            rec["status"] = "syntax"
            rec["error"] = self.syntax.message
            rec["line"] = self.syntax.line
            rec["column"] = self.syntax.column
            self.user_properties.append((GATE_PROP, rec))
            raise GateViolations(self._syntax_text())
        bad = [v for v in rec["violations"] if v["counted"]]
        rec["status"] = "failed" if bad else "passed"
        self.user_properties.append((GATE_PROP, rec))
        if bad:
            raise GateViolations(self._violations_text(bad))

    def _syntax_text(self) -> str:
        s = self.syntax
        assert s is not None
        loc = self.changed.path + (f":{s.line}" if s.line else "") + (f":{s.column}" if s.column else "")
        return f"{loc}: {s.message} (the file cannot be checked against any instruction)"

    def _violations_text(self, bad: Sequence[Mapping[str, Any]]) -> str:
        label = self.record["label"]
        scope = "" if self.config.stash[GATE_RUN_KEY].all_lines else " on changed lines"
        lines = [f"{self.changed.path}: instruction {label} not followed{scope}:"]
        lines += [f"  {self.changed.path}:{v['line']}:{v['column']}: {v['rule']} {v['message']}"
                  for v in bad]
        hidden = len(self.record["violations"]) - len(bad)
        if hidden:
            lines.append(f"  ({hidden} more on unchanged lines, not counted; "
                         "--vibe-gate-all-lines counts them)")
        return "\n".join(lines)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, (GateViolations, GateInfraError)):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.changed.path}::{self.name}"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """Add one :class:`GateFile` per changed Python file to the session's own collection, so
    the gate items are counted, selected by ``-k``/``-m`` and reported like any other."""
    report = yield
    run = collector.config.stash.get(GATE_RUN_KEY, None)
    if run is not None and isinstance(collector, pytest.Session) and report.passed:
        report.result.extend(
            GateFile.from_parent(collector, path=run.diff.repo / cf.path, changed=cf)
            for cf in run.diff.files
        )
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Show a verifier error of a gate item as its one-line cause, without a traceback; carry
    the gate record as a report attribute, with short JUnit properties in its place."""
    report = yield
    if not isinstance(item, GateItem):
        return report
    if call.excinfo is not None and isinstance(call.excinfo.value, GateInfraError):
        report.longrepr = f"{item.changed.path}: {call.excinfo.value}"
    from pytest_vibecheck.report.properties import gate_properties, move_record

    move_record(report, GATE_PROP, gate_properties)
    return report


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In gate-only mode (``--vibe-gate`` without ``--vibe-model``) the test suite is not collected."""
    if config.stash[CI_SETTINGS_KEY].gate and not getattr(config.option, "vibe_model", None):
        return True
    return None


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """Keep this shard's items, after every other plugin's hook (so shards split the final
    selection, after ``-k``/``-m``)."""
    result = yield
    settings = config.stash[CI_SETTINGS_KEY]
    if settings.shard is not None:
        index, count = settings.shard
        kept, dropped = shardmod.split(items, [it.nodeid for it in items], index, count)
        items[:] = kept
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        config.stash[SHARD_TOTAL_KEY] = len(kept) + len(dropped)
    return result


SHARD_TOTAL_KEY = pytest.StashKey[int]()


# ---------------------------------------------------------------- controller: reports, exit status


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

    def aggregates(self) -> list[dict[str, Any]]:
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
        from pytest_vibecheck.plugin.selection import SELECTION_KEY, tasks_run
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
