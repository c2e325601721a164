"""``vibecheck env create|show NAME``: isolated execution environments for candidate code.

``create`` builds ``.vibecheck/envs/NAME`` from the lock shipped in the package (uv from PyPI;
docs/sandbox.md); ``show`` prints its lock hash, upstream source and every deviation from
upstream's pins with its reason, and whether it is built here. Exit status 0, 2 on bad input
or a failed build.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute import environments as envs


def register(sub: Any) -> None:
    """Add the ``env`` sub-command group to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "env", help="build or describe an isolated execution environment (bigvibebench)"
    )
    actions = p.add_subparsers(dest="env_action", metavar="ACTION")
    actions.required = True
    c = actions.add_parser("create", help="build the environment from its shipped lock (uv)")
    c.add_argument("name", help=f"one of {', '.join(envs.ENVIRONMENTS)}")
    c.add_argument("--root", default=str(envs.DEFAULT_ENV_ROOT), help="folder of environments")
    c.add_argument("--python", default=None, help="base interpreter (default: this one)")
    c.add_argument("--force", action="store_true", help="rebuild even if it is up to date")
    c.set_defaults(func=create)
    s = actions.add_parser("show", help="lock hash, upstream pins and deviations")
    s.add_argument("name", help=f"one of {', '.join(envs.ENVIRONMENTS)}")
    s.add_argument("--root", default=str(envs.DEFAULT_ENV_ROOT), help="folder of environments")
    s.add_argument("--json", action="store_true", help="print machine-readable JSON")
    s.set_defaults(func=show)


def create(args: argparse.Namespace) -> int:
    """Build the environment; returns 0."""
    envs.create_environment(args.name, args.root, python=args.python, force=args.force)
    return 0


def show(args: argparse.Namespace) -> int:
    """Describe the environment; returns 0."""
    info = envs.spec(args.name)["environment"]
    sha = envs.lock_sha256(args.name)
    try:
        built: envs.Environment | None = envs.resolve_environment(args.name, args.root)
    except VibecheckError:
        built = None
    devs = envs.deviations(args.name)
    if args.json:
        out = {
            **info,
            "lock_sha256": sha,
            "deviations": devs,
            "built": None if built is None else built.to_dict(),
        }
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.name}: {info['description']}")
    print(f"  upstream: {info['upstream']}")
    print(f"  lock: {envs.lock_path(args.name).name} sha256 {sha} (CPython {info['python']})")
    if built is None:
        print(f"  not built here: vibecheck env create {args.name}")
    else:
        stale = "" if built.lock_sha256 == sha else " (built from another lock: --force rebuilds)"
        print(f"  built: {built.describe()}{stale}")
    print(f"  {len(devs)} deviations from upstream's pins:")
    for d in devs:
        print(f"    {d['package']}: {d['upstream']} -> {d['pinned']}: {d['reason']}")
    return 0
