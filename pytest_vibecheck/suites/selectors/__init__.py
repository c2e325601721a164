"""Instruction selectors for augmentation (paper §3.1): ``rules``, ``anthropic:MODEL``, ``openai:MODEL``."""

from __future__ import annotations

from pathlib import Path

from pytest_vibecheck.errors import UnknownIdError
from pytest_vibecheck.suites.selectors.base import (
    Judgement,
    Selector,
    SelectorError,
    TaskJudgements,
)

__all__ = ["Judgement", "Selector", "SelectorError", "TaskJudgements", "make_selector"]

SELECTOR_KINDS = ("rules", "anthropic:MODEL", "openai:MODEL")


def make_selector(
    spec: str, *, cache_path: Path | None = None, client: object | None = None
) -> Selector:
    """Build a selector from ``rules``, ``anthropic:MODEL`` or ``openai:MODEL``.

    LLM selectors cache replies in ``cache_path`` (SQLite; default
    ``.vibecheck/selector-cache.sqlite``); ``client`` injects an SDK client (tests).
    Raises :class:`UnknownIdError` for an unknown kind and :class:`SelectorError` when the
    SDK is missing.
    """
    if spec == "rules":
        from pytest_vibecheck.suites.selectors.rules import RulesSelector

        return RulesSelector()
    provider, sep, model = spec.partition(":")
    if sep and model and provider in ("anthropic", "openai"):
        from pytest_vibecheck.suites.selectors.llm import LLMSelector

        return LLMSelector(provider, model, cache_path=cache_path, client=client)
    raise UnknownIdError("selector", spec, SELECTOR_KINDS)
