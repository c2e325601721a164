"""Instruction selectors for augmentation (paper §3.1): ``rules``, ``anthropic:MODEL``, ``openai:MODEL``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_vibecheck.registry import get_registry
from pytest_vibecheck.suites.selectors.base import (
    Judgement,
    Selector,
    SelectorError,
    TaskJudgements,
)

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends.base import BackendSettings

__all__ = ["Judgement", "Selector", "SelectorError", "TaskJudgements", "make_selector"]


def make_selector(
    spec: str, *, cache_path: Path | None = None, settings: BackendSettings | None = None
) -> Selector:
    """Build a selector from ``rules``, ``anthropic:MODEL``, ``openai:MODEL`` or a kind a plugin
    registered (:meth:`pytest_vibecheck.registry.Registry.add_selector`).

    LLM selectors call the model backend of the same spec (``--vibe-model`` syntax) built with
    ``settings`` (:class:`~pytest_vibecheck.generate.backends.base.BackendSettings`; default:
    base URL and key from the environment) and cache replies in ``cache_path`` (SQLite;
    default ``.vibecheck/selector-cache.sqlite``). Raises :class:`UnknownIdError` for an
    unknown kind; a missing key or SDK is a :class:`SelectorError` of the first request that
    is not in the cache.
    """
    factory, model = get_registry().selector(spec)
    return factory(model, cache_path=cache_path, settings=settings)
