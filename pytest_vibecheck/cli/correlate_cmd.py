"""``vibecheck correlate``: composite score alpha*IF + (1-alpha)*Func against human-preference Elo.

Two inputs:

- ``vibecheck correlate SCORES.csv --func COL --if COL --elo COL`` (one row per model);
- ``vibecheck correlate --reports R.json [R.json ...] --elo-csv ELO.csv --elo COL``: Func and IF
  per model computed from vibecheck JSON reports (base pass@1; single-turn instruction-level IF
  at k = 1), joined with the Elo CSV on the model column.

See ``docs/analysis.md``.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from pytest_vibecheck.errors import VibecheckError


def register(sub: Any) -> None:
    """Add the ``correlate`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "correlate",
        help="correlate alpha*IF + (1-alpha)*Func with human-preference Elo across models",
        description=(
            "Sweep alpha of alpha*IF + (1-alpha)*Func over a grid and report Pearson, Spearman and Kendall "
            "correlations with Elo, the best alpha for each, and bootstrap confidence intervals "
            "over models (paper §4.5)."
        ),
    )
    p.add_argument("scores", nargs="?", metavar="SCORES.csv", help="CSV, one row per model")
    p.add_argument(
        "--func", dest="func_col", metavar="COL", help="column with functionality (base pass@1)"
    )
    p.add_argument("--if", dest="if_", metavar="COL", help="column with instruction following")
    p.add_argument("--elo", metavar="COL", required=True, help="column with the Elo rating")
    p.add_argument(
        "--model", metavar="COL", default="model", help="model-name column (default: model)"
    )
    p.add_argument(
        "--reports",
        nargs="+",
        metavar="REPORT.json",
        help="vibecheck JSON reports instead of SCORES.csv",
    )
    p.add_argument("--elo-csv", metavar="ELO.csv", help="Elo per model (with --reports)")
    p.add_argument("--step", type=float, default=0.1, help="alpha grid step (default 0.1)")
    p.add_argument(
        "--bootstrap", type=int, default=1000, metavar="N",
        help="bootstrap resamples over models for the intervals (default 1000; 0 = none)",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def _ci(ci: tuple[float, float] | None, digits: int = 3) -> str:
    return f"[{_fmt(ci[0], digits)}, {_fmt(ci[1], digits)}]" if ci else ""


def run(args: argparse.Namespace) -> int:
    """Run the analysis and print a table (or JSON); returns 0. Bad input raises VibecheckError."""
    from pytest_vibecheck.report.analysis.correlate import METHODS, correlate_table, read_scores_csv

    if args.bootstrap < 0:
        raise VibecheckError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    if args.reports:
        if args.scores:
            raise VibecheckError("give either SCORES.csv or --reports, not both")
        if not args.elo_csv:
            raise VibecheckError("--reports needs --elo-csv ELO.csv with a model and an Elo column")
        from pytest_vibecheck.report.analysis.load import load_reports, scores_from_reports

        table = scores_from_reports(
            load_reports(args.reports), args.elo_csv, elo=args.elo, model=args.model
        )
    else:
        if not args.scores:
            raise VibecheckError("give SCORES.csv (or --reports REPORT.json ... --elo-csv ELO.csv)")
        missing = [o for o, v in (("--func", args.func_col), ("--if", args.if_)) if not v]
        if missing:
            raise VibecheckError(f"SCORES.csv needs {' and '.join(missing)} COL")
        table = read_scores_csv(
            args.scores, func=args.func_col, if_=args.if_, elo=args.elo, model=args.model
        )
    result = correlate_table(
        table, step=args.step, n_resamples=args.bootstrap, seed=args.seed,
        confidence=args.confidence,
    )  # fmt: skip
    if args.json:
        out = result.to_json()
        out["skipped_rows"] = [{"line": ln, "reason": why} for ln, why in table.skipped]
        print(json.dumps(out, indent=2))
        return 0
    pct = f"{args.confidence:.0%}"
    print(f"{result.source}: {result.n} models", end="")
    print(f" ({result.skipped} rows left out for missing values)" if result.skipped else "")
    for lineno, why in table.skipped:
        print(f"  left out line {lineno}: {why}")
    print(f"composite = alpha*IF + (1-alpha)*Func, alpha step {result.step:g}")
    print(f"{'alpha':>6}  {'pearson':>8}  {'spearman':>8}  {'kendall':>8}")
    for i, a in enumerate(result.alphas):
        cells = []
        for m in METHODS:
            mark = "*" if result.best[m].alpha == a else " "
            cells.append(f"{_fmt(result.sweep[m][i]):>7}{mark}")
        print(f"{a:>6g}  " + "  ".join(cells))
    print("best alpha (*):")
    for m in METHODS:
        b = result.best[m]
        line = f"  {m:<8} alpha = {b.alpha:g}  r = {_fmt(b.r)}  p = {b.p_value:.2g}"
        if b.ci:
            line += f"  {pct} CI of r {_ci(b.ci)}"
        if b.alpha_ci:
            share = b.alpha_distribution.get(b.alpha, 0.0)
            line += f"  {pct} CI of alpha {_ci(b.alpha_ci, 1)}"
            line += f" (best in {share:.0%} of resamples)"
        print(line)
    if result.n_resamples:
        bad = sum(result.invalid_resamples.values())
        print(
            f"bootstrap: {result.n_resamples} resamples over models, seed {result.seed}"
            + (f", {bad} undefined resamples left out" if bad else "")
        )
    return 0
