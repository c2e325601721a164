"""Run many (code, problem) pairs in parallel sandboxes.

Each sandboxed run is its own process (forked by the sandbox's fork server, or a new
interpreter), so a pool of N threads that each wait on one sandbox keeps N runs going at
once. Works the same inside pytest-xdist workers: each worker has its own pool and fork
server; the result cache (SQLite, WAL) and the calibration store are shared safely between
them, and sandbox user ids are handed out with file locks across processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pytest_vibecheck.execute.cache import ExecCache
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings, run_tests
from pytest_vibecheck.suites.problem import Problem


def default_workers() -> int:
    """CPU count divided by the number of pytest-xdist workers (at least 1).

    Reads ``PYTEST_XDIST_WORKER_COUNT`` (set by xdist in its workers), so ``-n 2`` on a
    4-core machine gives each worker 2 sandboxes at a time.
    """
    cpus = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
    try:
        xdist = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    except ValueError:
        xdist = 1
    return max(1, cpus // xdist)


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
    items: Iterable[tuple[str, Problem]],
    settings: ExecSettings | None = None,
    cache: ExecCache | None = None,
    *,
    workers: int | None = None,
    on_result: Callable[[int, ExecResult], None] | None = None,
) -> list[ExecResult]:
    """Run every ``(code, problem)`` pair; results in input order.

    ``workers``: sandboxes at a time (default :func:`default_workers`). Cache hits are
    answered without using a worker. ``on_result(index, result)`` is called as each result
    arrives (from worker threads). Never raises for what the code does; a failure of the
    runner itself for one item becomes an ``error`` result for that item.
    """
    pairs: Sequence[tuple[str, Problem]] = list(items)
    settings = settings or ExecSettings()
    n = workers or default_workers()
    results: list[ExecResult | None] = [None] * len(pairs)

    def one(i: int) -> ExecResult:
        code, problem = pairs[i]
        try:
            res = run_tests(code, problem, settings, cache)
        except Exception as exc:
            res = ExecResult(
                status="error",
                message=f"runner: {type(exc).__name__}: {exc}",
                task_id=problem.task_id,
            )
        results[i] = res
        if on_result is not None:
            on_result(i, res)
        return res

    if n <= 1 or len(pairs) <= 1:
        for i in range(len(pairs)):
            one(i)
    else:
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="vibecheck-sandbox") as pool:
            list(pool.map(one, range(len(pairs))))
    return [r for r in results if r is not None]


def summarize(results: Sequence[ExecResult], wall_s: float) -> RunStats:
    """Counts by status and cache hits for ``results`` produced in ``wall_s`` seconds."""
    by: dict[str, int] = {}
    for r in results:
        by[r.status] = by.get(r.status, 0) + 1
    return RunStats(len(results), wall_s, by, sum(1 for r in results if r.cached))


def timed_run_many(
    items: Iterable[tuple[str, Problem]],
    settings: ExecSettings | None = None,
    cache: ExecCache | None = None,
    *,
    workers: int | None = None,
) -> tuple[list[ExecResult], RunStats]:
    """:func:`run_many` plus its :class:`RunStats`."""
    start = time.monotonic()
    res = run_many(items, settings, cache, workers=workers)
    return res, summarize(res, time.monotonic() - start)
