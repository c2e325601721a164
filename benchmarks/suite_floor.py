"""The whole of BigVibeBench through the plugin in a pinned environment, against its floor
(issue 29, item 4), in one run.

1. **cold**: ``pytest --vibe-model=replay:qwen2.5-coder-7b-instruct --vibe-suite=bigvibebench
   --vibe-protocol=baseline --vibe-env=ENV -n WORKERS`` in an empty folder (empty execution
   cache and calibration store: every time limit is calibrated as a first run's is);
2. **cached**: the same again in that folder (every result from the execution cache);
3. **floor**: the least work any engine must do for the same verdicts: the tests themselves,
   run on the code the cold run ran (read from its JSON report), in the environment's
   interpreter with its libraries already imported (every preload group of the environment,
   imported once per worker; each task forked from there into its own temporary folder, the
   candidate's and the tests' module code run untimed, then the tests timed alone:
   ``unittest`` over the test class, as upstream). The floor is that time summed over
   ``WORKERS`` workers, or the longest task if that is larger. A task whose tests run past
   ``--limit`` seconds counts ``--limit``.

Printed: the cold and cached wall times, the floor, the ratio cold / floor, the largest resident
memory of the controller (the pytest process) and of any one of its descendants (the xdist
workers, their fork servers and sandboxes; each process's own peak, ``VmHWM``, sampled every
0.5 s), the plugin's table row, and how many tasks the floor passes
that the cold run failed or the reverse (verdicts: the floor is plain Python, with network and
no limits, so a few differ for those reasons), with the commit and the load average.

The floor runs the model's code outside the sandbox, as the official BigCodeBench evaluator
does; the whole benchmark runs in a network namespace with only loopback.

Usage: ``python benchmarks/suite_floor.py [--env bigvibebench] [-n 2] [--limit 60]
[--tasks N] [--save-report PATH] [--floor-only REPORT] [--traced]`` (``--save-report``: keep the cold
run's JSON report; ``--floor-only``: measure only the floor, on the code of such a report;
``--traced``: also the traced floor, below).

**Traced floor** (``--traced``): the sandbox watches the tests' thread with a trace function
(docs/sandbox.md), and on Python 3.11, the pinned environment's interpreter, that is
``sys.settrace``, a Python call for every Python function call the tests make. Every task is
then also timed with that tracer (the package's own ``make_tracer``) on the tests' thread and
``task_func`` called untraced, as the sandbox calls it on a thread of its own: the floor of any
engine that keeps that watch. Both floors are measured task by task, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import floor_seconds, in_loopback_namespace, run_context, tests_floor

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.environments import (
    DEFAULT_ENV_ROOT,
    Environment,
    resolve_environment,
)
from pytest_vibecheck.suites.store import load_suite

MODEL = "replay:qwen2.5-coder-7b-instruct"
ROOT = Path(__file__).resolve().parents[1]

class PeakMemory:
    """The largest ``VmHWM`` (MiB) seen of a process and of any one of its descendants,
    sampled every 0.5 s while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.controller = 0.0
        self.worker = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _hwm(pid: int) -> float:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except (OSError, ValueError):
            pass
        return 0.0

    def _descendants(self) -> list[int]:
        found, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            try:
                text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
            except OSError:
                continue
            kids = [int(p) for p in text.split()]
            found += kids
            todo += kids
        return found

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.controller = max(self.controller, self._hwm(self.pid))
            for pid in self._descendants():
                self.worker = max(self.worker, self._hwm(pid))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _plugin(work: Path, env: str, workers: str,
            extra: list[str]) -> tuple[float, dict[str, Any], str, PeakMemory]:
    report = work / "report.json"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--vibe-model={MODEL}",
           "--vibe-suite=bigvibebench", "--vibe-protocol=baseline", f"--vibe-env={env}",
           "-n", workers, "-q", "--tb=no", "--vibe-no-fail-items", f"--vibe-report={report}", *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    memory = PeakMemory(proc.pid)
    stdout, _ = proc.communicate()
    wall = time.perf_counter() - start
    memory.stop()
    if proc.returncode not in (0, 1) or not report.is_file():
        raise SystemExit(f"pytest failed in {work} (exit {proc.returncode}):\n{stdout[-1500:]}")
    row = next((ln.strip() for ln in stdout.splitlines() if f"  {MODEL}  " in ln), "")
    return wall, json.loads(report.read_text(encoding="utf-8")), row, memory


def _outcomes(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """task id -> (test status of the last turn, its code) of every run item."""
    out = {}
    for item in report["items"]:
        if item.get("skip_reason") or item.get("error"):
            continue
        turn = (item.get("turns") or [{}])[-1]
        out[str(item["task_id"])] = (str(turn.get("tests", {}).get("status")),
                                     str(turn.get("code") or ""))
    return out


def _floor(cold: dict[str, tuple[str, str]], environment: Environment, workers: int,
           limit: int, traced: bool) -> dict[str, list[Any]]:
    suite = load_suite("bigvibebench")
    items = []
    for task, (_status, code) in sorted(cold.items()):
        problem = suite.get(task)
        if problem.test.kind != "bigcodebench-unittest" or not code:
            continue
        items.append((task, code, problem.test.code))
    return tests_floor(items, environment, workers, limit, traced=traced)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="bigvibebench")
    ap.add_argument("-n", "--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=60, help="seconds a task's tests may take")
    ap.add_argument("--floor-only", type=Path, default=None, metavar="REPORT")
    ap.add_argument("--save-report", type=Path, default=None, metavar="PATH",
                    help="keep the cold run's JSON report there (for --floor-only later)")
    ap.add_argument("--traced", action="store_true",
                    help="also time every task's tests under the sandbox's tracer (the floor of "
                         "an engine that watches the tests' thread on Python 3.11)")
    ap.add_argument("--tasks", type=int, default=None, metavar="N",
                    help="only the first N tasks (--vibe-limit; a smoke run)")
    args = ap.parse_args(argv)
    in_loopback_namespace("suite_floor.py")
    print(run_context())
    try:
        environment = resolve_environment(args.env, ROOT / DEFAULT_ENV_ROOT)
    except VibecheckError as exc:
        ap.error(f"--env {args.env}: {exc}")
    if environment.path is None:
        ap.error(f"--env {args.env}: the floor needs a created environment "
                 "(vibecheck env create bigvibebench)")
    if args.save_report is not None:  # before the cold run, so a bad path loses no run
        try:
            args.save_report.write_text("", encoding="utf-8")
        except OSError as exc:
            ap.error(f"--save-report {args.save_report}: cannot write there ({exc.strerror}); "
                     "give a path in a folder that exists and is writable")
    folder = str(environment.path.resolve())
    extra = [] if args.tasks is None else [f"--vibe-limit={args.tasks}"]
    if args.floor_only is not None:
        cold_report = json.loads(args.floor_only.read_text(encoding="utf-8"))
        cold_wall = None
    else:
        with tempfile.TemporaryDirectory(prefix="vibecheck-suite-") as tmp:
            work = Path(tmp)
            cold_wall, cold_report, row, memory = _plugin(work, folder, str(args.workers), extra)
            if args.save_report is not None:
                args.save_report.write_text(json.dumps(cold_report), encoding="utf-8")
            print(f"cold:   {cold_wall:7.1f} s  {row}")
            print(f"        largest resident memory: controller {memory.controller:.0f} MiB, "
                  f"any one worker, fork server or sandbox {memory.worker:.0f} MiB")
            cached_wall, _cached, row, _memory = _plugin(work, folder, str(args.workers), extra)
            print(f"cached: {cached_wall:7.1f} s  {row}")
    cold = _outcomes(cold_report)
    start = time.perf_counter()
    floor = _floor(cold, environment, args.workers, args.limit, args.traced)
    took = time.perf_counter() - start
    times = [row[1] for row in floor.values()]
    total = sum(times)
    longest = max(times, default=0.0)
    value = floor_seconds(times, args.workers)
    print(f"floor:  {value:7.1f} s  (the tests alone, libraries imported: {total:.1f} s over "
          f"{len(floor)} tasks / {args.workers} workers, longest {longest:.1f} s; "
          f"measured in {took:.1f} s)")
    if cold_wall is not None:
        print(f"cold run = {cold_wall / value:.2f}x the floor (target <= 2x)")
    if args.traced:
        traced = [row[3] for row in floor.values()]
        traced_value = floor_seconds(traced, args.workers)
        print(f"traced floor: {traced_value:7.1f} s  (the same tests with the sandbox's tracer on "
              f"their thread, task_func untraced: {sum(traced):.1f} s, longest "
              f"{max(traced, default=0.0):.1f} s) = {traced_value / value:.2f}x the floor, "
              "measured in the same run, task by task")
        if cold_wall is not None:
            print(f"cold run = {cold_wall / traced_value:.2f}x the traced floor")
        moved = sum(1 for row in floor.values() if row[0] != row[2])
        print(f"        {moved} task(s) with another status under the tracer")
    differ = [t for t, row in floor.items()
              if (row[0] == "pass") != (cold.get(t, ("", ""))[0] == "passed")]
    print(f"verdicts: the floor and the cold run agree on {len(floor) - len(differ)}/{len(floor)}")
    for task in sorted(differ)[:20]:
        print(f"  differs: {task}: floor {floor[task][0]}, plugin {cold[task][0]}")
    print(f"load average now {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
