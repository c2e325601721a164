"""Canonical solutions of the standard-library-only BigCodeBench tasks through the sandbox.

Every reference solution should pass; each one that does not is listed with its cause, and
re-run as a plain ``python`` process outside the sandbox (code + tests +
``unittest.main()``) to tell sandbox effects from tasks that fail anyway.

Sets (``../shared/data/bigcodebench`` beside the repository by default, ``--data`` to change):

- ``stdlib``: ``stdlib_only_by_all_imports`` of ``bigcodebench_v0.1.0_stdlib_only_task_ids.json``
  (the solution, prompt and tests import only the standard library);
- ``stdlib ∩ network-free``: those also listed in ``network-free-set.txt`` (that upstream
  list only covers task ids up to 570).

Usage: ``python benchmarks/canonical_stdlib.py [--workers N] [--time-limit S] [--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from pytest_vibecheck.execute.pool import timed_run_many
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings
from pytest_vibecheck.suites.loaders import load_bigcodebench
from pytest_vibecheck.suites.problem import Problem

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bigcodebench"


def plain_run(problem: Problem, timeout: float) -> str:
    """Outcome of code + tests + unittest.main() in a plain interpreter (no sandbox)."""
    program = (
        (problem.canonical_solution or "")
        + "\n"
        + problem.test.code
        + "\nimport unittest\nunittest.main(argv=['plain'], verbosity=0)\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "plain_run.py"
        path.write_text(program, encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, str(path)],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return "timeout"
    if done.returncode == 0:
        return "passed"
    last = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return "failed: " + (last[-1] if last else f"exit {done.returncode}")


def cause(res: ExecResult) -> str:
    """First informative line of a result's message."""
    lines = [line.strip() for line in res.message.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "Exception" in line or line.startswith("AssertionError"):
            return line[:160]
    return (lines[-1] if lines else res.status)[:160]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--json", type=Path, default=None, help="write every result here")
    args = ap.parse_args()

    problems = load_bigcodebench(
        args.data / "BigCodeBench-v0.1.0_hf.jsonl.gz",
        network_free=args.data / "network-free-set.txt",
        stdlib_only=args.data / "bigcodebench_v0.1.0_stdlib_only_task_ids.json",
    )
    stdlib = [p for p in problems if p.metadata.get("stdlib_only")]
    both = {p.task_id for p in stdlib if p.metadata.get("network_free")}
    settings = ExecSettings(time_limit_s=args.time_limit)
    items = [(p.canonical_solution or "", p) for p in stdlib]
    start = time.monotonic()
    results, stats = timed_run_many(items, settings, workers=args.workers)
    wall = time.monotonic() - start

    print(f"{len(stdlib)} stdlib-only tasks ({len(both)} also in network-free-set.txt)")
    print(f"sandbox runs: {wall:.1f} s wall, {stats.tasks_per_s:.2f} tasks/s")
    for label, chosen in (
        ("stdlib ∩ network-free", [r for r in results if r.task_id in both]),
        ("stdlib (all)", results),
    ):
        counts = Counter(r.status for r in chosen)
        print(f"{label}: {len(chosen)} tasks: {dict(sorted(counts.items()))}")
    print(
        f"isolation: {results[0].isolation.get('mode')}, network {results[0].network}, "
        f"launcher {results[0].isolation.get('launcher')}"
    )

    bad = [(p, r) for p, r in zip(stdlib, results, strict=True) if r.status != "passed"]
    print(f"\nnot passing in the sandbox: {len(bad)}")
    rows = []
    for p, r in bad:
        plain = plain_run(p, args.time_limit + 30)
        tag = "network-free" if p.task_id in both else "not in network-free list"
        print(
            f"- {p.task_id} [{tag}] sandbox={r.status} {r.failed_tests[:3]} | {cause(r)} | plain run: {plain}"
        )
        rows.append(
            {
                "task_id": p.task_id,
                "in_network_free": p.task_id in both,
                "sandbox": r.to_dict(),
                "plain": plain,
            }
        )
    slow = sorted(results, key=lambda r: -(r.test_time_s or 0))[:5]
    print(
        "\nslowest reference solutions (test time, s):",
        ", ".join(f"{r.task_id} {r.test_time_s:.1f}" for r in slow if r.test_time_s is not None),
    )
    if args.json:
        args.json.write_text(
            json.dumps({"results": [r.to_dict() for r in results], "failures": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
