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
    runtime = SimpleNamespace(settings=SimpleNamespace(concurrency=4), prepare_batches=lambda specs: None)
    pf = prefetch.Prefetcher(runtime, window=8)
    try:
        works = [pf.take(it) for it in session.items]
    finally:
        pf.close()
    assert len(set(map(id, works))) == 24 and len(generated) == 24
    assert sum(batches) == 24 and max(batches) <= 8


def test_planned_upcoming_is_the_workers_own_positions() -> None:
    assert prefetch.planned_upcoming(10, 1, 1, 2) == [3, 5, 7, 9]
    assert prefetch.planned_upcoming(10, 0, 0, 3) == [3, 6, 9]
    assert prefetch.planned_upcoming(10, 2, 1, 2) == []  # taken from another worker's plan


def test_prefetch_of_a_planned_xdist_worker_reads_the_plan_not_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    session = SimpleNamespace(items=[])
    session.items = [_Item(f"s::t{i}[m]", session) for i in range(9)]
    for it in session.items:
        it.config = SimpleNamespace(workerinput={"workerid": "gw1", "workercount": 2})
    from pytest_vibecheck.plugin import _xdist_queue

    monkeypatch.setattr(_xdist_queue, "queued_indices", lambda config: pytest.fail("read xdist"))
    runtime = SimpleNamespace(settings=SimpleNamespace(concurrency=1), planned=True)
    pf = prefetch.Prefetcher(runtime, window=4, lookahead=2)
    got = pf._upcoming(session.items[1])
    assert [it.nodeid for it in got] == ["s::t1[m]", "s::t3[m]", "s::t5[m]"]


def _fake_stages(monkeypatch: pytest.MonkeyPatch, finish: Any) -> None:
    """Stage 1 does nothing, ``finish`` stands for verification and test start, and waiting
    for an item's tests forgets its pending runs."""
    monkeypatch.setattr(stages, "generate_one", lambda runtime, work: None)
    monkeypatch.setattr(stages, "finish", finish)
    monkeypatch.setattr(stages, "finish_tests", lambda work: work.pending.clear())


def _take_first(items: list[Any], service: Any, window: int, lookahead: int) -> None:
    """A prefetcher (concurrency 1, ``service`` as the started test service) takes
    ``items[0]``, then closes."""
    runtime = SimpleNamespace(settings=SimpleNamespace(concurrency=1), planned=False,
                              started_tests=lambda: service, prepare_batches=lambda specs: None)
    pf = prefetch.Prefetcher(runtime, window=window, lookahead=lookahead)
    try:
        pf.take(items[0])
    finally:
        pf.close()


def test_a_waiting_item_tops_up_idle_sandboxes_with_the_next_items(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first item's run sleeps until later items have been started: the prefetcher starts
    them (beyond its first window and lookahead) while it waits, because the executor is idle."""
    from concurrent.futures import Future

    session = SimpleNamespace(items=[])
    session.items = [_Item(f"s::t{i}[m]", session) for i in range(30)]
    finished: list[str] = []
    first: Future[Any] = Future()

    def fake_finish(runtime: Any, works: list[record.Work]) -> None:
        for w in works:
            w.finished = True
            done: Future[Any] = Future()
            if not finished:
                w.pending["code"] = first  # the long run: done once item 20 has started
            else:
                done.set_result(None)
                w.pending["code"] = done
            finished.append(w.spec.problem.task_id)
            if len(finished) == 21:
                first.set_result(None)

    _fake_stages(monkeypatch, fake_finish)
    service = SimpleNamespace(executor=SimpleNamespace(idle=lambda: True))
    _take_first(session.items, service, window=4, lookahead=4)
    assert first.done() and len(finished) >= 21  # 20 more items started while the first waited


def test_a_waiting_item_adds_nothing_while_the_executor_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import Future

    session = SimpleNamespace(items=[])
    session.items = [_Item(f"s::t{i}[m]", session) for i in range(30)]
    batches: list[int] = []
    first: Future[Any] = Future()

    def fake_finish(runtime: Any, works: list[record.Work]) -> None:
        batches.append(len(works))
        for w in works:
            w.finished = True
        works[0].pending["code"] = first

    _fake_stages(monkeypatch, fake_finish)
    polls: list[int] = []

    def idle(sleeps: bool = False) -> bool:
        polls.append(1)
        if len(polls) == 5:
            first.set_result(None)
        return False

    service = SimpleNamespace(executor=SimpleNamespace(idle=idle))
    _take_first(session.items, service, window=4, lookahead=4)
    assert len(batches) == 1  # the first batch only: no top-up while the executor is busy


def test_a_free_sleeper_slot_starts_the_next_sleeping_item_while_the_cpu_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU slot is busy (a long queue), a sleeper slot is free: of the prepared upcoming
    items, only the one expected to sleep is started now."""
    from concurrent.futures import Future

    session = SimpleNamespace(items=[])
    session.items = [_Item(f"s::t{i}[m]", session) for i in range(6)]
    for i, it in enumerate(session.items):
        it.spec = ItemSpec("s", None, SimpleNamespace(task_id=f"t{i}"), "m", "m", "baseline", 0, 0)  # type: ignore[arg-type]
    started: list[str] = []
    first: Future[Any] = Future()

    def fake_finish(runtime: Any, works: list[record.Work]) -> None:
        for w in works:
            w.finished = True
            started.append(w.spec.problem.task_id)
        if len(started) == 1:
            works[0].pending["code"] = first
        elif "t4" in started:
            first.set_result(None)

    _fake_stages(monkeypatch, fake_finish)
    executor = SimpleNamespace(idle=lambda sleeps=False: sleeps)
    service = SimpleNamespace(executor=executor, learn=lambda problems: list(problems),
                              sleeps=lambda problem: problem.task_id == "t4")
    _take_first(session.items, service, window=1, lookahead=5)
    assert started == ["t0", "t4"]


def test_a_top_up_that_finds_nothing_to_start_looks_less_often(monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import Future

    session = SimpleNamespace(items=[])
    session.items = [_Item("s::t0[m]", session)]  # nothing after it to start
    first: Future[Any] = Future()

    def fake_finish(runtime: Any, works: list[record.Work]) -> None:
        for w in works:
            w.finished = True
        works[0].pending["code"] = first

    _fake_stages(monkeypatch, fake_finish)
    timeouts: list[float] = []
    from concurrent.futures import wait as real_wait

    def counting_wait(fs: Any, timeout: float, return_when: str) -> Any:
        timeouts.append(timeout)
        if len(timeouts) == 8:
            first.set_result(None)
        return real_wait(fs, timeout=0, return_when=return_when)

    monkeypatch.setattr(prefetch, "wait", counting_wait)
    service = SimpleNamespace(executor=SimpleNamespace(idle=lambda sleeps=False: True))
    _take_first(session.items, service, window=4, lookahead=4)
    assert timeouts[:7] == [prefetch.TOPUP_POLL_S, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
