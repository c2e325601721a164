"""The README's "Training with vibecheck rewards" example runs and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from pytest_vibecheck.cli.main import main

README = Path(__file__).resolve().parents[1] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Training with vibecheck rewards")
    return text[start : text.index("\n## ", start + 3)]


def test_readme_reward_example_prints_its_comments() -> None:
    block = re.search(r"```python\n(.*?)```\n", _section(), re.S)
    assert block is not None
    code = block.group(1)
    expected = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().splitlines() == expected == ["1.0 passed 1.0", "0.0 failed 0.5"]


def test_readme_export_commands_run(tmp_path: Path) -> None:
    commands = re.findall(r"^vibecheck (export-dataset .*?)\s+#", _section(), re.M)
    assert len(commands) == 2
    for command in commands:
        args = command.replace("data/", f"{tmp_path}/").split()
        assert main([*args, "--limit", "2"]) == 0
    assert (tmp_path / "trl" / "train.jsonl").read_text().count("\n") == 2
    assert (tmp_path / "verl" / "train.parquet").is_file()
    assert (tmp_path / "verl" / "vibecheck_reward.py").is_file()
