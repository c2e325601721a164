"""Composite score against human preference (paper §4.5; issue 7, item 1).

The paper's composite is ``alpha*IF + (1-alpha)*Func`` with Func = base pass@1 and IF = single-turn
instruction-level IF at k = 1. Sweeping alpha over a grid and correlating the composite with a
human-preference Elo across models (Pearson, Spearman, Kendall tau-b via ``scipy.stats``) gives a
best alpha per coefficient; on BigVibeBench the paper reports 0.4 (Pearson) and 0.7 (Spearman).

The paper gives no uncertainty. Here a bootstrap over models (rows resampled with replacement,
seeded) gives, for each coefficient:

- ``ci``: a percentile interval for the correlation at the best alpha of the full data;
- ``alpha_ci``: a percentile interval for the best alpha itself (the best alpha of each resample);
- ``alpha_distribution``: how often each alpha was best across resamples;

and, for each grid point, an interval for each coefficient. Resamples where a coefficient is
undefined (a constant column after resampling) are left out and counted (``invalid``).

Ties: the best alpha is the smallest alpha whose coefficient is within 1e-12 of the maximum.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.errors import DataFileError
from pytest_vibecheck.report.analysis.stats import (
    AnalysisError,
    percentile_interval,
    require_scipy,
    resample_indices,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "METHODS",
    "BestAlpha",
    "CorrelationResult",
    "ScoreTable",
    "alpha_grid",
    "correlate",
    "correlate_table",
    "read_scores_csv",
]

#: The correlation coefficients, in output order.
METHODS: tuple[str, ...] = ("pearson", "spearman", "kendall")

#: Cell values read as "missing" (case-insensitive); such rows are left out and counted.
MISSING_VALUES: frozenset[str] = frozenset({"", "na", "n/a", "nan", "null", "none", "-", "?"})

_TIE_TOL = 1e-12


# --------------------------------------------------------------------------- input


@dataclass(frozen=True)
class ScoreTable:
    """Per-model scores read from a CSV file (or built by hand).

    ``func``, ``if_`` and ``elo`` have one value per kept row, in file order; ``models`` holds
    the model names (``None`` entries when the file has no model column). ``skipped`` lists
    ``(line, reason)`` for rows left out because a value was missing.
    """

    func: tuple[float, ...]
    if_: tuple[float, ...]
    elo: tuple[float, ...]
    models: tuple[str | None, ...]
    skipped: tuple[tuple[int, str], ...] = ()
    source: str = "<memory>"


def _parse_number(raw: str, path: str, column: str, line: int) -> float | None:
    text = raw.strip()
    if text.lower() in MISSING_VALUES:
        return None
    try:
        value = float(text.removesuffix("%"))
    except ValueError:
        raise DataFileError(
            path,
            f"{raw!r} is not a number; use a plain number, or leave the cell empty (or NA) "
            "to skip the row",
            field=column,
            line=line,
        ) from None
    if not math.isfinite(value):
        return None
    return value


def read_scores_csv(
    path: str | Path,
    *,
    func: str,
    if_: str,
    elo: str,
    model: str | None = "model",
) -> ScoreTable:
    """Read per-model Func, IF and Elo columns from a CSV file with a header row.

    Lines starting with ``#`` are comments. Func and IF may be fractions or percentages (a
    trailing ``%`` is accepted) but must use the same scale (see :func:`correlate`). A row with
    a missing value (empty, ``NA``, ``nan``, ``null``, ``-``) is left out and listed in
    ``skipped``. ``model`` names the model column; when that column is absent the models are
    unnamed (pass ``model=None`` to ignore it).

    Raises :class:`~pytest_vibecheck.errors.DataFileError` naming the file, line and column
    for a missing file, a missing column or a non-numeric value.
    """
    p = Path(path)
    src = str(p)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataFileError(src, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(src, f"cannot read the file: {exc}") from None
    numbered = [
        (i, ln)
        for i, ln in enumerate(text.splitlines(), start=1)
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not numbered:
        raise DataFileError(src, "the file is empty; expected a header row and one row per model")
    reader = csv.DictReader(ln for _, ln in numbered)
    header = reader.fieldnames or []
    for role, col in (("--func", func), ("--if", if_), ("--elo", elo)):
        if col not in header:
            raise DataFileError(
                src,
                f"no column {col!r} (given as {role}); the columns are: {', '.join(header)}",
                field=col,
                line=numbered[0][0],
            )
    model_col = model if model is not None and model in header else None
    vals: dict[str, list[float]] = {"func": [], "if": [], "elo": []}
    models: list[str | None] = []
    skipped: list[tuple[int, str]] = []
    for (line, _), row in zip(numbered[1:], reader, strict=False):
        parsed: dict[str, float | None] = {}
        for key, col in (("func", func), ("if", if_), ("elo", elo)):
            raw = row.get(col)
            parsed[key] = _parse_number(raw if raw is not None else "", src, col, line)
        missing = [c for k, c in (("func", func), ("if", if_), ("elo", elo)) if parsed[k] is None]
        if missing:
            skipped.append((line, f"missing value in {', '.join(missing)}"))
            continue
        for key in vals:
            value = parsed[key]
            assert value is not None
            vals[key].append(value)
        models.append(row.get(model_col) if model_col else None)
    return ScoreTable(
        tuple(vals["func"]), tuple(vals["if"]), tuple(vals["elo"]), tuple(models),
        tuple(skipped), src,
    )  # fmt: skip


# --------------------------------------------------------------------------- grid & coefficients


def alpha_grid(step: float = 0.1) -> tuple[float, ...]:
    """alpha values ``0, step, 2*step, ..., 1`` computed as ``round(i * step, 10)`` (no float drift).

    Raises :class:`AnalysisError` unless ``0 < step <= 1`` and ``1 / step`` is a whole number.
    """
    if not (isinstance(step, (int, float)) and 0 < step <= 1):
        raise AnalysisError(f"--step must be in (0, 1], got {step}")
    n = round(1 / step)
    if abs(n * step - 1) > 1e-9:
        raise AnalysisError(
            f"--step {step} does not divide [0, 1] evenly; use e.g. 0.1, 0.05, 0.01"
        )
    return tuple(round(i * step, 10) for i in range(n + 1))


def _pearson_rows(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Pearson r along the last axis, broadcasting ``x`` against ``y`` (NaN if constant)."""
    import numpy as np

    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    num = (xc * yc).sum(axis=-1)
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / den
    # exact zero variance can show up as tiny float noise: treat relative noise as constant
    scale_x = np.abs(x).max(axis=-1) + 1e-300
    scale_y = np.abs(y).max(axis=-1) + 1e-300
    const = (np.ptp(x, axis=-1) <= 1e-12 * scale_x) | (np.ptp(y, axis=-1) <= 1e-12 * scale_y)
    return np.where(const, np.nan, np.clip(r, -1.0, 1.0))


def _spearman_rows(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Spearman rho along the last axis: Pearson r of average ranks (scipy's definition)."""
    from scipy.stats import rankdata

    return _pearson_rows(rankdata(x, axis=-1), rankdata(y, axis=-1))


def _kendall_rows(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], max_cells: int = 4_000_000
) -> npt.NDArray[np.float64]:
    """Kendall tau-b along the last axis (scipy's default variant), chunked to bound memory.

    tau-b = sum sign(xi-xj)*sign(yi-yj) / sqrt(sum sign(xi-xj)^2 * sum sign(yi-yj)^2) over pairs i<j.
    """
    import numpy as np

    n = x.shape[-1]
    iu, ju = np.triu_indices(n, k=1)
    x, y = np.broadcast_arrays(x, y)
    lead = x.shape[:-1]
    xf = x.reshape(-1, n)
    yf = y.reshape(-1, n)
    out = np.empty(xf.shape[0])
    chunk = max(1, max_cells // max(1, len(iu)))
    for start in range(0, xf.shape[0], chunk):
        xs = xf[start : start + chunk]
        ys = yf[start : start + chunk]
        sx = np.sign(xs[:, iu] - xs[:, ju])
        sy = np.sign(ys[:, iu] - ys[:, ju])
        num = (sx * sy).sum(axis=-1)
        den = np.sqrt((sx * sx).sum(axis=-1) * (sy * sy).sum(axis=-1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + chunk] = np.where(den > 0, num / den, np.nan)
    return out.reshape(lead)


_VECTORIZED = {"pearson": _pearson_rows, "spearman": _spearman_rows, "kendall": _kendall_rows}


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class BestAlpha:
    """The best alpha for one coefficient: ``r`` at that alpha with its ``p_value`` (scipy; optimistic,
    since alpha was chosen on the same data), ``ci`` for ``r`` and ``alpha_ci`` for alpha (bootstrap
    percentile intervals; None without bootstrap), and ``alpha_distribution`` (alpha -> share of
    valid resamples where it was best)."""

    alpha: float
    r: float
    p_value: float
    ci: tuple[float, float] | None
    alpha_ci: tuple[float, float] | None
    alpha_distribution: dict[float, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "r": self.r,
            "p_value": self.p_value,
            "ci": list(self.ci) if self.ci else None,
            "alpha_ci": list(self.alpha_ci) if self.alpha_ci else None,
            "alpha_distribution": {f"{a:g}": s for a, s in self.alpha_distribution.items()},
        }


@dataclass(frozen=True)
class CorrelationResult:
    """Output of :func:`correlate`; :meth:`to_json` gives the documented JSON shape."""

    n: int
    skipped: int
    step: float
    alphas: tuple[float, ...]
    sweep: dict[str, tuple[float, ...]]  # method -> coefficient per alpha
    sweep_ci: dict[str, tuple[tuple[float, float] | None, ...]]  # method -> CI per alpha
    best: dict[str, BestAlpha]
    n_resamples: int
    invalid_resamples: dict[str, int]
    seed: int | None
    confidence: float
    models: tuple[str | None, ...] = ()
    source: str = "<memory>"

    def to_json(self) -> dict[str, Any]:
        sweep: list[dict[str, Any]] = []
        for i, a in enumerate(self.alphas):
            row: dict[str, Any] = {"alpha": a}
            for m in METHODS:
                row[m] = self.sweep[m][i]
            for m in METHODS:
                ci = self.sweep_ci[m][i] if self.sweep_ci else None
                row[f"{m}_ci"] = list(ci) if ci else None
            sweep.append(row)
        return {
            "source": self.source,
            "n": self.n,
            "skipped": self.skipped,
            "step": self.step,
            "best": {m: self.best[m].to_json() for m in METHODS},
            "sweep": sweep,
            "bootstrap": {
                "resamples": self.n_resamples,
                "invalid": dict(self.invalid_resamples),
                "seed": self.seed,
                "confidence": self.confidence,
                "method": "percentile, rows (models) resampled with replacement",
            },
        }


def _best_index(values: Sequence[float]) -> int:
    finite = [v for v in values if math.isfinite(v)]
    top = max(finite)
    return next(i for i, v in enumerate(values) if math.isfinite(v) and v >= top - _TIE_TOL)


def _check_inputs(func: Sequence[float], if_: Sequence[float], elo: Sequence[float]) -> None:
    if not (len(func) == len(if_) == len(elo)):
        raise AnalysisError(
            f"func, if and elo must have the same length, got {len(func)}, {len(if_)}, {len(elo)}"
        )
    if len(func) < 3:
        raise AnalysisError(
            f"need at least 3 models with all three values to correlate, got {len(func)}"
        )
    for name, vals in (("func", func), ("if", if_), ("elo", elo)):
        bad = [v for v in vals if not isinstance(v, (int, float)) or not math.isfinite(v)]
        if bad:
            raise AnalysisError(f"{name} has a non-numeric or non-finite value: {bad[0]!r}")
        if max(vals) == min(vals):
            raise AnalysisError(f"{name} is the same for every model; correlation is undefined")
    for name, vals in (("func", func), ("if", if_)):
        if min(vals) < 0 or max(vals) > 100:
            raise AnalysisError(f"{name} must be a rate (fraction or percentage), got {max(vals)}")
    if (max(func) > 1) != (max(if_) > 1):
        raise AnalysisError(
            "func and if are on different scales (one looks like fractions in [0, 1], the other "
            "like percentages); alpha*IF + (1-alpha)*Func needs both on the same scale"
        )


def correlate(
    func: Sequence[float],
    if_: Sequence[float],
    elo: Sequence[float],
    *,
    step: float = 0.1,
    n_resamples: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    models: Sequence[str | None] = (),
    skipped: int = 0,
    source: str = "<memory>",
) -> CorrelationResult:
    """Sweep alpha of ``alpha*IF + (1-alpha)*Func`` and correlate with ``elo`` across models (paper §4.5).

    ``func``/``if_``: per-model rates on the same scale (both fractions or both percentages);
    ``elo``: per-model ratings. ``step``: grid spacing (alpha = ``round(i*step, 10)``).
    ``n_resamples``: bootstrap resamples over models (0 = no intervals); ``seed`` makes them
    reproducible; ``confidence``: interval level. Coefficients: ``scipy.stats.pearsonr``,
    ``spearmanr`` and ``kendalltau`` (tau-b).

    Raises :class:`AnalysisError` for fewer than 3 models, mismatched lengths, non-numeric
    values, a constant column, or Func and IF on different scales.
    """
    require_scipy()
    import numpy as np
    from scipy import stats

    _check_inputs(func, if_, elo)
    alphas = alpha_grid(step)
    f = np.asarray(func, dtype=float)
    i_ = np.asarray(if_, dtype=float)
    e = np.asarray(elo, dtype=float)
    a = np.asarray(alphas)

    scipy_fns = {
        "pearson": stats.pearsonr,
        "spearman": stats.spearmanr,
        "kendall": stats.kendalltau,
    }
    sweep: dict[str, list[float]] = {m: [] for m in METHODS}
    pvals: dict[str, list[float]] = {m: [] for m in METHODS}
    for alpha in alphas:
        comp = alpha * i_ + (1 - alpha) * f
        for m in METHODS:
            if np.ptp(comp) == 0:
                sweep[m].append(math.nan)
                pvals[m].append(math.nan)
                continue
            res = scipy_fns[m](comp, e)
            sweep[m].append(float(res.statistic))
            pvals[m].append(float(res.pvalue))
    best_idx = {}
    for m in METHODS:
        if not any(math.isfinite(v) for v in sweep[m]):
            raise AnalysisError(f"{m} correlation is undefined for every alpha")
        best_idx[m] = _best_index(sweep[m])

    sweep_ci: dict[str, tuple[tuple[float, float] | None, ...]] = {}
    invalid: dict[str, int] = {}
    boot_best: dict[
        str, tuple[tuple[float, float] | None, tuple[float, float] | None, dict[float, float]]
    ] = {}
    if n_resamples > 0:
        idx = resample_indices(len(f), n_resamples, seed)
        fb, ib, eb = f[idx], i_[idx], e[idx]  # (B, n)
        comp_b = a[None, :, None] * ib[:, None, :] + (1 - a[None, :, None]) * fb[:, None, :]
        for m in METHODS:
            r = _VECTORIZED[m](comp_b, eb[:, None, :])  # (B, A)
            ok = ~np.isnan(r).any(axis=1)
            invalid[m] = int((~ok).sum())
            rv = r[ok]
            sweep_ci[m] = tuple(percentile_interval(rv[:, j], confidence) for j in range(len(a)))
            if rv.shape[0] == 0:
                boot_best[m] = (None, None, {})
                continue
            top = rv.max(axis=1, keepdims=True)
            best_b = np.argmax(rv >= top - _TIE_TOL, axis=1)  # smallest alpha within tolerance
            alpha_b = a[best_b]
            dist = {
                float(alphas[j]): float(np.mean(best_b == j))
                for j in range(len(alphas))
                if np.any(best_b == j)
            }
            boot_best[m] = (
                percentile_interval(rv[:, best_idx[m]], confidence),
                percentile_interval(alpha_b, confidence, discrete=True),
                dist,
            )
    best = {}
    for m in METHODS:
        j = best_idx[m]
        ci, alpha_ci, dist = boot_best.get(m, (None, None, {}))
        best[m] = BestAlpha(alphas[j], sweep[m][j], pvals[m][j], ci, alpha_ci, dist)
    return CorrelationResult(
        n=len(f),
        skipped=skipped,
        step=step,
        alphas=alphas,
        sweep={m: tuple(v) for m, v in sweep.items()},
        sweep_ci=sweep_ci,
        best=best,
        n_resamples=n_resamples,
        invalid_resamples=invalid,
        seed=seed,
        confidence=confidence,
        models=tuple(models),
        source=source,
    )


def correlate_table(table: ScoreTable, **kwargs: Any) -> CorrelationResult:
    """:func:`correlate` on a :class:`ScoreTable` (skipped rows counted in the result)."""
    if len(table.func) < 3:
        raise AnalysisError(
            f"{table.source}: need at least 3 rows with func, if and elo all present; "
            f"{len(table.func)} usable, {len(table.skipped)} left out for missing values"
        )
    return correlate(
        table.func, table.if_, table.elo, models=table.models, skipped=len(table.skipped),
        source=table.source, **kwargs,
    )  # fmt: skip
