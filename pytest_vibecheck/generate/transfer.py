"""Move the generation cache between machines: ``vibecheck cache export PATH`` / ``import PATH``.

The transfer file is gzip-compressed JSON Lines (``.jsonl.gz``):

* line 1, a header: ``{"format": "pytest-vibecheck-cache", "version": 1, "cache_schema": N,
  "rows": R}`` (``cache_schema`` is
  :data:`pytest_vibecheck.generate.cache.CACHE_SCHEMA_VERSION`; a file from another cache schema is
  refused, since none of its keys could ever match);
* then one row per cached generation, sorted by key, with the columns of the ``generations``
  table: ``key`` (the sha256 cache key), ``provider``, ``model``, ``task_id``, ``label``,
  ``reply``, ``input_tokens``, ``output_tokens``, ``latency_s``, ``finish_reason``,
  ``response_model``, ``created_at`` (Unix seconds), ``run_id`` and ``request`` (the canonical
  JSON of the key components as the cache stores them: backend identity, sampling parameters,
  and the messages as their fingerprint and count).

No credentials travel: the cache never stores API keys (the key components drop secret-looking
names and URL user info), and both export and import refuse a row whose ``request`` contains a
secret-looking name (``api_key``, ``authorization``, ...) and import refuses malformed rows (a
key that is not a sha256 hex digest, missing fields). Import merges without duplicates: ``INSERT ... ON CONFLICT(key) DO NOTHING``, so rows already in the
target cache win and importing the same file twice adds nothing. The gzip header carries no
time stamp, so exporting the same cache twice gives identical bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.generate.backends.base import is_secret_name
from pytest_vibecheck.generate.cache import CACHE_SCHEMA_VERSION, GenerationCache

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ROW_FIELDS",
    "TransferError",
    "TransferStats",
    "export_cache",
    "import_cache",
    "read_export",
]

FORMAT = "pytest-vibecheck-cache"
FORMAT_VERSION = 1
#: Columns of a row, in the order they are written.
ROW_FIELDS: tuple[str, ...] = (
    "key", "provider", "model", "task_id", "label", "reply", "input_tokens", "output_tokens",
    "latency_s", "finish_reason", "response_model", "created_at", "run_id", "request",
)
_REQUIRED = ("key", "provider", "model", "reply", "created_at", "request")
_KEY = re.compile(r"[0-9a-f]{64}")


class TransferError(VibecheckError):
    """A transfer file or cache cannot be read or written; the message names it and the line."""


@dataclass(frozen=True)
class TransferStats:
    """What an export or import did: ``rows`` read or written, ``added`` (import: new rows),
    ``present`` (import: keys already in the cache), ``rejected`` (rows refused, with reasons
    in ``reasons``, at most 20)."""

    path: str
    rows: int
    added: int = 0
    present: int = 0
    rejected: int = 0
    reasons: tuple[str, ...] = ()


def _secret_names(value: Any, where: str = "") -> Iterator[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if is_secret_name(str(k)):
                yield f"{where}{k}"
            yield from _secret_names(v, f"{where}{k}.")
    elif isinstance(value, list):
        for n, v in enumerate(value):
            yield from _secret_names(v, f"{where}{n}.")


def _check_row(row: Mapping[str, Any]) -> str | None:
    """Why ``row`` must not be transferred, or None."""
    missing = [f for f in _REQUIRED if row.get(f) is None]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    if not isinstance(row["request"], str) or not isinstance(row["key"], str):
        return "key and request must be strings"
    try:
        components = json.loads(row["request"])
    except json.JSONDecodeError:
        return "request is not JSON"
    # Messages are the prompt text; only the names of parameters and backend fields matter.
    checked = {k: v for k, v in components.items() if k != "messages"} if isinstance(components, dict) else components
    secrets = sorted(set(_secret_names(checked)))
    if secrets:
        return f"request has secret-looking field(s) {', '.join(secrets)}"
    if not _KEY.fullmatch(row["key"]):
        return "key is not a sha256 hex digest (64 lowercase hex digits)"
    if not isinstance(row["reply"], str):
        return "reply must be a string"
    return None


def export_cache(cache_path: str | os.PathLike[str], out_path: str | os.PathLike[str]) -> TransferStats:
    """Write every row of the cache at ``cache_path`` to ``out_path`` (JSONL.gz, see the module
    docstring). Rows that fail the checks (secret-looking names, key mismatch) are skipped and
    counted in ``rejected``. Raises :class:`TransferError` when the cache does not exist or the
    output cannot be written; the output appears atomically (temp file + rename)."""
    src = Path(cache_path)
    if not src.is_file():
        raise TransferError(f"cache {src} does not exist; pass --cache PATH to the cache file")
    with GenerationCache(src) as cache:
        rows = list(cache.rows())
    good: list[dict[str, Any]] = []
    reasons: list[str] = []
    for row in rows:
        why = _check_row(row)
        if why is None:
            good.append({f: row.get(f) for f in ROW_FIELDS})
        else:
            reasons.append(f"{str(row.get('key'))[:12]}: {why}")
    out = Path(out_path)
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "cache_schema": CACHE_SCHEMA_VERSION,
        "rows": len(good),
    }
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        with tmp.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz, \
                io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as fh:
            fh.write(json.dumps(header, sort_keys=True) + "\n")
            for row in good:
                fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
        tmp.replace(out)
    except OSError as exc:
        raise TransferError(f"cannot write {out}: {exc.strerror or exc}") from None
    return TransferStats(str(out), len(good), rejected=len(reasons), reasons=tuple(reasons[:20]))


def _read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TransferError(f"{path}:{n}: not valid JSON: {exc.msg}") from None
                if not isinstance(obj, dict):
                    raise TransferError(f"{path}:{n}: expected a JSON object")
                yield n, obj
    except FileNotFoundError:
        raise TransferError(f"{path} does not exist") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise TransferError(
            f"{path}: not a gzip-compressed JSONL cache export ({exc}); make one with "
            "`vibecheck cache export PATH`"
        ) from None


def read_export(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and rows of a transfer file. Raises :class:`TransferError` for a file that is
    not an export of this format version and cache schema."""
    p = Path(path)
    lines = _read_lines(p)
    first = next(lines, None)
    if first is None:
        raise TransferError(f"{p}: empty file; expected a `vibecheck cache export` file")
    _, header = first
    if header.get("format") != FORMAT:
        raise TransferError(f"{p}: line 1 is not a {FORMAT} header; make the file with "
                            "`vibecheck cache export PATH`")
    if header.get("version") != FORMAT_VERSION:
        raise TransferError(f"{p}: transfer format version {header.get('version')!r}; this "
                            f"pytest-vibecheck reads version {FORMAT_VERSION}")
    if header.get("cache_schema") != CACHE_SCHEMA_VERSION:
        raise TransferError(
            f"{p}: exported from cache schema {header.get('cache_schema')!r}, this version uses "
            f"{CACHE_SCHEMA_VERSION}: its keys can never match; re-generate instead"
        )
    rows = [row for _, row in lines]
    if isinstance(header.get("rows"), int) and header["rows"] != len(rows):
        raise TransferError(f"{p}: header says {header['rows']} rows, the file has {len(rows)} "
                            "(truncated?)")
    return header, rows


def import_cache(in_path: str | os.PathLike[str], cache_path: str | os.PathLike[str]) -> TransferStats:
    """Merge the rows of the transfer file ``in_path`` into the cache at ``cache_path`` (created
    if absent). Rows whose key is already present are left as they are; rows failing the checks
    are rejected (counted, with reasons). All accepted rows go in one transaction: an error
    leaves the cache unchanged. Raises :class:`TransferError`."""
    _, rows = read_export(in_path)
    accepted: list[dict[str, Any]] = []
    reasons: list[str] = []
    for n, row in enumerate(rows, 2):
        why = _check_row(row)
        if why is None:
            accepted.append(row)
        else:
            reasons.append(f"line {n} ({str(row.get('key'))[:12]}): {why}")
    target = Path(cache_path)
    GenerationCache(target).close()  # creates the file or checks its schema
    present = 0
    conn = sqlite3.connect(str(target), timeout=60.0, isolation_level=None)
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(generations)")]
        fields = [f for f in ROW_FIELDS if f in columns]
        sql = (f"INSERT INTO generations ({', '.join(fields)}) VALUES "
               f"({', '.join('?' * len(fields))}) ON CONFLICT(key) DO NOTHING")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for row in accepted:
                cur = conn.execute(sql, [_column_value(row, f) for f in fields])
                if cur.rowcount == 0:
                    present += 1
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise TransferError(f"cannot import into {target}: {exc}") from None
    finally:
        conn.close()
    return TransferStats(
        str(target), len(rows), added=len(accepted) - present, present=present,
        rejected=len(reasons), reasons=tuple(reasons[:20]),
    )


def _column_value(row: Mapping[str, Any], name: str) -> Any:
    value = row.get(name)
    if name in ("input_tokens", "output_tokens"):
        return int(value or 0)
    if name in ("latency_s", "created_at"):
        return float(value or 0.0)
    return value

