"""Statistics for the analysis reports (issue 7): intervals, bootstrap, co-failure, retention.

All rates are fractions in [0, 1]. Intervals are ``(low, high)`` tuples of fractions, or ``None``
when there is no data (``n == 0``). scipy (the ``analysis`` extra) is needed for the bootstrap and
the Fisher exact test; the Wilson interval needs only the standard library.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pytest_vibecheck.errors import VibecheckError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "AnalysisError",
    "CoFailure",
    "Proportion",
    "TurnRate",
    "bootstrap_ci",
    "cofailure_matrix",
    "percentile_interval",
    "proportion",
    "resample_indices",
    "retention",
    "wilson_interval",
]


class AnalysisError(VibecheckError, ValueError):
    """Input to an analysis is unusable (too few rows, a constant column, missing scipy...)."""


def require_scipy() -> None:
    """Raise :class:`AnalysisError` with the install hint when scipy/numpy are missing."""
    try:
        import numpy  # noqa: F401
        import scipy.stats  # noqa: F401
    except ImportError as exc:  # tests/test_plain_install.py hides them
        raise AnalysisError(
            "this analysis needs scipy and numpy: pip install 'pytest-vibecheck[analysis]'"
        ) from exc


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise AnalysisError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")


# --------------------------------------------------------------------------- proportions


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion ``successes / n``.

    Formula (Wilson 1927; Agresti & Coull 1998): with ``p = successes / n`` and ``z`` the
    two-sided normal quantile, centre ``(p + z^2/2n) / (1 + z^2/n)`` and half-width
    ``z*sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)``. Same values as
    ``scipy.stats.binomtest(successes, n).proportion_ci(method="wilson")``.

    Returns ``(low, high)`` as fractions in [0, 1], or ``None`` when ``n == 0``.
    Raises :class:`AnalysisError` for negative counts, ``successes > n`` or a confidence
    outside (0, 1).
    """
    _check_confidence(confidence)
    if n < 0 or successes < 0 or successes > n:
        raise AnalysisError(f"Wilson interval needs 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return None
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends, no float noise
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


@dataclass(frozen=True)
class Proportion:
    """A rate with its Wilson interval. ``value`` and the interval are fractions (None if n=0)."""

    successes: int
    n: int
    value: float | None
    ci: tuple[float, float] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "successes": self.successes,
            "n": self.n,
            "value": self.value,
            "ci": list(self.ci) if self.ci else None,
        }


def proportion(successes: int, n: int, confidence: float = 0.95) -> Proportion:
    """``successes / n`` with its Wilson interval (see :func:`wilson_interval`)."""
    ci = wilson_interval(successes, n, confidence)
    return Proportion(successes, n, successes / n if n else None, ci)


# --------------------------------------------------------------------------- bootstrap


def resample_indices(n: int, n_resamples: int, seed: int | None) -> npt.NDArray[np.intp]:
    """Bootstrap index matrix of shape ``(n_resamples, n)``: rows drawn with replacement.

    Uses ``numpy.random.default_rng(seed)``, so the same seed gives the same resamples.
    """
    require_scipy()
    import numpy as np

    if n < 1 or n_resamples < 1:
        raise AnalysisError(f"bootstrap needs n >= 1 and n_resamples >= 1, got {n}, {n_resamples}")
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_resamples, n))


def percentile_interval(
    samples: Sequence[float] | npt.NDArray[np.floating[Any]],
    confidence: float = 0.95,
    *,
    discrete: bool = False,
) -> tuple[float, float] | None:
    """Percentile interval of bootstrap ``samples`` (NaNs ignored); ``None`` if none are finite.

    ``discrete=True`` takes observed values only (``lower`` for the low end, ``higher`` for the
    high end, never interpolating), e.g. for a best alpha that lives on a grid.
    """
    require_scipy()
    import numpy as np

    _check_confidence(confidence)
    arr = np.asarray(samples, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    if discrete:
        lo = np.percentile(arr, tail, method="lower")
        hi = np.percentile(arr, 100 - tail, method="higher")
    else:
        lo, hi = np.percentile(arr, [tail, 100 - tail])
    return (float(lo), float(hi))


def bootstrap_ci(
    values: Sequence[float],
    statistic: Callable[..., Any] | None = None,
    *,
    n_resamples: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    method: Literal["percentile", "basic", "BCa"] = "percentile",
) -> tuple[float, float] | None:
    """Bootstrap confidence interval of ``statistic(values)`` (default: the mean).

    Wraps ``scipy.stats.bootstrap`` (``statistic`` must accept ``axis=``, as numpy reductions
    do). Returns ``(low, high)`` in the units of ``values``; ``None`` when ``values`` has fewer
    than 2 elements or every value is identical (the interval is then the point itself and
    scipy cannot form one).
    """
    require_scipy()
    import numpy as np
    from scipy import stats

    _check_confidence(confidence)
    arr = np.asarray(values, dtype=float)
    if arr.size < 2:
        return None
    if np.all(arr == arr[0]):
        return (float(arr[0]), float(arr[0]))
    res = stats.bootstrap(
        (arr,),
        statistic if statistic is not None else np.mean,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method=method,
        rng=np.random.default_rng(seed),
        vectorized=True,
    )
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


# --------------------------------------------------------------------------- co-failure


@dataclass(frozen=True)
class CoFailure:
    """Joint failures of instructions ``a`` and ``b`` over the ``n`` items that judged both.

    ``both_fail`` is observed; ``expected = fail_a*fail_b / n`` is the count under independence
    (within those ``n`` items); ``lift = both_fail / expected`` (None if expected is 0).
    ``odds_ratio`` and ``p_value`` come from ``scipy.stats.fisher_exact`` on the 2x2 table
    ``[[both_fail, a_only], [b_only, both_pass]]``; ``q_value`` is the Benjamini-Hochberg
    adjusted p-value over all pairs in the matrix.
    """

    a: str
    b: str
    n: int
    fail_a: int
    fail_b: int
    both_fail: int
    expected: float
    lift: float | None
    odds_ratio: float
    p_value: float
    q_value: float

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def cofailure_matrix(
    items: Iterable[Mapping[str, bool | None]],
    *,
    alternative: Literal["greater", "two-sided", "less"] = "greater",
    min_items: int = 1,
) -> list[CoFailure]:
    """Co-failure statistics for every pair of instructions judged together on some item.

    ``items``: one mapping per item (e.g. one reply), instruction id -> passed (True/False);
    ``None`` (verifier could not judge) is left out. ``alternative="greater"`` tests whether
    the two fail together more often than independence predicts. Pairs seen on fewer than
    ``min_items`` items are omitted. Sorted by p-value, then by pair.
    """
    require_scipy()
    from scipy import stats

    table: dict[tuple[str, str], list[int]] = {}  # [both_fail, a_only, b_only, both_pass]
    for item in items:
        judged = sorted((k, v) for k, v in item.items() if v is not None)
        for (a, pa), (b, pb) in itertools.combinations(judged, 2):
            cell = table.setdefault((a, b), [0, 0, 0, 0])
            cell[(0 if not pa else 2) + (0 if not pb else 1)] += 1
    rows: list[tuple[tuple[str, str], list[int], float, float]] = []
    for pair, (ff, fp, pf, pp) in table.items():
        if ff + fp + pf + pp < min_items:
            continue
        res = stats.fisher_exact([[ff, fp], [pf, pp]], alternative=alternative)
        rows.append((pair, [ff, fp, pf, pp], float(res.statistic), float(res.pvalue)))
    if not rows:
        return []
    qs = stats.false_discovery_control([r[3] for r in rows], method="bh")
    out: list[CoFailure] = []
    for ((a, b), (ff, fp, pf, pp), odds, p), q in zip(rows, qs, strict=False):
        n = ff + fp + pf + pp
        fail_a, fail_b = ff + fp, ff + pf
        expected = fail_a * fail_b / n
        out.append(
            CoFailure(
                a, b, n, fail_a, fail_b, ff, expected,
                ff / expected if expected else None, odds, p, float(q),
            )
        )  # fmt: skip
    out.sort(key=lambda c: (c.p_value, c.a, c.b))
    return out


# --------------------------------------------------------------------------- retention


@dataclass(frozen=True)
class TurnRate:
    """A rate measured at turn ``turn`` (see :class:`Retention`), with its Wilson interval."""

    turn: int
    rate: Proportion

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, **self.rate.to_json()}


@dataclass(frozen=True)
class Retention:
    """Multi-turn dynamics, keyed by the later turn t (fractions with Wilson intervals).

    ``retention[t]`` (t >= 2): P(instruction met at turn t | met at turn t-1), over instructions
    given before turn t (the same definition and keys as ``metrics.retention_by_turn`` and the
    report's ``retention``). ``recovery[t]`` (t >= 2): P(met at t | not met at t-1).
    ``acquisition[t]`` (t >= 1): P(the instruction introduced at turn t is met at turn t).
    """

    retention: tuple[TurnRate, ...]
    recovery: tuple[TurnRate, ...]
    acquisition: tuple[TurnRate, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "retention": [r.to_json() for r in self.retention],
            "recovery": [r.to_json() for r in self.recovery],
            "acquisition": [r.to_json() for r in self.acquisition],
        }


def retention(
    conversations: Iterable[Sequence[Mapping[str, bool | None]]], confidence: float = 0.95
) -> Retention:
    """Retention, recovery and acquisition over multi-turn conversations (see :class:`Retention`).

    ``conversations``: per conversation, its turns 1..K in order; turn t maps the id of every
    instruction given so far to its verdict on turn t's code (``None`` = not judged, left out).
    An instruction first appearing at turn t was introduced at turn t (paper §3.2: one
    instruction per turn).
    """
    kept: dict[int, list[int]] = {}
    recov: dict[int, list[int]] = {}
    acq: dict[int, list[int]] = {}

    def add(d: dict[int, list[int]], t: int, ok: bool) -> None:
        cell = d.setdefault(t, [0, 0])
        cell[0] += int(ok)
        cell[1] += 1

    for turns in conversations:
        seen: set[str] = set()
        for t, verdicts in enumerate(turns, start=1):
            before = turns[t - 2] if t >= 2 else {}
            for inst, passed in verdicts.items():
                if inst not in seen:
                    seen.add(inst)
                    if passed is not None:
                        add(acq, t, passed)
                    continue
                prev = before.get(inst)
                if passed is None or prev is None:
                    continue
                add(kept if prev else recov, t, passed)

    def rates(d: dict[int, list[int]]) -> tuple[TurnRate, ...]:
        return tuple(TurnRate(t, proportion(s, n, confidence)) for t, (s, n) in sorted(d.items()))

    return Retention(rates(kept), rates(recov), rates(acq))
