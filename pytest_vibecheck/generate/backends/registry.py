"""Backends by spec: ``make_backend("provider:model", settings)``.

The providers are the backends of the registry (:mod:`pytest_vibecheck.registry`): the built-in
``openai``, ``anthropic``, ``replay``, ``reference`` and ``scripted`` (a test model, see
:mod:`pytest_vibecheck.generate.backends.scripted`), and any a plugin registers in the
``pytest_vibecheck_register`` hook (an entry point of the group ``pytest_vibecheck``, a
``conftest.py``)::

    def pytest_vibecheck_register(registry):
        registry.add_backend("mycloud", "my_package.vibe:make_backend")

The factory is ``(model: str, settings: BackendSettings) -> Backend``. :func:`register_backend`
adds one to the active registry in code.

A spec without a provider is accepted for well-known model families: ``gpt-*``, ``o1*``,
``o3*``, ``o4*``, ``chatgpt-*`` -> ``openai``; ``claude-*`` -> ``anthropic``.
"""

from __future__ import annotations

from pytest_vibecheck.errors import ParameterError, UnknownIdError
from pytest_vibecheck.generate.backends.base import Backend, BackendSettings
from pytest_vibecheck.registry import BackendFactory, get_registry

__all__ = [
    "BackendFactory",
    "available_providers",
    "make_backend",
    "parse_spec",
    "register_backend",
    "unregister_backend",
]

_INFERRED: tuple[tuple[str, str], ...] = (
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
)


def register_backend(provider: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make ``provider:MODEL`` specs build backends with ``factory(model, settings)`` (in the
    active registry).

    Raises DuplicateIdError if ``provider`` is taken (built-in or registered) unless
    ``replace``; ParameterError for a provider name containing ``:``.
    """
    get_registry().add_backend(provider, factory, origin="register_backend()", replace=replace)


def unregister_backend(provider: str) -> None:
    """Remove a provider of the active registry (no error if absent)."""
    get_registry().backends.remove(provider)


def available_providers() -> list[str]:
    """All provider names of the active registry (sorted)."""
    return get_registry().backends.names()


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"provider:model"`` into ``(provider, model)``.

    ``"reference"`` -> ``("reference", "")``; a bare model of a well-known family is
    given its provider (``"gpt-5"`` -> ``("openai", "gpt-5")``). Raises ParameterError for
    an empty spec or a missing model, UnknownIdError (with suggestions) for an unknown
    provider.
    """
    registry = get_registry()
    text = spec.strip()
    if not text:
        raise ParameterError("model spec is empty; expected PROVIDER:MODEL such as openai:gpt-5")
    provider, sep, model = text.partition(":")
    if not sep:
        if text in registry.backends:
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
    if provider not in registry.backends:
        raise UnknownIdError("backend provider", provider, available_providers())
    if not model and not registry.model_optional(provider):
        raise ParameterError(f"model spec {spec!r} names no model; expected {provider}:MODEL")
    return provider, model


def make_backend(spec: str, settings: BackendSettings | None = None) -> Backend:
    """The backend named by ``spec`` (``provider:model``), built with ``settings``.

    Raises UnknownIdError for an unknown provider, ParameterError for a malformed spec, and
    whatever the factory raises for a bad model (e.g. an unknown replay name). Missing keys
    and SDKs are reported by :meth:`Backend.preflight`, not here, so an offline run (cache
    mode ``only``) needs neither.
    """
    provider, model = parse_spec(spec)
    factory = get_registry().backend_factory(provider)
    return factory(model, settings or BackendSettings())
