"""The vibe metrics as small pure functions (paper §3.2, §4.4 and §4.5).

Every function returns a **fraction in [0, 1]** (FR_k may be negative: an improvement), or
``None`` when there is nothing to measure (empty input, or a zero denominator). Reports format
percentages for humans only.

Definitions (Zhong et al., "Vibe Checker", arXiv 2510.07315):

- pass@1: share of problems whose unit tests pass (§3.2, "Func"); with several samples per
  problem, the mean over problems of (passing samples / samples).
- pass@k: the unbiased estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained
  on Code", eq. 1): ``1 - C(n - c, k) / C(n, k)`` per problem, averaged over problems.
- FR_k = (S0 - S_k) / S0: functional regression against the 0-instruction pass@1 S0 (§3.2).
- instruction-level IF: mean over results of (instructions passed / instructions judged) (§3.2).
- task-level IF: share of results where every instruction passed (§3.2).
- IF by position: instruction-level IF restricted to the instruction at position p (§4.4).
- retention (multi-turn): P(instruction still met at turn t | met at turn t - 1), over
  instructions given before turn t.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from math import comb
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

__all__ = [
    "cache_hit_rate",
    "functional_regression",
    "if_by_key",
    "if_by_position",
    "instruction_level_if",
    "mean",
    "mean_pass_at_k",
    "pass_at_1",
    "pass_at_k",
    "retention_by_turn",
    "task_level_if",
]


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean; ``None`` for an empty input."""
    total = 0.0
    n = 0
    for v in values:
        total += v
        n += 1
    return total / n if n else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with ``n`` samples of which ``c`` pass.

    ``1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021, eq. 1), computed exactly with integers.
    Returns a fraction in [0, 1]. Raises :class:`ValueError` unless ``0 <= c <= n`` and
    ``1 <= k <= n``.
    """
    if not (0 <= c <= n):
        raise ValueError(f"pass_at_k: need 0 <= c <= n, got n={n}, c={c}")
    if not (1 <= k <= n):
        raise ValueError(f"pass_at_k: need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean unbiased pass@k over problems given ``(n, c)`` per problem.

    Problems with fewer than ``k`` samples are left out; ``None`` if none is left.
    """
    return mean(pass_at_k(n, c, k) for n, c in counts if n >= k)


def pass_at_1(outcomes_by_problem: Mapping[K, Sequence[bool]]) -> float | None:
    """pass@1: mean over problems of the share of samples whose tests pass (paper §3.2).

    ``outcomes_by_problem`` maps a problem key to its samples' test outcomes; problems with
    no sample are left out. ``None`` for no problem. With one sample per problem this is the
    share of problems that pass.
    """
    return mean(sum(v) / len(v) for v in outcomes_by_problem.values() if v)


def functional_regression(s0: float | None, sk: float | None) -> float | None:
    """FR_k = (S0 - S_k) / S0 (paper §3.2): the relative loss of pass@1 with k instructions.

    Positive is a regression, negative an improvement. ``None`` when either score is missing
    or S0 is 0 (the ratio is undefined).
    """
    if s0 is None or sk is None or s0 == 0:
        return None
    return (s0 - sk) / s0


def instruction_level_if(verdicts: Iterable[Sequence[bool]]) -> float | None:
    """Instruction-level IF: mean over results of (passed / judged) (paper §3.2).

    ``verdicts`` holds one sequence of per-instruction outcomes per result (a task's
    sample); results with no instruction are left out. ``None`` if nothing is left.
    """
    return mean(sum(v) / len(v) for v in verdicts if len(v))


def task_level_if(verdicts: Iterable[Sequence[bool]]) -> float | None:
    """Task-level IF: share of results where every instruction passed (paper §3.2).

    Results with no instruction are left out; ``None`` if nothing is left.
    """
    return mean(1.0 if all(v) else 0.0 for v in verdicts if len(v))


def if_by_position(verdicts: Iterable[Sequence[bool]]) -> dict[int, float]:
    """IF by instruction position (paper §4.4): ``{position (1-based): fraction passed}``.

    Position p averages the p-th outcome over every result that has at least p instructions.
    Empty input gives ``{}``.
    """
    passed: dict[int, int] = defaultdict(int)
    total: dict[int, int] = defaultdict(int)
    for v in verdicts:
        for pos, ok in enumerate(v, start=1):
            total[pos] += 1
            passed[pos] += bool(ok)
    return {pos: passed[pos] / total[pos] for pos in sorted(total)}


def if_by_key(pairs: Iterable[tuple[K, bool]]) -> dict[K, tuple[float, int, int]]:
    """IF grouped by a key (category or instruction id): ``{key: (fraction, passed, n)}``.

    A micro-average over (result, instruction) pairs. Empty input gives ``{}``.
    """
    passed: dict[K, int] = defaultdict(int)
    total: dict[K, int] = defaultdict(int)
    for key, ok in pairs:
        total[key] += 1
        passed[key] += bool(ok)
    return {key: (passed[key] / total[key], passed[key], total[key]) for key in total}


def retention_by_turn(conversations: Iterable[Sequence[Sequence[bool]]]) -> dict[int, float]:
    """Multi-turn retention: ``{turn t: P(met at t | met at t - 1)}`` for t >= 2.

    Each conversation is a list over turns 1..K of the outcomes of instructions 1..t at turn t
    (so turn t has t outcomes). For turn t, the pairs counted are the instructions
    i < t that were met at turn t - 1; the value is the share still met at turn t. Turns with
    no such pair are left out; empty input gives ``{}``.
    """
    kept: dict[int, int] = defaultdict(int)
    total: dict[int, int] = defaultdict(int)
    for conv in conversations:
        for t in range(2, len(conv) + 1):
            before, now = conv[t - 2], conv[t - 1]
            for i in range(t - 1):
                if i < len(before) and before[i]:
                    total[t] += 1
                    kept[t] += bool(i < len(now) and now[i])
    return {t: kept[t] / total[t] for t in sorted(total)}


def cache_hit_rate(requested: int, cached: int) -> float | None:
    """Share of requested generations served from the cache; ``None`` when none was requested."""
    if requested < 0 or cached < 0 or cached > requested:
        raise ValueError(f"cache_hit_rate: need 0 <= cached <= requested, got {cached}/{requested}")
    return cached / requested if requested else None
