"""pytest entry point ``pytest11: vibecheck-gate``: the CI side of pytest-vibecheck.

Options (all in the ``vibecheck`` option group; see ``docs/ci.md``):

* ``--vibe-gate``: the pull-request gate. Collects one item per (changed Python file,
  instruction declared in ``[tool.vibecheck.gate]``) instead of the test suite; the logic is in
  :mod:`pytest_vibecheck.ci.gate`. ``--vibe-base REF``, ``--vibe-gate-all-lines``,
  ``--vibe-gate-config PATH`` tune it.
* ``--vibe-fail-under METRIC=VALUE,...`` and ``--vibe-max-fr VALUE``: thresholds on the run's
  aggregates (:mod:`pytest_vibecheck.config.thresholds`) that decide ``session.exitstatus``.
* ``--vibe-no-fail-items``: items that fail (model failures, gate violations) do not fail the
  run; errors and ordinary tests still do, thresholds still gate.
* ``--vibe-shard I/N``: keep only shard I of N of the collected items
  (:mod:`pytest_vibecheck.config.shard`).

Per-item results travel in ``user_properties`` under ``"vibecheck_gate"`` (builtins only, so
they cross pytest-xdist); the controller-only :class:`CIReporter` collects them, prints the
summary, the GitHub annotations and the step summary, and sets the exit status.

This module holds the hooks only; they delegate to :mod:`~pytest_vibecheck.ci.options` (the
resolved options), :mod:`~pytest_vibecheck.ci.items` (gate items),
:mod:`~pytest_vibecheck.ci.reporter` (exit status, summaries, GitHub outputs),
:mod:`~pytest_vibecheck.ci.gate`, :mod:`~pytest_vibecheck.config.shard` and
:mod:`~pytest_vibecheck.config.thresholds`.
"""


from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vibecheck.ci.options import (
    CI_SETTINGS_KEY,
    SHARD_TOTAL_KEY,
    CISettings,
    resolve_ci_settings,
)
from pytest_vibecheck.config.settings import CI_OPTIONS, add_option_specs

# The gate, the reporter and the report layer are imported only when a CI option is given: a
# pytest session that does not use the plugin pays for the option table only
# (benchmarks/bench_plugin_unused.py; tests/test_plugin_unused.py).

if TYPE_CHECKING:
    from pytest_vibecheck.ci.items import GATE_RUN_KEY, GateFile, GateItem, GateRun
    from pytest_vibecheck.ci.reporter import REPORTER_KEY, CIReporter

__all__ = [
    "CI_SETTINGS_KEY",
    "GATE_RUN_KEY",
    "REPORTER_KEY",
    "SHARD_TOTAL_KEY",
    "CIReporter",
    "CISettings",
    "GateFile",
    "GateItem",
    "GateRun",
]

_LAZY = {
    "GATE_RUN_KEY": "pytest_vibecheck.ci.items",
    "REPORTER_KEY": "pytest_vibecheck.ci.reporter",
    "CIReporter": "pytest_vibecheck.ci.reporter",
    "GateFile": "pytest_vibecheck.ci.items",
    "GateItem": "pytest_vibecheck.ci.items",
    "GateRun": "pytest_vibecheck.ci.items",
}


def __getattr__(name: str) -> Any:
    """The gate's classes and stash keys, imported on first access (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


# ---------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    """The CI options (:data:`pytest_vibecheck.config.settings.CI_OPTIONS`), in the shared
    ``vibecheck`` group: command line, environment, ``[tool.vibecheck]`` and ini, as every
    setting."""
    add_option_specs(parser, CI_OPTIONS)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _settings(config: pytest.Config) -> CISettings | None:
    """The session's resolved CI options (None before this plugin's ``pytest_configure``)."""
    return config.stash.get(CI_SETTINGS_KEY, None)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Resolve the options once; in gate mode load the config and compute the diff (a bad
    config or base ref is a usage error, exit status 4); register the controller reporter.

    Last, so the reporter is registered after the benchmark's summary reporter and its
    terminal summary (thresholds, exit note) comes after the summary table."""
    settings = resolve_ci_settings(config)
    config.stash[CI_SETTINGS_KEY] = settings
    if settings.sarif is not None and not _is_worker(config):
        _check_sarif_path(config, settings)
    if settings.gate:
        config.addinivalue_line(
            "markers", "vibe_gate: a pull-request gate item of pytest-vibecheck (--vibe-gate)"
        )
        from pytest_vibecheck.ci.items import GATE_RUN_KEY, GateRun
        from pytest_vibecheck.compose.session import session_registry

        session_registry(config)  # built now: a bad instruction file is a usage error here
        config.stash[GATE_RUN_KEY] = GateRun.create(config, settings)
    if settings.used and not _is_worker(config):  # invisible when no CI option is given
        from pytest_vibecheck.ci.reporter import REPORTER_KEY, CIReporter

        reporter = CIReporter(config, settings)
        config.stash[REPORTER_KEY] = reporter
        config.pluginmanager.register(reporter, "vibecheck-ci-reporter")


def _check_sarif_path(config: pytest.Config, settings: CISettings) -> None:
    """``--vibe-sarif`` can be written and is not the JUnit file; else a usage error now, before
    the run spends anything."""
    from pytest_vibecheck.report.outputs import OutputPathError, check_output_path

    path = settings.sarif
    assert path is not None
    where = settings.sources.get("sarif", "--vibe-sarif")
    try:
        check_output_path(path, example="vibecheck.sarif")
    except OutputPathError as exc:
        raise pytest.UsageError(f"vibecheck: {where} {path}: {exc}") from None
    xml = config.getoption("xmlpath", None)
    if xml and Path(config.invocation_params.dir, xml).resolve() == path.resolve():
        raise pytest.UsageError(
            f"vibecheck: {where} {path}: the same file as --junitxml; give each output its own path"
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    """Unregister the controller reporter."""
    settings = _settings(config)
    if settings is None or not settings.used:
        return
    from pytest_vibecheck.ci.reporter import REPORTER_KEY

    reporter = config.stash.get(REPORTER_KEY, None)
    if reporter is not None:
        config.pluginmanager.unregister(reporter)
        del config.stash[REPORTER_KEY]


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """Add one :class:`GateFile` per changed Python file to the session's own collection, so
    the gate items are counted, selected by ``-k``/``-m`` and reported like any other."""
    report = yield
    settings = _settings(collector.config)
    if settings is None or not settings.gate:
        return report
    from pytest_vibecheck.ci.items import GATE_RUN_KEY, GateFile

    run = collector.config.stash.get(GATE_RUN_KEY, None)
    if run is not None and isinstance(collector, pytest.Session) and report.passed:
        report.result.extend(
            GateFile.from_parent(collector, path=run.diff.repo / cf.path, changed=cf)
            for cf in run.diff.files
        )
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Show a verifier error of a gate item as its one-line cause, without a traceback; carry
    the gate record as a report attribute, with short JUnit properties in its place."""
    report = yield
    settings = _settings(item.config)
    if settings is None or not settings.gate:  # not a gate run: no gate item
        return report
    from pytest_vibecheck.ci.items import GateInfraError, GateItem

    if not isinstance(item, GateItem):
        return report
    if call.excinfo is not None and isinstance(call.excinfo.value, GateInfraError):
        report.longrepr = f"{item.changed.path}: {call.excinfo.value}"
    from pytest_vibecheck.report.properties import gate_properties, move_record
    from pytest_vibecheck.report.records import GATE_PROP

    move_record(report, GATE_PROP, gate_properties)
    return report


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In gate-only mode (``--vibe-gate`` without ``--vibe-model``) the test suite is not collected."""
    if config.stash[CI_SETTINGS_KEY].gate and not getattr(config.option, "vibe_model", None):
        return True
    return None


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """Keep this shard's items, after every other plugin's hook (so shards split the final
    selection, after ``-k``/``-m``)."""
    result = yield
    settings = config.stash[CI_SETTINGS_KEY]
    if settings.shard is not None:
        from pytest_vibecheck.config import shard as shardmod

        index, count = settings.shard
        kept, dropped = shardmod.split(items, [it.nodeid for it in items], index, count)
        items[:] = kept
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        config.stash[SHARD_TOTAL_KEY] = len(kept) + len(dropped)
    return result


