"""Throughput of the reward API (``pytest_vibecheck.reward``), both sides measured in one run.

1. **IF-only rewards** (``RewardConfig(functional=False)``): the 1,140 real
   Qwen2.5-Coder-7B-Instruct solutions of BigCodeBench-Instruct (``_common.SAMPLES``), each
   scored against its BigVibeBench task's 5 instructions (5,700 verdicts) in one
   ``RewardScorer.score`` call; the median of ``--repeat`` runs, after an untimed warm-up batch
   of 128 (loads the suite, reads Ruff's version and rule list, starts the parse helper
   process of :mod:`pytest_vibecheck.verify.parse_helper`, as the first batch of a training
   loop does once). For reference, the same reward
   one completion at a time (one ``score`` call, hence one Ruff process, per completion) on the
   first ``--naive-if`` completions. And **per sample under concurrency**, as verl's reward loop
   calls a reward: every completion through the per-sample adapter at once, awaited
   concurrently (``compute_score_async``, as a ``RewardLoopWorker`` gathers one task per sample
   of its chunk), and the sync ``compute_score`` from ``--threads`` threads (a thread pool, as
   the loop runs a sync function); both go through the micro-batcher
   (:mod:`pytest_vibecheck.reward.batcher`). Target: >= 1,500 rewards/s for the awaited path.
   Also the CPU seconds of a run (this process, and Ruff's
   processes, and the parse helper's), which a loaded shared machine changes far less than the
   wall time. Target:
   >= 2,000 rewards/s.
2. **Full rewards** (tests in the sandbox + IF, alpha 0.4): the same model's solutions of the
   300 standard-library-only tasks.
   - naive serial: per completion, the tests in a plain ``python`` process (code + tests +
     ``unittest.main()``, ``canonical_stdlib.plain_run``; no isolation, no limits) and the five
     instructions through ``verify_batch`` on that one completion, one after another;
   - reward API: ``RewardScorer.score`` per block (the sandbox pool, ``--workers`` sandboxes at
     a time, one Ruff run per block; no result cache).
   The tasks are cut into blocks of ``--block``, each timed naive then reward API, alternately,
   so a change of machine load hits both; the sums are compared. Target: >= 1.8x naive.
   Functional outcomes of both sides are compared too (the sandbox is stricter: e.g. its
   network is off).

    .venv/bin/python benchmarks/bench_reward.py [--repeat 3] [--workers 2] [--block 60]

Exit status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import SAMPLES, load_solutions
from bench_sandbox import clean_host
from canonical_stdlib import plain_run

from pytest_vibecheck.execute.pool import default_workers
from pytest_vibecheck.execute.tests import ExecSettings
from pytest_vibecheck.reward import RewardConfig, RewardScorer
from pytest_vibecheck.reward.batcher import batcher_for
from pytest_vibecheck.reward.verl import VerlScore, compute_score, compute_score_async
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.store import load_suite
from pytest_vibecheck.verify.api import VerifyItem, verify_batch
from pytest_vibecheck.verify.extract import extract_code
from pytest_vibecheck.verify.parse_helper import shared_helper


def per_sample(completions: list[str], refs: list[str], repeat: int, threads: int) -> tuple[float, float]:
    """(awaited, threaded) rewards/s through verl's per-sample adapter, IF only; the median of
    ``repeat`` runs each, after a warm-up."""

    async def awaited(n: int) -> list[VerlScore]:
        return list(await asyncio.gather(*(
            compute_score_async("vibecheck/bigvibebench", c, r, {"index": i}, functional=False)
            for i, (c, r) in enumerate(zip(completions[:n], refs[:n], strict=True)))))

    def threaded() -> list[VerlScore]:
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(lambda cr: compute_score("vibecheck/bigvibebench", cr[0], cr[1], {},
                                                          functional=False),
                                 zip(completions, refs, strict=True)))

    asyncio.run(awaited(128))  # warm-up (not timed): the scorer, the batcher's thread
    stats = batcher_for(RewardConfig(functional=False)).stats
    rates: dict[str, list[float]] = {"awaited": [], "threaded": []}
    batches: dict[str, list[int]] = {"awaited": [], "threaded": []}
    scores: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {"awaited": [], "threaded": []}
    helper = shared_helper()
    for _ in range(repeat):
        for name in ("awaited", "threaded"):
            b0 = stats.batches
            c0, h0 = time.process_time() + _children_cpu(), helper.cpu_seconds() or 0.0
            t0 = time.perf_counter()
            out = asyncio.run(awaited(len(completions))) if name == "awaited" else threaded()
            rates[name].append(len(out) / (time.perf_counter() - t0))
            cpu[name].append(time.process_time() + _children_cpu() - c0 + (helper.cpu_seconds() or 0.0) - h0)
            batches[name].append(stats.batches - b0)
            scores[name] = [o["score"] for o in out]
    same = scores["awaited"] == scores["threaded"]
    for name, label in (("awaited", "per sample, all awaited at once (compute_score_async)"),
                        ("threaded", f"per sample, {threads} threads (compute_score)")):
        print(f"  {label}: {statistics.median(rates[name]):8.0f} rewards/s  (runs "
              f"{', '.join(f'{r:.0f}' for r in rates[name])}; batches per run "
              f"{', '.join(map(str, batches[name]))}; CPU "
              f"{1000 * statistics.median(cpu[name]) / len(completions):.2f} ms per reward)")
    print(f"  per-sample scores equal across the two: {same}")
    return statistics.median(rates["awaited"]), statistics.median(rates["threaded"])


def if_only(solutions: list[tuple[str, str]], repeat: int, naive_n: int, threads: int = 32) -> tuple[float, float]:
    completions = [s for _t, s in solutions]
    refs = [f"bigvibebench::{t}" for t, _s in solutions]
    cfg = RewardConfig(functional=False)
    # warm-up (not timed): the suite, Ruff's version and rule list, and the parse helper
    # process, which a training loop starts once for all its batches
    RewardScorer(cfg).score(completions[:128], refs[:128])
    times: list[float] = []
    cpu: list[tuple[float, float, float]] = []  # (this process, Ruff, parse helper) CPU s per run
    helper = shared_helper()
    for _ in range(repeat):
        scorer = RewardScorer(cfg)
        c0, r0, h0 = time.process_time(), _children_cpu(), helper.cpu_seconds() or 0.0
        t0 = time.perf_counter()
        results = scorer.score(completions, refs)
        times.append(time.perf_counter() - t0)
        cpu.append((time.process_time() - c0, _children_cpu() - r0, (helper.cpu_seconds() or 0.0) - h0))
    wall = statistics.median(times)
    own_cpu = statistics.median(c for c, _r, _h in cpu)
    ruff_cpu = statistics.median(r for _c, r, _h in cpu)
    helper_cpu = statistics.median(h for _c, _r, h in cpu)
    verdicts = sum(len(r.verdicts) for r in results)
    infra = sum(r.is_infra_error for r in results)
    mean_if = statistics.fmean(r.reward for r in results if r.reward is not None)
    t0 = time.perf_counter()
    one = RewardScorer(cfg)
    for c, r in zip(completions[:naive_n], refs[:naive_n], strict=True):
        one.score([c], [r])
    naive_rate = naive_n / (time.perf_counter() - t0)
    rate = len(results) / wall
    print(f"IF-only: {len(results)} completions, {verdicts} verdicts, runs {', '.join(f'{t:.2f}' for t in times)} s")
    print(f"  reward API     : {rate:8.0f} rewards/s  ({verdicts / wall:.0f} verdicts/s; mean IF "
          f"{mean_if:.3f}; {infra} infrastructure failures)")
    print(f"  one at a time  : {naive_rate:8.0f} rewards/s  (first {naive_n} completions)")
    awaited, threaded = per_sample(completions, refs, repeat, threads)
    print(f"  per sample under concurrency / batch API: {awaited / rate:.2f}x awaited, "
          f"{threaded / rate:.2f}x threaded; / one at a time: {awaited / naive_rate:.1f}x awaited")
    print(f"  target >= 1,500 rewards/s per sample (awaited): {'met' if awaited >= 1500 else 'MISSED'}")
    total = own_cpu + ruff_cpu + helper_cpu
    print(f"  CPU per run    : {own_cpu:.2f} s Python + {ruff_cpu:.2f} s Ruff + {helper_cpu:.2f} s parse "
          f"helper = {1000 * total / len(results):.2f} ms per reward (load average "
          f"{os.getloadavg()[0]:.1f}: wall time includes waiting for the CPU)")
    print(f"  target >= 2,000 rewards/s: {'met' if rate >= 2000 else 'MISSED'}")
    return rate, naive_rate


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def naive_reward(code: str, prob: Problem, timeout: float) -> tuple[float, float]:
    """(func, reward) computed the naive way: plain interpreter + one verification call."""
    func = 1.0 if plain_run(dataclasses.replace(prob, canonical_solution=code), timeout) == "passed" else 0.0
    item = VerifyItem(instructions=[(i.id, i.params) for i in prob.instructions], reply=code,
                      code=extract_code(code).code, entry_point=prob.entry_point)
    verdicts = verify_batch([item])[0]
    inst_if = sum(bool(v.passed) for v in verdicts) / len(verdicts)
    return func, 0.4 * inst_if + 0.6 * func


def full(solutions: dict[str, str], args: argparse.Namespace) -> float:
    suite = load_suite("bigvibebench")
    stdlib = sorted((p for p in suite.problems if p.metadata.get("stdlib_only")),
                    key=lambda p: int(p.task_id.split("/")[1]))
    chosen = [(solutions[p.task_id], p) for p in stdlib if p.task_id in solutions]
    workers = args.workers or default_workers()
    scorer = RewardScorer(RewardConfig(exec_settings=ExecSettings(time_limit_s=args.time_limit),
                                       workers=workers))
    scorer.score([chosen[0][0]], [chosen[0][1]])  # warm-up: fork server, Ruff (not timed)
    top_level = {p.name for p in Path("/").iterdir()}
    naive_s = api_s = 0.0
    agree = naive_pass = api_pass = infra = 0
    statuses: dict[str, int] = {}
    for b in range(0, len(chosen), args.block):
        block = chosen[b : b + args.block]
        t0 = time.perf_counter()
        naive = [naive_reward(code, prob, args.time_limit + 20) for code, prob in block]
        t1 = time.perf_counter()
        for name in clean_host(top_level):
            print(f"  the naive (unsandboxed) runs created /{name} on the host; removed it")
        t2 = time.perf_counter()
        results = scorer.score([c for c, _p in block], [p for _c, p in block])
        t3 = time.perf_counter()
        naive_s += t1 - t0
        api_s += t3 - t2
        for (func, _reward), res in zip(naive, results, strict=True):
            naive_pass += func == 1.0
            api_pass += res.func == 1.0
            agree += func == res.func
            infra += res.is_infra_error
            statuses[res.exec_status] = statuses.get(res.exec_status, 0) + 1
        print(f"  block {b // args.block + 1}: naive {t1 - t0:.1f} s, reward API {t3 - t2:.1f} s", flush=True)
    n = len(chosen)
    ratio = naive_s / api_s
    print(f"full rewards: {n} stdlib tasks, {os.cpu_count()} CPUs, {workers} sandboxes at a time, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  naive serial : {naive_s:7.1f} s  {n / naive_s:6.2f} rewards/s  ({naive_pass} pass)")
    print(f"  reward API   : {api_s:7.1f} s  {n / api_s:6.2f} rewards/s  ({api_pass} pass; {statuses}; "
          f"{infra} infrastructure failures)")
    print(f"  functional outcomes agree on {agree}/{n}")
    print(f"  ratio reward API / naive: {ratio:.2f}x (target >= 1.8x): {'met' if ratio >= 1.8 else 'MISSED'}")
    return ratio


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, default=SAMPLES)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-if", type=int, default=100, help="completions scored one at a time")
    ap.add_argument("--threads", type=int, default=32, help="threads calling the sync per-sample reward")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--block", type=int, default=60)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--skip-full", action="store_true", help="only the IF-only part")
    args = ap.parse_args()
    solutions = load_solutions(args.samples)
    rate, _naive = if_only(solutions, args.repeat, args.naive_if, args.threads)
    ok = rate >= 2000
    if not args.skip_full:
        ok = full(dict(solutions), args) >= 1.8 and ok
    return 0 if ok else 1


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        sys.exit(main())
    finally:
        print(run_context())
