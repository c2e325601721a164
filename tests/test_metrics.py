"""The metric functions (paper §3.2, §4.5; Chen et al. 2021) with hand-computed values."""

from __future__ import annotations

import math

import pytest

from pytest_vibecheck.report import metrics


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (5, 0, 3, 0.0),
        (5, 5, 1, 1.0),
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (4, 3, 2, 1.0),  # n - c < k: every draw of 2 contains a pass
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
    ],
)
def test_pass_at_k_exact(n: int, c: int, k: int, expected: float) -> None:
    assert metrics.pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-15)


def test_pass_at_k_matches_chen_product_form() -> None:
    # The numerically stable form of Chen et al. (2021): 1 - prod_{i=n-c+1}^{n} (1 - k / i).
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                if n - c < k:
                    ref = 1.0
                else:
                    ref = 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))
                assert metrics.pass_at_k(n, c, k) == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_at_k_rejects_bad_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass_at_k"):
        metrics.pass_at_k(n, c, k)


def test_mean_pass_at_k_leaves_out_problems_with_too_few_samples() -> None:
    assert metrics.mean_pass_at_k([(5, 2), (1, 1)], 2) == pytest.approx(0.7)
    assert metrics.mean_pass_at_k([(5, 2), (1, 1)], 1) == pytest.approx((0.4 + 1.0) / 2)
    assert metrics.mean_pass_at_k([(1, 1)], 2) is None
    assert metrics.mean_pass_at_k([], 1) is None


def test_pass_at_1() -> None:
    assert metrics.pass_at_1({"a": [True, False], "b": [True]}) == pytest.approx(0.75)
    assert metrics.pass_at_1({"a": [False], "b": [True], "c": [True], "d": [False]}) == 0.5
    assert metrics.pass_at_1({}) is None
    assert metrics.pass_at_1({"a": []}) is None


def test_functional_regression() -> None:
    assert metrics.functional_regression(0.5, 0.4) == pytest.approx(0.2)
    assert metrics.functional_regression(0.5, 0.6) == pytest.approx(-0.2)
    assert metrics.functional_regression(0.5, 0.5) == 0.0
    assert metrics.functional_regression(0.0, 0.3) is None
    assert metrics.functional_regression(None, 0.3) is None
    assert metrics.functional_regression(0.3, None) is None


def test_instruction_and_task_level_if() -> None:
    verdicts = [[True, False], [True, True, True], []]
    assert metrics.instruction_level_if(verdicts) == pytest.approx(0.75)
    assert metrics.task_level_if(verdicts) == pytest.approx(0.5)
    assert metrics.instruction_level_if([]) is None
    assert metrics.task_level_if([[]]) is None
    # instruction-level IF is a mean of per-result fractions, not a micro-average
    assert metrics.instruction_level_if([[False], [True, True, True, True]]) == pytest.approx(0.5)


def test_if_by_position() -> None:
    assert metrics.if_by_position([[True, False], [False, False, True]]) == {1: 0.5, 2: 0.0, 3: 1.0}
    assert metrics.if_by_position([]) == {}


def test_if_by_key() -> None:
    got = metrics.if_by_key([("a", True), ("a", False), ("b", True)])
    assert got == {"a": (0.5, 1, 2), "b": (1.0, 1, 1)}
    assert metrics.if_by_key([]) == {}


def test_retention_by_turn() -> None:
    conv1 = [[True], [True, False], [False, True, True]]
    conv2 = [[False], [True, True]]
    # t=2: conv1 keeps instruction 1 (1/1); conv2 had nothing met at turn 1.
    # t=3: conv1 had only instruction 1 met at turn 2 and lost it (0/1).
    assert metrics.retention_by_turn([conv1, conv2]) == {2: 1.0, 3: 0.0}
    assert metrics.retention_by_turn([]) == {}
    assert metrics.retention_by_turn([[[True]]]) == {}


def test_cache_hit_rate() -> None:
    assert metrics.cache_hit_rate(10, 4) == 0.4
    assert metrics.cache_hit_rate(0, 0) is None
    with pytest.raises(ValueError, match="cached"):
        metrics.cache_hit_rate(3, 4)


def test_mean() -> None:
    assert metrics.mean([1.0, 2.0, 4.0]) == pytest.approx(7 / 3)
    assert metrics.mean(iter([])) is None
