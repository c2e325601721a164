"""The Ray executor against the local pool: same results, cache entries and metrics.

Starts a real local Ray cluster (``ray.init(num_cpus=2)``, a few seconds) inside a network
namespace that has only loopback: the module's first test runs this file again under
``unshare -n`` (``ip link set lo up``, ``RAY_AUTH_MODE=disabled``, usage stats off), where the
Ray tests run; outside it they are skipped, so no test sends traffic beyond loopback (Ray
binds the host's interface address and probes 8.8.8.8:53 at start otherwise). Skipped where
Ray is not installed (it is in the ``dev`` extra). Marked slow.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from exec_helpers import bcb_problem, humaneval_problem
from plugin_helpers import write_tiny_suite

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.cache import ExecCache
from pytest_vibecheck.execute.calibrate import Calibrator
from pytest_vibecheck.execute.executor import LocalExecutor, make_executor
from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow

#: Set in the run of this file inside the loopback-only namespace.
NETNS_FLAG = "VIBECHECK_RAY_NETNS"
INSIDE = os.environ.get(NETNS_FLAG) == "1"


def _netns() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    flags = "-n" if os.geteuid() == 0 else "-rn"
    return subprocess.run(["unshare", flags, "true"], capture_output=True, check=False).returncode == 0


@pytest.mark.skipif(INSIDE, reason="this is the run inside the namespace")
def test_the_ray_tests_pass_in_a_loopback_only_network_namespace() -> None:
    if not _netns():
        pytest.skip("cannot make a loopback-only network namespace (unshare): the Ray tests "
                    "do not run outside one")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update({NETNS_FLAG: "1", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"})
    script = (f"ip link set lo up && exec {shlex.quote(sys.executable)} -m pytest -q -p no:xdist "
              f"-p no:cacheprovider {shlex.quote(__file__)}")
    flags = "-n" if os.geteuid() == 0 else "-rn"
    done = subprocess.run(["unshare", flags, "sh", "-c", script], env=env, capture_output=True,
                          text=True, timeout=900, check=False, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"\b4 passed, 1 skipped\b", done.stdout), done.stdout[-2000:]


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    if not INSIDE:
        pytest.skip("Ray runs only inside the loopback-only namespace (the test above)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def _batch() -> list[tuple[str, Any]]:
    he, bcb = humaneval_problem(), bcb_problem()
    return [
        ("def add(a, b):\n    return a + b\n", he),
        ("def add(a, b):\n    return a - b\n", he),
        ("while True:\n    pass\n", he),
        ("import os\ndef task_func(x):\n    os._exit(3)\n", bcb),
        ("def task_func(x):\n    return x * x\n", bcb),
        ("def task_func(x:\n", bcb),
    ]


def _essence(r: ExecResult) -> tuple[Any, ...]:
    return (r.status, r.failed_tests, r.limits.get("time_limit_s"), r.network, r.cached)


def _rows(path: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    with sqlite3.connect(path) as conn:
        out = {}
        for key, blob in conn.execute("SELECT key, result FROM results"):
            data = json.loads(blob)
            out[key] = (data["status"], tuple(data["failed_tests"]))
        return out


def test_exec_batch_on_ray_matches_the_local_pool(ray_cluster: Any, tmp_path: Path) -> None:
    # one calibration store per side: lazy calibration remembers that a task's candidates ran
    # past the floor and then times its reference up front, so a shared store would give the
    # second side calibrated limits from the first side's history, whatever the executor
    def settings(side: str) -> ExecSettings:
        return ExecSettings(
            calibrator=Calibrator(tmp_path / f"cal-{side}.sqlite", floor_s=1.0), startup_s=5.0
        )

    local = run_many(_batch(), settings("local"), ExecCache(tmp_path / "local.sqlite"), workers=2)
    executor = make_executor("ray")
    try:
        assert executor.name == "ray"
        ray_settings = settings("ray")
        remote = run_many(_batch(), ray_settings, ExecCache(tmp_path / "ray.sqlite"), executor=executor)
        again = run_many(_batch(), ray_settings, ExecCache(tmp_path / "ray.sqlite"), executor=executor)
    finally:
        executor.close()
    assert [r.status for r in local] == [
        "passed", "failed", "timeout", "failed", "passed", "failed"
    ]
    assert [_essence(r) for r in remote] == [_essence(r) for r in local]
    # identical cache entries (same keys, same verdicts) whichever executor ran them
    assert _rows(tmp_path / "ray.sqlite") == _rows(tmp_path / "local.sqlite")
    assert [r.cached for r in again] == [True] * 6
    assert ray_cluster.is_initialized()  # a connection the caller made is left open


def test_plugin_run_on_ray_matches_the_local_pool(
    ray_cluster: Any, pytester: pytest.Pytester
) -> None:
    write_tiny_suite(pytester.path / "suite")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    common = ["--vibe-model", "reference", "--vibe-suite", "suite", "-p", "no:randomly",
              "--vibe-protocol", "baseline,multi", "--vibe-k", "1"]
    reports = {}
    for name in ("local", "ray"):
        res = pytester.runpytest(
            *common, "--vibe-executor", name, "--vibe-report", f"{name}.json",
            "--vibe-cache", f"{name}/cache.sqlite",
        )
        res.assert_outcomes(passed=1, failed=5)
        reports[name] = json.loads((pytester.path / f"{name}.json").read_text())

    def items(rep: dict[str, Any]) -> list[Any]:
        return sorted(
            (it["nodeid"], it["passed"], [t["tests"]["status"] for t in it["turns"]])
            for it in rep["items"]
        )

    assert items(reports["ray"]) == items(reports["local"])
    assert reports["ray"]["aggregates"] == reports["local"]["aggregates"]
    assert reports["ray"]["run"]["settings"]["executor"] == "ray"
    assert _rows(pytester.path / "ray" / "exec-cache.sqlite") == _rows(
        pytester.path / "local" / "exec-cache.sqlite"
    )


def test_unknown_executor_is_one_line() -> None:
    with pytest.raises(VibecheckError, match=r"unknown executor 'spark'; use 'local', 'ray'"):
        make_executor("spark")
    assert isinstance(make_executor("local"), LocalExecutor)


ADD = {
    "test": {
        "kind": "humaneval",
        "code": "def check(candidate):\n    assert candidate(2, 3) == 5\n",
        "entry_point": "add",
    },
    "entry_point": "add",
    "instructions": ["doc_1", "doc_5"],
}
REPLIES = [
    "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```\n",
    "```python\ndef add(a, b):\n    # the sum\n    return a + b\n```\n",
    "```python\ndef add(a: int, b: int) -> int:\n    return a - b\n```\n",
]


def test_reward_api_on_ray_matches_the_local_pool(ray_cluster: Any) -> None:
    from pytest_vibecheck.reward import RewardConfig, score_batch

    local = score_batch(REPLIES, [ADD] * 3, RewardConfig())
    remote = score_batch(REPLIES, [ADD] * 3, RewardConfig(executor="ray"))
    assert [(r.reward, r.exec_status) for r in remote] == [(r.reward, r.exec_status) for r in local]
    assert [r.exec_status for r in local] == ["passed", "passed", "failed"]
