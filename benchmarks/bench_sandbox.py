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

``--baseline DIR``: a checkout of an earlier commit (``git worktree add DIR COMMIT``) whose
runner is timed on each block too, in a subprocess that imports the package from ``DIR``
(after its own warm-up, not timed), so one run compares the code of both commits under the
same load. Prints the median sandboxed time per execution (``duration_s``) of each and
their ratio (target for the verdict-integrity changes: at most 1.15).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict, cast

from canonical_stdlib import plain_run

from pytest_vibecheck.execute.cache import ExecCache
from pytest_vibecheck.execute.pool import default_workers, run_many
from pytest_vibecheck.execute.tests import ExecSettings
from pytest_vibecheck.suites.loaders import load_bigcodebench
from pytest_vibecheck.suites.problem import Problem

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bigcodebench"
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


_BASELINE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.tests import ExecSettings
from pytest_vibecheck.suites.loaders import load_bigcodebench
data, ids, limit, workers = sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
problems = {p.task_id: p for p in load_bigcodebench(
    data + "/BigCodeBench-v0.1.0_hf.jsonl.gz",
    stdlib_only=data + "/bigcodebench_v0.1.0_stdlib_only_task_ids.json")}
chosen = [problems[i] for i in ids]
settings = ExecSettings(time_limit_s=limit)
run_many([(chosen[0].canonical_solution or "", chosen[0])], settings, workers=1)
t = time.perf_counter()
res = run_many([(p.canonical_solution or "", p) for p in chosen], settings, workers=workers)
print(json.dumps({"s": time.perf_counter() - t, "runs": [[r.status, r.duration_s] for r in res]}))
"""


class BaselineBlock(TypedDict):
    """What the baseline subprocess prints (JSON): its wall time in seconds and, per task,
    ``[status, duration_s]``."""

    s: float
    runs: list[tuple[str, float]]


def baseline_block(folder: Path, block: list[Problem], limit: float, workers: int) -> BaselineBlock:
    """Run ``block`` with the runner of the checkout in ``folder`` (its own process)."""
    done = subprocess.run(
        [sys.executable, "-c", _BASELINE, str(folder), str(DATA),
         json.dumps([p.task_id for p in block]), str(limit), str(workers)],
        capture_output=True, text=True, check=True, cwd=folder,
    )
    return cast(BaselineBlock, json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--block", type=int, default=50)
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--baseline", type=Path, default=None, help="checkout of an earlier commit")
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
        base_s = 0.0
        base_runs: list[tuple[str, float]] = []
        new_durations: list[float] = []
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
            new_durations += [r.duration_s for r in results]
            for r in results:
                statuses[r.status] = statuses.get(r.status, 0) + 1
            extra = ""
            if args.baseline is not None:
                old = baseline_block(args.baseline, block, args.time_limit, workers)
                base_s += float(old["s"])
                base_runs += old["runs"]
                extra = f", baseline runner {float(old['s']):.1f} s"
            print(
                f"  block {b // args.block + 1}: naive {t1 - t0:.1f} s, runner {t2 - t1:.1f} s"
                + extra,
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
    if base_runs:
        old_med = statistics.median(float(d) for _, d in base_runs)
        new_med = statistics.median(new_durations)
        old_ok = sum(st == "passed" for st, _ in base_runs)
        print(
            f"baseline     : {base_s:7.1f} s  {n / base_s:7.2f} tasks/s  ({old_ok} passed)"
        )
        print(
            f"median time per execution: {new_med:.3f} s now, {old_med:.3f} s baseline: "
            f"{new_med / old_med:.3f}x (target <= 1.15x); runner throughput now / baseline "
            f"{base_s / runner_s:.2f}x"
        )
    print(
        f"ratio cached / runner: {runner_s / cached_s:.0f}x (target >= 50x); "
        f"cached / naive: {naive_s / cached_s:.0f}x"
    )
    return 0


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        sys.exit(main())
    finally:
        print(run_context())
