"""``vibecheck instructions [--json]``: list the VeriCode taxonomy."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pytest_vibecheck.verify.instructions import all_instructions


def register(sub: Any) -> None:
    """Add the ``instructions`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "instructions", help="list the 30 VeriCode instructions"
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the taxonomy as a table or JSON; returns 0."""
    insts = all_instructions()
    if args.json:
        out = [
            {
                "id": i.id,
                "category": i.category,
                "category_name": i.category_name,
                "description": i.description,
                "single_turn": i.single_turn,
                "multi_turn": i.multi_turn,
                "params": {
                    n: {
                        "type": s.type,
                        "default": s.default,
                        "min": s.min,
                        "max": s.max,
                        "choices": list(s.choices),
                        "recommended": list(s.recommended) if s.recommended else None,
                    }
                    for n, s in i.params.items()
                },
                "verifier": {
                    "kind": i.verifier.kind,
                    "target": i.verifier.target,
                    "rules": list(i.verifier.rules),
                    "preview": i.verifier.preview,
                    "checks": list(i.verifier.checks),
                    "settings": dict(i.verifier.settings),
                    "fixed": dict(i.verifier.fixed),
                },
                "conflicts": sorted(i.conflicts),
            }
            for i in insts
        ]
        print(json.dumps(out, indent=2))
        return 0
    for i in insts:
        params = ", ".join(f"{n}={s.default} ({s.describe()})" for n, s in i.params.items())
        check = ",".join(i.verifier.rules + i.verifier.checks)
        desc = i.description.format(**i.defaults())
        line = f"{i.id:<10} {i.category_name:<17} {check:<28} {desc}"
        if params:
            line += f"  [{params}]"
        print(line)
    return 0
