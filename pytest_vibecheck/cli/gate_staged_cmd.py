"""``vibecheck gate-staged [FILES] [--config PATH] [--all-lines] [--sarif PATH]``: the gate's
instruction check on the staged changes (the pre-commit hook ``vibecheck-gate``).

Exit status: 0 when every check passes (also when nothing Python is staged), 1 when a counted
violation or a file that does not parse is found, 2 for a bad config or git failing, 3 when the
verifier could not judge (never counted as a violation). See :mod:`pytest_vibecheck.ci.staged`
and ``docs/ci.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    """Add the ``gate-staged`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "gate-staged",
        help="check the staged changes against the declared gate instructions (pre-commit)",
        description="Check what is staged for commit against [tool.vibecheck.gate], as the "
        "pull-request gate checks a pull request: only staged lines count. This is the "
        "pre-commit hook vibecheck-gate.",
    )
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="only these files (pre-commit passes the staged ones); default: all staged")
    p.add_argument("--config", type=Path, metavar="PATH",
                   help="TOML file with [tool.vibecheck.gate] (default: pyproject.toml here, "
                   "else at the top of the work tree)")
    p.add_argument("--all-lines", action="store_true",
                   help="count violations on every line of each file checked, and check named "
                   "files that have no staged change (pre-commit run --all-files)")
    p.add_argument("--sarif", type=Path, metavar="PATH", help="also write a SARIF 2.1.0 log")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """:func:`_run` with the team instructions of the ``--config`` file's own
    ``[tool.vibecheck] instruction_dirs`` in the registry."""
    from pytest_vibecheck.compose.build import config_file_registry

    with config_file_registry(args.config, Path.cwd()):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Run the check and print its lines; returns the exit status."""
    from pytest_vibecheck import __version__
    from pytest_vibecheck.ci import gate as gatemod
    from pytest_vibecheck.ci.declared import default_config_path, load_declared, relative_source
    from pytest_vibecheck.ci.staged import check_staged, report_lines

    cwd = Path.cwd()
    root = gatemod.repo_root(cwd)
    config_path = args.config or default_config_path(root, cwd)
    config = load_declared(config_path, root)
    files = None
    if args.files:
        files = []
        for name in args.files:
            full = (cwd / name).resolve()
            try:
                files.append(full.relative_to(root.resolve()).as_posix())
            except ValueError:
                raise gatemod.GateError(f"{name} is outside the work tree {root}") from None
    check = check_staged(root, config, files, all_lines=args.all_lines)
    for line in report_lines(check, config):
        print(line)
    if args.sarif is not None:
        from pytest_vibecheck.ci import sarif as sarifmod
        from pytest_vibecheck.verify.ruff_engine import default_engine

        log = sarifmod.gate_log(
            check.records, config.instructions, text_of=check.texts.get,
            tool_version=__version__, ruff_version=default_engine().version(), repo=root,
            properties={"base": check.revision or "index",
                        "linesCounted": "all" if args.all_lines else "changed",
                        "config": relative_source(config_path, root)},
        )
        sarifmod.write_log(args.sarif, log)
    if check.failed:
        return 1
    return 3 if check.errors else 0
