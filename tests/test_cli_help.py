"""The command line's help names only commands that exist (``vibecheck exec --help`` pointed at
a ``vibecheck suites`` that never existed), and the augment command's messages name the kind
of source it was given."""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

from pytest_vibecheck.cli.main import COMMAND_MODULES, main


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser(prog="vibecheck")
    sub = parser.add_subparsers(dest="subcommand")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return dict(sub.choices)


def test_every_command_named_in_a_help_text_exists() -> None:
    commands = _commands()
    assert len(commands) == len(COMMAND_MODULES) and "exec" in commands
    named = {
        (name, m)
        for name, parser in commands.items()
        for m in re.findall(r"`vibecheck ([a-z][a-z-]*)", parser.format_help())
    }
    assert ("exec", "problems") in named  # where the suites are listed
    assert sorted((name, m) for name, m in named if m not in commands) == []


def test_exec_help_points_at_the_suite_listing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["exec", "--help"])
    assert exit_.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "suite name or folder (`vibecheck problems list` lists the shipped ones)" in help_text
    assert "vibecheck suites" not in help_text


@pytest.mark.parametrize("source", ["nope.jsonl.gz", "data/HumanEval.jsonl", "x.json"])
def test_augment_names_a_missing_data_file_as_a_file(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a missing ``.jsonl.gz`` was looked up as a suite ("suite folder does not
    exist", "unknown suite")."""
    monkeypatch.chdir(tmp_path)
    assert main(["augment", source, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"vibecheck augment: error: {source}: no such data file; SOURCE is a source benchmark's "
        "JSONL(.gz) file, a suite folder or a shipped suite name (vibecheck problems list)\n"
    )
    assert not (tmp_path / "out").exists()


def test_augment_still_takes_a_missing_name_as_a_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["augment", "bigvibebench-lit", "--out", str(tmp_path / "out")]) == 2
    assert "unknown suite 'bigvibebench-lit'; did you mean 'bigvibebench-lite'" in capsys.readouterr().err
