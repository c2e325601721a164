"""Unit tests of plugin.run: no-code detection, the adaptive prefetch window, error kinds."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_vibecheck.generate.backends.base import BackendError, RateLimitError, ReplayMissError
from pytest_vibecheck.generate.cache import CacheMissError
from pytest_vibecheck.plugin.run import failure, prefetch, record, stages
from pytest_vibecheck.verify.extract import extract_code


@pytest.mark.parametrize(
    ("reply", "no_code"),
    [
        ("", True),
        ("<think>let me see</think>", True),
        ("I cannot help with that.", True),
        ("Sorry", True),  # parses as a bare name
        ("42", True),
        ("def f():\n    return 1\n", False),  # raw code without fences
        ("```python\nx = 1\n```", False),
        ("```python\n\n```\nno code", True),  # blank block, prose does not parse
        ("import os\nprint(os.getcwd())", False),
    ],
)
def test_has_no_code(reply: str, no_code: bool) -> None:
    assert record.has_no_code(extract_code(reply)) is no_code


def test_error_kinds() -> None:
    assert failure.error_kind(RateLimitError("x", status=429)) == "rate_limit"
    assert failure.error_kind(BackendError("x", status=500)) == "api_error"
    assert failure.error_kind(ReplayMissError("x")) == "replay_miss"
    assert failure.error_kind(CacheMissError("x")) == "cache_miss"


def test_describe_names_the_exception_and_where() -> None:
    def boom() -> None:
        raise NameError("name 'x' is not defined")

    try:
        boom()
    except NameError as exc:
        text = failure.describe_exception(exc)
    assert text.startswith("NameError: name 'x' is not defined (at test_plugin_runitem.py:")
    assert text.endswith(" in boom)")


class _Item:
    def __init__(self, nodeid: str, session: Any) -> None:
        self.nodeid = nodeid
        self.session = session
        self.spec = nodeid
        self.config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugins=lambda: []))


def test_prefetch_window_grows_while_generation_is_fast_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_vibecheck.plugin import items as items_mod
    monkeypatch.setattr(items_mod, "VibeItem", _Item)
    session = SimpleNamespace(items=[])
    session.items = [_Item(f"s::t{i}[m]", session) for i in range(40)]
    batches: list[list[str]] = []
    slow = {"s::t2[m]"}

    def fake_prepare(runtime: Any, works: list[record.Work], concurrent: bool = True) -> None:
        batches.append([str(w.spec) for w in works])
        for w in works:
            w.timing["generate"] = 1.0 if w.spec in slow else 0.01

    monkeypatch.setattr(stages, "prepare", fake_prepare)
    runtime = SimpleNamespace(settings=SimpleNamespace(concurrency=2))
    pf = prefetch.Prefetcher(runtime, window=8)  # type: ignore[arg-type]
    for it in session.items:
        work = pf.take(it)  # type: ignore[arg-type]
        assert work.spec == it.nodeid
    sizes = [len(b) for b in batches]
    # starts at the concurrency (2): t0, t1 are fast -> 4: t2..t5 hold the slow t2 -> back to 2:
    # t6, t7 fast -> 4 -> 8 (the maximum) ...
    assert sizes[:5] == [2, 4, 2, 4, 8]
    assert sum(sizes) == 40
    assert [n for b in batches for n in b] == [it.nodeid for it in session.items]
