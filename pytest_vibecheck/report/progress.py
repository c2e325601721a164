"""Live progress of a benchmark run, what it spent, and why it stopped (controller only).

:class:`RunProgress` is a plugin on the controller (never on an xdist worker). From the items'
records (:func:`pytest_vibecheck.report.properties.record_of`, the same with or without ``-n``;
the full record comes with the setup report, later reports carry a marker) it counts items done
out of the total, generations requested and served from the cache, tokens in and out (of replies
generated now; cache hits cost nothing) and an ETA. It prints one line each time another
:data:`STEP` of the items is done, once the run has lasted :data:`QUIET_S` seconds (so short runs
print nothing extra): in CI logs (``$CI`` set, or output that is not a terminal) these lines are the
progress; in a terminal they come between pytest's own progress characters. ``--vibe-progress
off`` turns them off, ``always`` drops the quiet period.

At the end it states what the run spent on API requests (all processes, from the run's shared
state: requests, tokens, dollars at list prices where known, the budget) and each stop of the run
(:mod:`pytest_vibecheck.plugin.run.guard`) with the number of items not run; a stopped run exits
non-zero. Only public pytest APIs are used (hooks, ``terminalreporter.write_line``).
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_vibecheck.plugin.run.guard import RunGuard

__all__ = ["QUIET_S", "STEP", "RunProgress", "format_tokens"]

#: Fraction of the items between two progress lines.
STEP = 0.05
#: Seconds a run must last before progress lines start (``--vibe-progress auto``).
QUIET_S = 5.0
#: Prefix of the skip reason of an item the run did not send (a stop).
NOT_RUN = "vibecheck: not run: "


def format_tokens(n: float) -> str:
    """``950``, ``12.3k``, ``4.56M``."""
    if n < 1000:
        return str(int(n))
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def _duration(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _record(report: pytest.TestReport) -> Mapping[str, Any] | None:
    from pytest_vibecheck.report.properties import record_of

    return record_of(report, "vibecheck")


class RunProgress:
    """The controller's progress, spending and stop reporter (see the module docstring).
    ``mode``: ``auto``, ``always`` or ``off``; ``guard``: the controller's run guard."""

    def __init__(self, config: pytest.Config, guard: RunGuard, mode: str = "auto") -> None:
        self.config = config
        self.guard = guard
        self.mode = mode
        self.total = 0
        self.done = 0
        self.requested = 0
        self.cached = 0
        self.tokens_in = 0
        self.tokens_out = 0
        #: items not run, per stop reason
        self.not_run: Counter[str] = Counter()
        self.started = time.monotonic()
        self._finished: set[str] = set()
        #: full records by node id (from the setup report) until the item is counted: the
        #: call and teardown reports carry only a marker (slim reports over xdist)
        self._records: dict[str, Mapping[str, Any]] = {}
        self._next_step = STEP
        self.ci = bool(os.environ.get("CI")) or not sys.stdout.isatty()

    # ------------------------------------------------------------ counting

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = sum(getattr(i, "spec", None) is not None for i in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, sum("::" in i and "[" in i for i in ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = _record(report)
        if record is None or report.nodeid in self._finished:
            return
        if not record.get("same_as_setup"):
            self._records[report.nodeid] = record
        if not (report.when == "teardown" or report.failed or report.skipped):
            return
        record = self._records.pop(report.nodeid, record)
        self._finished.add(report.nodeid)
        self.done += 1
        for turn in record.get("turns") or []:
            gen = turn.get("generation") or {}
            self.requested += 1
            if gen.get("cached"):
                self.cached += 1
            else:
                self.tokens_in += int(gen.get("input_tokens") or 0)
                self.tokens_out += int(gen.get("output_tokens") or 0)
        reason = str(record.get("skip_reason") or "")
        if reason.startswith(NOT_RUN):
            self.not_run[reason[len(NOT_RUN):]] += 1
        self._maybe_print()

    # ------------------------------------------------------------ printing

    def line(self) -> str:
        """The progress line: items done of the total, generations, tokens, ETA."""
        total = max(self.total, self.done)
        pct = 100.0 * self.done / total if total else 100.0
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (total - self.done) if self.done else 0.0
        return (
            f"vibecheck: {self.done}/{total} items ({pct:.0f}%); generations {self.requested} "
            f"requested, {self.cached} from the cache; tokens {format_tokens(self.tokens_in)} in / "
            f"{format_tokens(self.tokens_out)} out; elapsed {_duration(elapsed)}, ETA {_duration(eta)}"
        )

    def _maybe_print(self) -> None:
        if self.mode == "off" or not self.total:
            return
        if self.done / self.total + 1e-9 < self._next_step:
            return
        while self._next_step <= self.done / self.total + 1e-9:
            self._next_step += STEP
        if self.mode == "auto" and time.monotonic() - self.started < QUIET_S:
            return
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            # a line of its own: pytest's progress characters may be on the current line, and
            # it does not tell (publicly) whether they are, so the line starts with a newline
            tr.write(f"\n{self.line()}\n")

    # ------------------------------------------------------------ the end

    def spent_line(self) -> str:
        """What the run spent on API requests (every process), and the budget."""
        requests, tin, tout, usd = self.guard.spent()
        text = f"vibecheck: spent {tin:,} input + {tout:,} output tokens on {requests} model requests"
        if usd is not None and requests:
            text += f" (${usd:.2f} at list prices)"
        budget = self.guard.budget
        if budget is not None:
            text += f"; budget {budget.text}"
        return text

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.guard.state.stops() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        """What was spent and each stop, at the very end (after the summary table, which the
        summary reporter writes when the hooks inside this wrapper are done)."""
        try:
            return (yield)
        finally:
            self._write_end(terminalreporter)

    def _write_end(self, terminalreporter: Any) -> None:
        _n, tin, tout, _usd = self.guard.spent()
        if tin + tout or self.guard.budget is not None:  # offline models spend nothing
            terminalreporter.write_line(self.spent_line())
        for scope, reason in self.guard.state.stops().items():
            what = "the run" if scope == "*" else scope
            terminalreporter.write_line(
                f"vibecheck: stopped {what}: {reason}; {self.not_run[reason]} items not run", red=True
            )
