"""Run-wide state shared by the controller and every xdist worker: one small SQLite file.

Two tables: ``stops`` (``scope`` = a model spec or ``*`` for the whole run, with the one-line
reason; the first reason written wins) and ``counters`` (named running sums: infrastructure
errors, API requests, tokens spent per model). Every process opens its own connection (WAL,
``busy_timeout``), so a fatal error on one worker stops the others before their next request,
without any private xdist attribute.

The file is :func:`state_path` (beside the generation cache, else in the temporary folder),
named after the run id that the controller hands to its workers; the controller deletes it
when the session ends. Connections, WAL and busy retries are :mod:`pytest_vibecheck._store`'s.
"""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pytest_vibecheck._store import SQLiteStore

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


class RunState(SQLiteStore):
    """The shared state at ``path`` (created on first use; :class:`~pytest_vibecheck._store.SQLiteStore`:
    a connection per thread and process, WAL, busy retries). Raises
    :class:`~pytest_vibecheck.errors.VibecheckError` when the file cannot be created or used."""

    what = "run state"
    hint = "delete it (it only lives for one run)"

    def __init__(self, path: Path) -> None:
        super().__init__(path, busy_timeout_s=30.0)
        #: stops already seen by this process (a stop is never lifted)
        self._known: dict[str, str] = {}

    def init_schema(self, conn: sqlite3.Connection) -> None:
        for statement in _SCHEMA:
            conn.execute(statement)

    def stop(self, scope: str, reason: str) -> str:
        """Stop ``scope`` (a model spec, or :data:`ALL`) for every process; returns the reason in
        force (an earlier one if there was one)."""

        def op() -> str:
            with self.write() as db:
                db.execute("INSERT OR IGNORE INTO stops (scope, reason) VALUES (?, ?)", (scope, reason))
                row = db.execute("SELECT reason FROM stops WHERE scope = ?", (scope,)).fetchone()
            return str(row[0])

        self._known[scope] = self.retry(op)
        return self._known[scope]

    def stopped(self, model: str) -> str | None:
        """The reason no further request may go to ``model`` (its own stop, else the run's), or
        None."""
        for scope in (model, ALL):
            if scope in self._known:
                return self._known[scope]
        rows = self.retry(
            lambda: self.connection().execute(
                "SELECT scope, reason FROM stops WHERE scope IN (?, ?)", (model, ALL)
            ).fetchall()
        )
        found = {str(s): str(r) for s, r in rows}
        self._known.update(found)
        return found.get(model) or found.get(ALL)

    def stops(self) -> dict[str, str]:
        """Every stop: scope -> reason."""
        rows = self.retry(
            lambda: self.connection().execute("SELECT scope, reason FROM stops ORDER BY scope").fetchall()
        )
        return {str(s): str(r) for s, r in rows}

    def add(self, counts: Mapping[str, float]) -> dict[str, float]:
        """Add ``counts`` to the named counters (atomically, across processes); returns their
        new totals."""

        def op() -> list[tuple[str, float]]:
            with self.write() as db:
                for name, value in counts.items():
                    db.execute(
                        "INSERT INTO counters (name, value) VALUES (?, ?) "
                        "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                        (name, float(value)),
                    )
                marks = ",".join("?" * len(counts))
                return list(db.execute(
                    f"SELECT name, value FROM counters WHERE name IN ({marks})", tuple(counts)
                ).fetchall())  # fmt: skip

        return {str(n): float(v) for n, v in self.retry(op)}

    def counters(self, prefix: str = "") -> dict[str, float]:
        """The counters whose name starts with ``prefix``."""
        rows = self.retry(
            lambda: self.connection().execute(
                "SELECT name, value FROM counters WHERE substr(name, 1, ?) = ?", (len(prefix), prefix)
            ).fetchall()
        )
        return {str(n): float(v) for n, v in rows}

    def close(self, *, delete: bool = False) -> None:
        """Close this process's connections; with ``delete``, remove the file (the controller,
        at the end of the session)."""
        super().close()
        if delete:
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    Path(str(self.path) + suffix).unlink()
