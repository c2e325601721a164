"""Speed of the batch verification engine against one Ruff process per verification.

Workload: the 1,140 real BigCodeBench-Instruct solutions x the 27 Ruff-backed instructions at
default parameters (doc_3 with google) = 30,780 verifications, measured in the same run:

* batch: ``verify_batch`` (the engine of ``pytest_vibecheck.verify.ruff_engine``: instructions of a
  sample grouped into few configurations, one ``ruff check`` process over all samples);
* baseline: one ``ruff check --isolated -`` process per (solution, instruction), as the paper's
  pipeline does, on a thread pool of ``--threads`` workers (default 2, the machine's cores).

Prints both rates (verifications per second), the speed-up ratio, the number of Ruff processes
and peak memory (in an extra, untimed batch run: the Python heap via tracemalloc and the Ruff
process's peak RSS sampled from ``/proc``; max RSS of this process via ``resource.getrusage``). Targets (issue 2): ratio >= 20 and all
30,780 batch verifications in < 10 s on 2 cores. Exit status 1 if a target is missed.

    .venv/bin/python benchmarks/bench_verify.py [--repeat 3] [--baseline-limit N]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import (
    PARAMS,
    load_solutions,
    reference_args,
    ruff_instructions,
    run_reference,
    with_final_newline,
)

from pytest_vibecheck.verify.api import VerifyItem, verify_batch
from pytest_vibecheck.verify.ruff_engine import RuffEngine


class RuffPeak:
    """Context manager: while active, Ruff runs started through ``subprocess.run`` are watched
    and the largest peak RSS (``VmHWM`` in ``/proc/PID/status``, KiB) is kept in ``kib``."""

    def __init__(self) -> None:
        self.kib = 0
        self._orig = subprocess.run

    def __enter__(self) -> RuffPeak:
        subprocess.run = self._run  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run = self._orig

    def _run(self, cmd: Any, **kw: Any) -> subprocess.CompletedProcess[Any]:
        kw.pop("check", None)
        kw.pop("capture_output", None)
        timeout = kw.pop("timeout", None)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        done = threading.Event()

        def watch() -> None:
            status = Path(f"/proc/{proc.pid}/status")
            while not done.is_set():
                try:
                    for line in status.read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.kib = max(self.kib, int(line.split()[1]))
                except (OSError, ValueError):
                    pass
                time.sleep(0.005)

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            done.set()
            thread.join()
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def bare_ruff_floor(codes: list[str]) -> float:
    """Seconds of one Ruff process linting every sample with every rule (JSON output parsed):
    the floor of any engine that reads Ruff's JSON (issue 17)."""
    from pytest_vibecheck.verify.ruff_engine import default_engine

    ruff = default_engine().ruff_bin()
    with tempfile.TemporaryDirectory(prefix="vibecheck-floor-") as tmp:
        for n, code in enumerate(codes):
            Path(tmp, f"s{n}.py").write_text(with_final_newline(code), encoding="utf-8")
        t0 = time.perf_counter()
        done = subprocess.run(
            [ruff, "check", "--isolated", "--no-cache", "--select", "ALL", "--preview",
             "--output-format", "json", "--exit-zero", "."],
            cwd=tmp, capture_output=True, text=True, check=False,
        )
        import json

        json.loads(done.stdout)
        return time.perf_counter() - t0


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
    for _ in range(args.repeat):
        engine = RuffEngine()  # fresh: includes `ruff --version` and all planning
        t0 = time.perf_counter()
        verdicts = verify_batch(items, engine=engine)
        times.append(time.perf_counter() - t0)
        processes = engine.processes_run
        assert sum(len(row) for row in verdicts) == n
    t_batch = statistics.median(times)
    errors = sum(1 for row in verdicts for v in row if v.error)
    print(f"batch:    {t_batch:6.2f} s median of {args.repeat} ({', '.join(f'{t:.2f}' for t in times)} s), "
          f"{n / t_batch:8.0f} verifications/s, {processes} Ruff process(es), {errors} errors")
    floors = [bare_ruff_floor([code for _, code in sols]) for _ in range(args.repeat)]
    t_floor = statistics.median(floors)
    print(f"floor:    {t_floor:6.2f} s median of {args.repeat}: one bare `ruff check --select ALL "
          f"--preview --output-format json` over the {len(sols)} files (what any engine must pay); "
          f"batch / floor = {t_batch / t_floor:.1f}x")

    # One more (untimed) batch run for memory: the Python heap via tracemalloc, and the peak
    # RSS of the Ruff process (VmHWM sampled from /proc: getrusage(RUSAGE_CHILDREN) would
    # report this process's own size, as the child is forked from it).
    tracemalloc.start()
    with RuffPeak() as peak:
        verify_batch(items, engine=RuffEngine())
    peak_heap = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

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
    print(f"ratio (batch rate / baseline rate): {ratio:.1f}x")
    ruff_peak = f"{peak.kib / 1024:.0f} MiB" if peak.kib else "n/a (no /proc)"
    print(f"peak memory: Python heap during a batch {peak_heap / 2**20:.1f} MiB (tracemalloc); "
          f"max RSS of this process {self_rss:.0f} MiB; batch Ruff process peak RSS {ruff_peak}")
    ok = ratio >= 20 and t_batch < 10
    print(f"targets (>= 20x, < 10 s): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
