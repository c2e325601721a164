"""``vibecheck merge REPORT.json ... [--json OUT] [--junitxml OUT] [--fail-under ...] [--max-fr V]``.

Merges the JSON reports of the shards of one run (``pytest --vibe-shard I/N``) into one report
whose aggregates are recomputed from all the items (:mod:`pytest_vibecheck.report.merge`), writes it as
JSON and/or JUnit XML (the plugin's own writers: ``junitparser`` for JUnit), prints the summary
table, and applies thresholds to the merged aggregates. Exit status: 0, 1 when a threshold
failed, 2 for unusable input.
"""

from __future__ import annotations

import argparse
from typing import Any

from pytest_vibecheck.config import thresholds as th
from pytest_vibecheck.report.json_report import validate_report, write_report
from pytest_vibecheck.report.merge import merge_files
from pytest_vibecheck.report.terminal import render_summary


def register(sub: Any) -> None:
    """Add the ``merge`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "merge",
        help="merge the JSON reports of a sharded run (aggregates recomputed from the items)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("reports", nargs="+", metavar="REPORT.json", help="shard reports (--vibe-report)")
    p.add_argument("--json", metavar="OUT", help="write the merged JSON report here")
    p.add_argument("--junitxml", metavar="OUT", help="write the merged JUnit XML here")
    p.add_argument(
        "--fail-under", metavar="[MODEL:]METRIC=VALUE,...", action="append", default=[],
        help="as pytest's --vibe-fail-under, on the merged aggregates (exit status 1 if unmet)",
    )
    p.add_argument("--max-fr", metavar="VALUE", help="as pytest's --vibe-max-fr, on the merged aggregates")
    p.add_argument("-q", "--quiet", action="store_true", help="print no summary table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Merge, write, print; returns 1 if a threshold failed, else 0. Raises
    :class:`~pytest_vibecheck.errors.VibecheckError` (exit status 2 in the CLI)."""
    limits = th.parse_fail_under(args.fail_under, "--fail-under") if args.fail_under else []
    if args.max_fr is not None:
        limits.append(th.parse_max_fr(args.max_fr, "--max-fr"))
    merged = merge_files(args.reports)
    merged.pop("thresholds", None)  # a shard's checks judged that shard only
    checks = th.evaluate(merged["aggregates"], limits) if limits else []
    if checks:
        merged["thresholds"] = [c.to_dict() for c in checks]
    validate_report(merged, source="merged report")
    written = []
    if args.json:
        written.append(f"JSON report: {write_report(args.json, merged)}")
    if args.junitxml:
        # imported here: the JUnit writer brings junitparser and pytest, which a merge
        # without --junitxml does not need
        from pytest_vibecheck.report.junit import write_junit

        written.append(f"JUnit XML: {write_junit(args.junitxml, merged)}")
    if not args.quiet:
        for line in render_summary(merged):
            print(line)
    print(f"merged {len(args.reports)} report(s): {len(merged['items'])} items")
    for line in written:
        print(line)
    if not limits:
        return 0
    for line in th.format_checks(checks, verbose=True):
        print(line)
    failed = sum(not c.passed for c in checks)
    print(f"thresholds: {failed} of {len(checks)} check(s) failed" if failed
          else f"thresholds: all {len(checks)} check(s) met")
    return 1 if failed else 0
