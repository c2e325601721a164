"""Invisible when unused (issue 12): a pytest session with the plugin installed but neither
``--vibe-model``/``--vibe`` nor a CI option imports only the option tables and builds no
registry; the time it costs is measured by benchmarks/bench_plugin_unused.py."""

from __future__ import annotations

import json

import pytest

#: What an unused session may import of the package: the two pytest11 entry modules, the option
#: tables they register, the hook specs and the registry's (unbuilt) activation.
LIGHT = {
    "pytest_vibecheck",
    "pytest_vibecheck.ci",
    "pytest_vibecheck.ci.options",
    "pytest_vibecheck.ci.plugin",
    "pytest_vibecheck.errors",
    "pytest_vibecheck.hookspecs",
    "pytest_vibecheck.plugin",
    "pytest_vibecheck.plugin.hooks",
    "pytest_vibecheck.compose",
    "pytest_vibecheck.compose.session",
    "pytest_vibecheck.config",
    "pytest_vibecheck.config.settings",
    "pytest_vibecheck.registry",
    "pytest_vibecheck.types",
}

#: Layers an unused session must never import.
HEAVY = (
    "pytest_vibecheck.verify.",
    "pytest_vibecheck.execute.",
    "pytest_vibecheck.report.",
    "pytest_vibecheck.generate.",
    "pytest_vibecheck.ci.gate",
    "pytest_vibecheck.ci.items",
    "pytest_vibecheck.ci.reporter",
    "pytest_vibecheck.suites.",
    "pytest_vibecheck.compose.builtins",
    "pytest_vibecheck.compose.build",
    "pytest_vibecheck.plugin.run",
    "pytest_vibecheck.plugin.items",
)

MODULES_TEST = """
import json, sys

def test_modules():
    mods = sorted(m for m in sys.modules if m == "pytest_vibecheck" or m.startswith("pytest_vibecheck."))
    print("MODULES=" + json.dumps(mods))
"""


def _modules(result: pytest.RunResult) -> set[str]:
    line = next(line for line in result.outlines if "MODULES=" in line)
    return set(json.loads(line.partition("MODULES=")[2]))


def test_an_unused_session_imports_only_the_option_tables(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\n\n[tool.vibecheck]\nmodel = "openai:gpt-5"\n')
    pytester.makepyfile(test_mods=MODULES_TEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK
    mods = _modules(result)
    assert {"pytest_vibecheck.plugin.hooks", "pytest_vibecheck.ci.plugin"} <= mods  # both loaded
    assert sorted(m for m in mods if m.startswith(HEAVY)) == []
    assert sorted(mods - LIGHT) == []


def test_an_active_session_imports_the_layers(pytester: pytest.Pytester) -> None:
    """The check above can fail: the same probe in a gate-threshold session sees the layers."""
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_mods=MODULES_TEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", "--vibe-no-fail-items")
    mods = _modules(result)
    assert {"pytest_vibecheck.ci.reporter", "pytest_vibecheck.report.collector"} <= mods


CONFTEST_COUNTING = """
CALLS = []

def pytest_vibecheck_register(registry):
    CALLS.append(1)
    registry.add_check("team_nothing", lambda text: [], origin="team conftest")
"""

TEST_FIRST_USE = """
import conftest
from pytest_vibecheck.registry import get_registry

def test_built_on_first_use():
    assert conftest.CALLS == []  # not built by the session
    assert "team_nothing" in get_registry().checks.names()
    assert get_registry() is get_registry()
    assert conftest.CALLS == [1]
"""


def test_the_session_registry_is_built_on_first_use(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST_COUNTING)
    pytester.makepyfile(test_first=TEST_FIRST_USE)
    pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly").assert_outcomes(passed=1)


def test_a_bad_instruction_folder_is_a_usage_error_only_when_active(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\n\n[tool.vibecheck]\ninstruction_dirs = ["nope"]\n'
    )
    pytester.makepyfile(test_plain="def test_a() -> None:\n    pass\n")
    unused = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    unused.assert_outcomes(passed=1)  # nothing looked up: nothing to complain about
    active = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vibe-model", "reference")
    assert active.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: vibecheck: {pytester.path / 'nope'}: instruction folder does not exist (instruction_dirs)" in active.errlines
