"""Unit tests of plugin.run: no-code detection, the prefetcher, error kinds."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_vibecheck.generate.backends.base import BackendError, RateLimitError, ReplayMissError
from pytest_vibecheck.generate.cache import CacheMissError
from pytest_vibecheck.plugin.run import failure, prefetch, record, stages
from pytest_vibecheck.plugin.run.spec import ItemSpec
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


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "none"),
        ("I cannot help with that.", "prose"),
        ("```python\ndef f(:\n```", None),  # a fenced syntax error is code, for the graders
        ("x = " + "-" * 200_000 + "1\n", "unparseable"),  # CPython's parser gives up
        ("```python\nx = " + "-" * 200_000 + "1\n```", "unparseable"),
        ("def f():\n    return 1\n", None),
    ],
)
def test_no_code_reason(reply: str, reason: str | None) -> None:
    ex = extract_code(reply)
    assert record.no_code_reason(ex) == reason
    assert record.has_no_code(ex) is (reason is not None)


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
        self.spec = _spec(nodeid)
        self.config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugins=lambda: []))


def _spec(task: str) -> ItemSpec:
    from plugin_helpers import tiny_problems

    return ItemSpec("s", None, tiny_problems()[0], "m", "m", "baseline", 0, 0)


def test_prefetch_keeps_concurrency_generations_running_and_batches_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Generations of the next items run --vibe-concurrency at a time however fast they are (no
    switch to one at a time), and the items whose generations are done are finished together."""
    session = SimpleNamespace(items=[])
    session.items = [_Item(f"s::t{i}[m]", session) for i in range(24)]
    barrier = threading.Barrier(4, timeout=10)  # breaks unless 4 generations run at once
    generated: list[int] = []
    batches: list[int] = []

    lock = threading.Lock()

    def fake_generate(runtime: Any, work: record.Work) -> None:
        with lock:
            generated.append(id(work))
            call = len(generated)
        if call <= 8:  # the first two rounds of four
            barrier.wait()

    def fake_finish(runtime: Any, works: list[record.Work]) -> None:
        batches.append(len(works))
        for w in works:
            w.finished = True

    monkeypatch.setattr(stages, "generate_one", fake_generate)
    monkeypatch.setattr(stages, "finish", fake_finish)
    runtime = SimpleNamespace(settings=SimpleNamespace(concurrency=4))
    pf = prefetch.Prefetcher(runtime, window=8)  # type: ignore[arg-type]
    try:
        works = [pf.take(it) for it in session.items]
    finally:
        pf.close()
    assert len(set(map(id, works))) == 24 and len(generated) == 24
    assert sum(batches) == 24 and max(batches) <= 8
