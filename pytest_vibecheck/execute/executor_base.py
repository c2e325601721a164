"""What every executor is (:class:`Executor`) and the result of an executor's own failure
(:func:`executor_error`), apart from the executors themselves so the local one
(:mod:`pytest_vibecheck.execute.executor`) and Ray's (:mod:`pytest_vibecheck.execute.ray_executor`)
import neither each other nor a cycle."""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING

from pytest_vibecheck.execute.tests import ExecResult

if TYPE_CHECKING:
    from pytest_vibecheck.execute.calibrate import ExpectedTime
    from pytest_vibecheck.execute.spec import Task
    from pytest_vibecheck.execute.tests import ExecSettings

__all__ = ["Executor", "executor_error"]


class Executor:
    """Runs sandboxed test runs; subclasses implement :meth:`submit`.

    ``name`` is the spec it was made from (``local``, ``ray``, ``ray://host:10001``).
    """

    name = "executor"

    def submit(
        self,
        code: str,
        problem: Task,
        settings: ExecSettings,
        expected: ExpectedTime | None = None,
    ) -> Future[ExecResult]:
        """Start running ``problem``'s tests against ``code``; the future's result is the
        :class:`~pytest_vibecheck.execute.tests.ExecResult` (an executor failure is an
        ``error`` result, never an exception). ``expected``: the run's expected duration,
        for scheduling only."""
        raise NotImplementedError

    def idle(self, sleeps: bool = False) -> bool:
        """True when a new run would start at once (nothing queued, a slot free); with
        ``sleeps``, a run expected to sleep."""
        return True

    def close(self) -> None:
        """Stop accepting runs and release resources (idempotent)."""


def executor_error(problem: Task, where: str, exc: BaseException) -> ExecResult:
    return ExecResult(
        status="error",
        message=f"{where}: {type(exc).__name__}: {exc}",
        task_id=problem.task_id,
    )


