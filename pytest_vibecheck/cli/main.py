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
from pytest_vibecheck.errors import VibecheckError

#: Every command: its name, its module, and the one-line help ``vibecheck --help`` shows, in
#: that order. The help text is the one the module's ``register`` gives (a test compares them),
#: so that ``vibecheck --help`` and each command start without importing the other command
#: modules: importing all of them (and the layers they use) cost about 0.4 s a call.
COMMANDS: dict[str, tuple[str, str]] = {
    "instructions": ("pytest_vibecheck.cli.instructions_cmd", "list the 30 VeriCode instructions"),
    "augment": (
        "pytest_vibecheck.cli.augment_cmd",
        "select k VeriCode instructions per task and write a suite",
    ),
    "problems": ("pytest_vibecheck.cli.problems_cmd", "list suites and show their statistics"),
    "verify": (
        "pytest_vibecheck.cli.verify_cmd",
        "check code or a model reply against VeriCode instructions",
    ),
    "correlate": (
        "pytest_vibecheck.cli.correlate_cmd",
        "correlate alpha*IF + (1-alpha)*Func with human-preference Elo across models",
    ),
    "report": (
        "pytest_vibecheck.cli.report_cmd",
        "analyse vibecheck JSON reports into Markdown, HTML and CSV",
    ),
    "view": (
        "pytest_vibecheck.cli.view_cmd",
        "browse JSON reports: overview, items, each turn's reply and code, comparisons",
    ),
    "show": (
        "pytest_vibecheck.cli.show_cmd",
        "print what the model wrote for an item: each turn's prompt, reply, code, tests, verdicts",
    ),
    "summary": (
        "pytest_vibecheck.cli.summary_cmd",
        "print the summary table of a JSON report (pytest --vibe-report)",
    ),
    "cache": ("pytest_vibecheck.cli.cache_cmd", "inspect the generation cache"),
    "batches": (
        "pytest_vibecheck.cli.batches_cmd",
        "list or cancel the provider batches of batch mode",
    ),
    "merge": (
        "pytest_vibecheck.cli.merge_cmd",
        "merge the JSON reports of a sharded run (aggregates recomputed from the items)",
    ),
    "exec": ("pytest_vibecheck.cli.exec_cmd", "run one candidate against a task's tests in the sandbox"),
    "env-check": (
        "pytest_vibecheck.cli.envcheck_cmd",
        "list the tasks of a suite this environment can run",
    ),
    "env": (
        "pytest_vibecheck.cli.env_cmd",
        "build or describe an isolated execution environment (bigvibebench)",
    ),
    "results": (
        "pytest_vibecheck.cli.results_cmd",
        "render the results page (Markdown) of a JSON report",
    ),
    "export-dataset": (
        "pytest_vibecheck.cli.export_dataset_cmd",
        "write a suite's single-turn prompts and reward metadata for TRL or verl",
    ),
    "plugins": (
        "pytest_vibecheck.cli.plugins_cmd",
        "list the registered backends, checks, instructions, selectors and suite loaders",
    ),
    "gate-prompt": (
        "pytest_vibecheck.cli.gate_prompt_cmd",
        "print the declared gate instructions as the text to hand a coding agent",
    ),
    "gate-staged": (
        "pytest_vibecheck.cli.gate_staged_cmd",
        "check the staged changes against the declared gate instructions (pre-commit)",
    ),
}

#: Command modules, in the order they appear in ``vibecheck --help``.
COMMAND_MODULES: tuple[str, ...] = tuple(module for module, _ in COMMANDS.values())


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. With ``only`` (a command's name), that command's module is
    imported and registers its full parser, and the other commands are not listed; without,
    every command is listed by name and help line only (what ``vibecheck --help`` and a
    usage error need), and no command module is imported."""
    from pytest_vibecheck.cli.exit_codes import epilog

    parser = argparse.ArgumentParser(
        prog="vibecheck",
        description="VeriCode verification and Vibe Checker benchmarks (see README.md).",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pytest-vibecheck {__version__}")
    # not ``dest="command"``: a command may have a ``--command`` option of its own
    # (``vibecheck results --command``), which would overwrite the name in error messages
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    sub.required = True
    if only is not None:
        importlib.import_module(COMMANDS[only][0]).register(sub)
    else:
        for name, (_module, help_text) in COMMANDS.items():
            sub.add_parser(name, help=help_text)
    return parser


def _command_name(argv: Sequence[str] | None) -> str | None:
    """The command ``argv`` names as its first argument, when it is one, else None."""
    args = sys.argv[1:] if argv is None else list(argv)
    return args[0] if args and args[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vibecheck`` console script; returns the exit status.

    The plugins are loaded first, as in a pytest run (:func:`pytest_vibecheck.compose.build.registry_for_project`:
    entry points of the group ``pytest_vibecheck``, the root ``conftest.py`` when it implements
    ``pytest_vibecheck_register``, ``[tool.vibecheck] instruction_dirs``).
    """
    name = _command_name(argv)
    if name is None:  # --help, --version or a usage error: exits here, loads no plugin
        build_parser().parse_args(argv)
        return 2  # pragma: no cover - parse_args exits (a command is required)
    from pytest_vibecheck.compose.build import registry_for_project
    from pytest_vibecheck.registry import activate

    try:
        registry = registry_for_project(Path.cwd())
    except VibecheckError as exc:
        print(f"vibecheck: error: {exc}", file=sys.stderr)
        return 2
    with activate(registry):
        args = build_parser(name).parse_args(argv)
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
