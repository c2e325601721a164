"""GitHub keeps 10 error annotations per step (50 per job): the gate prints at most 10, then a
notice, and the step summary says how many were not annotated and where they all are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ci_helpers import commit_all, git, init_repo, write

from pytest_vibecheck.ci.annotations import PER_STEP, limit_note, plan_annotations

pytest.importorskip("pytest_vibecheck.verify.api")


def _long(n: int) -> str:
    return f"X{n} = '" + "y" * 80 + "'\n"


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in ("GITHUB_BASE_REF",):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    root = pytester.path
    init_repo(root, {"pyproject.toml": '[tool.vibecheck.gate]\ninstructions = ["style_3"]\n',
                     ".gitignore": "out/\n", "a.py": "A = 1\n"})
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"a.py": "A = 1\n" + "".join(_long(n) for n in range(13))})
    commit_all(root)
    return root


def test_at_most_ten_annotations_then_a_notice_and_the_summary_says_where(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider",
                                "--vibe-sarif", "out/gate.sarif", "--junitxml", "out/junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    commands = [ln for ln in result.outlines if ln.startswith("::")]
    errors = [ln for ln in commands if ln.startswith("::error ")]
    assert len(errors) == PER_STEP == 10
    assert errors[0] == "::error file=a.py,line=2,col=80,title=vibecheck E501 (style_3)::Line too long (87 > 79)"
    assert errors[-1].startswith("::error file=a.py,line=11,")
    assert commands[-1] == (
        "::notice title=vibecheck gate::3 more finding(s) not annotated: GitHub shows 10 "
        "annotations of a kind per step (50 per job). All 13 are in the job summary, the SARIF "
        "file out/gate.sarif, the JUnit file out/junit.xml and this step's output."
    )
    assert len(commands) == 11
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert (
        "**10 of 13 findings are annotated on the diff**: GitHub shows at most 10 error (or "
        "warning) annotations per step and 50 per job, and drops the rest silently. 3 are not "
        "annotated; all 13 are in the table below, the SARIF file out/gate.sarif, the JUnit file "
        "out/junit.xml and this step's output."
    ) in summary
    assert summary.count("| `a.py:") == 13  # the table lists every one
    # the pytest output has all 13 too (under CI=true pytest's short summary repeats the
    # untruncated message, so count distinct findings, not lines)
    shown = {re.search(r"a\.py:(\d+):", ln).group(1)  # type: ignore[union-attr]
             for ln in result.outlines if "a.py:" in ln and "E501 Line too long" in ln}
    assert shown == {str(n) for n in range(2, 15)}


def test_within_the_limit_nothing_is_said(pytester: pytest.Pytester, repo: Path, tmp_path: Path) -> None:
    write(repo, {"a.py": "A = 1\n" + "".join(_long(n) for n in range(10))})
    commit_all(repo)
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider")
    commands = [ln for ln in result.outlines if ln.startswith("::")]
    assert len(commands) == 10 and not any(c.startswith("::notice") for c in commands)
    assert "findings are annotated" not in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_plan_with_a_table_too_long_for_the_summary() -> None:
    findings = [f"::error file=a.py,line={n}::m" for n in range(150)]
    places = ["the SARIF file g.sarif", "this step's output"]
    plan = plan_annotations(findings, places)
    assert (plan.total, plan.annotated, plan.left_out, len(plan.lines)) == (150, 10, 140, 11)
    assert plan.lines[-1].endswith("All 150 are in the SARIF file g.sarif and this step's output.")
    assert limit_note(plan, places)[0].endswith(
        "140 are not annotated; all 150 are in the SARIF file g.sarif and this step's output.")
    assert limit_note(plan_annotations(findings[:3], places), places) == []
