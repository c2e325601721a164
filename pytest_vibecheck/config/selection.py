"""What a run selected: the limit, the task globs, each suite's share of tasks, and the items
deselected by ``-k``, ``-m``, ``--deselect``, ``--lf`` or ``--vibe-shard``, so a reduced run
never looks like a full one.

The :class:`Selection` of a session lives in ``config.stash[SELECTION_KEY]`` on the
controller. It feeds the header (:func:`header_part`), the line after collection
(:meth:`Selection.collection_line`), the JSON report's ``run.selection`` block
(:meth:`Selection.to_dict`, docs/report-schema.md) and the threshold lines ("on 10 of 50
tasks", :meth:`Selection.coverage`).

Deselections are counted by :class:`pytest_vibecheck.plugin.deselection.DeselectionCounter` from ``pytest_deselected`` calls, by the
phase of ``pytest_collection_modifyitems`` they come from: pytest's own ``--deselect``, ``-k`` and
``-m`` deselect in its plain hook implementations (between this plugin's ``tryfirst`` and
``trylast`` ones), ``--lf`` and ``--vibe-shard`` in hook wrappers, after them.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from pytest_vibecheck.errors import VibecheckError

if TYPE_CHECKING:
    from pytest_vibecheck.config.settings import VibeSettings
    from pytest_vibecheck.report.records import ReportItem, SelectionRecord

__all__ = [
    "SELECTION_KEY",
    "Selection",
    "TaskGlobError",
    "check_task_globs",
    "header_part",
]


class TaskGlobError(VibecheckError):
    """A ``--vibe-tasks`` glob that matches no task of any suite of the run."""


def check_task_globs(globs: Sequence[str], suites: Mapping[str, Sequence[str]], where: str) -> None:
    """Every glob in ``globs`` must match a task id of at least one suite (``suites``: name ->
    task ids). Raises :class:`TaskGlobError` naming the glob, ``where`` it came from, the suites
    and up to three close task ids."""
    for glob in globs:
        if any(fnmatch.fnmatchcase(t, glob) for ids in suites.values() for t in ids):
            continue
        every = [t for ids in suites.values() for t in ids]
        close = difflib.get_close_matches(glob.replace("*", "").replace("?", ""), every, n=3, cutoff=0.5)
        named = ", ".join(f"{name} ({len(ids)} tasks)" for name, ids in suites.items())
        hint = f"; close matches: {', '.join(close)}" if close else (
            f"; task ids look like {every[0]}" if every else ""
        )
        raise TaskGlobError(f"{where} {glob!r} matches no task of {named}{hint}")


def header_part(settings: VibeSettings) -> str:
    """``; tasks 'A/*'; limit 10 (pyproject.toml [tool.vibecheck] limit)`` for the header, or
    ``""`` when every task runs."""
    out = ""
    if settings.tasks:
        out += f"; tasks {', '.join(repr(t) for t in settings.tasks)}"
    if settings.limit is not None:
        out += f"; limit {settings.limit} ({settings.sources.get('limit', 'default')})"
    return out


@dataclass
class Selection:
    """The run's selection. ``suites``: name -> (problems selected, problems in the suite);
    ``collected``: benchmark items collected; ``deselected``: option -> benchmark items
    deselected by it; ``selected``: benchmark items left to run."""

    limit: int | None = None
    limit_source: str | None = None
    tasks: tuple[str, ...] = ()
    suites: dict[str, tuple[int, int]] = field(default_factory=dict)
    collected: int = 0
    deselected: dict[str, int] = field(default_factory=dict)
    selected: int = 0

    @classmethod
    def of(cls, settings: VibeSettings) -> Selection:
        return cls(
            limit=settings.limit,
            limit_source=settings.sources.get("limit") if settings.limit is not None else None,
            tasks=tuple(settings.tasks),
        )

    def collection_line(self) -> str:
        """``vibecheck: 12 items (lite: 10 of 50 tasks); 8 deselected (-k 6, --lf 2); 4 to run``."""
        line = f"vibecheck: {self.collected} items"
        partial = [f"{n}: {sel} of {total} tasks" for n, (sel, total) in self.suites.items() if sel < total]
        if partial:
            line += f" ({'; '.join(partial)})"
        gone = sum(self.deselected.values())
        if gone:
            how = ", ".join(f"{opt} {n}" for opt, n in self.deselected.items())
            line += f"; {gone} deselected ({how}); {self.selected} to run"
        return line

    def coverage(self, tasks_run: Mapping[str, int]) -> dict[str, tuple[int, int]]:
        """Suites of which fewer tasks ran than they hold: name -> (tasks run, tasks in the
        suite). ``tasks_run``: suite -> distinct task ids with a result."""
        out = {}
        for name, (_sel, total) in self.suites.items():
            ran = int(tasks_run.get(name, 0))
            if ran < total:
                out[name] = (ran, total)
        return out

    def to_dict(self) -> SelectionRecord:
        """The report's ``run.selection`` block (docs/report-schema.md)."""
        return {
            "limit": self.limit,
            "limit_source": self.limit_source,
            "tasks": list(self.tasks),
            "suites": [
                {"name": n, "problems_selected": sel, "problems_total": total}
                for n, (sel, total) in self.suites.items()
            ],
            "collected": self.collected,
            "deselected": dict(self.deselected),
            "selected": self.selected,
        }


#: Stash key of the controller's :class:`Selection` (absent when the plugin is inactive).
SELECTION_KEY = pytest.StashKey[Selection]()


def tasks_run(items: Iterable[ReportItem]) -> dict[str, int]:
    """suite -> number of distinct task ids among report items that ran (not deselected)."""
    seen: dict[str, set[str]] = {}
    for it in items:
        seen.setdefault(str(it.get("suite")), set()).add(str(it.get("task_id")))
    return {name: len(ids) for name, ids in seen.items()}
