"""Run a problem's tests against a candidate program in the sandbox.

:func:`run_tests` is the one entry point: ``run_tests(code, problem) -> ExecResult``.

Outcomes (:attr:`ExecResult.status`):

- ``passed``: every test passed;
- ``failed``: a test failed or raised, the candidate does not compile or fails to import
  (``failed_tests`` names the tests, e.g. ``test_case_1``, ``case 2`` or ``<import>``;
  ``message`` holds a short traceback);
- ``timeout``: the time limit (calibrated per task, :mod:`pytest_vibecheck.execute.calibrate`) or
  the sandbox's wall clock or CPU limit was hit;
- ``tampered``: the candidate went for its grader (wrote to the result channel, patched the
  test framework, introspected the harness, returned an object that equals anything, ...:
  :mod:`pytest_vibecheck.execute.verdict`); a model failure, counted apart;
- ``error``: the sandbox failed to start, or the environment lacks a library the evaluator
  confirmed missing (``environment: missing module scipy``). Never a model failure;
- ``skipped``: the environment cannot run the task (a library it needs is not installed),
  decided before running.

``failed``, ``timeout`` and ``tampered`` are model failures; ``error`` and ``skipped`` are excluded from
metrics and counted separately.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute import envcheck
from pytest_vibecheck.execute._child.compare import GRADINGS
from pytest_vibecheck.execute.cache import ExecCache, cache_key
from pytest_vibecheck.execute.calibrate import Calibration, Calibrator, ExpectedTime, is_sleeper
from pytest_vibecheck.execute.expected import attribute_chains, expected_tests, trusted_bindings
from pytest_vibecheck.execute.judged import (
    JUDGED_KINDS,
    BadTestData,
    free_names,
    import_bindings,
    run_judged,
)
from pytest_vibecheck.execute.sandbox import (
    SANDBOX_VERSION,
    SandboxResult,
    SandboxSettings,
    run_in_sandbox,
)
from pytest_vibecheck.execute.slots import note_sleeping
from pytest_vibecheck.execute.spec import Task
from pytest_vibecheck.execute.verdict import LOAD_TIMEOUT, Verdict, decide
from pytest_vibecheck.screen import screen
from pytest_vibecheck.types import TEST_STATUSES, TestStatus

ExecStatus = TestStatus
EXEC_STATUSES: tuple[str, ...] = TEST_STATUSES

#: Statuses that are verdicts about the code (cached, counted in pass@k; all but ``passed``
#: are failures).
VERDICT_STATUSES: frozenset[str] = frozenset({"passed", "failed", "timeout", "tampered"})

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
    - ``grading``: the grading rule of LiveCodeBench-style tests (``stdin``, ``functional``),
      one of :data:`~pytest_vibecheck.execute._child.compare.GRADINGS`: ``"paper"`` (the
      Vibe Checker paper's evaluator) or ``"lcb"`` (LiveCodeBench's); the exact rules are the
      functions of ``execute/_child/compare.py``. There is no float tolerance.
    - ``check_env``: skip tasks whose libraries are missing, before running.
    - ``environment``: id of the execution environment the sandbox's interpreter belongs to
      (``bigvibebench@<lock sha256 prefix>``, :mod:`pytest_vibecheck.execute.environments`;
      empty for the interpreter running pytest-vibecheck). Part of the cache key.
    - ``screen``: screen the source of a candidate whose tests share its interpreter
      (``bigcodebench-unittest``) for reflective constructs before it runs
      (:mod:`pytest_vibecheck.screen`); each finding is a ``tampered`` reason. On by
      default; off only to test the layers behind it. Part of the cache key.
    - ``preload``: groups of modules the sandbox's fork server may import once (the
      environment's ``[environment] preload``, smallest group first): a
      ``bigcodebench-unittest`` run whose task keeps ``ctypes`` and needs a library of some
      group starts from a server that imported the first group holding every such library it
      needs (the last group when none holds them all); other runs start from the plain server.
      Each run still imports what it uses (already imported), and each forked run is fresh
      (numpy's global random state is reseeded as a new import seeds it). Not part of the
      cache key: it changes when a library is imported, not what the run computes.
    """

    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    time_limit_s: float | None = None
    calibrator: Calibrator | None = field(default=None, compare=False)
    default_time_limits: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_TIME_LIMITS)
    )
    startup_s: float = 20.0
    grading: str = "paper"
    check_env: bool = True
    environment: str = ""
    screen: bool = True
    preload: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise VibecheckError(f"time_limit_s must be > 0 seconds, got {self.time_limit_s!r}")
        if not self.startup_s >= 0:
            raise VibecheckError(f"startup_s must be >= 0 seconds, got {self.startup_s!r}")
        if self.grading not in GRADINGS:
            raise VibecheckError(
                f"grading must be one of {', '.join(GRADINGS)}, got {self.grading!r}"
            )

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
    cpu_time_s: float | None = None
    missing_module: str | None = None
    stdout: str = ""
    stderr: str = ""
    isolation: dict[str, Any] = field(default_factory=dict)
    writes_outside: tuple[str, ...] = ()
    tamper: tuple[str, ...] = ()

    @property
    def is_verdict(self) -> bool:
        """True for ``passed``/``failed``/``timeout``/``tampered`` (a statement about the code)."""
        return self.status in VERDICT_STATUSES

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with every field."""
        out = dataclasses.asdict(self)
        out["failed_tests"] = list(self.failed_tests)
        out["writes_outside"] = list(self.writes_outside)
        out["tamper"] = list(self.tamper)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExecResult:
        """Inverse of :meth:`to_dict` (unknown keys ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        kw["failed_tests"] = tuple(kw.get("failed_tests", ()))
        kw["writes_outside"] = tuple(kw.get("writes_outside", ()))
        kw["tamper"] = tuple(kw.get("tamper", ()))
        return cls(**kw)

    @classmethod
    def from_cache(cls, data: Any) -> ExecResult | None:
        """:meth:`from_dict` of a cached record, or None when it is not a sound verdict
        (a record that fails these checks is a cache miss, never a result)."""
        if not isinstance(data, Mapping) or data.get("status") not in VERDICT_STATUSES:
            return None
        try:
            res = cls.from_dict(data)
        except (TypeError, ValueError):
            return None
        if not all(isinstance(t, str) for t in (*res.failed_tests, *res.tamper)):
            return None
        if not isinstance(res.message, str):
            return None
        return res


def _default_limit(problem: Task, settings: ExecSettings) -> float:
    return float(settings.default_time_limits.get(problem.test.kind, 60.0))


def _limit_info(cal: Calibration) -> dict[str, Any]:
    info: dict[str, Any] = {"time_limit_source": cal.source}
    if cal.reference_s is not None:
        info["reference_s"] = round(cal.reference_s, 4)
    if cal.reason:
        info["time_limit_note"] = cal.reason
    return info


def time_limit_for(problem: Task, settings: ExecSettings) -> tuple[float, dict[str, Any]]:
    """The time limit (seconds) for ``problem`` and a description of where it came from
    (measuring the reference solution now if the calibrator has not yet)."""
    default = _default_limit(problem, settings)
    if settings.time_limit_s is not None:
        return float(settings.time_limit_s), {"time_limit_source": "fixed"}
    if settings.calibrator is not None:
        cal = settings.calibrator.calibrate(problem, default, settings, run=run_tests)
        return cal.limit_s, _limit_info(cal)
    return default, {"time_limit_source": "default"}


def _wall_clock(problem: Task, limit: float, settings: ExecSettings) -> float:
    n = len(problem.test.cases) if problem.test.kind in ("stdin", "functional") else 1
    return limit * max(n, 1) + settings.startup_s


def _fingerprint(problem: Task, settings: ExecSettings) -> dict[str, Any]:
    """What besides code and tests can change a verdict. With a calibrator this is the rule
    (floor, factor, default) rather than the limit it gives on this machine: the key is known
    before any reference is timed (lazy calibration), on whichever machine runs the code."""
    fp = settings.sandbox.fingerprint()
    fp["grading"] = settings.grading
    fp["startup_s"] = settings.startup_s
    if not settings.screen:
        fp["screen"] = False
    if settings.environment:
        fp["environment"] = settings.environment
    cal = settings.calibrator
    if settings.time_limit_s is None and cal is not None:
        fp["time_limit"] = {
            "rule": "max(floor, factor x reference)",
            "floor_s": cal.floor_s,
            "factor": cal.factor,
            "default_s": _default_limit(problem, settings),
        }
    else:
        limit, _info = time_limit_for(problem, settings)
        fp["time_limit_s"] = round(limit, 3)
    return fp


def result_key(code: str, problem: Task, settings: ExecSettings) -> str:
    """The execution cache key of running ``code`` against ``problem`` with ``settings``
    (:func:`pytest_vibecheck.execute.cache.cache_key`); needs no sandbox run and no
    calibration."""
    return cache_key(code, problem.test, _fingerprint(problem, settings))


def check_runnable(problem: Task, settings: ExecSettings, code: str | None = None) -> ExecResult | None:
    """A ``skipped`` result when the environment lacks a module ``problem`` needs, or a
    BigCodeBench library that the candidate ``code`` imports
    (:func:`~pytest_vibecheck.execute.envcheck.missing_in_code`: the reason ends ``(imported by
    the reply)``); None when it can run. Raises :class:`VibecheckError` for an unknown test
    kind."""
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
        missing = envcheck.missing_in_code(code, settings.sandbox.python) if code else ()
        if missing:
            return ExecResult(
                status="skipped",
                message=f"{envcheck.skip_reason(missing)} (imported by the reply)",
                task_id=problem.task_id,
                missing_module=missing[0],
                network="n/a",
            )
    return None


def cached_result(cache: ExecCache | None, key: str, problem: Task) -> ExecResult | None:
    """The cached result under ``key`` (``cached=True``), or None."""
    if cache is None:
        return None
    hit = ExecResult.from_cache(cache.get(key))  # an unsound record is a miss
    if hit is None:
        return None
    return dataclasses.replace(hit, cached=True, task_id=problem.task_id)


def store_result(cache: ExecCache | None, key: str, result: ExecResult) -> None:
    """Cache ``result`` under ``key`` when it is a verdict about the code (never ``error`` or
    ``skipped``, never a run that wrote outside its folder)."""
    if cache is not None and result.is_verdict and not result.writes_outside:
        cache.put(key, result.to_dict())


def run_tests(
    code: str,
    problem: Task,
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
    skipped = check_runnable(problem, settings, code)
    if skipped is not None:
        return skipped
    key = result_key(code, problem, settings)
    hit = cached_result(cache, key, problem)
    if hit is not None:
        return hit
    result = execute(code, problem, settings)
    store_result(cache, key, result)
    return result


def execute(code: str, problem: Task, settings: ExecSettings) -> ExecResult:
    """The sandboxed part of :func:`run_tests` (no cache, no environment check): what an
    executor runs on a worker or a cluster node.

    Lazy calibration (:mod:`pytest_vibecheck.execute.calibrate`): with a calibrator and a
    reference never timed on this machine, the candidate first runs under the floor limit.
    Only a candidate that exceeds it has the reference timed and is run again under the
    calibrated limit (when that is above the floor). Every calibrated limit is at least the
    floor, so the verdict is the one the calibrated limit gives.

    A task expected to run past the floor (:meth:`Calibrator.expected`: this machine's earlier
    runs, else the suite's shipped durations) skips the floor run, which could only time out:
    a task that mostly sleeps has its reference timed while the candidate runs
    (:func:`_beside_reference`); one that computes runs the candidate first and times the
    reference only as far as the candidate's own time needs (:func:`_before_reference`).

    A floor run whose test source was still loading when the floor ran out (an ``error``:
    :data:`~pytest_vibecheck.execute.verdict.LOAD_TIMEOUT`) is treated as a timeout here: the
    reference is timed and the candidate runs again under the calibrated limit.
    """
    tries = _AST_RACE_TRIES
    while True:
        tries -= 1
        try:
            return _execute(code, problem, settings)
        except SystemError as exc:
            if _AST_RACE not in str(exc) or tries == 0:
                raise


#: CPython 3.11 keeps the recursion depth of its parse-tree-to-``ast`` conversion in state that
#: threads share, so two threads parsing at once (this run's checks of the test source and a
#: reference timing, or the plugin's verifiers) can trip its consistency check with a
#: ``SystemError`` (python/cpython#106905, fixed in later releases): a race in this process's
#: own parsing, never anything the candidate did, so :func:`execute` runs again.
_AST_RACE = "AST constructor recursion depth mismatch"
_AST_RACE_TRIES = 3


def _execute(code: str, problem: Task, settings: ExecSettings) -> ExecResult:
    """One try of :func:`execute`."""
    cal = settings.calibrator
    if settings.time_limit_s is not None or cal is None:
        limit, info = time_limit_for(problem, settings)
        return _observed(cal, problem, _run_once(code, problem, limit, info, settings))
    default = _default_limit(problem, settings)
    known = cal.known(problem, default)
    if known is not None:
        result = _run_once(code, problem, known.limit_s, _limit_info(known), settings)
        return _observed(cal, problem, result)
    floor = cal.floor_s
    expected = cal.expected(problem)
    if expected is not None and expected.wall_s > floor:
        if expected.sleeps:
            return _observed(cal, problem, _beside_reference(code, problem, settings, expected))
        return _observed(cal, problem, _before_reference(code, problem, settings, expected))
    first = _run_once(code, problem, floor, {"time_limit_source": "floor"}, settings)
    if not _stopped(first):
        return _observed(cal, problem, first)
    if is_sleeper(first.test_time_s, first.cpu_time_s):
        note_sleeping()  # it slept through the floor: free this run's CPU slot for the rest
    found = cal.calibrate(problem, default, settings, run=run_tests)
    timed = cal.expected_times([problem]).get(problem.task_id)
    if timed is not None and timed.sleeps:
        note_sleeping()  # the re-run will mostly sleep: free this run's CPU slot
    if found.limit_s <= floor:
        limits = {**first.limits, **_limit_info(found), "time_limit_s": round(floor, 3)}
        return _observed(cal, problem, dataclasses.replace(first, limits=limits))
    again = _run_once(code, problem, found.limit_s, _limit_info(found), settings)
    return _observed(cal, problem, again)


def _stopped(result: ExecResult) -> bool:
    """Whether the time limit, not the run itself, ended ``result``: a timeout, or the test
    source still loading (:data:`~pytest_vibecheck.execute.verdict.LOAD_TIMEOUT`)."""
    return result.status == "timeout" or (
        result.status == "error" and result.message == LOAD_TIMEOUT
    )


def _spent(result: ExecResult) -> float | None:
    """The most of the run's test time and CPU seconds (what a limit bounds), or None when the
    run reported no test time."""
    if result.test_time_s is None:
        return None
    return max(result.test_time_s, result.cpu_time_s or 0.0)


def _with_limit(result: ExecResult, problem: Task, limit: float, info: Mapping[str, Any],
                settings: ExecSettings) -> ExecResult:
    """``result`` described as the run under ``limit`` (``info``: where it came from), for a
    run that ended, or was stopped, where that limit would have given the same."""
    limits = {**result.limits, **info, "time_limit_s": round(limit, 3),
              "wall_s": _wall_clock(problem, limit, settings)}
    return dataclasses.replace(result, limits=limits)


def _before_reference(
    code: str, problem: Task, settings: ExecSettings, expected: ExpectedTime
) -> ExecResult:
    """A task expected to compute past the floor: the candidate runs first, under the limit
    its expected duration suggests (``factor x expected``), and the reference is timed after
    it, only as far as needed (:meth:`Calibrator.calibrate_past`).

    - A run that ended by itself within the floor stands (every limit is at least the floor).
    - One that ended after ``t`` seconds stands when the reference runs for at least
      ``t / factor`` (then the limit is at least ``t``: the reference is stopped there) or the
      calibrated limit is at least ``t``; else it runs again under the calibrated limit.
    - One that the guessed limit stopped stands when the calibrated limit is no larger (it
      would have been stopped there too); else it runs again under the calibrated limit.

    So the verdict is always the calibrated limit's, as on the floor path, and a candidate that
    takes a fraction of its limit never waits for a long reference to be timed to its end.
    """
    cal = settings.calibrator
    assert cal is not None
    default = _default_limit(problem, settings)
    guess = cal.limit_from(expected.wall_s)
    first = _run_once(code, problem, guess, {"time_limit_source": "expected"}, settings)
    spent = _spent(first)
    if not _stopped(first):
        if first.status in ("error", "tampered") or spent is None:
            return first  # an infrastructure error, or tampering: no limit changes either
        if spent <= cal.floor_s:
            return _with_limit(first, problem, cal.floor_s, {"time_limit_source": "floor"}, settings)
        found = cal.calibrate_past(problem, default, settings, run=run_tests, needed_s=spent)
        if found is None:
            at_least = cal.bound(problem) or spent / cal.factor
            info = {"time_limit_source": "calibrated", "reference_s_at_least": round(at_least, 4)}
            return _with_limit(first, problem, max(cal.floor_s, cal.factor * at_least), info,
                               settings)
        if spent <= found.limit_s:
            return _with_limit(first, problem, found.limit_s, _limit_info(found), settings)
        return _run_once(code, problem, found.limit_s, _limit_info(found), settings)
    found = cal.calibrate(problem, default, settings, run=run_tests)
    if found.limit_s <= guess:
        return _with_limit(first, problem, found.limit_s, _limit_info(found), settings)
    return _run_once(code, problem, found.limit_s, _limit_info(found), settings)


def _beside_reference(
    code: str, problem: Task, settings: ExecSettings, expected: ExpectedTime
) -> ExecResult:
    """The candidate under the limit its expected duration suggests, while the reference is
    timed in another sandbox; the result stands when the run ended by itself (not a timeout)
    within the calibrated limit ``L``, in wall-clock test time and in CPU seconds: a run that
    no limit stopped and that ended within ``L`` is the run ``L`` gives. Else the candidate
    runs again under ``L`` (the verdict is always the calibrated limit's)."""
    import threading

    cal = settings.calibrator
    assert cal is not None
    default = _default_limit(problem, settings)
    found: list[Calibration] = []
    timing = threading.Thread(
        target=lambda: found.append(cal.calibrate(problem, default, settings, run=run_tests)),
        name="vibecheck-reference",
        daemon=True,
    )
    timing.start()
    guess = cal.limit_from(expected.wall_s)
    first = _run_once(code, problem, guess, {"time_limit_source": "calibrated"}, settings)
    timing.join()
    if not found:  # the timing thread failed: the plain path measures (or fails) again
        found.append(cal.calibrate(problem, default, settings, run=run_tests))
    limit = found[0]
    ended_within = (
        first.status not in ("timeout", "error")
        and first.test_time_s is not None
        and first.test_time_s <= limit.limit_s
        and (first.cpu_time_s or 0.0) <= limit.limit_s
    )
    if ended_within:
        limits = {
            **first.limits,
            **_limit_info(limit),
            "time_limit_s": round(limit.limit_s, 3),
            "wall_s": _wall_clock(problem, limit.limit_s, settings),
        }
        return dataclasses.replace(first, limits=limits)
    return _run_once(code, problem, limit.limit_s, _limit_info(limit), settings)


def _observed(cal: Calibrator | None, problem: Task, result: ExecResult) -> ExecResult:
    if cal is not None and result.status in ("passed", "failed") and result.test_time_s:
        cal.observe(problem, result.test_time_s, result.cpu_time_s)
    return result


def _run_once(
    code: str, problem: Task, limit: float, limit_info: Mapping[str, Any], settings: ExecSettings
) -> ExecResult:
    kind = problem.test.kind
    wall = _wall_clock(problem, limit, settings)
    sb = dataclasses.replace(settings.sandbox, timeout_s=wall)
    known = envcheck.task_modules(problem)
    expected = expected_tests(kind, problem.test.code or "")
    if expected.error is not None and kind in ("bigcodebench-unittest", "humaneval"):
        return ExecResult(
            status="error",
            message=f"the problem's tests cannot be used: {expected.error}",
            task_id=problem.task_id,
            network="n/a",
        )
    if kind in JUDGED_KINDS:
        try:
            sres = run_judged(code, problem, limit, settings.grading, sb)
        except BadTestData as exc:
            return ExecResult(status="error", message=str(exc), task_id=problem.task_id,
                              network="n/a")
        verdict = decide(
            sres, kind, expected, len(problem.test.cases), known, settings.sandbox.python
        )
        return _to_exec_result(sres, verdict, problem, limit, limit_info)
    if settings.screen:
        findings = screen(code, task_modules=problem.libs)
        if findings:
            reasons = tuple(dict.fromkeys(str(f) for f in findings))[:20]
            return ExecResult(
                status="tampered",
                message=("tampered with its tests: " + "; ".join(reasons))[:2000],
                task_id=problem.task_id,
                network="n/a",
                limits={"time_limit_s": round(limit, 3), **limit_info},
                tamper=reasons,
            )
    test_code = problem.test.code or ""
    allow_ctypes = _needs_ctypes(problem, expected.imports)
    if allow_ctypes and settings.preload:
        sb = dataclasses.replace(sb, preload=preload_group(problem, expected.imports, settings.preload))
    payload = {
        "kind": kind,
        "code": code,
        "test_code": test_code,
        "test_class": expected.class_name,
        "test_names": list(expected.names),
        "preimport": [*expected.imports, *IMPORT_TIME_PATCHERS],
        "allow_ctypes": allow_ctypes,
        "entry_point": problem.test.entry_point or problem.entry_point or "task_func",
        "time_limit_s": limit,
        "free_names": list(free_names(test_code)),
        "test_imports": list(import_bindings(test_code)),
        "chains": [list(c) for c in attribute_chains(test_code)],
        "trusted": list(trusted_bindings(problem.canonical_solution or "")),
    }
    sres = run_in_sandbox(script=_HARNESS, payload=payload, settings=sb)
    verdict = decide(
        sres, kind, expected, len(problem.test.cases), known, settings.sandbox.python
    )
    return _to_exec_result(sres, verdict, problem, limit, limit_info)


#: Modules imported before the candidate (when installed; a missing one is left out) because
#: importing them changes the standard library, which the snapshot would otherwise record as
#: the candidate's tampering: lxml's Cython extension replaces ``inspect.isgenerator`` (Cython's
#: ``patch_inspect``), and bs4, pandas, openpyxl, python-docx and pyquery import it lazily.
IMPORT_TIME_PATCHERS: tuple[str, ...] = ("lxml.etree",)

#: Third-party libraries known to work without ``ctypes`` (numpy imports it only if present;
#: pandas 3 imports it unconditionally, matplotlib through pandas-free paths is not relied on).
CTYPES_FREE: frozenset[str] = frozenset({"numpy"})


def _needs_ctypes(problem: Task, test_imports: tuple[str, ...]) -> bool:
    """Whether the run keeps ``ctypes`` (raw memory access, which the audit hook cannot
    follow): when the task or its tests use it, or need a third-party library that may (e.g.
    scikit-learn through threadpoolctl). Otherwise the harness makes it unavailable."""
    names = set(problem.libs) | {m.split(".")[0] for m in test_imports}
    if "ctypes" in names:
        return True
    return bool(set(envcheck.required_modules(problem)) - CTYPES_FREE)


def preload_group(
    problem: Task, test_imports: tuple[str, ...], groups: tuple[tuple[str, ...], ...]
) -> tuple[str, ...]:
    """The group of ``groups`` (see :attr:`ExecSettings.preload`) whose modules a run of
    ``problem`` starts with: the first that holds every top-level library of any group that the
    task or its tests import, the last when none holds them all, ``()`` when they import none."""
    used = set(problem.libs) | {m.split(".")[0] for m in test_imports}
    tops = [{m.split(".")[0] for m in group} for group in groups]
    wanted = used & set().union(*tops)
    if not wanted:
        return ()
    for group, names in zip(groups, tops, strict=True):
        if wanted <= names:
            return group
    return groups[-1]


def _cpu_time(sres: SandboxResult) -> float | None:
    """The harness's CPU seconds (scheduling only; None when absent or not a number)."""
    job = sres.result if isinstance(sres.result, Mapping) else None
    value = job.get("cpu_time_s") if job is not None else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _to_exec_result(
    sres: SandboxResult,
    verdict: Verdict,
    problem: Task,
    limit: float,
    limit_info: Mapping[str, Any],
) -> ExecResult:
    limits = {"time_limit_s": round(limit, 3), **limit_info, "wall_s": sres.limits.get("timeout_s")}
    limits.update({k: v for k, v in sres.limits.items() if k != "timeout_s"})
    limits["sandbox_version"] = SANDBOX_VERSION
    message = verdict.message
    if sres.writes_outside and verdict.status != "error":
        message = f"wrote outside its folder: {', '.join(sres.writes_outside[:5])}\n" + message
    return ExecResult(
        status=verdict.status,  # type: ignore[arg-type]
        failed_tests=verdict.failed_tests,
        message=message,
        duration_s=round(sres.duration_s, 4),
        network=sres.network,
        limits=limits,
        task_id=problem.task_id,
        test_time_s=verdict.test_time_s,
        cpu_time_s=_cpu_time(sres),
        missing_module=verdict.missing_module,
        stdout=sres.stdout[-2000:],
        stderr=sres.stderr[-2000:],
        isolation=sres.isolation,
        writes_outside=sres.writes_outside,
        tamper=verdict.tamper,
    )
