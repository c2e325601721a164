"""Rewards on a Ray cluster, a Ray worker killed mid-run: verdicts against the local pool.

Runs itself inside a network namespace that has only loopback
(``_common.in_loopback_namespace``: ``unshare -n`` as root, else ``unshare -rn``; ``ip link set
lo up``; ``RAY_AUTH_MODE=disabled``, usage stats off), so nothing Ray starts can reach beyond
this machine (Ray's probe of 8.8.8.8:53 finds no route). As root it keeps the host's user ids:
inside ``unshare -r`` only one uid is mapped, and the sandbox cannot give its runs their own
uid (every run is then a sandbox error). There it
starts a local Ray instance (``ray.init(num_cpus=...)``, node address 127.0.0.1) and scores
the same completions three ways, in one run:

1. **local pool**: ``RewardConfig(executor="local")``, the floor;
2. **Ray, retries on**: a scorer with the default executor, which in a process connected to
   Ray is the project's Ray executor (as in a verl reward-loop worker, a Ray actor); a Ray
   worker process running a sandbox task is killed (SIGKILL) mid-run, and Ray runs the task
   again (:data:`~pytest_vibecheck.execute.ray_executor.RETRIES`);
3. **Ray, retries off** (``RayExecutor(retries=0)``, what the executor did before): the same
   kill; the killed task's completion becomes an infrastructure outcome (reward None, status
   ``infra_error``, ``WorkerCrashedError``), never a model failure.

The completions are the real Qwen2.5-Coder-7B-Instruct solutions of the first ``--tasks``
standard-library BigVibeBench tasks (``--reference``: their reference solutions), plus one program that sleeps ``--sleep`` seconds and then
passes (so a task is surely running when the worker is killed). Each side's verdicts (the
reward, ``exec_status``, the failed tests and every instruction's verdict) are compared with
the local pool's.

    .venv/bin/python benchmarks/ray_reward.py [--tasks 40] [--cpus 2]

Exit status 1 if the Ray side with retries differs from the local pool in any verdict, or has
an infrastructure outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any


def _task_pids() -> list[int]:
    """Ray worker processes running a sandbox task now (Ray names them after the task)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmd.startswith(b"ray::_execute_remote"):
            pids.append(int(entry.name))
    return pids


class Killer(threading.Thread):
    """Kills one Ray worker that is running a sandbox task, ``after_s`` seconds after it sees
    one (so the task is mid-run)."""

    def __init__(self, after_s: float) -> None:
        super().__init__(daemon=True)
        self.after_s = after_s
        self.killed: int | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            pids = _task_pids()
            if pids:
                if self.stop.wait(self.after_s):
                    return
                for pid in _task_pids():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        continue
                    self.killed = pid
                    return
            self.stop.wait(0.005)


def _essence(res: Any) -> tuple[Any, ...]:
    return (res.reward, res.status, res.exec_status, tuple(res.details.get("failed_tests", ())),
            tuple((v.id, v.passed) for v in res.verdicts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=40, help="standard-library BigVibeBench tasks")
    ap.add_argument("--start", type=int, default=0, help="skip the first N of those tasks")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    ap.add_argument("--sleep", type=float, default=3.0, help="seconds the sleeping program sleeps")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--reference", action="store_true",
                    help="score the tasks' reference solutions instead of the model's (no samples file)")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import SAMPLES, in_loopback_namespace, load_solutions

    in_loopback_namespace("ray_reward.py")
    import ray

    from pytest_vibecheck.execute.ray_executor import RETRIES, RayExecutor
    from pytest_vibecheck.execute.tests import ExecSettings
    from pytest_vibecheck.reward import RewardConfig, RewardScorer
    from pytest_vibecheck.suites.store import load_suite

    suite = load_suite("bigvibebench")
    solutions = ({p.task_id: p.canonical_solution or "" for p in suite.problems} if args.reference
                 else dict(load_solutions(SAMPLES)))
    stdlib = sorted((p for p in suite.problems if p.metadata.get("stdlib_only") and p.task_id in solutions),
                    key=lambda p: int(p.task_id.split("/")[1]))[args.start : args.start + args.tasks]
    sleeper = json.dumps({
        "suite": "ray-reward", "task_id": "sleeper",
        "test": {"kind": "humaneval", "entry_point": "f",
                 "code": "def check(candidate):\n    assert candidate() == 1\n"},
        "entry_point": "f", "instructions": ["doc_1"],
    })
    completions: list[str] = [f"```python\nimport time\ndef f() -> int:\n    time.sleep({args.sleep})\n    return 1\n```"]
    problems: list[Any] = [sleeper]
    completions += [solutions[p.task_id] for p in stdlib]
    problems += stdlib
    settings = ExecSettings(time_limit_s=args.time_limit)
    print(f"{len(completions)} completions ({len(stdlib)} BigVibeBench stdlib tasks + 1 sleeper), "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")

    t0 = time.perf_counter()
    local = RewardScorer(RewardConfig(executor="local", workers=args.cpus, exec_settings=settings))
    base = local.score(completions, problems)
    local_s = time.perf_counter() - t0
    print(f"  local pool          : {local_s:6.1f} s, statuses {_count(base)}")

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1")
    ok = True
    try:
        for label, executor in ((f"Ray, retries {RETRIES}", None), ("Ray, retries 0", RayExecutor(retries=0))):
            scorer = RewardScorer(RewardConfig(workers=args.cpus, exec_settings=settings),
                                  executor=executor)
            if executor is None:  # the default executor in a process connected to Ray
                made = scorer._pool_executor()
                assert isinstance(made, RayExecutor), made
            killer = Killer(after_s=0.3)
            killer.start()
            t0 = time.perf_counter()
            results = scorer.score(completions, problems)
            wall = time.perf_counter() - t0
            killer.stop.set()
            same = sum(_essence(a) == _essence(b) for a, b in zip(results, base, strict=True))
            infra = [r for r in results if r.is_infra_error]
            print(f"  {label:<20}: {wall:6.1f} s ({wall / local_s:.2f}x local), worker killed: "
                  f"pid {killer.killed}; verdicts identical to the local pool: {same}/{len(base)}; "
                  f"infrastructure outcomes: {len(infra)}")
            for r in infra:
                print(f"    {r.details.get('problem')}: reward {r.reward}, {r.status}, "
                      f"exec_status {r.exec_status}: {(r.error or '')[:160]}")
            model_fail_from_kill = [
                r for r, b in zip(results, base, strict=True)
                if b.func == 1.0 and r.func == 0.0
            ]
            print(f"    passing programs scored as model failures: {len(model_fail_from_kill)}")
            if executor is None:
                ok = ok and killer.killed is not None and same == len(base) and not infra
    finally:
        ray.shutdown()
    print(f"Ray with retries: verdicts identical and no infrastructure outcome: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


def _count(results: list[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in results:
        out[r.exec_status] = out.get(r.exec_status, 0) + 1
    return out


if __name__ == "__main__":
    sys.exit(main())
