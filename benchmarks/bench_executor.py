"""Ray's overhead per sandboxed execution on one machine, against the local pool (issue 17).

    python benchmarks/bench_executor.py [--runs 200] [--rounds 2] [--cpus 2]

Workload: ``--runs`` distinct trivial HumanEval-style candidates (each passes; no cache, fixed
10 s limit), run with ``run_many`` through the local executor and through the Ray executor on a
local Ray instance (``ray.init(num_cpus=--cpus)``, started before timing), in alternating
rounds so machine load hits both. Prints each round, the median seconds per execution of each,
and the difference: Ray's overhead per execution. Needs the ``ray`` extra. Runs itself inside a
loopback-only network namespace (``_common.in_loopback_namespace``), as ``ray_reward.py`` and
the Ray tests do: nothing Ray starts sends traffic beyond this machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from pytest_vibecheck.execute.executor import LocalExecutor, make_executor
from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.spec import TestSpec
from pytest_vibecheck.execute.tests import ExecSettings
from pytest_vibecheck.suites.problem import Problem

CHECK = "def check(candidate):\n    assert candidate(2, 3) == 5\n"


def _pairs(n: int, salt: str) -> list[tuple[str, Problem]]:
    prob = Problem(
        suite="bench",
        task_id="bench/add",
        prompt="add",
        test=TestSpec(kind="humaneval", code=CHECK, entry_point="add"),
        entry_point="add",
    )
    return [(f"def add(a, b):\n    return a + b  # {salt} {i}\n", prob) for i in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=2)
    args = ap.parse_args()
    import ray

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    settings = ExecSettings(time_limit_s=10.0)
    remote = make_executor("ray")
    run_many(_pairs(4, "warm"), settings, executor=remote)  # start Ray's workers
    local_s: list[float] = []
    ray_s: list[float] = []
    try:
        for r in range(args.rounds):
            for name, times in (("local", local_s), ("ray", ray_s)):
                ex = LocalExecutor(args.cpus) if name == "local" else remote
                t0 = time.perf_counter()
                res = run_many(_pairs(args.runs, f"{name}{r}"), settings, executor=ex)
                wall = time.perf_counter() - t0
                if name == "local":
                    ex.close()
                assert all(x.status == "passed" for x in res), {x.status for x in res}
                times.append(wall / args.runs)
                print(f"round {r + 1} {name:5}: {wall:6.2f} s, {1000 * wall / args.runs:6.2f} ms/run")
    finally:
        remote.close()
        ray.shutdown()
    lo, ra = statistics.median(local_s), statistics.median(ray_s)
    print(f"median: local {1000 * lo:.2f} ms/run, ray {1000 * ra:.2f} ms/run "
          f"({args.cpus} CPUs each); Ray overhead {1000 * (ra - lo):+.2f} ms per execution")
    return 0


if __name__ == "__main__":
    from _common import in_loopback_namespace, run_context

    in_loopback_namespace("bench_executor.py")  # Ray never reaches beyond loopback
    print(run_context(), flush=True)  # commit and load beside every figure (issue 29)
    try:
        sys.exit(main())
    finally:
        print(run_context())
