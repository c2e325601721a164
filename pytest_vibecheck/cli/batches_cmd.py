"""``vibecheck batches list|cancel``: the provider batches of a project's batch-mode runs
(``--vibe-batch``), as the generation cache's file records them
(:mod:`pytest_vibecheck.generate.batch_store`).

``list`` reads the file only (no request): each batch not yet collected, with its model, its
requests, the provider's status and counts at the last look, when it was submitted and the
provider's deadline; ``--all`` shows the collected ones too. ``cancel ID ... | --all`` asks the
provider to cancel open batches (through the same SDK client as the run: the key from the
provider's variable, ``--base-url`` or the URL the batch was submitted to); their finished
results stay, and the next run collects them and sends the rest again.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.generate.cache import DEFAULT_CACHE_PATH, CacheError, GenerationCache


def register(sub: Any) -> None:
    """Add the ``batches`` sub-command (``list``, ``cancel``) to ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser("batches", help="list or cancel the provider batches of batch mode")
    actions = p.add_subparsers(dest="batches_action", metavar="ACTION")
    actions.required = True
    for name, text in (("list", "the open batches (--all: every batch)"), ("cancel", "cancel open batches")):
        a = actions.add_parser(name, help=text)
        a.add_argument("--cache", type=Path, default=DEFAULT_CACHE_PATH,
                       help=f"generation cache file (default {DEFAULT_CACHE_PATH})")
        if name == "cancel":
            a.add_argument("ids", nargs="*", metavar="ID", help="batch ids (see `vibecheck batches list`)")
            a.add_argument("--all", action="store_true", help="cancel every open batch")
            a.add_argument("--base-url", default=None, help="the provider's server (default: where each was submitted)")
            a.add_argument("--api-key-env", default=None, help="the variable holding the key (default per provider)")
            a.set_defaults(func=run_cancel)
        else:
            a.add_argument("--all", action="store_true", help="also the batches already collected")
            a.set_defaults(func=run_list)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _open(path: Path) -> GenerationCache:
    if not path.is_file():
        raise CacheError(f"generation cache {path}: no such file; give --cache PATH (the run's --vibe-cache)")
    return GenerationCache(path)


def run_list(args: argparse.Namespace) -> int:
    """Print one line per batch: id, model, requests, status, counts, submitted, deadline."""
    from pytest_vibecheck.generate.batch_store import BatchLedger

    with _open(args.cache) as cache:
        rows = BatchLedger(cache).batches(open_only=not args.all)
    if not rows:
        print(f"no {'' if args.all else 'open '}batches in {args.cache}")
        return 0
    now = time.time()
    for r in rows:
        counts = ", ".join(f"{k} {v}" for k, v in r.counts.items()) or "-"
        state = "collected" if r.collected else r.status
        left = f"deadline {_when(r.expires_at)}" + (" (passed)" if r.expires_at and r.expires_at < now else "")
        print(f"{r.id}  {r.provider}:{r.model}  {r.requests} requests  {state} ({counts})  "
              f"submitted {_when(r.created_at)}  {left}")
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    """Cancel the batches named (or every open one with ``--all``); 1 when one could not be
    cancelled (the message says why), else 0."""
    from pytest_vibecheck.generate.backends.base import BackendError, BackendSettings
    from pytest_vibecheck.generate.backends.registry import make_backend
    from pytest_vibecheck.generate.batch_store import BatchLedger

    if not args.ids and not args.all:
        raise ParameterError("batches cancel: give batch ids or --all (see `vibecheck batches list`)")
    status = 0
    with _open(args.cache) as cache:
        ledger = BatchLedger(cache)
        rows = {r.id: r for r in ledger.batches() if r.submitted}
        unknown = [i for i in args.ids if i not in rows]
        if unknown:
            raise ParameterError(
                f"batches cancel: {', '.join(unknown)}: no open batch of that id in {args.cache}; "
                f"open: {', '.join(rows) or 'none'}"
            )
        for bid in args.ids or list(rows):
            row = rows[bid]
            settings = BackendSettings(base_url=args.base_url or row.base_url, api_key_env=args.api_key_env)
            backend = make_backend(f"{row.provider}:{row.model}", settings)
            api = backend.batch_api()
            if api is None:  # pragma: no cover - only batch-capable backends submit batches
                continue
            try:
                now = api.cancel(bid)
            except BackendError as exc:
                print(f"could not cancel {bid}: {exc}")
                status = 1
                continue
            finally:
                backend.close()
            ledger.update(bid, now.status, now.counts, ended=now.ended, expires_at=now.expires_at)
            print(f"cancelled {bid} ({now.status}); its finished results are collected by the next run")
    return status
