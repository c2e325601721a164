"""Pausing the cyclic garbage collector around a batch that builds many objects.

A verification or reward batch creates hundreds of thousands of small objects (violations,
verdicts, outcomes) without reference cycles. While they accumulate, CPython's cyclic collector
runs full collections that walk every live object of the process again and again: about a fifth
of a batch's CPU time, measured on 30,780 verifications (``benchmarks/bench_verify.py``).
Reference counting frees everything as usual meanwhile; only cycle detection waits until the
batch ends.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["paused"]

_lock = threading.Lock()
_depth = 0  # batches running in this process (threads, nesting) that paused the collector
_was_enabled = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Disable the cyclic garbage collector while the block runs, if it was enabled.

    Nested and concurrent uses (threads) are counted: the collector is enabled again when the
    last one ends, and only if it was enabled when the first one began, so a program that
    keeps it disabled keeps it disabled.
    """
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
