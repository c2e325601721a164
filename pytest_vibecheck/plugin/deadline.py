"""A hard deadline for every benchmark item, enforced by pytest-timeout, so a hung backend can
never stall a run.

pytest-timeout's ``timeout`` marker is put on every :class:`~pytest_vibecheck.plugin.items.VibeItem`
with ``method="signal"`` where the platform has ``SIGALRM`` (the item then fails in its setup: a
pytest *error*, an infrastructure failure left out of the metrics, never a model failure; the
run goes on), else ``"thread"``. The deadline is ``--vibe-item-timeout`` when given, else
computed from the item's budget (:func:`item_deadline_s`).
"""

from __future__ import annotations

import math
import signal

from pytest_vibecheck.plugin.run.prefetch import WINDOW

__all__ = ["VERIFY_BUDGET_S", "item_deadline_s", "timeout_method"]

#: Seconds allowed per turn for extraction and verification (one Ruff batch).
VERIFY_BUDGET_S = 30.0


def item_deadline_s(
    *,
    protocol: str,
    k: int,
    request_timeout_s: float,
    retries: int,
    concurrency: int,
    exec_limit_s: float,
    calibration_s: float,
) -> float:
    """The computed deadline of one item, in seconds.

    ``turns`` generations (multi-turn: k + 1, else 1), each at most ``request_timeout_s`` per
    attempt over ``retries + 1`` attempts; the item that prepares a window
    (:class:`~pytest_vibecheck.plugin.run.prefetch.Prefetcher`) waits for up to
    ``ceil(WINDOW / concurrency)`` such rounds; each turn's tests take at most
    ``exec_limit_s`` (plus ``calibration_s`` once, measuring the reference solution) and its
    verification :data:`VERIFY_BUDGET_S`::

        rounds * turns * request_timeout_s * (retries + 1)
          + turns * (exec_limit_s + VERIFY_BUDGET_S) + calibration_s
    """
    turns = k + 1 if protocol == "multi" else 1
    rounds = math.ceil(WINDOW / max(1, concurrency))
    generation = rounds * turns * request_timeout_s * (retries + 1)
    return generation + turns * (exec_limit_s + VERIFY_BUDGET_S) + calibration_s


def timeout_method() -> str:
    """``"signal"`` (the item fails, the run goes on) where SIGALRM exists, else ``"thread"``."""
    return "signal" if hasattr(signal, "SIGALRM") else "thread"
