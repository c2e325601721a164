"""Running items: messages -> generate (cached) -> extract -> tests -> verify -> result.

:func:`run_item_for` runs one :class:`~pytest_vibecheck.plugin.items.VibeItem` and returns an
:class:`ItemOutcome` whose ``record`` (builtins only, docs/report-schema.md ``items[]``) is in the
item's ``user_properties`` under ``"vibecheck"``; the controller aggregates it.

- baseline / single-turn: one generation (paper §3.2), its code tested and verified against the
  judged instructions (baseline: all of the problem's instructions, never asked for; single-turn:
  the first k).
- multi-turn, k = K: one conversation of K + 1 replies (turn 0 = the plain query, shared with the
  baseline through the generation cache; then one edit turn per instruction). Every turn's code
  is tested and verified against the instructions given so far (turn 0: all of the problem's,
  as the baseline). The item is judged at turn K.

The item passes iff its tests pass and every instruction passes. An infrastructure failure (API
error after retries, rate limit, a cache miss in mode ``only``, a replay miss, a sandbox or
verifier error) raises :class:`VibeInfraError` during setup: a pytest *error*, left out of the
metrics. A reply with no code is a model failure: the tests run (and fail) and every instruction
counts as not followed (violation ``NO-CODE``).

Batching: the work of an item is done in stages over a *window* of the items this process will
run next (:class:`Prefetcher`): their generations run concurrently (up to ``--vibe-concurrency``
per process), then all their turns are verified in one Ruff batch, then their distinct programs
are tested. The item itself then only assembles its record. Results do not depend on the window.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import threading
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vibecheck.errors import VibecheckError

if TYPE_CHECKING:
    from pytest_vibecheck.execute.cache import ExecCache
    from pytest_vibecheck.execute.tests import ExecSettings
    from pytest_vibecheck.generate.backends.base import Generation, GenerationRequest
    from pytest_vibecheck.generate.generator import Generator
    from pytest_vibecheck.plugin.items import ItemSpec, VibeItem
    from pytest_vibecheck.plugin.settings import VibeSettings
    from pytest_vibecheck.verify.extract import Extraction

__all__ = [
    "RUNTIME_KEY",
    "ItemOutcome",
    "Prefetcher",
    "Runtime",
    "VibeFailure",
    "VibeInfraError",
    "has_no_code",
    "run_item_for",
]

#: Violation rule used when a reply has no code (every instruction counts as not followed).
NO_CODE_RULE = "NO-CODE"
#: Longest test message kept in a record.
MAX_MESSAGE = 2000
#: Violations listed per instruction in the failure text.
MAX_VIOLATIONS_SHOWN = 8
#: Most items prepared together (generation, one Ruff batch, tests).
WINDOW = 32
#: An item whose generations took longer than this (seconds) keeps the window small.
SLOW_GENERATION_S = 0.5

Judged = tuple[tuple[int, str, dict[str, Any]], ...]


class VibeFailure(AssertionError):
    """The item failed (tests or instructions); the message is the failure text."""

    __module__ = "pytest_vibecheck"


class VibeInfraError(Exception):
    """An infrastructure failure: reported as a pytest error, excluded from the metrics.

    ``kind`` is one of the error kinds of docs/report-schema.md (``api_error``, ``rate_limit``,
    ``cache_miss``, ``replay_miss``, ``backend_error``, ``sandbox_error``, ``verifier_error``,
    ``internal_error``).
    """

    __module__ = "pytest_vibecheck"

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        self.message = message
        super().__init__(
            f"vibecheck infrastructure error ({kind}): {message}\n"
            "(not a model failure: this item is left out of the metrics)"
        )


@dataclass
class ItemOutcome:
    """What :func:`run_item_for` returns: ``passed``, the failure text and the record."""

    passed: bool
    failure_text: str
    record: dict[str, Any]


# ---------------------------------------------------------------- helpers


def has_no_code(extraction: Extraction) -> bool:
    """True when a reply has no code: extraction found nothing (method ``none``), or there was
    no fenced block and the whole reply does not parse as Python or is only bare names and
    constants (prose such as ``"Sorry"`` parses as a name)."""
    if extraction.method == "none" or not extraction.code.strip():
        return True
    if extraction.method != "whole-reply":
        return False
    try:
        tree = ast.parse(extraction.code)
    except (SyntaxError, ValueError):
        return True
    return all(
        isinstance(node, ast.Expr) and isinstance(node.value, (ast.Name, ast.Constant))
        for node in tree.body
    )


def _error_kind(exc: BaseException) -> str:
    from pytest_vibecheck.generate.backends.base import (
        BackendError,
        RateLimitError,
        ReplayMissError,
    )
    from pytest_vibecheck.generate.cache import CacheMissError

    if isinstance(exc, RateLimitError):
        return "rate_limit"
    if isinstance(exc, CacheMissError):
        return "cache_miss"
    if isinstance(exc, ReplayMissError):
        return "replay_miss"
    if isinstance(exc, BackendError):
        return "api_error"
    return "backend_error"


def _describe(exc: BaseException) -> str:
    """``Type: message (at file.py:LINE in function)`` for an unexpected exception."""
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        code = tb.tb_frame.f_code
        where = f" (at {Path(code.co_filename).name}:{tb.tb_lineno} in {code.co_name})"
    return f"{type(exc).__name__}: {exc}{where}"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _tests_dict(res: Any) -> dict[str, Any]:
    message = str(getattr(res, "message", "") or "")
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + f"... [{len(message) - MAX_MESSAGE} more characters]"
    return {
        "status": str(res.status),
        "failed_tests": [str(t) for t in (getattr(res, "failed_tests", ()) or ())],
        "message": message,
        "duration_s": float(getattr(res, "duration_s", 0.0) or 0.0),
        "cached": bool(getattr(res, "cached", False)),
    }


@dataclass
class _Turn:
    turn: int
    k: int
    generation: Generation
    via_cache: bool
    extraction: Extraction
    no_code: bool
    judged: Judged
    tests: dict[str, Any] = field(default_factory=dict)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    ruff_version: str | None = None

    @property
    def passed(self) -> bool:
        return self.tests.get("status") == "passed" and all(v["passed"] for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        gen = self.generation
        return {
            "turn": self.turn,
            "k": self.k,
            "generation": {
                "key": gen.key,
                "cached": bool(gen.cached),
                "via_cache": self.via_cache,
                "input_tokens": gen.input_tokens,
                "output_tokens": gen.output_tokens,
                "latency_s": float(gen.latency_s),
                "finish_reason": gen.finish_reason,
            },
            "extraction": {
                "method": self.extraction.method,
                "blocks": len(self.extraction.blocks),
                "no_code": self.no_code,
                "code_sha256": _sha(self.extraction.code),
            },
            "tests": self.tests,
            "verdicts": self.verdicts,
            "passed": self.passed,
        }


@dataclass
class Work:
    """The prepared result of one item: its turns, or the error / skip that stopped it."""

    spec: ItemSpec
    turns: list[_Turn] = field(default_factory=list)
    error: VibeInfraError | None = None
    skip: str | None = None
    timing: dict[str, float] = field(
        default_factory=lambda: {"generate": 0.0, "tests": 0.0, "verify": 0.0, "total": 0.0}
    )

    @property
    def live(self) -> bool:
        return self.error is None and self.skip is None


# ---------------------------------------------------------------- the per-process runtime


class Runtime:
    """Per-process state: one :class:`~pytest_vibecheck.generate.generator.Generator` per model (sharing
    one generation cache), the sandbox result cache and the prefetcher.

    Built once per process in ``pytest_configure`` (controller and xdist workers alike).
    ``run_id`` is shared by all workers of a run (cache mode ``refresh``). Raises
    :class:`~pytest_vibecheck.errors.VibecheckError` for an unknown model spec, a missing API
    key or SDK.
    """

    def __init__(self, settings: VibeSettings, run_id: str | None = None) -> None:
        from pytest_vibecheck.generate.backends.base import BackendSettings
        from pytest_vibecheck.generate.backends.registry import make_backend
        from pytest_vibecheck.generate.cache import GenerationCache
        from pytest_vibecheck.generate.generator import Generator

        self.settings = settings
        self.run_id = run_id or uuid.uuid4().hex
        self.cache: GenerationCache | None = None
        self.generators: dict[str, Generator] = {}
        try:
            if settings.cache_mode != "off" and settings.cache is not None:
                self.cache = GenerationCache(settings.cache)
            bsettings = BackendSettings(base_url=settings.base_url, api_key_env=settings.api_key_env)
            for spec in settings.models:
                self.generators[spec] = Generator(
                    make_backend(spec, bsettings),
                    cache=self.cache,
                    mode=settings.cache_mode,
                    concurrency=settings.concurrency,
                    run_id=self.run_id,
                )
        except BaseException:
            self.close()
            raise
        #: verdicts already computed in this process (see :func:`_verify`)
        self.verdicts: dict[VerdictKey, Any] = {}
        self._inflight: dict[str, threading.Event] = {}
        self._inflight_lock = threading.Lock()
        self._exec_cache: ExecCache | None = None
        #: how tests run: time limits calibrated per task on this machine from the reference
        #: solution (max(floor, factor x its time), docs/sandbox.md), stored beside the cache
        self.exec_settings: ExecSettings | None = _exec_settings(settings)
        self.prefetcher = Prefetcher(self)

    def generate(self, model: str, request: GenerationRequest) -> Generation:
        """One generation through the model's Generator. Identical requests in flight in this
        process at the same time are made once: later ones wait and are then served from the
        cache (so the baseline and multi-turn turn 0, prepared concurrently, share one reply)."""
        generator = self.generators[model]
        if not generator.uses_cache:
            return generator.generate(request)
        key = generator.key(request)
        with self._inflight_lock:
            event = self._inflight.get(key)
            owner = event is None
            if owner:
                event = self._inflight[key] = threading.Event()
        assert event is not None
        if not owner:
            event.wait()
            return generator.generate(request)
        try:
            return generator.generate(request)
        finally:
            with self._inflight_lock:
                del self._inflight[key]
            event.set()

    def exec_cache(self) -> ExecCache | None:
        """The sandbox's result cache (``exec-cache.sqlite`` beside the generation cache),
        opened on first use; None without a cache folder."""
        if self._exec_cache is None and self.settings.cache is not None:
            from pytest_vibecheck.execute.cache import ExecCache

            self._exec_cache = ExecCache(self.settings.cache.parent / "exec-cache.sqlite")
        return self._exec_cache

    def close(self) -> None:
        """Close every backend and the cache (idempotent)."""
        for gen in self.generators.values():
            with contextlib.suppress(Exception):  # closing must never fail a run
                gen.backend.close()
        self.generators = {}
        if self.cache is not None:
            self.cache.close()
            self.cache = None
        if getattr(self, "_exec_cache", None) is not None:
            with contextlib.suppress(Exception):
                self._exec_cache.close()  # type: ignore[union-attr]
            self._exec_cache = None


#: Stash key of the process's :class:`Runtime`.
RUNTIME_KEY = pytest.StashKey[Runtime]()


# ---------------------------------------------------------------- stage 1: generate + extract


def _generate_one(runtime: Runtime, work: Work) -> None:
    """All generations of one item (sequential: multi-turn replies build on each other)."""
    from pytest_vibecheck.generate import protocols
    from pytest_vibecheck.generate.backends.base import GenerationError
    from pytest_vibecheck.generate.generator import request_for
    from pytest_vibecheck.verify.extract import extract_code

    spec = work.spec
    t0 = time.perf_counter()
    if spec.k > len(spec.problem.instructions):
        work.skip = (
            f"vibecheck: {spec.problem.task_id} has {len(spec.problem.instructions)} "
            f"instructions, fewer than k = {spec.k}"
        )
        return
    generator = runtime.generators[spec.model]
    settings = runtime.settings

    def generate(messages: Sequence[Mapping[str, str]], label: str) -> Generation:
        request = request_for(
            spec.problem,
            [dict(m) for m in messages],
            label,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            sample=spec.sample,
        )
        return runtime.generate(spec.model, request)

    def turn(t: int, k: int, gen: Generation, judged: Judged) -> _Turn:
        ex = extract_code(gen.text, mode=settings.extract, entry_point=spec.problem.entry_point)  # type: ignore[arg-type]
        return _Turn(t, k, gen, generator.uses_cache, ex, has_no_code(ex), judged)

    try:
        if spec.protocol == "multi":
            everything = tuple(
                (i, ref.id, dict(ref.params))
                for i, ref in enumerate(spec.problem.instructions, start=1)
            )
            history: list[str] = []
            for t in range(spec.k + 1):
                gen = generate(
                    protocols.multi_turn_messages(spec.problem, history, t),
                    protocols.label("multi", t),
                )
                history.append(gen.text)
                work.turns.append(turn(t, t, gen, everything if t == 0 else spec.instructions[:t]))
        else:
            gen = generate(
                protocols.protocol_messages(spec.problem, spec.protocol, spec.k),
                protocols.label(spec.protocol, spec.k),
            )
            work.turns.append(turn(0, spec.k, gen, spec.instructions))
    except GenerationError as exc:
        work.error = VibeInfraError(_error_kind(exc), str(exc))
    except VibecheckError as exc:
        work.error = VibeInfraError("backend_error", str(exc))
    except Exception as exc:  # a backend bug or an unmapped SDK error: still not the model's fault
        work.error = VibeInfraError("backend_error", _describe(exc))
    finally:
        work.timing["generate"] = time.perf_counter() - t0


def _generate(runtime: Runtime, works: Sequence[Work], concurrent: bool = True) -> None:
    """Stage 1 for many items, ``--vibe-concurrency`` at a time (one after the other when
    ``concurrent`` is false: cache hits are faster without threads)."""
    n = min(runtime.settings.concurrency, len(works)) if concurrent else 1
    if n <= 1:
        for w in works:
            _generate_one(runtime, w)
        return
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="vibecheck-gen") as pool:
        list(pool.map(lambda w: _generate_one(runtime, w), works))


# ---------------------------------------------------------------- stage 2: verify


def _no_code_verdicts(judged: Judged) -> list[dict[str, Any]]:
    return [
        {
            "position": pos,
            "id": iid,
            "passed": False,
            "error": None,
            "violations": [
                {"rule": NO_CODE_RULE, "line": 1, "column": 1, "message": "the reply contains no code"}
            ],
        }
        for pos, iid, _params in judged
    ]


#: Verdicts remembered per process (identical code is judged once: the baseline and multi-turn
#: turn 0 share a reply, and a model often returns the same code on several turns).
MEMO_LIMIT = 100_000

VerdictKey = tuple[str, str, str]  # sha256 of (reply, code, entry point), instruction id, params


def _verify(works: Sequence[Work], memo: dict[VerdictKey, Any] | None = None) -> None:
    """Stage 2: judge every turn of every live item; each distinct (reply, code, instruction,
    params) once, all in one :func:`~pytest_vibecheck.verify.api.verify_batch`."""
    import json

    from pytest_vibecheck.verify.api import VerifyItem, verify_batch

    memo = {} if memo is None else memo
    if len(memo) > MEMO_LIMIT:
        memo.clear()
    t0 = time.perf_counter()
    targets: list[tuple[Work, _Turn, list[VerdictKey]]] = []
    todo: dict[str, tuple[_Turn, Work, dict[VerdictKey, tuple[str, dict[str, Any]]]]] = {}
    for w in works:
        if not w.live:
            continue
        for t in w.turns:
            if t.no_code:
                t.verdicts = _no_code_verdicts(t.judged)
                continue
            if not t.judged:
                continue
            text_key = _sha(
                json.dumps([t.generation.text, t.extraction.code, w.spec.problem.entry_point])
            )
            keys: list[VerdictKey] = []
            for _pos, iid, params in t.judged:
                key = (text_key, iid, json.dumps(params, sort_keys=True))
                keys.append(key)
                if key not in memo:
                    entry = todo.setdefault(text_key, (t, w, {}))
                    entry[2][key] = (iid, params)
            targets.append((w, t, keys))
    if todo:
        batch = [
            VerifyItem(
                instructions=list(pending.values()),
                reply=t.generation.text,
                code=t.extraction.code,
                entry_point=w.spec.problem.entry_point,
            )
            for t, w, pending in todo.values()
        ]
        try:
            results = verify_batch(batch)
        except Exception as exc:
            msg = str(exc) if isinstance(exc, VibecheckError) else _describe(exc)
            for w, _t, _keys in targets:
                w.error = w.error or VibeInfraError("verifier_error", msg)
            return
        for (_t, _w, pending), verdicts in zip(todo.values(), results, strict=True):
            for key, v in zip(pending, verdicts, strict=True):
                memo[key] = v
    for w, t, keys in targets:
        t.verdicts = []
        for (pos, iid, _params), key in zip(t.judged, keys, strict=True):
            v = memo[key]
            if v.passed is None:
                w.error = w.error or VibeInfraError(
                    "verifier_error", f"{iid} could not be verified: {v.error}"
                )
            t.ruff_version = t.ruff_version or v.ruff_version
            t.verdicts.append(
                {
                    "position": pos,
                    "id": iid,
                    "passed": bool(v.passed),
                    "error": v.error,
                    "violations": [x.to_dict() for x in v.violations],
                }
            )
    judged = {id(w): w for w, _t, _k in targets}
    share = (time.perf_counter() - t0) / max(1, len(judged))
    for w in judged.values():
        w.timing["verify"] += share


# ---------------------------------------------------------------- stage 3: tests


def _test(runtime: Runtime, works: Sequence[Work]) -> None:
    """Stage 3: run each item's distinct programs in the sandbox with the sandbox's result
    cache, several at once (:func:`pytest_vibecheck.execute.pool.run_many`: the CPUs shared among the
    xdist workers)."""
    from pytest_vibecheck.execute.pool import run_many

    keys: list[tuple[int, str]] = []
    pairs: list[tuple[str, Any]] = []
    for w in works:
        if w.live:
            for t in w.turns:
                key = (id(w), t.extraction.code)
                if key not in keys:
                    keys.append(key)
                    pairs.append((t.extraction.code, w.spec.problem))
    if not pairs:
        return
    t0 = time.perf_counter()
    try:
        results = run_many(pairs, runtime.exec_settings, runtime.exec_cache())
    except Exception as exc:  # a sandbox bug is an infrastructure failure, never the model's
        msg = str(exc) if isinstance(exc, VibecheckError) else _describe(exc)
        for w in works:
            if w.live:
                w.error = VibeInfraError("sandbox_error", msg)
        return
    outs = {key: _tests_dict(res) for key, res in zip(keys, results, strict=True)}
    seconds = (time.perf_counter() - t0) / max(1, len({k[0] for k in keys}))
    for w in works:
        if not w.live:
            continue
        w.timing["tests"] += seconds
        for t in w.turns:
            tests = outs[(id(w), t.extraction.code)]
            t.tests = tests
            if tests["status"] == "error":
                w.error = VibeInfraError("sandbox_error", tests["message"] or "the sandbox failed")
                break
            if tests["status"] == "skipped":
                w.skip = "vibecheck: " + (tests["message"] or "the tests cannot run in this environment")
                break


def prepare(runtime: Runtime, works: Sequence[Work], concurrent: bool = True) -> None:
    """Run the three stages over ``works`` (in place). Warnings raised by parsing the model's
    code (``invalid escape sequence``, other ``SyntaxWarning`` s) are about the model's code,
    not the run, and are not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=SyntaxWarning)
        warnings.filterwarnings("ignore", message="invalid escape sequence", category=DeprecationWarning)
        _generate(runtime, works, concurrent)
        _verify(works, runtime.verdicts)
        _test(runtime, works)


# ---------------------------------------------------------------- prefetching


class Prefetcher:
    """Prepares the next items this process will run, in one go.

    The upcoming items are the session's items after the current one, or, on an xdist worker,
    the items already queued for this worker (read from pytest-xdist's worker queue; if that is
    not available, only the current item). Prepared items are kept until their own setup.

    The window adapts: it starts at ``--vibe-concurrency`` items (so calls to a slow API are
    spread over items and no item waits for many rounds of calls), doubles up to
    :data:`WINDOW` while generations are fast (cache hits, offline models: then the batch pays
    off in fewer Ruff processes), and falls back when they are slow again.
    """

    def __init__(self, runtime: Runtime, window: int = WINDOW) -> None:
        self.runtime = runtime
        self.max_window = window
        self.window = max(1, min(window, runtime.settings.concurrency))
        self.slow = True  # until a window shows that generations are fast
        self._ready: dict[str, Work] = {}
        self._index: dict[str, int] | None = None

    def _upcoming(self, item: VibeItem) -> list[VibeItem]:
        from pytest_vibecheck.plugin.items import VibeItem

        session = item.session
        items = session.items
        indices: list[int] | None = None
        for plugin in item.config.pluginmanager.get_plugins():
            torun = getattr(plugin, "torun", None)
            if torun is not None and type(plugin).__name__ == "WorkerInteractor":
                with contextlib.suppress(Exception), torun.lock() as queue:
                    indices = [i for i in list(queue) if isinstance(i, int)]
                break
        if indices is None:
            if self._index is None:
                self._index = {it.nodeid: i for i, it in enumerate(items)}
            start = self._index.get(item.nodeid)
            stop = min(len(items), (start or 0) + 1 + 4 * self.max_window)
            indices = list(range(start + 1, stop)) if start is not None else []
        out = [item]
        for i in indices:
            if len(out) >= self.window:
                break
            if 0 <= i < len(items):
                nxt = items[i]
                if isinstance(nxt, VibeItem) and nxt.nodeid not in self._ready and nxt is not item:
                    out.append(nxt)
        return out

    def take(self, item: VibeItem) -> Work:
        """The prepared work of ``item`` (preparing it and the next items if needed)."""
        work = self._ready.pop(item.nodeid, None)
        if work is not None:
            return work
        batch = self._upcoming(item)
        works = [Work(it.spec) for it in batch]
        prepare(self.runtime, works, concurrent=self.slow)
        self.slow = max(w.timing["generate"] for w in works) > SLOW_GENERATION_S
        base = max(1, min(self.max_window, self.runtime.settings.concurrency))
        self.window = base if self.slow else min(self.max_window, self.window * 2)
        for it, w in zip(batch[1:], works[1:], strict=True):
            self._ready[it.nodeid] = w
        return works[0]


# ---------------------------------------------------------------- the item


def new_record(spec: ItemSpec) -> dict[str, Any]:
    """The item's record before it runs (builtins only)."""
    from pytest_vibecheck.verify.instructions import get_instruction

    return {
        "suite": spec.suite,
        "suite_sha256": spec.suite_hash,
        "task_id": spec.problem.task_id,
        "model": spec.model,
        "protocol": spec.protocol,
        "k": spec.k,
        "sample": spec.sample,
        "passed": None,
        "error": None,
        "skip_reason": None,
        "instructions": [
            {"position": pos, "id": iid, "category": get_instruction(iid).category, "params": params}
            for pos, iid, params in spec.instructions
        ],
        "turns": [],
        "no_code": False,
        "timing": {"generate": 0.0, "tests": 0.0, "verify": 0.0, "total": 0.0},
        "ruff_version": None,
        "failure": None,
    }


def run_item_for(item: VibeItem) -> ItemOutcome:
    """Run ``item`` with the process's runtime; its record goes into ``user_properties``.

    Raises :class:`VibeInfraError` (pytest error) or ``pytest.skip`` (tests cannot run here, or
    the problem has fewer than k instructions).
    """
    t0 = time.perf_counter()
    spec = item.spec
    record = new_record(spec)
    item.user_properties.append(("vibecheck", record))
    runtime = item.config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        record["error"] = {"kind": "internal_error", "message": "the vibecheck runtime is not set up"}
        raise VibeInfraError("internal_error", "the vibecheck runtime is not set up")
    try:
        work = runtime.prefetcher.take(item)
    except Exception as exc:
        record["error"] = {"kind": "internal_error", "message": f"{type(exc).__name__}: {exc}"}
        raise
    record["timing"] = dict(work.timing)
    record["turns"] = [t.to_dict() for t in work.turns if t.tests]
    record["ruff_version"] = next((t.ruff_version for t in work.turns if t.ruff_version), None)
    if work.error is not None:
        record["error"] = {"kind": work.error.kind, "message": work.error.message}
        raise work.error
    if work.skip is not None:
        record["skip_reason"] = work.skip
        pytest.skip(work.skip)
    final = work.turns[-1]
    record["no_code"] = final.no_code
    record["passed"] = final.passed
    record["timing"]["total"] = sum(work.timing[k] for k in ("generate", "tests", "verify")) + (
        time.perf_counter() - t0
    )
    text = "" if final.passed else failure_text(spec, work.turns)
    record["failure"] = text or None
    return ItemOutcome(final.passed, text, record)


# ---------------------------------------------------------------- failure text


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _instruction_lines(t: _Turn) -> list[str]:
    params = {iid: p for _pos, iid, p in t.judged}
    ok = sum(v["passed"] for v in t.verdicts)
    lines = [f"  instructions: {ok} of {len(t.verdicts)} followed"]
    for v in t.verdicts:
        if v["passed"]:
            continue
        p = _params_text(params.get(v["id"], {}))
        lines.append(f"    FAIL {v['id']} (position {v['position']}{', ' + p if p else ''})")
        viol = v["violations"]
        lines.extend(
            f"         {x['line']}:{x['column']} {x['rule']} {x['message']}"
            for x in viol[:MAX_VIOLATIONS_SHOWN]
        )
        if len(viol) > MAX_VIOLATIONS_SHOWN:
            lines.append(f"         ... {len(viol) - MAX_VIOLATIONS_SHOWN} more")
    return lines


def _tests_lines(tests: Mapping[str, Any]) -> list[str]:
    status = tests.get("status")
    if status == "passed":
        return ["  tests: passed"]
    failed = tests.get("failed_tests") or []
    head = f"  tests: {status}"
    if failed:
        more = ", ..." if len(failed) > 10 else ""
        head += f" ({len(failed)} failing: {', '.join(failed[:10])}{more})"
    lines = [head]
    msg = str(tests.get("message") or "").strip()
    if msg:
        lines.extend("      " + ln for ln in msg.splitlines()[-12:])
    return lines


def failure_text(spec: ItemSpec, turns: Sequence[_Turn]) -> str:
    """The failure text: failing tests and each failed instruction with its violations; for
    multi-turn also one line per turn."""
    final = turns[-1]
    head = f"{spec.problem.task_id} with {spec.model} ({spec.protocol}"
    head += ")" if spec.protocol == "baseline" else f", k={spec.k})"
    lines = [head + ": failed"]
    if final.no_code:
        lines.append(
            f"  the reply has no code (extraction: {final.extraction.method}): the tests fail "
            "and every instruction counts as not followed"
        )
    lines += _tests_lines(final.tests)
    lines += _instruction_lines(final)
    lines.append(
        f"  extraction: {final.extraction.method}, {len(final.extraction.blocks)} fenced block(s)"
    )
    if len(turns) > 1:
        lines.append("  turns (tests; instructions followed of those judged):")
        for t in turns:
            ok = sum(v["passed"] for v in t.verdicts)
            what = "all of the problem's, unprompted" if t.turn == 0 else f"1..{t.turn}"
            lines.append(
                f"    turn {t.turn}: tests {t.tests.get('status')}; {ok}/{len(t.verdicts)} "
                f"({what}){' no code' if t.no_code else ''}"
            )
    return "\n".join(lines)


def _exec_settings(settings: VibeSettings) -> ExecSettings | None:
    """Sandbox settings with a :class:`~pytest_vibecheck.execute.calibrate.Calibrator` whose store is
    ``calibration.sqlite`` beside the generation cache; None (fixed default limits) when the
    run has no cache folder."""
    if settings.cache is None:
        return None
    from pytest_vibecheck.execute.calibrate import Calibrator
    from pytest_vibecheck.execute.tests import ExecSettings

    return ExecSettings(calibrator=Calibrator(Path(settings.cache).parent / "calibration.sqlite"))
