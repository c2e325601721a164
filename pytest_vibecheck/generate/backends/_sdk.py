"""Shared plumbing of the SDK backends (``openai``, ``anthropic``): lazy import, key lookup,
URL choice and translation of SDK exceptions into :class:`BackendError`."""

from __future__ import annotations

import abc
import importlib
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


def translate_error(exc: BaseException, sdk: ModuleType, provider: str, model: str, max_retries: int) -> BackendError:
    """An SDK exception as :class:`BackendError` (:class:`RateLimitError` for 429).

    The message names the provider, model, HTTP status and the SDK's own message; it never
    contains the key (the SDKs do not echo it).
    """
    tries = f"after {max_retries + 1} attempts"
    status = getattr(exc, "status_code", None)
    detail = str(getattr(exc, "message", None) or exc).strip()
    if len(detail) > 500:
        detail = detail[:500] + " ..."
    if isinstance(exc, getattr(sdk, "RateLimitError", ())):
        return RateLimitError(
            f"{provider}:{model}: rate limited (HTTP 429) {tries}: {detail}",
            provider=provider,
            model=model,
            status=429,
        )
    if isinstance(exc, getattr(sdk, "APITimeoutError", ())):
        return BackendError(
            f"{provider}:{model}: request timed out {tries}", provider=provider, model=model
        )
    if isinstance(exc, getattr(sdk, "APIConnectionError", ())):
        return BackendError(
            f"{provider}:{model}: connection failed {tries}: {detail}", provider=provider, model=model
        )
    if isinstance(status, int):
        fatal = status in _FATAL_STATUSES
        hint = ""
        if status in (401, 403):
            hint = " (check the API key variable and its permissions)"
        elif status == 404:
            hint = " (check the model name and the base URL)"
        return BackendError(
            f"{provider}:{model}: HTTP {status}{hint}: {detail}",
            provider=provider,
            model=model,
            status=status,
            fatal=fatal,
        )
    return BackendError(f"{provider}:{model}: {type(exc).__name__}: {detail}", provider=provider, model=model)


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
        self.max_concurrency = self.settings.max_concurrency or 8
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
                )
            return self._client

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
            raise translate_error(exc, sdk, self.provider, self.model, self.settings.max_retries) from exc
        return self._to_generation(resp, time.perf_counter() - start)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
