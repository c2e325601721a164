"""Throughput of the sandboxed runner vs a naive serial ``subprocess.run`` per task.

Tasks: the first ``--n`` (default 200) standard-library-only BigCodeBench tasks by task
number (``stdlib_only_by_all_imports``), minus the five whose reference solution needs the
network (they fail in a plain run here too: 176, 314, 1005) or a long server run (1038,
1040); the reference solution of each is run with its tests.

- naive: ``subprocess.run([python, file])`` per task, one after another, where the file is
  code + tests + ``unittest.main()`` in a fresh temporary folder (no isolation, no limits);
- runner: :func:`pytest_vibecheck.execute.pool.run_many` with the full sandbox (namespaces,
  limits, per-task user id, private /tmp) over ``--workers`` (default: CPU count);
- cached: the same runner call again with the result cache filled by the runner run.

The naive runs are not isolated: a task that writes outside its folder changes the host
(task 832 creates ``/non/existent/path`` as root, which then makes tasks 288 and 350 fail);
new top-level folders are removed after each naive block and reported.

To be fair on a machine whose load changes, the task list is cut into blocks of 50 and
each block is timed naive then runner, alternately; the sums are compared. Prints tasks/s
and ratios. Targets: runner >= 1.8x naive on 2 cores; cached >= 50x.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from canonical_stdlib import plain_run

from pytest_vibecheck.execute.cache import ExecCache
from pytest_vibecheck.execute.pool import default_workers, run_many
from pytest_vibecheck.execute.tests import ExecSettings
from pytest_vibecheck.suites.loaders import load_bigcodebench
from pytest_vibecheck.suites.problem import Problem

DATA = Path("/work/shared/data/bigcodebench")
EXCLUDED = {
    "BigCodeBench/176",
    "BigCodeBench/314",
    "BigCodeBench/1005",
    "BigCodeBench/1038",
    "BigCodeBench/1040",
}


def clean_host(before: set[str]) -> list[str]:
    """Remove top-level folders the unsandboxed naive runs created (e.g. task 832 writes
    ``/non/existent/path/test_file.pkl`` when run as root), so they cannot change later runs."""
    created = sorted({p.name for p in Path("/").iterdir()} - before)
    for name in created:
        shutil.rmtree(Path("/") / name, ignore_errors=True)
    return created


def naive(problem: Problem, timeout: float) -> bool:
    """The naive baseline: canonical solution + tests in a plain interpreter, one at a time."""
    return plain_run(problem, timeout) == "passed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--block", type=int, default=50)
    ap.add_argument("--time-limit", type=float, default=120.0)
    args = ap.parse_args()

    problems = load_bigcodebench(
        DATA / "BigCodeBench-v0.1.0_hf.jsonl.gz",
        stdlib_only=DATA / "bigcodebench_v0.1.0_stdlib_only_task_ids.json",
    )
    chosen = sorted(
        (p for p in problems if p.metadata.get("stdlib_only") and p.task_id not in EXCLUDED),
        key=lambda p: int(p.task_id.split("/")[1]),
    )[: args.n]
    workers = args.workers or default_workers()
    settings = ExecSettings(time_limit_s=args.time_limit)
    with tempfile.TemporaryDirectory() as folder:
        cache = ExecCache(Path(folder) / "exec-cache.sqlite")
        # warm-up: start the fork server and page in the interpreter (not timed)
        run_many([(chosen[0].canonical_solution or "", chosen[0])], settings, workers=1)
        top_level = {p.name for p in Path("/").iterdir()}
        naive_s = runner_s = 0.0
        naive_ok = runner_ok = 0
        statuses: dict[str, int] = {}
        for b in range(0, len(chosen), args.block):
            block = chosen[b : b + args.block]
            t0 = time.perf_counter()
            naive_ok += sum(naive(p, args.time_limit + 20) for p in block)
            t1 = time.perf_counter()
            for name in clean_host(top_level):
                print(f"  the naive (unsandboxed) runs created /{name} on the host; removed it")
            results = run_many(
                [(p.canonical_solution or "", p) for p in block], settings, cache, workers=workers
            )
            t2 = time.perf_counter()
            naive_s += t1 - t0
            runner_s += t2 - t1
            runner_ok += sum(r.status == "passed" for r in results)
            for r in results:
                statuses[r.status] = statuses.get(r.status, 0) + 1
            print(
                f"  block {b // args.block + 1}: naive {t1 - t0:.1f} s, runner {t2 - t1:.1f} s",
                flush=True,
            )
        t3 = time.perf_counter()
        cached = run_many(
            [(p.canonical_solution or "", p) for p in chosen], settings, cache, workers=workers
        )
        cached_s = time.perf_counter() - t3
    n = len(chosen)
    launcher = results[0].isolation.get("launcher") if results else "?"
    print(
        f"{n} tasks, {os.cpu_count()} CPUs, runner workers {workers}, launcher {launcher}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"naive serial : {naive_s:7.1f} s  {n / naive_s:7.2f} tasks/s  ({naive_ok} passed)")
    print(
        f"runner       : {runner_s:7.1f} s  {n / runner_s:7.2f} tasks/s  ({runner_ok} passed; {statuses})"
    )
    print(
        f"cached rerun : {cached_s:7.3f} s  {n / cached_s:7.1f} tasks/s  "
        f"({sum(r.cached for r in cached)} cache hits)"
    )
    print(f"ratio runner / naive : {naive_s / runner_s:.2f}x (target >= 1.8x)")
    print(
        f"ratio cached / runner: {runner_s / cached_s:.0f}x (target >= 50x); "
        f"cached / naive: {naive_s / cached_s:.0f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
