"""The Ray executor: sandboxed test runs as Ray tasks across a cluster (optional ``ray`` extra).

``--vibe-executor ray`` connects to the cluster that ``RAY_ADDRESS`` names, or starts a local
Ray instance; ``--vibe-executor ray://HOST:PORT`` connects to a cluster's client address. Each
run is one Ray task: it runs :func:`pytest_vibecheck.execute.tests.execute` on whichever node
Ray picks, in that node's own sandbox with the same limits (the settings travel with the
task). The environment check, de-duplication and the result cache stay in the driver
(:class:`~pytest_vibecheck.execute.executor.TestService`), so results and cache entries are
the same as with the local executor.

A task whose Ray worker dies (a crashed or killed worker process, a lost node) is run again
by Ray, up to :data:`RETRIES` times (Ray's task retries, ``max_retries``; an exception raised
inside a task is not retried: the sandbox reports its own errors as results); only after the
last try does it become an infrastructure outcome (status ``error``, ``WorkerCrashedError``),
never a model failure.

Each task asks Ray for one CPU; a run expected to sleep (:class:`ExpectedTime.sleeps
<pytest_vibecheck.execute.calibrate.ExpectedTime>`) asks for a quarter of one, so sleeping
sandboxes do not hold CPUs. On every node, the execution environment (``--vibe-env``) must
exist at the same path as on the driver (``vibecheck env create`` on each node, or a shared
file system); calibration is stored where the driver's store is, when that path is writable
on the node, and is measured again otherwise.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.executor_base import Executor, executor_error

if TYPE_CHECKING:
    from pytest_vibecheck.execute.calibrate import ExpectedTime
    from pytest_vibecheck.execute.spec import Task
    from pytest_vibecheck.execute.tests import ExecResult, ExecSettings

__all__ = ["RayExecutor", "import_ray"]

#: Ray's share of a CPU asked for by a run expected to sleep.
SLEEPER_CPUS = 0.25
#: How many times Ray runs a task again when its worker dies (Ray task ``max_retries``).
RETRIES = 3


def import_ray() -> Any:
    """The ``ray`` module; raises :class:`VibecheckError` (one line) when it is not installed."""
    try:
        import ray
    except ImportError:
        raise VibecheckError(
            "the Ray executor needs Ray, which is not installed: "
            "pip install 'pytest-vibecheck[ray]' (or use --vibe-executor local)"
        ) from None
    return ray


def _execute_remote(code: str, problem: Task, settings: ExecSettings) -> ExecResult:
    from pytest_vibecheck.execute.tests import execute

    return execute(code, problem, settings)


class RayExecutor(Executor):
    """Runs each sandboxed test run as a Ray task.

    ``address``: ``ray://HOST:PORT``, or None for ``RAY_ADDRESS`` / a new local instance;
    ``retries``: runs of a task again after its worker died (default :data:`RETRIES`).
    When Ray is already initialised in this process (e.g. ``ray.init(num_cpus=2)`` in a
    script or test), that connection is used and left open by :meth:`close`. Raises
    :class:`VibecheckError` when Ray is missing or the cluster cannot be reached.
    """

    def __init__(self, address: str | None = None, retries: int = RETRIES) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise VibecheckError(f"Ray executor: retries must be an int >= 0, got {retries!r}")
        ray = import_ray()
        self.name = address or "ray"
        self._ray = ray
        self._owned = False
        if not ray.is_initialized():
            try:
                ray.init(
                    address=address,
                    ignore_reinit_error=True,
                    include_dashboard=False,
                    log_to_driver=False,
                )
            except Exception as exc:
                raise VibecheckError(
                    f"--vibe-executor {self.name}: cannot connect to Ray ({type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else ''})"
                ) from None
            self._owned = True
        self._task = ray.remote(max_retries=retries, retry_exceptions=False)(_execute_remote)

    def submit(
        self,
        code: str,
        problem: Task,
        settings: ExecSettings,
        expected: ExpectedTime | None = None,
    ) -> Future[ExecResult]:
        cpus = SLEEPER_CPUS if expected is not None and expected.sleeps else 1
        out: Future[ExecResult] = Future()
        try:
            ref = self._task.options(num_cpus=cpus).remote(code, problem, settings)
            inner: Future[ExecResult] = ref.future()
        except Exception as exc:
            out.set_result(executor_error(problem, f"ray ({self.name})", exc))
            return out

        def done(f: Future[ExecResult]) -> None:
            try:
                out.set_result(f.result())
            except Exception as exc:  # a lost node or a Ray failure: never the model's fault
                out.set_result(executor_error(problem, f"ray ({self.name})", exc))

        inner.add_done_callback(done)
        return out

    def idle(self, sleeps: bool = False) -> bool:
        return True  # Ray queues and places the tasks itself

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False
