"""The batch ledger: the provider batches of a project, kept in the generation cache's own file.

A run in batch mode (``--vibe-batch``, :mod:`pytest_vibecheck.generate.batcher`) records every
batch it submits here before it waits for it, so a run stopped by Ctrl-C or killed resumes
polling the same batches when it is run again, and nothing is submitted twice. Two tables
beside ``generations`` in the same SQLite file (created on first use, so older cache files
gain them without a schema change):

- ``batches``: one row per provider batch: ``id`` (the provider's batch id, or ``local-...``
  while its submission is under way), ``provider``, ``model``, ``base_url`` (no credentials),
  ``identity`` (the backend's cache identity as canonical JSON), ``status`` (the provider's own
  word: ``validating``, ``in_progress``, ``ended``, ...), ``counts`` (the provider's request
  counts, JSON), ``created_at`` / ``expires_at`` (Unix seconds), ``ended`` (1 once the provider
  says it is over), ``collected`` (1 once its results are in the cache), ``owner``
  (``host:pid:token`` of the process submitting or collecting it), ``next_poll`` (Unix seconds:
  the next look at the provider, shared by every process so that one of them polls);
- ``batch_requests``: one row per request of a batch: ``custom_id`` (the generation-cache key,
  64 hex characters), ``request`` (the request's JSON, :func:`request_to_json`: enough to store
  its reply in the cache from any process), and once collected ``outcome`` (``ok``, ``retry``:
  expired, cancelled or a transient error, worth sending again; ``error``: final) and ``error``
  (the message).

Every method raises ``sqlite3.Error`` after the store's retries.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.generate.backends.base import GenerationRequest, canonical_json

if TYPE_CHECKING:
    from pytest_vibecheck.generate.cache import GenerationCache

__all__ = ["OUTCOMES", "BatchLedger", "BatchRow", "Failure", "request_from_json", "request_to_json"]

#: What became of a request of a collected batch.
OUTCOMES = ("ok", "retry", "error")

_TABLES = (
    "CREATE TABLE IF NOT EXISTS batches (id TEXT PRIMARY KEY, provider TEXT NOT NULL, "
    "model TEXT NOT NULL, base_url TEXT, identity TEXT NOT NULL, status TEXT NOT NULL, "
    "counts TEXT NOT NULL DEFAULT '{}', created_at REAL NOT NULL, expires_at REAL, "
    "ended INTEGER NOT NULL DEFAULT 0, collected INTEGER NOT NULL DEFAULT 0, owner TEXT, "
    "next_poll REAL NOT NULL DEFAULT 0, requests INTEGER NOT NULL DEFAULT 0, collected_at REAL)",
    "CREATE TABLE IF NOT EXISTS batch_requests (batch_id TEXT NOT NULL, custom_id TEXT NOT NULL, "
    "request TEXT NOT NULL, outcome TEXT, error TEXT, status INTEGER, "
    "PRIMARY KEY (batch_id, custom_id))",
    "CREATE INDEX IF NOT EXISTS batch_requests_key ON batch_requests (custom_id)",
    "CREATE TABLE IF NOT EXISTS batch_fresh (custom_id TEXT NOT NULL, run_id TEXT NOT NULL, "
    "PRIMARY KEY (custom_id, run_id))",
)

_ROW = "id, provider, model, base_url, status, counts, created_at, expires_at, ended, collected, requests"


def request_to_json(request: GenerationRequest) -> str:
    """``request`` as canonical JSON: messages, sampling parameters, sample, metadata (task id,
    label, profile); never the reference solution (the cache stores none either)."""
    return canonical_json(
        {
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "sample": request.sample,
            "extra": dict(request.extra),
            "task_id": request.task_id,
            "label": request.label,
            "profile": request.profile,
        }
    )


def request_from_json(text: str) -> GenerationRequest:
    """The :class:`GenerationRequest` that :func:`request_to_json` wrote."""
    data = json.loads(text)
    return GenerationRequest(
        messages=tuple(data["messages"]),
        temperature=data["temperature"],
        max_tokens=data["max_tokens"],
        sample=data["sample"],
        extra=data["extra"],
        task_id=data["task_id"],
        label=data["label"],
        profile=data["profile"],
    )


@dataclass(frozen=True)
class BatchRow:
    """One row of ``batches`` (see the module docstring); times in Unix seconds."""

    id: str
    provider: str
    model: str
    base_url: str | None
    status: str
    counts: dict[str, int]
    created_at: float
    expires_at: float | None
    ended: bool
    collected: bool
    requests: int

    @property
    def submitted(self) -> bool:
        """False while the submission is under way (a ``local-`` placeholder)."""
        return not self.id.startswith("local-")


@dataclass(frozen=True)
class Failure:
    """A request of a collected batch that got no reply: ``outcome`` ``retry`` or ``error``,
    the provider's message, the HTTP status of the request when the provider gave one."""

    batch_id: str
    outcome: str
    message: str
    status: int | None


class BatchLedger:
    """The batches of the generation cache ``cache`` (its file, its connections and retries).
    ``is_gone(owner)`` says whether a ``host:pid:token`` owner has exited (the cache's claims
    use the same test)."""

    def __init__(self, cache: GenerationCache) -> None:
        from pytest_vibecheck.generate.cache import owner_gone

        self.cache = cache
        self.is_gone = owner_gone

        def op() -> None:
            with cache.write() as conn:
                for statement in _TABLES:
                    conn.execute(statement)

        cache.retry(op)

    # -- submission ---------------------------------------------------------------

    def reserve(
        self,
        identity: Mapping[str, Any],
        entries: Sequence[tuple[str, GenerationRequest]],
        owner: str,
    ) -> tuple[str, list[str]]:
        """Reserve ``entries`` (``(key, request)``) for one batch that ``owner`` submits now:
        in one write transaction, the keys already in a batch not yet collected (this or another
        process, this or an earlier run) are left out, the rest is recorded under a placeholder
        id ``local-...``. Placeholders of exited owners are removed first (a submission that
        died half-way). Returns ``(placeholder id, keys reserved)``; no row when none is left."""
        placeholder = f"local-{uuid.uuid4().hex}"
        ident = canonical_json(dict(identity))

        def op() -> list[str]:
            with self.cache.write() as conn:
                for bid, who in conn.execute(
                    "SELECT id, owner FROM batches WHERE id LIKE 'local-%'"
                ).fetchall():
                    if who is None or self.is_gone(who):
                        conn.execute("DELETE FROM batch_requests WHERE batch_id = ?", (bid,))
                        conn.execute("DELETE FROM batches WHERE id = ?", (bid,))
                busy = {
                    r[0]
                    for r in conn.execute(
                        "SELECT r.custom_id FROM batch_requests r JOIN batches b ON b.id = r.batch_id "
                        "WHERE b.collected = 0 AND b.identity = ?",
                        (ident,),
                    )
                }
                taken: list[str] = []
                seen: set[str] = set()
                for key, request in entries:
                    if key in busy or key in seen:
                        continue
                    seen.add(key)
                    taken.append(key)
                    conn.execute(
                        "INSERT INTO batch_requests (batch_id, custom_id, request) VALUES (?, ?, ?)",
                        (placeholder, key, request_to_json(request)),
                    )
                if taken:
                    conn.execute(
                        "INSERT INTO batches (id, provider, model, base_url, identity, status, "
                        "created_at, owner, requests) VALUES (?, ?, ?, ?, ?, 'submitting', ?, ?, ?)",
                        (
                            placeholder,
                            str(identity.get("provider", "")),
                            str(identity.get("model", "")),
                            identity.get("base_url"),
                            ident,
                            time.time(),
                            owner,
                            len(taken),
                        ),
                    )
                return taken

        return placeholder, self.cache.retry(op)

    def submitted(self, placeholder: str, batch_id: str, status: str, counts: Mapping[str, int],
                  expires_at: float | None, created_at: float | None = None) -> None:
        """The provider accepted the batch: the placeholder becomes ``batch_id``."""

        def op() -> None:
            with self.cache.write() as conn:
                conn.execute(
                    "UPDATE batches SET id = ?, status = ?, counts = ?, expires_at = ?, "
                    "created_at = COALESCE(?, created_at), owner = NULL WHERE id = ?",
                    (batch_id, status, json.dumps(dict(counts)), expires_at, created_at, placeholder),
                )
                conn.execute("UPDATE batch_requests SET batch_id = ? WHERE batch_id = ?", (batch_id, placeholder))

        self.cache.retry(op)

    def abandon(self, placeholder: str) -> None:
        """The submission failed: forget the placeholder and its requests."""

        def op() -> None:
            with self.cache.write() as conn:
                conn.execute("DELETE FROM batch_requests WHERE batch_id = ?", (placeholder,))
                conn.execute("DELETE FROM batches WHERE id = ?", (placeholder,))

        self.cache.retry(op)

    # -- waiting ------------------------------------------------------------------

    def sweep(self) -> None:
        """Remove the placeholders of submissions whose process exited half-way."""

        def op() -> None:
            with self.cache.write() as conn:
                for bid, who in conn.execute("SELECT id, owner FROM batches WHERE id LIKE 'local-%'").fetchall():
                    if who is None or self.is_gone(who):
                        conn.execute("DELETE FROM batch_requests WHERE batch_id = ?", (bid,))
                        conn.execute("DELETE FROM batches WHERE id = ?", (bid,))

        self.cache.retry(op)

    def open_keys(self, identity: Mapping[str, Any]) -> dict[str, str]:
        """Key -> batch id of every request in a batch of ``identity`` not yet collected
        (placeholders included)."""
        ident = canonical_json(dict(identity))
        rows = self.cache.retry(
            lambda: self.cache.connection().execute(
                "SELECT r.custom_id, b.id FROM batch_requests r JOIN batches b ON b.id = r.batch_id "
                "WHERE b.collected = 0 AND b.identity = ?",
                (ident,),
            ).fetchall()
        )
        return dict(rows)

    def batches(self, *, open_only: bool = True) -> list[BatchRow]:
        """Every batch of the file (only those not yet collected with ``open_only``), oldest first."""
        where = "WHERE collected = 0" if open_only else ""

        def op() -> list[BatchRow]:
            rows = self.cache.connection().execute(
                f"SELECT {_ROW} FROM batches {where} ORDER BY created_at"
            ).fetchall()
            return [_row(r) for r in rows]

        return self.cache.retry(op)

    def get(self, batch_id: str) -> BatchRow | None:
        """The row of ``batch_id``, or None."""

        def op() -> BatchRow | None:
            row = self.cache.connection().execute(
                f"SELECT {_ROW} FROM batches WHERE id = ?", (batch_id,)
            ).fetchone()
            return None if row is None else _row(row)

        return self.cache.retry(op)

    def identity_of(self, batch_id: str) -> dict[str, Any]:
        """The backend identity a batch was submitted with."""
        row = self.cache.retry(
            lambda: self.cache.connection().execute(
                "SELECT identity FROM batches WHERE id = ?", (batch_id,)
            ).fetchone()
        )
        return dict(json.loads(row[0])) if row else {}

    def take_poll(self, batch_id: str, interval_s: float) -> bool:
        """True when this process may look at ``batch_id`` at the provider now (then the next
        look of any process is ``interval_s`` seconds away): one poll per interval in all."""

        def op() -> bool:
            with self.cache.write() as conn:
                now = time.time()
                cur = conn.execute(
                    "UPDATE batches SET next_poll = ? WHERE id = ? AND next_poll <= ? AND ended = 0",
                    (now + interval_s, batch_id, now),
                )
                return cur.rowcount == 1

        return self.cache.retry(op)

    def update(self, batch_id: str, status: str, counts: Mapping[str, int], *, ended: bool,
               expires_at: float | None = None) -> None:
        """What the provider said of ``batch_id``."""

        def op() -> None:
            with self.cache.write() as conn:
                conn.execute(
                    "UPDATE batches SET status = ?, counts = ?, ended = MAX(ended, ?), "
                    "expires_at = COALESCE(?, expires_at) WHERE id = ?",
                    (status, json.dumps(dict(counts)), int(ended), expires_at, batch_id),
                )

        self.cache.retry(op)

    # -- collecting ---------------------------------------------------------------

    def take_collect(self, batch_id: str, owner: str) -> bool:
        """True when ``owner`` is now the one process that downloads the results of the ended
        batch ``batch_id`` (a collector that exited is taken over)."""

        def op() -> bool:
            with self.cache.write() as conn:
                row = conn.execute(
                    "SELECT owner FROM batches WHERE id = ? AND ended = 1 AND collected = 0", (batch_id,)
                ).fetchone()
                if row is None or (row[0] not in (None, owner) and not self.is_gone(row[0])):
                    return False
                conn.execute("UPDATE batches SET owner = ? WHERE id = ?", (owner, batch_id))
                return True

        return self.cache.retry(op)

    def release_collect(self, batch_id: str, owner: str) -> None:
        """``owner`` gives up collecting ``batch_id`` (the download failed; another look later)."""

        def op() -> None:
            with self.cache.write() as conn:
                conn.execute("UPDATE batches SET owner = NULL WHERE id = ? AND owner = ?", (batch_id, owner))

        self.cache.retry(op)

    def requests_of(self, batch_id: str) -> dict[str, GenerationRequest]:
        """The requests of ``batch_id`` by custom id (the cache key)."""
        rows = self.cache.retry(
            lambda: self.cache.connection().execute(
                "SELECT custom_id, request FROM batch_requests WHERE batch_id = ?", (batch_id,)
            ).fetchall()
        )
        return {cid: request_from_json(text) for cid, text in rows}

    def collected(self, batch_id: str, failures: Mapping[str, tuple[str, str, int | None]]) -> None:
        """The results of ``batch_id`` are in the cache: every request ``ok`` except
        ``failures`` (custom id -> ``(outcome, message, HTTP status or None)``)."""

        def op() -> None:
            with self.cache.write() as conn:
                conn.execute(
                    "UPDATE batch_requests SET outcome = 'ok' WHERE batch_id = ? AND outcome IS NULL", (batch_id,)
                )
                for cid, (outcome, message, status) in failures.items():
                    conn.execute(
                        "UPDATE batch_requests SET outcome = ?, error = ?, status = ? "
                        "WHERE batch_id = ? AND custom_id = ?",
                        (outcome, message, status, batch_id, cid),
                    )
                conn.execute(
                    "UPDATE batches SET collected = 1, owner = NULL, collected_at = ? WHERE id = ?",
                    (time.time(), batch_id),
                )

        self.cache.retry(op)

    def failures(self, key: str, since: float = 0.0) -> list[Failure]:
        """The failures of the request ``key`` in batches collected at or after ``since`` (Unix
        seconds), oldest first."""
        rows = self.cache.retry(
            lambda: self.cache.connection().execute(
                "SELECT r.batch_id, r.outcome, r.error, r.status FROM batch_requests r "
                "JOIN batches b ON b.id = r.batch_id WHERE r.custom_id = ? AND b.collected = 1 "
                "AND b.collected_at >= ? AND r.outcome IN ('retry', 'error') ORDER BY b.collected_at",
                (key, since),
            ).fetchall()
        )
        return [Failure(bid, outcome, error or "", status) for bid, outcome, error, status in rows]

    def forget(self, batch_id: str, why: str) -> None:
        """Mark ``batch_id`` over without results (the provider no longer knows it): its
        requests not collected count as ``retry``, with the message ``why``."""

        def op() -> None:
            with self.cache.write() as conn:
                conn.execute(
                    "UPDATE batch_requests SET outcome = 'retry', error = ? "
                    "WHERE batch_id = ? AND outcome IS NULL",
                    (why, batch_id),
                )
                conn.execute(
                    "UPDATE batches SET collected = 1, ended = 1, owner = NULL, collected_at = ? WHERE id = ?",
                    (time.time(), batch_id),
                )

        self.cache.retry(op)


    # -- first use of a batch reply -------------------------------------------------

    def mark_fresh(self, run_id: str, keys: Iterable[str]) -> None:
        """The replies of ``keys`` were generated by run ``run_id``'s batches: the first item of
        that run to read each one reads it as generated, not as a cache hit (as the first direct
        request of a reply is)."""

        def op() -> None:
            with self.cache.write() as conn:
                conn.executemany(
                    "INSERT OR IGNORE INTO batch_fresh (custom_id, run_id) VALUES (?, ?)",
                    [(k, run_id) for k in keys],
                )

        self.cache.retry(op)

    def take_fresh(self, run_id: str, key: str) -> bool:
        """True for the first reader (of every process of run ``run_id``) of a reply marked by
        :meth:`mark_fresh`."""

        def op() -> bool:
            with self.cache.write() as conn:
                cur = conn.execute("DELETE FROM batch_fresh WHERE custom_id = ? AND run_id = ?", (key, run_id))
                return cur.rowcount == 1

        return self.cache.retry(op)


def _row(row: tuple[Any, ...]) -> BatchRow:
    return BatchRow(
        id=row[0],
        provider=row[1],
        model=row[2],
        base_url=row[3],
        status=row[4],
        counts={str(k): int(v) for k, v in json.loads(row[5] or "{}").items()},
        created_at=float(row[6]),
        expires_at=None if row[7] is None else float(row[7]),
        ended=bool(row[8]),
        collected=bool(row[9]),
        requests=int(row[10]),
    )
