"""Plans by expected duration: which worker runs which item, longest first.

The expected duration of a test run comes from the calibration store
(:meth:`~pytest_vibecheck.execute.calibrate.Calibrator.expected_times`: the reference's time on
this machine, else the last candidate's). :func:`plan` spreads items over ``workers`` so that
each worker gets about the same expected time and the same number of items, and lists each
worker's items longest first; :func:`interleave` writes the plan as one order in which
position ``p`` belongs to worker ``p % workers``, so every process that knows the order and
the worker count knows every worker's items (the pytest-xdist scheduler of
:mod:`pytest_vibecheck.plugin.xdist_sched` and the worker-side prefetcher both read it).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from pytest_vibecheck.execute.calibrate import ExpectedTime

__all__ = ["UNKNOWN_S", "cost", "interleave", "plan"]

#: Expected seconds of a run never measured on this machine.
UNKNOWN_S = 0.5
#: Runs expected to sleep overlap with others (the local executor admits them beyond the CPU
#: slots), so they weigh this fraction of their wall clock in a worker's load.
SLEEPER_WEIGHT = 0.25


def cost(expected: ExpectedTime | None, runs: int = 1, runnable: bool = True) -> float:
    """Expected load in seconds of an item with ``runs`` test runs (0.01 s for an item that
    will be skipped)."""
    if not runnable:
        return 0.01
    if expected is None:
        return UNKNOWN_S * runs
    weight = SLEEPER_WEIGHT if expected.sleeps else 1.0
    return max(0.05, expected.wall_s * weight) * runs


def plan(costs: Sequence[float], workers: int) -> list[list[int]]:
    """Indices of ``costs`` per worker: exactly ``len // workers`` items each (the first
    ``len % workers`` workers one more), greedily the costliest item to the least loaded worker
    with room (longest-processing-time first), each list ordered costliest first (ties in
    input order). Deterministic."""
    n = max(1, workers)
    total = len(costs)
    quota = [total // n + (1 if w < total % n else 0) for w in range(n)]
    order = sorted(range(total), key=lambda i: (-costs[i], i))
    heap = [(0.0, w) for w in range(n)]
    out: list[list[int]] = [[] for _ in range(n)]
    for i in order:
        full: list[tuple[float, int]] = []
        while True:
            load, w = heapq.heappop(heap)
            if len(out[w]) < quota[w]:
                break
            full.append((load, w))
        out[w].append(i)
        heapq.heappush(heap, (load + costs[i], w))
        for entry in full:
            if len(out[entry[1]]) < quota[entry[1]]:
                heapq.heappush(heap, entry)
    return out


def interleave(plans: Sequence[Sequence[int]]) -> list[int]:
    """One order of all indices in which position ``p`` holds the next item of worker
    ``p % len(plans)`` (the lists must be as :func:`plan` makes them: lengths differing by at
    most one, longer ones first)."""
    n = len(plans)
    out: list[int] = []
    pos = [0] * n
    total = sum(len(p) for p in plans)
    for p in range(total):
        w = p % n
        out.append(plans[w][pos[w]])
        pos[w] += 1
    return out
