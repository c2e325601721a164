"""Order a run's items by expected duration (the duration plan of
:mod:`pytest_vibecheck.execute.schedule`).

Called from ``pytest_collection_modifyitems`` in every process; the expected durations come
from the calibration store, read once by the controller and handed to the xdist workers in
``workerinput`` (so every worker collects the same order, as xdist requires). Only the
positions held by vibecheck items are reordered; other tests keep theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_vibecheck.execute.calibrate import ExpectedTime, task_key
from pytest_vibecheck.execute.schedule import cost, interleave, plan

__all__ = ["WORKERINPUT_KEY", "decode", "encode", "order_items"]

#: ``workerinput`` key of the expected durations.
WORKERINPUT_KEY = "vibecheck_expected"


def encode(snapshot: Mapping[str, ExpectedTime]) -> dict[str, list[Any]]:
    """JSON-ready form of a :meth:`~pytest_vibecheck.execute.calibrate.Calibrator.snapshot`."""
    return {k: [v.wall_s, v.cpu_s, v.source] for k, v in sorted(snapshot.items())}


def decode(data: Mapping[str, Sequence[Any]]) -> dict[str, ExpectedTime]:
    """Inverse of :func:`encode`."""
    return {k: ExpectedTime(float(v[0]), v[1], str(v[2])) for k, v in data.items()}


def order_items(
    items: list[pytest.Item],
    expected: Mapping[str, ExpectedTime],
    workers: int,
    runnable: Mapping[str, bool],
) -> None:
    """Reorder ``items`` in place: vibecheck items (those with a ``spec``) in the interleaved
    duration plan for ``workers``; ``runnable`` says per task id whether its tests can run in
    this environment (a skipped task costs nothing). Nothing moves while no expected duration
    is known (a first run keeps the collection order)."""
    slots = [i for i, it in enumerate(items) if hasattr(it, "spec")]
    if len(slots) < 2 or not expected:
        return
    vibe = [items[i] for i in slots]
    keys: dict[int, str] = {}
    costs = []
    for it in vibe:
        spec = it.spec  # type: ignore[attr-defined]
        problem = spec.problem
        pid = id(problem)
        if pid not in keys:
            keys[pid] = task_key(problem)
        runs = spec.k + 1 if spec.protocol == "multi" else 1
        costs.append(
            cost(expected.get(keys[pid]), runs, runnable.get(problem.task_id, True))
        )
    order = interleave(plan(costs, workers))
    for slot, idx in zip(slots, order, strict=True):
        items[slot] = vibe[idx]
