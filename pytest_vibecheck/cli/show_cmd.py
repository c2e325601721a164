"""``vibecheck show NODEID|SUITE::TASK [--model M --protocol P --k K]``: what the model wrote.

Prints each turn of the chosen items of a JSON report: the messages sent, the reply, the
extracted code with its violated lines marked, the failing tests with their message and each
instruction's verdict (:mod:`pytest_vibecheck.report.viewer.show`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import VibecheckError


def register(sub: Any) -> None:
    """Add the ``show`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "show",
        help="print what the model wrote for an item: each turn's prompt, reply, code, tests, verdicts",
        description=(
            "Print each turn of an item of a JSON report: the prompt (messages sent), the reply, "
            "the extracted code with violated lines marked (rule, message, instruction), the "
            "failing tests with their message, and each instruction's verdict. TARGET is a node "
            "id, or SUITE::TASK (every item of the task, narrowed by --model/--protocol/--k)."
        ),
    )
    p.add_argument("target", metavar="NODEID|SUITE::TASK", help="the item(s) to print")
    p.add_argument("--report", metavar="PATH",
                   help="the JSON report (default: report in [tool.vibecheck] of ./pyproject.toml)")  # fmt: skip
    p.add_argument("--model", help="only this model (the --vibe-model spec)")
    p.add_argument("--protocol", choices=("baseline", "single", "multi"), help="only this protocol")
    p.add_argument("--k", type=int, help="only this k")
    p.add_argument("--cache", metavar="PATH",
                   help="generation cache for replies missing from the report (default: the run's cache)")  # fmt: skip
    p.set_defaults(func=run)


def default_report(cwd: Path) -> Path:
    """The ``report`` setting of ``[tool.vibecheck]`` in ``cwd/pyproject.toml`` (relative to
    it). Raises :class:`VibecheckError` when there is none."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 only
        import tomli as tomllib
    path = cwd / "pyproject.toml"
    try:
        with path.open("rb") as fh:
            table = tomllib.load(fh).get("tool", {}).get("vibecheck", {})
    except (OSError, tomllib.TOMLDecodeError):
        table = {}
    report = table.get("report") if isinstance(table, dict) else None
    if not isinstance(report, str) or not report:
        raise VibecheckError(
            "no report given: pass --report PATH.json (written by pytest --vibe-report), or set "
            "report in [tool.vibecheck] of pyproject.toml"
        )
    return cwd / report


def run(args: argparse.Namespace) -> int:
    """Print the items; returns 0. A bad report or target is a VibecheckError (status 2)."""
    from pytest_vibecheck.report.analysis.load import load_reports
    from pytest_vibecheck.report.viewer.replies import fill_for_viewing
    from pytest_vibecheck.report.viewer.show import render_item, select_items

    path = Path(args.report) if args.report else default_report(Path.cwd())
    reports = load_reports([path])
    notes = fill_for_viewing(reports, args.cache)
    items = select_items(
        reports[0].items, args.target, model=args.model, protocol=args.protocol, k=args.k,
        source=str(path),
    )  # fmt: skip
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    try:
        for n, item in enumerate(items):
            if n:
                print("\n" + "=" * 78 + "\n")
            print("\n".join(render_item(item)), flush=True)
    except BrokenPipeError:  # `vibecheck show ... | head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
