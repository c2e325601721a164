"""The JSON report: build, write (atomically), load and validate (docs/report-schema.md).

The schema is ``schema.json`` beside this module (JSON Schema draft 2020-12), checked with
:mod:`jsonschema` (a dependency of the package) on every read, so a malformed report is one line
naming the first bad field in every install, never an error deep in a command.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import tempfile
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, cast

from pytest_vibecheck import __version__
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.report.aggregate import aggregate, generation_totals
from pytest_vibecheck.report.records import ReportItem, SuiteEntry, TurnRecord, VibeReport

__all__ = [
    "REPLY_FIELDS",
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "ReportError",
    "build_report",
    "load_report",
    "report_schema",
    "suites_of",
    "validate_report",
    "without_replies",
    "write_report",
]

SCHEMA_ID = "pytest-vibecheck-report"
#: Version of the report format; see docs/report-schema.md for what changes it.
SCHEMA_VERSION = 1


class ReportError(VibecheckError):
    """A report file is missing, not JSON, or does not match the schema."""


@cache
def report_schema() -> dict[str, Any]:
    """The JSON Schema of a report (``schema.json``)."""
    path = Path(__file__).with_name("schema.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def suites_of(items: Iterable[ReportItem]) -> list[SuiteEntry]:
    """``suites[]`` of a report from its items: name, manifest sha256, problems run."""
    tasks: dict[str, set[str]] = {}
    hashes: dict[str, str | None] = {}
    for it in items:
        name = str(it["suite"])
        tasks.setdefault(name, set()).add(str(it["task_id"]))
        hashes.setdefault(name, it.get("suite_sha256"))
    return [
        {"name": n, "manifest_sha256": hashes[n], "problems": len(tasks[n])} for n in sorted(tasks)
    ]


#: Fields of ``items[].turns[]`` holding what the model was sent and wrote
#: (``--vibe-report-replies no`` leaves them out; docs/report-schema.md).
REPLY_FIELDS: tuple[str, ...] = ("messages", "reply", "code")


def without_replies(items: Iterable[ReportItem]) -> list[ReportItem]:
    """Copies of ``items`` whose turns lack :data:`REPLY_FIELDS` (the report then holds only
    each code's sha256; ``vibecheck show``/``view`` read the replies from the generation cache)."""
    out = []
    for item in items:
        it = item.copy()
        # the reply fields are the turn's optional texts: a turn without them is still a turn
        it["turns"] = [
            cast(TurnRecord, {k: v for k, v in turn.items() if k not in REPLY_FIELDS})
            for turn in it.get("turns") or []
        ]
        out.append(it)
    return out


def build_report(
    items: Iterable[ReportItem],
    *,
    settings: Mapping[str, Any],
    workers: int = 0,
    duration_s: float = 0.0,
    exitstatus: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> VibeReport:
    """The report dict (docs/report-schema.md) for ``items`` (report items: the records
    with ``nodeid``, ``outcome`` and ``duration_s``). ``extra`` adds optional top-level fields
    (e.g. ``shard``)."""
    import pytest

    its = sorted((i.copy() for i in items), key=lambda i: str(i.get("nodeid", "")))
    ruff = next((i.get("ruff_version") for i in its if i.get("ruff_version")), None)
    report: VibeReport = {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run": {
            "plugin_version": __version__,
            "python_version": platform.python_version(),
            "pytest_version": pytest.__version__,
            "ruff_version": ruff,
            "platform": platform.platform(),
            "settings": dict(settings),
            "workers": int(workers),
            "duration_s": float(duration_s),
            "exitstatus": int(exitstatus),
        },
        "suites": suites_of(its),
        "items": its,
        "aggregates": aggregate(its),
        "generation": generation_totals(its),
    }
    if extra:  # optional top-level fields (``shard``, a plugin's own): plain JSON
        fields = cast(dict[str, Any], report)
        for key, value in extra.items():
            fields.setdefault(key, value)
    return report


def _umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_report(path: str | os.PathLike[str], report: Mapping[str, object]) -> Path:
    """Write ``report`` (a :class:`~pytest_vibecheck.report.records.VibeReport`, or any JSON
    object: the SARIF log uses it too) as JSON to ``path`` atomically (temp file + rename);
    creates parent folders. Returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    try:
        # mkstemp makes the file 0600; a report is shared like any output (JUnit, SARIF): the
        # mode an ordinary file gets under the process's umask (0644 under the usual 022)
        Path(tmp).chmod(0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            # compact, in one go: json.dumps uses the C encoder (json.dump with a file, or any
            # indent, uses the pure-Python one: seconds for a large run)
            fh.write(json.dumps(report, separators=(",", ":"), ensure_ascii=False))
            fh.write("\n")
        Path(tmp).replace(out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def validate_report(report: Any, *, source: str = "report") -> None:
    """Check ``report`` against ``schema.json``; raises :class:`ReportError` naming the first
    invalid field (``REPORT: field items/0/turns: 'oops' is not of type 'array'``), or saying
    that :mod:`jsonschema`, a dependency, is missing from a broken install."""
    if not isinstance(report, dict) or report.get("schema") != SCHEMA_ID:
        raise ReportError(f"{source}: not a pytest-vibecheck report (no \"schema\": \"{SCHEMA_ID}\")")
    version = report.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportError(
            f"{source}: report schema version {version!r}; this pytest-vibecheck "
            f"({__version__}) reads version {SCHEMA_VERSION}"
        )
    try:
        import jsonschema
    except ImportError:  # tests/test_plain_install.py hides it
        raise ReportError(
            f"{source}: cannot check the report: jsonschema, a dependency of pytest-vibecheck, "
            "is not installed; reinstall it (pip install pytest-vibecheck)"
        ) from None
    validator = jsonschema.Draft202012Validator(report_schema())
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise ReportError(f"{source}: field {where}: {err.message}{more}")


def load_report(path: str | os.PathLike[str], *, validate: bool = True) -> VibeReport:
    """Read a JSON report; raises :class:`ReportError` if it is missing, not JSON, or (with
    ``validate``) does not match the schema. Where a report's JSON becomes a
    :class:`~pytest_vibecheck.report.records.VibeReport` (without ``validate``, unchecked)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{p}: cannot read the report: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{p}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if validate:
        validate_report(data, source=str(p))
    elif not isinstance(data, dict):
        raise ReportError(f"{p}: a report is a JSON object")
    return cast(VibeReport, data)

