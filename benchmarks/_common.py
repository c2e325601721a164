"""Shared helpers of the benchmarks (real BigCodeBench samples, paper settings, the floor of
execution)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_vibecheck.execute.environments import Environment
from pytest_vibecheck.verify.instructions import Instruction, all_instructions
from pytest_vibecheck.verify.ruff_engine import default_engine

SAMPLES = Path(
    os.environ.get(
        "VIBECHECK_SAMPLES",
        Path(__file__).resolve().parents[2]
        / "shared"
        / "data"
        / "samples"
        / "bigcodebench-qwen2.5-coder-7b-instruct"
        / "Qwen2.5-Coder-7B-Instruct--bigcodebench-instruct--sanitized_calibrated.jsonl.gz",
    )
)

#: Parameters of the runs: every default, doc_3 with the google convention.
PARAMS: dict[str, dict[str, object]] = {"doc_3": {"convention": "google"}}


def run_context() -> str:
    """One line naming what a timing depends on: the commit measured (``git describe``, with
    ``-dirty`` for uncommitted changes; and the tree the package is imported from when it is not
    this one), the load average and the CPUs, for every benchmark
    to print beside its ratios (issue 29)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty"],
            capture_output=True, text=True, check=False,
        ).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    import pytest_vibecheck

    package = Path(pytest_vibecheck.__file__).parent.parent
    tree = "" if package == root else f" (package imported from {package})"
    load = os.getloadavg()
    return (f"commit {commit}{tree}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
            f"{os.cpu_count()} CPUs (timings are noisy on a shared machine: compare the ratios, "
            "each measured against its floor in the same run)")


def ratio_line(name: str, value: float, floor_name: str, floor: float, target: float | None = None) -> str:
    """``NAME = 3.42x FLOOR (0.85 s / 0.25 s; target <= 2x)``: a ratio always printed with the
    floor it is measured against."""
    goal = f"; target <= {target:g}x" if target is not None else ""
    return f"{name} = {value / floor:.2f}x {floor_name} ({value:.3f} s / {floor:.3f} s{goal})"


def load_solutions(path: Path = SAMPLES) -> list[tuple[str, str]]:
    """(task_id, solution) of every sample, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [(str(r["task_id"]), str(r["solution"])) for r in rows]


def ruff_instructions() -> list[Instruction]:
    """The 27 Ruff-backed instructions."""
    return [i for i in all_instructions() if i.verifier.rules]


def with_final_newline(code: str) -> str:
    """The code with its final newline restored (the samples were stripped of it)."""
    return code if code.endswith("\n") else code + "\n"


def reference_args(inst: Instruction, params: dict[str, object]) -> list[str]:
    """The paper's command line for one instruction: rules, settings and preview.

    library_2 selects PD002,PD011 only: PD901 was removed from Ruff (selecting it is an
    error since Ruff 0.12); its part is checked by the built-in ``pandas_df_name``.
    """
    values: dict[str, object] = {n: s.default for n, s in inst.params.items()}
    values.update(params)
    args = ["--select", ",".join(inst.verifier.rules)]
    if inst.verifier.preview:
        args.append("--preview")
    for key, value in inst.verifier.fixed.items():
        args += _setting_args(str(key), value)
    for pname, key in inst.verifier.settings.items():
        args += _setting_args(key, values[pname])
    return args


def _setting_args(key: str, value: object) -> list[str]:
    if key == "lint.pycodestyle.max-line-length":  # the paper passes --line-length
        return ["--line-length", str(value)]
    rendered = json.dumps(value) if isinstance(value, str) else str(value).lower()
    return ["--config", f"{key} = {rendered}"]


def run_reference(
    code: str, args: Sequence[str], cwd: str, ruff_bin: str | None = None
) -> tuple[bool | None, list[tuple[str, int, int, str]], str]:
    """One ``ruff check --isolated -`` on ``code``: (passed or None on error, violations, stderr).

    Violations are ``(rule, line, column, message)``.
    """
    cmd = [
        ruff_bin or default_engine().ruff_bin(),
        "check",
        "--isolated",
        "--no-cache",
        "--output-format",
        "json",
        *args,
        "-",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUFF_")}
    proc = subprocess.run(cmd, input=code.encode(), capture_output=True, cwd=cwd, env=env, check=False)
    if proc.returncode not in (0, 1):
        return None, [], proc.stderr.decode(errors="replace")
    data = json.loads(proc.stdout)
    found = [
        (str(d["code"] or "invalid-syntax"), int(d["location"]["row"]), int(d["location"]["column"]), d["message"])
        for d in data
    ]
    return (not found), sorted(found), ""


#: Set in a benchmark's own run inside the loopback-only network namespace.
NETNS_FLAG = "VIBECHECK_RAY_NETNS"


def in_loopback_namespace(script: str) -> None:
    """Make sure the calling benchmark runs in a network namespace that has only loopback
    (``unshare -n`` as root, else ``unshare -rn``; ``ip link set lo up``;
    ``RAY_AUTH_MODE=disabled``, Ray's usage stats off), so nothing Ray starts reaches beyond
    this machine (its probe of 8.8.8.8:53 finds no route). Outside it, runs the script again
    there and exits with its status; inside, returns. As root the host's user ids are kept:
    inside ``unshare -r`` only one uid is mapped and the sandbox cannot give a run its own.
    ``script``: the benchmark's file name, for the message when ``unshare`` or ``ip`` is
    missing."""
    if os.environ.get(NETNS_FLAG) == "1":
        return
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        sys.exit(f"{script}: needs unshare and ip (util-linux, iproute2) for a loopback-only "
                 "network namespace")
    env = dict(os.environ, **{NETNS_FLAG: "1", "RAY_AUTH_MODE": "disabled",
                              "RAY_USAGE_STATS_ENABLED": "0"})
    command = " ".join(["ip link set lo up &&", "exec", sys.executable, *map(_quote, sys.argv)])
    flags = "-n" if os.geteuid() == 0 else "-rn"
    done = subprocess.run(["unshare", flags, "sh", "-c", command], env=env, check=False)
    sys.exit(done.returncode)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


#: One worker of :func:`tests_floor`, run by the environment's interpreter: argv[1] is a JSON file of
#: [[task_id, code, test_code, test_class], ...], argv[2] the modules to import first, argv[3]
#: the limit in seconds, argv[4] (optional) the sandbox's calls.py; prints one JSON line
#: {task_id: [status, seconds]}, or with argv[4] {task_id: [status, seconds, status under the
#: tracer, seconds under the tracer]}.
FLOOR_DRIVER = r"""
import ctypes, importlib, io, json, os, select, signal, sys, tempfile, time, unittest

items = json.load(open(sys.argv[1]))
for name in filter(None, sys.argv[2].split(",")):
    try:
        importlib.import_module(name)
    except Exception:
        pass
try:
    import matplotlib
    matplotlib.use("Agg")
except Exception:
    pass
limit = int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)


def seal_host():
    # as root, in a mount namespace of its own: / read-only, and empty /tmp and /dev/shm of
    # its own, so what the code writes outside them fails and nothing stays on the host
    MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
    def mount(src, target, fstype, flags):
        if libc.mount(src, target.encode(), fstype, flags, None) != 0:
            raise OSError(ctypes.get_errno(), "mount " + target)
    if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        raise OSError(ctypes.get_errno(), "unshare")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount(b"tmpfs", "/tmp", b"tmpfs", 0)
    mount(b"tmpfs", "/dev/shm", b"tmpfs", 0)
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def run_task(code, test, cls_name, traced):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.setpgid(0, 0)
        if os.geteuid() == 0:
            seal_host()
        tempfile.tempdir = None
        folder = tempfile.mkdtemp()
        os.chdir(folder)
        os.environ["HOME"] = folder
        os.environ["TZ"] = "UTC"
        time.tzset()
        signal.alarm(limit)
        status, took = "fail", 0.0
        try:
            scope = {"__name__": "__test__"}
            exec(compile(code, "candidate.py", "exec"), scope)
            exec(compile(test, "tests.py", "exec"), scope)
            suite = unittest.TestLoader().loadTestsFromTestCase(scope[cls_name])
            tracer = None
            if traced:
                # the sandbox's tracer on the tests' thread (calls.make_tracer), and the
                # candidate's task_func untraced, as on the sandbox's call threads
                tracer = calls.make_tracer(lambda why: None, {}, frozenset())
                fn = scope.get("task_func")
                if callable(fn):
                    def untraced(*args, _fn=fn, _tracer=tracer, **kwargs):
                        sys.settrace(None)
                        try:
                            return _fn(*args, **kwargs)
                        finally:
                            sys.settrace(_tracer)
                    scope["task_func"] = untraced
            start = time.perf_counter()
            sys.settrace(tracer)
            result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
            sys.settrace(None)
            took = time.perf_counter() - start
            status = "pass" if result.wasSuccessful() else "fail"
        except BaseException:
            pass
        signal.alarm(0)
        os.write(w, json.dumps([status, took]).encode())
        os._exit(0)
    os.close(w)
    # read the one result, never waiting past the limit for a process the task left holding
    # the pipe (a server its tests started); then end the task's whole process group
    deadline, data, got = time.monotonic() + limit + 10, b"", None
    while got is None:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            break
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
        try:
            got = json.loads(data)
        except ValueError:
            continue
    os.close(r)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)
    return got if got is not None else ["timeout", float(limit)]


calls = None
if len(sys.argv) > 4:  # the sandbox's calls.py: each task also timed under its tracer
    import importlib.util
    spec = importlib.util.spec_from_file_location("vibecheck_calls", sys.argv[4])
    calls = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calls)
out = {}
for k, (task, code, test, cls_name) in enumerate(items):
    # with the tracer, the order of the two runs alternates, so neither always runs first
    order = [False] if calls is None else [k % 2 == 1, k % 2 == 0]
    got = {traced: run_task(code, test, cls_name, traced) for traced in order}
    out[task] = got[False] + got.get(True, [])
print(json.dumps(out))
"""


#: The sandbox's call proxies and tracer (standard library only, loaded by path).
CALLS = Path(__file__).resolve().parents[1] / "pytest_vibecheck" / "execute" / "_child" / "calls.py"


def tests_floor(items: Sequence[tuple[str, str, str]], environment: Environment,
                workers: int, limit: int, *, traced: bool = False) -> dict[str, list[Any]]:
    """The floor of BigCodeBench execution: the tests alone. ``items``: (task id, code, test
    source with a ``TestCases`` class). ``workers`` processes of the environment's interpreter
    each import every module of its preload groups once, then fork each of their share of the
    tasks (every ``workers``-th) into
    its own temporary folder (``TZ=UTC``, ``HOME`` there; when run as root, in a mount
    namespace of its own where ``/`` is read-only and ``/tmp`` and ``/dev/shm`` are empty and
    its own, so code that writes to an absolute path, such as ``/target/dir``, cannot leave it
    on the host for later runs to see), run the code's and the tests' module code there
    untimed and time ``unittest`` over ``TestCases`` alone. Returns task id -> [``pass`` |
    ``fail`` | ``timeout``, seconds]; a task past ``limit`` seconds counts ``limit``. The code
    runs outside any sandbox, as the official evaluator runs it.

    ``traced``: each task is also run a second time, in a process of its own, with the
    sandbox's tracer (``execute/_child/calls.py``'s ``make_tracer``, loaded from the package)
    on the tests' thread and the candidate's ``task_func`` called untraced, as the sandbox
    runs it on call threads of its own; its status and seconds follow the first two (the
    order of the two runs alternates from task to task). This is the floor of any engine
    that watches the tests' thread for the candidate's code on Python 3.11, which has no
    ``sys.monitoring``."""
    modules = sorted({m for group in environment.preload for m in group})
    results: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory(prefix="vibecheck-floor-") as tmp:
        driver = Path(tmp) / "driver.py"
        driver.write_text(FLOOR_DRIVER, encoding="utf-8")
        procs = []
        for n in range(workers):
            part = Path(tmp) / f"items-{n}.json"
            share = [[task, code, test, "TestCases"] for task, code, test in items[n::workers]]
            part.write_text(json.dumps(share), encoding="utf-8")
            calls = [str(CALLS)] if traced else []
            procs.append(subprocess.Popen(
                [environment.python, str(driver), str(part), ",".join(modules), str(limit), *calls],
                cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        for proc in procs:
            stdout, _ = proc.communicate()
            results.update(json.loads(stdout.strip().splitlines()[-1]))
    return results


def floor_seconds(times: Sequence[float], workers: int) -> float:
    """The floor of work spread over ``workers``: the sum of ``times`` (seconds) over the
    workers, or the longest one if that is larger (0.0 for none)."""
    return max(sum(times) / workers, max(times, default=0.0))
