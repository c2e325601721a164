"""The commands in a plain install (``pip install pytest-vibecheck``, without the extras): the
extras' modules (numpy, scipy, matplotlib, jsonschema) are hidden in a child interpreter
(tests/plain_install.py), so these tests see what such a user sees.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plain_install import BLOCKED, run_plain

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "docs" / "results" / "qwen2.5-coder-0.5b.json"


def test_results_without_numpy_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    proc = run_plain(["results", str(SHIPPED)], tmp_path, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "vibecheck results: error: this analysis needs scipy and numpy: "
        "pip install 'pytest-vibecheck[analysis]'"
    ]
    assert proc.stdout == ""


def _malformed(tmp_path: Path) -> Path:
    """The shipped report with its first item's ``turns`` a string."""
    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    data["items"][0]["turns"] = "oops"
    out = tmp_path / "bad.json"
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


@pytest.mark.parametrize("command", ["view", "show", "results"])
def test_a_malformed_report_is_one_line_naming_the_field(tmp_path: Path, command: str) -> None:
    bad = _malformed(tmp_path)
    args = {
        "view": ["view", str(bad), "--out", str(tmp_path / "site")],
        "show": ["show", "bigvibebench-lite::BigCodeBench/8", "--report", str(bad)],
        "results": ["results", str(bad)],
    }[command]
    proc = run_plain(args, tmp_path, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"vibecheck {command}: error: {bad}: field items/0/turns: 'oops' is not of type 'array'"
    ]


def test_without_jsonschema_a_report_is_refused_in_one_line(tmp_path: Path) -> None:
    """jsonschema is a dependency: an install without it is broken, and says what to do."""
    proc = run_plain(["view", str(SHIPPED), "--out", str(tmp_path / "site")], tmp_path, tmp_path,
                     blocked=(*BLOCKED, "jsonschema"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"vibecheck view: error: {SHIPPED}: cannot check the report: jsonschema, a dependency of "
        "pytest-vibecheck, is not installed; reinstall it (pip install pytest-vibecheck)"
    ]


def test_jsonschema_is_a_dependency_not_an_extra() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(d.startswith("jsonschema") for d in project["dependencies"])


def test_every_command_has_its_exit_status_documented(capsys: pytest.CaptureFixture[str]) -> None:
    """One table (cli/exit_codes.py) for every command, printed by --help and listed in README."""
    import argparse
    import importlib

    from pytest_vibecheck.cli.exit_codes import EXIT_STATUS
    from pytest_vibecheck.cli.main import COMMAND_MODULES, build_parser

    names: list[str] = []

    class Commands:  # what each command module's register() is given: records the names
        def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
            names.append(name)
            return argparse.ArgumentParser(prog=name)

    for module in COMMAND_MODULES:
        importlib.import_module(module).register(Commands())
    assert sorted(names) == sorted(EXIT_STATUS)
    parser = build_parser()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, text in EXIT_STATUS.items():
        assert f"| `vibecheck {name}` | {text} |" in readme
    assert "  gate-staged: 0: every check passes" in parser.format_help()
