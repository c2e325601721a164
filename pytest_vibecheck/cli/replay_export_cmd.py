"""``vibecheck cache export-replay OUT --model SPEC``: cached generations of a real run as a
replay folder (logic in :mod:`pytest_vibecheck.generate.replay_export`).

Not a top-level command: :func:`register_actions` adds the action to the ``cache`` command of
:mod:`pytest_vibecheck.cli.cache_cmd`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_vibecheck.generate.cache import DEFAULT_CACHE_PATH
from pytest_vibecheck.generate.replay_export import (
    ExportSelection,
    ReplayExportError,
    export_replay,
    report_keys,
)


def register_actions(actions: Any) -> None:
    """Add ``export-replay`` to ``actions`` (the ``cache`` command's subparsers)."""
    p: argparse.ArgumentParser = actions.add_parser(
        "export-replay",
        help="write the cached replies of one model as a replay folder (replay:NAME|PATH)",
    )
    p.add_argument("out", type=Path, metavar="OUT", help="replay folder to write, e.g. replays/NAME")
    p.add_argument("--model", required=True, metavar="SPEC",
                   help="the --vibe-model spec of the recorded run, e.g. openai:qwen2.5-coder-0.5b-instruct")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE_PATH,
                   help=f"cache file to read (default {DEFAULT_CACHE_PATH})")
    p.add_argument("--name", default=None, help="replay name (default: the folder name of OUT)")
    p.add_argument("--temperature", type=float, default=None,
                   help="only rows requested at this temperature")
    p.add_argument("--max-tokens", type=int, default=None, help="only rows requested with this token limit")
    p.add_argument("--from-report", type=Path, default=None, metavar="REPORT.json",
                   help="only the replies this JSON report used (its items' generation keys)")
    p.add_argument("--suite", action="append", default=[], metavar="NAME",
                   help="suite the replies answer (repeatable; recorded in the manifest)")
    p.add_argument("--provenance", type=Path, default=None, metavar="JSON",
                   help="a JSON object merged into the manifest (model file sha256, server, date, command ...)")
    p.set_defaults(func=run_export_replay)


def run_export_replay(args: argparse.Namespace) -> int:
    """Export; returns 0. Errors raise ReplayExportError (exit status 2 via the CLI)."""
    provenance: dict[str, Any] = {}
    if args.provenance is not None:
        try:
            data = json.loads(Path(args.provenance).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ReplayExportError(f"--provenance {args.provenance}: cannot read a JSON object ({exc})") from None
        if not isinstance(data, dict):
            raise ReplayExportError(f"--provenance {args.provenance}: expected a JSON object")
        provenance = data
    if not Path(args.cache).is_file():
        raise ReplayExportError(f"generation cache {args.cache}: no such file; give --cache PATH")
    keys = None
    if args.from_report is not None:
        from pytest_vibecheck.report.json_report import load_report

        keys = report_keys(load_report(args.from_report))
        if not keys:
            raise ReplayExportError(f"--from-report {args.from_report}: the report used no generation")
    selection = ExportSelection.from_spec(
        args.model, temperature=args.temperature, max_tokens=args.max_tokens, keys=keys
    )
    out = Path(args.out)
    manifest = export_replay(
        args.cache, out, selection, name=args.name or out.name, provenance=provenance, suites=args.suite
    )
    labels = ", ".join(f"{k} {v}" for k, v in manifest["labels"].items())
    print(f"wrote replay {manifest['name']!r} to {out}: {manifest['entries']} replies "
          f"({labels}); use --vibe-model=replay:{out if out.parent != Path('replays') else manifest['name']}")
    return 0
