"""The expected durations a shipped suite carries (``problems/<suite>/durations.json``), found
by the suite's name: the suites layer's side of :mod:`pytest_vibecheck.execute.durations`
(which reads and writes the file and knows nothing of where suites live)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.durations import expected_from, load_durations
from pytest_vibecheck.suites.store import find_suite

if TYPE_CHECKING:
    from pytest_vibecheck.execute.calibrate import ExpectedTime
    from pytest_vibecheck.execute.spec import Task

__all__ = ["expected_for", "shipped_durations", "suite_durations"]


@functools.lru_cache(maxsize=64)
def suite_durations(name: str) -> Mapping[str, ExpectedTime]:
    """The durations suite ``name`` ships, by task key (read once per process); empty for a
    suite that cannot be found or ships none. Raises
    :class:`~pytest_vibecheck.errors.DataFileError` for a malformed durations file."""
    try:
        folder = find_suite(name)
    except VibecheckError:
        return {}
    return load_durations(folder)


def shipped_durations(suites: Sequence[str]) -> dict[str, ExpectedTime]:
    """The expected durations the ``suites`` ship, by task key; a suite that cannot be found
    is left out (the collection reports it). Raises
    :class:`~pytest_vibecheck.errors.DataFileError` for a malformed durations file."""
    out: dict[str, ExpectedTime] = {}
    for name in suites:
        out.update(suite_durations(name))
    return out


def expected_for(problems: Iterable[Task]) -> dict[str, ExpectedTime]:
    """The shipped expected durations of ``problems`` by task id (each suite's file read once
    per process); a problem of a suite without durations, or an inline one, is left out."""
    return expected_from(problems, suite_durations)
