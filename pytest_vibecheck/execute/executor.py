"""Executors: where sandboxed test runs happen (this machine, or a Ray cluster).

An :class:`Executor` runs :func:`pytest_vibecheck.execute.tests.execute` (the sandboxed part
of a test run: no cache, no environment check) and hands back a future. Everything around it
(the environment check, the result cache, de-duplication) stays in the caller's process in
:class:`TestService`, so results, cache entries and metrics are the same whichever executor
ran the code.

- :class:`LocalExecutor` (``local``, the default): sandboxes on this machine, scheduled by
  expected duration (:mod:`pytest_vibecheck.execute.schedule`): longest first, CPU-bound runs
  limited to this process's share of the CPUs, and runs known to mostly sleep (a reference or
  an earlier run used under half a CPU) admitted beyond it, so a sleeping sandbox never holds
  a CPU slot.
- :class:`~pytest_vibecheck.execute.ray_executor.RayExecutor` (``ray`` or
  ``ray://ADDRESS``): each run is a Ray task on some node of a cluster, in that node's own
  sandbox with the same limits (the optional ``ray`` extra).

:func:`make_executor` builds one from its spec (``--vibe-executor``, ``vibecheck exec
--executor``, the reward API's ``executor=``).
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute import slots
from pytest_vibecheck.execute.executor_base import Executor, executor_error

if TYPE_CHECKING:
    from pytest_vibecheck.execute.cache import ExecCache
    from pytest_vibecheck.execute.calibrate import ExpectedTime
    from pytest_vibecheck.execute.spec import Task
    from pytest_vibecheck.execute.tests import ExecResult, ExecSettings

__all__ = [
    "EXECUTOR_KINDS",
    "Executor",
    "LocalExecutor",
    "TestService",
    "cpu_share",
    "make_executor",
]

#: Executor specs understood by :func:`make_executor` (``ray`` also as ``ray://HOST:PORT``).
EXECUTOR_KINDS: tuple[str, ...] = ("local", "ray")


def cpu_share() -> int:
    """This process's share of the CPUs: usable CPUs divided by the pytest-xdist workers
    (``PYTEST_XDIST_WORKER_COUNT``), at least 1."""
    cpus = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
    try:
        xdist = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    except ValueError:
        xdist = 1
    return max(1, cpus // xdist)


class LocalExecutor(Executor):
    """Sandboxes on this machine, longest expected run first.

    ``slots``: CPU-bound runs at a time (default :func:`cpu_share`). ``sleeper_slots``: extra
    runs at a time for runs expected to sleep (default ``4 x slots``): they wait on timers,
    subprocesses or sockets and leave the CPU to others. A run with no expected duration counts
    as CPU-bound. Thread-safe.
    """

    name = "local"

    def __init__(self, slots: int | None = None, sleeper_slots: int | None = None) -> None:
        self.slots = max(1, slots or cpu_share())
        self.sleeper_slots = max(0, self.slots * 4 if sleeper_slots is None else sleeper_slots)
        self._lock = threading.Lock()
        self._queue: list[tuple[float, int, Callable[[], None], bool]] = []
        self._order = itertools.count()
        self._cpu = 0
        self._sleepers = 0
        self._closed = False

    def submit(
        self,
        code: str,
        problem: Task,
        settings: ExecSettings,
        expected: ExpectedTime | None = None,
    ) -> Future[ExecResult]:
        from pytest_vibecheck.execute.tests import execute

        fut: Future[ExecResult] = Future()

        def job() -> None:
            if not fut.set_running_or_notify_cancel():
                return
            try:
                fut.set_result(execute(code, problem, settings))
            except Exception as exc:  # a runner bug for this run is an error result
                fut.set_result(executor_error(problem, "runner", exc))

        sleeps = expected is not None and expected.sleeps and self.sleeper_slots > 0
        wall = expected.wall_s if expected is not None else 0.0
        with self._lock:
            if self._closed:
                raise VibecheckError("the local executor is closed")
            heapq.heappush(self._queue, (-wall, next(self._order), job, sleeps))
        self._pump()
        return fut

    def idle(self, sleeps: bool = False) -> bool:
        with self._lock:
            if sleeps and self._sleepers < self.sleeper_slots:
                return True
            return not self._queue and self._cpu < self.slots

    def _pump(self) -> None:
        starts: list[tuple[Callable[[], None], bool]] = []
        with self._lock:
            kept: list[tuple[float, int, Callable[[], None], bool]] = []
            while self._queue:
                entry = heapq.heappop(self._queue)
                sleeps = entry[3]
                if sleeps and self._sleepers < self.sleeper_slots:
                    self._sleepers += 1
                elif not sleeps and self._cpu < self.slots:
                    self._cpu += 1
                elif sleeps and self._cpu < self.slots:  # sleeper slots full: take a CPU one
                    self._cpu += 1
                    sleeps = False
                else:
                    kept.append(entry)
                    if self._cpu >= self.slots and self._sleepers >= self.sleeper_slots:
                        break
                    continue
                starts.append((entry[2], sleeps))
            for entry in kept:
                heapq.heappush(self._queue, entry)
        for job, sleeps in starts:
            threading.Thread(
                target=self._run, args=(job, sleeps), name="vibecheck-sandbox", daemon=True
            ).start()

    def _run(self, job: Callable[[], None], sleeps: bool) -> None:
        state = {"sleeps": sleeps}

        def release() -> None:
            with self._lock:
                if state["sleeps"] or self._sleepers >= self.sleeper_slots:
                    return
                state["sleeps"] = True
                self._cpu -= 1
                self._sleepers += 1
            self._pump()

        slots.current.release = None if sleeps else release
        try:
            job()
        finally:
            slots.current.release = None
            with self._lock:
                if state["sleeps"]:
                    self._sleepers -= 1
                else:
                    self._cpu -= 1
            self._pump()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pending, self._queue = self._queue, []
        for _wall, _n, job, _sleeps in pending:  # queued runs still finish (in this thread)
            job()


def make_executor(spec: str | None = None, *, slots: int | None = None) -> Executor:
    """The executor for ``spec``: ``local`` (default, also for None or empty), ``ray`` (a
    local Ray instance, or the cluster ``RAY_ADDRESS`` names) or ``ray://HOST:PORT`` (a Ray
    cluster's client address). ``slots``: local CPU-bound runs at a time.

    Raises :class:`VibecheckError` for an unknown spec, or when Ray is asked for and not
    installed (one line naming the ``ray`` extra).
    """
    text = (spec or "local").strip()
    if text == "local":
        return LocalExecutor(slots)
    if text == "ray" or text.startswith("ray://"):
        from pytest_vibecheck.execute.ray_executor import RayExecutor

        return RayExecutor(None if text == "ray" else text)
    raise VibecheckError(
        f"unknown executor {text!r}; use 'local', 'ray' or 'ray://HOST:PORT'"
    )


def _expected_s(expected: ExpectedTime | None) -> float:
    from pytest_vibecheck.execute.schedule import UNKNOWN_S

    return expected.wall_s if expected is not None else UNKNOWN_S


class TestService:
    """Test runs through an executor with the environment check, de-duplication and the result
    cache kept in this process (so every executor gives the same results and cache entries).

    ``expected``: expected durations by task id (for the executor's scheduling), read from the
    settings' calibrator when not given.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        executor: Executor,
        settings: ExecSettings,
        cache: ExecCache | None = None,
        expected: Mapping[str, ExpectedTime] | None = None,
        shipped: Callable[[Iterable[Task]], Mapping[str, ExpectedTime]] | None = None,
    ) -> None:
        self.shipped = shipped
        self.executor = executor
        self.settings = settings
        self.cache = cache
        self.expected: dict[str, ExpectedTime] = dict(expected or {})
        self._looked: set[str] = set(self.expected)
        self._inflight: dict[str, Future[ExecResult]] = {}
        self._lock = threading.Lock()

    def learn(self, problems: Iterable[Task]) -> None:
        """Read the expected durations of ``problems`` (one query for those not looked up
        before): from the settings' calibrator, else ``shipped(problems)`` (the durations
        their suites ship, given by the caller: the suites layer knows where suites live,
        :func:`pytest_vibecheck.suites.durations.expected_for`)."""
        todo = [p for p in problems if p.task_id not in self._looked]
        if not todo:
            return
        self._looked.update(p.task_id for p in todo)
        cal = self.settings.calibrator
        if cal is not None:
            self.expected.update(cal.expected_times(todo))
        elif self.shipped is not None:
            self.expected.update(self.shipped(todo))

    def sleeps(self, problem: Task) -> bool:
        """True when ``problem``'s run is expected to mostly sleep (see :meth:`learn`)."""
        expected = self.expected.get(problem.task_id)
        return expected is not None and expected.sleeps

    def submit(self, code: str, problem: Task) -> Future[ExecResult]:
        """A future for the result of ``code`` on ``problem``: done at once for a skipped task
        or a cache hit; identical runs in flight share one execution."""
        from pytest_vibecheck.execute.tests import (
            cached_result,
            check_runnable,
            result_key,
            store_result,
        )

        done: Future[ExecResult] = Future()
        try:
            early = check_runnable(problem, self.settings, code)
            if early is None:
                key = result_key(code, problem, self.settings)
                early = cached_result(self.cache, key, problem)
        except VibecheckError:
            raise
        except Exception as exc:
            early = executor_error(problem, "runner", exc)
        if early is not None:
            done.set_result(early)
            return done
        with self._lock:
            running = self._inflight.get(key)
            if running is not None:
                return running
            out: Future[ExecResult] = Future()
            self._inflight[key] = out
        expected = self.expected.get(problem.task_id)
        try:
            fut = self.executor.submit(code, problem, self.settings, expected)
        except Exception as exc:
            with self._lock:
                self._inflight.pop(key, None)
            out.set_result(executor_error(problem, f"executor {self.executor.name}", exc))
            return out

        def finished(f: Future[ExecResult]) -> None:
            result = f.result()
            store_result(self.cache, key, result)  # before anyone sees the result
            with self._lock:
                self._inflight.pop(key, None)
            out.set_result(result)

        fut.add_done_callback(finished)
        return out

    def run(
        self,
        pairs: Sequence[tuple[str, Task]],
        on_result: Callable[[int, ExecResult], None] | None = None,
    ) -> list[ExecResult]:
        """Run every ``(code, problem)`` pair, started longest first (expected durations:
        :meth:`learn`); results in input order, ``on_result`` called in input order."""
        self.learn(p for _c, p in pairs)
        # longest first (by expected duration; unknown ones as UNKNOWN_S): a long run started
        # last would keep one slot busy after every other has finished
        expected = self.expected
        order = sorted(range(len(pairs)), key=lambda i: -_expected_s(expected.get(pairs[i][1].task_id)))
        started: dict[int, Future[ExecResult]] = {}
        for i in order:
            started[i] = self.submit(*pairs[i])
        futures = [started[i] for i in range(len(pairs))]
        out: list[ExecResult] = []
        for i, fut in enumerate(futures):
            res = fut.result()
            if on_result is not None:
                on_result(i, res)
            out.append(res)
        return out
