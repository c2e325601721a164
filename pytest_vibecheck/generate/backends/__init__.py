"""Model backends behind one interface (see ``docs/generation.md``).

``make_backend("provider:model", settings)`` builds one; providers: ``openai``, ``anthropic``,
``replay``, ``reference``, ``scripted`` and any registered or entry-point provider.
SDK modules are imported lazily, so importing this package needs neither SDK.
"""

from __future__ import annotations

from pytest_vibecheck.generate.backends.base import (
    EXCLUDED_PARAMS,
    Backend,
    BackendError,
    BackendSettings,
    Generation,
    GenerationError,
    GenerationRequest,
    Message,
    MissingKeyError,
    MissingSDKError,
    RateLimitError,
    ReplayMissError,
    fence,
    messages_fingerprint,
)
from pytest_vibecheck.generate.backends.registry import (
    available_providers,
    make_backend,
    parse_spec,
    register_backend,
    unregister_backend,
)
from pytest_vibecheck.registry import ENTRY_POINT_GROUP

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXCLUDED_PARAMS",
    "Backend",
    "BackendError",
    "BackendSettings",
    "Generation",
    "GenerationError",
    "GenerationRequest",
    "Message",
    "MissingKeyError",
    "MissingSDKError",
    "RateLimitError",
    "ReplayMissError",
    "available_providers",
    "fence",
    "make_backend",
    "messages_fingerprint",
    "parse_spec",
    "register_backend",
    "unregister_backend",
]
