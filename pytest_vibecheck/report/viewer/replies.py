"""What the model wrote, for reports written without it.

Reports of pytest-vibecheck 0.1 (and runs with ``--vibe-report-replies no``) hold only each
turn's code sha256. :func:`fill_replies` puts back each turn's ``reply``, ``code`` and
``messages`` (docs/report-schema.md ``items[].turns[]``) from the generation cache, found by
``turns[].generation.key``. The code is extracted again with the run's ``--vibe-extract`` mode
and kept only when its sha256 equals the recorded ``code_sha256``, so a report never shows code
that is not what was judged.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.report.records import MessageRecord, ReportItem, TurnRecord

if TYPE_CHECKING:
    from pytest_vibecheck.report.analysis.load import LoadedReport
    from pytest_vibecheck.suites.problem import Problem

__all__ = ["FillResult", "fill_for_viewing", "fill_replies", "missing_replies"]


@dataclass(frozen=True)
class FillResult:
    """Counts of turns: ``missing`` (without a reply before), ``filled`` (reply found in the
    cache), ``code_mismatch`` (reply found but its re-extracted code differs from the recorded
    sha256: the code is left out)."""

    missing: int
    filled: int
    code_mismatch: int

    def note(self, cache: str | None) -> str | None:
        """A one-line note for the viewer, or None when nothing was missing."""
        if not self.missing:
            return None
        where = f"the generation cache {cache}" if cache else "no generation cache (pass --cache)"
        text = f"{self.missing} turns of these reports hold no reply; {self.filled} were read from {where}"
        if self.code_mismatch:
            text += f"; {self.code_mismatch} replies re-extract to different code, whose code is not shown"
        return text + "."


def missing_replies(items: Iterable[ReportItem]) -> int:
    """Turns of ``items`` without a ``reply``."""
    return sum(1 for it in items for t in it.get("turns") or [] if "reply" not in t)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Problems:
    """The problems of the suites a report ran (``run.settings.suites``: names or folders),
    loaded on first use; None for a suite that cannot be loaded here."""

    def __init__(self, suites: Iterable[str]) -> None:
        self.sources = [str(s) for s in suites]
        self.loaded: dict[str, dict[str, Problem] | None] = {}

    def get(self, suite: str, task_id: str) -> Problem | None:
        if suite not in self.loaded:
            self.loaded[suite] = self._load(suite)
        problems = self.loaded[suite]
        return problems.get(task_id) if problems is not None else None

    def _load(self, suite: str) -> dict[str, Problem] | None:
        from pytest_vibecheck.suites.store import load_suite

        for source in [suite, *self.sources]:
            try:
                loaded = load_suite(source)
            except Exception:  # not loadable here (moved, edited): the messages stay unknown
                continue
            if loaded.name == suite:
                return {p.task_id: p for p in loaded.problems}
        return None


def _messages(
    item: ReportItem, turn: TurnRecord, problem: Problem, history: list[str]
) -> list[MessageRecord]:
    from pytest_vibecheck.generate import protocols

    protocol = str(item.get("protocol"))
    k = int(turn.get("k", 0)) if protocol == "multi" else int(item.get("k", 0))
    return [
        {"role": m["role"], "content": m["content"]}
        for m in protocols.protocol_messages(problem, protocol, k, history)
    ]


def fill_replies(
    items: Iterable[ReportItem],
    cache: str | os.PathLike[str] | None,
    *,
    extract: str = "first",
    suites: Iterable[str] = (),
) -> FillResult:
    """Add ``reply``, ``code`` and ``messages`` (in place) to every turn of ``items`` that lacks
    them, from the generation cache file ``cache`` (SQLite, ``--vibe-cache``), found by
    ``generation.key``. ``extract`` is the run's extraction mode (``run.settings.extract``).

    The cache keeps only a sha256 of each request's messages; the messages are rebuilt from the
    problem (the suites of ``suites``: ``run.settings.suites``) with the item's protocol and the
    earlier replies, and kept only when their sha256 matches. The code is extracted again and
    kept only when its sha256 equals the recorded ``code_sha256``. A missing cache file fills
    nothing.

    Raises :class:`~pytest_vibecheck.generate.cache.CacheError` for a file that is not a
    generation cache.
    """
    from pytest_vibecheck.generate.backends.base import messages_fingerprint
    from pytest_vibecheck.verify.extract import extract_code

    todo = [it for it in items if any("reply" not in t for t in it.get("turns") or [])]
    missing = sum(1 for it in todo for t in it.get("turns") or [] if "reply" not in t)
    if not todo:
        return FillResult(0, 0, 0)
    if cache is None or not Path(cache).is_file():
        return FillResult(missing, 0, 0)
    from pytest_vibecheck.generate.cache import GenerationCache

    wanted = {str((t.get("generation") or {}).get("key")) for it in todo for t in it.get("turns") or []}
    rows: dict[str, dict[str, Any]] = {}
    store = GenerationCache(cache)
    try:
        for stored in store.rows():
            if stored["key"] in wanted:
                rows[stored["key"]] = stored
    finally:
        store.close()
    problems = _Problems(suites)
    filled = mismatch = 0
    for it in todo:
        history: list[str] = []
        previous: list[MessageRecord] = []
        for t in it.get("turns") or []:
            row = rows.get(str((t.get("generation") or {}).get("key")))
            reply = t.get("reply") if "reply" in t else (str(row["reply"]) if row is not None else None)
            if "reply" not in t and reply is not None:
                filled += 1
                t["reply"] = reply
                ex = extract_code(reply, mode=extract)  # type: ignore[arg-type]
                if _sha(ex.code) == (t.get("extraction") or {}).get("code_sha256"):
                    t["code"] = ex.code
                else:
                    mismatch += 1
            problem = problems.get(str(it.get("suite")), str(it.get("task_id")))
            full = _messages(it, t, problem, history) if problem is not None else None
            if "messages" not in t and full is not None and row is not None:
                try:
                    request = json.loads(str(row.get("request") or "{}"))
                except json.JSONDecodeError:
                    request = {}
                want = ((request.get("messages") or {}) if isinstance(request, dict) else {}).get("sha256")
                if want == messages_fingerprint(full):  # type: ignore[arg-type,unused-ignore]
                    n = len(previous)
                    t["messages"] = full[n + 1 :] if n and full[:n] == previous else full
            if reply is None:
                break  # the later turns' messages depend on this reply
            history.append(reply)
            previous = full or []
    return FillResult(missing, filled, mismatch)


def fill_for_viewing(
    reports: Sequence[LoadedReport], cache: str | os.PathLike[str] | None = None
) -> list[str]:
    """Fill in the replies the loaded ``reports``
    (:func:`~pytest_vibecheck.report.analysis.load.load_reports`) lack (:func:`fill_replies`),
    from ``cache``, or else from the generation cache each report's run used
    (``run.settings.cache``). Returns notes for the reader (one line each)."""
    notes = []
    for r in reports:
        settings = (r.data.get("run") or {}).get("settings") or {}
        where = cache if cache is not None else settings.get("cache")
        res = fill_replies(
            r.items, where, extract=str(settings.get("extract") or "first"),
            suites=settings.get("suites") or (),
        )  # fmt: skip
        note = res.note(str(where) if where else None)
        if note:
            notes.append(f"{r.path}: {note}")
    return notes
