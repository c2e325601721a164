"""Run-wide state shared by the controller and every xdist worker: one small SQLite file.

Two tables: ``stops`` (``scope`` = a model spec or ``*`` for the whole run, with the one-line
reason; the first reason written wins) and ``counters`` (named running sums: infrastructure
errors, API requests, tokens spent per model). Every process opens its own connection (WAL,
``busy_timeout``), so a fatal error on one worker stops the others before their next request,
without any private xdist attribute.

The file is :func:`state_path` (beside the generation cache, else in the temporary folder),
named after the run id that the controller hands to its workers; the controller deletes it
when the session ends.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ALL", "RunState", "state_path"]

#: Scope of a stop that applies to every model.
ALL = "*"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS stops (scope TEXT PRIMARY KEY, reason TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value REAL NOT NULL)",
)


def state_path(cache: Path | None, run_id: str) -> Path:
    """Where the run's state lives: ``run-<run_id>.sqlite`` beside the generation cache when the
    run has one (the folder every worker already shares), else in the temporary folder."""
    folder = Path(cache).parent if cache is not None else Path(tempfile.gettempdir())
    return folder / f"run-{run_id}.sqlite"


class RunState:
    """The shared state at ``path`` (created on first use). Thread-safe; one connection per
    process (re-opened after ``fork``). Raises ``sqlite3.Error`` only if the file cannot be
    created at all."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        #: stops already seen by this process (a stop is never lifted)
        self._known: dict[str, str] = {}

    def _db(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode = WAL")
            for statement in _SCHEMA:
                conn.execute(statement)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def stop(self, scope: str, reason: str) -> str:
        """Stop ``scope`` (a model spec, or :data:`ALL`) for every process; returns the reason in
        force (an earlier one if there was one)."""
        with self._lock:
            db = self._db()
            db.execute("INSERT OR IGNORE INTO stops (scope, reason) VALUES (?, ?)", (scope, reason))
            row = db.execute("SELECT reason FROM stops WHERE scope = ?", (scope,)).fetchone()
            self._known[scope] = str(row[0])
            return self._known[scope]

    def stopped(self, model: str) -> str | None:
        """The reason no further request may go to ``model`` (its own stop, else the run's), or
        None."""
        for scope in (model, ALL):
            if scope in self._known:
                return self._known[scope]
        with self._lock:
            rows = self._db().execute(
                "SELECT scope, reason FROM stops WHERE scope IN (?, ?)", (model, ALL)
            ).fetchall()
        found = {str(s): str(r) for s, r in rows}
        self._known.update(found)
        return found.get(model) or found.get(ALL)

    def stops(self) -> dict[str, str]:
        """Every stop: scope -> reason."""
        with self._lock:
            rows = self._db().execute("SELECT scope, reason FROM stops ORDER BY scope").fetchall()
        return {str(s): str(r) for s, r in rows}

    def add(self, counts: Mapping[str, float]) -> dict[str, float]:
        """Add ``counts`` to the named counters (atomically, across processes); returns their
        new totals."""
        with self._lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                for name, value in counts.items():
                    db.execute(
                        "INSERT INTO counters (name, value) VALUES (?, ?) "
                        "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                        (name, float(value)),
                    )
                marks = ",".join("?" * len(counts))
                rows = db.execute(
                    f"SELECT name, value FROM counters WHERE name IN ({marks})", tuple(counts)
                ).fetchall()
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
        return {str(n): float(v) for n, v in rows}

    def counters(self, prefix: str = "") -> dict[str, float]:
        """The counters whose name starts with ``prefix``."""
        with self._lock:
            rows = self._db().execute(
                "SELECT name, value FROM counters WHERE substr(name, 1, ?) = ?", (len(prefix), prefix)
            ).fetchall()
        return {str(n): float(v) for n, v in rows}

    def close(self, *, delete: bool = False) -> None:
        """Close this process's connection; with ``delete``, remove the file (the controller,
        at the end of the session)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None
        if delete:
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    Path(str(self.path) + suffix).unlink()
