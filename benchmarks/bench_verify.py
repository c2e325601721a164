"""Speed of the batch verification engine against one Ruff process per verification.

Workload: the 1,140 real BigCodeBench-Instruct solutions x the 27 Ruff-backed instructions at
default parameters (doc_3 with google) = 30,780 verifications, measured in the same run:

* batch: ``verify_batch`` (the engine of ``pytest_vibecheck.ruff_engine``: instructions of a
  sample grouped into few configurations, one ``ruff check`` process over all samples);
* baseline: one ``ruff check --isolated -`` process per (solution, instruction), as the paper's
  pipeline does, on a thread pool of ``--threads`` workers (default 2, the machine's cores).

Prints both rates (verifications per second), the speed-up ratio, the number of Ruff processes
and peak memory (Python heap via tracemalloc during the batch run; max RSS of this process and
of the largest Ruff child via ``resource.getrusage``). Targets (issue 2): ratio >= 20 and all
30,780 batch verifications in < 10 s on 2 cores. Exit status 1 if a target is missed.

    .venv/bin/python benchmarks/bench_verify.py [--repeat 3] [--baseline-limit N]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

from _common import (
    PARAMS,
    load_solutions,
    reference_args,
    ruff_instructions,
    run_reference,
    with_final_newline,
)

from pytest_vibecheck.ruff_engine import RuffEngine
from pytest_vibecheck.verify import VerifyItem, verify_batch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="batch runs (the median is reported)")
    ap.add_argument("--threads", type=int, default=2, help="baseline worker threads")
    ap.add_argument(
        "--baseline-limit",
        type=int,
        default=None,
        help="time the baseline on the first N verifications only (default: all 30,780)",
    )
    args = ap.parse_args()

    sols = load_solutions()
    insts = ruff_instructions()
    n = len(sols) * len(insts)
    items = [
        VerifyItem([(i.id, PARAMS.get(i.id, {})) for i in insts], code=with_final_newline(code))
        for _, code in sols
    ]
    print(f"workload: {len(sols)} solutions x {len(insts)} instructions = {n} verifications")

    times: list[float] = []
    processes = 0
    peak_heap = 0
    for r in range(args.repeat):
        engine = RuffEngine()  # fresh: includes `ruff --version` and all planning
        if r == 0:
            tracemalloc.start()
        t0 = time.perf_counter()
        verdicts = verify_batch(items, engine=engine)
        times.append(time.perf_counter() - t0)
        if r == 0:
            peak_heap = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        processes = engine.processes_run
        assert sum(len(row) for row in verdicts) == n
    t_batch = statistics.median(times)
    errors = sum(1 for row in verdicts for v in row if v.error)
    print(f"batch:    {t_batch:6.2f} s median of {args.repeat} ({', '.join(f'{t:.2f}' for t in times)} s; "
          f"first run under tracemalloc), {n / t_batch:8.0f} verifications/s, "
          f"{processes} Ruff process(es), {errors} errors")

    tasks = [(s, k) for s in range(len(sols)) for k in range(len(insts))][: args.baseline_limit]
    ref_args = [reference_args(i, PARAMS.get(i.id, {})) for i in insts]
    with tempfile.TemporaryDirectory(prefix="vibecheck-bench-") as cwd:

        def one(task: tuple[int, int]) -> bool | None:
            s, k = task
            return run_reference(with_final_newline(sols[s][1]), ref_args[k], cwd)[0]

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(one, tasks))
        t_base = time.perf_counter() - t0
    rate_base = len(tasks) / t_base
    print(f"baseline: {t_base:6.2f} s for {len(tasks)} verifications, {rate_base:8.0f} verifications/s "
          f"({len(tasks)} Ruff processes, {args.threads} threads)")

    ratio = (n / t_batch) / rate_base
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"ratio (batch rate / baseline rate): {ratio:.1f}x")
    print(f"peak memory: Python heap during the batch {peak_heap / 2**20:.1f} MiB; "
          f"max RSS this process {self_rss:.0f} MiB, largest Ruff child {child_rss:.0f} MiB")
    ok = ratio >= 20 and t_batch < 10
    print(f"targets (>= 20x, < 10 s): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
