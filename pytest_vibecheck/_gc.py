"""Pausing the cyclic garbage collector around a batch that builds many objects.

A verification or reward batch creates hundreds of thousands of small objects (violations,
verdicts, outcomes) without reference cycles. While they accumulate, CPython's cyclic collector
runs full collections that walk every live object of the process again and again: about a fifth
of a batch's CPU time, measured on 30,780 verifications (``benchmarks/bench_verify.py``).
Reference counting frees everything as usual meanwhile; only cycle detection waits until the
batch ends.

:func:`freeze_at_exit` spares a finished run the same walk at interpreter exit: CPython's
finalization collects every object still alive (the suites, the SDKs' hundreds of model
classes) several times, 0.3-0.5 s at the end of a ``pytest --vibe-model`` run of
``bigvibebench-lite`` on 2 cores, after the summary is printed.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["freeze_at_exit", "paused"]

_lock = threading.Lock()
_depth = 0  # batches running in this process (threads, nesting) that paused the collector
_was_enabled = False
_freeze_registered = False


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


def freeze_at_exit() -> None:
    """At interpreter exit (an :mod:`atexit` handler, so never while a host program that
    called ``pytest.main`` goes on), move every object to the collector's permanent
    generation (:func:`gc.freeze`), which the finalization's collections skip. Objects are
    still freed by reference counting and ``atexit`` handlers still run; only garbage cycles
    left at exit are left to the operating system, as the process ends. Registered once per
    process."""
    global _freeze_registered
    with _lock:
        if not _freeze_registered:
            _freeze_registered = True
            atexit.register(gc.freeze)
