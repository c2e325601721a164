"""The micro-batcher: per-sample reward calls made at the same time are scored as one batch,
with the same results as one batch call; a lone call is scored at once; bad input stays the
caller's own. Real Ruff, real scorer (IF only: no sandbox)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.reward import RewardConfig, RewardResult, RewardScorer, score_batch
from pytest_vibecheck.reward.batcher import MicroBatcher, batcher_for
from pytest_vibecheck.reward.verl import compute_score_async

PROBLEM = json.dumps({
    "test": {"kind": "humaneval", "entry_point": "add",
             "code": "def check(candidate):\n    assert candidate(2, 3) == 5\n"},
    "entry_point": "add",
    "instructions": [{"id": "doc_1", "params": {}}, {"id": "logic_1", "params": {}}],
})
REPLIES = [
    "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```",  # IF 1.0
    "```python\ndef add(a, b):\n    return a + b\n```",  # doc_1 fails: 0.5
    "no code",  # 0.0
    "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```",  # a repeat
]
CONFIG = RewardConfig(functional=False)


class Gated:
    """A real scorer whose first batch waits until the test opens the gate, so the calls made
    meanwhile queue up; records each batch's size."""

    def __init__(self) -> None:
        self.inner = RewardScorer(CONFIG)
        self.gate = threading.Event()
        self.sizes: list[int] = []

    def score(self, completions: Sequence[object], problems: Sequence[Any]) -> list[RewardResult]:
        self.sizes.append(len(completions))
        if len(self.sizes) == 1:
            assert self.gate.wait(30)
        return self.inner.score(completions, problems)


def test_calls_made_together_are_one_batch_with_the_batch_results() -> None:
    scorer = Gated()
    batcher = MicroBatcher(scorer, window_s=0.0)  # type: ignore[arg-type]
    first = batcher.submit(REPLIES[0], PROBLEM)
    while not scorer.sizes:  # the flusher has taken the lone first call, at once
        threading.Event().wait(0.001)
    rest = [batcher.submit(r, PROBLEM) for r in REPLIES * 3]
    scorer.gate.set()
    results = [first.result(30)] + [f.result(30) for f in rest]
    assert scorer.sizes == [1, 12]  # the lone call alone, then all that queued meanwhile
    want = score_batch([REPLIES[0], *REPLIES * 3], [PROBLEM] * 13, CONFIG)
    assert [r.reward for r in results] == [w.reward for w in want] == [1.0] + [1.0, 0.5, 0.0, 1.0] * 3
    assert [[v.passed for v in r.verdicts] for r in results] == [[v.passed for v in w.verdicts] for w in want]
    assert (batcher.stats.calls, batcher.stats.batches, batcher.stats.largest) == (13, 2, 12)
    assert batcher.stats.alone == 1  # the first call waited for no window


def test_threads_calling_one_at_a_time_share_batches() -> None:
    batcher = MicroBatcher(RewardScorer(CONFIG))
    calls = REPLIES * 16
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda r: batcher.score_one(r, PROBLEM), calls))
    assert [r.reward for r in results] == [1.0, 0.5, 0.0, 1.0] * 16
    assert batcher.stats.calls == 64
    assert batcher.stats.batches < 64  # gathered, not one Ruff run per call


def test_a_bad_call_gets_its_own_error_and_the_others_their_results() -> None:
    scorer = Gated()
    batcher = MicroBatcher(scorer, window_s=0.0)  # type: ignore[arg-type]
    first = batcher.submit(REPLIES[0], PROBLEM)
    while not scorer.sizes:
        threading.Event().wait(0.001)
    good = batcher.submit(REPLIES[1], PROBLEM)
    bad = batcher.submit(REPLIES[1], "bigvibebench::BigCodeBench/no-such-task")
    also = batcher.submit(REPLIES[2], PROBLEM)
    scorer.gate.set()
    assert first.result(30).reward == 1.0
    assert (good.result(30).reward, also.result(30).reward) == (0.5, 0.0)
    with pytest.raises(VibecheckError, match="no-such-task"):
        bad.result(30)


def test_verl_async_calls_awaited_together_are_scored_in_a_batch_or_two() -> None:
    batcher = batcher_for(CONFIG)
    before = batcher.stats.batches

    async def run() -> list[Any]:
        return list(await asyncio.gather(*(
            compute_score_async("vibecheck/toy", r, PROBLEM, {"index": i}, functional=False)
            for i, r in enumerate(REPLIES * 8))))

    scores = asyncio.run(run())
    assert [s["score"] for s in scores] == [1.0, 0.5, 0.0, 1.0] * 8
    assert 1 <= batcher.stats.batches - before <= 2  # a lone first call, then the rest


def test_bad_settings_are_refused() -> None:
    with pytest.raises(VibecheckError, match="window_s must be >= 0 and max_batch >= 1"):
        MicroBatcher(RewardScorer(CONFIG), max_batch=0)
