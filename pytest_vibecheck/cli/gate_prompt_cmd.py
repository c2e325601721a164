"""``vibecheck gate-prompt [--config PATH] [--write [FILE] | --check [FILE]]``: the declared gate
instructions as the text to hand a coding agent.

Prints :func:`pytest_vibecheck.ci.prompt.agent_prompt` of the repository's declared instructions
(:func:`pytest_vibecheck.ci.declared.load_declared`: the same ids and parameters the gate
checks). ``--write`` puts it between marker lines into ``AGENTS.md`` or ``CLAUDE.md`` (the one
that already has the block, else the one that exists, else ``AGENTS.md``), keeping the rest of
the file; ``--check`` exits 1 when the file's block is missing or no longer matches (the
pre-commit hook ``vibecheck-gate-prompt``). Exit status 2 for a bad config.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    """Add the ``gate-prompt`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "gate-prompt",
        help="print the declared gate instructions as the text to hand a coding agent",
        description="Print the instructions of [tool.vibecheck.gate], each in its own wording "
        "with its parameters, as the text to give a coding agent; optionally write them into "
        "AGENTS.md or CLAUDE.md, or check that the written copy is current.",
    )
    p.add_argument("--config", type=Path, metavar="PATH",
                   help="TOML file with [tool.vibecheck.gate] (default: pyproject.toml here, "
                   "else at the top of the work tree)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", nargs="?", const="", metavar="FILE",
                      help="write the text between marker lines into FILE (default: AGENTS.md "
                      "or CLAUDE.md at the top of the work tree), keeping the rest of it")
    mode.add_argument("--check", nargs="?", const="", metavar="FILE",
                      help="exit 1 if FILE (default: every AGENTS.md/CLAUDE.md with a block) "
                      "lacks the text or holds an older one")
    p.set_defaults(func=run)


def _root(cwd: Path) -> Path:
    from pytest_vibecheck.ci.gate import GateError, repo_root

    try:
        return repo_root(cwd)
    except GateError:  # not a git work tree: the folder itself
        return cwd


def run(args: argparse.Namespace) -> int:
    """:func:`_run` with the team instructions of the ``--config`` file's own
    ``[tool.vibecheck] instruction_dirs`` in the registry."""
    from pytest_vibecheck.compose.build import config_file_registry

    with config_file_registry(args.config, Path.cwd()):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Print, write or check the prompt; returns the exit status."""
    from pytest_vibecheck.ci.declared import default_config_path, load_declared, relative_source
    from pytest_vibecheck.ci.prompt import (
        AGENT_FILES,
        agent_prompt,
        block_of,
        choose_agent_file,
        with_block,
    )

    cwd = Path.cwd()
    root = _root(cwd)
    config_path = args.config or default_config_path(root, cwd)
    config = load_declared(config_path, root)
    prompt = agent_prompt(config, relative_source(config_path, root))
    if args.write is None and args.check is None:
        sys.stdout.write(prompt)
        return 0
    if args.write is not None:
        target = Path(args.write) if args.write else choose_agent_file(root)
        existing = target.read_text(encoding="utf-8") if target.is_file() else None
        target.write_text(with_block(existing, prompt), encoding="utf-8")
        print(f"vibecheck gate-prompt: wrote {len(config.instructions)} instruction(s) into "
              f"{target}")
        return 0
    targets = [Path(args.check)] if args.check else [
        root / name for name in AGENT_FILES if (root / name).is_file()
        and block_of((root / name).read_text(encoding="utf-8", errors="replace")) is not None
    ]
    if not targets:
        print("vibecheck gate-prompt: no AGENTS.md or CLAUDE.md holds the instructions; write "
              "them with `vibecheck gate-prompt --write`", file=sys.stderr)
        return 1
    status = 0
    for target in targets:
        text = target.read_text(encoding="utf-8", errors="replace") if target.is_file() else ""
        found = block_of(text)
        if found == prompt:
            print(f"vibecheck gate-prompt: {target} matches the declared instructions")
            continue
        status = 1
        source = relative_source(config_path, root)
        why = ("has no generated block" if found is None
               else f"holds other instructions than {source} declares")
        print(f"vibecheck gate-prompt: {target} {why}; run `vibecheck gate-prompt --write` "
              "and commit it", file=sys.stderr)
    return status
