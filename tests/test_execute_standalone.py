"""The execution layer on its own (issue "Layers that hold by themselves", item 4): the sandbox
runs tests given as its own small types (``execute.spec.ExecTask``, ``TestSpec``, ``TestCase``),
in an interpreter where the suites layer cannot even be imported, for every test kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from pytest_vibecheck.execute import sandbox

pytestmark = pytest.mark.skipif(
    sandbox.capabilities().mode == "process" or not sys.platform.startswith("linux"),
    reason="needs Linux namespaces",
)

#: Run in a child interpreter whose meta path refuses ``pytest_vibecheck.suites`` (and the
#: layers above execute; any import of them raises): prints the status of each labelled run.
CHILD = textwrap.dedent('''
    import json, sys

    class NoUpperLayers:
        BLOCKED = ("pytest_vibecheck.suites", "pytest_vibecheck.generate", "pytest_vibecheck.plugin",
                   "pytest_vibecheck.report", "pytest_vibecheck.reward", "pytest_vibecheck.ci")

        def find_spec(self, name, path=None, target=None):
            if name.startswith(self.BLOCKED):
                raise ImportError(f"{name} is above the execution layer")
            return None

    sys.meta_path.insert(0, NoUpperLayers())
    from pytest_vibecheck.execute.pool import run_many
    from pytest_vibecheck.execute.spec import ExecTask, TestCase, TestSpec
    from pytest_vibecheck.execute.tests import ExecSettings

    unit = ExecTask("mine", "mine/sq", TestSpec(kind="bigcodebench-unittest", entry_point="task_func",
                    code="import unittest\\nclass TestCases(unittest.TestCase):\\n"
                         "    def test_sq(self):\\n        self.assertEqual(task_func(3), 9)\\n"),
                    entry_point="task_func")
    he = ExecTask("mine", "mine/add", TestSpec(kind="humaneval", entry_point="add",
                  code="def check(candidate):\\n    assert candidate(2, 3) == 5\\n"), entry_point="add")
    io = ExecTask("mine", "mine/io", TestSpec(kind="stdin", cases=(TestCase("2\\n", "4\\n"),)))
    fn = ExecTask("mine", "mine/fn", TestSpec(kind="functional", entry_point="double",
                  cases=(TestCase("3", "6"),)), entry_point="double")
    items = [
        ("unit-right", "def task_func(x):\\n    return x * x\\n", unit),
        ("unit-wrong", "def task_func(x):\\n    return x + x\\n", unit),
        ("he-right", "def add(a, b):\\n    return a + b\\n", he),
        ("he-wrong", "def add(a, b):\\n    return a - b\\n", he),
        ("stdin-right", "print(int(input()) * 2)\\n", io),
        ("stdin-wrong", "print(int(input()) * 3)\\n", io),
        ("fn-right", "class Solution:\\n    def double(self, x):\\n        return 2 * x\\n", fn),
        ("fn-wrong", "class Solution:\\n    def double(self, x):\\n        return 3 * x\\n", fn),
    ]
    results = run_many([(code, task) for _, code, task in items],
                       ExecSettings(time_limit_s=20.0, startup_s=20.0, grading="lcb"), None, workers=2)
    print(json.dumps({"statuses": {label: r.status for (label, _, _), r in zip(items, results)},
                      "suites_loaded": "pytest_vibecheck.suites" in sys.modules}))
''')


def test_the_sandbox_runs_every_test_kind_without_the_suites_layer() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=300, check=False, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["statuses"] == {
        "unit-right": "passed", "unit-wrong": "failed",
        "he-right": "passed", "he-wrong": "failed",
        "stdin-right": "passed", "stdin-wrong": "failed",
        "fn-right": "passed", "fn-wrong": "failed",
    }
    assert got["suites_loaded"] is False


def test_the_test_sources_own_warnings_are_not_the_users(recwarn: pytest.WarningsRecorder) -> None:
    """Reading a test source for the names it binds and expects raises none of the warnings
    its text does (BigCodeBench/19's ``'\\#'``: a cold quick-start run printed 3
    ``DeprecationWarning: invalid escape sequence`` lines), and the look-ups still work."""
    from pytest_vibecheck.execute.judged import free_names, import_bindings

    source = "import os.path\nfrom string import punctuation as p\nPATTERN = '\\#x'\n" \
             "def check(candidate):\n    assert candidate(PATTERN) == helper(p)\n"
    assert import_bindings(source) == ("os", "p")
    assert free_names(source) == ("helper",)
    assert [str(w.message) for w in recwarn] == []
