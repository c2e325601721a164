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
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_vibecheck.report.analysis.load import LoadedReport

__all__ = ["FillResult", "fill_replies", "load_for_viewing", "missing_replies"]


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


def missing_replies(items: Iterable[MutableMapping[str, Any]]) -> int:
    """Turns of ``items`` without a ``reply``."""
    return sum(1 for it in items for t in it.get("turns") or [] if "reply" not in t)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fill_replies(
    items: Iterable[MutableMapping[str, Any]],
    cache: str | os.PathLike[str] | None,
    *,
    extract: str = "first",
) -> FillResult:
    """Add ``reply``, ``messages`` and ``code`` (in place) to every turn of ``items`` that lacks
    them, from the generation cache file ``cache`` (SQLite, ``--vibe-cache``). ``extract`` is
    the run's extraction mode (``run.settings.extract``). A missing cache file fills nothing.

    Raises :class:`~pytest_vibecheck.generate.cache.CacheError` for a file that is not a
    generation cache.
    """
    from pytest_vibecheck.verify.extract import extract_code

    todo = [(it, t) for it in items for t in it.get("turns") or [] if "reply" not in t]
    if not todo:
        return FillResult(0, 0, 0)
    if cache is None or not Path(cache).is_file():
        return FillResult(len(todo), 0, 0)
    from pytest_vibecheck.generate.cache import GenerationCache

    wanted = {str((t.get("generation") or {}).get("key")) for _it, t in todo}
    rows: dict[str, dict[str, Any]] = {}
    store = GenerationCache(cache)
    try:
        for row in store.rows():
            if row["key"] in wanted:
                rows[row["key"]] = row
    finally:
        store.close()
    filled = mismatch = 0
    previous: dict[int, list[dict[str, str]]] = {}
    for it, t in todo:
        found = rows.get(str((t.get("generation") or {}).get("key")))
        if found is None:
            continue
        row = found
        filled += 1
        reply = str(row["reply"])
        t["reply"] = reply
        try:
            request = json.loads(str(row.get("request") or "{}"))
        except json.JSONDecodeError:
            request = {}
        msgs = request.get("messages") if isinstance(request, dict) else None
        if isinstance(msgs, list):
            full = [{"role": str(m.get("role")), "content": str(m.get("content"))} for m in msgs if isinstance(m, dict)]
            before = previous.get(id(it), [])
            n = len(before)
            new = full[n + 1 :] if n and full[:n] == before else full
            t["messages"] = new
            previous[id(it)] = full
        ex = extract_code(reply, mode=extract)  # type: ignore[arg-type]
        if _sha(ex.code) == (t.get("extraction") or {}).get("code_sha256"):
            t["code"] = ex.code
        else:
            mismatch += 1
    return FillResult(len(todo), filled, mismatch)


def load_for_viewing(
    paths: Iterable[str | Path], cache: str | os.PathLike[str] | None = None
) -> tuple[list[LoadedReport], list[str]]:
    """Load and check the reports (:func:`~pytest_vibecheck.report.analysis.load.load_reports`)
    and fill in the replies they lack (:func:`fill_replies`) from ``cache``, or else from the
    generation cache each report's run used (``run.settings.cache``). Returns the reports and
    notes for the reader (one line each).

    Raises :class:`~pytest_vibecheck.report.json_report.ReportError` for a bad report.
    """
    from pytest_vibecheck.report.analysis.load import load_reports

    reports = load_reports(paths)
    notes = []
    for r in reports:
        settings = (r.data.get("run") or {}).get("settings") or {}
        where = cache if cache is not None else settings.get("cache")
        res = fill_replies(r.items, where, extract=str(settings.get("extract") or "first"))
        note = res.note(str(where) if where else None)
        if note:
            notes.append(f"{r.path}: {note}")
    return reports, notes
