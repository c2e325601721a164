"""The ``vibecheck`` command line: one sub-command per module in ``pytest_vibecheck.cli``.

Each command module defines ``register(subparsers)`` which adds its parser and sets
``func(args) -> int`` (the exit status). A :class:`~pytest_vibecheck.errors.VibecheckError`
is printed as one line on stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_vibecheck import __version__
from pytest_vibecheck.compose.build import registry_for_project
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.registry import activate

#: Command modules, in the order they appear in ``vibecheck --help``.
COMMAND_MODULES: tuple[str, ...] = (
    "pytest_vibecheck.cli.instructions_cmd",
    "pytest_vibecheck.cli.augment_cmd",
    "pytest_vibecheck.cli.problems_cmd",
    "pytest_vibecheck.cli.verify_cmd",
    "pytest_vibecheck.cli.correlate_cmd",
    "pytest_vibecheck.cli.report_cmd",
    "pytest_vibecheck.cli.view_cmd",
    "pytest_vibecheck.cli.show_cmd",
    "pytest_vibecheck.cli.summary_cmd",
    "pytest_vibecheck.cli.cache_cmd",
    "pytest_vibecheck.cli.batches_cmd",
    "pytest_vibecheck.cli.merge_cmd",
    "pytest_vibecheck.cli.exec_cmd",
    "pytest_vibecheck.cli.envcheck_cmd",
    "pytest_vibecheck.cli.env_cmd",
    "pytest_vibecheck.cli.results_cmd",
    "pytest_vibecheck.cli.export_dataset_cmd",
    "pytest_vibecheck.cli.plugins_cmd",
    "pytest_vibecheck.cli.gate_prompt_cmd",
    "pytest_vibecheck.cli.gate_staged_cmd",
)


#: Commands that run on every commit (the pre-commit hooks of ``.pre-commit-hooks.yaml``): their
#: parser is built alone, without importing the other command modules (most of a run's
#: start-up time otherwise).
HOOK_COMMANDS: dict[str, str] = {
    "gate-staged": "pytest_vibecheck.cli.gate_staged_cmd",
    "gate-prompt": "pytest_vibecheck.cli.gate_prompt_cmd",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full argument parser with every registered sub-command; with ``only`` (a module of
    :data:`HOOK_COMMANDS`), a parser with that command alone."""
    parser = argparse.ArgumentParser(
        prog="vibecheck",
        description="VeriCode verification and Vibe Checker benchmarks (see README.md).",
    )
    parser.add_argument("--version", action="version", version=f"pytest-vibecheck {__version__}")
    # not ``dest="command"``: a command may have a ``--command`` option of its own
    # (``vibecheck results --command``), which would overwrite the name in error messages
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    sub.required = True
    for name in (only,) if only else COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _hook_command(argv: Sequence[str] | None) -> str | None:
    """The module of a hook command when ``argv`` starts with its name, else None."""
    args = sys.argv[1:] if argv is None else list(argv)
    return HOOK_COMMANDS.get(args[0]) if args else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vibecheck`` console script; returns the exit status.

    The plugins are loaded first, as in a pytest run (:func:`pytest_vibecheck.compose.build.registry_for_project`:
    entry points of the group ``pytest_vibecheck``, the root ``conftest.py`` when it implements
    ``pytest_vibecheck_register``, ``[tool.vibecheck] instruction_dirs``).
    """
    try:
        registry = registry_for_project(Path.cwd())
    except VibecheckError as exc:
        print(f"vibecheck: error: {exc}", file=sys.stderr)
        return 2
    with activate(registry):
        parser = build_parser(_hook_command(argv))
        args = parser.parse_args(argv)
        name = args.subcommand
        try:
            status: int = args.func(args)
        except VibecheckError as exc:
            print(f"vibecheck {name}: error: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            # a file the command was told to read or write (``--out /proc/x``): one line, never
            # a traceback; what to do depends on the path, which the message names
            where = f"{exc.filename}: " if exc.filename else ""
            print(
                f"vibecheck {name}: error: {where}{exc.strerror or exc}; "
                "give a path you can read or write",
                file=sys.stderr,
            )
            return 2
        except KeyboardInterrupt:
            print("vibecheck: interrupted", file=sys.stderr)
            return 130
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
