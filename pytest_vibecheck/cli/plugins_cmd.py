"""``vibecheck plugins``: what the registry holds (built-ins and every plugin), and from where."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pytest_vibecheck.registry import get_registry


def register(sub: Any) -> None:
    """Add the ``plugins`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "plugins",
        help="list the registered backends, checks, instructions, selectors and suite loaders",
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def listing() -> dict[str, dict[str, str]]:
    """``{kind: {id: origin}}`` of the active registry; instructions map to their file."""
    reg = get_registry()
    out: dict[str, dict[str, str]] = {}
    for kind, table in (
        ("backends", reg.backends),
        ("checks", reg.checks),
        ("selectors", reg.selectors),
        ("suite_loaders", reg.suite_loaders),
    ):
        out[kind] = {name: table.entry(name).origin for name in table.names()}
    out["instructions"] = {
        i.id: ("shipped" if reg.is_shipped(i.id) else i.source) for i in reg.instructions()
    }
    return out


def run(args: argparse.Namespace) -> int:
    """Print the registry as ``kind: id (origin)`` lines, or JSON; returns 0."""
    data = listing()
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    for kind, entries in data.items():
        shipped = [k for k, v in entries.items() if v in ("shipped",) or v.endswith("(built-in)")]
        others = {k: v for k, v in entries.items() if k not in shipped}
        print(f"{kind}: {len(entries)} ({len(shipped)} built-in)")
        for name, origin in others.items():
            print(f"  {name}  ({origin})")
    return 0
