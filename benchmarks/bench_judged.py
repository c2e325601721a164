"""Cost per call of the judged test kinds, where the candidate runs in a sandbox of its own and
the judge (HumanEval's ``check``) or the evaluator (LiveCodeBench's cases) calls into it.

For ``humaneval``, a right ``add`` is checked by a ``check(candidate)`` making N calls
(N = 1 and ``--calls``); for ``functional``, N cases of a LiveCodeBench-style ``Solution``
method. The cost per call is the difference of the two runs' test times divided by the extra
calls (so the sandboxes' start is left out), the median of ``--repeat`` pairs, each pair
timed back to back.

The floor is plain Python: the same N calls in one interpreter, no sandbox (candidate and
check exec'd together, timed in process), which is what any in-process harness pays at
least; the ratio says what judging across processes costs on top, per call.

Usage: ``python benchmarks/bench_judged.py [--calls 1000] [--repeat 3]``. Prints, per kind,
the seconds of the two runs, ms per call, the floor's µs per call and the ratio, with the
commit and the load average.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from _common import run_context

from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.spec import ExecTask, TestCase, TestSpec
from pytest_vibecheck.execute.tests import ExecSettings

ADD = "def add(a, b):\n    return a + b\n"
SOLUTION = "class Solution:\n    def double(self, x):\n        return 2 * x\n"


def _humaneval(n: int) -> ExecTask:
    check = "def check(candidate):\n" + f"    for i in range({n}):\n        assert candidate(i, 1) == i + 1\n"
    return ExecTask("bench", f"bench/he-{n}", TestSpec(kind="humaneval", code=check, entry_point="add"),
                    entry_point="add")


def _functional(n: int) -> ExecTask:
    cases = tuple(TestCase(json.dumps(i), json.dumps(2 * i)) for i in range(n))
    return ExecTask("bench", f"bench/fn-{n}", TestSpec(kind="functional", cases=cases, entry_point="double"),
                    entry_point="double")


def _floor(n: int) -> float:
    """Seconds per call of the same calls in plain Python, in this process."""
    ns: dict[str, object] = {}
    exec(compile(ADD + "def check(candidate):\n" f"    for i in range({n}):\n"
                 "        assert candidate(i, 1) == i + 1\n", "floor", "exec"), ns)
    start = time.perf_counter()
    ns["check"](ns["add"])  # type: ignore[operator]
    return (time.perf_counter() - start) / n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(run_context())
    settings = ExecSettings(time_limit_s=60.0, grading="lcb")
    n = args.calls
    for kind, make, code in (("humaneval", _humaneval, ADD), ("functional", _functional, SOLUTION)):
        per_call, small_s, big_s = [], [], []
        for _ in range(args.repeat):
            small, big = run_many([(code, make(1)), (code, make(n))], settings, None, workers=1)
            assert small.status == big.status == "passed", (small.message, big.message)
            assert small.test_time_s is not None and big.test_time_s is not None
            small_s.append(small.test_time_s)
            big_s.append(big.test_time_s)
            per_call.append((big.test_time_s - small.test_time_s) / (n - 1))
        floor = statistics.median(_floor(n) for _ in range(args.repeat))
        cost = statistics.median(per_call)
        print(f"{kind:10s}: 1 call {statistics.median(small_s):.3f} s, {n} calls "
              f"{statistics.median(big_s):.3f} s -> {cost * 1e3:.3f} ms per call; floor (plain "
              f"Python, in process) {floor * 1e6:.2f} us per call; {cost / floor:.0f}x the floor")
    print(run_context())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
