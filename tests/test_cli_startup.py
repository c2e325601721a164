"""Start-up of the command line (issue 29): ``vibecheck --help`` lists the commands from
:data:`~pytest_vibecheck.cli.main.COMMANDS` without importing any command module, and each
command imports its own module only, never an SDK, pyarrow, scipy or pytest it does not use.
The time this saves is measured by ``benchmarks/bench_startup.py``."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_vibecheck.cli.main import COMMANDS, build_parser

#: Third-party packages no command may import just to start (or to print its help).
HEAVY_THIRD_PARTY = ("openai", "anthropic", "pyarrow", "scipy", "numpy", "pandas", "pytest",
                     "_pytest", "junitparser", "httpx", "ray", "matplotlib")

PROBE = """
import json, sys
from pytest_vibecheck.cli.main import main
try:
    status = main(sys.argv[1:])
except SystemExit as exc:
    status = exc.code
print("MODULES=" + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _modules(*argv: str, cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=cwd, check=False
    )
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("MODULES="))
    return set(json.loads(line.partition("=")[2]))


def _commands_imported(mods: set[str]) -> set[str]:
    return {name for name, (module, _) in COMMANDS.items() if module in mods}


def _heavy(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods} & set(HEAVY_THIRD_PARTY)


def test_the_command_table_gives_each_command_its_own_help_line() -> None:
    """The listing ``vibecheck --help`` prints without importing the commands is the one
    their own ``register`` functions give."""
    listing = build_parser()
    full = argparse.ArgumentParser(prog="vibecheck", description=listing.description,
                                   epilog=listing.epilog, formatter_class=listing.formatter_class)
    full.add_argument("--version", action="version", version="x")
    sub = full.add_subparsers(dest="subcommand", metavar="COMMAND")
    for module, _ in COMMANDS.values():
        importlib.import_module(module).register(sub)
    assert list(sub.choices) == list(COMMANDS)
    assert listing.format_help() == full.format_help()


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    mods = _modules("--help", cwd=tmp_path)
    assert "pytest_vibecheck.cli.main" in mods  # the probe ran
    assert _commands_imported(mods) == set()
    assert sorted(m for m in mods if m.startswith(("pytest_vibecheck.verify", "pytest_vibecheck.execute",
                                                    "pytest_vibecheck.report", "pytest_vibecheck.generate",
                                                    "pytest_vibecheck.suites", "pytest_vibecheck.compose"))) == []
    assert _heavy(mods) == set()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_imports_its_own_module_only(name: str, tmp_path: Path) -> None:
    mods = _modules(name, "--help", cwd=tmp_path)
    assert _commands_imported(mods) == {name}
    assert _heavy(mods) == set()


def test_verify_one_file_imports_no_other_layer(tmp_path: Path) -> None:
    code = tmp_path / "one.py"
    code.write_text("def f(x):\n    return x\n", encoding="utf-8")
    mods = _modules("verify", str(code), "-i", "style_3", "-i", "doc_1", cwd=tmp_path)
    assert "pytest_vibecheck.verify.ruff_engine" in mods  # it verified
    assert _commands_imported(mods) == {"verify"}
    assert _heavy(mods) == set()
    assert sorted(m for m in mods if m.startswith(("pytest_vibecheck.report", "pytest_vibecheck.generate",
                                                    "pytest_vibecheck.plugin"))) == []
