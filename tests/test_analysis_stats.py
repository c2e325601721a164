"""Statistics of the analysis (issue 7): each against a hand-computed or scipy value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_vibecheck.report.analysis.stats import (
    AnalysisError,
    bootstrap_ci,
    cofailure_matrix,
    percentile_interval,
    proportion,
    resample_indices,
    retention,
    wilson_interval,
)


def test_wilson_hand_computed() -> None:
    # 0 of 10 at 95%: low 0, high z^2 / (n + z^2) with z = 1.959964
    z2 = 1.959963984540054**2
    interval = wilson_interval(0, 10)
    assert interval is not None
    lo, hi = interval
    assert lo == 0.0
    assert hi == pytest.approx(z2 / (10 + z2), abs=1e-12)  # 0.27753...
    # 5 of 10: symmetric around 0.5, half-width z*sqrt(0.025 + z^2/400) / (1 + z^2/10)
    interval = wilson_interval(5, 10)
    assert interval is not None
    lo, hi = interval
    half = 1.959963984540054 * math.sqrt(0.025 + z2 / 400) / (1 + z2 / 10)
    assert (lo, hi) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-12)
    assert (lo, hi) == pytest.approx((0.2365931, 0.7634069), abs=1e-7)


@pytest.mark.parametrize(
    ("k", "n", "conf"), [(7, 20, 0.95), (0, 1, 0.95), (99, 100, 0.9), (13, 13, 0.99)]
)
def test_wilson_matches_scipy(k: int, n: int, conf: float) -> None:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
    assert wilson_interval(k, n, conf) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_wilson_edges() -> None:
    assert wilson_interval(0, 0) is None
    for bad in ((3, 2), (-1, 2), (1, -1)):
        with pytest.raises(AnalysisError, match="0 <= successes <= n"):
            wilson_interval(*bad)
    with pytest.raises(AnalysisError, match="confidence"):
        wilson_interval(1, 2, confidence=95)
    p = proportion(3, 4)
    assert p.value == 0.75 and p.ci == wilson_interval(3, 4)
    assert proportion(0, 0).to_json() == {"successes": 0, "n": 0, "value": None, "ci": None}


def test_percentile_interval_hand() -> None:
    samples = list(range(101))  # 0..100: percentiles are the values themselves
    assert percentile_interval(samples, 0.95) == pytest.approx((2.5, 97.5), abs=1e-12)
    assert percentile_interval(samples, 0.95, discrete=True) == (2.0, 98.0)
    assert percentile_interval([math.nan, 1.0, 1.0], 0.9) == (1.0, 1.0)
    assert percentile_interval([math.nan]) is None


def test_bootstrap_ci_is_scipy_bootstrap() -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    ci = bootstrap_ci(values, n_resamples=500, seed=4)
    ref = stats.bootstrap(
        (np.asarray(values),), np.mean, n_resamples=500, method="percentile",
        rng=np.random.default_rng(4), vectorized=True,
    )  # fmt: skip
    assert ci == (ref.confidence_interval.low, ref.confidence_interval.high)
    assert ci is not None and ci[0] < 0.7 < ci[1]
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert bootstrap_ci([1.0]) is None


def test_resample_indices_seeded() -> None:
    a = resample_indices(5, 3, 0)
    assert a.shape == (3, 5)
    assert (a == resample_indices(5, 3, 0)).all()
    assert a.min() >= 0 and a.max() <= 4
    with pytest.raises(AnalysisError):
        resample_indices(0, 3, 0)


def _items() -> list[dict[str, bool | None]]:
    # 10 items judging a, b and c; a and b fail together 4 times
    rows = [
        (False, False, True), (False, False, True), (False, False, False), (False, False, True),
        (False, True, True), (True, False, True), (True, True, False), (True, True, True),
        (True, True, True), (True, True, None),
    ]  # fmt: skip
    return [{"a": a, "b": b, "c": c} for a, b, c in rows]


def test_cofailure_hand_computed() -> None:
    res = {(c.a, c.b): c for c in cofailure_matrix(_items())}
    ab = res[("a", "b")]
    # a fails in items 1-5, b in 1-4 and 6: both fail in 4 of 10
    assert (ab.n, ab.fail_a, ab.fail_b, ab.both_fail) == (10, 5, 5, 4)
    assert ab.expected == 2.5  # 5 * 5 / 10
    assert ab.lift == 1.6
    ref = stats.fisher_exact([[4, 1], [1, 4]], alternative="greater")
    assert ab.odds_ratio == ref.statistic == 16.0
    assert ab.p_value == pytest.approx(ref.pvalue, abs=1e-15)
    # hypergeometric by hand: P(X >= 4) with 10 items, 5 a-failures, 5 b-failures
    p_hand = (math.comb(5, 4) * math.comb(5, 1) + math.comb(5, 5) * math.comb(5, 0)) / math.comb(
        10, 5
    )
    assert ab.p_value == pytest.approx(p_hand, abs=1e-15)  # 26 / 252
    ac = res[("a", "c")]
    assert ac.n == 9  # item 10 has c = None: left out
    assert (ac.fail_a, ac.fail_b, ac.both_fail) == (5, 2, 1)
    # Benjamini-Hochberg over the three pairs
    ps = sorted(c.p_value for c in res.values())
    q = stats.false_discovery_control(ps, method="bh")
    assert sorted(c.q_value for c in res.values()) == pytest.approx(sorted(q))
    two = cofailure_matrix(_items(), alternative="two-sided")
    assert two[0].p_value == pytest.approx(stats.fisher_exact([[4, 1], [1, 4]]).pvalue, abs=1e-15)


def test_cofailure_min_items_and_empty() -> None:
    assert cofailure_matrix([]) == []
    assert cofailure_matrix([{"a": True}]) == []
    assert cofailure_matrix(_items(), min_items=10)[0].a == "a"
    assert len(cofailure_matrix(_items(), min_items=10)) == 1  # a-c and b-c have only 9 items


def test_retention_hand_computed() -> None:
    convs: list[list[dict[str, bool | None]]] = [
        [{"x": True}, {"x": True, "y": False}, {"x": False, "y": True, "z": True}],
        [{"x": False}, {"x": True, "y": True}, {"x": True, "y": True, "z": None}],
    ]
    r = retention(convs)
    got = {
        name: {tr.turn: (tr.rate.successes, tr.rate.n) for tr in getattr(r, name)}
        for name in ("retention", "recovery", "acquisition")
    }
    # turn 2: x met at 1 in conv 1 and still met -> 1/1; turn 3: x (conv1) lost, x and y (conv2) kept
    assert got["retention"] == {2: (1, 1), 3: (2, 3)}
    # turn 2: x failed at 1 in conv 2, met at 2 -> 1/1; turn 3: y failed at 2 in conv 1, met -> 1/1
    assert got["recovery"] == {2: (1, 1), 3: (1, 1)}
    # new at turn 1: x (1 of 2); turn 2: y (1 of 2); turn 3: z (1 of 1 judged)
    assert got["acquisition"] == {1: (1, 2), 2: (1, 2), 3: (1, 1)}
    assert r.retention[1].rate.ci == wilson_interval(2, 3)
    assert r.to_json()["retention"][0] == {
        "turn": 2, "successes": 1, "n": 1, "value": 1.0, "ci": list(wilson_interval(1, 1) or ()),
    }  # fmt: skip
