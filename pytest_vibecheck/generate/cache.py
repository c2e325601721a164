"""The generation cache: model replies in one SQLite file (WAL mode), safe under many processes.

Key (:func:`cache_key`) = sha256 of the canonical JSON (``sort_keys``) of everything that
changes the reply: the cache schema version, :data:`~pytest_vibecheck.generate.protocols.PROMPT_VERSION`,
the run's profile (``paper``, ``lcb``),
the backend identity (provider, model, base URL without credentials), the messages, the
temperature, ``max_tokens``, the other sampling parameters of ``request.extra`` and the
sample index when the temperature is above 0. Left out on purpose (:data:`EXCLUDED_PARAMS`):
timeouts, retries, concurrency, and anything that looks like a credential - such values never
reach the file.

Concurrency: every process opens its own connection; WAL lets readers run beside the one
writer; ``busy_timeout`` makes writers wait instead of failing; writes are single short
``BEGIN IMMEDIATE`` transactions, retried with backoff on ``SQLITE_BUSY``. A process killed
with ``kill -9`` loses at most its uncommitted row; every committed row survives and
``PRAGMA integrity_check`` stays ``ok`` (tested).

Modes (:data:`CACHE_MODES`): ``use`` (read, write on miss), ``refresh`` (ignore rows from
earlier runs, overwrite), ``only`` (a miss is :class:`CacheMissError`: offline CI), ``off``
(no file at all). The modes are applied by :class:`pytest_vibecheck.generate.generator.Generator`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pytest_vibecheck._store import SQLiteStore
from pytest_vibecheck.errors import ParameterError, VibecheckError
from pytest_vibecheck.generate.backends.base import (
    EXCLUDED_PARAMS,
    Generation,
    GenerationError,
    GenerationRequest,
    canonical_json,
    is_secret_name,
    messages_fingerprint,
    redact_url,
)
from pytest_vibecheck.generate.protocols import PROMPT_VERSION
from pytest_vibecheck.types import CACHE_MODES, CacheMode

__all__ = [
    "CACHE_MODES",
    "CACHE_SCHEMA_VERSION",
    "DEFAULT_CACHE_PATH",
    "EXCLUDED_PARAMS",
    "PROMPT_VERSION",
    "CacheError",
    "CacheMissError",
    "CacheMode",
    "CacheStats",
    "CacheWarning",
    "CachedGeneration",
    "GenerationCache",
    "cache_key",
    "key_components",
    "owner_gone",
    "sampling_params",
    "validate_cache_mode",
]

log = logging.getLogger(__name__)

#: Version of the key recipe and table layout; bump to invalidate every cached reply.
CACHE_SCHEMA_VERSION = 1


DEFAULT_CACHE_PATH = Path(".vibecheck") / "cache.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS generations (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    task_id TEXT,
    label TEXT,
    reply TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    finish_reason TEXT,
    response_model TEXT,
    created_at REAL NOT NULL,
    run_id TEXT,
    request TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

#: Keys being generated right now (see :meth:`GenerationCache.claim`); not part of the schema
#: version: an older file gets the table on open.
_CLAIMS = (
    "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)"
)


def owner_gone(owner: str) -> bool:
    """True when ``owner`` (``host:pid:token``) is a process of this host that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


T = TypeVar("T")

#: Connections inherited through ``fork()``; never used nor closed in the child.


class CacheError(VibecheckError):
    """The cache file cannot be opened or is not a vibecheck cache; the message says what to do."""


class CacheMissError(GenerationError):
    """Cache mode ``only``: the reply is not in the cache (offline run)."""


class CacheWarning(UserWarning):
    """A cache read or write failed at run time; the run continues without that entry."""


def validate_cache_mode(value: str, where: str = "--vibe-cache-mode") -> CacheMode:
    """``value`` if it is one of ``use|refresh|only|off``; else ParameterError naming ``where``."""
    if value not in CACHE_MODES:
        raise ParameterError(
            f"{where}: unknown cache mode {value!r}; expected one of {', '.join(CACHE_MODES)}"
        )
    return value


# ---------------------------------------------------------------- the key


def sampling_params(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` without :data:`EXCLUDED_PARAMS` and secret-looking names (sorted by key).

    Raises ParameterError for a value that is not JSON-serialisable.
    """
    out: dict[str, Any] = {}
    for name in sorted(extra):
        if name in EXCLUDED_PARAMS or is_secret_name(name):
            continue
        value = extra[name]
        try:
            canonical_json(value)
        except (TypeError, ValueError) as exc:
            raise ParameterError(
                f"sampling parameter {name!r} = {value!r} is not JSON-serialisable ({exc})"
            ) from None
        out[name] = value
    return out


def key_components(identity: Mapping[str, Any], request: GenerationRequest) -> dict[str, Any]:
    """The dict whose canonical JSON is hashed into the cache key (see the module docstring).

    ``identity`` is :meth:`Backend.cache_identity` (``provider``, ``model``, ``base_url`` and
    any other entries a backend adds; secret-looking entries are dropped).
    """
    backend = {
        k: (redact_url(v) if k == "base_url" and isinstance(v, str) else v)
        for k, v in sorted(identity.items())
        if not is_secret_name(k)
    }
    temperature = float(request.temperature)
    return {
        "schema": CACHE_SCHEMA_VERSION,
        "prompt_version": PROMPT_VERSION,
        "profile": request.profile,
        "backend": backend,
        "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages],
        "temperature": temperature,
        "max_tokens": request.max_tokens,
        "params": sampling_params(request.extra),
        "sample": request.sample if temperature > 0 else 0,
    }


def cache_key(identity: Mapping[str, Any], request: GenerationRequest) -> str:
    """sha256 hex digest of :func:`key_components` (64 characters)."""
    components = key_components(identity, request)
    digest = hashlib.sha256(canonical_json(components).encode("utf-8")).hexdigest()
    if log.isEnabledFor(logging.DEBUG):
        trace = {k: v for k, v in components.items() if k != "messages"}
        log.debug("cache key %s for %s: %s", digest[:12], request.describe(), canonical_json(trace))
    return digest


# ---------------------------------------------------------------- stored rows


@dataclass(frozen=True)
class CachedGeneration:
    """One stored reply. ``created_at``: Unix time in seconds. ``run_id``: the run that
    wrote it (used by mode ``refresh``)."""

    key: str
    reply: str
    input_tokens: int
    output_tokens: int
    latency_s: float
    finish_reason: str | None
    model: str
    created_at: float
    run_id: str | None

    def to_generation(self, *, cached: bool = True) -> Generation:
        """As a :class:`Generation` (``cached=True`` by default)."""
        return Generation(
            text=self.reply,
            usage={"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            latency_s=self.latency_s,
            model=self.model,
            cached=cached,
            finish_reason=self.finish_reason,
            key=self.key,
        )


@dataclass
class CacheStats:
    """Summary of a cache file (``vibecheck cache stats``). Token counts are sums over rows."""

    path: str
    entries: int
    size_bytes: int
    input_tokens: int
    output_tokens: int
    by_model: dict[str, int] = field(default_factory=dict)
    by_label: dict[str, int] = field(default_factory=dict)
    oldest: float | None = None
    newest: float | None = None
    schema: int = CACHE_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Builtins only."""
        return {
            "path": self.path,
            "schema": self.schema,
            "entries": self.entries,
            "size_bytes": self.size_bytes,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "by_model": dict(self.by_model),
            "by_label": dict(self.by_label),
            "oldest": self.oldest,
            "newest": self.newest,
        }


class GenerationCache(SQLiteStore):
    """The SQLite generation cache at ``path`` (created with its folder if absent).

    One connection per thread and process (:class:`~pytest_vibecheck._store.SQLiteStore`).
    ``busy_timeout_s``: how long SQLite waits for the write lock before reporting busy; on
    top of that each operation is retried ``retries`` times with backoff and jitter.

    Raises :class:`CacheError` if the file exists but is not an SQLite database or was
    written by another cache schema version.
    """

    what = "generation cache"
    error = CacheError
    hint = (
        "move it away or delete it (it only holds cached replies), or use --vibe-cache-mode off"
    )

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 60.0, retries: int = 8) -> None:
        super().__init__(path, busy_timeout_s=busy_timeout_s, retries=retries)
        self._lock = threading.RLock()
        self.connection()

    # -- connection -------------------------------------------------------

    def init_schema(self, conn: sqlite3.Connection) -> None:
        """Create the tables of a new file; :class:`CacheError` for another schema version."""
        has_table = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not has_table:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', ?)",
                    (str(CACHE_SCHEMA_VERSION),),
                )
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if row is None or row[0] != str(CACHE_SCHEMA_VERSION):
            found = "none" if row is None else row[0]
            raise CacheError(
                f"generation cache {self.path}: written with cache schema {found}, this version "
                f"uses {CACHE_SCHEMA_VERSION}; move the file away or delete it"
            )
        conn.execute(_CLAIMS)

    # -- reading and writing -----------------------------------------------

    _COLUMNS = "key, reply, input_tokens, output_tokens, latency_s, finish_reason, response_model, created_at, run_id"

    @staticmethod
    def _row(row: tuple[Any, ...]) -> CachedGeneration:
        return CachedGeneration(
            key=row[0],
            reply=row[1],
            input_tokens=int(row[2]),
            output_tokens=int(row[3]),
            latency_s=float(row[4]),
            finish_reason=row[5],
            model=row[6] or "",
            created_at=float(row[7]),
            run_id=row[8],
        )

    def get(self, key: str) -> CachedGeneration | None:
        """The stored reply for ``key``, or None. Raises ``sqlite3.Error`` after retries."""

        def op() -> CachedGeneration | None:
            with self._lock:
                row = self.connection().execute(
                    f"SELECT {self._COLUMNS} FROM generations WHERE key = ?", (key,)
                ).fetchone()
            return None if row is None else self._row(row)

        return self.retry(op)

    def put(
        self,
        key: str,
        generation: Generation,
        *,
        identity: Mapping[str, Any],
        request: GenerationRequest,
        run_id: str | None = None,
        replace: bool = False,
    ) -> CachedGeneration:
        """Store ``generation`` under ``key`` and return the stored row.

        Without ``replace`` the first writer wins: if another process stored this key
        meanwhile, its row is kept and returned, so every item of a run sees the same reply
        (e.g. the baseline item and multi-turn turn 0). With ``replace`` (mode ``refresh``)
        a row written by another ``run_id`` is overwritten, while within one run the first
        writer still wins. Stored: the reply, usage, latency, finish reason, model, time,
        run id, task id, label, and the key components (sampling parameters, backend identity;
        the messages as their :func:`messages_fingerprint` and count; no credentials).
        """
        components = key_components(identity, request)
        # The messages are summarised by their fingerprint (the replay's request_hash): the
        # full history would make multi-turn rows several times larger than the reply.
        components["messages"] = {
            "sha256": messages_fingerprint(request.messages),
            "count": len(request.messages),
        }
        now = time.time()
        values = (
            key,
            str(identity.get("provider", "")),
            str(identity.get("model", "")),
            request.task_id,
            request.label,
            generation.text,
            generation.input_tokens,
            generation.output_tokens,
            float(generation.latency_s),
            generation.finish_reason,
            generation.model,
            now,
            run_id,
            canonical_json(components),
        )
        columns = (
            "key, provider, model, task_id, label, reply, input_tokens, output_tokens, "
            "latency_s, finish_reason, response_model, created_at, run_id, request"
        )
        sql = f"INSERT INTO generations ({columns}) VALUES ({', '.join('?' * 14)}) ON CONFLICT(key) "
        if replace:
            updates = ", ".join(f"{c} = excluded.{c}" for c in columns.split(", ")[1:])
            sql += f"DO UPDATE SET {updates} WHERE generations.run_id IS NOT excluded.run_id"
        else:
            sql += "DO NOTHING"

        def op() -> CachedGeneration:
            with self._lock, self.write() as conn:
                conn.execute(sql, values)
                row = conn.execute(
                    f"SELECT {self._COLUMNS} FROM generations WHERE key = ?", (key,)
                ).fetchone()
            return self._row(row)

        return self.retry(op)

    # -- claims: one distinct request sent once across processes ----------------------------

    def claim(self, key: str, owner: str, *, ttl_s: float) -> bool:
        """Claim ``key`` for ``owner`` before generating it: True when ``owner`` holds the claim
        now, False while another live owner does. A claim older than ``ttl_s`` seconds, or one
        whose owner process (``host:pid:token``) has exited, is taken over. Raises
        ``sqlite3.Error`` after retries."""

        def op() -> bool:
            with self._lock, self.write() as conn:
                now = time.time()
                row = conn.execute("SELECT owner, expires FROM claims WHERE key = ?", (key,)).fetchone()
                if row is not None and row[0] != owner and row[1] >= now and not owner_gone(row[0]):
                    return False
                conn.execute(
                    "INSERT INTO claims (key, owner, expires) VALUES (?, ?, ?) ON CONFLICT(key) "
                    "DO UPDATE SET owner = excluded.owner, expires = excluded.expires",
                    (key, owner, now + ttl_s),
                )
                return True

        return self.retry(op)

    def release(self, key: str, owner: str) -> None:
        """End ``owner``'s claim on ``key`` (no-op if it holds none)."""

        def op() -> None:
            with self._lock, self.write() as conn:
                conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

        self.retry(op)

    def claimed(self, key: str) -> bool:
        """True while a live claim on ``key`` exists."""

        def op() -> bool:
            with self._lock:
                row = self.connection().execute(
                    "SELECT owner, expires FROM claims WHERE key = ?", (key,)
                ).fetchone()
            return row is not None and row[1] >= time.time() and not owner_gone(row[0])

        return self.retry(op)

    def __len__(self) -> int:
        with self._lock:
            n = self.retry(lambda: self.connection().execute("SELECT COUNT(*) FROM generations").fetchone()[0])
        return int(n)

    def keys(self) -> list[str]:
        """All keys (sorted)."""
        with self._lock:
            rows = self.retry(lambda: self.connection().execute("SELECT key FROM generations ORDER BY key").fetchall())
        return [r[0] for r in rows]

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every stored row as a dict of builtins (all columns; ``request`` is canonical JSON)."""
        with self._lock:
            cur = self.connection().execute("SELECT * FROM generations ORDER BY key")
            names = [d[0] for d in cur.description]
            data = cur.fetchall()
        for row in data:
            yield dict(zip(names, row, strict=True))

    def stats(self) -> CacheStats:
        """Entry counts, token sums, per-model and per-label counts, file size."""
        with self._lock:
            conn = self.connection()
            n, tin, tout, oldest, newest = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
                "MIN(created_at), MAX(created_at) FROM generations"
            ).fetchone()
            by_model = {
                f"{p}:{m}" if m else p: c
                for p, m, c in conn.execute(
                    "SELECT provider, model, COUNT(*) FROM generations GROUP BY provider, model ORDER BY 1, 2"
                )
            }
            by_label = {
                (lab or "-"): c
                for lab, c in conn.execute(
                    "SELECT label, COUNT(*) FROM generations GROUP BY label ORDER BY 1"
                )
            }
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(str(self.path) + "-wal"), Path(str(self.path) + "-shm"))
            if p.exists()
        )
        return CacheStats(
            path=str(self.path),
            entries=int(n),
            size_bytes=size,
            input_tokens=int(tin),
            output_tokens=int(tout),
            by_model=by_model,
            by_label=by_label,
            oldest=oldest,
            newest=newest,
        )

    def integrity_check(self) -> str:
        """Result of ``PRAGMA integrity_check`` (``"ok"`` when the file is sound)."""
        with self._lock:
            rows = self.connection().execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)

    def close(self) -> None:
        """Close this process's connections (idempotent)."""
        with self._lock:
            super().close()

    def __enter__(self) -> GenerationCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
