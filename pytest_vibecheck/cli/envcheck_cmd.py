"""``vibecheck env-check SUITE [--json]``: which of a suite's tasks this environment can run."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pytest_vibecheck.execute.envcheck import TIERS, check_environment, pypi_name
from pytest_vibecheck.suites.store import load_suite


def register(sub: Any) -> None:
    """Add the ``env-check`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "env-check", help="list the tasks of a suite this environment can run"
    )
    p.add_argument("suite", help="suite name or folder")
    p.add_argument(
        "--python", default=None, help="interpreter the sandbox uses (default: this one)"
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--list", action="store_true", help="list every skipped task with its reason")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the report; returns 0 (even when tasks are skipped)."""
    suite = load_suite(args.suite)
    report = check_environment(suite.problems, suite=suite.name, python=args.python)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    pct = 100.0 * len(report.runnable) / report.total if report.total else 0.0
    print(
        f"{suite.name}: {len(report.runnable)} of {report.total} tasks can run here ({pct:.1f}%); "
        f"{len(report.skipped)} skipped (python: {report.python})"
    )
    if report.missing:
        print("missing modules (tasks needing each):")
        for mod, n in sorted(report.missing.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {mod:<20} {n:>5}   pip install {pypi_name(mod)}")
        tier = "exec-core" if set(report.missing) <= set(TIERS["exec-core"]) else "exec-full"
        print(f"or install a tier: pip install 'pytest-vibecheck[{tier}]'")
    if args.list:
        for task in report.skipped:
            print(f"  {task}: {report.reasons[task]}")
    return 0
