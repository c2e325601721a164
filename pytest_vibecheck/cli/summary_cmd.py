"""``vibecheck summary REPORT.json [-v] [--recompute]``: print a run's summary table again."""

from __future__ import annotations

import argparse
from typing import Any

from pytest_vibecheck.report.aggregate import aggregate, generation_totals
from pytest_vibecheck.report.json_report import load_report
from pytest_vibecheck.report.terminal import render_summary


def register(sub: Any) -> None:
    """Add the ``summary`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "summary",
        help="print the summary table of a JSON report (pytest --vibe-report)",
        description="Print the vibecheck summary of a JSON report written with "
        "`pytest --vibe-report PATH.json` (format: docs/report-schema.md).",
    )
    p.add_argument("report", help="the JSON report")
    p.add_argument(
        "-v", "--verbose", action="count", default=0,
        help="also IF by position, category and instruction, and multi-turn retention",
    )
    p.add_argument(
        "--recompute", action="store_true",
        help="recompute the aggregates from the report's items instead of printing the stored ones",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the summary; returns 0. A missing or invalid report is a ReportError (status 2)."""
    report = load_report(args.report)
    if args.recompute:
        report = report.copy()
        report["aggregates"] = aggregate(report["items"])
        report["generation"] = generation_totals(report["items"])
    run_info = report.get("run") or {}
    print(
        f"vibecheck summary of {args.report} (pytest-vibecheck {run_info.get('plugin_version')}, "
        f"Ruff {run_info.get('ruff_version')}, Python {run_info.get('python_version')}, "
        f"{len(report.get('items') or [])} items, created {report.get('created')})"
    )
    for line in render_summary(report, verbosity=args.verbose):
        print(line)
    return 0
