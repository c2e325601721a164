"""Turn cached generations into a replay: record a real run once, re-score it offline forever.

A run against a real model (``pytest --vibe-model=openai:NAME --vibe-base-url=...``) leaves every
reply in the generation cache (:mod:`pytest_vibecheck.generate.cache`). :func:`replay_entries_from_cache`
selects the rows of one model and one set of sampling parameters and turns them into
:class:`~pytest_vibecheck.generate.backends.replay.ReplayEntry` objects; :func:`export_replay` writes them
as a replay folder (the format of :mod:`pytest_vibecheck.generate.backends.replay`, written by its
:func:`~pytest_vibecheck.generate.backends.replay.write_replay`) with a provenance manifest.

Every entry keeps the ``request_hash`` (the cache row's messages fingerprint), so the replay
answers the exact requests of the recorded run, single-turn and multi-turn alike: a multi-turn
request's history contains the earlier recorded replies, hence the same fingerprint. Entries are
sorted by (task id, label, sample), so the same cache gives byte-identical files.

Command line: ``vibecheck cache export-replay OUT --model SPEC [--cache PATH] ...``
(:mod:`pytest_vibecheck.cli.replay_export_cmd`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.generate.backends.replay import ReplayEntry, write_replay
from pytest_vibecheck.generate.cache import GenerationCache
from pytest_vibecheck.generate.protocols import PROMPT_VERSION

#: Replay names: what ``replay:NAME`` accepts for a shipped replay (a folder name).
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ReplayExportError(VibecheckError):
    """The cache holds nothing to export, or its rows for one request slot disagree."""


@dataclass(frozen=True)
class ExportSelection:
    """Which cache rows become the replay.

    ``provider`` and ``model`` match the cache row's backend (``openai`` and
    ``qwen2.5-coder-0.5b-instruct`` for ``--vibe-model=openai:qwen2.5-coder-0.5b-instruct``).
    ``temperature`` / ``max_tokens``: when given, only rows requested with exactly these values.
    ``base_url``: when given, only rows recorded from this server (as stored, credentials removed).
    ``keys``: when given, only rows with these cache keys (e.g. :func:`report_keys` of the
    published report: exactly the replies it scored, leaving out rows of other runs or of an
    earlier version of the suite).
    """

    provider: str
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    base_url: str | None = None
    keys: frozenset[str] | None = None

    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> ExportSelection:
        """Selection for a ``--vibe-model`` spec ``PROVIDER:MODEL``; ParameterError-like
        :class:`ReplayExportError` for a spec without a provider."""
        provider, sep, model = spec.partition(":")
        if not sep or not provider or not model:
            raise ReplayExportError(
                f"model spec {spec!r}: expected PROVIDER:MODEL as given to --vibe-model, "
                "e.g. openai:qwen2.5-coder-0.5b-instruct"
            )
        return cls(provider=provider, model=model, **kwargs)


@dataclass
class ExportSummary:
    """What :func:`replay_entries_from_cache` found: rows read, rows selected, per-label counts,
    token totals and the distinct sampling parameters of the selected rows."""

    rows: int = 0
    selected: int = 0
    labels: dict[str, int] = field(default_factory=dict)
    tasks: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reasons: dict[str, int] = field(default_factory=dict)
    sampling: list[dict[str, Any]] = field(default_factory=list)
    base_urls: list[str] = field(default_factory=list)
    prompt_versions: list[str] = field(default_factory=list)
    created_range: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Builtins (for the manifest's ``recorded`` entry)."""
        return {
            "cache_rows_selected": self.selected,
            "tasks": self.tasks,
            "labels": dict(self.labels),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "finish_reasons": dict(self.finish_reasons),
            "sampling": list(self.sampling),
            "base_urls": list(self.base_urls),
            "prompt_versions": list(self.prompt_versions),
            "first_recorded": _iso(self.created_range[0]) if self.created_range else None,
            "last_recorded": _iso(self.created_range[1]) if self.created_range else None,
        }


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _request(row: Mapping[str, Any]) -> dict[str, Any]:
    try:
        data = json.loads(str(row.get("request") or "{}"))
    except json.JSONDecodeError:
        data = {}
    return data if isinstance(data, dict) else {}


def report_keys(report: Mapping[str, Any]) -> frozenset[str]:
    """The generation cache keys of every reply a JSON report (docs/report-schema.md) used:
    ``items[].turns[].generation.key``."""
    return frozenset(
        str(turn["generation"]["key"])
        for item in report.get("items") or []
        for turn in item.get("turns") or []
        if (turn.get("generation") or {}).get("key")
    )


def replay_entries_from_cache(
    cache: GenerationCache | str | os.PathLike[str],
    selection: ExportSelection,
) -> tuple[list[ReplayEntry], ExportSummary]:
    """The replay entries of the cache rows matching ``selection``, sorted by
    (task id, label, sample), and a summary.

    Each entry: ``task_id`` and ``label`` of the row (``baseline``, ``single-k3``, ``multi-k2``
    ... as in :func:`pytest_vibecheck.generate.protocols.label`), ``sample`` (0 at temperature 0),
    ``reply``, ``request_hash`` (the messages fingerprint stored with the row), ``usage``
    (``input_tokens``, ``output_tokens``) and ``finish_reason``.

    Raises :class:`ReplayExportError` when no row matches (naming the models the cache has), when
    a row has no task id or label (it was not made by the plugin), or when two selected rows claim
    the same (task id, label, sample) with different requests (e.g. two max-token settings or two
    versions of a suite: narrow the selection with ``temperature`` / ``max_tokens``).
    """
    own = not isinstance(cache, GenerationCache)
    store = GenerationCache(cache) if not isinstance(cache, GenerationCache) else cache
    try:
        rows = list(store.rows())
    finally:
        if own:
            store.close()
    summary = ExportSummary(rows=len(rows))
    chosen: dict[tuple[str, str, int], tuple[ReplayEntry, str]] = {}
    sampling: dict[str, dict[str, Any]] = {}
    urls: set[str] = set()
    versions: set[str] = set()
    finish: Counter[str] = Counter()
    times: list[float] = []
    models: Counter[str] = Counter()
    for row in rows:
        models[f"{row.get('provider')}:{row.get('model')}"] += 1
        if row.get("provider") != selection.provider or row.get("model") != selection.model:
            continue
        req = _request(row)
        backend = req.get("backend") if isinstance(req.get("backend"), dict) else {}
        assert isinstance(backend, dict)
        url = backend.get("base_url")
        temperature = req.get("temperature")
        max_tokens = req.get("max_tokens")
        if selection.temperature is not None and (
            not isinstance(temperature, (int, float)) or float(temperature) != float(selection.temperature)
        ):
            continue
        if selection.max_tokens is not None and max_tokens != selection.max_tokens:
            continue
        if selection.base_url is not None and url != selection.base_url:
            continue
        if selection.keys is not None and row.get("key") not in selection.keys:
            continue
        task_id, label = row.get("task_id"), row.get("label")
        if not isinstance(task_id, str) or not isinstance(label, str) or not task_id or not label:
            raise ReplayExportError(
                f"cache row {str(row.get('key'))[:12]} has no task id or label: it was not made by "
                "the pytest plugin, so it cannot be replayed by task"
            )
        messages = req.get("messages") if isinstance(req.get("messages"), dict) else {}
        assert isinstance(messages, dict)
        rhash = messages.get("sha256")
        sample = req.get("sample", 0)
        sample = sample if isinstance(sample, int) and not isinstance(sample, bool) else 0
        entry = ReplayEntry(
            task_id=task_id,
            reply=str(row["reply"]),
            label=label,
            sample=sample,
            request_hash=rhash if isinstance(rhash, str) and len(rhash) == 64 else None,
            usage={
                "input_tokens": int(row.get("input_tokens") or 0),
                "output_tokens": int(row.get("output_tokens") or 0),
            },
            finish_reason=row.get("finish_reason"),
        )
        slot = (task_id, label, sample)
        params = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "params": req.get("params", {}),
        }
        fingerprint = json.dumps(params, sort_keys=True)
        if slot in chosen:
            other, other_fp = chosen[slot]
            if other.request_hash != entry.request_hash or other_fp != fingerprint:
                raise ReplayExportError(
                    f"two cached replies for task {task_id!r}, label {label!r}, sample {sample} "
                    f"with different requests (sampling {other_fp} vs {fingerprint}, or different "
                    "messages: another version of the suite?). Select one set with --temperature / "
                    "--max-tokens, or export from a cache that holds one run"
                )
            continue
        chosen[slot] = (entry, fingerprint)
        sampling[fingerprint] = params
        if isinstance(url, str):
            urls.add(url)
        pv = req.get("prompt_version")
        if isinstance(pv, str):
            versions.add(pv)
        finish[str(entry.finish_reason)] += 1
        times.append(float(row.get("created_at") or 0.0))
    if not chosen:
        have = ", ".join(f"{m} ({n} rows)" for m, n in sorted(models.items())) or "nothing"
        raise ReplayExportError(
            f"no cached generation of {selection.provider}:{selection.model} matches "
            f"(temperature {selection.temperature}, max tokens {selection.max_tokens}); "
            f"the cache has: {have}"
        )
    entries = [chosen[s][0] for s in sorted(chosen)]
    summary.selected = len(entries)
    summary.labels = dict(sorted(Counter(e.label for e in entries).items()))
    summary.tasks = len({e.task_id for e in entries})
    summary.input_tokens = sum(int(e.usage.get("input_tokens", 0)) for e in entries)
    summary.output_tokens = sum(int(e.usage.get("output_tokens", 0)) for e in entries)
    summary.finish_reasons = dict(sorted(finish.items()))
    summary.sampling = [sampling[k] for k in sorted(sampling)]
    summary.base_urls = sorted(urls)
    summary.prompt_versions = sorted(versions)
    summary.created_range = (min(times), max(times)) if times else None
    return entries, summary


def export_replay(
    cache: GenerationCache | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    selection: ExportSelection,
    *,
    name: str,
    provenance: Mapping[str, Any] | None = None,
    protocols: Sequence[str] | None = None,
    suites: Iterable[str] = (),
) -> dict[str, Any]:
    """Write the replay folder ``out_dir`` (``replies.jsonl.gz`` + ``manifest.json``) from the
    cache rows matching ``selection`` and return its manifest.

    The manifest holds ``name``, ``model`` (``selection.model``), ``protocols`` (from the labels
    unless given), ``suites``, ``recorded`` (:meth:`ExportSummary.to_dict`: labels, tokens,
    finish reasons, sampling parameters, server URLs, prompt versions), ``prompt_version`` and
    every key of ``provenance`` (e.g. model file sha256, server version, date, command), plus
    what :func:`~pytest_vibecheck.generate.backends.replay.write_replay` adds (format, entries, labels,
    file, sha256). Nothing time-dependent is added here, so the same cache and provenance give
    byte-identical files.

    Raises :class:`ReplayExportError` for a bad name or nothing to export (see
    :func:`replay_entries_from_cache`).
    """
    if not _NAME_RE.match(name):
        raise ReplayExportError(
            f"replay name {name!r}: use letters, digits, '.', '_' and '-' (it becomes replay:{name})"
        )
    entries, summary = replay_entries_from_cache(cache, selection)
    found = sorted({e.label.split("-k")[0] if "-k" in e.label else e.label for e in entries})
    manifest: dict[str, Any] = {
        "name": name,
        "model": selection.model,
        "protocols": list(protocols) if protocols is not None else found,
        "suites": sorted(set(suites)),
        "prompt_version": summary.prompt_versions[0] if len(summary.prompt_versions) == 1 else PROMPT_VERSION,
        "recorded": summary.to_dict(),
    }
    manifest.update(provenance or {})
    return write_replay(Path(out_dir), entries, manifest)
