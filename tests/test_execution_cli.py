"""`vibecheck exec` and `vibecheck env-check`, and the environment tiers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from exec_helpers import bcb_problem, humaneval_problem

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.execute import envcheck
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.store import write_suite

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _suite(tmp_path: Path, problems: list[Problem]) -> Path:
    folder = tmp_path / "suite"
    fixed = [
        Problem(**{**p.__dict__, "suite": "mini", "task_id": f"mini/{n}"})
        for n, p in enumerate(problems)
    ]
    write_suite(
        folder,
        fixed,
        name="mini",
        description="test suite",
        source="hand-made",
        licence="Apache-2.0",
        attribution="tests",
        selector="none",
        seed=None,
        k=0,
    )
    return folder


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # .vibecheck/ caches go here
    missing = bcb_problem(libs=("surely_missing_lib_abc",))
    return _suite(tmp_path, [bcb_problem(), humaneval_problem(), missing])


def test_exec_reference_solution_json(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["exec", "--suite", str(suite), "--task", "mini/0", "--json", "--time-limit", "10"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["status"] == "passed"
    assert out["failed_tests"] == []
    assert out["network"] in ("blocked", "open")
    assert out["limits"]["time_limit_s"] == 10.0
    assert isinstance(out["duration_s"], float)


def test_exec_code_file_and_stdin(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    rc = main(
        [
            "exec",
            "--suite",
            str(suite),
            "--task",
            "mini/1",
            "--code",
            str(bad),
            "--time-limit",
            "10",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert out.startswith("mini/1: FAILED (check) in ")
    monkeypatch.setattr(
        sys, "stdin", __import__("io").StringIO("def add(a, b):\n    return b + a\n")
    )
    rc = main(
        ["exec", "--suite", str(suite), "--task", "mini/1", "--code", "-", "--time-limit", "10"]
    )
    assert rc == 0
    assert capsys.readouterr().out.startswith("mini/1: PASSED in ")


def test_exec_calibrates_by_default_and_caches(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["exec", "--suite", str(suite), "--task", "mini/0", "--floor", "2"]) == 0
    first = capsys.readouterr().out
    # lazy calibration: it ended within the floor, so the reference was never timed
    assert "time limit 2.0 s (floor)" in first
    assert main(["exec", "--suite", str(suite), "--task", "mini/0", "--floor", "2"]) == 0
    assert "[cached]" in capsys.readouterr().out
    assert Path(".vibecheck/calibration.sqlite").is_file()


def test_exec_skipped_task_exit_status(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["exec", "--suite", str(suite), "--task", "mini/2", "--time-limit", "5"])
    out = capsys.readouterr().out
    assert rc == 3
    assert "mini/2: SKIPPED" in out
    assert "environment: missing module surely_missing_lib_abc" in out


def test_exec_unknown_task_suggests(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["exec", "--suite", str(suite), "--task", "mini/9"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "unknown task of suite 'mini' 'mini/9'" in err


def test_exec_unreadable_code_file(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["exec", "--suite", str(suite), "--task", "mini/0", "--code", "/nonexistent/x.py"])
    assert rc == 2
    assert "--code /nonexistent/x.py: cannot read" in capsys.readouterr().err


def test_env_check(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env-check", str(suite), "--list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("mini: 2 of 3 tasks can run here (66.7%); 1 skipped")
    assert "surely_missing_lib_abc" in out
    assert "mini/2: environment: missing module surely_missing_lib_abc" in out
    assert main(["env-check", str(suite), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["total"], data["runnable"], data["skipped"]) == (3, 2, 1)
    assert data["skipped_tasks"] == [
        {
            "task_id": "mini/2",
            "reason": "environment: missing module surely_missing_lib_abc "
            "(pip install surely_missing_lib_abc)",
        }
    ]


def test_required_modules_include_test_imports() -> None:
    prob = bcb_problem(
        test_code="import unittest\nimport requests_mock\nfrom faker import Faker\nclass TestCases(unittest.TestCase):\n    pass\n",
        libs=("numpy", "os"),
    )
    assert envcheck.required_modules(prob) == ("faker", "numpy", "requests_mock")


def test_pypi_names_and_tiers_match_pyproject() -> None:
    assert envcheck.pypi_name("sklearn") == "scikit-learn"
    assert envcheck.pypi_name("cv2") == "opencv-python-headless"
    assert envcheck.pypi_name("yaml") == "PyYAML"
    assert envcheck.pypi_name("unknown_mod") == "unknown_mod"
    assert len([m for m in envcheck.IMPORT_TO_PYPI if m not in ("requests_mock", "pyfakefs")]) == 62
    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert set(extras["exec-full"]) == set(envcheck.IMPORT_TO_PYPI.values())
    assert {envcheck.pypi_name(m) for m in envcheck.CORE_IMPORTS} == set(extras["exec-core"])
