"""Wall time of full-suite runs with real sandboxes, this tree against an older one (issue 17).

    python benchmarks/bench_suite_run.py [--baseline-rev REV] [--suite bigvibebench] [-n 2]
                                         [--rounds 1] [--env NAME]

Workload: the shipped replay of Qwen2.5-Coder-7B-Instruct (1,140 real replies) on every task of
``--suite``, baseline protocol, ``pytest -n N`` with real sandboxes, three runs per code path,
each in its own empty folder:

1. **first run** on a fresh machine: empty calibration store and execution cache (every time
   limit must be calibrated: today's code times each reference before its candidate);
2. **new model**: the calibration store kept, the execution cache emptied (a model whose code
   was never run here);
3. **fully cached**: the same again, every result from the execution cache.

The baseline is the code at ``--baseline-rev`` (default ``main``), checked out into a temporary
``git worktree`` and imported instead of this tree (``PYTHONPATH``), with its own shipped
suites; both use this interpreter and its installed libraries. The runs alternate (old first,
new, old, new, ...) so load from other users of the machine hits both sides alike. Prints each
time, the ratio new / old per run and whether the verdicts (item outcomes) agree, and exits 1
when they do not. Targets (issue 17): new model <= 0.65x, first run <= 0.55x.

``--env NAME`` runs this tree's side in a ``vibecheck env create`` environment as well (an
extra row; the old tree has no environments, so it is not a pair).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "replay:qwen2.5-coder-7b-instruct"
RUNS = ("first run", "new model", "fully cached")
#: ``--tasks sleepers``: the four sleep-bound tasks (issue 17: 73, 25, 20, 20 s) and a sample
#: of about one in six tasks, for developing against what the full run does
SLEEPERS_SAMPLE = (
    "BigCodeBench/1104,BigCodeBench/1040,BigCodeBench/220,BigCodeBench/1103,"
    "BigCodeBench/*3,BigCodeBench/*8"
)
#: CPU seconds (user + system) of each work folder's runs and every process they waited for
CPU: dict[str, float] = {}


def _env(pythonpath: Path, timeline: Path | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH",
                     "VIBECHECK_TIMELINE")
    }
    env["PYTHONPATH"] = str(pythonpath)
    if timeline is not None:
        env["PYTHONPATH"] += os.pathsep + str(ROOT / "benchmarks")
        env["VIBECHECK_TIMELINE"] = str(timeline)
    return env


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _pytest(
    work: Path, tree: Path, args: list[str], timeline: Path | None = None
) -> tuple[float, dict[str, str], str]:
    report = work / "report.json"
    if timeline is not None:
        args = ["-p", "timeline_plugin", *args]
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--vibe-model={MODEL}",
        "--vibe-protocol=baseline",
        "-q",
        "--tb=no",
        "--vibe-no-fail-items",
        f"--vibe-report={report}",
        *args,
    ]
    started, cpu0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run(
        cmd, cwd=work, env=_env(tree, timeline), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    CPU[str(work)] = CPU.get(str(work), 0.0) + _children_cpu() - cpu0
    if proc.returncode not in (0, 1) or not report.is_file():
        tail = (proc.stdout + proc.stderr)[-1500:]
        raise SystemExit(f"pytest failed in {work} (exit {proc.returncode}):\n{tail}")
    data = json.loads(report.read_text(encoding="utf-8"))
    outcomes = {
        str(it["task_id"]): (
            "skipped"
            if it.get("skip_reason")
            else "error"
            if it.get("error")
            else str((it.get("turns") or [{}])[-1].get("tests", {}).get("status"))
        )
        for it in data["items"]
    }
    line = next((ln for ln in proc.stdout.splitlines() if f"  {MODEL}  " in ln), "")
    return wall, outcomes, line.strip()


def _worktree(rev: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), rev],
        check=True,
        capture_output=True,
    )
    return into


def _rev(rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-rev", default="main", help="git revision of the old code path")
    ap.add_argument("--also-rev", action="append", default=[], metavar="REV",
                    help="also run this revision (a middle side, e.g. the code before a change; "
                         "repeatable)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="run only this tree (and --also-rev): no ratios, for development")
    ap.add_argument("--suite", default="bigvibebench")
    ap.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (-n)")
    ap.add_argument("--env", default=None, help="also run this tree in this execution environment")
    ap.add_argument("--keep", action="store_true", help="keep the work folders")
    ap.add_argument("--tasks", default=None,
                    help="only these tasks (--vibe-tasks GLOB,...); 'sleepers' is the "
                         f"sleep-bound tasks and a sample: {SLEEPERS_SAMPLE}")
    ap.add_argument("--timeline", type=Path, default=None, metavar="DIR",
                    help="write each run's timeline (benchmarks/timeline_plugin.py) under DIR "
                         "and print its summary")
    args = ap.parse_args(argv)
    if args.tasks == "sleepers":
        args.tasks = SLEEPERS_SAMPLE

    tmp = Path(tempfile.mkdtemp(prefix="vibecheck-bench-suite-"))
    trees: dict[str, Path] = {}
    labels: dict[str, str] = {}
    if not args.no_baseline:
        rev = _rev(args.baseline_rev)
        trees["old"] = _worktree(rev, tmp / "old-tree")
        labels["old"] = f"{args.baseline_rev} ({rev})"
    for extra in args.also_rev:
        rev = _rev(extra)
        trees[rev] = _worktree(rev, tmp / f"tree-{rev}")
        labels[rev] = f"{extra} ({rev})"
    trees["new"] = ROOT
    labels["new"] = "this tree"
    common = [f"--vibe-suite={args.suite}", "-n", str(args.workers)]
    if args.tasks:
        common.append(f"--vibe-tasks={args.tasks}")
    times: dict[tuple[str, str], float] = {}
    cpu: dict[tuple[str, str], float] = {}
    outcomes: dict[tuple[str, str], dict[str, str]] = {}
    loads: list[float] = []
    try:
        for side in trees:
            (tmp / side).mkdir()
        print(f"suite {args.suite}, model {MODEL}, baseline protocol, -n {args.workers}"
              f"{', tasks ' + args.tasks if args.tasks else ''}; "
              + ", ".join(f"{s} = {labels[s]}" for s in trees), flush=True)
        for run in RUNS:
            for side, tree in trees.items():
                work = tmp / side
                if run == "new model":
                    (work / ".vibecheck" / "exec-cache.sqlite").unlink()
                    for extra in ("-wal", "-shm"):
                        (work / ".vibecheck" / f"exec-cache.sqlite{extra}").unlink(missing_ok=True)
                timeline = None
                if args.timeline is not None:
                    timeline = args.timeline / f"{side}-{run.replace(' ', '-')}"
                    shutil.rmtree(timeline, ignore_errors=True)
                before = CPU.get(str(work), 0.0)
                load = os.getloadavg()[0]
                wall, outs, line = _pytest(work, tree, common, timeline)
                loads.append(load)
                cpu[(side, run)] = CPU[str(work)] - before
                times[(side, run)] = wall
                outcomes[(side, run)] = outs
                print(f"  {run:<13} {side}: {wall:7.1f} s ({cpu[(side, run)]:.0f} CPU s, load "
                      f"{load:.1f} at start)   {line}", flush=True)
                if timeline is not None:
                    from timeline_plugin import summarize

                    print("    " + summarize(timeline).replace("\n", "\n    "), flush=True)
        env_row = None
        if args.env:
            work = tmp / "new-env"
            work.mkdir()
            env_args = [*common, f"--vibe-env={Path(ROOT, '.vibecheck', 'envs', args.env)}"
                        if not Path(args.env).is_dir() else f"--vibe-env={args.env}"]
            env_row = [_pytest(work, ROOT, env_args) for _ in range(2)]
    finally:
        for tree in trees.values():
            if tree != ROOT:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False, capture_output=True,
                )
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nload average (1 min) at the start of the runs: {min(loads):.1f} to {max(loads):.1f}; "
          f"now {os.getloadavg()[0]:.1f}")
    bad = 0
    others = [s for s in trees if s != "old"]
    if "old" in trees:
        for side in others:
            print(f"\n{side} against old:")
            print("run            old (s)   new (s)   new/old   CPU s old/new   verdicts")
            for run in RUNS:
                old, new = times[("old", run)], times[(side, run)]
                a, b = outcomes[("old", run)], outcomes[(side, run)]
                diff = sorted(t for t in a.keys() | b.keys() if a.get(t) != b.get(t))
                bad += len(diff)
                same = (f"identical on {len(a)}" if not diff
                        else f"{len(diff)} differ: {', '.join(diff[:6])}")
                c_old, c_new = cpu[("old", run)], cpu[(side, run)]
                print(f"{run:<13} {old:9.1f} {new:9.1f} {new / old:9.2f}x   "
                      f"{c_old:6.0f} / {c_new:<6.0f}  {same}")
    else:
        for run in RUNS:
            print(f"{run:<13} " + "   ".join(f"{s} {times[(s, run)]:.1f} s" for s in others))
    runnable = sum(1 for s in outcomes[("new", "first run")].values() if s not in ("skipped", "error"))
    print(f"tasks run (not skipped): {runnable} of {len(outcomes[('new', 'first run')])}")
    print("targets: new model <= 0.65x, first run <= 0.55x")
    if env_row is not None:
        (w1, o1, l1), (w2, _o2, _l2) = env_row
        ran = sum(1 for s in o1.values() if s not in ("skipped", "error"))
        print(f"\nthis tree in --vibe-env {args.env}: first run {w1:.1f} s, fully cached "
              f"{w2:.1f} s, {ran} of {len(o1)} tasks run\n  {l1}")
    return 1 if bad else 0


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        sys.exit(main())
    finally:
        print(run_context())
