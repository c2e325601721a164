"""``vibecheck report REPORT.json ... --out DIR``: Markdown, HTML and CSV analysis of reports.

See ``docs/analysis.md`` and :mod:`pytest_vibecheck.report.analysis.report`.
"""

from __future__ import annotations

import argparse
from typing import Any

from pytest_vibecheck.errors import VibecheckError


def register(sub: Any) -> None:
    """Add the ``report`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "report",
        help="analyse vibecheck JSON reports into Markdown, HTML and CSV",
        description=(
            "Tables (with confidence intervals) of pass@1, FR_k, instruction- and task-level "
            "IF, IF by position, category and instruction, instruction co-failures and "
            "multi-turn retention; figures when matplotlib is installed."
        ),
    )
    p.add_argument("reports", nargs="+", metavar="REPORT.json", help="pytest --vibe-report files")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    p.add_argument("--title", default="pytest-vibecheck analysis", help="report title")
    p.add_argument("--elo-csv", metavar="ELO.csv", help="add the composite-vs-Elo analysis")
    p.add_argument("--elo", metavar="COL", default="elo", help="Elo column (default: elo)")
    p.add_argument("--model", metavar="COL", default="model", help="model column (default: model)")
    p.add_argument("--suite", help="suite for the Elo analysis when reports hold several")
    p.add_argument("--step", type=float, default=0.1, help="alpha grid step (default 0.1)")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="bootstrap resamples (default 1000)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument(
        "--top-pairs", type=int, default=5, help="co-failure pairs per group (default 5)"
    )
    p.add_argument("--no-plots", action="store_true", help="tables only, even with matplotlib")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the report files and list them; returns 0."""
    from pytest_vibecheck.report.analysis.breakdowns import AnalysisSettings
    from pytest_vibecheck.report.analysis.load import load_reports, scores_from_reports
    from pytest_vibecheck.report.analysis.report import build_report, write_report
    from pytest_vibecheck.report.analysis.stats import require_scipy

    require_scipy()
    if args.bootstrap < 0:
        raise VibecheckError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    if not 0 < args.confidence < 1:
        raise VibecheckError(f"--confidence must be between 0 and 1, got {args.confidence}")
    reports = load_reports(args.reports)
    correlation = None
    if args.elo_csv:
        from pytest_vibecheck.report.analysis.correlate import correlate_table

        table = scores_from_reports(
            reports, args.elo_csv, elo=args.elo, model=args.model, suite=args.suite
        )
        correlation = correlate_table(
            table, step=args.step, n_resamples=args.bootstrap, seed=args.seed,
            confidence=args.confidence,
        )  # fmt: skip
    settings = AnalysisSettings(args.confidence, args.bootstrap, args.seed, args.top_pairs)
    rep = build_report(
        reports, settings=settings, correlation=correlation, plots=not args.no_plots,
        title=args.title,
    )  # fmt: skip
    written = write_report(rep, args.out)
    for note in rep.notes:
        print(f"note: {note}")
    print(f"wrote {len(written)} files to {args.out}:")
    for p in written:
        print(f"  {p}")
    return 0
