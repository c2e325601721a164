"""``vibecheck env-check SUITE [--json]``: which of a suite's tasks this environment can run."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.envcheck import (
    check_environment,
    data_hint,
    data_id,
    is_nltk_data,
    pypi_name,
)
from pytest_vibecheck.execute.environments import resolve_environment
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
    p.add_argument(
        "--env",
        default=None,
        metavar="NAME|PATH",
        help="execution environment made by `vibecheck env create` (e.g. bigvibebench)",
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--list", action="store_true", help="list every skipped task with its reason")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the report; returns 0 (even when tasks are skipped)."""
    suite = load_suite(args.suite)
    if args.env is not None and args.python is not None:
        raise VibecheckError("give --env or --python, not both")
    env = resolve_environment(args.env) if args.python is None else None
    python = args.python if env is None else (None if env.id == "" else env.python)
    report = check_environment(suite.problems, suite=suite.name, python=python)
    if args.json:
        out = report.to_dict()
        out["environment"] = env.to_dict() if env is not None else {"name": "python", "python": python}
        print(json.dumps(out, indent=2))
        return 0
    pct = 100.0 * len(report.runnable) / report.total if report.total else 0.0
    where = env.describe() if env is not None else f"python: {report.python}"
    print(
        f"{suite.name}: {len(report.runnable)} of {report.total} tasks can run here ({pct:.1f}%); "
        f"{len(report.skipped)} skipped (environment: {where})"
    )
    modules = {m: n for m, n in report.missing.items() if not is_nltk_data(m)}
    data = {data_id(m): n for m, n in report.missing.items() if is_nltk_data(m)}
    if data:
        print("missing NLTK data (tasks needing each; the sandbox has no network to download it):")
        for ident, n in sorted(data.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {ident:<28} {n:>5}")
        print(f"  to add it: {data_hint(sorted(data))}")
    if modules:
        print("missing modules (tasks needing each):")
        for mod, n in sorted(modules.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {mod:<20} {n:>5}   pip install {pypi_name(mod)}")
        if env is not None and env.id:
            print(f"(missing from {env.id}: these need system libraries or data, docs/sandbox.md)")
        else:
            print("or build the isolated environment: vibecheck env create bigvibebench "
                  "(then --env bigvibebench)")
    if args.list:
        for task in report.skipped:
            print(f"  {task}: {report.reasons[task]}")
    return 0
