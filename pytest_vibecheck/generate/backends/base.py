"""The model backend interface: one request in, one generation out.

A :class:`Backend` has one abstract method, :meth:`Backend.generate`. Everything a backend
needs to answer is in the :class:`GenerationRequest`; what changes the reply (messages,
sampling parameters, sample index) is part of the generation-cache key (see
:mod:`pytest_vibecheck.generate.cache`), while ``task_id``, ``label`` and ``reference`` are metadata
for the offline backends (replay, reference, scripted) and are never sent to an API.

Errors: an infrastructure failure (API error after the SDK's retries, rate limit, timeout)
is a :class:`BackendError`, never a model failure; the plugin reports it as a pytest *error*
and leaves it out of the metrics.
"""

from __future__ import annotations

import abc
import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pytest_vibecheck.errors import ParameterError, VibecheckError

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends.batch_api import BatchAPI

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")

Message = dict[str, str]
"""One chat message: ``{"role": "system"|"user"|"assistant", "content": str}``."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


# ---------------------------------------------------------------- errors


class GenerationError(VibecheckError):
    """Base of every error raised while producing a generation.

    ``task_id`` and ``label`` name the item when known. The plugin reports a
    ``GenerationError`` as a pytest *error* (not a failure) and excludes the item from metrics.
    """

    def __init__(self, message: str, *, task_id: str | None = None, label: str | None = None) -> None:
        self.task_id = task_id
        self.label = label
        super().__init__(message)


class BackendError(GenerationError):
    """Infrastructure failure: the API failed after the SDK's retries, timed out, or refused.

    ``status`` is the HTTP status when there was one. ``fatal`` is True when every further
    request will fail the same way (bad key, unknown model, permission denied, nothing listening
    at the base URL), so a caller may stop the run instead of erroring every item. ``base_url``:
    the server (credentials removed), when known.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        status: int | None = None,
        fatal: bool = False,
        task_id: str | None = None,
        label: str | None = None,
        base_url: str | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = base_url
        self.model = model
        self.status = status
        self.fatal = fatal
        super().__init__(message, task_id=task_id, label=label)


class RateLimitError(BackendError):
    """HTTP 429 still returned after the SDK's retries with backoff and jitter."""


class ReplayMissError(GenerationError):
    """A replay (or the reference backend) has no recorded reply for this request."""


class MissingKeyError(VibecheckError):
    """The API key environment variable is not set; the message says which one to set."""


class MissingSDKError(VibecheckError):
    """The provider's SDK is not installed; the message says which extra to install."""


# ---------------------------------------------------------------- requests and replies


@dataclass(frozen=True)
class GenerationRequest:
    """Everything needed to produce one reply.

    ``messages``: the chat, ``({"role": ..., "content": ...}, ...)``, first message
    optionally ``system``. ``temperature`` >= 0; ``max_tokens`` > 0 (output tokens).
    ``sample``: index of the sample (0-based); it changes the cache key only when
    ``temperature > 0``. ``extra``: further sampling parameters passed to the API
    (``top_p``, ``seed``, ``stop`` ...); keys in
    :data:`pytest_vibecheck.generate.cache.EXCLUDED_PARAMS` or that look like secrets are
    never part of the cache key nor stored.

    Metadata, never sent to an API and not part of the cache key: ``task_id`` and
    ``label`` (e.g. ``"baseline"``, ``"single-k3"``, ``"multi-k2"``; see
    :func:`pytest_vibecheck.generate.protocols.label`) for replay look-ups and messages;
    ``reference``: the task's canonical solution, for the ``reference`` backend.
    ``profile``: the run's profile (:mod:`pytest_vibecheck.suites.profiles`); never sent, but
    part of the cache key.

    Raises :class:`~pytest_vibecheck.errors.ParameterError` for an empty chat, a bad role,
    a negative temperature or a non-positive ``max_tokens``.
    """

    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 4096
    sample: int = 0
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    task_id: str | None = None
    label: str | None = None
    reference: str | None = field(default=None, repr=False)
    profile: str = "paper"

    def __post_init__(self) -> None:
        msgs = tuple(self.messages)
        if not msgs:
            raise ParameterError("generation request: messages is empty; give at least one user message")
        for i, m in enumerate(msgs):
            if not isinstance(m, Mapping) or set(m) != {"role", "content"}:
                raise ParameterError(
                    f"generation request: message {i} must be a dict with exactly 'role' and "
                    f"'content', got {m!r}"
                )
            if m["role"] not in ROLES or not isinstance(m["content"], str):
                raise ParameterError(
                    f"generation request: message {i} has role {m['role']!r} (expected one of "
                    f"{', '.join(ROLES)}) and content of type {type(m['content']).__name__} (expected str)"
                )
        if msgs[-1]["role"] != "user":
            raise ParameterError("generation request: the last message must be a user message")
        object.__setattr__(self, "messages", tuple({"role": m["role"], "content": m["content"]} for m in msgs))
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, (int, float)) or self.temperature < 0:
            raise ParameterError(f"generation request: temperature must be a number >= 0, got {self.temperature!r}")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens <= 0:
            raise ParameterError(f"generation request: max_tokens must be an int > 0, got {self.max_tokens!r}")
        if isinstance(self.sample, bool) or not isinstance(self.sample, int) or self.sample < 0:
            raise ParameterError(f"generation request: sample must be an int >= 0, got {self.sample!r}")
        object.__setattr__(self, "extra", dict(self.extra))  # a copy: the caller's dict may change

    @property
    def system(self) -> str | None:
        """The system prompt, if the first message is a system message."""
        first = self.messages[0]
        return first["content"] if first["role"] == "system" else None

    @property
    def chat(self) -> tuple[Message, ...]:
        """The messages without the leading system message."""
        return self.messages[1:] if self.messages[0]["role"] == "system" else self.messages

    def describe(self) -> str:
        """Short human description for error messages, e.g. ``task 'X' (single-k3)``."""
        task = f"task {self.task_id!r}" if self.task_id else "request"
        return f"{task} ({self.label})" if self.label else task


@dataclass(frozen=True)
class Generation:
    """One model reply.

    ``text``: the full reply. ``usage``: ``{"input_tokens": int, "output_tokens": int}``
    as reported by the provider (0 when unknown). ``latency_s``: wall time of the original
    API call in seconds (also for a cache hit, where it is the recorded time). ``model``: the
    model that answered as the provider names it. ``cached``: True when served from the
    generation cache. ``finish_reason``: the provider's stop reason (``"stop"``,
    ``"length"``, ``"end_turn"``, ``"max_tokens"`` ...) or None. ``key``: the cache key, when
    the generation went through the cache.
    """

    text: str
    usage: Mapping[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    latency_s: float = 0.0
    model: str = ""
    cached: bool = False
    finish_reason: str | None = None
    key: str | None = None

    @property
    def input_tokens(self) -> int:
        """Prompt tokens (0 when unknown)."""
        return int(self.usage.get("input_tokens", 0))

    @property
    def output_tokens(self) -> int:
        """Completion tokens (0 when unknown)."""
        return int(self.usage.get("output_tokens", 0))

    @property
    def truncated(self) -> bool:
        """True if the reply stopped at the token limit."""
        return self.finish_reason in ("length", "max_tokens")

    def to_dict(self) -> dict[str, Any]:
        """Builtins only (for ``user_properties`` and JSON reports)."""
        return {
            "text": self.text,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "latency_s": self.latency_s,
            "model": self.model,
            "cached": self.cached,
            "finish_reason": self.finish_reason,
            "key": self.key,
        }


def default_timeout(env: Mapping[str, str] | None = None) -> float:
    """Per-request timeout in seconds: ``$VIBECHECK_TIMEOUT`` when set (a number > 0), else 600.

    Slow local servers (a CPU-only llama.cpp generating 1,000 tokens at 1 token/s) need more
    than the default; a request that times out is retried by the SDK while the server may still
    be busy with it. Raises ParameterError for a value that is not a positive number.
    """
    raw = (os.environ if env is None else env).get("VIBECHECK_TIMEOUT", "").strip()
    if not raw:
        return 600.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise ParameterError(
            f"environment variable VIBECHECK_TIMEOUT: {raw!r} is not valid; expected a number of "
            "seconds > 0 (per-request timeout of the model backends)"
        )
    return value


@dataclass(frozen=True)
class BackendSettings:
    """Settings shared by all backends (the plugin fills them from its options).

    ``base_url``: an OpenAI-compatible (or Anthropic-compatible) server; ``None`` means the
    provider's ``*_BASE_URL`` environment variable, else the official endpoint.
    ``api_key_env``: name of the environment variable holding the key (default per
    provider: ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``). ``timeout_s``: per-request timeout
    in seconds (default :func:`default_timeout`: ``$VIBECHECK_TIMEOUT`` or 600). ``max_retries``: retries of the SDK (exponential backoff with jitter, honours
    ``Retry-After``) on 408/409/429/5xx and connection errors. ``max_concurrency``: cap on
    concurrent requests per process (``None``: the backend's default). ``env``: the
    environment to read keys from (``None``: ``os.environ``; tests pass a dict).
    ``options``: provider-specific options (documented in ``docs/generation.md``).
    """

    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = field(default_factory=lambda: default_timeout())
    max_retries: int = 4
    max_concurrency: int | None = None
    env: Mapping[str, str] | None = None
    options: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def getenv(self, name: str) -> str | None:
        """Value of environment variable ``name`` (empty counts as unset)."""
        source = os.environ if self.env is None else self.env
        value = source.get(name)
        return value or None


# ---------------------------------------------------------------- the interface


class Backend(abc.ABC):
    """A model: turns a :class:`GenerationRequest` into a :class:`Generation`.

    Subclasses set ``provider`` and ``model`` and implement :meth:`generate`. Defaults:
    ``cacheable = True`` (offline backends that answer from local data set it False: the
    generation cache is skipped for them), ``max_concurrency = None`` (no limit of its own),
    :meth:`cache_identity` = provider, model and base URL, :meth:`preflight` does nothing.
    """

    provider: str = ""
    model: str = ""
    base_url: str | None = None
    cacheable: bool = True
    max_concurrency: int | None = None
    #: Called with ``(HTTP status, response headers)`` for every HTTP response of an API
    #: backend, retries included (the generator's adaptive concurrency listens here).
    on_response: Callable[[int, Mapping[str, str]], None] | None = None

    @abc.abstractmethod
    def generate(self, request: GenerationRequest) -> Generation:
        """Produce one reply. Raises :class:`BackendError` (infrastructure) or
        :class:`ReplayMissError` (no recorded reply); never returns a partial reply silently."""

    @property
    def spec(self) -> str:
        """The spec that names this backend, e.g. ``"openai:gpt-5"`` or ``"reference"``."""
        return f"{self.provider}:{self.model}" if self.model else self.provider

    def cache_identity(self) -> dict[str, Any]:
        """What identifies this backend in the cache key: ``provider``, ``model``, ``base_url``
        (credentials removed from the URL)."""
        return {"provider": self.provider, "model": self.model, "base_url": redact_url(self.base_url)}

    def preflight(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Check that the backend can be called (key set, SDK installed) before a run starts.

        Raises :class:`MissingKeyError` or :class:`MissingSDKError`. Not called in cache mode
        ``only``, where the backend is never called.
        """

    def batch_api(self) -> BatchAPI | None:
        """The provider's batch API for ``--vibe-batch``
        (:class:`~pytest_vibecheck.generate.backends.batch_api.BatchAPI`), or None when the
        backend has none (the default; the offline backends)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release clients and files (idempotent)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"


# ---------------------------------------------------------------- helpers

#: ``request.extra`` keys that never change the reply: left out of the cache key, never
#: stored, never sent in the request body (re-exported by :mod:`pytest_vibecheck.generate.cache`).
EXCLUDED_PARAMS: frozenset[str] = frozenset(
    {
        "timeout",
        "timeout_s",
        "request_timeout",
        "max_retries",
        "retries",
        "concurrency",
        "max_concurrency",
        "api_key",
        "api_key_env",
        "api_base",
        "organization",
        "project",
        "headers",
        "extra_headers",
        "default_headers",
        "http_client",
        "user",
        "stream",
    }
)


_SECRET_NAME = re.compile(
    r"(api[_-]?key|secret|passw(or)?d|authori[sz]ation|auth[_-]?token|access[_-]?token|bearer|credential|^key$|^token$)",
    re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    """True if a parameter or header name looks like it holds a credential (never cached)."""
    return bool(_SECRET_NAME.search(name))


def redact_url(url: str | None) -> str | None:
    """``url`` without user info and with secret-looking query parameters removed.

    ``https://u:p@host/v1?api-key=x&a=1`` -> ``https://host/v1?a=1``. A trailing ``/`` is
    removed so that ``.../v1`` and ``.../v1/`` are the same server.
    """
    if url is None:
        return None
    parts = urlsplit(url.strip())
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc += f":{parts.port}"
    query = "&".join(
        q for q in parts.query.split("&") if q and not is_secret_name(q.split("=", 1)[0])
    )
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), query, ""))


def canonical_json(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces, UTF-8 kept) used for every hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def messages_fingerprint(messages: tuple[Message, ...] | list[Message]) -> str:
    """sha256 (hex) of the canonical JSON of the messages: the replay's exact-request key.

    Independent of provider and sampling parameters, so a replay recorded with one model
    spec can be served under another.
    """
    payload = [{"role": m["role"], "content": m["content"]} for m in messages]
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def fence(code: str, lang: str = "python") -> str:
    """``code`` as a fenced Markdown block: ```` ```python\\n<code>\\n``` ````.

    Exactly one newline separates the code from the closing fence.
    """
    body = code if code.endswith("\n") else code + "\n"
    return f"```{lang}\n{body}```"
