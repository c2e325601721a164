"""Per-task time limits calibrated on this machine.

``limit = max(floor_s, factor x t_ref)`` where ``t_ref`` is the time the problem's reference
(canonical) solution takes to pass its tests in the sandbox on this machine (the harness's
``test_time_s``: candidate import plus tests, without interpreter start). This is the rule
of EvalPlus and BigCodeBench (``--min-time-limit``, ``--gt-time-limit-factor``), which
avoids limits that depend on the host's speed (evalplus issue #5).

Measurements are cached in SQLite (WAL) keyed by *machine* (host name, CPU model, CPU
count, Python version) and *task* (suite, task id, and a hash of the reference solution and
tests), so changing the data or the machine measures again. ``floor_s`` and ``factor`` are
applied when reading, so changing them needs no new measurement. A reference solution that
does not pass (e.g. BigCodeBench/541 here) gives no calibration: the kind's default limit is
used and the reason recorded.

Calibration is *lazy* (:func:`pytest_vibecheck.execute.tests.run_tests`): a candidate runs
under ``floor_s`` first, and the reference is timed only when the candidate exceeds it. Since
every calibrated limit is at least ``floor_s``, a candidate that ends within the floor gets the
same verdict as under its calibrated limit, so no reference needs timing for it.

A candidate that ends by itself past the floor, after ``t`` seconds, needs less than the
reference's time: its result stands exactly when ``t <= limit``, which holds whenever the
reference runs for at least ``t / factor`` (and ``t`` is within the default limit that a failing
reference would give). :meth:`Calibrator.calibrate_past` times the reference only that far; a
reference still running then is stopped and the bound kept (``reference_bounds``), so a long
reference is never timed to its end for a candidate that took a fraction of its limit.

Besides reference times the store keeps the CPU seconds of each reference run and the last
observed wall and CPU seconds of any candidate per task (``task_times``): the expected
durations the schedulers use (:mod:`pytest_vibecheck.execute.schedule`) and from which a
candidate's first run past the floor is limited (:func:`pytest_vibecheck.execute.tests.execute`),
never the limit of a verdict.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from pytest_vibecheck._store import SQLiteStore
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.cache import test_spec_dict
from pytest_vibecheck.execute.spec import Task

if TYPE_CHECKING:
    from pytest_vibecheck.execute.tests import ExecResult, ExecSettings

DEFAULT_CALIBRATION_PATH = Path(".vibecheck") / "calibration.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reference_times (
    machine TEXT NOT NULL,
    task TEXT NOT NULL,
    status TEXT NOT NULL,
    seconds REAL,
    message TEXT NOT NULL,
    measured REAL NOT NULL,
    PRIMARY KEY (machine, task)
);
CREATE TABLE IF NOT EXISTS reference_bounds (
    machine TEXT NOT NULL,
    task TEXT NOT NULL,
    seconds REAL NOT NULL,
    measured REAL NOT NULL,
    PRIMARY KEY (machine, task)
);
CREATE TABLE IF NOT EXISTS task_times (
    machine TEXT NOT NULL,
    task TEXT NOT NULL,
    wall_s REAL NOT NULL,
    cpu_s REAL,
    measured REAL NOT NULL,
    PRIMARY KEY (machine, task)
)
"""


@dataclass(frozen=True)
class ExpectedTime:
    """How long a task's tests are expected to take on this machine: ``wall_s`` seconds of wall
    clock, ``cpu_s`` CPU seconds (None when unknown); ``source`` is ``reference``,
    ``observed`` (the last candidate run) or ``suite`` (shipped with the suite, measured
    elsewhere: :mod:`pytest_vibecheck.execute.durations`)."""

    wall_s: float
    cpu_s: float | None
    source: str

    @property
    def sleeps(self) -> bool:
        """True when the run mostly waits: over 1 s long and CPU seconds under
        :data:`SLEEPER_CPU_FRACTION` of the wall clock. Such a run does not need a CPU of its
        own. The fraction is low because a CPU-bound run on a loaded machine also gets little
        CPU per second of wall clock."""
        return is_sleeper(self.wall_s, self.cpu_s)


#: CPU seconds per wall-clock second under which a run counts as sleeping (the sleep-bound
#: BigCodeBench references use under 0.2%; a busy loop on a machine loaded 11x still gets 9%).
SLEEPER_CPU_FRACTION = 0.05


def is_sleeper(wall_s: float | None, cpu_s: float | None) -> bool:
    """See :attr:`ExpectedTime.sleeps` (False when either is unknown)."""
    return (
        wall_s is not None
        and cpu_s is not None
        and wall_s > 1.0
        and cpu_s < SLEEPER_CPU_FRACTION * wall_s
    )


def _rebuild(
    path: str, floor_s: float, factor: float, reference_limit_s: float, environment: str
) -> Calibrator:
    return Calibrator(
        path,
        floor_s=floor_s,
        factor=factor,
        reference_limit_s=reference_limit_s,
        environment=environment,
    )


class CalibrationWarning(UserWarning):
    """The calibration store could not be read or written."""


@lru_cache(maxsize=1)
def machine_id() -> str:
    """Short stable id of this machine: sha256 of host, CPU model, CPU count, Python version."""
    cpu = platform.processor()
    with contextlib.suppress(OSError):
        for line in (
            Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
        ):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    parts = [
        platform.node(),
        platform.machine(),
        cpu,
        str(os.cpu_count()),
        platform.python_version(),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def task_key(problem: Task) -> str:
    """``suite/task_id@hash`` where the hash covers the reference solution and the tests."""
    blob = json.dumps(
        {"solution": problem.canonical_solution, "test": test_spec_dict(problem.test)},
        sort_keys=True,
    )
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
    return f"{problem.suite}/{problem.task_id}@{digest}"


@dataclass(frozen=True)
class Calibration:
    """A problem's calibrated time limit and where it came from.

    ``source``: ``calibrated`` (from ``reference_s``), ``default`` (no usable reference:
    ``reason`` says why) or ``fixed`` (set explicitly).
    """

    limit_s: float
    source: str
    reference_s: float | None = None
    reason: str = ""


#: Seconds a reference solution may run while it is measured.
DEFAULT_REFERENCE_LIMIT_S = 300.0


class CalibrationStoreError(VibecheckError):
    """The calibration store cannot be used (the run goes on with a warning, uncalibrated)."""


class Calibrator(SQLiteStore):
    """Calibrated time limits, measured once per (machine, task) and stored in ``path``.

    ``floor_s`` (seconds) and ``factor`` (dimensionless) define the limit; ``reference_limit_s``
    is the generous limit used while measuring a reference solution.
    Raises :class:`VibecheckError` for non-positive settings.
    """

    what = "calibration store"
    error = CalibrationStoreError
    hint = "move it away or delete it (it only holds measured reference times)"

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_CALIBRATION_PATH,
        *,
        floor_s: float = 5.0,
        factor: float = 4.0,
        reference_limit_s: float = DEFAULT_REFERENCE_LIMIT_S,
        environment: str = "",
    ) -> None:
        if not (floor_s > 0 and factor > 0 and reference_limit_s > 0):
            raise VibecheckError(
                f"calibration: floor_s, factor and reference_limit_s must be > 0, got "
                f"{floor_s!r}, {factor!r}, {reference_limit_s!r}"
            )
        super().__init__(path)
        self.floor_s = float(floor_s)
        self.factor = float(factor)
        self.reference_limit_s = float(reference_limit_s)
        #: the execution environment's id (:mod:`pytest_vibecheck.execute.environments`): its
        #: libraries change reference times and verdicts, so it is part of the machine key
        self.environment = environment
        self.machine = machine_id() + (f"+{environment}" if environment else "")
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.measurements = 0
        #: expected durations known before anything ran here (a suite's shipped
        #: ``durations.json``: :mod:`pytest_vibecheck.execute.durations`), by task key; what this
        #: machine measured overrides them; scheduling and first runs only, never a verdict's limit
        self.prior: dict[str, ExpectedTime] = {}
        self._unusable = False

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Sent to other processes (a Ray task) as its settings: same store path (absolute),
        # same rule; connections and locks are per process.
        return (
            _rebuild,
            (
                str(self.path.absolute()),
                self.floor_s,
                self.factor,
                self.reference_limit_s,
                self.environment,
            ),
        )

    # -- storage ------------------------------------------------------------

    def _warn(self, exc: BaseException) -> None:
        """One :class:`CalibrationWarning` for a failed read or write, naming the file once
        (a :class:`CalibrationStoreError` already names it); an unusable file warns once, then
        the store is skipped as if empty."""
        if isinstance(exc, CalibrationStoreError):
            if self._unusable:
                return
            self._unusable = True
            text = str(exc)
        else:
            text = f"{self.what} {self.path}: {exc}"
        warnings.warn(text, CalibrationWarning, stacklevel=3)

    def init_schema(self, conn: sqlite3.Connection) -> None:
        """Create the tables if absent (and the CPU column of stores written before it)."""
        conn.executescript(_SCHEMA)
        cols = {row[1] for row in conn.execute("PRAGMA table_info(reference_times)")}
        if "cpu_s" not in cols:
            with contextlib.suppress(sqlite3.OperationalError):  # another process added it
                conn.execute("ALTER TABLE reference_times ADD COLUMN cpu_s REAL")

    def stored(self, problem: Task) -> tuple[str, float | None, str] | None:
        """``(status, seconds, message)`` measured earlier on this machine, or None."""
        try:
            row = (
                self.connection()
                .execute(
                    "SELECT status, seconds, message FROM reference_times WHERE machine = ? AND task = ?",
                    (self.machine, task_key(problem)),
                )
                .fetchone()
            )
        except (sqlite3.Error, CalibrationStoreError) as exc:
            self._warn(exc)
            return None
        return None if row is None else (str(row[0]), row[1], str(row[2]))

    def store(
        self,
        problem: Task,
        status: str,
        seconds: float | None,
        message: str,
        cpu_s: float | None = None,
    ) -> None:
        """Record a reference measurement (overwrites an earlier one)."""
        try:
            self.connection().execute(
                "INSERT OR REPLACE INTO reference_times "
                "(machine, task, status, seconds, message, measured, cpu_s) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self.machine, task_key(problem), status, seconds, message[:500], time.time(), cpu_s),
            )
        except (sqlite3.Error, CalibrationStoreError) as exc:
            self._warn(exc)

    def observe(self, problem: Task, wall_s: float, cpu_s: float | None) -> None:
        """Record how long a candidate's tests took (seconds), for scheduling only."""
        try:
            self.connection().execute(
                "INSERT OR REPLACE INTO task_times VALUES (?, ?, ?, ?, ?)",
                (self.machine, task_key(problem), wall_s, cpu_s, time.time()),
            )
        except (sqlite3.Error, CalibrationStoreError) as exc:
            self._warn(exc)

    def snapshot(self) -> dict[str, ExpectedTime]:
        """Every expected duration for this machine, by :func:`task_key`: the reference's time
        when it passed, else the last observed candidate's, else the :attr:`prior` (shipped
        with the suite). One read of the store (a failure warns and returns the prior)."""
        out: dict[str, ExpectedTime] = dict(self.prior)
        try:
            conn = self.connection()
            for task, wall, cpu in conn.execute(
                "SELECT task, wall_s, cpu_s FROM task_times WHERE machine = ?", (self.machine,)
            ):
                out[str(task)] = ExpectedTime(float(wall), cpu, "observed")
            for task, status, seconds, cpu in conn.execute(
                "SELECT task, status, seconds, cpu_s FROM reference_times WHERE machine = ?",
                (self.machine,),
            ):
                if status == "passed" and seconds is not None:
                    out[str(task)] = ExpectedTime(float(seconds), cpu, "reference")
        except (sqlite3.Error, CalibrationStoreError) as exc:
            self._warn(exc)
        return out

    def expected(self, problem: Task) -> ExpectedTime | None:
        """``problem``'s expected duration from one read of its own rows (see
        :meth:`snapshot` for the sources), or None when nothing is known."""
        key = task_key(problem)
        try:
            conn = self.connection()
            ref = conn.execute(
                "SELECT status, seconds, cpu_s FROM reference_times WHERE machine = ? AND task = ?",
                (self.machine, key),
            ).fetchone()
            if ref is not None and ref[0] == "passed" and ref[1] is not None:
                return ExpectedTime(float(ref[1]), ref[2], "reference")
            seen = conn.execute(
                "SELECT wall_s, cpu_s FROM task_times WHERE machine = ? AND task = ?",
                (self.machine, key),
            ).fetchone()
            if seen is not None:
                return ExpectedTime(float(seen[0]), seen[1], "observed")
        except (sqlite3.Error, CalibrationStoreError) as exc:
            self._warn(exc)
        return self.prior.get(key)

    def expected_times(self, problems: Iterable[Task]) -> dict[str, ExpectedTime]:
        """Expected durations by task id for ``problems`` (tasks never run are left out)."""
        snap = self.snapshot()
        out: dict[str, ExpectedTime] = {}
        for p in problems:
            found = snap.get(task_key(p))
            if found is not None:
                out[p.task_id] = found
        return out

    # -- limits -------------------------------------------------------------

    def limit_from(self, reference_s: float) -> float:
        """``max(floor_s, factor x reference_s)`` in seconds."""
        return max(self.floor_s, self.factor * reference_s)

    def known(self, problem: Task, default_s: float) -> Calibration | None:
        """The limit from an earlier measurement, or None when the reference was never timed
        on this machine (nothing is measured here)."""
        if not problem.canonical_solution:
            return Calibration(default_s, "default", reason="no reference solution")
        found = self.stored(problem)
        return None if found is None else self._from(found, default_s)

    def _from(self, found: tuple[str, float | None, str], default_s: float) -> Calibration:
        status, seconds, message = found
        if status == "passed" and seconds is not None:
            return Calibration(self.limit_from(seconds), "calibrated", reference_s=seconds)
        return Calibration(
            default_s, "default", reason=f"reference solution {status}: {message}"[:300]
        )

    def calibrate(
        self,
        problem: Task,
        default_s: float,
        settings: ExecSettings,
        *,
        run: Callable[[str, Task, ExecSettings], ExecResult],
    ) -> Calibration:
        """The time limit for ``problem``, measuring its reference solution if needed, with
        ``run(code, problem, settings)`` (the test runner's own, given by the caller:
        :func:`pytest_vibecheck.execute.tests.time_limit_for`) under ``settings`` with this
        calibrator's reference limit and no calibrator.

        Without a reference solution, or when it does not pass, returns ``default_s`` with
        ``source="default"`` and the reason. Environment errors (a missing library) are not
        stored, so installing the library later calibrates the task.
        """
        if not problem.canonical_solution:
            return Calibration(default_s, "default", reason="no reference solution")
        found = self.stored(problem)
        if found is None:
            with self._lock_for(task_key(problem)):
                found = self.stored(problem)
                if found is None:
                    found = self._measure(problem, settings, run)
        return self._from(found, default_s)

    def bound(self, problem: Task) -> float | None:
        """Seconds the reference is known to run at least (stopped there by
        :meth:`calibrate_past`, not timed to its end) on this machine, or None."""
        try:
            row = (
                self.connection()
                .execute(
                    "SELECT seconds FROM reference_bounds WHERE machine = ? AND task = ?",
                    (self.machine, task_key(problem)),
                )
                .fetchone()
            )
        except (sqlite3.Error, CalibrationStoreError) as exc:
            self._warn(exc)
            return None
        return None if row is None else float(row[0])

    def store_bound(self, problem: Task, seconds: float) -> None:
        """Record that the reference runs for at least ``seconds`` (a larger bound replaces a
        smaller one, never the other way)."""
        try:
            self.connection().execute(
                "INSERT INTO reference_bounds VALUES (?, ?, ?, ?) "
                "ON CONFLICT (machine, task) DO UPDATE SET seconds = MAX(seconds, excluded.seconds), "
                "measured = excluded.measured",
                (self.machine, task_key(problem), seconds, time.time()),
            )
        except (sqlite3.Error, CalibrationStoreError) as exc:
            self._warn(exc)

    def calibrate_past(
        self,
        problem: Task,
        default_s: float,
        settings: ExecSettings,
        *,
        run: Callable[[str, Task, ExecSettings], ExecResult],
        needed_s: float,
    ) -> Calibration | None:
        """The limit for ``problem`` as far as it decides whether a run of ``needed_s`` seconds
        is within it: None when the reference is known to run for at least ``needed_s /
        factor`` seconds, so that the limit is at least ``needed_s`` whatever the reference's
        full time or status; else the :class:`Calibration` (as :meth:`calibrate`).

        The reference is timed under a limit of ``needed_s / factor`` seconds only: stopped
        there, that bound is stored (:meth:`bound`) instead of a time. When ``needed_s`` is over
        ``default_s`` (the limit a failing reference gives) or the bound would be over the
        reference limit, the reference is timed to its end, as by :meth:`calibrate`.
        """
        if not problem.canonical_solution:
            return Calibration(default_s, "default", reason="no reference solution")
        bound = needed_s / self.factor
        if needed_s > default_s or bound >= self.reference_limit_s:
            return self.calibrate(problem, default_s, settings, run=run)
        with self._lock_for(task_key(problem)):
            found = self.stored(problem)
            if found is not None:
                return self._from(found, default_s)
            known = self.bound(problem)
            if known is not None and known >= bound:
                return None
            ran = self._measure(problem, settings, run, limit_s=bound)
            if ran is None:
                self.store_bound(problem, bound)
                return None
            return self._from(ran, default_s)

    def _lock_for(self, key: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    @overload
    def _measure(
        self,
        problem: Task,
        settings: ExecSettings,
        run: Callable[[str, Task, ExecSettings], ExecResult],
    ) -> tuple[str, float | None, str]: ...

    @overload
    def _measure(
        self,
        problem: Task,
        settings: ExecSettings,
        run: Callable[[str, Task, ExecSettings], ExecResult],
        *,
        limit_s: float,
    ) -> tuple[str, float | None, str] | None: ...

    def _measure(
        self,
        problem: Task,
        settings: ExecSettings,
        run: Callable[[str, Task, ExecSettings], ExecResult],
        *,
        limit_s: float | None = None,
    ) -> tuple[str, float | None, str] | None:
        """Time the reference under ``limit_s`` (default: the reference limit) and store it;
        with ``limit_s``, None (nothing stored) when it was still running at that limit (a
        timeout, or its test source still loading)."""
        from pytest_vibecheck.execute.verdict import LOAD_TIMEOUT

        limit = self.reference_limit_s if limit_s is None else limit_s
        ref_settings = settings.replace(time_limit_s=limit, calibrator=None)
        assert problem.canonical_solution is not None
        result = run(problem.canonical_solution, problem, ref_settings)
        self.measurements += 1
        stopped = result.status == "timeout" or (
            result.status == "error" and result.message == LOAD_TIMEOUT
        )
        if limit_s is not None and stopped:
            return None
        seconds = result.test_time_s if result.test_time_s is not None else result.duration_s
        found = (result.status, seconds, result.message)
        if result.status in ("passed", "failed", "timeout"):
            self.store(problem, *found, cpu_s=result.cpu_time_s)
        return found
