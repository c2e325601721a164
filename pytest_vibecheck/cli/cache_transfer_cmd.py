"""``vibecheck cache export PATH`` and ``vibecheck cache import PATH``: move the generation cache
between machines (logic and file format in :mod:`pytest_vibecheck.generate.transfer`).

Not a top-level command: :func:`register_actions` adds the two actions to the ``cache``
command of :mod:`pytest_vibecheck.cli.cache_cmd`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_vibecheck.generate.cache import DEFAULT_CACHE_PATH
from pytest_vibecheck.generate.transfer import export_cache, import_cache


def register_actions(actions: Any) -> None:
    """Add ``export`` and ``import`` to ``actions`` (the ``cache`` command's subparsers)."""
    exp: argparse.ArgumentParser = actions.add_parser(
        "export", help="write every cached generation to a portable .jsonl.gz file (never API keys)"
    )
    exp.add_argument("path", type=Path, metavar="PATH", help="output file, e.g. cache.jsonl.gz")
    exp.add_argument("--cache", type=Path, default=DEFAULT_CACHE_PATH,
                     help=f"cache file to read (default {DEFAULT_CACHE_PATH})")
    exp.set_defaults(func=run_export)
    imp: argparse.ArgumentParser = actions.add_parser(
        "import", help="merge an exported file into the cache (existing entries are kept)"
    )
    imp.add_argument("path", type=Path, metavar="PATH", help="a file made by `vibecheck cache export`")
    imp.add_argument("--cache", type=Path, default=DEFAULT_CACHE_PATH,
                     help=f"cache file to write (created if absent; default {DEFAULT_CACHE_PATH})")
    imp.set_defaults(func=run_import)


def _reasons(reasons: tuple[str, ...], total: int) -> None:
    for why in reasons:
        print(f"  rejected {why}")
    if total > len(reasons):
        print(f"  ... and {total - len(reasons)} more")


def run_export(args: argparse.Namespace) -> int:
    """Export; returns 0 (1 if some rows were rejected). Errors raise TransferError (exit 2)."""
    st = export_cache(args.cache, args.path)
    print(f"exported {st.rows} generation(s) from {args.cache} to {st.path}")
    if st.rejected:
        print(f"{st.rejected} row(s) not exported:")
        _reasons(st.reasons, st.rejected)
    return 1 if st.rejected else 0


def run_import(args: argparse.Namespace) -> int:
    """Import; returns 0 (1 if some rows were rejected). Errors raise TransferError (exit 2)."""
    st = import_cache(args.path, args.cache)
    print(f"imported {args.path} into {st.path}: {st.rows} row(s) read, {st.added} added, "
          f"{st.present} already present, {st.rejected} rejected")
    _reasons(st.reasons, st.rejected)
    return 1 if st.rejected else 0
