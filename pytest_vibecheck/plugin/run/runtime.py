"""The per-process state (:class:`Runtime`: generators, caches, sandbox settings, prefetcher) and
:func:`run_item_for`, which runs one item with it."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vibecheck.config.limits import Budget, parse_budget, parse_max_errors
from pytest_vibecheck.errors import ParameterError, VibecheckError
from pytest_vibecheck.generate.prices import price_of
from pytest_vibecheck.plugin.run.failure import VibeInfraError, failure_text
from pytest_vibecheck.plugin.run.guard import RunGuard
from pytest_vibecheck.plugin.run.prefetch import Prefetcher
from pytest_vibecheck.plugin.run.record import ItemOutcome, new_record
from pytest_vibecheck.plugin.run.state import RunState, state_path

if TYPE_CHECKING:

    from pytest_vibecheck.config.settings import VibeSettings
    from pytest_vibecheck.execute.cache import ExecCache
    from pytest_vibecheck.execute.environments import Environment
    from pytest_vibecheck.execute.executor import TestService
    from pytest_vibecheck.execute.tests import ExecSettings
    from pytest_vibecheck.generate.backends.base import (
        BackendSettings,
        Generation,
        GenerationRequest,
    )
    from pytest_vibecheck.generate.batcher import Batcher
    from pytest_vibecheck.generate.generator import Generator
    from pytest_vibecheck.plugin.run.context import VerdictKey
    from pytest_vibecheck.plugin.run.spec import ItemSpec

__all__ = ["RUNTIME_KEY", "Runtime", "run_item_for"]


class Runtime:
    """Per-process state: one :class:`~pytest_vibecheck.generate.generator.Generator` per model (sharing
    one generation cache), the sandbox result cache and the prefetcher.

    Built once per process in ``pytest_configure`` (controller and xdist workers alike).
    ``run_id`` is shared by all workers of a run (cache mode ``refresh``, and the run's shared
    :class:`~pytest_vibecheck.plugin.run.state.RunState`, which the process with ``owner``
    deletes on :meth:`close`). :attr:`guard` decides which requests may still be sent
    (:mod:`pytest_vibecheck.plugin.run.guard`). Raises
    :class:`~pytest_vibecheck.errors.VibecheckError` for an unknown model spec, a missing API
    key or SDK, a bad ``--vibe-max-errors`` or ``--vibe-budget``, or a dollar budget for a model
    without a known price.
    """

    def __init__(
        self,
        settings: VibeSettings,
        run_id: str | None = None,
        *,
        owner: bool = True,
        planned: bool = False,
        display: Callable[[list[str]], None] | None = None,
    ) -> None:
        from pytest_vibecheck.generate.backends.registry import make_backend
        from pytest_vibecheck.generate.cache import GenerationCache
        from pytest_vibecheck.generate.generator import Generator

        self.settings = settings
        self.run_id = run_id or uuid.uuid4().hex
        self.cache: GenerationCache | None = None
        self.generators: dict[str, Generator] = {}
        self.owner = owner
        #: where batch mode's waiting lines go (standard error by default)
        self.display = display or _show
        self.state = RunState(state_path(settings.cache, self.run_id), owner=owner)
        self.guard = RunGuard(
            self.state, parse_max_errors(settings.max_errors), _budget(settings), batch=settings.batch
        )
        try:
            if settings.cache_mode != "off" and settings.cache is not None:
                self.cache = GenerationCache(settings.cache)
            bsettings = backend_settings(settings)
            for spec in settings.models:
                self.generators[spec] = Generator(
                    make_backend(spec, bsettings),
                    cache=self.cache,
                    mode=settings.cache_mode,
                    concurrency=settings.concurrency,
                    run_id=self.run_id,
                    guard=self.guard,
                )
            #: batch mode (--vibe-batch): one batcher per model; empty in direct mode and in
            #: cache mode ``only`` (nothing is sent)
            self.batchers: dict[str, Batcher] = {}
            if settings.batch and settings.cache_mode != "only":
                self.batchers = self._batchers()
        except BaseException:
            self.close()
            raise
        self._batch_lock = threading.Lock()
        self._batched = False
        self._batch_fatal: BaseException | None = None
        #: verdicts already computed in this process (see :func:`verify_stage`)
        self.verdicts: dict[VerdictKey, Any] = {}
        self._inflight: dict[str, threading.Event] = {}
        self._inflight_lock = threading.Lock()
        self._exec_cache: ExecCache | None = None
        from pytest_vibecheck.execute.environments import resolve_environment

        try:
            #: the execution environment candidates run in (--vibe-env; the host by default)
            self.environment = resolve_environment(settings.env)
            _check_executor(settings.executor)
        except BaseException:
            self.close()
            raise
        #: how tests run: time limits calibrated per task on this machine from the reference
        #: solution (max(floor, factor x its time), lazily: docs/sandbox.md), stored beside the
        #: cache; candidates run with the environment's interpreter
        self.exec_settings: ExecSettings = exec_settings_for(settings, self.environment)
        try:
            self._check_stores()
        except BaseException:
            self.close()
            raise
        self._tests: TestService | None = None
        self._tests_error: VibecheckError | None = None
        self._tests_lock = threading.Lock()
        #: set on an xdist worker when the controller schedules by the duration plan
        self.planned = planned
        self.prefetcher = Prefetcher(self)

    def _batchers(self) -> dict[str, Batcher]:
        """A :class:`~pytest_vibecheck.generate.batcher.Batcher` per model, its waiting lines to
        :attr:`display`, the budget's cut-off from the guard (batch prices)."""
        from pytest_vibecheck.generate.batcher import Batcher, policy_from_env
        from pytest_vibecheck.generate.prices import batch_cost_usd

        if self.cache is None:
            raise ParameterError(
                "--vibe-batch keeps its batches and their replies in the generation cache; give "
                "--vibe-cache PATH and --vibe-cache-mode use or refresh"
            )
        policy = policy_from_env()
        out: dict[str, Batcher] = {}
        for spec, generator in self.generators.items():
            out[spec] = Batcher(
                generator,
                policy=policy,
                display=self.display,
                budget_left=self.guard.left,
                price=functools.partial(batch_cost_usd, spec),
            )
        return out

    def prepare_batches(self, specs: Iterable[ItemSpec]) -> None:
        """Batch mode: generate the requests of ``specs`` (the session's items) wave by wave
        before the test loop (``pytest_runtestloop``) (:func:`~pytest_vibecheck.plugin.run.waves.batch_waves`),
        once per process; a no-op in direct mode. A fatal submission error is raised by the
        next item's generation (the guard has stopped the model; the items after it are not run)."""
        if not self.batchers:
            return
        with self._batch_lock:
            if self._batched:
                return
            self._batched = True
            from pytest_vibecheck.generate.backends.base import BackendError
            from pytest_vibecheck.plugin.run.waves import batch_waves

            try:
                batch_waves(self, specs, self.batchers)
            except BackendError as exc:
                self._batch_fatal = exc

    def _check_stores(self) -> None:
        """Open and check every store before the first request: the generation cache (opened
        by :class:`~pytest_vibecheck.generate.cache.GenerationCache` itself), the execution
        cache (an unusable one raises its one-line error, a usage error at configure) and the
        calibration store (an unusable one is one warning line from the controller, and the run
        goes on with the default time limits instead of a warning per task)."""
        exec_cache = self.exec_cache()
        if exec_cache is not None:
            exec_cache.connection()
        cal = self.exec_settings.calibrator
        if cal is None:
            return
        from pytest_vibecheck.execute.calibrate import CalibrationStoreError

        try:
            cal.connection()
        except CalibrationStoreError as exc:
            if self.owner:
                sys.stderr.write(
                    f"vibecheck: warning: {exc}; this run uses the default time limits "
                    "(uncalibrated)\n"
                )
            self.exec_settings = dataclasses.replace(self.exec_settings, calibrator=None)

    def tests(self) -> TestService:
        """Where this process's test runs go (the ``--vibe-executor``, started on first use),
        with the environment check, de-duplication and the result cache."""
        with self._tests_lock:
            if self._tests_error is not None:  # the executor could not start: once is enough
                raise self._tests_error
            if self._tests is None:
                from pytest_vibecheck.execute.executor import TestService, make_executor

                try:
                    executor = make_executor(self.settings.executor)
                except VibecheckError as exc:
                    self._tests_error = exc
                    raise
                self._tests = TestService(executor, self.exec_settings, self.exec_cache())
            return self._tests

    def started_tests(self) -> TestService | None:
        """The test service if it has started (None before the first test run)."""
        return getattr(self, "_tests", None)

    def generate(self, model: str, request: GenerationRequest) -> Generation:
        """One generation through the model's Generator. Identical requests in flight in this
        process at the same time are made once: later ones wait and are then served from the
        cache (so the baseline and multi-turn turn 0, prepared concurrently, share one reply)."""
        generator = self.generators[model]
        with self._batch_lock:
            fatal, self._batch_fatal = self._batch_fatal, None
        if fatal is not None:
            raise fatal
        if not generator.uses_cache:
            return generator.generate(request)
        key = generator.key(request)
        with self._inflight_lock:
            event = self._inflight.get(key)
            owner = event is None
            if owner:
                event = self._inflight[key] = threading.Event()
        assert event is not None
        if not owner:
            event.wait()
            return generator.generate(request)
        try:
            return generator.generate(request)
        finally:
            with self._inflight_lock:
                del self._inflight[key]
            event.set()

    def exec_cache(self) -> ExecCache | None:
        """The sandbox's result cache (``exec-cache.sqlite`` beside the generation cache),
        opened on first use; None without a cache folder."""
        if self._exec_cache is None and self.settings.cache is not None:
            from pytest_vibecheck.execute.cache import ExecCache

            self._exec_cache = ExecCache(self.settings.cache.parent / "exec-cache.sqlite")
        return self._exec_cache

    def close(self) -> None:
        """Close every backend, the caches and the run state (idempotent)."""
        if hasattr(self, "prefetcher"):
            self.prefetcher.close()
        self.state.close(delete=self.owner)
        for gen in self.generators.values():
            with contextlib.suppress(Exception):  # closing must never fail a run
                gen.backend.close()
        self.generators = {}
        if self.cache is not None:
            self.cache.close()
            self.cache = None
        tests = getattr(self, "_tests", None)
        if tests is not None:
            with contextlib.suppress(Exception):
                tests.executor.close()
            self._tests = None
        if getattr(self, "_exec_cache", None) is not None:
            with contextlib.suppress(Exception):
                self._exec_cache.close()  # type: ignore[union-attr]
            self._exec_cache = None


#: Stash key of the process's :class:`Runtime`.
RUNTIME_KEY = pytest.StashKey[Runtime]()


def run_item_for(item: pytest.Item, spec: ItemSpec) -> ItemOutcome:
    """Run ``item`` (which evaluates ``spec``) with the process's runtime; its record goes into
    ``user_properties``.

    Raises :class:`VibeInfraError` (pytest error) or ``pytest.skip`` (tests cannot run here, or
    the problem has fewer than k instructions).
    """
    t0 = time.perf_counter()
    record = new_record(spec)
    item.user_properties.append(("vibecheck", record))
    runtime = item.config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        record["error"] = {"kind": "internal_error", "message": "the vibecheck runtime is not set up"}
        raise VibeInfraError("internal_error", "the vibecheck runtime is not set up")
    try:
        work = runtime.prefetcher.take(item)
    except Exception as exc:
        record["error"] = {"kind": "internal_error", "message": f"{type(exc).__name__}: {exc}"}
        raise
    record["timing"] = dict(work.timing)
    record["turns"] = [t.to_dict() for t in work.turns if t.tests]
    record["ruff_version"] = next((t.ruff_version for t in work.turns if t.ruff_version), None)
    if work.error is not None:
        record["error"] = {"kind": work.error.kind, "message": work.error.message}
        raise work.error
    if work.skip is not None:
        record["skip_reason"] = work.skip
        pytest.skip(work.skip)
    final = work.turns[-1]
    record["no_code"] = final.no_code
    record["passed"] = final.passed
    record["timing"]["total"] = sum(work.timing[k] for k in ("generate", "tests", "verify")) + (
        time.perf_counter() - t0
    )
    text = "" if final.passed else failure_text(spec, work.turns)
    record["failure"] = text or None
    return ItemOutcome(final.passed, text, record)


def _show(lines: list[str]) -> None:
    """A batcher's waiting lines on standard error, each xdist worker's marked with its id."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    prefix = f"[{worker}] " if worker else ""
    sys.stderr.write("".join(f"{prefix}{line}\n" for line in lines))
    sys.stderr.flush()


def uncaptured_display(config: pytest.Config) -> Callable[[list[str]], None]:
    """Batch mode's waiting lines (they come before the test loop) on standard error past
    pytest's output capture, as pytest's own live logging writes them
    (``capturemanager.global_and_fixture_disabled``)."""

    def show(lines: list[str]) -> None:
        capman = config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            _show(lines)

    return show


def _budget(settings: VibeSettings) -> Budget | None:
    """``--vibe-budget`` parsed; a dollar budget needs a list price for every model."""
    if settings.budget is None:
        return None
    budget = parse_budget(settings.budget)
    unpriced = [m for m in settings.models if price_of(m) is None]
    if budget.usd is not None and unpriced:
        raise ParameterError(
            f"--vibe-budget {budget.text}: no list price is known for {', '.join(unpriced)}, so a "
            "dollar budget cannot be checked; give it in tokens (e.g. --vibe-budget 2M)"
        )
    return budget


def backend_settings(settings: VibeSettings) -> BackendSettings:
    """The model backends' settings of a run: the base URL, the key's variable and the request
    timeout (``--vibe-request-timeout``; else the backends' default, ``$VIBECHECK_TIMEOUT`` or
    600 s)."""
    from pytest_vibecheck.generate.backends.base import BackendSettings

    if settings.request_timeout is None:
        return BackendSettings(base_url=settings.base_url, api_key_env=settings.api_key_env)
    return BackendSettings(
        base_url=settings.base_url, api_key_env=settings.api_key_env,
        timeout_s=settings.request_timeout,
    )  # fmt: skip


def exec_settings_for(settings: VibeSettings, environment: Environment) -> ExecSettings:
    """Sandbox settings for the run: the run's profile (its grading rule and per-case time limit
    of LiveCodeBench tests); candidates run with ``environment``'s interpreter, with a
    :class:`~pytest_vibecheck.execute.calibrate.Calibrator` whose store is
    ``calibration.sqlite`` beside the generation cache (fixed default limits when the run has
    no cache folder)."""
    from pytest_vibecheck.execute.calibrate import Calibrator
    from pytest_vibecheck.execute.sandbox import SandboxSettings
    from pytest_vibecheck.execute.tests import DEFAULT_TIME_LIMITS, ExecSettings
    from pytest_vibecheck.suites.profiles import LIVE_KINDS, get_profile

    profile = get_profile(settings.profile)
    limits = dict(DEFAULT_TIME_LIMITS)
    limits.update(dict.fromkeys(LIVE_KINDS, profile.case_time_limit_s))
    sandbox = SandboxSettings(python=None if environment.id == "" else environment.python)
    calibrator = None
    if settings.cache is not None:
        calibrator = Calibrator(
            Path(settings.cache).parent / "calibration.sqlite", environment=environment.id
        )
        from pytest_vibecheck.suites.durations import shipped_durations

        calibrator.prior.update(shipped_durations(settings.suites))
    return ExecSettings(
        sandbox=sandbox,
        calibrator=calibrator,
        environment=environment.id,
        default_time_limits=limits,
        grading=profile.grading,
        preload=environment.preload,
    )


def _check_executor(spec: str) -> None:
    """Fail early (one line) when the executor needs Ray and Ray is not installed."""
    if spec.startswith("ray"):
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            from pytest_vibecheck.execute.ray_executor import import_ray

            import_ray()  # raises the one-line error naming the extra
