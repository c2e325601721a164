"""Run many (code, problem) pairs in parallel sandboxes.

Each sandboxed run is its own process (forked by the sandbox's fork server, or a new
interpreter), so a pool of N threads that each wait on one sandbox keeps N runs going at
once. Works the same inside pytest-xdist workers: each worker has its own pool and fork
server; the result cache (SQLite, WAL) and the calibration store are shared safely between
them, and sandbox user ids are handed out with file locks across processes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_vibecheck.execute.cache import ExecCache
from pytest_vibecheck.execute.executor import Executor, LocalExecutor, TestService, cpu_share
from pytest_vibecheck.execute.spec import Task
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings

if TYPE_CHECKING:
    from pytest_vibecheck.execute.calibrate import ExpectedTime


def default_workers() -> int:
    """CPU count divided by the number of pytest-xdist workers (at least 1).

    Reads ``PYTEST_XDIST_WORKER_COUNT`` (set by xdist in its workers), so ``-n 2`` on a
    4-core machine gives each worker 2 sandboxes at a time
    (:func:`pytest_vibecheck.execute.executor.cpu_share`).
    """
    return cpu_share()


@dataclass(frozen=True)
class RunStats:
    """Counts of one :func:`run_many` call: ``wall_s`` seconds, results by status, cache hits."""

    total: int
    wall_s: float
    by_status: dict[str, int]
    cached: int

    @property
    def tasks_per_s(self) -> float:
        """Throughput in tasks per second (0 for an empty run)."""
        return self.total / self.wall_s if self.wall_s > 0 else 0.0


def run_many(
    items: Iterable[tuple[str, Task]],
    settings: ExecSettings | None = None,
    cache: ExecCache | None = None,
    *,
    workers: int | None = None,
    on_result: Callable[[int, ExecResult], None] | None = None,
    executor: Executor | None = None,
    shipped: Callable[[Iterable[Task]], Mapping[str, ExpectedTime]] | None = None,
) -> list[ExecResult]:
    """Run every ``(code, problem)`` pair; results in input order.

    ``executor``: where the runs happen (default: a
    :class:`~pytest_vibecheck.execute.executor.LocalExecutor` with ``workers`` CPU slots,
    default :func:`default_workers`, closed afterwards). ``shipped``: the expected durations
    the problems' suites ship, for the schedule when the settings have no calibrator
    (:func:`pytest_vibecheck.suites.durations.expected_for`). Cache hits and skipped tasks use
    no sandbox. ``on_result(index, result)`` is called for each result, in input order. Never
    raises for what the code does; a failure of the runner itself for one item becomes an
    ``error`` result for that item.
    """
    pairs: Sequence[tuple[str, Task]] = list(items)
    settings = settings or ExecSettings()
    own = executor is None
    ex = executor if executor is not None else LocalExecutor(workers or default_workers())
    try:
        return TestService(ex, settings, cache, shipped=shipped).run(pairs, on_result)
    finally:
        if own:
            ex.close()


def summarize(results: Sequence[ExecResult], wall_s: float) -> RunStats:
    """Counts by status and cache hits for ``results`` produced in ``wall_s`` seconds."""
    by: dict[str, int] = {}
    for r in results:
        by[r.status] = by.get(r.status, 0) + 1
    return RunStats(len(results), wall_s, by, sum(1 for r in results if r.cached))


def timed_run_many(
    items: Iterable[tuple[str, Task]],
    settings: ExecSettings | None = None,
    cache: ExecCache | None = None,
    *,
    workers: int | None = None,
    executor: Executor | None = None,
    shipped: Callable[[Iterable[Task]], Mapping[str, ExpectedTime]] | None = None,
) -> tuple[list[ExecResult], RunStats]:
    """:func:`run_many` plus its :class:`RunStats`."""
    start = time.monotonic()
    res = run_many(items, settings, cache, workers=workers, executor=executor, shipped=shipped)
    return res, summarize(res, time.monotonic() - start)
