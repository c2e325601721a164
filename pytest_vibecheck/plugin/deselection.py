"""Counting the benchmark items that ``-k``, ``-m``, ``--deselect``, ``--lf`` or ``--vibe-shard``
deselected, into the session's :class:`~pytest_vibecheck.config.selection.Selection` (see that
module's docstring for the phases)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_vibecheck.config.selection import Selection

__all__ = ["DeselectionCounter", "register_counter"]


def _is_ours(item: object) -> bool:
    from pytest_vibecheck.plugin.items import VibeItem

    return isinstance(item, VibeItem)


class DeselectionCounter:
    """Counts benchmark items deselected, by the option that deselected them (see the module
    docstring); registered on the controller when the plugin is active."""

    def __init__(self, config: pytest.Config, selection: Selection) -> None:
        self.config = config
        self.selection = selection
        self.phase = "before"

    def _plain_label(self) -> str:
        opt = self.config.option
        given = [flag for flag, value in (("--deselect", getattr(opt, "deselect", None)),
                                          ("-k", getattr(opt, "keyword", "")),
                                          ("-m", getattr(opt, "markexpr", ""))) if value]
        return "/".join(given) or "another plugin"

    def _wrapper_label(self) -> str:
        opt = self.config.option
        given = [flag for flag, value in (("--lf", getattr(opt, "lf", False)),
                                          ("--vibe-shard", getattr(opt, "vibe_shard", None))) if value]
        return "/".join(given) or "another plugin"

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.phase = "plain"
        self.selection.collected = sum(_is_ours(i) for i in items)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        n = sum(_is_ours(i) for i in items)
        if not n:
            return
        label = self._plain_label() if self.phase == "plain" else (
            self._wrapper_label() if self.phase == "after" else "another plugin"
        )
        self.selection.deselected[label] = self.selection.deselected.get(label, 0) + n

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.phase = "done"
        self.selection.selected = sum(_is_ours(i) for i in session.items)


class _LateMarker:
    """The ``trylast`` half of :class:`DeselectionCounter` (a plugin has one implementation per
    hook): after it, deselections come from hook wrappers (``--lf``, ``--vibe-shard``)."""

    def __init__(self, counter: DeselectionCounter) -> None:
        self.counter = counter

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self) -> None:
        self.counter.phase = "after"


def register_counter(config: pytest.Config, selection: Selection) -> None:
    """Register the deselection counter (both halves) on ``config``'s plugin manager."""
    counter = DeselectionCounter(config, selection)
    config.pluginmanager.register(counter, "vibecheck-deselections")
    config.pluginmanager.register(_LateMarker(counter), "vibecheck-deselections-late")
