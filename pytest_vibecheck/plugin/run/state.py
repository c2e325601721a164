"""Run-wide state shared by the controller and every xdist worker: one small SQLite file.

Two tables: ``stops`` (``scope`` = a model spec or ``*`` for the whole run, with the one-line
reason; the first reason written wins) and ``counters`` (named running sums: infrastructure
errors, API requests, tokens spent per model). Every process opens its own connection (WAL,
``busy_timeout``), so a fatal error on one worker stops the others before their next request,
without any private xdist attribute.

The file is :func:`state_path` (beside the generation cache, else in the temporary folder),
named after the run id that the controller hands to its workers; the controller deletes it
when the session ends. Connections, WAL and busy retries are :mod:`pytest_vibecheck._store`'s.

A controller that is killed (``kill -9``, a CI job cancelled) cannot delete it, so the
controller holds an exclusive ``flock`` on ``run-<id>.lock`` for as long as it lives (taken
before the state file exists; the kernel drops it when the process dies, however it dies), and
at its start removes every ``run-<id>.sqlite`` of the folder whose lock it can take: a run
whose controller is gone. A live run's lock is held, so its file is never touched. A state
file without a lock file (left by a version before the lock) is removed once it is a day old.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from pytest_vibecheck._store import SQLiteStore

__all__ = ["ALL", "RunState", "remove_stale_states", "state_path"]

#: Scope of a stop that applies to every model.
ALL = "*"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS stops (scope TEXT PRIMARY KEY, reason TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value REAL NOT NULL)",
)


#: The files of one run's state; only these are ever removed (the folder may be the shared
#: temporary folder: nothing else in it is touched).
_STATE_FILE = re.compile(r"run-(?P<id>[0-9a-f]{32})\.(?:sqlite(?:-wal|-shm)?|lock)")  # uuid4().hex
_SUFFIXES = (".sqlite", ".sqlite-wal", ".sqlite-shm")
#: Age (seconds) after which a state file without a lock file counts as stale.
UNLOCKED_STALE_S = 24 * 3600.0


def _lock_path(path: Path) -> Path:
    return path.with_suffix(".lock")


def _try_lock(path: Path) -> int | None:
    """An fd of ``path`` (created if absent) holding an exclusive flock, or None when another
    process holds it (or the lock cannot be taken here)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock, no clean-up
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _unlink_state(folder: Path, run_id: str) -> None:
    for suffix in _SUFFIXES:
        with contextlib.suppress(OSError):
            (folder / f"run-{run_id}{suffix}").unlink()


def remove_stale_states(folder: Path, *, keep: str = "", now: float | None = None) -> list[str]:
    """Remove the state of every run in ``folder`` whose controller is gone (its
    ``run-<id>.lock`` can be locked), except run ``keep``; returns the run ids removed, sorted.

    Never removes a live run's state (its controller holds the lock). A state without a lock
    file counts as gone once every one of its files is :data:`UNLOCKED_STALE_S` old. Files the
    process may not delete are left alone; nothing here raises.
    """
    try:
        names = [entry.name for entry in Path(folder).iterdir()]
    except OSError:
        return []
    ids = {m["id"] for m in map(_STATE_FILE.fullmatch, names) if m is not None} - {keep}
    now = time.time() if now is None else now
    removed: list[str] = []
    for run_id in sorted(ids):
        lock = folder / f"run-{run_id}.lock"
        if not lock.exists():
            files = [folder / f"run-{run_id}{suffix}" for suffix in _SUFFIXES]
            ages: list[float] = []
            for f in files:
                with contextlib.suppress(OSError):  # absent, or removed meanwhile
                    ages.append(now - f.stat().st_mtime)
            if ages and min(ages) >= UNLOCKED_STALE_S:
                _unlink_state(folder, run_id)
                removed.append(run_id)
            continue
        fd = _try_lock(lock)
        if fd is None:
            continue  # a live run
        try:
            _unlink_state(folder, run_id)
            with contextlib.suppress(OSError):
                lock.unlink()
        finally:
            os.close(fd)
        removed.append(run_id)
    return removed


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

    def __init__(self, path: Path, *, owner: bool = False) -> None:
        """``owner``: this is the run's controller: it holds the run's lock until
        :meth:`close` and removes the states of dead runs beside it
        (:func:`remove_stale_states`)."""
        super().__init__(path, busy_timeout_s=30.0)
        #: stops already seen by this process (a stop is never lifted)
        self._known: dict[str, str] = {}
        self._lock_fd: int | None = None
        #: the ids of dead runs whose state this controller removed at its start
        self.removed_stale: list[str] = []
        if owner:
            run_id = self.path.stem.removeprefix("run-")
            self.ensure_folder()
            self._lock_fd = _try_lock(_lock_path(self.path))  # before the state file exists
            self.removed_stale = remove_stale_states(self.path.parent, keep=run_id)

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
        if self._lock_fd is not None:  # the owner: its lock file goes last, while still held
            if delete:
                with contextlib.suppress(OSError):
                    _lock_path(self.path).unlink()
            os.close(self._lock_fd)
            self._lock_fd = None
