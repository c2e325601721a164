"""``vibecheck view REPORT.json [...]``: the results viewer, served on 127.0.0.1 or written as a
static site (``--out DIR``); ``--item NODEID`` opens one item. See docs/viewer.md and
:mod:`pytest_vibecheck.report.viewer`.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import VibecheckError


def register(sub: Any) -> None:
    """Add the ``view`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "view",
        help="browse JSON reports: overview, items, each turn's reply and code, comparisons",
        description=(
            "The results viewer: the overview (pass@1, FR_k, instruction- and task-level IF "
            "with intervals, status counts, the analysis tables and figures), a filterable "
            "list of every item, each item's turns (messages, reply, extracted code with its "
            "violations marked, failing tests, verdicts, diffs between turns) and side-by-side "
            "comparisons. Served on 127.0.0.1, or with --out written as one self-contained "
            "index.html that opens from disk (no network, no CDN)."
        ),
    )
    p.add_argument("reports", nargs="+", metavar="REPORT.json", help="pytest --vibe-report files")
    p.add_argument("--out", metavar="DIR", help="write the static site (DIR/index.html) instead of serving")
    p.add_argument("--item", metavar="NODEID", help="open this item (its permalink #/item/NODEID)")
    p.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="do not open a web browser")
    p.add_argument("--cache", metavar="PATH",
                   help="generation cache to read replies missing from the reports "
                        "(default: the cache each report's run used)")  # fmt: skip
    p.add_argument("--title", default="pytest-vibecheck results", help="page title")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples for the intervals (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--no-plots", action="store_true", help="no figures, even with matplotlib")
    p.set_defaults(func=run)


def build_page(args: argparse.Namespace) -> tuple[str, list[str], set[str]]:
    """The page's HTML, the notes to print, and the items' node ids."""
    from pytest_vibecheck.report.analysis.load import load_reports
    from pytest_vibecheck.report.viewer.replies import fill_for_viewing
    from pytest_vibecheck.report.viewer.site import page_data, render_page

    if args.bootstrap < 0:
        raise VibecheckError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    if not 0 < args.confidence < 1:
        raise VibecheckError(f"--confidence must be between 0 and 1, got {args.confidence}")
    reports = load_reports(args.reports)
    notes = fill_for_viewing(reports, args.cache)
    try:
        from pytest_vibecheck.report.analysis.stats import require_scipy

        require_scipy()
    except VibecheckError as exc:
        from pytest_vibecheck.report.analysis.load import report_items
        from pytest_vibecheck.report.analysis.report import basic_analysis, report_sources

        rep = basic_analysis(report_items(reports), report_sources(reports), args.title)
        notes.append(f"no intervals and analysis tables: {exc}")
    else:
        from pytest_vibecheck.report.analysis.breakdowns import AnalysisSettings
        from pytest_vibecheck.report.analysis.report import build_report

        settings = AnalysisSettings(args.confidence, args.bootstrap, args.seed)
        rep = build_report(reports, settings=settings, plots=not args.no_plots, title=args.title)
    rep.notes.extend(notes)
    data = page_data(rep)
    return render_page(data), rep.notes, {str(i["nodeid"]) for i in data["items"]}


def run(args: argparse.Namespace) -> int:
    """Write or serve the viewer; returns 0 (the server runs until interrupted)."""
    from pytest_vibecheck.report.viewer.site import item_fragment, write_site

    page, notes, nodeids = build_page(args)
    fragment = ""
    if args.item is not None:
        if args.item not in nodeids:
            import difflib

            close = difflib.get_close_matches(args.item, sorted(nodeids), n=3, cutoff=0.5)
            hint = f"; close matches: {', '.join(close)}" if close else ""
            raise VibecheckError(f"--item {args.item}: no such item in the reports{hint}")
        fragment = item_fragment(args.item)
    for note in notes:
        print(f"note: {note}")
    if args.out is not None:
        index = write_site(Path(args.out), page)
        url = index.resolve().as_uri() + fragment
        print(f"wrote {index} ({len(page.encode('utf-8')) / 1e6:.1f} MB, {len(nodeids)} items); open {url}")
        if not args.no_browser and args.item is not None:
            webbrowser.open(url)
        return 0
    from pytest_vibecheck.report.viewer.serve import HOST, page_server

    with page_server(page, args.port) as server:
        url = f"http://{HOST}:{server.server_address[1]}/{fragment}"
        print(f"serving {len(nodeids)} items at {url} (Ctrl-C to stop)", flush=True)
        if not args.no_browser:
            webbrowser.open(url)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
    return 0
