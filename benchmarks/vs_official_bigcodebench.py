"""Execution speed against the official BigCodeBench evaluator, side by side, on real samples.

Both sides run the same Qwen2.5-Coder-7B-Instruct replies (instruct split, ``solution``) on the
same BigCodeBench tasks, in the same interpreter (the pinned environment ``--env``, default
``bigvibebench``), with the same number of parallel workers, one after the other in one run
(``--rounds`` alternates them):

- **official**: ``bigcodebench.eval.untrusted_check`` of the ``bigcodebench`` package (0.2.5,
  PyPI), as its ``evaluate`` calls it: one ``ProcessPoolExecutor`` of ``--workers`` processes,
  each sample in a forked process with a ``multiprocessing.Manager``, its default limits
  (``max_as_limit`` 30 GiB, ``max_data_limit`` 30 GiB, ``max_stack_limit`` 10 MiB,
  ``min_time_limit`` 1 s, ``gt_time_limit`` 2 s, so a 241 s timeout). Its ground-truth timing
  pass (which ``evaluate`` runs once per dataset and caches) is not counted.
- **ours**: :func:`pytest_vibecheck.execute.pool.run_many` with the full sandbox (namespaces,
  its own root, limits, the harness and its integrity layers, the static screen), a fixed
  60 s time limit (no reference timing either), no result cache.

The floor of each is the same work: importing each task's libraries and running its tests.
Printed: the wall time of each side, the ratio, the verdict agreement between the two, and the
ratio without the samples that timed out on either side (sums of per-sample wall times), with
the load average and commit.

The official package is not a dependency: install it beside the checkout with
``pip install --no-deps --target DIR bigcodebench==0.2.5`` and pass ``--official DIR``.

Usage: ``python benchmarks/vs_official_bigcodebench.py --official DIR [--every 6]
[--workers 2] [--rounds 1] [--env bigvibebench] [--without-preload] [--floor] [--per-sample PATH]``

``--without-preload`` also runs ours without the environment's preload groups (the fork
server importing the common libraries once), after the preloaded run, in the same round.
``--floor`` also measures, in the same round, the floor both sides share: the samples' tests
alone, in the environment's interpreter with its preload groups imported
(``_common.tests_floor``), and prints each side's time as a multiple of it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import floor_seconds, tests_floor

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.envcheck import check_environment
from pytest_vibecheck.execute.environments import resolve_environment
from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.sandbox import SandboxSettings
from pytest_vibecheck.execute.tests import ExecSettings
from pytest_vibecheck.suites.durations import expected_for
from pytest_vibecheck.suites.loaders import load_bigcodebench

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("VIBECHECK_DATA", ROOT.parent / "shared" / "data"))
SAMPLES = ("samples/bigcodebench-qwen2.5-coder-7b-instruct/"
           "Qwen2.5-Coder-7B-Instruct--bigcodebench-instruct--sanitized_calibrated.jsonl.gz")

#: The official side, run by the environment's interpreter with the package on its path: reads
#: [[task_id, code, test, entry_point], ...] from argv[1], prints {"wall_s", "results": {id:
#: [status, seconds]}}.
OFFICIAL_DRIVER = r"""
import json, sys, time
from concurrent.futures import ProcessPoolExecutor
from bigcodebench.eval import untrusted_check

def one(item):
    task_id, code, test, entry = item
    start = time.monotonic()
    status, _details = untrusted_check(code, test, entry, 30 * 1024, 30 * 1024, 10, 1.0, 2.0)
    return task_id, status, time.monotonic() - start

if __name__ == "__main__":
    items = json.load(open(sys.argv[1]))
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=int(sys.argv[2])) as pool:
        out = {t: [s, d] for t, s, d in pool.map(one, items)}
    print(json.dumps({"wall_s": time.monotonic() - start, "results": out}))
"""


def _official(items: list[list[str]], python: str, path: Path, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "items.json").write_text(json.dumps(items), encoding="utf-8")
        (Path(tmp) / "driver.py").write_text(OFFICIAL_DRIVER, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(path)}
        # output to files, not pipes, in a session of its own: the official evaluator runs the
        # samples unsandboxed, and a process one of them leaves behind (a fork that outlives
        # its test) would hold a pipe open and block the wait forever; what is left of the
        # session once the driver ends is killed
        out_path, err_path = Path(tmp) / "out.json", Path(tmp) / "err.txt"
        with out_path.open("w") as out_fh, err_path.open("w") as err_fh:
            proc = subprocess.Popen([python, "driver.py", "items.json", str(workers)], cwd=tmp,
                                    env=env, stdout=out_fh, stderr=err_fh, start_new_session=True)
            returncode = proc.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        stdout = out_path.read_text(encoding="utf-8", errors="replace")
        stderr = err_path.read_text(encoding="utf-8", errors="replace")
    if returncode != 0 or not stdout.strip():
        raise SystemExit(f"the official evaluator failed (exit {returncode}):\n{stderr[-2000:]}")
    out: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official", type=Path, required=True,
                    help="folder holding the bigcodebench package (pip install --no-deps --target)")
    ap.add_argument("--env", default="bigvibebench")
    ap.add_argument("--every", type=int, default=6, help="every Nth runnable task (by number)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--without-preload", action="store_true",
                    help="also run ours without the environment's preload groups (before/after)")
    ap.add_argument("--floor", action="store_true",
                    help="also measure the floor on the same samples: their tests alone, with "
                         "the environment's libraries imported (_common.tests_floor)")
    ap.add_argument("--per-sample", type=Path, default=None, metavar="PATH",
                    help="write each sample's times (JSON lines: task, official status and "
                         "seconds, our status, seconds and the harness's own seconds) to PATH")
    args = ap.parse_args(argv)
    if not (args.official / "bigcodebench" / "eval" / "__init__.py").exists():
        ap.error(f"--official {args.official}: no bigcodebench package there; install it with "
                 f"pip install --no-deps --target {args.official} bigcodebench==0.2.5")
    try:
        environment = resolve_environment(args.env)
    except VibecheckError as exc:
        ap.error(f"--env {args.env}: {exc}")
    python = sys.executable if environment.id == "" else environment.python
    problems = {p.task_id: p for p in load_bigcodebench(DATA / "bigcodebench/BigCodeBench-v0.1.0_hf.jsonl.gz")}
    with gzip.open(DATA / SAMPLES, "rt", encoding="utf-8") as fh:
        samples = {s["task_id"]: s["solution"] for s in map(json.loads, fh)}
    env = check_environment(list(problems.values()), suite="bigcodebench",
                            python=None if environment.id == "" else python)
    tasks = sorted((t for t in env.runnable if t in samples), key=lambda t: int(t.rsplit("/", 1)[1]))
    tasks = tasks[:: args.every]
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    print(f"commit {commit}; {len(tasks)} samples (every {args.every}th runnable task); "
          f"{args.workers} workers; environment {environment.describe()}")
    settings = ExecSettings(sandbox=SandboxSettings(python=None if environment.id == "" else python),
                            environment=environment.id, preload=environment.preload, time_limit_s=60.0)
    official_items = [[t, samples[t], problems[t].test.code, problems[t].entry_point or "task_func"]
                      for t in tasks]
    def timed(with_settings: ExecSettings) -> tuple[list[Any], float]:
        """Our side on every sample: the results and the wall time in seconds."""
        start = time.monotonic()
        results = run_many([(samples[t], problems[t]) for t in tasks], with_settings, None,
                           workers=args.workers, shipped=expected_for)
        return results, time.monotonic() - start

    for rnd in range(args.rounds):
        load0 = os.getloadavg()[0]
        off = _official(official_items, python, args.official, args.workers)
        ours, ours_wall = timed(settings)
        if args.without_preload and settings.preload:
            bare, bare_wall = timed(dataclasses.replace(settings, preload=()))
            same = sum(a.status == b.status for a, b in zip(ours, bare, strict=True))
            print(f"  ours without preload {bare_wall:.1f} s, with {ours_wall:.1f} s: "
                  f"{bare_wall / ours_wall:.2f}x; the same verdict on {same}/{len(tasks)}")
            for t, a, b in zip(tasks, ours, bare, strict=True):
                if a.status != b.status:
                    print(f"    differs: {t}: with preload {a.status}, without {b.status}")
        ours_by = dict(zip(tasks, ours, strict=True))
        agree = sum((off["results"][t][0] == "pass") == (ours_by[t].status == "passed") for t in tasks)
        quick = [t for t in tasks if off["results"][t][0] != "timeout" and ours_by[t].status != "timeout"]
        off_sum = sum(off["results"][t][1] for t in quick)
        ours_sum = sum(ours_by[t].duration_s for t in quick)
        print(f"round {rnd + 1} (load average {load0:.1f} -> {os.getloadavg()[0]:.1f}):")
        print(f"  official {off['wall_s']:.1f} s, ours {ours_wall:.1f} s: ours is "
              f"{off['wall_s'] / ours_wall:.2f}x faster (floor of both: the tasks' imports and tests)")
        print(f"  verdicts agree on {agree}/{len(tasks)}; official timeouts "
              f"{sum(off['results'][t][0] == 'timeout' for t in tasks)}, ours "
              f"{sum(ours_by[t].status == 'timeout' for t in tasks)}")
        print(f"  without those timeouts ({len(quick)} samples, sums of per-sample wall time): "
              f"official {off_sum:.1f} s, ours {ours_sum:.1f} s: {off_sum / max(ours_sum, 1e-9):.2f}x")
        floor_by: dict[str, list[Any]] = {}
        if args.floor:
            floor_by = tests_floor([(t, samples[t], problems[t].test.code) for t in tasks],
                                   environment, args.workers, 60)
            floor = floor_seconds([floor_by[t][1] for t in tasks], args.workers)
            quick_floor = sum(floor_by[t][1] for t in quick)
            print(f"  floor (the tests alone, libraries imported; sum / {args.workers} workers, or "
                  f"the longest): {floor:.1f} s: official {off['wall_s'] / floor:.2f}x it, ours "
                  f"{ours_wall / floor:.2f}x; without the timeouts (sums) {quick_floor:.1f} s: "
                  f"official {off_sum / quick_floor:.2f}x, ours {ours_sum / quick_floor:.2f}x")
        if args.per_sample is not None:
            with args.per_sample.open("w", encoding="utf-8") as fh:
                for t in tasks:
                    fh.write(json.dumps({"task": t, "round": rnd + 1,
                                         "official": off["results"][t],
                                         "ours": [ours_by[t].status, ours_by[t].duration_s,
                                                  ours_by[t].test_time_s],
                                         "floor": floor_by.get(t)}) + "\n")
        for t in tasks:
            if (off["results"][t][0] == "pass") != (ours_by[t].status == "passed"):
                print(f"    differs: {t}: official {off['results'][t][0]}, ours {ours_by[t].status}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
