"""Result cache for test executions: identical code never runs twice.

Key = sha256 over canonical JSON of the candidate code, the problem's test specification
(kind, test code, cases, entry point) and the execution settings that can change a verdict
(sandbox version, limits, the time-limit rule or fixed limit, grading rule, the execution
environment's id with its lock hash): see :func:`cache_key`. Only verdicts
about the code are stored (``passed``, ``failed``, ``timeout``); ``error`` and ``skipped``
depend on the environment and are never cached.

Storage: one SQLite file in WAL mode, one connection per process and thread, with a busy
timeout and retries, so several processes (pytest-xdist workers, parallel runners) can read
and write it at the same time. A cache failure never fails a run: it warns and behaves as a
miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pytest_vibecheck._store import SQLiteStore
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.spec import TestSpec

T = TypeVar("T")

#: Default location, next to the generation cache (``.vibecheck/cache.sqlite``).
DEFAULT_EXEC_CACHE_PATH = Path(".vibecheck") / "exec-cache.sqlite"

EXEC_CACHE_SCHEMA = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    result TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class ExecCacheWarning(UserWarning):
    """The execution cache could not be read or written (the run goes on without it)."""


class ExecCacheError(VibecheckError):
    """The cache file cannot be used at all (e.g. it is not an SQLite database)."""


def test_spec_dict(test: TestSpec) -> dict[str, Any]:
    """The part of a problem that defines its tests, as a JSON-ready dict."""
    return {
        "kind": test.kind,
        "code": test.code,
        "cases": [[c.input, c.output] for c in test.cases],
        "entry_point": test.entry_point,
    }


def cache_key(code: str, test: TestSpec, settings: Mapping[str, Any]) -> str:
    """sha256 hex digest of ``(schema, code, test specification, settings)``."""
    blob = json.dumps(
        {
            "schema": EXEC_CACHE_SCHEMA,
            "code": code,
            "test": test_spec_dict(test),
            "settings": settings,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ExecCache(SQLiteStore):
    """The SQLite result cache at ``path`` (folder created when missing).

    Thread-safe and multi-process-safe. ``hits`` / ``misses`` / ``writes`` count this
    object's operations.
    """

    what = "execution cache"
    error = ExecCacheError
    hint = "move it away or delete it (it only holds cached test results)"

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_EXEC_CACHE_PATH,
        *,
        busy_timeout_s: float = 60.0,
        retries: int = 8,
    ) -> None:
        super().__init__(path, busy_timeout_s=busy_timeout_s, retries=retries)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.connection()  # fail early on an unusable file

    def init_schema(self, conn: sqlite3.Connection) -> None:
        """Create the results table if absent."""
        conn.execute(_SCHEMA)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored result dict for ``key``, or None (a miss, or the cache failed)."""
        try:
            row = self.retry(
                lambda: (
                    self.connection()
                    .execute("SELECT result FROM results WHERE key = ?", (key,))
                    .fetchone()
                )
            )
        except (sqlite3.Error, OSError) as exc:
            warnings.warn(
                f"execution cache {self.path}: read failed ({exc})", ExecCacheWarning, stacklevel=2
            )
            row = None
        with self._lock:
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, result: Mapping[str, Any]) -> None:
        """Store ``result`` (JSON-ready) under ``key``; last writer wins (same key = same verdict)."""
        blob = json.dumps(dict(result), sort_keys=True)
        try:
            self.retry(
                lambda: self.connection().execute(
                    "INSERT OR REPLACE INTO results (key, result, created) VALUES (?, ?, ?)",
                    (key, blob, time.time()),
                )
            )
        except (sqlite3.Error, OSError) as exc:
            warnings.warn(
                f"execution cache {self.path}: write failed ({exc})", ExecCacheWarning, stacklevel=2
            )
            return
        with self._lock:
            self.writes += 1

    def __len__(self) -> int:
        row = self.retry(lambda: self.connection().execute("SELECT COUNT(*) FROM results").fetchone())
        return int(row[0])
