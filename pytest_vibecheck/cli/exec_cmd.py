"""``vibecheck exec --suite SUITE --task ID [--code FILE|-] [--json]``: run one candidate.

Runs the task's tests in the sandbox against the code in ``FILE`` (``-`` = stdin; default:
the task's reference solution) and prints the outcome. Exit status: 0 passed, 1 failed,
timeout or tampered, 3 error or skipped (the environment or the sandbox, never the code), 2 bad
input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.cache import DEFAULT_EXEC_CACHE_PATH, ExecCache
from pytest_vibecheck.execute.calibrate import DEFAULT_CALIBRATION_PATH, Calibrator
from pytest_vibecheck.execute.environments import resolve_environment
from pytest_vibecheck.execute.executor import make_executor
from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.sandbox import SandboxSettings
from pytest_vibecheck.execute.tests import DEFAULT_TIME_LIMITS, ExecSettings
from pytest_vibecheck.suites.profiles import LIVE_KINDS, get_profile
from pytest_vibecheck.suites.store import load_suite

EXIT_BY_STATUS = {"passed": 0, "failed": 1, "timeout": 1, "tampered": 1, "error": 3, "skipped": 3}


def register(sub: Any) -> None:
    """Add the ``exec`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "exec", help="run one candidate against a task's tests in the sandbox"
    )
    p.add_argument("--suite", required=True, help="suite name or folder (`vibecheck problems list` lists the shipped ones)")
    p.add_argument("--task", required=True, help="task id, e.g. BigCodeBench/13")
    p.add_argument(
        "--code",
        default=None,
        metavar="FILE|-",
        help="candidate program (default: the task's reference solution; - reads stdin)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--profile",
        default="paper",
        help="profile whose grading rule and per-case time limit apply to LiveCodeBench tests: "
        "paper (default) or lcb (docs/suites.md)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="S",
        help="fixed time limit in seconds (default: calibrated on this machine)",
    )
    p.add_argument("--floor", type=float, default=5.0, metavar="S", help="calibration floor (s)")
    p.add_argument(
        "--factor", type=float, default=4.0, help="calibration factor (x reference time)"
    )
    p.add_argument(
        "--memory-mb", type=int, default=4096, help="address space above the start size (MiB)"
    )
    p.add_argument("--allow-network", action="store_true", help="do not block the network")
    p.add_argument(
        "--env",
        default=None,
        metavar="NAME|PATH",
        help="execution environment made by `vibecheck env create` (default: this interpreter)",
    )
    p.add_argument(
        "--executor",
        default="local",
        metavar="SPEC",
        help="where the sandbox runs: local (default) or ray[://HOST:PORT] (the ray extra)",
    )
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    p.add_argument(
        "--cache", default=str(DEFAULT_EXEC_CACHE_PATH), metavar="PATH", help="result cache file"
    )
    p.set_defaults(func=run)


def _read_code(arg: str | None, reference: str | None, task: str) -> str:
    if arg is None:
        if not reference:
            raise VibecheckError(
                f"task {task!r} has no reference solution; pass the candidate with --code FILE"
            )
        return reference
    if arg == "-":
        return sys.stdin.read()
    path = Path(arg)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise VibecheckError(f"--code {arg}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise VibecheckError(f"--code {arg}: not UTF-8 text") from None


def run(args: argparse.Namespace) -> int:
    """Run the candidate and print the result; returns the exit status described above."""
    suite = load_suite(args.suite)
    problem = suite.get(args.task)
    code = _read_code(args.code, problem.canonical_solution, args.task)
    env = resolve_environment(args.env)
    calibrator = None
    if args.time_limit is None:
        calibrator = Calibrator(
            DEFAULT_CALIBRATION_PATH, floor_s=args.floor, factor=args.factor, environment=env.id
        )
    profile = get_profile(args.profile)
    limits = dict(DEFAULT_TIME_LIMITS)
    limits.update(dict.fromkeys(LIVE_KINDS, profile.case_time_limit_s))
    try:
        settings = ExecSettings(
            grading=profile.grading,
            default_time_limits=limits,
            sandbox=SandboxSettings(
                memory_headroom_mb=args.memory_mb,
                network="allow" if args.allow_network else "block",
                python=None if env.id == "" else env.python,
            ),
            time_limit_s=args.time_limit,
            calibrator=calibrator,
            environment=env.id,
            preload=env.preload,
        )
    except VibecheckError as exc:
        raise VibecheckError(f"invalid option: {exc}") from None
    cache = None if args.no_cache else ExecCache(args.cache)
    executor = make_executor(args.executor)
    try:
        result = run_many([(code, problem)], settings, cache, executor=executor)[0]
    finally:
        executor.close()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        line = f"{problem.task_id}: {result.status.upper()}"
        if result.failed_tests:
            line += f" ({', '.join(result.failed_tests[:8])})"
        line += f" in {result.duration_s:.2f} s"
        if result.cached:
            line += " [cached]"
        print(line)
        lim = result.limits
        if lim:
            print(
                f"  time limit {lim.get('time_limit_s')} s ({lim.get('time_limit_source')}), "
                f"network {result.network}, address space {lim.get('address_space_mb')} MiB, "
                f"processes {lim.get('nproc')}"
            )
        if result.message:
            print("  " + result.message.strip().replace("\n", "\n  "))
    return EXIT_BY_STATUS[result.status]
