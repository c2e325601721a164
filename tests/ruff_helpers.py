"""Wrapper scripts around the real Ruff binary, for tests that change or record what the
engine sees of Ruff (a simulated crash, unreadable output, the tree's layout)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from pytest_vibecheck.verify.ruff_engine import RuffEngine


def wrapped_ruff(tmp_path: Path, script: str, name: str = "fake-ruff", **fields: object) -> Path:
    """An executable ``tmp_path/name``: ``script`` formatted with ``python`` (this
    interpreter, for the shebang), ``real`` (the real Ruff binary) and ``fields``."""
    path = tmp_path / name
    text = script.format(python=sys.executable, real=RuffEngine().ruff_bin(), **fields)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path
