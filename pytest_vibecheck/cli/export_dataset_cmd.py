"""``vibecheck export-dataset SUITE --format trl|verl --out DIR``: a suite as an RL training set
(logic in :mod:`pytest_vibecheck.reward.dataset`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_vibecheck.reward.dataset import FORMATS, export_dataset, hf_token_counter


def register(sub: Any) -> None:
    """Add the ``export-dataset`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "export-dataset",
        help="write a suite's single-turn prompts and reward metadata for TRL or verl",
        description="Write one row per task: the single-turn prompt (system + query + "
        "instructions 1..k) and the problem the vibecheck reward scores against, with "
        "provenance (docs/reward.md). verl needs pyarrow: pip install 'pytest-vibecheck[rl]'.",
    )
    p.add_argument("suite", help="shipped suite name (bigvibebench, ...) or suite folder")
    p.add_argument("--format", dest="fmt", required=True, choices=FORMATS,
                   help="trl: JSONL with a prompt column; verl: parquet with verl's columns")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to write")
    p.add_argument("--k", type=int, default=None,
                   help="instructions per prompt (default: all of each task's)")
    p.add_argument("--split", default="train", help="split name, the data file's name (default train)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N tasks")
    p.add_argument("--task", action="append", default=[], metavar="TASK_ID",
                   help="only this task (repeatable)")
    p.add_argument("--tokenizer", default=None, metavar="PATH",
                   help="a local Hugging Face tokenizer folder (the policy model's): record each "
                   "prompt's length in tokens too (needs transformers)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Export; returns 0. Bad input raises VibecheckError (exit status 2 via the CLI)."""
    tokens = hf_token_counter(args.tokenizer) if args.tokenizer else None
    manifest = export_dataset(args.suite, args.fmt, args.out, k=args.k, split=args.split,
                              limit=args.limit, tasks=args.task, tokens=tokens)
    print(f"wrote {manifest['rows']} rows of suite {manifest['provenance']['suite']!r} "
          f"({args.fmt}) to {args.out}: {', '.join(manifest['files'])}, manifest.json")
    for unit in ("chars", "tokens"):
        stats = manifest.get(f"prompt_{unit}")
        if stats:
            print(f"prompt length in {unit}: min {stats['min']}, median {stats['median']}, "
                  f"max {stats['max']} (set the trainer's max_prompt_length to at least the max)")
    return 0
