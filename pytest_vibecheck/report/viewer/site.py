"""The results viewer page: one self-contained HTML file (``vibecheck view``, ``vibecheck report``).

The page is plain HTML, CSS and JavaScript shipped as package data (``static/``: no build step,
no dependency, nothing fetched: a Content-Security-Policy forbids any request). Its data is one
JSON blob inside the page (:func:`page_data`):

- ``overview``: one row per (suite, model, protocol, k) with pass@1, FR_k, instruction- and
  task-level IF and their intervals (the analysis's overview table, :mod:`..analysis.breakdowns`)
  plus the counts of every status (errors, no code, timeouts, tampered and any other test status
  or error kind found in the items, read generically);
- ``tables`` and ``figures``: the other analysis tables and plots (FR_k over k, IF by position,
  retention, category and instruction tables);
- ``items``: every report item (docs/report-schema.md ``items[]``) with each turn's messages,
  reply and extracted code.

The JavaScript (``static/viewer.js``) renders the overview, the item list (filtered and sorted
in memory, rendered virtually: only the rows in view exist), one item, and a comparison of two
items, chosen by the URL fragment (``#/item/NODEID`` is a permalink).
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vibecheck import __version__
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.report.records import ReportItem, TurnRecord

if TYPE_CHECKING:
    from pytest_vibecheck.report.analysis.report import AnalysisReport
    from pytest_vibecheck.report.analysis.tables import Table

__all__ = [
    "STATUS_COLUMNS",
    "item_fragment",
    "page_blob",
    "page_data",
    "render_page",
    "status_counts",
    "write_site",
]

GroupKey = tuple[str, str, str, int]

#: Status counts that always get their own overview column (others go to "other statuses").
#: ``tampered`` has its column in the analysis overview already (:mod:`..analysis.breakdowns`).
STATUS_COLUMNS: tuple[tuple[str, str], ...] = (("timeout", "timeouts"),)
#: Statuses that are not worth counting apart (they are the rates).
_PLAIN = frozenset({"passed", "failed", "evaluated"})


@cache
def _asset(name: str) -> str:
    return resources.files("pytest_vibecheck.report.viewer").joinpath("static").joinpath(name).read_text(encoding="utf-8")


def item_fragment(nodeid: str) -> str:
    """The URL fragment of an item's page: ``#/item/`` + the percent-encoded node id (what the
    page's ``encodeURIComponent`` gives), e.g. ``#/item/s%3A%3AT%2F1%5Bm-baseline%5D``."""
    from urllib.parse import quote

    return "#/item/" + quote(nodeid, safe="-_.!~*'()")


def _turn_for(item: ReportItem, k: int, derived: bool) -> TurnRecord | None:
    turns = list(item.get("turns") or [])
    if not turns:
        return None
    if not derived:
        return turns[-1]
    return next((t for t in reversed(turns) if int(t.get("k", -1)) == k), None)


def status_counts(items: Sequence[ReportItem]) -> dict[GroupKey, Counter[str]]:
    """Per (suite, model, protocol, k) group, how many results had each status: the tests
    status of the result's turn (``timeout``, ``tampered``, ... anything but passed/failed),
    ``no_code``, and for results left out of the metrics ``error`` and ``skipped`` plus their
    error kind (``error:api_error``). Groups and results are those of
    :func:`~pytest_vibecheck.report.aggregate.results` (earlier multi-turn turns included)."""
    from pytest_vibecheck.report.aggregate import results

    by_id = {str(i.get("nodeid")): i for i in items}
    out: dict[GroupKey, Counter[str]] = {}
    for r in results(list(items)):
        c = out.setdefault(r.group, Counter())
        if r.status != "evaluated":
            c[r.status] += 1
            if r.error_kind:
                c[f"error:{r.error_kind}"] += 1
            continue
        if r.no_code:
            c["no_code"] += 1
        item = by_id.get(r.nodeid)
        turn = _turn_for(item, r.k, r.derived) if item is not None else None
        tests = turn.get("tests") if turn is not None else None
        status = str(tests.get("status") or "") if tests else ""
        if status and status not in _PLAIN:
            c[status] += 1
        elif r.timeout:
            c["timeout"] += 1
    return out


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def _table_json(t: Table) -> dict[str, Any]:
    return {
        "name": t.name,
        "title": t.title,
        "note": t.note,
        "columns": [{"key": c.key, "label": c.label, "kind": c.kind} for c in t.columns],
        "rows": [[_clean(v) for v in row] for row in t.rows],
    }


def _overview(table: Table, items: Sequence[ReportItem]) -> dict[str, Any]:
    """The analysis overview table with the status counts added after ``no_code``."""
    data = _table_json(table)
    keys = [c["key"] for c in data["columns"]]
    at = keys.index("no_code") + 1 if "no_code" in keys else len(keys)
    where = [keys.index(k) for k in ("suite", "model", "protocol", "k")]
    counts = status_counts(items)
    known = {"error", "skipped", "no_code", "tampered", *(s for s, _ in STATUS_COLUMNS)}
    new_cols = [{"key": s, "label": label, "kind": "int"} for s, label in STATUS_COLUMNS]
    new_cols.append({"key": "other_statuses", "label": "other statuses", "kind": "text"})
    data["columns"][at:at] = new_cols
    for row in data["rows"]:
        c = counts.get((row[where[0]], row[where[1]], row[where[2]], int(row[where[3]])), Counter())
        other = ", ".join(
            f"{name} {n}" for name, n in sorted(c.items()) if name not in known and n
        )
        row[at:at] = [*(c.get(s, 0) for s, _ in STATUS_COLUMNS), other or "-"]
    data["note"] = (
        data["note"] + " Timeouts, tampered and other statuses count the tests status of each "
        "result (a model failure, inside the rates); errors and skips are not in the rates."
    ).strip()
    return data


#: Item fields the page does not show (the JSON report keeps them).
_DROPPED = ("timing", "suite_sha256", "ruff_version", "duration_s")


class _Strings:
    """A table of distinct long strings: the page stores each reply, code, message and
    violation text once and refers to it by index (a model that returns its code unchanged,
    the shared system prompt and Ruff's messages repeat a lot)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.table: list[str] = []

    def __call__(self, text: Any) -> Any:
        if not isinstance(text, str) or len(text) < 16:
            return text
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.table)
            self.table.append(text)
        return i


def _turn(t: TurnRecord, s: _Strings) -> dict[str, Any]:
    """The turn as the page's JSON: long strings as indices of the string table."""
    out: dict[str, Any] = dict(t)
    for key in ("reply", "code"):
        if key in out:
            out[key] = s(out[key])
    if "messages" in out:
        out["messages"] = [{**m, "content": s(m.get("content"))} for m in out["messages"]]
    if isinstance(out.get("tests"), Mapping):
        out["tests"] = {**out["tests"], "message": s(out["tests"].get("message"))}
    out["verdicts"] = [
        {**v, "violations": [{**x, "message": s(x.get("message"))} for x in v.get("violations") or []]}
        for v in out.get("verdicts") or []
    ]
    return out


def _items(items: Iterable[ReportItem], s: _Strings) -> list[dict[str, Any]]:
    """The items as the page's JSON (see :func:`_turn`), without :data:`_DROPPED`."""
    out: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()
    for raw in items:
        it: dict[str, Any] = {k: v for k, v in raw.items() if k not in _DROPPED}
        nodeid = str(it.get("nodeid"))
        seen[nodeid] += 1
        if seen[nodeid] > 1:  # the same item in two reports: keep both, apart
            it["nodeid"] = f"{nodeid} (copy {seen[nodeid]})"
        turns = raw.get("turns") or []
        if turns:
            it.pop("failure", None)  # the turns hold the same text, structured
        it["turns"] = [_turn(t, s) for t in turns]
        out.append(it)
    return out


def page_data(rep: AnalysisReport) -> dict[str, Any]:
    """The page's JSON blob (see the module docstring) from an analysis report that holds the
    reports' items (:func:`~pytest_vibecheck.report.analysis.report.build_report` or
    :func:`~pytest_vibecheck.report.analysis.report.basic_analysis`). Raises
    :class:`VibecheckError` without an ``overview`` table."""
    from pytest_vibecheck.verify.instructions import all_instructions

    tables = {t.name: t for t in rep.tables}
    if "overview" not in tables:
        raise VibecheckError("the analysis has no overview table")
    strings = _Strings()
    items = _items(rep.items, strings)
    return {
        "title": rep.title,
        "version": __version__,
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "sources": rep.sources,
        "notes": rep.notes,
        "overview": _overview(tables["overview"], rep.items),
        "tables": [_table_json(t) for t in rep.tables if t.name != "overview"],
        "figures": {
            f.name: {
                "title": f.title,
                "src": "data:image/png;base64," + base64.b64encode(f.png).decode("ascii"),
            }
            for f in rep.figures
        },
        "instructions": {i.id: i.category for i in all_instructions()},
        "items": items,
        #: the long strings of the items (reply, code, message contents, test messages,
        #: violation messages), referred to by index; the page resolves them on load
        "strings": strings.table,
    }


def render_page(data: Mapping[str, Any]) -> str:
    """The self-contained HTML page (inline CSS, JavaScript and data) for ``data``
    (:func:`page_data`)."""
    import html

    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # inside <script>: "<" only occurs in strings, where \u003c is the same character
    blob = blob.replace("<", "\\u003c")
    page = _asset("index.html")
    title = html.escape(str(data.get("title") or "pytest-vibecheck"))
    parts = {"__TITLE__": title, "__CSS__": _asset("viewer.css"), "__JS__": _asset("viewer.js")}
    for key, value in parts.items():
        page = page.replace(key, value)
    return page.replace("__DATA__", blob, 1)


_BLOB_START = '<script type="application/json" id="vibecheck-data">'


def page_blob(page: str, *, resolve: bool = True) -> dict[str, Any]:
    """The JSON blob of a page written by :func:`render_page` (for tests and tools), with the
    items' strings put back in place (unless ``resolve`` is false). Raises
    :class:`VibecheckError` when ``page`` is not a viewer page."""
    start = page.find(_BLOB_START)
    end = page.find("</script>", start)
    if start < 0 or end < 0:
        raise VibecheckError("not a pytest-vibecheck viewer page (no data blob)")
    data: dict[str, Any] = json.loads(page[start + len(_BLOB_START) : end])
    if resolve:
        table = data.get("strings") or []

        def r(v: Any) -> Any:
            return table[v] if isinstance(v, int) and not isinstance(v, bool) else v

        for it in data.get("items") or []:
            for t in it.get("turns") or []:
                for key in ("reply", "code"):
                    if key in t:
                        t[key] = r(t[key])
                for m in t.get("messages") or []:
                    m["content"] = r(m.get("content"))
                if isinstance(t.get("tests"), dict):
                    t["tests"]["message"] = r(t["tests"].get("message"))
                for v in t.get("verdicts") or []:
                    for x in v.get("violations") or []:
                        x["message"] = r(x.get("message"))
    return data


def write_site(out_dir: str | Path, page: str) -> Path:
    """Write ``page`` (:func:`render_page`) as ``index.html``, the whole site (it opens from
    disk, no server needed), into ``out_dir`` (created); returns its path. Raises
    :class:`VibecheckError` when the folder cannot be written."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "index.html"
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise VibecheckError(f"cannot write the viewer to {out}: {exc.strerror or exc}") from None
    return path
