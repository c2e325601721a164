"""One SQLite store base for every local store of pytest-vibecheck.

The generation cache (:mod:`pytest_vibecheck.generate.cache`), the execution result cache
(:mod:`pytest_vibecheck.execute.cache`), the calibration store
(:mod:`pytest_vibecheck.execute.calibrate`) and the LLM selector's reply cache
(:mod:`pytest_vibecheck.suites.selectors.llm`) share what :class:`SQLiteStore` does once:

- one connection per thread and process (a connection inherited through ``fork()`` is never used
  nor closed in the child, because SQLite forbids it and closing could disturb the parent's
  locks: it is kept referenced in :data:`_INHERITED` and a new one is opened);
- the folder is created on first use; a ``.vibecheck`` folder gets a ``.gitignore`` of ``*``;
- WAL journal, ``synchronous = NORMAL``, a busy timeout, and retries with jittered exponential
  backoff while another process holds the write lock (:meth:`SQLiteStore.retry`);
- an unusable file raises the store's own error class with a message that says what to do.

A store subclass sets :attr:`SQLiteStore.what` (its name in messages), :attr:`SQLiteStore.error`
(its :class:`~pytest_vibecheck.errors.VibecheckError` subclass) and :attr:`SQLiteStore.hint`
(what to do with a broken file), and creates its tables in :meth:`SQLiteStore.init_schema`.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar, TypeVar

from pytest_vibecheck.errors import VibecheckError

__all__ = ["SQLiteStore", "StoreWarning", "is_busy"]

T = TypeVar("T")

#: Connections inherited through fork(): kept referenced so they are never closed in the child.
_INHERITED: list[sqlite3.Connection] = []

GITIGNORE = "# created by pytest-vibecheck\n*\n"


class StoreWarning(UserWarning):
    """A store could not set up something optional (e.g. SQLite refused WAL mode)."""


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """True when ``exc`` means another connection holds the lock (worth a retry)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SQLiteStore:
    """A SQLite file with a connection per thread and process; see the module docstring.

    ``busy_timeout_s`` is how long SQLite itself waits for a lock (seconds); ``retries`` how
    many times :meth:`retry` retries an operation that still found the database busy.
    """

    what: ClassVar[str] = "store"
    error: ClassVar[type[VibecheckError]] = VibecheckError
    hint: ClassVar[str] = "move it away or delete it"

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout_s: float = 60.0, retries: int = 8
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self.retries = retries
        self._local = threading.local()
        self._all: list[tuple[int, sqlite3.Connection]] = []
        self._all_lock = threading.Lock()

    # -- for subclasses ---------------------------------------------------------

    def init_schema(self, conn: sqlite3.Connection) -> None:
        """Create the store's tables (called once per new connection, inside retries)."""

    # -- connections ------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection in this process, opened (and set up) on first use.

        Raises :attr:`error` when the folder cannot be created or the file is not a usable
        SQLite database (the message names the file and says what to do).
        """
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            if getattr(self._local, "pid", None) == os.getpid():
                return conn
            _INHERITED.append(conn)
        conn = self._open()
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._all_lock:
            self._all.append((os.getpid(), conn))
        return conn

    def ensure_folder(self) -> None:
        """Create the store's folder if absent (a ``.vibecheck`` folder with its ``.gitignore``);
        raises :attr:`error` when it cannot be created."""
        folder = self.path.parent
        if not folder.exists():
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self.error(f"{self.what} {self.path}: cannot create folder ({exc})") from None
            if folder.name == ".vibecheck":
                with contextlib.suppress(OSError):
                    (folder / ".gitignore").write_text(GITIGNORE, encoding="utf-8")

    def _open(self) -> sqlite3.Connection:
        self.ensure_folder()
        try:
            conn = sqlite3.connect(
                str(self.path),
                timeout=self.busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise self.error(f"{self.what} {self.path}: cannot open ({exc}); {self.hint}") from None
        try:
            self.retry(lambda: self._setup(conn))
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise self.error(
                f"{self.what} {self.path}: not a usable SQLite database ({exc}); {self.hint}"
            ) from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":  # pragma: no cover - e.g. a network file system
            warnings.warn(
                f"{self.what} {self.path}: SQLite refused WAL mode (got {mode!r}); concurrent "
                "runs may wait longer",
                StoreWarning,
                stacklevel=5,
            )
        conn.execute("PRAGMA synchronous = NORMAL")
        self.init_schema(conn)

    # -- operations -------------------------------------------------------------

    def retry(self, op: Callable[[], T]) -> T:
        """``op()``, retried with jittered exponential backoff (10 ms doubling to 1 s) while
        the database is busy, at most :attr:`retries` times; other errors propagate."""
        delay = 0.01
        for attempt in range(self.retries + 1):
            try:
                return op()
            except sqlite3.OperationalError as exc:  # noqa: PERF203 - a retry loop
                if not is_busy(exc) or attempt == self.retries:
                    raise
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)
        raise AssertionError("unreachable")  # pragma: no cover

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back on error)."""
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close this process's connections of every thread (idempotent)."""
        with self._all_lock:
            conns, self._all = self._all, []
        pid = os.getpid()
        for owner, conn in conns:
            if owner == pid:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            else:
                _INHERITED.append(conn)
        self._local = threading.local()
