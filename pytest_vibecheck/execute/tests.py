"""Run a problem's tests against a candidate program in the sandbox.

:func:`run_tests` is the one entry point: ``run_tests(code, problem) -> ExecResult``.

Outcomes (:attr:`ExecResult.status`):

- ``passed``: every test passed;
- ``failed``: a test failed or raised, the candidate does not compile or fails to import
  (``failed_tests`` names the tests, e.g. ``test_case_1``, ``case 2`` or ``<import>``;
  ``message`` holds a short traceback);
- ``timeout``: the time limit (calibrated per task, :mod:`pytest_vibecheck.execute.calibrate`) or
  the sandbox's wall clock or CPU limit was hit;
- ``error``: the harness or the sandbox failed, or the environment lacks a library
  (``environment: missing module scipy``). Never a model failure;
- ``skipped``: the environment cannot run the task (a library it needs is not installed),
  decided before running.

``failed`` and ``timeout`` are model failures; ``error`` and ``skipped`` are excluded from
metrics and counted separately.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute import envcheck
from pytest_vibecheck.execute.cache import ExecCache, cache_key
from pytest_vibecheck.execute.calibrate import Calibrator
from pytest_vibecheck.execute.sandbox import (
    SANDBOX_VERSION,
    SandboxResult,
    SandboxSettings,
    run_in_sandbox,
)
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.types import TestStatus

ExecStatus = TestStatus
EXEC_STATUSES: tuple[str, ...] = ("passed", "failed", "timeout", "error", "skipped")

#: Statuses that are verdicts about the code (cached, counted in pass@k).
VERDICT_STATUSES: frozenset[str] = frozenset({"passed", "failed", "timeout"})

#: Default time limits (seconds) when a task is not calibrated: for the whole test run
#: (``bigcodebench-unittest``, ``humaneval``) or per test case (``stdin``, ``functional``;
#: LiveCodeBench's own default is 6 s per case).
DEFAULT_TIME_LIMITS: dict[str, float] = {
    "bigcodebench-unittest": 60.0,
    "humaneval": 10.0,
    "stdin": 6.0,
    "functional": 6.0,
}

_HARNESS = Path(__file__).parent / "_child" / "harness.py"


@dataclass(frozen=True)
class ExecSettings:
    """How tests are run.

    - ``sandbox``: limits and isolation (its ``timeout_s`` is replaced per run by the wall
      clock derived from the time limit: ``limit x cases + startup_s``).
    - ``time_limit_s``: fixed limit in seconds (whole run, or per case for ``stdin`` and
      ``functional``); ``None`` = calibrated by ``calibrator`` when given, else
      :data:`DEFAULT_TIME_LIMITS`.
    - ``calibrator``: a :class:`~pytest_vibecheck.execute.calibrate.Calibrator`, or None.
    - ``startup_s``: wall-clock seconds allowed on top of the limit for interpreter start
      and imports.
    - ``float_tol``: tolerance for float comparisons (absolute, or relative above 1).
    - ``check_env``: skip tasks whose libraries are missing, before running.
    """

    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    time_limit_s: float | None = None
    calibrator: Calibrator | None = field(default=None, compare=False)
    default_time_limits: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_TIME_LIMITS)
    )
    startup_s: float = 20.0
    float_tol: float = 1e-6
    check_env: bool = True

    def __post_init__(self) -> None:
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise VibecheckError(f"time_limit_s must be > 0 seconds, got {self.time_limit_s!r}")
        if not self.startup_s >= 0:
            raise VibecheckError(f"startup_s must be >= 0 seconds, got {self.startup_s!r}")
        if not self.float_tol >= 0:
            raise VibecheckError(f"float_tol must be >= 0, got {self.float_tol!r}")

    def replace(self, **changes: Any) -> ExecSettings:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ExecResult:
    """The outcome of running one candidate against one problem's tests.

    ``duration_s``: wall-clock seconds of the sandboxed run (0 for cached/skipped results
    it is the original run's). ``test_time_s``: seconds the harness spent importing the
    candidate and running the tests. ``network``: ``blocked`` or ``open`` as seen from
    inside the sandbox. ``limits``: the limits applied (time limit and its source, wall
    clock, CPU, address space, processes, file size, open files).
    """

    status: ExecStatus
    failed_tests: tuple[str, ...] = ()
    message: str = ""
    duration_s: float = 0.0
    network: str = "blocked"
    limits: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    task_id: str = ""
    test_time_s: float | None = None
    missing_module: str | None = None
    stdout: str = ""
    stderr: str = ""
    isolation: dict[str, Any] = field(default_factory=dict)
    writes_outside: tuple[str, ...] = ()

    @property
    def is_verdict(self) -> bool:
        """True for ``passed``/``failed``/``timeout`` (a statement about the code)."""
        return self.status in VERDICT_STATUSES

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with every field."""
        out = dataclasses.asdict(self)
        out["failed_tests"] = list(self.failed_tests)
        out["writes_outside"] = list(self.writes_outside)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExecResult:
        """Inverse of :meth:`to_dict` (unknown keys ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        kw["failed_tests"] = tuple(kw.get("failed_tests", ()))
        kw["writes_outside"] = tuple(kw.get("writes_outside", ()))
        return cls(**kw)


def time_limit_for(problem: Problem, settings: ExecSettings) -> tuple[float, dict[str, Any]]:
    """The time limit (seconds) for ``problem`` and a description of where it came from."""
    kind = problem.test.kind
    default = float(settings.default_time_limits.get(kind, 60.0))
    if settings.time_limit_s is not None:
        return float(settings.time_limit_s), {"time_limit_source": "fixed"}
    if settings.calibrator is not None:
        cal = settings.calibrator.calibrate(problem, default, settings)
        info: dict[str, Any] = {"time_limit_source": cal.source}
        if cal.reference_s is not None:
            info["reference_s"] = round(cal.reference_s, 4)
        if cal.reason:
            info["time_limit_note"] = cal.reason
        return cal.limit_s, info
    return default, {"time_limit_source": "default"}


def _wall_clock(problem: Problem, limit: float, settings: ExecSettings) -> float:
    n = len(problem.test.cases) if problem.test.kind in ("stdin", "functional") else 1
    return limit * max(n, 1) + settings.startup_s


def _fingerprint(problem: Problem, limit: float, settings: ExecSettings) -> dict[str, Any]:
    fp = settings.sandbox.fingerprint()
    fp.update(
        {
            "time_limit_s": round(limit, 3),
            "wall_s": round(_wall_clock(problem, limit, settings), 3),
            "float_tol": settings.float_tol,
        }
    )
    return fp


def run_tests(
    code: str,
    problem: Problem,
    settings: ExecSettings | None = None,
    cache: ExecCache | None = None,
) -> ExecResult:
    """Run ``problem``'s tests against ``code`` in a fresh sandbox.

    Returns an :class:`ExecResult`; never raises for anything the code does. With
    ``cache``, an identical (code, tests, settings) run is answered from the cache
    (``cached=True``). Raises :class:`~pytest_vibecheck.errors.VibecheckError` only for
    invalid settings or an unknown test kind.
    """
    settings = settings or ExecSettings()
    kind = problem.test.kind
    if kind not in DEFAULT_TIME_LIMITS:
        raise VibecheckError(
            f"problem {problem.task_id!r}: unknown test kind {kind!r}; expected one of "
            f"{sorted(DEFAULT_TIME_LIMITS)}"
        )
    if settings.check_env:
        missing = envcheck.missing_modules(problem, settings.sandbox.python)
        if missing:
            return ExecResult(
                status="skipped",
                message=envcheck.skip_reason(missing),
                task_id=problem.task_id,
                missing_module=missing[0],
                network="n/a",
            )
    limit, limit_info = time_limit_for(problem, settings)
    key = cache_key(code, problem.test, _fingerprint(problem, limit, settings))
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            res = ExecResult.from_dict(hit)
            return dataclasses.replace(res, cached=True, task_id=problem.task_id)
    wall = _wall_clock(problem, limit, settings)
    sb = dataclasses.replace(settings.sandbox, timeout_s=wall)
    known = sorted(set(envcheck.IMPORT_TO_PYPI) | set(envcheck.required_modules(problem)))
    payload = {
        "kind": kind,
        "code": code,
        "test_code": problem.test.code,
        "cases": [[c.input, c.output] for c in problem.test.cases],
        "entry_point": problem.test.entry_point or problem.entry_point,
        "time_limit_s": limit,
        "float_tol": settings.float_tol,
        "known_libs": known,
    }
    started = time.monotonic()
    sres = run_in_sandbox(script=_HARNESS, payload=payload, settings=sb)
    result = _to_exec_result(sres, problem, limit, limit_info, time.monotonic() - started)
    if cache is not None and result.is_verdict and not result.writes_outside:
        cache.put(key, result.to_dict())
    return result


def _to_exec_result(
    sres: SandboxResult,
    problem: Problem,
    limit: float,
    limit_info: Mapping[str, Any],
    elapsed: float,
) -> ExecResult:
    limits = {"time_limit_s": round(limit, 3), **limit_info, "wall_s": sres.limits.get("timeout_s")}
    limits.update({k: v for k, v in sres.limits.items() if k != "timeout_s"})
    limits["sandbox_version"] = SANDBOX_VERSION
    common: dict[str, Any] = {
        "duration_s": round(sres.duration_s, 4),
        "network": sres.network,
        "limits": limits,
        "task_id": problem.task_id,
        "stdout": sres.stdout[-2000:],
        "stderr": sres.stderr[-2000:],
        "isolation": sres.isolation,
        "writes_outside": sres.writes_outside,
    }
    job = sres.result if isinstance(sres.result, Mapping) else None
    if sres.status == "error":
        return ExecResult(status="error", message=f"sandbox: {sres.error}", **common)
    if job is not None and job.get("status") in ("passed", "failed", "timeout", "error"):
        status = job["status"]
        message = str(job.get("message", ""))
        if sres.writes_outside:
            message = f"wrote outside its folder: {', '.join(sres.writes_outside[:5])}\n" + message
        return ExecResult(
            status=status,
            failed_tests=tuple(str(t) for t in job.get("failed_tests", ())),
            message=message,
            test_time_s=job.get("test_time_s"),
            missing_module=job.get("missing_module"),
            **common,
        )
    if sres.status == "timeout":
        return ExecResult(
            status="timeout",
            message=f"wall-clock limit of {sres.limits.get('timeout_s')} s exceeded; the process "
            "group was killed",
            **common,
        )
    # The process ended without writing a result: the candidate's code ended it (os._exit,
    # a crash in a C extension, a signal). The harness itself always writes a result.
    tail = sres.stderr.strip()[-800:]
    return ExecResult(
        status="failed",
        failed_tests=("<process>",),
        message=f"the test process ended without a result (exit status {sres.returncode})"
        + (f":\n{tail}" if tail else ""),
        **common,
    )
