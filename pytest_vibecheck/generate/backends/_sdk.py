"""Shared plumbing of the SDK backends (``openai``, ``anthropic``): lazy import, key lookup,
URL choice and translation of SDK exceptions into :class:`BackendError`."""

from __future__ import annotations

import abc
import importlib
import re
import threading
import time
from types import ModuleType
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pytest_vibecheck.generate.backends.base import (
    EXCLUDED_PARAMS,
    Backend,
    BackendError,
    BackendSettings,
    Generation,
    GenerationRequest,
    MissingKeyError,
    MissingSDKError,
    RateLimitError,
    is_secret_name,
    redact_url,
)

#: Placeholder key sent to a custom server that needs none (vLLM, Ollama, llama.cpp).
NO_KEY = "sk-no-key"

#: HTTP statuses after which every further request fails the same way.
_FATAL_STATUSES = frozenset({401, 402, 403, 404})


def import_sdk(module: str, extra: str) -> ModuleType:
    """Import the provider SDK or raise :class:`MissingSDKError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingSDKError(
            f"the {module!r} package is needed for {module}: models; install it with "
            f"pip install 'pytest-vibecheck[{extra}]'"
        ) from None


def resolve_base_url(settings: BackendSettings, env_var: str, default: str) -> tuple[str, bool]:
    """``(base_url, custom)``: the explicit URL, else ``$env_var``, else ``default``.

    ``custom`` is True when the URL points elsewhere than the official host of ``default``
    (then a missing key is allowed).
    """
    url = settings.base_url or settings.getenv(env_var) or default
    custom = (urlsplit(url).hostname or "") != (urlsplit(default).hostname or "")
    return url.rstrip("/"), custom


def resolve_key(settings: BackendSettings, default_env: str, *, custom: bool, provider: str) -> str:
    """The API key from ``settings.api_key_env`` (or ``default_env``).

    On a custom server a missing key gives :data:`NO_KEY`; on the official endpoint it
    raises :class:`MissingKeyError` saying which variable to set.
    """
    env = settings.api_key_env or default_env
    key = settings.getenv(env)
    if key:
        return key
    if custom:
        return NO_KEY
    hint = "" if settings.api_key_env else " (or name another variable with --vibe-api-key-env)"
    raise MissingKeyError(
        f"{provider}: the API key is not set; export {env}=...{hint}. Keys are read from the "
        "environment only and never cached or reported."
    )


def api_params(extra: Any) -> dict[str, Any]:
    """The request's extra sampling parameters to send in the JSON body (credentials and
    transport settings removed)."""
    return {k: v for k, v in dict(extra).items() if k not in EXCLUDED_PARAMS and not is_secret_name(k)}


#: What to do after each fatal HTTP status (shown in the one-line message).
_FATAL_HINTS: dict[int, str] = {
    401: "check the API key variable (--vibe-api-key-env) and that the key is valid",
    402: "check the account's billing or credit",
    403: "check the key's permissions for this model",
    404: "check the model name (--vibe-model) and the base URL (--vibe-base-url)",
}

#: Error codes of a 429 reply that mean the account's quota is spent (OpenAI): no retry helps.
_QUOTA_CODES = frozenset({"insufficient_quota"})

#: Error codes of a 400 reply that mean the model does not exist (OpenAI-compatible servers).
_UNKNOWN_MODEL_CODES = frozenset({"model_not_found", "unknown_model", "invalid_model"})


def _cannot_connect(exc: BaseException) -> bool:
    """True when ``exc`` (or its cause) is a refused connection or a failed DNS look-up: the
    HTTP client's ``ConnectError`` (``httpx`` / ``httpx2``), ``ConnectionRefusedError`` or
    ``socket.gaierror``."""
    import socket

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ == "ConnectError" or isinstance(seen, (ConnectionRefusedError, socket.gaierror)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _detail(exc: BaseException) -> str:
    """The server's own message: ``error.message`` (or ``message``) of the JSON body when there
    is one, else the SDK's message without its ``Error code: N -`` prefix; on one line."""
    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        inner = body.get("error")
        text = str((inner.get("message") if isinstance(inner, dict) else None) or body.get("message") or "")
    if not text:
        text = re.sub(r"^Error code: \d+ - ", "", str(getattr(exc, "message", None) or exc))
    return " ".join(text.split())


def translate_error(
    exc: BaseException,
    sdk: ModuleType,
    provider: str,
    model: str,
    max_retries: int,
    base_url: str | None = None,
    timeout_s: float | None = None,
    unset_key_env: str | None = None,
) -> BackendError:
    """An SDK exception as :class:`BackendError` (:class:`RateLimitError` for 429).

    The message is one line naming the provider, model, base URL (credentials removed, see
    :func:`~pytest_vibecheck.generate.backends.base.redact_url`), the HTTP status, the SDK's
    own message and, for a fatal error, what to do; it never contains the key (the SDKs do not
    echo it). Fatal (``fatal=True``: every further request would fail the same way): HTTP
    401, 402, 403, 404, a 429 whose error code says the quota is spent (``insufficient_quota``),
    a 400 whose error code says the model is unknown, and a refused connection or failed DNS
    look-up after the SDK's retries (a few seconds of backoff). A timeout names ``timeout_s``
    (seconds per attempt) and the setting that raises it; a 401 when no key was set
    (``unset_key_env``: the variable that was empty) says so.
    """
    tries = f"after {max_retries + 1} attempts"
    where = f"{provider}:{model}" + (f" at {redact_url(base_url)}" if base_url else "")
    status = getattr(exc, "status_code", None)
    detail = _detail(exc)
    if len(detail) > 300:
        detail = detail[:300] + " ..."
    common: dict[str, Any] = {"provider": provider, "model": model, "base_url": redact_url(base_url)}
    if isinstance(exc, getattr(sdk, "RateLimitError", ())):
        if str(getattr(exc, "code", "") or "") in _QUOTA_CODES:
            return BackendError(
                f"{where}: quota exhausted (HTTP 429 {getattr(exc, 'code', '')}): {detail}; "
                f"{_FATAL_HINTS[402]}",
                status=429,
                fatal=True,
                **common,
            )
        return RateLimitError(f"{where}: rate limited (HTTP 429) {tries}: {detail}", status=429, **common)
    if isinstance(exc, getattr(sdk, "APITimeoutError", ())):
        each = f" of {timeout_s:g} s each" if timeout_s is not None else ""
        return BackendError(
            f"{where}: request timed out {tries}{each}: raise the request timeout "
            "(--vibe-request-timeout SECONDS, or request_timeout in [tool.vibecheck]) for a slow "
            "server, or check that the server answers",
            **common,
        )
    if isinstance(exc, getattr(sdk, "APIConnectionError", ())):
        if _cannot_connect(exc):
            return BackendError(
                f"{where}: cannot connect {tries} (connection refused or host not found): check "
                "--vibe-base-url and that the server is running",
                fatal=True,
                **common,
            )
        return BackendError(f"{where}: connection failed {tries}: {detail}", **common)
    if isinstance(status, int):
        code = str(getattr(exc, "code", "") or "")
        fatal = status in _FATAL_STATUSES or (status == 400 and code in _UNKNOWN_MODEL_CODES)
        hint = _FATAL_HINTS.get(status, _FATAL_HINTS[404] if fatal else "")
        if status == 401 and unset_key_env is not None:  # a custom server got no key at all
            hint = (
                f"no API key was set: {unset_key_env} is empty, so a placeholder was sent; export {unset_key_env}=... "
                "(or name another variable with --vibe-api-key-env)"
            )
        text = f"{where}: HTTP {status}: {detail}" + (f"; {hint}" if hint else "")
        return BackendError(text, status=status, fatal=fatal, **common)
    return BackendError(f"{where}: {type(exc).__name__}: {detail}", **common)


class SDKBackend(Backend):
    """A backend on an official provider SDK (``openai``, ``anthropic``).

    Holds what both share: the base URL choice, the key lookup, one lazily built client per
    backend (the SDK's own retries with backoff: ``settings.max_retries``, ``timeout_s``), the
    timing of a call and the translation of SDK exceptions into :class:`BackendError` /
    :class:`RateLimitError`. Subclasses set the class attributes and implement
    :meth:`request_params`, :meth:`_create` (the SDK call) and :meth:`_to_generation`.
    """

    #: SDK module (also the name of the pip extra), e.g. ``"openai"``
    sdk_module: ClassVar[str]
    #: client class and base exception class in that module
    client_class: ClassVar[str]
    error_class: ClassVar[str]
    key_env_var: ClassVar[str]
    base_url_env_var: ClassVar[str]
    default_base_url: ClassVar[str]

    def __init__(self, model: str, settings: BackendSettings | None = None) -> None:
        self.model = model
        self.settings = settings or BackendSettings()
        self.base_url, self.custom_server = resolve_base_url(
            self.settings, self.base_url_env_var, self.default_base_url
        )
        self.max_concurrency = self.settings.max_concurrency
        self._client: Any = None
        self._lock = threading.Lock()

    def preflight(self) -> None:
        """Raises MissingSDKError if the SDK is absent, MissingKeyError if the key is unset on
        the official endpoint."""
        import_sdk(self.sdk_module, self.sdk_module)
        self._key()

    def _key(self) -> str:
        return resolve_key(self.settings, self.key_env_var, custom=self.custom_server, provider=self.provider)

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                sdk = import_sdk(self.sdk_module, self.sdk_module)
                self._client = getattr(sdk, self.client_class)(
                    api_key=self._key(),
                    base_url=self.base_url,
                    max_retries=self.settings.max_retries,
                    timeout=self.settings.timeout_s,
                    **self._http_client(sdk),
                )
            return self._client

    def _http_client(self, sdk: ModuleType) -> dict[str, Any]:
        """``{"http_client": ...}``: the SDK's own default HTTP client with a response hook that
        reports every HTTP status (the SDK's retries included) to :attr:`on_response`; ``{}``
        (the SDK's client, no reports) when this SDK version has no ``DefaultHttpxClient``."""
        factory = getattr(sdk, "DefaultHttpxClient", None)
        if factory is None:
            return {}

        def hook(response: Any) -> None:
            callback = self.on_response
            if callback is not None:
                callback(int(response.status_code), dict(response.headers))

        try:
            return {"http_client": factory(event_hooks={"response": [hook]})}
        except TypeError:  # pragma: no cover - an SDK whose client takes no event hooks
            return {}

    @abc.abstractmethod
    def request_params(self, request: GenerationRequest) -> dict[str, Any]:
        """The keyword arguments of the SDK call for ``request``."""

    @abc.abstractmethod
    def _create(self, client: Any, params: dict[str, Any]) -> Any:
        """Make the SDK call; returns the SDK's response object."""

    @abc.abstractmethod
    def _to_generation(self, resp: Any, latency_s: float) -> Generation:
        """Turn the SDK's response into a :class:`Generation` (``cached=False``)."""

    def generate(self, request: GenerationRequest) -> Generation:
        """One call; raises BackendError / RateLimitError after the SDK's retries."""
        client = self._get_client()
        sdk = import_sdk(self.sdk_module, self.sdk_module)
        start = time.perf_counter()
        try:
            resp = self._create(client, self.request_params(request))
        except getattr(sdk, self.error_class) as exc:
            raise translate_error(
                exc, sdk, self.provider, self.model, self.settings.max_retries, self.base_url,
                self.settings.timeout_s,
                unset_key_env=(self.settings.api_key_env or self.key_env_var)
                if self._key() == NO_KEY else None,
            ) from exc
        return self._to_generation(resp, time.perf_counter() - start)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
