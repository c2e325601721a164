"""pytest entry point (``pytest11: vibecheck``): hooks only, delegating to the package's modules.

The plugin acts only when a model is given (``--vibe-model``, or ``--vibe`` with models from the
environment or ``[tool.vibecheck]``); otherwise it collects nothing and ordinary test suites are
unaffected. See docs/plugin.md.

- settings: :mod:`pytest_vibecheck.config.settings` (resolved once into ``config.stash[SETTINGS_KEY]``);
- collection: :mod:`pytest_vibecheck.plugin.items` (one item per problem x model x protocol x k x sample);
- running an item: :mod:`pytest_vibecheck.plugin.run` (per-process ``Runtime`` in the stash);
- reports: :mod:`pytest_vibecheck.report` (controller-only ``VibeSummary``).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vibecheck.compose.session import (
    REGISTRY_KEY,
    activate_session_registry,
    session_registry,
)
from pytest_vibecheck.config.settings import (
    SETTINGS_KEY,
    VibeSettings,
    add_options,
    resolve_settings,
)
from pytest_vibecheck.errors import VibecheckError

# The rest is imported inside the hooks, once the benchmark is active: a pytest session that
# does not use the plugin pays for this module and the option table only; the registry is built
# on first use (benchmarks/bench_plugin_unused.py; tests/test_plugin_unused.py checks which
# modules such a session imports).

if TYPE_CHECKING:
    from pytest_vibecheck.plugin.items import VibeItem
    from pytest_vibecheck.plugin.run import Runtime
    from pytest_vibecheck.suites.store import Suite

_RUN_ID_KEY = "vibecheck_run_id"
_PLAN_KEY = "vibecheck_plan"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Add pytest-vibecheck's own hooks (:mod:`pytest_vibecheck.hookspecs`). The built-ins
    (which register through ``pytest_vibecheck_register`` like any plugin) and the plugins of
    the entry-point group ``pytest_vibecheck`` are loaded when the session's registry is built
    (:mod:`pytest_vibecheck.compose.session`)."""
    from pytest_vibecheck import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``vibecheck`` option group (every ``--vibe-*`` option and ini key)."""
    add_options(parser)


class _XdistHooks:
    """Hooks that exist only with pytest-xdist: share the run id and the expected durations
    with the workers, and schedule ``--dist load`` by the duration plan
    (:mod:`pytest_vibecheck.plugin.xdist_sched`)."""

    def __init__(self, run_id: str, expected: dict[str, Any], planned: bool) -> None:
        self.run_id = run_id
        self.expected = expected
        self.planned = planned

    def pytest_configure_node(self, node: Any) -> None:
        from pytest_vibecheck.plugin.ordering import WORKERINPUT_KEY

        node.workerinput[_RUN_ID_KEY] = self.run_id
        node.workerinput[WORKERINPUT_KEY] = self.expected
        node.workerinput[_PLAN_KEY] = self.planned

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if not self.planned:
            return None
        from pytest_vibecheck.plugin.xdist_sched import DurationScheduling

        return DurationScheduling(config, log)


@pytest.hookimpl(tryfirst=True)  # the registry is set up before other plugins configure
def pytest_configure(config: pytest.Config) -> None:
    """Resolve the settings and activate the session's registry (built through
    ``pytest_vibecheck_register``, so ``conftest.py`` and entry-point plugins count; on first
    use, so a session that does not use the plugin never builds it); when active, build the
    registry now and the per-process runtime (validating every model spec, key and SDK before
    any item runs) and, on the controller, the summary reporter."""
    settings = resolve_settings(config)
    config.stash[SETTINGS_KEY] = settings
    config.stash[REGISTRY_KEY] = activate_session_registry(config, settings.instruction_dirs)
    if not settings.active:  # invisible: no markers, no reporter, nothing printed or built
        return
    session_registry(config)  # a bad instruction file or a clash is a usage error now
    from pytest_vibecheck.plugin.items import marker_help
    from pytest_vibecheck.plugin.run import RUNTIME_KEY, Runtime
    from pytest_vibecheck.plugin.run.runtime import uncaptured_display
    from pytest_vibecheck.report.progress import RunProgress
    from pytest_vibecheck.report.session import SUMMARY_KEY, VibeSummary

    for line in marker_help():  # all named vibe_*, registered only when the benchmark runs
        config.addinivalue_line("markers", line)
    from pytest_vibecheck import _gc

    _gc.freeze_at_exit()  # the interpreter's exit then skips walking the run's objects
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput.get(_RUN_ID_KEY) if workerinput is not None else None
    if workerinput is None:  # before anything is opened or spent
        _check_outputs(config, settings)
    planned = bool(workerinput.get(_PLAN_KEY)) if workerinput is not None else False
    try:
        from pytest_vibecheck.suites.store import find_suite

        runtime = Runtime(settings, run_id=run_id, owner=workerinput is None, planned=planned,
                          display=uncaptured_display(config))
    except VibecheckError as exc:
        raise pytest.UsageError(f"vibecheck: {exc}") from None
    try:
        for suite in settings.suites:
            find_suite(suite)
    except VibecheckError as exc:
        runtime.close()
        raise pytest.UsageError(f"vibecheck: {exc}") from None
    config.stash[RUNTIME_KEY] = runtime
    if workerinput is None:
        from pytest_vibecheck.config.selection import SELECTION_KEY, Selection
        from pytest_vibecheck.plugin.deselection import register_counter

        selection = config.stash[SELECTION_KEY] = Selection.of(settings)
        register_counter(config, selection)
        summary = VibeSummary(config, settings)
        summary.selection = selection
        summary.environment = runtime.environment.to_dict()
        summary.guard = runtime.guard
        config.stash[SUMMARY_KEY] = summary
        config.pluginmanager.register(summary, "vibecheck-summary")
        progress = RunProgress(config, runtime.guard, settings.progress)
        config.pluginmanager.register(progress, "vibecheck-progress")
        if config.pluginmanager.hasplugin("xdist"):
            from pytest_vibecheck.plugin.ordering import encode

            cal = runtime.exec_settings.calibrator
            expected = encode(cal.snapshot()) if cal is not None else {}
            planned = config.getoption("dist", "no") == "load"
            config.pluginmanager.register(
                _XdistHooks(runtime.run_id, expected, planned), "vibecheck-xdist"
            )


def _check_outputs(config: pytest.Config, settings: VibeSettings) -> None:
    """Every report file of the run can be written (:func:`~pytest_vibecheck.report.outputs.
    check_output_path`), and no two outputs share a path; else a one-line usage error naming
    the setting, where it came from, and the path."""
    from pytest_vibecheck.report.outputs import OutputPathError, check_output_path

    seen: dict[Path, str] = {}
    xmlpath = getattr(config.option, "xmlpath", None)  # pytest's own --junitxml
    if xmlpath:
        seen[Path(config.invocation_params.dir, xmlpath).resolve()] = "--junitxml"
    for name, example in (("report", "vibe.json"), ("junitxml", "vibe.xml")):
        path = getattr(settings, name)
        if path is None:
            continue
        where = settings.sources.get(name, name)
        try:
            check_output_path(path, example=example)
        except OutputPathError as exc:
            raise pytest.UsageError(f"vibecheck: {where} {path}: {exc}") from None
        key = path.resolve()
        if key in seen:
            raise pytest.UsageError(
                f"vibecheck: {where} {path}: the same file as {seen[key]}; give each output "
                "its own path"
            )
        seen[key] = where


def _active(config: pytest.Config) -> bool:
    settings = config.stash.get(SETTINGS_KEY, None)
    return settings is not None and settings.active


def pytest_unconfigure(config: pytest.Config) -> None:
    """Close the runtime, unregister the reporter and restore the registry active before."""
    active = config.stash.get(REGISTRY_KEY, None)
    if active is not None:
        active.close()
        del config.stash[REGISTRY_KEY]
    if not _active(config):
        return
    from pytest_vibecheck.plugin.run import RUNTIME_KEY
    from pytest_vibecheck.report.session import SUMMARY_KEY

    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is not None:
        runtime.close()
        del config.stash[RUNTIME_KEY]
    summary = config.stash.get(SUMMARY_KEY, None)
    if summary is not None:
        del config.stash[SUMMARY_KEY]
        config.pluginmanager.unregister(summary)
    for name in ("vibecheck-xdist", "vibecheck-deselections", "vibecheck-deselections-late", "vibecheck-progress"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Tell the run guard how many benchmark items the run has (for ``--vibe-max-errors P%``)."""
    if not _active(session.config):
        return
    from pytest_vibecheck.plugin.items import VibeItem
    from pytest_vibecheck.plugin.run import RUNTIME_KEY

    runtime = session.config.stash.get(RUNTIME_KEY, None)
    if runtime is not None:
        runtime.guard.items = sum(isinstance(i, VibeItem) for i in session.items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Batch mode: the batches of the session's items before the first item runs, outside any
    item (a wait of hours is no item's deadline); nothing with ``--collect-only`` or after
    collection errors. The test loop itself is pytest's (or xdist's)."""
    if not _active(session.config) or session.config.getoption("collectonly") or session.testsfailed:
        return
    from pytest_vibecheck.plugin.run import RUNTIME_KEY
    from pytest_vibecheck.plugin.run.spec import ItemSpec

    runtime = session.config.stash.get(RUNTIME_KEY, None)
    if runtime is not None and runtime.batchers:
        specs = [s for s in (getattr(i, "spec", None) for i in session.items) if isinstance(s, ItemSpec)]
        runtime.prepare_batches(specs)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """One header line with the run's models, suites, protocols and cache."""
    settings = config.stash.get(SETTINGS_KEY, None)
    if settings is None or not settings.active:
        return None
    from pytest_vibecheck.config.selection import header_part
    from pytest_vibecheck.plugin.run import RUNTIME_KEY

    cache = "off" if settings.cache_mode == "off" else f"{settings.cache} ({settings.cache_mode})"
    here = Path(config.invocation_params.dir)
    suites = [
        str(Path(s).relative_to(here)) if Path(s).is_absolute() and Path(s).is_relative_to(here) else s
        for s in settings.suites
    ]
    lines = [
        f"vibecheck: models {', '.join(settings.models)}; suites {', '.join(suites)}; "
        f"profile {settings.profile}; "
        f"protocols {','.join(settings.protocols)}; k {','.join(map(str, settings.ks))}; "
        f"samples {settings.samples}; generation cache {cache}{header_part(settings)}",
        *_environment_lines(config, settings),
    ]
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is not None:
        lines.append(f"vibecheck: {runnable_line(runtime, settings.suites)}")
    return lines


def runnable_line(runtime: Runtime, suites: Any) -> str:
    """``execution environment bigvibebench@6dc38aaeabf7 (...): 1,131 of 1,140 bigvibebench
    tasks can run; executor local``."""
    from pytest_vibecheck.execute.envcheck import absent_libraries, check_environment
    from pytest_vibecheck.suites.store import load_suite

    env = runtime.environment
    python = None if env.id == "" else env.python
    parts = []
    for name in suites:
        try:
            suite = load_suite(name)
        except VibecheckError:
            continue  # reported by the collection
        rep = check_environment(suite.problems, suite=suite.name, python=python)
        parts.append(f"{len(rep.runnable):,} of {rep.total:,} {suite.name} tasks can run")
    absent = absent_libraries(python)
    if absent:  # what a reply cannot import here: such a reply is skipped, not an error
        shown = ", ".join(absent[:4]) + (f" and {len(absent) - 4} more" if len(absent) > 4 else "")
        parts.append(
            f"a reply that imports a BigCodeBench library not installed here ({shown}) is "
            "skipped"
        )
    return (
        f"execution environment {env.describe()}: {'; '.join(parts) or 'no suite'}; "
        f"executor {runtime.settings.executor}"
    )


def order_by_duration(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the benchmark items by expected duration (longest first, spread over the xdist
    workers: :mod:`pytest_vibecheck.plugin.ordering`)."""
    from pytest_vibecheck.plugin.run import RUNTIME_KEY

    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        return
    from pytest_vibecheck.execute.envcheck import missing_modules
    from pytest_vibecheck.plugin.ordering import WORKERINPUT_KEY, decode, order_items

    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        expected = decode(workerinput.get(WORKERINPUT_KEY, {}))
        workers = int(workerinput.get("workercount", 1)) if runtime.planned else 1
    else:
        cal = runtime.exec_settings.calibrator
        expected = cal.snapshot() if cal is not None else {}
        workers = 1
    python = runtime.exec_settings.sandbox.python
    runnable: dict[str, bool] = {}
    for it in items:
        spec = getattr(it, "spec", None)
        if spec is not None and spec.problem.task_id not in runnable:
            runnable[spec.problem.task_id] = not missing_modules(spec.problem, python)
    order_items(items, expected, workers, runnable)


def _sandbox_python(config: pytest.Config) -> str | None:
    from pytest_vibecheck.plugin.run import RUNTIME_KEY

    runtime = config.stash.get(RUNTIME_KEY, None)
    exec_settings = runtime.exec_settings if runtime is not None else None
    return exec_settings.sandbox.python if exec_settings is not None else None


def _environment_lines(config: pytest.Config, settings: VibeSettings) -> list[str]:
    """The header line on tasks that cannot run here (:func:`preflight.header_line`), if any."""
    from pytest_vibecheck.plugin import preflight
    from pytest_vibecheck.plugin.items import select_problems
    from pytest_vibecheck.suites.store import load_suite

    missing: dict[str, tuple[str, ...]] = {}
    total = 0
    for name in settings.suites:
        try:
            suite = load_suite(name)
        except VibecheckError:
            continue  # reported as a usage error at collection
        problems = select_problems(suite.problems, settings.tasks, settings.limit)
        total += len(problems)
        found = preflight.missing_by_task(problems, _sandbox_python(config))
        missing.update({f"{suite.name}::{t}": m for t, m in found.items()})
    line = preflight.header_line(missing, total)
    return [line] if line else []


def _explicit_args(config: pytest.Config) -> bool:
    source = getattr(config, "args_source", None)
    return source == pytest.Config.ArgsSource.ARGS


def _load_suite(name: str) -> Suite:
    from pytest_vibecheck.suites.store import load_suite

    try:
        return load_suite(name)
    except VibecheckError as exc:
        raise pytest.UsageError(f"vibecheck: --vibe-suite {name}: {exc}") from None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Add one collector per suite to the session's collection. Without explicit paths on the
    command line, the test files (``testpaths``) are not collected in a benchmark run."""
    report = yield
    if not isinstance(collector, pytest.Session):
        return report
    config = collector.config
    settings = config.stash.get(SETTINGS_KEY, None)
    if settings is None or not settings.active or report.outcome != "passed":
        return report
    from pytest_vibecheck.config.selection import SELECTION_KEY, check_task_globs
    from pytest_vibecheck.generate.setup import generation_setup
    from pytest_vibecheck.plugin import preflight
    from pytest_vibecheck.plugin.items import make_suite_collector, plan_items, select_problems
    from pytest_vibecheck.suites.profiles import get_profile
    from pytest_vibecheck.suites.store import file_sha256

    profile = get_profile(settings.profile)

    result = list(report.result) if _explicit_args(config) else []
    suites = [_load_suite(name) for name in settings.suites]
    try:
        check_task_globs(
            settings.tasks,
            {s.name: [p.task_id for p in s.problems] for s in suites},
            settings.sources.get("tasks", "--vibe-tasks"),
        )
    except VibecheckError as exc:
        raise pytest.UsageError(f"vibecheck: {exc}") from None
    selection = config.stash.get(SELECTION_KEY, None)
    for suite in suites:
        manifest = suite.path / "manifest.json"
        digest = file_sha256(manifest) if manifest.is_file() else None
        problems = select_problems(suite.problems, settings.tasks, settings.limit)
        if selection is not None:
            selection.suites[suite.name] = (len(problems), len(suite.problems))
        kinds = sorted({p.test.kind for p in suite.problems if not profile.applies_to(p.test.kind)})
        if kinds:
            raise pytest.UsageError(
                f"vibecheck: --vibe-suite {suite.name}: profile {profile.name!r} "
                f"({profile.description}) does not apply to tests of kind {', '.join(kinds)}; "
                "use --vibe-profile=paper"
            )
        try:
            setup = generation_setup(
                profile,
                suite.manifest,
                temperature=settings.temperature,
                system_prompt=settings.system_prompt,
            )
        except ValueError as exc:
            raise pytest.UsageError(f"vibecheck: --vibe-suite {suite.name}: {exc}") from None
        missing = preflight.missing_by_task(problems, _sandbox_python(config))
        specs = list(plan_items(suite.name, digest, problems, settings, missing, setup))
        result.append(make_suite_collector(collector, suite.name, specs, settings.samples))
    report.result = result
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Show an infrastructure error as its one-paragraph cause, without a traceback; carry the
    item's record as a report attribute, with short properties for JUnit files in its place
    (:func:`pytest_vibecheck.report.properties.move_record`). The full record travels once,
    with the setup report (the item runs in its setup, so the record is complete when setup
    ends); the call and teardown reports carry the marker
    :data:`~pytest_vibecheck.report.collector.SAME_AS_SETUP` (slim reports over xdist: every
    reader on the controller keeps what it needs from the setup report)."""
    report = yield
    if not _active(item.config):
        return report
    from pytest_vibecheck.plugin.items import VibeItem
    from pytest_vibecheck.plugin.run import VibeInfraError

    if not isinstance(item, VibeItem):
        return report
    if call.excinfo is not None and isinstance(call.excinfo.value, VibeInfraError):
        report.longrepr = str(call.excinfo.value)
    from pytest_vibecheck.report.collector import SAME_AS_SETUP
    from pytest_vibecheck.report.properties import RECORDS_ATTR, item_properties, move_record

    move_record(report, "vibecheck", item_properties)
    records = getattr(report, RECORDS_ATTR, None)
    if call.when != "setup" and isinstance(records, dict) and "vibecheck" in records:
        records["vibecheck"] = SAME_AS_SETUP
    return report


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the benchmark items by expected duration (:func:`order_by_duration`, after any
    selection or sharding), then give each its hard deadline (pytest-timeout's ``timeout``
    marker)."""
    settings = config.stash.get(SETTINGS_KEY, None)
    if settings is None or not settings.active:
        return
    order_by_duration(config, items)
    if not config.pluginmanager.hasplugin("timeout"):
        return
    from pytest_vibecheck.plugin.deadline import timeout_method
    from pytest_vibecheck.plugin.items import VibeItem

    method = timeout_method()
    for item in items:
        if isinstance(item, VibeItem):
            item.add_marker(pytest.mark.timeout(item_timeout_s(settings, item), method=method))


def item_timeout_s(settings: VibeSettings, item: VibeItem) -> float:
    """``--vibe-item-timeout`` if set, else :func:`~pytest_vibecheck.plugin.deadline.item_deadline_s`
    from the backend's request timeout and retries and the sandbox's time limits."""
    from pytest_vibecheck.plugin.deadline import item_deadline_s

    if settings.item_timeout is not None:
        return settings.item_timeout
    from pytest_vibecheck.execute.calibrate import DEFAULT_REFERENCE_LIMIT_S
    from pytest_vibecheck.execute.tests import DEFAULT_TIME_LIMITS, ExecSettings
    from pytest_vibecheck.plugin.run.runtime import backend_settings

    backend = backend_settings(settings)
    startup = ExecSettings().startup_s
    return item_deadline_s(
        protocol=item.spec.protocol,
        k=item.spec.k,
        request_timeout_s=backend.timeout_s,
        retries=backend.max_retries,
        concurrency=settings.concurrency,
        exec_limit_s=max(DEFAULT_TIME_LIMITS.values()) + startup,
        calibration_s=DEFAULT_REFERENCE_LIMIT_S,
    )


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> str | None:
    """A line with the number of benchmark items, the share of each suite's tasks when not all
    were selected, and the items deselected (by which option) when some were."""
    settings = config.stash.get(SETTINGS_KEY, None)
    if settings is None or not settings.active:
        return None
    from pytest_vibecheck.config.selection import SELECTION_KEY
    from pytest_vibecheck.plugin.items import VibeItem

    n = sum(isinstance(i, VibeItem) for i in items)
    selection = config.stash.get(SELECTION_KEY, None)
    if selection is None:
        return f"vibecheck: {n} items"
    selection.selected = n
    return selection.collection_line()

