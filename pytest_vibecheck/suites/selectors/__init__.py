"""Instruction selectors for augmentation (paper §3.1): ``rules``, ``anthropic:MODEL``, ``openai:MODEL``."""

from __future__ import annotations

from pathlib import Path

from pytest_vibecheck.registry import get_registry
from pytest_vibecheck.suites.selectors.base import (
    Judgement,
    Selector,
    SelectorError,
    TaskJudgements,
)

__all__ = ["Judgement", "Selector", "SelectorError", "TaskJudgements", "make_selector"]


def make_selector(
    spec: str, *, cache_path: Path | None = None, client: object | None = None
) -> Selector:
    """Build a selector from ``rules``, ``anthropic:MODEL``, ``openai:MODEL`` or a kind a plugin
    registered (:meth:`pytest_vibecheck.registry.Registry.add_selector`).

    LLM selectors cache replies in ``cache_path`` (SQLite; default
    ``.vibecheck/selector-cache.sqlite``); ``client`` injects an SDK client (tests).
    Raises :class:`UnknownIdError` for an unknown kind and :class:`SelectorError` when the
    SDK is missing.
    """
    factory, model = get_registry().selector(spec)
    return factory(model, cache_path=cache_path, client=client)
