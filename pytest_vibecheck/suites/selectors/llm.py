"""LLM selectors (``anthropic:MODEL``, ``openai:MODEL``): the paper's procedure (§3.1).

One request per task: the query and the task's permuted instruction list; the model scans
the list once, keeps relevant, non-conflicting instructions up to k, and proposes
parameters. The reply is parsed and validated by :func:`~pytest_vibecheck.suites.augment.augment_problem`
(ids not in the taxonomy dropped, invalid parameters reset to the default, conflicts
re-checked), so a sloppy reply never produces an invalid task.

The selector asks its model through a :class:`SelectorModel` it is given: the generation
layer's :class:`pytest_vibecheck.generate.chat.ChatModel` on the model backend of the selector's
spec (``openai:gpt-4o`` builds the backend ``--vibe-model openai:gpt-4o`` would; the built-ins
build it, :mod:`pytest_vibecheck.compose.builtins`), so the key lookup, the SDK's retries, the
adaptive concurrency limit and the error classes are the generation layer's. A selector reports
such a failure as :class:`SelectorError` with the backend's one-line message (the backend error
is its ``__cause__``): the task fails, never "fewer instructions".

Replies are cached in SQLite (:class:`ReplyCache`, on :class:`~pytest_vibecheck._store.SQLiteStore`)
under the model's key of the request (:meth:`SelectorModel.key`: the generation cache's key,
backend identity, messages, sampling settings; never the API key), so a re-run costs nothing and
needs neither a key nor an SDK. Only parseable replies are cached.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from pytest_vibecheck._store import SQLiteStore
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.selectors.base import Judgement, SelectorError, TaskJudgements
from pytest_vibecheck.verify.instructions import Instruction
from pytest_vibecheck.verify.params import render_prompt

#: Bump when the prompt changes (it is part of the cache key and the provenance).
PROMPT_VERSION = "llm-prompt-1"

DEFAULT_CACHE = Path(".vibecheck") / "selector-cache.sqlite"

SYSTEM_PROMPT = (
    "You are an expert code analysis assistant. You decide which coding instructions are "
    "relevant to a user's coding query and do not conflict with instructions already chosen. "
    "Be precise and analytical; answer with the requested JSON only."
)


def build_prompt(problem: Problem, order: Sequence[Instruction], k: int) -> str:
    """The user prompt for one task: the query, the permuted list, the rules, the format."""
    lines = [
        "We add verifiable coding instructions to real-world coding queries, to simulate "
        "realistic requests with non-functional requirements.",
        "",
        "USER QUERY:",
        problem.prompt.strip(),
        "",
        "CANDIDATE INSTRUCTIONS, in the order to consider them:",
    ]
    for n, inst in enumerate(order, start=1):
        lines.append(f"{n}. id: {inst.id} | category: {inst.category_name}")
        lines.append(f"   instruction: {render_prompt(inst, None)}")
        for name, spec in inst.params.items():
            desc = f"{spec.type}, default {spec.default!r}, valid {spec.describe()}"
            if spec.recommended:
                desc += f", recommended {spec.recommended[0]}-{spec.recommended[1]}"
            lines.append(f"   parameter {name}: {desc}")
        if inst.conflicts:
            lines.append(f"   conflicts with: {', '.join(sorted(inst.conflicts))}")
    lines += [
        "",
        "Scan the list once, in order. Keep an instruction when (1) it is RELEVANT: it would add "
        "a meaningful constraint that requires code or response modifications for this query, "
        "and (2) it does not CONFLICT with an instruction already kept. Stop when "
        f"{k} instructions are kept. Be conservative: keep an instruction only if it would "
        "meaningfully change the code or the reply for this query.",
        "Parameters: use the default; only if the default is not possible for this query, choose "
        "a value in the recommended range. The docstring convention is chosen for you.",
        "",
        "Reply with exactly one JSON code block:",
        "```json",
        '{"selected": [{"id": "<id>", "params": {}, "reason": "<why relevant>"}],',
        ' "rejected": [{"id": "<id>", "reason": "<why not relevant or conflicting>"}]}',
        "```",
        "List the kept instructions in the order you kept them.",
    ]
    return "\n".join(lines)


class ReplyCache(SQLiteStore):
    """A small SQLite cache of selector replies (one connection per thread and process, WAL)."""

    what = "selector reply cache"
    error = SelectorError
    hint = "move it away or delete it (it only holds cached selector replies)"

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, busy_timeout_s=30.0)
        self.connection()

    def init_schema(self, conn: sqlite3.Connection) -> None:
        """Create the replies table if absent."""
        conn.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, provider TEXT, model TEXT, reply TEXT)"
        )

    def get(self, key: str) -> str | None:
        """The cached reply for ``key``, or ``None``."""
        row = self.retry(
            lambda: self.connection()
            .execute("SELECT reply FROM replies WHERE key = ?", (key,))
            .fetchone()
        )
        return None if row is None else str(row[0])

    def put(self, key: str, provider: str, model: str, reply: str) -> None:
        """Store a reply (replacing any previous one)."""
        self.retry(
            lambda: self.connection().execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?)", (key, provider, model, reply)
            )
        )

    def __len__(self) -> int:
        row = self.retry(lambda: self.connection().execute("SELECT COUNT(*) FROM replies").fetchone())
        return int(row[0])


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def parse_reply(reply: str) -> dict[str, Any]:
    """Parse a selector reply into ``{"selected": [...], "rejected": [...]}``.

    Accepts a fenced JSON block, a bare JSON object, or a bare list (taken as ``selected``).
    Raises :class:`SelectorError` when no JSON object with a ``selected`` list is found.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(reply)]
    stripped = reply.strip()
    candidates.append(stripped)
    if "{" in stripped:
        candidates.append(stripped[stripped.index("{") : stripped.rindex("}") + 1])
    for text in candidates:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, list):
            doc = {"selected": doc}
        if isinstance(doc, dict) and isinstance(doc.get("selected"), list):
            rejected = doc.get("rejected", [])
            return {
                "selected": doc["selected"],
                "rejected": rejected if isinstance(rejected, list) else [],
            }
    preview = stripped[:80].replace("\n", " ")
    raise SelectorError(
        f"unparseable selector reply (no JSON object with a 'selected' list): {preview!r}"
    )


class SelectorModel(Protocol):
    """The model an :class:`LLMSelector` asks (the generation layer's
    :class:`~pytest_vibecheck.generate.chat.ChatModel`). ``name``: its backend spec."""

    name: str

    def key(self, task_id: str, system: str, prompt: str) -> str:
        """A cache key of the request (backend identity, messages, sampling; no secret).
        Raises VibecheckError for invalid sampling settings."""
        ...

    def complete(self, task_id: str, system: str, prompt: str) -> str:
        """The reply's text; VibecheckError for a missing key or SDK, or an API error."""
        ...

    def close(self) -> None:
        """Release the model's client (idempotent)."""
        ...


class LLMSelector:
    """The paper's LLM-judged selection through a model (see the module docstring).

    ``provider`` and ``model`` name the backend (recorded in the cache and the provenance);
    ``chat``: the :class:`SelectorModel` that asks it. ``cache_path``: the reply cache (default
    ``.vibecheck/selector-cache.sqlite``). ``calls`` / ``cache_hits`` count requests sent and
    replies served from the cache.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        *,
        chat: SelectorModel,
        cache_path: str | Path | None = None,
    ) -> None:
        self.chat = chat
        self.provider = provider
        self.model = model
        self.name = chat.name
        self.version = PROMPT_VERSION
        self.cache = ReplyCache(cache_path if cache_path is not None else DEFAULT_CACHE)
        self.calls = 0
        self.cache_hits = 0

    def key(self, problem: Problem, prompt: str) -> str:
        """The cache key of one task's request (system prompt, then the selection prompt).

        Raises :class:`SelectorError` for invalid sampling settings of the model."""
        try:
            return self.chat.key(problem.task_id, SYSTEM_PROMPT, prompt)
        except VibecheckError as exc:
            raise SelectorError(f"{self.name}: {exc}") from None

    def complete(self, problem: Problem, prompt: str) -> str:
        """One model call. A missing key or SDK, an API error after the SDK's retries or a
        rate limit raises :class:`SelectorError` with the backend's message (an
        infrastructure failure; the backend's error is the ``__cause__``)."""
        try:
            return self.chat.complete(problem.task_id, SYSTEM_PROMPT, prompt)
        except VibecheckError as exc:
            raise SelectorError(str(exc)) from exc

    # -------------------------------------------------------------- selection

    def judge_task(self, problem: Problem, order: Sequence[Instruction], k: int) -> TaskJudgements:
        """Ask the model (or the cache) and turn the reply into judgements."""
        prompt = build_prompt(problem, order, k)
        key = self.key(problem, prompt)
        reply = self.cache.get(key)
        if reply is not None:
            self.cache_hits += 1
            parsed = parse_reply(reply)
        else:
            reply = self.complete(problem, prompt)
            self.calls += 1
            parsed = parse_reply(reply)  # raises before caching an unparseable reply
            self.cache.put(key, self.provider, self.model, reply)
        return judgements_from_reply(
            parsed,
            order,
            extra={
                "model": self.model,
                "prompt_version": PROMPT_VERSION,
                "cache_key": key,
                "reply_sha256": hashlib.sha256(reply.encode("utf-8")).hexdigest(),
            },
        )

    def close(self) -> None:
        """Close the model's client and the cache connection (idempotent)."""
        self.chat.close()
        self.cache.close()


def judgements_from_reply(
    parsed: dict[str, Any], order: Sequence[Instruction], *, extra: dict[str, Any]
) -> TaskJudgements:
    """Map a parsed reply onto the permuted list: selected ids are relevant, others not.

    Ids not in ``order`` are recorded in ``dropped``; an entry without a string id is
    dropped too; non-object ``params`` are ignored (defaults apply).
    """
    known = {inst.id for inst in order}
    out = TaskJudgements(extra=dict(extra))
    reasons: dict[str, str] = {}
    for entry in parsed["rejected"]:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            reasons[entry["id"]] = str(entry.get("reason", ""))[:200]
    for entry in parsed["selected"]:
        iid = (
            entry.get("id")
            if isinstance(entry, dict)
            else entry
            if isinstance(entry, str)
            else None
        )
        if not isinstance(iid, str):
            out.dropped.append(
                (repr(entry)[:40], "malformed entry in 'selected' (no string id): dropped")
            )
            continue
        if iid not in known:
            out.dropped.append((iid, f"unknown instruction id {iid!r} in the reply: dropped"))
            continue
        if iid in out.judgements:
            continue
        reason = str(entry.get("reason", "")) if isinstance(entry, dict) else ""
        out.judgements[iid] = Judgement(
            True, "llm:selected", reason[:200] or "selected by the model"
        )
        params = entry.get("params") if isinstance(entry, dict) else None
        if isinstance(params, dict):
            out.params[iid] = params
    for inst in order:
        if inst.id not in out.judgements:
            why = reasons.get(inst.id) or "not selected by the model"
            out.judgements[inst.id] = Judgement(False, "llm:rejected", why)
    return out
