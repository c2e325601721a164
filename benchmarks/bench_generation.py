#!/usr/bin/env python3
"""Generation-layer overhead on real data: protocols + generation cache + Generator.

Workload: all 1,140 BigCodeBench tasks (``../shared/data/bigcodebench``), 5 instructions each,
and for every task the requests of baseline, single-turn k = 1..5 and multi-turn k = 1..5
(11 requests per task, 12,540 in all; multi-turn turn 0 is the baseline request, so it adds
no request of its own). The model is a cacheable scripted backend that answers with the
fenced canonical solution (no network).

Measured in the same run:
  A. build messages + requests + cache keys only (no SQLite): the floor;
  B. first run: every request a miss, reply generated and written;
  C. fully cached re-run: every request a hit;
  D. the same cold workload in 4 processes at once on one fresh cache file (as ``-n 4``):
     errors must be 0, every key stored once;
  E. the shipped replay: load time and 1,140 look-ups.

Prints milliseconds per request and ratios against A.
Usage: python benchmarks/bench_generation.py [--tasks N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_vibecheck.generate.backends import GenerationRequest, make_backend  # noqa: E402
from pytest_vibecheck.generate.backends.base import fence  # noqa: E402
from pytest_vibecheck.generate.backends.scripted import ScriptedBackend  # noqa: E402
from pytest_vibecheck.generate.cache import GenerationCache, cache_key  # noqa: E402
from pytest_vibecheck.generate.generator import Generator, request_for  # noqa: E402
from pytest_vibecheck.generate.protocols import (  # noqa: E402
    baseline_messages,
    label,
    multi_turn_messages,
    single_turn_messages,
)
from pytest_vibecheck.suites.loaders import load_bigcodebench  # noqa: E402
from pytest_vibecheck.suites.problem import InstructionRef, Problem  # noqa: E402

DATA = Path(os.environ.get("VIBECHECK_BIGCODEBENCH", REPO.parent / "shared" / "data" / "bigcodebench" / "BigCodeBench-v0.1.0_hf.jsonl.gz"))
REFS = (
    InstructionRef("style_3", {"line_length": 88}),
    InstructionRef("logic_3", {}),
    InstructionRef("doc_3", {"convention": "google"}),
    InstructionRef("error_1", {}),
    InstructionRef("library_1", {}),
)


def problems(n: int) -> list[Problem]:
    loaded = load_bigcodebench(DATA)[:n]
    return [
        Problem(
            suite="bench", task_id=p.task_id, prompt=p.prompt, test=p.test,
            canonical_solution=p.canonical_solution, instructions=REFS,
        )
        for p in loaded
    ]


def requests_of(p: Problem) -> list[GenerationRequest]:
    reply = fence(p.canonical_solution or "")
    out = [request_for(p, baseline_messages(p), "baseline", max_tokens=4096)]
    out += [request_for(p, single_turn_messages(p, k), label("single", k)) for k in range(1, 6)]
    out += [request_for(p, multi_turn_messages(p, [reply] * k, k), label("multi", k)) for k in range(1, 6)]
    return out


def bot() -> ScriptedBackend:
    return ScriptedBackend("bench", respond=lambda r: fence(r.reference or ""))


def run_all(gen: Generator, probs: list[Problem]) -> int:
    n = 0
    for p in probs:
        for r in requests_of(p):
            gen.generate(r)
            n += 1
    return n


def _worker(args: tuple[str, int]) -> tuple[int, int, float]:
    path, n = args
    gen = Generator(bot(), GenerationCache(path), "use")
    t = time.perf_counter()
    errors = 0
    for p in problems(n):
        for r in requests_of(p):
            try:
                gen.generate(r)
            except Exception:  # noqa: PERF203 - counting failures is the point
                errors += 1
    return errors, gen.stats.generated, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=1140)
    args = ap.parse_args()
    probs = problems(args.tasks)
    identity = bot().cache_identity()

    t = time.perf_counter()
    n = 0
    keys = set()
    for p in probs:
        for r in requests_of(p):
            keys.add(cache_key(identity, r))
            n += 1
    floor = time.perf_counter() - t
    print(f"requests: {n:,} ({len(probs):,} tasks x 11); distinct keys {len(keys):,} (tasks with identical prompts share a reply)")
    print(f"A. messages + requests + keys only : {floor:7.2f} s  {1000 * floor / n:6.3f} ms/request")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cache.sqlite"
        gen = Generator(bot(), GenerationCache(path), "use")
        t = time.perf_counter()
        run_all(gen, probs)
        cold = time.perf_counter() - t
        print(f"B. first run (miss + write)        : {cold:7.2f} s  {1000 * cold / n:6.3f} ms/request  ({cold / floor:.1f}x A)")
        gen2 = Generator(bot(), GenerationCache(path), "use")
        t = time.perf_counter()
        run_all(gen2, probs)
        warm = time.perf_counter() - t
        s = gen2.stats
        print(f"C. fully cached re-run (hits)      : {warm:7.2f} s  {1000 * warm / n:6.3f} ms/request  ({warm / floor:.1f}x A); hits {s.hits:,}, misses {s.misses:,}")
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
        print(f"   cache file: {len(gen2.cache or []):,} rows, {size / 1e6:.1f} MB; integrity {GenerationCache(path).integrity_check()}")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cache.sqlite"
        GenerationCache(path).close()
        t = time.perf_counter()
        with multiprocessing.get_context("fork").Pool(4) as pool:
            res = pool.map(_worker, [(str(path), args.tasks)] * 4)
        wall = time.perf_counter() - t
        cache = GenerationCache(path)
        errors = sum(r[0] for r in res)
        generated = sum(r[1] for r in res)
        print(
            f"D. 4 processes, same cold workload : {wall:7.2f} s wall; errors {errors}; rows {len(cache):,} "
            f"(expected {len(keys):,}); replies generated {generated:,} (duplicates where two processes raced: "
            f"{generated - len(keys):,}); integrity {cache.integrity_check()}"
        )

    t = time.perf_counter()
    replay = make_backend("replay:qwen2.5-coder-7b-instruct")
    load = time.perf_counter() - t
    gen = Generator(replay)
    t = time.perf_counter()
    for p in probs:
        gen.generate(request_for(p, baseline_messages(p), "baseline"))
    look = time.perf_counter() - t
    print(f"E. replay load {1000 * load:.0f} ms; {len(probs):,} look-ups {1000 * look / len(probs):.3f} ms each")
    return 0


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        sys.exit(main())
    finally:
        print(run_context())
