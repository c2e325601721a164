"""The plugin's own overhead on a fully cached re-run of BigVibeBench (issue 5).

    python benchmarks/bench_plugin.py [--suite bigvibebench] [--limit N] [--sandbox stub|real]

What is measured, in one run, on the 1,140 BigVibeBench tasks with the baseline, single-turn
(k = 5) and multi-turn (k = 5) protocols (3,420 items, 9,120 generations):

1. ``pytest --collect-only`` with the plugin, minus the start-up of an empty pytest run: the
   collection time (loading the suite, planning and creating the items).
2. A fully cached run: the model ``scripted:bench`` answers every request with the task's
   canonical solution and goes through the generation cache like an API model; a first run
   fills the cache, the measured second run serves every generation from it (hit rate 100%).
   The sandbox is replaced by a stub that returns "passed" at once (``--sandbox stub``, the
   default), so what is left is the plugin: collection, prompts, cache look-ups, extraction,
   verification (Ruff, batched), records, aggregation and the JSON report.
   Per-item overhead = (wall time - empty start-up - collection) / items, measured with
   ``--tb=line`` (pytest's own failure summary with the default ``--tb`` looks up every
   failure's teardown report among all reports, a cost quadratic in the number of failures;
   it is printed too).
3. The same number of no-op pytest items (a parametrized ``def test(i): pass``) as the
   baseline of what pytest itself costs per item; the ratio is printed.

Target (issue 5): under 20 ms per item. Runs with ``-n 0`` so the per-item cost is not hidden
by parallelism. With ``--sandbox real`` the real sandbox runs (cached results after the first
run), which needs the BigCodeBench libraries and takes much longer.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STUB_PLUGIN = '''
"""Benchmark stub: the sandbox answers "passed" at once (measures the plugin, not the tests)."""
from pytest_vibecheck.execute import tests as execution
from pytest_vibecheck.execute import pool as runner
def _stub(code, problem, settings=None, cache=None):
    return execution.ExecResult(status="passed", task_id=problem.task_id, network="n/a")


execution.run_tests = _stub
runner.run_tests = _stub
'''

NOOP_TESTS = '''
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_noop(i):
    pass
'''


CPU: dict[int, float] = {}


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(cwd: Path, args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall seconds and the process; its CPU seconds (with its children, e.g. Ruff) go to CPU."""
    c0 = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd, env=env, capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - t0
    CPU[id(proc)] = _children_cpu() - c0
    return wall, proc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="bigvibebench", help="suite name or folder (default bigvibebench)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    ap.add_argument("--sandbox", choices=("stub", "real"), default="stub")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="vibecheck-bench-"))
    work.chmod(0o755)
    (work / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    (work / "bench_stub.py").write_text(STUB_PLUGIN, encoding="utf-8")
    (work / "script.json").write_text(
        json.dumps({"bench": {"default": "@reference", "cacheable": True,
                              "usage": {"input_tokens": 100, "output_tokens": 200}}}),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    env["VIBECHECK_SCRIPTED"] = str(work / "script.json")
    env["PYTHONPATH"] = str(work)
    suite = str(Path(args.suite).resolve()) if Path(args.suite).is_dir() else args.suite
    vibe = ["--vibe-model", "scripted:bench", "--vibe-suite", suite,
            "--vibe-protocol", "baseline,single,multi", "--vibe-k", "5",
            "--vibe-cache", str(work / "gen.sqlite")]
    if args.limit:
        vibe += ["--vibe-limit", str(args.limit)]
    if args.sandbox == "stub":
        vibe = ["-p", "bench_stub", *vibe]

    empty_dir = work / "empty"
    empty_dir.mkdir()
    (empty_dir / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    empties = [_run(empty_dir, ["--collect-only", "-q"], env) for _ in range(3)]
    t_empty = min(w for w, _ in empties)
    c_empty = min(CPU[id(p)] for _, p in empties)

    collects = [_run(work, [*vibe, "--collect-only", "-q"], env) for _ in range(3)]
    t_collect, proc = min(collects, key=lambda r: r[0])
    c_collect = min(CPU[id(p)] for _, p in collects)
    lines = [ln for ln in proc.stdout.splitlines() if "::" in ln]
    n_items = len(lines)
    if proc.returncode != 0 or not n_items:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        return 1

    t_fill, proc = _run(work, [*vibe, "-q", "--tb=line", "--vibe-report", str(work / "fill.json")], env)
    t_cached, proc = _run(work, [*vibe, "-q", "--tb=line", "--vibe-report", str(work / "cached.json")], env)
    c_cached = CPU[id(proc)]
    t_cached_tb, _ = _run(work, [*vibe, "-q", "--vibe-report", str(work / "cached-tb.json")], env)
    report = json.loads((work / "cached.json").read_text(encoding="utf-8"))
    gen = report["generation"]
    noop_dir = work / "noop"
    noop_dir.mkdir()
    (noop_dir / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    (noop_dir / "test_noop.py").write_text(NOOP_TESTS.format(n=n_items), encoding="utf-8")
    t_noop, noop_proc = _run(noop_dir, ["-q"], env)
    c_noop = CPU[id(noop_proc)]

    collect = t_collect - t_empty
    per_item = (t_cached - t_empty - collect) / n_items
    per_noop = (t_noop - t_empty) / n_items
    timing = {k: sum(i["timing"][k] for i in report["items"]) for k in ("generate", "verify", "tests")}
    groups = {(g["protocol"], g["k"]): g for g in report["aggregates"]}
    print(f"suite {args.suite}: {report['suites'][0]['problems']} tasks, {n_items} items, "
          f"{gen['requested']} generations; sandbox {args.sandbox}; Python {report['run']['python_version']}, "
          f"Ruff {report['run']['ruff_version']}, {os.cpu_count()} CPUs")
    print(f"empty pytest start-up:              {t_empty:8.2f} s")
    print(f"collection (minus start-up):        {collect:8.2f} s  ({1000 * collect / n_items:.2f} ms per item)")
    print(f"first run (fills the cache):        {t_fill:8.2f} s")
    print(f"cached re-run (wall):               {t_cached:8.2f} s  "
          f"(cache hit rate {100 * (gen['hit_rate'] or 0):.1f}%, {gen['cached']}/{gen['requested']})")
    print(f"  inside items: generate {timing['generate']:.2f} s, verify {timing['verify']:.2f} s, "
          f"tests {timing['tests']:.2f} s")
    print(f"per-item overhead of the plugin:    {1000 * per_item:8.2f} ms  (target < 20 ms; --tb=line)")
    per_item_tb = (t_cached_tb - t_empty - collect) / n_items
    print(f"  same with pytest's default --tb:  {1000 * per_item_tb:8.2f} ms  (pytest prints every failure; "
          "its failure summary is quadratic in the number of failures)")
    print(f"pytest no-op item, same count:      {1000 * per_noop:8.2f} ms")
    print(f"ratio plugin / no-op item:          {per_item / per_noop if per_noop > 0 else float('nan'):8.1f}x")
    cpu_item = (c_cached - c_collect) / n_items
    cpu_noop = (c_noop - c_empty) / n_items
    print(f"CPU per item (plugin, incl. Ruff):  {1000 * cpu_item:8.2f} ms  "
          f"(no-op item {1000 * cpu_noop:.2f} ms; CPU time is less sensitive to a busy machine)")
    for key in (("baseline", 0), ("single", 5), ("multi", 5)):
        g = groups.get(key)
        if g and g["evaluated"]:
            print(f"  {key[0]:8} k={key[1]}: n={g['evaluated']} pass@1 {g['pass_at_1']:.3f} "
                  f"instruction-IF {g['instruction_if']:.3f} task-IF {g['task_if']:.3f}")
    print(f"RESULT per_item_ms={1000 * per_item:.2f} cpu_per_item_ms={1000 * cpu_item:.2f} "
          f"collect_s={collect:.2f} items={n_items} "
          f"target_met={per_item < 0.020}")
    if args.keep:
        print(f"work folder: {work}")
    else:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        sys.exit(main())
    finally:
        print(run_context())
