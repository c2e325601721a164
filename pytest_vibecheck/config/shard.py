"""``--vibe-shard I/N``: split the collected items into N even, disjoint, deterministic shards.

Every shard collects the same items (same arguments, same suite) and keeps its own slice, so no
coordination is needed between machines. The split:

1. each item's *group* is its node id up to the first ``[`` (for the plugin's items that is the
   suite and task, ``bigvibebench::BigCodeBench/13``; for parametrized tests the function), so a
   task's baseline, single-turn and multi-turn items, which share generations through the cache,
   normally land on the same machine;
2. items are ordered by ``sha256(group)``, then node id: a stable order that does not depend on
   the collection order and spreads heavy and light tasks over the shards;
3. shard I (1-based) takes the contiguous slice ``[floor((I-1)·n/N), floor(I·n/N))``, so shard
   sizes differ by at most one item and at most N - 1 groups are cut at a slice boundary.

Merging the shards' JSON reports with ``vibecheck merge`` gives the aggregates of the unsharded
run: aggregates are recomputed from the items, whichever shard produced them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from pytest_vibecheck.errors import VibecheckError

__all__ = ["ShardError", "group_key", "parse_shard", "shard_slices", "split"]

T = TypeVar("T")


class ShardError(VibecheckError):
    """A malformed ``--vibe-shard`` value."""


def parse_shard(text: str, where: str = "--vibe-shard") -> tuple[int, int]:
    """Parse ``"I/N"`` (1-based: ``1/3``, ``2/3``, ``3/3``) into ``(I, N)``.

    Raises :class:`ShardError` unless both are integers with ``1 <= I <= N``.
    """
    idx, slash, cnt = text.strip().partition("/")
    try:
        i, n = int(idx), int(cnt)
    except ValueError:
        raise ShardError(
            f"{where}: {text!r} is not I/N (e.g. 2/3 = the second of three shards)"
        ) from None
    if not slash or n < 1 or not 1 <= i <= n:
        hint = " (shards are numbered from 1)" if i == 0 else ""
        raise ShardError(f"{where}: {text!r} needs 1 <= I <= N{hint}")
    return i, n


def group_key(nodeid: str) -> str:
    """The node id up to its first ``[`` (the parameters): items of one group stay together."""
    return nodeid.split("[", 1)[0]


def _order_key(nodeid: str) -> tuple[str, str]:
    return (hashlib.sha256(group_key(nodeid).encode("utf-8")).hexdigest(), nodeid)


def shard_slices(n: int, count: int) -> list[tuple[int, int]]:
    """The ``[start, stop)`` slice of each of ``count`` shards over ``n`` ordered items."""
    return [((i * n) // count, ((i + 1) * n) // count) for i in range(count)]


def split(items: Sequence[T], nodeids: Sequence[str], index: int, count: int) -> tuple[list[T], list[T]]:
    """``(kept, dropped)``: the items of shard ``index`` of ``count`` (1-based) and the others,
    each list in the original collection order. ``nodeids[j]`` is the node id of ``items[j]``."""
    if len(items) != len(nodeids):
        raise ValueError("split: items and nodeids differ in length")
    order = sorted(range(len(items)), key=lambda j: _order_key(nodeids[j]))
    start, stop = shard_slices(len(items), count)[index - 1]
    keep = set(order[start:stop])
    kept = [it for j, it in enumerate(items) if j in keep]
    dropped = [it for j, it in enumerate(items) if j not in keep]
    return kept, dropped
