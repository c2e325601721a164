"""The commands in a plain install (``pip install pytest-vibecheck``, without the extras): the
extras' modules (numpy, scipy, matplotlib, jsonschema) are hidden in a child interpreter
(tests/plain_install.py), so these tests see what such a user sees.
"""

from __future__ import annotations

from pathlib import Path

from plain_install import run_plain

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
