"""Shipped expected durations of a suite's tests (``problems/<suite>/durations.json``).

A first run on a machine has nothing in its calibration store, so it cannot know that
BigCodeBench/1104's tests sleep for over a minute while most tasks take a fraction of a second.
A suite may ship the reference solutions' times measured once (by ``scripts/build_durations.py``)
so that even a first run starts its long tasks first and runs its sleeping ones beside the
others, and so that a task expected to run past the calibration's floor skips the floor run
that could only time out (its candidate's first run is limited by ``factor x`` the expected
time). They never decide a verdict: its limit is always the one calibrated on the machine that
runs the tests (:mod:`pytest_vibecheck.execute.calibrate`).

The file: ``{"version": 1, "machine": "...", "tasks": {task_key: [wall_s, cpu_s]}}``, keyed
by :func:`pytest_vibecheck.execute.calibrate.task_key` (so a changed reference or test drops
its entry), wall and CPU seconds of the reference's tests. Tasks whose reference's tests ran
to their end, passed or failed, are listed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.errors import DataFileError, VibecheckError

if TYPE_CHECKING:
    from pytest_vibecheck.execute.calibrate import ExpectedTime
    from pytest_vibecheck.execute.spec import Task

__all__ = [
    "DURATIONS_NAME",
    "DURATIONS_VERSION",
    "expected_from",
    "load_durations",
    "write_durations",
]

#: File name of a suite's expected durations, beside its manifest.
DURATIONS_NAME = "durations.json"
DURATIONS_VERSION = 1


def load_durations(folder: str | Path) -> dict[str, ExpectedTime]:
    """The expected durations shipped in suite ``folder`` by task key (``source="suite"``);
    empty when the suite ships none. Raises :class:`~pytest_vibecheck.errors.DataFileError`
    (naming the file and field) for a file that is not in this format."""
    from pytest_vibecheck.execute.calibrate import ExpectedTime

    path = Path(folder) / DURATIONS_NAME
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataFileError(path, f"not readable JSON: {exc}; regenerate it with "
                            "scripts/build_durations.py") from None
    if not isinstance(data, dict) or data.get("version") != DURATIONS_VERSION:
        raise DataFileError(path, f"expected version {DURATIONS_VERSION}", field="version")
    tasks = data.get("tasks")
    if not isinstance(tasks, dict):
        raise DataFileError(path, "expected an object of task keys", field="tasks")
    out: dict[str, ExpectedTime] = {}
    for key, value in tasks.items():
        if not (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, (int, float)) and v >= 0 for v in value)
        ):
            raise DataFileError(path, "expected [wall_s, cpu_s], seconds >= 0", field=f"tasks.{key}")
        out[str(key)] = ExpectedTime(float(value[0]), float(value[1]), "suite")
    return out


def write_durations(
    folder: str | Path, times: Mapping[str, tuple[float, float]], machine: str, note: str = ""
) -> Path:
    """Write ``times`` (task key -> (wall_s, cpu_s)) as ``folder/durations.json`` (sorted,
    rounded to 10 ms); returns the path."""
    body: dict[str, Any] = {
        "version": DURATIONS_VERSION,
        "machine": machine,
        "note": note,
        "tasks": {k: [round(w, 2), round(c, 2)] for k, (w, c) in sorted(times.items())},
    }
    path = Path(folder) / DURATIONS_NAME
    path.write_text(json.dumps(body, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return path


def expected_from(
    problems: Iterable[Task], durations_of: Callable[[str], Mapping[str, ExpectedTime]]
) -> dict[str, ExpectedTime]:
    """The expected durations of ``problems`` by task id, from ``durations_of(suite)`` (a
    suite's durations by task key: the suites layer reads the shipped files,
    :func:`pytest_vibecheck.suites.durations.suite_durations`); a problem of a suite without
    durations, or an inline one, is left out. A malformed durations file is left out too
    (scheduling only, never fatal)."""
    from pytest_vibecheck.execute.calibrate import task_key

    out: dict[str, ExpectedTime] = {}
    for p in problems:
        try:
            found = durations_of(p.suite).get(task_key(p))
        except VibecheckError:
            found = None
        if found is not None:
            out[p.task_id] = found
    return out
