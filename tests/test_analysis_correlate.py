"""Composite-vs-Elo correlation (issue 7, item 1): the paper's numbers, scipy agreement, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.errors import DataFileError
from pytest_vibecheck.report.analysis.correlate import (
    _kendall_rows,
    _pearson_rows,
    _spearman_rows,
    alpha_grid,
    correlate,
    correlate_table,
    read_scores_csv,
)
from pytest_vibecheck.report.analysis.stats import AnalysisError, resample_indices

PAPER = Path(__file__).parent / "data" / "paper_bigvibebench_elo.csv"


@pytest.fixture(scope="module")
def paper() -> tuple[list[float], list[float], list[float]]:
    t = read_scores_csv(PAPER, func="func", if_="if1", elo="elo")
    return list(t.func), list(t.if_), list(t.elo)


def test_paper_table_reads_30_models() -> None:
    t = read_scores_csv(PAPER, func="func", if_="if1", elo="elo")
    assert len(t.func) == 30
    assert t.skipped == ()
    assert t.models[0] == "gemini-2.5-pro"
    assert (t.func[0], t.if_[0], t.elo[0]) == (50.35, 82.19, 1470.0)
    assert t.models[-1] == "kimi-k2"


def test_paper_best_alpha(paper: tuple[list[float], list[float], list[float]]) -> None:
    res = correlate(*paper, step=0.1, n_resamples=0)
    assert res.best["pearson"].alpha == 0.4
    assert res.best["spearman"].alpha == 0.7
    assert res.best["kendall"].alpha == 0.7
    assert res.alphas == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    # the coefficients are scipy's, at the composite computed by hand
    f, i, e = (np.asarray(v) for v in paper)
    comp = 0.4 * i + 0.6 * f
    assert res.best["pearson"].r == pytest.approx(stats.pearsonr(comp, e).statistic, abs=1e-15)
    assert res.best["pearson"].r == pytest.approx(0.7502756484537901, abs=1e-12)
    assert res.best["spearman"].r == pytest.approx(0.7269085963885689, abs=1e-12)
    assert res.best["kendall"].r == pytest.approx(0.5565879234610258, abs=1e-12)
    # alpha = 0 is Func alone, alpha = 1 is IF alone
    assert res.sweep["pearson"][0] == pytest.approx(stats.pearsonr(f, e).statistic, abs=1e-15)
    assert res.sweep["spearman"][10] == pytest.approx(stats.spearmanr(i, e).statistic, abs=1e-15)
    assert res.best["pearson"].ci is None


def test_paper_bootstrap(paper: tuple[list[float], list[float], list[float]]) -> None:
    res = correlate(*paper, step=0.1, n_resamples=400, seed=7)
    again = correlate(*paper, step=0.1, n_resamples=400, seed=7)
    assert res.to_json() == again.to_json()  # seeded
    other = correlate(*paper, step=0.1, n_resamples=400, seed=8)
    assert other.best["pearson"].ci != res.best["pearson"].ci
    for m in ("pearson", "spearman", "kendall"):
        b = res.best[m]
        assert b.ci is not None and b.alpha_ci is not None
        assert b.ci[0] < b.r < b.ci[1]
        assert b.alpha_ci[0] in res.alphas and b.alpha_ci[1] in res.alphas
        assert b.alpha_ci[0] <= b.alpha <= b.alpha_ci[1]
        assert sum(b.alpha_distribution.values()) == pytest.approx(1.0)
        assert res.invalid_resamples[m] == 0


def test_bootstrap_ci_equals_manual_percentiles(
    paper: tuple[list[float], list[float], list[float]],
) -> None:
    res = correlate(*paper, step=0.1, n_resamples=200, seed=3)
    idx = resample_indices(30, 200, 3)
    f, i, e = (np.asarray(v) for v in paper)
    rs = [stats.pearsonr(0.4 * i[row] + 0.6 * f[row], e[row]).statistic for row in idx]
    lo, hi = np.percentile(rs, [2.5, 97.5])
    assert res.best["pearson"].ci == pytest.approx((lo, hi), abs=1e-12)


def test_invalid_resamples_counted() -> None:
    func, if_, elo = [0.1, 0.5, 0.3], [0.2, 0.9, 0.4], [1000.0, 1200.0, 1100.0]
    res = correlate(func, if_, elo, n_resamples=300, seed=1)
    idx = resample_indices(3, 300, 1)
    constant = sum(len(set(row)) == 1 for row in idx.tolist())
    assert constant > 0
    assert res.invalid_resamples == {"pearson": constant, "spearman": constant, "kendall": constant}


def test_alpha_grid_has_no_float_drift() -> None:
    assert alpha_grid(0.1)[3] == 0.3  # 3 * 0.1 == 0.30000000000000004 without rounding
    g = alpha_grid(0.05)
    assert len(g) == 21 and g[3] == 0.15 and g[-1] == 1.0
    assert alpha_grid(1) == (0.0, 1.0)
    for bad in (0, -0.1, 0.3, 1.5):
        with pytest.raises(AnalysisError):
            alpha_grid(bad)


def test_vectorized_coefficients_match_scipy() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, size=(4, 3, 17)).astype(float)  # many ties
    y = rng.normal(size=(4, 1, 17))
    y[0, 0, :5] = 1.0
    p, s, k = _pearson_rows(x, y), _spearman_rows(x, y), _kendall_rows(x, y, max_cells=50)
    for a in range(4):
        for b in range(3):
            assert p[a, b] == pytest.approx(stats.pearsonr(x[a, b], y[a, 0]).statistic, abs=1e-12)
            assert s[a, b] == pytest.approx(stats.spearmanr(x[a, b], y[a, 0]).statistic, abs=1e-12)
            assert k[a, b] == pytest.approx(stats.kendalltau(x[a, b], y[a, 0]).statistic, abs=1e-12)
    const = _pearson_rows(np.ones((1, 5)), np.arange(5.0)[None, :])
    assert np.isnan(const[0])
    assert np.isnan(_kendall_rows(np.ones((1, 5)), np.arange(5.0)[None, :])[0])


def test_missing_values_skipped_and_counted(tmp_path: Path) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text(
        "model,func,if,elo\n"
        "a,0.5,0.7,1400\n"
        "b,,0.6,1300\n"
        "\n"
        "c,0.4,NA,1350\n"
        "d,0.45,0.65,1380\n"
        "e,0.30,0.50,1200\n"
        "f,0.55,0.80,1450\n",
        encoding="utf-8",
    )
    t = read_scores_csv(csv, func="func", if_="if", elo="elo")
    assert t.models == ("a", "d", "e", "f")
    assert t.skipped == ((3, "missing value in func"), (5, "missing value in if"))
    res = correlate_table(t, n_resamples=0)
    assert res.n == 4 and res.skipped == 2


def test_errors(tmp_path: Path) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text("model,func,if,elo\na,0.5,0.7,1400\nb,abc,0.6,1300\n", encoding="utf-8")
    with pytest.raises(DataFileError, match=r"s\.csv:3: field 'func': 'abc' is not a number"):
        read_scores_csv(csv, func="func", if_="if", elo="elo")
    with pytest.raises(DataFileError, match=r"no column 'IF' \(given as --if\); the columns are"):
        read_scores_csv(csv, func="func", if_="IF", elo="elo")
    with pytest.raises(DataFileError, match="file not found"):
        read_scores_csv(tmp_path / "nope.csv", func="f", if_="i", elo="e")
    few = tmp_path / "few.csv"
    few.write_text("model,func,if,elo\na,0.5,0.7,1400\nb,0.4,0.6,1300\nc,,0.6,1300\n")
    with pytest.raises(AnalysisError, match=r"need at least 3 rows.*2 usable, 1 left out"):
        correlate_table(read_scores_csv(few, func="func", if_="if", elo="elo"))
    with pytest.raises(AnalysisError, match="different scales"):
        correlate([0.5, 0.4, 0.3], [70.0, 60.0, 50.0], [1.0, 2.0, 3.0], n_resamples=0)
    with pytest.raises(AnalysisError, match="elo is the same for every model"):
        correlate([0.5, 0.4, 0.3], [0.7, 0.6, 0.5], [1.0, 1.0, 1.0], n_resamples=0)
    with pytest.raises(AnalysisError, match="non-numeric"):
        correlate([0.5, 0.4, float("nan")], [0.7, 0.6, 0.5], [1.0, 2.0, 3.0])


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["correlate", str(PAPER), "--func", "func", "--if", "if1", "--elo", "elo"]
    assert main([*args, "--json", "--bootstrap", "200", "--seed", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 30 and out["skipped"] == 0
    assert out["best"]["pearson"]["alpha"] == 0.4
    assert out["best"]["spearman"]["alpha"] == 0.7
    assert set(out["best"]["kendall"]) >= {"alpha", "r", "ci", "alpha_ci"}
    assert len(out["best"]["pearson"]["ci"]) == 2
    assert [row["alpha"] for row in out["sweep"]] == [round(i * 0.1, 10) for i in range(11)]
    assert set(out["sweep"][0]) >= {"alpha", "pearson", "spearman", "kendall"}
    assert out["bootstrap"]["resamples"] == 200 and out["bootstrap"]["seed"] == 1


def test_cli_text_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["correlate", str(PAPER), "--func", "func", "--if", "if1", "--elo", "elo"]
    assert main([*args, "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "   0.4    0.750*" in out
    assert "pearson  alpha = 0.4  r = 0.750" in out
    assert main([*args[:-1], "Elo"]) == 2
    assert "no column 'Elo'" in capsys.readouterr().err
    assert main([*args, "--step", "0.3"]) == 2
    assert main(["correlate", str(PAPER), "--elo", "elo"]) == 2
    assert "needs --func and --if COL" in capsys.readouterr().err
