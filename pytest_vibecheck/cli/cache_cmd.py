"""``vibecheck cache stats [--cache PATH] [--json]``: what the generation cache holds.

``vibecheck cache export PATH`` / ``import PATH`` come from
:mod:`pytest_vibecheck.cli.cache_transfer_cmd`, hooked in by :func:`register`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from pytest_vibecheck.generate.cache import DEFAULT_CACHE_PATH, CacheError, GenerationCache


def register(sub: Any) -> None:
    """Add the ``cache`` sub-command (with its actions) to ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser("cache", help="inspect the generation cache")
    actions = p.add_subparsers(dest="cache_action", metavar="ACTION")
    actions.required = True
    stats = actions.add_parser("stats", help="entries, tokens, models, labels, size, integrity")
    stats.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE_PATH,
        help=f"cache file (default {DEFAULT_CACHE_PATH})",
    )
    stats.add_argument("--json", action="store_true", help="print machine-readable JSON")
    stats.set_defaults(func=run_stats)
    from pytest_vibecheck.cli.cache_transfer_cmd import (
        register_actions,  # export / import (issue 6)
    )

    register_actions(actions)
    from pytest_vibecheck.cli.replay_export_cmd import (
        register_actions as register_replay_export,  # issue 8
    )

    register_replay_export(actions)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def run_stats(args: argparse.Namespace) -> int:
    """Print the cache summary; 0 when the file is sound, 1 if ``integrity_check`` fails.

    Raises CacheError (exit status 2 via the CLI) when the file does not exist or is not a
    generation cache.
    """
    path: Path = args.cache
    if not path.is_file():
        raise CacheError(f"generation cache {path}: no such file; give --cache PATH")
    with GenerationCache(path) as cache:
        st = cache.stats()
        integrity = cache.integrity_check()
    data = st.to_dict()
    data["integrity"] = integrity
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(f"cache:      {st.path} (schema {st.schema})")
        print(f"entries:    {st.entries:,}")
        print(f"tokens:     {st.input_tokens:,} in, {st.output_tokens:,} out")
        print(f"size:       {st.size_bytes / 1e6:.2f} MB")
        print(f"written:    {_when(st.oldest)} .. {_when(st.newest)}")
        print(f"integrity:  {integrity}")
        if st.by_model:
            print("by model:")
            for name, n in st.by_model.items():
                print(f"  {name:<50} {n:>8,}")
        if st.by_label:
            print("by label:")
            for name, n in st.by_label.items():
                print(f"  {name:<50} {n:>8,}")
    return 0 if integrity == "ok" else 1
