"""Live progress of a benchmark run, what it spent, and why it stopped (controller only).

:class:`RunProgress` is a plugin on the controller (never on an xdist worker). From the items'
records (:func:`pytest_vibecheck.report.properties.record_of`, the same with or without ``-n``;
the full record comes with the setup report, later reports carry a marker) it counts items done
out of the total, generations requested and served from the cache, and an ETA; the tokens it
shows are what the run spent so far (the run's shared counters of answered API requests, every
process: the same figures as the last line and ``run.spend``; cache hits and offline models cost
nothing). It shows them one of two
ways (:func:`choose_mode`):

- **live**, on a terminal (pytest's reporter writes to a TTY with markup, ``$CI`` unset, not
  ``-v``): one status redrawn in place, to the right of pytest's own progress characters
  (``tiny ..F.F  vibecheck 12/40 items (30%), gen 30 (6 cached), tokens 41.2k in / 9.8k out,
  ETA 2m10s``). pytest's ``TerminalReporter.rewrite()`` rewinds to the start of the line, which
  suits a line one owns (pytest's "collecting ..." line) but would overwrite the characters, and
  text written through the reporter counts towards its line width (its ``[ 45%]`` column). So
  the status is written to the terminal around pytest, not through it (:class:`LiveLine`): saved
  cursor, line wrap off, the status, cursor restored; the cursor and pytest's count of its line
  stay where pytest left them. It is erased (``erase to end of line``) before pytest writes
  (``pytest_runtest_logstart``, ``pytest_runtest_logreport``), redrawn after
  (``pytest_runtest_logstart``, ``pytest_runtest_logfinish``: hooks that run while output
  capture is suspended), and erased for good when the test loop ends, so the run finishes on
  pytest's line as pytest wrote it;
- **lines**, in CI logs (``$CI`` set, or output that is not a terminal) and with ``-v``: one line
  each time another :data:`STEP` of the items is done, once the run has lasted :data:`QUIET_S`
  seconds (so short runs print nothing extra).

``--vibe-progress off`` turns both off, ``always`` drops the quiet period.

At the end it states what the run spent on API requests (all processes, from the run's shared
state: requests, tokens, dollars at list prices where known, the budget) and each stop of the run
(:mod:`pytest_vibecheck.plugin.run.guard`) with the number of items not run; a stopped run exits
non-zero. Only public pytest APIs are used (hooks, ``terminalreporter.write_line``,
``isatty``/``hasmarkup``).
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, Literal, TextIO

import pytest

if TYPE_CHECKING:
    from pytest_vibecheck.plugin.run.guard import RunGuard

__all__ = ["QUIET_S", "STEP", "LiveLine", "ProgressMode", "RunProgress", "choose_mode", "format_tokens"]

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


ProgressMode = Literal["off", "live", "lines"]


def choose_mode(
    setting: str,
    *,
    isatty: bool,
    markup: bool,
    verbosity: int,
    environ: Mapping[str, str],
    captured: bool = True,
) -> ProgressMode:
    """How progress is shown: ``off`` (``--vibe-progress off``); ``live`` (a status redrawn in
    place) when pytest writes to a terminal (``isatty``) with markup (``markup``: pytest's
    ``hasmarkup``, off with ``--color=no`` or ``NO_COLOR``), ``$CI`` is unset or empty, ``$TERM``
    is not ``dumb``, the output is not verbose (``-v`` writes a line per item) and output is
    ``captured`` (with ``-s`` anything may write to the terminal); else ``lines`` (a line every
    :data:`STEP` of the items)."""
    if setting == "off":
        return "off"
    if environ.get("CI", "").strip() or environ.get("TERM") == "dumb":
        return "lines"
    return "live" if isatty and markup and verbosity <= 0 and captured else "lines"


class LiveLine:
    """The escape sequences (VT100/ANSI) that show one status to the right of the cursor and
    take it away, leaving the cursor, and what is left of it on the line, as they were.

    :meth:`draw` saves the cursor (``ESC 7``), erases to the end of the line (``ESC [K``),
    turns line wrap off (``ESC [?7l``, so a status longer than the line is cut at the edge, never
    wrapped onto a line of its own), writes two spaces and the status, turns wrap back on and
    restores the cursor (``ESC 8``). :meth:`erase` erases from the cursor to the end of the line
    (the status only: the cursor is where the status began); it returns ``""`` when nothing is
    drawn.
    """

    SAVE, RESTORE, CLEAR = "\x1b7", "\x1b8", "\x1b[K"
    NOWRAP, WRAP = "\x1b[?7l", "\x1b[?7h"

    def __init__(self) -> None:
        self.drawn = False

    def draw(self, text: str) -> str:
        """The sequence that shows ``text`` (printable, one line) right of the cursor."""
        self.drawn = True
        return f"{self.SAVE}{self.CLEAR}{self.NOWRAP}  {text}{self.WRAP}{self.RESTORE}"

    def erase(self) -> str:
        """The sequence that removes the status (``""`` if none is drawn)."""
        if not self.drawn:
            return ""
        self.drawn = False
        return self.CLEAR


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
        #: items not run, per stop reason
        self.not_run: Counter[str] = Counter()
        self.started = time.monotonic()
        self._finished: set[str] = set()
        #: full records by node id (from the setup report) until the item is counted: the
        #: call and teardown reports carry only a marker (slim reports over xdist)
        self._records: dict[str, Mapping[str, Any]] = {}
        self._next_step = STEP
        #: how progress is shown (:func:`choose_mode`), decided once pytest's reporter exists
        self.kind: ProgressMode | None = None
        self.live = LiveLine()
        self._out: TextIO | None = None

    def _kind(self) -> ProgressMode:
        if self.kind is None:
            tr = self.config.pluginmanager.get_plugin("terminalreporter")
            isatty = getattr(tr, "isatty", False)  # a method since pytest 8.4, an attribute before
            self.kind = choose_mode(
                self.mode,
                isatty=bool(isatty() if callable(isatty) else isatty),
                markup=bool(getattr(tr, "hasmarkup", False)),
                verbosity=self.config.get_verbosity(),
                environ=os.environ,
                captured=self.config.getoption("capture", "fd") != "no",
            )
            # the stream pytest's reporter writes to (sys.stdout while capture is suspended,
            # which it is in the hooks that draw)
            self._out = sys.stdout
        return self.kind

    # ------------------------------------------------------------ counting

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = sum(getattr(i, "spec", None) is not None for i in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, sum("::" in i and "[" in i for i in ids))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        self._erase()  # before pytest writes the item's character
        try:
            return (yield)
        finally:
            self._count(report)

    def _count(self, report: pytest.TestReport) -> None:
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
        reason = str(record.get("skip_reason") or "")
        if reason.startswith(NOT_RUN):
            self.not_run[reason[len(NOT_RUN):]] += 1
        self._maybe_print()

    # ------------------------------------------------------------ printing

    def _stopped(self) -> bool:
        """True once a stop was recorded (a budget, the error bound, or a model's fatal error):
        the stopped items are skipped at once, so an ETA from the time per item so far would
        be wrong; the line says ``stopped`` instead."""
        return bool(self.guard.state.stops())

    def line(self) -> str:
        """The progress line: items done of the total, generations, tokens, ETA (``stopped``
        instead once the run has stopped)."""
        total, pct, elapsed, eta = self._numbers()
        _requests, tin, tout, _usd = self.guard.spent()
        end = "stopped" if self._stopped() else f"ETA {_duration(eta)}"
        return (
            f"vibecheck: {self.done}/{total} items ({pct:.0f}%); generations {self.requested} "
            f"requested, {self.cached} from the cache; tokens {format_tokens(tin)} in / "
            f"{format_tokens(tout)} out; elapsed {_duration(elapsed)}, {end}"
        )

    def status(self) -> str:
        """The live status (shorter than :meth:`line`: it shares pytest's line)."""
        total, pct, _elapsed, eta = self._numbers()
        _requests, tin, tout, _usd = self.guard.spent()  # what the run spent: every process
        text = (
            f"vibecheck {self.done}/{total} items ({pct:.0f}%), gen {self.requested} "
            f"({self.cached} cached), tokens {format_tokens(tin)} in / "
            f"{format_tokens(tout)} out"
        )
        if self._stopped():
            return text + ", stopped"
        return text + (f", ETA {_duration(eta)}" if self.done else "")

    def _numbers(self) -> tuple[int, float, float, float]:
        total = max(self.total, self.done)
        pct = 100.0 * self.done / total if total else 100.0
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (total - self.done) if self.done else 0.0
        return total, pct, elapsed, eta

    def _maybe_print(self) -> None:
        if self._kind() != "lines" or not self.total:
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

    # ------------------------------------------------------------ the live status

    def _emit(self, text: str) -> None:
        if text and self._out is not None:
            self._out.write(text)
            self._out.flush()

    def _erase(self) -> None:
        if self.kind == "live":
            self._emit(self.live.erase())

    def _draw(self) -> None:
        if self._kind() == "live" and self.total:
            self._emit(self.live.draw(self.status()))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logstart(self) -> Generator[None, None, None]:
        self._erase()  # pytest may write the file's name or start a line
        try:
            return (yield)
        finally:
            self._draw()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logfinish(self) -> Generator[None, None, None]:
        self._erase()
        try:
            return (yield)
        finally:
            self._draw()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self) -> Generator[None, object, object]:
        try:
            return (yield)
        finally:
            self._erase()  # the run ends on pytest's line as pytest wrote it

    def pytest_keyboard_interrupt(self) -> None:
        self._erase()

    def pytest_internalerror(self) -> None:
        self._erase()

    # ------------------------------------------------------------ the end

    def spent_line(self) -> str:
        """What the run spent on API requests (every process), and the budget."""
        from pytest_vibecheck.report.terminal import spend_line

        return spend_line(self.guard.spend())

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
