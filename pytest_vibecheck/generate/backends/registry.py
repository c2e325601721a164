"""The backend registry: ``make_backend("provider:model", settings)``.

Built-in providers: ``openai``, ``anthropic``, ``replay``, ``reference`` and ``scripted``
(a test model, see :mod:`pytest_vibecheck.generate.backends.scripted`). Third-party backends register
a factory ``(model: str, settings: BackendSettings) -> Backend`` either in code with
:func:`register_backend` or through the entry-point group ``pytest_vibecheck.generate.backends``
(name = provider)::

    [project.entry-points."pytest_vibecheck.generate.backends"]
    mycloud = "my_package.vibe:make_backend"

A spec without a provider is accepted for well-known model families: ``gpt-*``, ``o1*``,
``o3*``, ``o4*``, ``chatgpt-*`` -> ``openai``; ``claude-*`` -> ``anthropic``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from importlib.metadata import entry_points

from pytest_vibecheck.errors import DuplicateIdError, ParameterError, UnknownIdError
from pytest_vibecheck.generate.backends.base import Backend, BackendSettings

BackendFactory = Callable[[str, BackendSettings], Backend]

#: Entry-point group for third-party backends.
ENTRY_POINT_GROUP = "pytest_vibecheck.generate.backends"

_BUILTIN: dict[str, str] = {
    "openai": "pytest_vibecheck.generate.backends.openai_backend:from_spec",
    "anthropic": "pytest_vibecheck.generate.backends.anthropic_backend:from_spec",
    "replay": "pytest_vibecheck.generate.backends.replay:from_spec",
    "reference": "pytest_vibecheck.generate.backends.reference:from_spec",
    "scripted": "pytest_vibecheck.generate.backends.scripted:from_spec",
}

#: Providers whose spec needs no model (``reference``).
_MODEL_OPTIONAL = frozenset({"reference"})

_INFERRED: tuple[tuple[str, str], ...] = (
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
)

_registered: dict[str, BackendFactory] = {}
_lock = threading.Lock()


def register_backend(provider: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make ``provider:MODEL`` specs build backends with ``factory(model, settings)``.

    Raises DuplicateIdError if ``provider`` is taken (built-in or registered) unless
    ``replace``; ParameterError for a provider name containing ``:``.
    """
    if not provider or ":" in provider:
        raise ParameterError(f"backend provider name {provider!r} must be non-empty and contain no ':'")
    with _lock:
        if not replace and (provider in _registered or provider in _BUILTIN):
            raise DuplicateIdError(
                f"backend provider {provider!r} is already registered; pass replace=True to override"
            )
        _registered[provider] = factory


def unregister_backend(provider: str) -> None:
    """Remove a provider added with :func:`register_backend` (no error if absent)."""
    with _lock:
        _registered.pop(provider, None)


def _entry_point_factories() -> dict[str, object]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_providers() -> list[str]:
    """All provider names: built-in, registered and from entry points (sorted)."""
    return sorted(set(_BUILTIN) | set(_registered) | set(_entry_point_factories()))


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"provider:model"`` into ``(provider, model)``.

    ``"reference"`` -> ``("reference", "")``; a bare model of a well-known family is
    given its provider (``"gpt-5"`` -> ``("openai", "gpt-5")``). Raises ParameterError for
    an empty spec or a missing model, UnknownIdError (with suggestions) for an unknown
    provider.
    """
    text = spec.strip()
    if not text:
        raise ParameterError("model spec is empty; expected PROVIDER:MODEL such as openai:gpt-5")
    provider, sep, model = text.partition(":")
    if not sep:
        if text in _MODEL_OPTIONAL or text in available_providers():
            provider, model = text, ""
        else:
            for prefix, inferred in _INFERRED:
                if text.lower().startswith(prefix):
                    return inferred, text
            raise UnknownIdError(
                "model spec (write PROVIDER:MODEL; providers)", text, available_providers()
            )
    provider = provider.strip()
    model = model.strip()
    if provider not in available_providers():
        raise UnknownIdError("backend provider", provider, available_providers())
    if not model and provider not in _MODEL_OPTIONAL:
        raise ParameterError(f"model spec {spec!r} names no model; expected {provider}:MODEL")
    return provider, model


def _load(target: str) -> BackendFactory:
    module, _, attr = target.partition(":")
    factory: BackendFactory = getattr(importlib.import_module(module), attr)
    return factory


def make_backend(spec: str, settings: BackendSettings | None = None) -> Backend:
    """The backend named by ``spec`` (``provider:model``), built with ``settings``.

    Registered providers win over entry points, which win over built-ins. Raises
    UnknownIdError for an unknown provider, ParameterError for a malformed spec, and
    whatever the factory raises for a bad model (e.g. an unknown replay name). Missing keys
    and SDKs are reported by :meth:`Backend.preflight`, not here, so an offline run (cache
    mode ``only``) needs neither.
    """
    provider, model = parse_spec(spec)
    settings = settings or BackendSettings()
    with _lock:
        factory = _registered.get(provider)
    if factory is None:
        ep = _entry_point_factories().get(provider)
        factory = ep.load() if ep is not None else _load(_BUILTIN[provider])  # type: ignore[attr-defined]
    assert factory is not None
    return factory(model, settings)
