"""Security and isolation tests of the sandbox (docs/sandbox.md)."""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from exec_helpers import bcb_problem, humaneval_problem, load_file_module

from pytest_vibecheck.execute import sandbox
from pytest_vibecheck.execute.sandbox import SandboxError, SandboxSettings, run_in_sandbox
from pytest_vibecheck.execute.tests import ExecSettings, run_tests

PY = sys.executable
CAPS = sandbox.capabilities()
NAMESPACES = CAPS.mode != "process"
ROOT_NS = CAPS.mode == "namespaces-root"

needs_ns = pytest.mark.skipif(not NAMESPACES, reason=f"no namespaces here: {CAPS.reason}")
needs_root_ns = pytest.mark.skipif(not ROOT_NS, reason="needs root and unshare")

LAUNCHERS = [
    pytest.param(True, id="fork-server"),
    pytest.param(False, id="subprocess"),
]


def run_py(code: str, **kw: Any) -> sandbox.SandboxResult:
    """Run ``code`` in the sandbox; ``kw`` are :class:`SandboxSettings` fields."""
    return run_in_sandbox(argv=[PY, "-c", code], settings=SandboxSettings(**kw))


def processes_of(uid: int) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


# ----------------------------------------------------------------------------- secrets


SCAN_ENV = """
import glob, os
print("NAMES", sorted(os.environ))
found = [k for k, v in os.environ.items() if "sk-planted" in v]
for path in glob.glob("/proc/*/environ"):
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    if b"sk-planted" in data:
        found.append(path)
print("FOUND", found)
"""


@pytest.mark.parametrize("fork_server", LAUNCHERS)
def test_planted_api_key_is_invisible(monkeypatch: pytest.MonkeyPatch, fork_server: bool) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-0123456789")
    monkeypatch.setenv("HTTPS_PROXY", "http://sk-planted-proxy:3128")
    monkeypatch.setenv("MY_SECRET", "sk-planted-secret")
    sandbox.shutdown_fork_servers()  # the next fork server starts with the key in our env
    res = run_py(SCAN_ENV, fork_server=fork_server)
    assert res.status == "ok", res
    assert "FOUND []" in res.stdout, res.stdout
    assert "OPENAI_API_KEY" not in res.stdout
    assert "HTTPS_PROXY" not in res.stdout
    names = res.stdout.split("NAMES", 1)[1].split("\n", 1)[0]
    assert "'MPLBACKEND'" in names and "'HOME'" in names


def test_secret_like_extra_env_is_refused() -> None:
    with pytest.raises(SandboxError, match="OPENAI_API_KEY"):
        SandboxSettings(extra_env=(("OPENAI_API_KEY", "x"),))
    with pytest.raises(SandboxError, match="http_proxy"):
        SandboxSettings(extra_env=(("http_proxy", "x"),))


def test_environment_is_minimal_and_folder_removed() -> None:
    res = run_py(
        "import os\nprint(os.getcwd())\nprint(os.environ['HOME'] == os.getcwd())\n"
        "print(os.environ['MPLBACKEND'], os.environ['LANG'])\nprint(os.listdir('.'))\n"
    )
    assert res.status == "ok", res
    cwd, home_is_cwd, env_line, listing = res.stdout.splitlines()
    assert home_is_cwd == "True"
    assert env_line == "Agg C.UTF-8"
    assert listing == "[]"  # nothing of ours in the candidate's folder
    assert not Path(cwd).exists()


# ----------------------------------------------------------------------------- limits

FORK_UNTIL_LIMIT = """
import os, time
n = 0
try:
    while n < 10000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print("LIMIT", n, type(e).__name__)
"""


@needs_root_ns
@pytest.mark.parametrize("fork_server", LAUNCHERS)
def test_fork_bomb_is_bounded_and_cleaned_up(fork_server: bool) -> None:
    res = run_py(FORK_UNTIL_LIMIT, nproc=32, timeout_s=30, fork_server=fork_server)
    assert res.status == "ok", res
    word, count, exc = res.stdout.split()
    assert word == "LIMIT" and exc == "BlockingIOError"
    assert 20 <= int(count) < 32  # the limit counts the sandbox's own processes too
    assert res.duration_s < 20  # the sleeping children were killed with the namespace
    assert processes_of(res.isolation["uid"]) == []


@needs_root_ns
def test_real_fork_bomb_times_out_and_leaves_nothing() -> None:
    res = run_py(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        timeout_s=3,
    )
    assert res.status == "timeout"
    assert res.duration_s < 10
    assert processes_of(res.isolation["uid"]) == []


def test_infinite_loop_times_out() -> None:
    prob = humaneval_problem()
    settings = ExecSettings(time_limit_s=1.0, startup_s=5)
    res = run_tests("while True:\n    pass\n", prob, settings)
    assert res.status == "timeout"
    assert res.failed_tests == ("<import>",)
    assert "time limit of 1 s exceeded" in res.message
    assert res.duration_s < 5


def test_loop_that_holds_the_harness_off_is_killed_by_the_wall_clock() -> None:
    # a regular expression that backtracks for hours holds the interpreter lock: an
    # in-process harness cannot even end the run itself, the sandbox's wall clock does
    prob = bcb_problem()
    code = "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')\n"
    res = run_tests(code, prob, ExecSettings(time_limit_s=1.0, startup_s=1.0))
    assert res.status == "timeout"
    assert "wall-clock limit of 2.0 s exceeded" in res.message
    assert 1.9 < res.duration_s < 6


def test_a_judge_in_its_own_process_is_never_held_off() -> None:
    # the same loop in a HumanEval candidate: the judge runs in another process, so its own
    # time limit ends the run, not the wall clock
    code = "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')\n"
    res = run_tests(code, humaneval_problem(), ExecSettings(time_limit_s=1.0, startup_s=5.0))
    assert (res.status, res.failed_tests, res.message) == (
        "timeout", ("<import>",), "time limit of 1 s exceeded")
    assert res.duration_s < 4


def test_allocating_50_gb_fails_cleanly() -> None:
    prob = humaneval_problem("def check(candidate):\n    candidate(1, 2)\n")
    code = "def add(a, b):\n    return len(bytearray(50 * 2**30))\n"
    res = run_tests(code, prob, ExecSettings(time_limit_s=20))
    assert res.status == "failed"
    assert res.failed_tests == ("check",)
    assert "MemoryError" in res.message
    lim = res.limits
    assert lim["address_space_mb"] == pytest.approx(lim["baseline_mb"] + 4096, abs=0.2)
    assert lim["baseline_mb"] < 1024  # relative to the child's own size, not an absolute cap


def test_address_space_limit_is_relative_to_the_start_size() -> None:
    res = run_py("x = bytearray(300 * 2**20)\nprint(len(x))\n", memory_headroom_mb=512)
    assert res.status == "ok" and res.stdout.strip() == str(300 * 2**20)
    res = run_py("x = bytearray(700 * 2**20)\n", memory_headroom_mb=512)
    assert res.returncode == 1 and "MemoryError" in res.stderr


def test_output_is_truncated() -> None:
    res = run_py("import sys\nsys.stdout.write('x' * 200000)\n", max_output_bytes=1000)
    assert res.stdout_truncated
    assert res.stdout.startswith("x" * 1000 + "\n[... 199000 more bytes truncated]")


def test_file_size_limit() -> None:
    res = run_py(
        "try:\n    open('big', 'wb').write(b'0' * (3 * 2**20))\nexcept OSError as e:\n    print('EFBIG', e.errno)\n",
        fsize_mb=1,
    )
    assert res.stdout.strip() == "EFBIG 27"


# ----------------------------------------------------------------------------- writes


@needs_root_ns
def test_write_to_project_folder_is_prevented() -> None:
    target = Path(__file__).resolve().parent / "_sandbox_write_probe.txt"
    code = (
        "import errno\n"
        f"try:\n    open({str(target)!r}, 'w').write('x')\n    print('WROTE')\n"
        "except OSError as e:\n    print('DENIED', errno.errorcode[e.errno])\n"
        "open('/tmp/inside-only', 'w').write('x')\nprint('TMP OK')\n"
    )
    res = run_py(code)
    # the project folder (the current folder, this checkout) is hidden behind an empty tmpfs,
    # or, for a clone under /tmp, behind the private /tmp: ENOENT either way
    assert res.stdout.split("\n")[:2] == ["DENIED ENOENT", "TMP OK"]
    assert not target.exists()
    assert not Path("/tmp/inside-only").exists()  # the sandbox's /tmp is private
    assert res.isolation["write_guard"] == "prevented"


def test_write_outside_is_detected_and_reported_without_isolation(tmp_path: Path) -> None:
    target = tmp_path / "evil.txt"
    res = run_py(
        f"open({str(target)!r}, 'w').write('x')\n",
        namespaces=False,
        isolate_user=False,
        watch_paths=(str(tmp_path),),
    )
    assert res.isolation["write_guard"] == "detected"
    assert res.writes_outside == (str(target),)
    assert res.network == "open"  # honest: no network namespace in this mode


def test_write_outside_makes_the_result_say_so(tmp_path: Path) -> None:
    target = tmp_path / "evil.txt"
    prob = humaneval_problem()
    code = f"open({str(target)!r}, 'w').write('x')\ndef add(a, b):\n    return a + b\n"
    settings = ExecSettings(
        time_limit_s=10,
        sandbox=SandboxSettings(namespaces=False, isolate_user=False, watch_paths=(str(tmp_path),)),
    )
    res = run_tests(code, prob, settings)
    assert res.status == "passed"
    assert res.writes_outside == (str(target),)
    assert res.message.startswith(f"wrote outside its folder: {target}")


# ----------------------------------------------------------------------------- network


@pytest.fixture
def listener() -> object:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    accepted: list[object] = []

    def serve() -> None:
        try:
            while True:
                conn, _ = srv.accept()
                accepted.append(conn)
        except OSError:
            return

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()


CONNECT = """
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    print("CONNECTED")
except OSError as e:
    print("REFUSED", type(e).__name__)
"""


@needs_ns
@pytest.mark.parametrize("fork_server", LAUNCHERS)
def test_connection_to_local_port_fails_when_blocked(listener: int, fork_server: bool) -> None:
    res = run_py(CONNECT.format(port=listener), fork_server=fork_server)
    assert res.network == "blocked"
    assert res.stdout.startswith("REFUSED"), res.stdout


@needs_ns
def test_allowed_network_is_reported_open(listener: int) -> None:
    res = run_py(CONNECT.format(port=listener), network="allow")
    assert res.stdout.strip() == "CONNECTED"
    assert res.network == "open"


@needs_ns
def test_probe_network_reports_blocked() -> None:
    probe = sandbox.probe_network()
    assert probe["network"] == "blocked" and probe["connected"] is False
    assert probe["reported"] == "blocked"


def test_require_network_block_errors_when_it_cannot_be_blocked() -> None:
    res = run_py(
        "print(1)", namespaces=False, isolate_user=False, require_network_block=True, watch_paths=()
    )
    assert res.status == "error"
    assert "could not be blocked" in (res.error or "")


def test_settings_are_validated() -> None:
    with pytest.raises(SandboxError, match="timeout_s"):
        SandboxSettings(timeout_s=0)
    with pytest.raises(SandboxError, match="nproc"):
        SandboxSettings(nproc=0)
    with pytest.raises(SandboxError, match="exactly one"):
        run_in_sandbox()


@needs_root_ns
def test_interpreter_in_a_private_tmp_folder_still_runs(tmp_path: Path) -> None:
    import subprocess

    venv = tmp_path / "venv"  # under /tmp, which the sandbox replaces by a private tmpfs
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    assert str(venv) in sandbox.interpreter_paths(python)
    code = "import os, sys, json, unittest, decimal\nprint(sys.prefix, os.getuid() != 0)\n"
    res = run_in_sandbox(argv=[python, "-c", code], settings=SandboxSettings(python=python))
    assert res.status == "ok", res
    assert res.stdout.split() == [str(venv), "True"]
    assert res.isolation["write_guard"] == "prevented"


def test_interpreter_paths_are_the_interpreters_own() -> None:
    paths = sandbox.interpreter_paths()
    assert os.path.realpath(sys.prefix) in paths or any(
        os.path.realpath(sys.prefix).startswith(p + "/") for p in paths
    )
    assert os.getcwd() not in paths


@needs_root_ns
def test_fork_server_preload() -> None:
    prob = humaneval_problem("def check(candidate):\n    assert candidate(1, 2) == 3\n")
    code = "import sys\nPRE = 'xml.dom.minidom' in sys.modules\ndef add(a, b):\n    assert PRE\n    return a + b\n"
    plain = run_tests(code, prob, ExecSettings(time_limit_s=10))
    assert plain.status == "failed"
    pre = SandboxSettings(preload=("xml.dom.minidom", "surely_missing_module_xyz"))
    res = run_tests(code, prob, ExecSettings(time_limit_s=10, sandbox=pre))
    assert res.status == "passed", res.message
    assert res.isolation["launcher"] == "fork-server"


NUMPY_DRAW_TEST = """import unittest
class TestCases(unittest.TestCase):
    def test_draw(self):
        print("draw", task_func())
"""
NUMPY_DRAW = (
    "import sys\nPRELOADED = 'numpy' in sys.modules\nimport numpy\n"
    "def task_func(x=None):\n    return PRELOADED, int(numpy.random.randint(1 << 62))\n"
)


@needs_root_ns
def test_a_preloaded_group_serves_the_tasks_that_use_it_and_reseeds_numpy() -> None:
    """A bigcodebench-unittest task that keeps ctypes and uses numpy starts from the server
    that imported the group holding numpy (ExecSettings.preload), and each forked run draws
    its own random numbers, as a fresh import of numpy would; a task using none of the group
    starts from the plain server."""
    pytest.importorskip("numpy")
    # numpy.random named: numpy 2 imports it on first use, numpy 1 (the pinned environment's)
    # with numpy itself, its global state seeded once in the server
    groups = (("numpy", "numpy.random"), ("numpy", "xml.dom.minidom"))
    settings = ExecSettings(time_limit_s=20, preload=groups)
    task = bcb_problem(NUMPY_DRAW_TEST, libs=("ctypes", "numpy"))
    draws = []
    for _ in range(2):
        res = run_tests(NUMPY_DRAW, task, settings)
        assert res.status == "passed", res.message
        assert res.isolation["launcher"] == "fork-server"
        line = next(x for x in res.stdout.splitlines() if x.startswith("draw "))
        assert line.startswith("draw (True, "), line
        draws.append(line)
    assert draws[0] != draws[1]
    plain = run_tests(NUMPY_DRAW, bcb_problem(NUMPY_DRAW_TEST, libs=("ctypes",)), settings)
    assert plain.status == "passed", plain.message
    assert "draw (False, " in plain.stdout


FRAME_TEST = """import unittest
import pandas as pd

class TestCases(unittest.TestCase):
    def test_total(self):
        self.assertTrue(task_func().equals(pd.DataFrame({"a": [1, 2]})))
"""


def test_a_preloaded_librarys_class_patched_by_the_candidate_is_tampering() -> None:
    """The fork server builds the full snapshots' index once over what it preloaded
    (harness.prepare): a candidate that replaces a method of a preloaded library's class
    (``pandas.DataFrame.equals``) is found by a run forked from it, and an honest one
    passes there."""
    pytest.importorskip("pandas")
    settings = ExecSettings(time_limit_s=20, preload=(("pandas",),))
    task = bcb_problem(FRAME_TEST, libs=("ctypes", "pandas"))
    honest = run_tests('import pandas as pd\n\ndef task_func():\n'
                       '    return pd.DataFrame({"a": [1, 2]})\n', task, settings)
    assert honest.status == "passed", honest.message
    assert honest.isolation["launcher"] == "fork-server"
    # a route the static screen does not name, so the snapshot is what finds it
    forged = run_tests('import pandas as pd\n\ndef _same(self, other):\n    return True\n\n'
                       'for k in [pd.DataFrame]:\n    setattr(k, "eq" + "uals", _same)\n\n'
                       'def task_func():\n    return pd.DataFrame({"a": [9]})\n', task, settings)
    assert forged.status == "tampered", forged.message
    assert "added pandas.core.frame.DataFrame.equals while it was imported" in forged.tamper


def test_a_forked_run_finds_its_own_temporary_folder(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """A preloaded library that asked ``tempfile`` for the temporary folder at import made it
    remember the fork server's, which a run cannot see (BigCodeBench/445, 450, 527 and 537
    failed with FileNotFoundError): a forked run makes it find its own from TMPDIR again."""
    import tempfile

    zygote = load_file_module(Path(sandbox.__file__).parent / "_child" / "zygote.py",
                              "vibecheck_zygote_under_test")
    monkeypatch.setattr(tempfile, "tempdir", "/the/fork/servers/own/folder")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    zygote._reseed_preloaded()
    assert tempfile.gettempdir() == str(tmp_path)
