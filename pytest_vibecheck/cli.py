"""The ``vibecheck`` command line: one sub-command per module in ``pytest_vibecheck.commands``.

Each command module defines ``register(subparsers)`` which adds its parser and sets
``func(args) -> int`` (the exit status). A :class:`~pytest_vibecheck.errors.VibecheckError`
is printed as one line on stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from . import __version__
from .errors import VibecheckError

#: Command modules, in the order they appear in ``vibecheck --help``.
COMMAND_MODULES: tuple[str, ...] = (
    "pytest_vibecheck.commands.instructions_cmd",
    "pytest_vibecheck.commands.augment_cmd",
    "pytest_vibecheck.commands.problems_cmd",
    "pytest_vibecheck.commands.verify_cmd",
    "pytest_vibecheck.commands.correlate_cmd",
    "pytest_vibecheck.commands.report_cmd",
    "pytest_vibecheck.commands.summary_cmd",
    "pytest_vibecheck.commands.cache_cmd",
    "pytest_vibecheck.commands.merge_cmd",
    "pytest_vibecheck.commands.exec_cmd",
    "pytest_vibecheck.commands.envcheck_cmd",
    "pytest_vibecheck.commands.results_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered sub-command."""
    parser = argparse.ArgumentParser(
        prog="vibecheck",
        description="VeriCode verification and Vibe Checker benchmarks (see README.md).",
    )
    parser.add_argument("--version", action="version", version=f"pytest-vibecheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vibecheck`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except VibecheckError as exc:
        print(f"vibecheck {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("vibecheck: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
