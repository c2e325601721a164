"""The generation layer: a backend, the generation cache, a cache mode and a concurrency limit.

::

    backend = make_backend("openai:gpt-5", BackendSettings())
    gen = Generator(backend, cache=GenerationCache(".vibecheck/cache.sqlite"), mode="use")
    reply = gen.generate(request_for(problem, baseline_messages(problem), "baseline"))
    gen.stats.as_dict()   # requests, hits, misses, tokens ...

Cache modes (see :mod:`pytest_vibecheck.generate.cache`): ``use`` reads and writes; ``refresh``
regenerates every request once per run (rows written by the same ``run_id`` are reused, so
the baseline item and multi-turn turn 0 still share one reply) and overwrites; ``only`` never
calls the backend and raises :class:`~pytest_vibecheck.generate.cache.CacheMissError` on a miss;
``off`` neither reads nor writes. Backends with ``cacheable = False`` (replay, reference)
bypass the cache in every mode: they are already offline.

Concurrency: one :class:`~pytest_vibecheck.generate.limiter.AdaptiveLimit` per (process,
backend identity) bounds concurrent backend calls; it starts at ``min(concurrency,
backend.max_concurrency)``, halves on HTTP 429/503/529 (honouring ``Retry-After``) and grows back
(AIMD). Under pytest-xdist every worker process has its own limit.

One distinct request is sent once, also across processes: before calling the backend a generator
claims the cache key in the cache file (:meth:`GenerationCache.claim`); another process (or
thread) that needs the same key waits for the reply to be stored and is served from the cache.

A ``guard`` (:class:`CallGuard`) may refuse a request before it is sent
(:class:`RunStoppedError`: the run stopped sending requests) and sees every reply and error.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
import time
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.generate.backends.base import (
    Backend,
    Generation,
    GenerationError,
    GenerationRequest,
    Message,
    canonical_json,
)
from pytest_vibecheck.generate.cache import (
    CacheMissError,
    CacheMode,
    CacheWarning,
    GenerationCache,
    cache_key,
    validate_cache_mode,
)
from pytest_vibecheck.generate.limiter import AdaptiveLimit
from pytest_vibecheck.suites.problem import Problem

__all__ = ["BatchHooks", "CallGuard", "Generator", "GeneratorStats", "RunStoppedError", "request_for"]


class RunStoppedError(GenerationError):
    """The request was not sent: the run stopped sending requests to this model (a fatal error
    of the model, too many infrastructure errors, the budget reached). The message is the
    reason; the item is reported as not run."""


class CallGuard(Protocol):
    """Sees every backend call of a :class:`Generator` (see
    :class:`pytest_vibecheck.plugin.run.guard.RunGuard`). ``spec`` is the backend's spec."""

    def before_call(self, spec: str) -> None:
        """Raise :class:`RunStoppedError` to refuse the request."""

    def after_call(self, spec: str, generation: Generation) -> None:
        """The backend answered."""

    def on_error(self, spec: str, exc: BaseException) -> None:
        """The backend raised ``exc`` (it is raised on after this returns)."""


class BatchHooks(Protocol):
    """What a :class:`Generator` in batch mode asks its batcher
    (:class:`~pytest_vibecheck.generate.batcher.Batcher`)."""

    def fresh(self, key: str) -> bool:
        """True for the first reader, in this run, of a reply its batches generated."""

    def miss_error(self, key: str, request: GenerationRequest) -> GenerationError:
        """The error of a request the batches did not answer (its failure inside a batch, or
        why it was not submitted); never sent directly instead."""


def request_for(
    problem: Problem,
    messages: Sequence[Message],
    label: str,
    *,
    temperature: float = 0.0,
    max_tokens: int = 4096,
    sample: int = 0,
    extra: Mapping[str, Any] | None = None,
    profile: str = "paper",
) -> GenerationRequest:
    """A :class:`GenerationRequest` for ``problem`` with its metadata filled in
    (``task_id``, ``label``, ``reference`` = the canonical solution, ``profile``)."""
    return GenerationRequest(
        messages=tuple(messages),
        temperature=temperature,
        max_tokens=max_tokens,
        sample=sample,
        extra=dict(extra or {}),
        task_id=problem.task_id,
        label=label,
        reference=problem.canonical_solution,
        profile=profile,
    )


@dataclass
class GeneratorStats:
    """Counters of one :class:`Generator` (one process). All counts are ints.

    ``requests``: calls of :meth:`Generator.generate`. ``hits``: served from the cache.
    ``misses``: not in the cache (in mode ``only`` each miss is also an error).
    ``generated``: replies produced by the backend (API calls for API backends; also the
    replies of uncached offline backends). ``errors``: requests that raised. ``input_tokens``
    / ``output_tokens``: tokens of the generated replies (spent now); ``cached_input_tokens``
    / ``cached_output_tokens``: tokens of cache hits (spent earlier). ``latency_s``: summed
    wall time of backend calls in seconds.
    """

    requests: int = 0
    hits: int = 0
    misses: int = 0
    generated: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cached_output_tokens: int = 0
    latency_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def hit_rate(self) -> float | None:
        """hits / (hits + misses) as a fraction in [0, 1]; None when nothing went through the cache."""
        looked_up = self.hits + self.misses
        return self.hits / looked_up if looked_up else None

    def as_dict(self) -> dict[str, int | float]:
        """Builtins only (for ``config.workeroutput`` and reports); no ``hit_rate``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def merge(self, other: GeneratorStats | Mapping[str, int | float]) -> None:
        """Add ``other``'s counters (a stats object or its :meth:`as_dict`) to these."""
        data = other.as_dict() if isinstance(other, GeneratorStats) else other
        with self._lock:
            for f in fields(self):
                if not f.name.startswith("_") and f.name in data:
                    setattr(self, f.name, getattr(self, f.name) + data[f.name])

    def _add(self, **counts: int | float) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)


_LIMITS: dict[str, AdaptiveLimit] = {}
_LIMITS_LOCK = threading.Lock()

#: Concurrency limit when neither the caller nor the backend sets one.
DEFAULT_CONCURRENCY = 8


def _shared_limit(identity: Mapping[str, Any], maximum: int) -> AdaptiveLimit:
    name = canonical_json([identity, maximum])
    with _LIMITS_LOCK:
        limit = _LIMITS.get(name)
        if limit is None:
            limit = _LIMITS[name] = AdaptiveLimit(maximum)
        return limit


#: Seconds after which a claim on a cache key is void even if its owner looks alive.
CLAIM_TTL_S = 3600.0
#: Seconds between two looks at the cache while another process generates a claimed key.
CLAIM_POLL_S = 0.05


class Generator:
    """Backend + cache + mode + concurrency limit, with usage accounting in :attr:`stats`.

    ``cache``: a :class:`GenerationCache`, or None (then every mode behaves like ``off``,
    except ``only``, which raises ParameterError because it needs a cache). ``mode``: one of
    ``use|refresh|only|off``. ``concurrency``: cap on concurrent backend calls in this
    process (None: the backend's ``max_concurrency``, else :data:`DEFAULT_CONCURRENCY`).
    ``run_id``: identifies this run across xdist workers (mode ``refresh`` reuses rows with
    the same run id); a fresh one by default. ``guard``: a :class:`CallGuard`, or None.
    Unless the mode is ``only``,
    :meth:`Backend.preflight` runs now, so a missing key or SDK fails before any item.
    """

    def __init__(
        self,
        backend: Backend,
        cache: GenerationCache | None = None,
        mode: CacheMode | str = "use",
        *,
        concurrency: int | None = None,
        run_id: str | None = None,
        guard: CallGuard | None = None,
    ) -> None:
        self.backend = backend
        self.mode: CacheMode = validate_cache_mode(mode)
        if self.mode == "only" and cache is None and backend.cacheable:
            raise ParameterError(
                "cache mode 'only' needs a generation cache; give --vibe-cache PATH or another mode"
            )
        self.cache = cache if self.mode != "off" else None
        self.run_id = run_id or uuid.uuid4().hex
        self.identity = backend.cache_identity()
        if concurrency is not None and (isinstance(concurrency, bool) or concurrency < 1):
            raise ParameterError(f"concurrency must be an int >= 1, got {concurrency!r}")
        limits = [n for n in (concurrency, backend.max_concurrency) if n is not None]
        self.concurrency = min(limits) if limits else DEFAULT_CONCURRENCY
        self.limit = _shared_limit(self.identity, self.concurrency)
        backend.on_response = self.limit.observe
        self.guard = guard
        self.stats = GeneratorStats()
        #: set in batch mode (``--vibe-batch``, :class:`~pytest_vibecheck.generate.batcher.Batcher`):
        #: the replies come from the provider's batches, never from a direct request
        self.batch: BatchHooks | None = None
        if self.mode != "only":
            backend.preflight()

    @property
    def uses_cache(self) -> bool:
        """True if requests go through the cache (a cache is set, mode is not ``off``, and the
        backend is cacheable)."""
        return self.cache is not None and self.backend.cacheable

    def key(self, request: GenerationRequest) -> str:
        """The cache key of ``request`` for this backend."""
        return cache_key(self.identity, request)

    def _call_backend(self, request: GenerationRequest) -> Generation:
        spec = self.backend.spec
        if self.guard is not None:
            self.guard.before_call(spec)
        start = time.perf_counter()
        try:
            with self.limit.slot():
                gen = self.backend.generate(request)
        except Exception as exc:
            if self.guard is not None:
                self.guard.on_error(spec, exc)
            raise
        if self.guard is not None and self.backend.cacheable:
            # what the run spends: offline backends (replay, reference) send nothing anywhere,
            # even when a replay carries the token counts of the run it recorded
            self.guard.after_call(spec, gen)
        elapsed = time.perf_counter() - start
        latency = gen.latency_s if gen.latency_s > 0 else elapsed
        self.stats._add(
            generated=1,
            input_tokens=gen.input_tokens,
            output_tokens=gen.output_tokens,
            latency_s=latency,
        )
        if gen.latency_s != latency:
            gen = Generation(
                text=gen.text,
                usage=dict(gen.usage),
                latency_s=latency,
                model=gen.model,
                cached=False,
                finish_reason=gen.finish_reason,
                key=gen.key,
            )
        return gen

    def cached(self, key: str) -> Generation | None:
        """The reply of ``key`` this run may use from the cache (mode ``refresh``: only rows of
        this run), or None."""
        return self._lookup(key) if self.uses_cache else None

    def store_batch_reply(self, key: str, request: GenerationRequest, gen: Generation) -> Generation:
        """Store a reply that a batch of this run generated (counted as generated, its tokens
        spent; the guard sees it as an answered request)."""
        if self.guard is not None:
            self.guard.after_call(self.backend.spec, gen)
        self.stats._add(generated=1, input_tokens=gen.input_tokens, output_tokens=gen.output_tokens,
                        latency_s=gen.latency_s)
        return self._store(key, request, gen)

    def _lookup(self, key: str) -> Generation | None:
        assert self.cache is not None
        try:
            row = self.cache.get(key)
        except sqlite3.Error as exc:
            if self.mode == "only":
                raise
            warnings.warn(
                f"generation cache {self.cache.path}: read failed ({exc}); generating anew",
                CacheWarning,
                stacklevel=3,
            )
            return None
        if row is None:
            return None
        if self.mode == "refresh" and row.run_id != self.run_id:
            return None
        return row.to_generation(cached=True)

    def _store(self, key: str, request: GenerationRequest, gen: Generation) -> Generation:
        assert self.cache is not None
        try:
            row = self.cache.put(
                key,
                gen,
                identity=self.identity,
                request=request,
                run_id=self.run_id,
                replace=self.mode == "refresh",
            )
        except sqlite3.Error as exc:
            warnings.warn(
                f"generation cache {self.cache.path}: write failed ({exc}); the reply is used "
                "but not cached",
                CacheWarning,
                stacklevel=3,
            )
            return Generation(
                text=gen.text,
                usage=dict(gen.usage),
                latency_s=gen.latency_s,
                model=gen.model,
                cached=False,
                finish_reason=gen.finish_reason,
                key=key,
            )
        # Another process may have stored this key first: use its reply (first writer wins).
        return row.to_generation(cached=row.reply != gen.text)

    def generate(self, request: GenerationRequest) -> Generation:
        """One reply for ``request``, from the cache when possible.

        Raises :class:`~pytest_vibecheck.generate.cache.CacheMissError` (mode ``only``, miss),
        :class:`~pytest_vibecheck.generate.backends.base.BackendError` (API failure after retries) or
        :class:`~pytest_vibecheck.generate.backends.base.ReplayMissError`; the error carries the
        request's ``task_id`` and ``label``. Errors are counted in ``stats.errors``.
        """
        self.stats._add(requests=1)
        try:
            return self._generate(request)
        except GenerationError as exc:
            if exc.task_id is None:
                exc.task_id = request.task_id
            if exc.label is None:
                exc.label = request.label
            self.stats._add(errors=1)
            raise
        except Exception:
            self.stats._add(errors=1)
            raise

    def _generate(self, request: GenerationRequest) -> Generation:
        if not self.uses_cache:
            return self._call_backend(request)
        key = self.key(request)
        hit = self._lookup(key)
        if hit is not None and self.batch is not None and self.batch.fresh(key):
            # generated by this run's batch: its first reader reads it as generated (its tokens
            # were counted when the batch's results were collected)
            self.stats._add(misses=1)
            return Generation(
                text=hit.text,
                usage=dict(hit.usage),
                latency_s=hit.latency_s,
                model=hit.model,
                cached=False,
                finish_reason=hit.finish_reason,
                key=key,
            )
        if hit is None and self.batch is not None and self.mode != "only":
            self.stats._add(misses=1)
            raise self.batch.miss_error(key, request)
        if hit is not None:
            self.stats._add(
                hits=1,
                cached_input_tokens=hit.input_tokens,
                cached_output_tokens=hit.output_tokens,
            )
            return hit
        if self.mode == "only":
            self.stats._add(misses=1)
            assert self.cache is not None
            raise CacheMissError(
                f"cache mode 'only': no cached reply for {request.describe()} from "
                f"{self.backend.spec} in {self.cache.path} (key {key[:12]}); run once with "
                "--vibe-cache-mode use to fill the cache, or check that the model, prompt, "
                "temperature and max tokens match the cached run",
                task_id=request.task_id,
                label=request.label,
            )
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        while not self._claim(key, owner):
            hit = self._wait_for(key)
            if hit is not None:  # another process (or thread) generated it meanwhile
                self.stats._add(
                    hits=1,
                    cached_input_tokens=hit.input_tokens,
                    cached_output_tokens=hit.output_tokens,
                )
                return hit
        self.stats._add(misses=1)
        try:
            gen = self._call_backend(request)
            return self._store(key, request, gen)
        finally:
            self._release(key, owner)

    def _claim(self, key: str, owner: str) -> bool:
        """Claim ``key`` for ``owner`` (True), or False while another owner holds it. A cache
        that cannot be written does not stop the run: the request is then made unclaimed."""
        assert self.cache is not None
        try:
            return self.cache.claim(key, owner, ttl_s=CLAIM_TTL_S)
        except sqlite3.Error:
            return True

    def _release(self, key: str, owner: str) -> None:
        assert self.cache is not None
        with contextlib.suppress(sqlite3.Error):
            self.cache.release(key, owner)

    def _wait_for(self, key: str) -> Generation | None:
        """Wait while another owner holds ``key``: its reply (from the cache) once stored, or
        None when the claim ends without one (that owner failed; the caller claims anew)."""
        assert self.cache is not None
        while True:
            time.sleep(CLAIM_POLL_S)
            hit = self._lookup(key)
            if hit is not None:
                return hit
            try:
                if not self.cache.claimed(key):
                    return self._lookup(key)
            except sqlite3.Error:
                return None

    def generate_many(
        self, requests: Iterable[GenerationRequest]
    ) -> list[Generation | GenerationError]:
        """Generate independent requests in threads (at most :attr:`concurrency` at once).

        Returns one entry per request, in order: the :class:`Generation` or the
        :class:`GenerationError` it raised (other exceptions propagate).
        """
        reqs = list(requests)

        def one(req: GenerationRequest) -> Generation | GenerationError:
            try:
                return self.generate(req)
            except GenerationError as exc:
                return exc

        if len(reqs) <= 1 or self.concurrency == 1:
            return [one(r) for r in reqs]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(reqs))) as pool:
            return list(pool.map(one, reqs))

    def close(self) -> None:
        """Close the backend and the cache connection."""
        self.backend.close()
        if self.cache is not None:
            self.cache.close()
