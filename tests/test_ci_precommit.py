"""The pre-commit check: ``vibecheck gate-staged`` on staged changes, and the shipped
``.pre-commit-hooks.yaml`` run by the real ``pre-commit`` tool on a scratch repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ci_helpers import GIT_ENV, commit_all, git, init_repo, write

from pytest_vibecheck.ci.declared import load_declared
from pytest_vibecheck.ci.staged import check_staged, report_lines
from pytest_vibecheck.cli.main import main

pytest.importorskip("pytest_vibecheck.verify.api")

ROOT = Path(__file__).resolve().parent.parent
LONG = "x = '" + "y" * 80 + "'"  # 86 characters

GATE_TOML = """
[tool.vibecheck.gate]
instructions = ["style_3", "logic_1"]
include = ["src/*.py"]
exclude = ["src/gen/*"]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root, {"pyproject.toml": GATE_TOML, "src/a.py": "import os\n", "src/gen/g.py": "X = 1\n"})
    return root


def _check(root: Path, paths: list[str] | None = None, **kw: object) -> list[str]:
    config = load_declared(root / "pyproject.toml", root)
    return report_lines(check_staged(root, config, paths, environ={}, **kw), config)  # type: ignore[arg-type]


def test_only_staged_lines_count_and_unstaged_edits_never(repo: Path) -> None:
    write(repo, {"src/a.py": "import os\nimport sys\n", "src/b.py": "def broken(:\n",
                 "src/gen/g.py": "import json\n", "notes.txt": "n\n"})
    git(repo, "add", "src/a.py", "src/b.py", "src/gen/g.py", "notes.txt")
    # after staging: an unstaged long line in a.py and an untracked file are not checked
    write(repo, {"src/a.py": f"import os\nimport sys\n{LONG}\n", "src/c.py": "import re\n"})
    assert _check(repo) == [
        "src/b.py:1:12: SyntaxError: invalid syntax (the file cannot be checked against any "
        "instruction)",
        "src/a.py:2:8: F401 `sys` imported but unused [logic_1]",
        "instructions not followed:",
        "  logic_1: Do not leave unused imports or unused variables, and do not use undefined names.",
        "skipped notes.txt: not a Python file",
        "skipped src/gen/g.py: excluded by [tool.vibecheck.gate] include/exclude",
        "vibecheck gate failed: 2 Python file(s), 3 check(s): 2 failed, 0 error(s); violations "
        "counted on staged lines only (1 on unchanged lines not counted)",
    ]


def test_named_files_all_lines_and_a_first_commit(repo: Path, tmp_path: Path) -> None:
    write(repo, {"src/a.py": "import os\nimport sys\n", "src/d.py": "Y = 2\n"})
    git(repo, "add", "-A")
    assert _check(repo, ["src/d.py"])[-1] == (
        "vibecheck gate passed: 1 Python file(s), 2 check(s): 0 failed, 0 error(s); violations "
        "counted on staged lines only")
    # --all-lines also checks a named file without a staged change, whole
    commit_all(repo)
    lines = _check(repo, ["src/a.py"], all_lines=True)
    assert lines[:2] == ["src/a.py:1:8: F401 `os` imported but unused [logic_1]",
                         "src/a.py:2:8: F401 `sys` imported but unused [logic_1]"]
    assert lines[-1].endswith("counted on all lines")
    assert _check(repo, ["src/a.py"])[0] == "skipped src/a.py: no staged change (--all-lines checks it whole)"
    # a branch with no commit yet: every staged line is added
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    write(fresh, {"pyproject.toml": GATE_TOML, "src/a.py": "import os\n"})
    git(fresh, "add", "-A")
    assert _check(fresh)[0] == "src/a.py:1:8: F401 `os` imported but unused [logic_1]"


def test_from_and_to_refs_of_pre_commit(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "topic")
    write(repo, {"src/a.py": "import os\nimport sys\n"})
    commit_all(repo)
    write(repo, {"src/a.py": "import os\n"})  # the work tree differs: the commit is checked
    config = load_declared(repo / "pyproject.toml", repo)
    check = check_staged(repo, config, None,
                         environ={"PRE_COMMIT_FROM_REF": "main", "PRE_COMMIT_TO_REF": "topic"})
    assert check.revision == "topic"
    assert report_lines(check, config)[0] == "src/a.py:2:8: F401 `sys` imported but unused [logic_1]"


def test_cli_exit_status_and_sarif(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(repo / "src")  # from a subfolder: names are relative to it
    assert main(["gate-staged"]) == 0
    write(repo, {"src/a.py": "import os\nimport sys\n"})
    git(repo, "add", "-A")
    assert main(["gate-staged", "a.py", "--sarif", str(repo / "s.sarif")]) == 1
    out = capsys.readouterr().out
    assert "src/a.py:2:8: F401 `sys` imported but unused [logic_1]" in out
    log = json.loads((repo / "s.sarif").read_text(encoding="utf-8"))
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "logic_1"
    assert result["locations"][0]["physicalLocation"]["region"]["snippet"] == {"text": "import sys"}
    assert log["runs"][0]["properties"]["vibecheck"]["base"] == "index"
    (repo / "pyproject.toml").write_text('[tool.vibecheck.gate]\ninstructions = ["logic_33"]\n',
                                         encoding="utf-8")
    assert main(["gate-staged"]) == 2
    assert "unknown instruction 'logic_33'; did you mean 'logic_3'" in capsys.readouterr().err


def test_a_verifier_error_is_exit_3_not_a_violation(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_vibecheck.verify import api as verify
    from pytest_vibecheck.verify.verdict import Verdict

    def broken(items: list[verify.VerifyItem], **kw: object) -> list[list[Verdict]]:
        return [[Verdict.failed_to_judge(i, "ruff crashed (exit 2)") for i, _ in it.instructions]
                for it in items]

    monkeypatch.setattr(verify, "verify_batch", broken)
    monkeypatch.chdir(repo)
    write(repo, {"src/a.py": "import os\nimport sys\n"})
    git(repo, "add", "-A")
    assert main(["gate-staged"]) == 3
    out = capsys.readouterr().out
    assert "error: src/a.py [logic_1]: verifier error: ruff crashed (exit 2) (not a violation)" in out
    assert out.splitlines()[-1].startswith("vibecheck gate errored:")


# ---------------------------------------------------------------- the real pre-commit tool


def _hook_repo(dest: Path) -> str:
    """This working tree's files (tracked and untracked, not ignored) as a fresh git repository
    at ``dest``, committed: what pre-commit installs the hooks from. Returns the commit."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    init_repo(dest, {})
    return git(dest, "rev-parse", "HEAD").strip()


@pytest.mark.skipif(shutil.which("pre-commit", path=str(Path(sys.executable).parent)) is None,
                    reason="pre-commit is not installed (dev extra)")
def test_the_hooks_run_under_the_real_pre_commit(tmp_path: Path) -> None:
    """``git commit`` in a scratch repository with the hooks installed by ``pre-commit install``:
    a staged violation blocks the commit, the fixed change commits; a stale AGENTS.md fails the
    prompt hook. The hook environment is built by pre-commit itself (``pip install`` of a copy
    of this working tree)."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    rev = _hook_repo(hooks)
    repo = tmp_path / "repo"
    repo.mkdir()
    init_repo(repo, {"pyproject.toml": GATE_TOML, "src/a.py": "import os\n",
                     ".pre-commit-config.yaml": (
                         f"repos:\n- repo: {hooks.as_posix()}\n  rev: {rev}\n  hooks:\n"
                         "  - id: vibecheck-gate\n  - id: vibecheck-gate-prompt\n")})
    pre_commit = str(Path(sys.executable).parent / "pre-commit")
    env = {**os.environ, **GIT_ENV, "HOME": str(repo), "XDG_CONFIG_HOME": str(repo / ".xdg"),
           "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=repo, env=env, capture_output=True, text=True,
                              check=False, timeout=600)

    assert run(pre_commit, "install").returncode == 0
    main_cwd = os.getcwd()
    try:
        os.chdir(repo)
        assert main(["gate-prompt", "--write"]) == 0  # AGENTS.md with the current instructions
    finally:
        os.chdir(main_cwd)
    write(repo, {"src/a.py": "import os\nimport sys\n"})
    git(repo, "add", "-A")
    proc = run("git", "commit", "-m", "add sys")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "vibecheck gate (declared instructions, staged lines)" in out
    assert "src/a.py:2:8: F401 `sys` imported but unused [logic_1]" in out
    assert "vibecheck gate failed: 1 Python file(s), 2 check(s): 1 failed" in out
    assert "vibecheck gate-prompt (agent instructions match the gate)" in out
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"  # the commit was blocked
    write(repo, {"src/a.py": "import os\nimport sys\n\nprint(os, sys)\n"})
    git(repo, "add", "-A")
    proc = run("git", "commit", "-m", "use sys")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "2"
    # the declared instructions change but AGENTS.md does not: the prompt hook fails
    (repo / "pyproject.toml").write_text(GATE_TOML.replace('"logic_1"', '"logic_1", "doc_1"'),
                                         encoding="utf-8")
    git(repo, "add", "-A")
    proc = run("git", "commit", "-m", "declare doc_1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("AGENTS.md holds other instructions than pyproject.toml declares; run "
            "`vibecheck gate-prompt --write` and commit it") in proc.stdout + proc.stderr


def test_a_staged_suppression_comment_is_reported_with_the_rule_it_hides(repo: Path) -> None:
    """issue 23: the pre-commit check judges suppression comments as the gate does."""
    write(repo, {"src/a.py": "import os\nimport sys  # noqa: F401\n"})
    git(repo, "add", "src/a.py")
    lines = _check(repo)
    assert lines[:2] == [
        "src/a.py:2:8: F401 `sys` imported but unused [logic_1]",
        "src/a.py:2:13: suppression `# noqa: F401` hides F401 from logic_1; suppressions are not "
        'allowed: [tool.vibecheck.gate] suppressions = "forbid" [logic_1]',
    ]
