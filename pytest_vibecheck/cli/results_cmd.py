"""``vibecheck results REPORT.json --out docs/results.md``: the published results page
(logic in :mod:`pytest_vibecheck.report.results_page`).

Options add what the report itself does not hold: the benchmark script's run log
(``--runs PREFIX.runs.jsonl``, wall time), the report of a second identical run (``--rerun``,
cache hit rate), the shipped replay (``--replay NAME|DIR``, provenance), the commands that
reproduce the page (``--command``, repeatable) and a partial-run note (``--partial``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError


def register(sub: Any) -> None:
    """Add the ``results`` sub-command to ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "results", help="render the results page (Markdown) of a JSON report"
    )
    p.add_argument("report", type=Path, metavar="REPORT.json", help="report of pytest --vibe-report")
    p.add_argument("--out", type=Path, default=None, help="Markdown file to write (default: stdout)")
    p.add_argument("--title", default="Results", help="page title")
    p.add_argument("--intro", action="append", default=[], metavar="TEXT", help="a paragraph under the title (repeatable)")
    p.add_argument("--runs", type=Path, default=None, metavar="JSONL",
                   help="run log of scripts/run_local_model_benchmark.sh (wall time)")
    p.add_argument("--rerun", type=Path, default=None, metavar="REPORT.json",
                   help="report of a second identical run (cache hit rate)")
    p.add_argument("--replay", default=None, metavar="NAME|DIR", help="the replay holding the run's replies (provenance)")
    p.add_argument("--command", action="append", default=[], metavar="CMD", help="a command that reproduces the page (repeatable)")
    p.add_argument("--partial", default=None, metavar="TEXT", help="mark the page as partial results, with this note")
    p.set_defaults(func=run_results)


def run_results(args: argparse.Namespace) -> int:
    """Render the page; returns 0. Bad inputs raise VibecheckError (exit status 2), and so does
    a missing ``analysis`` extra (the page's intervals are bootstrapped with numpy), after the
    reports were checked."""
    from pytest_vibecheck.report.analysis.stats import require_scipy
    from pytest_vibecheck.report.json_report import load_report

    for path in (args.report, args.rerun):  # a malformed report: one line naming the field
        if path is not None:
            load_report(path)
    require_scipy()  # then the extra's one line, as `vibecheck report`
    from pytest_vibecheck.generate.backends.replay import resolve_replay
    from pytest_vibecheck.report.results_page import read_runs, render_results_page

    manifest: dict[str, Any] | None = None
    if args.replay:
        _name, _data, manifest = resolve_replay(args.replay)
        if not manifest:
            raise DataFileError(args.replay, "a replay folder with manifest.json is needed for provenance")
    runs = read_runs(args.runs) if args.runs is not None else []
    paths = {str(p): str(p) for p in (args.report, args.rerun) if p is not None}
    page = render_results_page(
        args.report,
        title=args.title,
        intro=args.intro,
        commands=args.command,
        runs=runs,
        rerun_report=args.rerun,
        replay_manifest=manifest,
        partial_note=args.partial,
        display_paths=paths,
    )
    if args.out is None:
        print(page, end="")
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(page, encoding="utf-8")
        print(f"wrote {args.out} ({len(page.splitlines())} lines) from {args.report}")
    return 0
