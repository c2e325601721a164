"""The one SQLite store base (pytest_vibecheck._store) shared by the four local stores."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from pytest_vibecheck._store import SQLiteStore
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.cache import ExecCache, ExecCacheError
from pytest_vibecheck.execute.calibrate import Calibrator
from pytest_vibecheck.generate.cache import CacheError, GenerationCache
from pytest_vibecheck.suites.selectors.base import SelectorError
from pytest_vibecheck.suites.selectors.llm import ReplyCache


class Notes(SQLiteStore):
    what = "notes store"

    def init_schema(self, conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT)")


def test_folder_gitignore_wal_and_one_connection_per_thread(tmp_path: Path) -> None:
    store = Notes(tmp_path / ".vibecheck" / "notes.sqlite")
    conn = store.connection()
    assert (tmp_path / ".vibecheck" / ".gitignore").read_text(encoding="utf-8").endswith("*\n")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.connection() is conn
    other: list[sqlite3.Connection] = []
    t = threading.Thread(target=lambda: other.append(store.connection()))
    t.start()
    t.join()
    assert other[0] is not conn
    with store.write() as w:
        w.execute("INSERT INTO notes VALUES ('a')")
    assert other[0].execute("SELECT text FROM notes").fetchall() == [("a",)]
    store.close()
    assert store.connection() is not conn


def test_retry_only_while_busy(tmp_path: Path) -> None:
    store = Notes(tmp_path / "n.sqlite", retries=3)
    calls: list[int] = []

    def busy_twice() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "done"

    assert store.retry(busy_twice) == "done"
    assert len(calls) == 3

    def broken() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("no such table: x")

    calls.clear()
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        store.retry(broken)
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("make", "error", "hint"),
    [
        (GenerationCache, CacheError, "--vibe-cache-mode off"),
        (ExecCache, ExecCacheError, "cached test results"),
        (ReplyCache, SelectorError, "cached selector replies"),
        (Notes, VibecheckError, "move it away or delete it"),
    ],
)
def test_an_unusable_file_is_the_stores_own_error(
    tmp_path: Path, make: type[SQLiteStore], error: type[Exception], hint: str
) -> None:
    bad = tmp_path / "not-a-db.sqlite"
    bad.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(error, match=f"{make.what} .*not-a-db.sqlite: not a usable SQLite database.*{hint}"):
        make(bad).connection()


def test_all_four_stores_share_the_base() -> None:
    for cls in (GenerationCache, ExecCache, Calibrator, ReplyCache):
        assert issubclass(cls, SQLiteStore)
        assert cls.what.endswith(("cache", "store"))
