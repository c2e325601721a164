"""``vibecheck augment SOURCE --out problems/NAME``: build a suite (paper §3.1).

Loads a source benchmark (BigCodeBench, LiveCodeBench, HumanEval, MBPP+; format detected
or given with ``--source-format``) or an existing suite, selects ``--k`` instructions per
task with a selector (``rules``, ``anthropic:MODEL``, ``openai:MODEL``) and a seed, and
writes the suite folder (data, manifest, licence). See ``docs/suites.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError, UnknownIdError, VibecheckError
from pytest_vibecheck.registry import get_registry
from pytest_vibecheck.suites.augment import PAPER_SHARES, augment, category_shares
from pytest_vibecheck.suites.loaders import SkippedRecord, detect_format, load_source
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.selectors import make_selector
from pytest_vibecheck.suites.store import MANIFEST_NAME, find_suite, load_suite, write_suite

#: Companion files of BigCodeBench picked up from the source's folder when present.
_BCB_NETWORK_FREE = "network-free-set.txt"
_BCB_STDLIB_ONLY = "bigcodebench_v0.1.0_stdlib_only_task_ids.json"


def register(sub: Any) -> None:
    """Add the ``augment`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "augment",
        help="select k VeriCode instructions per task and write a suite",
        description=(
            "Augment a source benchmark with VeriCode instructions (paper §3.1): a seeded "
            "permutation per task, one scan keeping relevant, non-conflicting instructions, "
            "stop at k, parameter validation. Writes problems.jsonl.gz, manifest.json and the "
            "licence files to --out."
        ),
    )
    p.add_argument(
        "source", metavar="SOURCE", help="source benchmark JSONL(.gz), or a suite name/folder"
    )
    p.add_argument(
        "--out", required=True, metavar="DIR", help="suite folder to write, e.g. problems/mysuite"
    )
    p.add_argument("--k", type=int, default=5, help="instructions per task (default 5)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the per-task permutations (default 0)"
    )
    p.add_argument(
        "--selector", default="rules", help="rules | anthropic:MODEL | openai:MODEL (default rules)"
    )
    p.add_argument(
        "--source-format", choices=get_registry().suite_loaders.names(), help="source format (default: detected)"
    )
    p.add_argument(
        "--tasks", metavar="FILE", help="keep only these task ids (one per line, or a JSON list)"
    )
    p.add_argument("--name", help="suite name (default: the --out folder's name)")
    p.add_argument("--description", default="", help="one-line description for the manifest")
    p.add_argument(
        "--licence", default="", help="licence of the source data (SPDX id), for the manifest"
    )
    p.add_argument("--attribution", default="", help="attribution line for the manifest")
    p.add_argument(
        "--licence-file", action="append", default=[], metavar="FILE",
        help="licence file(s) to copy into the suite folder (repeatable)",
    )  # fmt: skip
    p.add_argument(
        "--cache", metavar="FILE", help="LLM reply cache (default .vibecheck/selector-cache.sqlite)"
    )
    p.add_argument(
        "--no-compress", action="store_true", help="write problems.jsonl instead of .jsonl.gz"
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="tasks judged at a time (threads; e.g. 8 for LLM selectors; default 1)",
    )
    p.add_argument("--json", action="store_true", help="print a machine-readable summary")
    p.set_defaults(func=run)


def read_task_ids(path: str | Path) -> list[str]:
    """Task ids from a file: a JSON list, or one id per line (``#`` comments allowed)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(p, f"cannot read: {exc}") from None
    if text.lstrip().startswith("["):
        try:
            ids = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFileError(p, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise DataFileError(p, "expected a JSON list of task id strings")
        return ids
    return [line.split("#")[0].strip() for line in text.splitlines() if line.split("#")[0].strip()]


def select_tasks(problems: list[Problem], ids: list[str], source: str) -> list[Problem]:
    """The problems whose ids are in ``ids``, in source order; unknown ids raise with suggestions."""
    by_id = {p.task_id: p for p in problems}
    for task_id in ids:
        if task_id not in by_id:
            raise UnknownIdError(f"task of {source}", task_id, by_id)
    wanted = set(ids)
    return [p for p in problems if p.task_id in wanted]


#: Suffixes of a source benchmark's data file (a missing one is not looked up as a suite).
_DATA_SUFFIXES = {".jsonl", ".json", ".gz"}


def _load(args: argparse.Namespace) -> tuple[list[Problem], dict[str, Any], list[SkippedRecord]]:
    source = Path(args.source)
    skipped: list[SkippedRecord] = []
    if source.is_file():
        fmt = args.source_format or detect_format(source)
        kwargs: dict[str, Any] = {}
        info: dict[str, Any] = {"file": source.name, "format": fmt}
        if fmt == "bigcodebench":
            for key, name in (
                ("network_free", _BCB_NETWORK_FREE),
                ("stdlib_only", _BCB_STDLIB_ONLY),
            ):
                companion = source.parent / name
                if companion.is_file():
                    kwargs[key] = companion
                    info[key] = name
        if fmt == "livecodebench":
            kwargs["skipped"] = skipped
        return load_source(source, fmt, **kwargs), info, skipped
    if not source.exists() and (args.source_format or _DATA_SUFFIXES & set(source.suffixes)):
        raise DataFileError(
            source,
            "no such data file; SOURCE is a source benchmark's JSONL(.gz) file, a suite folder "
            "or a shipped suite name (vibecheck problems list)",
        )
    if (source / MANIFEST_NAME).is_file() or not source.exists():
        suite = load_suite(find_suite(args.source))
        return list(suite.problems), {"suite": suite.name, "format": "suite"}, skipped
    raise DataFileError(source, "SOURCE is neither a data file nor a suite folder")


def run(args: argparse.Namespace) -> int:
    """Load, augment, write; print a summary. Returns 0."""
    problems, source_info, skipped = _load(args)
    if args.tasks:
        problems = select_tasks(problems, read_task_ids(args.tasks), args.source)
    if not problems:
        raise VibecheckError(f"{args.source}: no tasks to augment")
    out = Path(args.out)
    name = args.name or out.name
    selector = make_selector(args.selector, cache_path=Path(args.cache) if args.cache else None)

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty() and (done % 50 == 0 or done == total):
            print(f"\raugment: {done}/{total}", end="" if done < total else "\n", file=sys.stderr)

    augmented = augment(
        problems,
        k=args.k,
        seed=args.seed,
        selector=selector,
        suite=name,
        progress=progress,
        workers=args.workers,
    )
    extra: dict[str, Any] = {}
    if skipped:
        extra["excluded"] = [
            {"task_id": s.task_id, "line": s.line, "reason": s.reason} for s in skipped
        ]
    write_suite(
        out,
        augmented,
        name=name,
        description=args.description
        or f"{source_info.get('file', args.source)} with {args.k} VeriCode instructions per task",
        source=source_info,
        licence=args.licence or "unspecified: see the source benchmark",
        attribution=args.attribution
        or f"Problems from {source_info.get('file') or source_info.get('suite')}",
        licence_files=args.licence_file,
        selector=args.selector,
        seed=args.seed,
        k=args.k,
        compress=not args.no_compress,
        extra=extra or None,
    )
    shares = category_shares(augmented)
    fewer = sum(len(p.instructions) < args.k for p in augmented)
    summary: dict[str, Any] = {
        "suite": name,
        "out": str(out),
        "tasks": len(augmented),
        "excluded": len(skipped),
        "fewer_than_k": fewer,
        "category_shares": shares,
    }
    calls = getattr(selector, "calls", None)
    if calls is not None:
        summary["llm_calls"] = calls
        summary["cache_hits"] = getattr(selector, "cache_hits", 0)
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
        return 0
    print(
        f"wrote {out} ({len(augmented)} tasks, k={args.k}, selector {args.selector}, seed {args.seed})"
    )
    if skipped:
        print(
            f"excluded {len(skipped)} source record(s): "
            + "; ".join(f"{s.task_id} ({s.reason})" for s in skipped[:5])
        )
    if fewer:
        print(f"{fewer} task(s) got fewer than {args.k} instructions (see provenance.fewer_than_k)")
    key = {"bigcodebench": "bigvibebench", "livecodebench": "livevibebench"}.get(
        str(source_info.get("format"))
    )
    paper = PAPER_SHARES.get(key) if key else None
    print(
        "category shares: "
        + ", ".join(
            f"{cat} {100 * v:.1f}% (paper {100 * paper[cat]:.1f}%)"
            if paper and cat in paper
            else f"{cat} {100 * v:.1f}%"
            for cat, v in shares.items()
        )
    )
    if calls is not None:
        print(f"LLM calls: {calls}, cache hits: {summary['cache_hits']}")
    return 0
