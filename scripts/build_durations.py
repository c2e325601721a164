#!/usr/bin/env python3
"""Build a suite's shipped expected durations, ``problems/<suite>/durations.json``.

Times every reference solution that can run here in the sandbox (the calibration's own
measurement: generous limit, no cache) and writes wall and CPU seconds of each one whose tests
ran to their end, passed or failed (a failing reference's tests still take as long as the
task's do: BigCodeBench/289's fail after 50 s in the pinned environment), keyed by task key
(:mod:`pytest_vibecheck.execute.durations`). A run uses them before its own calibration store
knows the task (a first run) to order and place its work, and to choose the limit of a
candidate's first run; never as the limit of a verdict::

    python scripts/build_durations.py [--suite bigvibebench] [--workers 4] [--env NAME]
                                      [--missing-only]

``--missing-only`` keeps the file's entries and times only the tasks it lacks.

``--workers`` sandboxes run at once (more than the CPUs: the long references mostly sleep; the
CPU-bound ones are slowed alike, which is fine for an order). Tasks that cannot run here are
left out (they get no prior); ``--env`` times them in an execution environment instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_vibecheck.execute.calibrate import (  # noqa: E402
    DEFAULT_REFERENCE_LIMIT_S,
    machine_id,
    task_key,
)
from pytest_vibecheck.execute.durations import load_durations, write_durations  # noqa: E402
from pytest_vibecheck.execute.envcheck import missing_modules  # noqa: E402
from pytest_vibecheck.execute.pool import run_many  # noqa: E402
from pytest_vibecheck.execute.sandbox import SandboxSettings  # noqa: E402
from pytest_vibecheck.execute.tests import ExecSettings  # noqa: E402
from pytest_vibecheck.suites.store import find_suite, load_suite  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="bigvibebench")
    ap.add_argument("--workers", type=int, default=4, help="sandboxes at once")
    ap.add_argument("--env", default=None, help="time in this execution environment")
    ap.add_argument("--missing-only", action="store_true",
                    help="keep the file's entries; time only the tasks it lacks")
    args = ap.parse_args(argv)

    python = None
    env_id = ""
    preload: tuple[tuple[str, ...], ...] = ()
    if args.env:
        from pytest_vibecheck.execute.environments import resolve_environment

        env = resolve_environment(args.env)
        # as a plugin run in the environment times its references (its preload groups too:
        # BigCodeBench/289's TensorFlow reference aborts at exit without them)
        python, env_id, preload = env.python, env.id, env.preload
    suite = load_suite(args.suite)
    todo = [
        p for p in suite.problems
        if p.canonical_solution and not missing_modules(p, python)
    ]
    times: dict[str, tuple[float, float]] = {}
    if args.missing_only:
        kept = load_durations(find_suite(args.suite))
        times = {k: (e.wall_s, e.cpu_s or 0.0) for k, e in kept.items()}
        todo = [p for p in todo if task_key(p) not in times]
    settings = ExecSettings(
        sandbox=SandboxSettings(python=python),
        time_limit_s=DEFAULT_REFERENCE_LIMIT_S,
        environment=env_id,
        preload=preload,
    )
    started = time.monotonic()
    results = run_many(
        [(p.canonical_solution or "", p) for p in todo], settings, workers=args.workers
    )
    ended = 0
    for p, r in zip(todo, results, strict=True):
        if r.status in ("passed", "failed") and r.test_time_s is not None:
            times[task_key(p)] = (r.test_time_s, r.cpu_time_s or 0.0)
            ended += 1
    note = (
        f"reference solutions timed by scripts/build_durations.py, {args.workers} sandboxes at "
        f"once on {len(os.sched_getaffinity(0))} CPUs; for scheduling only"
    )
    path = write_durations(find_suite(args.suite), times, machine_id(), note)
    longest = sorted(times.items(), key=lambda kv: -kv[1][0])[:6]
    print(
        f"{path}: {ended} of {len(todo)} references timed ran to an end, {len(times)} tasks in "
        f"all ({len(suite.problems)} in the suite), {time.monotonic() - started:.0f} s; "
        "longest: " + ", ".join(f"{k.split('@')[0]} {w:.1f} s" for k, (w, _c) in longest)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
