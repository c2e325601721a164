"""``replay:NAME|PATH``: recorded replies served offline.

A replay is a folder with ``manifest.json`` and a JSONL file (optionally gzip-compressed) of
entries, or a bare ``.jsonl``/``.jsonl.gz`` file. Each entry (one JSON object per line)::

    {"task_id": "BigCodeBench/13", "label": "baseline", "sample": 0,
     "reply": "```python\\n...\\n```", "request_hash": null,
     "usage": {"input_tokens": 0, "output_tokens": 0}, "finish_reason": null}

Only ``task_id`` and ``reply`` are required (``label`` defaults to ``"baseline"``, ``sample``
to 0). Look-up: first by ``request_hash`` (= :func:`~pytest_vibecheck.generate.backends.base.messages_fingerprint`
of the exact messages, for replies recorded from a real run), then by ``(task_id, label,
sample)``. A miss raises :class:`ReplayMissError` naming the task and the labels the replay has.

Shipped replays live in ``replays/<name>/`` of the source tree (``pytest_vibecheck/_data/replays``
in a wheel) and are listed by :func:`list_replays`. Never cached: they are already offline.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError, UnknownIdError
from pytest_vibecheck.generate.backends.base import (
    Backend,
    BackendSettings,
    Generation,
    GenerationRequest,
    ReplayMissError,
    messages_fingerprint,
)
from pytest_vibecheck.verify.instructions import data_dir

#: Version of the replay file format.
REPLAY_FORMAT = 1
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ReplayEntry:
    """One recorded reply (see the module docstring for the JSON form)."""

    task_id: str
    reply: str
    label: str = "baseline"
    sample: int = 0
    request_hash: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Builtins, in the file's key order."""
        return {
            "task_id": self.task_id,
            "label": self.label,
            "sample": self.sample,
            "reply": self.reply,
            "request_hash": self.request_hash,
            "usage": dict(self.usage) or None,
            "finish_reason": self.finish_reason,
        }


def replays_dir() -> Path:
    """Folder of the shipped replays (``replays/`` in a checkout, ``_data/replays`` in a wheel)."""
    return data_dir("replays")


def list_replays() -> list[str]:
    """Names of the shipped replays (folders with a manifest), sorted."""
    root = replays_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / MANIFEST).is_file())


def _open_text(path: Path) -> Iterator[str]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            yield from fh
    else:
        with path.open(encoding="utf-8") as fh:
            yield from fh


def _parse_entry(obj: Any, path: Path, line: int) -> ReplayEntry:
    if not isinstance(obj, dict):
        raise DataFileError(path, f"expected a JSON object, got {type(obj).__name__}", line=line)
    for name in ("task_id", "reply"):
        if not isinstance(obj.get(name), str):
            raise DataFileError(path, "required string is missing or not a string", field=name, line=line)
    label = obj.get("label", "baseline")
    sample = obj.get("sample", 0)
    rhash = obj.get("request_hash")
    usage = obj.get("usage") or {}
    finish = obj.get("finish_reason")
    if not isinstance(label, str) or not label:
        raise DataFileError(path, f"expected a non-empty string, got {label!r}", field="label", line=line)
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise DataFileError(path, f"expected an int >= 0, got {sample!r}", field="sample", line=line)
    if rhash is not None and not (isinstance(rhash, str) and len(rhash) == 64):
        raise DataFileError(path, "expected null or a 64-character sha256 hex digest", field="request_hash", line=line)
    if not isinstance(usage, dict) or not all(isinstance(v, int) for v in usage.values()):
        raise DataFileError(path, f"expected an object of ints, got {usage!r}", field="usage", line=line)
    if finish is not None and not isinstance(finish, str):
        raise DataFileError(path, f"expected null or a string, got {finish!r}", field="finish_reason", line=line)
    return ReplayEntry(obj["task_id"], obj["reply"], label, sample, rhash, usage, finish)


def read_entries(path: str | os.PathLike[str]) -> list[ReplayEntry]:
    """All entries of a replay JSONL file (``.jsonl`` or ``.jsonl.gz``); blank lines skipped.

    Raises DataFileError (with the line number) for malformed JSON or fields.
    """
    p = Path(path)
    out: list[ReplayEntry] = []
    try:
        for i, text in enumerate(_open_text(p), start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataFileError(p, f"invalid JSON: {exc.msg}", line=i) from None
            out.append(_parse_entry(obj, p, i))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataFileError(p, f"cannot read replay file: {exc}") from None
    return out


def write_replay(
    folder: str | os.PathLike[str],
    entries: Iterable[ReplayEntry],
    manifest: Mapping[str, Any],
    *,
    filename: str = "replies.jsonl.gz",
) -> dict[str, Any]:
    """Write a replay folder: ``filename`` (gzip when it ends in ``.gz``, with a fixed mtime so
    the bytes are reproducible) and ``manifest.json`` = ``manifest`` plus ``format``,
    ``entries``, ``labels`` (label -> count), ``file`` and ``sha256``. Returns the manifest."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    items = list(entries)
    payload = "".join(json.dumps(e.to_json(), ensure_ascii=False) + "\n" for e in items).encode("utf-8")
    target = out / filename
    if filename.endswith(".gz"):
        with target.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            gz.write(payload)
    else:
        target.write_bytes(payload)
    full = dict(manifest)
    full.update(
        {
            "format": REPLAY_FORMAT,
            "entries": len(items),
            "labels": dict(sorted(Counter(e.label for e in items).items())),
            "file": filename,
            "sha256": hashlib.sha256(target.read_bytes()).hexdigest(),
        }
    )
    (out / MANIFEST).write_text(json.dumps(full, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return full


def resolve_replay(name_or_path: str) -> tuple[str, Path, dict[str, Any]]:
    """``(name, data file, manifest)`` for a shipped replay name, a replay folder or a JSONL file.

    Raises UnknownIdError (with suggestions and the shipped names) for an unknown name, and
    DataFileError for a malformed manifest.
    """
    text = name_or_path.strip()
    path = Path(text).expanduser()
    looks_like_path = os.sep in text or "/" in text or text.endswith((".jsonl", ".jsonl.gz", ".json"))
    if not path.exists():
        if looks_like_path:
            raise DataFileError(path, "replay file or folder not found")
        shipped = replays_dir() / text
        if not (shipped / MANIFEST).is_file():
            raise UnknownIdError("replay", text, list_replays())
        path = shipped
    if path.is_file():
        return path.name.split(".")[0], path, {}
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise DataFileError(path, f"a replay folder needs a {MANIFEST}")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataFileError(manifest_path, f"cannot read manifest: {exc}") from None
    if not isinstance(manifest, dict):
        raise DataFileError(manifest_path, "expected a JSON object")
    fmt = manifest.get("format")
    if fmt != REPLAY_FORMAT:
        raise DataFileError(manifest_path, f"unsupported replay format {fmt!r} (expected {REPLAY_FORMAT})", field="format")
    data = manifest.get("file")
    if not isinstance(data, str) or not (path / data).is_file():
        raise DataFileError(manifest_path, f"data file {data!r} not found beside the manifest", field="file")
    return str(manifest.get("name") or path.name), path / data, manifest


class ReplayBackend(Backend):
    """Serves a replay's recorded replies; see the module docstring."""

    provider = "replay"
    cacheable = False

    def __init__(self, name_or_path: str, entries: Iterable[ReplayEntry] | None = None, manifest: Mapping[str, Any] | None = None) -> None:
        if entries is None:
            name, data_file, manifest = resolve_replay(name_or_path)
            entries = read_entries(data_file)
            self.source = str(data_file)
        else:
            name = name_or_path
            self.source = "<memory>"
        self.model = name_or_path
        self.name = name
        self.manifest: dict[str, Any] = dict(manifest or {})
        self.recorded_model = str(self.manifest.get("model") or name)
        self._by_hash: dict[tuple[str, int], ReplayEntry] = {}
        self._by_task: dict[tuple[str, str, int], ReplayEntry] = {}
        self.labels: Counter[str] = Counter()
        for entry in entries:
            tkey = (entry.task_id, entry.label, entry.sample)
            if tkey in self._by_task:
                raise DataFileError(
                    self.source,
                    f"duplicate entry for task {entry.task_id!r}, label {entry.label!r}, sample {entry.sample}",
                )
            self._by_task[tkey] = entry
            self.labels[entry.label] += 1
            if entry.request_hash:
                self._by_hash[(entry.request_hash, entry.sample)] = entry

    def __len__(self) -> int:
        return len(self._by_task)

    def task_ids(self, label: str = "baseline") -> list[str]:
        """Task ids with a reply under ``label`` (sorted)."""
        return sorted({t for (t, lab, _s) in self._by_task if lab == label})

    def lookup(self, request: GenerationRequest) -> ReplayEntry | None:
        """The entry for ``request``: by exact messages hash, then by (task_id, label, sample)."""
        entry = self._by_hash.get((messages_fingerprint(request.messages), request.sample))
        if entry is None and request.task_id is not None:
            entry = self._by_task.get((request.task_id, request.label or "baseline", request.sample))
        return entry

    def generate(self, request: GenerationRequest) -> Generation:
        """The recorded reply; ReplayMissError naming the task and the replay's labels."""
        entry = self.lookup(request)
        if entry is None:
            have = ", ".join(f"{lab} ({n:,} replies)" for lab, n in sorted(self.labels.items()))
            label = request.label or "baseline"
            hint = (
                " Run only the protocols it covers (e.g. --vibe-protocol=baseline) or record a replay "
                "that has them."
                if label not in self.labels
                else " The task is not in this replay: select tasks it covers (--vibe-tasks) or use the "
                "suite it was recorded for."
            )
            raise ReplayMissError(
                f"replay {self.name!r} has no reply for task {request.task_id!r}, label {label!r}, "
                f"sample {request.sample}; it has: {have or 'nothing'}.{hint}",
                task_id=request.task_id,
                label=request.label,
            )
        return Generation(
            text=entry.reply,
            usage={
                "input_tokens": int(entry.usage.get("input_tokens", 0)),
                "output_tokens": int(entry.usage.get("output_tokens", 0)),
            },
            latency_s=0.0,
            model=self.recorded_model,
            cached=False,
            finish_reason=entry.finish_reason,
        )


def from_spec(model: str, settings: BackendSettings) -> Backend:
    """Factory of ``replay:NAME|PATH``."""
    return ReplayBackend(model)
