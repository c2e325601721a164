"""The CPU slot a sandboxed run holds, as its executor's thread sees it.

A run that learns it mostly sleeps (its reference, just timed, used under half a CPU) calls
:func:`note_sleeping`; the local executor (:mod:`pytest_vibecheck.execute.executor`) then
moves it from a CPU slot to a sleeper slot, so another run can use the CPU. Kept apart so the
test runner (:mod:`pytest_vibecheck.execute.tests`) and the executor share it without importing
each other.
"""

from __future__ import annotations

import threading

__all__ = ["current", "note_sleeping"]

#: Per executor thread: ``release`` frees the thread's CPU slot (set by the local executor).
current = threading.local()


def note_sleeping() -> None:
    """Called by a run (in its executor thread) that has learnt it mostly sleeps (its
    reference, just timed, used under half a CPU): the local executor moves it from a CPU slot
    to a sleeper slot, so another run can use the CPU. A no-op elsewhere."""
    release = getattr(current, "release", None)
    if release is not None:
        current.release = None
        release()
