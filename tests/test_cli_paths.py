"""A path the CLI cannot write is one line naming it and exit status 2, never a traceback
(found by a fresh-clone trial: ``vibecheck results --out /proc/x.md`` and
``vibecheck export-dataset ... --out /proc/x`` ended in ``FileNotFoundError`` tracebacks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vibecheck.cli.main import main

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "results" / "qwen2.5-coder-0.5b.json"


@pytest.mark.parametrize(
    ("argv", "command", "path"),
    [
        (["results", str(REPORT), "--out", "/proc/x.md"], "results", "/proc/x.md"),
        (["export-dataset", "bigvibebench-lite", "--format", "trl", "--out", "/proc/x"],
         "export-dataset", "/proc/x"),
    ],
    ids=["results", "export-dataset"],
)
def test_an_unwritable_output_path_is_one_line(
    argv: list[str], command: str, path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"vibecheck {command}: error: {path}: No such file or directory; "
        "give a path you can read or write"
    ]
