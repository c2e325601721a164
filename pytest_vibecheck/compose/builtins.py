"""The built-ins of pytest-vibecheck, registered through the same hook as any third party.

Backends (``openai``, ``anthropic``, ``replay``, ``reference``, ``scripted``), the 30 shipped
VeriCode instructions, their four built-in checks, the selectors (``rules``,
``anthropic:MODEL``, ``openai:MODEL``) and the suite loaders (``bigcodebench``,
``livecodebench``, ``humaneval``, ``mbppplus``). Targets are ``"module:attribute"`` strings, so
registering imports no SDK.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends.base import BackendSettings
    from pytest_vibecheck.registry import Registry
    from pytest_vibecheck.suites.selectors.base import Selector

ORIGIN = "pytest-vibecheck (built-in)"

_BACKENDS = {
    "openai": "pytest_vibecheck.generate.backends.openai_backend:from_spec",
    "anthropic": "pytest_vibecheck.generate.backends.anthropic_backend:from_spec",
    "replay": "pytest_vibecheck.generate.backends.replay:from_spec",
    "reference": "pytest_vibecheck.generate.backends.reference:from_spec",
    "scripted": "pytest_vibecheck.generate.backends.scripted:from_spec",
}

def rules_selector(model: str, **_options: Any) -> Selector:
    """The deterministic ``rules`` selector (paper §3.1 done by rules; no model)."""
    from pytest_vibecheck.suites.selectors.rules import RulesSelector

    return RulesSelector()


def _llm_selector(provider: str) -> Any:
    def make(
        model: str, *, cache_path: Path | None = None, settings: BackendSettings | None = None
    ) -> Selector:
        from pytest_vibecheck.generate.backends.registry import make_backend
        from pytest_vibecheck.generate.chat import ChatModel
        from pytest_vibecheck.suites.selectors.llm import LLMSelector

        chat = ChatModel(make_backend(f"{provider}:{model}", settings))
        return LLMSelector(provider, model, chat=chat, cache_path=cache_path)

    return make


@pluggy.HookimplMarker("pytest")(tryfirst=True)  # pytest.hookimpl, without importing pytest
def pytest_vibecheck_register(registry: Registry) -> None:
    """Register every built-in (first, so a plugin reusing a shipped id gets the clash)."""
    from pytest_vibecheck.suites.loaders import LOADERS
    from pytest_vibecheck.verify import checks
    from pytest_vibecheck.verify.instructions import data_dir

    for provider, target in _BACKENDS.items():
        registry.add_backend(provider, target, model_optional=provider == "reference", origin=ORIGIN)
    for name, check in checks.CHECKS.items():
        registry.add_check(
            name, check, nothing_but_syntax=checks.NOTHING_BUT_SYNTAX.get(name), origin=ORIGIN
        )
    registry.add_instruction_dir(data_dir("instructions"), shipped=True)
    registry.add_selector("rules", rules_selector, origin=ORIGIN)
    for provider in ("anthropic", "openai"):
        registry.add_selector(provider, _llm_selector(provider), needs_model=True, origin=ORIGIN)
    for name, loader in LOADERS.items():
        registry.add_suite_loader(name, loader, origin=ORIGIN)
