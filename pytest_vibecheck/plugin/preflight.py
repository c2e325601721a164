"""Check before spending: which tasks can run in this environment, decided at collection.

A task whose tests need a third-party module that the sandbox's interpreter lacks would be sent
to the model and then skipped. :func:`missing_by_task` finds those tasks from the suite alone
(:func:`pytest_vibecheck.execute.envcheck.check_environment`, as ``vibecheck env-check``), so
their items are skipped with the missing modules named and make no request
(:attr:`~pytest_vibecheck.plugin.run.spec.ItemSpec.missing_modules`), and
:func:`header_line` says so once, in the session header.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from pytest_vibecheck.execute.envcheck import (
    TIERS,
    check_environment,
    data_id,
    is_nltk_data,
    required_data,
    required_modules,
)
from pytest_vibecheck.suites.problem import Problem

__all__ = ["header_line", "missing_by_task"]

#: Missing modules named in the header line (the most needed first).
SHOWN = 4


def missing_by_task(problems: Sequence[Problem], python: str | None = None) -> dict[str, tuple[str, ...]]:
    """``task_id -> missing modules`` (sorted; or the missing NLTK data, ``nltk_data:ID``, of a
    task whose modules are all there) for each problem that cannot run with ``python``
    (default: this interpreter); tasks that can run are left out."""
    report = check_environment(problems, python=python)
    skipped = set(report.skipped)
    have_not = set(report.missing)
    out: dict[str, tuple[str, ...]] = {}
    for p in problems:
        if p.task_id in skipped:
            mods = tuple(m for m in required_modules(p) if m in have_not)
            out[p.task_id] = mods or tuple(d for d in required_data(p) if d in have_not)
    return out


def _tier(modules: set[str]) -> str:
    """The smallest install tier (extra) that provides ``modules``."""
    for name in ("exec-core", "exec-full"):
        if modules <= set(TIERS[name]):
            return name
    return "exec-full"


def header_line(missing: Mapping[str, Sequence[str]], total: int) -> str | None:
    """``vibecheck: N of M tasks cannot run in this environment (missing: pandas x12, numpy x8,
    ...); install 'pytest-vibecheck[exec-core]' or pass --vibe-tasks ...``, or None when every
    task can run. ``missing``: as :func:`missing_by_task` (over all suites); ``total``: tasks."""
    if not missing:
        return None
    counts = Counter(m for mods in missing.values() for m in mods)
    shown = ", ".join(
        f"{'NLTK data ' + data_id(m) if is_nltk_data(m) else m} x{n}"
        for m, n in counts.most_common(SHOWN)
    )
    more = ", ..." if len(counts) > SHOWN else ""
    modules = {m for m in counts if not is_nltk_data(m)}
    todo = f"install 'pytest-vibecheck[{_tier(modules)}]'" if modules else ""
    if len(modules) < len(counts):
        todo += (" and " if todo else "") + "add the NLTK data (vibecheck env-check --list)"
    return (
        f"vibecheck: {len(missing)} of {total} tasks cannot run in this environment "
        f"(missing: {shown}{more}); {todo} or pass --vibe-tasks to "
        "leave them out; their items are skipped without a request"
    )
